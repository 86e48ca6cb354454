//! Block I/O traces for Zonekit: everything that feeds the engines.
//!
//! - [`format`]: readers for the named trace formats (Alibaba 2020, Tencent CBS, MSR Cambridge,
//!   UMass SPC, SYSTOR'17, CloudPhysics vscsi binary and CSV, DiskSim ASCII) and any delimited
//!   file given a column mapping; gzip, bzip2 and zstd are read as streams. One [`Record`] type.
//! - [`blocks`]: requests split into aligned blocks keyed by (volume, block); [`BlockMap`], a
//!   compact block-keyed map (15 B per block), and [`DistinctCounter`] to size it.
//! - [`binary`]: the memory-mapped binary trace format and the future-knowledge pass (the next
//!   write of each written block) that the FK and ZB-OPT oracles and Belady need.
//! - [`sample`]: SHARDS spatial sampling with MurmurHash3 and consistent-hash node sharding.
//! - [`synth`]: seeded synthetic workloads (Zipf, uniform, hot/cold, multi-tenant cloud node,
//!   YCSB key choosers, HPC patterns), streamed.
//! - [`analyze`]: seed 000's workload characterisation (write counts, lifetimes, thresholds).
//! - [`input`]: one name for any of these streams, with sampling and sharding, re-readable.
//!
//! ```
//! use zonekit_trace::blocks::{Splitter, SplitOptions};
//! use zonekit_trace::{Op, Record};
//!
//! let requests = vec![Ok(Record { time_us: 0, volume: 1, offset_bytes: 6144, len_bytes: 4096, op: Op::Write })];
//! let blocks: Vec<u64> = Splitter::new(requests.into_iter(), SplitOptions::default()).unwrap().map(|b| b.unwrap().block).collect();
//! assert_eq!(blocks, vec![1, 2]); // bytes 6144..10240 touch 4 KiB blocks 1 and 2
//! ```

pub mod analyze;
pub mod binary;
pub mod blocks;
pub mod fixture;
pub mod format;
pub mod input;
pub mod parallel;
pub mod record;
pub mod sample;
pub mod synth;

pub use blocks::{BlockIo, BlockMap, DistinctCounter};
pub use record::{Op, Record, Result, SpecError, TraceError};
