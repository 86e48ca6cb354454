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
            short_append_bytes: 8192,
            short_append_ns: US,
            short_append_after_ns: 0,
            handoff_ns: US,
            jitter_ns: 0,
            write_done_ns: 5 * US,
            late_one_in: 0,
            late_ns: 0,
            append_done_ns: 6 * US,
            host_bytes_per_sec: 1_000_000_000,
            host_overlap_bytes: 8192,
            host_link_serial: false,
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
            reset_seal_ns: 2_000 * US,
            reset_ns: 1_500 * US,
            reset_ns_per_mib: 10_000 * US,
            reset_jitter_ns: 0,
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
fn a_write_behind_another_on_a_serial_link_waits_for_its_transfer() {
    // Two 32 KiB writes to two open zones submitted together at 100 µs: the first is
    // dispatched at 100-101, in the engine 101-103, and its 8 KiB overlap crosses the 1 GB/s
    // link during it, the rest by 103 + 24.576 µs, done 5 µs later (32.576 µs). The second's
    // engine runs 103-106 (with the hand-off). On a serial link its transfer starts when the
    // first's ends, 127.576 µs, and takes 32.768 µs: done at 165.344 µs. Overlapping, it
    // would cross by 106 + 24.576 and complete at 135.576 µs.
    let at = |serial: bool| {
        let mut f = flash();
        f.controller.host_link_serial = serial;
        let mut m = TimingModel::new(f, &geometry()).unwrap();
        m.open(0, 1);
        m.open(0, 2);
        let t = 100 * US;
        (m.write(t, 1, 0, 32768) - t, m.write(t, 2, 0, 32768) - t)
    };
    assert_eq!(at(true), (32_576, 65_344));
    assert_eq!(at(false), (32_576, 35_576));
}

#[test]
fn an_append_costs_its_own_engine_and_completion_times_and_a_short_one_more() {
    let mut m = model();
    m.write(0, 1, 0, 4096);
    let write = m.write(100 * US, 1, 4096, 4096) - 100 * US;
    let write_8k = m.write(200 * US, 1, 8192, 8192) - 200 * US;
    m.append(0, 2, 0, 4096);
    let append = m.append(300 * US, 2, 4096, 4096) - 300 * US;
    let append_8k = m.append(400 * US, 2, 8192, 8192) - 400 * US;
    // Both sizes fit in the host overlap, so only the short append's engine time differs.
    assert_eq!((write, write_8k, append, append_8k), (8 * US, 8 * US, 12 * US, 11 * US));
}

#[test]
fn a_short_append_holds_the_engine_after_its_completion_and_only_the_next_command_waits() {
    // Two appends submitted together, the first of `first` bytes: (first's latency, second's).
    let pair = |after_ns: u64, first: u64| {
        let mut f = flash();
        f.controller.short_append_after_ns = after_ns;
        let mut m = TimingModel::new(f, &geometry()).unwrap();
        m.append(0, 2, 0, 4096);
        let a = m.append(100 * US, 2, 4096, first) - 100 * US;
        let b = m.append(100 * US, 2, 4096 + first, 8192) - 100 * US;
        (a, b)
    };
    let (alone, behind) = pair(0, 4096);
    // The short append's own completion does not move; the command behind it starts later.
    assert_eq!(pair(3 * US, 4096), (alone, behind + 3 * US));
    // An 8 KiB append leaves nothing behind in the engine.
    assert_eq!(pair(3 * US, 8192), pair(0, 8192));
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
    let times: Vec<u64> = (0..3000)
        .map(|i| {
            let at = (i + 1) * 10_000 * US;
            m.read(at, 0, (i % 4) * 16384, 4096) - at
        })
        .collect();
    let fast = *times.iter().min().unwrap();
    assert!(times.iter().all(|&t| t == fast || t == fast + 20 * US), "two sense times");
    let slow = times.iter().filter(|&&t| t > fast).count();
    assert!((900..1100).contains(&slow), "about one read in three: {slow} of 3000");
    let same_page: Vec<u64> = times.iter().step_by(4).copied().collect();
    assert!(same_page.contains(&fast) && same_page.iter().any(|&t| t > fast), "drawn per read, not fixed to the page");
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
    assert_eq!(m.reset(at(2), 5) - at(2), US + 1_500 * US + 5_000 * US + 2_000 * US, "half the data and the reset's seal");
    m.assume_written(5, mib, false);
    assert_eq!(m.reset(at(3), 5) - at(3), US + 1_500 * US + 10_000 * US, "a full zone is sealed already");
    m.assume_written(5, mib / 2, true);
    let finished = m.finish(at(4), 5);
    m.check_invariants();
    assert_eq!(m.reset(finished, 5) - finished, US + 1_500 * US + 5_000 * US, "after a finish: the host's data, not the padding");
}

#[test]
fn a_reset_of_a_written_zone_spreads_and_an_empty_one_does_not() {
    let mut f = flash();
    f.controller.reset_jitter_ns = 400 * US;
    let mut m = TimingModel::new(f, &geometry()).unwrap();
    let mib = 1 << 20;
    let at = |i: u64| i * 100_000 * US;
    let base = US + 1_500 * US + 10_000 * US;
    let mut extra_ns = Vec::new();
    for i in 0..400 {
        m.assume_written(5, mib, false);
        extra_ns.push(m.reset(at(2 * i), 5) - at(2 * i) - base);
        m.assume_written(5, 0, true);
        assert_eq!(m.reset(at(2 * i + 1), 5) - at(2 * i + 1), US + 1_500 * US, "an opened empty zone: no spread");
    }
    let mean_ns = extra_ns.iter().sum::<u64>() as f64 / extra_ns.len() as f64;
    assert!((300e3..500e3).contains(&mean_ns), "the spread's mean: {mean_ns} ns");
    assert!(extra_ns.iter().filter(|&&e| e > 4 * 400 * US).count() >= 1, "an exponential has a tail: {extra_ns:?}");
}

#[test]
fn a_late_completion_delays_its_own_write_and_nothing_behind_it() {
    let mut f = flash();
    f.controller.late_one_in = 10;
    f.controller.late_ns = 50 * US;
    let mut m = TimingModel::new(f, &geometry()).unwrap();
    // Writes 100 µs apart to a conventional-sized stream of zones: each alone in the device.
    let mut late = 0;
    for i in 0..200u64 {
        let (zone, offset) = ((i / 64) as u32, (i % 64) * 4096);
        let t = i * 100 * US;
        let took = m.write(t, zone, offset, 4096) - t;
        // dispatch 1 + engine 2 + completion 5 (+ the implicit open 3 on a zone's first write).
        let base = if offset == 0 { 11 * US } else { 8 * US };
        assert!(took == base || took == base + 50 * US, "write {i}: {took} ns");
        late += usize::from(took > base);
    }
    assert!((8..=35).contains(&late), "about one in ten late: {late} of 200");
    // Late completions do not hold the engine: back-to-back writes still pass it at its rate.
    let mut m = TimingModel::new(f, &geometry()).unwrap();
    let done: Vec<u64> = (0..8).map(|i| m.write(0, 7, i * 4096, 4096)).collect();
    let engine_bound = done.iter().filter(|&&d| d < 40 * US).count();
    assert!(engine_bound >= 6, "{done:?}");
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
