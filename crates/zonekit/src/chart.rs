//! Minimal SVG charts, so results can be looked at rather than read.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_has_one_bar_per_value_and_escapes_labels() {
        let svg = bar_chart("t<1>", "MB/s", &[("a&b".into(), 10.0), ("c".into(), 5.0)]);
        assert_eq!(svg.matches("<rect x=").count(), 2);
        assert!(svg.contains("a&amp;b") && svg.contains("t&lt;1&gt;"));
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    }
}
