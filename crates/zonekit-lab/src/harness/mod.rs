//! What every engine's experiments share: errors, progress, the resumable results file, the
//! thread pool, the interface names.

pub mod error;
pub mod interface;
pub(crate) mod parallel;
pub mod progress;
pub(crate) mod results;
pub mod runs;
