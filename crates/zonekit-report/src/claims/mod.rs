//! Claims as data: each seed's evaluation claims as rows beside its results, verdicts computed
//! by rule, and the write-up's acceptance table rendered from them, so no verdict outruns its
//! files (`zonekit claims render | check`).
//!
//! # The claims file
//!
//! `DIR/claims.csv` beside a seed's result files (`docs/results/seed-004/`), whose write-up is
//! `DIR.md` (`docs/results/seed-004.md`). CSV as [`crate::csv`] writes it, one row per claim of
//! the seed's evaluation, with these columns:
//!
//! | column | what it holds |
//! |---|---|
//! | `id` | the claim's name in the table (`1`, `5b`) |
//! | `seed_words` | the seed's words, exact or translated (quoted and marked as such) |
//! | `seed_where` | where they are: the seed file's line(s), table or figure |
//! | `kind` | `value`, `ordering`, or a declared verdict: `by construction`, `calibrated to this cell`, `not addressed` |
//! | `seed_value` | a `value` claim's number (in `unit`); an ordering's shape in words (`LRU, ARC > SLRU, DAM`) |
//! | `unit` | the unit of the seed's value and ours (`%`, `WAF`, `points`) |
//! | `margin` | `10 %` (a share of the seed's value; of the lower side's, for an ordering) or `0.5` (in `unit`), then where it comes from: the seed's own where it gives one, else `10 % (default)` |
//! | `setting` | the setting the claim holds at, and ours |
//! | `ours` | one measurement a line: `name: EXPR` for a value, `name: EXPR > EXPR` for an ordering (the name ends at the first colon and space) (the side the seed says is higher first); a name in parentheses, `(Belady): EXPR`, is context, shown and not judged |
//! | `note` | why: required for a declared verdict |
//!
//! `EXPR` is arithmetic (`+ - * /`, parentheses, `min(..)`, `max(..)`) over numbers and
//! sources, each a file under `DIR`:
//!
//! - `FILE[column=value & column=value].column`: a table cell, from a CSV file or from the
//!   markdown tables of a `.md` file (a column with spaces quoted: `."hit ratio"`); exactly one
//!   row must match the selector (a value with `&` or `]` in it is quoted);
//! - `FILE~"text"~"text"`: the number right after the last text, each found after the one
//!   before it (for lines such as `WAF per GC: mean 4.74`).
//!
//! A cell's first number is its value (`41.35 %` is 41.35; `0.4135` is 0.4135, so a hit ratio
//! in a CSV is `100 * ...` to compare with a seed's percent).
//!
//! # Verdicts, by rule ([`verdict`])
//!
//! - a `value` measurement holds when it is within the margin of the seed's value;
//! - an `ordering` measurement holds when the higher side leads by at least the margin, is
//!   *under the margin* when it leads by less, and fails when tied or reversed;
//! - a claim is **reproduced** when every measurement holds, **not reproduced** when every one
//!   fails, **partly** otherwise; the measurements are ours at the claim's setting (each of our
//!   workloads there), so a claim that holds on one and not another is partly;
//! - **by construction**, **calibrated to this cell** and **not addressed** are declared in
//!   `kind`, each with a note; their measurements, if any, are shown and not judged.
//!
//! # The write-up
//!
//! [`render`] writes the table and the verdict counts between `<!-- claims:begin -->` and
//! `<!-- claims:end -->` in `DIR.md`. [`check`] fails on a table that differs from what
//! [`render`] writes, a source file, row or column that is missing, and a number in a table
//! of the write-up (outside the rendered block; in it, the claims' notes: its other cells are the
//! seed's words and settings, or computed) found
//! in no result file under `DIR` (any file but the claims file, SVG charts and series of more
//! than [`numbers::SERIES_LINES_MIN`] lines; a number with `d` decimals matches a file's number that
//! rounds to it at `d` decimals, or 100 × it for a ratio shown as a percent, `10.09 M` one near
//! 10,090,000; an integer must match exactly; a number glued to letters — `fig5`, `W4`, `L1` — is a name, not a number).

mod expr;
pub mod numbers;
pub mod verdict;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

pub use expr::{leading_number, markdown_tables, parse_expr, parse_measurement, Expr, Files, Measurement, Source};
use verdict::{combine, judge_ordering, judge_value, Margin, Outcome, Verdict};

use crate::html::parse_csv;

/// The claims file's name in a seed's results directory.
pub const CLAIMS_FILE: &str = "claims.csv";
pub const BEGIN_MARKER: &str = "<!-- claims:begin -->";
pub const END_MARKER: &str = "<!-- claims:end -->";
/// The claims file's columns, in order.
pub const COLUMNS: [&str; 10] = ["id", "seed_words", "seed_where", "kind", "seed_value", "unit", "margin", "setting", "ours", "note"];

/// One claim of a seed's evaluation, as its row reads.
#[derive(Clone, Debug)]
pub struct Claim {
    pub id: String,
    pub seed_words: String,
    pub seed_where: String,
    pub kind: Kind,
    pub seed_value: String,
    pub unit: String,
    pub margin_text: String,
    pub setting: String,
    pub measurements: Vec<Measurement>,
    pub note: String,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Value { seed: f64, margin: Margin },
    Ordering { margin: Margin },
    Declared(Verdict),
}

/// What `check` found wrong, naming the claim (when one is at fault) and the file.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub file: PathBuf,
    pub claim: Option<String>,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.claim {
            Some(id) => write!(f, "{}: claim {id}: {}", self.file.display(), self.message),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

/// The write-up of the seed whose results are in `dir`: `dir` with `.md`.
pub fn writeup_path(dir: &Path) -> PathBuf {
    let mut p = dir.as_os_str().to_owned();
    p.push(".md");
    PathBuf::from(p)
}

/// Reads and parses `dir/claims.csv`; every malformed row is a problem.
pub fn load(dir: &Path) -> Result<Vec<Claim>, Vec<Problem>> {
    let path = dir.join(CLAIMS_FILE);
    let problem = |claim: Option<&str>, message: String| Problem { file: path.clone(), claim: claim.map(str::to_string), message };
    let text = std::fs::read_to_string(&path).map_err(|e| vec![problem(None, e.to_string())])?;
    let rows = parse_csv(&text);
    let Some(header) = rows.first() else { return Err(vec![problem(None, "empty".into())]) };
    if header.iter().map(String::as_str).ne(COLUMNS) {
        return Err(vec![problem(None, format!("the header must be {}", COLUMNS.join(",")))]);
    }
    let mut claims = Vec::new();
    let mut problems = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for row in &rows[1..] {
        if row.len() != COLUMNS.len() {
            problems.push(problem(row.first().map(String::as_str), format!("{} cells, not {}", row.len(), COLUMNS.len())));
            continue;
        }
        let id = row[0].trim();
        if id.is_empty() || !seen.insert(id.to_string()) {
            problems.push(problem(Some(id), "an id must be present and unique".into()));
            continue;
        }
        match parse_row(row) {
            Ok(c) => claims.push(c),
            Err(m) => problems.push(problem(Some(id), m)),
        }
    }
    if problems.is_empty() {
        Ok(claims)
    } else {
        Err(problems)
    }
}

fn parse_row(row: &[String]) -> Result<Claim, String> {
    let cell = |name: &str| row[COLUMNS.iter().position(|c| *c == name).expect("a known column")].trim().to_string();
    let measurements = cell("ours").lines().filter(|l| !l.trim().is_empty()).map(parse_measurement).collect::<Result<Vec<_>, _>>()?;
    let (kind_text, note) = (cell("kind"), cell("note"));
    let kind = match kind_text.as_str() {
        "value" => {
            let seed = cell("seed_value").parse::<f64>().map_err(|_| format!("a value claim's seed_value is a number, not `{}`", cell("seed_value")))?;
            Kind::Value { seed, margin: Margin::parse(&cell("margin"))? }
        }
        "ordering" => Kind::Ordering { margin: Margin::parse(&cell("margin"))? },
        other => Kind::Declared(Verdict::declared(other).ok_or_else(|| format!("kind `{other}`: value, ordering, by construction, calibrated to this cell or not addressed"))?),
    };
    match kind {
        Kind::Value { .. } | Kind::Ordering { .. } if measurements.iter().all(Measurement::is_context) => {
            return Err(format!("a {kind_text} claim needs a measurement in `ours` (not only context)"))
        }
        Kind::Value { .. } if measurements.iter().any(|m| !m.is_context() && m.below.is_some()) => return Err("a value claim's measurements have no `>`".into()),
        Kind::Ordering { .. } if measurements.iter().any(|m| !m.is_context() && m.below.is_none()) => return Err("an ordering claim's measurements are `higher > lower`".into()),
        Kind::Declared(_) if note.is_empty() => return Err(format!("a claim declared `{kind_text}` needs a note saying why")),
        _ => {}
    }
    if cell("seed_words").is_empty() || cell("seed_where").is_empty() {
        return Err("the seed's words and where they are (line, table or figure) are required".into());
    }
    Ok(Claim {
        id: cell("id"),
        seed_words: cell("seed_words"),
        seed_where: cell("seed_where"),
        kind,
        seed_value: cell("seed_value"),
        unit: cell("unit"),
        margin_text: cell("margin"),
        setting: cell("setting"),
        measurements,
        note,
    })
}

/// One measurement evaluated.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub name: String,
    pub value: f64,
    pub below: Option<f64>,
    /// `None` for context and for a declared verdict's measurements, which are shown, not judged.
    pub outcome: Option<Outcome>,
}

/// A claim with its measurements evaluated and its verdict.
#[derive(Clone, Debug)]
pub struct Judged {
    pub claim: Claim,
    pub measured: Vec<Measured>,
    pub verdict: Verdict,
}

/// Evaluates every claim against the files under `dir`.
pub fn judge(dir: &Path, claims: Vec<Claim>) -> Result<Vec<Judged>, Vec<Problem>> {
    let mut files = Files::new(dir);
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for claim in claims {
        let mut measured = Vec::new();
        for m in &claim.measurements {
            let value = files.eval(&m.value);
            let below = m.below.as_ref().map(|b| files.eval(b)).transpose();
            match (value, below) {
                (Ok(value), Ok(below)) => {
                    let outcome = match (claim.kind, below) {
                        _ if m.is_context() => None,
                        (Kind::Value { seed, margin }, None) => Some(judge_value(seed, value, margin)),
                        (Kind::Ordering { margin }, Some(lower)) => Some(judge_ordering(value, lower, margin)),
                        _ => None,
                    };
                    measured.push(Measured { name: m.name.clone(), value, below, outcome });
                }
                (Err(e), _) | (_, Err(e)) => problems.push(Problem { file: dir.join(CLAIMS_FILE), claim: Some(claim.id.clone()), message: format!("{}: {e}", m.name) }),
            }
        }
        let verdict = match claim.kind {
            Kind::Declared(v) => v,
            _ if measured.len() < claim.measurements.len() => continue,
            _ => combine(&measured.iter().filter_map(|m| m.outcome).collect::<Vec<_>>()),
        };
        out.push(Judged { claim, measured, verdict });
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// A number as the table shows it: an integer with thousands separators, else two decimals,
/// negative with a true minus sign.
pub fn show(v: f64) -> String {
    let sign = if v < 0.0 { "−" } else { "" };
    let a = v.abs();
    if (a - a.round()).abs() < 1e-9 {
        let digits = format!("{}", a.round() as u64);
        let mut grouped = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(c);
        }
        format!("{sign}{grouped}")
    } else {
        format!("{sign}{a:.2}")
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', "<br>")
}

/// The acceptance table and the counts, as they go between the markers.
pub fn render_table(dir_name: &str, judged: &[Judged]) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "<!-- Rendered by `zonekit claims render docs/results/{dir_name}` from {dir_name}/claims.csv, with the verdicts by rule; edit the claims, not this table. -->\n\n"
    ));
    out.push_str("| # | the seed says | where | its value | margin | setting | ours | verdict | note |\n|---|---|---|---|---|---|---|---|---|\n");
    for j in judged {
        let c = &j.claim;
        let unit = if c.unit.is_empty() { String::new() } else { format!(" {}", c.unit) };
        let seed_value = if c.seed_value.parse::<f64>().is_ok() { format!("{}{unit}", c.seed_value) } else { c.seed_value.clone() };
        let ours = j
            .measured
            .iter()
            .map(|m| {
                let ordering = m.below.is_some();
                let shown = match m.below {
                    Some(b) => format!("{} vs {}", show(m.value), show(b)),
                    None => show(m.value),
                };
                match m.outcome {
                    Some(o) => format!("{}: {shown} ({})", m.name, o.describe(ordering)),
                    None => format!("{}: {shown}", m.name),
                }
            })
            .collect::<Vec<_>>()
            .join("; ");
        let ours = if ours.is_empty() { "—".to_string() } else { ours };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | **{}** | {} |\n",
            cell(&c.id),
            cell(&c.seed_words),
            cell(&c.seed_where),
            cell(&seed_value),
            cell(if matches!(c.kind, Kind::Declared(_)) { "—" } else { &c.margin_text }),
            cell(&c.setting),
            cell(&ours),
            j.verdict,
            cell(&c.note)
        ));
    }
    let mut counts: BTreeMap<Verdict, usize> = BTreeMap::new();
    for j in judged {
        *counts.entry(j.verdict).or_default() += 1;
    }
    let counts = Verdict::ALL.iter().map(|v| format!("{} {v}", counts.get(v).copied().unwrap_or(0))).collect::<Vec<_>>().join(", ");
    out.push_str(&format!("\nVerdicts of the {} claims: {counts}.\n", judged.len()));
    out
}

/// The write-up with `table` put between its markers.
fn splice(writeup: &str, table: &str) -> Result<String, String> {
    let begin = writeup.find(BEGIN_MARKER).ok_or_else(|| format!("no `{BEGIN_MARKER}` line"))?;
    let end = writeup.find(END_MARKER).ok_or_else(|| format!("no `{END_MARKER}` line"))?;
    if end < begin || writeup[begin + 1..].contains(BEGIN_MARKER) || writeup[end + 1..].contains(END_MARKER) {
        return Err("the markers must appear once each, begin before end".into());
    }
    Ok(format!("{}{BEGIN_MARKER}\n{table}{}", &writeup[..begin], &writeup[end..]))
}

fn dir_name(dir: &Path) -> String {
    dir.file_name().map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// Renders `dir`'s claims into its write-up (between the markers); returns the write-up's path
/// and the table.
pub fn render(dir: &Path) -> Result<(PathBuf, Vec<Judged>), Vec<Problem>> {
    let judged = judge(dir, load(dir)?)?;
    let path = writeup_path(dir);
    let problem = |message: String| vec![Problem { file: path.clone(), claim: None, message }];
    let text = std::fs::read_to_string(&path).map_err(|e| problem(e.to_string()))?;
    let new = splice(&text, &render_table(&dir_name(dir), &judged)).map_err(problem)?;
    if new != text {
        zonekit_base::atomic::write(&path, new).map_err(|e| problem(e.to_string()))?;
    }
    Ok((path, judged))
}

/// Everything wrong with `dir`'s claims and write-up (empty when nothing is).
pub fn check(dir: &Path) -> Vec<Problem> {
    let claims = match load(dir) {
        Ok(c) => c,
        Err(p) => return p,
    };
    let mut problems = Vec::new();
    let path = writeup_path(dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => return vec![Problem { file: path, claim: None, message: e.to_string() }],
    };
    let known = numbers::FileNumbers::read(dir);
    for c in &claims {
        for n in numbers::unmatched(&c.note, &known) {
            problems.push(Problem {
                file: dir.join(CLAIMS_FILE),
                claim: Some(c.id.clone()),
                message: format!("{n} in its note appears in no result file under {}", dir.display()),
            });
        }
    }
    match judge(dir, claims) {
        Err(p) => problems.extend(p),
        Ok(judged) => match splice(&text, &render_table(&dir_name(dir), &judged)) {
            Err(m) => problems.push(Problem { file: path.clone(), claim: None, message: m }),
            Ok(rendered) if rendered != text => {
                let stale = first_difference(&text, &rendered, &judged);
                problems.push(Problem { file: path.clone(), claim: stale, message: "the acceptance table differs from what `zonekit claims render` writes".into() });
            }
            Ok(_) => {}
        },
    }
    for (line, n) in numbers::unmatched_in_tables(&text, &known) {
        problems.push(Problem { file: path.clone(), claim: None, message: format!("line {line}: {n} appears in no result file under {}", dir.display()) });
    }
    problems
}

/// The claim on the first line where the write-up and the rendering differ, if a claim's row.
fn first_difference(old: &str, new: &str, judged: &[Judged]) -> Option<String> {
    let (a, b) = old.lines().zip(new.lines()).find(|(a, b)| a != b)?;
    let id_of = |line: &str| expr::table_cells(line).first().cloned();
    let ids: Vec<&str> = judged.iter().map(|j| j.claim.id.as_str()).collect();
    [b, a].into_iter().filter(|l| l.starts_with('|')).filter_map(id_of).find(|id| ids.contains(&id.as_str()))
}

/// `root` itself if it has a claims file, else each directory directly under it that has one,
/// in name order.
pub fn claim_dirs(root: &Path) -> Vec<PathBuf> {
    if root.join(CLAIMS_FILE).is_file() {
        return vec![root.to_path_buf()];
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| p.join(CLAIMS_FILE).is_file()).collect();
    dirs.sort();
    dirs
}

#[cfg(test)]
mod tests;
