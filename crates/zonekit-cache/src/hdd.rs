//! The backing hard disk: a latency model (seek, rotation, transfer, with sequential access
//! detected) and, in data mode, the bytes, in memory or in a file (a durable cache's disk).
//!
//! Defaults are the thesis' disk class (Seagate BarraCuda 2 TB, 7200 rpm): 1–16 ms seeks
//! growing with the square root of the distance, half a revolution (4.17 ms) of rotational
//! delay for every non-sequential access, 200 MB/s media transfer. An access that starts where
//! the previous one ended pays transfer only.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

use serde::Serialize;

use crate::{CacheError, Result};

#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
pub struct HddConfig {
    pub capacity_blocks: u64,
    pub block_bytes: u32,
    pub seek_min_ns: u64,
    pub seek_max_ns: u64,
    pub rpm: u32,
    pub transfer_bytes_per_sec: u64,
}

impl HddConfig {
    pub fn barracuda(capacity_blocks: u64, block_bytes: u32) -> HddConfig {
        HddConfig { capacity_blocks, block_bytes, seek_min_ns: 1_000_000, seek_max_ns: 16_000_000, rpm: 7200, transfer_bytes_per_sec: 200_000_000 }
    }
}

/// What the disk did.
#[derive(Copy, Clone, Debug, Default, Serialize)]
pub struct HddStats {
    pub reads: u64,
    pub writes: u64,
    pub blocks_read: u64,
    pub blocks_written: u64,
    /// Accesses that started where the previous one ended.
    pub sequential: u64,
    pub busy_ns: u64,
}

pub struct Hdd {
    config: HddConfig,
    head_block: u64,
    data: Store,
    stats: HddStats,
}

/// Where the disk's bytes are.
enum Store {
    /// Latency only: reads return nothing.
    Nothing,
    /// Block contents (absent: zeros).
    Memory(HashMap<u64, Box<[u8]>>),
    /// A file of `capacity_blocks` blocks, written in place.
    File(File),
}

impl Hdd {
    pub fn new(config: HddConfig, keep_data: bool) -> Result<Hdd> {
        if config.capacity_blocks == 0 || config.block_bytes == 0 || config.rpm == 0 || config.transfer_bytes_per_sec == 0 {
            return Err(CacheError::Config(format!("backing disk {config:?}: every dimension must be positive")));
        }
        let data = if keep_data { Store::Memory(HashMap::new()) } else { Store::Nothing };
        Ok(Hdd { config, head_block: 0, data, stats: HddStats::default() })
    }

    /// A disk whose bytes are `file`, of exactly `config.capacity_blocks` blocks (its latency
    /// still modelled).
    pub fn on_file(config: HddConfig, file: File) -> Result<Hdd> {
        let mut hdd = Hdd::new(config, false)?;
        let bytes = file.metadata().map_err(CacheError::Disk)?.len();
        let expected = config.capacity_blocks * config.block_bytes as u64;
        if bytes != expected {
            return Err(CacheError::Config(format!("the backing disk's file holds {bytes} bytes, not {} blocks of {} bytes", config.capacity_blocks, config.block_bytes)));
        }
        hdd.data = Store::File(file);
        Ok(hdd)
    }

    /// Makes every write so far durable (a file's data synced; nothing to do otherwise).
    pub fn sync(&mut self) -> Result<()> {
        match &self.data {
            Store::File(f) => f.sync_data().map_err(CacheError::Disk),
            _ => Ok(()),
        }
    }

    pub fn capacity_blocks(&self) -> u64 {
        self.config.capacity_blocks
    }

    pub fn stats(&self) -> &HddStats {
        &self.stats
    }

    /// Time to access `blocks` blocks at `lba`, moving the head there.
    fn access_ns(&mut self, lba: u64, blocks: u64) -> u64 {
        let c = &self.config;
        let transfer = (blocks as u128 * c.block_bytes as u128 * 1_000_000_000 / c.transfer_bytes_per_sec as u128) as u64;
        let positioning = if lba == self.head_block {
            self.stats.sequential += 1;
            0
        } else {
            let distance = lba.abs_diff(self.head_block) as f64 / c.capacity_blocks as f64;
            let seek = c.seek_min_ns as f64 + (c.seek_max_ns - c.seek_min_ns) as f64 * distance.min(1.0).sqrt();
            let half_turn = 30_000_000_000 / c.rpm as u64;
            seek as u64 + half_turn
        };
        self.head_block = lba + blocks;
        self.stats.busy_ns += positioning + transfer;
        positioning + transfer
    }

    fn check(&self, lba: u64, blocks: u64) -> Result<()> {
        if lba.checked_add(blocks).is_none_or(|end| end > self.config.capacity_blocks) {
            return Err(CacheError::OutOfRange { lba, blocks, capacity_blocks: self.config.capacity_blocks });
        }
        Ok(())
    }

    /// Reads `buf.len()` bytes (whole blocks) at `lba`; returns the time it took.
    pub fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<u64> {
        let bb = self.config.block_bytes as usize;
        let blocks = (buf.len() / bb) as u64;
        self.check(lba, blocks)?;
        match &self.data {
            Store::Nothing => {}
            Store::Memory(data) => {
                for (i, block) in buf.chunks_mut(bb).enumerate() {
                    match data.get(&(lba + i as u64)) {
                        Some(bytes) => block.copy_from_slice(bytes),
                        None => block.fill(0),
                    }
                }
            }
            Store::File(f) => f.read_exact_at(buf, lba * bb as u64).map_err(CacheError::Disk)?,
        }
        self.stats.reads += 1;
        self.stats.blocks_read += blocks;
        Ok(self.access_ns(lba, blocks))
    }

    /// Writes whole blocks at `lba`; returns the time it took.
    pub fn write(&mut self, lba: u64, data: &[u8]) -> Result<u64> {
        let bb = self.config.block_bytes as usize;
        let blocks = (data.len() / bb) as u64;
        self.check(lba, blocks)?;
        match &mut self.data {
            Store::Nothing => {}
            Store::Memory(store) => {
                for (i, block) in data.chunks(bb).enumerate() {
                    store.insert(lba + i as u64, block.into());
                }
            }
            Store::File(f) => f.write_all_at(data, lba * bb as u64).map_err(CacheError::Disk)?,
        }
        self.stats.writes += 1;
        self.stats.blocks_written += blocks;
        Ok(self.access_ns(lba, blocks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_access_pays_transfer_only() {
        let mut hdd = Hdd::new(HddConfig::barracuda(1 << 20, 4096), false).unwrap();
        let mut buf = vec![0u8; 4096 * 16];
        let first = hdd.read(1000, &mut buf).unwrap();
        let next = hdd.read(1016, &mut buf).unwrap();
        let transfer = 16 * 4096 * 1_000_000_000 / 200_000_000;
        assert_eq!(next, transfer);
        assert!(first >= transfer + 1_000_000 + 4_166_666, "{first}");
        // A far jump costs more than a near one.
        let near = hdd.read(1040, &mut buf).unwrap();
        let far = hdd.read(900_000, &mut buf).unwrap();
        assert!(far > near);
        assert_eq!(hdd.stats().sequential, 1);
    }

    #[test]
    fn data_mode_keeps_bytes_and_ranges_are_checked() {
        let mut hdd = Hdd::new(HddConfig::barracuda(64, 4096), true).unwrap();
        hdd.write(3, &[7u8; 8192]).unwrap();
        let mut buf = vec![1u8; 4096 * 3];
        hdd.read(2, &mut buf).unwrap();
        assert!(buf[..4096].iter().all(|&b| b == 0) && buf[4096..].iter().all(|&b| b == 7));
        assert!(hdd.write(63, &[0u8; 8192]).unwrap_err().to_string().contains("beyond"));
    }
}
