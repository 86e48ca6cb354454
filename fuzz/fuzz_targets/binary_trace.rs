//! Arbitrary bytes as a binary trace: opening, reading and annotating never panic. And a trace
//! written from the input's records with one byte flipped: reading it back fails, or gives the
//! records written — never other records in silence (the window checksums' promise).
#![no_main]
use libfuzzer_sys::fuzz_target;
use zonekit_trace::binary::{annotate_next_write, BinaryStream, BinaryTrace, BinaryWriter, BlockRecord};
use zonekit_trace::{BlockIo, Op};

/// Every record, or `None` if the reading failed anywhere.
fn read_all(path: &std::path::Path) -> Option<Vec<BlockRecord>> {
    BinaryStream::open(path).ok()?.collect::<Result<Vec<_>, _>>().ok()
}

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("zk-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.zkt");
    std::fs::write(&path, data).unwrap();
    if let Ok(trace) = BinaryTrace::open(&path) {
        let _ = trace.iter().take(10_000).count();
    }
    let _ = annotate_next_write(&path);

    // The first 4 bytes pick the flip; every 8 after them make a record.
    let Some((flip, body)) = data.split_first_chunk::<4>() else { return };
    let mut w = BinaryWriter::create(&path, 4096, "fuzz").unwrap();
    for r in body.chunks_exact(8) {
        let word = u64::from_le_bytes(r.try_into().unwrap());
        let io = BlockIo { time_us: word >> 40, volume: (word >> 32 & 0xFF) as u32, block: word & 0xFFFF_FFFF, op: if word & 1 == 1 { Op::Write } else { Op::Read }, starts_request: word & 2 == 2 };
        w.push(&io).unwrap();
    }
    w.finish().unwrap();
    let written = read_all(&path).expect("a trace just written reads back");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = u32::from_le_bytes(*flip) as usize % bytes.len();
    bytes[at] ^= 1 << (flip[0] % 8);
    std::fs::write(&path, &bytes).unwrap();
    if let Some(read) = read_all(&path) {
        assert!(read == written, "byte {at} flipped: other records read back without an error");
    }
});
