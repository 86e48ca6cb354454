//! A zoned file system for key-value stores (seed 001).
//!
//! The [`metalog`] — the checksummed, two-zone, rolling metadata log with atomic commit
//! batches and crash recovery — [`FileTable`], the file metadata it rebuilds at mount, and the
//! file system core [`fs::Zfs`]: files as extents in zones, lifetime-hint, first-fit or
//! ZenFS-rule allocation, GC, space accounting and fsck. RocksDB reaches it through the C ABI
//! (`crates/zonekit-capi`) and the plugin (`plugin/`); what RocksDB needs that is not here
//! (directories, locks) is listed in [`fs`].
//!
//! ```
//! use zonekit_device::{preset, MemDevice, StorageMode, ZoneBehavior, ZoneId};
//! use zonekit_zfs::{metalog::{MetaLog, Record}, FileTable};
//!
//! let mut dev = MemDevice::new(preset::find("tiny").unwrap().geometry, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap();
//! let zones = [ZoneId(0), ZoneId(1)];
//! let mut log = MetaLog::format(&mut dev, zones).unwrap();
//! log.append(&Record::CreateFile { id: 1, name: "000001.log".into(), lifetime: 2 });
//! log.commit(&mut dev, &|| unreachable!("no roll-over needed")).unwrap();
//! let (_, records) = MetaLog::open(&mut dev, zones).unwrap();
//! assert_eq!(FileTable::from_records(&records).unwrap().by_name("000001.log").unwrap().lifetime, 2);
//! ```

pub mod alloc;
pub mod fs;
pub mod metalog;
mod usage;

use std::collections::BTreeMap;

use metalog::{Extent, Record};

/// One file's metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileMeta {
    pub id: u64,
    pub name: String,
    /// Write-lifetime hint (RocksDB's `WriteLifeTimeHint` values).
    pub lifetime: u8,
    pub extents: Vec<Extent>,
}

impl FileMeta {
    pub fn size_bytes(&self) -> u64 {
        self.extents.iter().map(|e| e.len_bytes).sum()
    }
}

/// The file table: what the metadata log describes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileTable {
    files: BTreeMap<u64, FileMeta>,
    /// Name → id: every append and read looks its file up by name.
    ids_by_name: BTreeMap<String, u64>,
}

impl FileTable {
    /// Rebuilds the table from committed records; `Err` names the first inconsistent one.
    pub fn from_records(records: &[Record]) -> Result<FileTable, String> {
        let mut t = FileTable::default();
        for (i, r) in records.iter().enumerate() {
            t.apply(r).map_err(|e| format!("record {i} ({r:?}): {e}"))?;
        }
        Ok(t)
    }

    fn file_mut(&mut self, id: u64) -> Result<&mut FileMeta, String> {
        self.files.get_mut(&id).ok_or(format!("file {id} does not exist"))
    }

    pub fn apply(&mut self, r: &Record) -> Result<(), String> {
        match r {
            Record::CreateFile { id, name, lifetime } => {
                if self.files.contains_key(id) {
                    return Err(format!("file {id} exists"));
                }
                if self.by_name(name).is_some() {
                    return Err(format!("a file named {name:?} exists"));
                }
                self.files.insert(*id, FileMeta { id: *id, name: name.clone(), lifetime: *lifetime, extents: Vec::new() });
                self.ids_by_name.insert(name.clone(), *id);
            }
            Record::AppendExtent { id, extent } => self.file_mut(*id)?.extents.push(*extent),
            Record::SetExtents { id, extents } => self.file_mut(*id)?.extents = extents.clone(),
            Record::Rename { id, name } => {
                let old = std::mem::replace(&mut self.file_mut(*id)?.name, name.clone());
                self.ids_by_name.remove(&old);
                // Renaming over another file replaces it, as POSIX rename does.
                if let Some(other) = self.ids_by_name.insert(name.clone(), *id).filter(|other| other != id) {
                    self.files.remove(&other);
                }
            }
            Record::Delete { id } => {
                let f = self.files.remove(id).ok_or(format!("file {id} does not exist"))?;
                self.ids_by_name.remove(&f.name);
            }
            Record::SetLifetime { id, lifetime } => self.file_mut(*id)?.lifetime = *lifetime,
            Record::Commit => {}
        }
        Ok(())
    }

    pub fn by_name(&self, name: &str) -> Option<&FileMeta> {
        self.files.get(self.ids_by_name.get(name)?)
    }

    pub fn by_id(&self, id: u64) -> Option<&FileMeta> {
        self.files.get(&id)
    }

    pub fn files(&self) -> impl Iterator<Item = &FileMeta> {
        self.files.values()
    }

    /// Records that rebuild this table from nothing (a snapshot).
    pub fn snapshot(&self) -> Vec<Record> {
        let mut out = Vec::new();
        for f in self.files.values() {
            out.push(Record::CreateFile { id: f.id, name: f.name.clone(), lifetime: f.lifetime });
            if !f.extents.is_empty() {
                out.push(Record::SetExtents { id: f.id, extents: f.extents.clone() });
            }
        }
        out
    }
}
