//! `arc` (§3.1.1): ARC (Megiddo & Modha, FAST'03) over chunk ids. T1 holds chunks seen once
//! recently, T2 chunks seen at least twice; B1 and B2 are their ghosts (ids only, recently
//! dropped from T1 and T2); the target size p of T1 adapts on ghost hits.
//!
//! Sizes: the budget's ⌊memory / 4⌋ ids are all four lists together, so c = ⌊ids / 2⌋:
//! |T1| + |T2| ≤ c and |B1| + |B2| ≤ c (4,096 ids, c = 2,048 in the default 16 KiB). A budget
//! under 8 bytes (c = 0) is refused. O(1) an access (one slab of lists, a hash index).
//!
//! Hot iff resident, in T1 ∪ T2 (`hot=t1t2`, the default: ARC's cache is the sampled set);
//! `hot=t2` asks for a second access instead (T2 only). 2 classes.
//!
//! Where the paper uses real numbers the thesis is silent; our choices: p is a whole number
//! of entries, and the adaptation steps are whole quotients, δ1 = max(⌊|B2| / |B1|⌋, 1) on a
//! B1 hit and δ2 = max(⌊|B1| / |B2|⌋, 1) on a B2 hit (p clamped to [0, c]). In case IV B the
//! directory is full at |T1| + |T2| + |B1| + |B2| = 2c. A sampler has nothing to fetch, so
//! "a miss" is just an access to a chunk in none of the lists.

use zonekit_base::policy::{ParamInfo, PolicyInfo, Role};

use super::lists::Lists;
use super::{list_ids, param_error, Sampler, SamplerBudget, SamplerInfo, ID_BYTES};
use crate::Result;

pub const ARC: SamplerInfo = PolicyInfo {
    name: "arc",
    summary: "ARC (FAST'03) over chunk ids, c = 2,048 of 4,096 ids in 16 KiB (§3.1.1)",
    role: Role::Baseline,
    params: &[ParamInfo { name: "hot", default: "t1t2", summary: "hot chunks: t1t2 (resident) or t2 (seen twice)" }],
    make: |p, budget| {
        let t2_only = p.choice("hot", &["t1t2", "t2"]).map_err(param_error)? == "t2";
        Ok(Box::new(Arc::new(budget, t2_only)?))
    },
};

const T1: usize = 0;
const T2: usize = 1;
const B1: usize = 2;
const B2: usize = 3;

pub struct Arc {
    lists: Lists,
    /// Resident chunks at most (|T1| + |T2| ≤ c), and ghosts at most.
    c: usize,
    /// Target size of T1, in [0, c].
    p: usize,
    t2_only: bool,
}

impl Arc {
    pub fn new(budget: SamplerBudget, t2_only: bool) -> Result<Arc> {
        let c = list_ids(ARC.name, budget, 2)? / 2;
        Ok(Arc { lists: Lists::new(4, 2 * c), c, p: 0, t2_only })
    }

    fn len(&self, list: usize) -> usize {
        self.lists.len(list)
    }

    /// REPLACE(x, p): demotes the LRU of T1 into B1 if T1 is over its target (or at it when x
    /// is a B2 ghost), else the LRU of T2 into B2.
    fn replace(&mut self, hit_in_b2: bool) {
        debug_assert_eq!(self.len(T1) + self.len(T2), self.c, "REPLACE with room in the cache");
        let t1 = self.len(T1);
        let from_t1 = t1 >= 1 && ((hit_in_b2 && t1 == self.p) || t1 > self.p);
        if from_t1 || self.len(T2) == 0 {
            self.lists.move_lru(T1, B1);
        } else {
            self.lists.move_lru(T2, B2);
        }
    }

    #[cfg(test)]
    fn check_invariants(&self) {
        self.lists.check_invariants();
        let [t1, t2, b1, b2] = [T1, T2, B1, B2].map(|l| self.len(l));
        assert!(t1 + t2 <= self.c && t1 + b1 <= self.c && t2 + b2 <= 2 * self.c, "{t1} {t2} {b1} {b2} c={}", self.c);
        assert!(t1 + t2 + b1 + b2 <= 2 * self.c && self.p <= self.c);
        assert!(b1 + b2 == 0 || t1 + t2 == self.c, "ghosts only once the cache is full");
    }
}

impl Sampler for Arc {
    fn name(&self) -> &'static str {
        ARC.name
    }

    fn access(&mut self, chunk: u64) {
        match self.lists.find(chunk) {
            // Case I: a hit in T1 or T2.
            Some((slot, T1 | T2)) => self.lists.move_to_mru(slot, T2),
            // Case II: a ghost of T1: T1 should have been larger.
            Some((slot, B1)) => {
                let delta = (self.len(B2) / self.len(B1)).max(1);
                self.p = (self.p + delta).min(self.c);
                self.replace(false);
                self.lists.move_to_mru(slot, T2);
            }
            // Case III: a ghost of T2: T2 should have been larger.
            Some((slot, _)) => {
                let delta = (self.len(B1) / self.len(B2)).max(1);
                self.p = self.p.saturating_sub(delta);
                self.replace(true);
                self.lists.move_to_mru(slot, T2);
            }
            // Case IV: in no list.
            None => {
                let l1 = self.len(T1) + self.len(B1);
                if l1 == self.c {
                    if self.len(T1) < self.c {
                        self.lists.pop_lru(B1);
                        self.replace(false);
                    } else {
                        self.lists.pop_lru(T1);
                    }
                } else {
                    let total = l1 + self.len(T2) + self.len(B2);
                    if total >= self.c {
                        if total == 2 * self.c {
                            self.lists.pop_lru(B2);
                        }
                        self.replace(false);
                    }
                }
                self.lists.push_mru(T1, chunk);
            }
        }
    }

    fn classes(&self) -> u8 {
        2
    }

    #[inline]
    fn class(&self, chunk: u64) -> u8 {
        match self.lists.list_of(chunk) {
            Some(T2) => 1,
            Some(T1) => !self.t2_only as u8,
            _ => 0,
        }
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

    fn arc(ids: u64, t2_only: bool) -> Arc {
        Arc::new(SamplerBudget { memory_bytes: ids * 4, ..Default::default() }, t2_only).unwrap()
    }

    fn state(a: &Arc) -> [Vec<u64>; 4] {
        [T1, T2, B1, B2].map(|l| a.lists.chunks(l))
    }

    #[test]
    fn default_sizes_and_too_small_budgets() {
        let a = Arc::new(SamplerBudget::default(), false).unwrap();
        assert_eq!((a.c, a.lists.capacity(), a.memory_bytes()), (2_048, 4_096, 16 * 1024));
        assert!(Arc::new(SamplerBudget { memory_bytes: 7, ..Default::default() }, false).is_err());
        let odd = arc(5, false); // 5 ids: c = 2, one id unused
        assert_eq!((odd.c, odd.memory_bytes()), (2, 16));
    }

    #[test]
    fn a_second_access_promotes_to_t2() {
        let (mut a, mut t2) = (arc(8, false), arc(8, true));
        for s in [&mut a, &mut t2] {
            s.access(1);
        }
        assert_eq!((a.class(1), t2.class(1)), (1, 0), "in T1: hot only by default");
        for s in [&mut a, &mut t2] {
            s.access(1);
        }
        assert_eq!(state(&a)[T2], [1]);
        assert_eq!((a.class(1), t2.class(1)), (1, 1));
        assert_eq!((a.class(2), t2.class(2)), (0, 0));
    }

    /// c = 2, worked by hand through cases I–IV of the paper.
    #[test]
    fn ghost_hits_adapt_p() {
        let mut a = arc(4, false);
        a.access(10);
        a.access(10); // case I: T2 = [10]
        a.access(20); // case IV B, total 1 < c: T1 = [20]
        a.access(30); // case IV B, total 2 = c: REPLACE, |T1| = 1 > p = 0, so 20 → B1
        assert_eq!(state(&a), [vec![30], vec![10], vec![20], vec![]]);
        assert!(!a.is_hot(20) && a.is_hot(30) && a.is_hot(10));
        a.access(20); // case II: p += max(0 / 1, 1); REPLACE, |T1| = 1 = p: 10 → B2
        assert_eq!(a.p, 1);
        assert_eq!(state(&a), [vec![30], vec![20], vec![], vec![10]]);
        a.access(10); // case III: p −= max(0 / 1, 1); REPLACE, |T1| = 1 > 0: 30 → B1
        assert_eq!(a.p, 0);
        assert_eq!(state(&a), [vec![], vec![10, 20], vec![30], vec![]]);
        a.access(40); // case IV B, total 3: REPLACE, T1 empty: 20 → B2
        assert_eq!(state(&a), [vec![40], vec![10], vec![30], vec![20]]);
        a.access(50); // case IV A, |T1| + |B1| = 2 = c, |T1| < c: 30 dropped, REPLACE: 40 → B1
        assert_eq!(state(&a), [vec![50], vec![10], vec![40], vec![20]]);
        a.access(20); // case III with |B1| = |B2| = 1: p stays 0, 50 → B1, 40 the LRU of B1
        assert_eq!(state(&a), [vec![], vec![20, 10], vec![50, 40], vec![]]);
        a.check_invariants();
        // Scan resistance: a scan of new chunks takes one T2 entry (10), then recycles T1
        // through B1 while T2 keeps 20.
        for c in 100..104 {
            a.access(c);
        }
        assert_eq!(state(&a), [vec![103], vec![20], vec![102], vec![10]]);
        a.check_invariants();
    }

    /// The paper's pseudocode written again over VecDeques (MRU at the front), run side by
    /// side on random streams at a small c: the slab lists must agree entry for entry.
    #[test]
    fn matches_a_simple_model() {
        struct Model {
            l: [VecDeque<u64>; 4],
            c: usize,
            p: usize,
        }
        impl Model {
            fn take(&mut self, list: usize, x: u64) -> bool {
                let found = self.l[list].iter().position(|&y| y == x);
                found.map(|i| self.l[list].remove(i)).is_some()
            }
            fn replace(&mut self, in_b2: bool) {
                let t1 = self.l[T1].len();
                if (t1 >= 1 && ((in_b2 && t1 == self.p) || t1 > self.p)) || self.l[T2].is_empty() {
                    let x = self.l[T1].pop_back().unwrap();
                    self.l[B1].push_front(x);
                } else {
                    let x = self.l[T2].pop_back().unwrap();
                    self.l[B2].push_front(x);
                }
            }
            fn access(&mut self, x: u64) {
                let [t1, t2, b1, b2] = [T1, T2, B1, B2].map(|i| self.l[i].len());
                if self.take(T1, x) || self.take(T2, x) {
                } else if self.take(B1, x) {
                    self.p = (self.p + (b2 / b1).max(1)).min(self.c);
                    self.replace(false);
                } else if self.take(B2, x) {
                    self.p = self.p.saturating_sub((b1 / b2).max(1));
                    self.replace(true);
                } else {
                    if t1 + b1 == self.c {
                        if t1 < self.c {
                            self.l[B1].pop_back();
                            self.replace(false);
                        } else {
                            self.l[T1].pop_back();
                        }
                    } else if t1 + t2 + b1 + b2 >= self.c {
                        if t1 + t2 + b1 + b2 == 2 * self.c {
                            self.l[B2].pop_back();
                        }
                        self.replace(false);
                    }
                    self.l[T1].push_front(x);
                    return;
                }
                self.l[T2].push_front(x);
            }
        }
        for seed in 0..4 {
            let mut a = arc(24, false);
            let mut m = Model { l: Default::default(), c: 12, p: 0 };
            for (n, chunk) in stream(seed, 5_000).into_iter().map(|c| c % 60).enumerate() {
                let resident = m.l[T1].contains(&chunk) || m.l[T2].contains(&chunk);
                assert_eq!(a.is_hot(chunk), resident, "seed {seed} access {n}");
                a.access(chunk);
                m.access(chunk);
                assert_eq!(state(&a), m.l.clone().map(Vec::from), "seed {seed} access {n}");
                assert_eq!(a.p, m.p, "seed {seed} access {n}");
                if n % 500 == 0 {
                    a.check_invariants();
                }
            }
        }
    }
}
