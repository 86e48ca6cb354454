//! The C ABI of the zoned file system: what the C++ RocksDB plugin (`plugin/`) calls. No file
//! system logic lives on the C++ side. [`ycsb`] gives the YCSB-C driver (`plugin/ycsb_c.cc`)
//! the workloads' key chooser.
//!
//! A device spec names the device: a path to an emulated image or a `/dev` zoned device that
//! holds a zonekit file system (`zonekit fs mkfs`), or `mem:PRESET` for a fresh in-memory
//! device of that preset, formatted on open. Options follow a `?`:
//! `alloc=NAME` (a rule of `zonekit_zfs::alloc::ALLOCATORS`: lifetime, first-fit, zenfs),
//! `gc=on|off` (defaults: lifetime, on), and for `mem:` devices only `zone_mib=N` (zones of N
//! MiB, the device's capacity kept, so the zone count changes), e.g.
//! `mem:nvmevirt-zns?alloc=zenfs&gc=off` for stock ZenFS's allocation without GC. For `mem:`
//! devices `interface=I` names how the data reaches the flash (`zonekit_ssd::Interface`'s
//! names): `zns` (the default) as above; `fdp:N` (N placement handles, `fdp:N:persistent` for
//! persistently isolated ones) or `conventional` puts the zones on an SSD model with its own
//! GC at the preset's raw capacity (`zonekit_ssd::zoned::for_zns`), each zone's writes under
//! the handle its files' write-lifetime hint folds to, with `spare=F` its over-provisioning
//! (default 0.07), e.g. `mem:tiny?interface=fdp:4`. Every call returns 0 (or a size) on success and a
//! negative errno on failure; `zk_last_error` says what went wrong. The handle is thread safe:
//! calls are serialised by a mutex.
//!
//! # Safety
//!
//! The same contract holds for every `unsafe` function here: a `ZkFs` pointer is one
//! `zk_fs_open` returned and `zk_fs_close` has not yet freed; strings are NUL-terminated; a
//! `(pointer, length)` pair names that many readable (or, for outputs, writable) bytes.
#![allow(clippy::missing_safety_doc)] // one contract for all calls: the crate doc's "Safety"

use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

pub mod ycsb;

use zonekit_device::{preset, FileDevice, FlashWrites, MemDevice, StorageMode, ZonedDevice};
use zonekit_ssd::{zoned, Interface};
use zonekit_zfs::fs::{FsConfig, FsError, Zfs};

type Device = Box<dyn ZonedDevice + Send>;

pub struct ZkFs {
    fs: Mutex<Zfs<Device>>,
    last_error: Mutex<String>,
    /// Bytes the application appended (the denominator of write amplification).
    appended: AtomicU64,
    /// Bytes in the application's files now, and the most there ever were: the space the
    /// application needed, whatever the file system does with it.
    file_bytes: AtomicU64,
    peak_file_bytes: AtomicU64,
}

/// Options of a device spec: the file system's, and the shape of a fresh `mem:` device.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
struct MemOptions {
    zone_size_mib: Option<u64>,
    /// Set only when named (`interface=`): the default is ZNS.
    interface: Option<Interface>,
    spare: Option<f64>,
}

fn parse_options(opts: &str) -> Result<(FsConfig, MemOptions), String> {
    let mut config = FsConfig::default();
    let mut mem = MemOptions::default();
    for kv in opts.split('&').filter(|s| !s.is_empty()) {
        match kv.split_once('=') {
            Some(("alloc", name)) => config.allocation = zonekit_zfs::alloc::find(name).map_err(|e| format!("option {kv:?}: {e}"))?,
            Some(("gc", "on")) => config.gc = true,
            Some(("gc", "off")) => config.gc = false,
            Some(("zone_mib", n)) => {
                mem.zone_size_mib = Some(n.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| format!("option {kv:?}: zone_mib is a positive number of MiB"))?)
            }
            Some(("interface", name)) => mem.interface = Some(Interface::parse(name).map_err(|e| format!("option {kv:?}: {e}"))?),
            Some(("spare", f)) => {
                mem.spare =
                    Some(f.parse::<f64>().ok().filter(|f| *f > 0.0 && *f < 1.0).ok_or_else(|| format!("option {kv:?}: spare is the SSD's over-provisioning, a number in (0, 1)"))?)
            }
            _ => {
                let allocs = zonekit_base::policy::names(zonekit_zfs::alloc::ALLOCATORS).join("|");
                return Err(format!("unknown option {kv:?} (alloc={allocs}, gc=on|off, zone_mib=N, interface=zns|fdp:N|conventional, spare=F)"));
            }
        }
    }
    Ok((config, mem))
}

fn open_device(spec: &str, mem: MemOptions) -> Result<(Device, bool), String> {
    if let Some(name) = spec.strip_prefix("mem:") {
        let mut p = preset::find(name).ok_or_else(|| format!("unknown preset {name:?}; valid: {}", preset::names().join(", ")))?;
        if let Some(mib) = mem.zone_size_mib {
            // Checked, not shifted: `mib << 20` dropped the high bits (a huge zone_mib became a small zone).
            let bytes = mib.checked_mul(1 << 20).ok_or_else(|| format!("option zone_mib={mib}: too large (over 2^64 bytes)"))?;
            p = p.with_zone_size_bytes(bytes)?;
        }
        let interface = mem.interface.unwrap_or_default();
        if interface == Interface::Zns {
            if mem.spare.is_some() {
                return Err("option spare applies only to an SSD (interface=fdp:N or conventional); a ZNS device has no over-provisioning of its own".into());
            }
            let dev = MemDevice::new(p.geometry, p.behavior, StorageMode::Data).map_err(|e| e.to_string())?;
            return Ok((Box::new(dev), true));
        }
        let spare = mem.spare.unwrap_or(zoned::SPARE_DEFAULT);
        let dev = zoned::for_zns(&p.geometry, interface, spare, true).map_err(|e| format!("{spec}?interface={interface}: {e}"))?;
        return Ok((Box::new(dev), true));
    }
    if mem != MemOptions::default() {
        return Err(format!("{spec}: zone_mib, interface and spare apply only to a fresh mem: device; an image or a disk keeps the zone size and interface it has"));
    }
    let path = std::path::Path::new(spec);
    if zonekit_device::linux::is_block_device(path) {
        return Ok((Box::new(zonekit_device::linux::LinuxZonedDevice::open(path).map_err(|e| e.to_string())?), false));
    }
    Ok((Box::new(FileDevice::open(path).map_err(|e| e.to_string())?), false))
}

fn errno(e: &FsError) -> i32 {
    match e {
        FsError::NotFound(_) => libc_enoent(),
        FsError::Exists(_) => 17,
        FsError::NoSpace { .. } | FsError::PutNoSpace { .. } => 28,
        _ => 5,
    }
}

const fn libc_enoent() -> i32 {
    2
}

unsafe fn text<'a>(s: *const c_char) -> Option<&'a str> {
    if s.is_null() {
        return None;
    }
    // SAFETY: the caller passes a NUL-terminated string that outlives the call.
    unsafe { CStr::from_ptr(s) }.to_str().ok()
}

impl ZkFs {
    fn fail(&self, e: FsError) -> i64 {
        *self.last_error.lock().unwrap() = e.to_string();
        -(errno(&e) as i64)
    }

    fn grew(&self, bytes: u64) {
        let now = self.file_bytes.fetch_add(bytes, Relaxed) + bytes;
        self.peak_file_bytes.fetch_max(now, Relaxed);
    }

    fn shrank(&self, bytes: u64) {
        self.file_bytes.fetch_sub(bytes, Relaxed);
    }
}

/// Deletes a file, keeping the file-bytes count.
fn delete_counted(handle: &ZkFs, f: &mut Zfs<Device>, name: &str) -> Result<(), FsError> {
    let size = f.size(name)?;
    f.delete(name)?;
    handle.shrank(size);
    Ok(())
}

/// Opens (and for `mem:` specs formats) a file system. On failure returns null and writes a
/// message into `err` (NUL-terminated, truncated to `err_len`).
#[no_mangle]
pub unsafe extern "C" fn zk_fs_open(spec: *const c_char, err: *mut c_char, err_len: usize) -> *mut ZkFs {
    let result = (|| {
        let spec = unsafe { text(spec) }.ok_or("device spec is not UTF-8")?;
        let (device, options) = spec.split_once('?').unwrap_or((spec, ""));
        let (config, mem) = parse_options(options)?;
        let (dev, fresh) = open_device(device, mem)?;
        let fs = if fresh { Zfs::mkfs(dev, config) } else { Zfs::mount(dev, config) };
        fs.map_err(|e| format!("{device}: {e}"))
    })();
    match result {
        Ok(fs) => {
            let file_bytes: u64 = fs.table().files().map(|f| f.size_bytes()).sum();
            let handle = ZkFs { fs: Mutex::new(fs), last_error: Mutex::new(String::new()), appended: 0.into(), file_bytes: file_bytes.into(), peak_file_bytes: file_bytes.into() };
            Box::into_raw(Box::new(handle))
        }
        Err(msg) => {
            if !err.is_null() && err_len > 0 {
                let bytes = msg.as_bytes();
                let n = bytes.len().min(err_len - 1);
                // SAFETY: the caller gave a buffer of err_len bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), err as *mut u8, n);
                    *err.add(n) = 0;
                }
            }
            std::ptr::null_mut()
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn zk_fs_close(fs: *mut ZkFs) {
    if !fs.is_null() {
        // SAFETY: the pointer came from zk_fs_open and is not used again.
        drop(unsafe { Box::from_raw(fs) });
    }
}

/// The message of the last failed call (valid until the next call on this handle).
#[no_mangle]
pub unsafe extern "C" fn zk_last_error(fs: *const ZkFs, buf: *mut c_char, len: usize) {
    // SAFETY: a live handle from zk_fs_open; buf holds len bytes.
    let fs = unsafe { &*fs };
    let msg = fs.last_error.lock().unwrap().clone();
    if len > 0 {
        let n = msg.len().min(len - 1);
        unsafe {
            std::ptr::copy_nonoverlapping(msg.as_ptr(), buf as *mut u8, n);
            *buf.add(n) = 0;
        }
    }
}

macro_rules! with_fs {
    ($fs:expr, $name:expr, |$f:ident, $n:ident| $body:expr) => {{
        // SAFETY: a live handle from zk_fs_open.
        let handle = unsafe { &*$fs };
        let Some($n) = (unsafe { text($name) }) else { return -22 };
        #[allow(unused_mut)]
        let mut $f = handle.fs.lock().unwrap();
        match $body {
            Ok(v) => v,
            Err(e) => handle.fail(e),
        }
    }};
}

/// Creates a file, replacing any file of that name.
#[no_mangle]
pub unsafe extern "C" fn zk_file_create(fs: *mut ZkFs, name: *const c_char, lifetime: u8) -> i64 {
    with_fs!(fs, name, |f, n| {
        if f.size(n).is_ok() {
            if let Err(e) = delete_counted(unsafe { &*fs }, &mut f, n) {
                return unsafe { &*fs }.fail(e);
            }
        }
        f.create(n, lifetime).map(|_| 0)
    })
}

#[no_mangle]
pub unsafe extern "C" fn zk_file_set_lifetime(fs: *mut ZkFs, name: *const c_char, lifetime: u8) -> i64 {
    with_fs!(fs, name, |f, n| f.set_lifetime(n, lifetime).map(|_| 0))
}

#[no_mangle]
pub unsafe extern "C" fn zk_file_append(fs: *mut ZkFs, name: *const c_char, data: *const u8, len: usize) -> i64 {
    // SAFETY: data holds len bytes.
    let bytes = if len == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(data, len) } };
    // SAFETY: a live handle from zk_fs_open.
    let handle = unsafe { &*fs };
    handle.appended.fetch_add(len as u64, Relaxed);
    with_fs!(fs, name, |f, n| f.append(n, bytes).map(|_| handle.grew(len as u64)).map(|_| 0))
}

#[no_mangle]
pub unsafe extern "C" fn zk_file_sync(fs: *mut ZkFs, name: *const c_char) -> i64 {
    with_fs!(fs, name, |f, n| f.sync(n).map(|_| 0))
}

/// Reads up to `len` bytes at `offset`; returns the number read (0 at end of file).
#[no_mangle]
pub unsafe extern "C" fn zk_file_read(fs: *mut ZkFs, name: *const c_char, offset: u64, buf: *mut u8, len: usize) -> i64 {
    // SAFETY: buf holds len writable bytes.
    let out = if len == 0 { &mut [][..] } else { unsafe { std::slice::from_raw_parts_mut(buf, len) } };
    with_fs!(fs, name, |f, n| f.read_at(n, offset, out).map(|r| r as i64))
}

#[no_mangle]
pub unsafe extern "C" fn zk_file_size(fs: *mut ZkFs, name: *const c_char) -> i64 {
    with_fs!(fs, name, |f, n| f.size(n).map(|s| s as i64))
}

#[no_mangle]
pub unsafe extern "C" fn zk_file_delete(fs: *mut ZkFs, name: *const c_char) -> i64 {
    with_fs!(fs, name, |f, n| delete_counted(unsafe { &*fs }, &mut f, n).map(|_| 0))
}

#[no_mangle]
pub unsafe extern "C" fn zk_file_rename(fs: *mut ZkFs, from: *const c_char, to: *const c_char) -> i64 {
    let Some(to) = (unsafe { text(to) }) else { return -22 };
    with_fs!(fs, from, |f, n| {
        let _ = f.sync(n);
        f.rename(n, to).map(|_| 0)
    })
}

/// Calls `each(ctx, name)` for every file whose name starts with `prefix`; returns the count.
#[no_mangle]
pub unsafe extern "C" fn zk_list(fs: *mut ZkFs, prefix: *const c_char, each: extern "C" fn(*mut c_void, *const c_char), ctx: *mut c_void) -> i64 {
    with_fs!(fs, prefix, |f, p| {
        let names: Vec<std::ffi::CString> = f.table().files().filter(|x| x.name.starts_with(p)).filter_map(|x| std::ffi::CString::new(x.name.clone()).ok()).collect();
        for name in &names {
            each(ctx, name.as_ptr());
        }
        Ok::<i64, FsError>(names.len() as i64)
    })
}

/// Bytes the device has written so far (for write amplification).
#[no_mangle]
pub unsafe extern "C" fn zk_device_bytes_written(fs: *mut ZkFs) -> u64 {
    // SAFETY: a live handle from zk_fs_open.
    let handle = unsafe { &*fs };
    handle.fs.lock().unwrap().device().stats().bytes_written()
}

/// One line of statistics: bytes appended, bytes the device wrote, the file system's WAF,
/// zone resets, space; then what the flash beneath programmed: host and media bytes, device
/// WAF, and the total (file system × device) WAF.
#[no_mangle]
pub unsafe extern "C" fn zk_report(fs: *mut ZkFs, buf: *mut c_char, len: usize) {
    // SAFETY: a live handle from zk_fs_open; buf holds len bytes.
    let handle = unsafe { &*fs };
    let appended = handle.appended.load(Relaxed);
    let f = handle.fs.lock().unwrap();
    let stats = f.device().stats();
    let space = f.space();
    // A zoned device without an FTL of its own (ZNS) programs each block it is sent once.
    let flash = f.device().flash_writes().unwrap_or(FlashWrites { host_bytes: stats.bytes_written(), media_bytes: stats.bytes_written() });
    let line = format!(
        "zonekit: appended {appended} bytes, device wrote {} bytes, WAF {:.3}, zone resets {}, live {} MiB, garbage {} MiB, free {} MiB, peak file bytes {} MiB, flash host {} bytes, flash media {} bytes, device WAF {:.3}, total WAF {:.3}",
        stats.bytes_written(),
        stats.bytes_written() as f64 / appended.max(1) as f64,
        stats.resets,
        space.live_bytes >> 20,
        space.garbage_bytes >> 20,
        space.free_bytes >> 20,
        handle.peak_file_bytes.load(Relaxed) >> 20,
        flash.host_bytes,
        flash.media_bytes,
        flash.waf(),
        flash.media_bytes as f64 / appended.max(1) as f64,
    );
    if len > 0 {
        let n = line.len().min(len - 1);
        unsafe {
            std::ptr::copy_nonoverlapping(line.as_ptr(), buf as *mut u8, n);
            *buf.add(n) = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    fn report(fs: *mut ZkFs) -> String {
        let mut buf = vec![0u8; 512];
        unsafe { zk_report(fs, buf.as_mut_ptr() as *mut c_char, buf.len()) };
        CStr::from_bytes_until_nul(&buf).unwrap().to_str().unwrap().to_string()
    }

    #[test]
    fn the_report_counts_appends_device_writes_and_the_peak_of_file_bytes() {
        let spec = CString::new("mem:tiny?alloc=lifetime&gc=on").unwrap();
        let mut err = [0 as c_char; 256];
        let fs = unsafe { zk_fs_open(spec.as_ptr(), err.as_mut_ptr(), err.len()) };
        assert!(!fs.is_null());
        let (a, b) = (CString::new("/db/a.sst").unwrap(), CString::new("/db/b.log").unwrap());
        let mib = vec![7u8; 1 << 20];
        unsafe {
            assert_eq!(zk_file_create(fs, a.as_ptr(), 3), 0);
            assert_eq!(zk_file_create(fs, b.as_ptr(), 2), 0);
            for _ in 0..3 {
                assert_eq!(zk_file_append(fs, a.as_ptr(), mib.as_ptr(), mib.len()), 0);
            }
            assert_eq!(zk_file_append(fs, b.as_ptr(), mib.as_ptr(), mib.len()), 0);
            assert_eq!(zk_file_sync(fs, a.as_ptr()), 0);
            assert_eq!(zk_file_delete(fs, a.as_ptr()), 0);
            // Recreating a file replaces it: its old bytes leave the count too.
            assert_eq!(zk_file_create(fs, b.as_ptr(), 2), 0);
            assert_eq!(zk_file_append(fs, b.as_ptr(), mib.as_ptr(), 1000), 0);
        }
        let line = report(fs);
        assert!(line.contains(&format!("appended {} bytes", 4 * (1 << 20) + 1000)), "{line}");
        assert!(line.contains("peak file bytes 4 MiB"), "{line}");
        assert_eq!(unsafe { &*fs }.file_bytes.load(Relaxed), 1000);
        let missing = CString::new("/db/none").unwrap();
        assert_eq!(unsafe { zk_file_delete(fs, missing.as_ptr()) }, -2);
        unsafe { zk_fs_close(fs) };
    }

    #[test]
    fn a_bad_spec_is_refused_with_a_message() {
        let spec = CString::new("mem:nope").unwrap();
        let mut err = [0 as c_char; 256];
        let fs = unsafe { zk_fs_open(spec.as_ptr(), err.as_mut_ptr(), err.len()) };
        assert!(fs.is_null());
        let msg = unsafe { CStr::from_ptr(err.as_ptr()) }.to_str().unwrap();
        assert!(msg.contains("unknown preset"), "{msg}");
    }

    fn open_error(spec: &str) -> Option<String> {
        let spec = CString::new(spec).unwrap();
        let mut err = [0 as c_char; 256];
        let fs = unsafe { zk_fs_open(spec.as_ptr(), err.as_mut_ptr(), err.len()) };
        if fs.is_null() {
            return Some(unsafe { CStr::from_ptr(err.as_ptr()) }.to_str().unwrap().to_string());
        }
        unsafe { zk_fs_close(fs) };
        None
    }

    #[test]
    fn zone_mib_resizes_a_mem_device_and_is_refused_elsewhere() {
        let (config, mem) = parse_options("alloc=zenfs&gc=on&zone_mib=8").unwrap();
        assert_eq!((config.allocation.name, config.gc, mem.zone_size_mib), ("zenfs", true, Some(8)));
        // tiny: 64 zones of 4 MiB; 8 MiB zones make 32 of them, two of which hold the metadata.
        let spec = CString::new("mem:tiny?zone_mib=8").unwrap();
        let fs = unsafe { zk_fs_open(spec.as_ptr(), std::ptr::null_mut(), 0) };
        assert!(!fs.is_null());
        assert_eq!(unsafe { &*fs }.fs.lock().unwrap().zones().len(), 30);
        unsafe { zk_fs_close(fs) };
        assert!(open_error("mem:tiny?zone_mib=3").unwrap().contains("does not divide"));
        assert!(open_error("mem:tiny?zone_mib=0").unwrap().contains("positive number"));
        assert!(open_error("mem:tiny?zone_mib=x").unwrap().contains("positive number"));
        assert!(open_error("/nonexistent.zk?zone_mib=8").unwrap().contains("only to a fresh mem: device"));
        assert!(open_error("/nonexistent.zk?interface=fdp:4").unwrap().contains("only to a fresh mem: device"));
        assert!(open_error("mem:tiny?zone=8").unwrap().contains("unknown option"));
        // 2^44 + 1 MiB: `<< 20` kept only the 1 MiB, a zone that divides tiny's 256 MiB.
        let e = open_error("mem:tiny?zone_mib=17592186044417").unwrap();
        assert!(e.contains("zone_mib=17592186044417: too large"), "{e}");
    }

    #[test]
    fn an_interface_puts_the_zones_on_an_ssd_and_the_report_adds_its_waf() {
        for spec in ["mem:tiny?interface=fdp:4", "mem:tiny?interface=conventional&spare=0.2"] {
            let c = CString::new(spec).unwrap();
            let fs = unsafe { zk_fs_open(c.as_ptr(), std::ptr::null_mut(), 0) };
            assert!(!fs.is_null(), "{spec}");
            // Fewer zones than ZNS's 64 at the same raw capacity: the spare is the SSD's.
            let zones = unsafe { &*fs }.fs.lock().unwrap().zones().len() + 2;
            assert!(zones < 64 && zones > 40, "{spec}: {zones} zones");
            let (wal, sst) = (CString::new("/db/1.log").unwrap(), CString::new("/db/2.sst").unwrap());
            let mib = vec![3u8; 1 << 20];
            unsafe {
                assert_eq!(zk_file_create(fs, wal.as_ptr(), 2), 0);
                assert_eq!(zk_file_create(fs, sst.as_ptr(), 5), 0);
                assert_eq!(zk_file_append(fs, wal.as_ptr(), mib.as_ptr(), mib.len()), 0);
                assert_eq!(zk_file_append(fs, sst.as_ptr(), mib.as_ptr(), mib.len()), 0);
                assert_eq!(zk_file_sync(fs, wal.as_ptr()), 0);
                assert_eq!(zk_file_sync(fs, sst.as_ptr()), 0);
            }
            let line = report(fs);
            assert!(line.contains("device WAF 1.000") && line.contains("flash media "), "{spec}: {line}");
            let written = unsafe { zk_device_bytes_written(fs) };
            assert!(line.contains(&format!("flash host {written} bytes")), "{spec}: {line}");
            let f = unsafe { &*fs }.fs.lock().unwrap();
            assert_eq!(f.device().flash_writes().unwrap().host_bytes, written);
            drop(f);
            unsafe { zk_fs_close(fs) };
        }
        // ZNS reports its own bytes as the flash's (no device GC).
        let c = CString::new("mem:tiny").unwrap();
        let fs = unsafe { zk_fs_open(c.as_ptr(), std::ptr::null_mut(), 0) };
        let written = unsafe { zk_device_bytes_written(fs) };
        let line = report(fs);
        assert!(written > 0 && line.contains(&format!("flash host {written} bytes, flash media {written} bytes, device WAF 1.000")), "{line}");
        unsafe { zk_fs_close(fs) };
    }

    #[test]
    fn bad_interface_options_are_refused_with_a_message() {
        let e = open_error("mem:tiny?interface=fdp:0").unwrap();
        assert!(e.contains("option \"interface=fdp:0\": interface \"fdp:0\": 0 handles; expected zns, conventional"), "{e}");
        assert!(open_error("mem:tiny?interface=ssd").unwrap().contains("unknown interface"));
        assert!(open_error("mem:tiny?interface=fdp:4&spare=1.5").unwrap().contains("spare is the SSD's over-provisioning"));
        assert!(open_error("mem:tiny?spare=0.1").unwrap().contains("applies only to an SSD"));
        // More handles than the device has room for open reclaim units: the model says why.
        let e = open_error("mem:tiny?interface=fdp:128").unwrap();
        assert!(e.contains("mem:tiny?interface=fdp:128") && e.contains("too small for its reclaim units"), "{e}");
        assert!(open_error("mem:tiny?interface=zns").is_none());
    }
}
