//! Each seed's figures redrawn from the result files its experiment committed, with the seed's
//! axes, series and grouping, named after the seed's figure (`fig-4.3.svg`), each caption
//! saying which figure it mirrors and at what setting.
//!
//! [`draw`] reads only CSV files under a results directory (`docs/results/seed-00N`), so
//! `zonekit report figures --seed N --results DIR` redraws them without rerunning anything, and
//! an experiment's report step calls the same code on its fresh results. A seed figure whose
//! data no result file holds is listed in [`SeedFigures::not_drawn`] with the reason, never
//! drawn from anything else. [`write`] puts the figures in `DIR/figures/` with `figures.tsv`
//! (their order, which the HTML page follows) and `README.md` (each figure, ours beside the
//! seed's numbers where the seed gives numbers).

mod seed000;
mod seed002;
mod seed003;
mod seed004;

use std::path::{Path, PathBuf};

use crate::LabError;

/// The seeds with figures to redraw.
pub const SEEDS: [u32; 4] = [0, 2, 3, 4];
/// The folder of a results directory the figures are written to.
pub use zonekit_report::html::FIGURES_DIR;
/// Their order and captions, one `file<TAB>seed figure<TAB>caption` line each (the figures
/// not drawn last, with no file and the reason as caption), which the HTML page follows.
pub use zonekit_report::html::FIGURES_INDEX as ORDER_FILE;

/// One redrawn figure.
#[derive(Clone, Debug)]
pub struct Figure {
    /// Named after the seed's figure: `fig-11.svg`, `fig-4.2.svg`, `table-3.2.svg`.
    pub file_name: String,
    /// The seed's name for it: "Fig. 11", "Table 3.2".
    pub seed_figure: String,
    /// What it mirrors and at what setting (also drawn under the chart).
    pub caption: String,
    pub svg: String,
    /// The seed's numbers beside ours, where the seed states numbers for this figure.
    pub compare: Vec<Compare>,
}

/// One number the seed states, beside ours.
#[derive(Clone, Debug, PartialEq)]
pub struct Compare {
    pub quantity: String,
    pub seed: String,
    pub ours: String,
}

/// A seed figure with no data in the results: which, and why.
#[derive(Clone, Debug)]
pub struct NotDrawn {
    pub seed_figure: String,
    pub why: String,
}

/// A seed's figures in the seed's order.
#[derive(Clone, Debug)]
pub struct SeedFigures {
    pub seed: u32,
    pub figures: Vec<Figure>,
    pub not_drawn: Vec<NotDrawn>,
}

/// Draws seed `seed`'s figures from the CSV files under `results`. Errors name the file (a
/// missing one, a missing column, a cell that is not a number).
pub fn draw(seed: u32, results: &Path) -> Result<SeedFigures, LabError> {
    match seed {
        0 => seed000::draw(results),
        2 => seed002::draw(results),
        3 => seed003::draw(results),
        4 => seed004::draw(results),
        other => Err(LabError::Usage(format!("seed {other} has no figures to redraw (seeds with figures: {SEEDS:?})"))),
    }
}

/// Writes the figures to `results/figures/`: one SVG each, [`ORDER_FILE`] and `README.md`.
/// SVG files there that no figure writes any more are removed (the folder is ours alone).
pub fn write(figures: &SeedFigures, results: &Path) -> Result<Vec<PathBuf>, LabError> {
    let dir = results.join(FIGURES_DIR);
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |error| LabError::Io { path: path.clone(), error }
    };
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for path in entries.flatten().map(|e| e.path()) {
            let ours = figures.figures.iter().any(|f| path.ends_with(&f.file_name));
            if path.extension().is_some_and(|e| e == "svg") && !ours {
                std::fs::remove_file(&path).map_err(io(&path))?;
            }
        }
    }
    let mut written = Vec::new();
    let mut lines: Vec<(Vec<u32>, String)> = Vec::new();
    for f in &figures.figures {
        let path = dir.join(&f.file_name);
        std::fs::write(&path, &f.svg).map_err(io(&path))?;
        written.push(path);
        lines.push((numbers(&f.seed_figure), format!("{}\t{}\t{}\n", f.file_name, one_line(&f.seed_figure), one_line(&f.caption))));
    }
    // A figure not drawn takes its place in the seed's order: before the first drawn one whose
    // number comes after it (the drawn ones keep theirs: a table may precede a lower figure).
    for n in &figures.not_drawn {
        let key = numbers(&n.seed_figure);
        let at = lines.iter().position(|(k, _)| *k > key).unwrap_or(lines.len());
        lines.insert(at, (key, format!("\t{}\t{}\n", one_line(&n.seed_figure), one_line(&n.why))));
    }
    let order: String = lines.into_iter().map(|(_, line)| line).collect();
    for (name, text) in [(ORDER_FILE, order), ("README.md", readme(figures))] {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(io(&path))?;
        written.push(path);
    }
    Ok(written)
}

/// The numbers in a figure's name, for its place in the seed's order: "Fig. 4.10" → [4, 10].
fn numbers(name: &str) -> Vec<u32> {
    name.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).filter_map(|s| s.parse().ok()).collect()
}

fn one_line(s: &str) -> String {
    s.replace(['\t', '\n', '\r'], " ")
}

/// The figures' page in the results: each figure with its caption, the seed's numbers beside
/// ours, and what was not drawn and why.
pub fn readme(figures: &SeedFigures) -> String {
    let mut text = format!(
        "# Seed {:03}'s figures, redrawn from our results\n\nWritten by `zonekit report figures --seed {} --results DIR` from the CSV files of this \
         directory (nothing rerun); in the seed's order.\n",
        figures.seed, figures.seed
    );
    for f in &figures.figures {
        text.push_str(&format!("\n## {}\n\n![{}]({})\n\n{}\n", f.seed_figure, f.seed_figure, f.file_name, f.caption));
        if !f.compare.is_empty() {
            let rows: Vec<Vec<String>> = f.compare.iter().map(|c| vec![c.quantity.clone(), c.seed.clone(), c.ours.clone()]).collect();
            text.push('\n');
            text.push_str(&zonekit_report::markdown_table(&["", "seed", "ours"], &rows));
        }
    }
    if !figures.not_drawn.is_empty() {
        text.push_str("\n## Not drawn\n\n");
        for n in &figures.not_drawn {
            text.push_str(&format!("- **{}**: {}\n", n.seed_figure, n.why));
        }
    }
    text
}

/// The write-up's figures section: each figure in the seed's order (those not drawn with why)
/// as an image under `figures_path` (the figures' folder as the write-up reaches it), its
/// caption, and the seed's numbers beside ours.
pub fn write_up_section(figures: &SeedFigures, figures_path: &str) -> String {
    let mut text = format!(
        "Redrawn from the result files by `zonekit report figures --seed {} --results DIR` (nothing rerun; the experiment draws the same at its \
         end), in the seed's order; `{figures_path}/README.md` has them on one page.\n",
        figures.seed
    );
    let mut entries: Vec<(Vec<u32>, String)> = figures
        .figures
        .iter()
        .map(|f| {
            let mut entry =
                format!("\n**{}** ([`{}`]({figures_path}/{})): {}\n\n![{}]({figures_path}/{})\n", f.seed_figure, f.file_name, f.file_name, f.caption, f.seed_figure, f.file_name);
            if !f.compare.is_empty() {
                let rows: Vec<Vec<String>> = f.compare.iter().map(|c| vec![c.quantity.clone(), c.seed.clone(), c.ours.clone()]).collect();
                entry.push('\n');
                entry.push_str(&zonekit_report::markdown_table(&["", "seed", "ours"], &rows));
            }
            (numbers(&f.seed_figure), entry)
        })
        .collect();
    for n in &figures.not_drawn {
        let key = numbers(&n.seed_figure);
        let at = entries.iter().position(|(k, _)| *k > key).unwrap_or(entries.len());
        entries.insert(at, (key, format!("\n**{}**: not drawn: {}.\n", n.seed_figure, n.why)));
    }
    text.extend(entries.into_iter().map(|(_, e)| e));
    text
}

/// Replaces what lies between the figures markers of the write-up at `path` with `section`.
/// `Ok(false)` when the write-up has no markers (it is left as it was).
pub fn update_write_up(path: &Path, section: &str) -> Result<bool, LabError> {
    use zonekit_report::html::{FIGURES_BEGIN_MARKER, FIGURES_END_MARKER};
    let text = std::fs::read_to_string(path).map_err(|error| LabError::Io { path: path.to_path_buf(), error })?;
    let (Some(begin), Some(end)) = (text.find(FIGURES_BEGIN_MARKER), text.find(FIGURES_END_MARKER)) else { return Ok(false) };
    if end < begin {
        return Err(LabError::Results { path: path.to_path_buf(), line: 0, reason: format!("{FIGURES_END_MARKER} before {FIGURES_BEGIN_MARKER}") });
    }
    let updated = format!("{}{FIGURES_BEGIN_MARKER}\n{}\n{}", &text[..begin], section.trim_end(), &text[end..]);
    std::fs::write(path, updated).map_err(|error| LabError::Io { path: path.to_path_buf(), error })?;
    Ok(true)
}

/// A CSV file of the results, its cells found by column name.
pub(crate) struct Table {
    path: PathBuf,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn read(path: &Path) -> Result<Table, LabError> {
        let text = std::fs::read_to_string(path).map_err(|error| LabError::Io { path: path.to_path_buf(), error })?;
        let mut rows = zonekit_report::html::parse_csv(&text);
        if rows.is_empty() {
            return Err(LabError::Results { path: path.to_path_buf(), line: 1, reason: "no header".into() });
        }
        let header = rows.remove(0);
        Ok(Table { path: path.to_path_buf(), header, rows })
    }

    fn column(&self, name: &str) -> Result<usize, LabError> {
        self.header.iter().position(|h| h == name).ok_or_else(|| LabError::Results { path: self.path.clone(), line: 1, reason: format!("no column {name}") })
    }

    /// The rows whose cells equal `filter`'s values, as (line number, row).
    pub(crate) fn rows_where(&self, filter: &[(&str, &str)]) -> Result<Vec<Row<'_>>, LabError> {
        let columns: Vec<(usize, &str)> = filter.iter().map(|(c, v)| self.column(c).map(|i| (i, *v))).collect::<Result<_, _>>()?;
        Ok(self
            .rows
            .iter()
            .enumerate()
            .filter(|(_, r)| columns.iter().all(|(i, v)| r.get(*i).map(String::as_str) == Some(*v)))
            .map(|(k, r)| Row { table: self, line: k + 2, cells: r })
            .collect())
    }

    /// The one row matching `filter`; an error names the file and the filter otherwise.
    pub(crate) fn one(&self, filter: &[(&str, &str)]) -> Result<Row<'_>, LabError> {
        let mut rows = self.rows_where(filter)?;
        match rows.len() {
            1 => Ok(rows.remove(0)),
            found => Err(LabError::Results { path: self.path.clone(), line: 0, reason: format!("{found} rows where {filter:?}, one expected") }),
        }
    }
}

/// One row of a [`Table`].
#[derive(Clone, Copy)]
pub(crate) struct Row<'a> {
    table: &'a Table,
    line: usize,
    cells: &'a [String],
}

impl Row<'_> {
    pub(crate) fn text(&self, column: &str) -> Result<&str, LabError> {
        let i = self.table.column(column)?;
        self.cells.get(i).map(String::as_str).ok_or_else(|| self.error(column, "missing"))
    }

    pub(crate) fn number(&self, column: &str) -> Result<f64, LabError> {
        let text = self.text(column)?;
        text.parse::<f64>().map_err(|_| self.error(column, &format!("{text:?} is not a number")))
    }

    /// The number in column `index`, for a file whose header repeats a name (seed 000's
    /// `table_4_3.csv` has a `thesis` column after each of its three measures).
    pub(crate) fn number_at(&self, index: usize) -> Result<f64, LabError> {
        let text = self.text_at(index)?;
        text.parse::<f64>().map_err(|_| self.error(&format!("#{}", index + 1), &format!("{text:?} is not a number")))
    }

    /// The text in column `index` (see [`Row::number_at`]).
    pub(crate) fn text_at(&self, index: usize) -> Result<&str, LabError> {
        self.cells.get(index).map(String::as_str).ok_or_else(|| self.error(&format!("#{}", index + 1), "missing"))
    }

    fn error(&self, column: &str, what: &str) -> LabError {
        LabError::Results { path: self.table.path.clone(), line: self.line, reason: format!("column {column}: {what}") }
    }
}

#[cfg(test)]
pub(crate) mod check {
    //! What every figure's test asks of its SVG, read back from the SVG itself.

    /// The workspace's committed results of seed `seed`.
    pub(crate) fn results(seed: u32) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../docs/results/seed-{seed:03}"))
    }

    /// The charts of a figure: its panels, or the figure itself when it has none.
    pub(crate) fn charts(svg: &str) -> Vec<&str> {
        let panels: Vec<&str> = svg.split("<svg class=\"panel\"").skip(1).collect();
        if panels.is_empty() {
            vec![svg]
        } else {
            panels
        }
    }

    /// The series count a chart declares (its root's data-series).
    pub(crate) fn series(chart: &str) -> usize {
        let at = chart.find("data-series=\"").expect("a chart declares its series") + 13;
        chart[at..chart[at..].find('"').unwrap() + at].parse().unwrap()
    }

    /// The legend entries a chart draws.
    pub(crate) fn legend(chart: &str) -> Vec<String> {
        chart.split("class=\"legend-entry\"").skip(1).map(|s| s[s.find('>').unwrap() + 1..s.find("</text>").unwrap()].to_string()).collect()
    }

    /// The value axis' tick labels (the text after each grid line).
    pub(crate) fn y_ticks(chart: &str) -> Vec<f64> {
        chart
            .split("stroke=\"#ddd\"/><text")
            .skip(1)
            .map(|s| {
                let label = &s[s.find('>').unwrap() + 1..s.find("</text>").unwrap()];
                label.replace(',', "").parse::<f64>().unwrap_or_else(|_| panic!("tick {label:?} is not a number"))
            })
            .collect()
    }

    /// The chart's rotated y-axis label.
    pub(crate) fn y_label(chart: &str) -> String {
        let s = &chart[chart.find("rotate(-90)").expect("a y label")..];
        s[s.find('>').unwrap() + 1..s.find("</text>").unwrap()].to_string()
    }

    /// Asserts the ticks step evenly by 1, 2 or 5 times a power of ten.
    pub(crate) fn assert_round(ticks: &[f64], what: &str) {
        assert!(ticks.len() >= 2, "{what}: {ticks:?} has fewer than two ticks");
        let step = ticks[1] - ticks[0];
        for pair in ticks.windows(2) {
            assert!(((pair[1] - pair[0]) - step).abs() <= step * 1e-9, "{what}: uneven ticks {ticks:?}");
        }
        let mantissa = step / 10f64.powf(step.log10().floor());
        assert!([1.0, 2.0, 5.0].iter().any(|m| (mantissa - m).abs() < 1e-6), "{what}: step {step} of {ticks:?} is not 1, 2 or 5 × 10^k");
    }

    /// Every chart of `svg` passes [`assert_chart`], and its caption names `figure`.
    pub(crate) fn assert_figure(svg: &str, figure: &str, series_count: usize, unit: &str) {
        assert_caption(svg, figure);
        for (k, chart) in charts(svg).into_iter().enumerate() {
            assert_chart(chart, &format!("{figure}, chart {k}"), series_count, unit);
        }
    }

    /// The figure's caption names the seed `figure` it mirrors.
    pub(crate) fn assert_caption(svg: &str, figure: &str) {
        assert!(svg.contains("class=\"caption\""), "{figure}: no caption");
        let caption: String = svg.split("class=\"caption\"").skip(1).map(|s| &s[s.find('>').unwrap() + 1..s.find("</text>").unwrap()]).collect::<Vec<_>>().join(" ");
        assert!(caption.contains(&format!("{figure} ")), "{figure}: the caption {caption:?} does not name the seed figure");
    }

    /// A chart with `series` series, a legend naming each when several, a y label ending in
    /// `(unit)` unless `unit` is empty, and round ticks.
    pub(crate) fn assert_chart(chart: &str, what: &str, series_count: usize, unit: &str) {
        assert_eq!(series(chart), series_count, "{what}: series");
        if series_count > 1 {
            assert_eq!(legend(chart).len(), series_count, "{what}: a legend entry per series");
        }
        let label = y_label(chart);
        if !unit.is_empty() {
            assert!(label.ends_with(&format!("({unit})")), "{what}: y label {label:?} without ({unit})");
        }
        assert_round(&y_ticks(chart), what);
    }

    #[test]
    fn write_puts_each_figure_its_index_and_readme_in_figures_and_removes_stale_charts() {
        let dir = tempfile::tempdir().unwrap();
        let figures_dir = dir.path().join(super::FIGURES_DIR);
        std::fs::create_dir_all(&figures_dir).unwrap();
        std::fs::write(figures_dir.join("fig-9.9.svg"), "<svg/>").unwrap();
        std::fs::write(figures_dir.join("notes.txt"), "kept").unwrap();
        let figures = super::SeedFigures {
            seed: 2,
            figures: vec![super::Figure {
                file_name: "fig-4.2.svg".into(),
                seed_figure: "Fig. 4.2".into(),
                caption: "Mirrors\tit".into(),
                svg: "<svg></svg>".into(),
                compare: vec![super::Compare { quantity: "q".into(), seed: "1".into(), ours: "2".into() }],
            }],
            not_drawn: vec![super::NotDrawn { seed_figure: "Fig. 4.1".into(), why: "no data".into() }],
        };
        super::write(&figures, dir.path()).unwrap();
        assert!(!figures_dir.join("fig-9.9.svg").exists(), "a chart no figure writes any more is removed");
        assert!(figures_dir.join("notes.txt").exists(), "only SVG files are removed");
        assert_eq!(std::fs::read_to_string(figures_dir.join("fig-4.2.svg")).unwrap(), "<svg></svg>");
        assert_eq!(
            std::fs::read_to_string(figures_dir.join(super::ORDER_FILE)).unwrap(),
            "\tFig. 4.1\tno data\nfig-4.2.svg\tFig. 4.2\tMirrors it\n",
            "a figure not drawn in its place"
        );
        let readme = std::fs::read_to_string(figures_dir.join("README.md")).unwrap();
        assert!(readme.contains("![Fig. 4.2](fig-4.2.svg)") && readme.contains("| q | 1 | 2 |") && readme.contains("- **Fig. 4.1**: no data"), "{readme}");
    }

    #[test]
    fn the_write_up_gets_its_section_between_the_markers_and_nothing_else_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seed-002.md");
        std::fs::write(&path, "# Seed\n\nbefore\n<!-- figures:begin -->\nold\n<!-- figures:end -->\nafter\n").unwrap();
        let figures = super::SeedFigures {
            seed: 2,
            figures: vec![super::Figure { file_name: "fig-4.4.svg".into(), seed_figure: "Fig. 4.4".into(), caption: "c".into(), svg: String::new(), compare: Vec::new() }],
            not_drawn: vec![super::NotDrawn { seed_figure: "Fig. 4.3".into(), why: "no data".into() }],
        };
        assert!(super::update_write_up(&path, &super::write_up_section(&figures, "seed-002/figures")).unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# Seed\n\nbefore\n<!-- figures:begin -->\n") && text.ends_with("<!-- figures:end -->\nafter\n") && !text.contains("old"), "{text}");
        assert!(text.find("**Fig. 4.3**: not drawn").unwrap() < text.find("![Fig. 4.4](seed-002/figures/fig-4.4.svg)").unwrap(), "in the seed's order");
        std::fs::write(&path, "no markers\n").unwrap();
        assert!(!super::update_write_up(&path, "x").unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "no markers\n");
    }

    #[test]
    fn the_tick_check_refuses_ticks_that_are_not_round() {
        assert_round(&[0.0, 0.2, 0.4], "ok");
        assert_round(&[0.0, 50.0, 100.0], "ok");
        for bad in [vec![0.0, 0.63, 1.26], vec![0.0, 3.0, 6.0], vec![0.0, 1.0, 3.0], vec![1.0]] {
            assert!(std::panic::catch_unwind(|| assert_round(&bad, "bad")).is_err(), "{bad:?}");
        }
    }
}
