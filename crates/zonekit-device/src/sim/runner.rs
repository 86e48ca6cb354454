//! Running many seeds of a simulation: the replay command on failure, soak mode, coverage.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use super::Coverage;

/// Which seeds a simulation test runs, from the environment:
///
/// - `ZONEKIT_SIM_SEED=n`: that seed alone (the replay of a failure);
/// - `ZONEKIT_SIM_SECONDS=s`: seeds from `ZONEKIT_SIM_FIRST` (default 0) on, for `s` seconds of
///   wall clock, with progress on stderr (`scripts/soak`);
/// - otherwise `ZONEKIT_SIM_SEEDS` seeds (default `default_count`) from `ZONEKIT_SIM_FIRST`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SeedPlan {
    One(u64),
    Range { first: u64, count: u64 },
    For { first: u64, seconds: u64 },
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(v.trim().parse().unwrap_or_else(|_| panic!("{name}={v} is not a number")))
}

impl SeedPlan {
    pub fn from_env(default_count: u64) -> SeedPlan {
        let first = env_u64("ZONEKIT_SIM_FIRST").unwrap_or(0);
        if let Some(seed) = env_u64("ZONEKIT_SIM_SEED") {
            SeedPlan::One(seed)
        } else if let Some(seconds) = env_u64("ZONEKIT_SIM_SECONDS") {
            SeedPlan::For { first, seconds }
        } else {
            SeedPlan::Range { first, count: env_u64("ZONEKIT_SIM_SEEDS").unwrap_or(default_count) }
        }
    }
}

fn panic_message(e: &(dyn std::any::Any + Send)) -> String {
    e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_else(|| "(no message)".into())
}

/// Runs `run(seed, coverage)` for the seeds of [`SeedPlan::from_env`]. A failing seed panics
/// with the command that replays it: `ZONEKIT_SIM_SEED=<seed> <replay>`. Prints the coverage
/// at the end (seen with `--nocapture`) and returns it.
pub fn run_seeds(format: &str, replay: &str, default_count: u64, mut run: impl FnMut(u64, &mut Coverage)) -> Coverage {
    let plan = SeedPlan::from_env(default_count);
    let mut coverage = Coverage::default();
    let started = Instant::now();
    let mut last_progress = Instant::now();
    let mut seed = match plan {
        SeedPlan::One(s) => s,
        SeedPlan::Range { first, .. } | SeedPlan::For { first, .. } => first,
    };
    loop {
        let done = match plan {
            SeedPlan::One(s) => seed > s,
            SeedPlan::Range { first, count } => seed >= first.saturating_add(count),
            SeedPlan::For { seconds, .. } => started.elapsed() >= Duration::from_secs(seconds),
        };
        if done {
            break;
        }
        let mut one = Coverage::default();
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| run(seed, &mut one))) {
            panic!("{format}: seed {seed} failed: {}\nreplay: ZONEKIT_SIM_SEED={seed} {replay}", panic_message(&*e));
        }
        one.runs = 1;
        coverage.merge(&one);
        seed += 1;
        if matches!(plan, SeedPlan::For { .. }) && last_progress.elapsed() >= Duration::from_secs(10) {
            last_progress = Instant::now();
            let secs = started.elapsed().as_secs_f64();
            eprintln!("{format}: {} seeds in {secs:.0} s ({:.0}/s), {} crashes, last seed {}", coverage.runs, coverage.runs as f64 / secs, coverage.crashes, seed - 1);
        }
    }
    println!("{format}: {} s\n{coverage}", started.elapsed().as_secs());
    coverage
}
