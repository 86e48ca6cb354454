//! Charts over categories: grouped and stacked bars ([`BarChart`], [`bar_chart`]) and box
//! plots ([`box_chart`], [`grouped_box_chart`]).

use std::fmt::Write;

use super::axis::{all_integers, format_value, Scale};
use super::svg::{escape, n, text_width, with_unit, Frame, FrameSpec, Swatch, Width, COLORS};

/// A category label longer than this is cut, so that a rotated label cannot take the page.
const CATEGORY_CHARS_MAX: usize = 24;

/// Category labels below the plot: level when each fits its slot, else rotated by 40°.
struct Categories {
    labels: Vec<String>,
    rotated: bool,
    height: f64,
}

impl Categories {
    fn new(labels: &[String], slot: f64, font: f64) -> Categories {
        let labels: Vec<String> = labels
            .iter()
            .map(|l| if l.chars().count() > CATEGORY_CHARS_MAX { format!("{}…", l.chars().take(CATEGORY_CHARS_MAX - 1).collect::<String>()) } else { l.clone() })
            .collect();
        let widest = labels.iter().map(|l| text_width(l, font)).fold(0.0, f64::max);
        let rotated = widest > slot - 4.0;
        let height = if rotated { widest * 0.643 + font * 1.6 } else { font + 8.0 };
        Categories { labels, rotated, height }
    }

    fn draw(&self, frame: &mut Frame, slot: f64) {
        let font = frame.font;
        for (i, label) in self.labels.iter().enumerate() {
            let x = frame.left + (i as f64 + 0.5) * slot;
            let _ = if self.rotated {
                writeln!(frame.svg, r#"<text transform="translate({},{}) rotate(-40)" text-anchor="end">{}</text>"#, n(x + font * 0.3), n(frame.bottom + font), escape(label))
            } else {
                writeln!(frame.svg, r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#, n(x), n(frame.bottom + font + 3.0), escape(label))
            };
        }
    }
}

/// The plot's width before its frame is laid out, to decide whether category labels fit: the
/// frame's left margin depends on the tick labels, so this takes a generous one.
fn slot_estimate(width: Width, count: usize) -> f64 {
    (width.units() - width.font() * 7.0 - width.font()) / count.max(1) as f64
}

/// Bars over categories: one bar per category and series, the series side by side in each
/// category (grouped, the default) or on top of each other (stacked), one colour per series and
/// a legend naming each series once when there are several.
///
/// ```
/// use zonekit_report::BarChart;
/// let svg = BarChart::new("WAF by placement", "WAF", "", "placement", vec!["greedy".into(), "sepbit".into()])
///     .series("zns", vec![1.8, 1.4])
///     .series("fdp", vec![2.1, 1.6])
///     .svg();
/// assert_eq!(svg.matches("class=\"legend-entry\"").count(), 2);
/// ```
#[derive(Clone, Debug)]
pub struct BarChart {
    title: String,
    y_label: String,
    x_label: String,
    categories: Vec<String>,
    series: Vec<(String, Vec<f64>)>,
    stacked: bool,
    width: Width,
    caption: String,
}

impl BarChart {
    /// A chart of `categories` along x (named `x_label`, or nothing when empty) against a value
    /// `y_label` in `y_unit` (empty for a ratio such as WAF).
    pub fn new(title: &str, y_label: &str, y_unit: &str, x_label: &str, categories: Vec<String>) -> BarChart {
        BarChart {
            title: title.into(),
            y_label: with_unit(y_label, y_unit),
            x_label: x_label.into(),
            categories,
            series: Vec::new(),
            stacked: false,
            width: Width::Page,
            caption: String::new(),
        }
    }

    /// Adds a series: one value per category, in the categories' order; a NaN draws no bar.
    ///
    /// # Panics
    /// If there are not as many values as categories.
    pub fn series(mut self, name: &str, values: Vec<f64>) -> BarChart {
        assert_eq!(values.len(), self.categories.len(), "BarChart::series {name}: one value per category");
        self.series.push((name.into(), values));
        self
    }

    /// Stacks the series in each category (negative values are drawn as 0).
    pub fn stacked(mut self) -> BarChart {
        self.stacked = true;
        self
    }

    /// Draws for a paper's column or a report page (the default).
    pub fn width(mut self, width: Width) -> BarChart {
        self.width = width;
        self
    }

    /// A caption under the chart: which seed figure it mirrors and at what setting.
    pub fn caption(mut self, caption: &str) -> BarChart {
        self.caption = caption.into();
        self
    }

    /// The chart as a self-contained SVG document.
    pub fn svg(&self) -> String {
        let values = self.series.iter().flat_map(|s| s.1.iter().copied()).filter(|v| v.is_finite());
        let integer = all_integers(values.clone());
        let (lo, hi) = if self.stacked {
            let total = |c: usize| self.series.iter().map(|s| s.1[c]).filter(|v| v.is_finite() && *v > 0.0).sum::<f64>();
            (0.0, (0..self.categories.len()).map(total).fold(0.0, f64::max))
        } else {
            (values.clone().fold(0.0, f64::min), values.fold(0.0, f64::max))
        };
        let hi = if hi > lo { hi + (hi - lo) * 0.05 } else { lo + 1.0 };
        let scale = Scale::linear(lo, hi, integer);
        let font = self.width.font();
        let categories = Categories::new(&self.categories, slot_estimate(self.width, self.categories.len()), font);
        let legend: Vec<(String, &str, Swatch)> = self.series.iter().enumerate().map(|(k, s)| (s.0.clone(), COLORS[k % COLORS.len()], Swatch::Bar)).collect();
        let mut frame = Frame::new(&FrameSpec {
            width: self.width,
            title: &self.title,
            y_label: &self.y_label,
            y: scale,
            x_label: &self.x_label,
            x_ticks_height: categories.height,
            right_margin: font,
            legend: &legend,
            caption: &self.caption,
        });
        let slot = (frame.right - frame.left) / self.categories.len().max(1) as f64;
        let bars_in_slot = if self.stacked { 1 } else { self.series.len().max(1) };
        let bar_width = slot * if self.stacked { 0.6 } else { 0.8 } / bars_in_slot as f64;
        let zero = frame.y(&scale, 0.0);
        // Values are written over the bars when every one fits its bar, so none is left out.
        let labelled = !self.stacked && self.series.iter().flat_map(|s| s.1.iter()).filter(|v| v.is_finite()).all(|&v| text_width(&format_value(v), font) <= bar_width + 2.0);
        let mut base = vec![0.0f64; self.categories.len()];
        for (k, (name, series_values)) in self.series.iter().enumerate() {
            let color = COLORS[k % COLORS.len()];
            for (c, &v) in series_values.iter().enumerate().filter(|(_, v)| v.is_finite()) {
                let (x, from, to) = if self.stacked {
                    let from = base[c];
                    base[c] += v.max(0.0);
                    (frame.left + c as f64 * slot + slot * 0.2, from, base[c])
                } else {
                    (frame.left + c as f64 * slot + slot * 0.1 + k as f64 * bar_width, 0.0, v)
                };
                let (y_from, y_to) = (frame.y(&scale, from), frame.y(&scale, to));
                let (y, height) = (y_from.min(y_to), (y_from - y_to).abs());
                let tip = if name.is_empty() { format!("{}: {}", self.categories[c], format_value(v)) } else { format!("{name}, {}: {}", self.categories[c], format_value(v)) };
                let _ =
                    writeln!(frame.svg, r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{color}"><title>{}</title></rect>"#, n(x), n(y), n(bar_width), n(height), escape(&tip));
                if labelled {
                    let label = format_value(v);
                    let label_y = if v >= 0.0 { y - 4.0 } else { y + height + font };
                    let _ = writeln!(frame.svg, r#"<text x="{}" y="{}" text-anchor="middle">{label}</text>"#, n(x + bar_width / 2.0), n(label_y));
                }
            }
        }
        if lo < 0.0 {
            let _ = writeln!(frame.svg, r#"<line x1="{}" y1="{z}" x2="{}" y2="{z}" stroke="black"/>"#, frame.left, frame.right, z = n(zero));
        }
        categories.draw(&mut frame, slot);
        frame.svg.push_str("</svg>\n");
        frame.svg
    }
}

/// A vertical bar chart with a labelled y axis and value labels over the bars when they all fit.
pub fn bar_chart(title: &str, y_label: &str, bars: &[(String, f64)]) -> String {
    let (categories, values) = bars.iter().cloned().unzip();
    BarChart::new(title, y_label, "", "", categories).series("", values).svg()
}

/// A box plot per label: (label, [lower whisker, Q1, median, Q3, upper whisker]) on a
/// 0..=`y_max` axis.
pub fn box_chart(title: &str, y_label: &str, y_max: f64, boxes: &[(String, [f64; 5])]) -> String {
    let y_max = if y_max > 0.0 && y_max.is_finite() { y_max } else { 1.0 };
    let scale = Scale::linear(0.0, y_max, false);
    let width = Width::Page;
    let labels: Vec<String> = boxes.iter().map(|b| b.0.clone()).collect();
    let categories = Categories::new(&labels, slot_estimate(width, boxes.len()), width.font());
    let mut frame = Frame::new(&FrameSpec { width, title, y_label, y: scale, x_label: "", x_ticks_height: categories.height, right_margin: 0.0, legend: &[], caption: "" });
    let slot = (frame.right - frame.left) / boxes.len().max(1) as f64;
    let box_width = (slot * 0.6).min(70.0);
    for (i, (_, [lo, q1, med, q3, hi])) in boxes.iter().enumerate() {
        let c = frame.left + (i as f64 + 0.5) * slot;
        let x = c - box_width / 2.0;
        let y = |v: f64| n(frame.y(&scale, v));
        let box_height = (frame.y(&scale, *q1) - frame.y(&scale, *q3)).max(1.0);
        let line = format!(
            r##"<line x1="{c}" y1="{}" x2="{c}" y2="{}" stroke="black"/><rect x="{}" y="{}" width="{}" height="{}" fill="#9ab8d8" stroke="black"/><line x1="{}" y1="{m}" x2="{}" y2="{m}" stroke="black" stroke-width="2.5"/>"##,
            y(*hi),
            y(*lo),
            n(x),
            y(*q3),
            n(box_width),
            n(box_height),
            n(x),
            n(x + box_width),
            c = n(c),
            m = y(*med),
        );
        frame.svg.push_str(&line);
        frame.svg.push('\n');
    }
    categories.draw(&mut frame, slot);
    frame.svg.push_str("</svg>\n");
    frame.svg
}

/// Box plots over categories, as [`BarChart`] groups bars: per category one box per series,
/// side by side, a colour per series and a legend when there are several. Each series gives per
/// category `[lower whisker, Q1, median, Q3, upper whisker]`, or `None` where it has nothing to
/// show (a class never reclaimed): the slot stays empty rather than drawing a box at 0.
///
/// ```
/// use zonekit_report::{grouped_box_chart, Width};
/// let classes = vec!["1".to_string(), "6".to_string()];
/// let svg = grouped_box_chart("GP", "GP", "", 1.0, "class", Width::Column, &classes, &[
///     ("FK".into(), vec![Some([0.8, 0.9, 1.0, 1.0, 1.0]), Some([0.2, 0.4, 0.5, 0.7, 0.9])]),
///     ("ZB-OPT".into(), vec![None, Some([0.5, 0.8, 0.9, 0.95, 1.0])]),
/// ]);
/// assert_eq!(svg.matches("class=\"legend-entry\"").count(), 2);
/// ```
#[allow(clippy::too_many_arguments)]
pub fn grouped_box_chart(
    title: &str,
    y_label: &str,
    unit: &str,
    y_max: f64,
    x_label: &str,
    width: Width,
    categories: &[String],
    series: &[(String, Vec<Option<[f64; 5]>>)],
) -> String {
    for (name, boxes) in series {
        assert_eq!(boxes.len(), categories.len(), "grouped_box_chart: series {name:?} needs one box (or None) per category");
    }
    let y_max = if y_max > 0.0 && y_max.is_finite() { y_max } else { 1.0 };
    let scale = Scale::linear(0.0, y_max, false);
    let labels = Categories::new(categories, slot_estimate(width, categories.len()), width.font());
    let legend: Vec<(String, &str, Swatch)> = series.iter().enumerate().map(|(k, s)| (s.0.clone(), COLORS[k % COLORS.len()], Swatch::Bar)).collect();
    let y_label = with_unit(y_label, unit);
    let mut frame = Frame::new(&FrameSpec { width, title, y_label: &y_label, y: scale, x_label, x_ticks_height: labels.height, right_margin: 0.0, legend: &legend, caption: "" });
    let slot = (frame.right - frame.left) / categories.len().max(1) as f64;
    let group = slot * 0.8;
    let box_width = (group / series.len().max(1) as f64 * 0.8).min(40.0);
    for (k, (name, boxes)) in series.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        for (i, b) in boxes.iter().enumerate() {
            let Some([lo, q1, med, q3, hi]) = *b else { continue };
            let c = frame.left + i as f64 * slot + (slot - group) / 2.0 + (k as f64 + 0.5) * group / series.len().max(1) as f64;
            let x = c - box_width / 2.0;
            let y = |v: f64| n(frame.y(&scale, v));
            let box_height = (frame.y(&scale, q1) - frame.y(&scale, q3)).max(1.0);
            let _ = writeln!(
                frame.svg,
                r#"<g><title>{}, {}: whiskers {}–{}, Q1 {}, median {}, Q3 {}</title><line x1="{c}" y1="{}" x2="{c}" y2="{}" stroke="black"/><rect x="{}" y="{}" width="{}" height="{}" fill="{color}" fill-opacity="0.75" stroke="black"/><line x1="{}" y1="{m}" x2="{}" y2="{m}" stroke="black" stroke-width="2.5"/></g>"#,
                escape(name),
                escape(&categories[i]),
                format_value(lo),
                format_value(hi),
                format_value(q1),
                format_value(med),
                format_value(q3),
                y(hi),
                y(lo),
                n(x),
                y(q3),
                n(box_width),
                n(box_height),
                n(x),
                n(x + box_width),
                c = n(c),
                m = y(med),
            );
        }
    }
    labels.draw(&mut frame, slot);
    frame.svg.push_str("</svg>\n");
    frame.svg
}

#[cfg(test)]
mod tests {
    use super::super::well_formed;
    use super::*;

    fn interfaces_chart(width: Width) -> String {
        let placements: Vec<String> = ["none", "sepbit", "mida", "dac", "warcip", "fadac", "lifetime-oracle-long-name"].map(String::from).to_vec();
        let mut chart = BarChart::new("Total WAF by placement & interface", "WAF", "", "placement", placements).width(width);
        for (k, interface) in ["zns", "fdp:2", "fdp:8", "conventional", "fdp:2-ii", "fdp:8-ii"].iter().enumerate() {
            chart = chart.series(interface, (0..7).map(|p| 1.0 + 0.1 * (p + k) as f64).collect());
        }
        chart.svg()
    }

    #[test]
    fn grouped_bars_have_a_legend_naming_each_series_once() {
        for width in [Width::Page, Width::Column] {
            let svg = interfaces_chart(width);
            well_formed(&svg).unwrap();
            assert_eq!(svg.matches("<rect x=").count(), 42, "7 placements × 6 interfaces");
            assert_eq!(svg.matches("class=\"legend-entry\"").count(), 6);
            for interface in ["zns", "fdp:2", "fdp:8", "conventional", "fdp:2-ii", "fdp:8-ii"] {
                assert_eq!(svg.matches(&format!(">{interface}</text>")).count(), 1, "{interface} once in the legend");
            }
            // Each series has one colour, and 7 bars of it.
            for color in &COLORS[..6] {
                assert_eq!(svg.matches(&format!("fill=\"{color}\"><title>")).count(), 7);
            }
            assert!(svg.contains(">placement</text>") && svg.contains("lifetime-oracle-long-na…"));
            // Nothing drawn past the right edge.
            let right = width.units();
            for x in svg.split(" x=\"").skip(1).map(|s| s.split('"').next().unwrap().parse::<f64>().unwrap()) {
                assert!(x <= right, "x {x} beyond {right}");
            }
        }
    }

    #[test]
    fn one_series_has_no_legend_and_round_ticks() {
        let svg = bar_chart("WAF", "WAF", &[("a".into(), 2.51), ("b".into(), 1.0)]);
        well_formed(&svg).unwrap();
        assert!(!svg.contains("legend"));
        for tick in ["0.0", "0.5", "1.0", "1.5", "2.0", "2.5"] {
            assert!(svg.contains(&format!(">{tick}</text>")), "{tick}");
        }
        assert!(!svg.contains(">0.63</text>") && svg.contains(">2.51</text>"), "the value label is the value");
    }

    #[test]
    fn integer_values_get_integer_labels() {
        let svg = bar_chart("zones", "zones", &[("a".into(), 3.0), ("b".into(), 0.0)]);
        assert!(svg.contains(">0</text>") && svg.contains(">3</text>") && !svg.contains("0.00") && !svg.contains(".5<"), "{svg}");
        let svg = bar_chart("blocks", "blocks", &[("a".into(), 63002.0)]);
        for tick in ["0", "20000", "40000", "60000", "63002"] {
            assert!(svg.contains(&format!(">{tick}</text>")), "{tick}");
        }
    }

    #[test]
    fn stacked_bars_reach_the_sum() {
        let chart = BarChart::new("t", "GiB written", "GiB", "", vec!["a".into(), "b".into()])
            .series("user", vec![2.0, 1.0])
            .series("gc", vec![1.0, f64::NAN])
            .stacked()
            .caption("Mirrors nothing & nobody: a test");
        let svg = chart.svg();
        well_formed(&svg).unwrap();
        assert_eq!(svg.matches("<rect x=").count(), 3, "a NaN draws nothing");
        assert!(svg.contains("GiB written (GiB)") && svg.contains("class=\"caption\"") && svg.contains("nothing &amp; nobody"));
        // The stacked axis runs to the largest sum (3), so it ticks at 3.
        assert!(svg.contains(">3</text>"));
    }

    #[test]
    fn grouped_box_chart_draws_a_box_per_series_and_category_and_none_for_a_missing_one() {
        let categories: Vec<String> = ["1", "2", "6"].map(String::from).to_vec();
        let some = Some([0.1, 0.2, 0.3, 0.5, 0.9]);
        let svg = grouped_box_chart("gp", "GP", "", 1.0, "class", Width::Column, &categories, &[("FK".into(), vec![some, None, some]), ("ZB-OPT".into(), vec![some, some, some])]);
        well_formed(&svg).unwrap();
        assert_eq!(svg.matches("<rect x=").count(), 5, "no box where a series has none");
        assert_eq!(svg.matches("class=\"legend-entry\"").count(), 2);
        assert!(svg.contains(">class</text>"));
    }

    #[test]
    fn box_chart_draws_one_box_per_label() {
        let svg = box_chart("gp", "GP", 1.0, &[("a".into(), [0.1, 0.2, 0.3, 0.5, 0.9]), ("b".into(), [0.0, 0.5, 0.6, 0.7, 1.0])]);
        assert_eq!(svg.matches("<rect x=").count(), 2);
        well_formed(&svg).unwrap();
    }

    #[test]
    fn chart_has_one_bar_per_value_and_escapes_labels() {
        let svg = bar_chart("t<1>", "MB/s", &[("a&b".into(), 10.0), ("c".into(), 5.0)]);
        assert_eq!(svg.matches("<rect x=").count(), 2);
        assert!(svg.contains("a&amp;b") && svg.contains("t&lt;1&gt;"));
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains(r##"fill="#4878a8""##) && !svg.contains('`'), "colours must be valid");
        well_formed(&svg).unwrap();
    }

    #[test]
    #[should_panic(expected = "one value per category")]
    fn a_series_needs_a_value_per_category() {
        let _ = BarChart::new("t", "y", "", "", vec!["a".into()]).series("s", vec![]);
    }
}
