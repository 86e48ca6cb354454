//! Live-data levels (the zoned file system's GC, after ZenFS's): full zones fall into four
//! levels by live data (< 25 %, < 50 %, < 75 %, ≥ 75 %), the lowest level is taken first and,
//! within a level, the zone that filled first. Zones at or above `keep` live are left alone
//! while any free zone remains: copying a mostly-live zone frees little and, near full, makes
//! GC thrash.

use zonekit_base::policy::{ParamInfo, PolicyInfo, Role};

use super::{MakeVictim, Victim, VictimCtx};

pub const LEVELS: PolicyInfo<MakeVictim> = PolicyInfo {
    name: "levels",
    summary: "lowest quarter of live data first, oldest first within it; mostly-live zones only when no zone is free",
    role: Role::Baseline,
    params: &[ParamInfo { name: "keep", default: "0.75", summary: "live share (in quarters) from which a zone is kept while free zones remain" }],
    make: |p, _| {
        let keep = p.f64("keep")?;
        if !(keep > 0.0 && keep <= 1.0) {
            return Err(p.invalid(format!("keep={keep} must be in (0, 1]")));
        }
        Ok(Box::new(Levels { keep_quarters: (keep * 4.0).round() as u64 }))
    },
};

pub struct Levels {
    /// Zones with live data at or above `keep_quarters / 4` of written are kept while free zones remain.
    keep_quarters: u64,
}

impl Default for Levels {
    fn default() -> Self {
        Levels { keep_quarters: 3 }
    }
}

impl Victim for Levels {
    fn name(&self) -> String {
        LEVELS.name.into()
    }

    fn select(&mut self, ctx: &VictimCtx) -> Option<usize> {
        ctx.candidates()
            .filter(|(_, z, _)| ctx.free_zones == 0 || z.valid < z.written * self.keep_quarters / 4)
            .min_by_key(|(_, z, _)| ((z.valid * 4 / z.written).min(3), z.full_at))
            .map(|(i, _, _)| i)
    }
}
