//! One run of the bucket cache from its settings, as `zonekit cache run` takes them and
//! Python's `zonekit.cache_run` passes them: the defaults, the checks that refuse a setting by
//! its flag's name, and the [`CacheSpec`] they make. The CLI and Python share this, so they
//! cannot drift apart.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use zonekit_base::policy::Params;
use zonekit_cache::sampler::SamplerBudget;
use zonekit_cache::{Admission, CacheConfig, MetadataConfig};
use zonekit_trace::input::Input;

use crate::cache::bench::{run_cache, write_mode, CacheReport, CacheSpec, DeviceKind, Layout, Ycsb, RECORD_BYTES};
use crate::cache::trace::run_cache_trace;
use crate::harness::error::{LabError, Result};
use crate::harness::interface::Interface;
use crate::harness::progress::Progress;

/// Every setting of one cache run, named as `zonekit cache run`'s flags (with `_` for `-`).
/// `None` takes the default the flag's help states. The YCSB-like workload's settings are
/// `None` unless given, so that a trace run can refuse them rather than ignore them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheRunSettings {
    /// zns, fdp:N, fdp:N:persistent or conventional [zns].
    pub interface: Option<String>,
    /// The older name of `interface`, refused with a pointer to it.
    pub device: Option<String>,
    /// Conventional only: trim evicted buckets (bcache's discard option).
    pub discard: bool,
    pub cache_mib: u64,
    /// Conventional and FDP only, instead of `cache_mib`: the cache in KiB, for an SSD's
    /// logical space that is not a whole number of MiB (the interface comparison's, beside a
    /// zoned device's raw capacity).
    pub cache_kib: Option<u64>,
    /// ZNS only: zone size [8] and zones a bucket [1].
    pub zone_mib: Option<u64>,
    pub zones_per_bucket: Option<u32>,
    /// Conventional and FDP only: bucket [1024 KiB], spare fraction [0.07], erase unit
    /// [2048 KiB].
    pub bucket_kib: Option<u64>,
    pub op: Option<f64>,
    pub erase_unit_kib: Option<u64>,
    pub eviction: String,
    pub sampler: String,
    pub sampler_params: Params,
    /// The sampler's memory budget [16384 bytes; not for none or sfr].
    pub sampler_bytes: Option<u64>,
    pub chunk_kib: u64,
    pub mode: String,
    pub cutoff_kib: u64,
    /// all or ghost.
    pub admission: String,
    /// With admission ghost [0.9 × the cache's blocks].
    pub ghost_blocks: Option<u64>,
    pub write_points: u32,
    /// bcache's own metadata, and its settings (each only with `metadata`).
    pub metadata: bool,
    pub journal_buckets: Option<u32>,
    pub btree_node_kib: Option<u64>,
    pub btree_reserve: Option<u32>,
    /// whole or used [whole].
    pub prio_write: Option<String>,
    /// The YCSB-like reads [400,000 records, 8 threads, 2 operations a record, no updates,
    /// scrambled, seed 1, strided, 1040-byte records].
    pub records: Option<u64>,
    pub threads: Option<u32>,
    pub operations: Option<u64>,
    pub update_fraction: Option<f64>,
    pub clustered: bool,
    pub seed: Option<u64>,
    pub layout: Option<String>,
    pub record_bytes: Option<u64>,
    /// The backing disk [4096 MiB strided, the records' footprint packed, sized to a trace].
    pub data_mib: Option<u64>,
    /// Share of the requests that warm the cache [0.5 of the YCSB-like reads, 0 of a trace].
    pub warmup_fraction: Option<f64>,
    /// Replay this block trace instead of the YCSB-like reads.
    pub trace: Option<PathBuf>,
}

impl Default for CacheRunSettings {
    fn default() -> Self {
        CacheRunSettings {
            interface: None,
            device: None,
            discard: false,
            cache_mib: 512,
            cache_kib: None,
            zone_mib: None,
            zones_per_bucket: None,
            bucket_kib: None,
            op: None,
            erase_unit_kib: None,
            eviction: "lfu".into(),
            sampler: "lru".into(),
            sampler_params: Params::new(),
            sampler_bytes: None,
            chunk_kib: 2048,
            mode: "writethrough".into(),
            cutoff_kib: 4096,
            admission: "all".into(),
            ghost_blocks: None,
            write_points: 1,
            metadata: false,
            journal_buckets: None,
            btree_node_kib: None,
            btree_reserve: None,
            prio_write: None,
            records: None,
            threads: None,
            operations: None,
            update_fraction: None,
            clustered: false,
            seed: None,
            layout: None,
            record_bytes: None,
            data_mib: None,
            warmup_fraction: None,
            trace: None,
        }
    }
}

/// The YCSB-like reads' defaults.
pub const RECORDS: u64 = 400_000;
pub const THREADS: u32 = 8;
pub const SEED: u64 = 1;

/// `v` units of `unit_bytes` in bytes, refused by `flag` past 2^64.
fn in_bytes(v: u64, unit_bytes: u64, flag: &str) -> Result<u64> {
    v.checked_mul(unit_bytes).ok_or_else(|| LabError::Usage(format!("{flag} {v} is too large")))
}

/// `v` MiB in bytes, refused by `flag` past 2^64.
pub fn mib(v: u64, flag: &str) -> Result<u64> {
    in_bytes(v, 1 << 20, flag)
}

fn kib(v: u64, flag: &str) -> Result<u64> {
    in_bytes(v, 1 << 10, flag)
}

impl CacheRunSettings {
    /// Read operations of the YCSB-like reads (0 for a trace): the progress bar's length.
    pub fn operations(&self) -> u64 {
        match self.trace {
            Some(_) => 0,
            None => self.operations.unwrap_or(self.records.unwrap_or(RECORDS).saturating_mul(2)),
        }
    }

    /// The run's spec, every setting checked and a wrong one refused by its flag.
    pub fn spec(&self) -> Result<CacheSpec> {
        if self.trace.is_some() {
            let ycsb = [
                ("--records", self.records.is_some()),
                ("--threads", self.threads.is_some()),
                ("--operations", self.operations.is_some()),
                ("--update-fraction", self.update_fraction.is_some()),
                ("--clustered", self.clustered),
                ("--seed", self.seed.is_some()),
                ("--layout", self.layout.is_some()),
                ("--record-bytes", self.record_bytes.is_some()),
            ];
            if let Some((flag, _)) = ycsb.iter().find(|(_, given)| *given) {
                usage!("{flag} shapes the YCSB-like reads, not a --trace replay");
            }
        }
        let device = self.device_kind()?;
        if matches!(self.sampler.as_str(), "none" | "sfr") && self.sampler_bytes.is_some() {
            usage!("--sampler-bytes: the {} sampler has no memory budget", self.sampler);
        }
        if self.sampler == "none" && !self.sampler_params.is_empty() {
            usage!("--sampler-param: the none sampler takes no parameters");
        }
        // The samplers' tables take several bytes per byte of budget: a budget past the
        // machine's memory aborted in the allocator.
        if let Some(total) = self.sampler_bytes.and_then(|bytes| zonekit_base::mem::beyond_memory(bytes.saturating_mul(8))) {
            usage!(
                "--sampler-bytes {}: the sampler's tables would not fit this machine's {:.1} GiB (at most {} bytes)",
                self.sampler_bytes.unwrap_or_default(),
                total as f64 / (1u64 << 30) as f64,
                total / 8
            );
        }
        if self.write_points == 0 {
            usage!("--write-points 0: at least 1");
        }
        if self.chunk_kib == 0 || self.chunk_kib % 4 != 0 {
            usage!("--chunk-kib {}: a positive whole number of 4 KiB blocks", self.chunk_kib);
        }
        let cache_bytes = match self.cache_kib {
            Some(_) if self.cache_mib != CacheRunSettings::default().cache_mib => usage!("--cache-kib and --cache-mib: give one"),
            Some(k) => kib(k, "--cache-kib")?,
            None => mib(self.cache_mib, "--cache-mib")?,
        };
        let admission = match (self.admission.as_str(), self.ghost_blocks) {
            ("all", None) => Admission::All,
            ("all", Some(_)) => usage!("--ghost-blocks applies to --admission ghost only"),
            ("ghost", Some(0)) => usage!("--ghost-blocks must be at least 1"),
            ("ghost", blocks) => Admission::Ghost { blocks: blocks.unwrap_or(cache_bytes / 4096 * 9 / 10).max(1) },
            (other, _) => usage!("--admission {other:?}: expected all or ghost"),
        };
        let metadata = if self.metadata {
            Some(self.metadata_config(&device, cache_bytes)?)
        } else {
            if self.journal_buckets.is_some() || self.btree_node_kib.is_some() || self.btree_reserve.is_some() || self.prio_write.is_some() {
                usage!("--journal-buckets, --btree-node-kib, --btree-reserve and --prio-write shape bcache's metadata: they need --metadata");
            }
            None
        };
        let layout = Layout::parse(self.layout.as_deref().unwrap_or("strided"))?;
        let record_bytes = self.record_bytes.unwrap_or(RECORD_BYTES);
        if record_bytes == 0 || record_bytes > 4096 {
            usage!("--record-bytes {record_bytes}: a record must be 1 to 4096 bytes (at most one 4096-byte block)");
        }
        let records = self.records.unwrap_or(RECORDS);
        let data_bytes = match (self.data_mib, layout) {
            (Some(m), _) => mib(m, "--data-mib")?,
            (None, Layout::Strided) => 4096 << 20,
            (None, Layout::Packed) => records
                .checked_mul(record_bytes)
                .map(|bytes| bytes.div_ceil(4096) * 4096)
                .ok_or_else(|| LabError::Usage(format!("--records {records} --record-bytes {record_bytes}: {records} records of {record_bytes} bytes are over 2^64 bytes")))?,
        };
        Ok(CacheSpec {
            device,
            cache_bytes,
            eviction: self.eviction.clone(),
            sampler: self.sampler.clone(),
            sampler_params: self.sampler_params.clone(),
            budget: SamplerBudget { memory_bytes: self.sampler_bytes.unwrap_or(16384), chunk_bytes: kib(self.chunk_kib, "--chunk-kib")? },
            config: CacheConfig {
                mode: write_mode(&self.mode)?,
                sequential_cutoff_bytes: kib(self.cutoff_kib, "--cutoff-kib")?,
                write_points: self.write_points,
                admission,
                metadata,
                ..CacheConfig::default()
            },
            workload: Ycsb {
                records,
                record_bytes,
                data_bytes,
                threads: self.threads.unwrap_or(THREADS),
                operations: self.operations(),
                update_fraction: self.update_fraction.unwrap_or(0.0),
                // A trace counts every request unless told: its head is data, not a load phase.
                warmup_fraction: self.warmup_fraction.unwrap_or(if self.trace.is_some() { 0.0 } else { 0.5 }),
                scrambled: !self.clustered,
                layout,
            },
            seed: self.seed.unwrap_or(SEED),
            data: false,
        })
    }

    /// Runs the cache on the trace or the YCSB-like reads; `progress` hears the read
    /// operations done (of [`Self::operations`]; a trace's requests) and may stop the run.
    pub fn run(&self, progress: &mut dyn Progress) -> Result<CacheReport> {
        let spec = self.spec()?;
        let report = match &self.trace {
            Some(path) => {
                if !path.exists() {
                    usage!("--trace {}: no such file", path.display());
                }
                let input = Input::path(path, None, false);
                let backing = self.data_mib.map(|m| mib(m, "--data-mib")).transpose()?;
                run_cache_trace("trace", &spec, &input, backing, progress)
            }
            None => run_cache("ycsb", &spec, progress).map(|(report, _)| report),
        };
        // The cache refuses a shape it cannot build in its own words: named here by the
        // settings that shape it.
        report.map_err(|e| match e {
            LabError::Usage(m) if !m.contains("--") => LabError::Usage(format!(
                "--cache-mib {} --sampler {} --sampler-bytes {} --chunk-kib {} --write-points {}{}: {m}",
                self.cache_mib,
                self.sampler,
                spec.budget.memory_bytes,
                self.chunk_kib,
                self.write_points,
                if self.metadata { " --metadata" } else { "" }
            )),
            e => e,
        })
    }

    /// The settings that make `spec` (a configuration of `zonekit cache experiment`), on the
    /// YCSB-like reads or, with `trace`, on that trace file; an error names what no flag of
    /// `zonekit cache run` can give. Checked both ways: the settings' own spec must be the
    /// same run as `spec`.
    pub fn of_spec(spec: &CacheSpec, trace: Option<&std::path::Path>) -> std::result::Result<CacheRunSettings, String> {
        const MIB: u64 = 1 << 20;
        let whole = |bytes: u64, unit: u64, what: &str| {
            if bytes % unit == 0 {
                Ok(bytes / unit)
            } else {
                Err(format!("{what} of {bytes} bytes is not a whole number of {} KiB", unit / 1024))
            }
        };
        let default = CacheRunSettings::default();
        let mut s = match spec.cache_bytes % MIB {
            0 => CacheRunSettings { cache_mib: spec.cache_bytes / MIB, ..default },
            _ => CacheRunSettings { cache_kib: Some(whole(spec.cache_bytes, 1024, "the cache")?), ..default },
        };
        match spec.device {
            DeviceKind::Zoned { zone_bytes, zones_per_bucket } => {
                s.interface = Some("zns".into());
                s.zone_mib = Some(whole(zone_bytes, MIB, "the zone")?);
                s.zones_per_bucket = Some(zones_per_bucket);
            }
            DeviceKind::Conventional { bucket_bytes, op, erase_unit_bytes }
            | DeviceKind::ConventionalDiscard { bucket_bytes, op, erase_unit_bytes }
            | DeviceKind::Fdp { bucket_bytes, op, erase_unit_bytes, .. } => {
                s.interface = Some(spec.device.interface().name());
                s.discard = matches!(spec.device, DeviceKind::ConventionalDiscard { .. });
                s.bucket_kib = Some(whole(bucket_bytes, 1024, "the bucket")?);
                s.op = Some(op);
                s.erase_unit_kib = Some(whole(erase_unit_bytes, 1024, "the erase unit")?);
            }
        }
        s.eviction = spec.eviction.clone();
        s.sampler = spec.sampler.clone();
        s.sampler_params = spec.sampler_params.clone();
        // The none and sfr samplers keep no table, so their budget is never read.
        if !matches!(spec.sampler.as_str(), "none" | "sfr") {
            s.sampler_bytes = Some(spec.budget.memory_bytes);
        }
        s.chunk_kib = whole(spec.budget.chunk_bytes, 1024, "the sampler's chunk")?;
        let c = &spec.config;
        s.mode = c.mode.name().into();
        s.cutoff_kib = whole(c.sequential_cutoff_bytes, 1024, "the sequential cutoff")?;
        if let Admission::Ghost { blocks } = c.admission {
            s.admission = "ghost".into();
            s.ghost_blocks = Some(blocks);
        }
        s.write_points = c.write_points;
        if let Some(m) = &c.metadata {
            s.metadata = true;
            s.journal_buckets = (m.journal_buckets != 0).then_some(m.journal_buckets);
            s.btree_node_kib = (m.btree_node_bytes != 0).then_some(m.btree_node_bytes / 1024);
            s.btree_reserve = Some(m.btree_reserve_buckets);
            s.prio_write = Some(if m.prio_whole_bucket { "whole" } else { "used" }.into());
        }
        let w = &spec.workload;
        match trace {
            Some(path) => {
                s.trace = Some(path.to_path_buf());
                s.warmup_fraction = Some(w.warmup_fraction);
            }
            None => {
                s.records = Some(w.records);
                s.threads = Some(w.threads);
                s.operations = Some(w.operations);
                s.update_fraction = Some(w.update_fraction);
                s.clustered = !w.scrambled;
                s.seed = Some(spec.seed);
                s.layout = Some(w.layout.name().into());
                s.record_bytes = Some(w.record_bytes);
                // Packed records size the disk themselves, not always to a whole MiB.
                s.data_mib = match w.layout {
                    Layout::Packed => None,
                    Layout::Strided => Some(whole(w.data_bytes, MIB, "the backing disk")?),
                };
                s.warmup_fraction = Some(w.warmup_fraction);
            }
        }
        let back = s.spec().map_err(|e| format!("the settings are refused: {e}"))?;
        let same = |a: &CacheSpec, b: &CacheSpec| -> bool {
            let json = |x: &CacheSpec| {
                let mut v = serde_json::to_value(x).expect("a spec serialises");
                if matches!(x.sampler.as_str(), "none" | "sfr") {
                    v["budget"]["memory_bytes"] = serde_json::Value::Null;
                }
                // A trace brings its own requests: of the workload only the warm-up applies.
                if trace.is_some() {
                    v["workload"] = serde_json::json!({ "warmup_fraction": x.workload.warmup_fraction });
                }
                v
            };
            json(a) == json(b)
        };
        if !same(&back, spec) {
            return Err(format!("no flags of `zonekit cache run` give this configuration (its settings make {back:?})"));
        }
        Ok(s)
    }

    /// The `zonekit cache run` command for these settings, every setting given spelt out
    /// (none left to a default that may change), each as its flag.
    pub fn command(&self) -> String {
        let quote = zonekit_report::shell_word;
        let mine = serde_json::to_value(self).expect("settings serialise");
        let mut parts = vec!["zonekit cache run".to_string()];
        for (field, value) in mine.as_object().expect("a struct serialises to an object") {
            if value.is_null() {
                continue;
            }
            let flag = format!("--{}", field.replace('_', "-"));
            match (field.as_str(), value) {
                // The cache's size is one flag or the other.
                ("cache_mib", _) if self.cache_kib.is_some() => {}
                ("sampler_params", _) => parts.extend(self.sampler_params.iter().map(|(k, v)| format!("--sampler-param {}", quote(&format!("{k}={v}"))))),
                (_, serde_json::Value::Bool(true)) => parts.push(flag),
                (_, serde_json::Value::Bool(false)) => {}
                (_, serde_json::Value::String(text)) => parts.push(format!("{flag} {}", quote(text))),
                (_, other) => parts.push(format!("{flag} {other}")),
            }
        }
        parts.join(" ")
    }

    /// The cache device from `interface` (or `device`) and the settings that shape it, every
    /// combination that makes no sense refused by name.
    fn device_kind(&self) -> Result<DeviceKind> {
        let parse = |spec: &str| Interface::parse(spec).map_err(|e| LabError::Usage(format!("--{e}")));
        // `device` was this setting's first name; everywhere else --device is a path.
        if let Some(d) = &self.device {
            usage!("--device {d:?}: the cache's device kind is --interface now (zns, fdp:N or conventional); --device names a path in every other command");
        }
        let interface = match &self.interface {
            Some(spec) => parse(spec)?,
            None => Interface::Zns,
        };
        let name = interface.name();
        let zns_settings = self.zone_mib.is_some() || self.zones_per_bucket.is_some();
        let ssd_settings = self.bucket_kib.is_some() || self.op.is_some() || self.erase_unit_kib.is_some();
        if interface == Interface::Zns && ssd_settings {
            usage!("--bucket-kib, --op and --erase-unit-kib shape an SSD (--interface conventional or fdp:N), not the zns cache");
        }
        if interface != Interface::Zns && zns_settings {
            usage!("--zone-mib and --zones-per-bucket shape a zns cache, not the {name} one");
        }
        if self.discard && interface != Interface::Conventional {
            usage!("--discard: trimming evicted buckets is a conventional SSD's option (an FDP SSD always trims, a zns cache resets the zone); --interface is {name}");
        }
        let ssd = || -> Result<(u64, f64, u64)> {
            Ok((kib(self.bucket_kib.unwrap_or(1024), "--bucket-kib")?, self.op.unwrap_or(0.07), kib(self.erase_unit_kib.unwrap_or(2048), "--erase-unit-kib")?))
        };
        if interface == Interface::Zns && self.cache_kib.is_some() {
            usage!("--cache-kib: a zns cache is whole zones of whole MiB; give --cache-mib");
        }
        Ok(match interface {
            Interface::Zns => {
                let (zone_mib, zones_per_bucket) = (self.zone_mib.unwrap_or(8), self.zones_per_bucket.unwrap_or(1));
                check_zoned_cache(self.cache_mib, zone_mib, zones_per_bucket)?;
                DeviceKind::Zoned { zone_bytes: mib(zone_mib, "--zone-mib")?, zones_per_bucket }
            }
            Interface::Conventional => {
                let (bucket_bytes, op, erase_unit_bytes) = ssd()?;
                if self.discard {
                    DeviceKind::ConventionalDiscard { bucket_bytes, op, erase_unit_bytes }
                } else {
                    DeviceKind::Conventional { bucket_bytes, op, erase_unit_bytes }
                }
            }
            Interface::Fdp { handles, ruh_type } => {
                let (bucket_bytes, op, erase_unit_bytes) = ssd()?;
                DeviceKind::Fdp { bucket_bytes, op, erase_unit_bytes, handles, ruh_type }
            }
        })
    }

    /// The metadata model's settings, each refused by name.
    fn metadata_config(&self, device: &DeviceKind, cache_bytes: u64) -> Result<MetadataConfig> {
        let mut m = MetadataConfig::default();
        let bucket_bytes = device.bucket_bytes();
        let buckets = cache_bytes / bucket_bytes.max(1);
        if let Some(n) = self.journal_buckets {
            if n == 0 || n as u64 > buckets {
                usage!("--journal-buckets {n}: the journal needs at least one bucket and at most the cache's {buckets}");
            }
            m.journal_buckets = n;
        }
        if let Some(kib) = self.btree_node_kib {
            if kib < 8 || kib % 4 != 0 || kib.saturating_mul(1024) > bucket_bytes {
                usage!("--btree-node-kib {kib}: whole 4 KiB blocks, at least 8 KiB and at most the {} KiB bucket", bucket_bytes / 1024);
            }
            m.btree_node_bytes = kib * 1024;
        }
        if let Some(n) = self.btree_reserve {
            if n < 3 || n as u64 > buckets {
                usage!("--btree-reserve {n}: at least 3 (a split and its parent's rewrite) and at most the cache's {buckets} buckets");
            }
            m.btree_reserve_buckets = n;
        }
        m.prio_whole_bucket = match self.prio_write.as_deref() {
            None | Some("whole") => true,
            Some("used") => false,
            Some(other) => usage!("--prio-write {other:?}: expected whole or used"),
        };
        Ok(m)
    }
}

/// The ZNS cache's shape, each setting refused by name: whole zones of at least 1 MiB in the
/// cache, whole buckets of at least one zone, and the three buckets the cache needs. Counted
/// in u64, so no product or count wraps (524289 zones a bucket wrapped to one).
fn check_zoned_cache(cache_mib: u64, zone_mib: u64, zones_per_bucket: u32) -> Result<()> {
    if cache_mib == 0 {
        return Ok(()); // The cache names --cache-mib 0.
    }
    if zone_mib == 0 {
        usage!("--zone-mib 0: a zone needs at least 1 MiB");
    }
    if cache_mib % zone_mib != 0 {
        usage!("--zone-mib {zone_mib}: the {cache_mib} MiB cache (--cache-mib) is not a whole number of {zone_mib} MiB zones");
    }
    if zones_per_bucket == 0 {
        usage!("--zones-per-bucket 0: a bucket needs at least one zone");
    }
    let zones = cache_mib / zone_mib;
    if zones > u32::MAX as u64 {
        usage!("--cache-mib {cache_mib} --zone-mib {zone_mib}: {zones} zones; a device has at most {}", u32::MAX);
    }
    let buckets = zones / zones_per_bucket as u64;
    if buckets < 3 {
        usage!("--cache-mib {cache_mib} --zone-mib {zone_mib} --zones-per-bucket {zones_per_bucket}: {zones} zones make {buckets} buckets of {zones_per_bucket} zones; the cache needs at least 3");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zoned_cache_settings_are_refused_by_name() {
        let refused = |cache_mib: u64, zone_mib: u64, zones_per_bucket: u32| check_zoned_cache(cache_mib, zone_mib, zones_per_bucket).unwrap_err().to_string();
        for (cache, zone, per, flag) in [
            (512, 0, 1, "--zone-mib 0"),
            (512, 3, 1, "--zone-mib 3"),
            (512, 8, 0, "--zones-per-bucket 0"),
            (512, 8, 100, "--cache-mib 512 --zone-mib 8 --zones-per-bucket 100"),
            (8, 8, 1, "--cache-mib 8 --zone-mib 8 --zones-per-bucket 1"),
            // 524289 × 32 TiB wrapped to a bucket of one zone.
            (33_554_432, 33_554_432, 524_289, "--zones-per-bucket 524289"),
            (512, 8, 524_289, "--zones-per-bucket 524289"),
            (1 << 40, 1, 1, "--cache-mib 1099511627776 --zone-mib 1"),
        ] {
            let m = refused(cache, zone, per);
            assert!(m.contains(flag), "{cache} {zone} {per}: {m}");
        }
        check_zoned_cache(512, 8, 1).unwrap();
        check_zoned_cache(24, 8, 1).unwrap();
    }

    #[test]
    fn a_trace_run_refuses_the_workload_settings_and_metadata_settings_need_metadata() {
        let trace = CacheRunSettings { trace: Some("t.zkt".into()), ..CacheRunSettings::default() };
        for (settings, flag) in [
            (CacheRunSettings { records: Some(10), ..trace.clone() }, "--records"),
            (CacheRunSettings { clustered: true, ..trace.clone() }, "--clustered"),
            (CacheRunSettings { seed: Some(2), ..trace.clone() }, "--seed"),
            (CacheRunSettings { journal_buckets: Some(4), ..CacheRunSettings::default() }, "--journal-buckets"),
            (CacheRunSettings { interface: Some("fdp:4".into()), zone_mib: Some(8), ..CacheRunSettings::default() }, "--zone-mib"),
            (CacheRunSettings { interface: Some("zns".into()), discard: true, ..CacheRunSettings::default() }, "--discard"),
            (CacheRunSettings { cache_kib: Some(1024), ..CacheRunSettings::default() }, "--cache-kib"),
            (CacheRunSettings { interface: Some("conventional".into()), cache_kib: Some(1024), cache_mib: 64, ..CacheRunSettings::default() }, "--cache-kib and --cache-mib"),
        ] {
            let m = settings.spec().unwrap_err().to_string();
            assert!(m.contains(flag), "{settings:?}: {m}");
        }
        assert_eq!(trace.spec().unwrap().workload.warmup_fraction, 0.0);
        assert_eq!(CacheRunSettings::default().spec().unwrap().workload.operations, 2 * RECORDS);
    }

    #[test]
    fn settings_by_name_refuse_an_unknown_one() {
        let s: CacheRunSettings = serde_json::from_str(r#"{"cache_mib": 64, "zone_mib": 4, "sampler": "none"}"#).unwrap();
        assert_eq!((s.cache_mib, s.zone_mib, s.sampler.as_str(), s.eviction.as_str()), (64, Some(4), "none", "lfu"));
        let e = serde_json::from_str::<CacheRunSettings>(r#"{"cache_mb": 64}"#).unwrap_err().to_string();
        assert!(e.contains("cache_mb") && e.contains("cache_mib"), "{e}");
    }
}
