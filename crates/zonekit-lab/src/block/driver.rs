//! How the harness feeds a block engine: the [`BlockEngine`] trait and [`drive`], the replay
//! loop over a staged trace (see [`crate::block::stage`]), with a prefetch a few writes ahead that
//! hides the engine's memory latency.

use serde::Serialize;
use zonekit_base::NEVER;

use crate::block::stage::{Prepared, Staged};
use crate::harness::error::{LabError, Result};
use crate::harness::progress::Progress;

/// A block-granular engine the harness can replay a trace through. Blocks arrive as dense
/// ids, 0, 1, 2, ... in order of first write, so an engine indexes its per-block state
/// directly and keeps no key map. Generic, so the loop compiles to direct calls.
pub trait BlockEngine {
    /// Starts fetching block `id`'s own state (called [`PREFETCH_AHEAD`] writes ahead); an
    /// engine with nothing to fetch keeps the default.
    fn prefetch(&mut self, _id: u32) {}
    /// Starts fetching what block `id`'s state points to (called [`PREFETCH_POINTED_AHEAD`]
    /// writes ahead, when [`BlockEngine::prefetch`] has brought that state in).
    fn prefetch_pointed(&mut self, _id: u32) {}
    /// A user write of block `id` at trace time `time_us`; `next_write` is the logical time of
    /// the block's next write from an annotated trace ([`zonekit_base::NEVER`] otherwise).
    fn write(&mut self, id: u32, time_us: u64, next_write: u64) -> Result<()>;
    /// The engine's write counters so far, for a run's time series; an engine that keeps none
    /// keeps the default.
    fn sample(&self) -> Option<SeriesPoint> {
        None
    }
}

/// One point of a run's time series: the engine's counters after `writes` user writes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Serialize)]
pub struct SeriesPoint {
    pub writes: u64,
    pub user_blocks: u64,
    /// Blocks the collector moved so far (the host's GC on ZNS, the device's on an SSD).
    pub gc_blocks: u64,
    /// Zones reclaimed (erases on an SSD).
    pub gc_count: u64,
}

/// A run's time series, at most [`Series::MAX_POINTS`] points however long the run: the
/// sampling interval doubles (and every other point is dropped) whenever it fills.
#[derive(Clone, Debug)]
pub struct Series {
    pub points: Vec<SeriesPoint>,
    every_writes: u64,
}

impl Series {
    pub const MAX_POINTS: usize = 512;
    /// The first sampling interval, in user writes (a replay batch's size: the driver samples
    /// at batch ends).
    const FIRST_EVERY: u64 = 1 << 16;

    pub fn new() -> Series {
        Series { points: Vec::new(), every_writes: Self::FIRST_EVERY }
    }

    /// Records `point` if a sampling boundary was crossed since the previous batch, or if
    /// `last` (the run's end, always recorded).
    fn offer(&mut self, before: u64, point: SeriesPoint, last: bool) {
        if !last && before / self.every_writes == point.writes / self.every_writes {
            return;
        }
        if self.points.last().is_some_and(|p| p.writes == point.writes) {
            return;
        }
        self.points.push(point);
        if self.points.len() >= Self::MAX_POINTS {
            let every = self.every_writes * 2;
            self.points.retain(|p| p.writes % every == 0);
            self.every_writes = every;
        }
    }
}

impl Default for Series {
    fn default() -> Series {
        Series::new()
    }
}

/// How many writes ahead [`drive`] asks an engine to fetch a block's state: far enough for a
/// fetch from memory to land.
pub const PREFETCH_AHEAD: usize = 16;
/// How many writes ahead [`drive`] asks for what a block's state points to: well after the
/// state itself was asked for, still early enough to land.
pub const PREFETCH_POINTED_AHEAD: usize = 6;

/// Feeds every write of the prepared trace to `engine`, in order, and returns its replay
/// stream (written meanwhile if the trace was not numbered yet: [`Prepared::for_each_batch`]).
/// `progress` hears the number of writes so far now and then, and may stop the run; `series`
/// gets the engine's counters after every few batches.
pub fn drive<E: BlockEngine>(engine: &mut E, trace: Prepared, progress: &mut dyn Progress, series: &mut Series) -> Result<Staged> {
    let mut writes = 0u64;
    let staged = trace.for_each_batch(|batch| {
        let ids = &batch.ids[..];
        let times_us = &batch.times_us[..ids.len()];
        for (i, (&id, &time_us)) in ids.iter().zip(times_us).enumerate() {
            if let Some(&ahead) = ids.get(i + PREFETCH_AHEAD) {
                engine.prefetch(ahead);
            }
            if let Some(&ahead) = ids.get(i + PREFETCH_POINTED_AHEAD) {
                engine.prefetch_pointed(ahead);
            }
            engine.write(id, time_us, batch.next_writes.get(i).copied().unwrap_or(NEVER))?;
        }
        let before = writes;
        writes += ids.len() as u64;
        if before >> 20 != writes >> 20 {
            progress.update(writes);
        }
        if let Some(point) = engine.sample() {
            series.offer(before, SeriesPoint { writes, ..point }, false);
        }
        if progress.cancelled() {
            return Err(LabError::Cancelled);
        }
        Ok(())
    })?;
    if let Some(point) = engine.sample() {
        series.offer(writes, SeriesPoint { writes, ..point }, true);
    }
    progress.update(writes);
    Ok(staged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(writes: u64) -> SeriesPoint {
        SeriesPoint { writes, user_blocks: writes, gc_blocks: writes / 2, gc_count: writes >> 10 }
    }

    #[test]
    fn a_series_stays_bounded_evenly_spaced_and_ends_at_the_run_end() {
        let mut s = Series::new();
        let batch = 1 << 14;
        let mut writes = 0;
        for _ in 0..100_000 {
            let before = writes;
            writes += batch;
            s.offer(before, point(writes), false);
        }
        s.offer(writes + 7, point(writes + 7), true);
        assert!(s.points.len() < Series::MAX_POINTS, "{}", s.points.len());
        assert!(s.points.len() > Series::MAX_POINTS / 4, "decimation keeps at least a quarter: {}", s.points.len());
        let gaps: std::collections::BTreeSet<u64> = s.points.windows(2).take(s.points.len() - 2).map(|w| w[1].writes - w[0].writes).collect();
        assert_eq!(gaps.len(), 1, "evenly spaced but for the end: {gaps:?}");
        assert_eq!(s.points.last().unwrap().writes, writes + 7);
    }

    #[test]
    fn a_short_run_has_its_end_point() {
        let mut s = Series::new();
        s.offer(0, point(10), false);
        assert!(s.points.is_empty(), "no boundary crossed");
        s.offer(10, point(10), true);
        assert_eq!(s.points, vec![point(10)]);
    }
}
