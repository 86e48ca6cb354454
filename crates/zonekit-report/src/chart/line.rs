//! Line charts ([`LineChart`], [`line_chart`]): several series with markers and a legend,
//! either axis linear or log.

use std::fmt::Write;

use super::axis::{all_integers, Scale};
use super::svg::{escape, marker, n, text_width, with_unit, Frame, FrameSpec, Swatch, Width, COLORS, DASH};

/// One line of a [`line_chart`] or [`LineChart`].
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// The empirical CDF of `samples` (NaNs left out): a step line through each distinct value
    /// `v` at the share of samples ≤ `v`, starting from 0 at the smallest, so a [`LineChart`]
    /// draws it as a CDF figure is drawn.
    pub fn cdf(name: &str, samples: &[f64]) -> Series {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|v| !v.is_nan()).collect();
        sorted.sort_by(f64::total_cmp);
        let total = sorted.len() as f64;
        let mut points = Vec::new();
        let mut i = 0;
        while i < sorted.len() {
            let v = sorted[i];
            let below = i as f64 / total;
            while i < sorted.len() && sorted[i] == v {
                i += 1;
            }
            points.push((v, below));
            points.push((v, i as f64 / total));
        }
        Series { name: name.into(), points }
    }

    /// The CDF of a histogram whose bin `i` counts the values `i × bin_width`: at each bin's
    /// value, the share of the counts up to and including it.
    pub fn cdf_of_histogram(name: &str, counts: &[u64], bin_width: f64) -> Series {
        let total = counts.iter().sum::<u64>().max(1) as f64;
        let mut so_far = 0;
        let points = counts
            .iter()
            .enumerate()
            .map(|(i, n)| {
                so_far += n;
                (i as f64 * bin_width, so_far as f64 / total)
            })
            .collect();
        Series { name: name.into(), points }
    }
}

/// A series with more points than this gets a marker on every k-th point only, so the markers
/// tell the series apart without hiding the line.
const MARKERS_MAX: usize = 12;

/// Lines over a numeric x axis, one colour and marker shape per series, a legend when there
/// are several, each axis linear or log.
///
/// ```
/// use zonekit_report::{LineChart, Series};
/// let svg = LineChart::new("WAF as zones grow", "zones per working set", "", "WAF", "")
///     .x_log()
///     .series(Series { name: "greedy".into(), points: vec![(1.0, 2.4), (10.0, 1.9), (100.0, 1.5)] })
///     .series(Series { name: "cbe".into(), points: vec![(1.0, 2.1), (10.0, 1.7), (100.0, 1.4)] })
///     .svg();
/// assert_eq!(svg.matches("<polyline").count(), 2);
/// ```
pub struct LineChart<'a> {
    title: String,
    x_label: String,
    y_label: String,
    series: Vec<std::borrow::Cow<'a, Series>>,
    x_log: bool,
    y_log: bool,
    markers: bool,
    paired: bool,
    width: Width,
    caption: String,
}

impl<'a> LineChart<'a> {
    /// A chart of `y_label` in `y_unit` against `x_label` in `x_unit` (units empty for ratios).
    pub fn new(title: &str, x_label: &str, x_unit: &str, y_label: &str, y_unit: &str) -> LineChart<'a> {
        LineChart {
            title: title.into(),
            x_label: with_unit(x_label, x_unit),
            y_label: with_unit(y_label, y_unit),
            series: Vec::new(),
            x_log: false,
            y_log: false,
            markers: true,
            paired: false,
            width: Width::Page,
            caption: String::new(),
        }
    }

    pub fn series(mut self, series: Series) -> LineChart<'a> {
        self.series.push(std::borrow::Cow::Owned(series));
        self
    }

    fn borrowed(mut self, series: &'a [Series]) -> LineChart<'a> {
        self.series.extend(series.iter().map(std::borrow::Cow::Borrowed));
        self
    }

    /// A log10 x axis; points with x <= 0 are left out.
    pub fn x_log(mut self) -> LineChart<'a> {
        self.x_log = true;
        self
    }

    /// A log10 y axis; points with y <= 0 are left out.
    pub fn y_log(mut self) -> LineChart<'a> {
        self.y_log = true;
        self
    }

    /// Whether points carry markers (the default).
    pub fn markers(mut self, on: bool) -> LineChart<'a> {
        self.markers = on;
        self
    }

    /// The series come in pairs, a measurement and what models it: each pair shares a colour
    /// and marker, the second of it dashed, so the eye pairs them and tells them apart.
    pub fn paired(mut self) -> LineChart<'a> {
        self.paired = true;
        self
    }

    /// The colour and marker index of series `k`, and whether it is dashed.
    fn style(&self, k: usize) -> (usize, bool) {
        if self.paired {
            (k / 2, k % 2 == 1)
        } else {
            (k, false)
        }
    }

    /// Draws for a paper's column or a report page (the default).
    pub fn width(mut self, width: Width) -> LineChart<'a> {
        self.width = width;
        self
    }

    /// A caption under the chart: which seed figure it mirrors and at what setting.
    pub fn caption(mut self, caption: &str) -> LineChart<'a> {
        self.caption = caption.into();
        self
    }

    /// The points of `s` that have a place on the axes.
    fn points<'s>(&self, s: &'s Series) -> impl Iterator<Item = (f64, f64)> + 's {
        let (x_log, y_log) = (self.x_log, self.y_log);
        s.points.iter().copied().filter(move |&(x, y)| x.is_finite() && y.is_finite() && (!x_log || x > 0.0) && (!y_log || y > 0.0))
    }

    /// The chart as a self-contained SVG document.
    pub fn svg(&self) -> String {
        let all: Vec<(f64, f64)> = self.series.iter().flat_map(|s| self.points(s)).collect();
        let range = |v: &mut dyn Iterator<Item = f64>| v.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let (x0, x1) = range(&mut all.iter().map(|p| p.0));
        let (y0, y1) = range(&mut all.iter().map(|p| p.1));
        let x = if self.x_log { Scale::log(x0, x1) } else { Scale::linear(x0.min(x1), x1, all_integers(all.iter().map(|p| p.0))) };
        // A linear y axis starts at 0 unless the data go below it, so that lines compare by height.
        let y = if self.y_log { Scale::log(y0, y1) } else { Scale::linear(y0.min(0.0), y1, all_integers(all.iter().map(|p| p.1))) };
        let font = self.width.font();
        let x_ticks = x.ticks();
        let last_tick = x_ticks.last().map_or(0.0, |t| text_width(&t.1, font) / 2.0 + 2.0);
        let x_label = if self.x_log && !self.x_label.contains("log") { format!("{} (log scale)", self.x_label) } else { self.x_label.clone() };
        let y_label = if self.y_log && !self.y_label.contains("log") { format!("{} (log scale)", self.y_label) } else { self.y_label.clone() };
        let legend: Vec<(String, &str, Swatch)> = self
            .series
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let (style, dashed) = self.style(k);
                (s.name.clone(), COLORS[style % COLORS.len()], Swatch::Line { marker: self.markers.then_some(style), dashed })
            })
            .collect();
        let mut frame = Frame::new(&FrameSpec {
            width: self.width,
            title: &self.title,
            y_label: &y_label,
            y,
            x_label: &x_label,
            x_ticks_height: font + 8.0,
            right_margin: last_tick,
            legend: &legend,
            caption: &self.caption,
        });
        let px = |v: f64| frame.left + x.ratio(v).clamp(0.0, 1.0) * (frame.right - frame.left);
        for (v, label) in &x_ticks {
            let at = n(px(*v));
            let _ = writeln!(
                frame.svg,
                r#"<line x1="{at}" y1="{}" x2="{at}" y2="{}" stroke="black"/><text x="{at}" y="{}" text-anchor="middle">{label}</text>"#,
                n(frame.bottom),
                n(frame.bottom + 4.0),
                n(frame.bottom + font + 4.0)
            );
        }
        for (k, s) in self.series.iter().enumerate() {
            let (style, dashed) = self.style(k);
            let color = COLORS[style % COLORS.len()];
            let points: Vec<(f64, f64)> = self.points(s.as_ref()).map(|(a, b)| (px(a), frame.y(&y, b))).collect();
            let text: Vec<String> = points.iter().map(|&(a, b)| format!("{},{}", n(a), n(b))).collect();
            let dash = if dashed { format!(r#" stroke-dasharray="{DASH}""#) } else { String::new() };
            let _ =
                writeln!(frame.svg, r#"<polyline fill="none" stroke="{color}" stroke-width="1.8"{dash} points="{}"><title>{}</title></polyline>"#, text.join(" "), escape(&s.name));
            if self.markers && !points.is_empty() {
                let every = points.len().div_ceil(MARKERS_MAX);
                for &(a, b) in points.iter().step_by(every) {
                    marker(&mut frame.svg, style, a, b, font * 0.3, color);
                }
            }
        }
        frame.svg.push_str("</svg>\n");
        frame.svg
    }
}

/// A line chart of several series with a legend; `x_log` plots log10(x) (x must be > 0).
pub fn line_chart(title: &str, x_label: &str, y_label: &str, series: &[Series], x_log: bool) -> String {
    let chart = LineChart::new(title, x_label, "", y_label, "").borrowed(series);
    if x_log {
        chart.x_log().svg()
    } else {
        chart.svg()
    }
}

#[cfg(test)]
mod tests {
    use super::super::well_formed;
    use super::*;

    #[test]
    fn line_chart_draws_every_series() {
        let s = vec![Series { name: "a".into(), points: vec![(1.0, 0.1), (100.0, 0.9)] }, Series { name: "b<".into(), points: vec![(10.0, 0.5)] }];
        let svg = line_chart("cdf", "x", "y", &s, true);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("b&lt;") && svg.contains("(log scale)"));
        well_formed(&svg).unwrap();
    }

    #[test]
    fn several_series_have_markers_and_a_legend() {
        let series = (0..3).map(|k| Series { name: format!("s{k}"), points: (0..100).map(|i| (i as f64, (i * k) as f64)).collect() });
        let mut chart = LineChart::new("t", "requests", "", "latency", "µs").width(Width::Column);
        for s in series {
            chart = chart.series(s);
        }
        let svg = chart.svg();
        well_formed(&svg).unwrap();
        assert_eq!(svg.matches("class=\"legend-entry\"").count(), 3);
        assert!(svg.contains("latency (µs)") && svg.contains(">requests</text>"));
        // Markers: a circle, square and triangle series, at most MARKERS_MAX (+ the legend's) each.
        assert!((3..=MARKERS_MAX + 1).contains(&svg.matches("<circle").count()));
        assert!(svg.contains("class=\"marker\"") && svg.contains("<polygon"));
        // x: 0..99 in whole numbers ticks at 0, 20, … 80; y: 0..198 at 0, 50, … 150.
        for tick in [">0<", ">20<", ">80<", ">150<"] {
            assert!(svg.contains(tick), "{tick}");
        }
        assert!(!svg.contains(".0<"), "whole-number axes");
    }

    /// A drive's curve and its model's share a colour and marker; the model's line (and its
    /// legend swatch) is dashed, the drive's solid.
    #[test]
    fn paired_series_share_a_colour_and_the_second_is_dashed() {
        let line = |name: &str, k: f64| Series { name: name.into(), points: vec![(1.0, k), (2.0, k + 1.0)] };
        let svg = LineChart::new("t", "zones", "", "KIOPS", "")
            .series(line("4 KiB drive", 1.0))
            .series(line("4 KiB model", 1.1))
            .series(line("8 KiB drive", 3.0))
            .series(line("8 KiB model", 3.2))
            .paired()
            .svg();
        well_formed(&svg).unwrap();
        let polylines: Vec<&str> = svg.lines().filter(|l| l.starts_with("<polyline")).collect();
        assert_eq!(polylines.len(), 4);
        let stroke = |l: &str| l.split("stroke=\"").nth(1).and_then(|r| r.split('"').next()).unwrap().to_string();
        assert_eq!(stroke(polylines[0]), stroke(polylines[1]), "a pair shares its colour");
        assert_ne!(stroke(polylines[0]), stroke(polylines[2]), "pairs differ");
        let dashed: Vec<bool> = polylines.iter().map(|l| l.contains("stroke-dasharray")).collect();
        assert_eq!(dashed, [false, true, false, true]);
        assert_eq!(svg.lines().filter(|l| l.starts_with("<line ") && l.contains("stroke-dasharray")).count(), 2, "the models' legend swatches are dashed");
    }

    #[test]
    fn a_cdf_steps_through_each_value_to_one() {
        let s = Series::cdf("gp", &[0.5, 0.1, 0.5, f64::NAN, 0.9]);
        assert_eq!(s.points, vec![(0.1, 0.0), (0.1, 0.25), (0.5, 0.25), (0.5, 0.75), (0.9, 0.75), (0.9, 1.0)]);
        assert!(Series::cdf("none", &[]).points.is_empty());
        let h = Series::cdf_of_histogram("gp", &[1, 0, 3], 0.01);
        assert_eq!(h.points, vec![(0.0, 0.25), (0.01, 0.25), (0.02, 1.0)]);
        assert_eq!(Series::cdf_of_histogram("empty", &[0, 0], 1.0).points, vec![(0.0, 0.0), (1.0, 0.0)], "no samples: a flat line, not NaN");
        well_formed(&LineChart::new("cdf", "GP", "", "CDF", "").series(s).series(h).svg()).unwrap();
    }

    #[test]
    fn log_log_axes() {
        let s = Series { name: "p".into(), points: vec![(1.0, 0.001), (10.0, 0.1), (1000.0, 10.0), (0.0, 1.0), (5.0, -1.0)] };
        let svg = LineChart::new("t", "size", "KiB", "share", "").x_log().y_log().series(s).svg();
        well_formed(&svg).unwrap();
        for tick in [">1<", ">10<", ">100<", ">1000<", ">0.001<", ">0.01<"] {
            assert!(svg.contains(tick), "{tick}");
        }
        let line = svg.lines().find(|l| l.starts_with("<polyline")).unwrap();
        assert_eq!(line.split("points=\"").nth(1).unwrap().split('"').next().unwrap().split(' ').count(), 3, "x or y <= 0 is left out");
    }
}
