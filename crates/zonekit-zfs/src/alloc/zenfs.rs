//! Stock ZenFS's rule (`../shared/spec/04-zoned-kv.md`): a partly written zone whose lifetime is
//! longer than or equal to the file's, scored zone − file for longer and 50 for equal (so a
//! longer-lived zone is preferred), the lowest score first; a file without a hint only into a
//! zone without one; otherwise an empty zone. Short-lived data can thus land among long-lived
//! data, never the reverse.

use std::collections::BTreeMap;

use zonekit_base::policy::{PolicyInfo, Role};

use super::{open_zones, Allocator, MakeAllocator};
use crate::usage::ZoneUsage;

pub const ZENFS: PolicyInfo<MakeAllocator> = PolicyInfo {
    name: "zenfs",
    summary: "stock ZenFS: a zone of equal or longer lifetime, longer preferred (seed 001's original)",
    role: Role::Baseline,
    params: &[],
    make: |_| Ok(Box::new(ZenFs)),
};

pub struct ZenFs;

/// The score of a zone holding `zone_lifetime` data for a file of `file_lifetime` (RocksDB's
/// hints: 0 not set, 1 none, 2 short … 5 extreme); `None` = not allowed. Lower is better.
pub fn lifetime_score(zone_lifetime: u8, file_lifetime: u8) -> Option<u8> {
    const EQUAL: u8 = 50;
    if file_lifetime <= 1 {
        return (zone_lifetime == file_lifetime).then_some(0);
    }
    match zone_lifetime.cmp(&file_lifetime) {
        std::cmp::Ordering::Greater => Some(zone_lifetime - file_lifetime),
        std::cmp::Ordering::Equal => Some(EQUAL),
        std::cmp::Ordering::Less => None,
    }
}

impl Allocator for ZenFs {
    fn pick(&self, zones: &BTreeMap<u32, ZoneUsage>, lifetime: u8) -> Option<u32> {
        open_zones(zones).filter_map(|(z, u)| Some((lifetime_score(u.lifetime?, lifetime)?, *z))).min().map(|(_, z)| z)
    }
}

#[cfg(test)]
mod tests {
    use super::lifetime_score as score;

    #[test]
    fn zenfs_scores_prefer_longer_lived_zones_and_refuse_shorter_ones() {
        // RocksDB's hints: 0 not set, 1 none, 2 short, 3 medium, 4 long, 5 extreme.
        assert_eq!(score(5, 2), Some(3));
        assert_eq!(score(3, 2), Some(1));
        assert_eq!(score(4, 4), Some(50));
        assert_eq!(score(2, 4), None);
        assert_eq!(score(0, 0), Some(0));
        assert_eq!(score(1, 1), Some(0));
        assert_eq!(score(5, 0), None);
        assert_eq!(score(0, 3), None);
    }
}
