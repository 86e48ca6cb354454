//! A log-linear histogram: constant relative precision over the whole u64 range.

/// Histogram of non-negative integers (latencies, lifetimes) with log-linear buckets: 32 sub-buckets per power of two, so a reported
/// percentile is within about 3 % of the true value.
#[derive(Clone, Debug)]
pub struct LogHistogram {
    buckets: Vec<u64>,
    pub count: u64,
    pub sum: u128,
    pub max: u64,
}

const SUB_BUCKET_BITS: u32 = 5;
const SUB_BUCKETS: u64 = 1 << SUB_BUCKET_BITS;

impl Default for LogHistogram {
    fn default() -> Self {
        LogHistogram { buckets: vec![0; (SUB_BUCKETS * (65 - SUB_BUCKET_BITS as u64)) as usize], count: 0, sum: 0, max: 0 }
    }
}

impl LogHistogram {
    fn bucket_of(v: u64) -> usize {
        if v < SUB_BUCKETS {
            return v as usize;
        }
        let exp = 63 - v.leading_zeros();
        let mantissa = (v >> (exp - SUB_BUCKET_BITS)) - SUB_BUCKETS;
        (SUB_BUCKETS + (exp - SUB_BUCKET_BITS) as u64 * SUB_BUCKETS + mantissa) as usize
    }

    fn bucket_low(b: usize) -> u64 {
        let b = b as u64;
        if b < SUB_BUCKETS {
            return b;
        }
        let exp = (b - SUB_BUCKETS) / SUB_BUCKETS + SUB_BUCKET_BITS as u64;
        let mantissa = (b - SUB_BUCKETS) % SUB_BUCKETS;
        (SUB_BUCKETS + mantissa) << (exp - SUB_BUCKET_BITS as u64)
    }

    pub fn record(&mut self, value: u64) {
        self.buckets[Self::bucket_of(value)] += 1;
        self.count += 1;
        self.sum += value as u128;
        self.max = self.max.max(value);
    }

    /// The value below which a fraction `q` (0..=1) of the recorded values fall (bucket lower
    /// bound, so within about 3 % below the true quantile).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Self::bucket_low(b);
            }
        }
        self.max
    }

    /// Non-empty buckets as (lower bound, count), ascending: for CDFs.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.buckets.iter().enumerate().filter(|(_, &n)| n > 0).map(|(b, &n)| (Self::bucket_low(b), n))
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, other: &LogHistogram) {
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.max = self.max.max(other.max);
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_are_within_bucket_precision() {
        let mut h = LogHistogram::default();
        for v in 1..=10_000u64 {
            h.record(v * 1000);
        }
        for (q, expected) in [(0.5, 5_000_000.0), (0.99, 9_900_000.0), (1.0, 10_000_000.0)] {
            let got = h.quantile(q) as f64;
            assert!((got - expected).abs() / expected < 0.04, "q{q}: {got} vs {expected}");
        }
        for v in [0u64, 1, 31, 32, 33, 1 << 40, u64::MAX] {
            let b = LogHistogram::bucket_of(v);
            assert!(LogHistogram::bucket_low(b) <= v);
        }
    }
}
