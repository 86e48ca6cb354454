//! `slru` (§3.1.2): segmented LRU with `levels` (3 by default) equal segments of chunk ids.
//!
//! A chunk in no segment enters the lowest segment (0) at its MRU end, dropping that
//! segment's LRU entry when it is full. A hit in segment i below the top moves the chunk to
//! the MRU end of segment i + 1; if that overflows, its LRU entry is demoted to the MRU end
//! of segment i (which just lost the hit chunk, so nothing cascades). A hit in the top
//! segment moves the chunk to its MRU end. Entries leave only from the lowest segment.
//!
//! Classes: 0 for a chunk in no segment, i + 1 for a chunk in segment i: `levels + 1`.
//!
//! Sizes: the budget's ⌊memory / 4⌋ ids split into `levels` segments of ⌊ids / levels⌋ each
//! (our choice of "equal" when levels does not divide the ids: the remainder, one id of 4,096
//! for 3 levels, stays unused, so the segments are exactly equal). A budget under one id a
//! segment is refused. `levels` is 1 to 254 (classes fit a u8); 1 is plain LRU. O(1) an
//! access.

use zonekit_base::policy::{ParamInfo, PolicyInfo, Role};

use super::lists::Lists;
use super::{list_ids, param_error, Sampler, SamplerBudget, SamplerInfo, ID_BYTES};
use crate::{CacheError, Result};

pub const SLRU: SamplerInfo = PolicyInfo {
    name: "slru",
    summary: "segmented LRU over chunk ids, equal segments (§3.1.2)",
    role: Role::Baseline,
    params: &[ParamInfo { name: "levels", default: "3", summary: "segments (classes are levels + 1)" }],
    make: |p, budget| {
        let levels = p.u64("levels").map_err(param_error)?;
        if !(1..=LEVELS_MAX).contains(&levels) {
            return Err(param_error(p.invalid(format!("levels={levels}: 1 to {LEVELS_MAX}"))));
        }
        Ok(Box::new(Slru::new(budget, levels as usize)?))
    },
};

/// Most segments: `levels + 1` classes must fit a u8.
pub const LEVELS_MAX: u64 = u8::MAX as u64 - 1;

pub struct Slru {
    lists: Lists,
    /// Ids a segment holds.
    segment_ids: usize,
}

impl Slru {
    pub fn new(budget: SamplerBudget, levels: usize) -> Result<Slru> {
        if !(1..=LEVELS_MAX as usize).contains(&levels) {
            return Err(CacheError::Config(format!("sampler slru: levels={levels}: 1 to {LEVELS_MAX}")));
        }
        let segment_ids = list_ids(SLRU.name, budget, levels as u64)? / levels;
        Ok(Slru { lists: Lists::new(levels, levels * segment_ids), segment_ids })
    }

    fn levels(&self) -> usize {
        self.lists.capacity() / self.segment_ids
    }

    #[cfg(test)]
    fn check_invariants(&self) {
        self.lists.check_invariants();
        for level in 0..self.levels() {
            assert!(self.lists.len(level) <= self.segment_ids, "segment {level} over its {} ids", self.segment_ids);
        }
    }
}

impl Sampler for Slru {
    fn name(&self) -> &'static str {
        SLRU.name
    }

    fn access(&mut self, chunk: u64) {
        let top = self.levels() - 1;
        match self.lists.find(chunk) {
            Some((slot, level)) if level == top => self.lists.move_to_mru(slot, level),
            Some((slot, level)) => {
                self.lists.move_to_mru(slot, level + 1);
                if self.lists.len(level + 1) > self.segment_ids {
                    self.lists.move_lru(level + 1, level);
                }
            }
            None => {
                if self.lists.len(0) == self.segment_ids {
                    self.lists.pop_lru(0);
                }
                self.lists.push_mru(0, chunk);
            }
        }
    }

    fn classes(&self) -> u8 {
        self.levels() as u8 + 1
    }

    #[inline]
    fn class(&self, chunk: u64) -> u8 {
        self.lists.list_of(chunk).map_or(0, |level| level as u8 + 1)
    }

    fn memory_bytes(&self) -> u64 {
        self.lists.capacity() as u64 * ID_BYTES
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::sampler::tests::stream;

    fn slru(ids: u64, levels: usize) -> Slru {
        Slru::new(SamplerBudget { memory_bytes: ids * 4, ..Default::default() }, levels).unwrap()
    }

    fn segments(s: &Slru) -> Vec<Vec<u64>> {
        (0..s.levels()).map(|l| s.lists.chunks(l)).collect()
    }

    #[test]
    fn sizes_classes_and_too_small_budgets() {
        let s = Slru::new(SamplerBudget::default(), 3).unwrap();
        assert_eq!((s.segment_ids, s.levels(), s.classes(), s.memory_bytes()), (1_365, 3, 4, 16_380));
        assert_eq!(slru(4_096, 4).memory_bytes(), 16 * 1024);
        assert!(Slru::new(SamplerBudget { memory_bytes: 11, ..Default::default() }, 3).is_err(), "2 ids for 3 segments");
        assert_eq!(slru(3, 3).segment_ids, 1);
        assert!(Slru::new(SamplerBudget::default(), 0).is_err());
        assert!(Slru::new(SamplerBudget::default(), 255).is_err());
        assert_eq!(Slru::new(SamplerBudget::default(), 254).unwrap().classes(), 255);
    }

    /// 3 segments of 2 ids, worked by hand.
    #[test]
    fn promotion_and_demotion_across_levels() {
        let mut s = slru(6, 3);
        s.access(1);
        assert_eq!(s.class(1), 1);
        s.access(1);
        assert_eq!(s.class(1), 2);
        s.access(1);
        assert_eq!(s.class(1), 3);
        s.access(1); // a hit in the top stays there
        assert_eq!(s.class(1), 3);
        for _ in 0..3 {
            s.access(2);
        }
        assert_eq!(segments(&s), [vec![], vec![], vec![2, 1]]);
        s.access(3);
        s.access(3);
        assert_eq!(segments(&s), [vec![], vec![3], vec![2, 1]]);
        s.access(3); // to the top, whose LRU (1) comes down to segment 1's MRU
        assert_eq!(segments(&s), [vec![], vec![1], vec![3, 2]]);
        assert_eq!([1, 2, 3].map(|c| s.class(c)), [2, 3, 3]);
        s.access(4);
        s.access(4);
        assert_eq!(segments(&s), [vec![], vec![4, 1], vec![3, 2]]);
        s.access(5);
        s.access(5); // to segment 1, full: its LRU (1) comes down to segment 0
        assert_eq!(segments(&s), [vec![1], vec![5, 4], vec![3, 2]]);
        s.access(6);
        s.access(7); // segment 0 full: 1 falls out of the sampler
        assert_eq!(segments(&s), [vec![7, 6], vec![5, 4], vec![3, 2]]);
        assert_eq!([1, 7, 5, 3].map(|c| s.class(c)), [0, 1, 2, 3]);
        s.check_invariants();
    }

    /// Against a model of VecDeques (MRU at the front), on random streams.
    #[test]
    fn matches_a_simple_model() {
        for (seed, levels) in [(0, 1), (1, 2), (2, 3), (3, 5)] {
            let per = 7;
            let mut s = slru((per * levels + levels - 1) as u64, levels);
            let mut m: Vec<VecDeque<u64>> = vec![VecDeque::new(); levels];
            for (n, chunk) in stream(seed, 5_000).into_iter().map(|c| c % 80).enumerate() {
                let level = m.iter().position(|seg| seg.contains(&chunk));
                assert_eq!(s.class(chunk), level.map_or(0, |l| l as u8 + 1), "seed {seed} access {n}");
                s.access(chunk);
                match level {
                    Some(l) => {
                        let i = m[l].iter().position(|&c| c == chunk).unwrap();
                        m[l].remove(i);
                        let to = (l + 1).min(levels - 1);
                        m[to].push_front(chunk);
                        if m[to].len() > per {
                            let down = m[to].pop_back().unwrap();
                            m[l].push_front(down);
                        }
                    }
                    None => {
                        if m[0].len() == per {
                            m[0].pop_back();
                        }
                        m[0].push_front(chunk);
                    }
                }
                let want: Vec<Vec<u64>> = m.iter().map(|seg| Vec::from(seg.clone())).collect();
                assert_eq!(segments(&s), want, "seed {seed} access {n}");
            }
            s.check_invariants();
        }
    }
}
