//! What each thesis FTL does on the access patterns chapter 4 explains its results with:
//! whole-block overwrites, half-block overwrites, log merges by kind, the circular log's
//! sweeps, and the map sizes of §4.3.

use zonekit_ocssd::{Ftl, FtlConfig, OcGeometry, Ssd, Timing};

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
