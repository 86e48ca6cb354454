//! Stopping a server on SIGINT or SIGTERM: the signals are blocked in every thread and one
//! thread takes them with `sigwait`, so the stop runs as ordinary code.

/// Blocks SIGINT and SIGTERM in this thread and every thread it starts later.
pub fn block_stop_signals() -> libc::sigset_t {
    // SAFETY: plain libc signal-set calls on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Runs `stop` on a thread of its own when SIGINT or SIGTERM arrives.
pub fn on_stop_signal(set: libc::sigset_t, stop: impl FnOnce() + Send + 'static) {
    std::thread::spawn(move || {
        let mut signal = 0;
        // SAFETY: waits on a signal set built by block_stop_signals.
        if unsafe { libc::sigwait(&set, &mut signal) } == 0 {
            stop();
        }
    });
}
