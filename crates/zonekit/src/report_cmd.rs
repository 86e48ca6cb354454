//! `zonekit report DIR`, and the `report.html` every experiment writes at its end: one
//! self-contained page of a results directory (settings, tables, inline charts); and
//! `zonekit report figures`, a seed's figures redrawn from its committed results.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};

use crate::out_dir::{recorded_command, write_page};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ReportArgs {
    #[command(subcommand)]
    command: Option<ReportCommand>,
    /// A results directory (of `zonekit demo`, `replay`, `sweep`, `experiment`, `analyze`, ...).
    #[arg(required = true)]
    dir: Option<PathBuf>,
    /// The page's title (default: the command that wrote the results, or the directory).
    #[arg(long)]
    title: Option<String>,
}

#[derive(Subcommand)]
pub enum ReportCommand {
    /// Redraw a seed's figures from the CSV files of its results directory (nothing is rerun):
    /// DIR/figures/fig-N.svg named after the seed's figures, figures.tsv (their order) and
    /// README.md (captions, the seed's numbers beside ours, what was not drawn and why); then
    /// DIR/report.html, ordered by the seed's figures, if the directory has one.
    Figures(FiguresArgs),
}

#[derive(Args)]
pub struct FiguresArgs {
    /// The seed whose figures to draw (0, 2, 3 or 4).
    #[arg(long)]
    seed: u32,
    /// Its results directory, e.g. docs/results/seed-003.
    #[arg(long)]
    results: PathBuf,
}

pub fn run(a: ReportArgs) -> Result<ExitCode> {
    match (a.command, a.dir) {
        (Some(ReportCommand::Figures(f)), _) => figures(f),
        (None, Some(dir)) => page(dir, a.title),
        (None, None) => usage!("zonekit report: give a results directory, or `figures --seed N --results DIR`"),
    }
}

fn figures(a: FiguresArgs) -> Result<ExitCode> {
    if !a.results.is_dir() {
        usage!("--results {}: no such results directory", a.results.display());
    }
    let drawn = zonekit_lab::figures::draw(a.seed, &a.results).map_err(crate::error::lab)?;
    let written = zonekit_lab::figures::write(&drawn, &a.results).map_err(crate::error::lab)?;
    for n in &drawn.not_drawn {
        say!("not drawn: {}: {}", n.seed_figure, n.why);
    }
    println!(
        "wrote {} figures of seed {:03} ({} files with the index and README) in {}",
        drawn.figures.len(),
        drawn.seed,
        written.len(),
        a.results.join(zonekit_lab::figures::FIGURES_DIR).display()
    );
    // The write-up beside the results directory (docs/results/seed-003.md for
    // docs/results/seed-003) gets the figures between its markers, if it has them.
    let write_up = a.results.with_extension("md");
    if write_up.exists() {
        let folder = a.results.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let section = zonekit_lab::figures::write_up_section(&drawn, &format!("{folder}/{}", zonekit_lab::figures::FIGURES_DIR));
        if zonekit_lab::figures::update_write_up(&write_up, &section).map_err(crate::error::lab)? {
            println!("wrote the figures section of {}", write_up.display());
        } else {
            say!(
                "{} has no `{}` and `{}` lines: add them where its figures belong",
                write_up.display(),
                zonekit_report::html::FIGURES_BEGIN_MARKER,
                zonekit_report::html::FIGURES_END_MARKER
            );
        }
    }
    // A page already there is redrawn, so that it shows the figures just written.
    if a.results.join(zonekit_report::html::REPORT_FILE).exists() {
        let title = recorded_command(&a.results).unwrap_or_else(|| format!("zonekit results: {}", a.results.display()));
        let path = write_page(&a.results, &title)?;
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn page(dir: PathBuf, title: Option<String>) -> Result<ExitCode> {
    let a = PageArgs { dir, title };
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

struct PageArgs {
    dir: PathBuf,
    title: Option<String>,
}
