//! `zonekit claims render | check`: a seed's acceptance table rendered from its claims file,
//! and the check that the write-up agrees with it and with the result files
//! (`zonekit_report::claims` has the format and the rules).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use zonekit_report::claims;

#[derive(Subcommand)]
pub enum ClaimsCommand {
    /// Render DIR/claims.csv (verdicts computed by rule, and their counts) into DIR.md, between
    /// its `<!-- claims:begin -->` and `<!-- claims:end -->` lines.
    Render {
        /// A seed's results directory (docs/results/seed-004), or one holding several.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
    },
    /// Exit 1, naming the claim and the file, when a write-up's acceptance table is not what
    /// `render` writes, a claim's source file, row or column is missing, or a number in the
    /// write-up's tables (or a claim's note) appears in no result file of its seed.
    Check {
        /// A seed's results directory, or one holding several (docs/results checks every
        /// seed with a claims file).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
    },
}

pub fn run(cmd: ClaimsCommand) -> Result<ExitCode> {
    let (ClaimsCommand::Render { dirs } | ClaimsCommand::Check { dirs }) = &cmd;
    let mut seeds = Vec::new();
    for d in dirs {
        let found = claims::claim_dirs(d);
        if found.is_empty() {
            usage!("{}: no {} in it or in a directory directly under it", d.display(), claims::CLAIMS_FILE);
        }
        seeds.extend(found);
    }
    let mut failed = false;
    for dir in &seeds {
        let problems = match cmd {
            ClaimsCommand::Render { .. } => match claims::render(dir) {
                Ok((path, judged)) => {
                    println!("{}: {} claims rendered", path.display(), judged.len());
                    Vec::new()
                }
                Err(p) => p,
            },
            ClaimsCommand::Check { .. } => claims::check(dir),
        };
        for p in &problems {
            eprintln!("zonekit claims: {p}");
        }
        if problems.is_empty() && matches!(cmd, ClaimsCommand::Check { .. }) {
            println!("{}: claims, acceptance table and numbers agree with the result files", dir.display());
        }
        failed |= !problems.is_empty();
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
