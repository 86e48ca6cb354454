//! Value axes: where the ticks go and how they read.
//!
//! A linear axis ticks at multiples of a 1-2-5 step (0.5, 2, 20000), the smallest one that
//! leaves at most [`INTERVALS_MAX`] intervals, and only inside the data's range: a maximum of
//! 2.51 ticks at 0, 0.5, … 2.5, not at 0.63, 1.26, …. An axis whose data are all whole numbers
//! (blocks, zones, counts) never steps below 1 and prints no decimals. A log axis spans whole
//! decades and ticks at the powers of ten (with 2 and 5 between them when it spans one decade).

/// The most intervals between ticks a linear axis has: enough to read a value off, few enough
/// that the labels fit at a paper column's width.
pub(crate) const INTERVALS_MAX: f64 = 6.0;

/// A value axis: the range it spans and how values map onto it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
    integer: bool,
}

impl Scale {
    /// A linear axis over `lo..=hi`; `integer` when every value on it is a whole number. An
    /// empty or non-finite range becomes a one-wide one.
    pub(crate) fn linear(lo: f64, hi: f64, integer: bool) -> Scale {
        let (lo, hi) = match (lo.is_finite(), hi.is_finite()) {
            (true, true) if hi > lo => (lo, hi),
            (true, _) => (lo, lo + 1.0),
            _ => (0.0, 1.0),
        };
        Scale { lo, hi, log: false, integer }
    }

    /// A log10 axis from the decade at or below `lo` to the one at or above `hi`; values at or
    /// below 0 have no place on it and are left out by the charts.
    pub(crate) fn log(lo: f64, hi: f64) -> Scale {
        let lo = if lo > 0.0 && lo.is_finite() { lo } else { 1.0 };
        let hi = if hi >= lo && hi.is_finite() { hi } else { lo };
        let first = lo.log10().floor();
        let last = hi.log10().ceil().max(first + 1.0);
        Scale { lo: 10f64.powf(first), hi: 10f64.powf(last), log: true, integer: false }
    }

    /// Where `v` falls on the axis: 0 at its start, 1 at its end (outside for values outside).
    pub(crate) fn ratio(&self, v: f64) -> f64 {
        if self.log {
            (v.max(f64::MIN_POSITIVE).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    /// The ticks and their labels, in increasing order.
    pub(crate) fn ticks(&self) -> Vec<(f64, String)> {
        if self.log {
            return log_ticks(self.lo, self.hi);
        }
        let step = tick_step(self.hi - self.lo, self.integer);
        linear_ticks(self.lo, self.hi, step).into_iter().map(|v| (v, tick_label(v, step))).collect()
    }
}

/// The smallest 1-2-5 step (…, 0.5, 1, 2, 5, 10, …) that cuts `span` into at most
/// [`INTERVALS_MAX`] intervals; at least 1 on an `integer` axis.
pub(crate) fn tick_step(span: f64, integer: bool) -> f64 {
    let span = if span > 0.0 && span.is_finite() { span } else { 1.0 };
    let magnitude = 10f64.powf((span / INTERVALS_MAX).log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * magnitude).find(|step| span / step <= INTERVALS_MAX * (1.0 + 1e-9)).unwrap_or(10.0 * magnitude);
    if integer {
        step.max(1.0)
    } else {
        step
    }
}

/// The multiples of `step` in `lo..=hi`, each computed from its index so that no rounding
/// error accumulates (0.1 × 3 is printed as 0.3, whatever its last bit).
pub(crate) fn linear_ticks(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last).map(|k| if k == 0 { 0.0 } else { k as f64 * step }).collect()
}

/// A tick printed with as many decimals as its step needs: every label on an axis has the
/// same number, whole-number steps have none.
pub(crate) fn tick_label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 { 0 } else { (-step.log10() - 1e-9).ceil().max(0.0) as usize };
    let label = format!("{v:.decimals$}");
    if label.starts_with('-') && label.trim_start_matches(['-', '0', '.']).is_empty() {
        label[1..].to_string()
    } else {
        label
    }
}

/// The powers of ten in `lo..=hi` (every second or third one when there are many), with 2 and 5
/// times each between them when the axis spans one decade only.
fn log_ticks(lo: f64, hi: f64) -> Vec<(f64, String)> {
    let (first, last) = (lo.log10().round() as i32, hi.log10().round() as i32);
    let decades = (last - first).max(1);
    let every = (decades as f64 / INTERVALS_MAX).ceil().max(1.0) as i32;
    let mut ticks = Vec::new();
    for exponent in (first..=last).filter(|e| (e - first) % every == 0) {
        let power = 10f64.powi(exponent);
        ticks.push((power, log_label(power)));
        if decades == 1 && exponent < last {
            ticks.extend([2.0, 5.0].map(|m| (m * power, log_label(m * power))));
        }
    }
    ticks
}

/// A log tick: plain decimals from 0.001 to 100000, `2e6` style beyond.
fn log_label(v: f64) -> String {
    let exponent = v.log10().floor();
    if (-3.0..6.0).contains(&exponent) {
        let decimals = (-exponent).max(0.0) as usize;
        format!("{v:.decimals$}")
    } else {
        let mantissa = (v / 10f64.powf(exponent)).round();
        format!("{mantissa}e{exponent}")
    }
}

/// Whether every finite value is a whole number, so that its axis ticks and labels are whole.
pub(crate) fn all_integers(values: impl IntoIterator<Item = f64>) -> bool {
    values.into_iter().filter(|v| v.is_finite()).all(|v| v.fract() == 0.0)
}

/// A value written on a chart: whole numbers as integers ("3", not "3.00"), others to about
/// three significant figures.
pub(crate) fn format_value(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(scale: Scale) -> Vec<f64> {
        scale.ticks().into_iter().map(|t| t.0).collect()
    }

    fn labels(scale: Scale) -> Vec<String> {
        scale.ticks().into_iter().map(|t| t.1).collect()
    }

    #[test]
    fn ticks_are_round_numbers_inside_the_data() {
        assert_eq!(values(Scale::linear(0.0, 2.51, false)), [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]);
        assert_eq!(labels(Scale::linear(0.0, 2.51, false)), ["0.0", "0.5", "1.0", "1.5", "2.0", "2.5"]);
        assert_eq!(values(Scale::linear(0.0, 63002.0, true)), [0.0, 20000.0, 40000.0, 60000.0]);
        assert_eq!(labels(Scale::linear(0.0, 63002.0, true)), ["0", "20000", "40000", "60000"]);
        assert_eq!(labels(Scale::linear(0.0, 0.3, false)), ["0.00", "0.05", "0.10", "0.15", "0.20", "0.25", "0.30"]);
        assert_eq!(labels(Scale::linear(-1.0, 1.0, false)), ["-1.0", "-0.5", "0.0", "0.5", "1.0"]);
        assert_eq!(labels(Scale::linear(0.0, 1.0, false)), ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
        for max in [0.7, 3.3, 17.0, 99.0, 101.0, 2.5e9] {
            let ticks = values(Scale::linear(0.0, max, false));
            assert!((3..=7).contains(&ticks.len()), "{max}: {ticks:?}");
            assert!(*ticks.last().unwrap() <= max);
        }
    }

    #[test]
    fn integer_axes_have_integer_ticks_and_labels() {
        assert_eq!(labels(Scale::linear(0.0, 3.0, true)), ["0", "1", "2", "3"]);
        assert_eq!(labels(Scale::linear(0.0, 0.0, true)), ["0", "1"], "all-zero counts");
        assert!(labels(Scale::linear(0.0, 17.0, true)).iter().all(|l| !l.contains('.')));
        assert!(all_integers([0.0, 3.0, f64::NAN]) && !all_integers([0.5]));
        assert_eq!(format_value(3.0), "3");
        assert_eq!(format_value(63002.0), "63002");
        assert_eq!(format_value(1.234), "1.23");
    }

    #[test]
    fn log_axes_tick_at_decades() {
        let scale = Scale::log(3.0, 4000.0);
        assert_eq!(labels(scale), ["1", "10", "100", "1000", "10000"]);
        assert!((scale.ratio(100.0) - 0.5).abs() < 1e-12);
        assert_eq!(labels(Scale::log(2.0, 9.0)), ["1", "2", "5", "10"]);
        assert_eq!(labels(Scale::log(0.01, 0.5)), ["0.01", "0.1", "1"]);
        assert_eq!(labels(Scale::log(1.0, 1e12)), ["1", "100", "10000", "1e6", "1e8", "1e10", "1e12"]);
        assert_eq!(labels(Scale::log(0.0, -1.0)), ["1", "2", "5", "10"], "no positive data: one decade");
    }
}
