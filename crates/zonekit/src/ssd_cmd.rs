//! `zonekit ssd`: the conventional and FDP SSD models of `zonekit-ssd` — their presets, and one
//! model driven by a generated hot/cold workload (`zonekit_ssd::run`) with its counters and
//! FDP's log pages. This file turns flags into an `SsdConfig`, naming the flag of every value
//! the model refuses, and prints.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use zonekit_ssd::config::BLOCK_BYTES;
use zonekit_ssd::preset::{self, SsdPreset, PRESETS};
use zonekit_ssd::{HotCold, RuhType, Ssd, SsdConfig, SsdReport};

const MIB: u64 = 1 << 20;
const KIB: u64 = 1 << 10;

/// The most memory a model of `ssd run` holds (or half the machine's, if less): about 9 bytes
/// a block, a drive of ~1 TB. The presets' full capacities (1.6-1.92 TB) are over it: this is
/// a command for exploring shapes on a shared machine, scaled with --logical-mib.
const MODEL_MEMORY_MAX_BYTES: u64 = 2 << 30;

#[derive(Subcommand)]
pub enum SsdCommand {
    /// The SSD presets: shape (capacity, spare, erase block, reclaim unit, groups, handles) and
    /// where each figure comes from.
    Presets(PresetsArgs),
    /// Drive one SSD model (a preset scaled to --logical-mib, or the shape the flags give) with
    /// a generated workload: the logical space filled once, then random overwrites of which a
    /// hot share goes to a hot share of the LBAs (on an FDP SSD hot data through placement
    /// handle 0, cold through handle 1). Prints host and media blocks, device WAF, erases, wear
    /// and FDP's four log pages.
    Run(Box<RunArgs>),
}

#[derive(Args)]
pub struct PresetsArgs {
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct RunArgs {
    /// A preset's shape (`zonekit ssd presets`), scaled to --logical-mib: its spare, erase
    /// block, groups and handles kept, its reclaim unit shrunk with the capacity (whole erase
    /// blocks, at least one). The shape flags override its fields.
    #[arg(long, value_name = "PRESET")]
    preset: Option<String>,
    /// Logical space in MiB. A preset at its full capacity (1.6-1.92 TB) needs more memory
    /// than a model should take: it is scaled to this.
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    logical_mib: u64,
    /// Over-provisioning as drive makers state it, in (0, 1) [default: the preset's, else 0.28].
    #[arg(long)]
    spare: Option<f64>,
    /// Erase block in KiB, whole 4 KiB blocks [default: the preset's, else 1024].
    #[arg(long, value_name = "KIB")]
    erase_block_kib: Option<u64>,
    /// Erase blocks of one reclaim unit [default: the preset's scaled, else 4].
    #[arg(long, value_name = "N", conflicts_with = "ru_mib")]
    ru_erase_blocks: Option<u64>,
    /// The reclaim unit in MiB, whole erase blocks (instead of --ru-erase-blocks).
    #[arg(long, value_name = "MIB")]
    ru_mib: Option<u64>,
    /// Reclaim groups (FDP only) [default: the preset's, else 1].
    #[arg(long, value_name = "N")]
    groups: Option<u16>,
    /// Reclaim-unit handles: 0 for a conventional SSD, N for an FDP SSD [default: the
    /// preset's, else 0].
    #[arg(long, value_name = "N")]
    handles: Option<u16>,
    /// The handles' type [default: the preset's, else initially-isolated].
    #[arg(long, value_parser = ["initially-isolated", "persistently-isolated"])]
    handle_type: Option<String>,
    /// The device GC's victim rule (`zonekit policies`: greedy, cb, ...).
    #[arg(long, default_value = "greedy")]
    victim: String,
    /// Random overwrites after the fill [default: twice the logical blocks].
    #[arg(long, value_name = "N")]
    writes: Option<u64>,
    /// The share of LBAs that are hot (the lowest ones), in (0, 1].
    #[arg(long, default_value_t = 0.2)]
    hot_share: f64,
    /// The share of overwrites that go to hot LBAs, in [0, 1].
    #[arg(long, default_value_t = 0.8)]
    hot_writes: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Charge every flash operation to the flash timing model (the preset's, else FEMU's):
    /// device time and write latency, GC's included.
    #[arg(long)]
    timed: bool,
    /// The FDP log pages to print (an FDP SSD only).
    #[arg(long, default_value = "all", value_parser = ["config", "usage", "stats", "events", "all", "none"])]
    log: String,
    /// The counters, the shape and the chosen log pages as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: SsdCommand) -> Result<ExitCode> {
    match cmd {
        SsdCommand::Presets(a) => presets(a),
        SsdCommand::Run(a) => run_cmd(*a),
    }
}

fn presets(a: PresetsArgs) -> Result<ExitCode> {
    if a.json {
        let rows: Vec<serde_json::Value> = PRESETS
            .iter()
            .map(|p| {
                serde_json::json!({
                    "name": p.name,
                    "summary": p.summary,
                    "source": p.source,
                    "kind": kind(p),
                    "capacity_bytes": p.capacity_bytes,
                    "spare": p.spare,
                    "erase_block_bytes": p.erase_block_bytes,
                    "ru_erase_blocks": p.ru_erase_blocks,
                    "ru_bytes": p.ru_bytes(),
                    "reclaim_groups": p.reclaim_groups,
                    "handles": p.handles.map_or(0, |h| h.0),
                    "handle_type": p.handles.map(|h| h.1.name()),
                    "flash_timing_of": p.flash_of,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("{:<12} {:<13} {:>9} {:>6} {:>12} {:>10} {:>7} {:>8}  flash timing", "preset", "kind", "capacity", "spare", "erase block", "RU", "groups", "handles");
    for p in PRESETS {
        let handles = p.handles.map_or("-".to_string(), |(n, t)| format!("{n} {}", if t == RuhType::InitiallyIsolated { "II" } else { "PI" }));
        println!(
            "{:<12} {:<13} {:>6.2} TB {:>5.0}% {:>8} MiB {:>6} MiB {:>7} {:>8}  {}",
            p.name,
            kind(p),
            p.capacity_bytes as f64 / 1e12,
            p.spare * 100.0,
            p.erase_block_bytes / MIB,
            p.ru_bytes() / MIB,
            p.reclaim_groups,
            handles,
            p.flash_of
        );
    }
    say!("\n(II: initially isolated handles, PI: persistently isolated; `ssd run --preset NAME --logical-mib M` scales one)");
    for p in PRESETS {
        say!("\n{}: {}", p.name, p.summary);
        print!("{}", zonekit_report::wrapped("  sources: ", p.source, zonekit_report::TERMINAL_COLUMNS));
    }
    Ok(ExitCode::SUCCESS)
}

fn kind(p: &SsdPreset) -> &'static str {
    if p.handles.is_some() {
        "fdp"
    } else {
        "conventional"
    }
}

/// The reclaim unit as the flags name it, for messages.
fn ru_flags(a: &RunArgs, cfg: &SsdConfig) -> String {
    let eb_kib = cfg.erase_block_blocks * BLOCK_BYTES as u64 / KIB;
    match a.ru_mib {
        Some(mib) => format!("--ru-mib {mib} of --erase-block-kib {eb_kib}"),
        None => format!("--ru-erase-blocks {} × --erase-block-kib {eb_kib}", cfg.ru_erase_blocks),
    }
}

/// The model the flags describe, every refusal naming its flag.
fn config(a: &RunArgs) -> Result<(SsdConfig, Option<&'static SsdPreset>)> {
    let preset = match &a.preset {
        Some(name) => match preset::find(name) {
            Some(p) => Some(p),
            None => usage!("--preset {name:?}: no such SSD preset; valid: {}", preset::names().join(", ")),
        },
        None => None,
    };
    if a.logical_mib == 0 {
        usage!("--logical-mib 0: the device needs a logical space");
    }
    let logical_blocks = match a.logical_mib.checked_mul(MIB / BLOCK_BYTES as u64) {
        // The model maps blocks with 32-bit physical addresses.
        Some(b) if b < u32::MAX as u64 => b,
        _ => usage!("--logical-mib {}: the model addresses at most {} MiB", a.logical_mib, (u32::MAX as u64 - 1) / (MIB / BLOCK_BYTES as u64)),
    };
    let mut cfg = match preset {
        Some(p) => p.scaled(logical_blocks),
        None => {
            let mut c = SsdConfig::conventional(logical_blocks, 0.28, MIB / BLOCK_BYTES as u64);
            c.ru_erase_blocks = 4;
            c
        }
    };
    if let Some(spare) = a.spare {
        if !(spare > 0.0 && spare < 1.0) {
            usage!("--spare {spare}: over-provisioning must be in (0, 1) (0.07 for a 7 % drive)");
        }
        cfg.spare = spare;
    }
    if let Some(kib) = a.erase_block_kib {
        let block_kib = BLOCK_BYTES as u64 / KIB;
        if kib == 0 || kib % block_kib != 0 {
            usage!("--erase-block-kib {kib}: an erase block is whole {block_kib} KiB blocks");
        }
        cfg.erase_block_blocks = kib / block_kib;
    }
    if let Some(n) = a.ru_erase_blocks {
        if n == 0 {
            usage!("--ru-erase-blocks 0: a reclaim unit is at least one erase block");
        }
        cfg.ru_erase_blocks = n;
    }
    if let Some(mib) = a.ru_mib {
        let eb_bytes = cfg.erase_block_blocks * BLOCK_BYTES as u64;
        match mib.checked_mul(MIB) {
            Some(bytes) if mib > 0 && bytes % eb_bytes == 0 => cfg.ru_erase_blocks = bytes / eb_bytes,
            _ => usage!("--ru-mib {mib}: a reclaim unit is one or more whole erase blocks of {} KiB (--erase-block-kib)", eb_bytes / KIB),
        }
    }
    if cfg.erase_block_blocks.checked_mul(cfg.ru_erase_blocks).is_none_or(|b| b >= u32::MAX as u64) {
        usage!("{}: a reclaim unit of at most {} blocks", ru_flags(a, &cfg), u32::MAX - 1);
    }
    if let Some(n) = a.handles {
        let t = cfg.handles.first().copied().unwrap_or(RuhType::InitiallyIsolated);
        cfg.handles = vec![t; n as usize];
    }
    if let Some(name) = &a.handle_type {
        if cfg.handles.is_empty() {
            usage!("--handle-type {name}: a conventional SSD has no handles (give --handles N)");
        }
        let t = RuhType::from_name(name).expect("clap checked the name");
        cfg.handles.iter_mut().for_each(|h| *h = t);
    }
    if let Some(g) = a.groups {
        if g == 0 {
            usage!("--groups 0: a device has at least one reclaim group");
        }
        if g > 1 && cfg.handles.is_empty() {
            usage!("--groups {g}: a conventional SSD's writes name no reclaim group (all would go to group 0); give --handles N for an FDP SSD");
        }
        cfg.reclaim_groups = g;
    }
    if zonekit_ftl::victim::find(&a.victim).is_err() {
        let names: Vec<&str> = zonekit_ftl::victim::VICTIMS.iter().map(|v| v.name).collect();
        usage!("--victim {:?}: no such victim rule; valid: {}", a.victim, names.join(", "));
    }
    cfg.victim = a.victim.clone();
    cfg.seed = a.seed;
    if a.timed {
        cfg.flash = Some(preset.map_or_else(|| preset::PRESETS[0].flash(), |p| p.flash()));
    }
    if let Err(e) = cfg.validate() {
        let shape = format!("--logical-mib {} --spare {} {} --groups {} --handles {}", a.logical_mib, cfg.spare, ru_flags(a, &cfg), cfg.reclaim_groups, cfg.handles.len());
        let fit = cfg.handles_that_fit(cfg.handles.len() as u16);
        if !cfg.handles.is_empty() && fit > 0 {
            usage!("--handles {}: at most {fit} handles fit this device ({shape}): {e}", cfg.handles.len());
        }
        usage!("{shape}: {e}; raise --logical-mib or --spare, or shrink the reclaim unit (--ru-erase-blocks, --ru-mib, --erase-block-kib)");
    }
    let memory = cfg.memory_bytes();
    let memory_max = zonekit_base::mem::total_memory_bytes().map_or(MODEL_MEMORY_MAX_BYTES, |total| (total / 2).min(MODEL_MEMORY_MAX_BYTES));
    if memory > memory_max {
        usage!(
            "--logical-mib {}: the model would hold {} MiB of maps, over this command's {} MiB (a drive of about {} GB); scale it down with --logical-mib",
            a.logical_mib,
            memory / MIB,
            memory_max / MIB,
            memory_max / 9 * BLOCK_BYTES as u64 / 1_000_000_000
        );
    }
    Ok((cfg, preset))
}

/// Why a run's figures mean less than they seem, each naming the flag to change: nothing
/// written, or writes that never filled the device far enough to erase a reclaim unit (its GC,
/// which sets the WAF and the wear, never ran).
fn degenerate(r: &SsdReport) -> Vec<String> {
    let c = &r.counters;
    if c.host_blocks == 0 {
        vec!["no block was written (--writes 0): the WAF and the wear are over zero writes; give --writes".into()]
    } else if c.erases == 0 {
        vec![format!(
            "the device never erased a reclaim unit: {} host blocks into {} physical blocks ran no GC, so device WAF {:.4} says nothing about placement or spare; write more (--writes; the default is twice the logical space)",
            c.host_blocks, r.physical_blocks, r.waf
        )]
    } else {
        Vec::new()
    }
}

fn run_cmd(a: RunArgs) -> Result<ExitCode> {
    if !(a.hot_share > 0.0 && a.hot_share <= 1.0) {
        usage!("--hot-share {}: the share of hot LBAs must be in (0, 1]", a.hot_share);
    }
    if !(0.0..=1.0).contains(&a.hot_writes) {
        usage!("--hot-writes {}: the share of overwrites to hot LBAs must be in [0, 1]", a.hot_writes);
    }
    let (cfg, preset) = config(&a)?;
    let workload = HotCold { writes: a.writes.unwrap_or(cfg.logical_blocks.saturating_mul(2)), hot_share: a.hot_share, hot_writes: a.hot_writes, seed: a.seed };
    if a.log != "all" && a.log != "none" && cfg.handles.is_empty() {
        usage!("--log {}: a conventional SSD has no FDP log pages (give --handles N)", a.log);
    }
    let mut ssd = Ssd::new(cfg).map_err(|e| crate::error::Usage(e.to_string()))?;
    let stats = workload.run(&mut ssd)?;
    ssd.check_invariants();
    let mut report = SsdReport::of(&ssd);
    let wanted = |page: &str| a.log == "all" || a.log == page;
    if !wanted("config") {
        report.config_log = None;
    }
    if !wanted("usage") {
        report.usage_log = None;
    }
    if !wanted("stats") {
        report.stats_log = None;
    }
    if !wanted("events") {
        report.events_log = None;
    }
    let warnings = degenerate(&report);
    crate::sweep_run::print_warnings(&warnings);
    if a.json {
        let json = serde_json::json!({ "preset": a.preset, "workload": workload, "written": stats, "report": report, "warnings": warnings });
        println!("{}", serde_json::to_string_pretty(&json)?);
        return Ok(ExitCode::SUCCESS);
    }
    let r = &report;
    let block = r.block_size_bytes as u64;
    let handles = match r.handles.first() {
        Some(t) => format!("{} {} handle(s)", r.handles.len(), t.name()),
        None => "no handles".into(),
    };
    say!(
        "{} SSD{}: {} logical blocks of {block} bytes ({} MiB), spare {}, {} physical blocks",
        r.kind,
        preset.map_or(String::new(), |p| format!(" (preset {}, scaled from {:.2} TB)", p.name, p.capacity_bytes as f64 / 1e12)),
        r.logical_blocks,
        r.logical_blocks * block / MIB,
        r.spare,
        r.physical_blocks
    );
    let shape = format!(
        "{} reclaim units of {} blocks ({} KiB: {} erase block(s) of {} KiB) in {} reclaim group(s), {handles}, device GC {}",
        r.reclaim_units,
        r.ru_blocks,
        r.ru_blocks * block / KIB,
        r.ru_blocks / r.erase_block_blocks,
        r.erase_block_blocks * block / KIB,
        r.reclaim_groups,
        r.victim
    );
    print!("{}", zonekit_report::wrapped("  ", &shape, zonekit_report::TERMINAL_COLUMNS));
    say!(
        "workload: {} blocks filled, then {} overwrites ({} to the {} hot LBAs, {} % of the space), seed {}",
        stats.fill_blocks,
        stats.overwrites,
        stats.hot_overwrites,
        stats.hot_blocks,
        workload.hot_share * 100.0,
        workload.seed
    );
    println!();
    let c = &r.counters;
    println!("host blocks        {}", c.host_blocks);
    println!("media blocks       {} (GC moved {})", r.media_blocks, c.gc_blocks);
    println!("device WAF         {:.4}", r.waf);
    println!("erases             {}", c.erases);
    println!("wear (erases/RU)   min {} max {} mean {:.2}", r.wear.erases_min, r.wear.erases_max, r.wear.erases_mean);
    if !r.handles.is_empty() {
        let by: Vec<String> = c.host_blocks_by_handle.iter().enumerate().map(|(h, n)| format!("{h}: {n}")).collect();
        println!("host blocks by handle  {}", by.join(", "));
        let n = c.gc_blocks_by_handle.len();
        let gc: Vec<String> = c.gc_blocks_by_handle.iter().enumerate().map(|(h, m)| if h + 1 == n { format!("shared: {m}") } else { format!("{h}: {m}") }).collect();
        println!("GC moved from units of handle  {}", gc.join(", "));
        println!("invalid placements {}", c.invalid_placements);
    }
    if let Some(t) = &r.timing {
        println!(
            "device time        {:.3} s; write latency p50 {:.1} us, p99 {:.1} us, max {:.1} us",
            t.elapsed_s, t.write_latency_us_p50, t.write_latency_us_p99, t.write_latency_us_max
        );
    }
    if let Some(l) = &r.config_log {
        print!("\nFDP Configurations (log page 20h)\n{}", log_for_terminal(l));
    }
    if let Some(l) = &r.usage_log {
        print!("\nReclaim Unit Handle Usage (log page 21h)\n{}", log_for_terminal(l));
    }
    if let Some(l) = &r.stats_log {
        print!("\nFDP Statistics (log page 22h)\n{}", log_for_terminal(l));
    }
    if let Some(l) = &r.events_log {
        print!("\nFDP Events (log page 23h)\n{}", log_for_terminal(l));
    }
    Ok(ExitCode::SUCCESS)
}

/// A log page as the terminal shows it: a line too wide (an event's) wrapped, its continuation
/// two columns in, so each entry still reads as one.
fn log_for_terminal(page: &impl std::fmt::Display) -> String {
    page.to_string()
        .lines()
        .map(|line| {
            if line.chars().count() <= zonekit_report::TERMINAL_COLUMNS {
                return format!("{line}\n");
            }
            let text = line.trim_start();
            let indent = &line[..line.len() - text.len()];
            let hanging = format!("{indent}  ");
            // Every line hangs; the first then moves back to the entry's own indent.
            zonekit_report::wrapped(&hanging, text, zonekit_report::TERMINAL_COLUMNS).replacen(&hanging, indent, 1)
        })
        .collect()
}
