//! GC victim policies: which full zone to reclaim. One policy per file, each with its table
//! row(s); [`VICTIMS`] is the registry and [`create`] builds one by name.

pub mod cbe;
pub mod cost_benefit;
pub mod dchoices;
pub mod greedy;
pub mod levels;

pub use cbe::Cbe;
pub use cost_benefit::{Aging, CostBenefit};
pub use dchoices::DChoices;
pub use greedy::Greedy;
pub use levels::Levels;

use zonekit_base::policy::{self, ParamReader, Params, PolicyError, PolicyInfo};

use crate::zone::{ZoneInfo, ZoneUse};

/// What a victim policy sees.
pub struct VictimCtx<'a> {
    pub zones: &'a [ZoneInfo],
    /// Logical time (the engine's clock) and trace time.
    pub now: u64,
    pub now_us: u64,
    /// Only zones whose garbage proportion is at least this are candidates.
    pub min_gp: f64,
    /// The engine's GC threshold (CBE skips zones at or below it).
    pub gc_threshold: f64,
    /// Free (empty) zones left: some policies take mostly-live zones only when none are.
    pub free_zones: usize,
}

impl VictimCtx<'_> {
    /// Full zones with some garbage and GP ≥ `min_gp`, with their index and GP.
    pub fn candidates(&self) -> impl Iterator<Item = (usize, &ZoneInfo, f64)> + '_ {
        self.zones.iter().enumerate().filter(|(_, z)| z.state == ZoneUse::Full && z.valid < z.written).filter_map(move |(i, z)| {
            let gp = z.garbage_proportion();
            (gp >= self.min_gp).then_some((i, z, gp))
        })
    }
}

/// A GC victim policy. The caller guarantees `ctx.zones` is the engine's current view; the
/// policy returns the index of a [`ZoneUse::Full`] zone from [`VictimCtx::candidates`] (or
/// `None`), and never changes anything but its own state.
pub trait Victim: Send {
    fn name(&self) -> String;
    /// The zone to reclaim, or `None` if no candidate qualifies.
    fn select(&mut self, ctx: &VictimCtx) -> Option<usize>;
}

/// Builds a victim policy from its parameters and the run's seed.
pub type MakeVictim = fn(&ParamReader, u64) -> Result<Box<dyn Victim>, PolicyError>;

/// The registry: every victim policy, in the order help lists them.
#[rustfmt::skip] // one row per line: adding a policy is a one-line change here
pub const VICTIMS: &[PolicyInfo<MakeVictim>] = &[
    greedy::GREEDY,
    cost_benefit::CB,
    cost_benefit::CB_SQRT,
    cost_benefit::CB_LN,
    cost_benefit::CB_SEPBIT,
    cbe::CBE,
    cbe::CBE_SQRT,
    cbe::CBE_LN,
    dchoices::D_CHOICES,
    levels::LEVELS,
];

/// Finds a victim policy by `NAME` or `NAME:VALUE` and checks its parameters.
pub fn find(spec: &str) -> Result<(&'static PolicyInfo<MakeVictim>, Params), PolicyError> {
    let (info, params) = policy::find(VICTIMS, "victim", spec)?;
    policy::check_params(info, &params)?;
    Ok((info, params))
}

/// Creates a victim policy by `NAME` or `NAME:VALUE` (e.g. `d-choices:4`).
pub fn create(spec: &str, seed: u64) -> Result<Box<dyn Victim>, PolicyError> {
    let (info, params) = find(spec)?;
    let reader = ParamReader::new(info, &params)?;
    (info.make)(&reader, seed)
}
