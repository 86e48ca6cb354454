//! Placement policies: which open zone (class) each user write and each GC write goes to.
//!
//! One policy per file; [`create`] is the registry. Classes are 0-based here (the thesis
//! numbers them from 1).

mod bhbdp;
mod fk;
mod lifespan;
mod normal;
mod sepbit;
mod sepgc;
mod warcip;
mod zbopt;

pub use bhbdp::BhbDp;
pub use fk::Fk;
pub use lifespan::Lifespan;
pub use normal::Normal;
pub use sepbit::SepBit;
pub use sepgc::SepGc;
pub use warcip::Warcip;
pub use zbopt::ZbOpt;

use std::collections::BTreeMap;

/// A block being written, as a placement policy sees it.
#[derive(Copy, Clone, Debug)]
pub struct BlockCtx {
    /// Dense id of the block (0, 1, 2, ... in order of first write).
    pub id: u32,
    /// Logical time: user block writes before this one.
    pub now: u64,
    /// Trace time of the current user write, µs.
    pub now_us: u64,
    /// Logical time of this block's previous user write (`None` for a first write).
    pub last_user_write: Option<u64>,
    /// For user writes from an annotated trace: logical time of this block's next user write
    /// ([`zonekit_base::NEVER`] if none or unknown).
    pub next_write: u64,
    /// For GC writes: the class of the zone the block is moved out of.
    pub from_class: usize,
}

/// A zone reclaimed by GC, reported to the policy (SepBIT and BHB-DP learn from it).
#[derive(Copy, Clone, Debug)]
pub struct Reclaimed {
    pub class: usize,
    /// Logical times the zone was opened and became full, and now.
    pub opened_at: u64,
    pub full_at: u64,
    pub now: u64,
    pub garbage_proportion: f64,
}

/// What a placement policy decides.
///
/// Per-block state: the engine keeps one 32-bit word per block for the policy, next to the
/// block's address (one cache line holds both), zero for a new block. A policy that needs more
/// keeps its own table indexed by [`BlockCtx::id`] and reports it in
/// [`Placement::bytes_per_block`].
pub trait Placement {
    fn name(&self) -> String;
    /// How many classes (open zones) it writes to.
    fn classes(&self) -> usize;
    /// Class of a user write.
    fn user_write(&mut self, b: &BlockCtx, word: &mut u32) -> usize;
    /// Class of a GC write (relocation of a still-valid block).
    fn gc_write(&mut self, b: &BlockCtx, word: &mut u32) -> usize;
    fn on_reclaim(&mut self, _zone: &Reclaimed) {}
    /// Called when a zone of `class` fills up.
    fn on_zone_full(&mut self, _class: usize) {}
    /// Whether the policy needs next-write times (the oracles).
    fn needs_future(&self) -> bool {
        false
    }
    /// Bytes of per-block state beyond the engine's 32-bit word.
    fn bytes_per_block(&self) -> usize {
        0
    }
}

/// Parameters given as `key=value` pairs.
pub type Params = BTreeMap<String, String>;

/// Device facts some policies scale their defaults by.
#[derive(Copy, Clone, Debug)]
pub struct PolicyEnv {
    pub zone_blocks: u64,
    /// Blocks the FTL can hold (its capacity, or the expected log size when unbounded).
    pub capacity_blocks: u64,
}

pub const NAMES: [&str; 10] = ["normal", "sepgc", "warcip", "sepbit", "sepbit6", "bhbdp-pre", "bhbdp", "fk", "zbopt", "lifespan"];

/// The oracles keep a block's next-write time in its policy word: logical times stay below
/// 2^32 (the engine's limit), so `u32::MAX` can mean "never".
pub(crate) fn store_next_write(b: &BlockCtx, word: &mut u32) -> u64 {
    *word = if b.next_write == zonekit_base::NEVER { u32::MAX } else { b.next_write as u32 };
    b.next_write
}

/// The next-write time [`store_next_write`] kept.
pub(crate) fn stored_next_write(word: u32) -> u64 {
    if word == u32::MAX {
        zonekit_base::NEVER
    } else {
        word as u64
    }
}

/// The `Placement` impl shared by the future-knowledge oracles, which differ only in how
/// their `class(next_write, now)` buckets a remaining lifetime.
macro_rules! oracle_placement {
    ($ty:ty, $name:literal) => {
        impl Placement for $ty {
            fn name(&self) -> String {
                $name.into()
            }
            fn classes(&self) -> usize {
                self.classes
            }
            fn user_write(&mut self, b: &BlockCtx, word: &mut u32) -> usize {
                self.class(store_next_write(b, word), b.now)
            }
            fn gc_write(&mut self, b: &BlockCtx, word: &mut u32) -> usize {
                self.class(stored_next_write(*word), b.now)
            }
            fn needs_future(&self) -> bool {
                true
            }
        }
    };
}
pub(crate) use oracle_placement;

pub(crate) fn take_f64(p: &mut Params, key: &str, default: f64) -> Result<f64, String> {
    match p.remove(key) {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| format!("{key}={v}: not a number")),
    }
}

pub(crate) fn take_u64(p: &mut Params, key: &str, default: u64) -> Result<u64, String> {
    match p.remove(key) {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| format!("{key}={v}: not a whole number")),
    }
}

/// Creates a placement policy by name, consuming its parameters from `params`.
pub fn create(name: &str, params: &mut Params, env: PolicyEnv) -> Result<Box<dyn Placement>, String> {
    let p: Box<dyn Placement> = match name {
        "normal" => Box::new(Normal::new(6)),
        "sepgc" => Box::new(SepGc),
        "warcip" => Box::new(Warcip::new(take_u64(params, "clusters", 6)? as usize, take_u64(params, "adjust-every", 256)?)),
        "sepbit" => Box::new(SepBit::new(sepbit::Variant::SevenClass)),
        "sepbit6" => Box::new(SepBit::new(sepbit::Variant::SixClass)),
        "bhbdp" | "bhbdp-pre" => Box::new(BhbDp::from_params(params, env, name == "bhbdp")?),
        "fk" => Box::new(Fk::new(env.zone_blocks, take_u64(params, "classes", 7)? as usize)?),
        "zbopt" => Box::new(ZbOpt::new(env.zone_blocks, take_f64(params, "base", 4.0)?, take_u64(params, "classes", 7)? as usize)?),
        "lifespan" => Box::new(Lifespan::from_params(params, env)?),
        other => return Err(format!("unknown placement policy {other:?}; valid: {}", NAMES.join(", "))),
    };
    Ok(p)
}
