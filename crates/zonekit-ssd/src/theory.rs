//! Device GC in closed form: the write amplification of uniform random writes into a region of
//! flash that has a share of spare space of its own, and what FDP's segregation of two streams
//! makes of it (Allison et al., "Towards Efficient Flash Caches with Emerging NVMe Flexible
//! Data Placement SSDs", EuroSys '25, Theorem 1: DLWA = 1/(1 − δ), δ from the Lambert W
//! function of the regions' sizes).
//!
//! The derivation is ours (the stored copies of the paper we could read hold its abstract, not
//! the theorem's statement); it is the classic large-unit analysis of FIFO reclaim (Desnoyers,
//! "Analytic modeling of SSD write performance", SYSTOR '12; Hu et al., SYSTOR '09):
//!
//! - A region holds `live` blocks that the host overwrites uniformly at random, on `physical`
//!   blocks of flash; α = physical / live > 1.
//! - Reclaim units are written in order and reclaimed oldest first (FIFO), each with a share δ
//!   of its blocks still valid. Between a unit's writing and its reclaim the region programs
//!   `physical` blocks, of which a share 1 − δ are host writes (the rest are GC's moves), so a
//!   block survives `physical × (1 − δ)` host overwrites of `live` blocks:
//!   δ = (1 − 1/live)^(physical (1 − δ)) → e^(−α (1 − δ)) for a large region.
//! - Rewritten as (−αδ) e^(−αδ) = −α e^(−α): −αδ = W₀(−α e^(−α)), the principal branch (the
//!   other root, W₋₁, is the trivial δ = 1). Each reclaimed unit gives (1 − δ) of a unit to the
//!   host for δ of moves: the region's write amplification is 1 / (1 − δ).
//!
//! With large units greedy reclaim picks the same units as FIFO under uniform writes (every
//! unit of one age holds nearly the same share of valid blocks), so the form is greedy's limit
//! too (our reading; with small units greedy does better: `docs/results/fdp-theory.md` measures
//! by how much).
//!
//! FDP's set-up: a small-object cache (SOC) overwrites `soc` blocks at random and a large-object
//! cache (LOC) writes a log. Under separate handles the LOC's units die whole (no moves), so all
//! the device's spare (`physical − live`, every block not live) serves the SOC:
//! α = (soc + spare) / soc. Without FDP both share units and no such form holds.

/// The principal branch W₀ of the Lambert W function (w e^w = x, w ≥ −1) for x ≥ −1/e, by
/// Halley's iteration from a start that is close on every part of the domain. `NaN` below −1/e
/// or for a `NaN` argument.
pub fn lambert_w0(x: f64) -> f64 {
    const MINUS_INV_E: f64 = -0.367_879_441_171_442_33;
    if x.is_nan() || x < MINUS_INV_E - 1e-15 {
        return f64::NAN;
    }
    if x == f64::INFINITY {
        return f64::INFINITY;
    }
    if x <= MINUS_INV_E {
        return -1.0;
    }
    if x == 0.0 {
        return 0.0;
    }
    // Start: the branch point's series near −1/e, the Taylor series near 0, ln x − ln ln x far out.
    let mut w = if x < -0.25 {
        let p = (2.0 * (std::f64::consts::E * x + 1.0)).sqrt();
        -1.0 + p - p * p / 3.0 + 11.0 / 72.0 * p * p * p
    } else if x < 3.0 {
        // ln(1 + x) is within a few per cent of W₀ here, and never on the wrong side of −1.
        (1.0 + x).ln() * (1.0 - (1.0 + x).ln() / (2.0 + x))
    } else {
        let l = x.ln();
        l - l.ln()
    };
    for _ in 0..64 {
        let e = w.exp();
        let f = w * e - x;
        let wp1 = w + 1.0;
        if wp1.abs() < 1e-300 {
            break;
        }
        // Halley: f / (f' − f f'' / (2 f')), f' = e^w (w + 1), f'' = e^w (w + 2).
        let step = f / (e * wp1 - (w + 2.0) * f / (2.0 * wp1));
        let next = w - step;
        if (next - w).abs() <= 4.0 * f64::EPSILON * (1.0 + next.abs()) {
            return next;
        }
        w = next;
    }
    w
}

/// The share δ of a reclaimed unit's blocks still valid, in a region of uniform random
/// overwrites with `alpha` = physical / live blocks (FIFO reclaim, large units): the root in
/// (0, 1) of δ = e^(−α (1 − δ)), δ = −W₀(−α e^(−α)) / α. `NaN` unless α > 1.
pub fn valid_share(alpha: f64) -> f64 {
    if alpha.is_nan() || alpha <= 1.0 {
        return f64::NAN;
    }
    if alpha.is_infinite() {
        return 0.0;
    }
    (-lambert_w0(-alpha * (-alpha).exp()) / alpha).clamp(0.0, 1.0)
}

/// Write amplification of uniform random overwrites of `live` blocks on `physical` blocks:
/// 1 / (1 − δ).
pub fn uniform_waf(live: f64, physical: f64) -> f64 {
    1.0 / (1.0 - valid_share(physical / live))
}

/// Theorem 1 as derived in the module doc: the small-object cache's DLWA when FDP keeps it apart
/// from a log-structured large-object cache, with `soc` blocks of it live and `spare` blocks of
/// the device not live (over-provisioning plus every logical block the caches leave unused).
pub fn segregated_soc_dlwa(soc: f64, spare: f64) -> f64 {
    uniform_waf(soc, soc + spare)
}

/// The device's DLWA under the same segregation when the SOC takes `soc_writes` of the host's
/// writes and the log's units never need moves: 1 + w × δ / (1 − δ).
pub fn segregated_device_dlwa(soc: f64, spare: f64, soc_writes: f64) -> f64 {
    1.0 + soc_writes * (segregated_soc_dlwa(soc, spare) - 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * (1.0 + b.abs())
    }

    #[test]
    fn lambert_w_matches_known_values() {
        // Ω = W(1); W(2), W(20) (K. M. Briggs' table); W(e) = 1; W(−1/e) = −1; W(x e^x) = x.
        for (x, w) in [
            (1.0, 0.567_143_290_409_784),
            (2.0, 0.852_605_502_013_725_5),
            (20.0, 2.205_003_278_024_06),
            (std::f64::consts::E, 1.0),
            (0.0, 0.0),
            (-(-1.0f64).exp(), -1.0),
            (-0.5 * (-0.5f64).exp(), -0.5),
            (-0.9 * (-0.9f64).exp(), -0.9),
            (1e-10, 1e-10 - 1e-20),
            (1e6, 11.383_358_086_140_053),
        ] {
            assert!(close(lambert_w0(x), w, 1e-12), "W({x}) = {} ≠ {w}", lambert_w0(x));
        }
    }

    #[test]
    fn lambert_w_inverts_w_exp_w_across_the_domain() {
        let mut x = -0.367_879;
        while x < 1e9 {
            let w = lambert_w0(x);
            assert!(w >= -1.0 && close(w * w.exp(), x, 1e-12), "x {x}: w {w}, w e^w {}", w * w.exp());
            x = if x < 0.0 { x + 0.01 } else { x * 1.7 + 1e-3 };
        }
        assert!(lambert_w0(-0.4).is_nan() && lambert_w0(f64::NAN).is_nan());
        assert_eq!(lambert_w0(f64::INFINITY), f64::INFINITY);
    }

    #[test]
    fn the_valid_share_solves_its_fixed_point_and_has_the_right_limits() {
        for alpha in [1.01, 1.07, 1.28, 1.5, 2.0, 2.75, 5.0, 20.0] {
            let d = valid_share(alpha);
            assert!((0.0..1.0).contains(&d), "α {alpha}: δ {d}");
            assert!(close(d, (-alpha * (1.0 - d)).exp(), 1e-12), "α {alpha}: δ {d} is no fixed point");
        }
        // More spare, fewer valid blocks in a victim; none left as spare grows without bound,
        // all of them as it vanishes.
        assert!(valid_share(1.2) > valid_share(1.3));
        assert!(valid_share(100.0) < 1e-40 && valid_share(1.0 + 1e-6) > 0.999);
        assert!(valid_share(1.0).is_nan() && valid_share(0.5).is_nan() && valid_share(f64::NAN).is_nan());
        assert_eq!(valid_share(f64::INFINITY), 0.0);
    }

    #[test]
    fn the_closed_form_gives_values_computed_apart_from_it() {
        // Values of the fixed point computed apart from this code (Python, Halley on W to full
        // precision): α = 1.28 (a "28 %" drive) gives δ = 0.59700 → 2.4814; α = 2 gives δ =
        // 0.20319 → 1.2550; α = 1.07 gives δ = 0.87208 → 7.8172.
        assert!(close(uniform_waf(1.0, 1.28), 2.481_361, 1e-6), "{}", uniform_waf(1.0, 1.28));
        assert!(close(uniform_waf(1.0, 1.07), 7.817_160, 1e-6), "{}", uniform_waf(1.0, 1.07));
        assert!(close(uniform_waf(1.0, 2.0), 1.255_001, 1e-6), "{}", uniform_waf(1.0, 2.0));
        // FDP's set-up: a SOC of 4 % of a full device with 7 % spare sees α = 2.75.
        assert!(close(segregated_soc_dlwa(0.04, 0.07), uniform_waf(0.04, 0.11), 1e-15));
        assert!(close(segregated_device_dlwa(0.04, 0.07, 0.5), 1.0 + 0.5 * (segregated_soc_dlwa(0.04, 0.07) - 1.0), 1e-15));
        assert_eq!(segregated_device_dlwa(0.04, 0.07, 0.0), 1.0);
    }
}
