//! Lifespan: Zonekit's own placement. ZB-OPT's exponential lifetime buckets are near-optimal
//! with future knowledge; Lifespan fills them with an *estimate* of each block's remaining
//! lifetime, learnt online at two bytes per block.
//!
//! - Per block: the geometric mean of its past rewrite intervals (an exponentially weighted
//!   mean of log2 intervals, 8.8 fixed point). A block's next interval is best predicted by
//!   its typical interval, not by its last one alone (SepBIT) nor by a count (BHB-DP).
//! - User write of a known block: bucket its estimate E in units of the zone size S with base
//!   b: E ≤ S → class 1, S·b^(k−2) < E ≤ S·b^(k−1) → class k, up to the second-to-last class.
//!   A first write has no estimate: it goes to a class of its own (new data is often written
//!   once, and mixing it with rewritten data is what makes GC copy).
//! - GC write: the block survived its zone, so its remaining lifetime is at least its age;
//!   bucket max(E, age) one class colder than a user write would, and send blocks never
//!   rewritten (no estimate) that survive to the last class.

use zonekit_base::policy::{ParamInfo, ParamReader, PolicyError, PolicyInfo, Role};

use super::{BlockCtx, MakePlacement, Placement, PolicyEnv};

pub const LIFESPAN: PolicyInfo<MakePlacement> = PolicyInfo {
    name: "lifespan",
    summary: "ours: ZB-OPT's buckets filled with a learnt estimate of each block's lifetime",
    role: Role::Extension,
    params: &[ParamInfo { name: "base", default: "4", summary: "bucket growth factor (> 1)" }, ParamInfo { name: "classes", default: "7", summary: "classes (at least 4)" }],
    make: |p, env| Ok(Box::new(Lifespan::from_params(p, env)?)),
};

pub struct Lifespan {
    zone_blocks: f64,
    base_ln: f64,
    classes: usize,
    /// Weight of the newest interval in the mean, as a power of two (1/4).
    weight_shift: u32,
}

impl Lifespan {
    pub fn from_params(p: &ParamReader, env: PolicyEnv) -> Result<Lifespan, PolicyError> {
        let base = p.f64("base")?;
        let classes = p.u64("classes")? as usize;
        if classes < 4 || !(base > 1.0) {
            return Err(p.invalid(format!("needs at least 4 classes and base > 1 (got classes={classes}, base={base})")));
        }
        Ok(Lifespan { zone_blocks: env.zone_blocks.max(1) as f64, base_ln: base.ln(), classes, weight_shift: 2 })
    }

    /// Bucket of a lifetime in [0, classes − 3]: classes 0..=classes−3 are lifetime buckets.
    fn bucket(&self, t: f64) -> usize {
        let top = self.classes - 3;
        if t <= self.zone_blocks {
            return 0;
        }
        (((t / self.zone_blocks).ln() / self.base_ln).ceil() as usize).min(top)
    }

    fn decode(e: u16) -> f64 {
        ((e - 1) as f64 / 256.0).exp2()
    }
}

impl Placement for Lifespan {
    fn name(&self) -> String {
        LIFESPAN.name.into()
    }
    fn classes(&self) -> usize {
        self.classes
    }
    /// Every class but the last, which takes only blocks GC finds never rewritten.
    fn user_classes(&self) -> usize {
        self.classes - 1
    }
    fn user_write(&mut self, b: &BlockCtx, word: &mut u32) -> usize {
        // The policy word: EWMA of log2(interval) in 8.8 fixed point + 1; 0 = no interval yet.
        let Some(last) = b.last_user_write else {
            *word = 0;
            return self.classes - 2; // new data: a class of its own
        };
        let interval = (b.now - last).max(1) as f64;
        let x = (interval.log2() * 256.0).round().min(65_000.0) as i32 + 1;
        let old = *word as i32;
        let e = if old == 0 { x } else { old + ((x - old) >> self.weight_shift) };
        *word = e as u32;
        self.bucket(Self::decode(e as u16))
    }
    fn gc_write(&mut self, b: &BlockCtx, word: &mut u32) -> usize {
        let age = (b.now - b.last_user_write.unwrap_or(0)) as f64;
        match *word as u16 {
            0 => self.classes - 1,
            e => (self.bucket(Self::decode(e).max(age)) + 1).min(self.classes - 3),
        }
    }
}
