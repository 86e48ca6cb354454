//! The cache against a model of the backing disk: random reads and writes of random lengths,
//! in every write mode, with every bucket eviction policy and with and without a sampler, in
//! data mode on a small zoned device, so buckets are evicted (and dirty data written back)
//! many times. Every read must return the latest data written; after a flush the disk alone
//! must hold it. Crashes (the in-memory index lost and rebuilt from the device) come at
//! random points and lose nothing acknowledged. A failure names the configuration and seed; `ZONEKIT_SEED=N` reruns one.

use zonekit_base::policy::{self, ParamReader};
use zonekit_base::Rng;
use zonekit_cache::evict::{CacheShape, EVICTIONS};
use zonekit_cache::sampler::{SamplerBudget, SAMPLERS};
use zonekit_cache::{Admission, Cache, CacheConfig, CacheDevice, Hdd, HddConfig, MetadataConfig, WriteMode, ZonedBuckets};
use zonekit_device::{Geometry, MemDevice, StorageMode, ZoneBehavior};

const BLOCK: usize = 4096;
const ZONE_BLOCKS: u64 = 16;
const ZONES: u32 = 16;
const DISK_BLOCKS: u64 = 800;

fn geometry() -> Geometry {
    Geometry {
        block_size_bytes: BLOCK as u32,
        zone_size_blocks: ZONE_BLOCKS,
        zone_capacity_blocks: ZONE_BLOCKS,
        zone_count: ZONES,
        conventional_zone_count: 0,
        open_zones_max: None,
        active_zones_max: None,
    }
}

fn cache(mode: WriteMode, eviction: &str, sampler: Option<&str>, write_points: u32, admission: Admission, metadata: Option<MetadataConfig>) -> Cache<ZonedBuckets<MemDevice>> {
    let geometry = geometry();
    let device = ZonedBuckets::new(MemDevice::new(geometry, ZoneBehavior::default(), StorageMode::Data).unwrap(), ZONE_BLOCKS * BLOCK as u64).unwrap();
    let shape = CacheShape { buckets: device.buckets(), bucket_blocks: device.bucket_blocks() };
    let (info, params) = policy::find(EVICTIONS, "eviction", eviction).unwrap();
    let eviction = (info.make)(&ParamReader::new(info, &params).unwrap(), shape).unwrap();
    let budget = SamplerBudget { memory_bytes: 256, chunk_bytes: 8 * BLOCK as u64 };
    let sampler = sampler.map(|name| {
        let (info, params) = policy::find(SAMPLERS, "sampler", name).unwrap();
        (info.make)(&ParamReader::new(info, &params).unwrap(), budget).unwrap()
    });
    let config = CacheConfig { mode, sequential_cutoff_bytes: 24 * BLOCK as u64, chunk_bytes: budget.chunk_bytes, write_points, admission, metadata, ..CacheConfig::default() };
    Cache::new(device, Hdd::new(HddConfig::barracuda(DISK_BLOCKS, BLOCK as u32), true).unwrap(), config, eviction, sampler).unwrap()
}

fn run(mode: WriteMode, eviction: &str, sampler: Option<&str>, write_points: u32, admission: Admission, seed: u64) -> Result<(), String> {
    run_with(mode, eviction, sampler, write_points, admission, None, seed)
}

fn run_with(mode: WriteMode, eviction: &str, sampler: Option<&str>, write_points: u32, admission: Admission, metadata: Option<MetadataConfig>, seed: u64) -> Result<(), String> {
    let name = format!("{mode:?} {eviction} {sampler:?} {write_points} write points, {admission:?}, {metadata:?}, seed {seed}");
    let mut c = cache(mode, eviction, sampler, write_points, admission, metadata);
    let mut model = vec![0u8; DISK_BLOCKS as usize * BLOCK];
    let mut rng = Rng::new(seed);
    for step in 0..3000u32 {
        let at = |e: String| format!("{name}, step {step}: {e}");
        // Skewed: most requests go to the first 96 blocks, so there are hits to evict.
        let lba = if rng.chance(0.8) { rng.below(192) } else { rng.below(DISK_BLOCKS) };
        let blocks = (1 + if rng.chance(0.1) { rng.below(32) } else { rng.below(3) }).min(DISK_BLOCKS - lba);
        let bytes = blocks as usize * BLOCK;
        let task = rng.below(4) as u32;
        let range = lba as usize * BLOCK..lba as usize * BLOCK + bytes;
        if rng.chance(0.4) {
            let fill = rng.below(255) as u8 + 1;
            let data: Vec<u8> = (0..bytes).map(|i| fill.wrapping_add((i / BLOCK) as u8)).collect();
            c.write_as(task, lba, &data).map_err(|e| at(e.to_string()))?;
            model[range].copy_from_slice(&data);
        } else {
            let mut buf = vec![0u8; bytes];
            c.read_as(task, lba, &mut buf).map_err(|e| at(e.to_string()))?;
            if buf != model[range.clone()] {
                let first = buf.iter().zip(&model[range]).position(|(a, b)| a != b).unwrap();
                return Err(at(format!("read of {blocks} blocks at {lba} differs at block {}", lba + (first / BLOCK) as u64)));
            }
        }
        // A crash: what was acknowledged (in the cache or on the disk) must survive it.
        if rng.chance(0.01) {
            c.crash_and_recover().map_err(|e| at(format!("recovery: {e}")))?;
            c.check_invariants().map_err(|e| at(format!("after recovery: {e}")))?;
        }
        if step % 100 == 0 {
            c.check_invariants().map_err(|e| at(e.to_string()))?;
        }
    }
    let s = c.stats().clone();
    if s.evictions == 0 || s.read_block_hits == 0 {
        return Err(format!("{name}: {} evictions, {} hits: the test did not exercise the cache", s.evictions, s.read_block_hits));
    }
    if mode == WriteMode::Writeback && s.writeback_blocks == 0 {
        return Err(format!("{name}: writeback mode wrote nothing back on eviction"));
    }
    // After a flush the disk holds everything: read it through a cold cache.
    c.flush().map_err(|e| e.to_string())?;
    let mut all = vec![0u8; DISK_BLOCKS as usize * BLOCK];
    c.read(0, &mut all).map_err(|e| e.to_string())?;
    if all != model {
        return Err(format!("{name}: final read-back differs"));
    }
    Ok(())
}

#[test]
fn every_mode_and_policy_returns_the_latest_data() {
    let seeds: Vec<u64> = match std::env::var("ZONEKIT_SEED") {
        Ok(s) => vec![s.parse().expect("ZONEKIT_SEED is a number")],
        Err(_) => vec![1, 2],
    };
    let mut failures = Vec::new();
    for mode in [WriteMode::Writethrough, WriteMode::Writeback, WriteMode::Writearound] {
        for info in EVICTIONS {
            for sampler in [None, Some("lru"), Some("dam")] {
                for &seed in &seeds {
                    if let Err(e) = run(mode, info.name, sampler, 1, Admission::All, seed) {
                        failures.push(e);
                    }
                }
            }
        }
        for &seed in &seeds {
            if let Err(e) = run(mode, "lfu", Some("slru"), 2, Admission::All, seed) {
                failures.push(e);
            }
            if let Err(e) = run(mode, "lfu", None, 1, Admission::Ghost { blocks: 64 }, seed) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// bcache's metadata in the same buckets changes what the cache holds, never what it returns:
/// btree nodes, journal and prio buckets are taken, rewritten and reset among the data's.
#[test]
fn bcache_metadata_keeps_every_read_right() {
    // 16 buckets: 2 journal, 1 prio (2 while rewritten), a root leaf, a reserve of 3, one
    // open; 2-block (8 KiB) nodes so that leaves are rewritten often.
    let metadata = MetadataConfig { btree_reserve_buckets: 3, btree_node_bytes: 8192, ..MetadataConfig::default() };
    let mut failures = Vec::new();
    for mode in [WriteMode::Writethrough, WriteMode::Writeback, WriteMode::Writearound] {
        for eviction in ["lfu", "bcache", "region-fifo"] {
            for seed in [1, 2] {
                if let Err(e) = run_with(mode, eviction, None, 1, Admission::All, Some(metadata), seed) {
                    failures.push(e);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    // A metadata model that cannot fit is refused, naming what it takes.
    let geometry = geometry();
    let device = ZonedBuckets::new(MemDevice::new(geometry, ZoneBehavior::default(), StorageMode::MetadataOnly).unwrap(), ZONE_BLOCKS * BLOCK as u64).unwrap();
    let shape = CacheShape { buckets: device.buckets(), bucket_blocks: device.bucket_blocks() };
    let (info, params) = policy::find(EVICTIONS, "eviction", "lfu").unwrap();
    let eviction = (info.make)(&ParamReader::new(info, &params).unwrap(), shape).unwrap();
    let config = CacheConfig { metadata: Some(MetadataConfig::default()), write_points: 4, ..CacheConfig::default() };
    let e = Cache::new(device, Hdd::new(HddConfig::barracuda(DISK_BLOCKS, BLOCK as u32), false).unwrap(), config, eviction, None).err().unwrap().to_string();
    assert!(e.contains("bcache's metadata takes 13 buckets at start") && e.contains("the cache has 16"), "{e}");
}

/// A cache larger than its disk (the thesis' literal 6.4 M records of 1 KiB in 8 GiB): every
/// block fits, nothing is evicted, and every read after the first write hits with the data
/// written.
#[test]
fn a_cache_larger_than_its_disk_holds_all_of_it() {
    let geometry = geometry();
    let device = ZonedBuckets::new(MemDevice::new(geometry, ZoneBehavior::default(), StorageMode::Data).unwrap(), ZONE_BLOCKS * BLOCK as u64).unwrap();
    let disk_blocks = ZONES as u64 * ZONE_BLOCKS / 2;
    let shape = CacheShape { buckets: device.buckets(), bucket_blocks: device.bucket_blocks() };
    let (info, params) = policy::find(EVICTIONS, "eviction", "lfu").unwrap();
    let eviction = (info.make)(&ParamReader::new(info, &params).unwrap(), shape).unwrap();
    let hdd = Hdd::new(HddConfig::barracuda(disk_blocks, BLOCK as u32), true).unwrap();
    let mut c = Cache::new(device, hdd, CacheConfig::default(), eviction, None).unwrap();
    // 37 is prime to the disk's 128 blocks: every block once, never two in a row.
    let order: Vec<u64> = (0..disk_blocks).map(|i| i * 37 % disk_blocks).collect();
    for &lba in &order {
        c.write(lba, &[lba as u8 ^ 0x5a; BLOCK]).unwrap();
    }
    let mut buf = [0u8; BLOCK];
    for _ in 0..3 {
        for &lba in &order {
            c.read(lba, &mut buf).unwrap();
            assert!(buf.iter().all(|&b| b == lba as u8 ^ 0x5a), "block {lba}");
        }
    }
    let s = c.stats();
    assert_eq!((s.read_blocks, s.read_block_hits, s.evictions), (3 * disk_blocks, 3 * disk_blocks, 0));
    c.check_invariants().unwrap();
}

#[test]
fn bad_configurations_are_refused() {
    let geometry = geometry();
    let mem = || MemDevice::new(geometry, ZoneBehavior::default(), StorageMode::MetadataOnly).unwrap();
    let err = ZonedBuckets::new(mem(), ZONE_BLOCKS * BLOCK as u64 + 4096).err().unwrap().to_string();
    assert!(err.contains("not a whole number of 65536-byte zones"), "{err}");
    // A request beyond the disk.
    let mut c = cache(WriteMode::Writethrough, "lru", None, 1, Admission::All, None);
    let err = c.read(DISK_BLOCKS - 1, &mut [0u8; 8192]).unwrap_err().to_string();
    assert!(err.contains("beyond the 800-block backing device"), "{err}");
}

/// A device that records the placement classes the cache tells it, as an FDP SSD would use them.
struct Classed {
    inner: ZonedBuckets<MemDevice>,
    classes: Option<u32>,
    bucket_class: Vec<Option<u32>>,
    blocks_by_class: Vec<u64>,
}

impl CacheDevice for Classed {
    fn buckets(&self) -> u32 {
        self.inner.buckets()
    }
    fn bucket_blocks(&self) -> u64 {
        self.inner.bucket_blocks()
    }
    fn block_bytes(&self) -> u32 {
        self.inner.block_bytes()
    }
    fn write(&mut self, bucket: u32, offset: u64, data: &[u8]) -> zonekit_cache::Result<()> {
        let class = self.bucket_class[bucket as usize].expect("a bucket is written only after the cache names its class");
        self.blocks_by_class[class as usize] += (data.len() / BLOCK) as u64;
        self.inner.write(bucket, offset, data)
    }
    fn read(&mut self, bucket: u32, offset: u64, buf: &mut [u8]) -> zonekit_cache::Result<()> {
        self.inner.read(bucket, offset, buf)
    }
    fn evict(&mut self, bucket: u32) -> zonekit_cache::Result<()> {
        self.bucket_class[bucket as usize] = None;
        self.inner.evict(bucket)
    }
    fn placement_classes(&mut self, classes: u32) {
        assert!(self.classes.is_none(), "told twice");
        self.classes = Some(classes);
        self.blocks_by_class = vec![0; classes as usize];
    }
    fn bucket_opened(&mut self, bucket: u32, class: u32) {
        assert!(class < self.classes.expect("classes are told before any bucket opens"), "class {class}");
        self.bucket_class[bucket as usize] = Some(class);
    }
    fn bytes_written(&self) -> u64 {
        self.inner.bytes_written()
    }
}

fn classed_cache(sampler: Option<&str>, write_points: u32, metadata: Option<MetadataConfig>) -> Cache<Classed> {
    let inner = ZonedBuckets::new(MemDevice::new(geometry(), ZoneBehavior::default(), StorageMode::MetadataOnly).unwrap(), ZONE_BLOCKS * BLOCK as u64).unwrap();
    let device = Classed { bucket_class: vec![None; inner.buckets() as usize], inner, classes: None, blocks_by_class: Vec::new() };
    let shape = CacheShape { buckets: device.buckets(), bucket_blocks: device.bucket_blocks() };
    let (info, params) = policy::find(EVICTIONS, "eviction", "lfu").unwrap();
    let eviction = (info.make)(&ParamReader::new(info, &params).unwrap(), shape).unwrap();
    let budget = SamplerBudget { memory_bytes: 256, chunk_bytes: 8 * BLOCK as u64 };
    let sampler = sampler.map(|name| {
        let (info, params) = policy::find(SAMPLERS, "sampler", name).unwrap();
        (info.make)(&ParamReader::new(info, &params).unwrap(), budget).unwrap()
    });
    let config = CacheConfig { sequential_cutoff_bytes: 24 * BLOCK as u64, chunk_bytes: budget.chunk_bytes, write_points, metadata, ..CacheConfig::default() };
    Cache::new(device, Hdd::new(HddConfig::barracuda(DISK_BLOCKS, BLOCK as u32), false).unwrap(), config, eviction, sampler).unwrap()
}

fn skewed_reads(c: &mut Cache<Classed>) {
    let mut rng = Rng::new(5);
    let mut buf = vec![0u8; BLOCK];
    for step in 0..4000u32 {
        let lba = if rng.chance(0.8) { rng.below(192) } else { rng.below(DISK_BLOCKS) };
        c.read_as(step % 2, lba, &mut buf).unwrap();
    }
}

/// The classes a device hears: the hottest temperature's write points first, then the colder
/// ones; bcache's metadata before all of them.
#[test]
fn buckets_are_opened_with_their_placement_class_hottest_first() {
    let mut c = classed_cache(Some("lru"), 2, None);
    skewed_reads(&mut c);
    let d = c.device();
    assert_eq!(d.classes, Some(4));
    let s = c.stats();
    assert!(s.evictions > 0 && s.inserted_per_class.iter().all(|&n| n > 0), "{s:?}");
    // The sampler's class 1 (hot) is device classes 0–1, its class 0 (cold) 2–3.
    assert_eq!(d.blocks_by_class[0] + d.blocks_by_class[1], s.inserted_per_class[1], "{:?}", d.blocks_by_class);
    assert_eq!(d.blocks_by_class[2] + d.blocks_by_class[3], s.inserted_per_class[0], "{:?}", d.blocks_by_class);
    assert!(d.blocks_by_class.iter().all(|&n| n > 0), "{:?}", d.blocks_by_class);

    let metadata = MetadataConfig { btree_reserve_buckets: 3, btree_node_bytes: 8192, ..MetadataConfig::default() };
    let mut c = classed_cache(None, 1, Some(metadata));
    skewed_reads(&mut c);
    let d = c.device();
    assert_eq!(d.classes, Some(2));
    let m = c.metadata().unwrap();
    assert_eq!(d.blocks_by_class[0], m.btree_blocks_written + m.journal_blocks_written + m.prio_blocks_written);
    assert_eq!(d.blocks_by_class[1], c.stats().cache_blocks_written);
}
