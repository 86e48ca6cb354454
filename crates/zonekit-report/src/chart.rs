//! Minimal SVG charts.

use std::fmt::Write;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Geometry shared by the column charts (bar and box): one 110-px column per item.
const LEFT: f64 = 70.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 300.0;

/// The frame of a column chart: background, title, y label, axes, and five y ticks over
/// 0..=`y_max` with grid lines. Returns the SVG so far and the chart width.
fn column_frame(title: &str, y_label: &str, columns: usize, y_max: f64) -> (String, f64) {
    let width = (120 + 110 * columns.max(1)) as f64;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="360" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{}" y="24" text-anchor="middle" font-size="15" font-weight="bold">{}</text>
<text transform="translate(18,{}) rotate(-90)" text-anchor="middle">{}</text>
<line x1="{LEFT}" y1="{BOTTOM}" x2="{}" y2="{BOTTOM}" stroke="black"/>
<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{BOTTOM}" stroke="black"/>
"#,
        width / 2.0,
        escape(title),
        (TOP + BOTTOM) / 2.0,
        escape(y_label),
        width - 20.0,
    );
    for tick in 0..=4 {
        let v = y_max * tick as f64 / 4.0;
        let y = BOTTOM - v / y_max * (BOTTOM - TOP);
        let _ = writeln!(
            svg,
            r##"<text x="{}" y="{:.1}" text-anchor="end">{}</text><line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#ddd"/>"##,
            LEFT - 6.0,
            y + 4.0,
            format_value(v),
            width - 20.0
        );
    }
    (svg, width)
}

/// A vertical bar chart with a labelled y axis and one value label per bar.
pub fn bar_chart(title: &str, y_label: &str, bars: &[(String, f64)]) -> String {
    // All-zero (or non-finite) data still needs a finite scale: draw it on 0..1.
    let max = bars.iter().map(|b| b.1).filter(|v| v.is_finite()).fold(0.0f64, f64::max);
    let max = if max > 0.0 { max } else { 1.0 };
    let scale = (BOTTOM - TOP) / max;
    let (mut svg, _) = column_frame(title, y_label, bars.len(), max);
    for (i, (label, value)) in bars.iter().enumerate() {
        let x = LEFT + 20.0 + i as f64 * 110.0;
        let h = value * scale;
        let _ = writeln!(
            svg,
            r##"<rect x="{x:.1}" y="{:.1}" width="70" height="{h:.1}" fill="#4878a8"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text x="{:.1}" y="{}" text-anchor="middle">{}</text>"##,
            BOTTOM - h,
            x + 35.0,
            BOTTOM - h - 5.0,
            format_value(*value),
            x + 35.0,
            BOTTOM + 18.0,
            escape(label)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn format_value(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 0.1 || v == 0.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A box plot per label: (label, [lower whisker, Q1, median, Q3, upper whisker]) on a
/// 0..=`y_max` axis.
pub fn box_chart(title: &str, y_label: &str, y_max: f64, boxes: &[(String, [f64; 5])]) -> String {
    let y_max = if y_max > 0.0 && y_max.is_finite() { y_max } else { 1.0 };
    let y = |v: f64| BOTTOM - v.clamp(0.0, y_max) / y_max * (BOTTOM - TOP);
    let (mut svg, _) = column_frame(title, y_label, boxes.len(), y_max);
    for (i, (label, [lo, q1, med, q3, hi])) in boxes.iter().enumerate() {
        let x = LEFT + 20.0 + i as f64 * 110.0;
        let c = x + 35.0;
        let _ = writeln!(
            svg,
            r##"<line x1="{c:.1}" y1="{:.1}" x2="{c:.1}" y2="{:.1}" stroke="black"/><rect x="{x:.1}" y="{:.1}" width="70" height="{:.1}" fill="#9ab8d8" stroke="black"/><line x1="{x:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="black" stroke-width="2.5"/><text x="{c:.1}" y="{}" text-anchor="middle">{}</text>"##,
            y(*hi),
            y(*lo),
            y(*q3),
            (y(*q1) - y(*q3)).max(1.0),
            y(*med),
            x + 70.0,
            y(*med),
            BOTTOM + 18.0,
            escape(label)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// One line of a [`line_chart`].
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

const COLORS: [&str; 8] = ["#4878a8", "#e0803c", "#5a9e4b", "#c44e52", "#8172b2", "#937860", "#da8bc3", "#8c8c8c"];

/// A line chart of several series with a legend; `x_log` plots log10(x) (x must be > 0).
pub fn line_chart(title: &str, x_label: &str, y_label: &str, series: &[Series], x_log: bool) -> String {
    let (width, height) = (720.0, 420.0);
    let (left, right, top, bottom) = (70.0, 170.0, 40.0, 360.0);
    let tx = |x: f64| if x_log { x.max(f64::MIN_POSITIVE).log10() } else { x };
    let all = series.iter().flat_map(|s| s.points.iter()).filter(|p| !x_log || p.0 > 0.0);
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, 0.0f64, f64::MIN);
    for &(x, y) in all {
        x0 = x0.min(tx(x));
        x1 = x1.max(tx(x));
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1, y1) = (0.0, 1.0, 1.0);
    }
    if x1 == x0 {
        x1 = x0 + 1.0;
    }
    if y1 <= y0 {
        y1 = y0 + 1.0;
    }
    let px = |x: f64| left + (tx(x) - x0) / (x1 - x0) * (width - left - right);
    let py = |y: f64| bottom - (y - y0) / (y1 - y0) * (bottom - top);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{}</text>
<text x="{}" y="{}" text-anchor="middle">{}</text>
<text transform="translate(16,{}) rotate(-90)" text-anchor="middle">{}</text>
<line x1="{left}" y1="{bottom}" x2="{}" y2="{bottom}" stroke="black"/>
<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="black"/>
"#,
        width / 2.0,
        escape(title),
        (left + width - right) / 2.0,
        bottom + 36.0,
        escape(&if x_log { format!("{x_label} (log scale)") } else { x_label.to_string() }),
        (top + bottom) / 2.0,
        escape(y_label),
        width - right,
    );
    for tick in 0..=4 {
        let fx = x0 + (x1 - x0) * tick as f64 / 4.0;
        let label = if x_log { format_value(10f64.powf(fx)) } else { format_value(fx) };
        let x = left + (width - left - right) * tick as f64 / 4.0;
        let _ = writeln!(svg, r#"<text x="{x:.1}" y="{}" text-anchor="middle">{label}</text>"#, bottom + 16.0);
        let fy = y0 + (y1 - y0) * tick as f64 / 4.0;
        let y = py(fy);
        let _ = writeln!(
            svg,
            r##"<text x="{}" y="{:.1}" text-anchor="end">{}</text><line x1="{left}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#eee"/>"##,
            left - 6.0,
            y + 4.0,
            format_value(fy),
            width - right
        );
    }
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let pts: Vec<String> = s.points.iter().filter(|p| !x_log || p.0 > 0.0).map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y))).collect();
        let _ = writeln!(svg, r#"<polyline fill="none" stroke="{color}" stroke-width="1.8" points="{}"/>"#, pts.join(" "));
        let ly = top + 14.0 + i as f64 * 18.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"/><text x="{}" y="{}">{}</text>"#,
            width - right + 12.0,
            width - right + 32.0,
            width - right + 38.0,
            ly + 4.0,
            escape(&s.name)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_chart_draws_one_box_per_label() {
        let svg = box_chart("gp", "GP", 1.0, &[("a".into(), [0.1, 0.2, 0.3, 0.5, 0.9]), ("b".into(), [0.0, 0.5, 0.6, 0.7, 1.0])]);
        assert_eq!(svg.matches("<rect x=").count(), 2);
    }

    #[test]
    fn line_chart_draws_every_series() {
        let s = vec![Series { name: "a".into(), points: vec![(1.0, 0.1), (100.0, 0.9)] }, Series { name: "b<".into(), points: vec![(10.0, 0.5)] }];
        let svg = line_chart("cdf", "x", "y", &s, true);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("b&lt;") && svg.contains("(log scale)"));
    }

    #[test]
    fn chart_has_one_bar_per_value_and_escapes_labels() {
        let svg = bar_chart("t<1>", "MB/s", &[("a&b".into(), 10.0), ("c".into(), 5.0)]);
        assert_eq!(svg.matches("<rect x=").count(), 2);
        assert!(svg.contains("a&amp;b") && svg.contains("t&lt;1&gt;"));
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains(r##"fill="#4878a8""##) && !svg.contains('`'), "colours must be valid");
    }
}
