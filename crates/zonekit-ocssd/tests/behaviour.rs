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
    // First halves only, evicted from a full log table: partial merges.
    let mut s = ssd("hsbm-gcl", &[("logs", "2")]);
    for b in 0..6 {
        s.write_zeros(b * BLOCK, BLOCK).unwrap();
    }
    for b in 0..6 {
        s.write_zeros(b * BLOCK, BLOCK / 2).unwrap();
    }
    let r = s.report();
    assert!(r.map.partial_merges >= 4 && r.map.pages_copied >= 16, "{:?}", r.map);
    s.check_invariants().unwrap();
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
