//! The HPC write patterns of seed 002 (chapter 4), as the thesis characterises its traces:
//!
//! - LAMMPS-like: all writes, 7 GB written over a 358 MB range, requests of at least 512 KiB
//!   starting and ending on block or half-block (512 KiB) boundaries, about 90 % larger than
//!   one 1 MiB block, about half starting in the middle of a block; the application rewrites
//!   its dump files, so the range is swept over and over.
//! - MACDRP-like: all writes, 8.3 GB over a 93 MB range, almost every request exactly 512 KiB,
//!   half of them starting at a 512 KiB offset within a 1 MiB block. The thesis also says
//!   that sequential writes dominate both traces and random access is rare (§4.9), yet that
//!   contiguous runs in the MACDRP trace seldom exceed one request (§4.8). Interleaved
//!   writers give both: [`MACDRP_WRITERS`] writers each sweep their own section of the range
//!   in 512 KiB steps, and each request comes from a writer picked at random, so the trace
//!   jumps between sections while every section is written in order.

use crate::record::{Op, Record};
use zonekit_base::Rng;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const PAGE: u64 = 32 * KIB;
const HALF_BLOCK: u64 = 512 * KIB;
/// Writers interleaved in the MACDRP-like pattern (ranks sharing an I/O node).
pub const MACDRP_WRITERS: u64 = 4;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HpcPattern {
    Lammps,
    Macdrp,
}

impl HpcPattern {
    /// (bytes written, range in bytes) of the thesis' trace.
    pub fn thesis_scale(self) -> (u64, u64) {
        match self {
            HpcPattern::Lammps => (7_000_000_000, 358_000_000),
            HpcPattern::Macdrp => (8_300_000_000, 93_000_000),
        }
    }
}

pub struct Hpc {
    pattern: HpcPattern,
    range_bytes: u64,
    total_bytes: u64,
    written: u64,
    cursor: u64,
    /// MACDRP-like: each writer's next offset within its section.
    writers: Vec<u64>,
    time_us: u64,
    rng: Rng,
}

impl Hpc {
    /// `scale` multiplies the thesis' bytes written (range unchanged); 1.0 is the full trace.
    pub fn new(pattern: HpcPattern, scale: f64, seed: u64) -> Hpc {
        let (total, range) = pattern.thesis_scale();
        Hpc {
            pattern,
            range_bytes: range / MIB * MIB,
            total_bytes: (total as f64 * scale) as u64,
            written: 0,
            cursor: 0,
            writers: vec![0; MACDRP_WRITERS as usize],
            time_us: 0,
            rng: Rng::new(seed),
        }
    }
}

impl Iterator for Hpc {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        if self.written >= self.total_bytes {
            return None;
        }
        let (offset, len) = match self.pattern {
            HpcPattern::Lammps => {
                // Whole half-blocks: starts and ends alike are block- or half-block-aligned
                // (Fig. 2.4), 90 % of requests longer than a block, about half of them an odd
                // number of half-blocks, so the dump sweeps its range with half of the
                // boundaries in the middle of a block.
                let halves = if self.rng.chance(0.9) { 3 + self.rng.below(6) } else { 1 + self.rng.below(2) };
                let len = halves * HALF_BLOCK;
                if self.cursor + len > self.range_bytes {
                    self.cursor = 0;
                }
                let at = self.cursor;
                self.cursor += len;
                (at, len)
            }
            HpcPattern::Macdrp => {
                let section = self.range_bytes / MIB / MACDRP_WRITERS * MIB;
                let writer = self.rng.below(MACDRP_WRITERS) as usize;
                let at = writer as u64 * section + self.writers[writer];
                self.writers[writer] = (self.writers[writer] + HALF_BLOCK) % section;
                // A few requests write only the start of their 512 KiB step.
                let len = if self.rng.chance(0.98) { HALF_BLOCK } else { PAGE * (1 + self.rng.below(HALF_BLOCK / PAGE - 1)) };
                (at, len)
            }
        };
        self.written += len;
        self.time_us += 1000;
        Some(Record { time_us: self.time_us, volume: 0, offset_bytes: offset, len_bytes: len, op: Op::Write })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lammps_matches_the_thesis_characterisation() {
        let recs: Vec<Record> = Hpc::new(HpcPattern::Lammps, 0.1, 1).collect();
        let bytes: u64 = recs.iter().map(|r| r.len_bytes).sum();
        assert!((700_000_000..705_000_000).contains(&bytes));
        assert!(recs.iter().all(|r| r.len_bytes > 500 * KIB && r.offset_bytes % HALF_BLOCK == 0 && r.len_bytes % HALF_BLOCK == 0 && r.offset_bytes + r.len_bytes <= 358_000_000));
        let mid = recs.iter().filter(|r| r.offset_bytes % MIB == HALF_BLOCK).count() as f64 / recs.len() as f64;
        assert!((0.45..0.55).contains(&mid), "{mid}");
        let big = recs.iter().filter(|r| r.len_bytes > MIB).count() as f64 / recs.len() as f64;
        assert!((0.87..0.93).contains(&big), "{big}");
    }

    #[test]
    fn macdrp_matches_the_thesis_characterisation() {
        let recs: Vec<Record> = Hpc::new(HpcPattern::Macdrp, 0.1, 1).collect();
        let exact = recs.iter().filter(|r| r.len_bytes == HALF_BLOCK).count() as f64 / recs.len() as f64;
        let mid = recs.iter().filter(|r| r.offset_bytes % MIB == HALF_BLOCK).count() as f64 / recs.len() as f64;
        assert!(exact > 0.95 && (0.45..0.55).contains(&mid), "{exact} {mid}");
        assert!(recs.iter().all(|r| r.offset_bytes + r.len_bytes <= 93_000_000));
        // Consecutive requests seldom continue each other, but each writer's section is
        // written in order.
        let contiguous = recs.windows(2).filter(|w| w[0].offset_bytes + HALF_BLOCK == w[1].offset_bytes).count() as f64 / recs.len() as f64;
        assert!(contiguous < 0.35, "{contiguous}");
        let section = 93_000_000 / MIB / MACDRP_WRITERS * MIB;
        for writer in 0..MACDRP_WRITERS {
            let mine: Vec<u64> = recs.iter().map(|r| r.offset_bytes).filter(|o| o / section == writer).take(40).collect();
            assert!(mine.windows(2).all(|w| w[1] == w[0] + HALF_BLOCK), "writer {writer}: {mine:?}");
        }
    }
}
