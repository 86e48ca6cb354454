//! A host block FTL for ZNS SSDs (seed 000): turns a zoned device into a random-write block
//! volume, with pluggable data placement and GC victim selection, and a replay engine.
//!
//! - [`Ftl`]: page-level map (volume, block) → zone slot over any
//!   [`zonekit_device::ZonedDevice`]; one open zone per placement class; GC by garbage
//!   proportion (fixed capacity) or the SepBIT simulator's unbounded log.
//! - [`placement`]: Normal, SepGC, WARCIP, SepBIT (7- and 6-class), BHB-DP and BHB-DP_pre,
//!   the FK and ZB-OPT oracles, and Lifespan (ours). [`victim`]: Greedy, Cost-Benefit (t, √t,
//!   ln t, SepBIT form), CBE, d-choices.
//!
//! - [`hinted`]: the same placements on a random-write SSD (`zonekit-ssd`): classes become FDP
//!   placement handles (or nothing, on a conventional SSD) and the device collects.
//!
//! Replays of traces and workloads, sizing and reports live in `zonekit-lab`, which drives this
//! engine through its public API.
//!
//! ```
//! use zonekit_device::{preset, MemDevice, StorageMode};
//! use zonekit_ftl::{placement, victim, Ftl, FtlConfig, NEVER};
//!
//! let p = preset::find("tiny").unwrap();
//! let dev = MemDevice::new(p.geometry, p.behavior, StorageMode::MetadataOnly).unwrap();
//! let env = placement::PolicyEnv { zone_blocks: p.geometry.zone_capacity_blocks, capacity_blocks: 1 << 16 };
//! let placement = placement::create("sepbit", &placement::Params::new(), env).unwrap();
//! let mut ftl = Ftl::new(dev, placement, victim::create("greedy", 1).unwrap(), FtlConfig::default(), 1000).unwrap();
//! for i in 0..10_000u64 {
//!     ftl.write(i % 1000, None, i, NEVER).unwrap();
//! }
//! assert!(ftl.stats().waf() >= 1.0);
//! ```

pub mod config;
pub mod engine;
pub mod hinted;
pub mod placement;

pub use engine::{CapacityMode, Ftl, FtlConfig, FtlError, FtlObserver, FtlStats, GcTrigger};
pub use zonekit_base::NEVER;
/// GC victim policies and per-zone state live in `zonekit-pool`, shared by every zone-based engine.
pub use zonekit_pool::{victim, ZoneInfo, ZoneUse};
