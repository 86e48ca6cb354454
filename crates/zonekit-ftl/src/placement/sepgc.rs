//! SepGC: user writes to one class, GC writes to another (the classic separation).

use zonekit_base::policy::{PolicyInfo, Role};

use super::{BlockCtx, MakePlacement, Placement};

pub const SEPGC: PolicyInfo<MakePlacement> =
    PolicyInfo { name: "sepgc", summary: "user writes to one class, GC writes to another", role: Role::Baseline, params: &[], make: |_, _| Ok(Box::new(SepGc)) };

pub struct SepGc;

impl Placement for SepGc {
    fn name(&self) -> String {
        SEPGC.name.into()
    }
    fn classes(&self) -> usize {
        2
    }
    fn user_classes(&self) -> usize {
        1
    }
    fn user_write(&mut self, _: &BlockCtx, _: &mut u32) -> usize {
        0
    }
    fn gc_write(&mut self, _: &BlockCtx, _: &mut u32) -> usize {
        1
    }
}
