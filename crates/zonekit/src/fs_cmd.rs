//! `zonekit fs ...`: the zoned file system's tool, on emulated images and /dev zoned devices.

use std::fs::File;
use std::io::{Seek, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use zonekit_device::ZonedDevice;
use zonekit_zfs::fs::{FsConfig, Zfs};

use crate::error::Usage;

#[derive(Subcommand)]
pub enum FsCommand {
    /// Create an empty file system (erases the device; over an existing one only with --force).
    Mkfs(MkfsArgs),
    /// List files: name, size, lifetime hint, extents.
    Ls(DevArg),
    /// Live, garbage and free space per zone and overall, and space amplification.
    Df(DevArg),
    /// Check every extent and the zone accounting; exit status 1 if anything is wrong.
    Fsck(DevArg),
    /// Print the file table with every extent.
    Dump(DevArg),
    /// Copy a host file (or standard input) into the file system, all or nothing.
    Put(PutArgs),
    /// Write a file's content to standard output (in 1 MiB pieces, each verified first).
    Cat(CatArgs),
    /// Delete a file.
    Rm(CatArgs),
    /// Rename a file atomically, replacing TO if it exists.
    Mv(MvArgs),
}

#[derive(Args)]
pub struct MkfsArgs {
    /// Emulated device image or /dev zoned block device.
    device: PathBuf,
    /// Erase an existing zonekit file system.
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
pub struct MvArgs {
    device: PathBuf,
    from: String,
    to: String,
}

#[derive(Args)]
pub struct DevArg {
    /// Emulated device image or /dev zoned block device.
    device: PathBuf,
}

#[derive(Args)]
pub struct PutArgs {
    device: PathBuf,
    /// Host file to copy, or - for standard input. A regular file that cannot fit is refused
    /// before anything is written; a pipe, a character device or standard input is copied in
    /// 1 MiB pieces until it ends, and if space runs out first the put is undone.
    source: PathBuf,
    /// Name in the file system (default: the source's file name; required with -).
    #[arg(long)]
    name: Option<String>,
    /// Write-lifetime hint (RocksDB's values: 0 not set, 1 none, 2 short, 3 medium, 4 long, 5 extreme).
    #[arg(long, default_value_t = 0)]
    lifetime: u8,
}

#[derive(Args)]
pub struct CatArgs {
    device: PathBuf,
    name: String,
}

fn mount(path: &Path) -> Result<Zfs<Box<dyn ZonedDevice + Send>>> {
    let dev = crate::open::open_read_write(path)?.device;
    Zfs::mount(dev, FsConfig::default()).with_context(|| format!("mounting {}", path.display()))
}

/// For the commands that only look: recovery stays in memory, the device is never written.
fn mount_read_only(path: &Path) -> Result<Zfs<Box<dyn ZonedDevice + Send>>> {
    // Shared lock: readers run beside each other, never beside a writer.
    let dev = crate::open::open_read_only(path)?.device;
    Zfs::mount_read_only(dev, FsConfig::default()).with_context(|| format!("mounting {} read-only", path.display()))
}

/// What `fs cat` reads and writes at a time.
const CAT_CHUNK_BYTES: u64 = 1 << 20;

/// Opens a put's source (`-`: standard input) and tells its size when it is a regular file;
/// a directory is refused. Nothing is read.
fn open_source(path: &Path) -> Result<(File, Option<u64>)> {
    let mut file = if path == Path::new("-") {
        // A duplicate of descriptor 0: read unbuffered, and a regular file redirected to
        // standard input is sized like any other.
        File::from(std::io::stdin().as_fd().try_clone_to_owned().context("standard input")?)
    } else {
        File::open(path).with_context(|| format!("opening {}", path.display()))?
    };
    let meta = file.metadata().with_context(|| format!("{}", path.display()))?;
    if meta.is_dir() {
        anyhow::bail!("{} is a directory", path.display());
    }
    if !meta.is_file() {
        return Ok((file, None));
    }
    // Standard input may be a file read part-way already.
    let at = file.stream_position().with_context(|| format!("{}", path.display()))?;
    Ok((file, Some(meta.len().saturating_sub(at))))
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1 << 20) as f64)
}

pub fn run(cmd: FsCommand) -> Result<ExitCode> {
    match cmd {
        FsCommand::Mkfs(a) => {
            let dev = crate::open::open_read_write(&a.device)?.device;
            let mut dev = dev;
            if !a.force && Zfs::is_formatted(&mut dev)? {
                anyhow::bail!("{} already holds a zonekit file system: mkfs would erase it (add --force to erase it)", a.device.display());
            }
            let fs = Zfs::mkfs(dev, FsConfig::default()).with_context(|| format!("mkfs on {}", a.device.display()))?;
            let s = fs.space();
            println!("created a zonekit file system on {}: {} data zones, {} MiB", a.device.display(), fs.zones().len(), mib(s.capacity_bytes));
        }
        FsCommand::Ls(a) => {
            let fs = mount_read_only(&a.device)?;
            let rows: Vec<Vec<String>> =
                fs.table().files().map(|f| vec![f.name.clone(), f.size_bytes().to_string(), f.lifetime.to_string(), f.extents.len().to_string()]).collect();
            print!("{}", zonekit_report::fitted_table(&["name", "bytes", "lifetime", "extents"], &rows, zonekit_report::TERMINAL_COLUMNS));
        }
        FsCommand::Df(a) => {
            let fs = mount_read_only(&a.device)?;
            let cap = fs.space().capacity_bytes / fs.zones().len().max(1) as u64;
            let block = fs.device().geometry().block_size_bytes as u64;
            let rows: Vec<Vec<String>> = fs
                .zones()
                .iter()
                .filter(|(_, u)| u.written_blocks > 0)
                .map(|(z, u)| {
                    let written = u.written_blocks * block;
                    let free = if u.full { 0 } else { cap - written };
                    vec![
                        z.to_string(),
                        u.lifetime.map_or("-".into(), |l| l.to_string()),
                        if u.full { "full" } else { "open" }.into(),
                        mib(u.live_bytes),
                        mib(written - u.live_bytes.min(written)),
                        mib(free),
                    ]
                })
                .collect();
            print!("{}", zonekit_report::fitted_table(&["zone", "lifetime", "state", "live MiB", "garbage MiB", "free MiB"], &rows, zonekit_report::TERMINAL_COLUMNS));
            let s = fs.space();
            let empty = fs.zones().values().filter(|u| u.written_blocks == 0).count();
            println!(
                "\ntotal {} MiB: live {} MiB, garbage {} MiB, free {} MiB ({} empty zones); space amplification {:.2}",
                mib(s.capacity_bytes),
                mib(s.live_bytes),
                mib(s.garbage_bytes),
                mib(s.free_bytes),
                empty,
                (s.live_bytes + s.garbage_bytes) as f64 / s.live_bytes.max(1) as f64
            );
        }
        FsCommand::Fsck(a) => {
            let mut fs = mount_read_only(&a.device)?;
            let problems = fs.fsck()?;
            if problems.is_empty() {
                println!("{}: clean ({} files)", a.device.display(), fs.table().files().count());
            } else {
                for p in &problems {
                    println!("{p}");
                }
                println!("{}: {} problems", a.device.display(), problems.len());
                return Ok(ExitCode::FAILURE);
            }
        }
        FsCommand::Dump(a) => {
            let fs = mount_read_only(&a.device)?;
            for f in fs.table().files() {
                println!("{} (id {}, lifetime {}, {} bytes)", f.name, f.id, f.lifetime, f.size_bytes());
                for e in &f.extents {
                    println!("    zone {:>5}  LBA {:>12}  {:>10} bytes", e.zone, e.lba, e.len_bytes);
                }
            }
        }
        FsCommand::Put(a) => {
            let stdin = a.source == Path::new("-");
            let name = match &a.name {
                Some(name) => name.clone(),
                None if stdin => return Err(Usage("--name is needed when the source is - (standard input)".into()).into()),
                None => a.source.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            };
            let source = if stdin { "standard input".to_string() } else { a.source.display().to_string() };
            // The device first: a missing or busy image is named before the source is opened.
            let mut fs = mount(&a.device)?;
            let (mut file, size) = open_source(&a.source)?;
            // All or nothing: a temporary name, then one atomic rename; in 1 MiB pieces, so
            // memory stays bounded whatever the source (Zfs::put_from).
            let bytes = fs.put_from(&name, a.lifetime, &mut file, size).with_context(|| format!("putting {source} as {name:?}"))?;
            let relocated = fs.gc_relocations();
            println!("{name}: {bytes} bytes{}", if relocated > 0 { format!(" (GC relocated {relocated} zones to make room)") } else { String::new() });
        }
        FsCommand::Rm(a) => {
            let mut fs = mount(&a.device)?;
            fs.delete(&a.name)?;
        }
        FsCommand::Mv(a) => {
            let mut fs = mount(&a.device)?;
            fs.rename(&a.from, &a.to)?;
        }
        FsCommand::Cat(a) => {
            let mut fs = mount_read_only(&a.device)?;
            let size = fs.size(&a.name)?;
            // Piece by piece: read_at verifies each extent whole before any of its bytes is
            // returned, so what is written out was verified; a damaged extent stops the output
            // there, with the error and exit status 1.
            let mut buf = vec![0u8; size.min(CAT_CHUNK_BYTES) as usize];
            let mut out = std::io::stdout().lock();
            let mut at = 0u64;
            while at < size {
                let n = match fs.read_at(&a.name, at, &mut buf) {
                    Ok(n) => n,
                    Err(e) if at > 0 => return Err(anyhow::Error::new(e).context(format!("stopped after writing out the first {at} bytes"))),
                    Err(e) => return Err(e.into()),
                };
                anyhow::ensure!(n > 0, "{}: ended at byte {at} of {size}", a.name);
                out.write_all(&buf[..n])?;
                at += n as u64;
            }
            out.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
