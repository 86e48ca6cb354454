//! The k hash functions of the Bloom-filter samplers ([`super::dam`], [`super::mbf`]): hash i
//! of a chunk is MurmurHash3's 64-bit finaliser of the chunk id xor a per-function salt, reduced
//! to a table of m slots by multiply-shift. The salts are fixed (derived from the function's
//! index), so a run is reproducible without a seed; the finaliser mixes every id bit into every
//! hash bit, so different salts give independent-looking functions even for consecutive ids.

use zonekit_base::map::mix64;

/// Most hash functions a filter may use (more only add false positives at these sizes).
pub(crate) const HASHES_MAX: usize = 8;

#[derive(Clone, Debug)]
pub(crate) struct BloomHashes {
    salts: [u64; HASHES_MAX],
    k: usize,
    /// Slots in the table (the filter's length in counters or bits).
    m: u64,
}

impl BloomHashes {
    pub fn new(k: usize, m: u64) -> BloomHashes {
        assert!((1..=HASHES_MAX).contains(&k), "{k} hash functions: 1 to {HASHES_MAX}");
        assert!(m > 0, "a filter of no slots");
        let salts = std::array::from_fn(|i| mix64(0x9E37_79B9_7F4A_7C15_u64.wrapping_mul(i as u64 + 1)));
        BloomHashes { salts, k, m }
    }

    /// The distinct slots of `chunk` (at most k; fewer when two functions collide, so that a
    /// counting filter does not count one access twice) written to `out`; returns how many.
    #[inline]
    pub fn slots(&self, chunk: u64, out: &mut [usize; HASHES_MAX]) -> usize {
        let mut n = 0;
        for &salt in &self.salts[..self.k] {
            let slot = ((mix64(chunk ^ salt) as u128 * self.m as u128) >> 64) as usize;
            if !out[..n].contains(&slot) {
                out[n] = slot;
                n += 1;
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_in_range_distinct_and_deterministic() {
        let h = BloomHashes::new(3, 1000);
        let mut a = [0; HASHES_MAX];
        let mut b = [0; HASHES_MAX];
        let mut spread = vec![0u32; 1000];
        for chunk in 0..10_000 {
            let n = h.slots(chunk, &mut a);
            assert_eq!(h.slots(chunk, &mut b), n);
            assert_eq!(a[..n], b[..n]);
            assert!((1..=3).contains(&n) && a[..n].iter().all(|&s| s < 1000));
            for (i, s) in a[..n].iter().enumerate() {
                assert!(!a[..i].contains(s));
                spread[*s] += 1;
            }
        }
        // 30,000 hashes over 1,000 slots: 30 a slot on average, none starved or flooded.
        assert!(spread.iter().all(|&c| (5..80).contains(&c)), "{spread:?}");
    }
}
