//! `zonekit device demo`'s workload: every preset device, emulated in metadata-only mode
//! under its flash timing model, runs the same zoned workload (streamed appends, random reads,
//! resets) in virtual time. The CLI prints and charts what [`run_preset`] measures.

use serde::Serialize;
use zonekit_device::timing::TimedDevice;
use zonekit_device::{preset, Lba, MemDevice, StorageMode, ZoneAction, ZoneFilter, ZoneId, ZoneState, ZonedDevice};

use crate::harness::error::Result;

pub const WRITE_CHUNK_BYTES: usize = 128 << 10;
pub const READ_BYTES: usize = 4 << 10;
pub const QUEUE_DEPTH: usize = 32;
pub const TARGET_WRITE_BYTES: u64 = 256 << 20;
pub const READS: u32 = 4000;

/// What one preset did under the workload.
#[derive(Serialize)]
pub struct PresetResult {
    pub preset: &'static str,
    pub streams: u32,
    pub written_mib: u64,
    pub write_mb_per_s: f64,
    pub read_kiops: f64,
    pub read_p50_us: f64,
    pub read_p99_us: f64,
    pub reset_mean_ms: f64,
    pub zones_reset: u64,
}

/// SplitMix64: a tiny seeded generator, so the demo is the same on every run.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Runs the demo's workload on preset `p` in virtual time.
pub fn run_preset(p: &preset::Preset) -> Result<PresetResult> {
    let g = p.geometry;
    let mem = MemDevice::new(g, p.behavior, StorageMode::MetadataOnly)?;
    let mut dev = TimedDevice::new(mem, p.flash, QUEUE_DEPTH)?;
    let streams = g.open_zones_max.unwrap_or(4).min(4);
    let chunk_blocks = (WRITE_CHUNK_BYTES / g.block_size_bytes as usize) as u64;
    let target = TARGET_WRITE_BYTES.min(g.usable_bytes() / 2);
    let chunk = vec![0u8; WRITE_CHUNK_BYTES.min(g.zone_capacity_bytes() as usize)];
    let mut next_zone = g.conventional_zone_count;
    let mut open: Vec<ZoneId> = Vec::new();
    let mut written = 0u64;
    let mut turn = 0usize;
    // Phase 1: `streams` zones written round-robin, a new zone as each fills.
    while written < target {
        while open.len() < streams as usize && next_zone < g.zone_count {
            open.push(ZoneId(next_zone));
            next_zone += 1;
        }
        if open.is_empty() {
            break;
        }
        let i = turn % open.len();
        turn += 1;
        let zone = open[i];
        let left = g.zone_capacity_blocks - dev.zone(zone)?.written_blocks();
        let blocks = left.min(chunk_blocks).min(chunk.len() as u64 / g.block_size_bytes as u64);
        dev.append(zone, &chunk[..(blocks * g.block_size_bytes as u64) as usize])?;
        written += blocks * g.block_size_bytes as u64;
        if blocks == left {
            open.remove(i);
        }
    }
    dev.flush()?;
    let write_ns = dev.report().elapsed_ns;

    // Phase 2: random 4 KiB reads over what was written.
    let written_blocks = written / g.block_size_bytes as u64;
    let zone_data = dev.report_all(ZoneFilter::All)?.into_iter().filter(|z| z.state != ZoneState::Empty && z.state != ZoneState::NotWritePointer).collect::<Vec<_>>();
    let mut rng = SplitMix(0x2025);
    let read_start = dev.host_now_ns();
    let mut buf = vec![0u8; READ_BYTES];
    let read_blocks = (READ_BYTES / g.block_size_bytes as usize) as u64;
    for _ in 0..READS {
        let z = &zone_data[(rng.next() % zone_data.len() as u64) as usize];
        let used = if z.state == ZoneState::Full { z.capacity_blocks } else { z.written_blocks() };
        let off = rng.next() % used.saturating_sub(read_blocks - 1).max(1);
        dev.read(Lba(z.start.0 + off), &mut buf)?;
    }
    dev.flush()?;
    let read_ns = dev.host_now_ns() - read_start;

    // Phase 3: reset everything written.
    let zones_reset = dev.manage_all(ZoneAction::Reset)? as u64;
    dev.flush()?;
    let r = dev.report();
    debug_assert!(written_blocks > 0);
    Ok(PresetResult {
        preset: p.name,
        streams,
        written_mib: written >> 20,
        write_mb_per_s: written as f64 / 1e6 / (write_ns as f64 / 1e9),
        read_kiops: READS as f64 / (read_ns as f64 / 1e9) / 1e3,
        read_p50_us: r.read_latency.quantile(0.5) as f64 / 1e3,
        read_p99_us: r.read_latency.quantile(0.99) as f64 / 1e3,
        reset_mean_ms: r.reset_latency.mean() / 1e6,
        zones_reset,
    })
}
