//! An output directory is one run's own: [`claim_out`] before anything is written (another
//! command's directory refused, the same command under other settings starting clean or
//! resuming row by row), [`finish`] after (the settings, `report.html`, and the record of the
//! files the run wrote, which a later clean start removes and nothing else).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use zonekit_report::html::{report_dir, write_settings, REPORT_FILE, SETTINGS_FILE, WARNINGS_FILE};
use zonekit_report::shell_word;

/// Which run an output directory belongs to: `IDENTITY<TAB>COMMAND` ([`claim_out`]).
const RUN_FILE: &str = ".zonekit-run";

/// The command line this process was started with, each argument as a shell needs it typed.
pub fn this_command() -> String {
    // args_os: an argument that is not UTF-8 (a file name) must not stop the report.
    std::iter::once("zonekit".to_string()).chain(std::env::args_os().skip(1).map(|a| shell_word(&a.to_string_lossy()))).collect::<Vec<_>>().join(" ")
}

/// Makes `out` this run's own before anything is written to it, so one directory never mixes
/// the results of two runs. `identity` names what the directory holds (`"replay"`, `"cache
/// experiment --interfaces"`, `"experiment table-4.3"`): a directory another identity wrote
/// is refused (exit 2), as is one holding results no claimed run wrote. The same identity
/// with another command line resumes in place when the run is `resumable` (its rows carry
/// their settings and are set aside when they differ); otherwise the directory's files are
/// removed first (the directories in it are left: each run's directory has its own claim).
pub fn claim_out(out: &Path, identity: &str, resumable: bool) -> Result<()> {
    let command = this_command();
    let run = out.join(RUN_FILE);
    let other = |what: &str| -> anyhow::Error {
        crate::error::Usage(format!("--out {}: it holds {what}; give `zonekit {identity}` a directory of its own (another --out), or remove that one", out.display())).into()
    };
    let unwritable = |e: std::io::Error| -> anyhow::Error { crate::error::Usage(format!("--out {}: cannot write there ({e})", out.display())).into() };
    // The directories the claim creates: `out` and its missing parents, the outermost last.
    let created: Vec<PathBuf> = out.ancestors().filter(|a| !a.as_os_str().is_empty()).take_while(|a| !a.exists()).map(Path::to_path_buf).collect();
    let mut fresh = false;
    // The files earlier runs wrote, while they stay.
    let mut kept_record = String::new();
    let before = std::fs::read_to_string(&run);
    match &before {
        Ok(text) => {
            let first = text.lines().next().unwrap_or_default();
            let (before_identity, before_command) = first.split_once('\t').unwrap_or((first, ""));
            if before_identity != identity {
                return Err(other(&format!("the results of `{before_command}`")));
            }
            if before_command != command && !resumable {
                println!("{}: starting clean (it held the results of `{before_command}`)", out.display());
                // The files that run wrote, as its finish recorded them; a claim from before
                // the record: every file but the hand-written ones. A directory inside may be
                // another run's, with a claim of its own.
                let written: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("wrote\t")).collect();
                for entry in std::fs::read_dir(out).with_context(|| format!("reading {}", out.display()))? {
                    let path = entry?.path();
                    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                    let theirs = !HAND_WRITTEN.contains(&name) && (!text.contains("\nwrote\t") || written.contains(&name));
                    if !path.is_dir() && theirs {
                        std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
                    }
                }
            } else {
                kept_record = text.lines().filter(|l| l.starts_with("wrote\t")).map(|l| format!("{l}\n")).collect();
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A directory of results from before runs claimed theirs, or written by hand.
            let unclaimed = [SETTINGS_FILE, REPORT_FILE, "results.csv", "summary.md"].iter().find(|f| out.join(f).exists());
            if let Some(f) = unclaimed {
                return Err(other(&format!("results no claimed run wrote ({f})")));
            }
            fresh = true;
        }
        Err(e) => return Err(unwritable(std::io::Error::new(e.kind(), e.to_string()))),
    }
    std::fs::create_dir_all(out).map_err(unwritable)?;
    let claim = format!("{identity}\t{command}\n{kept_record}");
    // The same command again after an interrupted attempt (its claim has no finished line, so
    // it is exactly this claim): the claim stays as the first attempt made it, so that every
    // file written since, by any attempt, is recorded as this run's at the finish. After a
    // finished run the claim is made anew: a file put there by hand since is not this run's.
    if before.as_deref().ok() != Some(claim.as_str()) {
        zonekit_base::atomic::write(&run, claim).map_err(unwritable)?;
    }
    *CLAIMED_AT.lock().unwrap() = std::fs::metadata(&run).and_then(|m| m.modified()).ok();
    if fresh {
        *FRESH_CLAIM.lock().unwrap() = Some((out.to_path_buf(), created));
    }
    Ok(())
}

/// A claim this process made on a directory no run had claimed, and the directories the claim
/// created: a request refused after it ([`release_fresh_claim`]) leaves no trace.
static FRESH_CLAIM: std::sync::Mutex<Option<(PathBuf, Vec<PathBuf>)>> = std::sync::Mutex::new(None);

/// Takes back a claim made on a directory no run had claimed (the claim file, and the
/// directory when the claim created it and nothing else was written there): for a run refused
/// as a bad request, so the directory is as it was before.
pub fn release_fresh_claim() {
    if let Some((out, created)) = FRESH_CLAIM.lock().unwrap().take() {
        let _ = std::fs::remove_file(out.join(RUN_FILE));
        // Only those left empty: a refused run may still have written something worth keeping.
        for dir in created {
            if std::fs::remove_dir(&dir).is_err() {
                break;
            }
        }
    }
}

/// Before [`finish`], for an experiment that reproduces a seed's evaluation: the seed's figures
/// redrawn from the results just written (what `zonekit report figures` does on committed
/// ones), so that the page shows them in the seed's order. A run that lacks cells a figure
/// needs (`--quick`, a smaller grid) says so and goes on: its own charts are still written.
pub fn seed_figures(seed: u32, out: &Path) {
    match zonekit_lab::figures::draw(seed, out).and_then(|figures| zonekit_lab::figures::write(&figures, out).map(|_| figures)) {
        Ok(figures) => println!("seed {seed:03}'s figures: {} drawn in {}", figures.figures.len(), out.join(zonekit_lab::figures::FIGURES_DIR).display()),
        Err(e) => say!("seed {seed:03}'s figures not drawn: {e} (they need every cell of the seed's setting)"),
    }
}

/// At the end of an experiment: records how it was run beside its results and writes the page.
pub fn finish(out: &Path) -> Result<()> {
    let command = this_command();
    let settings = [("command".to_string(), command.clone()), ("zonekit version".to_string(), env!("CARGO_PKG_VERSION").to_string())];
    write_settings(out, &settings).with_context(|| format!("writing {}", out.join(SETTINGS_FILE).display()))?;
    let path = write_page(out, &command)?;
    record_written(out).with_context(|| format!("recording the files written in {}", out.join(RUN_FILE).display()))?;
    println!("report: {}", path.display());
    Ok(())
}

/// Files no run writes, which starting clean keeps: a seed's claims beside its results, and
/// `compare.csv`, which `scripts/seed003-timing-compare` writes into seed 003's fitted rerun
/// (between two runs of the experiment, so its time alone would make it the later run's).
const HAND_WRITTEN: [&str; 2] = ["claims.csv", "compare.csv"];

/// When this process claimed its output directory (the claim file's time, on its file system's
/// clock).
static CLAIMED_AT: std::sync::Mutex<Option<std::time::SystemTime>> = std::sync::Mutex::new(None);

/// Adds to the claim the files of `out` this run wrote (changed since the claim), so that a
/// later run under other settings starting clean removes those and nothing else.
fn record_written(out: &Path) -> std::io::Result<()> {
    let Some(claimed) = *CLAIMED_AT.lock().unwrap() else { return Ok(()) };
    let run = out.join(RUN_FILE);
    let mut text = std::fs::read_to_string(&run)?;
    let mut names: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(out)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let meta = entry.metadata()?;
        // A hand-written file is never a run's, whatever its time says: in a fresh clone every
        // file has the checkout's time, as late as a resumed claim's.
        let hand_written = HAND_WRITTEN.contains(&name.as_str());
        // Nor is a killed attempt's half-written temporary (`.NAME.partial-PID.N`): the next
        // atomic write of its target removes it (this record's own write, for a temporary of
        // the claim), so the record would name a file that is gone, and an interrupted run's
        // record would differ from an uninterrupted one's.
        let partial = zonekit_base::atomic::is_partial(&name);
        if meta.is_file() && name != RUN_FILE && !hand_written && !partial && meta.modified()? >= claimed && !text.lines().any(|l| l == format!("wrote\t{name}")) {
            names.push(name);
        }
    }
    names.sort();
    for name in names {
        text.push_str(&format!("wrote\t{name}\n"));
    }
    text.push_str(FINISHED_LINE);
    zonekit_base::atomic::write(&run, text)
}

/// The claim's last line once its run finished: a claim without it is an attempt that was
/// interrupted, which a rerun of the same command continues ([`claim_out`]).
const FINISHED_LINE: &str = "finished\n";

/// Writes a run's degenerate-run warnings beside its results (its page shows them first), or
/// removes an earlier run's file when this run has none.
pub(crate) fn write_warnings(dir: &Path, warnings: &[String]) -> Result<()> {
    let path = dir.join(WARNINGS_FILE);
    if warnings.is_empty() {
        return match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(anyhow::Error::new(e).context(format!("removing {}", path.display()))),
            _ => Ok(()),
        };
    }
    let text: String = warnings.iter().map(|w| format!("{}\n", w.replace('\n', " "))).collect();
    zonekit_base::atomic::write(&path, text).with_context(|| format!("writing {}", path.display()))
}

pub(crate) fn write_page(dir: &Path, title: &str) -> Result<PathBuf> {
    let page = report_dir(dir, title).map_err(anyhow::Error::msg)?;
    let path = dir.join(REPORT_FILE);
    zonekit_base::atomic::write(&path, page).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// The command an earlier [`finish`] recorded in `dir`.
pub(crate) fn recorded_command(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(SETTINGS_FILE)).ok()?;
    text.lines().find_map(|l| l.strip_prefix("command\t")).map(str::to_string)
}
