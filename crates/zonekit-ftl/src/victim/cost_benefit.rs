//! Cost-Benefit (Rosenblum & Ousterhout, LFS): maximise `GP / (2 (1 − GP)) × f(age)`, age =
//! logical time since the zone's last invalidation, f ∈ {t, √t, ln t}. The SepBIT authors'
//! simulator form is `GP / (1 − GP) × √age` with age = trace time since the zone's last append.

use super::{Victim, VictimCtx};

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

    fn suffix(self) -> &'static str {
        match self {
            Aging::Linear => "",
            Aging::Sqrt => "-sqrt",
            Aging::Ln => "-ln",
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
        if self.sepbit_form {
            "cb-sepbit".into()
        } else {
            format!("cb{}", self.aging.suffix())
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
