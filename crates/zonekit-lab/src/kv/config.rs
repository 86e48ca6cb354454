//! Seed 001's file-system configurations (allocation rule × GC, named after the seed) and the
//! RocksDB option profiles db_bench runs under.

use zonekit_zfs::alloc::{first_fit::FIRST_FIT, lifetime::LIFETIME, zenfs::ZENFS, AllocInfo};

use crate::harness::error::{LabError, Result};

/// One file-system configuration of the experiment: an allocation rule and GC on or off.
#[derive(Debug)]
pub struct KvConfig {
    pub name: &'static str,
    /// What seed 001 calls this configuration, if it ran it.
    pub seed_name: Option<&'static str>,
    pub summary: &'static str,
    pub allocation: &'static AllocInfo,
    pub gc: bool,
}

impl KvConfig {
    /// The options of the plugin's device spec.
    pub fn uri_options(&self) -> String {
        format!("alloc={}&gc={}", self.allocation.name, if self.gc { "on" } else { "off" })
    }
}

/// The configurations, in the order the experiment runs them by default.
/// The seed's four come first; `stock` and `stock-gc` (first fit) are not the seed's.
pub const CONFIGS: &[KvConfig] = &[
    KvConfig { name: "zenfs", seed_name: Some("original"), summary: "stock ZenFS's lifetime-score allocation, no GC", allocation: &ZENFS, gc: false },
    KvConfig { name: "zenfs-gc", seed_name: Some("original + GC"), summary: "stock ZenFS's allocation + GC", allocation: &ZENFS, gc: true },
    KvConfig { name: "lifetime", seed_name: Some("hot/cold"), summary: "lifetime allocation, no GC", allocation: &LIFETIME, gc: false },
    KvConfig { name: "both", seed_name: Some("hot/cold + GC"), summary: "lifetime allocation + GC (the seed's proposal)", allocation: &LIFETIME, gc: true },
    KvConfig { name: "stock", seed_name: None, summary: "first fit, no GC", allocation: &FIRST_FIT, gc: false },
    KvConfig { name: "stock-gc", seed_name: None, summary: "first fit + GC", allocation: &FIRST_FIT, gc: true },
];

/// The seed's name of a configuration (or of the reference), for tables.
pub fn seed_name(config: &str) -> &'static str {
    CONFIGS.iter().find(|c| c.name == config).and_then(|c| c.seed_name).unwrap_or("-")
}

/// RocksDB options the experiment runs under.
#[derive(Debug)]
pub struct Profile {
    pub name: &'static str,
    pub flags: &'static [&'static str],
}

/// `bounded` caps compaction debt so RocksDB's own space need stays near its data (see
/// docs/results/seed-001.md); `defaults` is db_bench's defaults.
pub const PROFILES: &[Profile] = &[
    // Leveled compaction sized from the last level (RocksDB's default from 8.4 on), and
    // writes slowed, then stopped, when compaction falls 1 GiB, then 4 GiB, behind
    // (db_bench's defaults are 64 GiB and 256 GiB: on two cores the backlog, and with it
    // the space RocksDB holds, otherwise grows to twice the data).
    Profile {
        name: "bounded",
        flags: &["--level_compaction_dynamic_level_bytes=true", "--soft_pending_compaction_bytes_limit=1073741824", "--hard_pending_compaction_bytes_limit=4294967296"],
    },
    Profile { name: "defaults", flags: &[] },
];

/// The name of the reference rows (RocksDB's POSIX file system on tmpfs).
pub const REFERENCE: &str = "posix-tmpfs";

/// Finds a table row by name, or says which names exist.
pub fn find<'a, T>(table: &'a [T], what: &str, name: &str, name_of: impl Fn(&T) -> &'static str) -> Result<&'a T> {
    table.iter().find(|t| name_of(t) == name).ok_or_else(|| {
        let valid: Vec<&str> = table.iter().map(&name_of).collect();
        LabError::Usage(format!("unknown {what} {name:?}; valid: {}", valid.join(", ")))
    })
}
