//! Running the `zonekit` binary from integration tests.

use std::path::Path;
use std::process::{Command, Output};

pub fn zonekit(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zonekit")).args(args).current_dir(cwd).output().expect("run zonekit")
}

/// Runs `zonekit args` in `cwd`, expects success, returns standard output.
pub fn ok(args: &[&str], cwd: &Path) -> String {
    let out = zonekit(args, cwd);
    assert!(out.status.success(), "zonekit {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `zonekit args`, expects it to fail (any status) without a panic, returns standard error.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn failed(args: &[&str], cwd: &Path) -> String {
    let out = zonekit(args, cwd);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "zonekit {args:?} should have failed");
    assert!(!stderr.contains("panicked"), "zonekit {args:?} panicked: {stderr}");
    stderr
}

/// Runs `zonekit args`, expects exit status `code` and no panic, returns standard error.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn refused(args: &[&str], cwd: &Path, code: i32) -> String {
    let out = zonekit(args, cwd);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "zonekit {args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "zonekit {args:?} panicked: {stderr}");
    stderr
}

/// A temporary directory where `fsync` costs nothing (tmpfs at /dev/shm when the machine has
/// one), for tests that kill processes, not machines: a durable tree syncs every operation,
/// ~5 ms each on a disk.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn sync_free_tempdir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::tempdir_in(shm) {
            return dir;
        }
    }
    tempfile::tempdir().unwrap()
}

/// `zonekit args` in `cwd` under an address-space limit of `kib` KiB (`ulimit -v`): a command
/// that held a whole input in memory, or sized a table past the machine, fails here instead of
/// taking the machine's memory.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn limited(kib: u64, args: &[&str], cwd: &Path) -> Command {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(format!("ulimit -v {kib}; exec \"$0\" \"$@\"")).arg(env!("CARGO_BIN_EXE_zonekit")).args(args).current_dir(cwd);
    cmd
}

/// The check resumable `results.csv` rows end with: FNV-1a, 64 bits, as 16 hex digits
/// (`zonekit_lab`'s results fingerprint), written out here so a test can seal a row it made.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn fnv1a(text: &str) -> String {
    let h = text.bytes().fold(0xCBF2_9CE4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01B3));
    format!("{h:016x}")
}

/// xorshift64*, seeded from `ZK_SEED` or `default`; the seed is returned to be printed on
/// failure.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn seeded_rng(default: u64) -> (u64, impl FnMut() -> u64) {
    let seed = std::env::var("ZK_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(default);
    let mut state = seed | 1;
    (seed, move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    })
}

/// Runs `zonekit args` in `cwd` and SIGKILLs it after `micros` µs (if it still runs).
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn killed_after(args: &[&str], cwd: &Path, micros: u64) {
    let mut child =
        Command::new(env!("CARGO_BIN_EXE_zonekit")).args(args).current_dir(cwd).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_micros(micros));
    let _ = child.kill();
    child.wait().unwrap();
}
