//! Getting a trace ready for replay, so that the replay loop does nothing but replay.
//!
//! 1. **One parse** ([`stage`]). A text trace, a generated workload or a filtered binary trace
//!    is read once — parsed on its own thread, handed over in batches through a bounded queue
//!    ([`for_each_batch`]) — and written to a temporary binary trace, whose writer estimates
//!    the distinct written blocks on the way. An unfiltered binary trace is used as it is;
//!    its header carries the estimate (older files get one counting pass).
//! 2. **Dense ids** ([`dense_ids`]). One pass gives every written block a dense id, 0, 1, 2,
//!    ... in order of first write, and writes the ids, 4 bytes per write. The key map lives
//!    only during this pass, so the replay holds no map, only the engine's per-block state.
//!    For a user's binary trace the ids are kept beside it (`TRACE.zkids`) and reused while
//!    the trace's length, modification time and header are unchanged; a temporary trace's
//!    ids go to the temporary directory.
//! 3. **Pipelined replay** ([`drive`](crate::driver::drive)). A reader thread decodes the
//!    trace and reads the ids in step into [`DenseBatch`]es (id, time and next write of each
//!    write, nothing else), so the replay thread only replays, prefetching each block's state
//!    a few writes ahead.
//!
//! # Ids file (`.zkids`, little-endian)
//!
//! Header, 64 bytes: `0` magic `ZKIDS\0\0\1`; `8` the trace's length in bytes u64; `16` its
//! modification time, ns since the epoch, u64; `24` its header's CRC-32 (header bytes 124..128)
//! u32; `28` reserved u32; `32` write count u64; `40` distinct blocks u64; `48` reserved;
//! `56` a check word over bytes 0..56 ([`mix64`] chained over the eight-byte words). Then one
//! u32 id per write record, in trace order. Written to a temporary name and renamed, so a
//! reader sees a whole file or none.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use zonekit_base::map::mix64;
use zonekit_base::{BlockMap, DistinctCounter};
use zonekit_trace::binary::{annotate_next_write, BinaryStream, BinaryWriter, BlockRecord, Header, HEADER_BYTES};
use zonekit_trace::input::{Input, Source};
use zonekit_trace::Op;

use crate::error::{LabError, Result};

/// Records per batch from the reader thread.
const BATCH: usize = zonekit_trace::input::BATCH_RECORDS;

/// Hands `input`'s records (its filters applied), read on a thread of its own
/// ([`Input::record_batches`]), to `each_batch` in trace order. A read error ends the pass
/// with that error, after the records before it were handed over.
pub fn for_each_batch(input: &Input, mut each_batch: impl FnMut(&[BlockRecord]) -> Result<()>) -> Result<()> {
    let read_error = LabError::input(input);
    for batch in input.record_batches() {
        each_batch(&batch.map_err(&read_error)?)?;
    }
    Ok(())
}

/// A binary trace ready for replay.
#[derive(Clone, Debug)]
pub struct Staged {
    /// The binary trace, no filters (they were applied when it was written).
    pub input: Input,
    pub path: PathBuf,
    /// The user's own file (its ids may be cached beside it), not a temporary one.
    pub own_file: bool,
    /// A temporary trace no one else reads, which [`with_future`] may annotate in place (a
    /// sweep shares its staged traces between runs and clears this).
    pub annotate_in_place: bool,
    pub header: Header,
    /// Distinct written blocks as [`DistinctCounter::estimate`] counts them.
    pub distinct_estimate: u64,
}

/// Stages `input` as a binary trace in `dir` (see the module doc): the one pass over a text
/// trace or workload.
pub fn stage(input: &Input, dir: &Path) -> Result<Staged> {
    let io = LabError::input(input);
    let block_size = input.filters.split.block_size_bytes;
    if let Source::Binary(path) = &input.source {
        let header = BinaryStream::open(path).map_err(&io)?.header().clone();
        if !input.filters.drops_blocks() && header.block_size_bytes as u64 == block_size {
            let distinct_estimate = match header.distinct_writes_estimate {
                Some(n) => n,
                None => {
                    let mut hll = DistinctCounter::new();
                    for_each_batch(input, |b| {
                        b.iter().filter(|r| r.io.op == Op::Write).for_each(|r| hll.add(r.io.key()));
                        Ok(())
                    })?;
                    hll.estimate()
                }
            };
            return Ok(Staged { input: input.clone(), path: path.clone(), own_file: true, annotate_in_place: false, header, distinct_estimate });
        }
    }
    let path = unique_path(dir, "staged", "zkt");
    let mut w = BinaryWriter::create(&path, block_size as u32, &input.describe()).map_err(&io)?;
    for_each_batch(input, |b| b.iter().try_for_each(|r| w.push(&r.io).map_err(&io)))?;
    let header = w.finish().map_err(&io)?;
    Ok(staged_temp(path, header, block_size))
}

fn staged_temp(path: PathBuf, header: Header, block_size: u64) -> Staged {
    let mut input = Input::path(&path, None, false);
    input.filters.split.block_size_bytes = block_size;
    let distinct_estimate = header.distinct_writes_estimate.expect("the writer estimates");
    Staged { input, path, own_file: false, annotate_in_place: true, header, distinct_estimate }
}

/// A new file name in `dir`: runs in one process may stage side by side.
fn unique_path(dir: &Path, stem: &str, extension: &str) -> PathBuf {
    dir.join(format!("{stem}-{}.{extension}", next_unique()))
}

fn next_unique() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The staged trace with next-write times, for the oracles: annotated in place when it may
/// be, else copied to `dir` and annotated there.
pub fn with_future(staged: Staged, dir: &Path) -> Result<Staged> {
    if staged.header.has_next_write {
        return Ok(staged);
    }
    let io = LabError::input(&staged.input);
    let block_size = staged.input.filters.split.block_size_bytes;
    let path = if !staged.annotate_in_place {
        let copy = unique_path(dir, "future", "zkt");
        let mut w = BinaryWriter::create(&copy, block_size as u32, &staged.header.source).map_err(&io)?;
        for_each_batch(&staged.input, |b| b.iter().try_for_each(|r| w.push(&r.io).map_err(&io)))?;
        w.finish().map_err(&io)?;
        copy
    } else {
        staged.path.clone()
    };
    annotate_next_write(&path).map_err(&io)?;
    let header = BinaryStream::open(&path).map_err(&io)?.header().clone();
    Ok(staged_temp(path, header, block_size))
}

/// The dense ids of a staged trace's writes.
#[derive(Clone, Debug)]
pub struct DenseIds {
    pub path: PathBuf,
    pub writes: u64,
    /// Distinct written blocks, exactly: ids run from 0 to `distinct - 1`.
    pub distinct: u64,
}

const IDS_MAGIC: &[u8; 8] = b"ZKIDS\0\0\x01";
const IDS_HEADER_BYTES: usize = 64;

/// What identifies the trace an ids file belongs to: length, modification time, header CRC.
fn trace_identity(path: &Path) -> std::io::Result<(u64, u64, u32)> {
    let meta = std::fs::metadata(path)?;
    let mtime_ns = meta.modified()?.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let mut h = [0u8; HEADER_BYTES];
    File::open(path)?.read_exact(&mut h)?;
    Ok((meta.len(), mtime_ns, u32::from_le_bytes(h[124..128].try_into().unwrap())))
}

fn check_word(h: &[u8]) -> u64 {
    h[..56].chunks_exact(8).fold(0, |acc, w| mix64(acc ^ u64::from_le_bytes(w.try_into().unwrap())))
}

fn ids_header(identity: (u64, u64, u32), writes: u64, distinct: u64) -> [u8; IDS_HEADER_BYTES] {
    let mut h = [0u8; IDS_HEADER_BYTES];
    h[0..8].copy_from_slice(IDS_MAGIC);
    h[8..16].copy_from_slice(&identity.0.to_le_bytes());
    h[16..24].copy_from_slice(&identity.1.to_le_bytes());
    h[24..28].copy_from_slice(&identity.2.to_le_bytes());
    h[32..40].copy_from_slice(&writes.to_le_bytes());
    h[40..48].copy_from_slice(&distinct.to_le_bytes());
    let check = check_word(&h);
    h[56..64].copy_from_slice(&check.to_le_bytes());
    h
}

/// The ids at `path` if they are whole and belong to the trace with this identity.
fn cached_ids(path: &Path, identity: (u64, u64, u32), writes: u64) -> Option<DenseIds> {
    let mut h = [0u8; IDS_HEADER_BYTES];
    let mut f = File::open(path).ok()?;
    f.read_exact(&mut h).ok()?;
    let distinct = u64::from_le_bytes(h[40..48].try_into().unwrap());
    let whole = f.metadata().ok()?.len() == (IDS_HEADER_BYTES as u64).checked_add(writes.checked_mul(4)?)?;
    (whole && h == ids_header(identity, writes, distinct)).then(|| DenseIds { path: path.to_path_buf(), writes, distinct })
}

/// Where the ids of a user's trace are cached.
pub fn ids_cache_path(trace: &Path) -> PathBuf {
    let mut name = trace.as_os_str().to_os_string();
    name.push(".zkids");
    PathBuf::from(name)
}

/// Numbers the staged trace's written blocks (see the module doc), reusing the ids beside it
/// when they belong to it. `dir` holds the ids of a trace whose directory cannot be written.
pub fn dense_ids(staged: &Staged, dir: &Path) -> Result<DenseIds> {
    let identity = trace_identity(&staged.path).map_err(LabError::io(&staged.path))?;
    let writes = staged.header.writes;
    if writes > u32::MAX as u64 {
        return Err(LabError::Usage(format!("{}: {writes} writes exceed the 2^32 - 1 a replay supports", staged.path.display())));
    }
    // Beside the trace (a cache, for a user's trace) if its directory takes a file, else in
    // the temporary directory.
    let name = staged.path.file_name().map_or_else(|| "trace".into(), |n| n.to_string_lossy().into_owned());
    let places = [ids_cache_path(&staged.path), dir.join(format!("{name}.zkids"))];
    if let Some(ids) = places.iter().find_map(|p| cached_ids(p, identity, writes)) {
        return Ok(ids);
    }
    let temp_of = |p: &Path| {
        let mut t = p.as_os_str().to_os_string();
        t.push(format!(".{}-{}.tmp", std::process::id(), next_unique()));
        PathBuf::from(t)
    };
    let [beside, fallback] = places;
    let beside_tmp = temp_of(&beside);
    let (final_path, tmp, file) = match File::create(&beside_tmp) {
        Ok(f) => (beside, beside_tmp, f),
        Err(_) => {
            let t = temp_of(&fallback);
            let f = File::create(&t).map_err(LabError::io(&t))?;
            (fallback, t, f)
        }
    };
    let result = write_ids(staged, file, &tmp, identity);
    let result = result.and_then(|distinct| {
        std::fs::rename(&tmp, &final_path).map_err(LabError::io(&final_path))?;
        Ok(DenseIds { path: final_path.clone(), writes, distinct })
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn write_ids(staged: &Staged, file: File, path: &Path, identity: (u64, u64, u32)) -> Result<u64> {
    let write_err = |e| LabError::Io { path: path.to_path_buf(), error: e };
    let mut out = BufWriter::with_capacity(1 << 20, file);
    out.write_all(&[0u8; IDS_HEADER_BYTES]).map_err(write_err)?;
    // Sized from the estimate with the margin the device sizing uses, so it rarely grows.
    let mut map: BlockMap<u32> = BlockMap::with_capacity((staged.distinct_estimate as f64 * 1.04) as usize + 16);
    let mut next_id = 0u32;
    let mut ids = Vec::with_capacity(BATCH * 4);
    for_each_batch(&staged.input, |batch| {
        const AHEAD: usize = 16;
        ids.clear();
        for (i, r) in batch.iter().enumerate() {
            if let Some(a) = batch.get(i + AHEAD) {
                map.prefetch(a.io.key());
            }
            if r.io.op != Op::Write {
                continue;
            }
            let (slot, inserted) = map.entry(r.io.key());
            if inserted {
                *slot = next_id;
                next_id += 1;
            }
            ids.extend_from_slice(&slot.to_le_bytes());
        }
        out.write_all(&ids).map_err(write_err)
    })?;
    let mut file = out.into_inner().map_err(|e| write_err(e.into_error()))?;
    std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(0)).map_err(write_err)?;
    file.write_all(&ids_header(identity, staged.header.writes, next_id as u64)).map_err(write_err)?;
    Ok(next_id as u64)
}

/// One batch of a staged trace's writes, as the replay loop reads them.
#[derive(Clone, Debug, Default)]
pub struct DenseBatch {
    /// Dense id of each write's block.
    pub ids: Vec<u32>,
    /// Trace time of each write, µs.
    pub times_us: Vec<u64>,
    /// Next-write time of each write when the trace is annotated; empty when not.
    pub next_writes: Vec<u64>,
    /// Reads among the batch's records (the block engines do not model reads).
    pub reads: u64,
}

/// Streams the staged trace's writes with their ids to `each_batch`, in order. A reader
/// thread ([`Input::prepared_batches`]) decodes the trace and reads the ids in step, so the
/// caller gets only what the replay uses. Returns the number of reads.
pub fn for_each_dense_batch(staged: &Staged, ids: &DenseIds, mut each_batch: impl FnMut(&DenseBatch) -> Result<()>) -> Result<u64> {
    let read_error = LabError::input(&staged.input);
    let ids_error = |e: std::io::Error| LabError::Io { path: ids.path.clone(), error: e };
    let mut id_file = BufReader::with_capacity(1 << 20, File::open(&ids.path).map_err(ids_error)?);
    id_file.read_exact(&mut [0u8; IDS_HEADER_BYTES]).map_err(ids_error)?;
    let annotated = staged.header.has_next_write;
    let mut raw = Vec::new();
    let prepare = move |batch: Vec<BlockRecord>| -> std::io::Result<DenseBatch> {
        let writes = batch.iter().filter(|r| r.io.op == Op::Write);
        let mut dense = DenseBatch { times_us: writes.clone().map(|r| r.io.time_us).collect(), ..DenseBatch::default() };
        if annotated {
            dense.next_writes = writes.map(|r| r.next_write).collect();
        }
        dense.reads = (batch.len() - dense.times_us.len()) as u64;
        raw.resize(4 * dense.times_us.len(), 0);
        id_file.read_exact(&mut raw)?;
        dense.ids = raw.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        Ok(dense)
    };
    let mut reads = 0u64;
    for batch in staged.input.prepared_batches(prepare) {
        let batch = batch.map_err(&read_error)?.map_err(ids_error)?;
        reads += batch.reads;
        each_batch(&batch)?;
    }
    Ok(reads)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zonekit_trace::BlockIo;

    fn write(block: u64) -> BlockIo {
        BlockIo { time_us: block, volume: 1, block, op: Op::Write, starts_request: true }
    }

    fn binary_trace(path: &Path, blocks: &[u64]) -> Input {
        let mut w = BinaryWriter::create(path, 4096, "test").unwrap();
        for &b in blocks {
            w.push(&write(b)).unwrap();
            // A read between writes, which the ids skip.
            w.push(&BlockIo { op: Op::Read, ..write(b) }).unwrap();
        }
        w.finish().unwrap();
        Input::path(path, None, false)
    }

    fn ids_of(ids: &DenseIds) -> Vec<u32> {
        let bytes = std::fs::read(&ids.path).unwrap();
        bytes[IDS_HEADER_BYTES..].chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
    }

    #[test]
    fn ids_number_blocks_in_order_of_first_write_and_are_cached_beside_the_trace() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("t.zkt");
        let input = binary_trace(&trace, &[7, 3, 7, 9, 3, 3]);
        let staged = stage(&input, dir.path()).unwrap();
        assert!(staged.own_file, "an unfiltered binary trace is used as it is");
        let ids = dense_ids(&staged, dir.path()).unwrap();
        assert_eq!((ids.writes, ids.distinct), (6, 3));
        assert_eq!(ids_of(&ids), [0, 1, 0, 2, 1, 1]);
        assert_eq!(ids.path, ids_cache_path(&trace));
        let mut seen = Vec::new();
        let reads = for_each_dense_batch(&staged, &ids, |batch| {
            assert!(batch.next_writes.is_empty(), "not annotated");
            seen.extend(batch.ids.iter().copied().zip(batch.times_us.iter().copied()));
            Ok(())
        })
        .unwrap();
        assert_eq!(reads, 6);
        assert_eq!(seen, [(0, 7), (1, 3), (0, 7), (2, 9), (1, 3), (1, 3)]);
        // Reused while the trace is unchanged: a marker in the unused header word survives.
        let mut bytes = std::fs::read(&ids.path).unwrap();
        bytes[IDS_HEADER_BYTES] = 0xEE;
        std::fs::write(&ids.path, &bytes).unwrap();
        assert_eq!(ids_of(&dense_ids(&staged, dir.path()).unwrap())[0], 0xEE);
    }

    #[test]
    fn ids_of_a_changed_trace_or_a_damaged_file_are_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("t.zkt");
        let staged = stage(&binary_trace(&trace, &[1, 2, 1]), dir.path()).unwrap();
        let ids = dense_ids(&staged, dir.path()).unwrap();
        // Another trace at the same path (same length, other blocks).
        let staged = stage(&binary_trace(&trace, &[5, 5, 6]), dir.path()).unwrap();
        assert_eq!(ids_of(&dense_ids(&staged, dir.path()).unwrap()), [0, 0, 1]);
        for damage in [|b: &mut Vec<u8>| b.truncate(b.len() - 1), |b: &mut Vec<u8>| b[41] ^= 1, |b: &mut Vec<u8>| b[0] = b'X'] {
            let mut bytes = std::fs::read(&ids.path).unwrap();
            damage(&mut bytes);
            std::fs::write(&ids.path, &bytes).unwrap();
            let again = dense_ids(&staged, dir.path()).unwrap();
            assert_eq!((ids_of(&again), again.distinct), (vec![0, 0, 1], 2));
        }
    }

    #[test]
    fn a_text_trace_is_parsed_once_into_a_temporary_binary_with_its_estimate() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("t.csv");
        let lines: String = (0..50_000u64).map(|i| format!("3,{},{},4096,{}\n", if i % 4 == 0 { 'R' } else { 'W' }, (i * 7919 % 20_000) * 4096, i)).collect();
        std::fs::write(&csv, lines).unwrap();
        let input = Input::path(&csv, None, false);
        let staged = stage(&input, dir.path()).unwrap();
        assert!(!staged.own_file && staged.annotate_in_place);
        let mut hll = DistinctCounter::new();
        for r in input.writes().unwrap() {
            hll.add(r.unwrap().io.key());
        }
        assert_eq!(staged.distinct_estimate, hll.estimate(), "the device is sized as a counting pass would");
        assert_eq!((staged.header.records, staged.header.writes), (50_000, 37_500));
        let future = with_future(staged.clone(), dir.path()).unwrap();
        assert_eq!(future.path, staged.path, "a temporary trace is annotated in place");
        assert!(future.header.has_next_write);
    }

    #[test]
    fn a_parse_error_reaches_the_consumer_after_the_records_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("t.csv");
        let mut lines: String = (0..40_000u64).map(|i| format!("1,W,{},4096,{i}\n", i * 4096)).collect();
        lines.push_str("1,W,oops,4096,1\n");
        std::fs::write(&csv, lines).unwrap();
        let mut seen = 0;
        let err = for_each_batch(&Input::path(&csv, None, false), |b| {
            seen += b.len();
            Ok(())
        })
        .unwrap_err();
        assert_eq!(seen, 40_000);
        assert!(err.to_string().contains("line 40001"), "{err}");
    }
}
