//! YCSB key choosers, ported from YCSB 0.17.0 (`site.ycsb.generator`): `ZipfianGenerator`
//! (Gray et al., "Quickly generating billion-record synthetic databases", SIGMOD'94),
//! `ScrambledZipfianGenerator` (FNV-1a 64 scrambling, the constant ζ(10^10, 0.99) =
//! 26.46902820178302), `UniformLongGenerator` and `SkewedLatestGenerator`. The constants are
//! YCSB's, so the same parameters give the same shape of distribution YCSB does; the random
//! stream is ours (seeded), not Java's.

use zonekit_base::Rng;

/// YCSB's default zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// ζ(ITEM_COUNT, 0.99) as YCSB hard-codes it for the scrambled generator.
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;
/// The item count the scrambled generator draws from before hashing.
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;

const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// YCSB `Utils.fnvhash64`: FNV-1a over the 8 little-endian bytes, then `Math.abs`.
pub fn fnv_hash64(mut val: u64) -> u64 {
    let mut hash = FNV_OFFSET_BASIS_64;
    for _ in 0..8 {
        hash ^= val & 0xFF;
        hash = hash.wrapping_mul(FNV_PRIME_64);
        val >>= 8;
    }
    (hash as i64).unsigned_abs()
}

/// ζ(n, θ) = Σ_{i=1..n} 1/i^θ, continued from a previous sum over the first `from` terms.
fn zeta(from: u64, to: u64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in from..to {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

/// Zipfian over [base, base + items): item `base` is the most popular.
#[derive(Clone, Debug)]
pub struct Zipfian {
    base: u64,
    items: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    zeta2theta: f64,
    count_for_zeta: u64,
}

impl Zipfian {
    pub fn new(min: u64, max: u64, theta: f64) -> Zipfian {
        let items = max - min + 1;
        Zipfian::with_zetan(min, max, theta, zeta(0, items, theta, 0.0))
    }

    pub fn with_zetan(min: u64, max: u64, theta: f64, zetan: f64) -> Zipfian {
        let items = max - min + 1;
        let zeta2theta = zeta(0, 2, theta, 0.0);
        let mut z = Zipfian { base: min, items, theta, alpha: 1.0 / (1.0 - theta), zetan, eta: 0.0, zeta2theta, count_for_zeta: items };
        z.eta = z.eta_for(items);
        z
    }

    fn eta_for(&self, items: u64) -> f64 {
        (1.0 - (2.0 / items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2theta / self.zetan)
    }

    /// YCSB `nextLong(itemcount)`: the item count may grow (the latest distribution does this),
    /// and ζ is extended incrementally as YCSB does.
    pub fn next_with_count(&mut self, item_count: u64, rng: &mut Rng) -> u64 {
        if item_count != self.count_for_zeta && item_count > self.count_for_zeta {
            self.zetan = zeta(self.count_for_zeta, item_count, self.theta, self.zetan);
            self.count_for_zeta = item_count;
            self.eta = self.eta_for(item_count);
        }
        let u = rng.next_f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        self.base + (item_count as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64
    }

    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        let items = self.items;
        self.next_with_count(items, rng)
    }
}

/// Zipfian popularity with the popular items scattered over the key space by FNV hashing.
#[derive(Clone, Debug)]
pub struct ScrambledZipfian {
    min: u64,
    item_count: u64,
    inner: Zipfian,
}

impl ScrambledZipfian {
    pub fn new(min: u64, max: u64) -> ScrambledZipfian {
        ScrambledZipfian { min, item_count: max - min + 1, inner: Zipfian::with_zetan(0, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN) }
    }

    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        let v = self.inner.next(rng);
        self.min + fnv_hash64(v) % self.item_count
    }
}

/// Uniform over [min, max].
#[derive(Clone, Debug)]
pub struct Uniform {
    min: u64,
    items: u64,
}

impl Uniform {
    pub fn new(min: u64, max: u64) -> Uniform {
        Uniform { min, items: max - min + 1 }
    }
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        self.min + rng.below(self.items)
    }
}

/// YCSB "latest": recently inserted keys are the most popular (`max − zipfian(max)` over the
/// keys inserted so far).
#[derive(Clone, Debug)]
pub struct Latest {
    inserted: u64,
    zipfian: Zipfian,
}

impl Latest {
    /// `inserted` keys 0..inserted exist.
    pub fn new(inserted: u64) -> Latest {
        let inserted = inserted.max(1);
        Latest { inserted, zipfian: Zipfian::new(0, inserted - 1, ZIPFIAN_CONSTANT) }
    }

    /// A new key was inserted (the latest one).
    pub fn insert(&mut self) -> u64 {
        self.inserted += 1;
        self.inserted - 1
    }

    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        let max = self.inserted - 1;
        max - self.zipfian.next_with_count(max + 1, rng).min(max)
    }
}

/// One of YCSB's request-key choosers, as CoreWorkload holds it: the block workloads and the
/// tree experiment build theirs over their own key ranges and draw through this.
#[derive(Clone, Debug)]
pub enum KeyChooser {
    Zipfian(ScrambledZipfian),
    Uniform(Uniform),
    Latest(Latest),
}

impl KeyChooser {
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        match self {
            KeyChooser::Zipfian(g) => g.next(rng),
            KeyChooser::Uniform(g) => g.next(rng),
            KeyChooser::Latest(g) => g.next(rng),
        }
    }

    /// A record was inserted: "latest" now favours it; the others do not change.
    pub fn inserted(&mut self) {
        if let KeyChooser::Latest(g) = self {
            g.insert();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_ycsb() {
        // YCSB Utils.fnvhash64 (Java long arithmetic, then Math.abs), computed independently.
        assert_eq!(fnv_hash64(0), 0x5738_07CD_D7E5_C63B);
        assert_eq!(fnv_hash64(1), 0x7632_CED6_E2D5_105C);
        assert_eq!(fnv_hash64(12345), 0x18E1_4E7A_1D12_33B4);
    }

    #[test]
    fn scrambled_constant_is_zeta_of_ten_billion() {
        // The constant YCSB hard-codes: check its first digits against a direct partial sum
        // plus the integral tail estimate (Euler–Maclaurin), ζ(n,θ) ≈ Σ_{1..m} + ∫_m^n x^-θ dx.
        let m = 1_000_000u64;
        let head = zeta(0, m, 0.99, 0.0);
        let n = SCRAMBLED_ITEM_COUNT as f64 + 1.0;
        let tail = (n.powf(0.01) - (m as f64 + 0.5).powf(0.01)) / 0.01;
        assert!((head + tail - SCRAMBLED_ZETAN).abs() < 0.01, "{}", head + tail);
    }

    /// Frequencies of the top items against θ = 0.99 Zipf probabilities.
    #[test]
    fn zipfian_top_items_have_zipf_frequencies() {
        let n = 1000u64;
        let mut z = Zipfian::new(0, n - 1, ZIPFIAN_CONSTANT);
        let mut rng = Rng::new(11);
        let samples = 500_000;
        let mut counts = vec![0u64; n as usize];
        for _ in 0..samples {
            counts[z.next(&mut rng) as usize] += 1;
        }
        let zetan = zeta(0, n, 0.99, 0.0);
        for (item, &count) in counts.iter().enumerate().take(2) {
            // Items 0 and 1 are drawn exactly by the first two branches.
            let p = 1.0 / ((item + 1) as f64).powf(0.99) / zetan;
            let got = count as f64 / samples as f64;
            assert!((got - p).abs() < 0.004, "item {item}: {got} vs {p}");
        }
        // The rest is Gray's approximation: monotone decreasing in bands and heavy-tailed.
        let band = |a: usize, b: usize| counts[a..b].iter().sum::<u64>();
        assert!(band(2, 10) > band(10, 100) / 3 && band(10, 100) > band(100, 1000) / 3);
        assert!(counts[999] < counts[2]);
    }

    #[test]
    fn scrambled_zipfian_spreads_popular_keys_but_keeps_the_skew() {
        let mut z = ScrambledZipfian::new(0, 9_999);
        let mut rng = Rng::new(3);
        let mut counts = vec![0u64; 10_000];
        for _ in 0..500_000 {
            counts[z.next(&mut rng) as usize] += 1;
        }
        let hottest = counts.iter().enumerate().max_by_key(|c| c.1).unwrap().0;
        assert_ne!(hottest, 0, "scrambling moves the most popular key away from 0");
        let mut sorted = counts.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        // YCSB draws from 10^10 items before hashing: the top 100 of those carry
        // ζ(100, 0.99) / ζ(10^10, 0.99) of the draws, and the top 1 % of keys also get about
        // 1 % of the (hash-spread) rest. That, not the skew of a 10,000-item Zipf, is what
        // YCSB's scrambled zipfian produces.
        let head = zeta(0, 100, 0.99, 0.0) / SCRAMBLED_ZETAN;
        let expected = head + (1.0 - head) * 0.01;
        let top_1_percent = sorted[..100].iter().sum::<u64>() as f64 / 500_000.0;
        assert!((top_1_percent - expected).abs() < 0.02, "top 1% of keys get {top_1_percent}, expected {expected}");
    }

    #[test]
    fn uniform_and_latest() {
        let mut rng = Rng::new(5);
        let mut u = Uniform::new(10, 19);
        let mut seen = [0u32; 10];
        for _ in 0..100_000 {
            seen[(u.next(&mut rng) - 10) as usize] += 1;
        }
        let chi: f64 = seen.iter().map(|&c| (c as f64 - 10_000.0).powi(2) / 10_000.0).sum();
        assert!(chi < 27.9, "uniform chi-square {chi} (99.9th percentile, 9 dof: 27.9)");
        let mut l = Latest::new(1000);
        let newest = l.insert();
        let mut hits = 0;
        for _ in 0..10_000 {
            let k = l.next(&mut rng);
            assert!(k <= newest);
            hits += (k == newest) as u32;
        }
        assert!(hits > 1000, "the newest key should be the most popular ({hits})");
    }
}
