//! First fit: any partly written zone with room, lowest first (stock ZenFS without lifetime
//! matching).

use std::collections::BTreeMap;

use zonekit_base::policy::{PolicyInfo, Role};

use super::{open_zones, Allocator, MakeAllocator};
use crate::usage::ZoneUsage;

pub const FIRST_FIT: PolicyInfo<MakeAllocator> =
    PolicyInfo { name: "first-fit", summary: "any zone with room, lowest first", role: Role::Baseline, params: &[], make: |_| Ok(Box::new(FirstFit)) };

pub struct FirstFit;

impl Allocator for FirstFit {
    fn pick(&self, zones: &BTreeMap<u32, ZoneUsage>, _lifetime: u8) -> Option<u32> {
        open_zones(zones).next().map(|(z, _)| *z)
    }
}
