//! Which interface data reaches the flash through, by name: ZNS (the host collects), NVMe FDP
//! (the host's classes become placement handles, the device collects) or a conventional SSD (no
//! hint, the device collects). One parser for every place a user names one: the lab's
//! `--interface` and `--grid interface=…`, and the `interface=` option of the C API's device
//! specs (the RocksDB plugin).

use serde::Serialize;

use crate::RuhType;

/// An interface (`zns`, `conventional`, `fdp:N`, `fdp:N:persistent`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub enum Interface {
    /// Host GC on a zoned device.
    #[default]
    Zns,
    /// An FDP SSD with this many reclaim-unit handles of one type.
    Fdp { handles: u16, ruh_type: RuhType },
    /// A conventional SSD: no placement, device GC.
    Conventional,
}

/// The most handles `fdp:N` takes (TP4146 allows up to 2^16 - 1; past this, more open reclaim
/// units than a sized device holds).
pub const FDP_HANDLES_MAX: u16 = 128;

impl Interface {
    /// Reads `zns`, `conventional`, `fdp:N` or `fdp:N:persistent` (N handles, initially
    /// isolated unless `persistent`). The error names the spec and what was expected.
    pub fn parse(spec: &str) -> Result<Interface, String> {
        let bad = |why: String| format!("interface {spec:?}: {why}; expected zns, conventional, fdp:N or fdp:N:persistent (N handles, 1..={FDP_HANDLES_MAX})");
        match spec {
            "zns" => return Ok(Interface::Zns),
            "conventional" | "conv" => return Ok(Interface::Conventional),
            _ => {}
        }
        let mut parts = spec.split(':');
        if parts.next() != Some("fdp") {
            return Err(bad("unknown interface".into()));
        }
        let handles: u16 = parts.next().ok_or_else(|| bad("fdp needs its handle count".into()))?.parse().map_err(|_| bad("the handle count is not a number".into()))?;
        if !(1..=FDP_HANDLES_MAX).contains(&handles) {
            return Err(bad(format!("{handles} handles")));
        }
        let ruh_type = match parts.next() {
            None | Some("initial") | Some("initially-isolated") => RuhType::InitiallyIsolated,
            Some("persistent") | Some("persistently-isolated") => RuhType::PersistentlyIsolated,
            Some(t) => return Err(bad(format!("unknown handle type {t:?}"))),
        };
        if parts.next().is_some() {
            return Err(bad("too many parts".into()));
        }
        Ok(Interface::Fdp { handles, ruh_type })
    }

    /// The spec that parses back to this interface.
    pub fn name(&self) -> String {
        match self {
            Interface::Zns => "zns".into(),
            Interface::Conventional => "conventional".into(),
            Interface::Fdp { handles, ruh_type: RuhType::InitiallyIsolated } => format!("fdp:{handles}"),
            Interface::Fdp { handles, ruh_type: RuhType::PersistentlyIsolated } => format!("fdp:{handles}:persistent"),
        }
    }

    /// Handles of the device (0: it takes no hint, or it is zoned).
    pub fn handles(&self) -> u16 {
        match self {
            Interface::Fdp { handles, .. } => *handles,
            _ => 0,
        }
    }
}

impl std::fmt::Display for Interface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interfaces_parse_and_print_back() {
        for s in ["zns", "conventional", "fdp:1", "fdp:4", "fdp:8:persistent", "fdp:128"] {
            assert_eq!(Interface::parse(s).unwrap().name(), s);
        }
        assert_eq!(Interface::parse("fdp:2:initially-isolated").unwrap().name(), "fdp:2");
        assert_eq!(Interface::parse("conv").unwrap(), Interface::Conventional);
        for bad in ["", "fdp", "fdp:0", "fdp:129", "fdp:x", "fdp:4:sometimes", "fdp:4:persistent:x", "ssd", "fdp:-1", "fdp:65536"] {
            let m = Interface::parse(bad).unwrap_err();
            assert!(m.starts_with(&format!("interface {bad:?}: ")) && m.contains("expected zns, conventional"), "{bad}: {m}");
        }
    }
}
