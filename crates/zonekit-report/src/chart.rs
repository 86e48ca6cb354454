//! Minimal SVG charts.

use std::fmt::Write;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A vertical bar chart with a labelled y axis and one value label per bar.
pub fn bar_chart(title: &str, y_label: &str, bars: &[(String, f64)]) -> String {
    let (width, height) = (120 + 110 * bars.len().max(1), 360);
    let (left, bottom, top) = (70.0, 300.0, 50.0);
    let max = bars.iter().map(|b| b.1).fold(0.0f64, f64::max).max(f64::MIN_POSITIVE);
    let scale = (bottom - top) / max;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{}" y="24" text-anchor="middle" font-size="15" font-weight="bold">{}</text>
<text transform="translate(18,{}) rotate(-90)" text-anchor="middle">{}</text>
<line x1="{left}" y1="{bottom}" x2="{}" y2="{bottom}" stroke="black"/>
<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="black"/>
"#,
        width / 2,
        escape(title),
        (top + bottom) / 2.0,
        escape(y_label),
        width - 20,
    );
    for tick in 0..=4 {
        let v = max * tick as f64 / 4.0;
        let y = bottom - v * scale;
        let _ = writeln!(svg, r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text><line x1="{left}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="`#ddd`"/>"#, left - 6.0, y + 4.0, format_value(v), width - 20);
    }
    for (i, (label, value)) in bars.iter().enumerate() {
        let x = left + 20.0 + i as f64 * 110.0;
        let h = value * scale;
        let _ = writeln!(
            svg,
            r#"<rect x="{x:.1}" y="{:.1}" width="70" height="{h:.1}" fill="`#4878a8`"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            bottom - h,
            x + 35.0,
            bottom - h - 5.0,
            format_value(*value),
            x + 35.0,
            bottom + 18.0,
            escape(label)
        );
    }
    svg.push_str("</svg>\n");
    svg.replace("`#", "#")
}

fn format_value(v: f64) -> String {
    if v >= 100.0 { format!("{v:.0}") } else if v >= 1.0 { format!("{v:.1}") } else { format!("{v:.3}") }
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
        let _ = writeln!(svg, r##"<text x="{}" y="{:.1}" text-anchor="end">{}</text><line x1="{left}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#eee"/>"##, left - 6.0, y + 4.0, format_value(fy), width - right);
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
    }
}
