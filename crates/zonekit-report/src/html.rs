//! One self-contained HTML page for a results directory: the run's settings, every CSV as a
//! table and every SVG chart inline — no script, no stylesheet or font from the network, so it
//! opens anywhere and can be mailed as one file.
//!
//! The page is made from the directory alone ([`report_dir`]), so `zonekit report DIR` on an
//! old directory gives the same page the experiment wrote at its end.
//!
//! When the directory holds a seed's figures redrawn (`figures/figures.tsv`, written by
//! `zonekit report figures`), the page follows the seed: a table of contents with one entry
//! per seed figure in the seed's order (and those not drawn, with why), each figure under its
//! own heading; the experiment's other charts and the tables follow, folded (`<details>`), so
//! the page is not one long scroll.

use std::fmt::Write as _;
use std::path::Path;

/// Tables longer than this show their first rows and say how many were left out (the CSV
/// beside the page has them all).
pub const TABLE_ROWS_MAX: usize = 200;
/// The file the settings of a run are kept in, beside its results: `key<TAB>value` lines.
pub const SETTINGS_FILE: &str = "settings.tsv";
/// The page's name in its directory.
pub const REPORT_FILE: &str = "report.html";
/// Why a run's figures mean less than they seem, one warning a line, written beside its results
/// by the commands that check for degenerate runs; the page shows them before anything else.
pub const WARNINGS_FILE: &str = "warnings.txt";
/// The folder of a results directory with a seed's redrawn figures, and its index there: one
/// `file<TAB>seed figure<TAB>caption` line per figure in the seed's order; a line with no file
/// is a figure not drawn, its caption the reason.
pub const FIGURES_DIR: &str = "figures";
pub const FIGURES_INDEX: &str = "figures.tsv";
/// The lines between which `zonekit report figures` writes a write-up's figures section (the
/// seed's numbers beside ours, derived numbers among them: the claims check leaves it out, as
/// it does the rendered acceptance table).
pub const FIGURES_BEGIN_MARKER: &str = "<!-- figures:begin -->";
pub const FIGURES_END_MARKER: &str = "<!-- figures:end -->";
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
    let index = dir.join(FIGURES_DIR).join(FIGURES_INDEX);
    let mut figures = Vec::new();
    if index.exists() {
        for line in read(&index)?.lines().filter(|l| !l.trim().is_empty()) {
            let mut cells = line.splitn(3, '\t');
            let (file, name, caption) = (cells.next().unwrap_or_default(), cells.next().unwrap_or_default(), cells.next().unwrap_or_default());
            let svg = if file.is_empty() {
                None
            } else {
                let p = dir.join(FIGURES_DIR).join(file);
                let svg = read(&p)?;
                if !svg.trim_start().starts_with("<svg") {
                    return Err(format!("{}: not an SVG image", p.display()));
                }
                Some(svg)
            };
            figures.push(SeedFigure { name: name.to_string(), caption: caption.to_string(), svg });
        }
    }
    let warnings: Vec<String> = match dir.join(WARNINGS_FILE) {
        p if p.exists() => read(&p)?.lines().filter(|l| !l.trim().is_empty()).map(str::to_string).collect(),
        _ => Vec::new(),
    };
    Ok(page(title, &settings, &warnings, &tables, &charts, &figures))
}

/// One of a seed's figures on the page: its name ("Fig. 4.2"), caption, and the chart (none
/// when it was not drawn; the caption then says why).
#[derive(Clone, Debug)]
pub struct SeedFigure {
    pub name: String,
    pub caption: String,
    pub svg: Option<String>,
}

/// The anchor of a seed figure: "Fig. 4.2" → "fig-4-2".
fn anchor(name: &str) -> String {
    let mut a = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            a.push(c.to_ascii_lowercase());
        } else if !a.ends_with('-') {
            a.push('-');
        }
    }
    a.trim_matches('-').to_string()
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// A table of the page: its name (the CSV file's), header and rows.
pub type NamedTable = (String, Vec<String>, Vec<Vec<String>>);

/// The page itself: a table of contents, settings, the seed's figures in its order (when
/// there are any), the other charts (each with its file name) and the tables.
pub fn page(title: &str, settings: &[(String, String)], warnings: &[String], tables: &[NamedTable], charts: &[(String, String)], figures: &[SeedFigure]) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\n<style>\
body{{font-family:sans-serif;margin:2em;max-width:80em;color:#222}}\
table{{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:0.9em}}\
td,th{{border:1px solid #ccc;padding:0.2em 0.6em;text-align:right}}\
td:first-child,th:first-child{{text-align:left}}th{{background:#f0f0f0}}\
figure{{display:inline-block;margin:0.5em;vertical-align:top;max-width:100%}}figure svg{{max-width:100%;height:auto}}\
figcaption{{font-size:0.8em;color:#666}}.warnings{{border-left:0.4em solid #c60;background:#fff4e5;padding:0.2em 1em}}\
nav a{{margin-right:1em}}nav ol{{columns:2;font-size:0.9em}}.scroll{{overflow-x:auto}}summary{{cursor:pointer;font-weight:bold;margin:0.5em 0}}\
</style></head><body>\n<h1>{t}</h1>\n",
        t = escape(title),
    );
    let other_charts = if figures.is_empty() { "Charts" } else { "Other charts" };
    let _ = write!(h, "<nav><a href=\"#settings\">Settings</a>");
    if !figures.is_empty() {
        let _ = write!(h, "<a href=\"#figures\">The seed's figures ({})</a>", figures.iter().filter(|f| f.svg.is_some()).count());
    }
    let _ = writeln!(h, "<a href=\"#charts\">{other_charts} ({nc})</a><a href=\"#tables\">Tables ({nt})</a>", nc = charts.len(), nt = tables.len());
    if !figures.is_empty() {
        h.push_str("<ol class=\"toc\">\n");
        for f in figures {
            let _ = match f.svg {
                Some(_) => writeln!(h, "<li><a href=\"#{}\">{}</a></li>", anchor(&f.name), escape(&f.name)),
                None => writeln!(h, "<li>{} (not drawn)</li>", escape(&f.name)),
            };
        }
        h.push_str("</ol>\n");
    }
    h.push_str("</nav>\n");
    if !warnings.is_empty() {
        h.push_str("<section class=\"warnings\" id=\"warnings\"><h2>Warnings: figures that mean less than they seem</h2>\n<ul>\n");
        for w in warnings {
            let _ = writeln!(h, "<li>{}</li>", escape(w));
        }
        h.push_str("</ul></section>\n");
    }
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
    if !figures.is_empty() {
        h.push_str("<h2 id=\"figures\">The seed's figures, in its order</h2>\n");
        for f in figures {
            let _ = match &f.svg {
                // A chart that draws its caption is not captioned twice.
                Some(svg) => writeln!(
                    h,
                    "<section id=\"{}\"><h3>{}</h3>\n<figure class=\"chart\">{}{}</figure></section>",
                    anchor(&f.name),
                    escape(&f.name),
                    strip_xml_declaration(svg),
                    if svg.contains("class=\"caption\"") { String::new() } else { format!("<figcaption>{}</figcaption>", escape(&f.caption)) }
                ),
                None => writeln!(h, "<section><h3>{} (not drawn)</h3><p>{}</p></section>", escape(&f.name), escape(&f.caption)),
            };
        }
    }
    let _ = writeln!(h, "<h2 id=\"charts\">{other_charts}</h2>");
    // Beside the seed's figures the experiment's own charts are folded, so they do not make
    // the page one long scroll; alone, they are the page's content and stay open.
    let _ = writeln!(h, "<details{}><summary>{} charts, in file-name order</summary>", if figures.is_empty() { " open" } else { "" }, charts.len());
    for (name, svg) in charts {
        let _ = writeln!(h, "<figure class=\"chart\">{}<figcaption>{}</figcaption></figure>", strip_xml_declaration(svg), escape(name));
    }
    h.push_str("</details>\n<h2 id=\"tables\">Tables</h2>\n");
    for (name, header, rows) in tables {
        let _ = writeln!(h, "<details><summary>{} ({} rows)</summary>\n<div class=\"scroll\"><table class=\"results\">", escape(name), rows.len());
        let _ = writeln!(h, "<tr>{}</tr>", header.iter().map(|c| format!("<th>{}</th>", escape(c))).collect::<String>());
        for row in rows.iter().take(TABLE_ROWS_MAX) {
            let _ = writeln!(h, "<tr>{}</tr>", row.iter().map(|c| format!("<td>{}</td>", escape(c))).collect::<String>());
        }
        h.push_str("</table></div>\n");
        if rows.len() > TABLE_ROWS_MAX {
            let _ = writeln!(h, "<p>The first {TABLE_ROWS_MAX} of {} rows; all are in {}.</p>", rows.len(), escape(name));
        }
        h.push_str("</details>\n");
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

    /// A run's warnings lead the page, before its settings, escaped; without the file there is
    /// no warnings section.
    #[test]
    fn a_runs_warnings_lead_the_page() {
        let dir = std::env::temp_dir().join(format!("zonekit-html-warnings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("results.csv"), crate::csv(&["placement", "waf"], &[vec!["sepbit".into(), "1.0".into()]])).unwrap();
        assert!(!report_dir(&dir, "x").unwrap().contains("id=\"warnings\""));
        std::fs::write(dir.join(WARNINGS_FILE), "no GC ran: WAF <1.0> says nothing\n\nthe cache never evicted\n").unwrap();
        let html = report_dir(&dir, "x").unwrap();
        let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("{s} not on the page"));
        assert!(at("id=\"warnings\"") < at("id=\"settings\""));
        assert!(html.contains("<li>no GC ran: WAF &lt;1.0&gt; says nothing</li>") && html.contains("<li>the cache never evicted</li>"));
        assert_eq!(html.matches("<li>").count(), 2, "blank lines are not warnings");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A seed's figures lead the page in the index's order, each under its own anchored heading
    /// with a contents entry; a figure not drawn is listed with its reason; the experiment's own
    /// charts follow, folded.
    #[test]
    fn a_seeds_figures_are_shown_in_its_order_with_a_table_of_contents() {
        let dir = std::env::temp_dir().join(format!("zonekit-html-figures-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(FIGURES_DIR)).unwrap();
        std::fs::write(dir.join("own.svg"), crate::bar_chart("own", "WAF", &[("a".into(), 1.0)])).unwrap();
        for name in ["fig-4.10.svg", "fig-4.2.svg"] {
            std::fs::write(dir.join(FIGURES_DIR).join(name), crate::bar_chart(name, "WAF", &[("a".into(), 1.0)])).unwrap();
        }
        std::fs::write(
            dir.join(FIGURES_DIR).join(FIGURES_INDEX),
            "fig-4.2.svg\tFig. 4.2\tMirrors Fig. 4.2 <at> x\n\tFig. 4.3\tno data\nfig-4.10.svg\tFig. 4.10\tMirrors Fig. 4.10\n",
        )
        .unwrap();
        let html = report_dir(&dir, "seed").unwrap();
        let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("{s} not on the page"));
        assert!(at("href=\"#fig-4-2\"") < at("href=\"#fig-4-10\""), "contents in the seed's order, not by file name");
        assert!(at("<section id=\"fig-4-2\">") < at("Fig. 4.3 (not drawn)</h3><p>no data") && at("no data") < at("<section id=\"fig-4-10\">"));
        assert!(html.contains("Mirrors Fig. 4.2 &lt;at&gt; x</figcaption>"));
        assert!(at("<section id=\"fig-4-10\">") < at("<details><summary>1 charts"), "the experiment's own charts after, folded");
        assert_eq!(html.matches("<figure class=\"chart\"><svg").count(), 3);
        std::fs::write(dir.join(FIGURES_DIR).join(FIGURES_INDEX), "gone.svg\tFig. 1\tx\n").unwrap();
        assert!(report_dir(&dir, "x").unwrap_err().contains("gone.svg"), "a figure the index names must be there");
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
