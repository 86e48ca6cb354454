//! `zonekit fs ...`: the zoned file system's tool, on emulated images and /dev zoned devices.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use zonekit_device::ZonedDevice;
use zonekit_report::text_table;
use zonekit_zfs::fs::{FsConfig, Zfs};

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
    /// Copy a host file into the file system.
    Put(PutArgs),
    /// Write a file's content to standard output.
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
    /// Host file to copy.
    source: PathBuf,
    /// Name in the file system (default: the source's file name).
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
            print!("{}", text_table(&["name", "bytes", "lifetime", "extents"], &rows));
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
            print!("{}", text_table(&["zone", "lifetime", "state", "live MiB", "garbage MiB", "free MiB"], &rows));
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
            let data = std::fs::read(&a.source).with_context(|| format!("reading {}", a.source.display()))?;
            let name = a.name.clone().unwrap_or_else(|| a.source.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
            let mut fs = mount(&a.device)?;
            // All or nothing: a temporary name, synced, then one atomic rename (Zfs::put).
            fs.put(&name, a.lifetime, &data).with_context(|| format!("putting {} ({} bytes) as {name:?}", a.source.display(), data.len()))?;
            let relocated = fs.gc_relocations();
            println!("{name}: {} bytes{}", data.len(), if relocated > 0 { format!(" (GC relocated {relocated} zones to make room)") } else { String::new() });
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
            let size = fs.size(&a.name)? as usize;
            let mut buf = vec![0u8; size];
            fs.read_at(&a.name, 0, &mut buf)?;
            std::io::Write::write_all(&mut std::io::stdout(), &buf)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
