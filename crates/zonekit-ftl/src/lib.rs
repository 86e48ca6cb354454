//! A host block FTL for ZNS SSDs (seed 000): turns a zoned device into a random-write block
//! volume, with pluggable data placement and GC victim selection, and a replay engine.
//!
//! - [`Ftl`]: page-level map (volume, block) → zone slot over any
//!   [`zonekit_device::ZonedDevice`]; one open zone per placement class; GC by garbage
//!   proportion (fixed capacity) or the SepBIT simulator's unbounded log.
//! - [`placement`]: Normal, SepGC, WARCIP, SepBIT (7- and 6-class), BHB-DP and BHB-DP_pre,
//!   the FK and ZB-OPT oracles, and Lifespan (ours). [`victim`]: Greedy, Cost-Benefit (t, √t,
//!   ln t, SepBIT form), CBE, d-choices.
//! - [`replay`]: size a device, replay a trace or workload, report WAF, GC traffic and count,
//!   reclaimed-zone GP, per-class traffic, wear and speed.
//!
//! ```
//! use zonekit_ftl::replay::{replay, ReplaySpec};
//! use zonekit_trace::input::Input;
//!
//! let input = Input::generated("zipf:blocks=20K,alpha=0.9,writes=200K".parse().unwrap(), 1);
//! let spec = ReplaySpec { preset: "tiny".into(), ..ReplaySpec::default() };
//! let report = replay(&input, &spec, &mut |_| {}).unwrap();
//! assert!(report.waf >= 1.0);
//! ```

pub mod engine;
pub mod placement;
pub mod replay;
pub mod victim;
pub mod zone;

pub use engine::{CapacityMode, Ftl, FtlConfig, FtlError, FtlStats};
