//! Flags several commands share: the input (a trace file or a generated workload, and its
//! filters) and the block FTL's settings, with seed 000's thesis settings that the demo and
//! the seed-000 experiments collect under.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use zonekit_ftl::engine::DEFAULT_GC_THRESHOLD;
use zonekit_ftl::placement::Params;
use zonekit_ftl::{CapacityMode, FtlConfig, GcTrigger};
use zonekit_lab::block::replay::{ReplaySpec, DEFAULT_PRESET, DEFAULT_UTILIZATION};
use zonekit_lab::harness::interface::Interface;
use zonekit_trace::format::{Delimited, Format, ReadStats};
use zonekit_trace::input::{FilterFlags, Input};
use zonekit_trace::synth::Workload;

/// Where blocks come from: a trace file or a generated workload, with sampling and sharding.
#[derive(Args, Clone, Debug)]
pub struct InputArgs {
    /// Trace file (a .zkt binary trace, or a text/vscsi trace, compressed or not).
    #[arg(conflicts_with = "workload")]
    pub trace: Option<PathBuf>,
    /// Trace format (default: detected): alibaba, tencent, msr, umass, systor, cloudphysics-csv,
    /// vscsi, disksim, or delimited with --columns.
    #[arg(long, conflicts_with = "workload")]
    pub format: Option<String>,
    /// Column mapping for --format delimited, e.g. "time=0:s offset=1:sector size=2:sector op=3:0/1 volume=4".
    #[arg(long, conflicts_with = "workload")]
    pub columns: Option<String>,
    /// Field delimiter for --format delimited (default ","; "ws" for whitespace).
    #[arg(long, conflicts_with = "workload")]
    pub delimiter: Option<String>,
    /// The delimited file has a header line.
    #[arg(long, conflicts_with = "workload")]
    pub header: bool,
    /// Skip malformed records instead of stopping at the first; how many were skipped, by
    /// field, is reported on stderr at the end.
    #[arg(long, conflicts_with = "workload")]
    pub lenient: bool,
    /// Generate the workload instead of reading a trace, e.g. "zipf:blocks=1M,alpha=0.9,writes=10M".
    #[arg(long)]
    pub workload: Option<String>,
    /// Seed of the generated workload.
    #[arg(long, default_value_t = 1, conflicts_with = "trace")]
    pub seed: u64,
    /// SHARDS spatial sampling P/T: keep blocks with hash mod P < T (seed 000: 10/1).
    #[arg(long)]
    pub sample: Option<String>,
    /// Shard a cluster trace over this many storage nodes (consistent hashing) ...
    #[arg(long, requires = "node")]
    pub nodes: Option<u32>,
    /// ... and keep this node's share.
    #[arg(long, requires = "nodes")]
    pub node: Option<u32>,
    /// Placement unit of node sharding: each volume is spread over nodes in chunks of this size.
    #[arg(long, default_value_t = FilterFlags::default().chunk_mib)]
    pub chunk_mib: u64,
    /// Keep only records in this time window, START:END seconds after the first record.
    #[arg(long)]
    pub window: Option<String>,
    /// Keep only these volumes.
    #[arg(long, value_delimiter = ',')]
    pub volume: Option<Vec<u32>>,
    /// Block size in bytes.
    #[arg(long, default_value_t = FilterFlags::default().block_size)]
    pub block_size: u64,
}

impl InputArgs {
    pub fn format(&self) -> Result<Option<Format>> {
        if self.format.as_deref() != Some("delimited") {
            // Honoured by the delimited format only: elsewhere they would be ignored.
            let given = [("--columns", self.columns.is_some()), ("--delimiter", self.delimiter.is_some()), ("--header", self.header)];
            if let Some((flag, _)) = given.iter().find(|(_, given)| *given) {
                usage!("{flag} applies to --format delimited only");
            }
        }
        match self.format.as_deref() {
            None => Ok(None),
            Some("delimited") => {
                let columns = self.columns.as_deref().context("--format delimited needs --columns")?;
                let delimiter = match self.delimiter.as_deref() {
                    None => Some(','),
                    Some("ws") => None,
                    Some(d) if d.chars().count() == 1 => d.chars().next(),
                    Some(d) => usage!("--delimiter {d:?}: one character, or \"ws\""),
                };
                Ok(Some(Format::Delimited(Delimited::parse(columns, delimiter, self.header).map_err(|e| crate::error::Usage(e.to_string()))?)))
            }
            Some(name) => Ok(Some(name.parse::<Format>().map_err(|e| crate::error::Usage(e.to_string()))?)),
        }
    }

    pub fn input(&self) -> Result<Input> {
        let mut input = match (&self.trace, &self.workload) {
            (Some(path), None) => {
                if !path.exists() {
                    usage!("{}: no such file", path.display());
                }
                Input::path(path, self.format()?, self.lenient)
            }
            (None, Some(spec)) => Input::generated(spec.parse::<Workload>().map_err(|e| crate::error::Usage(e.to_string()))?, self.seed),
            (None, None) => usage!("name a trace file or a --workload"),
            (Some(_), Some(_)) => unreachable!("clap refuses both"),
        };
        let filters = FilterFlags {
            sample: self.sample.clone(),
            nodes: self.nodes,
            node: self.node,
            chunk_mib: self.chunk_mib,
            window: self.window.clone(),
            volume: self.volume.clone(),
            block_size: self.block_size,
        };
        filters.apply(&mut input).map_err(|e| crate::error::Usage(e.to_string()))?;
        Ok(input)
    }
}

/// Device and FTL settings shared by replay and sweep.
#[derive(Args, Clone, Debug)]
pub struct FtlArgs {
    /// Device preset (zone size, open limit, flash timing): tiny, ocssd-thesis, femu-zns, zn540, nvmevirt-zns.
    #[arg(long, default_value = DEFAULT_PRESET)]
    pub preset: String,
    /// Size the device so the working set fills this share of it (over-provisioning = 1 − u).
    #[arg(long, default_value_t = DEFAULT_UTILIZATION, conflicts_with_all = ["unbounded", "preset_size"])]
    pub utilization: f64,
    /// Use the preset's own size instead of sizing by --utilization.
    #[arg(long)]
    pub preset_size: bool,
    /// The SepBIT simulator's unbounded log instead of a fixed capacity.
    #[arg(long)]
    pub unbounded: bool,
    /// Garbage proportion that triggers GC under gp-sealed and gp-all, the least a zone a
    /// garbage-triggered GC takes must hold, and the share CBE victims must exceed.
    #[arg(long, default_value_t = DEFAULT_GC_THRESHOLD)]
    pub gc_threshold: f64,
    /// When a fixed-capacity ZNS device collects: free-zones (only when free zones run short,
    /// so --utilization sets the over-provisioning GC works with; what an SSD's own GC does),
    /// gp-sealed (the SepBIT prototype and seed 000: sealed garbage at or over the threshold) or
    /// gp-all (all garbage, open zones' included, over the threshold). A GC the garbage calls
    /// for takes only zones at or over the threshold. The unbounded log has its own rule; an
    /// FDP or conventional SSD collects when its free space runs short (free-zones only).
    #[arg(long, default_value_t = GcTrigger::default().name().to_string(), value_parser = ["free-zones", "gp-sealed", "gp-all"], conflicts_with = "unbounded")]
    pub gc_trigger: String,
    /// Charge operations to the preset's flash timing model (reports device time).
    #[arg(long)]
    pub timing: bool,
    /// Replay onto an existing device at its own size: an emulated image (`zonekit device
    /// create`) or a /dev zoned device, every sequential zone empty (`zonekit device reset --all`).
    /// Its data is overwritten.
    #[arg(long, conflicts_with_all = ["preset", "utilization", "preset_size", "timing"])]
    pub device: Option<PathBuf>,
    /// Zone size (= capacity) in MiB instead of the preset's, a power of two: e.g. 32 to match
    /// the SepBIT simulator's --setSegmentSize 33554432.
    #[arg(long, conflicts_with = "device")]
    pub zone_mib: Option<u64>,
    /// What the flash is reached through, at the same raw capacity: zns (the FTL's host GC),
    /// fdp:N or fdp:N:persistent (an FDP SSD with N initially or persistently isolated
    /// handles: each placement class is written under a handle, the device collects) or
    /// conventional (an SSD that takes no hint). On an SSD the host writes in place.
    #[arg(long, default_value_t = ReplaySpec::default().interface, value_parser = parse_interface)]
    pub interface: Interface,
}

fn parse_interface(s: &str) -> std::result::Result<Interface, String> {
    Interface::parse(s)
}

impl Default for FtlArgs {
    /// The same defaults as the flags (the harness' constants).
    fn default() -> Self {
        FtlArgs {
            preset: DEFAULT_PRESET.into(),
            utilization: DEFAULT_UTILIZATION,
            preset_size: false,
            unbounded: false,
            gc_threshold: DEFAULT_GC_THRESHOLD,
            gc_trigger: GcTrigger::default().name().into(),
            timing: false,
            device: None,
            zone_mib: None,
            interface: Interface::Zns,
        }
    }
}

impl FtlArgs {
    pub fn spec(&self, placement: &str, victim: &str, params: Params, seed: u64) -> ReplaySpec {
        ReplaySpec {
            placement: placement.to_string(),
            params,
            victim: victim.to_string(),
            config: FtlConfig {
                gc_threshold: self.gc_threshold,
                capacity: if self.unbounded { CapacityMode::Unbounded } else { CapacityMode::Fixed },
                trigger: GcTrigger::from_name(&self.gc_trigger).expect("clap checked the name"),
                store_data: false,
            },
            preset: self.preset.clone(),
            utilization: (!self.unbounded && !self.preset_size && self.device.is_none()).then_some(self.utilization),
            timing: self.timing,
            device: self.device.clone(),
            zone_mib: self.zone_mib,
            interface: self.interface,
            seed,
        }
    }
}

/// Seed 000's thesis settings: femu-zns, GC when sealed zones hold 15 % garbage.
/// The thesis' device and GC (Table 4.2, §4.2.1): 32 MiB zones, 7 open, GC at 15 % garbage as
/// the SepBIT prototype it builds on collects (sealed zones' garbage, in a loop).
pub fn thesis_ftl() -> FtlArgs {
    FtlArgs { preset: "femu-zns".into(), gc_trigger: GcTrigger::GpSealed.name().into(), gc_threshold: 0.15, ..FtlArgs::default() }
}

/// What a lenient reading skipped, by field, with the first few examples.
pub(crate) fn skipped_lines(stats: &ReadStats) -> Vec<String> {
    if stats.skipped_total() == 0 {
        return Vec::new();
    }
    let by_field: Vec<String> = stats.skipped.iter().map(|(field, n)| format!("{n} bad {field}")).collect();
    let mut lines = vec![format!("skipped          {} malformed records ({})", stats.skipped_total(), by_field.join(", "))];
    lines.extend(stats.skipped_examples.iter().map(|e| format!("                 e.g. {e}")));
    lines
}

/// For a command that read `input`: the records its lenient reading skipped, on stderr.
pub(crate) fn report_skipped(input: &Input) {
    for line in input.read_log.last().map(|s| skipped_lines(&s)).unwrap_or_default() {
        eprintln!("{line}");
    }
}

/// A run over no records prints zeros that read like results: it is refused instead.
pub(crate) fn nothing_left(input: &Input, what: &str) -> anyhow::Error {
    let f = &input.filters;
    let mut flags = Vec::new();
    if let Some(v) = &f.split.volumes {
        flags.push(format!("--volume {}", v.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(",")));
    }
    if f.relative_window_us.is_some() {
        flags.push("--window".into());
    }
    if f.sample.is_some() {
        flags.push("--sample".into());
    }
    if f.node.is_some() {
        flags.push("--nodes/--node".into());
    }
    let after = if flags.is_empty() { String::new() } else { format!(" after the filters ({})", flags.join(" ")) };
    anyhow::anyhow!("{}: no {what}{after}: nothing to report", input.describe())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Replay {
        #[command(flatten)]
        ftl: FtlArgs,
    }

    /// The flags' defaults are the lab's: a bare `replay` is `ReplaySpec::default()`.
    #[test]
    fn the_flags_defaults_are_the_replay_specs() {
        let bare = Replay::parse_from(["replay"]).ftl.spec("bhbdp", "cbe", Params::new(), 1);
        assert_eq!(serde_json::to_string(&bare).unwrap(), serde_json::to_string(&ReplaySpec::default()).unwrap());
        assert_eq!(serde_json::to_string(&FtlArgs::default().spec("bhbdp", "cbe", Params::new(), 1)).unwrap(), serde_json::to_string(&bare).unwrap());
    }
}
