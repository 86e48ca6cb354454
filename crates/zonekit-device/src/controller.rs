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
//!   about 0.43 µs per KiB); one write in `late_one_in` completes `late_ns` later (the 980
//!   PRO's: a tail apart from the body, as many at QD16 as at QD1). On the ZN540 (and the
//!   SN540) the link carries one write's bytes at a time (`host_link_serial`): with 128-512
//!   KiB of 16-128 KiB writes in flight its p50 is never below the time the bytes ahead take
//!   over the link, and such a write waits for them (32 KiB appends at QD4: p50 71 µs, a
//!   link without a queue gave 28 µs). The 980 PRO completes such writes sooner than that,
//!   so its transfers overlap.
//! - **Reads** sense a page on its die and cross the die's channel (the plain model), then take
//!   `read_done_ns` (ECC, transfer to the host, completion). One page in `slow_page_one_in`
//!   (drawn per read) takes `slow_page_read_ns` longer to sense: the drive's 4 KiB reads at
//!   QD1 take one of two times, 67-69 µs or 80-82 µs, about a third the longer (TLC's 2-3-2
//!   coding: one page of a wordline's three needs a third read level).
//! - **Zone management** runs beside everything else, one command per zone at a time (resets of
//!   different zones overlap): open, close and the finish of an empty zone cost a fixed time; a reset costs `reset_ns` plus `reset_ns_per_mib` for each MiB the
//!   host wrote (a finished zone resets like an unfinished one with the same host data: the
//!   padding costs nothing), plus `reset_seal_ns` when the zone is open with programmed data
//!   and not full, plus an exponential spread of mean `reset_jitter_ns` when the host wrote
//!   to it (its p99 sits 0.4-2.4 ms above its median); a finish of a written zone costs
//!   `seal_ns`, then programs the rest of the zone's
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
    /// When the host link has carried every write's bytes so far (a serial link's next
    /// transfer starts no sooner).
    link_free_ns: u64,
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
    /// The slow pages' draws, apart from the others for the same reason.
    page_rng: Rng,
    /// The resets' spread, apart from the others for the same reason.
    reset_rng: Rng,
    /// The late completions' draws, the same.
    late_rng: Rng,
}

impl Controller {
    pub(crate) fn new(cfg: ControllerConfig, zone_count: u32, conventional_zones: u32, dies: u32) -> Controller {
        Controller {
            cfg,
            dispatch_free_ns: 0,
            engine_free_ns: 0,
            link_free_ns: 0,
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
            page_rng: Rng::new(cfg.seed).derive(2),
            reset_rng: Rng::new(cfg.seed).derive(3),
            late_rng: Rng::new(cfg.seed).derive(4),
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

    /// The extra sense of the page a read reaches: one in `slow_page_one_in` is slow. Which
    /// of a zone's pages those are is not in the data, so each read draws it: a page at a
    /// fixed place would make a workload's hot blocks fast or slow by where the model happened
    /// to put them (seed 003's trees read their inner nodes from fixed places).
    fn slow_page(&mut self) -> u64 {
        one_in(&mut self.page_rng, self.cfg.slow_page_one_in, self.cfg.slow_page_read_ns)
    }

    /// A write's extra completion time: `late_ns` for one in `late_one_in`.
    fn late(&mut self) -> u64 {
        one_in(&mut self.late_rng, self.cfg.late_one_in, self.cfg.late_ns)
    }

    /// The spread of a reset of a zone the host wrote: an exponential time of mean
    /// `reset_jitter_ns`.
    fn reset_jitter(&mut self) -> u64 {
        exponential(&mut self.reset_rng, self.cfg.reset_jitter_ns)
    }

    fn jitter(&mut self) -> u64 {
        exponential(&mut self.rng, self.cfg.jitter_ns)
    }
}

/// `ns` one time in `n` (never when `n` is 0), drawn from `rng`.
fn one_in(rng: &mut Rng, n: u32, ns: u64) -> u64 {
    if n > 0 && rng.chance(1.0 / n as f64) {
        ns
    } else {
        0
    }
}

/// An exponential time of mean `mean_ns` (none when it is 0), drawn from `rng`.
fn exponential(rng: &mut Rng, mean_ns: u64) -> u64 {
    if mean_ns == 0 {
        0
    } else {
        rng.exponential(mean_ns as f64) as u64
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
        let short = kind == WriteKind::Append && len < cfg.short_append_bytes;
        let (engine_ns, done_ns, after_ns) = match kind {
            WriteKind::Write => (cfg.write_ns, cfg.write_done_ns, 0),
            WriteKind::Append if short => (cfg.append_ns + cfg.short_append_ns, cfg.append_done_ns, cfg.short_append_after_ns),
            WriteKind::Append => (cfg.append_ns, cfg.append_done_ns, 0),
        };
        let handoff = if self.writes_in_flight.is_empty() { 0 } else { cfg.handoff_ns };
        let end = start + engine_ns + handoff + self.jitter();
        self.engine_free_ns = end + after_ns;
        // A write's first `host_overlap_bytes` cross the link while the engine works, so a lone
        // write waits only for the rest; on a serial link a write behind another's transfer
        // waits for it too.
        let link_ns = |bytes: u64| if cfg.host_bytes_per_sec == 0 { 0 } else { (bytes as u128 * 1_000_000_000 / cfg.host_bytes_per_sec as u128) as u64 };
        let transfer_ns = link_ns(len);
        let alone = end + transfer_ns - link_ns(len.min(cfg.host_overlap_bytes));
        let linked = if cfg.host_link_serial { alone.max(self.link_free_ns + transfer_ns) } else { alone };
        self.link_free_ns = self.link_free_ns.max(linked);
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
            z.ready_ns = z.ready_ns.max(linked);
        }
        let done = linked + done_ns + opening + self.late();
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
        // Hoisted out of the loop: the padding of a finish walks every page of a zone.
        let transfer_ns = d.flash.transfer_ns(page);
        let mut in_stripe = p % stripe_pages;
        let mut dies = d.walk(zone, p);
        while p * page < to {
            if p == from / page || in_stripe == 0 {
                slow_ns = self.slow_stripe();
            }
            in_stripe = if in_stripe + 1 == stripe_pages { 0 } else { in_stripe + 1 };
            let (die, channel) = dies.next().expect("the walk is endless");
            let transferred = ready_ns.max(d.channel_free_ns[channel]) + transfer_ns;
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
    pub(crate) fn sense(&mut self, d: &mut Dies, die: usize, t: u64) -> u64 {
        let read_ns = d.flash.read_ns + self.slow_page();
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
                    let seal = if z.programmed_bytes > 0 && !z.full { cfg.reset_seal_ns } else { 0 };
                    let spread = if z.host_bytes > 0 { self.reset_jitter() } else { 0 };
                    cfg.reset_ns + (z.host_bytes as u128 * cfg.reset_ns_per_mib as u128 / (1 << 20)) as u64 + seal + spread
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
        self.dispatch_free_ns.max(self.engine_free_ns).max(self.link_free_ns).max(self.mgmt_done_ns).max(releases)
    }
}

#[cfg(test)]
mod tests;
