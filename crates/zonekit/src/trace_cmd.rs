//! `zonekit trace ...` and `zonekit analyze`: read, convert, generate and characterise traces.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use zonekit_report::{csv, line_chart, Series};
use zonekit_trace::analyze::{analyze, Analysis, BlockSource};
use zonekit_trace::binary::{annotate_next_write, BinaryTrace, BinaryWriter};
use zonekit_trace::format::{self, ReadOptions, ReadStats};
use zonekit_trace::input::{Input, Source};
use zonekit_trace::synth::Workload;
use zonekit_trace::{BlockIo, Op};

use crate::args::{nothing_left, report_skipped, skipped_lines, InputArgs};
use crate::progress::Progress as Bar;

#[derive(Subcommand)]
pub enum TraceCommand {
    /// Summarise a trace: records, reads and writes, bytes, volumes, time span, problems.
    Info(InfoArgs),
    /// Convert a trace (or a generated workload) to the binary block format (.zkt).
    Convert(ConvertArgs),
    /// Generate a workload into a binary trace (.zkt) or an Alibaba-format CSV (.csv).
    Gen(GenArgs),
}

#[derive(Args)]
pub struct InfoArgs {
    #[command(flatten)]
    input: InputArgs,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Output binary trace.
    #[arg(long, short)]
    out: PathBuf,
    /// Add future knowledge (next write of each block) for the oracles.
    #[arg(long)]
    next_write: bool,
}

#[derive(Args)]
pub struct GenArgs {
    /// Workload spec, e.g. "cloud:volumes=64,blocks=4M,writes=20M".
    spec: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output: .zkt (binary, 4 KiB blocks) or .csv (Alibaba format: device,op,offset,length,µs).
    #[arg(long, short)]
    out: PathBuf,
    /// With a .zkt output, add future knowledge.
    #[arg(long)]
    next_write: bool,
}

fn progress(what: &str) -> Bar {
    Bar::counter("blocks").with_message(what)
}

pub fn run(cmd: TraceCommand) -> Result<ExitCode> {
    match cmd {
        TraceCommand::Info(a) => info(a),
        TraceCommand::Convert(a) => convert(a),
        TraceCommand::Gen(a) => gen(a),
    }
}

fn info(a: InfoArgs) -> Result<ExitCode> {
    let input = a.input.input()?;
    // A generated workload or any filter (window, volumes, sampling, node sharding) is
    // described as the block stream the filters leave, so every flag listed is honoured.
    if a.input.workload.is_some() || input.filters.drops_blocks() {
        return block_info(&input, a.json);
    }
    let path = a.input.trace.clone().context("trace info needs a trace file or a --workload")?;
    if let Source::Binary(p) = &input.source {
        let t = BinaryTrace::open(p)?;
        if a.json {
            println!("{}", serde_json::to_string_pretty(t.header())?);
        } else {
            let h = t.header();
            println!("binary trace     {}", p.display());
            println!("source           {}", h.source);
            println!("block size       {} B", h.block_size_bytes);
            println!("block accesses   {} ({} writes, {} reads)", h.records, h.writes, h.records - h.writes);
            println!("next-write times {}", if h.has_next_write { "present" } else { "absent" });
        }
        return Ok(ExitCode::SUCCESS);
    }
    let Source::Trace { format: fmt, lenient, .. } = &input.source else { unreachable!() };
    let fmt = match fmt {
        Some(f) => f.clone(),
        None => format::detect(&path)?,
    };
    let mut recs = format::open(&path, &fmt, &ReadOptions { lenient: *lenient, ..ReadOptions::default() })?;
    let (mut reads, mut writes, mut read_bytes, mut write_bytes) = (0u64, 0u64, 0u64, 0u64);
    let (mut t0, mut t1) = (u64::MAX, 0u64);
    let mut volumes = std::collections::BTreeSet::new();
    for r in recs.by_ref() {
        let r = r?;
        match r.op {
            // Byte totals past 2^64 are impossible traffic: a size in the wrong unit, not a sum to wrap.
            Op::Read => (reads, read_bytes) = (reads + 1, read_bytes.checked_add(r.len_bytes).context(too_big(&path, reads + writes))?),
            Op::Write => (writes, write_bytes) = (writes + 1, write_bytes.checked_add(r.len_bytes).context(too_big(&path, reads + writes))?),
        }
        t0 = t0.min(r.time_us);
        t1 = t1.max(r.time_us);
        volumes.insert(r.volume);
    }
    let stats: ReadStats = recs.stats();
    let total = reads + writes;
    if a.json {
        let v = serde_json::json!({
            "trace": path, "format": fmt.name(), "records": total, "reads": reads, "writes": writes,
            "read_bytes": read_bytes, "write_bytes": write_bytes, "volumes": volumes.len(),
            "span_s": if total > 0 { (t1 - t0) as f64 / 1e6 } else { 0.0 }, "read_stats": stats,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("trace            {}", path.display());
    println!("format           {}{}", fmt.name(), if a.input.format.is_none() { " (detected)" } else { "" });
    println!("fields, units    {}", fmt.units());
    println!("records          {total}");
    println!("writes           {writes} ({:.1} % of records), {:.1} MiB", 100.0 * writes as f64 / total.max(1) as f64, write_bytes as f64 / 1048576.0);
    println!("reads            {reads}, {:.1} MiB", read_bytes as f64 / 1048576.0);
    println!("volumes          {}", volumes.len());
    if total > 0 {
        println!("time span        {:.3} s{}", (t1 - t0) as f64 / 1e6, span_warning(total, t1 - t0));
    }
    if stats.non_data > 0 {
        println!("non-data         {} entries that are not reads or writes (ignored)", stats.non_data);
    }
    for line in skipped_lines(&stats) {
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

fn too_big(path: &Path, record: u64) -> String {
    format!("{}: record {record}: the request sizes add up to more than 2^64 bytes (sizes in another unit than the format assumes?)", path.display())
}

/// A note on a time span no real trace has: every record at one instant, or centuries.
fn span_warning(records: u64, span_us: u64) -> &'static str {
    const CENTURY_US: u64 = 100 * 365 * 24 * 3_600_000_000;
    if records > 1 && span_us == 0 {
        "  (WARNING: every record has the same time: are the timestamps in the unit above?)"
    } else if span_us > CENTURY_US {
        "  (WARNING: over a century: are the timestamps in the unit above?)"
    } else {
        ""
    }
}

/// `trace info` of the block stream an input yields after its filters (or of a workload).
fn block_info(input: &Input, json: bool) -> Result<ExitCode> {
    let (mut reads, mut writes) = (0u64, 0u64);
    let (mut t0, mut t1) = (u64::MAX, 0u64);
    let mut volumes = std::collections::BTreeSet::new();
    for r in input.records_pipelined() {
        let io = r?.io;
        match io.op {
            Op::Read => reads += 1,
            Op::Write => writes += 1,
        }
        (t0, t1) = (t0.min(io.time_us), t1.max(io.time_us));
        volumes.insert(io.volume);
    }
    let total = reads + writes;
    report_skipped(input);
    if total == 0 {
        return Err(nothing_left(input, "block accesses"));
    }
    let span_s = (t1 - t0) as f64 / 1e6;
    let block = input.filters.split.block_size_bytes;
    if json {
        let v = serde_json::json!({"input": input.describe(), "block_size_bytes": block, "block_accesses": total, "writes": writes, "reads": reads, "volumes": volumes.len(), "span_s": span_s});
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("input            {}", input.describe());
    println!("block accesses   {total} of {block} B ({writes} writes, {reads} reads), after the filters");
    println!("volumes          {}", volumes.len());
    println!("time span        {span_s:.3} s{}", span_warning(total, t1 - t0));
    Ok(ExitCode::SUCCESS)
}

fn write_binary(input: &Input, out: &Path, source_name: &str, block_size: u64, next_write: bool) -> Result<()> {
    let bar = progress("converting");
    let mut w = BinaryWriter::create(out, block_size as u32, source_name)?;
    for (i, r) in input.records_pipelined().enumerate() {
        w.push(&r?.io)?;
        if i % 65536 == 0 {
            bar.set_position(i as u64);
        }
    }
    // Annotated before it is published: a trace under its name is a whole one.
    let (h, file) = w.finish_aside()?;
    bar.finish_and_clear();
    report_skipped(input);
    if h.records == 0 {
        return Err(nothing_left(input, "block accesses"));
    }
    let annotated = if next_write { Some(annotate_next_write(file.temp_path())?) } else { None };
    file.commit().with_context(|| format!("writing {}", out.display()))?;
    println!("wrote {}: {} block accesses ({} writes), {}-byte blocks", out.display(), h.records, h.writes, h.block_size_bytes);
    if let Some(s) = annotated {
        println!(
            "future knowledge: {} writes over {} distinct blocks, {} never rewritten; map {:.1} B per block",
            s.writes,
            s.distinct_blocks,
            s.never_rewritten,
            s.map_bytes as f64 / s.distinct_blocks.max(1) as f64
        );
    }
    Ok(())
}

fn convert(a: ConvertArgs) -> Result<ExitCode> {
    let input = a.input.input()?;
    let name = input.describe();
    write_binary(&input, &a.out, &name, a.input.block_size, a.next_write)?;
    Ok(ExitCode::SUCCESS)
}

fn gen(a: GenArgs) -> Result<ExitCode> {
    let workload: Workload = a.spec.parse::<Workload>().map_err(|e| crate::error::Usage(e.to_string()))?;
    if a.out.extension().is_some_and(|e| e == "csv") {
        // Written aside: a generation killed midway leaves no shorter trace under the name.
        let mut out = zonekit_base::atomic::AtomicFile::create(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
        let mut n = 0u64;
        for r in workload.records(a.seed).map_err(|e| crate::error::Usage(e.to_string()))? {
            let op = if r.op == Op::Write { 'W' } else { 'R' };
            writeln!(out, "{},{},{},{},{}", r.volume, op, r.offset_bytes, r.len_bytes, r.time_us)?;
            n += 1;
        }
        out.commit().with_context(|| format!("writing {}", a.out.display()))?;
        println!("wrote {}: {n} requests (Alibaba CSV format)", a.out.display());
    } else {
        let input = Input::generated(workload, a.seed);
        write_binary(&input, &a.out, &format!("{} seed {}", a.spec, a.seed), 4096, a.next_write)?;
    }
    Ok(ExitCode::SUCCESS)
}

// ---- analyze -------------------------------------------------------------------------------

#[derive(Args)]
pub struct AnalyzeArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Directory for the results (JSON, CSV, SVG).
    #[arg(long, default_value = "zonekit-out/analyze")]
    out: PathBuf,
}

/// Counts blocks through a progress bar while the analysis makes its passes.
struct Progress<'a> {
    input: &'a Input,
    bar: Bar,
}

impl BlockSource for Progress<'_> {
    fn blocks(&self) -> zonekit_trace::Result<Box<dyn Iterator<Item = zonekit_trace::Result<BlockIo>> + '_>> {
        self.bar.set_position(0);
        let inner = self.input.blocks()?;
        Ok(Box::new(inner.enumerate().map(|(i, b)| {
            if i % 65536 == 0 {
                self.bar.set_position(i as u64);
            }
            b
        })))
    }
}

pub fn analyze_cmd(a: AnalyzeArgs) -> Result<ExitCode> {
    let input = a.input.input()?;
    crate::out_dir::claim_out(&a.out, "analyze", false)?;
    let bar = progress("analysing (4 passes)");
    let result = analyze(&Progress { input: &input, bar: bar.clone() }, a.input.block_size)?;
    bar.finish_and_clear();
    report_skipped(&input);
    if result.block_writes + result.block_reads == 0 {
        return Err(nothing_left(&input, "block accesses"));
    }
    print_analysis(&input.describe(), &result);
    write_analysis(&a.out, &result)?;
    say!("\nwrote {}/{{analysis.json, write_counts.csv, lifetimes.csv, hourly_thresholds.csv, per_volume.csv, bilt_cdf.svg, bipt_cdf.svg, traffic.svg, thresholds.svg, write_counts.svg}}", a.out.display());
    crate::out_dir::finish(&a.out)?;
    Ok(ExitCode::SUCCESS)
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

fn print_analysis(name: &str, a: &Analysis) {
    println!("workload analysis of {name}\n");
    let rows = vec![
        vec!["block writes".into(), format!("{} ({})", a.block_writes, gib(a.bytes_written))],
        vec!["block reads".into(), a.block_reads.to_string()],
        vec!["requests (write / read)".into(), format!("{} / {}", a.write_requests, a.read_requests)],
        vec!["write-request share".into(), format!("{:.1} %", 100.0 * a.write_request_share)],
        vec!["write share of block accesses".into(), format!("{:.1} %", 100.0 * a.write_share)],
        vec!["working set (distinct written blocks)".into(), format!("{} ({})", a.distinct_blocks, gib(a.wss_bytes))],
        vec!["volumes".into(), a.volumes.to_string()],
        vec!["time span".into(), format!("{:.2} h", a.span_hours)],
        vec!["blocks written once".into(), format!("{:.1} %", 100.0 * a.written_once_share)],
        vec!["writes never overwritten (infinite lifetime)".into(), format!("{:.1} %", 100.0 * a.infinite_lifetime_share)],
        vec!["Zipf exponent of write counts".into(), a.zipf_exponent.map_or("-".into(), |z| format!("{z:.2}"))],
    ];
    print!("{}", zonekit_report::fitted_table(&["metric", "value"], &rows, zonekit_report::TERMINAL_COLUMNS));
    let tops: Vec<String> = a.top_share_of_writes.iter().map(|(p, s)| format!("top {p} % of blocks: {:.1} % of writes", 100.0 * s)).collect();
    say!("{}", tops.join("; "));
    let per_day: Vec<String> = a.top_writes_per_day.iter().map(|(p, n)| format!("top {p} %: ≥ {n:.0}")).collect();
    say!("writes a day of the least written block among the top x %: {}", per_day.join("; "));
    let pick = [1u32, 20, 40, 50, 60, 80, 90, 99, 100];
    let counts: Vec<String> = a.write_count_at_percentile.iter().filter(|(p, _)| pick.contains(p)).map(|(p, c)| format!("{p}%:{c}")).collect();
    say!("write count of the block at bottom x %: {}", counts.join(" "));
    if !a.hourly_thresholds.is_empty() {
        println!("\nlogical-lifetime thresholds by hour (writes until the block is rewritten):");
        let rows: Vec<Vec<String>> = a
            .hourly_thresholds
            .iter()
            .map(|h| {
                let mut r = vec![h.hour.to_string(), h.writes.to_string()];
                r.extend(h.bilt_p20_p40_p60_p80.iter().map(|v| v.to_string()));
                r
            })
            .collect();
        print!("{}", zonekit_report::fitted_table(&["hour", "writes", "P20", "P40", "P60", "P80"], &rows, zonekit_report::TERMINAL_COLUMNS));
    }
}

fn write_analysis(dir: &Path, a: &Analysis) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let put = |name: &str, body: String| zonekit_base::atomic::write(dir.join(name), body).with_context(|| format!("writing {}", dir.join(name).display()));
    put("analysis.json", serde_json::to_string_pretty(a)?)?;
    put(
        "write_counts.csv",
        csv(&["bottom_percent_of_blocks", "write_count"], &a.write_count_at_percentile.iter().map(|(p, c)| vec![p.to_string(), c.to_string()]).collect::<Vec<_>>()),
    )?;
    let mut rows = Vec::new();
    for (kind, cdf) in [("bilt_writes", &a.bilt_cdf), ("bipt_ms", &a.bipt_ms_cdf)] {
        rows.extend(cdf.iter().map(|p| vec![kind.to_string(), p.x.to_string(), format!("{:.6}", p.cdf)]));
    }
    put("lifetimes.csv", csv(&["kind", "lifetime", "cdf"], &rows))?;
    put(
        "hourly_thresholds.csv",
        csv(
            &["hour", "writes", "p20", "p40", "p60", "p80"],
            &a.hourly_thresholds
                .iter()
                .map(|h| {
                    let mut r = vec![h.hour.to_string(), h.writes.to_string()];
                    r.extend(h.bilt_p20_p40_p60_p80.iter().map(|v| v.to_string()));
                    r
                })
                .collect::<Vec<_>>(),
        ),
    )?;
    put(
        "per_volume.csv",
        csv(
            &["volume", "block_writes", "distinct_blocks"],
            &a.per_volume.iter().map(|v| vec![v.volume.to_string(), v.block_writes.to_string(), v.distinct_blocks.to_string()]).collect::<Vec<_>>(),
        ),
    )?;
    let cdf_series = |name: &str, c: &[zonekit_trace::analyze::CdfPoint]| Series { name: name.into(), points: c.iter().map(|p| (p.x.max(1) as f64, p.cdf)).collect() };
    put(
        "bilt_cdf.svg",
        line_chart(
            &format!("Logical lifetime (BILT); {:.1} % infinite", 100.0 * a.infinite_lifetime_share),
            "writes until rewritten",
            "CDF",
            &[cdf_series("BILT", &a.bilt_cdf)],
            true,
        ),
    )?;
    put(
        "bipt_cdf.svg",
        line_chart(
            &format!("Physical lifetime (BIPT); {:.1} % infinite", 100.0 * a.infinite_lifetime_share),
            "ms until rewritten",
            "CDF",
            &[cdf_series("BIPT", &a.bipt_ms_cdf)],
            true,
        ),
    )?;
    put(
        "traffic.svg",
        line_chart(
            "Write traffic",
            "minute",
            "MB written per minute",
            &[Series { name: "writes".into(), points: a.mb_written_per_minute.iter().enumerate().map(|(m, v)| (m as f64, *v)).collect() }],
            false,
        ),
    )?;
    let names = ["P20", "P40", "P60", "P80"];
    let thresholds: Vec<Series> =
        (0..4).map(|i| Series { name: names[i].into(), points: a.hourly_thresholds.iter().map(|h| (h.hour as f64, h.bilt_p20_p40_p60_p80[i] as f64)).collect() }).collect();
    put("thresholds.svg", line_chart("Lifetime thresholds by hour", "hour", "logical lifetime (writes)", &thresholds, false))?;
    put(
        "write_counts.svg",
        line_chart(
            "Write count by block percentile",
            "bottom % of blocks",
            "write count",
            &[Series { name: "count".into(), points: a.write_count_at_percentile.iter().map(|(p, c)| (*p as f64, *c as f64)).collect() }],
            false,
        ),
    )?;
    Ok(())
}
