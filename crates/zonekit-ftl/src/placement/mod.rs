//! Placement policies: which open zone (class) each user write and each GC write goes to.
//!
//! One policy per file, each with its table row(s); [`PLACEMENTS`] is the registry and
//! [`create`] builds one by name. Classes are 0-based here (the thesis numbers them from 1).
//!
//! Adding a policy: a file with the policy and its `PolicyInfo` row, a `mod` line and the row
//! in [`PLACEMENTS`]. Help text, name and parameter checks and sweep grids come from the row.

pub mod bhbdp;
pub mod fk;
pub mod lifespan;
pub mod normal;
pub mod nosep;
pub mod sepbit;
pub mod sepgc;
pub mod warcip;
pub mod zbopt;

pub use bhbdp::BhbDp;
pub use fk::Fk;
pub use lifespan::Lifespan;
pub use normal::Normal;
pub use nosep::NoSep;
pub use sepbit::SepBit;
pub use sepgc::SepGc;
pub use warcip::Warcip;
pub use zbopt::ZbOpt;

use zonekit_base::policy::{self, ParamReader, PolicyError, PolicyInfo};
pub use zonekit_base::policy::{Params, Role};

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
/// `Send`: a served volume (`zonekit serve nbd`) moves its FTL between threads.
pub trait Placement: Send {
    fn name(&self) -> String;
    /// How many classes (open zones) it writes to.
    fn classes(&self) -> usize;
    /// How many classes user writes go to: they are `0 .. user_classes()`, hot to cold (the
    /// rest, if any, take only GC writes). A device that places data by handle folds them
    /// onto its handles ([`crate::hinted`]).
    fn user_classes(&self) -> usize {
        self.classes()
    }
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

/// Device facts some policies scale their defaults by.
#[derive(Copy, Clone, Debug)]
pub struct PolicyEnv {
    pub zone_blocks: u64,
    /// Blocks the FTL can hold (its capacity, or the expected log size when unbounded).
    pub capacity_blocks: u64,
}

/// Builds a placement policy from its parameters and the device it will run on.
pub type MakePlacement = fn(&ParamReader, PolicyEnv) -> Result<Box<dyn Placement>, PolicyError>;

/// The registry: every placement policy, in the order comparisons list them.
#[rustfmt::skip] // one row per line: adding a policy is a one-line change here
pub const PLACEMENTS: &[PolicyInfo<MakePlacement>] = &[
    normal::NORMAL,
    nosep::NOSEP,
    sepgc::SEPGC,
    warcip::WARCIP,
    sepbit::SEPBIT,
    sepbit::SEPBIT6,
    bhbdp::BHBDP_PRE,
    bhbdp::BHBDP,
    lifespan::LIFESPAN,
    fk::FK,
    zbopt::ZBOPT,
];

/// The placements of the standard comparison (every row but the variants), in table order.
pub fn compared() -> impl Iterator<Item = &'static PolicyInfo<MakePlacement>> {
    PLACEMENTS.iter().filter(|p| p.role != Role::Variant)
}

/// Finds a placement policy by name and checks `params` against its row.
pub fn find(name: &str, params: &Params) -> Result<&'static PolicyInfo<MakePlacement>, PolicyError> {
    let (info, short) = policy::find(PLACEMENTS, "placement", name)?;
    if !short.is_empty() {
        return Err(PolicyError::Unknown { family: "placement", name: name.to_string(), valid: policy::names(PLACEMENTS).join(", ") });
    }
    policy::check_params(info, params)?;
    Ok(info)
}

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
    ($ty:ty, $info:expr) => {
        impl Placement for $ty {
            fn name(&self) -> String {
                $info.name.into()
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

/// Creates a placement policy by name with `params` (unknown keys are refused, missing ones
/// take the table's defaults).
pub fn create(name: &str, params: &Params, env: PolicyEnv) -> Result<Box<dyn Placement>, PolicyError> {
    let info = find(name, params)?;
    let reader = ParamReader::new(info, params)?;
    (info.make)(&reader, env)
}
