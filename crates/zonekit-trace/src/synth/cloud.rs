//! A multi-tenant cloud block storage node: the write workload one storage node of a cloud
//! block store receives (seed 000, chapter 2), generated as a stream.
//!
//! Many volumes share the node. Each has its own size, share of the node's traffic, Zipf
//! exponent over a rewritten region, share of sequential overwrites, and share of write-once
//! data (appended to fresh blocks, never overwritten: logs, backups, new files). The hot spot
//! of each volume drifts over time, and the node's traffic and each volume's share of it follow
//! a daily cycle with per-volume phases, so hour by hour the mix changes the way the thesis
//! shows lifetime thresholds drifting and crossing.
//!
//! Two knobs shape a node after a particular one: `burst`, a share of requests rewriting a
//! small journal-like region per volume (the extreme top 0.01 % of blocks seed 000 §2.1.3
//! reports), and `once`, the amount of write-once data (a node writing ten times its working
//! set needs less of it). Both default to the tuning below, and with `burst = 0` and
//! `once = 1` a trace is the same as before they existed.
//!
//! Tuned (see `tests`) to reproduce what seed 000 reports for CBS nodes: Zipf-like write
//! counts, more than 40 % of blocks written once, 10–20 % of writes never overwritten within
//! the trace, and lifetime thresholds that move from hour to hour.

use super::zipf::Zipf;
use crate::record::{Op, Record, SpecError};
use zonekit_base::Rng;

#[derive(Clone, Debug, PartialEq)]
pub struct CloudNodeConfig {
    pub volumes: u32,
    /// Blocks of (overwritable) address space over all volumes; write-once data is appended
    /// past each volume's space and adds to it.
    pub total_blocks: u64,
    /// Block writes to generate.
    pub writes: u64,
    /// Virtual time the trace spans.
    pub hours: f64,
    /// Share of each volume's requests that rewrite its burst set, a small journal-like
    /// region (1–8 blocks at a time). Seed 000 §2.1.3: the top 0.01 % of a CBS node's blocks
    /// take more than 1,500 writes a day, two orders of magnitude above the top 1 %. 0 = off.
    pub burst: f64,
    /// Multiplier of each volume's share of write-once requests (1 = as tuned, 1–4 % of
    /// requests). Write-once blocks grow with the bytes written, so a node that writes ten
    /// times its working set needs fewer of them to keep its working set.
    pub once: f64,
    pub block_size_bytes: u64,
    pub seed: u64,
}

impl Default for CloudNodeConfig {
    fn default() -> Self {
        CloudNodeConfig { volumes: 64, total_blocks: 1 << 22, writes: 20_000_000, hours: 24.0, burst: 0.0, once: 1.0, block_size_bytes: 4096, seed: 1 }
    }
}

#[derive(Clone, Debug)]
struct Volume {
    /// Rewritten region: [0, hot_blocks) of the volume's [0, size_blocks); write-once data is
    /// appended from size_blocks on.
    hot_blocks: u64,
    size_blocks: u64,
    zipf: Zipf,
    seq_share: f64,
    once_share: f64,
    seq_cursor: u64,
    once_cursor: u64,
    drift_blocks_per_hour: f64,
    weight: f64,
    phase: f64,
    /// Blocks of the burst set, at the start of the volume.
    burst_blocks: u64,
}

/// The longest request into a burst set.
const BURST_REQUEST_BLOCKS_MAX: u64 = 8;

/// Share of the node's rewritable space in burst sets, shared out by traffic so that every
/// burst block is about as hot as any other. With the write-once data on top, that is about
/// 0.01 % of a full-size node's working set (more in small nodes: every volume has one).
const BURST_SPACE_SHARE: f64 = 6e-5;

/// Multiplier applied to a scattered rank so the hottest blocks are not adjacent.
const SCATTER: u64 = 2_654_435_761;

pub struct CloudNode {
    config: CloudNodeConfig,
    volumes: Vec<Volume>,
    rng: Rng,
    now_us: f64,
    written: u64,
    mean_gap_us: f64,
    cumulative: Vec<f64>,
    cumulative_at_us: f64,
}

const HOUR_US: f64 = 3.6e9;
const DAY_US: f64 = 24.0 * HOUR_US;

impl CloudNodeConfig {
    /// Refuses settings the generator cannot run, naming them. The workload spec parser calls
    /// it too, so `cloud:burst=5` is refused when it is read, not when a run starts.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.volumes == 0 || self.total_blocks < self.volumes as u64 * 64 {
            return Err(format!("a cloud node needs volumes > 0 and at least 64 blocks per volume ({} blocks for {} volumes)", self.total_blocks, self.volumes).into());
        }
        if !(0.0..1.0).contains(&self.burst) {
            return Err(format!("burst={}: expected a share of requests in [0, 1)", self.burst).into());
        }
        if !(0.0..=10.0).contains(&self.once) {
            return Err(format!("once={}: expected a multiplier of the write-once share in [0, 10]", self.once).into());
        }
        if !(self.hours > 0.0) || self.writes == 0 {
            return Err("a cloud node needs positive hours and writes".into());
        }
        // The trace's times are µs in a u64 (`hours=inf` made every time the same).
        if !(self.hours * HOUR_US < u64::MAX as f64) {
            return Err(format!("hours={}: at most {:.0} (the virtual clock's range)", self.hours, u64::MAX as f64 / HOUR_US).into());
        }
        Ok(())
    }
}

impl CloudNode {
    pub fn new(config: CloudNodeConfig) -> Result<CloudNode, SpecError> {
        config.validate()?;
        let mut rng = Rng::new(config.seed);
        let mut setup = rng.derive(1);
        let sizes: Vec<f64> = (0..config.volumes).map(|_| setup.lognormal(0.0, 1.0)).collect();
        let size_sum: f64 = sizes.iter().sum();
        let mut volumes = Vec::new();
        for (i, size) in sizes.iter().enumerate() {
            let size_blocks = ((size / size_sum * config.total_blocks as f64) as u64).max(64);
            let hot_blocks = ((size_blocks as f64 * (0.25 + 0.45 * setup.next_f64())) as u64).max(32);
            let alpha = 0.55 + 0.55 * setup.next_f64();
            // Traffic shares across volumes are themselves skewed (rank^-0.9), in random order.
            let rank = 1 + (i as u64 * 7 + 3) % config.volumes as u64;
            volumes.push(Volume {
                hot_blocks,
                size_blocks,
                zipf: Zipf::new(hot_blocks, alpha)?,
                seq_share: 0.25 * setup.next_f64(),
                once_share: (0.01 + 0.03 * setup.next_f64()) * config.once,
                seq_cursor: setup.below(hot_blocks),
                once_cursor: 0,
                drift_blocks_per_hour: hot_blocks as f64 * 0.02 * setup.next_f64(),
                weight: (rank as f64).powf(-0.9),
                phase: 2.0 * std::f64::consts::PI * setup.next_f64(),
                burst_blocks: 1,
            });
        }
        // Mean blocks per request, weighted by traffic: random 1.2, sequential 40, write-once 20.
        let weight_sum: f64 = volumes.iter().map(|v| v.weight).sum();
        for v in &mut volumes {
            v.burst_blocks = ((config.total_blocks as f64 * BURST_SPACE_SHARE * v.weight / weight_sum).round() as u64).clamp(1, v.hot_blocks);
        }
        let mut mean_blocks: f64 = volumes.iter().map(|v| v.weight / weight_sum * (v.once_share * 20.0 + v.seq_share * 40.0 + (1.0 - v.once_share - v.seq_share) * 1.2)).sum();
        if config.burst > 0.0 {
            let burst_mean: f64 = volumes.iter().map(|v| v.weight / weight_sum * (1 + v.burst_blocks.min(BURST_REQUEST_BLOCKS_MAX)) as f64 / 2.0).sum();
            mean_blocks = config.burst * burst_mean + (1.0 - config.burst) * mean_blocks;
        }
        let mean_gap_us = config.hours * HOUR_US / (config.writes as f64 / mean_blocks);
        rng = rng.derive(2);
        let mut node = CloudNode { config, volumes, rng, now_us: 0.0, written: 0, mean_gap_us, cumulative: Vec::new(), cumulative_at_us: -1.0 };
        node.refresh_weights();
        Ok(node)
    }

    /// Daily cycle of one volume's share: busy hours differ per volume.
    fn refresh_weights(&mut self) {
        let day = 2.0 * std::f64::consts::PI * self.now_us / DAY_US;
        let mut acc = 0.0;
        self.cumulative.clear();
        for v in &self.volumes {
            acc += v.weight * (1.0 + 0.8 * (day + v.phase).sin());
            self.cumulative.push(acc);
        }
        self.cumulative_at_us = self.now_us;
    }

    /// Counts and returns a write request of `len` blocks at `block` of `volume`.
    fn emit(&mut self, volume: usize, block: u64, len: u64) -> Record {
        self.written += len;
        Record {
            time_us: self.now_us as u64,
            volume: volume as u32,
            offset_bytes: block * self.config.block_size_bytes,
            len_bytes: len * self.config.block_size_bytes,
            op: Op::Write,
        }
    }

    fn pick_volume(&mut self) -> usize {
        if self.now_us - self.cumulative_at_us > 60e6 {
            self.refresh_weights();
        }
        let total = *self.cumulative.last().unwrap();
        let x = self.rng.next_f64() * total;
        self.cumulative.partition_point(|&c| c <= x).min(self.volumes.len() - 1)
    }
}

impl Iterator for CloudNode {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        if self.written >= self.config.writes {
            return None;
        }
        // Node traffic follows the day: busiest mid-day, a third of the mean at night.
        let day = 2.0 * std::f64::consts::PI * self.now_us / DAY_US;
        let rate = 1.0 + 0.6 * (day - std::f64::consts::FRAC_PI_2).sin();
        self.now_us += self.rng.exponential(self.mean_gap_us / rate);
        let hours = self.now_us / HOUR_US;
        let vi = self.pick_volume();
        let rng = &mut self.rng;
        let v = &mut self.volumes[vi];
        let mut r = rng.next_f64();
        let burst = self.config.burst;
        if burst > 0.0 {
            if r < burst {
                // A journal-like region at the start of the volume, rewritten in small
                // requests; it does not move with the hot spot.
                let set = v.burst_blocks;
                let len = 1 + rng.below(set.min(BURST_REQUEST_BLOCKS_MAX));
                let b = rng.below(set - len + 1);
                return Some(self.emit(vi, b, len));
            }
            // Rescaled so that with burst = 0 the choice below is the same as before it existed.
            r = (r - burst) / (1.0 - burst);
        }
        let (block, len) = if r < v.once_share {
            // Write-once data takes fresh address space past the rewritten region, as new
            // files and logs do: it is never overwritten.
            let len = 8 + rng.below(25);
            let b = v.size_blocks + v.once_cursor;
            v.once_cursor += len;
            (b, len)
        } else if r < v.once_share + v.seq_share {
            let len = 16 + rng.below(49);
            if v.seq_cursor + len > v.hot_blocks {
                v.seq_cursor = rng.below(v.hot_blocks / 2);
            }
            let b = v.seq_cursor;
            v.seq_cursor += len;
            (b, len.min(v.hot_blocks - b))
        } else {
            let len = if rng.chance(0.8) { 1 } else { 2 };
            let rank = v.zipf.sample(rng) - 1;
            let drift = (hours * v.drift_blocks_per_hour) as u64;
            let b = (rank.wrapping_mul(SCATTER) + drift) % v.hot_blocks;
            (b, len.min(v.hot_blocks - b))
        };
        Some(self.emit(vi, block, len))
    }
}
