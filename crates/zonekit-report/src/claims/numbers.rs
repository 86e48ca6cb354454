//! Which numbers of a write-up come from no result file.

use std::path::Path;

use super::{BEGIN_MARKER, CLAIMS_FILE, END_MARKER};

/// A number as written: its digits, its value (sign dropped) and its decimals.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub text: String,
    pub value: f64,
    pub decimals: u32,
    /// 10^3, 10^6 or 10^9 for a number followed by ` K`, ` M` or ` G` (not `MiB`), else 1.
    pub scale: f64,
}

/// How a text's numbers are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// A write-up: a number glued to a letter or `_` on either side (`fig5`, `W4`, `2MB`) is a
    /// name, and one that follows a reference word (`claim 17`, `Fig. 4.1`, `Table 2`, `§4`,
    /// `l. 498`, `node 4`, `seed 2`, and the rest of a list or range of them: `Figs. 5.1-5.3`)
    /// points somewhere: both are left out.
    Prose,
    /// A result file: every number, `1,497` as one thousand four hundred and ninety-seven.
    File,
    /// A CSV file: every number, a comma always between cells.
    Csv,
}

/// Words after which a number in prose is a reference, not a measured value (lower case, with
/// the space or mark that ends them).
const REFERENCE_WORDS: [&str; 22] = [
    "claim ", "claims ", "fig. ", "figs. ", "figure ", "figures ", "table ", "tables ", "§", "§§", "l. ", "ll. ", "line ", "lines ", "issue ", "issues ", "seed ", "seeds ",
    "node ", "nodes ", "eq. ", "chapter ",
];

/// The numbers in `text`, read as `reading` says.
pub fn tokens(text: &str, reading: Reading) -> Vec<Token> {
    let names_skipped = reading == Reading::Prose;
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    // Where the last reference number ended, to carry a list or range of them (`Figs. 5.1-5.3`).
    let mut reference_end: Option<usize> = None;
    let is_name_char = |ch: char| ch.is_alphabetic() || ch == '_';
    while i < c.len() {
        if !c[i].is_ascii_digit() || (i > 0 && (c[i - 1].is_ascii_digit() || c[i - 1] == '.')) {
            i += 1;
            continue;
        }
        let start = i;
        let mut digits = String::new();
        let mut decimals = None;
        while i < c.len() {
            if c[i].is_ascii_digit() {
                digits.push(c[i]);
                decimals = decimals.map(|d| d + 1);
            } else if c[i] == ','
                && reading != Reading::Csv
                && decimals.is_none()
                && i + 3 < c.len() + 1
                && c.get(i + 1..i + 4).is_some_and(|s| s.iter().all(char::is_ascii_digit))
                && !c.get(i + 4).is_some_and(char::is_ascii_digit)
            {
                // a thousands separator
            } else if c[i] == '.' && decimals.is_none() && c.get(i + 1).is_some_and(char::is_ascii_digit) {
                digits.push('.');
                decimals = Some(0);
            } else {
                break;
            }
            i += 1;
        }
        let glued = (start > 0 && is_name_char(c[start - 1])) || c.get(i).is_some_and(|ch| is_name_char(*ch));
        if names_skipped && glued {
            continue;
        }
        if names_skipped {
            let before: String = c[start.saturating_sub(10)..start].iter().collect::<String>().to_lowercase();
            let after_reference = REFERENCE_WORDS.iter().any(|w| before.ends_with(w));
            let continues_list = reference_end.is_some_and(|end| {
                let gap: String = c[end..start].iter().collect();
                ["-", "–", ", ", " and ", "/", " – ", " to "].contains(&gap.as_str())
            });
            if after_reference || continues_list {
                reference_end = Some(i);
                continue;
            }
        }
        let scale = match (c.get(i), c.get(i + 1), c.get(i + 2)) {
            (Some(' '), Some(&m), next) if next.is_none_or(|ch| !ch.is_alphanumeric()) => match m {
                'K' => 1e3,
                'M' => 1e6,
                'G' => 1e9,
                _ => 1.0,
            },
            _ => 1.0,
        };
        if let Ok(value) = digits.parse::<f64>() {
            out.push(Token { text: c[start..i].iter().collect(), value, decimals: decimals.unwrap_or(0), scale });
        }
    }
    out
}

/// A file of more lines than this is a series (per GC, per window): its numbers are charted,
/// not quoted, and so many of them would match almost any number a write-up holds.
pub const SERIES_LINES_MIN: usize = 1000;

/// Every number in the result files under a directory (but the claims file, SVG charts and
/// series).
pub struct FileNumbers {
    sorted: Vec<f64>,
}

impl FileNumbers {
    pub fn read(dir: &Path) -> Self {
        let mut sorted = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = entry.path();
                if p.is_dir() {
                    // The redrawn figures' folder quotes the seed's numbers beside ours: not a source.
                    if !p.ends_with(crate::html::FIGURES_DIR) {
                        stack.push(p);
                    }
                } else if p.file_name().is_some_and(|n| n != CLAIMS_FILE) && p.extension().is_none_or(|x| x != "svg") {
                    if let Ok(bytes) = std::fs::read(&p) {
                        let text = String::from_utf8_lossy(&bytes);
                        if text.lines().count() <= SERIES_LINES_MIN {
                            let reading = if p.extension().is_some_and(|x| x == "csv") { Reading::Csv } else { Reading::File };
                            sorted.extend(tokens(&text, reading).into_iter().map(|t| t.value * t.scale));
                        }
                    }
                }
            }
        }
        Self::from_values(sorted)
    }

    pub fn from_values(mut sorted: Vec<f64>) -> Self {
        sorted.sort_by(f64::total_cmp);
        sorted.dedup();
        FileNumbers { sorted }
    }

    fn any_in(&self, low: f64, high: f64) -> bool {
        let i = self.sorted.partition_point(|v| *v < low);
        self.sorted.get(i).is_some_and(|v| *v <= high)
    }

    /// Whether a file holds `t`: a number that rounds to it at its decimals (an integer
    /// exactly), itself or as a ratio shown in percent; a number written with a multiplier
    /// (`4 M keys`) also when a file holds it in those units (a `million_keys` column's 4).
    pub fn holds(&self, t: &Token) -> bool {
        let tolerance = if t.decimals == 0 { 1e-9 } else { 0.5 * 10f64.powi(-(t.decimals as i32)) + 1e-9 };
        let held = |scale: f64| {
            let (low, high) = ((t.value - tolerance) * scale, (t.value + tolerance) * scale);
            self.any_in(low, high) || self.any_in(low / 100.0, high / 100.0)
        };
        held(t.scale) || (t.scale != 1.0 && held(1.0))
    }
}

/// The numbers of `text` no result file holds.
pub fn unmatched(text: &str, known: &FileNumbers) -> Vec<String> {
    tokens(text, Reading::Prose).into_iter().filter(|t| !known.holds(t)).map(|t| t.text).collect()
}

/// The numbers in the write-up's tables (outside code blocks, the rendered block and the figures
/// section) no result file holds, with their line numbers.
pub fn unmatched_in_tables(writeup: &str, known: &FileNumbers) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let (mut fenced, mut rendered) = (false, false);
    for (i, line) in writeup.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("```") {
            fenced = !fenced;
        } else if t.starts_with(BEGIN_MARKER) || t.starts_with(crate::html::FIGURES_BEGIN_MARKER) {
            rendered = true;
        } else if t.starts_with(END_MARKER) || t.starts_with(crate::html::FIGURES_END_MARKER) {
            rendered = false;
        } else if !fenced && !rendered && t.starts_with('|') {
            out.extend(unmatched(line, known).into_iter().map(|n| (i + 1, n)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<String> {
        tokens(s, Reading::Prose).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn references_are_not_values_and_csv_commas_split_cells() {
        assert_eq!(texts("claim 17 and Fig. 16 give 3.2; Figs. 5.1-5.3 and §4.2.4, l. 498, node 4 at 7.5"), ["3.2", "7.5"]);
        assert_eq!(texts("Tables 2.2 and 3.2 hold 41.3"), ["41.3"]);
        let csv: Vec<f64> = tokens("a,1,497,2\n", Reading::Csv).into_iter().map(|t| t.value).collect();
        assert_eq!(csv, [1.0, 497.0, 2.0]);
        assert_eq!(tokens("1,497 blocks", Reading::File)[0].value, 1497.0);
        let millions = FileNumbers::from_values(vec![4.0]);
        assert!(millions.holds(&tokens("4 M keys", Reading::Prose)[0]), "a key count in millions, held in a millions column");
    }

    #[test]
    fn numbers_are_read_with_separators_and_names_are_skipped() {
        assert_eq!(texts("| 41.35 % | 2,825 | −0.33 | fig5.1 W4 2MB L1 | 1:8 | 1,2 |"), ["41.35", "2,825", "0.33", "1", "8", "1", "2"]);
        assert_eq!(tokens("x 3.80 y", Reading::Prose)[0].decimals, 2);
        assert_eq!(tokens("1,602,300.5", Reading::Prose)[0].value, 1602300.5);
    }

    #[test]
    fn a_number_is_held_when_a_file_rounds_to_it_or_its_percent_does() {
        let known = FileNumbers::from_values(vec![0.4135, 3.795, 1756.0, 97.0]);
        let holds = |s: &str| known.holds(&tokens(s, Reading::Prose)[0]);
        assert!(holds("41.35"));
        assert!(holds("3.80"));
        assert!(holds("3.8"));
        assert!(holds("1,756"));
        assert!(holds("97"));
        assert!(!holds("41.53"));
        assert!(!holds("3.78"));
        assert!(!holds("1,757"));
        assert!(!holds("96"), "an integer must match exactly");
        let millions = FileNumbers::from_values(vec![10091357.0]);
        assert!(millions.holds(&tokens("10.09 M blocks", Reading::Prose)[0]));
        assert!(!millions.holds(&tokens("10.08 M blocks", Reading::Prose)[0]));
        assert!(!millions.holds(&tokens("10.09 MiB", Reading::Prose)[0]), "MiB is a unit, not a multiplier");
    }

    #[test]
    fn a_series_file_lends_no_numbers() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("gc-waf.csv"), "gc,waf\n".to_string() + &(0..SERIES_LINES_MIN).map(|i| format!("{i},{}.{:03}\n", 2 + i % 6, i)).collect::<String>())
            .unwrap();
        std::fs::write(dir.path().join("results.csv"), "label,waf\nx,3.795\n").unwrap();
        std::fs::write(dir.path().join(CLAIMS_FILE), "id\n4.26\n").unwrap();
        let known = FileNumbers::read(dir.path());
        assert!(known.holds(&tokens("3.80", Reading::Prose)[0]));
        assert!(!known.holds(&tokens("4.26", Reading::Prose)[0]), "neither the series nor the claims file holds it");
    }

    #[test]
    fn only_tables_outside_code_and_the_rendered_block_are_checked() {
        let known = FileNumbers::from_values(vec![1.0, 2.0]);
        let doc = format!("text 9.99\n| a | 1 |\n| b | 7.77 |\n```\n| c | 8.88 |\n```\n{BEGIN_MARKER}\n| d | 6.66 |\n{END_MARKER}\n| e | 2 |\n");
        assert_eq!(unmatched_in_tables(&doc, &known), [(3, "7.77".to_string())]);
    }
}
