//! The SVG every chart shares: the document at one of two widths, the title, the legend, and
//! the frame of a value axis with its ticks and grid lines.

use std::fmt::Write;

use super::axis::Scale;

pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// One colour per series, in order (a colour-blind-safe set, the first the single-series blue).
pub(crate) const COLORS: [&str; 8] = ["#4878a8", "#e0803c", "#5a9e4b", "#c44e52", "#8172b2", "#937860", "#da8bc3", "#8c8c8c"];

/// The width a chart is drawn for. The SVG scales (it has a `viewBox`), but its text is sized
/// for one width: a page-wide chart shrunk into a paper's column has unreadable 5-pt labels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Width {
    /// A paper's column, 3.5 in: 340 units wide with 10-unit text, which prints at 7.5 pt.
    Column,
    /// A report page: 720 units wide with 12-unit text.
    #[default]
    Page,
}

impl Width {
    pub(crate) fn units(self) -> f64 {
        match self {
            Width::Column => 340.0,
            Width::Page => 720.0,
        }
    }

    pub(crate) fn plot_height(self) -> f64 {
        match self {
            Width::Column => 170.0,
            Width::Page => 280.0,
        }
    }

    pub(crate) fn font(self) -> f64 {
        match self {
            Width::Column => 10.0,
            Width::Page => 12.0,
        }
    }
}

/// A text's width, estimated: a sans-serif character is about 0.6 em on average. (Without a
/// font file no SVG writer knows better; plotters without its font features guesses too.)
pub(crate) fn text_width(s: &str, font: f64) -> f64 {
    s.chars().count() as f64 * font * 0.6
}

/// A coordinate to one decimal, without a trailing ".0".
pub(crate) fn n(v: f64) -> String {
    let s = format!("{:.1}", v);
    s.strip_suffix(".0").map_or(s.clone(), str::to_string)
}

/// `text` cut at spaces into lines no wider than `width`.
pub(crate) fn wrap(text: &str, width: f64, font: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if text_width(line, font) + text_width(word, font) + font * 0.6 <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// How a legend entry shows its series: a filled square (bars) or a line with its marker.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Swatch {
    Bar,
    /// `dashed`: the second of a pair (a model beside the measurement it is compared with).
    Line {
        marker: Option<usize>,
        dashed: bool,
    },
}

/// The dash pattern of the second line of a pair.
pub(crate) const DASH: &str = "5 3";

/// Draws marker `kind` (circle, square, triangle, diamond, in turn) centred on (x, y), so that
/// series stay apart in grey print.
pub(crate) fn marker(svg: &mut String, kind: usize, x: f64, y: f64, r: f64, color: &str) {
    let _ = match kind % 4 {
        0 => writeln!(svg, r#"<circle cx="{}" cy="{}" r="{}" fill="{color}"/>"#, n(x), n(y), n(r)),
        1 => writeln!(svg, r#"<rect class="marker" x="{}" y="{}" width="{}" height="{}" fill="{color}"/>"#, n(x - r), n(y - r), n(2.0 * r), n(2.0 * r)),
        2 => writeln!(svg, r#"<polygon points="{},{} {},{} {},{}" fill="{color}"/>"#, n(x), n(y - r * 1.2), n(x - r * 1.2), n(y + r), n(x + r * 1.2), n(y + r)),
        _ => writeln!(svg, r#"<polygon points="{},{} {},{} {},{} {},{}" fill="{color}"/>"#, n(x), n(y - r * 1.3), n(x + r * 1.3), n(y), n(x), n(y + r * 1.3), n(x - r * 1.3), n(y)),
    };
}

/// The legend's entries laid out in rows from `left` to `right`: each entry's x offset and row.
fn legend_places(names: &[String], left: f64, right: f64, font: f64) -> Vec<(f64, usize)> {
    let mut places = Vec::new();
    let (mut x, mut row) = (left, 0);
    for name in names {
        let width = font * 2.2 + text_width(name, font) + font;
        if x > left && x + width > right {
            (x, row) = (left, row + 1);
        }
        places.push((x, row));
        x += width;
    }
    places
}

/// Everything a value-axis chart draws before its data: the document, title, legend, y axis
/// with ticks and grid lines, the axis lines and the x axis' label. The caller draws the data
/// in `left..right` × `top..bottom` and the x ticks below `bottom`, then closes with `</svg>`.
pub(crate) struct Frame {
    pub svg: String,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
    pub font: f64,
}

/// What a [`Frame`] needs to know before it can place anything.
pub(crate) struct FrameSpec<'a> {
    pub width: Width,
    pub title: &'a str,
    pub y_label: &'a str,
    pub y: Scale,
    pub x_label: &'a str,
    /// The height the x ticks need below the plot.
    pub x_ticks_height: f64,
    /// Room the x ticks need right of the plot (half the last label).
    pub right_margin: f64,
    /// Series names, colours and swatches; no legend when fewer than two.
    pub legend: &'a [(String, &'a str, Swatch)],
    /// Text under the chart (what it mirrors, at what setting); none when empty.
    pub caption: &'a str,
}

impl Frame {
    pub(crate) fn new(spec: &FrameSpec) -> Frame {
        let font = spec.width.font();
        let width = spec.width.units();
        let ticks = spec.y.ticks();
        let ticks_width = ticks.iter().map(|t| text_width(&t.1, font)).fold(0.0, f64::max);
        let left = (font * 1.8 + ticks_width + 8.0).round();
        let right = (width - spec.right_margin.max(font)).round();
        let title = wrap(spec.title, width - 2.0 * font, font + 2.0);
        let names: Vec<String> = spec.legend.iter().map(|e| e.0.clone()).collect();
        let places = if spec.legend.len() > 1 { legend_places(&names, left, right, font) } else { Vec::new() };
        let legend_rows = places.last().map_or(0, |p| p.1 + 1);
        let top = (font * 0.8 + title.len() as f64 * (font + 6.0) + legend_rows as f64 * (font + 6.0) + font * 0.8).round();
        let bottom = top + spec.width.plot_height();
        let x_label_height = if spec.x_label.is_empty() { 0.0 } else { font + 8.0 };
        let caption = wrap(spec.caption, width - 2.0 * font, font - 1.0);
        let caption_top = bottom + spec.x_ticks_height + x_label_height;
        let height = (caption_top + caption.len() as f64 * (font + 3.0) + font * 0.6).round();

        let mut svg = String::new();
        // data-series: how many series the chart draws, so that a reader of the page
        // (scripts/report-test) can ask every multi-series chart for its legend.
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="{font}" data-series="{series}">"#,
            series = spec.legend.len()
        );
        svg.push_str("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
        for (i, line) in title.iter().enumerate() {
            let y = font * 0.8 + (i + 1) as f64 * (font + 6.0) - 4.0;
            let _ = writeln!(svg, r#"<text x="{}" y="{}" text-anchor="middle" font-size="{}" font-weight="bold">{}</text>"#, n(width / 2.0), n(y), font + 2.0, escape(line));
        }
        if !places.is_empty() {
            let legend_top = font * 0.8 + title.len() as f64 * (font + 6.0) + 4.0;
            svg.push_str("<g class=\"legend\">\n");
            for ((name, color, swatch), (x, row)) in spec.legend.iter().zip(&places) {
                let y = legend_top + *row as f64 * (font + 6.0) + font / 2.0;
                match swatch {
                    Swatch::Bar => {
                        let _ = writeln!(svg, r#"<rect class="swatch" x="{}" y="{}" width="{font}" height="{font}" fill="{color}"/>"#, n(*x + font * 0.3), n(y - font / 2.0));
                    }
                    Swatch::Line { marker: kind, dashed } => {
                        let dash = if *dashed { format!(r#" stroke-dasharray="{DASH}""#) } else { String::new() };
                        let _ = writeln!(svg, r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{color}" stroke-width="2"{dash}/>"#, n(*x), n(y), n(*x + font * 1.6), n(y));
                        if let Some(kind) = kind {
                            marker(&mut svg, *kind, *x + font * 0.8, y, font * 0.3, color);
                        }
                    }
                }
                let _ = writeln!(svg, r#"<text class="legend-entry" x="{}" y="{}">{}</text>"#, n(*x + font * 2.0), n(y + font * 0.35), escape(name));
            }
            svg.push_str("</g>\n");
        }
        for (v, label) in &ticks {
            let y = bottom - spec.y.ratio(*v) * (bottom - top);
            let _ = writeln!(
                svg,
                r##"<line x1="{left}" y1="{y}" x2="{right}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{label}</text>"##,
                n(left - 5.0),
                n(y + font * 0.35),
                y = n(y)
            );
        }
        let _ = writeln!(svg, r#"<text transform="translate({},{}) rotate(-90)" text-anchor="middle">{}</text>"#, n(font * 1.1), n((top + bottom) / 2.0), escape(spec.y_label));
        if !spec.x_label.is_empty() {
            let _ =
                writeln!(svg, r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#, n((left + right) / 2.0), n(bottom + spec.x_ticks_height + font + 2.0), escape(spec.x_label));
        }
        let _ = writeln!(
            svg,
            r#"<line x1="{left}" y1="{b}" x2="{right}" y2="{b}" stroke="black"/><line x1="{left}" y1="{t}" x2="{left}" y2="{b}" stroke="black"/>"#,
            b = n(bottom),
            t = n(top)
        );
        for (i, line) in caption.iter().enumerate() {
            let y = caption_top + (i + 1) as f64 * (font + 3.0);
            let _ = writeln!(svg, r##"<text class="caption" x="{}" y="{}" font-size="{}" fill="#444">{}</text>"##, n(font), n(y), font - 1.0, escape(line));
        }
        Frame { svg, left, right, top, bottom, font }
    }

    /// The y coordinate of a value on `scale`, clamped to the plot.
    pub(crate) fn y(&self, scale: &Scale, v: f64) -> f64 {
        self.bottom - scale.ratio(v).clamp(0.0, 1.0) * (self.bottom - self.top)
    }
}

/// A label with its unit: "write latency p99 (ms)"; a ratio's empty unit adds nothing.
pub(crate) fn with_unit(label: &str, unit: &str) -> String {
    if unit.is_empty() {
        label.to_string()
    } else {
        format!("{label} ({unit})")
    }
}
