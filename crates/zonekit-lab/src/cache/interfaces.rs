//! The zoned cache on every interface (`zonekit cache experiment --interfaces`): seed 004's
//! synthetic workload through the same cache on ZNS (bucket = zone, evicting a bucket resets
//! it), on NVMe FDP SSDs with 2, 4 and 8 handles (bcache's small buckets, each bucket written
//! under its class's handle and trimmed when evicted) and on a conventional SSD (the same
//! buckets, no hint; without and with discard), all at the same raw capacity: the SSDs' physical
//! space, spare included, is at most the ZNS device's zones, so their caches are smaller by the
//! spare. Reported per run: hit ratio, host WAF, device WAF, total WAF and device GC moves.
//!
//! Two placements: ZNS-naive's (one temperature) and the LRU sampler's (hot and cold), both
//! with LFU eviction and the experiment's write points, so the classes a device hears are the
//! write points (8) or hot and cold × write points (16), folded onto the handles.

use serde::Serialize;
use zonekit_report::{csv, markdown_table};
use zonekit_ssd::RuhType;

use crate::cache::bench::{CacheReport, CacheSpec, DeviceKind};
use crate::cache::experiment::{check_experiment, commands_tsv, write_file, CacheExperiment};
use crate::cache::ssd::SsdShape;
use crate::harness::error::{LabError, Result};
use crate::harness::parallel;

const BLOCK: u64 = 4096;
const MIB: u64 = 1 << 20;
/// The SSDs' spare, as seed 004's conventional baseline (NVMeVirt's conventional default).
pub const SPARE: f64 = 0.07;

/// One run's figures.
#[derive(Clone, Debug, Serialize)]
pub struct CacheInterfaceRow {
    pub placement: String,
    pub interface: String,
    pub bucket_bytes: u64,
    /// The cache's capacity (the SSD's logical space).
    pub cache_bytes: u64,
    /// Flash behind it: the zones, or the SSD's reclaim units.
    pub raw_bytes: u64,
    pub hit_ratio: f64,
    pub host_waf: f64,
    pub device_waf: f64,
    pub total_waf: f64,
    pub device_gc_blocks: u64,
    pub evictions: u64,
    pub cache_blocks_written: u64,
}

/// The columns of `cache-interfaces.csv`.
pub const HEADER: [&str; 12] = [
    "placement",
    "interface",
    "bucket_bytes",
    "cache_bytes",
    "raw_bytes",
    "hit_ratio",
    "host_waf",
    "device_waf",
    "total_waf",
    "device_gc_blocks",
    "evictions",
    "cache_blocks_written",
];

impl CacheInterfaceRow {
    fn cells(&self) -> Vec<String> {
        vec![
            self.placement.clone(),
            self.interface.clone(),
            self.bucket_bytes.to_string(),
            self.cache_bytes.to_string(),
            self.raw_bytes.to_string(),
            format!("{:.4}", self.hit_ratio),
            format!("{:.4}", self.host_waf),
            format!("{:.4}", self.device_waf),
            format!("{:.4}", self.total_waf),
            self.device_gc_blocks.to_string(),
            self.evictions.to_string(),
            self.cache_blocks_written.to_string(),
        ]
    }
}

/// Flash bytes behind a cache device.
fn raw_bytes(spec: &CacheSpec) -> Result<u64> {
    let ssd = |bucket_bytes, op, erase_unit_bytes, handles| -> Result<u64> {
        let shape = SsdShape { cache_bytes: spec.cache_bytes, bucket_bytes, op, erase_unit_bytes, handles, discard: false, data: false };
        Ok(shape.config()?.physical_blocks() * BLOCK)
    };
    match spec.device {
        DeviceKind::Zoned { .. } => Ok(spec.cache_bytes),
        DeviceKind::Conventional { bucket_bytes, op, erase_unit_bytes } | DeviceKind::ConventionalDiscard { bucket_bytes, op, erase_unit_bytes } => {
            ssd(bucket_bytes, op, erase_unit_bytes, None)
        }
        DeviceKind::Fdp { bucket_bytes, op, erase_unit_bytes, handles, ruh_type } => ssd(bucket_bytes, op, erase_unit_bytes, Some((handles, ruh_type))),
    }
}

/// (placement, spec) of every run: each placement on ZNS, FDP with 2, 4 and 8 initially
/// isolated handles and 8 persistently isolated ones, and conventional without and with
/// discard.
pub fn specs(exp: &CacheExperiment) -> Vec<(String, CacheSpec)> {
    let base = exp.base();
    let zone_bytes = CacheExperiment::zone_bytes(&base);
    let raw = base.cache_bytes;
    // bcache's buckets beside the zone as in the seed-004 baseline (zone / 128), 16 to an
    // erase unit (the reclaim unit).
    let bucket_bytes = (zone_bytes / 128).max(BLOCK);
    let erase_unit_bytes = 16 * bucket_bytes;
    // The SSD's logical space: what fits the raw capacity with its spare, in whole buckets.
    let ssd_cache_bytes = ((raw as f64 / (1.0 + SPARE)) as u64) / bucket_bytes * bucket_bytes;
    let mut devices = vec![base.device];
    for (handles, ruh_type) in [(2, RuhType::InitiallyIsolated), (4, RuhType::InitiallyIsolated), (8, RuhType::InitiallyIsolated), (8, RuhType::PersistentlyIsolated)] {
        devices.push(DeviceKind::Fdp { bucket_bytes, op: SPARE, erase_unit_bytes, handles, ruh_type });
    }
    devices.push(DeviceKind::Conventional { bucket_bytes, op: SPARE, erase_unit_bytes });
    devices.push(DeviceKind::ConventionalDiscard { bucket_bytes, op: SPARE, erase_unit_bytes });
    let mut out = Vec::new();
    for (placement, sampler) in [("ZNS-naive (LFU)", "none"), ("LRU sampler (LFU)", "lru")] {
        for &device in &devices {
            let cache_bytes = if device == base.device { raw } else { ssd_cache_bytes };
            out.push((placement.to_string(), CacheSpec { device, cache_bytes, sampler: sampler.into(), eviction: "lfu".into(), ..base.clone() }));
        }
    }
    out
}

fn row(placement: &str, spec: &CacheSpec, r: &CacheReport) -> Result<CacheInterfaceRow> {
    Ok(CacheInterfaceRow {
        placement: placement.to_string(),
        interface: r.interface.clone(),
        bucket_bytes: r.bucket_bytes,
        cache_bytes: spec.cache_bytes,
        raw_bytes: raw_bytes(spec)?,
        hit_ratio: r.hit_ratio,
        host_waf: r.host_waf,
        device_waf: r.device_waf,
        total_waf: r.total_waf,
        device_gc_blocks: r.device_gc_blocks,
        evictions: r.evictions,
        cache_blocks_written: r.cache_blocks_written,
    })
}

/// Runs every placement × interface (on `exp.threads` threads), writes
/// `cache-interfaces.csv` and `summary.md` into `exp.out` and returns the summary.
pub fn run(exp: &CacheExperiment, progress: &(dyn Fn(usize, usize, &str) + Sync)) -> Result<String> {
    if exp.trace.is_some() {
        return Err(LabError::Usage("--interfaces runs seed 004's synthetic workload; a trace is not taken".into()));
    }
    check_experiment(exp)?;
    std::fs::create_dir_all(&exp.out).map_err(LabError::io(&exp.out))?;
    let specs = specs(exp);
    let labelled: Vec<(&str, String, CacheSpec)> = specs.iter().map(|(placement, spec)| ("interfaces", format!("{placement} on {}", spec.device.name()), spec.clone())).collect();
    crate::harness::results::write_atomically(&exp.out.join("commands.tsv"), &commands_tsv(exp, &labelled))?;
    type Slot = std::sync::Mutex<Option<Result<CacheInterfaceRow>>>;
    let results: Vec<Slot> = specs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let done = std::sync::atomic::AtomicUsize::new(0);
    // Finished runs are kept: a rerun after an interruption computes only the missing ones.
    let store = crate::harness::runs::RunStore::open(&exp.out)?;
    parallel::for_each(specs.len(), exp.threads, |i| {
        let (placement, spec) = &specs[i];
        let label = format!("{placement} on {}", spec.device.name());
        let result = exp.run_stored(&store, &label, spec).and_then(|(r, _)| row(placement, spec, &r));
        *results[i].lock().expect("no panics while holding") = Some(result);
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        progress(n, specs.len(), &label);
    });
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    for ((placement, spec), slot) in specs.iter().zip(results) {
        match slot.into_inner().expect("no panics while holding").expect("ran") {
            Ok(r) => rows.push(r),
            Err(e) => failed.push(format!("{placement} on {}: {e}", spec.device.name())),
        }
    }
    if !failed.is_empty() {
        return Err(LabError::Runs { failed, total: specs.len() });
    }
    write_file(&exp.out, "cache-interfaces.csv", csv(&HEADER, &rows.iter().map(CacheInterfaceRow::cells).collect::<Vec<_>>()))?;
    let base = exp.base();
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.placement.clone(),
                r.interface.clone(),
                format!("{} KiB", r.bucket_bytes / 1024),
                format!("{} / {}", r.cache_bytes / MIB, r.raw_bytes / MIB),
                format!("{:.2} %", r.hit_ratio * 100.0),
                format!("{:.3}", r.host_waf),
                format!("{:.3}", r.device_waf),
                format!("{:.3}", r.total_waf),
                r.device_gc_blocks.to_string(),
            ]
        })
        .collect();
    let summary = format!(
        "Seed 004's synthetic workload at scale {} ({} records, {} reads, {} write points, LFU eviction), the same raw flash on every interface ({} MiB: {} zones of {} MiB on ZNS; {:.0} % spare on the SSDs, reclaim units of 16 buckets).\n\n{}",
        exp.scale,
        base.workload.records,
        base.workload.operations,
        exp.write_points,
        base.cache_bytes / MIB,
        base.cache_bytes / CacheExperiment::zone_bytes(&base),
        CacheExperiment::zone_bytes(&base) / MIB,
        SPARE * 100.0,
        markdown_table(&["placement", "interface", "bucket", "cache / raw MiB", "hit ratio", "host WAF", "device WAF", "total WAF", "device GC moves (blocks)"], &table)
    );
    write_file(&exp.out, "summary.md", summary.clone())?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_interface_runs_at_the_same_raw_capacity_and_reports_its_wafs() {
        let exp = CacheExperiment::synthetic(0.0078125, 1.0, 1, 2, std::env::temp_dir().join(format!("zonekit-cache-interfaces-{}", std::process::id())));
        let specs = specs(&exp);
        assert_eq!(specs.len(), 14);
        let zns_raw = raw_bytes(&specs[0].1).unwrap();
        let mut rows = Vec::new();
        for (placement, spec) in specs.iter().filter(|(p, _)| p.starts_with("LRU")) {
            let (r, _) = exp.run(placement, spec).unwrap();
            let row = row(placement, spec, &r).unwrap();
            assert!(row.raw_bytes <= zns_raw && row.raw_bytes * 100 >= zns_raw * 95, "{}: {} raw bytes against {zns_raw}", row.interface, row.raw_bytes);
            assert!((row.total_waf - row.host_waf * row.device_waf).abs() < 1e-12, "{row:?}");
            assert_eq!(row.host_waf, 1.0, "{row:?}: LFU reinserts nothing and no metadata is modelled");
            rows.push(row);
        }
        let by = |name: &str| rows.iter().find(|r| r.interface == name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(by("zns").device_waf, 1.0);
        assert_eq!(by("zns").device_gc_blocks, 0);
        // Without discard the conventional SSD copies every evicted bucket still mapped; FDP
        // trims them and separates the classes.
        let conventional = by("conventional").device_waf;
        assert!(conventional > 1.1, "{conventional}");
        for fdp in ["fdp:2", "fdp:4", "fdp:8"] {
            assert!(by(fdp).device_waf < conventional, "{fdp}: {} against conventional {conventional}", by(fdp).device_waf);
        }
        assert!(by("conventional+discard").device_waf < conventional);
        std::fs::remove_dir_all(&exp.out).ok();
    }
}
