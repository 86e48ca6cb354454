//! SepBIT (Wang et al., FAST'22): infer block invalidation times from the previous lifetime.
//!
//! ℓ is the mean lifespan (logical time from opening to reclaim) of the last 16 reclaimed
//! class-1 zones, +∞ until one is reclaimed. A user write of a block whose previous lifetime is
//! below ℓ goes to class 1, anything else (including new blocks) to class 2. GC writes: from
//! class 1 to class 3; others by age (now − last user write): the thesis' 7-class variant uses
//! [0, 4ℓ) → 4, [4ℓ, 8ℓ) → 5, [8ℓ, 16ℓ) → 6, ≥ 16ℓ → 7; the paper's 6-class variant
//! [0, 4ℓ) → 4, [4ℓ, 16ℓ) → 5, ≥ 16ℓ → 6. (Classes are 1-based here, 0-based in code.)

use std::collections::VecDeque;

use zonekit_base::policy::{PolicyInfo, Role};

use super::{BlockCtx, MakePlacement, Placement, Reclaimed};

pub const SEPBIT: PolicyInfo<MakePlacement> = PolicyInfo {
    name: "sepbit",
    summary: "SepBIT (FAST'22), the thesis' 7-class variant",
    role: Role::Baseline,
    params: &[],
    make: |_, _| Ok(Box::new(SepBit::new(Variant::SevenClass))),
};
pub const SEPBIT6: PolicyInfo<MakePlacement> =
    PolicyInfo { name: "sepbit6", summary: "SepBIT as the paper has it (6 classes)", role: Role::Variant, params: &[], make: |_, _| Ok(Box::new(SepBit::new(Variant::SixClass))) };

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Variant {
    SevenClass,
    SixClass,
}

const WINDOW: usize = 16;

pub struct SepBit {
    variant: Variant,
    recent: VecDeque<u64>,
    sum: u64,
}

impl SepBit {
    pub fn new(variant: Variant) -> SepBit {
        SepBit { variant, recent: VecDeque::with_capacity(WINDOW), sum: 0 }
    }

    /// ℓ, or `None` (infinite) before the first class-1 reclaim.
    fn ell(&self) -> Option<u64> {
        (!self.recent.is_empty()).then(|| self.sum / self.recent.len() as u64)
    }
}

impl Placement for SepBit {
    fn name(&self) -> String {
        match self.variant {
            Variant::SevenClass => SEPBIT.name.into(),
            Variant::SixClass => SEPBIT6.name.into(),
        }
    }
    fn classes(&self) -> usize {
        match self.variant {
            Variant::SevenClass => 7,
            Variant::SixClass => 6,
        }
    }
    fn user_write(&mut self, b: &BlockCtx, _: &mut u32) -> usize {
        match b.last_user_write {
            Some(last) if self.ell().is_none_or(|ell| b.now - last < ell) => 0,
            _ => 1,
        }
    }
    fn gc_write(&mut self, b: &BlockCtx, _: &mut u32) -> usize {
        if b.from_class == 0 {
            return 2;
        }
        let Some(ell) = self.ell() else { return 3 };
        let age = b.now - b.last_user_write.unwrap_or(0);
        match self.variant {
            Variant::SevenClass if age < 4 * ell => 3,
            Variant::SevenClass if age < 8 * ell => 4,
            Variant::SevenClass if age < 16 * ell => 5,
            Variant::SevenClass => 6,
            Variant::SixClass if age < 4 * ell => 3,
            Variant::SixClass if age < 16 * ell => 4,
            Variant::SixClass => 5,
        }
    }
    fn on_reclaim(&mut self, z: &Reclaimed) {
        if z.class == 0 {
            if self.recent.len() == WINDOW {
                self.sum -= self.recent.pop_front().unwrap();
            }
            let lifespan = z.now - z.opened_at;
            self.recent.push_back(lifespan);
            self.sum += lifespan;
        }
    }
}
