//! How the harness feeds a block engine: the [`BlockEngine`] trait and [`drive`], the replay
//! loop over a staged trace (see [`crate::stage`]), with a prefetch a few writes ahead that
//! hides the engine's memory latency.

use zonekit_base::NEVER;

use crate::error::Result;
use crate::stage::{Prepared, Staged};

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
}

/// How many writes ahead [`drive`] asks an engine to fetch a block's state: far enough for a
/// fetch from memory to land.
pub const PREFETCH_AHEAD: usize = 16;
/// How many writes ahead [`drive`] asks for what a block's state points to: well after the
/// state itself was asked for, still early enough to land.
pub const PREFETCH_POINTED_AHEAD: usize = 6;

/// Feeds every write of the prepared trace to `engine`, in order, and returns its replay
/// stream (written meanwhile if the trace was not numbered yet: [`Prepared::for_each_batch`]).
/// `progress` is called now and then with the number of writes so far.
pub fn drive<E: BlockEngine>(engine: &mut E, trace: Prepared, progress: &mut dyn FnMut(u64)) -> Result<Staged> {
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
            progress(writes);
        }
        Ok(())
    })?;
    progress(writes);
    Ok(staged)
}
