//! One self-contained HTML page for a results directory: the run's settings, every CSV as a
//! table and every SVG chart inline — no script, no stylesheet or font from the network, so it
//! opens anywhere and can be mailed as one file.
//!
//! The page is made from the directory alone ([`report_dir`]), so `zonekit report DIR` on an
//! old directory gives the same page the experiment wrote at its end.

use std::fmt::Write as _;
use std::path::Path;

/// Tables longer than this show their first rows and say how many were left out (the CSV
/// beside the page has them all).
pub const TABLE_ROWS_MAX: usize = 200;
/// The file the settings of a run are kept in, beside its results: `key<TAB>value` lines.
pub const SETTINGS_FILE: &str = "settings.tsv";
/// The page's name in its directory.
pub const REPORT_FILE: &str = "report.html";
/// Where a resumed experiment moves the rows of its `results.csv` it does not reuse (damaged
/// ones, or of other settings): not the run's results, so not on the page.
pub const SET_ASIDE_FILE: &str = "results.previous.csv";

/// Writes the run's settings (`key`, `value` pairs, in order) beside its results, for
/// [`report_dir`] to show.
pub fn write_settings(dir: &Path, settings: &[(String, String)]) -> std::io::Result<()> {
    let text: String = settings.iter().map(|(k, v)| format!("{}\t{}\n", one_line(k), one_line(v))).collect();
    zonekit_base::atomic::write(dir.join(SETTINGS_FILE), text)
}

fn one_line(s: &str) -> String {
    s.replace(['\t', '\n', '\r'], " ")
}

/// The page for results directory `dir` (titled `title`): its settings file, then every
/// `*.svg` inline and every `*.csv` but [`SET_ASIDE_FILE`] as a table, in name order. Errors
/// name the file.
pub fn report_dir(dir: &Path, title: &str) -> Result<String, String> {
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let mut entries: Vec<_> = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    let with_ext = |ext: &str| entries.iter().filter(|p| p.is_file() && p.extension().is_some_and(|e| e == ext)).cloned().collect::<Vec<_>>();
    let settings: Vec<(String, String)> = match dir.join(SETTINGS_FILE) {
        p if p.exists() => read(&p)?.lines().filter_map(|l| l.split_once('\t')).map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        _ => Vec::new(),
    };
    let mut tables = Vec::new();
    for p in with_ext("csv").into_iter().filter(|p| !p.ends_with(SET_ASIDE_FILE)) {
        let text = read(&p)?;
        let mut rows = parse_csv(&text);
        if rows.is_empty() {
            continue;
        }
        let header = rows.remove(0);
        tables.push((file_name(&p), header, rows));
    }
    let mut charts = Vec::new();
    for p in with_ext("svg") {
        let svg = read(&p)?;
        if !svg.trim_start().starts_with("<svg") {
            return Err(format!("{}: not an SVG image", p.display()));
        }
        charts.push((file_name(&p), svg));
    }
    Ok(page(title, &settings, &tables, &charts))
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// A table of the page: its name (the CSV file's), header and rows.
pub type NamedTable = (String, Vec<String>, Vec<Vec<String>>);

/// The page itself: settings, then charts (each with its file name), then tables.
pub fn page(title: &str, settings: &[(String, String)], tables: &[NamedTable], charts: &[(String, String)]) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\n<style>\
body{{font-family:sans-serif;margin:2em;max-width:80em;color:#222}}\
table{{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:0.9em}}\
td,th{{border:1px solid #ccc;padding:0.2em 0.6em;text-align:right}}\
td:first-child,th:first-child{{text-align:left}}th{{background:#f0f0f0}}\
figure{{display:inline-block;margin:0.5em;vertical-align:top}}figcaption{{font-size:0.8em;color:#666}}\
nav a{{margin-right:1em}}.scroll{{overflow-x:auto}}\
</style></head><body>\n<h1>{t}</h1>\n<nav><a href=\"#settings\">Settings</a><a href=\"#charts\">Charts ({nc})</a><a href=\"#tables\">Tables ({nt})</a></nav>\n",
        t = escape(title),
        nt = tables.len(),
        nc = charts.len()
    );
    h.push_str("<h2 id=\"settings\">Settings</h2>\n");
    if settings.is_empty() {
        h.push_str("<p>No settings were recorded with these results.</p>\n");
    } else {
        h.push_str("<table class=\"settings\">\n");
        for (k, v) in settings {
            let _ = writeln!(h, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
        }
        h.push_str("</table>\n");
    }
    h.push_str("<h2 id=\"charts\">Charts</h2>\n");
    for (name, svg) in charts {
        let _ = writeln!(h, "<figure class=\"chart\">{}<figcaption>{}</figcaption></figure>", strip_xml_declaration(svg), escape(name));
    }
    h.push_str("<h2 id=\"tables\">Tables</h2>\n");
    for (name, header, rows) in tables {
        let _ = writeln!(h, "<h3>{}</h3>\n<div class=\"scroll\"><table class=\"results\">", escape(name));
        let _ = writeln!(h, "<tr>{}</tr>", header.iter().map(|c| format!("<th>{}</th>", escape(c))).collect::<String>());
        for row in rows.iter().take(TABLE_ROWS_MAX) {
            let _ = writeln!(h, "<tr>{}</tr>", row.iter().map(|c| format!("<td>{}</td>", escape(c))).collect::<String>());
        }
        h.push_str("</table></div>\n");
        if rows.len() > TABLE_ROWS_MAX {
            let _ = writeln!(h, "<p>The first {TABLE_ROWS_MAX} of {} rows; all are in {}.</p>", rows.len(), escape(name));
        }
    }
    h.push_str("</body></html>\n");
    h
}

fn strip_xml_declaration(svg: &str) -> &str {
    let s = svg.trim_start();
    match s.strip_prefix("<?xml") {
        Some(rest) => rest.find("?>").map_or(s, |end| rest[end + 2..].trim_start()),
        None => s,
    }
}

/// Text as HTML character data.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// CSV as [`crate::csv`] writes it (quoted cells may hold commas, quotes and line ends).
pub fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut cell = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => cell.push(c),
            (false, '"') if cell.is_empty() => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut cell)),
            (false, '\n') => {
                row.push(std::mem::take(&mut cell));
                rows.push(std::mem::take(&mut row));
            }
            (false, '\r') => {}
            (false, c) => cell.push(c),
        }
    }
    if !cell.is_empty() || !row.is_empty() {
        row.push(cell);
        rows.push(row);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_round_trips_through_the_writer_and_the_reader() {
        let rows = vec![vec!["a,b".to_string(), "say \"hi\"".into(), "two\nlines".into()], vec!["1".into(), "".into(), "3".into()]];
        let text = crate::csv(&["x", "y", "z"], &rows);
        let mut back = parse_csv(&text);
        assert_eq!(back.remove(0), vec!["x", "y", "z"]);
        assert_eq!(back, rows);
    }

    /// The rows a resumed experiment moved aside (damaged ones among them, possibly not
    /// UTF-8) are not the run's results: the page leaves them out, and is still made (a byte
    /// that was not UTF-8 there failed every later experiment at its last step).
    #[test]
    fn the_page_leaves_out_the_rows_set_aside() {
        let dir = std::env::temp_dir().join(format!("zonekit-html-aside-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("results.csv"), crate::csv(&["placement", "waf"], &[vec!["sepbit".into(), "1.9".into()]])).unwrap();
        std::fs::write(dir.join(SET_ASIDE_FILE), b"placement,waf\nsepbit,1.\xff9\nnosep,7.5\n").unwrap();
        let html = report_dir(&dir, "x").unwrap();
        assert!(html.contains("<td>sepbit</td><td>1.9</td>"));
        assert!(!html.contains("7.5") && !html.contains(SET_ASIDE_FILE), "rows set aside are not reported");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_directory_becomes_one_page_with_its_settings_tables_and_charts() {
        let dir = std::env::temp_dir().join(format!("zonekit-html-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write_settings(&dir, &[("command".into(), "zonekit demo <x>".into())]).unwrap();
        std::fs::write(dir.join("results.csv"), crate::csv(&["placement", "waf"], &[vec!["sepbit".into(), "1.9".into()]])).unwrap();
        std::fs::write(dir.join("waf.svg"), crate::bar_chart("WAF", "WAF", &[("a".into(), 1.0)])).unwrap();
        let html = report_dir(&dir, "Demo & more").unwrap();
        assert!(html.contains("<title>Demo &amp; more</title>"));
        assert!(html.contains("<td>zonekit demo &lt;x&gt;</td>"), "settings escaped");
        assert!(html.contains("<td>sepbit</td><td>1.9</td>"));
        assert_eq!(html.matches("<svg").count(), 1);
        assert!(!html.contains("http://") || html.matches("http://").count() == html.matches("xmlns=\"http://www.w3.org").count(), "nothing from the network");
        std::fs::write(dir.join("broken.svg"), "not a picture").unwrap();
        assert!(report_dir(&dir, "x").unwrap_err().contains("broken.svg: not an SVG"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
