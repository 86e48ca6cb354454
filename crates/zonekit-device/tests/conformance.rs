//! Runs the conformance suite on every emulated backend, in the configurations that mirror the
//! real devices (QEMU NVMe ZNS, null_blk) and the edge cases (no limits, capacity < size,
//! conventional zones). The Linux backends run the same suite inside QEMU (scripts/qemu-test).

use zonekit_device::conformance::{self, Outcome};
use zonekit_device::{AutoClose, FileDevice, Geometry, MemDevice, StorageMode, ZoneBehavior, ZonedDevice};

fn geometry(zones: u32, cap: u64, conventional: u32, open: Option<u32>, active: Option<u32>) -> Geometry {
    Geometry {
        block_size_bytes: 4096,
        zone_size_blocks: 64,
        zone_capacity_blocks: cap,
        zone_count: zones,
        conventional_zone_count: conventional,
        open_zones_max: open,
        active_zones_max: active,
    }
}

/// The shapes the suite runs on: (name, geometry, behaviour).
fn configurations() -> Vec<(&'static str, Geometry, ZoneBehavior)> {
    vec![
        ("qemu-nvme-like", geometry(32, 60, 0, Some(14), Some(14)), ZoneBehavior::QEMU_NVME),
        ("null-blk-like", geometry(16, 60, 2, Some(6), Some(8)), ZoneBehavior::NULL_BLK),
        ("qemu-open-below-active", geometry(24, 64, 0, Some(4), Some(8)), ZoneBehavior::QEMU_NVME),
        ("no-limits", geometry(12, 64, 0, None, None), ZoneBehavior::QEMU_NVME),
        ("open-limit-only", geometry(12, 48, 1, Some(3), None), ZoneBehavior::QEMU_NVME),
        ("no-auto-close", geometry(16, 64, 0, Some(4), Some(6)), ZoneBehavior { auto_close: AutoClose::Off, ..ZoneBehavior::QEMU_NVME }),
        ("null-blk-512b-blocks", Geometry { block_size_bytes: 512, ..geometry(16, 50, 3, Some(5), Some(7)) }, ZoneBehavior::NULL_BLK),
    ]
}

fn assert_suite_passes(name: &str, dev: &mut dyn ZonedDevice) {
    let report = conformance::run(dev, None);
    for (check, outcome) in &report.results {
        if let Outcome::Skipped(why) = outcome {
            println!("{name}: {check} skipped: {why}");
        }
    }
    assert!(report.failed() == 0, "{name}: {} checks failed:\n  {}", report.failed(), report.failures().join("\n  "));
    assert!(report.passed() >= conformance::CHECKS.len() / 2, "{name}: too few checks ran ({} passed)", report.passed());
}

#[test]
fn memory_emulator_passes_the_suite_in_every_configuration() {
    for (name, g, b) in configurations() {
        let mut dev = MemDevice::new(g, b, StorageMode::Data).unwrap();
        assert_suite_passes(&format!("memory/{name}"), &mut dev);
        dev.check_invariants();
    }
}

#[test]
fn file_emulator_passes_the_suite_in_every_configuration() {
    let dir = tempfile::tempdir().unwrap();
    for (name, g, b) in configurations() {
        let path = dir.path().join(format!("{name}.zk"));
        let mut dev = FileDevice::create(&path, g, b, "").unwrap();
        assert_suite_passes(&format!("file/{name}"), &mut dev);
        dev.check_invariants();
        drop(dev);
        // And again after reopening the image.
        let mut dev = FileDevice::open(&path).unwrap();
        assert_suite_passes(&format!("file-reopened/{name}"), &mut dev);
    }
}

#[test]
fn every_check_has_a_unique_name() {
    let mut names: Vec<_> = conformance::CHECKS.iter().map(|c| c.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), conformance::CHECKS.len());
}
