//! WARCIP (Yang et al., HotStorage'19): cluster user writes by rewrite interval with online
//! k-means, so pages that are rewritten at similar intervals share zones; GC writes go to one
//! more class.
//!
//! Intervals are physical (BIPT, trace time, kept per block in milliseconds) and clustered in
//! log2 space. A write joins the cluster with the nearest centre, which moves towards it (a
//! running mean over at most 1,024 recent members, so centres follow the workload). New blocks
//! (no interval yet) join the coldest cluster. Every `adjust_every` sealed zones the two
//! closest clusters merge and the widest (largest variance) splits in two, keeping k clusters
//! and minimising the variance inside them.

use zonekit_base::policy::{ParamInfo, PolicyInfo, Role};

use super::{BlockCtx, MakePlacement, Placement};

pub const WARCIP: PolicyInfo<MakePlacement> = PolicyInfo {
    name: "warcip",
    summary: "WARCIP (HotStorage'19): online k-means of rewrite intervals",
    role: Role::Baseline,
    params: &[
        ParamInfo { name: "clusters", default: "6", summary: "user-write clusters (k)" },
        ParamInfo { name: "adjust-every", default: "256", summary: "sealed zones between split/merge steps" },
    ],
    make: |p, _| Ok(Box::new(Warcip::new(p.u64("clusters")? as usize, p.u64("adjust-every")?))),
};

#[derive(Clone, Copy, Debug)]
struct Cluster {
    center: f64,
    count: u64,
    /// Running variance estimate of the members' log2 intervals.
    var: f64,
}

pub struct Warcip {
    clusters: Vec<Cluster>,
    adjust_every: u64,
    sealed: u64,
    first_us: Option<u64>,
}

const MEMORY: f64 = 1024.0;

impl Warcip {
    pub fn new(clusters: usize, adjust_every: u64) -> Warcip {
        let k = clusters.max(2);
        // Spread initial centres over 1 ms .. ~10^6 s.
        let clusters = (0..k).map(|i| Cluster { center: 30.0 * i as f64 / (k - 1) as f64, count: 0, var: 1.0 }).collect();
        Warcip { clusters, adjust_every: adjust_every.max(1), sealed: 0, first_us: None }
    }

    fn nearest(&self, x: f64) -> usize {
        let mut best = 0;
        for (i, c) in self.clusters.iter().enumerate() {
            if (c.center - x).abs() < (self.clusters[best].center - x).abs() {
                best = i;
            }
        }
        best
    }

    fn learn(&mut self, i: usize, x: f64) {
        let c = &mut self.clusters[i];
        c.count += 1;
        let w = 1.0 / (c.count as f64).min(MEMORY);
        let d = x - c.center;
        c.center += w * d;
        c.var += w * (d * d - c.var);
    }

    fn split_and_merge(&mut self) {
        self.clusters.sort_by(|a, b| a.center.total_cmp(&b.center));
        let closest = (0..self.clusters.len() - 1)
            .min_by(|&a, &b| {
                let ga = self.clusters[a + 1].center - self.clusters[a].center;
                let gb = self.clusters[b + 1].center - self.clusters[b].center;
                ga.total_cmp(&gb)
            })
            .unwrap();
        let (a, b) = (self.clusters[closest], self.clusters[closest + 1]);
        let n = (a.count + b.count).max(1) as f64;
        let merged = Cluster {
            center: (a.center * a.count as f64 + b.center * b.count as f64) / n,
            count: a.count + b.count,
            var: (a.var * a.count as f64 + b.var * b.count as f64) / n + (a.center - b.center).powi(2) / 4.0,
        };
        self.clusters.remove(closest + 1);
        self.clusters[closest] = merged;
        let widest = (0..self.clusters.len()).max_by(|&x, &y| self.clusters[x].var.total_cmp(&self.clusters[y].var)).unwrap();
        let w = self.clusters[widest];
        let sd = w.var.sqrt().max(0.5);
        let half = Cluster { center: w.center, count: w.count / 2, var: w.var / 4.0 };
        self.clusters[widest] = Cluster { center: w.center - sd, ..half };
        self.clusters.push(Cluster { center: w.center + sd, ..half });
        self.clusters.sort_by(|a, b| a.center.total_cmp(&b.center));
    }
}

impl Placement for Warcip {
    fn name(&self) -> String {
        WARCIP.name.into()
    }
    fn classes(&self) -> usize {
        self.clusters.len() + 1
    }
    fn user_write(&mut self, b: &BlockCtx, word: &mut u32) -> usize {
        // The policy word: time of the block's last user write, ms since the first write + 1.
        let first = *self.first_us.get_or_insert(b.now_us);
        let now_ms = (b.now_us.saturating_sub(first) / 1000).min(u32::MAX as u64 - 1) as u32 + 1;
        let previous = *word;
        *word = now_ms;
        if previous == 0 {
            // Unknown interval: the coldest cluster (by index after sorting: the last).
            return self.clusters.len() - 1;
        }
        let x = ((now_ms - previous) as f64 + 1.0).log2();
        let i = self.nearest(x);
        self.learn(i, x);
        i
    }
    fn gc_write(&mut self, _: &BlockCtx, _: &mut u32) -> usize {
        self.clusters.len()
    }
    fn on_zone_full(&mut self, _class: usize) {
        self.sealed += 1;
        if self.sealed % self.adjust_every == 0 {
            self.split_and_merge();
        }
    }
}
