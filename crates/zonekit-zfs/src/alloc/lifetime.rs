//! Lifetime (seed 001): a file writes into a zone holding the same write-lifetime hint that
//! has room (the fullest first), else into an empty zone, never into a zone of another lifetime.

use std::collections::BTreeMap;

use zonekit_base::policy::{PolicyInfo, Role};

use super::{open_zones, Allocator, MakeAllocator};
use crate::usage::ZoneUsage;

pub const LIFETIME: PolicyInfo<MakeAllocator> =
    PolicyInfo { name: "lifetime", summary: "same-lifetime zones only (seed 001's hot/cold separation)", role: Role::Proposed, params: &[], make: |_| Ok(Box::new(Lifetime)) };

pub struct Lifetime;

impl Allocator for Lifetime {
    fn pick(&self, zones: &BTreeMap<u32, ZoneUsage>, lifetime: u8) -> Option<u32> {
        open_zones(zones).filter(|(_, u)| u.lifetime == Some(lifetime)).max_by_key(|(_, u)| u.written_blocks).map(|(z, _)| *z)
    }
}
