//! A Markdown summary (what experiments write as `summary.md`) made fit for a terminal of a
//! given width: prose and list items wrapped, Markdown tables aligned as text, and a table too
//! wide even then printed one row at a time as `column: value` items. Code blocks and lines
//! already laid out as text tables are kept as they are.

use crate::{text_table, wrapped};

/// `markdown` for a terminal `width` columns wide.
pub fn for_terminal(markdown: &str, width: usize) -> String {
    let mut out = String::new();
    let mut table: Vec<Vec<String>> = Vec::new();
    let mut in_code = false;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if !in_code && trimmed.starts_with('|') {
            let cells = table_cells(trimmed);
            if !cells.iter().all(|c| is_rule(c)) {
                table.push(cells);
            }
            continue;
        }
        if !table.is_empty() {
            out.push_str(&render_table(&std::mem::take(&mut table), width));
        }
        if trimmed.starts_with("```") {
            in_code = !in_code;
        }
        out.push_str(&render_line(line, in_code || trimmed.starts_with("```"), width));
    }
    if !table.is_empty() {
        out.push_str(&render_table(&table, width));
    }
    out
}

fn render_line(line: &str, verbatim: bool, width: usize) -> String {
    let trimmed = line.trim_start();
    // A line that fits, a code line, or a line laid out in columns (runs of spaces in two
    // places or more; prose has at most one, after a full stop) stays.
    if verbatim || line.chars().count() <= width || line.trim().matches("  ").count() >= 2 {
        return format!("{line}\n");
    }
    let indent = line.len() - trimmed.len();
    // A list item's continuation lines hang under its text.
    let marker =
        trimmed.split_once(' ').map(|(m, _)| m).filter(|m| *m == "-" || *m == "*" || (m.ends_with('.') && m[..m.len() - 1].chars().all(|c| c.is_ascii_digit()) && m.len() > 1));
    match marker {
        Some(m) => wrapped(&format!("{}{m} ", " ".repeat(indent)), &trimmed[m.len() + 1..], width),
        None => wrapped(&" ".repeat(indent), trimmed, width),
    }
}

/// The cells of a Markdown table row `| a | b |`.
fn table_cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    inner.split('|').map(|c| c.trim().to_string()).collect()
}

/// A header rule's cell: `---`, `:---:`.
fn is_rule(cell: &str) -> bool {
    !cell.is_empty() && cell.trim_matches(':').chars().all(|c| c == '-') && cell.contains('-')
}

fn render_table(rows: &[Vec<String>], width: usize) -> String {
    let header: Vec<&str> = rows[0].iter().map(String::as_str).collect();
    fitted_table(&header, &rows[1..], width)
}

/// [`text_table`] when it fits `width` columns; else each row on its own, its first cell as
/// the heading, then its other cells as `column: value` items.
pub fn fitted_table(header: &[&str], body: &[Vec<String>], width: usize) -> String {
    let text = text_table(header, body);
    if text.lines().all(|l| l.chars().count() <= width) {
        return text;
    }
    // Too wide: each row on its own, its first cell as the heading, then `column: value`.
    let mut out = String::new();
    for row in body {
        out.push_str(&wrapped("", row.first().map_or("", String::as_str), width));
        let items: Vec<String> = header.iter().zip(row).skip(1).filter(|(_, v)| !v.is_empty()).map(|(h, v)| format!("{h}: {v}")).collect();
        let mut line = String::from("   ");
        for item in items {
            let room = line.trim().is_empty() || line.chars().count() + 3 + item.chars().count() <= width;
            if !room {
                out.push_str(line.trim_end());
                out.push('\n');
                line = String::from("   ");
            }
            if !line.trim().is_empty() {
                line.push_str("   ");
            }
            if line.chars().count() + item.chars().count() > width {
                out.push_str(&wrapped("   ", &item, width));
                line = String::from("   ");
            } else {
                line.push_str(&item);
            }
        }
        if !line.trim().is_empty() {
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_wraps_narrow_tables_align_and_wide_tables_go_row_by_row() {
        let long = "word ".repeat(40);
        let md = format!(
            "# Title\n\n{long}\n- {long}\n\n| a | bb |\n|---|---:|\n| x | 1 |\n\n| name | {} |\n|---|---|\n| first | {} |\n\n```\n{long}\n```\n",
            (0..12).map(|i| format!("column {i}")).collect::<Vec<_>>().join(" | "),
            (0..12).map(|i| format!("value {i}")).collect::<Vec<_>>().join(" | ")
        );
        let out = for_terminal(&md, 60);
        let code = out.lines().find(|l| l.len() > 60).expect("the code block is kept whole");
        assert_eq!(code, long.as_str());
        assert_eq!(out.lines().filter(|l| l.chars().count() > 60).count(), 1, "{out}");
        assert!(out.contains("a  bb\nx   1\n"), "{out}");
        assert!(out.contains("first\n   column 0: value 0   column 1: value 1"), "{out}");
        assert!(out.contains("\n  word word"), "a list item hangs under its text: {out}");
        assert!(out.starts_with("# Title\n\nword word"), "{out}");
    }
}
