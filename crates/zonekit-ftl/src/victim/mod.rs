//! GC victim policies: which full zone to reclaim. One policy per file; [`create`] is the
//! registry.

mod cbe;
mod cost_benefit;
mod dchoices;
mod greedy;

pub use cbe::Cbe;
pub use cost_benefit::{Aging, CostBenefit};
pub use dchoices::DChoices;
pub use greedy::Greedy;

use crate::zone::{ZoneInfo, ZoneUse};

/// What a victim policy sees.
pub struct VictimCtx<'a> {
    pub zones: &'a [ZoneInfo],
    /// Logical time (user block writes so far) and trace time.
    pub now: u64,
    pub now_us: u64,
    /// Only zones whose garbage proportion is at least this are candidates.
    pub min_gp: f64,
    /// The FTL's GC threshold (CBE skips zones at or below it).
    pub gc_threshold: f64,
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

pub trait Victim {
    fn name(&self) -> String;
    /// The zone to reclaim, or `None` if no candidate qualifies.
    fn select(&mut self, ctx: &VictimCtx) -> Option<usize>;
}

pub const NAMES: [&str; 8] = ["greedy", "cb", "cb-sqrt", "cb-ln", "cb-sepbit", "cbe", "cbe-sqrt", "cbe-ln"];

/// Creates a victim policy by name (`d-choices:D` samples D candidates).
pub fn create(name: &str, seed: u64) -> Result<Box<dyn Victim>, String> {
    Ok(match name {
        "greedy" => Box::new(Greedy),
        "cb" => Box::new(CostBenefit::classic(Aging::Linear)),
        "cb-sqrt" => Box::new(CostBenefit::classic(Aging::Sqrt)),
        "cb-ln" => Box::new(CostBenefit::classic(Aging::Ln)),
        "cb-sepbit" => Box::new(CostBenefit::sepbit()),
        "cbe" => Box::new(Cbe::new(Aging::Linear)),
        "cbe-sqrt" => Box::new(Cbe::new(Aging::Sqrt)),
        "cbe-ln" => Box::new(Cbe::new(Aging::Ln)),
        other => match other.strip_prefix("d-choices:").map(str::parse::<usize>) {
            Some(Ok(d)) if d > 0 => Box::new(DChoices::new(d, seed)),
            _ => return Err(format!("unknown victim policy {other:?}; valid: {}, d-choices:D", NAMES.join(", "))),
        },
    })
}
