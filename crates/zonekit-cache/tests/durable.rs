//! A durable write-back cache ([`DurableBuckets`]) under crashes: random single-block reads
//! and writes, a commit after each request (as `zonekit cache load` does), and a device that
//! dies at a seeded operation (write, flush, reset, journal append). Reopened after the power
//! loss, every block reads a version between its last committed and its last written one, and
//! reads during the run return the latest. Evictions (dirty write-backs, key removals) happen
//! many times per run. `ZK_SEED=N` reruns one.

use zonekit_base::policy::{self, ParamReader};
use zonekit_base::Rng;
use zonekit_cache::evict::{CacheShape, EVICTIONS};
use zonekit_cache::{Cache, CacheConfig, CacheDevice, CacheError, DurableBuckets, DurableSettings, Hdd, HddConfig, WriteMode};
use zonekit_device::fault::{FaultOn, FaultyDevice};
use zonekit_device::{Geometry, MemDevice, StorageMode, ZoneBehavior};

const BLOCK: usize = 4096;
const DISK_BLOCKS: u64 = 600;

fn device() -> MemDevice {
    let g = Geometry {
        block_size_bytes: BLOCK as u32,
        zone_size_blocks: 16,
        zone_capacity_blocks: 16,
        zone_count: 20,
        conventional_zone_count: 0,
        open_zones_max: None,
        active_zones_max: None,
    };
    MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap()
}

fn data(lba: u64, version: u64) -> Vec<u8> {
    let mut b = vec![(version % 251) as u8 ^ 0x5A; BLOCK];
    b[..8].copy_from_slice(&lba.to_le_bytes());
    b[8..16].copy_from_slice(&version.to_le_bytes());
    b
}

fn version_of(lba: u64, b: &[u8]) -> u64 {
    if b.iter().all(|&x| x == 0) {
        return 0;
    }
    let version = u64::from_le_bytes(b[8..16].try_into().unwrap());
    assert_eq!(b, &data(lba, version)[..], "block {lba} holds damaged or foreign data");
    version
}

type Device = FaultyDevice<MemDevice>;

fn open(dev: Device, disk: &std::fs::File) -> Result<Cache<DurableBuckets<Device>>, CacheError> {
    let buckets = DurableBuckets::open(dev)?;
    let shape = CacheShape { buckets: buckets.buckets(), bucket_blocks: buckets.bucket_blocks() };
    let (info, params) = policy::find(EVICTIONS, "eviction", "bcache").unwrap();
    let eviction = (info.make)(&ParamReader::new(info, &params).unwrap(), shape).unwrap();
    let hdd = Hdd::on_file(HddConfig::barracuda(DISK_BLOCKS, BLOCK as u32), disk.try_clone().unwrap())?;
    let config = CacheConfig { mode: buckets.settings().mode, sequential_cutoff_bytes: 0, ..CacheConfig::default() };
    Cache::new(buckets, hdd, config, eviction, None)
}

#[test]
fn a_write_back_cache_loses_nothing_committed_across_crashes() {
    let seed = std::env::var("ZK_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xCAC4E);
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let disk = std::fs::File::options().read(true).write(true).create(true).truncate(true).open(dir.path().join("disk")).unwrap();
    disk.set_len(DISK_BLOCKS * BLOCK as u64).unwrap();
    let settings = DurableSettings { zones_per_bucket: 1, mode: WriteMode::Writeback, disk_blocks: DISK_BLOCKS };
    let mut dev = DurableBuckets::create(FaultyDevice::new(device()), settings).unwrap().into_device();
    let (mut latest, mut committed) = (vec![0u64; DISK_BLOCKS as usize], vec![0u64; DISK_BLOCKS as usize]);
    let (mut version, mut crashes, mut evictions, mut dirty_seen) = (0u64, 0, 0, 0);
    let mut buf = vec![0u8; BLOCK];
    for round in 0..24 {
        let what = format!("round {round}, ZK_SEED={seed}");
        // Past the reopen and the reads that verify it (a few hundred operations).
        dev.fail_nth(FaultOn::Any, 2000 + rng.below(4000), true);
        let mut cache = open(dev, &disk).unwrap_or_else(|e| panic!("reopen: {e} ({what})"));
        // What survived: between the last commit and the last write of each block.
        for lba in 0..DISK_BLOCKS {
            cache.inspect(lba, &mut buf).unwrap_or_else(|e| panic!("block {lba}: {e} ({what})"));
            let v = version_of(lba, &buf);
            let (c, l) = (committed[lba as usize], latest[lba as usize]);
            assert!(v >= c && v <= l, "block {lba} holds version {v}; committed {c}, latest {l} ({what})");
            (committed[lba as usize], latest[lba as usize]) = (v, v);
        }
        cache.check_invariants().unwrap();
        dirty_seen += cache.cached_blocks().1;
        // Requests until the device dies.
        let died = loop {
            // A hot third of the disk takes most writes, so blocks are rewritten while cached.
            let lba = if rng.below(3) > 0 { rng.below(DISK_BLOCKS / 3) } else { rng.below(DISK_BLOCKS) };
            let result = if rng.below(4) == 0 {
                cache.read(lba, &mut buf).map(|()| assert_eq!(version_of(lba, &buf), latest[lba as usize], "read of block {lba} ({what})"))
            } else {
                version += 1;
                latest[lba as usize] = version;
                cache.write(lba, &data(lba, version))
            };
            if let Err(e) = result.and_then(|()| cache.commit()) {
                break e;
            }
            committed.copy_from_slice(&latest);
        };
        assert!(matches!(died, CacheError::Device(_)), "not the injected fault: {died} ({what})");
        evictions += cache.stats().evictions;
        crashes += 1;
        dev = cache.into_device().into_device();
        dev.disarm();
        dev.inner_mut().power_loss();
    }
    eprintln!("{crashes} crashes, {version} writes, {evictions} evictions, {dirty_seen} dirty blocks found on reopening (ZK_SEED={seed})");
    assert!(evictions > 50 && dirty_seen > 0, "the workload did not evict or leave dirty blocks (ZK_SEED={seed})");
}
