//! ZB-OPT (seed 000, section 2.3): the thesis' oracle with exponential lifetime buckets.
//! With zone size S and base b (4): class 1 holds remaining lifetimes t ≤ S, class k holds
//! S·b^(k−2) < t ≤ S·b^(k−1) up to the second-to-last class, which takes everything longer;
//! the last class holds blocks never written again. GC writes use the remaining lifetime.

use zonekit_base::NEVER;

use zonekit_base::policy::{ParamInfo, PolicyError, PolicyInfo, Role};

use super::{store_next_write, stored_next_write, BlockCtx, MakePlacement, Placement};

pub const ZBOPT: PolicyInfo<MakePlacement> = PolicyInfo {
    name: "zbopt",
    summary: "ZB-OPT, seed 000's oracle: exponential remaining-lifetime buckets",
    role: Role::Oracle,
    params: &[ParamInfo { name: "base", default: "4", summary: "bucket growth factor (> 1)" }, ParamInfo { name: "classes", default: "7", summary: "classes (at least 3)" }],
    make: |p, env| Ok(Box::new(ZbOpt::new(env.zone_blocks, p.f64("base")?, p.u64("classes")? as usize)?)),
};

pub struct ZbOpt {
    zone_blocks: f64,
    base_ln: f64,
    classes: usize,
}

impl ZbOpt {
    pub fn new(zone_blocks: u64, base: f64, classes: usize) -> Result<ZbOpt, PolicyError> {
        if classes < 3 || !(base > 1.0) {
            return Err(PolicyError::Invalid { policy: ZBOPT.name, reason: format!("needs at least 3 classes and base > 1 (got classes={classes}, base={base})") });
        }
        Ok(ZbOpt { zone_blocks: zone_blocks.max(1) as f64, base_ln: base.ln(), classes })
    }

    fn class(&self, next: u64, now: u64) -> usize {
        if next == NEVER {
            return self.classes - 1;
        }
        let t = next.saturating_sub(now) as f64;
        if t <= self.zone_blocks {
            return 0;
        }
        // t in (S·b^(k−1), S·b^k] → class k (0-based), k = ⌈log_b(t / S)⌉.
        let k = ((t / self.zone_blocks).ln() / self.base_ln - 1e-12).ceil() as usize;
        k.min(self.classes - 2)
    }
}

super::oracle_placement!(ZbOpt, ZBOPT);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_the_thesis() {
        let z = ZbOpt::new(100, 4.0, 7).unwrap();
        let c = |t: u64| z.class(1000 + t, 1000) + 1; // 1-based like the thesis
        assert_eq!((c(1), c(100)), (1, 1));
        assert_eq!((c(101), c(400)), (2, 2));
        assert_eq!((c(401), c(1600)), (3, 3));
        assert_eq!((c(1601), c(6400)), (4, 4));
        assert_eq!((c(6401), c(25600)), (5, 5));
        assert_eq!((c(25601), c(10_000_000)), (6, 6));
        assert_eq!(z.class(NEVER, 5) + 1, 7);
    }
}
