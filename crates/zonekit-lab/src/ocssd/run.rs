//! One replay through an open-channel FTL from its settings, as `zonekit ocssd run` takes them
//! and Python's `zonekit.ocssd_run` passes them: the defaults, written once here, and the
//! [`OcssdSpec`] they make with an input. The CLI's flags take their defaults from
//! [`OcssdRunSettings::default`], so the two cannot drift apart.

use serde::{Deserialize, Serialize};
use zonekit_base::policy::Params;
use zonekit_ocssd::{OcGeometry, Timing};
use zonekit_trace::input::Input;

use crate::harness::error::{LabError, Result};
use crate::ocssd::bench::{geometry, OcssdSpec};

/// Every setting of one replay but its input, named as `zonekit ocssd run`'s flags (with `_`
/// for `-`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OcssdRunSettings {
    pub ftl: String,
    pub params: Params,
    pub channels: u32,
    pub luns: u32,
    pub blocks_per_lun: u32,
    pub pages_per_block: u32,
    /// The flash page (the mapping unit) in KiB.
    pub page_kib: u32,
    pub compact: bool,
    /// synchronous, fitted or parallel.
    pub timing: String,
    /// The logical space the host may address [all the FTL exposes], in MiB or in KiB (not
    /// both).
    pub logical_mib: Option<u64>,
    pub logical_kib: Option<u64>,
}

/// How often a run samples its counters for the series (not a flag: it changes the series,
/// not the report).
pub const SAMPLE_EVERY_BYTES: u64 = 64 << 20;

impl Default for OcssdRunSettings {
    fn default() -> Self {
        let t = OcGeometry::THESIS;
        OcssdRunSettings {
            ftl: "pm-gcl".into(),
            params: Params::new(),
            channels: t.channels,
            luns: t.luns_per_channel,
            blocks_per_lun: t.blocks_per_lun,
            pages_per_block: t.pages_per_block,
            page_kib: t.page_bytes / 1024,
            compact: false,
            timing: Timing::Synchronous.name().into(),
            logical_mib: None,
            logical_kib: None,
        }
    }
}

impl OcssdRunSettings {
    /// The flag that caps the logical space and its value, if one does.
    pub fn logical_flag(&self) -> Option<(&'static str, u64)> {
        match (self.logical_mib, self.logical_kib) {
            (_, Some(kib)) => Some(("--logical-kib", kib)),
            (Some(mib), None) => Some(("--logical-mib", mib)),
            (None, None) => None,
        }
    }

    /// The spec these settings make for `input`, each setting checked against its flag.
    pub fn spec(&self, input: Input) -> Result<OcssdSpec> {
        let usage = |m: String| LabError::Usage(m);
        let geometry = geometry(self.channels, self.luns, self.blocks_per_lun, self.pages_per_block, self.page_kib)?;
        if let (Some(mib), Some(kib)) = (self.logical_mib, self.logical_kib) {
            return Err(usage(format!("--logical-mib {mib} --logical-kib {kib}: one or the other")));
        }
        let unit_bytes: u64 = if self.logical_kib.is_some() { 1 << 10 } else { 1 << 20 };
        let logical_bytes_max = match self.logical_flag() {
            None => None,
            Some((flag, 0)) => return Err(usage(format!("{flag} 0: the host must be able to address at least one page"))),
            Some((flag, n)) => Some(n.checked_mul(unit_bytes).ok_or_else(|| usage(format!("{flag} {n}: too large")))?),
        };
        let timing = Timing::parse(&self.timing).map_err(|_| usage(format!("--timing {:?}: expected one of {}", self.timing, Timing::NAMES.join(", "))))?;
        Ok(OcssdSpec {
            ftl: self.ftl.clone(),
            params: self.params.clone(),
            geometry,
            input,
            compact: self.compact,
            sample_every_bytes: SAMPLE_EVERY_BYTES,
            timing,
            logical_bytes_max,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> Input {
        Input::generated("zipf:blocks=1K,writes=2K".parse().unwrap(), 1)
    }

    #[test]
    fn the_default_settings_make_the_thesis_device() {
        let spec = OcssdRunSettings::default().spec(input()).unwrap();
        assert_eq!((spec.geometry, spec.ftl.as_str(), spec.timing, spec.logical_bytes_max), (OcGeometry::THESIS, "pm-gcl", Timing::Synchronous, None));
    }

    #[test]
    fn a_bad_setting_is_refused_by_its_flag() {
        for (settings, flag) in [
            (OcssdRunSettings { channels: 0, ..Default::default() }, "--channels 0"),
            (OcssdRunSettings { timing: "slow".into(), ..Default::default() }, "--timing"),
            (OcssdRunSettings { logical_mib: Some(0), ..Default::default() }, "--logical-mib 0"),
            (OcssdRunSettings { logical_kib: Some(u64::MAX), ..Default::default() }, "--logical-kib"),
            (OcssdRunSettings { logical_mib: Some(1), logical_kib: Some(1), ..Default::default() }, "--logical-mib 1 --logical-kib 1"),
        ] {
            let e = settings.spec(input()).unwrap_err().to_string();
            assert!(e.contains(flag), "{flag}: {e}");
        }
    }

    #[test]
    fn each_dimension_is_refused_by_its_flag() {
        let thesis = OcssdRunSettings::default;
        for (settings, flag) in [
            (OcssdRunSettings { luns: 0, ..thesis() }, "--luns 0"),
            (OcssdRunSettings { blocks_per_lun: 0, ..thesis() }, "--blocks-per-lun 0"),
            (OcssdRunSettings { pages_per_block: 0, ..thesis() }, "--pages-per-block 0"),
            (OcssdRunSettings { channels: u32::MAX, ..thesis() }, "--channels 4294967295"),
            (OcssdRunSettings { channels: 65536, luns: 65536, ..thesis() }, "--channels 65536 --luns 65536"),
            (OcssdRunSettings { blocks_per_lun: u32::MAX, ..thesis() }, "--blocks-per-lun 4294967295"),
            (OcssdRunSettings { pages_per_block: u32::MAX, ..thesis() }, "--pages-per-block 4294967295"),
            (OcssdRunSettings { blocks_per_lun: 4096, pages_per_block: 65535, ..thesis() }, "--pages-per-block 65535"),
            (OcssdRunSettings { page_kib: 0, ..thesis() }, "--page-kib 0"),
            (OcssdRunSettings { page_kib: 6, ..thesis() }, "--page-kib 6"),
            (OcssdRunSettings { page_kib: 2048, ..thesis() }, "--page-kib 2048"),
            (OcssdRunSettings { page_kib: 4_194_304, ..thesis() }, "--page-kib 4194304"),
        ] {
            let e = settings.spec(input()).unwrap_err().to_string();
            assert!(e.starts_with(flag), "{flag}: {e}");
        }
    }
}
