//! Greedy: the full zone with the most invalid blocks.

use super::{Victim, VictimCtx};

pub struct Greedy;

impl Victim for Greedy {
    fn name(&self) -> String {
        "greedy".into()
    }
    fn select(&mut self, ctx: &VictimCtx) -> Option<usize> {
        ctx.candidates().max_by_key(|(i, z, _)| (z.written - z.valid, std::cmp::Reverse(*i))).map(|(i, _, _)| i)
    }
}
