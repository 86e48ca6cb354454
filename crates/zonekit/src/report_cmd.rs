//! `zonekit report DIR`, and the `report.html` every experiment writes at its end: one
//! self-contained page of a results directory (settings, tables, inline charts).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use zonekit_report::html::{report_dir, write_settings, REPORT_FILE, SETTINGS_FILE};
use zonekit_report::shell_word;

#[derive(Args)]
pub struct ReportArgs {
    /// A results directory (of `zonekit demo`, `replay`, `sweep`, `experiment`, `analyze`, ...).
    dir: PathBuf,
    /// The page's title (default: the command that wrote the results, or the directory).
    #[arg(long)]
    title: Option<String>,
}

pub fn run(a: ReportArgs) -> Result<ExitCode> {
    let holds_results = std::fs::read_dir(&a.dir).is_ok_and(|entries| entries.flatten().any(|e| e.path().extension().is_some_and(|x| x == "csv" || x == "svg")));
    if !holds_results {
        usage!("{}: not a results directory (no CSV table or SVG chart in it)", a.dir.display());
    }
    let title = match a.title {
        Some(t) => t,
        None => recorded_command(&a.dir).unwrap_or_else(|| format!("zonekit results: {}", a.dir.display())),
    };
    let path = write_page(&a.dir, &title)?;
    println!("wrote {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// Which run an output directory belongs to: `IDENTITY<TAB>COMMAND` ([`claim_out`]).
const RUN_FILE: &str = ".zonekit-run";

/// The command line this process was started with, each argument as a shell needs it typed.
fn this_command() -> String {
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
        crate::Usage(format!("--out {}: it holds {what}; give `zonekit {identity}` a directory of its own (another --out), or remove that one", out.display())).into()
    };
    let unwritable = |e: std::io::Error| -> anyhow::Error { crate::Usage(format!("--out {}: cannot write there ({e})", out.display())).into() };
    // The directories the claim creates: `out` and its missing parents, the outermost last.
    let created: Vec<PathBuf> = out.ancestors().filter(|a| !a.as_os_str().is_empty()).take_while(|a| !a.exists()).map(Path::to_path_buf).collect();
    let mut fresh = false;
    match std::fs::read_to_string(&run) {
        Ok(text) => {
            let (before_identity, before_command) = text.trim_end().split_once('\t').unwrap_or((text.trim_end(), ""));
            if before_identity != identity {
                return Err(other(&format!("the results of `{before_command}`")));
            }
            if before_command != command && !resumable {
                println!("{}: starting clean (it held the results of `{before_command}`)", out.display());
                // Its files; a directory inside may be another run's, with a claim of its own.
                for entry in std::fs::read_dir(out).with_context(|| format!("reading {}", out.display()))? {
                    let path = entry?.path();
                    if !path.is_dir() {
                        std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
                    }
                }
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
        Err(e) => return Err(unwritable(e)),
    }
    std::fs::create_dir_all(out).map_err(unwritable)?;
    std::fs::write(&run, format!("{identity}\t{command}\n")).map_err(unwritable)?;
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

/// At the end of an experiment: records how it was run beside its results and writes the page.
pub fn finish(out: &Path) -> Result<()> {
    let command = this_command();
    let settings = [("command".to_string(), command.clone()), ("zonekit version".to_string(), env!("CARGO_PKG_VERSION").to_string())];
    write_settings(out, &settings).with_context(|| format!("writing {}", out.join(SETTINGS_FILE).display()))?;
    let path = write_page(out, &command)?;
    println!("report: {}", path.display());
    Ok(())
}

fn write_page(dir: &Path, title: &str) -> Result<PathBuf> {
    let page = report_dir(dir, title).map_err(anyhow::Error::msg)?;
    let path = dir.join(REPORT_FILE);
    std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// The command an earlier [`finish`] recorded in `dir`.
fn recorded_command(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(SETTINGS_FILE)).ok()?;
    text.lines().find_map(|l| l.strip_prefix("command\t")).map(str::to_string)
}
