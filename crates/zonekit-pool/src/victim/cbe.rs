//! CBE, cost-benefit-enhanced (seed 000, section 3.4, Algorithm 3-2): only full zones whose
//! garbage proportion exceeds the GC threshold (no negative-yield reclaims); GP = 1 scores ∞;
//! otherwise `GP / (2 (1 − GP)) × f(now − time the zone became full)`, f(t) = t by default (the
//! thesis' Table 3.2 compares t, √t and ln t).

use super::cost_benefit::Aging;
use zonekit_base::policy::{PolicyInfo, Role};

use super::{MakeVictim, Victim, VictimCtx};

pub const CBE: PolicyInfo<MakeVictim> =
    PolicyInfo { name: "cbe", summary: "cost-benefit-enhanced, f(t) = t (seed 000)", role: Role::Proposed, params: &[], make: |_, _| Ok(Box::new(Cbe::new(Aging::Linear))) };
pub const CBE_SQRT: PolicyInfo<MakeVictim> =
    PolicyInfo { name: "cbe-sqrt", summary: "CBE with f(t) = sqrt t", role: Role::Variant, params: &[], make: |_, _| Ok(Box::new(Cbe::new(Aging::Sqrt))) };
pub const CBE_LN: PolicyInfo<MakeVictim> =
    PolicyInfo { name: "cbe-ln", summary: "CBE with f(t) = ln t", role: Role::Variant, params: &[], make: |_, _| Ok(Box::new(Cbe::new(Aging::Ln))) };

pub struct Cbe {
    aging: Aging,
}

impl Cbe {
    pub fn new(aging: Aging) -> Cbe {
        Cbe { aging }
    }
}

impl Victim for Cbe {
    fn name(&self) -> String {
        match self.aging {
            Aging::Linear => CBE.name.into(),
            Aging::Sqrt => CBE_SQRT.name.into(),
            Aging::Ln => CBE_LN.name.into(),
        }
    }
    fn select(&mut self, ctx: &VictimCtx) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        for (i, z, gp) in ctx.candidates() {
            if gp <= ctx.gc_threshold {
                continue; // reclaiming it would yield less than the threshold
            }
            let score = if gp >= 1.0 { f64::INFINITY } else { gp / (2.0 * (1.0 - gp)) * self.aging.apply(ctx.now - z.full_at) };
            if best.is_none_or(|(_, s)| score > s) {
                best = Some((i, score));
            }
        }
        best.map(|b| b.0)
    }
}
