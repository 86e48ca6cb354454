//! Tables and SVG charts for Zonekit results, so people can look rather than read.
//!
//! Charts are self-contained SVG strings with no dependencies (why not `plotters`: the chart
//! module's doc): [`BarChart`] for comparisons across policies or devices, grouped by category
//! with one coloured series each and a legend, or stacked; [`LineChart`] for CDFs and time
//! series with markers and linear or log axes; [`box_chart`] for distributions, [`heat_map`]
//! for grids such as per-block erase counts; [`bar_chart`] and [`line_chart`] in one call.
//! Ticks fall on round numbers, whole-number axes read as whole numbers, and [`Width`] draws
//! for a paper's column or a report page.
//! [`html`] puts a results directory's settings, tables and charts on one self-contained page.
//!
//! ```
//! let svg = zonekit_report::bar_chart("WAF", "WAF", &[("greedy".into(), 1.8), ("cbe".into(), 1.5)]);
//! assert!(svg.starts_with("<svg"));
//! ```

mod chart;
pub mod claims;
pub mod html;
mod terminal;

pub use chart::{bar_chart, box_chart, grouped_box_chart, heat_map, line_chart, panels, BarChart, LineChart, Series, Width};
pub use terminal::{fitted_table, for_terminal};

/// The width terminal output keeps to.
pub const TERMINAL_COLUMNS: usize = 100;

/// Formats rows as a fixed-width text table with a header: the first column and text cells
/// left-aligned, numbers (a cell that starts with a digit, a sign or a dash for none)
/// right-aligned, so a long text value does not push a short one to the far right.
pub fn text_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let width = |s: &str| s.chars().count();
    let mut widths: Vec<usize> = header.iter().map(|h| width(h)).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(width(cell));
            }
        }
    }
    // A column is numeric when every cell in it is.
    let numeric = |c: &str| c.is_empty() || c == "-" || c.starts_with(|ch: char| ch.is_ascii_digit() || ch == '+' || ch == '-' || ch == '.');
    let right: Vec<bool> = (0..widths.len()).map(|i| i > 0 && rows.iter().all(|r| r.get(i).is_none_or(|c| numeric(c)))).collect();
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let pad = " ".repeat(widths[i].saturating_sub(width(c)));
                if right[i] {
                    format!("{pad}{c}")
                } else {
                    format!("{c}{pad}")
                }
            })
            .collect();
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    };
    line(header.to_vec(), &mut out);
    for row in rows {
        line(row.iter().map(String::as_str).collect(), &mut out);
    }
    out
}

/// `text` after `prefix`, broken at spaces into lines of at most `width` characters (a longer
/// word stands alone), the lines after the first indented by the prefix's width: for warnings
/// and notes that must fit a terminal.
pub fn wrapped(prefix: &str, text: &str, width: usize) -> String {
    let indent = " ".repeat(prefix.chars().count());
    let mut out = String::new();
    let mut line = prefix.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = indent.clone();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// `arg` as a shell would need it typed (quoted when it holds anything but plain characters):
/// for the command lines results record (`settings.tsv`, `commands.tsv`).
pub fn shell_word(arg: &str) -> String {
    if !arg.is_empty() && arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+%@".contains(c)) {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// Rows as a Markdown (GitHub) table.
pub fn markdown_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n|{}|\n", header.join(" | "), vec!["---"; header.len()].join("|"));
    for row in rows {
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

/// Rows as CSV (cells containing commas or quotes are quoted).
pub fn csv(header: &[&str], rows: &[Vec<String>]) -> String {
    let quote = |c: &str| if c.contains([',', '"', '\n']) { format!("\"{}\"", c.replace('"', "\"\"")) } else { c.to_string() };
    let mut out = header.join(",");
    out.push('\n');
    for row in rows {
        out.push_str(&row.iter().map(|c| quote(c)).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

/// Min, median and max of some values: the spread of repeated runs, or of per-node results.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
    pub count: usize,
}

impl Spread {
    pub fn of(mut values: Vec<f64>) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let median = if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 };
        Some(Spread { min: values[0], median, max: values[n - 1], count: n })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_table_has_a_rule_under_the_header() {
        let t = markdown_table(&["a", "b"], &[vec!["1".into(), "2".into()]]);
        assert_eq!(t, "| a | b |\n|---|---|\n| 1 | 2 |\n");
    }

    #[test]
    fn table_aligns_columns() {
        let t = text_table(&["name", "value"], &[vec!["a".into(), "1".into()], vec!["long-name".into(), "22".into()]]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "name       value");
        assert_eq!(lines[2], "long-name     22");
    }

    #[test]
    fn csv_quotes_when_needed() {
        assert_eq!(csv(&["a", "b"], &[vec!["x,y".into(), "z".into()]]), "a,b\n\"x,y\",z\n");
    }
}

#[cfg(test)]
mod degenerate_tests {
    use super::*;

    /// All-zero, empty and single-point data still give finite coordinates.
    #[test]
    fn degenerate_series_draw_without_nan() {
        let zeros = vec![("a".to_string(), 0.0), ("b".to_string(), 0.0)];
        let flat = vec![Series { name: "s".into(), points: vec![(1.0, 0.0), (2.0, 0.0)] }];
        let one = vec![Series { name: "s".into(), points: vec![(5.0, 3.0)] }];
        let charts = [
            bar_chart("t", "y", &zeros),
            bar_chart("t", "y", &[]),
            box_chart("t", "y", 1.0, &[("a".into(), [0.0; 5])]),
            box_chart("t", "y", 0.0, &[("a".into(), [0.0; 5])]),
            line_chart("t", "x", "y", &flat, false),
            line_chart("t", "x", "y", &flat, true),
            line_chart("t", "x", "y", &one, true),
            line_chart("t", "x", "y", &[], false),
            heat_map("t", "x", "y", &vec![vec![0.0; 3]; 2]),
            heat_map("t", "x", "y", &[]),
        ];
        for (i, svg) in charts.iter().enumerate() {
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "chart {i}: {svg}");
        }
    }
}

#[cfg(test)]
mod wrap_tests {
    use super::*;

    #[test]
    fn wrapped_lines_fit_and_keep_every_word() {
        let text = "no GC ran (1000 user writes, 900 distinct blocks): WAF 1.000 says nothing about the placement; replay more writes";
        let out = wrapped("warning: ", text, 40);
        assert!(out.lines().all(|l| l.chars().count() <= 40), "{out}");
        assert!(out.lines().skip(1).all(|l| l.starts_with("         ")), "{out}");
        assert_eq!(out.split_whitespace().skip(1).collect::<Vec<_>>(), text.split_whitespace().collect::<Vec<_>>());
    }
}
