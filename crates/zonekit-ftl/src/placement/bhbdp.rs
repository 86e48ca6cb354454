//! BHB-DP, block-heat-based data placement (seed 000, section 3.2, Algorithm 3-1).
//!
//! Per block: user-write count `freq_uw` and GC-write count `freq_gw` (saturating u8, the low
//! two bytes of the policy word) and the last user-write time (kept by the engine). Heat `bh = clamp(freq_gw − freq_uw + C, 1, N)`; smaller
//! is hotter and is the class (1-based). A GC write of a block whose lifetime so far (BILT =
//! now − last user write) exceeds R1 resets its history (`freq_uw = 0, freq_gw = 1`), and past
//! R2 sends it straight to the coldest class (`freq_gw = N − C`). BHB-DP (not `_pre`) then
//! corrects: if `bh < C` and BILT exceeds `l[bh]`, the mean lifetime (reclaim − full time) of
//! the last M reclaimed zones of class bh, the block is one class colder.
//!
//! Threshold lock-in, and the `age` option. `l[t]` is refreshed only when a zone of class t is
//! reclaimed. On a device of few zones the first class-1 zone is reclaimed almost at once (its
//! open-zone garbage counts toward the trigger), `l[1]` comes out tiny, nearly every block is
//! then corrected colder, class 1 receives almost no writes and is never reclaimed again, so
//! `l[1]` never recovers. With `age=1` a class that has gone unreclaimed for longer than `l[t]`
//! uses that time instead: any zone of the class still alive has lived at least that long, so
//! it is a lower bound on the lifetime the correction compares with. Off by default (the
//! thesis' algorithm).
//!
//! The thesis gives no values for R1, R2 and M. Defaults here, scaled to the device:
//! R1 = 0.5 × capacity, R2 = 2 × capacity (in blocks of logical time), M = 8; `zonekit sweep`
//! shows the sensitivity (docs/results/seed-000.md).

use std::collections::VecDeque;

use zonekit_base::policy::{ParamInfo, ParamReader, PolicyError, PolicyInfo, Role};

use super::{BlockCtx, MakePlacement, Placement, PolicyEnv, Reclaimed};

const PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "classes", default: "7", summary: "classes N (2..=64)" },
    ParamInfo { name: "c", default: "5", summary: "default heat C of a new block (0 < C < N)" },
    ParamInfo { name: "r1", default: "0.5", summary: "R1: lifetime that resets a block's history, in device capacities" },
    ParamInfo { name: "r2", default: "2", summary: "R2: lifetime that sends a block to the coldest class, in device capacities" },
    ParamInfo { name: "m", default: "8", summary: "reclaimed zones per class in the mean lifetime l" },
    ParamInfo { name: "age", default: "0", summary: "1: a class unreclaimed for longer than its l uses that time as l (lifts a threshold locked in by an early reclaim)" },
];

pub const BHBDP: PolicyInfo<MakePlacement> = PolicyInfo {
    name: "bhbdp",
    summary: "BHB-DP (seed 000): block heat from user/GC write counts, with the lifetime correction",
    role: Role::Proposed,
    params: PARAMS,
    make: |p, env| Ok(Box::new(BhbDp::from_params(p, env, true)?)),
};
pub const BHBDP_PRE: PolicyInfo<MakePlacement> = PolicyInfo {
    name: "bhbdp-pre",
    summary: "BHB-DP_pre (seed 000): block heat without the correction step",
    role: Role::Proposed,
    params: PARAMS,
    make: |p, env| Ok(Box::new(BhbDp::from_params(p, env, false)?)),
};

pub struct BhbDp {
    correct: bool,
    classes: u8,
    default_heat: u8,
    r1: u64,
    r2: u64,
    window: usize,
    /// Per class: lifetimes of the last M reclaimed zones, and their sum.
    zone_lifetimes: Vec<(VecDeque<u64>, u64)>,
    /// Per class: their mean, l[t] (u64::MAX until a zone of the class is reclaimed).
    mean_lifetime: Vec<u64>,
    /// The `age` option, and per class the logical time of its last reclaim.
    age: bool,
    last_reclaim: Vec<u64>,
}

impl BhbDp {
    pub fn from_params(p: &ParamReader, env: PolicyEnv, correct: bool) -> Result<BhbDp, PolicyError> {
        let classes = p.u64("classes")?;
        let default_heat = p.u64("c")?;
        let r1 = p.f64("r1")?;
        let r2 = p.f64("r2")?;
        let window = p.u64("m")? as usize;
        let age = match p.u64("age")? {
            0 => false,
            1 => true,
            other => return Err(p.invalid(format!("age is 0 (off) or 1 (on), not {other}"))),
        };
        if !(2..=64).contains(&classes) || default_heat == 0 || default_heat >= classes {
            return Err(p.invalid(format!("needs 2 <= classes <= 64 and 0 < c < classes (got classes={classes}, c={default_heat})")));
        }
        if !(r1 > 0.0 && r2 > r1) || window == 0 {
            return Err(p.invalid(format!("needs 0 < r1 < r2 (capacity multiples) and m > 0 (got r1={r1}, r2={r2}, m={window})")));
        }
        Ok(BhbDp {
            correct,
            classes: classes as u8,
            default_heat: default_heat as u8,
            r1: (r1 * env.capacity_blocks as f64) as u64,
            r2: (r2 * env.capacity_blocks as f64) as u64,
            window,
            zone_lifetimes: vec![(VecDeque::new(), 0); classes as usize],
            mean_lifetime: vec![u64::MAX; classes as usize],
            age,
            last_reclaim: vec![0; classes as usize],
        })
    }

    fn heat(&self, freq_uw: u8, freq_gw: u8, bilt: u64, now: u64) -> usize {
        let n = self.classes as i32;
        let c = self.default_heat as i32;
        let bh = (freq_gw as i32 - freq_uw as i32 + c).clamp(1, n);
        // Computed, not branched on: whether a write is corrected is data, and a mispredicted
        // branch costs more than the threshold's lookup.
        let corrected = self.correct & (bh < c) & (bilt > self.threshold(bh as usize - 1, now));
        (bh + corrected as i32) as usize - 1
    }

    /// l[t], or with `age` the time since class t was last reclaimed if that is longer.
    fn threshold(&self, class: usize, now: u64) -> u64 {
        let l = self.mean_lifetime[class];
        if self.age && l != u64::MAX {
            l.max(now - self.last_reclaim[class])
        } else {
            l
        }
    }
}

fn unpack(word: u32) -> (u8, u8) {
    (word as u8, (word >> 8) as u8)
}

fn pack(freq_uw: u8, freq_gw: u8) -> u32 {
    freq_uw as u32 | (freq_gw as u32) << 8
}

impl Placement for BhbDp {
    fn name(&self) -> String {
        if self.correct {
            BHBDP.name.into()
        } else {
            BHBDP_PRE.name.into()
        }
    }
    fn classes(&self) -> usize {
        self.classes as usize
    }
    fn user_write(&mut self, b: &BlockCtx, word: &mut u32) -> usize {
        let (mut uw, mut gw) = unpack(*word);
        let bilt = match b.last_user_write {
            Some(last) => {
                uw = uw.saturating_add(1);
                b.now - last
            }
            None => {
                (uw, gw) = (0, 0);
                b.now
            }
        };
        *word = pack(uw, gw);
        self.heat(uw, gw, bilt, b.now)
    }
    fn gc_write(&mut self, b: &BlockCtx, word: &mut u32) -> usize {
        let (mut uw, mut gw) = unpack(*word);
        let bilt = b.now - b.last_user_write.unwrap_or(0);
        // Selects rather than branches (see `heat`).
        let (reset, coldest) = (bilt > self.r1, bilt > self.r2);
        uw = if reset { 0 } else { uw };
        gw = if coldest {
            self.classes - self.default_heat
        } else if reset {
            1
        } else {
            gw.saturating_add(1)
        };
        *word = pack(uw, gw);
        self.heat(uw, gw, bilt, b.now)
    }
    fn on_reclaim(&mut self, z: &Reclaimed) {
        let (recent, sum) = &mut self.zone_lifetimes[z.class];
        if recent.len() == self.window {
            *sum -= recent.pop_front().unwrap();
        }
        let lifetime = z.now - z.full_at;
        recent.push_back(lifetime);
        *sum += lifetime;
        self.mean_lifetime[z.class] = *sum / recent.len() as u64;
        self.last_reclaim[z.class] = z.now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::{create, Params};

    fn bhbdp(age: &str) -> Box<dyn Placement> {
        let params: Params = [("age".to_string(), age.to_string())].into();
        create("bhbdp", &params, PolicyEnv { zone_blocks: 64, capacity_blocks: 1_000_000 }).unwrap()
    }

    /// A block rewritten after `interval` writes, at time `now`: its class.
    fn rewrite(p: &mut dyn Placement, now: u64, interval: u64) -> usize {
        let mut word = pack(3, 0); // written often: heat C - 3 - 1, class 1 (0-based 0) after this write
        p.user_write(&BlockCtx { id: 0, now, now_us: now, last_user_write: Some(now - interval), next_write: zonekit_base::NEVER, from_class: 0 }, &mut word)
    }

    #[test]
    fn an_early_tiny_threshold_stays_locked_unless_aged() {
        for (age, later_class) in [("0", 1), ("1", 0)] {
            let mut p = bhbdp(age);
            assert_eq!(rewrite(&mut *p, 1_000, 500), 0, "age={age}: hottest class before any reclaim");
            // The first class-0 zone is reclaimed 10 writes after it filled: l = 10.
            p.on_reclaim(&Reclaimed { class: 0, opened_at: 900, full_at: 1_000, now: 1_010, garbage_proportion: 0.9 });
            assert_eq!(rewrite(&mut *p, 1_100, 500), 1, "age={age}: an interval above l is corrected colder");
            // Long after, class 0 never reclaimed again: only the aged threshold lets hot
            // blocks back in.
            assert_eq!(rewrite(&mut *p, 1_000_000, 500), later_class, "age={age}");
        }
        let params: Params = [("age".to_string(), "2".to_string())].into();
        assert!(create("bhbdp", &params, PolicyEnv { zone_blocks: 64, capacity_blocks: 1_000 }).is_err());
    }
}
