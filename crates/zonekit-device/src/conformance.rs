//! The conformance suite: the zone semantics every [`ZonedDevice`] backend must have.
//!
//! It runs against a live device and **erases it**. Each check starts by resetting every zone.
//! Where real devices legitimately differ, a check reads the device's [`ZonedDevice::behavior`]
//! and limits and expects what they say; a check that the device's limits make unobservable is
//! skipped with the reason. The same suite runs on the emulators in `cargo test` and on real
//! kernel devices (QEMU NVMe ZNS, null_blk) through `zonekit device conformance`.

use crate::{AutoClose, DeviceError, Geometry, Lba, ZoneAction, ZoneFilter, ZoneId, ZoneState, ZoneType, ZonedDevice};

/// How one check ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    Skipped(String),
    Failed(String),
}

type CheckResult = Result<Outcome, String>;

/// One named check.
pub struct Check {
    pub name: &'static str,
    pub run: fn(&mut dyn ZonedDevice) -> CheckResult,
}

/// Results of a run, in check order.
#[derive(Debug, Default)]
pub struct Report {
    pub results: Vec<(&'static str, Outcome)>,
}

impl Report {
    pub fn count(&self, f: impl Fn(&Outcome) -> bool) -> usize {
        self.results.iter().filter(|(_, o)| f(o)).count()
    }
    pub fn passed(&self) -> usize {
        self.count(|o| *o == Outcome::Passed)
    }
    pub fn failed(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Failed(_)))
    }
    pub fn skipped(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Skipped(_)))
    }
    /// `name: reason` for each failure.
    pub fn failures(&self) -> Vec<String> {
        self.results
            .iter()
            .filter_map(|(n, o)| match o {
                Outcome::Failed(why) => Some(format!("{n}: {why}")),
                _ => None,
            })
            .collect()
    }
}

/// Runs every check whose name contains `only` (all when `None`), in order.
pub fn run(dev: &mut dyn ZonedDevice, only: Option<&str>) -> Report {
    let mut report = Report::default();
    for check in CHECKS.iter().filter(|c| only.is_none_or(|o| c.name.contains(o))) {
        let outcome = match prepare(dev).and_then(|()| (check.run)(dev)) {
            Ok(outcome) => outcome,
            Err(why) => Outcome::Failed(why),
        };
        report.results.push((check.name, outcome));
    }
    report
}

pub const CHECKS: &[Check] = &[
    Check { name: "report_describes_every_zone", run: report_describes_every_zone },
    Check { name: "report_filters_and_starts", run: report_filters_and_starts },
    Check { name: "write_at_wp_implicitly_opens", run: write_at_wp_implicitly_opens },
    Check { name: "write_off_wp_is_invalid_write", run: write_off_wp_is_invalid_write },
    Check { name: "fill_to_capacity_makes_full", run: fill_to_capacity_makes_full },
    Check { name: "write_past_capacity_is_boundary_error", run: write_past_capacity_is_boundary_error },
    Check { name: "append_returns_lba", run: append_returns_lba },
    Check { name: "explicit_open_and_close", run: explicit_open_and_close },
    Check { name: "close_empty_zone_follows_behavior", run: close_empty_zone_follows_behavior },
    Check { name: "invalid_transitions_are_refused", run: invalid_transitions_are_refused },
    Check { name: "finish_from_each_state", run: finish_from_each_state },
    Check { name: "reset_from_each_state", run: reset_from_each_state },
    Check { name: "open_limit", run: open_limit },
    Check { name: "active_limit", run: active_limit },
    Check { name: "auto_close_oldest_implicit", run: auto_close_oldest_implicit },
    Check { name: "auto_close_with_active_limit", run: auto_close_with_active_limit },
    Check { name: "reads_past_wp_succeed", run: reads_past_wp_succeed },
    Check { name: "cross_zone_reads_follow_behavior", run: cross_zone_reads_follow_behavior },
    Check { name: "conventional_zones", run: conventional_zones },
    Check { name: "bad_arguments_are_refused", run: bad_arguments_are_refused },
    Check { name: "select_all_actions", run: select_all_actions },
    Check { name: "resets_count_wear", run: resets_count_wear },
];

// ---- helpers ------------------------------------------------------------------------------

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

fn op<T>(r: crate::Result<T>, what: &str) -> Result<T, String> {
    r.map_err(|e| format!("{what}: unexpected error: {e}"))
}

fn expect_err<T: std::fmt::Debug>(r: crate::Result<T>, kind: &str, what: &str) -> Result<(), String> {
    match r {
        Err(e) if e.kind() == kind => Ok(()),
        Err(e) => Err(format!("{what}: expected {kind}, got {} ({e})", e.kind())),
        Ok(v) => Err(format!("{what}: expected {kind}, but it succeeded ({v:?})")),
    }
}

fn prepare(dev: &mut dyn ZonedDevice) -> Result<(), String> {
    op(dev.manage_all(ZoneAction::Reset), "reset all zones")?;
    for z in op(dev.report_all(ZoneFilter::All), "report zones")? {
        let expected = match z.zone_type {
            ZoneType::Conventional => ZoneState::NotWritePointer,
            ZoneType::SequentialWriteRequired => ZoneState::Empty,
        };
        // A device fault left by an earlier run is not ours to clear.
        if !matches!(z.state, ZoneState::ReadOnly | ZoneState::Offline) {
            ensure!(z.state == expected, "zone {} is {} after reset of all zones", z.id, z.state);
        }
    }
    Ok(())
}

/// Sequential zones usable by the checks, in order.
fn seq_zones(dev: &mut dyn ZonedDevice) -> Result<Vec<ZoneId>, String> {
    Ok(op(dev.report_all(ZoneFilter::Only(ZoneState::Empty)), "report empty zones")?.iter().map(|z| z.id).collect())
}

fn need_zones(dev: &mut dyn ZonedDevice, n: usize) -> Result<Result<Vec<ZoneId>, Outcome>, String> {
    let zones = seq_zones(dev)?;
    if zones.len() < n {
        return Ok(Err(Outcome::Skipped(format!("needs {n} empty sequential zones, the device has {}", zones.len()))));
    }
    Ok(Ok(zones))
}

/// Recognisable contents for `blocks` blocks starting at `lba`.
fn pattern(g: &Geometry, lba: Lba, blocks: u64, tag: u8) -> Vec<u8> {
    let bs = g.block_size_bytes as usize;
    let mut data = vec![0u8; bs * blocks as usize];
    for (i, block) in data.chunks_exact_mut(bs).enumerate() {
        let id = lba.0 + i as u64;
        block[..8].copy_from_slice(&id.to_le_bytes());
        for (j, b) in block[8..].iter_mut().enumerate() {
            *b = (id as u8).wrapping_mul(31).wrapping_add(j as u8).wrapping_add(tag) | 1;
        }
    }
    data
}

fn state(dev: &mut dyn ZonedDevice, zone: ZoneId) -> Result<ZoneState, String> {
    Ok(op(dev.zone(zone), "report zone")?.state)
}

fn expect_state(dev: &mut dyn ZonedDevice, zone: ZoneId, want: ZoneState, when: &str) -> Result<(), String> {
    let got = state(dev, zone)?;
    ensure!(got == want, "{when}: zone {zone} is {got}, expected {want}");
    Ok(())
}

fn write_blocks(dev: &mut dyn ZonedDevice, lba: Lba, blocks: u64, tag: u8) -> Result<(), String> {
    let g = *dev.geometry();
    op(dev.write(lba, &pattern(&g, lba, blocks, tag)), &format!("write {blocks} blocks at LBA {lba}"))
}

/// Writes `blocks` blocks at the write pointer of `zone`, in transfers of at most 1 MiB.
fn fill(dev: &mut dyn ZonedDevice, zone: ZoneId, blocks: u64) -> Result<(), String> {
    let g = *dev.geometry();
    let chunk = ((1 << 20) / g.block_size_bytes as u64).max(1);
    let mut wp = op(dev.zone(zone), "report zone")?.write_pointer;
    let mut left = blocks;
    while left > 0 {
        let n = left.min(chunk);
        write_blocks(dev, wp, n, 0)?;
        wp.0 += n;
        left -= n;
    }
    Ok(())
}

fn read_back(dev: &mut dyn ZonedDevice, lba: Lba, blocks: u64) -> Result<Vec<u8>, String> {
    let mut buf = vec![0xAAu8; (blocks * dev.geometry().block_size_bytes as u64) as usize];
    op(dev.read(lba, &mut buf), &format!("read {blocks} blocks at LBA {lba}"))?;
    Ok(buf)
}

// ---- checks -------------------------------------------------------------------------------

fn report_describes_every_zone(dev: &mut dyn ZonedDevice) -> CheckResult {
    let g = *dev.geometry();
    let zones = op(dev.report_all(ZoneFilter::All), "report zones")?;
    ensure!(zones.len() == g.zone_count as usize, "{} descriptors for {} zones", zones.len(), g.zone_count);
    for (i, z) in zones.iter().enumerate() {
        ensure!(z.id == ZoneId(i as u32), "descriptor {i} names zone {}", z.id);
        ensure!(z.start == g.zone_start(z.id), "zone {i} starts at {}", z.start);
        ensure!(z.zone_type == g.zone_type(z.id), "zone {i} has type {:?}", z.zone_type);
        match z.zone_type {
            ZoneType::Conventional => ensure!(z.state == ZoneState::NotWritePointer, "conventional zone {i} is {}", z.state),
            ZoneType::SequentialWriteRequired => {
                ensure!(z.capacity_blocks == g.zone_capacity_blocks, "zone {i} capacity {}", z.capacity_blocks);
                ensure!(z.write_pointer == z.start, "empty zone {i} has write pointer {}", z.write_pointer);
            }
        }
    }
    Ok(Outcome::Passed)
}

fn report_filters_and_starts(dev: &mut dyn ZonedDevice) -> CheckResult {
    let zones = match need_zones(dev, 3)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    let g = *dev.geometry();
    write_blocks(dev, g.zone_start(zones[1]), 1, 0)?;
    let open = op(dev.report_all(ZoneFilter::Only(ZoneState::ImplicitlyOpened)), "report implicitly opened")?;
    ensure!(open.len() == 1 && open[0].id == zones[1], "implicitly-opened filter returned {:?}", open.iter().map(|z| z.id).collect::<Vec<_>>());
    let empty = op(dev.report_all(ZoneFilter::Only(ZoneState::Empty)), "report empty")?;
    ensure!(empty.iter().all(|z| z.state == ZoneState::Empty), "empty filter returned a non-empty zone");
    ensure!(empty.len() == zones.len() - 1, "{} empty zones reported, expected {}", empty.len(), zones.len() - 1);
    // A start LBA inside a zone begins the report at that zone; max_zones caps it.
    let mut out = Vec::new();
    let from = Lba(g.zone_start(zones[2]).0 + 1);
    let n = op(dev.report_zones(from, ZoneFilter::All, 2, &mut out), "report from mid-zone")?;
    ensure!(n == out.len() && n <= 2, "report returned {n} and appended {}", out.len());
    ensure!(out.first().map(|z| z.id) == Some(zones[2]), "report from LBA {from} started at {:?}", out.first().map(|z| z.id));
    Ok(Outcome::Passed)
}

fn write_at_wp_implicitly_opens(dev: &mut dyn ZonedDevice) -> CheckResult {
    let zones = match need_zones(dev, 1)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    let g = *dev.geometry();
    let z = zones[0];
    let start = g.zone_start(z);
    write_blocks(dev, start, 2, 7)?;
    let d = op(dev.zone(z), "report zone")?;
    ensure!(d.state == ZoneState::ImplicitlyOpened, "zone is {} after a write", d.state);
    ensure!(d.write_pointer == Lba(start.0 + 2), "write pointer {} after 2 blocks", d.write_pointer);
    write_blocks(dev, Lba(start.0 + 2), 1, 7)?;
    ensure!(read_back(dev, start, 3)? == pattern(&g, start, 3, 7), "data read back differs from data written");
    op(dev.flush(), "flush")?;
    Ok(Outcome::Passed)
}

fn write_off_wp_is_invalid_write(dev: &mut dyn ZonedDevice) -> CheckResult {
    let zones = match need_zones(dev, 2)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    let g = *dev.geometry();
    let (a, b) = (zones[0], zones[1]);
    // Into an empty zone, past its start: refused, and the zone stays Empty (nothing leaks).
    expect_err(dev.write(Lba(g.zone_start(a).0 + 1), &pattern(&g, Lba(0), 1, 0)), "invalid-write", "write past the start of an empty zone")?;
    expect_state(dev, a, ZoneState::Empty, "after a refused write")?;
    write_blocks(dev, g.zone_start(b), 2, 0)?;
    expect_err(dev.write(g.zone_start(b), &pattern(&g, Lba(0), 1, 0)), "invalid-write", "rewrite below the write pointer")?;
    expect_err(dev.write(Lba(g.zone_start(b).0 + 3), &pattern(&g, Lba(0), 1, 0)), "invalid-write", "write past the write pointer")?;
    let wp = op(dev.zone(b), "report")?.write_pointer;
    ensure!(wp == Lba(g.zone_start(b).0 + 2), "refused writes moved the write pointer to {wp}");
    Ok(Outcome::Passed)
}

fn fill_to_capacity_makes_full(dev: &mut dyn ZonedDevice) -> CheckResult {
    let zones = match need_zones(dev, 1)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    let g = *dev.geometry();
    let z = zones[0];
    fill(dev, z, g.zone_capacity_blocks)?;
    expect_state(dev, z, ZoneState::Full, "after writing the whole capacity")?;
    expect_err(dev.append(z, &pattern(&g, Lba(0), 1, 0)), "zone-full", "append to a full zone")?;
    let last = Lba(g.zone_start(z).0 + g.zone_capacity_blocks - 1);
    ensure!(read_back(dev, last, 1)? == pattern(&g, last, 1, 0), "last block of the full zone reads back wrong");
    Ok(Outcome::Passed)
}

fn write_past_capacity_is_boundary_error(dev: &mut dyn ZonedDevice) -> CheckResult {
    let zones = match need_zones(dev, 1)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    let g = *dev.geometry();
    if g.zone_capacity_blocks < 2 {
        return Ok(Outcome::Skipped("zone capacity below 2 blocks".into()));
    }
    let z = zones[0];
    fill(dev, z, g.zone_capacity_blocks - 1)?;
    let wp = Lba(g.zone_start(z).0 + g.zone_capacity_blocks - 1);
    expect_err(dev.write(wp, &pattern(&g, wp, 2, 0)), "boundary", "two blocks at one block before capacity")?;
    expect_err(dev.append(z, &pattern(&g, wp, 2, 0)), "boundary", "append of two blocks at one block before capacity")?;
    write_blocks(dev, wp, 1, 0)?;
    expect_state(dev, z, ZoneState::Full, "after the last block")?;
    Ok(Outcome::Passed)
}

fn append_returns_lba(dev: &mut dyn ZonedDevice) -> CheckResult {
    let zones = match need_zones(dev, 1)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    let g = *dev.geometry();
    let z = zones[0];
    let start = g.zone_start(z);
    let first = op(dev.append(z, &pattern(&g, start, 1, 3)), "append 1 block")?;
    ensure!(first == start, "first append landed at {first}, zone starts at {start}");
    let second = op(dev.append(z, &pattern(&g, Lba(start.0 + 1), 3, 3)), "append 3 blocks")?;
    ensure!(second == Lba(start.0 + 1), "second append landed at {second}");
    expect_state(dev, z, ZoneState::ImplicitlyOpened, "after append")?;
    ensure!(read_back(dev, start, 4)? == pattern(&g, start, 4, 3), "appended data reads back wrong");
    let wp = op(dev.zone(z), "report")?.write_pointer;
    ensure!(wp == Lba(start.0 + 4), "write pointer {wp} after appending 4 blocks");
    Ok(Outcome::Passed)
}

fn explicit_open_and_close(dev: &mut dyn ZonedDevice) -> CheckResult {
    let zones = match need_zones(dev, 2)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    let g = *dev.geometry();
    let (a, b) = (zones[0], zones[1]);
    op(dev.open_zone(a), "open empty zone")?;
    expect_state(dev, a, ZoneState::ExplicitlyOpened, "after open")?;
    op(dev.open_zone(a), "open an open zone")?;
    expect_state(dev, a, ZoneState::ExplicitlyOpened, "after a second open")?;
    write_blocks(dev, g.zone_start(a), 1, 0)?;
    expect_state(dev, a, ZoneState::ExplicitlyOpened, "a write keeps an explicit open")?;
    op(dev.close_zone(a), "close")?;
    expect_state(dev, a, ZoneState::Closed, "after close of a written zone")?;
    op(dev.close_zone(a), "close a closed zone")?;
    expect_state(dev, a, ZoneState::Closed, "after a second close")?;
    // Writing to a Closed zone reopens it implicitly; an explicit open upgrades that.
    write_blocks(dev, Lba(g.zone_start(a).0 + 1), 1, 0)?;
    expect_state(dev, a, ZoneState::ImplicitlyOpened, "write to a closed zone")?;
    write_blocks(dev, g.zone_start(b), 1, 0)?;
    op(dev.open_zone(b), "open an implicitly opened zone")?;
    expect_state(dev, b, ZoneState::ExplicitlyOpened, "explicit open of an implicitly opened zone")?;
    op(dev.close_zone(a), "close implicitly opened")?;
    expect_state(dev, a, ZoneState::Closed, "close of an implicitly opened zone")?;
    op(dev.open_zone(a), "open a closed zone")?;
    expect_state(dev, a, ZoneState::ExplicitlyOpened, "open of a closed zone")?;
    Ok(Outcome::Passed)
}

fn close_empty_zone_follows_behavior(dev: &mut dyn ZonedDevice) -> CheckResult {
    let zones = match need_zones(dev, 1)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    let z = zones[0];
    op(dev.open_zone(z), "open")?;
    op(dev.close_zone(z), "close an opened zone with nothing written")?;
    let want = if dev.behavior().close_empty_to_empty { ZoneState::Empty } else { ZoneState::Closed };
    expect_state(dev, z, want, "close of an open zone with its write pointer at the start")?;
    Ok(Outcome::Passed)
}

fn invalid_transitions_are_refused(dev: &mut dyn ZonedDevice) -> CheckResult {
    let zones = match need_zones(dev, 2)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    let (a, b) = (zones[0], zones[1]);
    expect_err(dev.close_zone(a), "invalid-transition", "close of an empty zone")?;
    op(dev.finish_zone(b), "finish")?;
    expect_err(dev.close_zone(b), "invalid-transition", "close of a full zone")?;
    expect_err(dev.open_zone(b), "invalid-transition", "open of a full zone")?;
    let g = *dev.geometry();
    expect_err(dev.write(g.zone_start(b), &pattern(&g, Lba(0), 1, 0)), "zone-full", "write to a finished zone")?;
    Ok(Outcome::Passed)
}

fn finish_from_each_state(dev: &mut dyn ZonedDevice) -> CheckResult {
    let zones = match need_zones(dev, 4)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    let g = *dev.geometry();
    let (empty, implicit, closed, explicit) = (zones[0], zones[1], zones[2], zones[3]);
    write_blocks(dev, g.zone_start(implicit), 2, 5)?;
    write_blocks(dev, g.zone_start(closed), 1, 5)?;
    op(dev.close_zone(closed), "close")?;
    op(dev.open_zone(explicit), "open")?;
    for z in [empty, implicit, closed, explicit] {
        op(dev.finish_zone(z), &format!("finish zone {z}"))?;
        expect_state(dev, z, ZoneState::Full, "after finish")?;
    }
    op(dev.finish_zone(empty), "finish a full zone")?;
    // The data written before the finish is still there; the rest reads as zeros.
    let start = g.zone_start(implicit);
    let got = read_back(dev, start, 3)?;
    let bs = g.block_size_bytes as usize;
    ensure!(got[..2 * bs] == pattern(&g, start, 2, 5)[..], "data of a finished zone reads back wrong");
    if dev.behavior().unwritten_reads_zero {
        ensure!(got[2 * bs..].iter().all(|&b| b == 0), "unwritten block of a finished zone is not zero");
    }
    Ok(Outcome::Passed)
}

fn reset_from_each_state(dev: &mut dyn ZonedDevice) -> CheckResult {
    let zones = match need_zones(dev, 5)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    let g = *dev.geometry();
    let (empty, implicit, closed, explicit, full) = (zones[0], zones[1], zones[2], zones[3], zones[4]);
    write_blocks(dev, g.zone_start(implicit), 1, 0)?;
    write_blocks(dev, g.zone_start(closed), 1, 0)?;
    op(dev.close_zone(closed), "close")?;
    op(dev.open_zone(explicit), "open")?;
    op(dev.finish_zone(full), "finish")?;
    for z in [empty, implicit, closed, explicit, full] {
        op(dev.reset_zone(z), &format!("reset zone {z}"))?;
        let d = op(dev.zone(z), "report")?;
        ensure!(d.state == ZoneState::Empty && d.write_pointer == d.start, "zone {z} after reset: {} at {}", d.state, d.write_pointer);
    }
    if dev.behavior().unwritten_reads_zero {
        ensure!(read_back(dev, g.zone_start(implicit), 1)?.iter().all(|&b| b == 0), "a reset zone still returns data");
    }
    // Resources came back: every reset zone can be opened again.
    for z in [implicit, closed, explicit] {
        op(dev.open_zone(z), "reopen after reset")?;
    }
    Ok(Outcome::Passed)
}

fn open_limit(dev: &mut dyn ZonedDevice) -> CheckResult {
    let g = *dev.geometry();
    let Some(max_open) = g.open_zones_max else {
        return Ok(Outcome::Skipped("no open-zone limit".into()));
    };
    let zones = match need_zones(dev, max_open as usize + 1)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    for &z in &zones[..max_open as usize] {
        op(dev.open_zone(z), &format!("explicit open of zone {z}"))?;
    }
    // Explicitly opened zones are never auto-closed. With the active limit also reached the
    // active check comes first.
    let at_active_limit = g.active_zones_max == Some(max_open);
    let want = if at_active_limit { "too-many-active" } else { "too-many-open" };
    let next = zones[max_open as usize];
    expect_err(dev.open_zone(next), want, "explicit open past the open limit")?;
    expect_err(dev.write(g.zone_start(next), &pattern(&g, Lba(0), 1, 0)), want, "write to a new zone past the open limit")?;
    expect_state(dev, next, ZoneState::Empty, "zone refused for lack of resources")?;
    expect_state(dev, zones[0], ZoneState::ExplicitlyOpened, "explicitly opened zones are not auto-closed")?;
    // Closing one frees an open resource (its active one stays held).
    op(dev.close_zone(zones[0]), "close")?;
    let reopen = if at_active_limit { zones[0] } else { next };
    op(dev.open_zone(reopen), "open after a close")?;
    Ok(Outcome::Passed)
}

fn active_limit(dev: &mut dyn ZonedDevice) -> CheckResult {
    let g = *dev.geometry();
    let Some(max_active) = g.active_zones_max else {
        return Ok(Outcome::Skipped("no active-zone limit".into()));
    };
    let zones = match need_zones(dev, max_active as usize + 1)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    // Closed zones hold active resources: write one block to each and close it.
    for &z in &zones[..max_active as usize] {
        write_blocks(dev, g.zone_start(z), 1, 0)?;
        op(dev.close_zone(z), "close")?;
    }
    let next = zones[max_active as usize];
    expect_err(dev.write(g.zone_start(next), &pattern(&g, Lba(0), 1, 0)), "too-many-active", "write to a new zone past the active limit")?;
    expect_err(dev.open_zone(next), "too-many-active", "open of a new zone past the active limit")?;
    expect_state(dev, next, ZoneState::Empty, "zone refused for lack of resources")?;
    // A closed zone can still be written: it only needs an open resource.
    write_blocks(dev, Lba(g.zone_start(zones[0]).0 + 1), 1, 0)?;
    // Finishing one frees an active resource.
    op(dev.finish_zone(zones[1]), "finish")?;
    write_blocks(dev, g.zone_start(next), 1, 0)?;
    Ok(Outcome::Passed)
}

fn auto_close_oldest_implicit(dev: &mut dyn ZonedDevice) -> CheckResult {
    let g = *dev.geometry();
    let Some(max_open) = g.open_zones_max else {
        return Ok(Outcome::Skipped("no open-zone limit".into()));
    };
    if g.active_zones_max.is_some_and(|a| a <= max_open) {
        return Ok(Outcome::Skipped("the active limit equals the open limit, so an auto-close cannot be observed".into()));
    }
    let zones = match need_zones(dev, max_open as usize + 1)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    for &z in &zones[..max_open as usize] {
        write_blocks(dev, g.zone_start(z), 1, 0)?;
    }
    let next = zones[max_open as usize];
    let write = dev.write(g.zone_start(next), &pattern(&g, g.zone_start(next), 1, 0));
    if dev.behavior().auto_close == AutoClose::Off {
        expect_err(write, "too-many-open", "write past the open limit without auto-close")?;
        return Ok(Outcome::Passed);
    }
    op(write, "write past the open limit (auto-close)")?;
    expect_state(dev, zones[0], ZoneState::Closed, "the oldest implicitly opened zone")?;
    for &z in &zones[1..max_open as usize] {
        expect_state(dev, z, ZoneState::ImplicitlyOpened, "younger implicitly opened zones")?;
    }
    expect_state(dev, next, ZoneState::ImplicitlyOpened, "the newly written zone")?;
    Ok(Outcome::Passed)
}

fn auto_close_with_active_limit(dev: &mut dyn ZonedDevice) -> CheckResult {
    let g = *dev.geometry();
    let (Some(max_open), Some(max_active)) = (g.open_zones_max, g.active_zones_max) else {
        return Ok(Outcome::Skipped("needs both an open and an active limit".into()));
    };
    if max_active <= max_open || dev.behavior().auto_close == AutoClose::Off {
        return Ok(Outcome::Skipped("needs auto-close and an active limit above the open limit".into()));
    }
    let zones = match need_zones(dev, max_active as usize + 1)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    // Fill the active budget with closed zones, then the open budget with implicit opens.
    let closed = (max_active - max_open) as usize;
    for &z in &zones[..closed] {
        write_blocks(dev, g.zone_start(z), 1, 0)?;
        op(dev.close_zone(z), "close")?;
    }
    for &z in &zones[closed..max_active as usize] {
        write_blocks(dev, g.zone_start(z), 1, 0)?;
    }
    let next = zones[max_active as usize];
    expect_err(dev.write(g.zone_start(next), &pattern(&g, Lba(0), 1, 0)), "too-many-active", "write to a new zone with both limits reached")?;
    // QEMU closes the oldest implicitly opened zone before finding no active resource;
    // null_blk checks the active limit first and closes nothing.
    let oldest = zones[closed];
    let want = match dev.behavior().auto_close {
        AutoClose::Always => ZoneState::Closed,
        _ => ZoneState::ImplicitlyOpened,
    };
    expect_state(dev, oldest, want, "oldest implicitly opened zone after the refused write")?;
    Ok(Outcome::Passed)
}

fn reads_past_wp_succeed(dev: &mut dyn ZonedDevice) -> CheckResult {
    let zones = match need_zones(dev, 2)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    let g = *dev.geometry();
    let start = g.zone_start(zones[0]);
    write_blocks(dev, start, 2, 9)?;
    let got = read_back(dev, start, 4)?;
    let bs = g.block_size_bytes as usize;
    ensure!(got[..2 * bs] == pattern(&g, start, 2, 9)[..], "written blocks read back wrong");
    // Reads past the write pointer always succeed; what they return is the device's choice.
    let empty = read_back(dev, g.zone_start(zones[1]), 2)?;
    if dev.behavior().unwritten_reads_zero {
        ensure!(got[2 * bs..].iter().all(|&b| b == 0), "blocks past the write pointer are not zero");
        ensure!(empty.iter().all(|&b| b == 0), "an empty zone does not read as zeros");
    }
    expect_state(dev, zones[1], ZoneState::Empty, "a read does not open a zone")?;
    Ok(Outcome::Passed)
}

fn cross_zone_reads_follow_behavior(dev: &mut dyn ZonedDevice) -> CheckResult {
    let g = *dev.geometry();
    if g.zone_count < 2 {
        return Ok(Outcome::Skipped("one zone only".into()));
    }
    let lba = Lba(g.zone_size_blocks - 1);
    let mut buf = vec![0u8; 2 * g.block_size_bytes as usize];
    let r = dev.read(lba, &mut buf);
    if dev.behavior().cross_zone_reads {
        op(r, "read across a zone boundary")?;
    } else {
        expect_err(r, "boundary", "read across a zone boundary")?;
    }
    Ok(Outcome::Passed)
}

fn conventional_zones(dev: &mut dyn ZonedDevice) -> CheckResult {
    let g = *dev.geometry();
    if g.conventional_zone_count == 0 {
        return Ok(Outcome::Skipped("no conventional zones".into()));
    }
    let z = ZoneId(0);
    let start = g.zone_start(z);
    // Random order, overwrites, and a write ending exactly at the zone end.
    let last = Lba(start.0 + g.zone_size_blocks - 1);
    write_blocks(dev, last, 1, 1)?;
    write_blocks(dev, Lba(start.0 + 5), 2, 1)?;
    write_blocks(dev, Lba(start.0 + 5), 1, 2)?;
    ensure!(read_back(dev, Lba(start.0 + 5), 1)? == pattern(&g, Lba(start.0 + 5), 1, 2), "overwritten block reads back wrong");
    ensure!(read_back(dev, Lba(start.0 + 6), 1)? == pattern(&g, Lba(start.0 + 6), 1, 1), "neighbour of the overwrite changed");
    ensure!(read_back(dev, last, 1)? == pattern(&g, last, 1, 1), "last block reads back wrong");
    expect_state(dev, z, ZoneState::NotWritePointer, "conventional zone after writes")?;
    expect_err(dev.append(z, &pattern(&g, Lba(0), 1, 0)), "conventional-zone", "append to a conventional zone")?;
    for action in [ZoneAction::Open, ZoneAction::Close, ZoneAction::Finish, ZoneAction::Reset] {
        let r = dev.manage(action, z);
        ensure!(r.is_err(), "{action} of a conventional zone succeeded");
    }
    if g.conventional_zone_count < g.zone_count {
        // A write may not run from a conventional zone into the next one.
        let r = dev.write(last, &pattern(&g, last, 2, 0));
        ensure!(r.is_err(), "a write crossing from a conventional zone into the next zone succeeded");
    }
    Ok(Outcome::Passed)
}

fn bad_arguments_are_refused(dev: &mut dyn ZonedDevice) -> CheckResult {
    let zones = match need_zones(dev, 1)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    let g = *dev.geometry();
    let bs = g.block_size_bytes as usize;
    let start = g.zone_start(zones[0]);
    expect_err(dev.write(start, &vec![0u8; bs / 2]), "invalid-argument", "write smaller than a block")?;
    expect_err(dev.write(start, &[]), "invalid-argument", "empty write")?;
    expect_err(dev.read(start, &mut vec![0u8; bs + 1]), "invalid-argument", "read of a partial block")?;
    expect_err(dev.write(Lba(g.total_blocks()), &vec![0u8; bs]), "out-of-range", "write past the device end")?;
    expect_err(dev.read(Lba(g.total_blocks() - 1), &mut vec![0u8; 2 * bs]), "out-of-range", "read past the device end")?;
    expect_err(dev.append(ZoneId(g.zone_count), &vec![0u8; bs]), "invalid-argument", "append to a zone that does not exist")?;
    expect_err(dev.reset_zone(ZoneId(g.zone_count)), "invalid-argument", "reset of a zone that does not exist")?;
    expect_state(dev, zones[0], ZoneState::Empty, "after refused requests")?;
    Ok(Outcome::Passed)
}

fn select_all_actions(dev: &mut dyn ZonedDevice) -> CheckResult {
    let g = *dev.geometry();
    let n = g.open_zones_max.unwrap_or(3).min(3) as usize;
    let zones = match need_zones(dev, n)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    for &z in &zones[..n] {
        write_blocks(dev, g.zone_start(z), 1, 0)?;
    }
    let closed = op(dev.manage_all(ZoneAction::Close), "close all")?;
    ensure!(closed as usize == n, "close all acted on {closed} zones, expected {n}");
    let listed = op(dev.report_all(ZoneFilter::Only(ZoneState::Closed)), "report closed")?;
    ensure!(listed.len() == n, "{} closed zones after close all", listed.len());
    let finished = op(dev.manage_all(ZoneAction::Finish), "finish all")?;
    ensure!(finished as usize == n, "finish all acted on {finished} zones");
    let reset = op(dev.manage_all(ZoneAction::Reset), "reset all")?;
    ensure!(reset as usize == n, "reset all acted on {reset} zones");
    ensure!(seq_zones(dev)?.len() == zones.len(), "zones left non-empty after reset all");
    Ok(Outcome::Passed)
}

fn resets_count_wear(dev: &mut dyn ZonedDevice) -> CheckResult {
    let zones = match need_zones(dev, 2)? {
        Ok(z) => z,
        Err(skip) => return Ok(skip),
    };
    let g = *dev.geometry();
    let (a, b) = (zones[0], zones[1]);
    let before = dev.stats().clone();
    write_blocks(dev, g.zone_start(a), 1, 0)?;
    op(dev.reset_zone(a), "reset written zone")?;
    op(dev.reset_zone(b), "reset empty zone")?;
    let after = dev.stats();
    let wear = |s: &crate::DeviceStats, z: ZoneId| s.resets_per_zone[z.0 as usize];
    ensure!(wear(after, a) == wear(&before, a) + 1, "reset of a written zone did not count as wear");
    ensure!(wear(after, b) == wear(&before, b), "reset of an empty zone counted as wear");
    ensure!(after.writes.ops == before.writes.ops + 1, "write counter did not move by one");
    ensure!(after.writes.bytes == before.writes.bytes + g.block_size_bytes as u64, "written bytes miscounted");
    Ok(Outcome::Passed)
}

impl From<DeviceError> for Outcome {
    fn from(e: DeviceError) -> Outcome {
        Outcome::Failed(e.to_string())
    }
}
