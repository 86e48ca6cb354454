//! d-choices (windowed greedy): sample d candidates uniformly and take the one with the most
//! garbage. Cheap with very many zones; d = 1 is random selection, large d approaches greedy.

use zonekit_base::Rng;

use super::{Victim, VictimCtx};

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
        format!("d-choices:{}", self.d)
    }
    fn select(&mut self, ctx: &VictimCtx) -> Option<usize> {
        let candidates: Vec<(usize, u32)> = ctx.candidates().map(|(i, z, _)| (i, z.written - z.valid)).collect();
        if candidates.is_empty() {
            return None;
        }
        (0..self.d).map(|_| candidates[self.rng.below(candidates.len() as u64) as usize]).max_by_key(|c| (c.1, std::cmp::Reverse(c.0))).map(|c| c.0)
    }
}
