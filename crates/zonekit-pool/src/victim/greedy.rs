//! Greedy: the full zone with the most invalid blocks.

use zonekit_base::policy::{PolicyInfo, Role};

use super::{MakeVictim, Victim, VictimCtx};

pub const GREEDY: PolicyInfo<MakeVictim> =
    PolicyInfo { name: "greedy", summary: "the full zone with the most garbage", role: Role::Baseline, params: &[], make: |_, _| Ok(Box::new(Greedy)) };

pub struct Greedy;

impl Victim for Greedy {
    fn name(&self) -> String {
        GREEDY.name.into()
    }
    fn select(&mut self, ctx: &VictimCtx) -> Option<usize> {
        ctx.candidates().max_by_key(|(i, z, _)| (z.written - z.valid, std::cmp::Reverse(*i))).map(|(i, _, _)| i)
    }
}
