//! One run of the trees from its settings, as `zonekit tree run` takes them and Python's
//! `zonekit.tree_run` passes them: the defaults, written once here, and the [`TreeSpec`] they
//! make. The CLI's flags take their defaults from [`TreeRunSettings::default`], so the two
//! cannot drift apart.

use serde::{Deserialize, Serialize};

use crate::harness::error::{LabError, Result};
use crate::tree::bench::{
    cow_collect, cow_rebalance, delete_keys, parse_distribution, tree_timing, Mix, TreeKind, TreeSpec, TreeTiming, CALIBRATED_INNER_ENTRIES_MAX, CALIBRATED_VALUE_SIZE_BYTES,
};

/// Every setting of one tree run, named as `zonekit tree run`'s flags (with `_` for `-`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TreeRunSettings {
    /// zbtree, cow, or both (one after the other on the same workload).
    pub tree: String,
    /// w1..w5 or INSERT/DELETE/SEARCH percentages, e.g. 40/30/30.
    pub workload: String,
    /// zipfian, uniform or latest.
    pub distribution: String,
    pub records: u64,
    /// Operations after the load [as many as records].
    pub operations: Option<u64>,
    pub sequential_zones: u32,
    pub conventional_zones: u32,
    /// The emulated device's zone size [2048, the paper's]; a real device's own otherwise.
    pub zone_size_mib: Option<u64>,
    pub node_size_bytes: usize,
    pub value_size_bytes: usize,
    pub inner_entries_max: usize,
    pub no_dynamic_zone_choice: bool,
    pub cow_rebalance: String,
    pub cow_collect: String,
    /// redraw (a delete's key number not inserted yet is drawn again, as a search's), once or
    /// plain-zipfian (see `DeleteKeys`).
    pub delete_keys: String,
    /// zn540 (fitted) or zn540-assumed: whose figures charge the device time.
    pub timing: String,
    pub seed: u64,
}

/// The paper's zone size, the emulated device's unless `zone_size_mib` says otherwise.
pub const ZONE_SIZE_MIB: u64 = 2048;

impl Default for TreeRunSettings {
    fn default() -> Self {
        TreeRunSettings {
            tree: "both".into(),
            workload: "w1".into(),
            distribution: "zipfian".into(),
            records: 100_000,
            operations: None,
            sequential_zones: 40,
            conventional_zones: 1,
            zone_size_mib: None,
            node_size_bytes: 4096,
            value_size_bytes: CALIBRATED_VALUE_SIZE_BYTES,
            inner_entries_max: CALIBRATED_INNER_ENTRIES_MAX,
            no_dynamic_zone_choice: false,
            cow_rebalance: "bottom-up".into(),
            cow_collect: "reserve".into(),
            delete_keys: "redraw".into(),
            timing: TreeTiming::default().name().into(),
            seed: 1,
        }
    }
}

impl TreeRunSettings {
    /// The trees to run, in order.
    pub fn trees(&self) -> Result<Vec<TreeKind>> {
        match self.tree.as_str() {
            "both" => Ok(TreeKind::ALL.to_vec()),
            name => Ok(vec![TreeKind::parse(name)?]),
        }
    }

    /// The first tree's spec on the emulated device, checked; the others differ only in
    /// `tree`.
    pub fn spec(&self) -> Result<TreeSpec> {
        let mib = self.zone_size_mib.unwrap_or(ZONE_SIZE_MIB);
        let zone_size_bytes = mib.checked_mul(1 << 20).ok_or_else(|| LabError::Usage(format!("--zone-size-mib {mib} is too large")))?;
        self.spec_with_zones_of(zone_size_bytes)
    }

    /// The same on a device whose zones are `zone_size_bytes` (a real device's, where
    /// `zone_size_mib` is refused).
    pub fn spec_with_zones_of(&self, zone_size_bytes: u64) -> Result<TreeSpec> {
        if let Some(mib) = self.zone_size_mib {
            if mib << 20 != zone_size_bytes {
                return Err(LabError::Usage(format!("--zone-size-mib {mib}: the device's zones are {zone_size_bytes} bytes")));
            }
        }
        let spec = TreeSpec {
            tree: self.trees()?[0],
            records: self.records,
            operations: self.operations.unwrap_or(self.records),
            mix: Mix::parse(&self.workload)?,
            distribution: parse_distribution(&self.distribution)?,
            seed: self.seed,
            sequential_zones: self.sequential_zones,
            conventional_zones: self.conventional_zones,
            zone_size_bytes,
            node_size_bytes: self.node_size_bytes,
            value_size_bytes: self.value_size_bytes,
            inner_entries_max: self.inner_entries_max,
            dynamic_zone_choice: !self.no_dynamic_zone_choice,
            cow_rebalance: cow_rebalance(&self.cow_rebalance)?,
            cow_collect: cow_collect(&self.cow_collect)?,
            delete_keys: delete_keys(&self.delete_keys)?,
            timing: tree_timing(&self.timing)?,
        };
        spec.validate()?;
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_settings_make_the_default_spec() {
        let spec = TreeRunSettings::default().spec().unwrap();
        assert_eq!(spec, TreeSpec::default());
        assert_eq!(TreeRunSettings::default().trees().unwrap(), TreeKind::ALL.to_vec());
    }

    #[test]
    fn a_bad_setting_is_refused_by_its_flag() {
        for (settings, flag) in [
            (TreeRunSettings { tree: "bee".into(), ..Default::default() }, "bee"),
            (TreeRunSettings { workload: "w9".into(), ..Default::default() }, "w9"),
            (TreeRunSettings { distribution: "pareto".into(), ..Default::default() }, "pareto"),
            (TreeRunSettings { zone_size_mib: Some(u64::MAX), ..Default::default() }, "--zone-size-mib"),
            (TreeRunSettings { records: 0, ..Default::default() }, "--records"),
            (TreeRunSettings { cow_collect: "never".into(), ..Default::default() }, "--cow-collect"),
            (TreeRunSettings { timing: "femu".into(), ..Default::default() }, "--timing"),
            (TreeRunSettings { delete_keys: "never".into(), ..Default::default() }, "--delete-keys"),
        ] {
            let e = settings.spec().unwrap_err().to_string();
            assert!(e.contains(flag), "{flag}: {e}");
        }
    }

    #[test]
    fn unknown_settings_are_refused_by_name() {
        let e = serde_json::from_str::<TreeRunSettings>(r#"{"recrods": 5}"#).unwrap_err().to_string();
        assert!(e.contains("recrods"), "{e}");
    }
}
