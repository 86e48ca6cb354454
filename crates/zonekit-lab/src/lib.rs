//! Zonekit's experiment harness: what turns an engine into numbers anyone can rerun. One
//! folder for what every engine's experiments share, and one per engine:
//!
//! - [`harness`]: [`LabError`] (a bad request told from a failed run), [`Progress`], the
//!   resumable `results.csv` (each row checked, damaged rows moved aside and recomputed), the
//!   thread pool, and `Interface` (zns, fdp:N, conventional).
//! - [`block`]: the block FTL. A trace staged for replay ([`block::stage`]), the
//!   [`BlockEngine`] loop ([`block::driver`]), one replay ([`block::replay`]), grids of them
//!   ([`block::sweep`]: resumable, shardable, mergeable), seed 000's cloud nodes
//!   ([`block::cbs`]) and one placement on every interface ([`block::interfaces`]).
//! - [`cache`]: seed 004's bcache-style cache. One run ([`cache::bench`], its settings by
//!   flag name in [`cache::run`]), the thesis' comparisons ([`cache::experiment`]), every
//!   interface ([`cache::interfaces`], through [`cache::ssd`]'s adapter), and item-level
//!   policies over a trace ([`cache::sim`]).
//! - [`kv`]: seed 001's db_bench on the zoned file system ([`kv::bench`]).
//! - [`tree`]: seed 003's ZB+-tree and CoW B+-tree experiment ([`tree::bench`]).
//! - [`ocssd`]: seed 002's open-channel FTLs ([`ocssd::bench`]), the thesis' chapter 2
//!   workloads ([`ocssd::workload`]) and the timing fit ([`ocssd::fit`]).
//!
//! Imports run one way: an engine's folder uses the harness (and the block folder's staging
//! where it replays traces), never another engine's, and the harness uses no engine.
//!
//! The CLI only turns flags into these specs and prints; engines know nothing of this crate.
//!
//! ```
//! use zonekit_lab::block::replay::{replay, ReplaySpec};
//! use zonekit_trace::input::Input;
//!
//! let input = Input::generated("zipf:blocks=20K,alpha=0.9,writes=200K".parse().unwrap(), 1);
//! let spec = ReplaySpec { preset: "tiny".into(), ..ReplaySpec::default() };
//! let report = replay(&input, &spec, &mut |_| {}).unwrap();
//! assert!(report.waf >= 1.0);
//! ```

/// Returns a usage error (a bad request: exit status 2 in the CLI) from the enclosing function.
macro_rules! usage {
    ($($t:tt)*) => { return Err($crate::LabError::Usage(format!($($t)*))) };
}

pub mod block;
pub mod cache;
pub mod device;
pub mod figures;
pub mod harness;
pub mod kv;
pub mod ocssd;
pub mod tree;

pub use block::driver::{drive, BlockEngine, Series, SeriesPoint};
pub use harness::error::LabError;
pub use harness::progress::Progress;
