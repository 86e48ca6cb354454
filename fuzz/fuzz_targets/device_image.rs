//! Arbitrary bytes as an emulated device image: refused with a reason or opened consistently.
#![no_main]
use libfuzzer_sys::fuzz_target;
use zonekit_device::{FileDevice, ZoneFilter, ZonedDevice};

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("zk-fuzz-dev-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("d.zk");
    std::fs::write(&path, data).unwrap();
    if let Ok(mut dev) = FileDevice::open(&path) {
        dev.check_invariants();
        let _ = dev.report_all(ZoneFilter::All);
    }
});
