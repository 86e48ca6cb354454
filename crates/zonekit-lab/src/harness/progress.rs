//! How a run reports progress to its caller, and how the caller stops it: the one
//! trait every engine's run loop (staging, driving, the experiments) takes.

/// What a run tells its caller while it runs, and how the caller stops it. Any
/// `FnMut(u64)` is one that never stops the run.
pub trait Progress {
    /// `writes` user writes so far (called now and then, and at the end).
    fn update(&mut self, writes: u64);
    /// Asked after every batch of writes: `true` stops the run with [`crate::LabError::Cancelled`]
    /// (a Python caller's Ctrl-C, or an exception raised inside a policy written in Python).
    fn cancelled(&mut self) -> bool {
        false
    }
}

impl<F: FnMut(u64) + ?Sized> Progress for F {
    fn update(&mut self, writes: u64) {
        self(writes)
    }
}
