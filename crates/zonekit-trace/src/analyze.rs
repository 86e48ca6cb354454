//! Workload analysis as seed 000's chapter 2 does it, over the write stream of a trace.
//!
//! [`analyze`] reads a [`BlockSource`] several times rather than holding the trace: a sizing
//! pass (HyperLogLog), then one pass per per-block quantity (write count, index of the last
//! write, time of the last write), each with a presized [`BlockMap<u32>`] — at most 16 bytes
//! per distinct block at any time, whatever the trace length.
//!
//! Lifetimes (seed 000, 2.1.3): the *logical* lifetime of a write (BILT) is the number of block
//! writes until the same block is written again; the *physical* lifetime (BIPT) is the time
//! until then. A write never followed by another of its block has an infinite lifetime.

use serde::Serialize;
use zonekit_base::LogHistogram;

use crate::blocks::{BlockIo, BlockMap, DistinctCounter};
use crate::record::{Op, Result, TraceError};

/// The longest time span an analysis accepts: ten years. A longer one is timestamps in another
/// unit than the reader assumed (nanoseconds read as microseconds, say), and sizing per-minute
/// and per-hour tables by it would ask for hundreds of gigabytes.
const MAX_SPAN_US: u64 = 10 * 366 * 24 * 3_600_000_000;

/// Something that can stream its blocks again for each pass.
pub trait BlockSource {
    fn blocks(&self) -> Result<Box<dyn Iterator<Item = Result<BlockIo>> + '_>>;
}

impl<F> BlockSource for F
where
    F: Fn() -> Result<Box<dyn Iterator<Item = Result<BlockIo>>>>,
{
    fn blocks(&self) -> Result<Box<dyn Iterator<Item = Result<BlockIo>> + '_>> {
        self()
    }
}

/// One point of a CDF: the fraction of (finite and infinite) writes with lifetime ≤ `x`.
#[derive(Clone, Debug, Serialize)]
pub struct CdfPoint {
    pub x: u64,
    pub cdf: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct HourThresholds {
    pub hour: u64,
    pub writes: u64,
    /// P20, P40, P60, P80 of the finite logical lifetimes of this hour's writes.
    pub bilt_p20_p40_p60_p80: [u64; 4],
}

#[derive(Clone, Debug, Serialize)]
pub struct VolumeSummary {
    pub volume: u32,
    pub block_writes: u64,
    pub distinct_blocks: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    pub block_size_bytes: u64,
    pub read_requests: u64,
    pub write_requests: u64,
    /// Share of requests that are writes (seed 000's "write-request share").
    pub write_request_share: f64,
    pub block_reads: u64,
    pub block_writes: u64,
    /// Share of block accesses that are writes (requests weighed by size).
    pub write_share: f64,
    pub bytes_written: u64,
    /// Distinct written blocks (the working set, WSS).
    pub distinct_blocks: u64,
    pub wss_bytes: u64,
    pub volumes: u64,
    pub span_hours: f64,
    /// MB written per minute, by minute since the first write.
    pub mb_written_per_minute: Vec<f64>,
    /// Write count of the block at each percentile of blocks sorted by write count ascending
    /// ("bottom x %"), x = 1..=100.
    pub write_count_at_percentile: Vec<(u32, u64)>,
    /// Share of all writes that go to the most-written x % of blocks, for x in 0.01, 0.1, 1.
    pub top_share_of_writes: Vec<(f64, f64)>,
    /// Write count of the least written block among the most-written x % (x in 0.01, 0.1, 1),
    /// per day of the trace's span (whole trace when it spans less than a day): seed 000
    /// §2.1.3 reads "the top 0.01 % take more than 1,500 writes" this way.
    pub top_writes_per_day: Vec<(f64, f64)>,
    /// Blocks written exactly once.
    pub written_once_share: f64,
    /// Zipf exponent fitted to write count against rank (log-spaced ranks, rewritten blocks).
    pub zipf_exponent: Option<f64>,
    /// Writes never followed by a write to the same block.
    pub infinite_lifetime_share: f64,
    pub bilt_cdf: Vec<CdfPoint>,
    /// Physical lifetimes in milliseconds.
    pub bipt_ms_cdf: Vec<CdfPoint>,
    pub hourly_thresholds: Vec<HourThresholds>,
    pub per_volume: Vec<VolumeSummary>,
    /// Largest memory any pass held for per-block state, in bytes per distinct block.
    pub state_bytes_per_block: f64,
}

fn writes_of<'a>(source: &'a dyn BlockSource) -> Result<impl Iterator<Item = Result<BlockIo>> + 'a> {
    Ok(source.blocks()?.filter(|b| b.as_ref().map_or(true, |b| b.op == Op::Write)))
}

fn cdf(h: &LogHistogram, total: u64) -> Vec<CdfPoint> {
    let mut acc = 0;
    h.buckets()
        .map(|(x, n)| {
            acc += n;
            CdfPoint { x, cdf: acc as f64 / total.max(1) as f64 }
        })
        .collect()
}

/// Analyses the writes of `source` (reads are counted for the write share).
pub fn analyze(source: &dyn BlockSource, block_size_bytes: u64) -> Result<Analysis> {
    // Pass 0: sizes, time span, traffic per minute, hour boundaries, the distinct estimate.
    let mut hll = DistinctCounter::new();
    let (mut reads, mut writes) = (0u64, 0u64);
    let (mut read_requests, mut write_requests) = (0u64, 0u64);
    let mut first_us = None;
    let mut last_us = 0u64;
    let mut per_minute: Vec<u64> = Vec::new();
    let mut volume_writes: std::collections::BTreeMap<u32, u64> = Default::default();
    for b in source.blocks()? {
        let b = b?;
        if b.op == Op::Read {
            reads += 1;
            read_requests += b.starts_request as u64;
            continue;
        }
        write_requests += b.starts_request as u64;
        let start = *first_us.get_or_insert(b.time_us);
        last_us = last_us.max(b.time_us);
        if b.time_us.saturating_sub(start) > MAX_SPAN_US {
            return Err(TraceError::Invalid(format!(
                "a write at {} µs comes {:.0} years after the first one ({start} µs): are the timestamps in the unit the format assumes? (name it with --format or a column mapping)",
                b.time_us,
                (b.time_us - start) as f64 / 3.156e13
            )));
        }
        let minute = (b.time_us.saturating_sub(start) / 60_000_000) as usize;
        if minute >= per_minute.len() {
            per_minute.resize(minute + 1, 0);
        }
        per_minute[minute] += 1;
        hll.add(b.key());
        *volume_writes.entry(b.volume).or_default() += 1;
        writes += 1;
    }
    let start_us = first_us.unwrap_or(0);
    if writes >= u32::MAX as u64 {
        return Err(TraceError::Invalid(format!("{writes} block writes: the analysis handles at most 2^32 - 2 (sample the trace with --sample)")));
    }
    let capacity = DistinctCounter::with_margin(hll.estimate()) as usize;

    // Pass 1: write count per block.
    let mut counts: BlockMap<u32> = BlockMap::with_capacity(capacity);
    for b in writes_of(source)? {
        let (c, _) = counts.entry(b?.key());
        *c = c.saturating_add(1);
    }
    let distinct = counts.len() as u64;
    let mut bytes_per_block = counts.memory_bytes() as f64 / distinct.max(1) as f64;
    let mut per_volume_distinct: std::collections::BTreeMap<u32, u64> = Default::default();
    // Blocks per write count: a few thousand distinct counts at most, so the distribution
    // costs nothing next to the per-block map.
    let mut by_count: std::collections::BTreeMap<u32, u64> = Default::default();
    for (key, c) in counts.iter() {
        *by_count.entry(c).or_default() += 1;
        *per_volume_distinct.entry((key >> crate::blocks::BLOCK_BITS) as u32).or_default() += 1;
    }
    drop(counts);
    let dist = CountDistribution::new(&by_count);
    let written_once = by_count.get(&1).copied().unwrap_or(0);
    let write_count_at_percentile = (1..=100u32).map(|p| (p, dist.count_at_ascending((p as u64 * distinct).div_ceil(100)))).collect();
    let top_share_of_writes = [0.0001, 0.001, 0.01]
        .iter()
        .map(|&frac| {
            let n = ((distinct as f64 * frac).ceil() as u64).max(1).min(distinct);
            (frac * 100.0, dist.writes_of_top(n) as f64 / writes.max(1) as f64)
        })
        .collect();
    let days = ((last_us.saturating_sub(start_us)) as f64 / 86.4e9).max(1.0);
    let top_writes_per_day = [0.0001, 0.001, 0.01]
        .iter()
        .map(|&frac| {
            let n = ((distinct as f64 * frac).ceil() as u64).max(1).min(distinct);
            (frac * 100.0, dist.count_at_ascending(distinct + 1 - n) as f64 / days)
        })
        .collect();
    let zipf_exponent = dist.fit_zipf();

    // Pass 2: logical lifetimes, attributed to the hour of the earlier write.
    let hours = ((last_us.saturating_sub(start_us)) / 3_600_000_000 + 1) as usize;
    let mut hour_first_write = vec![u64::MAX; hours];
    let mut bilt = LogHistogram::default();
    let mut hourly: Vec<LogHistogram> = vec![LogHistogram::default(); hours];
    let mut hourly_writes = vec![0u64; hours];
    {
        // Stored as write index + 1, so the map's default 0 means "not written yet".
        let mut last: BlockMap<u32> = BlockMap::with_capacity(capacity);
        bytes_per_block = bytes_per_block.max(last.memory_bytes() as f64 / distinct.max(1) as f64);
        let mut index_hour: Vec<(u64, usize)> = Vec::with_capacity(hours);
        for (i, b) in writes_of(source)?.enumerate() {
            let b = b?;
            let i = i as u64;
            let hour = ((b.time_us.saturating_sub(start_us)) / 3_600_000_000) as usize;
            if hour_first_write[hour] == u64::MAX {
                hour_first_write[hour] = i;
                index_hour.push((i, hour));
            }
            hourly_writes[hour] += 1;
            let (slot, _) = last.entry(b.key());
            if *slot != 0 {
                let prev = (*slot - 1) as u64;
                let lifetime = i - prev;
                bilt.record(lifetime);
                // The earlier write's hour: the last hour whose first write is at or before it.
                let h = index_hour[index_hour.partition_point(|&(first, _)| first <= prev) - 1].1;
                hourly[h].record(lifetime);
            }
            // Below 2^32 - 1: checked after pass 0.
            *slot = (i + 1) as u32;
        }
    }

    // Pass 3: physical lifetimes, in ticks since the first write: a tick is a millisecond, or
    // as many as it takes for the span to fit the map's 32-bit values (beyond 49 days).
    let mut bipt = LogHistogram::default();
    {
        let span_ms = last_us.saturating_sub(start_us) / 1000 + 1;
        let tick_ms = span_ms.div_ceil(u32::MAX as u64 - 2).max(1);
        let mut last_tick: BlockMap<u32> = BlockMap::with_capacity(capacity);
        for b in writes_of(source)? {
            let b = b?;
            // Timestamps may run backwards (merged per-volume logs): an earlier one counts as
            // the first write's time, and a lifetime is never negative.
            let now = (b.time_us.saturating_sub(start_us) / 1000 / tick_ms + 1) as u32;
            let (slot, _) = last_tick.entry(b.key());
            if *slot != 0 {
                bipt.record(now.saturating_sub(*slot) as u64 * tick_ms);
            }
            *slot = now;
        }
    }

    let finite = bilt.count;
    let infinite = writes - finite;
    let hourly_thresholds = hourly
        .iter()
        .enumerate()
        .filter(|(h, _)| hourly_writes[*h] > 0)
        .map(|(h, hist)| HourThresholds { hour: h as u64, writes: hourly_writes[h], bilt_p20_p40_p60_p80: [0.2, 0.4, 0.6, 0.8].map(|q| hist.quantile(q)) })
        .collect();
    let mb_per_block = block_size_bytes as f64 / 1e6;
    Ok(Analysis {
        block_size_bytes,
        read_requests,
        write_requests,
        write_request_share: write_requests as f64 / (read_requests + write_requests).max(1) as f64,
        block_reads: reads,
        block_writes: writes,
        write_share: writes as f64 / (reads + writes).max(1) as f64,
        bytes_written: writes * block_size_bytes,
        distinct_blocks: distinct,
        wss_bytes: distinct * block_size_bytes,
        volumes: volume_writes.len() as u64,
        span_hours: (last_us.saturating_sub(start_us)) as f64 / 3.6e9,
        mb_written_per_minute: per_minute.iter().map(|&n| n as f64 * mb_per_block).collect(),
        write_count_at_percentile,
        top_share_of_writes,
        top_writes_per_day,
        written_once_share: written_once as f64 / distinct.max(1) as f64,
        zipf_exponent,
        infinite_lifetime_share: infinite as f64 / writes.max(1) as f64,
        bilt_cdf: cdf(&bilt, writes),
        bipt_ms_cdf: cdf(&bipt, writes),
        hourly_thresholds,
        per_volume: volume_writes.iter().map(|(&v, &w)| VolumeSummary { volume: v, block_writes: w, distinct_blocks: per_volume_distinct.get(&v).copied().unwrap_or(0) }).collect(),
        state_bytes_per_block: bytes_per_block,
    })
}

/// Write counts as (count, number of blocks) runs, highest count first: rank queries without
/// holding one entry per block.
struct CountDistribution {
    /// (count, blocks with that count, blocks with a higher count), descending by count.
    runs: Vec<(u64, u64, u64)>,
    distinct: u64,
}

impl CountDistribution {
    fn new(by_count: &std::collections::BTreeMap<u32, u64>) -> CountDistribution {
        let mut runs = Vec::with_capacity(by_count.len());
        let mut above = 0;
        for (&count, &blocks) in by_count.iter().rev() {
            runs.push((count as u64, blocks, above));
            above += blocks;
        }
        CountDistribution { runs, distinct: above }
    }

    /// Write count of the block at 1-based `rank`, most written first.
    fn count_at_rank(&self, rank: u64) -> u64 {
        let i = self.runs.partition_point(|&(_, blocks, above)| above + blocks < rank);
        self.runs.get(i).map_or(0, |r| r.0)
    }

    /// Write count of the block at 1-based position `n` in ascending order.
    fn count_at_ascending(&self, n: u64) -> u64 {
        if n == 0 {
            return self.runs.last().map_or(0, |r| r.0);
        }
        self.count_at_rank(self.distinct + 1 - n.min(self.distinct))
    }

    /// Writes received by the `n` most written blocks.
    fn writes_of_top(&self, n: u64) -> u64 {
        let mut left = n;
        let mut total = 0;
        for &(count, blocks, _) in &self.runs {
            let take = blocks.min(left);
            total += take * count;
            left -= take;
            if left == 0 {
                break;
            }
        }
        total
    }

    /// Zipf exponent: least squares of log(count) on log(rank) at log-spaced ranks, over the
    /// blocks written more than once.
    fn fit_zipf(&self) -> Option<f64> {
        let usable = self.runs.iter().filter(|r| r.0 > 1).map(|r| r.1).sum::<u64>();
        let mut points = Vec::new();
        let mut r = 1.0f64;
        while (r as u64) <= usable {
            points.push((r as u64, self.count_at_rank(r as u64)));
            r = (r * 1.25).max(r + 1.0);
        }
        crate::synth::zipf::fit_points(&points)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(blocks: &'static [(u64, u64)]) -> impl Fn() -> Result<Box<dyn Iterator<Item = Result<BlockIo>>>> {
        move || Ok(Box::new(blocks.iter().map(|&(t, b)| Ok(BlockIo { time_us: t, volume: 0, block: b, op: Op::Write, starts_request: true }))))
    }

    #[test]
    fn lifetimes_counts_and_shares_on_a_hand_computed_trace() {
        // writes: b1 b2 b1 b3 b1 b2 ; times in seconds 0..5
        static T: [(u64, u64); 6] = [(0, 1), (1_000_000, 2), (2_000_000, 1), (3_000_000, 3), (4_000_000, 1), (5_000_000, 2)];
        let a = analyze(&stream(&T), 4096).unwrap();
        assert_eq!((a.block_writes, a.distinct_blocks), (6, 3));
        assert!((a.written_once_share - 1.0 / 3.0).abs() < 1e-9);
        // Finite BILTs: b1 0→2 (2), b1 2→4 (2), b2 1→5 (4); infinite: the last write of each block.
        assert!((a.infinite_lifetime_share - 0.5).abs() < 1e-9);
        let at = |c: &[CdfPoint], x: u64| c.iter().rfind(|p| p.x <= x).map_or(0.0, |p| p.cdf);
        assert!((at(&a.bilt_cdf, 2) - 2.0 / 6.0).abs() < 1e-9);
        assert!((at(&a.bilt_cdf, 4) - 3.0 / 6.0).abs() < 1e-9);
        // Physical: 2000 ms, 2000 ms, 4000 ms.
        assert!((at(&a.bipt_ms_cdf, 2000) - 2.0 / 6.0).abs() < 1e-9);
        assert_eq!(a.write_count_at_percentile[99], (100, 3));
        assert_eq!(a.write_count_at_percentile[0], (1, 1));
        assert!(a.state_bytes_per_block <= 16.0 * 10.0); // tiny maps have a 16-slot floor
    }

    #[test]
    fn out_of_order_long_and_absurd_time_spans() {
        // Backwards timestamps: no panic, no negative lifetime.
        static BACK: [(u64, u64); 4] = [(5_000_000, 1), (1_000_000, 1), (9_000_000, 2), (0, 2)];
        let a = analyze(&stream(&BACK), 4096).unwrap();
        assert_eq!(a.block_writes, 4);
        // A year-long trace: lifetimes beyond 49 days keep their size (in coarser ticks).
        const DAY_US: u64 = 86_400_000_000;
        static LONG: [(u64, u64); 3] = [(0, 1), (300 * DAY_US, 1), (365 * DAY_US, 2)];
        let a = analyze(&stream(&LONG), 4096).unwrap();
        let p = a.bipt_ms_cdf.iter().find(|p| p.cdf > 0.0).unwrap();
        assert!((p.x as f64 - 300.0 * 86_400_000.0).abs() < 0.05 * 300.0 * 86_400_000.0, "{}", p.x);
        // A timestamp centuries away: an error naming it, not a huge allocation.
        static ABSURD: [(u64, u64); 2] = [(0, 1), (u64::MAX / 2, 2)];
        let e = analyze(&stream(&ABSURD), 4096).unwrap_err().to_string();
        assert!(e.contains("years after the first one") && e.contains("--format"), "{e}");
    }
}
