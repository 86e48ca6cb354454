//! The ublk protocol half of `zonekit serve ublk` (the `ublk` feature): the control device,
//! one io_uring queue thread, user-copy data movement and the pacing timer.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use libublk::ctrl::{UblkCtrl, UblkCtrlBuilder};
use libublk::io::{BufDescList, UblkDev, UblkIOCtx, UblkQueue};
use libublk::{sys, BufDesc, UblkFlags, UblkIORes};
use zonekit_device::ZoneAction;

use super::{check_geometry, UblkOptions, UblkServeError};
use crate::counters::Snapshot;
use crate::request_log::RequestLog;
use crate::served::Served;
use crate::target::{Request, Target, BLK_ZONE_BYTES, SECTOR_BYTES};

/// Decodes the request the kernel put in a queue slot (`None`: an operation we do not serve).
fn request_of(iod: &sys::ublksrv_io_desc) -> Option<Request> {
    let (sector, sectors) = (iod.start_sector, iod.nr_sectors);
    Some(match iod.op_flags & 0xff {
        sys::UBLK_IO_OP_READ => Request::Read { sector, sectors },
        sys::UBLK_IO_OP_WRITE => Request::Write { sector, sectors },
        sys::UBLK_IO_OP_ZONE_APPEND => Request::Append { sector, sectors },
        sys::UBLK_IO_OP_FLUSH => Request::Flush,
        // The kernel puts the zone count where a transfer's sector count goes.
        sys::UBLK_IO_OP_REPORT_ZONES => Request::ReportZones { sector, zones: sectors },
        sys::UBLK_IO_OP_ZONE_OPEN => Request::Manage { action: ZoneAction::Open, sector },
        sys::UBLK_IO_OP_ZONE_CLOSE => Request::Manage { action: ZoneAction::Close, sector },
        sys::UBLK_IO_OP_ZONE_FINISH => Request::Manage { action: ZoneAction::Finish, sector },
        sys::UBLK_IO_OP_ZONE_RESET => Request::Manage { action: ZoneAction::Reset, sector },
        sys::UBLK_IO_OP_ZONE_RESET_ALL => Request::ResetAll,
        _ => return None,
    })
}

/// Moves `bytes` between `buf` and the request's data on `/dev/ublkcN` (user copy).
fn user_copy(fd: RawFd, pos: u64, buf: &mut [u8], to_kernel: bool) -> bool {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: the pointer and length stay inside `buf`.
        let n = unsafe {
            let at = (pos + done as u64) as libc::off_t;
            if to_kernel {
                libc::pwrite(fd, buf[done..].as_ptr().cast(), buf.len() - done, at)
            } else {
                libc::pread(fd, buf[done..].as_mut_ptr().cast(), buf.len() - done, at)
            }
        };
        if n <= 0 {
            return false;
        }
        done += n as usize;
    }
    true
}

/// A request done but not yet completed to the kernel: pacing holds it until its modelled
/// completion time.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Held {
    due: Instant,
    tag: u16,
    result: i32,
    append_sector: Option<u64>,
}

/// The queue thread's state.
struct Queue<D> {
    target: Arc<Mutex<Target<D>>>,
    fd: RawFd,
    buf: Vec<u8>,
    pace: bool,
    held: BinaryHeap<Reverse<Held>>,
    /// When the armed pacing timer fires (none armed).
    timer_due: Option<Instant>,
    /// The timer's timespec: io_uring reads it when the SQE is submitted, after arming returns.
    timer_ts: Box<io_uring::types::Timespec>,
}

/// The user data of the pacing timer's completion (a target I/O, so libublk hands it to us).
const TIMER_OP: u32 = 0xfe;

impl<D: Served> Queue<D> {
    /// One completion from the queue's ring: a kernel request in slot `tag`, or the timer.
    fn on_event(&mut self, q: &UblkQueue, tag: u16, io: &UblkIOCtx) {
        if io.is_tgt_io() {
            self.timer_due = None;
        } else {
            let held = self.serve(q, tag);
            if held.due > Instant::now() {
                self.held.push(Reverse(held));
            } else {
                complete(q, &held);
            }
        }
        let now = Instant::now();
        while self.held.peek().is_some_and(|h| h.0.due <= now) {
            let Reverse(h) = self.held.pop().expect("peeked");
            complete(q, &h);
        }
        if let Some(next) = self.held.peek().map(|h| h.0.due) {
            if self.timer_due.is_none_or(|armed| next < armed) {
                self.arm(q, next, now);
            }
        }
    }

    fn arm(&mut self, q: &UblkQueue, due: Instant, now: Instant) {
        let wait = due - now;
        *self.timer_ts = io_uring::types::Timespec::new().sec(wait.as_secs()).nsec(wait.subsec_nanos());
        let sqe = io_uring::opcode::Timeout::new(&*self.timer_ts).build().user_data(UblkIOCtx::build_user_data(0, TIMER_OP, 0, true));
        if q.ublk_submit_sqe_sync(sqe).is_ok() {
            self.timer_due = Some(due);
        }
    }

    /// Executes the request in slot `tag` and says when to complete it.
    fn serve(&mut self, q: &UblkQueue, tag: u16) -> Held {
        let iod = *q.get_iod(tag);
        let pos = UblkIOCtx::ublk_user_copy_pos(q.get_qid(), tag, 0);
        let mut held = Held { due: Instant::now(), tag, result: -libc::EOPNOTSUPP, append_sector: None };
        let Some(request) = request_of(&iod) else { return held };
        let in_bytes = match request {
            Request::Write { sectors, .. } | Request::Append { sectors, .. } => sectors as usize * SECTOR_BYTES as usize,
            _ => 0,
        };
        let out_bytes = match request {
            Request::Read { sectors, .. } => sectors as usize * SECTOR_BYTES as usize,
            Request::ReportZones { zones, .. } => zones as usize * BLK_ZONE_BYTES,
            _ => 0,
        };
        if self.buf.len() < in_bytes.max(out_bytes) {
            self.buf.resize(in_bytes.max(out_bytes), 0);
        }
        if !user_copy(self.fd, pos, &mut self.buf[..in_bytes], false) {
            held.result = -libc::EIO;
            return held;
        }
        let mut target = self.target.lock().unwrap_or_else(|p| p.into_inner());
        let charged_before = target.device().modelled_completion().map(|c| c.0);
        let outcome = target.execute(request, &mut self.buf);
        if self.pace {
            if let Some((charged, due)) = target.device().modelled_completion() {
                if Some(charged) != charged_before {
                    held.due = due;
                }
            }
        }
        drop(target);
        let copied_out = match request {
            Request::Read { .. } | Request::ReportZones { .. } if outcome.result > 0 => user_copy(self.fd, pos, &mut self.buf[..outcome.result as usize], true),
            _ => true,
        };
        (held.result, held.append_sector) = if copied_out { (outcome.result, outcome.append_sector) } else { (-libc::EIO, None) };
        held
    }
}

fn complete(q: &UblkQueue, h: &Held) {
    let desc = match h.append_sector {
        Some(sector) => BufDesc::ZonedAppendLba(sector),
        None => BufDesc::Slice(&[]),
    };
    if let Err(e) = q.complete_io_cmd_unified(h.tag, desc, Ok(UblkIORes::Result(h.result))) {
        eprintln!("zonekit serve ublk: completing request {}: {e}", h.tag);
    }
}

/// A server killed with SIGKILL cannot delete its ublk device: the kernel removes the disk but
/// keeps the device, dead, under its id until someone deletes it, and adding a device with that
/// id fails with a bare I/O error. So `--id N` first deletes device N when the process that
/// served it is gone, and refuses, naming the process, when it is still there.
fn release_orphan(dev_id: i32) -> Result<(), UblkServeError> {
    // No device with this id (the usual case): nothing to release.
    let Ok(old) = UblkCtrl::new_simple(dev_id) else { return Ok(()) };
    let pid = old.dev_info().ublksrv_pid;
    if pid > 0 && std::path::Path::new(&format!("/proc/{pid}")).exists() {
        return Err(UblkServeError::Kernel(format!("ublk device {dev_id} is in use (served by process {pid}): stop it or choose another --id")));
    }
    // The pid reads -1 once the server's queues are gone (Linux 6.12 after a SIGKILL).
    let who = if pid > 0 { format!("process {pid}, gone") } else { "a server that is gone".to_string() };
    old.del_dev().map_err(|e| UblkServeError::Kernel(format!("deleting ublk device {dev_id}, left behind by {who}: {e}")))?;
    eprintln!("zonekit serve ublk: deleted ublk device {dev_id}, left behind by {who}");
    Ok(())
}

/// Exports `device` until SIGINT/SIGTERM or until someone deletes the ublk device, and returns
/// the final counters. `ready` is called with the device id once `/dev/ublkbN` exists.
pub fn serve<D: Served>(device: D, options: &UblkOptions, ready: impl FnOnce(i32) + Send + Sync + 'static) -> Result<Snapshot, UblkServeError> {
    let g = *device.geometry();
    check_geometry(&g, options.max_io_bytes)?;
    if options.pace && device.modelled_completion().is_none() {
        return Err(UblkServeError::Config("pacing needs a device under a timing model".into()));
    }
    if !std::path::Path::new("/dev/ublk-control").exists() {
        return Err(UblkServeError::Kernel("/dev/ublk-control does not exist: load the ublk driver (modprobe ublk_drv; Linux 6.6 or newer for zoned devices)".into()));
    }
    // Before the kernel device exists, so a log that cannot be created leaves nothing behind.
    let log = options.trace_out.as_ref().map(|path| RequestLog::create(path, g.block_size_bytes, "zonekit serve ublk")).transpose().map_err(UblkServeError::Config)?;
    if options.dev_id >= 0 {
        release_orphan(options.dev_id)?;
    }
    let stop_signals = crate::signals::block_stop_signals();
    let ctrl = UblkCtrlBuilder::default()
        .name("zonekit")
        .id(options.dev_id)
        .nr_queues(1)
        .depth(options.queue_depth)
        .io_buf_bytes(options.max_io_bytes)
        .ctrl_flags((sys::UBLK_F_USER_COPY | sys::UBLK_F_ZONED) as u64)
        .dev_flags(UblkFlags::UBLK_DEV_F_ADD_DEV)
        .build()
        .map_err(|e| UblkServeError::Kernel(format!("creating the ublk device: {e} (does this kernel support zoned ublk? Linux 6.6 or newer)")))?;
    if ctrl.get_driver_features().is_some_and(|f| f & sys::UBLK_F_ZONED as u64 == 0) {
        return Err(UblkServeError::Kernel("this kernel's ublk driver has no zoned devices (UBLK_F_ZONED needs Linux 6.6 or newer)".into()));
    }
    let dev_id = ctrl.dev_info().dev_id as i32;

    let zone_sectors = (g.zone_size_bytes() / SECTOR_BYTES) as u32;
    let device_bytes = g.zone_count as u64 * g.zone_size_bytes();
    let block_shift = g.block_size_bytes.trailing_zeros() as u8;
    let max_sectors = options.max_io_bytes / SECTOR_BYTES as u32;
    let tgt_init = move |dev: &mut UblkDev| {
        dev.set_default_params(device_bytes);
        let p = &mut dev.tgt.params;
        p.types |= sys::UBLK_PARAM_TYPE_ZONED;
        p.basic.logical_bs_shift = block_shift;
        p.basic.physical_bs_shift = block_shift;
        p.basic.io_min_shift = block_shift;
        p.basic.io_opt_shift = block_shift;
        p.basic.chunk_sectors = zone_sectors;
        p.zoned = sys::ublk_param_zoned {
            max_open_zones: g.open_zones_max.unwrap_or(0),
            max_active_zones: g.active_zones_max.unwrap_or(0),
            max_zone_append_sectors: max_sectors.min((g.zone_capacity_blocks * g.block_size_bytes as u64 / SECTOR_BYTES) as u32),
            ..Default::default()
        };
        Ok(())
    };

    let mut target = Target::new(device);
    if let Some(log) = log {
        target.set_log(log);
    }
    let target = Arc::new(Mutex::new(target));
    let done = Arc::new(AtomicBool::new(false));
    let stats = options.stats_path.clone().map(|path| {
        let (target, done, interval) = (target.clone(), done.clone(), options.stats_interval);
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(interval);
                let snapshot = {
                    let t = target.lock().unwrap_or_else(|p| p.into_inner());
                    t.counters().snapshot(t.device().stats(), t.device().model())
                };
                if let Err(e) = snapshot.write_atomically(&path) {
                    eprintln!("zonekit serve ublk: writing {}: {e}", path.display());
                }
            }
        })
    });
    // The signal thread stops the device; the queue thread then sees its commands aborted.
    crate::signals::on_stop_signal(stop_signals, move || {
        if let Ok(ctrl) = UblkCtrl::new_simple(dev_id) {
            let _ = ctrl.kill_dev();
        }
    });

    let (queue_target, pace) = (target.clone(), options.pace);
    let q_fn = move |qid: u16, dev: &UblkDev| {
        let mut state = Queue {
            target: queue_target,
            fd: dev.tgt.fds[0],
            buf: vec![0u8; dev.dev_info.max_io_buf_bytes as usize],
            pace,
            held: BinaryHeap::new(),
            timer_due: None,
            timer_ts: Box::new(io_uring::types::Timespec::new()),
        };
        let queue = match UblkQueue::new(qid, dev).and_then(|q| q.submit_fetch_commands_unified(BufDescList::Slices(None))) {
            Ok(q) => q,
            Err(e) => {
                eprintln!("zonekit serve ublk: setting up queue {qid}: {e}");
                return;
            }
        };
        queue.wait_and_handle_io(|q, tag, io| state.on_event(q, tag, io));
    };
    let result = ctrl.run_target(tgt_init, q_fn, move |c: &UblkCtrl| ready(c.dev_info().dev_id as i32));
    done.store(true, Ordering::Relaxed);
    if let Some(h) = stats {
        let _ = h.join();
    }
    result.map_err(|e| UblkServeError::Kernel(format!("serving /dev/ublkb{dev_id}: {e}")))?;
    let mut t = target.lock().unwrap_or_else(|p| p.into_inner());
    // A clean stop keeps everything written (an image's write pointers are durable at flush).
    t.device_mut().flush().map_err(|e| UblkServeError::Kernel(format!("flushing the device at exit: {e}")))?;
    let mut snapshot = t.counters().snapshot(t.device().stats(), t.device().model());
    let logged = t.take_log().map(RequestLog::finish).transpose();
    if let Ok(summary) = &logged {
        snapshot.request_log = summary.clone();
    }
    if let Some(path) = &options.stats_path {
        snapshot.write_atomically(path).map_err(|e| UblkServeError::Kernel(format!("writing {}: {e}", path.display())))?;
    }
    logged.map_err(UblkServeError::Config)?;
    Ok(snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_operations_decode_to_requests() {
        let iod = |op: u32, sector: u64, n: u32| sys::ublksrv_io_desc { op_flags: op, nr_sectors: n, start_sector: sector, addr: 0 };
        assert_eq!(request_of(&iod(sys::UBLK_IO_OP_REPORT_ZONES, 0, 128)), Some(Request::ReportZones { sector: 0, zones: 128 }));
        assert_eq!(request_of(&iod(sys::UBLK_IO_OP_ZONE_FINISH, 4096, 0)), Some(Request::Manage { action: ZoneAction::Finish, sector: 4096 }));
        // Flags above the low byte do not change the operation.
        assert_eq!(request_of(&iod(sys::UBLK_IO_OP_WRITE | (1 << 8), 8, 8)), Some(Request::Write { sector: 8, sectors: 8 }));
        assert_eq!(request_of(&iod(sys::UBLK_IO_OP_DISCARD, 0, 8)), None);
    }
}
