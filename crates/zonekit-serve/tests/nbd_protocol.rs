//! The NBD server against a hand-written client: the fixed-newstyle handshake with
//! NBD_OPT_GO, reads and writes at any byte offset, requests outside the volume refused with
//! the connection kept, a malformed request closing only its own connection, and the request
//! log (`--trace-out`) holding what was served.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

mod common;

use zonekit_device::MemDevice;
use zonekit_serve::nbd::{serve_client, Export};
use zonekit_serve::request_log::RequestLog;
use zonekit_serve::volume::{Volume, VolumeSpec};
use zonekit_trace::binary::BinaryTrace;
use zonekit_trace::record::Op;

fn export() -> Arc<Export<MemDevice>> {
    let vol = Volume::open(common::small_device(32, Some(8)), &VolumeSpec::default()).unwrap();
    Export::new("vol", vol)
}

/// Starts serving one client; returns the client's end and the server thread.
fn connect(export: &Arc<Export<MemDevice>>) -> (UnixStream, std::thread::JoinHandle<Result<(), String>>) {
    let (client, mut server) = UnixStream::pair().unwrap();
    let export = export.clone();
    let t = std::thread::spawn(move || serve_client(&mut server, &export).map_err(|e| e.to_string()));
    (client, t)
}

fn read_n(c: &mut UnixStream, n: usize) -> Vec<u8> {
    let mut b = vec![0; n];
    c.read_exact(&mut b).unwrap();
    b
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().unwrap())
}

fn option(c: &mut UnixStream, opt: u32, data: &[u8]) {
    let mut m = 0x4948_4156_454f_5054u64.to_be_bytes().to_vec();
    m.extend_from_slice(&opt.to_be_bytes());
    m.extend_from_slice(&(data.len() as u32).to_be_bytes());
    m.extend_from_slice(data);
    c.write_all(&m).unwrap();
}

/// Reads one option reply: (reply type, data).
fn option_reply(c: &mut UnixStream) -> (u32, Vec<u8>) {
    let h = read_n(c, 20);
    assert_eq!(&h[..8], &0x0003_e889_0455_65a9u64.to_be_bytes());
    let len = be32(&h[16..]) as usize;
    (be32(&h[12..]), read_n(c, len))
}

/// Handshake with NBD_OPT_GO; returns the export size.
fn go(c: &mut UnixStream, name: &str) -> Result<u64, u32> {
    let hello = read_n(c, 18);
    assert_eq!(&hello[..8], b"NBDMAGIC");
    c.write_all(&3u32.to_be_bytes()).unwrap();
    // An option we do not serve first: refused, the haggling goes on.
    option(c, 8, &[]);
    assert_eq!(option_reply(c).0, (1 << 31) + 1);
    let mut d = (name.len() as u32).to_be_bytes().to_vec();
    d.extend_from_slice(name.as_bytes());
    d.extend_from_slice(&0u16.to_be_bytes());
    option(c, 7, &d);
    let mut size = 0;
    loop {
        let (kind, data) = option_reply(c);
        match kind {
            3 if data[..2] == [0, 0] => size = u64::from_be_bytes(data[2..10].try_into().unwrap()),
            3 => {}
            1 => return Ok(size),
            e => return Err(e),
        }
    }
}

/// Sends a request and reads the simple reply: (error, data of a read).
fn request(c: &mut UnixStream, command: u16, cookie: u64, offset: u64, length: u32, payload: &[u8]) -> (u32, Vec<u8>) {
    let mut m = 0x2560_9513u32.to_be_bytes().to_vec();
    m.extend_from_slice(&0u16.to_be_bytes());
    m.extend_from_slice(&command.to_be_bytes());
    m.extend_from_slice(&cookie.to_be_bytes());
    m.extend_from_slice(&offset.to_be_bytes());
    m.extend_from_slice(&length.to_be_bytes());
    m.extend_from_slice(payload);
    c.write_all(&m).unwrap();
    let r = read_n(c, 16);
    assert_eq!(be32(&r), 0x6744_6698);
    assert_eq!(u64::from_be_bytes(r[8..16].try_into().unwrap()), cookie);
    let error = be32(&r[4..]);
    let data = if command == 0 && error == 0 { read_n(c, length as usize) } else { Vec::new() };
    (error, data)
}

#[test]
fn reads_and_writes_at_any_offset_through_go() {
    let ex = export();
    let (mut c, t) = connect(&ex);
    let size = go(&mut c, "vol").unwrap();
    assert!(size > 0 && size % 4096 == 0);
    let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(request(&mut c, 1, 1, 4097, data.len() as u32, &data).0, 0);
    assert_eq!(request(&mut c, 3, 2, 0, 0, &[]).0, 0);
    let (e, back) = request(&mut c, 0, 3, 4097, data.len() as u32, &[]);
    assert_eq!((e, back == data), (0, true));
    // Around the write: untouched zeros.
    assert_eq!(request(&mut c, 0, 4, 4000, 97, &[]).1, vec![0; 97]);
    // Outside the volume: EINVAL for a read, ENOSPC for a write (its payload consumed), and
    // the connection goes on.
    assert_eq!(request(&mut c, 0, 5, size - 10, 20, &[]).0, 22);
    assert_eq!(request(&mut c, 1, 6, size, 4096, &[7; 4096]).0, 28);
    assert_eq!(request(&mut c, 6, 7, 0, 4096, &[]).0, 22, "write-zeroes is not advertised");
    assert_eq!(request(&mut c, 0, 8, 4097, 16, &[]).1, data[..16].to_vec());
    request_disconnect(&mut c);
    assert_eq!(t.join().unwrap(), Ok(()));
    assert_eq!(go(&mut connect(&ex).0, "other"), Err((1 << 31) + 6), "an unknown export name");
}

fn request_disconnect(c: &mut UnixStream) {
    let mut m = 0x2560_9513u32.to_be_bytes().to_vec();
    m.extend_from_slice(&[0, 0, 0, 2]);
    m.extend_from_slice(&[0; 20]);
    c.write_all(&m).unwrap();
}

#[test]
fn a_malformed_request_closes_only_its_connection() {
    let ex = export();
    let (mut good, good_t) = connect(&ex);
    go(&mut good, "").unwrap();
    let (mut bad, bad_t) = connect(&ex);
    go(&mut bad, "vol").unwrap();
    bad.write_all(&[0xde; 28]).unwrap();
    let err = bad_t.join().unwrap().unwrap_err();
    assert!(err.contains("magic"), "{err}");
    // A write larger than the server takes also ends that connection, not the server.
    let (mut big, big_t) = connect(&ex);
    go(&mut big, "vol").unwrap();
    let mut m = 0x2560_9513u32.to_be_bytes().to_vec();
    m.extend_from_slice(&[0, 0, 0, 1]);
    m.extend_from_slice(&[0; 16]);
    m.extend_from_slice(&u32::MAX.to_be_bytes());
    big.write_all(&m).unwrap();
    assert!(big_t.join().unwrap().unwrap_err().contains("write of"));
    assert_eq!(request(&mut good, 1, 9, 0, 4096, &[5; 4096]).0, 0);
    assert_eq!(request(&mut good, 0, 10, 0, 4096, &[]).1, vec![5; 4096]);
    request_disconnect(&mut good);
    assert_eq!(good_t.join().unwrap(), Ok(()));
}

#[test]
fn the_request_log_holds_every_block_served_and_nothing_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("served.zkt");
    let ex = export();
    *ex.log.lock().unwrap() = Some(RequestLog::create(&path, 4096, "test").unwrap());
    let (mut c, t) = connect(&ex);
    let size = go(&mut c, "vol").unwrap();
    // Blocks 1..=3 written (a partial block at each end), block 0 read, then refusals.
    assert_eq!(request(&mut c, 1, 1, 4097, 10_000, &[5; 10_000]).0, 0);
    assert_eq!(request(&mut c, 3, 2, 0, 0, &[]).0, 0);
    assert_eq!(request(&mut c, 0, 3, 0, 4096, &[]).0, 0);
    assert_eq!(request(&mut c, 0, 4, size - 10, 20, &[]).0, 22);
    assert_eq!(request(&mut c, 1, 5, size, 4096, &[7; 4096]).0, 28);
    request_disconnect(&mut c);
    assert_eq!(t.join().unwrap(), Ok(()));
    let summary = ex.log.lock().unwrap().take().unwrap().finish().unwrap();
    assert_eq!((summary.requests, summary.records), (2, 4));
    let trace = BinaryTrace::open(&path).unwrap();
    let blocks: Vec<(u64, Op, bool)> = trace.iter().map(|r| (r.io.block, r.io.op, r.io.starts_request)).collect();
    assert_eq!(blocks, vec![(1, Op::Write, true), (2, Op::Write, false), (3, Op::Write, false), (0, Op::Read, true)]);
}
