//! The bottom of Zonekit's dependency graph: what every layer (device, trace, engines, lab)
//! shares and none of them owns.
//!
//! - [`Rng`]: xoshiro256**, the one seeded generator; a seed means the same stream forever.
//! - [`BlockMap`]: an open-addressing map from 64-bit block keys to small values (12 bytes a
//!   slot for `u32`), and [`DistinctCounter`], the HyperLogLog that sizes one.
//! - [`mem`]: huge-page backed vectors and software prefetch for large random-access tables,
//!   and the machine's memory size ([`mem::total_memory_bytes`]) that size checks refuse against.
//! - [`LogHistogram`]: log-linear histogram of latencies and lifetimes.
//! - [`policy`]: policy registries as tables (name, summary, parameters with defaults, maker).
//! - [`atomic`]: output files written aside and renamed whole ([`atomic::AtomicFile`]), so a
//!   killed command never leaves a partial file under an output's name.
//! - [`NEVER`]: the "no next write / no such time" sentinel of logical times.
//! - [`thread_cpu_s`]: the calling thread's CPU time, for measurements that must not count
//!   what other processes on a shared machine take.
//!
//! It depends on nothing of Zonekit's, so the device layer and the engines can use it without
//! pulling in traces or reports.
//!
//! ```
//! use zonekit_base::{BlockMap, Rng};
//!
//! let mut rng = Rng::new(7);
//! let mut map = BlockMap::<u32>::with_capacity(100);
//! for i in 0..100 {
//!     map.insert(rng.next_u64() >> 1, i);
//! }
//! assert_eq!(map.len(), 100);
//! ```

pub mod atomic;
pub mod histogram;
pub mod map;
pub mod mem;
pub mod policy;
pub mod rng;

pub use histogram::LogHistogram;
pub use map::{BlockMap, DistinctCounter};
pub use rng::Rng;

/// A logical time that never comes: "no next write" in annotated traces and in the oracles.
pub const NEVER: u64 = u64::MAX;

/// FNV-1a, 64 bits, of `text` as 16 hex digits: a short name for some text, stable across
/// builds and platforms (results' row checks, a timing model's fingerprint).
pub fn fnv1a_hex(text: &str) -> String {
    let h = text.bytes().fold(0xCBF2_9CE4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01B3));
    format!("{h:016x}")
}

/// CPU time (user and system) the calling thread has used, in seconds. Work done on the
/// thread's behalf in the kernel (a system call to a memory-backed device) counts; time spent
/// waiting for a CPU another process holds does not, so a run measured with it on a busy
/// machine reads about what it reads on an idle one.
pub fn thread_cpu_s() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec we own; CLOCK_THREAD_CPUTIME_ID always exists
    // on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

#[cfg(test)]
mod tests {
    #[test]
    fn fnv1a_is_the_published_function() {
        // FNV-1a's published test vectors (the empty string and "a").
        assert_eq!(super::fnv1a_hex(""), "cbf29ce484222325");
        assert_eq!(super::fnv1a_hex("a"), "af63dc4c8601ec8c");
    }

    #[test]
    fn thread_cpu_time_counts_work_not_sleep() {
        let start = super::thread_cpu_s();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let slept = super::thread_cpu_s() - start;
        let mut x = 0u64;
        let busy = std::time::Instant::now();
        while busy.elapsed().as_millis() < 50 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(std::hint::black_box(1));
        }
        std::hint::black_box(x);
        let worked = super::thread_cpu_s() - start - slept;
        assert!(slept < 0.02, "sleeping used {slept} s of CPU");
        assert!(worked > 0.005, "50 ms of work used {worked} s of CPU");
    }
}
