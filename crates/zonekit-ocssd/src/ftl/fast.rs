//! fast: not built yet (being written).

use zonekit_device::ZonedDevice;

use super::{Ftl, MapCounters};
use crate::{Flash, OcError, OcGeometry, Result};

pub struct Fast {
    counters: MapCounters,
}

impl Fast {
    pub fn new(geometry: OcGeometry, _log_blocks: u32) -> Result<Fast> {
        let _ = geometry;
        Err(OcError::Config("fast is not built yet".into()))
    }
}

impl Ftl for Fast {
    fn name(&self) -> &'static str {
        "fast"
    }
    fn logical_pages(&self) -> u64 {
        0
    }
    fn write<D: ZonedDevice>(&mut self, _flash: &mut Flash<D>, _first: u64, _data: &[u8]) -> Result<()> {
        Err(OcError::Config("fast is not built yet".into()))
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
