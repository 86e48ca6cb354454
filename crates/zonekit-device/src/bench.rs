//! A device benchmark in virtual time, in fio's vocabulary: jobs of one kind of command (write,
//! append, read, randread, reset, finish, open, close), a block size, a queue depth kept full
//! (a closed loop), a number of zones driven at once, the fill a zone holds before a reset,
//! finish or close, and an optional background job beside the measured one. It drives a
//! [`TimingModel`] directly (no emulator: the benchmark keeps its own write pointers), so any
//! preset runs at millions of commands a second of wall time, and a run is a pure function of
//! its spec.
//!
//! ```
//! use zonekit_device::bench::{run, BenchSpec, Job, Rw};
//! use zonekit_device::preset;
//!
//! let p = preset::find("zn540").unwrap();
//! let spec = BenchSpec { job: Job { rw: Rw::Write, bs_bytes: 4096, ..Job::default() }, ops: 2000, ..BenchSpec::default() };
//! let report = run(&p.geometry, &p.flash, &spec).unwrap();
//! assert!(report.job.lat_ns_p50 > 5_000 && report.job.lat_ns_p50 < 20_000);
//! ```

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::Serialize;
use zonekit_base::Rng;

use crate::timing::{FlashConfig, TimingModel};
use crate::Geometry;

/// The largest queue depth a job may ask for (an NVMe queue's 65,536 entries).
pub const QD_MAX: u32 = 65_536;
/// The largest command a job may issue.
pub const BS_MAX_BYTES: u64 = 8 << 20;
/// The most commands one run may measure.
pub const OPS_MAX: u64 = 100_000_000;
/// The longest pause between a stream's commands, a second: `OPS_MAX` such pauses (1e17 ns)
/// still fit the u64 nanosecond clock with room to spare.
pub const THINK_MAX_NS: u64 = 1_000_000_000;

/// The kind of command a job issues.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    Write,
    Append,
    Read,
    RandRead,
    Reset,
    Finish,
    Open,
    Close,
}

impl Rw {
    pub const ALL: [Rw; 8] = [Rw::Write, Rw::Append, Rw::Read, Rw::RandRead, Rw::Reset, Rw::Finish, Rw::Open, Rw::Close];

    pub fn name(self) -> &'static str {
        match self {
            Rw::Write => "write",
            Rw::Append => "append",
            Rw::Read => "read",
            Rw::RandRead => "randread",
            Rw::Reset => "reset",
            Rw::Finish => "finish",
            Rw::Open => "open",
            Rw::Close => "close",
        }
    }

    pub fn parse(name: &str) -> Option<Rw> {
        Rw::ALL.into_iter().find(|r| r.name() == name)
    }

    /// Data commands (the rest are zone management).
    pub fn is_io(self) -> bool {
        matches!(self, Rw::Write | Rw::Append | Rw::Read | Rw::RandRead)
    }

    fn writes(self) -> bool {
        matches!(self, Rw::Write | Rw::Append)
    }
}

/// One job: `zones` streams, each keeping `qd` commands in flight.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Job {
    pub rw: Rw,
    /// Bytes per command (data commands only).
    pub bs_bytes: u64,
    /// Commands each stream keeps in flight.
    pub qd: u32,
    /// Streams, each in its own zones (written, or read, at once).
    pub zones: u32,
    /// Bytes a zone holds before a reset, finish or close (written long before, the zone
    /// explicitly opened, as the characterisation's harness prepared it).
    pub fill_bytes: u64,
    /// Reset only: the zone is finished (padded to its capacity) after its fill, before the
    /// reset.
    pub finished: bool,
    /// Bytes per second each stream may issue (0: as fast as completions allow).
    pub rate_bytes_per_sec: u64,
    /// Background job only: one command each time the measured job completes this many
    /// (0: a closed loop like the measured job).
    pub every_ops: u64,
    /// Host time between a completion and the next submission in its slot.
    pub think_ns: u64,
    /// CPUs the job's streams (one polling host thread each) share (0: one each). With fewer
    /// CPUs than streams, the host's scheduler runs them in turn, `cpu_slice_ns` at a time:
    /// a stream switched out submits nothing, and sees its completions only when it runs
    /// again, so their latency holds the wait, as fio measures it. The ZN540's 14-zone runs
    /// had 14 SPDK threads on 10 CPUs (`docs/results/devices-data.md`).
    pub cpus: u32,
    pub cpu_slice_ns: u64,
}

impl Default for Job {
    fn default() -> Job {
        Job { rw: Rw::Write, bs_bytes: 4096, qd: 1, zones: 1, fill_bytes: 0, finished: false, rate_bytes_per_sec: 0, every_ops: 0, think_ns: 0, cpus: 0, cpu_slice_ns: 0 }
    }
}

impl Job {
    /// Whether the job's streams take turns on fewer CPUs than they are.
    fn shares_cpus(&self) -> bool {
        self.cpus > 0 && self.cpus < self.zones
    }

    /// The first time at or after `t` that the stream of rank `rank` (0 to `zones` - 1) runs
    /// on a CPU. Round robin: in each slice the streams switched out are a window of
    /// `zones - cpus` ranks, moved on by its width each slice, so each stream runs
    /// `cpus / zones` of the time and waits one slice (or a few, with more streams out than
    /// in) each time it is switched out.
    fn on_cpu_at(&self, rank: u32, t: u64) -> u64 {
        if !self.shares_cpus() {
            return t;
        }
        let n = self.zones as u64;
        let out_width = n - self.cpus as u64;
        let switched_out = |slice: u64| (rank as u64 + n - (slice % n) * out_width % n) % n < out_width;
        let mut slice = t / self.cpu_slice_ns;
        if !switched_out(slice) {
            return t;
        }
        while switched_out(slice) {
            slice += 1;
        }
        slice * self.cpu_slice_ns
    }
}

/// A run: a measured job, maybe a background job beside it, how many of the measured job's
/// completions to count after a warm-up, and the seed of the random offsets.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchSpec {
    pub job: Job,
    pub background: Option<Job>,
    pub ops: u64,
    pub ramp_ops: u64,
    /// Stop once this much virtual time has passed, if sooner (0: no limit), as fio's runtime.
    pub time_limit_ns: u64,
    pub seed: u64,
}

impl Default for BenchSpec {
    fn default() -> BenchSpec {
        BenchSpec { job: Job::default(), background: None, ops: 20_000, ramp_ops: 0, time_limit_ns: 0, seed: 1 }
    }
}

/// A job spec the device cannot run, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct BenchError {
    /// The field, by its command-line flag's name (`qd`, `bs`, `zones`, `fill`, ...), with
    /// `bg-` before a background job's.
    pub field: String,
    pub reason: String,
}

/// What one job measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct JobStats {
    pub ops: u64,
    pub bytes: u64,
    pub lat_ns_mean: f64,
    pub lat_ns_p50: u64,
    pub lat_ns_p99: u64,
    pub lat_ns_p999: u64,
    pub lat_ns_max: u64,
    pub iops: f64,
    pub bytes_per_sec: f64,
}

/// What a run measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BenchReport {
    pub job: JobStats,
    pub background: Option<JobStats>,
    /// Virtual time of the measured window.
    pub elapsed_ns: u64,
    /// Every command charged to the model, preparation and background included.
    pub device_commands: u64,
}

fn refuse<T>(prefix: &str, field: &str, reason: String) -> Result<T, BenchError> {
    Err(BenchError { field: format!("{prefix}{field}"), reason })
}

fn check_job(job: &Job, prefix: &str, g: &Geometry, background: bool) -> Result<(), BenchError> {
    let block = g.block_size_bytes as u64;
    let capacity = g.zone_capacity_bytes();
    if job.qd == 0 || job.qd > QD_MAX {
        return refuse(prefix, "qd", format!("{} commands in flight; a queue holds 1 to {QD_MAX}", job.qd));
    }
    if job.zones == 0 {
        return refuse(prefix, "zones", "a job needs at least one zone".into());
    }
    if job.think_ns > THINK_MAX_NS {
        return refuse(prefix, "think-ns", format!("{} ns between commands; at most {THINK_MAX_NS} (a second)", job.think_ns));
    }
    if job.rw.is_io() {
        if job.bs_bytes == 0 || job.bs_bytes % block != 0 {
            return refuse(prefix, "bs", format!("{} bytes is not a whole number of {block}-byte blocks", job.bs_bytes));
        }
        if job.bs_bytes > BS_MAX_BYTES.min(capacity) {
            return refuse(prefix, "bs", format!("{} bytes is more than a command may carry ({} bytes)", job.bs_bytes, BS_MAX_BYTES.min(capacity)));
        }
        if job.rw == Rw::Write && job.qd > 1 {
            return refuse(prefix, "qd", "writes go to the write pointer, one in flight per zone (append allows a deeper queue)".into());
        }
    } else {
        if job.qd > 1 || job.zones > 1 {
            let field = if job.qd > 1 { "qd" } else { "zones" };
            return refuse(prefix, field, format!("zone management ({}) runs one command at a time on one zone", job.rw.name()));
        }
        if job.rate_bytes_per_sec > 0 {
            return refuse(prefix, "rate", "a byte rate applies to data commands only".into());
        }
    }
    if job.fill_bytes > capacity || job.fill_bytes % block != 0 {
        return refuse(prefix, "fill", format!("{} bytes is not a whole number of blocks within a zone's {capacity}-byte capacity", job.fill_bytes));
    }
    if job.fill_bytes > 0 && !matches!(job.rw, Rw::Reset | Rw::Finish | Rw::Close) {
        return refuse(prefix, "fill", format!("a fill applies to reset, finish and close, not {}", job.rw.name()));
    }
    if job.rw == Rw::Close && job.fill_bytes == capacity {
        return refuse(prefix, "fill", "a zone filled to its capacity is full, not open: nothing to close".into());
    }
    if job.finished && job.rw != Rw::Reset {
        return refuse(prefix, "finished", format!("only a reset follows a finish, not {}", job.rw.name()));
    }
    if job.every_ops > 0 && !background {
        return refuse(prefix, "every", "only a background job is paced by the measured job's completions".into());
    }
    if job.shares_cpus() {
        if job.every_ops > 0 {
            return refuse(prefix, "cpus", "a paced background job issues as the measured job completes, on no CPU of its own".into());
        }
        if job.cpu_slice_ns == 0 || job.cpu_slice_ns > THINK_MAX_NS {
            return refuse(prefix, "cpu-slice-ns", format!("{} ns: streams taking turns on {} CPUs need a slice of 1 ns to {THINK_MAX_NS} ns", job.cpu_slice_ns, job.cpus));
        }
    } else if job.cpu_slice_ns > 0 {
        return refuse(prefix, "cpu-slice-ns", format!("a slice applies only when the {} streams share fewer CPUs (--{prefix}cpus)", job.zones));
    }
    Ok(())
}

/// Refuses a spec the device cannot run, naming the field.
pub fn check(g: &Geometry, spec: &BenchSpec) -> Result<(), BenchError> {
    check_job(&spec.job, "", g, false)?;
    if let Some(bg) = &spec.background {
        check_job(bg, "bg-", g, true)?;
    }
    let writers = |j: &Job| if j.rw.writes() { j.zones } else { 0 };
    let writing = writers(&spec.job) + spec.background.as_ref().map_or(0, writers);
    let open_max = g.open_zones_max.or(g.active_zones_max);
    if let Some(max) = open_max {
        if writing > max {
            let prefix = if writers(&spec.job) > max { "" } else { "bg-" };
            return refuse(prefix, "zones", format!("{writing} zones written at once; the device keeps at most {max} open"));
        }
    }
    let streams = spec.job.zones as u64 + spec.background.as_ref().map_or(0, |b| b.zones as u64);
    let sequential = (g.zone_count - g.conventional_zone_count) as u64;
    if streams * 2 > sequential {
        return refuse("", "zones", format!("{streams} streams need two zones each; the device has {sequential} sequential zones"));
    }
    if spec.ops == 0 || spec.ops > OPS_MAX {
        return refuse("", "ops", format!("{} measured commands; a run measures 1 to {OPS_MAX}", spec.ops));
    }
    if spec.ramp_ops > OPS_MAX {
        return refuse("", "ramp", format!("{} warm-up commands; at most {OPS_MAX}", spec.ramp_ops));
    }
    Ok(())
}

/// One stream of a job: its zones, write pointer and pacing.
struct Stream {
    job: usize,
    /// The stream's place among its job's (its host thread, for CPU sharing).
    rank: u32,
    first_zone: u32,
    zones: u32,
    /// Index of the current zone in the stream's range, and bytes issued into it.
    at: u32,
    offset: u64,
    /// Zones of the range written since the run started (those need a reset before reuse).
    used: Vec<bool>,
    issued_bytes: u64,
    start_ns: u64,
    /// A zone-management stream's next zone is prepared (filled, the device idle since).
    prepared: bool,
}

/// What a slot does when its turn comes.
enum Step {
    /// Submitted at .0, completes at .1.
    Issued(u64, u64),
    /// Not yet: come back at this time.
    Later(u64),
}

struct Sim<'a> {
    model: TimingModel,
    g: &'a Geometry,
    jobs: [Option<&'a Job>; 2],
    streams: Vec<Stream>,
    rng: Rng,
    commands: u64,
    /// Whether a background job runs (the measured zone op then does not wait for quiet).
    busy_beside: bool,
}

impl Sim<'_> {
    /// The next command of stream `si`, whose slot is ready at `now`.
    fn step(&mut self, si: usize, now: u64) -> Step {
        let job = self.jobs[self.streams[si].job].expect("a stream's job exists");
        let capacity = self.g.zone_capacity_bytes();
        let bs = job.bs_bytes;
        if job.rate_bytes_per_sec > 0 {
            let s = &self.streams[si];
            let due = s.start_ns + (s.issued_bytes as u128 * 1_000_000_000 / job.rate_bytes_per_sec as u128) as u64;
            if due > now {
                return Step::Later(due);
            }
        }
        match job.rw {
            Rw::Write | Rw::Append => {
                let s = &mut self.streams[si];
                if s.offset + bs > capacity {
                    // The zone is full: the stream goes on in its next zone, reset first if
                    // it was written earlier in the run (as fio wraps around its range).
                    s.at = (s.at + 1) % s.zones;
                    s.offset = 0;
                    let zone = s.first_zone + s.at;
                    if std::mem::replace(&mut s.used[s.at as usize], true) {
                        self.commands += 1;
                        return Step::Later(self.model.reset(now, zone));
                    }
                }
                let s = &mut self.streams[si];
                s.used[s.at as usize] = true;
                let (zone, offset) = (s.first_zone + s.at, s.offset);
                s.offset += bs;
                s.issued_bytes += bs;
                self.commands += 1;
                let done = if job.rw == Rw::Write { self.model.write(now, zone, offset, bs) } else { self.model.append(now, zone, offset, bs) };
                Step::Issued(now, done)
            }
            Rw::Read | Rw::RandRead => {
                let s = &mut self.streams[si];
                let zone = s.first_zone + s.at;
                let offset = if job.rw == Rw::Read {
                    if s.offset + bs > capacity {
                        0
                    } else {
                        s.offset
                    }
                } else {
                    self.rng.below(capacity / bs) * bs
                };
                s.offset = offset + bs;
                s.issued_bytes += bs;
                self.commands += 1;
                Step::Issued(now, self.model.read(now, zone, offset, bs))
            }
            Rw::Reset | Rw::Finish | Rw::Open | Rw::Close => self.zone_op(si, job, now),
        }
    }

    /// A zone-management command on the stream's next zone, prepared as the characterisation's
    /// harness prepared it: opened explicitly with `fill_bytes` written long before and the
    /// device idle since (a background job's reset takes a full zone at once).
    fn zone_op(&mut self, si: usize, job: &Job, now: u64) -> Step {
        let background = self.streams[si].job == 1;
        let s = &mut self.streams[si];
        if !s.prepared {
            if job.rw == Rw::Close && s.used[s.at as usize] {
                // The harness wrote a closed zone's last block after the close: the zone is
                // full and holds nothing in the buffer.
                let zone = s.first_zone + s.at;
                self.model.assume_written(zone, self.g.zone_capacity_bytes(), false);
            }
            let s = &mut self.streams[si];
            s.at = (s.at + 1) % s.zones;
            let zone = s.first_zone + s.at;
            s.used[s.at as usize] = true;
            match job.rw {
                Rw::Open => self.model.assume_written(zone, 0, false),
                _ if background => self.model.assume_written(zone, self.g.zone_capacity_bytes(), false),
                _ => {
                    self.model.assume_written(zone, job.fill_bytes, true);
                    if job.finished {
                        self.commands += 1;
                        self.model.finish(now, zone);
                    }
                }
            }
            if !background && !self.busy_beside {
                self.streams[si].prepared = true;
                let quiet = self.model.drained_ns();
                if quiet > now {
                    return Step::Later(quiet);
                }
            }
        }
        let s = &mut self.streams[si];
        s.prepared = false;
        let zone = s.first_zone + s.at;
        self.commands += 1;
        let done = match job.rw {
            Rw::Reset => self.model.reset(now, zone),
            Rw::Finish => self.model.finish(now, zone),
            Rw::Open => self.model.open(now, zone),
            Rw::Close => self.model.close(now, zone),
            _ => unreachable!("a data command"),
        };
        Step::Issued(now, done)
    }
}

/// Latencies of one job's measured commands.
#[derive(Default)]
struct Recorder {
    latencies_ns: Vec<u64>,
    bytes: u64,
    first_submit_ns: u64,
    last_done_ns: u64,
}

impl Recorder {
    fn record(&mut self, submit: u64, done: u64, bytes: u64) {
        if self.latencies_ns.is_empty() {
            self.first_submit_ns = submit;
        }
        self.latencies_ns.push(done - submit);
        self.bytes += bytes;
        self.last_done_ns = self.last_done_ns.max(done);
    }

    fn stats(self, window_ns: u64) -> JobStats {
        JobStats::of(self.latencies_ns, self.bytes, window_ns)
    }
}

impl JobStats {
    /// The figures of commands that took `latencies_ns` and moved `bytes` in `window_ns` of
    /// virtual time; percentiles by nearest rank, as the characterisation's harness reports
    /// them. No command: every figure 0.
    pub fn of(mut latencies_ns: Vec<u64>, bytes: u64, window_ns: u64) -> JobStats {
        let n = latencies_ns.len() as u64;
        if n == 0 {
            return JobStats::default();
        }
        latencies_ns.sort_unstable();
        let rank = |q: f64| latencies_ns[((q * n as f64).ceil() as usize).clamp(1, n as usize) - 1];
        let secs = window_ns.max(1) as f64 / 1e9;
        JobStats {
            ops: n,
            bytes,
            lat_ns_mean: latencies_ns.iter().map(|&l| l as f64).sum::<f64>() / n as f64,
            lat_ns_p50: rank(0.5),
            lat_ns_p99: rank(0.99),
            lat_ns_p999: rank(0.999),
            lat_ns_max: *latencies_ns.last().expect("not empty"),
            iops: n as f64 / secs,
            bytes_per_sec: bytes as f64 / secs,
        }
    }
}

/// Runs `spec` on a device of geometry `g` and flash `flash`, in virtual time.
pub fn run(g: &Geometry, flash: &FlashConfig, spec: &BenchSpec) -> Result<BenchReport, BenchError> {
    check(g, spec)?;
    let model = TimingModel::new(*flash, g).map_err(|e| BenchError { field: "preset".into(), reason: e.to_string() })?;
    let jobs = [Some(&spec.job), spec.background.as_ref()];
    // Each stream gets a contiguous range of the sequential zones; reads read the first zone
    // of theirs (every offset of its capacity, written long before).
    let stream_count = spec.job.zones + spec.background.as_ref().map_or(0, |b| b.zones);
    let first = g.conventional_zone_count;
    let per_stream = (g.zone_count - first) / stream_count;
    let mut streams = Vec::new();
    for (j, job) in jobs.iter().enumerate() {
        let Some(job) = job else { continue };
        for rank in 0..job.zones {
            let first_zone = first + streams.len() as u32 * per_stream;
            // A writing stream starts in its range's last zone, so its first fill moves it to
            // the first; a zone-management stream steps before each command the same way.
            let at = if job.rw.is_io() && !job.rw.writes() { 0 } else { per_stream - 1 };
            let offset = if job.rw.writes() { u64::MAX / 2 } else { 0 };
            streams.push(Stream { job: j, rank, first_zone, zones: per_stream, at, offset, used: vec![false; per_stream as usize], issued_bytes: 0, start_ns: 0, prepared: false });
        }
    }
    let mut sim = Sim { model, g, jobs, streams, rng: Rng::new(spec.seed), commands: 0, busy_beside: spec.background.is_some() };
    for s in &sim.streams {
        let job = sim.jobs[s.job].expect("exists");
        if matches!(job.rw, Rw::Read | Rw::RandRead) {
            sim.model.assume_written(s.first_zone, g.zone_capacity_bytes(), false);
        }
    }
    // Slots: every stream's queue-depth worth, except a paced background job's (it issues
    // one command per `every_ops` measured completions instead).
    let mut ready: BinaryHeap<Reverse<(u64, u64, u32)>> = BinaryHeap::new();
    let mut seq = 0u64;
    for (si, s) in sim.streams.iter().enumerate() {
        let job = sim.jobs[s.job].expect("exists");
        if s.job == 1 && job.every_ops > 0 {
            continue;
        }
        for _ in 0..job.qd {
            ready.push(Reverse((0, seq, si as u32)));
            seq += 1;
        }
    }
    let paced: Vec<usize> = (0..sim.streams.len()).filter(|&si| sim.streams[si].job == 1 && spec.background.as_ref().is_some_and(|b| b.every_ops > 0)).collect();
    let mut next_paced = 0usize;
    let mut measured = Recorder::default();
    let mut background = Recorder::default();
    let mut completions = 0u64;
    let total = spec.ramp_ops + spec.ops;
    let mut window_start = None;
    while completions < total {
        let Reverse((t, _, si)) = ready.pop().expect("a slot is always pending");
        if spec.time_limit_ns > 0 && t > spec.time_limit_ns && measured.latencies_ns.len() > 1 {
            break;
        }
        let si = si as usize;
        let (job, rank) = (sim.jobs[sim.streams[si].job].expect("exists"), sim.streams[si].rank);
        // A stream switched out of its CPU submits nothing until it runs again.
        let on_cpu = job.on_cpu_at(rank, t);
        if on_cpu > t {
            ready.push(Reverse((on_cpu, seq, si as u32)));
            seq += 1;
            continue;
        }
        match sim.step(si, t) {
            Step::Later(at) => {
                ready.push(Reverse((at, seq, si as u32)));
                seq += 1;
            }
            Step::Issued(submit, done) => {
                // The host sees a completion once the stream's thread runs.
                let done = job.on_cpu_at(rank, done);
                let bytes = if job.rw.is_io() { job.bs_bytes } else { 0 };
                if sim.streams[si].job == 0 {
                    completions += 1;
                    if completions > spec.ramp_ops {
                        window_start.get_or_insert(submit);
                        measured.record(submit, done, bytes);
                    }
                    let every = spec.background.as_ref().map_or(0, |b| b.every_ops);
                    if every > 0 && completions % every == 0 && !paced.is_empty() {
                        // One background command, queued as the measured one completes.
                        let bi = paced[next_paced % paced.len()];
                        next_paced += 1;
                        let mut at = done;
                        loop {
                            match sim.step(bi, at) {
                                Step::Later(t) => at = t,
                                Step::Issued(s, d) => {
                                    if completions > spec.ramp_ops {
                                        background.record(s, d, 0);
                                    }
                                    break;
                                }
                            }
                        }
                    }
                } else if completions >= spec.ramp_ops {
                    background.record(submit, done, bytes);
                }
                ready.push(Reverse((done + job.think_ns, seq, si as u32)));
                seq += 1;
            }
        }
    }
    let start = window_start.unwrap_or(0);
    let window = measured.last_done_ns.saturating_sub(start);
    let background = spec.background.as_ref().map(|_| background.stats(window));
    Ok(BenchReport { job: measured.stats(window), background, elapsed_ns: window, device_commands: sim.commands })
}

/// A short name for how `flash` times commands: 16 hex digits of what a fixed set of runs
/// gives on it (writes over two zones, appends, random reads beside rate-limited writes, resets
/// of a full and a finished zone, the finish of a half-full one), each command's latency
/// counted. Results keyed on a timing model carry it, so that a row computed under other
/// figures (or other timing code) is never taken for one of this model's. It names behaviour,
/// not representation: a field added with a default that keeps the old timing keeps it.
pub fn timing_fingerprint(flash: &FlashConfig) -> String {
    const MIB: u64 = 1 << 20;
    let g = Geometry {
        block_size_bytes: 4096,
        zone_size_blocks: 2048 * MIB / 4096,
        zone_capacity_blocks: 1077 * MIB / 4096,
        zone_count: 64,
        conventional_zone_count: 0,
        open_zones_max: Some(14),
        active_zones_max: Some(14),
    };
    let io = |rw, bs_bytes, qd, zones| Job { rw, bs_bytes, qd, zones, think_ns: 400, ..Job::default() };
    let zone_op = |rw, fill_bytes, finished| BenchSpec { job: Job { rw, fill_bytes, finished, ..Job::default() }, ops: 8, ramp_ops: 1, ..BenchSpec::default() };
    let spec = |job, background| BenchSpec { job, background, ops: 3000, ramp_ops: 300, seed: 7, ..BenchSpec::default() };
    let probes = [
        spec(io(Rw::Write, 4096, 1, 1), None),
        spec(io(Rw::Write, 65536, 4, 2), None),
        spec(io(Rw::Append, 16384, 32, 1), None),
        spec(io(Rw::RandRead, 4096, 16, 1), Some(Job { rate_bytes_per_sec: 500 * MIB, ..io(Rw::Write, 131072, 1, 1) })),
        zone_op(Rw::Reset, 1077 * MIB, false),
        zone_op(Rw::Reset, 64 * MIB, true),
        zone_op(Rw::Finish, 512 * MIB, false),
    ];
    let mut text = String::new();
    for p in &probes {
        match run(&g, flash, p) {
            Ok(r) => text.push_str(&format!("{:?}|{:?};", r.job, r.background)),
            // A model the probe cannot run is named by what refused it.
            Err(e) => text.push_str(&format!("{e};")),
        }
    }
    zonekit_base::fnv1a_hex(&text)
}

#[cfg(test)]
mod tests;
