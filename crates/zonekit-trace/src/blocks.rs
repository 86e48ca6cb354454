//! Block streams: requests split into aligned blocks keyed by (volume, block number), and the
//! compact map from block keys to values that the analyses and oracles use.

use crate::record::{Op, Record, Result, TraceError};

pub use zonekit_base::map::{mix64, BlockMap, DistinctCounter};
pub use zonekit_base::mem::{advise_huge_pages, huge_vec, prefetch_read};

/// One block of one request.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BlockIo {
    pub time_us: u64,
    pub volume: u32,
    pub block: u64,
    pub op: Op,
    /// The first block of its request (counts requests after splitting).
    pub starts_request: bool,
}

/// Block numbers below 2^40 and volume ids below 2^24 pack into one u64 key.
pub const BLOCK_BITS: u32 = 40;
pub const MAX_VOLUME: u32 = (1 << (64 - BLOCK_BITS)) - 1;

impl BlockIo {
    /// Block `block` of request `r`, whose first block is `first`.
    #[inline]
    pub fn of_request(r: &Record, block: u64, first: u64) -> BlockIo {
        BlockIo { time_us: r.time_us, volume: r.volume, block, op: r.op, starts_request: block == first }
    }

    /// (volume, block) packed into one integer.
    #[inline]
    pub fn key(&self) -> u64 {
        block_key(self.volume, self.block)
    }
}

#[inline]
pub fn block_key(volume: u32, block: u64) -> u64 {
    debug_assert!(volume <= MAX_VOLUME && block < 1 << BLOCK_BITS);
    ((volume as u64) << BLOCK_BITS) | block
}

/// What to keep when splitting.
#[derive(Clone, Debug)]
pub struct SplitOptions {
    pub block_size_bytes: u64,
    /// Keep records with `start_us <= time_us < end_us`.
    pub window_us: Option<(u64, u64)>,
    /// Keep only these volumes.
    pub volumes: Option<Vec<u32>>,
    /// Keep only this kind of operation.
    pub only: Option<Op>,
}

impl Default for SplitOptions {
    fn default() -> Self {
        SplitOptions { block_size_bytes: 4096, window_us: None, volumes: None, only: None }
    }
}

impl SplitOptions {
    /// Whether any of the time window, volume and operation filters is set.
    pub fn filters(&self) -> bool {
        self.window_us.is_some() || self.volumes.is_some() || self.only.is_some()
    }

    /// Whether the time window, volume and operation filters keep `r`.
    #[inline]
    pub fn wanted(&self, r: &Record) -> bool {
        self.window_us.is_none_or(|(s, e)| r.time_us >= s && r.time_us < e) && self.volumes.as_ref().is_none_or(|v| v.contains(&r.volume)) && self.only.is_none_or(|op| op == r.op)
    }
}

/// The first and last of the `1 << block_shift`-byte blocks request `r` touches (`None` for
/// an empty request), or why it cannot be split (past the key's range).
#[inline]
pub fn block_range(r: &Record, block_shift: u32) -> Result<Option<(u64, u64)>> {
    if r.len_bytes == 0 {
        return Ok(None);
    }
    let Some(end) = r.offset_bytes.checked_add(r.len_bytes - 1) else {
        return Err(TraceError::Invalid(format!("request at offset {} of {} bytes overflows", r.offset_bytes, r.len_bytes)));
    };
    let (first, last) = (r.offset_bytes >> block_shift, end >> block_shift);
    if last >= 1 << BLOCK_BITS || r.volume > MAX_VOLUME {
        return Err(TraceError::Invalid(format!("volume {} block {last} is beyond the supported range (volume < 2^24, block < 2^40)", r.volume)));
    }
    Ok(Some((first, last)))
}

/// Splits records into the aligned blocks they touch.
pub struct Splitter<I> {
    records: I,
    options: SplitOptions,
    block_shift: u32,
    /// Whether `options` filters anything (else every record is wanted, unasked).
    filters: bool,
    /// The request being split: (record, first block, next block, last block).
    current: Option<(Record, u64, u64, u64)>,
    /// Requests of zero length (skipped).
    pub empty_requests: u64,
}

impl<I: Iterator<Item = Result<Record>>> Splitter<I> {
    pub fn new(records: I, options: SplitOptions) -> Result<Splitter<I>> {
        if !options.block_size_bytes.is_power_of_two() || options.block_size_bytes < 512 {
            return Err(TraceError::Invalid(format!("block size {} is not a power of two of at least 512", options.block_size_bytes)));
        }
        let block_shift = options.block_size_bytes.trailing_zeros();
        Ok(Splitter { filters: options.filters(), records, options, block_shift, current: None, empty_requests: 0 })
    }

    #[inline]
    fn wanted(&self, r: &Record) -> bool {
        !self.filters || self.options.wanted(r)
    }
}

impl<I: Iterator<Item = Result<Record>>> Iterator for Splitter<I> {
    type Item = Result<BlockIo>;

    #[inline]
    fn next(&mut self) -> Option<Result<BlockIo>> {
        loop {
            if let Some((r, first, next, last)) = &mut self.current {
                if *next <= *last {
                    let b = BlockIo::of_request(r, *next, *first);
                    *next += 1;
                    return Some(Ok(b));
                }
                self.current = None;
            }
            let r = match self.records.next()? {
                Ok(r) => r,
                Err(e) => return Some(Err(e)),
            };
            if !self.wanted(&r) {
                continue;
            }
            let (first, last) = match block_range(&r, self.block_shift) {
                Ok(Some(range)) => range,
                Ok(None) => {
                    self.empty_requests += 1;
                    continue;
                }
                Err(e) => return Some(Err(e)),
            };
            // Most requests are one block: hand it over without parking it in `current`.
            if first == last {
                return Some(Ok(BlockIo::of_request(&r, first, first)));
            }
            self.current = Some((r, first, first, last));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rec(offset: u64, len: u64) -> Result<Record> {
        Ok(Record { time_us: 1, volume: 3, offset_bytes: offset, len_bytes: len, op: Op::Write })
    }

    proptest! {
        /// Every byte of every request is covered by exactly the blocks emitted for it, in order.
        #[test]
        fn split_covers_exactly_the_touched_blocks(reqs in proptest::collection::vec((0u64..1 << 30, 1u64..1 << 20), 1..50), shift in 9u32..16) {
            let bs = 1u64 << shift;
            let recs: Vec<_> = reqs.iter().map(|&(o, l)| rec(o, l)).collect();
            let blocks: Vec<BlockIo> = Splitter::new(recs.into_iter(), SplitOptions { block_size_bytes: bs, ..Default::default() }).unwrap().map(|b| b.unwrap()).collect();
            let mut expected = Vec::new();
            for &(o, l) in &reqs {
                for b in o / bs..=(o + l - 1) / bs {
                    expected.push(b);
                }
            }
            prop_assert_eq!(blocks.iter().map(|b| b.block).collect::<Vec<_>>(), expected);
        }
    }

    #[test]
    fn zero_length_requests_and_filters() {
        let recs = vec![rec(0, 0), rec(4096, 8192), Ok(Record { op: Op::Read, ..rec(0, 4096).unwrap() })];
        let mut s = Splitter::new(recs.into_iter(), SplitOptions { only: Some(Op::Write), ..Default::default() }).unwrap();
        let blocks: Vec<_> = s.by_ref().map(|b| b.unwrap()).map(|b| (b.block, b.starts_request)).collect();
        assert_eq!(blocks, vec![(1, true), (2, false)]);
        assert_eq!(s.empty_requests, 1);
        assert!(Splitter::new(std::iter::empty(), SplitOptions { block_size_bytes: 1000, ..Default::default() }).is_err());
    }
}
