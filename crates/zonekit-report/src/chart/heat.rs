//! Heat maps ([`heat_map`]): a grid of counts, such as erase counts per block, as coloured cells.

use std::fmt::Write;

use super::axis::format_value;
use super::svg::escape;

/// Heat-map geometry: a fixed plot area however many cells there are, so the file size and
/// the picture do not grow with the grid; the legend sits to the right of the plot.
const HEAT_LEFT: f64 = 70.0;
const HEAT_TOP: f64 = 40.0;
const HEAT_PLOT_WIDTH: f64 = 640.0;
const HEAT_PLOT_HEIGHT: f64 = 400.0;
const HEAT_WIDTH: f64 = 820.0;
const HEAT_HEIGHT: f64 = 510.0;
/// At most this many rows (and columns) are drawn: beyond it consecutive rows (columns) are
/// merged by averaging, which keeps a 512 x 32 page-write map to a few thousand `<rect>`s and
/// every cell at least two pixels tall.
const HEAT_CELLS_MAX: usize = 200;
/// The colour scale runs from LIGHT (0) to DARK (the maximum), interpolated in sRGB, which is
/// also how SVG interpolates the legend's gradient, so the legend matches the cells.
const HEAT_LIGHT: [u8; 3] = [0xf7, 0xfb, 0xff];
const HEAT_DARK: [u8; 3] = [0x08, 0x30, 0x6b];

/// The colour of a cell at `ratio` (clamped to 0..=1) of the way from 0 to the maximum.
fn heat_colour(ratio: f64) -> String {
    let t = if ratio > 0.0 { ratio.min(1.0) } else { 0.0 };
    let channel = |i: usize| (HEAT_LIGHT[i] as f64 + (HEAT_DARK[i] as f64 - HEAT_LIGHT[i] as f64) * t).round() as u8;
    format!("#{:02x}{:02x}{:02x}", channel(0), channel(1), channel(2))
}

/// A coordinate rounded to two decimals, printed without trailing zeros ("40", "12.5", "2.34").
fn short(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// Whole counts print as integers; means of merged cells fall back to [`format_value`].
fn format_count(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format_value(v)
    }
}

/// The legend gradient's id for one heat map: `zonekit-heat-scale-` and a 64-bit FNV-1a hash
/// of its title, labels and values (their bits, so that -0.0 and 0.0 or two NaNs hash as
/// written). A hash rather than a counter: the id depends only on the map, not on how many
/// were drawn before it in the process, so committed SVG files do not change with draw order.
fn gradient_id(title: &str, x_label: &str, y_label: &str, rows: &[Vec<f64>]) -> String {
    const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = FNV_OFFSET;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            hash = (hash ^ b as u64).wrapping_mul(FNV_PRIME);
        }
    };
    // Each text ends with a byte no UTF-8 text holds, so ("ab", "c") and ("a", "bc") differ.
    for text in [title, x_label, y_label] {
        eat(text.as_bytes());
        eat(&[0xff]);
    }
    for row in rows {
        eat(&(row.len() as u64).to_le_bytes());
        for v in row {
            eat(&v.to_bits().to_le_bytes());
        }
    }
    format!("zonekit-heat-scale-{hash:016x}")
}

/// A grid of non-negative counts drawn as coloured cells (row 0 at the top), with a colour
/// scale legend from 0 to the maximum. `rows` are equal-length; an empty grid draws an empty chart.
///
/// Grids with more than 200 rows (columns) have consecutive rows (columns) merged by averaging,
/// so at most 200 x 200 cells are drawn; the legend's maximum is then the largest *mean*, and a
/// note under the chart says how many cells each drawn cell stands for and the largest single
/// value. Negative and non-finite values are drawn as 0.
///
/// # Panics
/// If the rows differ in length.
pub fn heat_map(title: &str, x_label: &str, y_label: &str, rows: &[Vec<f64>]) -> String {
    let rows_count = rows.len();
    let columns_count = rows.first().map_or(0, Vec::len);
    assert!(rows.iter().all(|r| r.len() == columns_count), "heat_map: rows must all have {columns_count} columns");
    let clean = |v: f64| if v.is_finite() && v > 0.0 { v } else { 0.0 };

    // Merge groups of `row_group` consecutive rows and `column_group` consecutive columns into
    // one drawn cell holding their mean; the last group of each may be shorter.
    let row_group = rows_count.div_ceil(HEAT_CELLS_MAX).max(1);
    let column_group = columns_count.div_ceil(HEAT_CELLS_MAX).max(1);
    let drawn_rows = rows_count.div_ceil(row_group);
    let drawn_columns = columns_count.div_ceil(column_group);
    let mut cells = vec![vec![0.0f64; drawn_columns]; drawn_rows];
    let mut peak = 0.0f64;
    for (r, row) in rows.iter().enumerate() {
        for (c, &v) in row.iter().enumerate() {
            cells[r / row_group][c / column_group] += clean(v);
            peak = peak.max(clean(v));
        }
    }
    let mut max = 0.0f64;
    for (i, drawn) in cells.iter_mut().enumerate() {
        let rows_in_group = row_group.min(rows_count - i * row_group);
        for (j, cell) in drawn.iter_mut().enumerate() {
            let columns_in_group = column_group.min(columns_count - j * column_group);
            *cell /= (rows_in_group * columns_in_group) as f64;
            max = max.max(*cell);
        }
    }

    let (left, top) = (HEAT_LEFT, HEAT_TOP);
    let (right, bottom) = (left + HEAT_PLOT_WIDTH, top + HEAT_PLOT_HEIGHT);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{HEAT_WIDTH}" height="{HEAT_HEIGHT}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{}</text>
<text x="{}" y="{}" text-anchor="middle">{}</text>
<text transform="translate(16,{}) rotate(-90)" text-anchor="middle">{}</text>
"#,
        HEAT_WIDTH / 2.0,
        escape(title),
        (left + right) / 2.0,
        bottom + 36.0,
        escape(x_label),
        (top + bottom) / 2.0,
        escape(y_label),
    );

    // Cell edges are rounded once and shared by neighbours, so crispEdges leaves no seams.
    let column_width = HEAT_PLOT_WIDTH / drawn_columns.max(1) as f64;
    let row_height = HEAT_PLOT_HEIGHT / drawn_rows.max(1) as f64;
    let x_edge = |j: usize| short(left + j as f64 * column_width);
    let y_edge = |i: usize| short(top + i as f64 * row_height);
    svg.push_str("<g shape-rendering=\"crispEdges\">\n");
    for (i, drawn) in cells.iter().enumerate() {
        let (y, height) = (y_edge(i), short(y_edge(i + 1) - y_edge(i)));
        for (j, &cell) in drawn.iter().enumerate() {
            let (x, width) = (x_edge(j), short(x_edge(j + 1) - x_edge(j)));
            let fill = heat_colour(if max > 0.0 { cell / max } else { 0.0 });
            let _ = writeln!(svg, r#"<rect x="{x}" y="{y}" width="{width}" height="{height}" fill="{fill}"/>"#);
        }
    }
    svg.push_str("</g>\n");
    let _ = writeln!(svg, r#"<rect x="{left}" y="{top}" width="{HEAT_PLOT_WIDTH}" height="{HEAT_PLOT_HEIGHT}" fill="none" stroke="black"/>"#);

    // Ticks: the first and last original index, at the centre of the first and last drawn cell.
    if columns_count > 0 {
        let centre = |j: usize| short(left + (j as f64 + 0.5) * column_width);
        let _ = writeln!(svg, r#"<text x="{}" y="{}" text-anchor="middle">0</text>"#, centre(0), bottom + 16.0);
        if columns_count > 1 {
            let _ = writeln!(svg, r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#, centre(drawn_columns - 1), bottom + 16.0, columns_count - 1);
        }
    }
    if rows_count > 0 {
        let centre = |i: usize| short(top + (i as f64 + 0.5) * row_height + 4.0);
        let _ = writeln!(svg, r#"<text x="{}" y="{}" text-anchor="end">0</text>"#, left - 6.0, centre(0));
        if rows_count > 1 {
            let _ = writeln!(svg, r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#, left - 6.0, centre(drawn_rows - 1), rows_count - 1);
        }
    }

    // Legend: a vertical gradient bar from 0 (bottom) to the maximum (top). Ids are global in an
    // HTML page that inlines several heat maps (a report, a figure of heat-map panels), so each
    // map names its gradient after what it draws: the same map keeps its id from run to run.
    let gradient_id = gradient_id(title, x_label, y_label, rows);
    let (legend_x, legend_top, legend_bottom) = (right + 20.0, top, top + 200.0);
    let _ = write!(
        svg,
        r#"<defs><linearGradient id="{gradient_id}" x1="0" y1="1" x2="0" y2="0"><stop offset="0" stop-color="{}"/><stop offset="1" stop-color="{}"/></linearGradient></defs>
<rect x="{legend_x}" y="{legend_top}" width="16" height="{}" fill="url(#{gradient_id})" stroke="black"/>
<text x="{}" y="{}">{}</text>
<text x="{}" y="{}">0</text>
"#,
        heat_colour(0.0),
        heat_colour(1.0),
        legend_bottom - legend_top,
        legend_x + 22.0,
        legend_top + 10.0,
        format_count(max),
        legend_x + 22.0,
        legend_bottom,
    );
    if row_group > 1 || column_group > 1 {
        let _ = writeln!(
            svg,
            r##"<text x="{left}" y="{}" font-size="11" fill="#555">each cell: mean of {row_group} row{} × {column_group} column{}; largest single value {}</text>"##,
            bottom + 58.0,
            if row_group == 1 { "" } else { "s" },
            if column_group == 1 { "" } else { "s" },
            format_count(peak),
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fills of the drawn cells (the `<rect>`s inside the cell group).
    fn heat_cells(svg: &str) -> Vec<&str> {
        let start = svg.find("<g shape-rendering=\"crispEdges\">").expect("cell group");
        let end = start + svg[start..].find("</g>").expect("end of cell group");
        svg[start..end].lines().filter(|l| l.starts_with("<rect")).map(|l| l.split("fill=\"").nth(1).unwrap().trim_end_matches("\"/>")).collect()
    }

    fn grid(rows_count: usize, columns_count: usize, value: impl Fn(usize, usize) -> f64) -> Vec<Vec<f64>> {
        (0..rows_count).map(|r| (0..columns_count).map(|c| value(r, c)).collect()).collect()
    }

    #[test]
    fn heat_map_is_svg_with_one_cell_per_value() {
        let svg = heat_map("erase counts", "block", "zone", &grid(3, 4, |r, c| (r * 4 + c) as f64));
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        let cells = heat_cells(&svg);
        assert_eq!(cells.len(), 12);
        assert_eq!(cells[0], heat_colour(0.0), "the zero cell is the lightest");
        assert_eq!(cells[11], heat_colour(1.0), "the maximum cell is the darkest");
        assert!(!svg.contains("each cell: mean"), "nothing merged, no note");
        // Tick labels: first and last row and column index.
        assert!(svg.contains(">0</text>") && svg.contains(">3</text>") && svg.contains(">2</text>"));
    }

    #[test]
    fn heat_map_coordinates_are_short() {
        let svg = heat_map("t", "x", "y", &grid(171, 32, |r, c| (r + c) as f64));
        for cell in svg.lines().filter(|l| l.starts_with("<rect x=")) {
            for number in cell.split('"').filter(|p| p.starts_with(|c: char| c.is_ascii_digit())) {
                assert!(number.split('.').nth(1).is_none_or(|d| d.len() <= 2), "{number} in {cell}");
            }
        }
    }

    #[test]
    fn heat_map_legend_shows_the_maximum() {
        let svg = heat_map("t", "x", "y", &grid(32, 16, |r, c| if (r, c) == (7, 9) { 1234.0 } else { 3.0 }));
        assert!(svg.contains(">1234</text>") && svg.contains(">0</text>"), "{svg}");
    }

    #[test]
    fn heat_map_merges_rows_beyond_the_cap() {
        // Row r holds r % 5, so every group of 5 rows has the mean 2 and all cells the darkest colour.
        let svg = heat_map("t", "x", "y", &grid(1000, 3, |r, _| (r % 5) as f64));
        let cells = heat_cells(&svg);
        assert!(cells.len() <= HEAT_CELLS_MAX * 3);
        assert_eq!(cells.len(), 200 * 3, "1000 rows in groups of 5");
        assert!(cells.iter().all(|&f| f == heat_colour(1.0)));
        assert!(svg.contains(">2</text>") && svg.contains(">999</text>"), "legend max is the mean; last tick is the last row");
        assert!(svg.contains("mean of 5 rows × 1 column; largest single value 4"));
    }

    #[test]
    fn heat_map_merges_columns_and_keeps_a_short_last_group() {
        // A 512 x 32 page-write map: rows go in groups of 3, columns stay as they are.
        assert_eq!(heat_cells(&heat_map("t", "x", "y", &grid(512, 32, |r, c| (r * c) as f64))).len(), 171 * 32);
        // 1001 columns go in groups of 6; the last group holds the 5 columns 996..=1000.
        let svg = heat_map("t", "x", "y", &grid(1, 1001, |_, c| if c == 1000 { 10.0 } else { 0.0 }));
        let cells = heat_cells(&svg);
        assert_eq!(cells.len(), 167);
        assert_eq!(cells[166], heat_colour(1.0));
        assert!(svg.contains(">2</text>"), "the short last group's mean is 10 / 5, not 10 / 6");
        assert!(svg.contains(">1000</text>") && svg.contains("mean of 1 row × 6 columns; largest single value 10"));
    }

    #[test]
    fn heat_map_escapes_text() {
        let svg = heat_map("<&>", "a&b", "c<d", &grid(2, 2, |_, _| 1.0));
        assert!(svg.contains("&lt;&amp;&gt;") && svg.contains("a&amp;b") && svg.contains("c&lt;d"));
        assert!(!svg.contains("<&>"));
    }

    #[test]
    fn heat_map_degenerate_grids_draw() {
        for rows in [vec![], vec![vec![], vec![]], grid(4, 4, |_, _| 0.0), grid(2, 2, |_, _| f64::NAN), grid(1, 1, |_, _| -1.0)] {
            let svg = heat_map("t", "x", "y", &rows);
            assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
            let cells = heat_cells(&svg);
            assert_eq!(cells.len(), rows.len() * rows.first().map_or(0, Vec::len));
            assert!(cells.iter().all(|&f| f == heat_colour(0.0)), "max 0: every cell is the lightest");
        }
    }

    /// The legend gradient's id, as the `<linearGradient>` declares it.
    fn gradient(svg: &str) -> &str {
        let at = svg.find("<linearGradient id=\"").expect("a gradient") + "<linearGradient id=\"".len();
        &svg[at..at + svg[at..].find('"').unwrap()]
    }

    #[test]
    fn heat_map_gradient_ids_differ_between_maps_and_repeat_for_the_same_map() {
        let a = heat_map("erases, pm-gcl", "block", "unit", &grid(4, 4, |r, c| (r + c) as f64));
        let id = gradient(&a);
        assert!(id.starts_with("zonekit-heat-scale-") && a.contains(&format!("fill=\"url(#{id})\"")), "the bar uses its own gradient: {a}");
        assert_eq!(id, gradient(&heat_map("erases, pm-gcl", "block", "unit", &grid(4, 4, |r, c| (r + c) as f64))), "the same map, the same id");
        let others = [
            heat_map("erases, pm-gcc", "block", "unit", &grid(4, 4, |r, c| (r + c) as f64)),
            heat_map("erases, pm-gcl", "block", "unit", &grid(4, 4, |r, c| (r * c) as f64)),
            heat_map("erases, pm-gcl", "block", "unit", &grid(2, 8, |r, c| (r + c) as f64)),
            heat_map("erases, pm-gcl", "blockunit", "", &grid(4, 4, |r, c| (r + c) as f64)),
        ];
        let mut ids: Vec<&str> = others.iter().map(|svg| gradient(svg)).chain([id]).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 5, "another title, other values, another shape or other labels: another id");
    }

    #[test]
    #[should_panic(expected = "rows must all have")]
    fn heat_map_rejects_ragged_rows() {
        heat_map("t", "x", "y", &[vec![1.0, 2.0], vec![3.0]]);
    }
}
