//! NoSep (no separation at all): user and GC writes share one class, so one open zone takes
//! everything. The SepBIT authors' baseline, as their simulator has it
//! (fallfish/sepbit, `trace_replay/src/main/java/gcsimulator/placement/NoSep.java`: every write
//! is classified 0). Not the thesis' Normal, which rotates user writes over six classes and
//! keeps GC writes apart.

use zonekit_base::policy::{PolicyInfo, Role};

use super::{BlockCtx, MakePlacement, Placement};

pub const NOSEP: PolicyInfo<MakePlacement> = PolicyInfo {
    name: "nosep",
    summary: "no separation: user and GC writes to one class (the SepBIT simulator's NoSep)",
    role: Role::Variant,
    params: &[],
    make: |_, _| Ok(Box::new(NoSep)),
};

pub struct NoSep;

impl Placement for NoSep {
    fn name(&self) -> String {
        NOSEP.name.into()
    }
    fn classes(&self) -> usize {
        1
    }
    fn user_write(&mut self, _: &BlockCtx, _: &mut u32) -> usize {
        0
    }
    fn gc_write(&mut self, _: &BlockCtx, _: &mut u32) -> usize {
        0
    }
}
