//! `zonekit serve nbd`: a [`Volume`] (the block FTL with a durable mapping) as a network block
//! device, fixed-newstyle NBD over a Unix socket or TCP.
//!
//! The protocol is ours (the `nbd` crate offers no `NBD_OPT_GO`, and loses its place in the
//! stream when a write fails): handshake with `NBD_OPT_GO`, `_INFO`, `_EXPORT_NAME`, `_LIST`
//! and `_ABORT` (others: `NBD_REP_ERR_UNSUP`), simple replies, commands READ, WRITE (with FUA),
//! FLUSH and DISC. A request outside the volume gets `EINVAL` (reads) or `ENOSPC` (writes) and
//! the connection goes on, a write's payload consumed; a malformed request (bad magic, a
//! payload over [`MAX_PAYLOAD`]) closes that connection only. Each client has a thread; they
//! share the volume. A flush commits the volume's mapping (durable for every connection, so
//! `NBD_FLAG_CAN_MULTI_CONN` is advertised).

use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};

use zonekit_device::ZonedDevice;

use zonekit_trace::record::Op;

use crate::counters::{Counters, Kind};
use crate::request_log::RequestLog;
use crate::volume::Volume;

pub const MAX_PAYLOAD: u32 = 32 << 20;

const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
const REQUEST_MAGIC: u32 = 0x2560_9513;
const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

const FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
const FLAG_NO_ZEROES: u16 = 1 << 1;
const CLIENT_FIXED_NEWSTYLE: u32 = 1 << 0;
const CLIENT_NO_ZEROES: u32 = 1 << 1;

const OPT_EXPORT_NAME: u32 = 1;
const OPT_ABORT: u32 = 2;
const OPT_LIST: u32 = 3;
const OPT_INFO: u32 = 6;
const OPT_GO: u32 = 7;

const REP_ACK: u32 = 1;
const REP_SERVER: u32 = 2;
const REP_INFO: u32 = 3;
const REP_ERR_UNSUP: u32 = (1 << 31) + 1;
const REP_ERR_INVALID: u32 = (1 << 31) + 3;
const REP_ERR_UNKNOWN: u32 = (1 << 31) + 6;

const INFO_EXPORT: u16 = 0;
const INFO_BLOCK_SIZE: u16 = 3;

const TFLAG_HAS_FLAGS: u16 = 1 << 0;
const TFLAG_SEND_FLUSH: u16 = 1 << 2;
const TFLAG_SEND_FUA: u16 = 1 << 3;
const TFLAG_CAN_MULTI_CONN: u16 = 1 << 8;

const CMD_FLAG_FUA: u16 = 1 << 0;
const CMD_READ: u16 = 0;
const CMD_WRITE: u16 = 1;
const CMD_DISC: u16 = 2;
const CMD_FLUSH: u16 = 3;

const EIO: u32 = 5;
const EINVAL: u32 = 22;
const ENOSPC: u32 = 28;

/// Option data longer than this is refused (export names are short).
const MAX_OPTION: u32 = 64 << 10;

/// One transmission request header, as the client sent it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RequestHeader {
    pub flags: u16,
    pub command: u16,
    pub cookie: u64,
    pub offset: u64,
    pub length: u32,
}

/// Why a connection was closed.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("bad magic {0:#x}")]
    Magic(u64),
    #[error("client flags {0:#x}: a fixed-newstyle client is required")]
    ClientFlags(u32),
    #[error("option {option} with {length} bytes of data (at most {MAX_OPTION})")]
    OptionTooLong { option: u32, length: u32 },
    #[error("a write of {0} bytes (at most {MAX_PAYLOAD})")]
    PayloadTooLong(u32),
    #[error("the client aborted")]
    Aborted,
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Decodes a 28-byte request header.
pub fn decode_request(b: &[u8; 28]) -> Result<RequestHeader, ProtocolError> {
    let magic = u32::from_be_bytes(b[0..4].try_into().unwrap());
    if magic != REQUEST_MAGIC {
        return Err(ProtocolError::Magic(magic as u64));
    }
    Ok(RequestHeader {
        flags: u16::from_be_bytes([b[4], b[5]]),
        command: u16::from_be_bytes([b[6], b[7]]),
        cookie: u64::from_be_bytes(b[8..16].try_into().unwrap()),
        offset: u64::from_be_bytes(b[16..24].try_into().unwrap()),
        length: u32::from_be_bytes(b[24..28].try_into().unwrap()),
    })
}

/// What a connection serves: the volume and the counters, shared by every client.
pub struct Export<D: ZonedDevice + Send + 'static> {
    pub name: String,
    pub volume: Mutex<Volume<D>>,
    pub counters: Mutex<Counters>,
    /// The request log (`--trace-out`), written while the volume's lock is held so its order
    /// is the execution order.
    pub log: Mutex<Option<RequestLog>>,
}

impl<D: ZonedDevice + Send + 'static> Export<D> {
    pub fn new(name: &str, volume: Volume<D>) -> Arc<Export<D>> {
        Arc::new(Export { name: name.to_string(), volume: Mutex::new(volume), counters: Mutex::new(Counters::new()), log: Mutex::new(None) })
    }

    /// Logs a request that succeeded (the caller holds the volume's lock).
    fn log(&self, op: Op, offset_bytes: u64, len_bytes: u64) {
        if let Some(log) = self.log.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            log.record(op, offset_bytes, len_bytes);
        }
    }

    fn size_bytes(&self) -> u64 {
        let v = self.volume.lock().unwrap_or_else(|p| p.into_inner());
        v.blocks() * v.block_bytes() as u64
    }

    fn transmission_flags(&self) -> u16 {
        TFLAG_HAS_FLAGS | TFLAG_SEND_FLUSH | TFLAG_SEND_FUA | TFLAG_CAN_MULTI_CONN
    }
}

fn read_u32(c: &mut impl Read) -> io::Result<u32> {
    let mut b = [0; 4];
    c.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

fn read_u64(c: &mut impl Read) -> io::Result<u64> {
    let mut b = [0; 8];
    c.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

fn option_reply(c: &mut impl Write, option: u32, reply: u32, data: &[u8]) -> io::Result<()> {
    let mut b = Vec::with_capacity(20 + data.len());
    b.extend_from_slice(&OPT_REPLY_MAGIC.to_be_bytes());
    b.extend_from_slice(&option.to_be_bytes());
    b.extend_from_slice(&reply.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    c.write_all(&b)
}

/// The export name of an `NBD_OPT_INFO` / `_GO` request (`None`: malformed).
fn go_name(data: &[u8]) -> Option<&[u8]> {
    let len = u32::from_be_bytes(data.get(0..4)?.try_into().ok()?) as usize;
    let name = data.get(4..4 + len)?;
    let requests = u16::from_be_bytes(data.get(4 + len..6 + len)?.try_into().ok()?) as usize;
    (data.len() == 6 + len + 2 * requests).then_some(name)
}

/// The option haggling phase; `Ok(true)`: go on to transmission.
fn handshake<D: ZonedDevice + Send + 'static>(c: &mut (impl Read + Write), export: &Export<D>) -> Result<bool, ProtocolError> {
    let mut hello = Vec::with_capacity(18);
    hello.extend_from_slice(&NBDMAGIC.to_be_bytes());
    hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
    hello.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    c.write_all(&hello)?;
    c.flush()?;
    let client = read_u32(c)?;
    if client & CLIENT_FIXED_NEWSTYLE == 0 || client & !(CLIENT_FIXED_NEWSTYLE | CLIENT_NO_ZEROES) != 0 {
        return Err(ProtocolError::ClientFlags(client));
    }
    loop {
        let magic = read_u64(c)?;
        if magic != IHAVEOPT {
            return Err(ProtocolError::Magic(magic));
        }
        let option = read_u32(c)?;
        let length = read_u32(c)?;
        if length > MAX_OPTION {
            return Err(ProtocolError::OptionTooLong { option, length });
        }
        let mut data = vec![0; length as usize];
        c.read_exact(&mut data)?;
        let (size, flags) = (export.size_bytes(), export.transmission_flags());
        match option {
            OPT_EXPORT_NAME => {
                if data != export.name.as_bytes() {
                    // The old-style option has no error reply: close.
                    return Ok(false);
                }
                c.write_all(&size.to_be_bytes())?;
                c.write_all(&flags.to_be_bytes())?;
                if client & CLIENT_NO_ZEROES == 0 {
                    c.write_all(&[0; 124])?;
                }
                c.flush()?;
                return Ok(true);
            }
            OPT_ABORT => {
                option_reply(c, option, REP_ACK, &[])?;
                c.flush()?;
                return Err(ProtocolError::Aborted);
            }
            OPT_LIST => {
                if data.is_empty() {
                    let mut d = (export.name.len() as u32).to_be_bytes().to_vec();
                    d.extend_from_slice(export.name.as_bytes());
                    option_reply(c, option, REP_SERVER, &d)?;
                    option_reply(c, option, REP_ACK, &[])?;
                } else {
                    option_reply(c, option, REP_ERR_INVALID, &[])?;
                }
            }
            OPT_INFO | OPT_GO => match go_name(&data) {
                None => option_reply(c, option, REP_ERR_INVALID, &[])?,
                // An empty name means the default export, which is ours.
                Some(name) if !name.is_empty() && name != export.name.as_bytes() => option_reply(c, option, REP_ERR_UNKNOWN, &[])?,
                Some(_) => {
                    let mut info = INFO_EXPORT.to_be_bytes().to_vec();
                    info.extend_from_slice(&size.to_be_bytes());
                    info.extend_from_slice(&flags.to_be_bytes());
                    option_reply(c, option, REP_INFO, &info)?;
                    let mut sizes = INFO_BLOCK_SIZE.to_be_bytes().to_vec();
                    for v in [1u32, 4096, MAX_PAYLOAD] {
                        sizes.extend_from_slice(&v.to_be_bytes());
                    }
                    option_reply(c, option, REP_INFO, &sizes)?;
                    option_reply(c, option, REP_ACK, &[])?;
                    if option == OPT_GO {
                        c.flush()?;
                        return Ok(true);
                    }
                }
            },
            _ => option_reply(c, option, REP_ERR_UNSUP, &[])?,
        }
        c.flush()?;
    }
}

fn simple_reply(c: &mut impl Write, error: u32, cookie: u64, data: &[u8]) -> io::Result<()> {
    let mut b = Vec::with_capacity(16 + data.len());
    b.extend_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    b.extend_from_slice(&error.to_be_bytes());
    b.extend_from_slice(&cookie.to_be_bytes());
    b.extend_from_slice(data);
    c.write_all(&b)
}

/// Reads `len` bytes at byte `offset` of the volume (whole blocks read, the part copied out).
fn volume_read<D: ZonedDevice + Send + 'static>(v: &mut Volume<D>, offset: u64, out: &mut [u8]) -> bool {
    let bs = v.block_bytes() as u64;
    let mut block = vec![0u8; bs as usize];
    let mut done = 0usize;
    while done < out.len() {
        let at = offset + done as u64;
        let (b, within) = (at / bs, (at % bs) as usize);
        if v.read(b, &mut block).is_err() {
            return false;
        }
        let n = (bs as usize - within).min(out.len() - done);
        out[done..done + n].copy_from_slice(&block[within..within + n]);
        done += n;
    }
    true
}

/// Writes `data` at byte `offset` (a partial block is read, changed and written whole).
fn volume_write<D: ZonedDevice + Send + 'static>(v: &mut Volume<D>, offset: u64, data: &[u8]) -> bool {
    let bs = v.block_bytes() as u64;
    let mut block = vec![0u8; bs as usize];
    let mut done = 0usize;
    while done < data.len() {
        let at = offset + done as u64;
        let (b, within) = (at / bs, (at % bs) as usize);
        let n = (bs as usize - within).min(data.len() - done);
        let ok = if n == bs as usize {
            v.write(b, &data[done..done + n]).is_ok()
        } else {
            v.read(b, &mut block).is_ok() && {
                block[within..within + n].copy_from_slice(&data[done..done + n]);
                v.write(b, &block).is_ok()
            }
        };
        if !ok {
            return false;
        }
        done += n;
    }
    true
}

/// Serves one client until it disconnects (`Ok`) or breaks the protocol (`Err`; only this
/// connection ends).
pub fn serve_client<D: ZonedDevice + Send + 'static>(c: &mut (impl Read + Write), export: &Export<D>) -> Result<(), ProtocolError> {
    if !handshake(c, export)? {
        return Ok(());
    }
    let size = export.size_bytes();
    let mut header = [0u8; 28];
    let mut payload = Vec::new();
    loop {
        match c.read_exact(&mut header) {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            r => r?,
        }
        let req = decode_request(&header)?;
        let started = std::time::Instant::now();
        let in_range = req.offset.checked_add(req.length as u64).is_some_and(|end| end <= size);
        let (kind, error, bytes) = match req.command {
            CMD_READ => {
                if req.length > MAX_PAYLOAD || !in_range {
                    simple_reply(c, EINVAL, req.cookie, &[])?;
                    (Kind::Read, EINVAL, 0)
                } else {
                    payload.resize(req.length as usize, 0);
                    let mut v = export.volume.lock().unwrap_or_else(|p| p.into_inner());
                    let ok = volume_read(&mut v, req.offset, &mut payload);
                    if ok {
                        export.log(Op::Read, req.offset, req.length as u64);
                    }
                    drop(v);
                    if ok {
                        simple_reply(c, 0, req.cookie, &payload)?;
                    } else {
                        simple_reply(c, EIO, req.cookie, &[])?;
                    }
                    (Kind::Read, if ok { 0 } else { EIO }, req.length as u64)
                }
            }
            CMD_WRITE => {
                if req.length > MAX_PAYLOAD {
                    return Err(ProtocolError::PayloadTooLong(req.length));
                }
                payload.resize(req.length as usize, 0);
                c.read_exact(&mut payload)?;
                let error = if !in_range {
                    ENOSPC
                } else {
                    let mut v = export.volume.lock().unwrap_or_else(|p| p.into_inner());
                    let ok = volume_write(&mut v, req.offset, &payload) && (req.flags & CMD_FLAG_FUA == 0 || v.flush().is_ok());
                    if ok {
                        export.log(Op::Write, req.offset, req.length as u64);
                        0
                    } else {
                        EIO
                    }
                };
                simple_reply(c, error, req.cookie, &[])?;
                (Kind::Write, error, req.length as u64)
            }
            CMD_FLUSH => {
                let ok = export.volume.lock().unwrap_or_else(|p| p.into_inner()).flush().is_ok();
                let error = if ok { 0 } else { EIO };
                simple_reply(c, error, req.cookie, &[])?;
                (Kind::Flush, error, 0)
            }
            CMD_DISC => return Ok(()),
            // Not advertised (trim, write zeroes, cache, block status, ...): refused, not fatal.
            _ => {
                simple_reply(c, EINVAL, req.cookie, &[])?;
                (Kind::Manage, EINVAL, 0)
            }
        };
        c.flush()?;
        let result = if error == 0 { bytes as i32 } else { -(error as i32) };
        export.counters.lock().unwrap_or_else(|p| p.into_inner()).record(kind, bytes, result, started.elapsed().as_nanos() as u64);
    }
}

/// Where the server listens.
#[derive(Clone, Debug)]
pub enum Listen {
    Unix(std::path::PathBuf),
    Tcp(std::net::SocketAddr),
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::Unix(p) => write!(f, "nbd+unix:///?socket={}", p.display()),
            Listen::Tcp(a) => write!(f, "nbd://{a}"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct NbdOptions {
    pub listen: Listen,
    pub stats_path: Option<std::path::PathBuf>,
    pub stats_interval: std::time::Duration,
    /// Log every read and write served as a binary trace here ([`crate::request_log`]).
    pub trace_out: Option<std::path::PathBuf>,
}

/// The counters now, with the volume's own.
pub fn snapshot<D: ZonedDevice + Send + 'static>(export: &Export<D>) -> crate::Snapshot {
    let v = export.volume.lock().unwrap_or_else(|p| p.into_inner());
    let mut s = export.counters.lock().unwrap_or_else(|p| p.into_inner()).snapshot(v.device().stats(), None);
    let f = v.ftl_stats();
    s.engine = Some(serde_json::json!({
        "volume_blocks": v.blocks(),
        "user_blocks": f.user_blocks,
        "gc_blocks": f.gc_blocks,
        "gc_count": f.gc_count,
        "ftl_waf": if f.user_blocks == 0 { None } else { Some((f.user_blocks + f.gc_blocks) as f64 / f.user_blocks as f64) },
        "journal_commits": v.commits(),
    }));
    s
}

enum Listener {
    Unix(std::os::unix::net::UnixListener),
    Tcp(std::net::TcpListener),
}

/// Serves `export` until SIGINT or SIGTERM, then commits the volume and returns the counters.
/// `ready` is called with the address once the server listens.
pub fn serve<D: ZonedDevice + Send + 'static>(export: Arc<Export<D>>, options: &NbdOptions, ready: impl FnOnce(&Listen)) -> io::Result<crate::Snapshot> {
    // Before the socket exists, so a log that cannot be created leaves nothing behind.
    if let Some(path) = &options.trace_out {
        let block_bytes = export.volume.lock().unwrap_or_else(|p| p.into_inner()).block_bytes();
        let log = RequestLog::create(path, block_bytes as u32, &format!("zonekit serve nbd {}", export.name)).map_err(io::Error::other)?;
        *export.log.lock().unwrap_or_else(|p| p.into_inner()) = Some(log);
    }
    let stop_signals = crate::signals::block_stop_signals();
    let listener = match &options.listen {
        Listen::Unix(path) => {
            if std::fs::symlink_metadata(path).is_ok_and(|m| !std::os::unix::fs::FileTypeExt::is_socket(&m.file_type())) {
                return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{}: exists and is not a socket", path.display())));
            }
            if std::fs::symlink_metadata(path).is_ok() {
                // A socket left by a server that died; a live one would answer.
                if std::os::unix::net::UnixStream::connect(path).is_ok() {
                    return Err(io::Error::new(io::ErrorKind::AddrInUse, format!("{}: another server is listening there", path.display())));
                }
                std::fs::remove_file(path)?;
            }
            Listener::Unix(std::os::unix::net::UnixListener::bind(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?)
        }
        Listen::Tcp(addr) => Listener::Tcp(std::net::TcpListener::bind(addr).map_err(|e| io::Error::new(e.kind(), format!("{addr}: {e}")))?),
    };
    match &listener {
        Listener::Unix(l) => l.set_nonblocking(true)?,
        Listener::Tcp(l) => l.set_nonblocking(true)?,
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    crate::signals::on_stop_signal(stop_signals, {
        let stop = stop.clone();
        move || stop.store(true, std::sync::atomic::Ordering::Relaxed)
    });
    if let Some(path) = options.stats_path.clone() {
        let (export, stop, interval) = (export.clone(), stop.clone(), options.stats_interval);
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(interval);
                if let Err(e) = snapshot(&export).write_atomically(&path) {
                    eprintln!("zonekit serve nbd: writing {}: {e}", path.display());
                }
            }
        });
    }
    ready(&options.listen);
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let accepted: io::Result<(Box<dyn ReadWrite>, String)> = match &listener {
            Listener::Unix(l) => l.accept().map(|(s, _)| (Box::new(s) as Box<dyn ReadWrite>, "unix client".to_string())),
            Listener::Tcp(l) => l.accept().map(|(s, a)| {
                let _ = s.set_nodelay(true);
                (Box::new(s) as Box<dyn ReadWrite>, a.to_string())
            }),
        };
        match accepted {
            Ok((mut stream, peer)) => {
                let export = export.clone();
                std::thread::spawn(move || {
                    if let Err(e) = stream.set_blocking().and_then(|_| serve_client(&mut stream, &export).map_err(|e| io::Error::other(e.to_string()))) {
                        eprintln!("zonekit serve nbd: {peer}: {e} (connection closed; other clients go on)");
                    }
                });
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(std::time::Duration::from_millis(20)),
            Err(e) => eprintln!("zonekit serve nbd: accept: {e}"),
        }
    }
    export.volume.lock().unwrap_or_else(|p| p.into_inner()).flush().map_err(|e| io::Error::other(e.to_string()))?;
    // Clients still connected may run on; the log ends here, under the volume's lock.
    let log = {
        let _v = export.volume.lock().unwrap_or_else(|p| p.into_inner());
        export.log.lock().unwrap_or_else(|p| p.into_inner()).take()
    };
    let mut s = snapshot(&export);
    let logged = log.map(RequestLog::finish).transpose();
    if let Ok(summary) = &logged {
        s.request_log = summary.clone();
    }
    if let Some(path) = &options.stats_path {
        s.write_atomically(path)?;
    }
    if let Listen::Unix(path) = &options.listen {
        let _ = std::fs::remove_file(path);
    }
    logged.map_err(io::Error::other)?;
    Ok(s)
}

/// A client stream of either kind.
trait ReadWrite: Read + Write + Send {
    fn set_blocking(&self) -> io::Result<()>;
}

impl ReadWrite for std::os::unix::net::UnixStream {
    fn set_blocking(&self) -> io::Result<()> {
        self.set_nonblocking(false)
    }
}

impl ReadWrite for std::net::TcpStream {
    fn set_blocking(&self) -> io::Result<()> {
        self.set_nonblocking(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_headers_decode_big_endian() {
        let mut b = [0u8; 28];
        b[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
        b[4..6].copy_from_slice(&1u16.to_be_bytes());
        b[6..8].copy_from_slice(&CMD_WRITE.to_be_bytes());
        b[8..16].copy_from_slice(&0xABCDu64.to_be_bytes());
        b[16..24].copy_from_slice(&8192u64.to_be_bytes());
        b[24..28].copy_from_slice(&4096u32.to_be_bytes());
        assert_eq!(decode_request(&b).unwrap(), RequestHeader { flags: 1, command: CMD_WRITE, cookie: 0xABCD, offset: 8192, length: 4096 });
        b[0] = 0;
        assert!(matches!(decode_request(&b), Err(ProtocolError::Magic(_))));
    }

    #[test]
    fn go_names_are_length_prefixed_with_info_requests_after() {
        let mut d = 3u32.to_be_bytes().to_vec();
        d.extend_from_slice(b"vol");
        d.extend_from_slice(&1u16.to_be_bytes());
        d.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        assert_eq!(go_name(&d), Some(&b"vol"[..]));
        assert_eq!(go_name(&d[..d.len() - 1]), None);
        assert_eq!(go_name(&[0, 0, 0, 9, 1]), None);
    }
}
