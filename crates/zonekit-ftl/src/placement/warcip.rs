//! WARCIP (Yang et al., "WARCIP: Write Amplification Reduction by Clustering I/O Pages",
//! SYSTOR'19): cluster user writes by rewrite interval, so pages rewritten at similar
//! intervals share zones; GC writes go to a class of their own. Follows the SepBIT authors'
//! implementation (fallfish/sepbit, `trace_replay/src/main/java/gcsimulator/placement/Warcip.java`)
//! step for step:
//!
//! - Class 0 takes every GC write; the user clusters are the other classes, at most `clusters`
//!   of them (all of them at the start, every centre 0).
//! - A user write's rewrite interval is the trace time since the block's last user write plus
//!   the penalty its latest GC move recorded (trace time from the last user write to that move);
//!   a new block's interval is 0. The write joins the cluster whose centre is nearest (ties to
//!   the later cluster), and that centre becomes the mean of the intervals of the cluster's
//!   writes since its current zone opened (so the first write into a fresh zone sets it).
//! - Every 256 sealed user zones: a cluster that took more than half of the user writes since the
//!   last adjustment splits (a new cluster before it, centred halfway to its lower neighbour)
//!   if there is a free class; otherwise the first cluster that took fewer writes than a zone
//!   holds is marked, and merges (disappears) when its zone next fills. Clusters keep their
//!   order, and the marked one is remembered by position, as the simulator does.

use zonekit_base::policy::{ParamInfo, PolicyInfo, Role};

use super::{BlockCtx, MakePlacement, Placement};

pub const WARCIP: PolicyInfo<MakePlacement> = PolicyInfo {
    name: "warcip",
    summary: "WARCIP (SYSTOR'19): user writes clustered by rewrite interval, GC writes apart",
    role: Role::Baseline,
    params: &[
        ParamInfo { name: "clusters", default: "6", summary: "user-write clusters at most (k); classes = k + 1" },
        ParamInfo { name: "adjust-every", default: "256", summary: "sealed user zones between split/merge steps" },
    ],
    make: |p, env| {
        let clusters = p.u64("clusters")?;
        // Every class is allocated up front (clusters=2^40 asked for terabytes before anything
        // ran), and the engine keeps a zone's class in a byte.
        if clusters > CLUSTERS_MAX {
            return Err(p.invalid(format!("clusters={clusters}: at most {CLUSTERS_MAX} (a class per cluster and one for GC, at most 256)")));
        }
        Ok(Box::new(Warcip::new(clusters as usize, p.u64("adjust-every")?, env.zone_blocks)))
    },
};

/// The most user clusters: with the GC class, 256 classes.
const CLUSTERS_MAX: u64 = u8::MAX as u64;

/// The class of GC writes (the simulator's segment 0, which is never split or merged).
const GC_CLASS: usize = 0;

#[derive(Clone, Copy, Debug)]
struct Cluster {
    /// The engine class its writes go to (fixed while the cluster lives, reused after a merge).
    class: usize,
    /// Mean rewrite interval (µs) of the writes into its current zone.
    center: f64,
    /// User writes into its current zone.
    zone_writes: u64,
    /// User writes since the last split/merge step.
    writes: u64,
}

pub struct Warcip {
    /// Position 0 is the GC class; then the user clusters in the simulator's order.
    clusters: Vec<Cluster>,
    classes: usize,
    adjust_every: u64,
    sealed_user_zones: u64,
    /// User writes since the last split/merge step.
    writes: u64,
    /// Position of the cluster that merges when its zone next fills.
    merge_at: Option<usize>,
    /// Blocks a zone holds: a cluster with fewer writes since the last step merges.
    zone_blocks: u64,
    /// Trace time (µs) of the first write, which the times below count from.
    first_us: Option<u64>,
    /// Per block, with the policy word: the trace time of its last user write and the penalty
    /// of its latest GC move, both in µs (see [`Times`]).
    times: Vec<u64>,
}

/// A block's two times, exact to the µs as the simulator keeps them. The policy word alone is
/// too small: 32 bits of ms would cover the 31 days of Alibaba's traces, but not the
/// simulator's resolution, and with a write every 100 µs a hot block is rewritten every few
/// ms: rounding the last write to ms (or only the penalty) moved the WAF by 0.4 % on such a
/// trace, where µs times reproduce the simulator's exactly. So each block gets a 64-bit entry
/// beside its word: the last user write (µs since the first write plus 1, 0 = never written)
/// in the low 54 bits (570 years), the penalty's µs below a millisecond in the top 10, its
/// whole milliseconds in the word (49 days).
struct Times;

impl Times {
    const TIME_BITS: u32 = 54;
    const TIME_MASK: u64 = (1 << Self::TIME_BITS) - 1;

    fn last_write(entry: u64) -> u64 {
        entry & Self::TIME_MASK
    }

    fn penalty(entry: u64, word: u32) -> u64 {
        word as u64 * 1000 + (entry >> Self::TIME_BITS)
    }

    fn set(entry: &mut u64, word: &mut u32, last_write: u64, penalty: u64) {
        debug_assert!(last_write <= Self::TIME_MASK);
        let ms = penalty / 1000;
        *word = ms.min(u32::MAX as u64) as u32;
        *entry = last_write | (penalty % 1000) << Self::TIME_BITS;
    }
}

impl Warcip {
    pub fn new(clusters: usize, adjust_every: u64, zone_blocks: u64) -> Warcip {
        let classes = clusters.max(1) + 1;
        let clusters = (0..classes).map(|class| Cluster { class, center: 0.0, zone_writes: 0, writes: 0 }).collect();
        Warcip { clusters, classes, adjust_every: adjust_every.max(1), sealed_user_zones: 0, writes: 0, merge_at: None, zone_blocks, first_us: None, times: Vec::new() }
    }

    /// Trace time as [`Times`] counts it (traces whose clock steps back count that as no
    /// time passing).
    fn now(&mut self, now_us: u64) -> u64 {
        (now_us.saturating_sub(*self.first_us.get_or_insert(now_us)) + 1).min(Times::TIME_MASK)
    }

    fn times(&mut self, id: u32) -> &mut u64 {
        let i = id as usize;
        if i >= self.times.len() {
            self.times.resize(i + 1, 0);
        }
        &mut self.times[i]
    }

    /// Position of the user cluster with the centre nearest `interval`; on a tie the later one.
    fn nearest(&self, interval: f64) -> usize {
        let mut best = self.clusters.len() - 1;
        for i in (1..self.clusters.len()).rev() {
            if (self.clusters[i].center - interval).abs() < (self.clusters[best].center - interval).abs() {
                best = i;
            }
        }
        best
    }

    fn split_or_mark_merge(&mut self) {
        let half = self.writes / 2;
        let splits = self.clusters.len() < self.classes;
        match (1..self.clusters.len()).find(|&i| self.clusters[i].writes > half) {
            Some(i) if splits => {
                let free = (0..self.classes).find(|c| self.clusters.iter().all(|k| k.class != *c)).expect("fewer clusters than classes");
                let center = (self.clusters[i - 1].center + self.clusters[i].center) / 2.0;
                self.clusters.insert(i, Cluster { class: free, center, zone_writes: 0, writes: 0 });
            }
            _ => {
                if let Some(i) = (1..self.clusters.len()).find(|&i| self.clusters[i].writes < self.zone_blocks) {
                    self.merge_at.get_or_insert(i);
                }
            }
        }
        self.writes = 0;
        for c in &mut self.clusters {
            c.writes = 0;
        }
    }

    #[cfg(test)]
    fn check_invariants(&self) {
        assert!(self.clusters.len() <= self.classes && self.clusters.len() >= 2);
        assert_eq!(self.clusters[0].class, GC_CLASS);
        let mut seen = vec![false; self.classes];
        for c in &self.clusters {
            assert!(!std::mem::replace(&mut seen[c.class], true), "class {} in two clusters", c.class);
        }
        assert!(self.merge_at.is_none_or(|i| i >= 1 && i < self.clusters.len()));
    }
}

impl Placement for Warcip {
    fn name(&self) -> String {
        WARCIP.name.into()
    }
    fn classes(&self) -> usize {
        self.classes
    }
    fn user_write(&mut self, b: &BlockCtx, word: &mut u32) -> usize {
        let now = self.now(b.now_us);
        let entry = self.times(b.id);
        let interval = match Times::last_write(*entry) {
            0 => 0.0,
            last => (now.saturating_sub(last) + Times::penalty(*entry, *word)) as f64,
        };
        Times::set(entry, word, now, 0);
        let i = self.nearest(interval);
        let c = &mut self.clusters[i];
        c.center = (c.center * c.zone_writes as f64 + interval) / (c.zone_writes + 1) as f64;
        c.zone_writes += 1;
        c.writes += 1;
        self.writes += 1;
        c.class
    }
    fn gc_write(&mut self, b: &BlockCtx, word: &mut u32) -> usize {
        let now = self.now(b.now_us);
        let entry = self.times(b.id);
        let last = Times::last_write(*entry);
        Times::set(entry, word, last, now.saturating_sub(last));
        GC_CLASS
    }
    fn on_zone_full(&mut self, class: usize) {
        let i = self.clusters.iter().position(|c| c.class == class).expect("a zone fills only in a live cluster");
        if i != 0 {
            self.sealed_user_zones += 1;
        }
        if self.merge_at == Some(i) {
            self.clusters.remove(i);
            self.merge_at = None;
        } else {
            self.clusters[i].zone_writes = 0;
        }
        if self.sealed_user_zones == self.adjust_every {
            self.sealed_user_zones = 0;
            self.split_or_mark_merge();
        }
    }
    fn bytes_per_block(&self) -> usize {
        std::mem::size_of::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: &mut Warcip, id: u32, now_us: u64, word: &mut u32) -> usize {
        let b = BlockCtx { id, now: 0, now_us, last_user_write: None, next_write: zonekit_base::NEVER, from_class: 0 };
        p.user_write(&b, word)
    }

    /// Found by the `input_specs` fuzz target: `clusters=100000000000` allocated its
    /// clusters before anything checked the count, and the fuzzer ran out of memory.
    #[test]
    fn a_cluster_count_beyond_the_class_range_is_refused_by_name() {
        let env = super::super::PolicyEnv { zone_blocks: 1 << 13, capacity_blocks: 1 << 20 };
        let with = |clusters: &str| super::super::create("warcip", &[("clusters".to_string(), clusters.to_string())].into(), env);
        let e = with("100000000000").err().expect("refused").to_string();
        assert!(e.contains("warcip") && e.contains("clusters=100000000000: at most 255"), "{e}");
        assert!(with("256").is_err());
        assert_eq!(with("255").unwrap().classes(), 256);
    }

    #[test]
    fn intervals_pick_the_nearest_centre_and_new_blocks_the_one_nearest_zero() {
        let mut p = Warcip::new(3, 256, 4);
        let mut words = [0u32; 4];
        // Every centre is 0: a tie, which the last cluster wins.
        assert_eq!(write(&mut p, 0, 0, &mut words[0]), 3);
        assert_eq!(write(&mut p, 0, 10_000, &mut words[0]), 3, "interval 10 ms, centres all 0");
        assert_eq!(p.clusters[3].center, 5_000.0, "the mean of 0 and 10 ms, in µs");
        assert_eq!(write(&mut p, 1, 10_000, &mut words[1]), 2, "a new block: nearest to 0 is now cluster 2");
        assert_eq!(write(&mut p, 1, 18_000, &mut words[1]), 3, "8 ms is nearer 5 than 0");
        // A GC move 30.123 ms after the last user write adds as much to the next interval.
        let gc = BlockCtx { id: 1, now: 0, now_us: 48_123, last_user_write: None, next_write: zonekit_base::NEVER, from_class: 3 };
        assert_eq!(p.gc_write(&gc, &mut words[1]), GC_CLASS);
        assert_eq!((words[1], Times::penalty(p.times[1], words[1])), (30, 30_123), "the penalty, to the µs");
        write(&mut p, 1, 50_000, &mut words[1]);
        assert_eq!(p.clusters[3].center, (0.0 + 10_000.0 + 8_000.0 + 62_123.0) / 4.0);
        assert_eq!(words[1], 0, "a user write clears the penalty");
        p.check_invariants();
    }

    #[test]
    fn a_cold_cluster_merges_when_its_zone_fills_and_a_busy_one_splits_into_the_free_class() {
        let mut p = Warcip::new(3, 2, 4);
        // A zone of `class` fills (4 blocks) after `writes` user writes to it since the last step.
        let seal = |p: &mut Warcip, class: usize, writes: u64| {
            let i = p.clusters.iter().position(|c| c.class == class).unwrap();
            p.clusters[i].zone_writes = 4;
            p.clusters[i].writes += writes;
            p.writes += writes;
            p.on_zone_full(class);
            p.check_invariants();
        };
        let classes = |p: &Warcip| p.clusters.iter().map(|c| c.class).collect::<Vec<_>>();
        // Two sealed user zones, class 3 took every write but no class is free to split into:
        // the first cluster with fewer writes than a zone holds (class 1) is marked instead.
        seal(&mut p, 3, 4);
        seal(&mut p, 3, 4);
        assert_eq!(p.merge_at, Some(1));
        seal(&mut p, 1, 0);
        assert_eq!(classes(&p), [0, 2, 3], "class 1 merged when its zone filled");
        // Class 3 took more than half again: it splits, the new cluster (before it) takes the
        // free class 1.
        p.clusters[1].center = 10.0;
        p.clusters[2].center = 30.0;
        seal(&mut p, 3, 4);
        assert_eq!(classes(&p), [0, 2, 1, 3]);
        assert_eq!(p.clusters[2].center, 20.0);
        // GC zones filling do not count towards the step.
        seal(&mut p, 0, 0);
        assert_eq!(p.sealed_user_zones, 0);
    }
}
