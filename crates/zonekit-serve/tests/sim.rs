//! Deterministic fault simulation of the served volume's mapping journal (issue 44): each seed
//! drives random block writes, reads and flushes through a [`Volume`] (the block FTL with GC
//! running, its mapping journalled in the device's last zones) over a [`SimDevice`]; the device
//! dies at an operation the seed picks (inside a write, a GC move, a journal commit before a
//! reset, a flush, or the reopen itself) and comes back as a real drive may (unflushed writes
//! lost, zones cut at any block, out of order across zones, sometimes flipped bits). Reopened,
//! every block must read its last flushed version or one written after that flush, whole
//! (never an older one, never a mixture, never another block's data); a flipped bit fails the
//! open or the read of that block, or changes nothing. Replay a failure with
//! `ZONEKIT_SIM_SEED=<seed> cargo test -p zonekit-serve --test sim -- seeds`; `scripts/soak
//! volume --seconds N` runs more.

use std::sync::atomic::{AtomicU64, Ordering};

use zonekit_base::Rng;
use zonekit_device::sim::{run_seeds, Coverage, Faults, SimDevice};
use zonekit_device::{Geometry, ZoneBehavior};
use zonekit_serve::volume::{Volume, VolumeError, VolumeSpec};

/// Small blocks and zones, so that a few hundred writes fill the device, GC runs, and the
/// journal (19 entries to a 512-byte block) rolls over between its halves.
const BLOCK: usize = 512;
const ZONE_BLOCKS: u64 = 16;

/// GC runs over all seeds: the journal's commit before a reset must be exercised.
static GC_RUNS: AtomicU64 = AtomicU64::new(0);

fn geometry(rng: &mut Rng) -> Geometry {
    Geometry {
        block_size_bytes: BLOCK as u32,
        zone_size_blocks: ZONE_BLOCKS,
        zone_capacity_blocks: ZONE_BLOCKS,
        zone_count: 16 + rng.below(8) as u32,
        conventional_zone_count: 0,
        open_zones_max: None,
        active_zones_max: None,
    }
}

/// One placement class leaves GC room on a device this small (SepBIT's classes would not).
fn spec(rng: &mut Rng) -> VolumeSpec {
    let victim = if rng.chance(0.5) { "greedy" } else { "cb" };
    VolumeSpec { placement: "nosep".into(), victim: victim.into(), utilization: 0.4 + rng.below(3) as f64 * 0.05, ..VolumeSpec::default() }
}

fn data(block: u64, version: u64) -> Vec<u8> {
    let mut b = vec![(version % 251) as u8 ^ 0xA5; BLOCK];
    b[..8].copy_from_slice(&block.to_le_bytes());
    b[8..16].copy_from_slice(&version.to_le_bytes());
    b
}

/// The version a block holds (0: never written), or `None` if it is not data the run wrote
/// to this block.
fn version_of(block: u64, b: &[u8]) -> Option<u64> {
    if b.iter().all(|&x| x == 0) {
        return Some(0);
    }
    let version = u64::from_le_bytes(b[8..16].try_into().unwrap());
    (b == &data(block, version)[..]).then_some(version)
}

/// What each block may hold after a crash: its version at the last flush the volume
/// acknowledged, or any version written to it since (a failed flush or write may have made
/// it durable, in whole).
struct Model {
    flushed: Vec<u64>,
    since_flush: Vec<Vec<u64>>,
}

impl Model {
    fn allows(&self, block: u64, v: u64) -> bool {
        v == self.flushed[block as usize] || self.since_flush[block as usize].contains(&v)
    }

    /// After a check: what the block holds is now what it held at the last flush.
    fn settle(&mut self, block: u64, v: u64) {
        self.flushed[block as usize] = v;
        self.since_flush[block as usize].clear();
    }

    fn flushed_all(&mut self) {
        for (f, since) in self.flushed.iter_mut().zip(&mut self.since_flush) {
            if let Some(&last) = since.last() {
                *f = last;
            }
            since.clear();
        }
    }
}

fn run(seed: u64, cov: &mut Coverage) {
    let mut rng = Rng::new(seed);
    let sim = SimDevice::new(geometry(&mut rng), ZoneBehavior::QEMU_NVME, seed).unwrap();
    let spec = spec(&mut rng);
    let blocks = Volume::open(sim.clone(), &spec).unwrap().blocks();
    let mut model = Model { flushed: vec![0; blocks as usize], since_flush: vec![Vec::new(); blocks as usize] };
    let mut version = 0u64;
    let mut damaged = false;
    let mut buf = vec![0u8; BLOCK];
    for epoch in 0..4 {
        // The reopen, crashing inside it now and then.
        let mut vol = loop {
            if epoch > 0 && rng.chance(0.25) {
                sim.crash_at(Some(sim.ops() + rng.below(80)));
            }
            match Volume::open(sim.clone(), &spec) {
                Ok(vol) => break vol,
                Err(_) if sim.crashed().is_some() => {}
                Err(VolumeError::Corrupt(_)) if damaged => {
                    cov.damage_reported += 1;
                    return;
                }
                Err(e) => panic!("epoch {epoch}: reopen (damage injected: {damaged}): {e}"),
            }
            let report = sim.recover(Faults::default()).unwrap();
            cov.add(&report);
        };
        sim.crash_at(None);
        assert_eq!(vol.blocks(), blocks, "epoch {epoch}: the volume's size");
        for b in 0..blocks {
            match vol.read(b, &mut buf) {
                Ok(()) => {}
                Err(VolumeError::Data { .. }) if damaged => {
                    cov.damage_reported += 1;
                    return;
                }
                Err(e) => panic!("epoch {epoch}: block {b} (damage injected: {damaged}): {e}"),
            }
            let v = version_of(b, &buf).unwrap_or_else(|| panic!("epoch {epoch}: block {b} holds damaged or foreign data (damage injected: {damaged})"));
            assert!(model.allows(b, v), "epoch {epoch}: block {b} holds version {v}; flushed {}, written since {:?}", model.flushed[b as usize], model.since_flush[b as usize]);
            model.settle(b, v);
        }
        // Operations until the device dies: long epochs fill the device and run GC.
        let long = rng.chance(0.4);
        let ops = 20 + rng.below(if long { 1500 } else { 150 });
        sim.crash_at(Some(sim.ops() + rng.below(ops * 3)));
        // Writes skewed to a hot eighth, so GC finds zones of mixed garbage.
        let hot = (blocks / 8).max(1);
        for _ in 0..ops {
            let r = rng.below(100);
            let result = if r < 3 {
                vol.flush().map(|()| model.flushed_all())
            } else if r < 15 {
                let b = rng.below(blocks);
                vol.read(b, &mut buf).map(|()| {
                    let latest = model.since_flush[b as usize].last().copied().unwrap_or(model.flushed[b as usize]);
                    assert_eq!(version_of(b, &buf), Some(latest), "epoch {epoch}: read of block {b} before the crash");
                })
            } else {
                let b = if rng.chance(0.7) { rng.below(hot) } else { rng.below(blocks) };
                version += 1;
                model.since_flush[b as usize].push(version);
                vol.write(b, &data(b, version))
            };
            if let Err(e) = result {
                assert!(sim.crashed().is_some(), "epoch {epoch}: failed without a crash: {e}");
                break;
            }
        }
        GC_RUNS.fetch_add(vol.ftl_stats().gc_count, Ordering::Relaxed);
        drop(vol);
        if sim.crashed().is_none() {
            sim.crash_now();
        }
        let report = sim.recover(Faults { flips: if rng.chance(0.15) { 1 + rng.below(2) as u32 } else { 0 } }).unwrap();
        damaged |= report.damaged();
        cov.add(&report);
    }
}

#[test]
fn seeds() {
    let cov = run_seeds("volume", "cargo test -p zonekit-serve --test sim -- seeds", 3000, run);
    if std::env::var("ZONEKIT_SIM_SEED").is_err() {
        assert!(cov.crashes >= cov.runs * 3, "{cov}");
        let gcs = GC_RUNS.load(Ordering::Relaxed);
        println!("GC runs: {gcs}");
        assert!(gcs > cov.runs, "{gcs} GC runs over {} seeds: GC hardly ran\n{cov}", cov.runs);
    }
}
