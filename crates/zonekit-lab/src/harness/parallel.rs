//! Independent runs on a few threads: what sweeps and the tree experiment share.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Calls `work(i)` for every `i` in `0..count`, in order of `i` as threads free up, on at most
/// `threads` threads (at least one). Returns when every call has returned.
pub(crate) fn for_each(count: usize, threads: usize, work: impl Fn(usize) + Sync) {
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads.min(count).max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    break;
                }
                work(i);
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    #[test]
    fn every_index_runs_once() {
        for threads in [0, 1, 3, 64] {
            let seen = Mutex::new(Vec::new());
            super::for_each(10, threads, |i| seen.lock().unwrap().push(i));
            let mut seen = seen.into_inner().unwrap();
            seen.sort_unstable();
            assert_eq!(seen, (0..10).collect::<Vec<_>>(), "{threads} threads");
        }
        super::for_each(0, 2, |_| panic!("no work to do"));
    }
}
