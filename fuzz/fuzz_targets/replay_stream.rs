//! A replay stream (`TRACE.zkr`) cached beside a trace, damaged by the input (bytes flipped,
//! or cut short): staging the trace again either verifies the stream or rebuilds it, and the
//! writes it hands the replay are the ones staged from the intact trace — never others in
//! silence (issue 31: a damaged stream once replayed to other results with exit 0).
#![no_main]
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use zonekit_lab::block::stage::{for_each_dense_batch, stage, Staged};
use zonekit_trace::input::Input;

/// What a replay sees of a staged trace: its counts and every write's id and time.
type Seen = (u64, u64, u64, Vec<u32>, Vec<u64>);

struct Fixture {
    dir: PathBuf,
    input: Input,
    stream_path: PathBuf,
    stream: Vec<u8>,
    seen: Seen,
}

fn seen(staged: &Staged) -> Seen {
    let (mut ids, mut times) = (Vec::new(), Vec::new());
    for_each_dense_batch(staged, |b| {
        ids.extend_from_slice(&b.ids);
        times.extend_from_slice(&b.times_us);
        Ok(())
    })
    .expect("a staged stream reads back");
    (staged.writes, staged.reads, staged.distinct, ids, times)
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("zk-fuzz-zkr-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let trace = dir.join("t.csv");
        // Alibaba's layout (volume, op, offset, length, time): writes and a few reads.
        let csv: String = (0..3000u64).map(|i| format!("1,{},{},4096,{}\n", if i % 7 == 0 { 'R' } else { 'W' }, (i * 7919 % 900) * 4096, i * 100)).collect();
        std::fs::write(&trace, csv).unwrap();
        let input = Input::path(&trace, None, false);
        let staged = stage(&input, &dir).expect("the intact trace stages");
        let stream_path = staged.path.clone();
        assert_eq!(stream_path, dir.join("t.csv.zkr"), "the stream is cached beside the trace");
        let stream = std::fs::read(&stream_path).unwrap();
        let seen = seen(&staged);
        Fixture { dir, input, stream_path, stream, seen }
    })
}

fuzz_target!(|data: &[u8]| {
    let f = fixture();
    let mut bytes = f.stream.clone();
    // Each 5 bytes flip one byte: 4 for where, 1 for the bits; a byte left over cuts the stream.
    let mut flips = data.chunks_exact(5);
    for m in flips.by_ref() {
        let at = u32::from_le_bytes([m[0], m[1], m[2], m[3]]) as usize % bytes.len();
        bytes[at] ^= m[4];
    }
    if let [cut, ..] = flips.remainder() {
        bytes.truncate(bytes.len() * *cut as usize / 256);
    }
    std::fs::write(&f.stream_path, &bytes).unwrap();
    let staged = stage(&f.input, &f.dir).expect("a damaged stream is rebuilt, not an error");
    assert!(seen(&staged) == f.seen, "a damaged replay stream gave other writes ({} bytes, input {data:?})", bytes.len());
});
