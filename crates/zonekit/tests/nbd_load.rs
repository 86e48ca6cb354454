//! `zonekit serve nbd` under load: 16 clients write, read and flush random blocks of one
//! volume on an image while the server is killed (SIGKILL) and restarted under them; they
//! reconnect and go on. Some clients drop their connection in the middle of a request.
//!
//! Every block written carries a header (block number, writer, sequence, checksum over the
//! whole block), so a read tells a torn or misplaced block from a whole one. The model keeps,
//! per block, what it may hold: its value at the start of the server's life (read back after
//! each restart) and every write sent since, minus writes a later one certainly replaced (the
//! later one was sent after the earlier was acknowledged). A read while the server lives must
//! return one of those not replaced before the read was sent; after a kill, a block may hold
//! only what no durable write (acknowledged before some acknowledged flush was sent)
//! certainly replaced. So every flushed write is readable after a restart, and nothing is
//! ever read that was not written whole.
//!
//! Seeded: `ZONEKIT_NBD_LOAD_SEED` replays a run (a failure prints its seed),
//! `ZONEKIT_NBD_LOAD_SECONDS` makes it longer (default 12 s, 4 kills).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod common;

const BLOCK_BYTES: usize = 4096;
const CLIENTS: usize = 16;
const HEADER_MAGIC: u32 = 0x5a4b_4c44;

/// A block's value: `None` for a block never written (zeros), else (writer, sequence).
type Value = Option<(u32, u64)>;

/// xorshift64*: the test's own generator, so a seed means the same run everywhere.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

/// The block `writer` writes as its `seq`-th write to `block`: header, then filler derived
/// from all three, the checksum over everything but itself.
fn block_bytes(block: u64, writer: u32, seq: u64) -> Vec<u8> {
    let mut b = vec![0u8; BLOCK_BYTES];
    b[0..4].copy_from_slice(&HEADER_MAGIC.to_le_bytes());
    b[4..12].copy_from_slice(&block.to_le_bytes());
    b[12..16].copy_from_slice(&writer.to_le_bytes());
    b[16..24].copy_from_slice(&seq.to_le_bytes());
    let mut fill = Rng::new(block ^ ((writer as u64) << 40) ^ (seq << 8));
    for chunk in b[32..].chunks_mut(8) {
        chunk.copy_from_slice(&fill.next().to_le_bytes());
    }
    let sum = fnv64(&b[..24]) ^ fnv64(&b[32..]);
    b[24..32].copy_from_slice(&sum.to_le_bytes());
    b
}

/// What a block read holds, or why it is no block anyone wrote.
fn decode(block: u64, b: &[u8]) -> Result<Value, String> {
    if b.iter().all(|&x| x == 0) {
        return Ok(None);
    }
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    if u32::from_le_bytes(b[0..4].try_into().unwrap()) != HEADER_MAGIC || fnv64(&b[..24]) ^ fnv64(&b[32..]) != u64_at(24) {
        return Err(format!("block {block}: torn or damaged (header or checksum wrong)"));
    }
    if u64_at(4) != block {
        return Err(format!("block {block}: holds block {}'s data", u64_at(4)));
    }
    Ok(Some((u32::from_le_bytes(b[12..16].try_into().unwrap()), u64_at(16))))
}

struct WriteRec {
    value: (u32, u64),
    sent: u64,
    acked: Option<u64>,
}

/// Everything the clients did since the server (re)started, on one logical clock.
struct Model {
    /// Per block: what it may hold at the start of this server's life.
    base: Vec<Vec<Value>>,
    /// Per block: the writes sent since.
    writes: Vec<Vec<WriteRec>>,
    /// Acknowledged flushes: (sent, acknowledged).
    flushes: Vec<(u64, u64)>,
}

impl Model {
    /// What `block` may hold when read by a request sent at `sent` (and answered before
    /// anything later): not replaced by a write acknowledged before then.
    fn readable(&self, block: usize, sent: u64, answered: u64) -> Vec<Value> {
        let ws = &self.writes[block];
        let done_before = |t: Option<u64>| t.is_some_and(|a| a < sent);
        let mut out: Vec<Value> = Vec::new();
        if !ws.iter().any(|w| done_before(w.acked)) {
            out.extend(&self.base[block]);
        }
        for w in ws.iter().filter(|w| w.sent < answered) {
            let replaced = ws.iter().any(|l| w.acked.is_some_and(|a| a < l.sent) && done_before(l.acked));
            if !replaced {
                out.push(Some(w.value));
            }
        }
        out
    }

    /// What `block` may hold after a kill: only durable writes (acknowledged before an
    /// acknowledged flush was sent) replace what came before them.
    fn after_crash(&self, block: usize) -> Vec<Value> {
        let durable = |w: &WriteRec| w.acked.is_some_and(|a| self.flushes.iter().any(|&(s, _)| a < s));
        let ws = &self.writes[block];
        let mut out: Vec<Value> = Vec::new();
        if !ws.iter().any(durable) {
            out.extend(&self.base[block]);
        }
        for w in ws {
            if !ws.iter().any(|l| durable(l) && w.acked.is_some_and(|a| a < l.sent)) {
                out.push(Some(w.value));
            }
        }
        out
    }
}

struct Shared {
    clock: AtomicU64,
    model: Mutex<Model>,
    failures: Mutex<Vec<String>>,
    /// Bumped at each restart; clients reconnect when they see it change.
    generation: AtomicU64,
    stop: AtomicBool,
    /// Clients hold off while the main thread checks the volume after a restart.
    paused: AtomicBool,
    socket: PathBuf,
    blocks: u64,
    /// Requests acknowledged, for the summary.
    writes: AtomicU64,
    reads: AtomicU64,
    flushes: AtomicU64,
}

impl Shared {
    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }
    fn fail(&self, what: String) {
        self.failures.lock().unwrap().push(what);
    }
}

/// The client side of NBD: handshake with NBD_OPT_GO, simple replies.
struct Client {
    s: UnixStream,
    size_bytes: u64,
}

impl Client {
    fn connect(socket: &Path) -> std::io::Result<Client> {
        let mut s = UnixStream::connect(socket)?;
        s.set_read_timeout(Some(Duration::from_secs(20)))?;
        let mut hello = [0u8; 18];
        s.read_exact(&mut hello)?;
        assert_eq!(&hello[..8], b"NBDMAGIC");
        s.write_all(&3u32.to_be_bytes())?;
        let mut opt = 0x4948_4156_454f_5054u64.to_be_bytes().to_vec();
        opt.extend_from_slice(&7u32.to_be_bytes());
        opt.extend_from_slice(&6u32.to_be_bytes());
        opt.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        s.write_all(&opt)?;
        let mut size_bytes = 0;
        loop {
            let mut h = [0u8; 20];
            s.read_exact(&mut h)?;
            let kind = u32::from_be_bytes(h[12..16].try_into().unwrap());
            let mut data = vec![0; u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize];
            s.read_exact(&mut data)?;
            match kind {
                1 => return Ok(Client { s, size_bytes }),
                3 if data[..2] == [0, 0] => size_bytes = u64::from_be_bytes(data[2..10].try_into().unwrap()),
                3 => {}
                e => return Err(std::io::Error::other(format!("option reply {e:#x}"))),
            }
        }
    }

    fn send(&mut self, command: u16, cookie: u64, offset: u64, length: u32, payload: &[u8]) -> std::io::Result<()> {
        let mut m = 0x2560_9513u32.to_be_bytes().to_vec();
        m.extend_from_slice(&0u16.to_be_bytes());
        m.extend_from_slice(&command.to_be_bytes());
        m.extend_from_slice(&cookie.to_be_bytes());
        m.extend_from_slice(&offset.to_be_bytes());
        m.extend_from_slice(&length.to_be_bytes());
        m.extend_from_slice(payload);
        self.s.write_all(&m)
    }

    /// The reply to `cookie`: its error and, for a read, its data.
    fn reply(&mut self, cookie: u64, read_len: usize) -> std::io::Result<(u32, Vec<u8>)> {
        let mut r = [0u8; 16];
        self.s.read_exact(&mut r)?;
        assert_eq!(u32::from_be_bytes(r[..4].try_into().unwrap()), 0x6744_6698, "reply magic");
        assert_eq!(u64::from_be_bytes(r[8..16].try_into().unwrap()), cookie, "reply cookie");
        let error = u32::from_be_bytes(r[4..8].try_into().unwrap());
        let mut data = vec![0; if error == 0 { read_len } else { 0 }];
        self.s.read_exact(&mut data)?;
        Ok((error, data))
    }
}

/// One client: random writes of 1–4 blocks, reads of 1–4 blocks and flushes, until stopped;
/// reconnects after each kill of the server.
fn client(sh: &Shared, writer: u32, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut seq = 0u64;
    let mut cookie = 0u64;
    while !sh.stop.load(Ordering::SeqCst) {
        while sh.paused.load(Ordering::SeqCst) && !sh.stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let generation = sh.generation.load(Ordering::SeqCst);
        let Ok(mut c) = Client::connect(&sh.socket) else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        // Requests until the connection breaks (the server was killed) or this client drops it.
        let broke = (|| -> std::io::Result<bool> {
            while !sh.stop.load(Ordering::SeqCst) && generation == sh.generation.load(Ordering::SeqCst) {
                cookie += 1;
                let n = 1 + rng.below(4);
                let first = rng.below(sh.blocks - n + 1);
                match rng.below(100) {
                    0..=54 => {
                        let mut payload = Vec::with_capacity(n as usize * BLOCK_BYTES);
                        let mut ids = Vec::new();
                        {
                            let mut m = sh.model.lock().unwrap();
                            let sent = sh.tick();
                            for b in first..first + n {
                                seq += 1;
                                payload.extend(block_bytes(b, writer, seq));
                                m.writes[b as usize].push(WriteRec { value: (writer, seq), sent, acked: None });
                                ids.push((b as usize, m.writes[b as usize].len() - 1));
                            }
                        }
                        // Now and then a client goes away mid-request: half a payload, or the
                        // whole request without waiting for its reply.
                        let dropped = rng.below(200);
                        if dropped == 0 {
                            c.send(1, cookie, first * BLOCK_BYTES as u64, payload.len() as u32, &payload[..payload.len() / 2 + 7])?;
                            return Ok(false);
                        }
                        c.send(1, cookie, first * BLOCK_BYTES as u64, payload.len() as u32, &payload)?;
                        if dropped == 1 {
                            return Ok(false);
                        }
                        let (error, _) = c.reply(cookie, 0)?;
                        if error != 0 {
                            sh.fail(format!("write of blocks {first}..{}: error {error}", first + n));
                        }
                        sh.writes.fetch_add(1, Ordering::Relaxed);
                        let mut m = sh.model.lock().unwrap();
                        let acked = sh.tick();
                        for (b, i) in ids {
                            m.writes[b][i].acked = Some(acked);
                        }
                    }
                    55..=89 => {
                        let sent = sh.tick();
                        c.send(0, cookie, first * BLOCK_BYTES as u64, n as u32 * BLOCK_BYTES as u32, &[])?;
                        let (error, data) = c.reply(cookie, n as usize * BLOCK_BYTES)?;
                        sh.reads.fetch_add(1, Ordering::Relaxed);
                        let m = sh.model.lock().unwrap();
                        let answered = sh.tick();
                        if error != 0 {
                            sh.fail(format!("read of blocks {first}..{}: error {error}", first + n));
                            continue;
                        }
                        for (i, b) in (first..first + n).enumerate() {
                            match decode(b, &data[i * BLOCK_BYTES..(i + 1) * BLOCK_BYTES]) {
                                Err(e) => sh.fail(format!("read by client {writer}: {e}")),
                                Ok(v) if !m.readable(b as usize, sent, answered).contains(&v) => {
                                    sh.fail(format!("read by client {writer}: block {b} holds {v:?}, which it may not hold now"))
                                }
                                Ok(_) => {}
                            }
                        }
                    }
                    _ => {
                        let sent = sh.tick();
                        c.send(3, cookie, 0, 0, &[])?;
                        let (error, _) = c.reply(cookie, 0)?;
                        if error != 0 {
                            sh.fail(format!("flush: error {error}"));
                        }
                        sh.flushes.fetch_add(1, Ordering::Relaxed);
                        let mut m = sh.model.lock().unwrap();
                        let acked = sh.tick();
                        m.flushes.push((sent, acked));
                    }
                }
            }
            Ok(true)
        })();
        if let Ok(true) = broke {
            // A polite end of this server's life: disconnect.
            let _ = c.send(2, 0, 0, 0, &[]);
        }
        if broke.is_err() {
            // The server died under this client: wait for the next one.
            while generation == sh.generation.load(Ordering::SeqCst) && !sh.stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

/// The server and a thread that collects what it prints (its summary at exit).
fn start_server(image: &Path, socket: &Path) -> (Child, std::thread::JoinHandle<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zonekit"))
        .args(["serve", "nbd"])
        .arg(image)
        .arg("--socket")
        .arg(socket)
        // Room for GC beside the volume, which the clients' writes keep busy.
        .args(["--utilization", "0.5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start zonekit serve nbd");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.contains("ready"), "zonekit serve nbd did not start: {line:?}");
    // Drained to the end: the summary it prints at exit must not meet a closed pipe.
    let printed = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = out.read_to_string(&mut text);
        text
    });
    (child, printed)
}

/// Reads every block of the volume and checks it against `allowed`; returns what it read.
fn verify_all(sh: &Shared, allowed: impl Fn(usize) -> Vec<Value>, when: &str) -> Vec<Value> {
    let mut c = Client::connect(&sh.socket).expect("connect after restart");
    let mut out = Vec::with_capacity(sh.blocks as usize);
    let chunk = 64u64;
    let mut first = 0;
    while first < sh.blocks {
        let n = chunk.min(sh.blocks - first);
        c.send(0, first, first * BLOCK_BYTES as u64, (n as usize * BLOCK_BYTES) as u32, &[]).unwrap();
        let (error, data) = c.reply(first, n as usize * BLOCK_BYTES).unwrap();
        assert_eq!(error, 0, "{when}: reading blocks {first}..{}", first + n);
        for (i, b) in (first..first + n).enumerate() {
            let v = match decode(b, &data[i * BLOCK_BYTES..(i + 1) * BLOCK_BYTES]) {
                Ok(v) => v,
                Err(e) => {
                    sh.fail(format!("{when}: {e}"));
                    None
                }
            };
            let may = allowed(b as usize);
            if !may.contains(&v) {
                sh.fail(format!("{when}: block {b} holds {v:?}; it may hold only {may:?}"));
            }
            out.push(v);
        }
        first += n;
    }
    let _ = c.send(2, 0, 0, 0, &[]);
    out
}

#[test]
fn sixteen_clients_through_kills_lose_no_flushed_write_and_tear_no_block() {
    let seed: u64 = std::env::var("ZONEKIT_NBD_LOAD_SEED")
        .ok()
        .map(|s| s.parse().expect("ZONEKIT_NBD_LOAD_SEED: a number"))
        .unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 % 1_000_000);
    let seconds: u64 = std::env::var("ZONEKIT_NBD_LOAD_SECONDS").ok().map(|s| s.parse().expect("ZONEKIT_NBD_LOAD_SECONDS: a number")).unwrap_or(12);
    eprintln!("nbd load: seed {seed} (ZONEKIT_NBD_LOAD_SEED={seed} replays it), {seconds} s");
    let dir = common::sync_free_tempdir();
    let image = dir.path().join("vol.zk");
    let socket = dir.path().join("nbd.sock");
    // A small volume, so that the clients' writes keep GC busy under the kills.
    common::ok(&["device", "create", image.to_str().unwrap(), "--preset", "tiny", "--zones", "48", "--zone-size-mib", "1"], dir.path());
    let (mut server, _) = start_server(&image, &socket);
    let blocks = Client::connect(&socket).unwrap().size_bytes / BLOCK_BYTES as u64;
    let sh = Arc::new(Shared {
        clock: AtomicU64::new(1),
        model: Mutex::new(Model { base: vec![vec![None]; blocks as usize], writes: (0..blocks).map(|_| Vec::new()).collect(), flushes: Vec::new() }),
        failures: Mutex::new(Vec::new()),
        generation: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        paused: AtomicBool::new(false),
        socket: socket.clone(),
        blocks,
        writes: AtomicU64::new(0),
        reads: AtomicU64::new(0),
        flushes: AtomicU64::new(0),
    });
    let threads: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let sh = sh.clone();
            std::thread::spawn(move || client(&sh, i as u32, seed ^ ((i as u64 + 1) * 0x1000_0001)))
        })
        .collect();
    let mut rng = Rng::new(seed);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut kills = 0;
    let mut last_printed = std::thread::spawn(String::new);
    while Instant::now() < deadline && sh.failures.lock().unwrap().is_empty() {
        std::thread::sleep(Duration::from_millis(1000 + rng.below(3000)));
        // SIGKILL mid-run: no flush at exit, no chance to finish a request.
        server.kill().unwrap();
        server.wait().unwrap();
        kills += 1;
        sh.paused.store(true, Ordering::SeqCst);
        sh.generation.fetch_add(1, Ordering::SeqCst);
        let (restarted, printed) = start_server(&image, &socket);
        server = restarted;
        last_printed = printed;
        let read = {
            let m = sh.model.lock().unwrap();
            verify_all(&sh, |b| m.after_crash(b), &format!("after kill {kills}"))
        };
        let mut m = sh.model.lock().unwrap();
        m.base = read.into_iter().map(|v| vec![v]).collect();
        m.writes.iter_mut().for_each(Vec::clear);
        m.flushes.clear();
        drop(m);
        sh.paused.store(false, Ordering::SeqCst);
    }
    sh.stop.store(true, Ordering::SeqCst);
    for t in threads {
        t.join().unwrap();
    }
    // Stopped cleanly (SIGTERM flushes): everything written is readable, the last value of
    // each block among those not replaced.
    let stats = {
        let m = sh.model.lock().unwrap();
        verify_all(&sh, |b| m.readable(b, u64::MAX, u64::MAX), "at the end")
    };
    let written = stats.iter().filter(|v| v.is_some()).count();
    let term = Command::new("kill").args(["-TERM", &server.id().to_string()]).status().unwrap();
    assert!(term.success());
    let status = server.wait().unwrap();
    let summary = last_printed.join().unwrap();
    let failures = sh.failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "seed {seed} (ZONEKIT_NBD_LOAD_SEED={seed} replays it): {} failures:\n{}",
        failures.len(),
        failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
    assert!(status.success(), "the server's exit on SIGTERM: {status}");
    assert!(kills >= 2 && written > blocks as usize / 2, "the run did too little to mean anything: {kills} kills, {written} of {blocks} blocks written");
    let ops = |c: &AtomicU64| c.load(Ordering::SeqCst);
    eprintln!(
        "nbd load: {kills} kills; {} writes, {} reads, {} flushes acknowledged; {written} of {blocks} blocks written; no failure\nthe last server's summary:\n{summary}",
        ops(&sh.writes),
        ops(&sh.reads),
        ops(&sh.flushes)
    );
}
