use super::*;
use crate::preset;
use crate::timing::{ControllerConfig, TimedDevice};
use crate::{MemDevice, StorageMode, ZoneId, ZonedDevice};

fn zn540() -> preset::Preset {
    preset::find("zn540").unwrap()
}

fn job(rw: Rw) -> Job {
    Job { rw, ..Job::default() }
}

fn spec(job: Job) -> BenchSpec {
    BenchSpec { job, ops: 4_000, ramp_ops: 400, ..BenchSpec::default() }
}

fn run_on(p: &preset::Preset, s: &BenchSpec) -> BenchReport {
    run(&p.geometry, &p.flash, s).unwrap()
}

fn refused(s: &BenchSpec) -> BenchError {
    let p = zn540();
    let e = run(&p.geometry, &p.flash, s).unwrap_err();
    assert_eq!(check(&p.geometry, s).unwrap_err(), e, "run refuses what check refuses");
    e
}

#[test]
fn a_run_is_a_function_of_its_spec() {
    let p = zn540();
    let s = BenchSpec { background: Some(Job { rw: Rw::Write, bs_bytes: 128 << 10, rate_bytes_per_sec: 500 << 20, ..Job::default() }), ..spec(Job { qd: 8, ..job(Rw::RandRead) }) };
    assert_eq!(run_on(&p, &s), run_on(&p, &s));
    let other_seed = BenchSpec { seed: 2, ..s.clone() };
    assert_ne!(run_on(&p, &s).job, run_on(&p, &other_seed).job, "the seed picks the offsets");
}

#[test]
fn bad_job_specs_are_refused_naming_the_field() {
    let field = |s: BenchSpec| refused(&s).field;
    assert_eq!(field(spec(Job { qd: 0, ..job(Rw::Append) })), "qd");
    assert_eq!(field(spec(Job { qd: QD_MAX + 1, ..job(Rw::Append) })), "qd");
    assert_eq!(field(spec(Job { qd: 2, ..job(Rw::Write) })), "qd", "writes go one at a time per zone");
    assert_eq!(field(spec(Job { bs_bytes: 4097, ..job(Rw::Write) })), "bs");
    assert_eq!(field(spec(Job { bs_bytes: 0, ..job(Rw::Read) })), "bs");
    assert_eq!(field(spec(Job { bs_bytes: 1 << 30, ..job(Rw::Append) })), "bs");
    assert_eq!(field(spec(Job { zones: 15, ..job(Rw::Write) })), "zones", "the zn540 keeps 14 zones open");
    assert_eq!(field(spec(Job { zones: 0, ..job(Rw::RandRead) })), "zones");
    let capacity = zn540().geometry.zone_capacity_bytes();
    assert_eq!(field(spec(Job { fill_bytes: capacity + 4096, ..job(Rw::Reset) })), "fill");
    assert_eq!(field(spec(Job { fill_bytes: 100, ..job(Rw::Finish) })), "fill");
    assert_eq!(field(spec(Job { fill_bytes: 4096, ..job(Rw::Write) })), "fill");
    assert_eq!(field(spec(Job { qd: 2, ..job(Rw::Reset) })), "qd");
    assert_eq!(field(spec(Job { every_ops: 10, ..job(Rw::Write) })), "every");
    assert_eq!(field(spec(Job { finished: true, ..job(Rw::Finish) })), "finished");
    assert_eq!(field(BenchSpec { ops: 0, ..spec(job(Rw::Write)) }), "ops");
    let two_writers = BenchSpec { background: Some(Job { zones: 8, ..job(Rw::Append) }), ..spec(Job { zones: 8, ..job(Rw::Write) }) };
    assert_eq!(field(two_writers), "bg-zones", "16 zones written at once between the two jobs");
    let e = refused(&spec(Job { qd: 0, ..job(Rw::Append) }));
    assert!(e.to_string().starts_with("qd: "), "{e}");
    let sharing = Job { zones: 14, cpus: 10, ..job(Rw::RandRead) };
    assert_eq!(field(spec(sharing.clone())), "cpu-slice-ns", "streams taking turns need a slice");
    assert_eq!(field(spec(Job { cpus: 0, cpu_slice_ns: 1_000, ..sharing.clone() })), "cpu-slice-ns", "a slice without sharing");
    let paced = Job { rw: Rw::RandRead, every_ops: 400, zones: 2, cpus: 1, cpu_slice_ns: 1_000, ..Job::default() };
    assert_eq!(field(BenchSpec { background: Some(paced), ..spec(job(Rw::Write)) }), "bg-cpus");
}

#[test]
fn streams_sharing_cpus_take_turns_and_wait_a_slice() {
    // The ZN540's 14-zone fio runs: 14 polling threads on 10 CPUs.
    let p = zn540();
    let slice_ns = 2_000_000;
    let long = |j: Job| BenchSpec { ops: 100_000, ramp_ops: 5_000, ..spec(j) };
    let shared = |j: Job| long(Job { cpus: 10, cpu_slice_ns: slice_ns, ..j });
    let reads = Job { zones: 14, think_ns: 390, ..job(Rw::RandRead) };
    let (alone, turns) = (run_on(&p, &long(reads.clone())).job, run_on(&p, &shared(reads.clone())).job);
    let ten = run_on(&p, &long(Job { zones: 10, ..reads.clone() })).job;
    let share = turns.iops / ten.iops;
    assert!((0.97..1.03).contains(&share), "14 threads on 10 CPUs read as 10 threads do: {share:.3}");
    assert!(turns.iops < alone.iops * 0.8, "and well below 14 threads on 14 CPUs: {turns:?} {alone:?}");
    let p50 = turns.lat_ns_p50 as f64 / ten.lat_ns_p50 as f64;
    assert!((0.97..1.03).contains(&p50), "most reads complete while their thread runs: {turns:?} {ten:?}");
    assert!(turns.lat_ns_p999 > slice_ns * 9 / 10 && turns.lat_ns_p999 < slice_ns * 11 / 10, "one read in a slice waits the slice out: {turns:?}");
    // Writes: the engine, not the host, limits 14 zones at QD1; with 10 threads running, fewer
    // wait in it.
    let writes = Job { zones: 14, think_ns: 390, ..job(Rw::Write) };
    let (alone, turns) = (run_on(&p, &long(writes.clone())).job, run_on(&p, &shared(writes)).job);
    assert!((turns.iops / alone.iops - 1.0).abs() < 0.02, "the engine's rate either way: {alone:?} {turns:?}");
    let ratio = turns.lat_ns_p50 as f64 / alone.lat_ns_p50 as f64;
    assert!((0.66..0.78).contains(&ratio), "10 writes in the engine, not 14 (Little's law): {ratio:.3}");
    assert_eq!(run_on(&p, &long(Job { cpus: 14, ..job(Rw::RandRead) })), run_on(&p, &long(job(Rw::RandRead))), "a CPU each is no sharing");
}

#[test]
fn the_zn540_shows_the_drives_headline_figures() {
    let p = zn540();
    let think = 390;
    let w = run_on(&p, &spec(Job { think_ns: think, ..job(Rw::Write) })).job;
    assert!((10_500..12_500).contains(&w.lat_ns_p50), "4 KiB write at QD1: {w:?}");
    let a = run_on(&p, &spec(Job { think_ns: think, ..job(Rw::Append) })).job;
    assert!(a.lat_ns_p50 > w.lat_ns_p50 + 2_000, "an append costs more than a write");
    let a4 = run_on(&p, &spec(Job { qd: 16, think_ns: think, ..job(Rw::Append) })).job;
    assert!((125e3..140e3).contains(&a4.iops), "appends to one zone saturate near 132 KIOPS: {a4:?}");
    // After the buffer's 8 MiB filled: the warm-up covers it.
    let a16 = run_on(&p, &BenchSpec { ramp_ops: 2_000, ..spec(Job { qd: 16, bs_bytes: 16384, think_ns: think, ..job(Rw::Append) }) }).job;
    assert!((1.15e9..1.25e9).contains(&a16.bytes_per_sec), "16 KiB appends run at the flash bandwidth: {a16:?}");
    let r = run_on(&p, &spec(Job { think_ns: think, ..job(Rw::RandRead) })).job;
    assert!((65_000..73_000).contains(&r.lat_ns_p50), "4 KiB random read at QD1: {r:?}");
    let r256 = run_on(&p, &BenchSpec { ops: 40_000, ..spec(Job { qd: 256, think_ns: think, ..job(Rw::RandRead) }) }).job;
    assert!((400e3..470e3).contains(&r256.iops), "reads saturate the dies near 437 KIOPS: {r256:?}");
    let capacity = p.geometry.zone_capacity_bytes();
    let reset = |fill: u64| run_on(&p, &BenchSpec { ops: 4, ramp_ops: 0, ..spec(Job { fill_bytes: fill, ..job(Rw::Reset) }) }).job.lat_ns_p50;
    let (empty, half, full) = (reset(0), reset(capacity / 2 / 4096 * 4096), reset(capacity));
    assert!(empty < half && half < full, "reset grows with the fill: {empty} {half} {full}");
    assert!((1_400_000..1_800_000).contains(&empty) && (14_500_000..16_500_000).contains(&full), "{empty} {full}");
}

#[test]
fn writes_over_more_zones_saturate_the_write_engine_without_collapsing() {
    let p = zn540();
    let kiops = |zones: u32| run_on(&p, &spec(Job { zones, think_ns: 390, ..job(Rw::Write) })).job.iops / 1e3;
    let (one, two, eight, fourteen) = (kiops(1), kiops(2), kiops(8), kiops(14));
    assert!(one < two && two < eight, "{one} {two} {eight}");
    assert!((fourteen - eight).abs() / eight < 0.05, "flat from 8 to 14 zones: {eight} {fourteen}");
}

#[test]
fn reads_beside_writes_are_slower_than_alone() {
    let p = zn540();
    let alone = run_on(&p, &spec(job(Rw::RandRead))).job;
    let writes = Job { bs_bytes: 128 << 10, rate_bytes_per_sec: 500 << 20, ..job(Rw::Write) };
    let beside = run_on(&p, &BenchSpec { background: Some(writes), ..spec(job(Rw::RandRead)) });
    let bg = beside.background.unwrap();
    assert!(beside.job.lat_ns_p99 > alone.lat_ns_p99 * 3, "the dies' programs delay reads: {:?} vs {alone:?}", beside.job);
    assert!((bg.bytes_per_sec - 500.0 * (1 << 20) as f64).abs() < 0.05 * bg.bytes_per_sec, "the writes keep their rate: {bg:?}");
}

#[test]
fn a_paced_background_job_issues_once_per_measured_commands() {
    let p = zn540();
    let resets = Job { every_ops: 400, ..job(Rw::Reset) };
    let r = run_on(&p, &BenchSpec { background: Some(resets), ..spec(job(Rw::RandRead)) });
    let bg = r.background.unwrap();
    assert_eq!(bg.ops, 4_000 / 400, "one reset every 400 measured reads");
    assert!((14_000_000..17_000_000).contains(&bg.lat_ns_p50), "full zones reset in about 15.5 ms: {bg:?}");
}

#[test]
fn the_bench_and_a_timed_device_charge_the_same_writes() {
    // QD1 writes through the emulator and the timing wrapper, against the bench driving the
    // model directly: the same latencies.
    let p = zn540();
    let mem = MemDevice::new(p.geometry, p.behavior, StorageMode::MetadataOnly).unwrap();
    let mut dev = TimedDevice::new(mem, p.flash, 1).unwrap();
    let block = vec![0u8; 4096];
    let mut latencies = Vec::new();
    for _ in 0..1000 {
        let before = dev.host_now_ns().max(dev.last_completion().1);
        let wp = dev.zone(ZoneId(0)).unwrap().write_pointer;
        dev.write(wp, &block).unwrap();
        latencies.push(dev.last_completion().1 - before);
    }
    latencies.sort_unstable();
    let bench = run_on(&p, &BenchSpec { ops: 1000, ramp_ops: 0, ..spec(job(Rw::Write)) }).job;
    assert_eq!(latencies[499], bench.lat_ns_p50);
    assert_eq!(latencies.iter().sum::<u64>() as f64 / 1000.0, bench.lat_ns_mean);
}

#[test]
fn every_preset_runs_every_kind_of_job() {
    for p in preset::PRESETS {
        for rw in Rw::ALL {
            let fill = if matches!(rw, Rw::Reset | Rw::Finish | Rw::Close) { p.geometry.block_size_bytes as u64 } else { 0 };
            let bs = (p.geometry.block_size_bytes as u64).max(4096);
            let r = run_on(&p, &BenchSpec { ops: 50, ramp_ops: 5, ..spec(Job { bs_bytes: bs, fill_bytes: fill, ..job(rw) }) });
            assert_eq!(r.job.ops, 50, "{} {}", p.name, rw.name());
            assert!(r.job.lat_ns_mean > 0.0 || !rw.is_io(), "{} {}", p.name, rw.name());
        }
    }
}

#[test]
fn a_pause_past_a_second_is_refused_by_its_flag() {
    let g = zn540().geometry;
    let long = BenchSpec { job: Job { think_ns: THINK_MAX_NS + 1, ..Job::default() }, ..BenchSpec::default() };
    assert_eq!(check(&g, &long).expect_err("refused").field, "think-ns");
    let longest = BenchSpec { job: Job { think_ns: THINK_MAX_NS, ..Job::default() }, ..BenchSpec::default() };
    assert_eq!(check(&g, &longest), Ok(()));
}

/// The zn540 without its slow stripes: every stripe programs in the drain's mean time.
fn zn540_without_slow_stripes() -> preset::Preset {
    let mut p = zn540();
    let c = p.flash.controller;
    p.flash.program_ns += c.slow_stripe_ns / c.slow_stripe_one_in as u64;
    p.flash.controller.slow_stripe_one_in = 0;
    p
}

#[test]
fn a_saturated_append_job_has_the_drives_long_tail_from_its_slow_stripes() {
    // 64 KiB appends to one zone at QD64: 4 MiB queued behind a full buffer. The drive: mean
    // 3.41 ms, p50 3.29 ms, p99 5.87 ms; without slow stripes every append waits the same.
    let s = BenchSpec { ops: 20_000, ramp_ops: 2_000, ..spec(Job { bs_bytes: 64 << 10, qd: 64, ..job(Rw::Append) }) };
    let slow = run_on(&zn540(), &s).job;
    let even = run_on(&zn540_without_slow_stripes(), &s).job;
    assert!(slow.lat_ns_p99 as f64 > slow.lat_ns_mean + 1e6, "p99 {} over mean {}", slow.lat_ns_p99, slow.lat_ns_mean);
    assert!((slow.lat_ns_p50 as f64 / slow.lat_ns_mean - 1.0).abs() < 0.1, "p50 {} near the mean {}", slow.lat_ns_p50, slow.lat_ns_mean);
    assert!((even.lat_ns_p99 as f64) < even.lat_ns_mean + 0.1e6, "no tail without them: {even:?}");
    assert!((slow.bytes_per_sec / even.bytes_per_sec - 1.0).abs() < 0.03, "the drain keeps its bandwidth: {slow:?} {even:?}");
}

#[test]
fn slow_stripes_leave_writes_that_never_fill_the_buffer_alone() {
    // 4 KiB writes at QD1 run at a third of the drain's bandwidth: the buffer absorbs every
    // slow stripe, and the slow stripes draw apart from the engine's jitter.
    let s = spec(job(Rw::Write));
    assert_eq!(run_on(&zn540(), &s).job, run_on(&zn540_without_slow_stripes(), &s).job);
}

#[test]
fn a_timing_fingerprint_names_the_timing_and_nothing_else() {
    let fitted = preset::find("zn540").unwrap().flash;
    let assumed = preset::ZN540_ASSUMED_FLASH;
    assert_eq!(timing_fingerprint(&fitted), timing_fingerprint(&fitted), "a function of the model");
    assert_eq!(timing_fingerprint(&fitted).len(), 16);
    assert_ne!(timing_fingerprint(&fitted), timing_fingerprint(&assumed));
    // Any figure the trees' time depends on moves it: a read, a program, a reset's cost.
    let slower_reads = FlashConfig { read_ns: fitted.read_ns + 1000, ..fitted };
    let slower_programs = FlashConfig { program_ns: fitted.program_ns + 1000, ..fitted };
    let slower_resets = FlashConfig { controller: ControllerConfig { reset_ns: fitted.controller.reset_ns + 1000, ..fitted.controller }, ..fitted };
    let slower_erases = FlashConfig { erase_ns: assumed.erase_ns + 100_000, ..assumed };
    for (other, base) in [(slower_reads, fitted), (slower_programs, fitted), (slower_resets, fitted), (slower_erases, assumed)] {
        assert_ne!(timing_fingerprint(&other), timing_fingerprint(&base), "{other:?}");
    }
    // A figure the model does not use leaves it: behind the controller, a reset costs the
    // controller's figures, not the flash's erase.
    assert_eq!(timing_fingerprint(&FlashConfig { erase_ns: fitted.erase_ns + 100_000, ..fitted }), timing_fingerprint(&fitted));
}
