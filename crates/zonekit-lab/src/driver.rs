//! How the harness feeds an engine: the [`BlockEngine`] trait and [`drive`], the replay loop
//! with a lookahead window that hides the engine's memory latency.

use zonekit_trace::binary::BlockRecord;
use zonekit_trace::input::Input;
use zonekit_trace::Op;

use crate::error::{LabError, Result};

/// A block-granular engine the harness can replay a trace through. `prefetch` and `resolve`
/// are hints the loop gives a few records ahead of the write; an engine that has nothing to
/// fetch keeps the defaults. Generic, so the loop compiles to direct calls.
pub trait BlockEngine {
    /// What `resolve` found out about a block, handed back to `write` (e.g. its dense id).
    type Hint: Copy;
    /// Starts fetching whatever `resolve` will look at for `key`.
    fn prefetch(&mut self, _key: u64) {}
    /// Looks `key` up ahead of its write (after `prefetch` had time to complete).
    fn resolve(&mut self, key: u64) -> Self::Hint;
    /// A user write of block `key` at trace time `time_us`; `next_write` is the logical time of
    /// the block's next write from an annotated trace ([`zonekit_base::NEVER`] otherwise).
    fn write(&mut self, key: u64, hint: Self::Hint, time_us: u64, next_write: u64) -> Result<()>;
    /// A read the trace issues. Engines that do not model reads count them only.
    fn read(&mut self, _key: u64, _time_us: u64) -> Result<()> {
        Ok(())
    }
}

/// Counts of what [`drive`] fed.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Fed {
    pub writes: u64,
    pub reads: u64,
}

/// Feeds every record of `input` to `engine`, in order. `progress` is called now and then
/// with the number of writes so far.
pub fn drive<E: BlockEngine>(engine: &mut E, input: &Input, progress: &mut dyn FnMut(u64)) -> Result<Fed> {
    let read_error = LabError::input(input);
    // A small window of upcoming writes: their map entries are fetched LOOKAHEAD records
    // ahead and resolved half as far ahead, so the misses overlap.
    const LOOKAHEAD: usize = 16;
    const RESOLVE_AT: usize = LOOKAHEAD / 2;
    // (key, time, next write, hint once resolved)
    let mut window: std::collections::VecDeque<(u64, u64, u64, Option<E::Hint>)> = std::collections::VecDeque::with_capacity(LOOKAHEAD + 1);
    let mut fed = Fed::default();
    let mut records = input.records().map_err(&read_error)?;
    loop {
        while window.len() < LOOKAHEAD {
            let Some(r) = records.next() else { break };
            let r: BlockRecord = r.map_err(&read_error)?;
            let key = r.io.key();
            if r.io.op == Op::Read {
                engine.read(key, r.io.time_us)?;
                fed.reads += 1;
                continue;
            }
            engine.prefetch(key);
            window.push_back((key, r.io.time_us, r.next_write, None));
        }
        if let Some(w) = window.get_mut(RESOLVE_AT) {
            w.3 = Some(engine.resolve(w.0));
        }
        let Some((key, time_us, next_write, hint)) = window.pop_front() else { break };
        let hint = match hint {
            Some(h) => h,
            None => engine.resolve(key),
        };
        engine.write(key, hint, time_us, next_write)?;
        fed.writes += 1;
        if fed.writes & 0xF_FFFF == 0 {
            progress(fed.writes);
        }
    }
    progress(fed.writes);
    Ok(fed)
}
