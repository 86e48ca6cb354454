//! Emulator tests beyond the conformance suite: the suite catches broken devices, the three
//! emulated media agree with each other and with a data model under random operations, power
//! loss keeps exactly what was durable, and a killed writer loses nothing it flushed.
//!
//! Randomised tests print the seed of a failing case; rerun one with `ZK_SEED=<seed>`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zonekit_device::conformance::{self, Outcome};
use zonekit_device::{
    DeviceError, DeviceStats, FileDevice, Geometry, Lba, MemDevice, StorageMode, ZoneAction, ZoneBehavior, ZoneDescriptor, ZoneFilter, ZoneId, ZoneState, ZonedDevice,
};

fn small_geometry() -> Geometry {
    Geometry {
        block_size_bytes: 4096,
        zone_size_blocks: 32,
        zone_capacity_blocks: 28,
        zone_count: 10,
        conventional_zone_count: 1,
        open_zones_max: Some(3),
        active_zones_max: Some(5),
    }
}

fn seeds(default_count: u64) -> Vec<u64> {
    match std::env::var("ZK_SEED") {
        Ok(s) => vec![s.parse().expect("ZK_SEED must be an integer")],
        Err(_) => (0..default_count).map(|i| 0x5EED_0000 + i).collect(),
    }
}

// ---- the suite can fail ------------------------------------------------------------------

/// Forwards everything, but may misreport its behaviour or accept writes off the write pointer.
struct Mutant<D> {
    inner: D,
    claimed: ZoneBehavior,
    forgive_invalid_writes: bool,
}

impl<D: ZonedDevice> ZonedDevice for Mutant<D> {
    fn geometry(&self) -> &Geometry {
        self.inner.geometry()
    }
    fn behavior(&self) -> ZoneBehavior {
        self.claimed
    }
    fn report_zones(&mut self, s: Lba, f: ZoneFilter, m: usize, o: &mut Vec<ZoneDescriptor>) -> zonekit_device::Result<usize> {
        self.inner.report_zones(s, f, m, o)
    }
    fn read(&mut self, lba: Lba, buf: &mut [u8]) -> zonekit_device::Result<()> {
        self.inner.read(lba, buf)
    }
    fn write(&mut self, lba: Lba, data: &[u8]) -> zonekit_device::Result<()> {
        match self.inner.write(lba, data) {
            Err(DeviceError::InvalidWrite { zone, .. }) if self.forgive_invalid_writes => self.inner.append(zone, data).map(|_| ()),
            other => other,
        }
    }
    fn append(&mut self, zone: ZoneId, data: &[u8]) -> zonekit_device::Result<Lba> {
        self.inner.append(zone, data)
    }
    fn manage(&mut self, a: ZoneAction, z: ZoneId) -> zonekit_device::Result<()> {
        self.inner.manage(a, z)
    }
    fn flush(&mut self) -> zonekit_device::Result<()> {
        self.inner.flush()
    }
    fn stats(&self) -> &DeviceStats {
        self.inner.stats()
    }
}

fn failed_checks(dev: &mut dyn ZonedDevice) -> Vec<&'static str> {
    conformance::run(dev, None).results.into_iter().filter(|(_, o)| matches!(o, Outcome::Failed(_))).map(|(n, _)| n).collect()
}

#[test]
fn suite_catches_a_device_that_misreports_its_behavior() {
    let g = Geometry { open_zones_max: Some(3), active_zones_max: Some(6), ..small_geometry() };
    let inner = MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap();
    let mut dev = Mutant { inner, claimed: ZoneBehavior::NULL_BLK, forgive_invalid_writes: false };
    let failed = failed_checks(&mut dev);
    for check in ["close_empty_zone_follows_behavior", "auto_close_with_active_limit", "cross_zone_reads_follow_behavior"] {
        assert!(failed.contains(&check), "{check} should fail on a lying device; failed: {failed:?}");
    }
}

#[test]
fn suite_catches_a_device_that_accepts_writes_off_the_write_pointer() {
    let inner = MemDevice::new(small_geometry(), ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap();
    let mut dev = Mutant { inner, claimed: ZoneBehavior::QEMU_NVME, forgive_invalid_writes: true };
    assert!(failed_checks(&mut dev).contains(&"write_off_wp_is_invalid_write"));
}

// ---- random operations: media agree with each other and with a data model ----------------

#[derive(Debug, Clone)]
enum Op {
    WriteAtWp { zone: u32, blocks: u64 },
    WriteAt { lba: u64, blocks: u64 },
    Append { zone: u32, blocks: u64 },
    Manage { action: ZoneAction, zone: u32 },
    Read { lba: u64, blocks: u64 },
    Flush,
}

fn random_op(rng: &mut ChaCha8Rng, g: &Geometry) -> Op {
    let zone = rng.gen_range(0..g.zone_count + 1); // one past the end, sometimes
    let blocks = rng.gen_range(1..=6);
    match rng.gen_range(0..100) {
        0..=34 => Op::WriteAtWp { zone: zone.min(g.zone_count - 1), blocks },
        35..=44 => Op::WriteAt { lba: rng.gen_range(0..g.total_blocks() + 2), blocks },
        45..=59 => Op::Append { zone, blocks },
        60..=79 => {
            let action = [ZoneAction::Open, ZoneAction::Close, ZoneAction::Finish, ZoneAction::Reset][rng.gen_range(0..4)];
            Op::Manage { action, zone }
        }
        80..=94 => Op::Read { lba: rng.gen_range(0..g.total_blocks()), blocks },
        _ => Op::Flush,
    }
}

fn block_content(lba: u64, version: u64, bs: usize) -> Vec<u8> {
    let mut b = vec![0u8; bs];
    b[..8].copy_from_slice(&lba.to_le_bytes());
    b[8..16].copy_from_slice(&version.to_le_bytes());
    for (i, x) in b[16..].iter_mut().enumerate() {
        *x = (lba as u8) ^ (version as u8).wrapping_mul(7) ^ (i as u8);
    }
    b
}

/// Outcome of one op on one device, for comparison.
#[derive(Debug, PartialEq)]
enum Res {
    Ok,
    Lba(u64),
    Data(Vec<u8>),
    Err(&'static str),
}

fn apply(dev: &mut dyn ZonedDevice, op: &Op, version: u64) -> Res {
    let g = *dev.geometry();
    let bs = g.block_size_bytes as usize;
    let data = |lba: u64, n: u64| -> Vec<u8> { (0..n).flat_map(|i| block_content(lba + i, version, bs)).collect() };
    let r = match *op {
        Op::WriteAtWp { zone, blocks } => {
            let wp = dev.zone(ZoneId(zone)).unwrap().write_pointer.0;
            dev.write(Lba(wp), &data(wp, blocks)).map(|_| Res::Ok)
        }
        Op::WriteAt { lba, blocks } => dev.write(Lba(lba), &data(lba, blocks)).map(|_| Res::Ok),
        Op::Append { zone, blocks } => {
            let wp = if zone < g.zone_count { dev.zone(ZoneId(zone)).unwrap().write_pointer.0 } else { 0 };
            dev.append(ZoneId(zone), &data(wp, blocks)).map(|l| Res::Lba(l.0))
        }
        Op::Manage { action, zone } => dev.manage(action, ZoneId(zone)).map(|_| Res::Ok),
        Op::Read { lba, blocks } => {
            let mut buf = vec![0u8; blocks as usize * bs];
            dev.read(Lba(lba), &mut buf).map(|_| Res::Data(buf))
        }
        Op::Flush => dev.flush().map(|_| Res::Ok),
    };
    r.unwrap_or_else(|e| Res::Err(e.kind()))
}

/// What every block should read as: written content, or zeros.
#[derive(Default, Clone)]
struct DataModel {
    blocks: HashMap<u64, Vec<u8>>,
}

impl DataModel {
    fn after(&mut self, dev: &mut dyn ZonedDevice, op: &Op, res: &Res, version: u64, wp_before: Option<u64>) {
        let g = *dev.geometry();
        let bs = g.block_size_bytes as usize;
        match (op, res) {
            (Op::WriteAtWp { blocks, .. }, Res::Ok) => {
                let start = wp_before.unwrap();
                for i in 0..*blocks {
                    self.blocks.insert(start + i, block_content(start + i, version, bs));
                }
            }
            (Op::WriteAt { lba, blocks }, Res::Ok) => {
                for i in 0..*blocks {
                    self.blocks.insert(lba + i, block_content(lba + i, version, bs));
                }
            }
            (Op::Append { blocks, .. }, Res::Lba(at)) => {
                let start = wp_before.unwrap();
                assert_eq!(*at, start, "append landed off the write pointer");
                for i in 0..*blocks {
                    self.blocks.insert(at + i, block_content(at + i, version, bs));
                }
            }
            (Op::Manage { action: ZoneAction::Reset, zone }, Res::Ok) if dev.behavior().unwritten_reads_zero => {
                let start = g.zone_start(ZoneId(*zone)).0;
                self.blocks.retain(|&lba, _| lba < start || lba >= start + g.zone_size_blocks);
            }
            (Op::Read { lba, blocks }, Res::Data(got)) => {
                for i in 0..*blocks {
                    let want = self.blocks.get(&(lba + i)).cloned().unwrap_or_else(|| vec![0u8; bs]);
                    let off = i as usize * bs;
                    assert!(got[off..off + bs] == want[..], "block {} reads back wrong", lba + i);
                }
            }
            _ => {}
        }
    }
}

fn wp_of(dev: &mut dyn ZonedDevice, op: &Op) -> Option<u64> {
    let zone = match *op {
        Op::WriteAtWp { zone, .. } | Op::Append { zone, .. } => zone,
        _ => return None,
    };
    (zone < dev.geometry().zone_count).then(|| dev.zone(ZoneId(zone)).unwrap().write_pointer.0)
}

#[test]
fn media_agree_with_each_other_and_with_the_data_model() {
    let dir = tempfile::tempdir().unwrap();
    for seed in seeds(40) {
        let g = small_geometry();
        let behavior = if seed % 2 == 0 { ZoneBehavior::QEMU_NVME } else { ZoneBehavior::NULL_BLK };
        let mut data = MemDevice::new(g, behavior, StorageMode::Data).unwrap();
        let mut meta = MemDevice::new(g, behavior, StorageMode::MetadataOnly).unwrap();
        let mut file = FileDevice::create(&dir.path().join(format!("{seed}.zk")), g, behavior, "").unwrap();
        let mut model = DataModel::default();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for step in 0..400u64 {
            let op = random_op(&mut rng, &g);
            let ctx = format!("seed {seed} (rerun with ZK_SEED={seed}), step {step}, {op:?}");
            let wp = wp_of(&mut data, &op);
            let r_data = apply(&mut data, &op, step);
            let r_file = apply(&mut file, &op, step);
            let r_meta = apply(&mut meta, &op, step);
            assert_eq!(r_data, r_file, "{ctx}: memory and file media disagree");
            match (&r_data, &r_meta) {
                (Res::Data(_), Res::Data(z)) => assert!(z.iter().all(|&b| b == 0), "{ctx}: metadata-only read returned data"),
                _ => assert_eq!(r_data, r_meta, "{ctx}: data and metadata-only modes disagree"),
            }
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| model.after(&mut data, &op, &r_data, step, wp))).unwrap_or_else(|_| panic!("{ctx}: data model violated"));
            data.check_invariants();
            let reports: Vec<_> = [&mut data as &mut dyn ZonedDevice, &mut meta, &mut file].into_iter().map(|d| d.report_all(ZoneFilter::All).unwrap()).collect();
            assert!(reports[0] == reports[1] && reports[0] == reports[2], "{ctx}: zone reports differ");
        }
        assert_eq!(data.stats(), file.stats(), "seed {seed}: counters differ");
    }
}

// ---- power loss --------------------------------------------------------------------------

/// Per zone, what must survive a power loss: (state class, write pointer) at its last durable
/// event, and the model of the data below it.
#[derive(Clone)]
struct Durable {
    zones: Vec<ZoneDescriptor>,
    data: DataModel,
}

fn expected_after_restart(d: &Durable) -> Vec<(ZoneState, u64)> {
    d.zones
        .iter()
        .map(|z| {
            let state = match z.state {
                ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened | ZoneState::Closed => {
                    if z.written_blocks() == 0 {
                        ZoneState::Empty
                    } else {
                        ZoneState::Closed
                    }
                }
                s => s,
            };
            (state, z.write_pointer.0)
        })
        .collect()
}

#[test]
fn power_loss_keeps_exactly_what_was_durable() {
    let dir = tempfile::tempdir().unwrap();
    for seed in seeds(30) {
        let g = small_geometry();
        let path = dir.path().join(format!("pl-{seed}.zk"));
        let mut mem = MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap();
        let mut file = Some(FileDevice::create(&path, g, ZoneBehavior::QEMU_NVME, "").unwrap());
        let mut model = DataModel::default();
        let mut durable = Durable { zones: mem.report_all(ZoneFilter::All).unwrap(), data: model.clone() };
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for step in 0..600u64 {
            let ctx = format!("seed {seed} (rerun with ZK_SEED={seed}), step {step}");
            if rng.gen_range(0..40) == 0 {
                mem.power_loss();
                drop(file.take());
                file = Some(FileDevice::open_power_cycled(&path).unwrap());
                let want = expected_after_restart(&durable);
                for dev in [&mut mem as &mut dyn ZonedDevice, file.as_mut().unwrap()] {
                    let got: Vec<_> = dev.report_all(ZoneFilter::All).unwrap().iter().map(|z| (z.state, z.write_pointer.0)).collect();
                    assert_eq!(got, want, "{ctx}: zones after power loss");
                    let mut buf = vec![0u8; (g.total_blocks() * 4096) as usize];
                    for z in 0..g.zone_count {
                        let start = g.zone_start(ZoneId(z));
                        let len = (g.zone_size_blocks * 4096) as usize;
                        dev.read(start, &mut buf[..len]).unwrap();
                        for b in 0..g.zone_size_blocks {
                            let want = durable.data.blocks.get(&(start.0 + b)).cloned().unwrap_or_else(|| vec![0u8; 4096]);
                            let off = (b * 4096) as usize;
                            // Conventional blocks written after the flush may survive (allowed).
                            if z >= g.conventional_zone_count {
                                assert!(buf[off..off + 4096] == want[..], "{ctx}: zone {z} block {b} after power loss");
                            }
                        }
                    }
                }
                model = durable.data.clone();
                // Conventional zones may keep post-flush writes: take what the device holds.
                let mut buf = vec![0u8; 4096];
                for lba in 0..g.conventional_zone_count as u64 * g.zone_size_blocks {
                    mem.read(Lba(lba), &mut buf).unwrap();
                    if buf.iter().any(|&b| b != 0) {
                        model.blocks.insert(lba, buf.clone());
                    } else {
                        model.blocks.remove(&lba);
                    }
                }
                continue;
            }
            let op = random_op(&mut rng, &g);
            let wp = wp_of(&mut mem, &op);
            let r = apply(&mut mem, &op, step);
            let rf = apply(file.as_mut().unwrap(), &op, step);
            assert_eq!(r, rf, "{ctx}: {op:?}: memory and file disagree");
            model.after(&mut mem, &op, &r, step, wp);
            let now = mem.report_all(ZoneFilter::All).unwrap();
            match (&op, &r) {
                (Op::Flush, Res::Ok) => durable = Durable { zones: now, data: model.clone() },
                (Op::Manage { zone, .. }, Res::Ok) => {
                    // Durable at once: that zone's state and data join the durable view.
                    let z = *zone as usize;
                    durable.zones[z] = now[z];
                    let g = *mem.geometry();
                    let start = g.zone_start(ZoneId(*zone)).0;
                    let in_zone = |lba: &u64| *lba >= start && *lba < start + g.zone_size_blocks;
                    durable.data.blocks.retain(|lba, _| !in_zone(lba));
                    for (lba, b) in model.blocks.iter().filter(|(l, _)| in_zone(l)) {
                        durable.data.blocks.insert(*lba, b.clone());
                    }
                }
                _ => {}
            }
        }
    }
}

// ---- a killed writer loses nothing it flushed --------------------------------------------

const CHILD_ENV: &str = "ZK_CRASH_CHILD_IMAGE";

fn crash_geometry() -> Geometry {
    Geometry {
        block_size_bytes: 4096,
        zone_size_blocks: 64,
        zone_capacity_blocks: 60,
        zone_count: 12,
        conventional_zone_count: 0,
        open_zones_max: Some(4),
        active_zones_max: Some(6),
    }
}

/// Content of block `offset` of `zone` written in the zone's generation `resets`.
fn crash_block(zone: u32, resets: u64, offset: u64) -> Vec<u8> {
    let mut b = vec![(zone as u8) ^ (resets as u8) ^ (offset as u8); 4096];
    b[..4].copy_from_slice(&zone.to_le_bytes());
    b[4..12].copy_from_slice(&resets.to_le_bytes());
    b[12..20].copy_from_slice(&offset.to_le_bytes());
    b
}

/// The writer's deterministic workload; `on_flush(op_index)` runs after each durable flush.
/// Returns after `max_ops` operations.
fn crash_workload(dev: &mut dyn ZonedDevice, seed: u64, max_ops: u64, mut on_flush: impl FnMut(u64)) {
    let g = *dev.geometry();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut open: Vec<u32> = Vec::new();
    for i in 0..max_ops {
        if rng.gen_range(0..8) == 0 {
            dev.flush().unwrap();
            on_flush(i);
            continue;
        }
        // Keep at most 3 zones in use so the resource limits are never hit.
        if open.len() < 3 && rng.gen_bool(0.3) || open.is_empty() {
            let empty = dev.report_all(ZoneFilter::Only(ZoneState::Empty)).unwrap();
            if let Some(z) = empty.get(rng.gen_range(0..empty.len().max(1))) {
                open.push(z.id.0);
            } else {
                let full = dev.report_all(ZoneFilter::Only(ZoneState::Full)).unwrap();
                let z = full[rng.gen_range(0..full.len())].id;
                dev.reset_zone(z).unwrap();
                open.push(z.0);
            }
        }
        let idx = rng.gen_range(0..open.len());
        let zone = ZoneId(open[idx]);
        let d = dev.zone(zone).unwrap();
        let resets = dev.stats().resets_per_zone[zone.0 as usize];
        let left = g.zone_capacity_blocks - d.written_blocks();
        if rng.gen_range(0..20) == 0 {
            dev.finish_zone(zone).unwrap();
            open.remove(idx);
            continue;
        }
        let n = rng.gen_range(1..=8).min(left);
        let data: Vec<u8> = (0..n).flat_map(|k| crash_block(zone.0, resets, d.written_blocks() + k)).collect();
        dev.append(zone, &data).unwrap();
        if n == left {
            open.remove(idx);
        }
    }
}

#[test]
fn killed_writer_loses_nothing_it_flushed() {
    if let Ok(image) = std::env::var(CHILD_ENV) {
        // Child: write until killed, announcing each completed flush.
        let seed: u64 = std::env::var("ZK_CRASH_SEED").unwrap().parse().unwrap();
        let mut dev = FileDevice::open(std::path::Path::new(&image)).unwrap();
        let stdout = std::io::stdout();
        crash_workload(&mut dev, seed, u64::MAX, |i| {
            use std::io::Write;
            let mut out = stdout.lock();
            writeln!(out, "ack {i}").unwrap();
            out.flush().unwrap();
        });
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    for seed in seeds(16) {
        let ctx = format!("seed {seed} (rerun with ZK_SEED={seed})");
        let image = dir.path().join(format!("crash-{seed}.zk"));
        drop(FileDevice::create(&image, crash_geometry(), ZoneBehavior::QEMU_NVME, "").unwrap());
        let mut child = Command::new(&exe)
            .args(["--exact", "killed_writer_loses_nothing_it_flushed", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, &image)
            .env("ZK_CRASH_SEED", seed.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xC4A5);
        let acks_before_kill = rng.gen_range(1..40);
        let mut last_ack = None;
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        while let Some(Ok(line)) = lines.next() {
            if let Some(i) = line.strip_prefix("ack ") {
                last_ack = Some(i.parse::<u64>().unwrap());
                if last_ack.is_some_and(|_| rng.gen_range(0..acks_before_kill) == 0) {
                    break;
                }
            }
        }
        // Let the writer run a little past the acknowledged flush, then kill it mid-flight.
        std::thread::sleep(std::time::Duration::from_micros(rng.gen_range(0..3000)));
        child.kill().unwrap();
        child.wait().unwrap();
        let last_ack = last_ack.unwrap_or_else(|| panic!("{ctx}: the writer never flushed"));

        // What the writer had made durable, replayed on a memory device.
        let mut expected = MemDevice::new(crash_geometry(), ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap();
        crash_workload(&mut expected, seed, last_ack + 1, |_| {});
        let mut got = FileDevice::open(&image).unwrap_or_else(|e| panic!("{ctx}: reopen failed: {e}"));
        got.check_invariants();
        for z in 0..crash_geometry().zone_count {
            let zone = ZoneId(z);
            let want = expected.zone(zone).unwrap();
            let have = got.zone(zone).unwrap();
            let want_gen = (expected.stats().resets_per_zone[z as usize], want.written_blocks());
            let have_gen = (got.stats().resets_per_zone[z as usize], have.written_blocks());
            if want.state == ZoneState::Full && have_gen.0 == want_gen.0 {
                assert_eq!(have.state, ZoneState::Full, "{ctx}: zone {z} lost its finish");
            }
            assert!(have_gen >= want_gen, "{ctx}: zone {z} went back from {want_gen:?} (flushed) to {have_gen:?}");
            // Every block below the durable write pointer is what the writer wrote there.
            let data_blocks = if have.state == ZoneState::Full { crash_geometry().zone_capacity_blocks } else { have.written_blocks() };
            let mut buf = vec![0u8; 4096];
            for b in 0..data_blocks {
                got.read(Lba(have.start.0 + b), &mut buf).unwrap();
                if buf.iter().all(|&x| x == 0) && have.state == ZoneState::Full {
                    continue; // past the data of a zone finished early
                }
                assert!(buf == crash_block(z, have_gen.0, b), "{ctx}: zone {z} block {b} is not what was written");
            }
        }
    }
}

// ---- zone faults -------------------------------------------------------------------------

#[test]
fn read_only_and_offline_zones_behave_as_the_spec_says_and_persist() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("faults.zk");
    let g = small_geometry();
    let z = ZoneId(3);
    let start = g.zone_start(z);
    {
        let mut dev = FileDevice::create(&path, g, ZoneBehavior::QEMU_NVME, "").unwrap();
        dev.write(start, &vec![9u8; 8192]).unwrap();
        dev.flush().unwrap();
        // Offline only from read-only.
        assert_eq!(dev.inject_offline(z).unwrap_err().kind(), "invalid-argument");
        dev.inject_read_only(z).unwrap();
        dev.check_invariants(); // the open resource it held is released
        assert_eq!(dev.zone(z).unwrap().state, ZoneState::ReadOnly);
        assert_eq!(dev.write(Lba(start.0 + 2), &[0u8; 4096]).unwrap_err().kind(), "zone-read-only");
        assert_eq!(dev.reset_zone(z).unwrap_err().kind(), "invalid-transition");
        let mut buf = vec![0u8; 8192];
        dev.read(start, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == 9), "a read-only zone still reads its data");
    }
    let mut dev = FileDevice::open(&path).unwrap();
    assert_eq!(dev.zone(z).unwrap().state, ZoneState::ReadOnly, "a device event is durable");
    dev.inject_offline(z).unwrap();
    let mut buf = vec![0u8; 4096];
    assert_eq!(dev.read(start, &mut buf).unwrap_err().kind(), "zone-offline");
    assert_eq!(dev.append(z, &buf).unwrap_err().kind(), "zone-offline");
    drop(dev);
    let mut dev = FileDevice::open(&path).unwrap();
    assert_eq!(dev.zone(z).unwrap().state, ZoneState::Offline);
    assert_eq!(dev.read(start, &mut buf).unwrap_err().kind(), "zone-offline");
}
