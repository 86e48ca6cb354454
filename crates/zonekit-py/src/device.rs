//! A zoned device driven from Python: the emulator in memory, an emulated image, or a Linux
//! zoned block device, with ZNS's rules, limits and counters — so a storage engine prototyped
//! in Python runs on the same device the Rust engines do.

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use zonekit_device::{preset, DeviceError, FileDevice, Lba, MemDevice, OpenOptions, StorageMode, ZoneAction, ZoneFilter, ZoneId, ZoneState, ZoneType, ZonedDevice};

use crate::run::{guarded, usage};

type Boxed = Box<dyn ZonedDevice + Send>;

/// A refused command (the caller's: a write off the write pointer, a zone limit, a bad zone)
/// is `ValueError`; a failure of the medium or the image is `OSError`.
fn device_error(e: DeviceError) -> PyErr {
    match e {
        DeviceError::Io { .. } | DeviceError::BadImage { .. } | DeviceError::ImageInUse { .. } | DeviceError::InjectedFault { .. } => PyOSError::new_err(e.to_string()),
        e => PyValueError::new_err(e.to_string()),
    }
}

fn preset_named(name: &str) -> PyResult<preset::Preset> {
    preset::find(name).ok_or_else(|| usage(format!("unknown device preset {name:?}; valid: {}", preset::names().join(", "))))
}

fn state_name(s: ZoneState) -> &'static str {
    match s {
        ZoneState::NotWritePointer => "not-write-pointer",
        ZoneState::Empty => "empty",
        ZoneState::ImplicitlyOpened => "implicitly-opened",
        ZoneState::ExplicitlyOpened => "explicitly-opened",
        ZoneState::Closed => "closed",
        ZoneState::ReadOnly => "read-only",
        ZoneState::Full => "full",
        ZoneState::Offline => "offline",
    }
}

#[pyclass(module = "zonekit._native")]
pub struct Device {
    device: Mutex<Boxed>,
    description: String,
}

impl Device {
    fn with<T>(&self, f: impl FnOnce(&mut Boxed) -> zonekit_device::Result<T>) -> PyResult<T> {
        guarded(|| {
            let mut d = self.device.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut d).map_err(device_error)
        })
    }

    fn manage(&self, action: ZoneAction, zone: u32) -> PyResult<()> {
        self.with(|d| d.manage(action, ZoneId(zone)))
    }
}

#[pymethods]
impl Device {
    /// An emulated device in memory, shaped like `preset` (data kept, so reads return it).
    #[staticmethod]
    #[pyo3(signature = (preset="tiny"))]
    fn memory(preset: &str) -> PyResult<Device> {
        let p = preset_named(preset)?;
        let dev = MemDevice::new(p.geometry, p.behavior, StorageMode::Data).map_err(device_error)?;
        Ok(Device { device: Mutex::new(Box::new(dev)), description: format!("memory ({preset})") })
    }

    /// Creates an emulated device image at `path` shaped like `preset` (`zonekit device
    /// create`); refuses an existing file.
    #[staticmethod]
    #[pyo3(signature = (path, preset="tiny"))]
    fn create(path: PathBuf, preset: &str) -> PyResult<Device> {
        let p = preset_named(preset)?;
        if path.exists() {
            return Err(usage(format!("{} already exists (open it, or remove it first)", path.display())));
        }
        FileDevice::create(&path, p.geometry, p.behavior, preset).map_err(device_error)?;
        Device::open(path, false)
    }

    /// Opens an emulated image or a Linux zoned block device (`/dev/...`).
    #[staticmethod]
    #[pyo3(signature = (path, read_only=false))]
    fn open(path: PathBuf, read_only: bool) -> PyResult<Device> {
        let opened = zonekit_device::open_path_with(&path, &OpenOptions { read_only, wait: None }).map_err(device_error)?;
        Ok(Device { device: Mutex::new(opened.device), description: format!("{} ({})", path.display(), opened.backend) })
    }

    fn __repr__(&self) -> String {
        format!("zonekit.Device({})", self.description)
    }

    /// The shape as JSON: block size, zone size and capacity (blocks), zone counts, open
    /// and active limits (`null`: no limit).
    fn geometry(&self) -> PyResult<String> {
        let g = self.with(|d| Ok(*d.geometry()))?;
        Ok(serde_json::to_string(&g).expect("a geometry serializes"))
    }

    /// The zone report as columns: zone, type, state, start, capacity_blocks, write_pointer,
    /// reset_recommended.
    fn zone_report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let zones = self.with(|d| {
            let mut out = Vec::new();
            d.report_zones(Lba(0), ZoneFilter::All, usize::MAX, &mut out)?;
            Ok(out)
        })?;
        let cols = PyDict::new(py);
        cols.set_item("zone", zones.iter().map(|z| z.id.0).collect::<Vec<_>>())?;
        cols.set_item("type", zones.iter().map(|z| if z.zone_type == ZoneType::Conventional { "conventional" } else { "sequential" }).collect::<Vec<_>>())?;
        cols.set_item("state", zones.iter().map(|z| state_name(z.state)).collect::<Vec<_>>())?;
        cols.set_item("start", zones.iter().map(|z| z.start.0).collect::<Vec<_>>())?;
        cols.set_item("capacity_blocks", zones.iter().map(|z| z.capacity_blocks).collect::<Vec<_>>())?;
        cols.set_item("write_pointer", zones.iter().map(|z| z.write_pointer.0).collect::<Vec<_>>())?;
        cols.set_item("reset_recommended", zones.iter().map(|z| z.reset_recommended).collect::<Vec<_>>())?;
        Ok(cols)
    }

    /// Reads `nbytes` (whole blocks) from `lba`.
    fn read<'py>(&self, py: Python<'py>, lba: u64, nbytes: usize) -> PyResult<Bound<'py, PyBytes>> {
        // The buffer is sized by the caller's number: refused past the device's end before it
        // is allocated (a size near 2^63 aborted the interpreter, allocation failure is no panic).
        let g = self.with(|d| Ok(*d.geometry()))?;
        let device_bytes = g.total_blocks().saturating_mul(g.block_size_bytes as u64);
        if nbytes as u64 > device_bytes {
            return Err(usage(format!("nbytes={nbytes}: the device holds {device_bytes} bytes")));
        }
        let mut buf = vec![0u8; nbytes];
        self.with(|d| d.read(Lba(lba), &mut buf))?;
        Ok(PyBytes::new(py, &buf))
    }

    /// Writes `data` (whole blocks) at `lba`: a sequential zone's write pointer, or anywhere
    /// in a conventional zone.
    fn write(&self, lba: u64, data: &[u8]) -> PyResult<()> {
        self.with(|d| d.write(Lba(lba), data))
    }

    /// Zone Append: writes `data` at the zone's write pointer; returns the LBA it landed at.
    fn append(&self, zone: u32, data: &[u8]) -> PyResult<u64> {
        self.with(|d| d.append(ZoneId(zone), data)).map(|l| l.0)
    }

    fn open_zone(&self, zone: u32) -> PyResult<()> {
        self.manage(ZoneAction::Open, zone)
    }

    fn close_zone(&self, zone: u32) -> PyResult<()> {
        self.manage(ZoneAction::Close, zone)
    }

    fn finish_zone(&self, zone: u32) -> PyResult<()> {
        self.manage(ZoneAction::Finish, zone)
    }

    fn reset_zone(&self, zone: u32) -> PyResult<()> {
        self.manage(ZoneAction::Reset, zone)
    }

    fn flush(&self) -> PyResult<()> {
        self.with(|d| d.flush())
    }

    /// Counters since the device was opened, as JSON: operations and bytes by kind, zone
    /// management commands, and resets per zone (wear).
    fn stats(&self) -> PyResult<String> {
        let s = self.with(|d| Ok(d.stats().clone()))?;
        Ok(serde_json::to_string(&s).expect("counters serialize"))
    }
}
