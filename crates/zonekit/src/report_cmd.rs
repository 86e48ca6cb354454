//! `zonekit report DIR`, and the `report.html` every experiment writes at its end: one
//! self-contained page of a results directory (settings, tables, inline charts).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use zonekit_report::html::{report_dir, write_settings, REPORT_FILE, SETTINGS_FILE};

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

/// At the end of an experiment: records how it was run beside its results and writes the page.
pub fn finish(out: &Path) -> Result<()> {
    // args_os: an argument that is not UTF-8 (a file name) must not stop the report.
    let command = std::iter::once("zonekit".to_string()).chain(std::env::args_os().skip(1).map(|a| shell_word(&a.to_string_lossy()))).collect::<Vec<_>>().join(" ");
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

/// `arg` as a shell would need it typed (quoted when it holds anything but plain characters).
fn shell_word(arg: &str) -> String {
    if !arg.is_empty() && arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+%@".contains(c)) {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}
