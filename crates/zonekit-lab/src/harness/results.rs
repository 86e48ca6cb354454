//! Resumable results files (issue 31: no silent loss, no wrong result): the `results.csv` of a
//! sweep, of kv-bench and of the tree experiment, which a rerun reads back to reuse finished
//! rows.
//!
//! Each row ends with a check, a fingerprint of its other cells ([`sealed`]). [`resume`] reads
//! such a file back so that a damaged row (a cell changed, a row cut or with extra cells, bytes
//! that are not UTF-8) is never reused and never lost: a run moves it, byte for byte, to
//! `results.previous.csv` beside the file (and recomputes it if it asks for it); a report
//! refuses the file, naming the row's line. A file with another header (another version's, or
//! one from before the check column) is refused whole, naming line 1, by both: move it away to
//! start over. Rows a run does not reuse for another reason (other settings) are moved aside
//! the same way ([`set_aside`]), so nothing a run computed is dropped.

use std::io::Write;
use std::path::{Path, PathBuf};

use zonekit_report::csv;

use crate::harness::error::{LabError, Result};

/// FNV-1a, 64 bits, as 16 hex digits: stable across builds and platforms.
pub(crate) fn fingerprint(text: &str) -> String {
    zonekit_base::fnv1a_hex(text)
}

/// A row with its check appended (see the module doc).
pub(crate) fn sealed(mut cells: Vec<String>) -> Vec<String> {
    let check = fingerprint(&cells.join(","));
    cells.push(check);
    cells
}

/// Whether a row's last cell is the check of the others.
pub(crate) fn seal_holds(row: &[String]) -> bool {
    row.split_last().is_some_and(|(check, cells)| *check == fingerprint(&cells.join(",")))
}

/// Replaces `path` by `text` whole: a reader (or an interruption) sees the old file or the
/// new one, never part of either.
pub(crate) fn write_atomically(path: &Path, text: &str) -> Result<()> {
    zonekit_base::atomic::write(path, text).map_err(LabError::io(path))
}

/// One kind of resumable results file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ResultsFile<'a> {
    /// Its columns, the check last.
    pub header: &'a [&'a str],
    /// What writes it, as a refusal names it: `kv-bench`, `sweep`, `tree experiment`.
    pub writer: &'a str,
}

/// How [`resume`] treats a damaged row and a missing file.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Reading<'a> {
    /// A run: damaged rows are moved aside; a missing file is started with its header.
    Run,
    /// A report: a damaged row or a missing file is refused. `by` names the reader (`--report-only`,
    /// `sweep merge`), `rerun` what recomputes a damaged row (`the sweep`).
    Report { by: &'a str, rerun: &'a str },
}

/// The rows [`resume`] read back.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Resumed {
    /// The rows whose check holds, in file order.
    pub rows: Vec<Vec<String>>,
    /// Damaged rows moved to `results.previous.csv` (none when reporting).
    pub damaged: usize,
}

/// The file rows not reused are moved to, beside `results`.
pub(crate) fn previous_path(results: &Path) -> PathBuf {
    results.with_file_name(zonekit_report::html::SET_ASIDE_FILE)
}

/// Appends `lines` (rows as they were, without their newlines) to `results.previous.csv`
/// beside `results`, starting it with `header` if it does not exist yet.
pub(crate) fn set_aside(results: &Path, header: &[&str], lines: &[&[u8]]) -> Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let previous = previous_path(results);
    let mut text = if previous.exists() { Vec::new() } else { csv(header, &[]).into_bytes() };
    for line in lines {
        text.extend_from_slice(line);
        text.push(b'\n');
    }
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&previous).map_err(LabError::io(&previous))?;
    file.write_all(&text).map_err(LabError::io(&previous))
}

/// Reads a results file back (see the module doc). A run rewrites it without its damaged rows,
/// after moving them aside (also when its last row lacks its newline, so that a row appended
/// next starts a line of its own); a report changes nothing.
pub(crate) fn resume(path: &Path, file: &ResultsFile, reading: Reading) -> Result<Resumed> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Reading::Report { by, .. } = reading {
                return Err(LabError::Usage(format!("{by}: no {} to report", path.display())));
            }
            zonekit_base::atomic::write(path, csv(file.header, &[])).map_err(LabError::io(path))?;
            return Ok(Resumed::default());
        }
        // Never started over: a file that cannot be read is not an empty one.
        Err(error) => return Err(LabError::Io { path: path.into(), error }),
    };
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let header = file.header.join(",");
    if lines.first().copied() != Some(header.as_bytes()) {
        return Err(LabError::Results { path: path.into(), line: 1, reason: format!("not a {} results file of this version (move it away to start over)", file.writer) });
    }
    let mut intact: Vec<&str> = Vec::new();
    // (line number, what is wrong with the row, its bytes)
    let mut damaged: Vec<(usize, String, &[u8])> = Vec::new();
    for (i, bytes) in lines.iter().enumerate().skip(1) {
        let Ok(line) = std::str::from_utf8(bytes) else {
            damaged.push((i + 1, "is not UTF-8".into(), bytes));
            continue;
        };
        let cells: Vec<String> = line.split(',').map(str::to_string).collect();
        if cells.len() != file.header.len() {
            damaged.push((i + 1, format!("has {} fields, expected {}", cells.len(), file.header.len()), bytes));
        } else if !seal_holds(&cells) {
            damaged.push((i + 1, "does not match its check".into(), bytes));
        } else {
            intact.push(line);
        }
    }
    match reading {
        Reading::Report { rerun, .. } => {
            if let Some((line, what, _)) = damaged.first() {
                return Err(LabError::Results {
                    path: path.into(),
                    line: *line,
                    reason: format!("the row {what}: the file is damaged (rerun {rerun}: it moves the row aside and recomputes it)"),
                });
            }
        }
        Reading::Run if !damaged.is_empty() || !bytes.ends_with(b"\n") => {
            // Aside first, then the rewrite: an interruption between them leaves a row in both
            // files, never in neither.
            set_aside(path, file.header, &damaged.iter().map(|(_, _, bytes)| *bytes).collect::<Vec<_>>())?;
            let text: String = std::iter::once(header.as_str()).chain(intact.iter().copied()).map(|l| l.to_string() + "\n").collect();
            write_atomically(path, &text)?;
        }
        Reading::Run => {}
    }
    Ok(Resumed { rows: intact.iter().map(|l| l.split(',').map(str::to_string).collect()).collect(), damaged: damaged.len() })
}
/// Creates `out` and proves it writable before any run starts.
pub(crate) fn prepare_out(out: &Path) -> Result<()> {
    let unwritable = |e: std::io::Error| LabError::Usage(format!("--out {}: cannot write there: {e}", out.display()));
    std::fs::create_dir_all(out).map_err(unwritable)?;
    let probe = out.join(format!(".zonekit-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(unwritable)?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}
