//! The volume's mapping journal under damage and crashes. A flipped byte anywhere in the
//! journal is either refused as corruption (naming the zone and block, and the open writes
//! nothing) or harmless (every block reads what was last flushed): never old data served as
//! if it were current. A flipped byte in a data block is a read error naming the block, or
//! harmless. A crash at any write, flush or zone operation reopens to the last flushed state
//! or later, never to a false corruption.

use std::sync::{Arc, Mutex, MutexGuard};

use zonekit_device::fault::{FaultOn, FaultyDevice};
use zonekit_device::{DeviceStats, Geometry, Lba, MemDevice, StorageMode, ZoneAction, ZoneBehavior, ZoneDescriptor, ZoneFilter, ZoneId, ZoneState, ZonedDevice};
use zonekit_serve::volume::{Volume, VolumeError, VolumeSpec};

/// 512-byte blocks hold 19 journal entries each, so small volumes already have snapshots and
/// commits of several blocks.
const BLOCK_BYTES: usize = 512;
const ZONE_BLOCKS: u64 = 16;
const ZONE_COUNT: u32 = 16;
/// The journal is the last four zones, two halves of two (zones of 16 blocks: a few dozen
/// commits roll it over and fill a half's second zone).
const JOURNAL_ZONES: std::ops::Range<u32> = 12..16;

fn seed() -> u64 {
    std::env::var("ZK_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED)
}

/// xorshift64*.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

fn device() -> MemDevice {
    let g = Geometry {
        block_size_bytes: BLOCK_BYTES as u32,
        zone_size_blocks: ZONE_BLOCKS,
        zone_capacity_blocks: ZONE_BLOCKS,
        zone_count: ZONE_COUNT,
        conventional_zone_count: 0,
        open_zones_max: None,
        active_zones_max: None,
    };
    MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap()
}

/// One placement class: twelve data zones leave GC room (SepBIT's seven classes would need
/// more zones). The journal does not depend on the placement.
fn spec() -> VolumeSpec {
    VolumeSpec { placement: "nosep".into(), utilization: 0.5, ..VolumeSpec::default() }
}

fn data(block: u64, version: u64) -> Vec<u8> {
    let mut b = vec![(version % 251) as u8; BLOCK_BYTES];
    b[..8].copy_from_slice(&block.to_le_bytes());
    b[8..16].copy_from_slice(&version.to_le_bytes());
    b
}

/// The version a block holds (0: never written), checking the rest of it.
fn version_of(block: u64, b: &[u8], what: &str) -> u64 {
    if b.iter().all(|&x| x == 0) {
        return 0;
    }
    let owner = u64::from_le_bytes(b[..8].try_into().unwrap());
    let version = u64::from_le_bytes(b[8..16].try_into().unwrap());
    assert_eq!(owner, block, "block {block} holds block {owner}'s data ({what})");
    assert_eq!(b, &data(block, version)[..], "block {block} version {version} is damaged ({what})");
    version
}

/// A device the test keeps a handle on: the volume takes its device by value, and an open
/// that fails drops it. Counts the calls that could change the device. `stats` is a copy of
/// the inner device's, refreshed after each such call (the FTL reads the wear from it).
struct Shared<D> {
    held: Arc<Mutex<Held<D>>>,
    geometry: Geometry,
    stats: DeviceStats,
}

struct Held<D> {
    dev: D,
    /// Writes, appends, zone operations and flushes.
    mutations: u64,
}

impl<D: ZonedDevice> Shared<D> {
    fn new(dev: D) -> Shared<D> {
        let (geometry, stats) = (*dev.geometry(), dev.stats().clone());
        Shared { held: Arc::new(Mutex::new(Held { dev, mutations: 0 })), geometry, stats }
    }

    /// Another handle on the same device.
    fn handle(&self) -> Shared<D> {
        let stats = self.lock().dev.stats().clone();
        Shared { held: self.held.clone(), geometry: self.geometry, stats }
    }

    fn lock(&self) -> MutexGuard<'_, Held<D>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn mutate<T>(&mut self, op: impl FnOnce(&mut D) -> zonekit_device::Result<T>) -> zonekit_device::Result<T> {
        let mut h = self.held.lock().unwrap_or_else(|p| p.into_inner());
        h.mutations += 1;
        let r = op(&mut h.dev);
        self.stats = h.dev.stats().clone();
        r
    }
}

impl<D: ZonedDevice> ZonedDevice for Shared<D> {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }
    fn behavior(&self) -> ZoneBehavior {
        self.lock().dev.behavior()
    }
    fn report_zones(&mut self, start: Lba, filter: ZoneFilter, max_zones: usize, out: &mut Vec<ZoneDescriptor>) -> zonekit_device::Result<usize> {
        self.lock().dev.report_zones(start, filter, max_zones, out)
    }
    fn read(&mut self, lba: Lba, buf: &mut [u8]) -> zonekit_device::Result<()> {
        self.lock().dev.read(lba, buf)
    }
    fn write(&mut self, lba: Lba, data: &[u8]) -> zonekit_device::Result<()> {
        self.mutate(|d| d.write(lba, data))
    }
    fn append(&mut self, zone: ZoneId, data: &[u8]) -> zonekit_device::Result<Lba> {
        self.mutate(|d| d.append(zone, data))
    }
    fn manage(&mut self, action: ZoneAction, zone: ZoneId) -> zonekit_device::Result<()> {
        self.mutate(|d| d.manage(action, zone))
    }
    fn flush(&mut self) -> zonekit_device::Result<()> {
        self.mutate(|d| d.flush())
    }
    fn stats(&self) -> &DeviceStats {
        &self.stats
    }
}

/// Every zone's written bytes, to rebuild the device with a byte changed.
struct Image {
    zones: Vec<Vec<u8>>,
}

impl Image {
    fn capture(dev: &mut MemDevice) -> Image {
        let mut zones = Vec::new();
        for z in dev.report_all(ZoneFilter::All).unwrap() {
            // A Full zone reports no write pointer; its blocks past what was written read as
            // zeros, and so do the copies.
            let blocks = if z.state == ZoneState::Full { z.capacity_blocks } else { z.written_blocks() };
            let mut bytes = vec![0u8; blocks as usize * BLOCK_BYTES];
            if blocks > 0 {
                dev.read(z.start, &mut bytes).unwrap();
            }
            zones.push(bytes);
        }
        Image { zones }
    }

    /// The device as after a power cycle, holding the image with `change` applied to it.
    fn build(&self, change: impl FnOnce(&mut [Vec<u8>])) -> MemDevice {
        let mut zones = self.zones.clone();
        change(&mut zones);
        let mut dev = device();
        for (z, bytes) in zones.iter().enumerate() {
            for block in bytes.chunks(BLOCK_BYTES) {
                dev.append(ZoneId(z as u32), block).unwrap();
            }
        }
        dev.flush().unwrap();
        dev.power_loss();
        dev
    }

    /// The journal blocks (magic `ZKVJ`), in zone order.
    fn journal(&self) -> Vec<JournalBlock> {
        let mut out = Vec::new();
        for (z, bytes) in self.zones.iter().enumerate() {
            for (i, b) in bytes.chunks(BLOCK_BYTES).enumerate() {
                if &b[0..4] == b"ZKVJ" {
                    assert!(JOURNAL_ZONES.contains(&(z as u32)), "a journal block in zone {z}");
                    let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
                    let entries = u32::from_le_bytes(b[28..32].try_into().unwrap());
                    out.push(JournalBlock { zone: z as u32, index: i as u64, kind: b[6], seq: u64_at(8), snapshot_first: u64_at(16), entries });
                }
            }
        }
        out
    }
}

/// A journal block's place and header fields (`zonekit_device::journal`'s module doc has the
/// layout).
#[derive(Copy, Clone, Debug)]
struct JournalBlock {
    zone: u32,
    index: u64,
    kind: u8,
    seq: u64,
    snapshot_first: u64,
    entries: u32,
}

impl JournalBlock {
    fn half(&self) -> u32 {
        (self.zone - JOURNAL_ZONES.start) / 2
    }

    fn byte_range(&self) -> std::ops::Range<usize> {
        self.index as usize * BLOCK_BYTES..(self.index as usize + 1) * BLOCK_BYTES
    }
}

/// Rewrites a journal block's field and its CRC-32 (of the block with the CRC field zeroed),
/// as a bug or a foreign writer would leave it: intact, but wrong.
fn rewrite_field(block: &mut [u8], at: usize, value: u64) {
    block[at..at + 8].copy_from_slice(&value.to_le_bytes());
    block[40..44].fill(0);
    let crc = crc32fast::hash(block);
    block[40..44].copy_from_slice(&crc.to_le_bytes());
}

/// What the workload wrote: each block's last written and last flushed version.
struct Model {
    latest: Vec<u64>,
    flushed: Vec<u64>,
    version: u64,
    state: u64,
}

impl Model {
    fn new(blocks: u64, seed: u64) -> Model {
        Model { latest: vec![0; blocks as usize], flushed: vec![0; blocks as usize], version: 0, state: seed | 1 }
    }

    /// One batch: `count` writes (the first `sequential` of them to blocks 0, 1, ..., the rest
    /// random), then a flush.
    fn batch<D: ZonedDevice + Send + 'static>(&mut self, vol: &mut Volume<D>, count: u64, sequential: bool) -> Result<(), VolumeError> {
        let blocks = self.latest.len() as u64;
        for i in 0..count {
            let b = if sequential { i % blocks } else { next(&mut self.state) % blocks };
            self.version += 1;
            self.latest[b as usize] = self.version;
            vol.write(b, &data(b, self.version))?;
        }
        vol.flush()?;
        self.flushed.copy_from_slice(&self.latest);
        Ok(())
    }

    /// Every block reads a version between the flushed and the latest one; both become it.
    fn check<D: ZonedDevice + Send + 'static>(&mut self, vol: &mut Volume<D>, what: &str) {
        let mut buf = vec![0u8; BLOCK_BYTES];
        for b in 0..self.latest.len() as u64 {
            vol.read(b, &mut buf).unwrap();
            let v = version_of(b, &buf, what);
            let (flushed, latest) = (self.flushed[b as usize], self.latest[b as usize]);
            assert!(v >= flushed && v <= latest, "block {b} holds version {v}; flushed {flushed}, latest {latest} ({what})");
            self.flushed[b as usize] = v;
            self.latest[b as usize] = v;
        }
    }
}

/// The batches (count, sequential) of the damage tests' two sessions: the first rolls the
/// journal over, the second starts from the open's snapshot (of several blocks), commits a
/// batch of two records blocks and fills into its half's second zone ([`check_shape`]).
fn sessions() -> [Vec<(u64, bool)>; 2] {
    let one = std::iter::once((60, true)).chain(std::iter::repeat_n((1, false), 30)).collect();
    let two = std::iter::once((35, true)).chain(std::iter::repeat_n((1, false), 11)).collect();
    [one, two]
}

/// A volume written by [`sessions`], closed after its last flush; its image and each block's
/// flushed version.
fn written_volume(seed: u64) -> (Image, Vec<u64>) {
    let mut dev = device();
    let mut model = None;
    for session in sessions() {
        let mut vol = Volume::open(dev, &spec()).unwrap();
        let m = model.get_or_insert_with(|| Model::new(vol.blocks(), seed));
        for (count, sequential) in session {
            m.batch(&mut vol, count, sequential).unwrap();
        }
        dev = vol.into_device().unwrap();
    }
    let image = Image::capture(&mut dev);
    (image, model.unwrap().flushed)
}

/// Opens the volume on `dev`: `Err(message)` if it is refused as corrupt (after checking that
/// the open wrote nothing and named a zone), `Ok(())` if every block reads back what was
/// flushed; panics if a block does not, or on any other error.
fn open_damaged(dev: MemDevice, flushed: &[u64], what: &str) -> Result<(), String> {
    let shared = Shared::new(dev);
    let probe = shared.handle();
    match Volume::open(shared, &spec()) {
        Err(VolumeError::Corrupt(m)) => {
            assert_eq!(probe.lock().mutations, 0, "the open refused ({m}) but changed the device first ({what})");
            assert!(m.contains("zone "), "the error names no zone: {m} ({what})");
            Err(m)
        }
        Err(e) => panic!("open failed with another error than corruption: {e} ({what})"),
        Ok(mut vol) => {
            let mut buf = vec![0u8; BLOCK_BYTES];
            for (b, &v) in flushed.iter().enumerate() {
                vol.read(b as u64, &mut buf).unwrap();
                let got = version_of(b as u64, &buf, what);
                assert_eq!(got, v, "block {b} reads version {got}, but {v} was flushed: the damage went unnoticed ({what})");
            }
            Ok(())
        }
    }
}

/// The workload really has what the damage tests are about.
fn check_shape(journal: &[JournalBlock]) {
    let newest = journal.iter().max_by_key(|b| b.seq).unwrap().half();
    let in_half = |h: u32| journal.iter().filter(move |b| b.half() == h);
    let older_snapshot = in_half(1 - newest).find(|b| b.kind == 1 && b.seq == b.snapshot_first);
    assert!(older_snapshot.is_some_and(|b| b.seq > 0), "the first session did not roll the journal over");
    assert!(in_half(newest).any(|b| b.zone % 2 == 1), "the newest half does not reach its second zone");
    let snapshot_starts = journal.iter().filter(|b| b.kind == 1 && b.seq == b.snapshot_first).count();
    assert_eq!(snapshot_starts, 2, "not a snapshot in each half");
    assert!(journal.iter().any(|b| b.kind == 1 && b.seq > b.snapshot_first), "no snapshot of several blocks");
    let records = |b: &&JournalBlock| b.kind == 2 && b.entries > 0;
    assert!(journal.iter().filter(records).any(|b| journal.iter().filter(records).any(|o| o.seq == b.seq + 1)), "no commit of several records blocks");
}

#[test]
fn every_flipped_journal_byte_is_detected_or_harmless() {
    let seed = seed();
    let started = std::time::Instant::now();
    let (image, flushed) = written_volume(seed);
    let journal = image.journal();
    check_shape(&journal);
    let written: usize = image.zones[JOURNAL_ZONES.start as usize..].iter().map(|z| z.len() / BLOCK_BYTES).sum();
    assert_eq!(journal.len(), written, "blocks in the journal's zones that are not journal blocks");
    let newest_half = journal.iter().max_by_key(|b| b.seq).unwrap().half();
    let last = journal.iter().filter(|b| b.half() == newest_half).max_by_key(|b| b.seq).copied().unwrap();
    let mut state = seed | 1;
    let (mut detected, mut harmless) = (0u64, 0u64);
    for jb in &journal {
        for at in jb.byte_range() {
            let mask = (next(&mut state) % 255 + 1) as u8;
            let what = format!("zone {} block {} byte {} ^ {mask:#04x}, ZK_SEED={seed}", jb.zone, jb.index, at % BLOCK_BYTES);
            let dev = image.build(|zones| zones[jb.zone as usize][at] ^= mask);
            // Nothing committed depends on the newest half's last block (its seal) nor on
            // the older half (superseded by the newest snapshot; the open resets it): damage
            // there is harmless. Anywhere else it must be detected.
            let expect_harmless = jb.half() != newest_half || jb.seq == last.seq;
            match open_damaged(dev, &flushed, &what) {
                Err(m) => {
                    assert!(!expect_harmless, "damage to a block nothing depends on refused the volume: {m} ({what})");
                    assert!(m.contains(&format!("zone {} block {}", jb.zone, jb.index)), "the error names another block: {m} ({what})");
                    detected += 1;
                }
                Ok(()) => {
                    assert!(expect_harmless, "damage to a committed block went unnoticed ({what})");
                    harmless += 1;
                }
            }
        }
    }
    let newest = journal.iter().filter(|b| b.half() == newest_half).count();
    eprintln!(
        "{} journal blocks ({newest} in the newest half): {detected} flipped bytes detected, {harmless} harmless, in {:.1?} (ZK_SEED={seed})",
        journal.len(),
        started.elapsed()
    );
    assert!(detected > 0 && harmless > 0);
}

/// Every byte of every data block that holds a flushed version, flipped in turn: reading the
/// volume back either fails for that block with [`VolumeError::Data`] naming it, or returns the
/// version flushed (the byte was in a stale copy). Before data checksums the flipped byte was
/// returned as data.
#[test]
fn a_flipped_byte_in_user_data_is_a_read_error_not_data() {
    let seed = seed();
    let (image, flushed) = written_volume(seed);
    let mut state = seed | 1;
    let (mut detected, mut harmless) = (0u64, 0u64);
    let mut buf = vec![0u8; BLOCK_BYTES];
    for z in 0..JOURNAL_ZONES.start as usize {
        for (i, block) in image.zones[z].chunks(BLOCK_BYTES).enumerate() {
            if block.iter().all(|&x| x == 0) {
                continue;
            }
            // A seeded sample of each block's bytes: the block's identity and its filler.
            for at in [0, 8, 16 + (next(&mut state) % (BLOCK_BYTES as u64 - 16)) as usize] {
                let mask = (next(&mut state) % 255 + 1) as u8;
                let what = format!("zone {z} block {i} byte {at} ^ {mask:#04x}, ZK_SEED={seed}");
                let dev = image.build(|zones| zones[z][i * BLOCK_BYTES + at] ^= mask);
                let mut vol = Volume::open(dev, &spec()).unwrap_or_else(|e| panic!("damaged data refused the open: {e} ({what})"));
                let mut failed = 0;
                for (b, &v) in flushed.iter().enumerate() {
                    match vol.read(b as u64, &mut buf) {
                        Ok(()) => assert_eq!(version_of(b as u64, &buf, &what), v, "block {b} ({what})"),
                        Err(VolumeError::Data { block, lba, .. }) => {
                            assert_eq!((block, lba), (b as u64, (z * ZONE_BLOCKS as usize + i) as u64), "the error names another block ({what})");
                            failed += 1;
                        }
                        Err(e) => panic!("block {b}: {e} ({what})"),
                    }
                }
                assert!(failed <= 1, "{failed} blocks failed for one flipped byte ({what})");
                detected += failed;
                harmless += 1 - failed;
            }
        }
    }
    eprintln!("data blocks: {detected} flipped bytes detected, {harmless} harmless (stale copies), ZK_SEED={seed}");
    assert!(detected > 0 && harmless > 0);
}

#[test]
fn damage_to_the_newest_commits_last_records_block_is_detected() {
    let seed = seed();
    let (image, flushed) = written_volume(seed);
    let journal = image.journal();
    // The newest block with entries is the last records block of the newest commit (a seal,
    // if any, has none).
    let target = journal.iter().filter(|b| b.kind == 2 && b.entries > 0).max_by_key(|b| b.seq).copied().unwrap();
    let dev = image.build(|zones| zones[target.zone as usize][target.byte_range().start + 100] ^= 0x10);
    let m = open_damaged(dev, &flushed, &format!("ZK_SEED={seed}")).expect_err("a damaged committed records block went unnoticed");
    assert!(m.contains(&format!("zone {} block {}", target.zone, target.index)), "{m}");
}

/// The newest commit's last records block and the seal after it, both damaged: a crash tears
/// one block at most, so this is corruption, not a torn tail that drops the commit.
#[test]
fn damage_to_the_newest_commit_and_its_seal_together_is_detected() {
    let seed = seed();
    let (image, flushed) = written_volume(seed);
    let journal = image.journal();
    let records = journal.iter().filter(|b| b.kind == 2 && b.entries > 0).max_by_key(|b| b.seq).copied().unwrap();
    let seal = journal.iter().max_by_key(|b| b.seq).copied().unwrap();
    assert_eq!(seal.seq, records.seq + 1, "the newest block is the newest commit's seal");
    let dev = image.build(|zones| {
        zones[records.zone as usize][records.byte_range().start + 100] ^= 0x10;
        zones[seal.zone as usize][seal.byte_range().start + 20] ^= 0x10;
    });
    let m = open_damaged(dev, &flushed, &format!("ZK_SEED={seed}")).expect_err("a damaged newest commit and seal went unnoticed");
    assert!(m.contains(&format!("zone {} block {}", records.zone, records.index)), "{m}");
}

#[test]
fn a_sequence_gap_or_another_volume_size_after_intact_blocks_is_corruption() {
    let seed = seed();
    let (image, flushed) = written_volume(seed);
    let journal = image.journal();
    let newest_half = journal.iter().max_by_key(|b| b.seq).unwrap().half();
    let in_newest: Vec<JournalBlock> = journal.iter().filter(|b| b.half() == newest_half).copied().collect();
    // A records block in the middle of the newest half, and its last block.
    let middle = in_newest.iter().filter(|b| b.kind == 2).nth(2).copied().unwrap();
    let last = *in_newest.last().unwrap();
    for target in [middle, last] {
        // Sequence number at byte 8, volume blocks at byte 32.
        for (at, delta, field) in [(8, 1, "sequence number"), (32, 1, "volume size")] {
            let dev = image.build(|zones| {
                let b = &mut zones[target.zone as usize][target.byte_range()];
                let old = u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
                rewrite_field(b, at, old + delta);
            });
            let what = format!("{field} of zone {} block {}, ZK_SEED={seed}", target.zone, target.index);
            let m = open_damaged(dev, &flushed, &what).expect_err(&format!("a changed {what} went unnoticed"));
            assert!(m.contains(&format!("zone {} block {}", target.zone, target.index)), "{m} ({what})");
        }
    }
}

#[test]
fn a_torn_commit_after_the_newest_seal_is_a_torn_tail() {
    let seed = seed();
    let (image, flushed) = written_volume(seed);
    let journal = image.journal();
    let last = *journal.iter().max_by_key(|b| b.seq).unwrap();
    let records = *journal.iter().filter(|b| b.kind == 2 && b.entries > 0).max_by_key(|b| b.seq).unwrap();
    assert!(last.index + 2 < ZONE_BLOCKS, "no room after the newest block in its zone");
    // A commit a crash cut short: its first records block whole (a copy of the newest one:
    // the mapping stays as flushed), its second torn after its first sectors.
    let copy = image.zones[records.zone as usize][records.byte_range()].to_vec();
    for intact_first in [false, true] {
        let dev = image.build(|zones| {
            let mut seq = last.seq + 1;
            if intact_first {
                let mut b = copy.clone();
                rewrite_field(&mut b, 8, seq);
                zones[last.zone as usize].extend_from_slice(&b);
                seq += 1;
            }
            let mut torn = copy.clone();
            rewrite_field(&mut torn, 8, seq);
            torn[BLOCK_BYTES / 2..].fill(0);
            zones[last.zone as usize].extend_from_slice(&torn);
        });
        let what = format!("torn commit, first block intact: {intact_first}, ZK_SEED={seed}");
        open_damaged(dev, &flushed, &what).unwrap_or_else(|m| panic!("a torn tail was refused as corruption: {m} ({what})"));
    }
}

/// Takes the seals out of the journal in `zones` and closes up the sequence numbers: the
/// journal as a build before seals wrote it.
fn strip_seals(zones: &mut [Vec<u8>]) {
    for first_zone in JOURNAL_ZONES.step_by(2).map(|z| z as usize) {
        let mut blocks: Vec<Vec<u8>> = zones[first_zone].chunks(BLOCK_BYTES).chain(zones[first_zone + 1].chunks(BLOCK_BYTES)).map(|b| b.to_vec()).collect();
        blocks.retain(|b| b[6] != 2 || b[28..32] != [0; 4]);
        let Some(first) = blocks.first().map(|b| u64::from_le_bytes(b[8..16].try_into().unwrap())) else { continue };
        for (i, b) in blocks.iter_mut().enumerate() {
            rewrite_field(b, 8, first + i as u64);
        }
        let split = blocks.len().min(ZONE_BLOCKS as usize);
        zones[first_zone] = blocks[..split].concat();
        zones[first_zone + 1] = blocks[split..].concat();
    }
}

#[test]
fn a_journal_written_before_seals_still_opens() {
    let seed = seed();
    let (image, flushed) = written_volume(seed);
    let mut dev = image.build(strip_seals);
    assert!(Image::capture(&mut dev).journal().iter().all(|b| b.kind == 1 || b.entries > 0));
    open_damaged(dev, &flushed, &format!("journal without seals, ZK_SEED={seed}")).unwrap_or_else(|m| panic!("a journal without seals was refused: {m}"));
}

/// A volume through the crash test's workload: batches, a reopen, more batches. Stops at the
/// first error (the device died) and returns it.
fn crash_workload(dev: &Shared<FaultyDevice<MemDevice>>, seed: u64, model: &mut Option<Model>, gcs: &mut u64) -> Result<(), VolumeError> {
    // Enough writes to the 96 blocks for GC to run (its commits before each reset are crash
    // points too) and for the journal to roll over; batches of several records blocks.
    let one = std::iter::once((70, true)).chain(std::iter::repeat_n((8, false), 20)).collect::<Vec<_>>();
    let two = std::iter::once((40, false)).chain(std::iter::repeat_n((8, false), 15)).collect::<Vec<_>>();
    for session in [one, two] {
        let mut vol = Volume::open(dev.handle(), &spec())?;
        let m = model.get_or_insert_with(|| Model::new(vol.blocks(), seed));
        for (count, sequential) in session {
            m.batch(&mut vol, count, sequential)?;
        }
        *gcs += vol.ftl_stats().gc_count;
        vol.into_device()?;
    }
    Ok(())
}

#[test]
fn a_crash_at_any_device_operation_reopens_to_the_flushed_state() {
    let seed = seed();
    let started = std::time::Instant::now();
    let mut runs = Vec::new();
    let mut gcs = 0;
    for on in [FaultOn::Writes, FaultOn::Flushes, FaultOn::ZoneManagement] {
        for nth in 0.. {
            let dev = Shared::new(FaultyDevice::new(device()));
            dev.lock().dev.fail_nth(on, nth, true);
            let mut model = None;
            let what = format!("crash at {on:?} {nth}, ZK_SEED={seed}");
            if crash_workload(&dev, seed, &mut model, &mut gcs).is_ok() {
                assert!(nth > 0, "{what}: the workload did nothing");
                runs.push(format!("{nth} {on:?}"));
                break;
            }
            {
                let mut h = dev.lock();
                h.dev.disarm();
                h.dev.inner_mut().power_loss();
            }
            // No false corruption: the volume opens at what was flushed (or later), goes on,
            // and keeps what it flushes after the crash.
            let mut vol = Volume::open(dev.handle(), &spec()).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
            let m = model.get_or_insert_with(|| Model::new(vol.blocks(), seed));
            m.check(&mut vol, &what);
            m.batch(&mut vol, 20, false).unwrap();
            vol.into_device().unwrap();
            dev.lock().dev.inner_mut().power_loss();
            let mut vol = Volume::open(dev.handle(), &spec()).unwrap_or_else(|e| panic!("{what}: second reopen: {e}"));
            m.check(&mut vol, &what);
        }
    }
    eprintln!("crashes at each of {}; {gcs} GCs in the workloads; in {:.1?} (ZK_SEED={seed})", runs.join(", "), started.elapsed());
    assert!(gcs > 0, "the workload never ran GC");
}
