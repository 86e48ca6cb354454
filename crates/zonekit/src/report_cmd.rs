//! `zonekit report DIR`, and the `report.html` every experiment writes at its end: one
//! self-contained page of a results directory (settings, tables, inline charts).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::out_dir::{recorded_command, write_page};

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
