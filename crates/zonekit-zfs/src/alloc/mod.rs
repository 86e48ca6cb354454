//! Zone allocation rules of the file system: which partly written zone a file's next bytes go
//! to (`None`: an empty zone). One rule per file, each with its table row; [`ALLOCATORS`] is
//! the registry (`zonekit://...?alloc=NAME`). GC victims come from `zonekit-pool`'s registry,
//! as for every zone-based engine.

pub mod first_fit;
pub mod lifetime;
pub mod zenfs;

use std::collections::BTreeMap;

use zonekit_base::policy::{self, ParamReader, PolicyError, PolicyInfo};

use crate::usage::ZoneUsage;

/// An allocation rule. The caller guarantees `zones` holds every data zone; the rule returns a
/// zone that is partly written and not full, or `None` for "open an empty zone".
pub trait Allocator: Send {
    fn pick(&self, zones: &BTreeMap<u32, ZoneUsage>, lifetime: u8) -> Option<u32>;
}

pub type MakeAllocator = fn(&ParamReader) -> Result<Box<dyn Allocator>, PolicyError>;
pub type AllocInfo = PolicyInfo<MakeAllocator>;

/// The registry, in the order help lists the rules.
#[rustfmt::skip] // one row per line: adding a rule is a one-line change here
pub const ALLOCATORS: &[AllocInfo] = &[
    lifetime::LIFETIME,
    first_fit::FIRST_FIT,
    zenfs::ZENFS,
];

/// Finds an allocation rule by name.
pub fn find(name: &str) -> Result<&'static AllocInfo, PolicyError> {
    let (info, params) = policy::find(ALLOCATORS, "allocation", name)?;
    policy::check_params(info, &params)?;
    Ok(info)
}

/// Builds the rule a row describes (they take no parameters).
pub fn create(info: &AllocInfo) -> Box<dyn Allocator> {
    (info.make)(&ParamReader::new(info, &policy::Params::new()).expect("no parameters")).expect("allocation rules take no parameters")
}

/// Zones that are partly written and still have room.
pub(crate) fn open_zones(zones: &BTreeMap<u32, ZoneUsage>) -> impl Iterator<Item = (&u32, &ZoneUsage)> {
    zones.iter().filter(|(_, u)| !u.full && u.written_blocks > 0)
}
