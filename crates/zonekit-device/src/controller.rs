//! The controller in front of the flash, for a preset fitted to a real drive (issue 48: the
//! ZN540). With [`ControllerConfig::NONE`] (every figure zero) the timing model is the plain
//! channels × dies model of [`crate::timing`] and nothing here runs.
//!
//! What the drive's published measurements show, and the part of the model each one asks for
//! (`docs/results/devices-data.md` lists the data; `docs/results/devices.md` the fit):
//!
//! - **Dispatch, in order.** Every command passes one dispatcher in arrival order. A write is
//!   dispatched only once the write buffer has room for it, so a write waiting for room holds
//!   up every command behind it, reads included (head-of-line blocking). Nothing in the fit data
//!   measures it; the validation runs with 4 × 32 × 1 MiB appends queued show reads waiting
//!   95 ms, the time the queued appends take to drain.
//! - **A write buffer.** A host write completes once its data is in the controller's buffer
//!   (11.5 µs for 4 KiB, far below a page program); the buffer drains to flash in stripes (one
//!   page on each of `stripe_dies` dies, programmed together), and a stripe's bytes leave the
//!   buffer when its last page is programmed ([`BufferRelease::AtProgramEnd`]; for
//!   [`BufferRelease::OverProgram`] see [`Release`]). The drain's rate is the device's write
//!   bandwidth (1.2 GB/s from 8 KiB writes up, whatever the zone count).
//! - **Slow stripes.** One stripe program in `slow_stripe_one_in` takes an exponential time of
//!   mean `slow_stripe_ns` more on its dies (drawn from a generator of its own, so the jitter
//!   is drawn as without them); the program time gives back their mean share, so the drain
//!   keeps its bandwidth. Appends to one zone with 4-64 MiB queued behind a full buffer have
//!   their p50 at the mean, as Little's law says, but p99 and p99.9 2.5-4.7 ms above it, a
//!   spread that barely grows with the bytes queued: a few rare long programs, not many small
//!   variations. It shows only once the buffer is full (engine-bound 4 KiB appends have small
//!   tails on the drive too).
//! - **The write engine.** Writes and appends pass one engine, `write_ns` or `append_ns` each:
//!   4 KiB writes over 8-14 zones saturate at 186 KIOPS, appends at 132 KIOPS in one zone as
//!   over 4-14. While another write or append is in flight each costs `handoff_ns` more (one
//!   zone at QD2 or two zones at QD1 run well below twice QD1's rate), and `jitter_ns` is the
//!   mean of an exponential spread (QD1's p99 sits 2.5 µs above its median).
//! - **Completion.** After the engine a write completes `write_done_ns` later plus the time
//!   its bytes beyond `host_overlap_bytes` take over the host link at `host_bytes_per_sec`
//!   (4 and 8 KiB writes take the same 11 µs at QD1; from 16 KiB up the latency grows by
//!   about 0.43 µs per KiB).
//! - **Reads** sense a page on its die and cross the die's channel (the plain model), then take
//!   `read_done_ns` (ECC, transfer to the host, completion). One page in `slow_page_one_in`
//!   takes `slow_page_read_ns` longer to sense: the drive's 4 KiB reads at QD1 take one of two
//!   times, 67-69 µs or 80-82 µs, about a third the longer (TLC's 2-3-2 coding: one page of a
//!   wordline's three needs a third read level).
//! - **Zone management** runs beside everything else, one command per zone at a time (resets of
//!   different zones overlap): open, close and the finish of an empty zone cost a fixed time; a reset costs `reset_ns` plus `reset_ns_per_mib` for each MiB the
//!   host wrote (a finished zone resets like an unfinished one with the same host data: the
//!   padding costs nothing), plus `seal_ns` when the zone is open with programmed data and not
//!   full; a finish of a written zone costs `seal_ns`, then programs the rest of the zone's
//!   capacity on its dies (padding at the flash's own bandwidth). Resets do not erase on the
//!   dies: reads beside back-to-back resets keep their 69 µs median, so the erase is not in
//!   the reads' way.
//! - A first write or append to a zone that is not open opens it (`implicit_open_ns` more).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use zonekit_base::Rng;

use crate::flash::{BufferRelease, ControllerConfig, Dies};

/// Buffer bytes a program (or a reset) gives back: `bytes` in all, `released_bytes` of them
/// so far; they leave evenly from `start_ns` to `end_ns`, all at `end_ns` when the two are
/// equal.
///
/// Why evenly ([`BufferRelease::OverProgram`]): the model programs a stripe on all its dies
/// in lockstep, which gives the drive's bandwidth and its dies' busy times, but a drive's
/// dies and planes take and finish their pages at staggered times, so its buffer frees a
/// little at a time, all the time, at the drain's rate; with a whole stripe freed at once,
/// writes behind a full buffer rush in and then all wait a program (the 980 PRO's 8 KiB
/// writes at QD8 have p50 20.6 µs and p99 23.7 µs, such a model 10.5 and 178 µs). Releasing
/// each page evenly over its die's program is the limit of evenly staggered dies. No byte
/// leaves before its program starts (a drive keeps the data until the cells hold it) and
/// every byte has left when it ends, so the drain's rate is the same either way.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Release {
    start_ns: u64,
    end_ns: u64,
    bytes: u64,
    released_bytes: u64,
}

impl Release {
    /// Bytes not yet given back at `t` (rounded up, so they never fall below the even share).
    fn held_at(&self, t: u64) -> u64 {
        let held = if t >= self.end_ns {
            0
        } else if t <= self.start_ns {
            self.bytes
        } else {
            let span_ns = self.end_ns - self.start_ns;
            match self.bytes.checked_mul(self.end_ns - t) {
                Some(x) => x.div_ceil(span_ns),
                None => (self.bytes as u128 * (self.end_ns - t) as u128).div_ceil(span_ns as u128) as u64,
            }
        };
        held.min(self.bytes - self.released_bytes)
    }
}

/// Per-zone state the controller needs.
#[derive(Clone, Debug, Default)]
pub(crate) struct ZoneCtl {
    /// Bytes the host wrote since the last reset (what a reset pays for).
    host_bytes: u64,
    /// Bytes handed to the flash (programmed or being programmed) since the last reset: where
    /// the zone's next stripe starts. A conventional zone's rewrites move it on too.
    programmed_bytes: u64,
    /// Bytes in the buffer not yet handed to the flash.
    pending_bytes: u64,
    /// The end of the highest write (a sequential zone's write pointer, in bytes).
    written_end: u64,
    /// When the last accepted byte is in the buffer (a stripe programs after it).
    ready_ns: u64,
    open: bool,
    touched: bool,
    full: bool,
}

/// The controller's busy-until times and buffer.
#[derive(Clone, Debug)]
pub(crate) struct Controller {
    pub(crate) cfg: ControllerConfig,
    dispatch_free_ns: u64,
    engine_free_ns: u64,
    mgmt_done_ns: u64,
    /// Completion times of the writes and appends in flight.
    writes_in_flight: BinaryHeap<Reverse<u64>>,
    /// Bytes in the buffer, and when programmed pages give their bytes back: the releases not
    /// begun, first to begin on top, and those under way (about one a die).
    buffer_used_bytes: u64,
    releases_waiting: BinaryHeap<Reverse<Release>>,
    releases: Vec<Release>,
    pub(crate) zones: Vec<ZoneCtl>,
    /// Each die's latest program: when its page was ready for the die, when the die was free
    /// of everything before it (a read that came first goes before it, see
    /// [`Controller::sense`]), and how long it programs.
    last_program: Vec<(u64, u64, u64)>,
    /// Zones below this are conventional: written in place, never opened or full.
    conventional_zones: u32,
    rng: Rng,
    /// The slow stripes' draws, apart from the jitter's, so that a run which never fills a
    /// stripe sees the same jitter with and without them.
    slow_rng: Rng,
}

impl Controller {
    pub(crate) fn new(cfg: ControllerConfig, zone_count: u32, conventional_zones: u32, dies: u32) -> Controller {
        Controller {
            cfg,
            dispatch_free_ns: 0,
            engine_free_ns: 0,
            mgmt_done_ns: 0,
            writes_in_flight: BinaryHeap::new(),
            buffer_used_bytes: 0,
            releases_waiting: BinaryHeap::new(),
            releases: Vec::new(),
            zones: vec![ZoneCtl::default(); zone_count as usize],
            last_program: vec![(0, 0, 0); dies as usize],
            conventional_zones,
            rng: Rng::new(cfg.seed),
            slow_rng: Rng::new(cfg.seed).derive(1),
        }
    }

    fn release_until(&mut self, t: u64) {
        let mut freed = 0;
        while self.releases_waiting.peek().is_some_and(|r| r.0.start_ns <= t) {
            let Reverse(r) = self.releases_waiting.pop().expect("peeked");
            // Over by `t` (every release of a stripe freed at its end): given back at once,
            // without passing through the list of those under way.
            if r.end_ns <= t {
                freed += r.bytes;
            } else {
                self.releases.push(r);
            }
        }
        self.releases.retain_mut(|r| {
            let held = r.held_at(t);
            freed += r.bytes - r.released_bytes - held;
            r.released_bytes = r.bytes - held;
            held > 0
        });
        self.buffer_used_bytes -= freed;
    }

    /// When the buffer, left alone from `t`, has given back `need_bytes` more (or sooner, at
    /// the next start or end of a release: between two, it empties at a constant rate).
    fn next_room(&self, t: u64, need_bytes: u64) -> u64 {
        // Released until `t`: those under way end after it, those waiting begin after it.
        let begins = self.releases_waiting.peek().map(|r| r.0.start_ns);
        let next = self.releases.iter().map(|r| r.end_ns).chain(begins).min().expect("a release is left");
        let rate: f64 = self.releases.iter().map(|r| r.bytes as f64 / (r.end_ns - r.start_ns) as f64).sum();
        if rate > 0.0 {
            // Rounded up; a release rounds its bytes up too, so the caller may ask again.
            next.min(t + (need_bytes as f64 / rate).ceil().max(1.0) as u64)
        } else {
            next
        }
    }

    /// When the dispatcher takes a command arriving at `t` that needs `bytes` of buffer: once
    /// the buffer has room for it (a command larger than the buffer, once it is empty).
    fn dispatch(&mut self, d: &mut Dies, t: u64, bytes: u64) -> u64 {
        let room = self.cfg.write_buffer_bytes.saturating_sub(bytes);
        let mut start = t.max(self.dispatch_free_ns);
        // The bytes counted before releasing are an upper bound: room by them is room.
        while !(bytes == 0 || self.buffer_used_bytes <= room) {
            self.release_until(start);
            let used = self.buffer_used_bytes;
            if used == 0 || used <= room {
                break;
            }
            if self.releases.is_empty() && self.releases_waiting.is_empty() {
                // Only zones' unfinished stripes are left: program the fullest.
                self.flush_partial_stripe(d);
            } else {
                start = self.next_room(start, used - room);
            }
        }
        self.buffer_used_bytes += bytes;
        self.dispatch_free_ns = start + self.cfg.dispatch_ns;
        start
    }

    /// Bytes in the buffer are the zones' pending bytes and those of programs not yet done.
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let pending: u64 = self.zones.iter().map(|z| z.pending_bytes).sum();
        let waiting = self.releases_waiting.iter().map(|r| &r.0);
        assert!(waiting.clone().all(|r| r.start_ns <= r.end_ns && r.released_bytes == 0 && r.bytes > 0), "{:?}", self.releases_waiting);
        assert!(self.releases.iter().all(|r| r.start_ns < r.end_ns && r.released_bytes < r.bytes), "{:?}", self.releases);
        let programming: u64 = self.releases.iter().chain(waiting).map(|r| r.bytes - r.released_bytes).sum();
        assert_eq!(self.buffer_used_bytes, pending + programming, "buffer accounting");
    }

    /// The extra program time of a stripe: most stripes none, one in `slow_stripe_one_in` an
    /// exponential time of mean `slow_stripe_ns`.
    fn slow_stripe(&mut self) -> u64 {
        if self.cfg.slow_stripe_one_in == 0 || !self.slow_rng.chance(1.0 / self.cfg.slow_stripe_one_in as f64) {
            0
        } else {
            self.slow_rng.exponential(self.cfg.slow_stripe_ns as f64) as u64
        }
    }

    fn jitter(&mut self) -> u64 {
        if self.cfg.jitter_ns == 0 {
            0
        } else {
            self.rng.exponential(self.cfg.jitter_ns as f64) as u64
        }
    }
}

/// A host write or a zone append.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum WriteKind {
    Write,
    Append,
}

impl Controller {
    /// A host write of `len` bytes at byte `offset` of `zone`; returns its completion.
    pub(crate) fn write(&mut self, d: &mut Dies, submit_ns: u64, zone: u32, offset: u64, len: u64, kind: WriteKind) -> u64 {
        self.write_parts(d, submit_ns, &[(zone, offset, len)], kind)
    }

    /// One host write command whose bytes land in several places (`(zone, offset, len)`
    /// each, in order): a conventional SSD's command spans reclaim units, or its blocks land
    /// apart. It passes the dispatcher, the engine and the host link once, for all its bytes;
    /// each place's bytes join its zone's buffered data. Returns the command's completion.
    pub(crate) fn write_parts(&mut self, d: &mut Dies, submit_ns: u64, parts: &[(u32, u64, u64)], kind: WriteKind) -> u64 {
        let cfg = self.cfg;
        let capacity = d.zone_capacity_bytes;
        let len: u64 = parts.iter().map(|p| p.2).sum();
        let admitted = self.dispatch(d, submit_ns, len);
        let at_engine = admitted + cfg.dispatch_ns;
        let start = at_engine.max(self.engine_free_ns);
        while self.writes_in_flight.peek().is_some_and(|&Reverse(done)| done <= start) {
            self.writes_in_flight.pop();
        }
        let (engine_ns, done_ns) = match kind {
            WriteKind::Write => (cfg.write_ns, cfg.write_done_ns),
            WriteKind::Append => (cfg.append_ns, cfg.append_done_ns),
        };
        let handoff = if self.writes_in_flight.is_empty() { 0 } else { cfg.handoff_ns };
        let end = start + engine_ns + handoff + self.jitter();
        self.engine_free_ns = end;
        let link_bytes = len.saturating_sub(cfg.host_overlap_bytes);
        let link_ns = if cfg.host_bytes_per_sec == 0 { 0 } else { (link_bytes as u128 * 1_000_000_000 / cfg.host_bytes_per_sec as u128) as u64 };
        let mut opening = 0;
        for &(zone, offset, len) in parts {
            let sequential = zone >= self.conventional_zones;
            let z = &mut self.zones[zone as usize];
            opening = opening.max(if z.open || !sequential { 0 } else { cfg.implicit_open_ns });
            z.open = sequential;
            z.touched = true;
            z.host_bytes += len;
            z.pending_bytes += len;
            z.written_end = z.written_end.max(offset + len);
            if sequential && z.written_end >= capacity {
                z.full = true;
                z.open = false;
            }
            z.ready_ns = z.ready_ns.max(end + link_ns);
        }
        let done = end + done_ns + link_ns + opening;
        self.writes_in_flight.push(Reverse(done));
        for &(zone, _, _) in parts {
            self.drain_zone(d, zone, false);
        }
        done
    }

    /// Programs the zone's complete stripes (all of its pending bytes when `all` or the zone is
    /// full, the last page padded), their bytes leaving the buffer as `buffer_release` says.
    fn drain_zone(&mut self, d: &mut Dies, zone: u32, all: bool) {
        let stripe = d.flash.page_size_bytes as u64 * self.cfg.stripe_dies.max(1) as u64;
        loop {
            let z = &self.zones[zone as usize];
            let (from, pending, ready) = (z.programmed_bytes, z.pending_bytes, z.ready_ns);
            let bytes = if pending >= stripe {
                stripe
            } else if (all || z.full) && pending > 0 {
                pending
            } else {
                return;
            };
            self.program_range(d, ready, zone, from, from + bytes, bytes);
            let z = &mut self.zones[zone as usize];
            z.programmed_bytes += bytes;
            z.pending_bytes -= bytes;
        }
    }

    /// Transfers and programs the pages holding bytes `from..to` of `zone`, the first
    /// `buffered_bytes` of which leave the buffer as `buffer_release` says; returns when the
    /// last is programmed. Each stripe the range starts or enters may be a slow one: all its
    /// pages take the same extra time on their dies.
    fn program_range(&mut self, d: &mut Dies, ready_ns: u64, zone: u32, from: u64, to: u64, buffered_bytes: u64) -> u64 {
        let page = d.flash.page_size_bytes as u64;
        let stripe_pages = self.cfg.stripe_dies.max(1) as u64;
        let even = self.cfg.buffer_release == BufferRelease::OverProgram;
        let mut spans: Vec<Release> = Vec::new();
        let mut done = ready_ns;
        let mut p = from / page;
        let mut slow_ns = 0;
        while p * page < to {
            if p == from / page || p % stripe_pages == 0 {
                slow_ns = self.slow_stripe();
            }
            let die = d.die_of(zone, p);
            let channel = d.channel_of(die);
            let transferred = ready_ns.max(d.channel_free_ns[channel]) + d.flash.transfer_ns(page);
            d.channel_free_ns[channel] = transferred;
            let before = d.die_free_ns[die];
            let program_ns = d.flash.program_ns + slow_ns;
            let programmed = transferred.max(before) + program_ns;
            d.die_free_ns[die] = programmed;
            self.last_program[die] = (transferred, before, program_ns);
            done = done.max(programmed);
            // The page's buffered bytes; pages programmed over the same span share a release.
            let held = (p * page + page).min(from + buffered_bytes).saturating_sub((p * page).max(from));
            let start_ns = programmed - program_ns;
            if even && held > 0 {
                match spans.iter_mut().find(|r| (r.start_ns, r.end_ns) == (start_ns, programmed)) {
                    Some(r) => r.bytes += held,
                    None => spans.push(Release { start_ns, end_ns: programmed, bytes: held, released_bytes: 0 }),
                }
            }
            p += 1;
        }
        if !even && buffered_bytes > 0 {
            self.releases_waiting.push(Reverse(Release { start_ns: done, end_ns: done, bytes: buffered_bytes, released_bytes: 0 }));
        }
        self.releases_waiting.extend(spans.into_iter().map(Reverse));
        done
    }

    /// Programs the unfinished stripe of the zone holding the most unprogrammed bytes (the
    /// buffer is full of them and nothing else would free it).
    fn flush_partial_stripe(&mut self, d: &mut Dies) {
        let fullest = (0..self.zones.len()).max_by_key(|&i| self.zones[i].pending_bytes).expect("a device has zones");
        assert!(self.zones[fullest].pending_bytes > 0, "the buffer holds bytes no zone or program accounts for");
        self.drain_zone(d, fullest as u32, true);
    }

    /// When a read arriving at `submit_ns` reaches the flash.
    pub(crate) fn read_start(&mut self, submit_ns: u64) -> u64 {
        self.dispatch_free_ns = submit_ns.max(self.dispatch_free_ns) + self.cfg.dispatch_ns;
        self.dispatch_free_ns
    }

    /// When a read that reached die `die` at `t` senses its page. The model schedules a
    /// program when its page is transferred, which can be after a read that reached the die
    /// earlier is charged: first come, first served, such a read goes before the program
    /// (which then ends a sense later; the buffer bytes it frees are not held back for it).
    /// `page` is the page's index in its zone, which sets how long it takes to sense.
    pub(crate) fn sense(&mut self, d: &mut Dies, die: usize, page: u64, t: u64) -> u64 {
        let one_in = self.cfg.slow_page_one_in as u64;
        let slow = one_in > 0 && page % one_in == one_in - 1;
        let read_ns = d.flash.read_ns + if slow { self.cfg.slow_page_read_ns } else { 0 };
        let (ready, before, program_ns) = self.last_program[die];
        if t < ready && d.die_free_ns[die] == ready.max(before) + program_ns {
            let sensed = t.max(before) + read_ns;
            self.last_program[die] = (ready, sensed, program_ns);
            d.die_free_ns[die] = ready.max(sensed) + program_ns;
            return sensed;
        }
        let sensed = t.max(d.die_free_ns[die]) + read_ns;
        d.die_free_ns[die] = sensed;
        sensed
    }

    /// Open, close, finish or reset; returns its completion.
    pub(crate) fn manage(&mut self, d: &mut Dies, submit_ns: u64, zone: u32, action: crate::ZoneAction) -> u64 {
        use crate::ZoneAction;
        let cfg = self.cfg;
        // Commands on different zones run side by side: resets queued every 9 ms beside 4 KiB
        // writes each took 32 ms on the drive, so several were in flight at once.
        let start = self.dispatch(d, submit_ns, 0) + cfg.dispatch_ns;
        let z = self.zones[zone as usize].clone();
        let done = match action {
            ZoneAction::Open => {
                let z = &mut self.zones[zone as usize];
                z.open = !z.full;
                z.touched |= !z.full;
                start + cfg.open_ns
            }
            ZoneAction::Close => {
                self.zones[zone as usize].open = false;
                start + cfg.close_ns
            }
            ZoneAction::Finish if z.host_bytes == 0 => {
                let z = &mut self.zones[zone as usize];
                z.open = false;
                z.full = true;
                start + cfg.finish_empty_ns
            }
            ZoneAction::Finish => {
                let sealed = start + cfg.seal_ns;
                // The buffered tail and the padding up to the capacity go to flash now.
                let capacity = d.zone_capacity_bytes;
                let zc = &mut self.zones[zone as usize];
                let (from, pending) = (zc.programmed_bytes, zc.pending_bytes);
                let to = from + pending + capacity.saturating_sub(zc.written_end);
                zc.programmed_bytes = to;
                zc.pending_bytes = 0;
                zc.written_end = capacity;
                zc.open = false;
                zc.full = true;
                if to > from {
                    self.program_range(d, sealed.max(z.ready_ns), zone, from, to, pending)
                } else {
                    sealed
                }
            }
            ZoneAction::Reset => {
                let cost = if z.touched || z.host_bytes > 0 {
                    let seal = if z.programmed_bytes > 0 && !z.full { cfg.seal_ns } else { 0 };
                    cfg.reset_ns + (z.host_bytes as u128 * cfg.reset_ns_per_mib as u128 / (1 << 20)) as u64 + seal
                } else {
                    0
                };
                let done = start + cost;
                if z.pending_bytes > 0 {
                    self.releases_waiting.push(Reverse(Release { start_ns: done, end_ns: done, bytes: z.pending_bytes, released_bytes: 0 }));
                }
                self.zones[zone as usize] = ZoneCtl::default();
                done
            }
        };
        self.mgmt_done_ns = self.mgmt_done_ns.max(done);
        done
    }

    /// The zone as if `bytes` had been written into it long ago (its full stripes programmed,
    /// the rest in the buffer), explicitly opened when `open`: what a benchmark's fill leaves
    /// behind after an idle second, without simulating it.
    pub(crate) fn assume_written(&mut self, d: &Dies, zone: u32, bytes: u64, open: bool) {
        let capacity = d.zone_capacity_bytes;
        let stripe = d.flash.page_size_bytes as u64 * self.cfg.stripe_dies.max(1) as u64;
        let programmed = if bytes >= capacity { capacity } else { bytes / stripe * stripe };
        let pending = bytes - programmed;
        // Bytes the zone still held in the buffer (no program scheduled to free them) go.
        self.buffer_used_bytes -= self.zones[zone as usize].pending_bytes;
        self.buffer_used_bytes += pending;
        self.zones[zone as usize] = ZoneCtl {
            host_bytes: bytes,
            programmed_bytes: programmed,
            pending_bytes: pending,
            written_end: bytes,
            ready_ns: 0,
            open: open && bytes < capacity,
            touched: open || bytes > 0,
            full: bytes >= capacity,
        };
    }

    /// When the controller is idle (dispatcher, engines, buffer drained).
    pub(crate) fn idle_ns(&self) -> u64 {
        let releases = self.releases.iter().chain(self.releases_waiting.iter().map(|r| &r.0)).map(|r| r.end_ns).max().unwrap_or(0);
        self.dispatch_free_ns.max(self.engine_free_ns).max(self.mgmt_done_ns).max(releases)
    }
}

#[cfg(test)]
mod tests {
    use crate::timing::{BufferRelease, ControllerConfig, FlashConfig, TimingModel};
    use crate::Geometry;

    const US: u64 = 1000;

    /// Small flash whose figures make every expected time easy to write down: 4 dies on 2
    /// channels, 16 KiB pages, a stripe over all 4 dies (64 KiB), a 128 KiB buffer.
    fn flash() -> FlashConfig {
        FlashConfig {
            channels: 2,
            dies_per_channel: 2,
            page_size_bytes: 16384,
            pages_per_block: 4,
            read_ns: 50 * US,
            program_ns: 500 * US,
            erase_ns: 3_000 * US,
            channel_bytes_per_sec: 1_000_000_000,
            dies_per_zone: 4,
            controller: ControllerConfig {
                dispatch_ns: US,
                write_ns: 2 * US,
                append_ns: 4 * US,
                handoff_ns: US,
                jitter_ns: 0,
                write_done_ns: 5 * US,
                append_done_ns: 6 * US,
                host_bytes_per_sec: 1_000_000_000,
                host_overlap_bytes: 8192,
                read_done_ns: 10 * US,
                slow_page_one_in: 0,
                slow_page_read_ns: 0,
                write_buffer_bytes: 128 * 1024,
                stripe_dies: 4,
                implicit_open_ns: 3 * US,
                open_ns: 8 * US,
                close_ns: 9 * US,
                finish_empty_ns: 12 * US,
                seal_ns: 1_000 * US,
                reset_ns: 1_500 * US,
                reset_ns_per_mib: 10_000 * US,
                slow_stripe_one_in: 0,
                slow_stripe_ns: 0,
                buffer_release: BufferRelease::AtProgramEnd,
                seed: 1,
            },
        }
    }

    fn geometry() -> Geometry {
        Geometry {
            block_size_bytes: 4096,
            zone_size_blocks: 256,
            zone_capacity_blocks: 256,
            zone_count: 8,
            conventional_zone_count: 0,
            open_zones_max: Some(4),
            active_zones_max: Some(4),
        }
    }

    fn model() -> TimingModel {
        TimingModel::new(flash(), &geometry()).unwrap()
    }

    #[test]
    fn a_write_completes_on_buffer_admission_long_before_its_program() {
        let mut m = model();
        // dispatch 1 + engine 2 + completion 5 + the implicit open of the zone 3.
        assert_eq!(m.write(0, 0, 0, 4096), 11 * US);
        // The zone is open now; 8 KiB still overlaps the command, 16 KiB pays 8 KiB of link.
        assert_eq!(m.write(100 * US, 0, 4096, 8192), 100 * US + 8 * US);
        assert_eq!(m.write(200 * US, 0, 12288, 16384), 200 * US + 8 * US + 8192);
        assert!(m.drained_ns() < 1_000 * US, "nothing is programmed until a stripe fills");
    }

    #[test]
    fn one_command_over_two_zones_pays_the_engine_and_the_link_once() {
        let mut m = model();
        // dispatch 1 + engine 2 + completion 5 + one implicit open 3; 8 KiB in all overlaps
        // the command (two 4 KiB writes would each pay the engine).
        assert_eq!(m.write_parts(0, &[(1, 0, 4096), (2, 0, 4096)]), 11 * US);
        // 16 KiB in two places: 8 KiB of it over the 1 GB/s link.
        assert_eq!(m.write_parts(100 * US, &[(1, 4096, 8192), (2, 4096, 8192)]), 100 * US + 8 * US + 8192);
        m.check_invariants();
        // Each place's bytes joined its zone: a stripe (64 KiB) in each drains to the dies.
        let mut t = 200 * US;
        for i in 0..16 {
            t = m.write_parts(t, &[(1, 12288 + i * 4096, 4096), (2, 12288 + i * 4096, 4096)]);
        }
        m.check_invariants();
        assert!(m.drained_ns() >= 500 * US, "both zones' first stripes programmed: {}", m.drained_ns());
    }

    #[test]
    fn an_append_costs_its_own_engine_and_completion_times() {
        let mut m = model();
        m.write(0, 1, 0, 4096);
        let write = m.write(100 * US, 1, 4096, 4096) - 100 * US;
        m.append(0, 2, 0, 4096);
        let append = m.append(200 * US, 2, 4096, 4096) - 200 * US;
        assert_eq!((write, append), (8 * US, 11 * US));
    }

    #[test]
    fn a_full_buffer_holds_writes_until_a_stripe_is_programmed() {
        let mut m = model();
        // Two 64 KiB stripes fill the 128 KiB buffer; the next write waits for the first
        // stripe's program: page transfers (2 per channel, 16.4 µs each), then 500 µs.
        let mut t = 0;
        for i in 0..8 {
            t = m.write(t, 0, i * 16384, 16384);
        }
        let stripe_done = m.drained_ns();
        let late = m.write(t, 0, 8 * 16384, 16384);
        m.check_invariants();
        assert!(late > 500 * US, "the ninth 16 KiB write waits for a program: {late}");
        assert!(late < stripe_done + 20 * US, "and no longer than the first stripe: {late} vs {stripe_done}");
    }

    #[test]
    fn a_writer_waiting_for_room_holds_up_the_reads_behind_it() {
        let mut alone = model();
        let read_alone = alone.read(0, 3, 0, 4096);
        let mut m = model();
        let mut t = 0;
        for i in 0..8 {
            t = m.write(t, 0, i * 16384, 16384);
        }
        let blocked_write = m.write(t, 0, 8 * 16384, 16384);
        let read = m.read(t, 3, 0, 4096) - t;
        assert_eq!(read_alone, US + 50 * US + 4096 + 10 * US);
        assert!(read > 400 * US && t + read >= blocked_write - 20 * US, "the read waited behind the write: {read}");
    }

    #[test]
    fn reads_wait_for_a_die_that_is_programming() {
        let mut m = model();
        let mut t = 0;
        for i in 0..4 {
            t = m.write(t, 0, i * 16384, 16384);
        }
        // The stripe programs on all four dies for 500 µs; a read of zone 1 (same dies)
        // arriving in the middle waits for it.
        let mid = t + 300 * US;
        let read = m.read(mid, 1, 0, 4096) - mid;
        assert!(read > 150 * US, "{read}");
    }

    #[test]
    fn one_page_in_three_senses_longer() {
        let mut f = flash();
        f.controller.slow_page_one_in = 3;
        f.controller.slow_page_read_ns = 20 * US;
        let mut m = TimingModel::new(f, &geometry()).unwrap();
        // Each read long after the one before, on idle dies: only the page's own sense differs.
        let times: Vec<u64> = (0..6)
            .map(|page| {
                let at = (page + 1) * 10_000 * US;
                m.read(at, 0, page * 16384, 4096) - at
            })
            .collect();
        assert_eq!(times[0], times[1]);
        assert_eq!(times[2], times[0] + 20 * US, "the third page of each three: {times:?}");
        assert_eq!(times[3..], times[..3]);
    }

    #[test]
    fn reset_grows_with_the_host_data_and_pays_the_seal_of_an_open_written_zone() {
        let mib = 1 << 20;
        let mut m = model();
        // Each reset submitted long after the one before, so none waits for the dispatcher.
        let at = |i: u64| i * 100_000 * US;
        // A zone never opened: the dispatch only.
        assert_eq!(m.reset(at(0), 5), US);
        m.assume_written(5, 0, true);
        assert_eq!(m.reset(at(1), 5) - at(1), US + 1_500 * US, "an opened empty zone");
        m.assume_written(5, mib / 2, true);
        assert_eq!(m.reset(at(2), 5) - at(2), US + 1_500 * US + 5_000 * US + 1_000 * US, "half the data and the seal");
        m.assume_written(5, mib, false);
        assert_eq!(m.reset(at(3), 5) - at(3), US + 1_500 * US + 10_000 * US, "a full zone is sealed already");
        m.assume_written(5, mib / 2, true);
        let finished = m.finish(at(4), 5);
        m.check_invariants();
        assert_eq!(m.reset(finished, 5) - finished, US + 1_500 * US + 5_000 * US, "after a finish: the host's data, not the padding");
    }

    #[test]
    fn finish_pads_the_rest_of_the_zone_at_the_flash_bandwidth() {
        let mut m = model();
        assert_eq!(m.finish(0, 6), US + 12 * US, "an empty zone: a fixed cost");
        m.assume_written(7, 4096, true);
        let done = m.finish(0, 7);
        // 1 MiB = 16 stripes of 4 pages; each die programs 16 pages of 500 µs after the seal.
        let pad = 16 * 500 * US;
        assert!(done >= US + 1_000 * US + pad && done < US + 1_000 * US + pad + 100 * US, "{done}");
    }

    #[test]
    fn rewrites_of_a_conventional_zone_drain_like_any_other_data() {
        let g = Geometry { conventional_zone_count: 2, ..geometry() };
        let mut m = TimingModel::new(flash(), &g).unwrap();
        assert_eq!(m.write(0, 1, 0, 4096), 8 * US, "a conventional zone is never opened");
        let mut t = 0;
        // 8 MiB of 4 KiB rewrites of the same 64 KiB: 64 × the buffer, never stuck.
        for i in 0..2048u64 {
            t = m.write(t, 1, (i % 16) * 4096, 4096);
            m.check_invariants();
        }
        // 4 dies × 16 KiB per 500 µs: 8 MiB take 64 ms.
        assert!(t > 60_000 * US, "the flash bandwidth bounds the rewrites: {t}");
    }

    #[test]
    fn a_write_larger_than_the_buffer_waits_for_it_to_empty() {
        let mut m = model();
        let t = m.write(0, 0, 0, 64 * 1024);
        let big = m.write(t, 0, 64 * 1024, 256 * 1024);
        assert!(big > 500 * US, "{big}");
        m.check_invariants();
    }

    #[test]
    fn a_slow_stripe_programs_longer_on_its_dies_and_draws_apart_from_the_jitter() {
        let with = |one_in: u32| {
            let mut f = flash();
            f.controller.jitter_ns = US;
            f.controller.slow_stripe_one_in = one_in;
            f.controller.slow_stripe_ns = 2_000 * US;
            TimingModel::new(f, &geometry()).unwrap()
        };
        let (mut even, mut slow) = (with(0), with(1));
        // One 64 KiB stripe: the writes complete from the buffer at the same times.
        let (mut t_even, mut t_slow) = (0, 0);
        for i in 0..4 {
            t_even = even.write(t_even, 0, i * 16384, 16384);
            t_slow = slow.write(t_slow, 0, i * 16384, 16384);
        }
        assert_eq!(t_even, t_slow, "the jitter is drawn as without slow stripes");
        assert!(slow.drained_ns() > even.drained_ns(), "{} vs {}", slow.drained_ns(), even.drained_ns());
        // A read of another zone on the same dies waits for the longer program.
        let at = t_slow + 100 * US;
        assert!(slow.read(at, 1, 0, 4096) > even.read(at, 1, 0, 4096));
        slow.check_invariants();
    }

    #[test]
    fn a_buffer_freed_over_the_programs_admits_a_queue_beyond_the_drain_evenly() {
        let run = |release: BufferRelease| {
            let mut f = flash();
            f.controller.buffer_release = release;
            let mut m = TimingModel::new(f, &Geometry { conventional_zone_count: 2, ..geometry() }).unwrap();
            // Four writers of 4 KiB, each submitting when its last write completes: 128 MB/s
            // of stripes (64 KiB per 500 µs) against 500 MB/s of commands.
            let mut slots = [0u64; 4];
            let mut latencies = Vec::new();
            for i in 0..4096u64 {
                let k = (0..4).min_by_key(|&k| slots[k]).unwrap();
                let done = m.write(slots[k], 1, (i % 256) * 4096, 4096);
                if i >= 512 {
                    latencies.push(done - slots[k]);
                }
                slots[k] = done;
                m.check_invariants();
            }
            // A finish of a written zone releases its buffered bytes by the same rule.
            m.assume_written(5, 4096, true);
            m.finish(slots[0], 5);
            m.check_invariants();
            latencies.sort_unstable();
            (latencies[latencies.len() / 2], latencies[latencies.len() * 99 / 100], slots.into_iter().max().unwrap())
        };
        let (p50, p99, end) = run(BufferRelease::OverProgram);
        let (p50_at_end, p99_at_end, end_at_end) = run(BufferRelease::AtProgramEnd);
        assert!(p99 < p50 + p50 / 5, "evenly: p50 {p50}, p99 {p99}");
        assert!(p99_at_end > 3 * p50_at_end, "a stripe freed at once: p50 {p50_at_end}, p99 {p99_at_end}");
        assert!(end.abs_diff(end_at_end) < end_at_end / 50, "the drain's rate is the same: {end} vs {end_at_end}");
    }

    #[test]
    fn the_plain_model_is_untouched_without_a_controller() {
        let mut f = flash();
        f.controller = ControllerConfig::NONE;
        let mut m = TimingModel::new(f, &geometry()).unwrap();
        assert!(!m.has_controller());
        assert_eq!(m.write(0, 0, 0, 4096), 4096, "a partial page completes after its transfer");
        assert_eq!(m.append(10 * US, 2, 0, 16384), 10 * US + 16384 + 500 * US, "a full page: transfer and program");
        assert_eq!((m.open(7, 2), m.close(9, 2)), (7, 9), "open and close are free");
    }
}
