//! Opening, reading and annotating arbitrary bytes as a binary trace.
#![no_main]
use libfuzzer_sys::fuzz_target;
use zonekit_trace::binary::{annotate_next_write, BinaryTrace};

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("zk-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.zkt");
    std::fs::write(&path, data).unwrap();
    if let Ok(trace) = BinaryTrace::open(&path) {
        let _ = trace.iter().take(10_000).count();
    }
    let _ = annotate_next_write(&path);
});
