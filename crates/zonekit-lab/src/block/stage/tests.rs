use super::*;
use zonekit_trace::binary::{next_write_indices, BinaryWriter};
use zonekit_trace::BlockIo;

fn write(block: u64) -> BlockIo {
    BlockIo { time_us: block, volume: 1, block, op: Op::Write, starts_request: true }
}

/// An Alibaba CSV of `lines` one-block requests over `blocks` blocks, every
/// `read_every`-th a read.
fn csv_trace(path: &Path, lines: u64, read_every: u64, blocks: u64) -> Input {
    let text: String = (0..lines).map(|i| format!("3,{},{},4096,{}\n", if i % read_every == 0 { 'R' } else { 'W' }, (i * 7919 % blocks) * 4096, i)).collect();
    std::fs::write(path, text).unwrap();
    Input::path(path, None, false)
}

fn binary_trace(path: &Path, blocks: &[u64]) -> Input {
    let mut w = BinaryWriter::create(path, 4096, "test").unwrap();
    for &b in blocks {
        w.push(&write(b)).unwrap();
        // A read between writes, which the stream counts but does not hold.
        w.push(&BlockIo { op: Op::Read, ..write(b) }).unwrap();
    }
    w.finish().unwrap();
    Input::path(path, None, false)
}

/// (id, time, next write) of every write in the stream, in order.
fn writes_of(staged: &Staged) -> Vec<(u32, u64, Option<u64>)> {
    let mut seen = Vec::new();
    for_each_dense_batch(staged, |b| {
        for (i, (&id, &t)) in b.ids.iter().zip(&b.times_us).enumerate() {
            seen.push((id, t, b.next_writes.get(i).copied()));
        }
        Ok(())
    })
    .unwrap();
    seen
}

fn ids_of(staged: &Staged) -> Vec<u32> {
    writes_of(staged).into_iter().map(|w| w.0).collect()
}

#[test]
fn blocks_are_numbered_in_order_of_first_write_and_the_stream_is_cached_beside_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.zkt");
    let input = binary_trace(&trace, &[7, 3, 7, 9, 3, 3]);
    let staged = stage(&input, dir.path()).unwrap();
    assert_eq!((staged.writes, staged.reads, staged.distinct, staged.source.as_str()), (6, 6, 3, "test"));
    assert_eq!(staged.path, stream_cache_path(&trace));
    assert_eq!(writes_of(&staged), [(0, 7, None), (1, 3, None), (0, 7, None), (2, 9, None), (1, 3, None), (1, 3, None)]);
    // Reused while the trace is unchanged: the same file (a rebuild renames a new one over it).
    use std::os::unix::fs::MetadataExt;
    let inode = std::fs::metadata(&staged.path).unwrap().ino();
    assert_eq!(writes_of(&stage(&input, dir.path()).unwrap()), writes_of(&staged));
    assert_eq!(std::fs::metadata(&staged.path).unwrap().ino(), inode, "the cached stream was not reused");
}

#[test]
fn the_stream_of_a_changed_trace_another_reading_or_a_damaged_file_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.zkt");
    let staged = stage(&binary_trace(&trace, &[1, 2, 1]), dir.path()).unwrap();
    // Another trace at the same path (same length, other blocks).
    let input = binary_trace(&trace, &[5, 5, 6]);
    assert_eq!(ids_of(&stage(&input, dir.path()).unwrap()), [0, 0, 1]);
    for damage in [|b: &mut Vec<u8>| b.truncate(b.len() - 1), |b: &mut Vec<u8>| b[57] ^= 1, |b: &mut Vec<u8>| b[0] = b'X'] {
        let mut bytes = std::fs::read(&staged.path).unwrap();
        damage(&mut bytes);
        std::fs::write(&staged.path, &bytes).unwrap();
        let again = stage(&input, dir.path()).unwrap();
        assert_eq!((ids_of(&again), again.distinct), (vec![0, 0, 1], 2));
    }
    // Every byte of a stream, flipped in turn: a stream whose header still vouches for it
    // but whose content changed is rebuilt too (it used to be replayed).
    let whole = std::fs::read(&staged.path).unwrap();
    for at in 0..whole.len() {
        let mut bytes = whole.clone();
        bytes[at] ^= 0x10;
        std::fs::write(&staged.path, &bytes).unwrap();
        let again = stage(&input, dir.path()).unwrap();
        assert_eq!((ids_of(&again), again.distinct), (vec![0, 0, 1], 2), "byte {at} flipped");
        assert!(std::fs::read(&staged.path).unwrap() == whole, "byte {at} flipped: the stream was not rebuilt");
    }
    // The same file read another way (a time window that drops the first writes) is not
    // served the cached stream.
    let mut windowed = input.clone();
    windowed.filters.relative_window_us = Some((1, u64::MAX));
    assert_eq!(stage(&windowed, dir.path()).unwrap().writes, 1);
}

#[test]
fn a_text_trace_is_parsed_once_with_its_estimate_and_the_oracles_copy_knows_each_next_write() {
    let dir = tempfile::tempdir().unwrap();
    let input = csv_trace(&dir.path().join("t.csv"), 50_000, 4, 20_000);
    let staged = stage(&input, dir.path()).unwrap();
    let mut hll = DistinctCounter::new();
    let mut keys = Vec::new();
    for r in input.writes().unwrap() {
        let r = r.unwrap();
        hll.add(r.io.key());
        keys.push(r.io.key());
    }
    assert_eq!(staged.distinct_estimate, hll.estimate(), "the device is sized as a counting pass would");
    assert_eq!((staged.writes, staged.reads, staged.distinct), (37_500, 12_500, 15_000));
    assert!(staged.chunks() > 2, "several chunks");
    let future = with_future(staged.clone(), dir.path()).unwrap();
    assert!(future.has_next_write && future.path != staged.path);
    let expected = next_write_indices(&keys);
    let got: Vec<u64> = writes_of(&future).into_iter().map(|w| w.2.unwrap()).collect();
    assert_eq!(got, expected);
    assert_eq!(ids_of(&future), ids_of(&staged), "the copy keeps the ids");
}

/// Every batch `prepare` hands a replay, and the stream it leaves.
fn replayed(input: &Input, dir: &Path, numbered_beside: bool) -> (Vec<DenseBatch>, Staged) {
    let prepared = prepare(input, dir).unwrap();
    assert_eq!(matches!(prepared, Prepared::Unnumbered(_)), numbered_beside, "{}", input.describe());
    let mut batches = Vec::new();
    let staged = prepared
        .for_each_batch(|b| {
            batches.push(b.clone());
            Ok(())
        })
        .unwrap();
    (batches, staged)
}

fn batches_of(staged: &Staged) -> Vec<DenseBatch> {
    let mut batches = Vec::new();
    for_each_dense_batch(staged, |b| {
        batches.push(b.clone());
        Ok(())
    })
    .unwrap();
    batches
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

fn counts(s: &Staged) -> (u64, u64, u64, u64, bool) {
    (s.writes, s.reads, s.distinct, s.distinct_estimate, s.has_next_write)
}

#[test]
fn a_prepared_trace_feeds_its_replay_what_the_staged_stream_holds_and_leaves_that_stream() {
    let dir = tempfile::tempdir().unwrap();
    let csv = csv_trace(&dir.path().join("t.csv"), 60_000, 5, 25_000);
    let zkt = dir.path().join("t.zkt");
    let blocks: Vec<u64> = (0..40_000u64).map(|i| i * 104_729 % 9_000).collect();
    let inputs = [
        // A binary trace records its estimate: numbered beside the replay.
        (binary_trace(&zkt, &blocks), true),
        // A text trace is sized only once read: staged first.
        (csv, false),
        // A workload has no file: its stream is temporary.
        (Input::generated("zipf:blocks=5000,alpha=0.9,writes=50000".parse().unwrap(), 5), false),
    ];
    for (input, numbered_beside) in inputs {
        let work = tempfile::tempdir().unwrap();
        let (batches, streamed) = replayed(&input, work.path(), numbered_beside);
        assert!(batches.len() > 2, "several batches");
        let flat = |b: &[DenseBatch]| b.iter().flat_map(|b| b.ids.iter().zip(&b.times_us).map(|(&i, &t)| (i, t))).collect::<Vec<_>>();
        assert_eq!(flat(&batches_of(&streamed)), flat(&batches), "the stream left holds what was replayed");
        // The next run finds the stream, whole, where a stage would.
        if source_file(&input).is_some() {
            let cached = prepare(&input, work.path()).unwrap();
            assert!(matches!(&cached, Prepared::Staged(s) if s.path == streamed.path), "{}", input.describe());
        }
        // What the one-pass stage writes (for another reading of the same file, so that
        // the stream just left is not reused; it takes the stream's place beside the file).
        let elsewhere = tempfile::tempdir().unwrap();
        let mut reread = input.clone();
        reread.filters.relative_window_us = Some((0, u64::MAX));
        let expected = stage(&reread, elsewhere.path()).unwrap();
        assert_eq!(counts(&streamed), counts(&expected), "{}", input.describe());
        assert_eq!(flat(&batches), flat(&batches_of(&expected)), "{}", input.describe());
        // Nothing else is left: no temporary stream.
        let left = names_in(work.path());
        assert!(left.iter().all(|n| n.starts_with("staged-") && n.ends_with(".zkr")) && left.len() <= 1, "{left:?}");
    }
    assert_eq!(names_in(dir.path()), ["t.csv", "t.csv.zkr", "t.zkt", "t.zkt.zkr"]);
}

#[test]
fn a_replay_that_stops_or_a_damaged_trace_leaves_no_stream_and_the_error_is_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let zkt = dir.path().join("t.zkt");
    let blocks: Vec<u64> = (0..100_000u64).map(|i| i % 7_000).collect();
    let input = binary_trace(&zkt, &blocks);
    // The replay fails after two batches: its error comes back, and the numbering stops.
    let mut seen = 0;
    let err = prepare(&input, dir.path())
        .unwrap()
        .for_each_batch(|_| {
            seen += 1;
            if seen == 2 {
                return Err(LabError::Usage("engine gave up".into()));
            }
            Ok(())
        })
        .err()
        .unwrap();
    assert_eq!((err.to_string().as_str(), seen), ("engine gave up", 2));
    assert_eq!(names_in(dir.path()), ["t.zkt"], "no stream, finished or not");
    // A record in the middle that no writer writes: the replay gets the writes before it,
    // then the reader's error; no stream is left.
    let mut bytes = std::fs::read(&zkt).unwrap();
    let record = zonekit_trace::binary::HEADER_BYTES + zonekit_trace::binary::RECORD_BYTES * 150_000;
    bytes[record + 20] = 7;
    std::fs::write(&zkt, &bytes).unwrap();
    let mut writes = 0;
    let err = prepare(&input, dir.path())
        .unwrap()
        .for_each_batch(|b| {
            writes += b.ids.len();
            Ok(())
        })
        .err()
        .unwrap();
    assert!(err.to_string().contains("t.zkt"), "{err}");
    assert!(writes > 0 && writes <= 75_000, "{writes} writes before the damage");
    assert_eq!(names_in(dir.path()), ["t.zkt"]);
}

#[test]
fn a_parse_error_reaches_the_consumer_after_the_records_before_it_and_leaves_no_stream() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("t.csv");
    let mut lines: String = (0..40_000u64).map(|i| format!("1,W,{},4096,{i}\n", i * 4096)).collect();
    lines.push_str("1,W,oops,4096,1\n");
    std::fs::write(&csv, lines).unwrap();
    let input = Input::path(&csv, None, false);
    let mut seen = 0;
    let err = for_each_batch(&input, |b| {
        seen += b.len();
        Ok(())
    })
    .unwrap_err();
    assert_eq!(seen, 40_000);
    assert!(err.to_string().contains("line 40001"), "{err}");
    let err = stage(&input, dir.path()).unwrap_err();
    assert!(err.to_string().contains("line 40001"), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["t.csv"], "no stream or temporary file is left behind");
}
