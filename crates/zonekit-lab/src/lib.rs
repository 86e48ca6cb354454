//! Zonekit's experiment harness: what turns an engine into numbers anyone can rerun.
//!
//! - [`stage`]: a trace made ready for replay: one parse of a text trace, the distinct-block
//!   estimate, future knowledge, dense block ids (cached beside a binary trace).
//! - [`driver`]: the [`BlockEngine`] trait an engine implements to be replayed, and [`drive`],
//!   the replay loop fed by a reader thread, prefetching a few writes ahead.
//! - [`replay`]: one replay of a trace or workload through the block FTL: device sizing from a
//!   preset and the workload, the report.
//! - `results`: the resumable `results.csv` a sweep, kv-bench and the tree experiment write:
//!   each row checked, damaged rows moved aside byte for byte and recomputed, never reused.
//! - [`sweep`]: grids of replays in parallel, resumable only under the same settings,
//!   shardable (`--shard I/N`) and mergeable byte for byte, with tables and charts.
//! - [`cbs`]: seed 000's ten cloud block storage nodes (Table 2.1) as generated workloads,
//!   calibrated to each node's working set.
//! - [`kv_bench`]: seed 001's experiment, RocksDB's db_bench on the zoned file system per
//!   configuration (a table of allocation rule × GC) and key count, resumable, with charts.
//! - [`tree_bench`]: seed 003's experiment, YCSB-style loads and mixes on the ZB+-tree and the
//!   copy-on-write B+-tree over the paper's device of conventional and sequential zones.
//! - [`ocssd_bench`]: seed 002's experiment, the open-channel FTLs replaying HPC traces
//!   (throughput, mapping cost, erases, WAF, wear maps, sensitivity).
//! - [`ocssd_workload`]: seed 002's chapter 2, the LAMMPS-like and MACDRP-like generators
//!   profiled beside every characteristic the thesis states (Figs. 2.2–2.7).
//! - [`ocssd_fit`]: seed 002's synchronous timing model fitted to the thesis' table 4.2
//!   (non-negative least squares, residuals, leave-one-out), beside table 3.1's.
//! - [`cache_bench`]: seed 004's experiment, a bcache-style cache of an HDD on a ZNS SSD or a
//!   conventional SSD (device WAF measured through the block FTL), samplers × evictions,
//!   YCSB-like reads or block traces, against item-level references and Belady.
//! - [`cache_sim`]: seed 004's item-level cache simulation, every block request of a trace or
//!   workload through one item policy (LRU, FIFO, S3-FIFO, SIEVE, Belady): hits and speed, the
//!   stream `scripts/cache-crosscheck` compares with libCacheSim.
//! - [`device_data`], [`device_fit`], [`device_fidelity`]: a real drive's published
//!   measurements (the ZN540's), the `zn540` preset's figures fitted to them, and every
//!   characterised experiment rerun on a preset against them, per metric (issue 48).
//! - [`error`]: [`LabError`], which tells a bad request (usage) from a failed run.
//!
//! The CLI only turns flags into these specs and prints; engines know nothing of this crate.
//!
//! ```
//! use zonekit_lab::replay::{replay, ReplaySpec};
//! use zonekit_trace::input::Input;
//!
//! let input = Input::generated("zipf:blocks=20K,alpha=0.9,writes=200K".parse().unwrap(), 1);
//! let spec = ReplaySpec { preset: "tiny".into(), ..ReplaySpec::default() };
//! let report = replay(&input, &spec, &mut |_| {}).unwrap();
//! assert!(report.waf >= 1.0);
//! ```

pub mod cache_bench;
pub mod cache_experiment;
pub mod cache_interfaces;
pub mod cache_run;
pub mod cache_sim;
pub mod cache_ssd;
pub mod cbs;
pub mod device_data;
pub mod device_fidelity;
pub mod device_fidelity_report;
pub mod device_fit;
pub mod driver;
pub mod error;
pub mod interface;
pub mod interfaces;
pub mod kv_bench;
pub mod ocssd_bench;
pub mod ocssd_fit;
pub mod ocssd_workload;
mod parallel;
pub mod progress;
pub mod replay;
mod results;
pub mod stage;
pub mod sweep;
pub mod tree_bench;

pub use driver::{drive, BlockEngine, Series, SeriesPoint};
pub use error::LabError;
pub use progress::Progress;
