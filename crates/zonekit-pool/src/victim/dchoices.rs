//! d-choices (windowed greedy): sample d candidates uniformly and take the one with the most
//! garbage. Cheap with very many zones; d = 1 is random selection, large d approaches greedy.

use zonekit_base::Rng;

use zonekit_base::policy::{ParamInfo, PolicyInfo, Role};

use super::{MakeVictim, Victim, VictimCtx};

pub const D_CHOICES: PolicyInfo<MakeVictim> = PolicyInfo {
    name: "d-choices",
    summary: "the most garbage of d zones sampled at random (d-choices:D)",
    role: Role::Baseline,
    params: &[ParamInfo { name: "d", default: "2", summary: "zones sampled per choice" }],
    make: |p, seed| match p.u64("d")? {
        0 => Err(p.invalid("d must be at least 1")),
        d => Ok(Box::new(DChoices::new(d as usize, seed))),
    },
};

pub struct DChoices {
    d: usize,
    rng: Rng,
}

impl DChoices {
    pub fn new(d: usize, seed: u64) -> DChoices {
        DChoices { d, rng: Rng::new(seed ^ 0xD0C4_0125) }
    }
}

impl Victim for DChoices {
    fn name(&self) -> String {
        format!("{}:{}", D_CHOICES.name, self.d)
    }
    fn select(&mut self, ctx: &VictimCtx) -> Option<usize> {
        let candidates: Vec<(usize, u64)> = ctx.candidates().map(|(i, z, _)| (i, z.written - z.valid)).collect();
        if candidates.is_empty() {
            return None;
        }
        (0..self.d).map(|_| candidates[self.rng.below(candidates.len() as u64) as usize]).max_by_key(|c| (c.1, std::cmp::Reverse(c.0))).map(|c| c.0)
    }
}
