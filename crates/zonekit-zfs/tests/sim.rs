//! Deterministic fault simulation of the file system (issue 44): each seed drives random
//! creates, appends, syncs, renames, deletes, puts and reads through `Zfs` on a [`SimDevice`]
//! (small zones, so the metadata log rolls over and GC runs), crashes it at a device operation
//! the seed picks (inside an operation, a metadata commit, a roll-over, GC, or the mount that
//! recovers), lets the device keep what a real drive may (unflushed writes lost, zones cut at
//! any block, sometimes flipped bits), mounts it again and checks every file against the
//! model: each file holds exactly its synced bytes; the operation cut short is wholly done or
//! not at all; no file appears that the model does not have (a put's temporary included); fsck
//! is clean; a flipped bit fails the mount, fsck or the read, or changes nothing. Replay a
//! failure with `ZONEKIT_SIM_SEED=<seed> cargo test -p zonekit-zfs --test sim -- seeds`;
//! `scripts/soak zfs --seconds N` runs more.

use std::collections::BTreeMap;

use zonekit_base::Rng;
use zonekit_device::sim::{run_seeds, Coverage, Faults, SimDevice};
use zonekit_device::{Geometry, ZoneBehavior};
use zonekit_zfs::fs::{FsConfig, FsError, Zfs};

/// Each file's bytes and how many of them were synced.
type Model = BTreeMap<String, (Vec<u8>, usize)>;

/// What must be on the device: each file's synced bytes.
fn durable(m: &Model) -> BTreeMap<String, Vec<u8>> {
    m.iter().map(|(k, (data, synced))| (k.clone(), data[..*synced].to_vec())).collect()
}

fn geometry(rng: &mut Rng) -> Geometry {
    let limit = if rng.chance(0.5) { Some(8 + rng.below(6) as u32) } else { None };
    Geometry {
        block_size_bytes: 512,
        zone_size_blocks: 64,
        zone_capacity_blocks: 64 - rng.below(2) * 8,
        zone_count: 16 + rng.below(8) as u32,
        conventional_zone_count: 0,
        open_zones_max: limit,
        active_zones_max: limit,
    }
}

/// Bytes unique to (version, position), so a stale or misplaced block is told apart.
fn bytes(version: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (version.wrapping_mul(0x9E37_79B9) as u8) ^ (i as u8).wrapping_mul(31) ^ (i >> 8) as u8 ^ (version >> 8) as u8).collect()
}

fn describe(m: &BTreeMap<String, Vec<u8>>) -> String {
    let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k}:{}", v.len())).collect();
    format!("{} files [{}]", m.len(), parts.join(" "))
}

/// Everything the mounted file system holds, or the error that reported damage.
fn contents(fs: &mut Zfs<SimDevice>) -> Result<BTreeMap<String, Vec<u8>>, FsError> {
    let names: Vec<String> = fs.table().files().map(|f| f.name.clone()).collect();
    let mut out = BTreeMap::new();
    for name in names {
        let size = fs.size(&name)? as usize;
        let mut buf = vec![0u8; size];
        let n = fs.read_at(&name, 0, &mut buf)?;
        assert_eq!(n, size, "{name}: short read");
        out.insert(name, buf);
    }
    Ok(out)
}

/// One random operation; returns the model as it is if the operation completes. An operation
/// of two calls (a sync, then a rename) updates `model` when the first is acknowledged.
fn step(fs: &mut Zfs<SimDevice>, model: &mut Model, rng: &mut Rng, version: &mut u64) -> (Model, Result<(), FsError>) {
    let mut next = model.clone();
    let names: Vec<String> = model.keys().cloned().collect();
    *version += 1;
    let v = *version;
    let pick = |rng: &mut Rng| names[rng.below(names.len() as u64) as usize].clone();
    let live: usize = model.values().map(|(d, _)| d.len()).sum();
    let r = rng.below(100);
    let result = match r {
        _ if names.is_empty() || (r < 12 && names.len() < 12) => {
            let name = format!("f{v}");
            next.insert(name.clone(), (Vec::new(), 0));
            fs.create(&name, 1 + rng.below(4) as u8).map(|_| ())
        }
        _ if r < 12 || live > 120_000 => {
            let name = pick(rng);
            next.remove(&name);
            fs.delete(&name)
        }
        12..=44 => {
            let name = pick(rng);
            let big = rng.chance(0.1);
            let data = bytes(v, 1 + rng.below(if big { 40_000 } else { 3_000 }) as usize);
            next.get_mut(&name).unwrap().0.extend_from_slice(&data);
            fs.append(&name, &data)
        }
        45..=69 => {
            let name = pick(rng);
            let f = next.get_mut(&name).unwrap();
            f.1 = f.0.len();
            fs.sync(&name)
        }
        70..=77 => {
            // Rename over a fresh name or an existing file (replacing it), after a sync.
            let from = pick(rng);
            let to = if rng.chance(0.5) { pick(rng) } else { format!("r{v}") };
            let f = next.get_mut(&from).unwrap();
            f.1 = f.0.len();
            if let Err(e) = fs.sync(&from) {
                return (next, Err(e));
            }
            *model = next.clone();
            let f = next.remove(&from).unwrap();
            next.insert(to.clone(), f);
            fs.rename(&from, &to)
        }
        78..=85 => {
            let name = format!("p{v}");
            let data = bytes(v, rng.below(6_000) as usize);
            next.insert(name.clone(), (data.clone(), data.len()));
            fs.put(&name, 2, &data)
        }
        _ => {
            let name = pick(rng);
            let data = model[&name].0.clone();
            if data.is_empty() {
                Ok(())
            } else {
                let off = rng.below(data.len() as u64) as usize;
                let len = (1 + rng.below(4_000) as usize).min(data.len() - off);
                let mut buf = vec![0u8; len];
                fs.read_at(&name, off as u64, &mut buf).map(|n| {
                    assert_eq!(n, len);
                    assert!(buf == data[off..off + len], "{name}: read at {off} (+{len}) differs from what was appended");
                })
            }
        }
    };
    (next, result)
}

/// Mounts after a crash, maybe crashing again inside the mount. `None`: damage reported.
fn remount(sim: &SimDevice, rng: &mut Rng, cov: &mut Coverage, damaged: &mut bool) -> Option<Zfs<SimDevice>> {
    loop {
        let report = sim.recover(Faults { flips: if rng.chance(0.15) { 1 + rng.below(2) as u32 } else { 0 } }).unwrap();
        *damaged |= report.damaged();
        cov.add(&report);
        if std::env::var("ZONEKIT_SIM_TRACE").is_ok() {
            eprintln!("recovered: {report:?}");
        }
        if rng.chance(0.25) {
            sim.crash_at(Some(sim.ops() + rng.below(40)));
        }
        match Zfs::mount(sim.clone(), FsConfig::default()) {
            Ok(fs) => {
                sim.crash_at(None);
                return Some(fs);
            }
            Err(_) if sim.crashed().is_some() => continue,
            Err(_) if *damaged => {
                cov.damage_reported += 1;
                return None;
            }
            Err(e) => panic!("mount after an undamaged crash failed: {e}"),
        }
    }
}

fn run(seed: u64, cov: &mut Coverage) {
    let mut rng = Rng::new(seed);
    let sim = SimDevice::new(geometry(&mut rng), ZoneBehavior::default(), seed).unwrap();
    let mut fs = Zfs::mkfs(sim.clone(), FsConfig::default()).unwrap();
    let mut model = Model::new();
    let mut damaged = false;
    let mut version = 0;
    for epoch in 0..4 {
        let long = rng.chance(0.3);
        let ops = 5 + rng.below(if long { 200 } else { 40 });
        sim.crash_at(Some(sim.ops() + rng.below(ops * 3)));
        let mut cut_short: Option<Model> = None;
        for op in 0..ops {
            let (next, result) = step(&mut fs, &mut model, &mut rng, &mut version);
            if std::env::var("ZONEKIT_SIM_TRACE").is_ok() {
                eprintln!("epoch {epoch} op {op}: {result:?}; model {:?}", next.iter().map(|(k, v)| (k.clone(), v.0.len(), v.1)).collect::<Vec<_>>());
            }
            match result {
                Ok(()) => model = next,
                Err(e) => {
                    assert!(sim.crashed().is_some(), "epoch {epoch} op {op}: failed without a crash: {e}");
                    cut_short = Some(next);
                    break;
                }
            }
        }
        drop(fs);
        fs = match remount(&sim, &mut rng, cov, &mut damaged) {
            Some(fs) => fs,
            None => return,
        };
        let problems = fs.fsck();
        let now = match (problems, contents(&mut fs)) {
            (Ok(p), Ok(now)) if p.is_empty() => now,
            (p, now) => {
                assert!(damaged, "epoch {epoch}: damage after an undamaged crash: fsck {p:?}, read {:?}", now.err());
                cov.damage_reported += 1;
                return;
            }
        };
        let before = durable(&model);
        if cut_short.as_ref().is_some_and(|m| durable(m) == now) {
            // The operation cut short completed; what it appended but did not sync is gone.
            model = cut_short.unwrap();
        } else {
            assert!(
                now == before,
                "epoch {epoch}: after the crash the file system is neither the synced state nor that plus the operation cut short\n found  {}\n synced {}{}",
                describe(&now),
                describe(&before),
                cut_short.map(|m| format!("\n after  {}", describe(&durable(&m)))).unwrap_or_default()
            );
        }
        for f in model.values_mut() {
            f.0.truncate(f.1);
        }
    }
}

#[test]
fn seeds() {
    let cov = run_seeds("zfs", "cargo test -p zonekit-zfs --test sim -- seeds", 2000, run);
    if std::env::var("ZONEKIT_SIM_SEED").is_err() {
        assert!(cov.crashes >= cov.runs, "{cov}");
    }
}

/// Seeds that found bugs, run whatever the seed range: 1033131 (a batch replayed without its
/// seal was left unsealed; a flipped bit in it then looked like a torn tail and the file it
/// created vanished with no error).
#[test]
fn regressions() {
    run(1033131, &mut Coverage::default());
}
