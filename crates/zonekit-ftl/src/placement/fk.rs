//! FK, the future-knowledge oracle of the SepBIT paper: class = ⌊t_b / S_zone⌋ (0-based), capped
//! at the second-to-last class, where t_b is the block's remaining lifetime in user writes;
//! blocks never written again go to the last class. GC writes use the remaining lifetime too.

use zonekit_base::NEVER;

use zonekit_base::policy::{ParamInfo, PolicyError, PolicyInfo, Role};

use super::{store_next_write, stored_next_write, BlockCtx, MakePlacement, Placement};

pub const FK: PolicyInfo<MakePlacement> = PolicyInfo {
    name: "fk",
    summary: "future-knowledge oracle of the SepBIT paper: remaining lifetime in zone sizes",
    role: Role::Oracle,
    params: &[ParamInfo { name: "classes", default: "7", summary: "classes (at least 2)" }],
    make: |p, env| Ok(Box::new(Fk::new(env.zone_blocks, p.u64("classes")? as usize)?)),
};

pub struct Fk {
    zone_blocks: u64,
    classes: usize,
}

impl Fk {
    pub fn new(zone_blocks: u64, classes: usize) -> Result<Fk, PolicyError> {
        if classes < 2 {
            return Err(PolicyError::Invalid { policy: FK.name, reason: format!("needs at least 2 classes (got {classes})") });
        }
        Ok(Fk { zone_blocks: zone_blocks.max(1), classes })
    }

    fn class(&self, next: u64, now: u64) -> usize {
        if next == NEVER {
            return self.classes - 1;
        }
        ((next.saturating_sub(now) / self.zone_blocks) as usize).min(self.classes - 2)
    }
}

super::oracle_placement!(Fk, FK);
