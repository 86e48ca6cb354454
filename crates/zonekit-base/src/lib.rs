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
//! - [`NEVER`]: the "no next write / no such time" sentinel of logical times.
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
