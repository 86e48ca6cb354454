//! Normal (no separation): user writes rotate over the user classes in arrival order, GC writes
//! go to one more class. The thesis' baseline.

use zonekit_base::policy::{PolicyInfo, Role};

use super::{BlockCtx, MakePlacement, Placement};

pub const NORMAL: PolicyInfo<MakePlacement> = PolicyInfo {
    name: "normal",
    summary: "no separation: user writes rotate over 6 classes, GC writes to a 7th (seed 000's baseline)",
    role: Role::Baseline,
    params: &[],
    make: |_, _| Ok(Box::new(Normal::new(6))),
};

pub struct Normal {
    user_classes: usize,
    next: usize,
}

impl Normal {
    pub fn new(user_classes: usize) -> Normal {
        Normal { user_classes: user_classes.max(1), next: 0 }
    }
}

impl Placement for Normal {
    fn name(&self) -> String {
        NORMAL.name.into()
    }
    fn classes(&self) -> usize {
        self.user_classes + 1
    }
    fn user_classes(&self) -> usize {
        self.user_classes
    }
    fn user_write(&mut self, _: &BlockCtx, _: &mut u32) -> usize {
        let c = self.next;
        self.next = (self.next + 1) % self.user_classes;
        c
    }
    fn gc_write(&mut self, _: &BlockCtx, _: &mut u32) -> usize {
        self.user_classes
    }
}
