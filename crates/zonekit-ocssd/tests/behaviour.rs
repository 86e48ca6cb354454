//! What each thesis FTL does on the access patterns chapter 4 explains its results with:
//! whole-block overwrites, half-block overwrites, log merges by kind, the circular log's
//! sweeps, and the map sizes of §4.3.

use zonekit_ocssd::{CommandCosts, Ftl, FtlConfig, OcGeometry, Ssd, Timing};

const G: OcGeometry = OcGeometry { channels: 2, luns_per_channel: 2, blocks_per_lun: 8, pages_per_block: 8, page_bytes: 8192 };
const BLOCK: u64 = 8 * 8192;

fn ssd(name: &str, params: &[(&str, &str)]) -> Ssd<zonekit_device::MemDevice> {
    let config = FtlConfig { params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), timing: Timing::Synchronous };
    Ssd::memory(name, &config, G, false).unwrap()
}

#[test]
fn map_tables_have_the_thesis_sizes() {
    let thesis = OcGeometry::THESIS;
    let size = |name: &str| Ssd::memory(name, &FtlConfig::default(), thesis, false).unwrap().ftl().map_table_bytes();
    assert_eq!(size("pm-gcl"), 128 * 1024);
    assert_eq!(size("pm-gcc"), 128 * 1024);
    assert_eq!(size("sbm-gcl"), 4 * 1024);
    assert_eq!(size("hsbm-gcl"), 4736);
}

#[test]
fn whole_block_overwrites_cost_no_copies_in_the_greedy_schemes() {
    for name in ["pm-gcl", "sbm-gcl", "hsbm-gcl"] {
        let mut s = ssd(name, &[]);
        let blocks = 12;
        for pass in 0..20 {
            for b in 0..blocks {
                s.write_zeros(b * BLOCK, BLOCK).unwrap_or_else(|e| panic!("{name} pass {pass}: {e}"));
            }
        }
        let r = s.report();
        assert!(r.flash.blocks_erased > 100, "{name}: {} erases", r.flash.blocks_erased);
        assert_eq!(r.map.pages_copied, 0, "{name}");
        assert!((r.waf - 1.0).abs() < 1e-9, "{name}: WAF {}", r.waf);
        s.check_invariants().unwrap();
    }
}

#[test]
fn half_block_overwrites_move_a_superblock_with_its_other_half() {
    let mut s = ssd("sbm-gcl", &[]);
    s.write_zeros(0, BLOCK).unwrap();
    assert_eq!(s.report().map.map_update_bytes, 8);
    // Overwrite the first half: the second half is copied to a fresh block.
    s.write_zeros(0, BLOCK / 2).unwrap();
    let r = s.report();
    assert_eq!((r.map.pages_copied, r.map.map_update_bytes), (4, 16));
    // A write that skips ahead in a fresh block pads the skipped pages.
    s.write_zeros(5 * BLOCK + BLOCK / 2, BLOCK / 2).unwrap();
    assert_eq!(s.report().flash.pages_padded, 4);
    s.check_invariants().unwrap();
}

#[test]
fn with_every_superblock_mapped_sbm_erases_in_place_or_collects_first() {
    for (policy, in_place) in [("erase-in-place", true), ("gc-first", true)] {
        let mut s = ssd("sbm-gcl", &[("no_free", policy)]);
        let capacity = s.logical_bytes();
        s.write_zeros(0, capacity).unwrap();
        s.write_zeros(0, BLOCK / 2).unwrap();
        let r = s.report();
        // Every superblock is mapped and none is garbage, so even gc-first must erase in place.
        assert_eq!(r.map.erase_in_place > 0, in_place, "{policy}");
        assert_eq!(r.map.pages_copied, 4, "{policy}");
        s.check_invariants().unwrap();
    }
    // With garbage about, gc-first collects it and moves instead.
    let mut s = ssd("sbm-gcl", &[("no_free", "gc-first")]);
    let capacity = s.logical_bytes();
    s.write_zeros(0, capacity - BLOCK).unwrap();
    for _ in 0..3 {
        s.write_zeros(0, BLOCK / 2).unwrap();
    }
    let r = s.report();
    assert_eq!(r.map.erase_in_place, 0);
    assert!(r.map.gc_victims >= 1, "{:?}", r.map);
}

#[test]
fn hsbm_merges_by_kind() {
    // In-order halves of each block: the logs switch in.
    let mut s = ssd("hsbm-gcl", &[("logs", "2")]);
    for b in 0..6 {
        s.write_zeros(b * BLOCK, BLOCK / 2).unwrap();
        s.write_zeros(b * BLOCK + BLOCK / 2, BLOCK / 2).unwrap();
    }
    let r = s.report();
    assert!(r.map.switch_merges >= 4 && r.map.full_merges == 0 && r.map.pages_copied == 0, "{:?}", r.map);
    // Second halves first: full merges.
    let mut s = ssd("hsbm-gcl", &[("logs", "2")]);
    for b in 0..6 {
        s.write_zeros(b * BLOCK + BLOCK / 2, BLOCK / 2).unwrap();
        s.write_zeros(b * BLOCK, BLOCK / 2).unwrap();
    }
    let r = s.report();
    assert!(r.map.full_merges >= 4 && r.map.switch_merges == 0, "{:?}", r.map);
    // First halves only, evicted from a full log table: partial merges (BAST's rule).
    let mut s = ssd("hsbm-gcl", &[("logs", "2"), ("merge", "bast")]);
    for b in 0..6 {
        s.write_zeros(b * BLOCK, BLOCK).unwrap();
    }
    for b in 0..6 {
        s.write_zeros(b * BLOCK, BLOCK / 2).unwrap();
    }
    let r = s.report();
    assert!(r.map.partial_merges >= 4 && r.map.pages_copied >= 16, "{:?}", r.map);
    s.check_invariants().unwrap();
    // The same under the thesis' rule: no partial merge, a full merge copying the log's
    // half as well as the data superblock's.
    let mut t = ssd("hsbm-gcl", &[("logs", "2"), ("merge", "thesis")]);
    for b in 0..6 {
        t.write_zeros(b * BLOCK, BLOCK).unwrap();
    }
    for b in 0..6 {
        t.write_zeros(b * BLOCK, BLOCK / 2).unwrap();
    }
    let m = t.report().map;
    assert!(m.partial_merges == 0 && m.full_merges == r.map.partial_merges, "{m:?}");
    assert_eq!(m.pages_copied, 2 * r.map.pages_copied, "{m:?}");
    t.check_invariants().unwrap();
}

#[test]
fn the_circular_log_sweeps_everything_when_full() {
    let mut s = ssd("pm-gcc", &[]);
    let live = 3 * BLOCK;
    let device_blocks = (G.blocks()) as u64;
    // Write the same three blocks until the log wraps twice.
    let mut written = 0;
    while written < 2 * device_blocks * BLOCK {
        s.write_zeros(0, live).unwrap();
        written += live;
    }
    let r = s.report();
    // Each sweep erases every full row and copies the live pages that sit in them.
    assert!(r.map.gc_victims >= 2, "{:?}", r.map);
    assert!(r.flash.blocks_erased >= device_blocks, "{}", r.flash.blocks_erased);
    assert!(r.erase_count_max - r.erase_count_min <= 1, "the log wears every block alike");
    s.check_invariants().unwrap();
}

#[test]
fn synchronous_timing_is_the_thesis_sequential_rate() {
    let mut s = Ssd::memory("pm-gcl", &FtlConfig::default(), OcGeometry::THESIS, false).unwrap();
    s.write_zeros(0, 64 << 20).unwrap();
    let mb_per_sec = s.report().mb_per_sec;
    // 32 KiB per 116 µs program.
    assert!((mb_per_sec - 32768.0 / 116.0).abs() < 1.0, "{mb_per_sec}");
    let parallel = FtlConfig { timing: Timing::Parallel, ..FtlConfig::default() };
    let mut p = Ssd::memory("pm-gcl", &parallel, OcGeometry::THESIS, false).unwrap();
    p.write_zeros(0, 64 << 20).unwrap();
    // Eight 40 MB/s channels.
    let mb_per_sec = p.report().mb_per_sec;
    assert!((300.0..320.0).contains(&mb_per_sec), "{mb_per_sec}");
}

#[test]
fn a_logical_cap_above_the_ftl_or_at_zero_is_refused_by_name() {
    for name in ["pm-gcl", "pm-gcc", "sbm-gcl", "hsbm-gcl", "dftl", "fast"] {
        let mut s = ssd(name, &[]);
        let native = s.logical_bytes();
        let err = s.cap_logical_bytes(native + 8192).unwrap_err().to_string();
        assert!(err.contains(name) && err.contains(&format!("at most {native} bytes")), "{err}");
        let err = s.cap_logical_bytes(0).unwrap_err().to_string();
        assert!(err.contains("at least one page"), "{err}");
        assert!(s.cap_logical_bytes(4096).unwrap_err().to_string().contains("whole number"));
        // The FTL's own space is a valid cap; nothing changed.
        s.cap_logical_bytes(native).unwrap();
        assert_eq!(s.logical_bytes(), native);
    }
}

#[test]
fn with_a_cap_writing_past_it_is_refused_and_capped_runs_stay_consistent() {
    for name in ["pm-gcl", "pm-gcc", "sbm-gcl", "hsbm-gcl", "dftl", "fast"] {
        let mut uncapped = ssd(name, &[]);
        let mut capped = ssd(name, &[]);
        let cap = 6 * BLOCK;
        capped.cap_logical_bytes(cap).unwrap();
        let r = capped.report();
        assert_eq!((r.logical_bytes, r.native_logical_bytes), (cap, uncapped.logical_bytes()), "{name}");
        assert!(r.spare_percent > uncapped.report().spare_percent, "{name}");
        assert!(capped.write_zeros(cap - 4096, 8192).unwrap_err().to_string().contains("beyond"), "{name}");
        assert!(capped.read_discard(cap, 1).is_err(), "{name}");
        // The same small workload, inside the cap, on both: half blocks out of order, again
        // and again, so that every FTL collects or merges.
        for s in [&mut uncapped, &mut capped] {
            for pass in 0..12u64 {
                for b in 0..6u64 {
                    let half = (b + pass) % 2;
                    s.write_zeros(b * BLOCK + half * BLOCK / 2, BLOCK / 2).unwrap_or_else(|e| panic!("{name} pass {pass}: {e}"));
                }
            }
            s.check_invariants().unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        // The cap only limits addresses: the FTL does the same work either way.
        assert_eq!(capped.report().flash, uncapped.report().flash, "{name}");
        assert!(capped.cap_logical_bytes(cap).is_err(), "{name}: a cap after the first request");
    }
}

#[test]
fn sbm_erase_in_place_triggers_with_garbage_about_and_gc_first_does_not() {
    // The experiment's thesis-device setting in small: the trace's range is half the device,
    // and half-block overwrites move superblocks until the erased ones are used up.
    let run = |policy: &str| {
        let mut s = ssd("sbm-gcl", &[("no_free", policy)]);
        let range_blocks = G.blocks() as u64 / 2;
        for pass in 0..20u64 {
            for b in 0..range_blocks {
                s.write_zeros(b * BLOCK + (pass % 2) * BLOCK / 2, BLOCK / 2).unwrap();
            }
        }
        s.check_invariants().unwrap();
        s.report()
    };
    let (in_place, gc_first) = (run("erase-in-place"), run("gc-first"));
    assert!(in_place.map.erase_in_place > 100, "{:?}", in_place.map);
    assert_eq!(gc_first.map.erase_in_place, 0, "{:?}", gc_first.map);
    assert!(gc_first.map.gc_victims > 100, "{:?}", gc_first.map);
    // The same work, worn differently: in place, the blocks outside the range are never erased.
    assert_eq!((in_place.waf, in_place.flash.blocks_erased), (gc_first.waf, gc_first.flash.blocks_erased));
    assert_eq!(in_place.erase_count_min, 0);
    assert!(in_place.erase_count_max > gc_first.erase_count_max + 5, "{} vs {}", in_place.erase_count_max, gc_first.erase_count_max);
}

#[test]
fn hsbm_counts_entries_by_kind_and_keeps_the_log_open_charge_apart() {
    let mut s = ssd("hsbm-gcl", &[("logs", "2")]);
    for b in 0..6 {
        s.write_zeros(b * BLOCK + BLOCK / 2, BLOCK / 2).unwrap();
        s.write_zeros(b * BLOCK, BLOCK / 2).unwrap();
    }
    let m = s.report().map;
    // Every page written goes through a log: one 2-byte slot each.
    assert_eq!(m.log_entries_updated, 6 * 8);
    assert_eq!(m.map_update_bytes, 8 * m.map_entries_updated + 2 * m.log_entries_updated);
    assert_eq!((m.logs_opened, m.log_open_bytes), (6, 6 * 16));
    // Every merge changes one data-map entry.
    assert_eq!(m.map_entries_updated, m.switch_merges + m.partial_merges + m.full_merges);
}

/// A synchronous run's time from its counts under `costs`, and the transfer slack the engine's
/// 1 TB/s "channel" adds (under 32 ns per page programmed or read).
fn linear_time_ns(r: &zonekit_ocssd::SsdReport, costs: CommandCosts) -> (u64, u64) {
    let f = &r.flash;
    let ns = costs.program_ns * f.pages_programmed + costs.read_ns * f.pages_read + costs.erase_ns * f.blocks_erased + costs.write_request_ns * r.write_requests;
    (ns, 32 * (f.pages_programmed + f.pages_read))
}

#[test]
fn fitted_timing_charges_its_costs_and_a_cost_per_write_request() {
    // Overwrites with partial pages and GC: programs, reads and erases all happen.
    let run = |timing: Timing| {
        let mut s = Ssd::memory("pm-gcl", &FtlConfig { timing, ..FtlConfig::default() }, G, false).unwrap();
        for pass in 0..6u64 {
            for b in 0..12u64 {
                s.write_zeros(b * BLOCK + pass * 4096, BLOCK / 2 + 4096).unwrap();
            }
        }
        s.report()
    };
    let (synchronous, fitted) = (run(Timing::Synchronous), run(Timing::Fitted));
    // The FTL decides nothing by time: the same commands either way.
    assert_eq!(synchronous.flash, fitted.flash);
    assert_eq!(synchronous.write_requests, fitted.write_requests);
    assert!(fitted.flash.pages_read > 0 && fitted.flash.blocks_erased > 0 && fitted.write_requests == 72);
    for (r, costs) in [(&synchronous, CommandCosts::TABLE_3_1), (&fitted, CommandCosts::FITTED)] {
        let (ns, slack) = linear_time_ns(r, costs);
        assert!(r.elapsed_ns >= ns && r.elapsed_ns <= ns + slack, "{costs:?}: {} ns, linear {ns} + {slack}", r.elapsed_ns);
    }
    // The request cost is on the clock: what is left after the flash commands.
    let flash_only = CommandCosts { write_request_ns: 0, ..CommandCosts::FITTED };
    let (flash_ns, slack) = linear_time_ns(&fitted, flash_only);
    let request_ns = fitted.elapsed_ns - flash_ns;
    let expected = fitted.write_requests * CommandCosts::FITTED.write_request_ns;
    assert!(request_ns >= expected && request_ns <= expected + slack, "{request_ns} vs {expected}");
    assert_eq!(CommandCosts::TABLE_3_1.write_request_ns, 0);
}

#[test]
fn table_3_1_is_the_preset_and_timings_parse_by_name() {
    let preset = zonekit_device::preset::find("ocssd-thesis").unwrap().flash;
    let t = CommandCosts::TABLE_3_1;
    assert_eq!((t.program_ns, t.read_ns, t.erase_ns), (preset.program_ns, preset.read_ns, preset.erase_ns));
    for name in Timing::NAMES {
        assert_eq!(Timing::parse(name).unwrap().name(), name);
    }
    let err = Timing::parse("bogus").unwrap_err().to_string();
    assert!(err.contains("expected one of synchronous, fitted, parallel"), "{err}");
}
