//! Cost-Benefit (Rosenblum & Ousterhout, LFS): maximise `GP / (2 (1 − GP)) × f(age)`, age =
//! logical time since the zone's last invalidation, f ∈ {t, √t, ln t}. The SepBIT authors'
//! simulator form is `GP / (1 − GP) × √age` with age = trace time since the zone's last append.

use zonekit_base::policy::{PolicyInfo, Role};

use super::{MakeVictim, Victim, VictimCtx};

pub const CB: PolicyInfo<MakeVictim> = PolicyInfo {
    name: "cb",
    summary: "cost-benefit (LFS), age since the last invalidation, f(t) = t",
    role: Role::Baseline,
    params: &[],
    make: |_, _| Ok(Box::new(CostBenefit::classic(Aging::Linear))),
};
pub const CB_SQRT: PolicyInfo<MakeVictim> =
    PolicyInfo { name: "cb-sqrt", summary: "cost-benefit with f(t) = sqrt t", role: Role::Variant, params: &[], make: |_, _| Ok(Box::new(CostBenefit::classic(Aging::Sqrt))) };
pub const CB_LN: PolicyInfo<MakeVictim> =
    PolicyInfo { name: "cb-ln", summary: "cost-benefit with f(t) = ln t", role: Role::Variant, params: &[], make: |_, _| Ok(Box::new(CostBenefit::classic(Aging::Ln))) };
pub const CB_SEPBIT: PolicyInfo<MakeVictim> = PolicyInfo {
    name: "cb-sepbit",
    summary: "the SepBIT simulator's form: GP/(1-GP) x sqrt(trace time since the last append)",
    role: Role::Variant,
    params: &[],
    make: |_, _| Ok(Box::new(CostBenefit::sepbit())),
};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Aging {
    Linear,
    Sqrt,
    Ln,
}

impl Aging {
    pub fn apply(self, t: u64) -> f64 {
        let t = t as f64;
        match self {
            Aging::Linear => t,
            Aging::Sqrt => t.sqrt(),
            Aging::Ln => (t + 1.0).ln(),
        }
    }
}

pub struct CostBenefit {
    aging: Aging,
    sepbit_form: bool,
}

impl CostBenefit {
    pub fn classic(aging: Aging) -> CostBenefit {
        CostBenefit { aging, sepbit_form: false }
    }
    pub fn sepbit() -> CostBenefit {
        CostBenefit { aging: Aging::Sqrt, sepbit_form: true }
    }
}

impl Victim for CostBenefit {
    fn name(&self) -> String {
        match (self.sepbit_form, self.aging) {
            (true, _) => CB_SEPBIT.name.into(),
            (false, Aging::Linear) => CB.name.into(),
            (false, Aging::Sqrt) => CB_SQRT.name.into(),
            (false, Aging::Ln) => CB_LN.name.into(),
        }
    }
    fn select(&mut self, ctx: &VictimCtx) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        for (i, z, gp) in ctx.candidates() {
            let score = if gp >= 1.0 {
                f64::INFINITY
            } else if self.sepbit_form {
                gp / (1.0 - gp) * self.aging.apply(ctx.now_us.saturating_sub(z.last_append_us))
            } else {
                gp / (2.0 * (1.0 - gp)) * self.aging.apply(ctx.now - z.last_invalidate)
            };
            if best.is_none_or(|(_, s)| score > s) {
                best = Some((i, score));
            }
        }
        best.map(|b| b.0)
    }
}
