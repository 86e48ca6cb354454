//! pm-gcc: not built yet (being written).

use zonekit_device::ZonedDevice;

use super::{Ftl, MapCounters};
use crate::{Flash, OcError, OcGeometry, Result};

pub struct PmGcc {
    counters: MapCounters,
}

impl PmGcc {
    pub fn new(geometry: OcGeometry) -> Result<PmGcc> {
        let _ = geometry;
        Err(OcError::Config("pm-gcc is not built yet".into()))
    }
}

impl Ftl for PmGcc {
    fn name(&self) -> &'static str {
        "pm-gcc"
    }
    fn logical_pages(&self) -> u64 {
        0
    }
    fn write<D: ZonedDevice>(&mut self, _flash: &mut Flash<D>, _first: u64, _data: &[u8]) -> Result<()> {
        Err(OcError::Config("pm-gcc is not built yet".into()))
    }
    fn read<D: ZonedDevice>(&mut self, _flash: &mut Flash<D>, _lpn: u64, _buf: &mut [u8]) -> Result<bool> {
        Ok(false)
    }
    fn map_table_bytes(&self) -> u64 {
        0
    }
    fn counters(&self) -> &MapCounters {
        &self.counters
    }
    fn check_invariants<D: ZonedDevice>(&self, _flash: &Flash<D>) -> Result<()> {
        Ok(())
    }
}
