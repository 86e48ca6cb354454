//! Several charts as the panels of one figure ([`panels`]), as a paper puts (a), (b), (c) side
//! by side under one caption: each panel stays the chart it was, nested at its place.

use std::fmt::Write;

use super::svg::{escape, n, wrap, Width};

/// Room between panels, in SVG units.
const PANEL_GAP: f64 = 10.0;

/// The `width` and `height` attributes of a chart's root element.
fn size_of(svg: &str) -> (f64, f64) {
    let root = &svg[..svg.find('>').unwrap_or(svg.len())];
    let attribute = |name: &str| {
        let at = root.find(&format!(" {name}=\"")).unwrap_or_else(|| panic!("panels: a panel's root has no {name}"));
        let value = &root[at + name.len() + 3..];
        value[..value.find('"').unwrap_or(0)].parse::<f64>().unwrap_or_else(|_| panic!("panels: a panel's {name} is not a number"))
    };
    (attribute("width"), attribute("height"))
}

/// One SVG holding `charts` (each a chart of this module, drawn at [`Width::Column`] to sit two
/// to a page) in rows of `columns`, under a bold `title` and over a `caption`. A row is as tall
/// as its tallest panel; each panel keeps its own legend and tooltips.
///
/// ```
/// use zonekit_report::{panels, BarChart, Width};
/// let a = BarChart::new("(a) LAMMPS", "throughput", "MB/s", "", vec!["x".into()]).series("ours", vec![1.0]).width(Width::Column).svg();
/// let b = BarChart::new("(b) MACDRP", "throughput", "MB/s", "", vec!["x".into()]).series("ours", vec![2.0]).width(Width::Column).svg();
/// let figure = panels("Fig. 4.1", "", 2, &[a, b]);
/// assert_eq!(figure.matches("class=\"panel\"").count(), 2);
/// ```
///
/// # Panics
/// If `columns` is 0 or a chart has no numeric `width`/`height` on its root.
pub fn panels(title: &str, caption: &str, columns: usize, charts: &[String]) -> String {
    assert!(columns > 0, "panels: at least one column");
    let sizes: Vec<(f64, f64)> = charts.iter().map(|c| size_of(c)).collect();
    let column_width = sizes.iter().map(|s| s.0).fold(0.0, f64::max);
    let width = (column_width * columns.min(charts.len().max(1)) as f64 + PANEL_GAP * (columns.min(charts.len().max(1)) - 1) as f64).max(Width::Column.units());
    let font = Width::Page.font();
    let title_lines = wrap(title, width - 2.0 * font, font + 2.0);
    let caption_lines = wrap(caption, width - 2.0 * font, font - 1.0);
    let top = font * 0.8 + title_lines.len() as f64 * (font + 6.0);
    let row_heights: Vec<f64> = sizes.chunks(columns).map(|row| row.iter().map(|s| s.1).fold(0.0, f64::max)).collect();
    let panels_height: f64 = row_heights.iter().sum::<f64>() + PANEL_GAP * row_heights.len().saturating_sub(1) as f64;
    let height = (top + panels_height + caption_lines.len() as f64 * (font + 3.0) + font).round();
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="{font}" data-panels="{count}">"#,
        w = n(width),
        h = n(height),
        count = charts.len()
    );
    svg.push_str("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    for (i, line) in title_lines.iter().enumerate() {
        let y = font * 0.8 + (i + 1) as f64 * (font + 6.0) - 4.0;
        let _ = writeln!(svg, r#"<text x="{}" y="{}" text-anchor="middle" font-size="{}" font-weight="bold">{}</text>"#, n(width / 2.0), n(y), font + 2.0, escape(line));
    }
    let mut y = top;
    for (row, (chunk, row_height)) in charts.chunks(columns).zip(&row_heights).enumerate() {
        for (column, chart) in chunk.iter().enumerate() {
            let x = column as f64 * (column_width + PANEL_GAP);
            // The panel's own root, moved to its place: nested <svg> keeps its viewBox and text.
            let body = chart.trim_start().strip_prefix("<svg").unwrap_or_else(|| panic!("panels: panel {} is not an SVG", row * columns + column));
            let _ = write!(svg, r#"<svg class="panel" x="{}" y="{}""#, n(x), n(y));
            svg.push_str(body.trim_end());
            svg.push('\n');
        }
        y += row_height + PANEL_GAP;
    }
    let caption_top = top + panels_height;
    for (i, line) in caption_lines.iter().enumerate() {
        let y = caption_top + (i + 1) as f64 * (font + 3.0);
        let _ = writeln!(svg, r##"<text class="caption" x="{}" y="{}" font-size="{}" fill="#444">{}</text>"##, n(font), n(y), font - 1.0, escape(line));
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::{well_formed, BarChart};

    fn chart(title: &str, height_values: f64) -> String {
        BarChart::new(title, "y", "s", "", vec!["a".into(), "b".into()]).series("p", vec![1.0, height_values]).series("q", vec![2.0, 1.0]).width(Width::Column).svg()
    }

    #[test]
    fn panels_sit_in_rows_of_columns_inside_one_well_formed_figure() {
        let charts = [chart("(a)", 3.0), chart("(b)", 4.0), chart("(c)", 5.0)];
        let figure = panels("Fig. 11 & more", "caption", 2, &charts);
        well_formed(&figure).unwrap_or_else(|e| panic!("{e}: {figure}"));
        assert_eq!(figure.matches("class=\"panel\"").count(), 3);
        assert_eq!(figure.matches("class=\"legend\"").count(), 3, "each panel keeps its legend");
        let (width, height) = size_of(&figure);
        let (panel_width, panel_height) = size_of(&charts[0]);
        assert_eq!(width, 2.0 * panel_width + PANEL_GAP, "two columns");
        assert!(height > 2.0 * panel_height, "two rows under a title");
        // The third panel starts the second row.
        assert!(figure.contains(&format!(r#"<svg class="panel" x="0" y="{}""#, n(12.0 * 0.8 + 18.0 + panel_height + PANEL_GAP))));
    }
}
