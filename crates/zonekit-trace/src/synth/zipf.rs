//! Zipf(s) over ranks 1..=n by rejection-inversion (W. Hörmann and G. Derflinger, "Rejection-
//! inversion to generate variates from monotone discrete distributions", ACM TOMACS 1996):
//! O(1) time and memory per sample for any exponent s > 0, including s ≥ 1.

use crate::record::SpecError;
use zonekit_base::Rng;

#[derive(Clone, Debug)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    threshold: f64,
}

impl Zipf {
    pub fn new(n: u64, exponent: f64) -> Result<Zipf, SpecError> {
        if n == 0 {
            return Err("Zipf needs at least one element".into());
        }
        if !(exponent > 0.0 && exponent.is_finite()) {
            return Err(format!("Zipf exponent must be positive, got {exponent}").into());
        }
        let mut z = Zipf { n: n as f64, s: exponent, h_integral_x1: 0.0, h_integral_n: 0.0, threshold: 0.0 };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(n as f64 + 0.5);
        z.threshold = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        Ok(z)
    }

    /// A rank in 1..=n; rank 1 is the most frequent.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_integral_n + rng.next_f64() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            let k = (x + 0.5).clamp(1.0, self.n);
            let k = k.floor();
            if k - x <= self.threshold || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        helper2((1.0 - self.s) * log_x) * log_x
    }

    fn h_integral_inverse(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        (helper1(t) * x).exp()
    }
}

/// ln(1 + x) / x, accurate near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x − 1) / x, accurate near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

/// Least-squares fit of log(count) against log(rank) over the top `ranks` entries of
/// descending counts: the Zipf exponent (positive). Ranks are sampled at logarithmic spacing so
/// every decade weighs the same, and the flat tail of single writes is left out.
pub fn fit_exponent(counts_desc: &[u64], ranks: usize) -> Option<f64> {
    let usable = counts_desc.iter().take(ranks).take_while(|&&c| c > 1).count();
    let mut pts: Vec<(u64, u64)> = Vec::new();
    let mut r = 1.0f64;
    while (r as usize) <= usable {
        pts.push((r as u64, counts_desc[r as usize - 1]));
        r = (r * 1.25).max(r + 1.0);
    }
    fit_points(&pts)
}

/// Least-squares fit of log(count) against log(rank) over (rank, count) points: the Zipf
/// exponent (positive).
pub fn fit_points(points: &[(u64, u64)]) -> Option<f64> {
    let pts: Vec<(f64, f64)> = points.iter().filter(|p| p.0 > 0 && p.1 > 0).map(|&(r, c)| ((r as f64).ln(), (c as f64).ln())).collect();
    if pts.len() < 3 {
        return None;
    }
    let n = pts.len() as f64;
    let (sx, sy) = pts.iter().fold((0.0, 0.0), |a, p| (a.0 + p.0, a.1 + p.1));
    let (mx, my) = (sx / n, sy / n);
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (x, y) in &pts {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
    }
    Some(-sxy / sxx)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chi-square goodness of fit against the exact Zipf probabilities.
    fn chi_square(n: u64, s: f64, samples: usize, seed: u64) -> (f64, usize) {
        let z = Zipf::new(n, s).unwrap();
        let mut rng = Rng::new(seed);
        let mut counts = vec![0u64; n as usize + 1];
        for _ in 0..samples {
            let k = z.sample(&mut rng);
            assert!((1..=n).contains(&k));
            counts[k as usize] += 1;
        }
        let norm: f64 = (1..=n).map(|k| (k as f64).powf(-s)).sum();
        let mut chi = 0.0;
        for k in 1..=n {
            let expected = samples as f64 * (k as f64).powf(-s) / norm;
            chi += (counts[k as usize] as f64 - expected).powi(2) / expected;
        }
        (chi, n as usize - 1)
    }

    #[test]
    fn samples_follow_zipf_for_several_exponents() {
        for (s, seed) in [(0.5, 1u64), (0.99, 2), (1.0, 3), (1.5, 4)] {
            let (chi, dof) = chi_square(50, s, 200_000, seed);
            // The 99.9th percentile of chi-square with 49 degrees of freedom is about 85.
            assert!(chi < 85.0, "exponent {s} (seed {seed}): chi-square {chi:.1} with {dof} dof");
        }
    }

    #[test]
    fn fit_recovers_the_exponent() {
        let z = Zipf::new(10_000, 0.9).unwrap();
        let mut rng = Rng::new(9);
        let mut counts = vec![0u64; 10_001];
        for _ in 0..2_000_000 {
            counts[z.sample(&mut rng) as usize] += 1;
        }
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let fitted = fit_exponent(&counts, 100).unwrap();
        assert!((fitted - 0.9).abs() < 0.05, "fitted {fitted}");
        assert!(Zipf::new(0, 1.0).is_err() && Zipf::new(5, 0.0).is_err());
    }
}
