//! `zonekit experiment interfaces`: one placement, every interface. Each input is replayed with
//! each placement on ZNS (host GC), on FDP SSDs of several handle counts and on a conventional
//! SSD, all of the same raw capacity (the ZNS device's zones = the SSD's reclaim units,
//! [`crate::interface`]), reporting host, device and total WAF, GC traffic and — when timed —
//! the device's write latency p99. Inputs are staged once and shared by every run.

use std::path::Path;
use std::sync::Mutex;

use serde::Serialize;
use zonekit_report::{bar_chart, csv, text_table, Spread};

use crate::error::{LabError, Result};
use crate::interface::Interface;
use crate::replay::{replay_staged, ReplaySpec, TempDir};
use crate::stage::stage;
use crate::sweep::SweepInput;

/// What the experiment runs.
pub struct InterfacesSpec {
    pub inputs: Vec<SweepInput>,
    pub placements: Vec<String>,
    pub interfaces: Vec<Interface>,
    /// Every other setting (device preset, GC trigger and victim, timing); each run takes its
    /// placement, interface and its input's utilisation.
    pub base: ReplaySpec,
    pub threads: usize,
}

/// One run's figures.
#[derive(Clone, Debug, Serialize)]
pub struct InterfaceRow {
    pub input: String,
    pub placement: String,
    pub interface: String,
    pub host_waf: f64,
    pub device_waf: f64,
    pub waf: f64,
    pub gc_gib: f64,
    /// Zones (ZNS) or reclaim units (SSD) reclaimed.
    pub gc_count: u64,
    pub write_latency_us_p99: Option<f64>,
    pub device_time_s: Option<f64>,
}

/// The columns of `interfaces.csv`.
pub const HEADER: [&str; 10] = ["input", "placement", "interface", "host_waf", "device_waf", "waf", "gc_gib", "gc_count", "write_latency_us_p99", "device_time_s"];

impl InterfaceRow {
    fn cells(&self) -> Vec<String> {
        let opt = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
        vec![
            self.input.clone(),
            self.placement.clone(),
            self.interface.clone(),
            format!("{:.4}", self.host_waf),
            format!("{:.4}", self.device_waf),
            format!("{:.4}", self.waf),
            format!("{:.4}", self.gc_gib),
            self.gc_count.to_string(),
            opt(self.write_latency_us_p99, 0),
            opt(self.device_time_s, 3),
        ]
    }
}

/// Runs every input × placement × interface; `on_done` is called as runs finish (with the
/// count of runs). Rows come back in grid order.
pub fn run(spec: &InterfacesSpec, on_start: &dyn Fn(usize), on_done: &(dyn Fn() + Sync)) -> Result<Vec<InterfaceRow>> {
    if spec.inputs.is_empty() || spec.placements.is_empty() || spec.interfaces.is_empty() {
        return Err(LabError::Usage("the interfaces experiment needs at least one input, placement and interface".into()));
    }
    let mut jobs = Vec::new();
    for (i, input) in spec.inputs.iter().enumerate() {
        for p in &spec.placements {
            for &interface in &spec.interfaces {
                let mut s = ReplaySpec { placement: p.clone(), interface, ..spec.base.clone() };
                if input.utilization.is_some() {
                    s.utilization = input.utilization;
                }
                s.validate()?;
                jobs.push((i, s));
            }
        }
    }
    let temp = TempDir::new()?;
    let staged = spec.inputs.iter().map(|i| stage(&i.input, temp.path())).collect::<Result<Vec<_>>>()?;
    on_start(jobs.len());
    let rows: Mutex<Vec<Option<Result<InterfaceRow>>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    crate::parallel::for_each(jobs.len(), spec.threads, |j| {
        let (i, s) = &jobs[j];
        let row = replay_staged(&staged[*i], s, temp.path(), &mut |_| {}).map(|r| InterfaceRow {
            input: spec.inputs[*i].label.clone(),
            placement: r.placement.clone(),
            interface: r.interface.clone(),
            host_waf: r.host_waf,
            device_waf: r.device_waf,
            waf: r.waf,
            gc_gib: r.gc_gib,
            gc_count: r.gc_count,
            write_latency_us_p99: r.write_latency_us_p99,
            device_time_s: r.device_time_s,
        });
        rows.lock().unwrap()[j] = Some(row);
        on_done();
    });
    rows.into_inner().unwrap().into_iter().map(|r| r.expect("every job ran")).collect()
}

/// Writes `interfaces.csv`, `summary.csv`, `waf.svg` and (timed) `write_p99.svg` into `out`;
/// returns the summary as text: per placement and interface, the mean over the inputs of the
/// total WAF (with its range) and of the write latency p99, and each interface's WAF against
/// ZNS's for the same placement.
pub fn write(out: &Path, placements: &[String], interfaces: &[String], rows: &[InterfaceRow]) -> Result<String> {
    std::fs::create_dir_all(out).map_err(LabError::io(out))?;
    let path = out.join("interfaces.csv");
    std::fs::write(&path, csv(&HEADER, &rows.iter().map(InterfaceRow::cells).collect::<Vec<_>>())).map_err(LabError::io(&path))?;
    fn of<'a>(rows: &'a [InterfaceRow], p: &'a str, i: &'a str) -> impl Iterator<Item = &'a InterfaceRow> {
        rows.iter().filter(move |r| r.placement == p && r.interface == i)
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let mut table = Vec::new();
    let mut waf_bars = Vec::new();
    let mut p99_bars = Vec::new();
    for p in placements {
        let zns: Vec<f64> = of(rows, p, "zns").map(|r| r.waf).collect();
        for i in interfaces {
            let waf: Vec<f64> = of(rows, p, i).map(|r| r.waf).collect();
            let host: Vec<f64> = of(rows, p, i).map(|r| r.host_waf).collect();
            let device: Vec<f64> = of(rows, p, i).map(|r| r.device_waf).collect();
            let p99: Vec<f64> = of(rows, p, i).filter_map(|r| r.write_latency_us_p99).collect();
            let range = Spread::of(waf.clone()).map_or("-".into(), |s| format!("{:.3}–{:.3}", s.min, s.max));
            let vs_zns = if zns.is_empty() || i == "zns" { "-".to_string() } else { format!("{:+.1} %", 100.0 * (mean(&waf) / mean(&zns) - 1.0)) };
            table.push(vec![
                p.clone(),
                i.clone(),
                format!("{:.3}", mean(&host)),
                format!("{:.3}", mean(&device)),
                format!("{:.3}", mean(&waf)),
                range,
                vs_zns,
                if p99.is_empty() { "-".into() } else { format!("{:.0}", mean(&p99)) },
            ]);
            waf_bars.push((format!("{p} {i}"), mean(&waf)));
            if !p99.is_empty() {
                p99_bars.push((format!("{p} {i}"), mean(&p99) / 1e3));
            }
        }
    }
    let header = ["placement", "interface", "host WAF", "device WAF", "total WAF", "total WAF min–max", "total vs ZNS", "write p99 µs"];
    let path = out.join("summary.csv");
    std::fs::write(&path, csv(&header, &table)).map_err(LabError::io(&path))?;
    let path = out.join("waf.svg");
    std::fs::write(&path, bar_chart("Total WAF (host × device) by placement and interface, mean over inputs", "WAF", &waf_bars)).map_err(LabError::io(&path))?;
    if !p99_bars.is_empty() {
        let path = out.join("write_p99.svg");
        std::fs::write(&path, bar_chart("Device write latency p99 by placement and interface, mean over inputs", "ms", &p99_bars)).map_err(LabError::io(&path))?;
    }
    Ok(text_table(&header, &table))
}

#[cfg(test)]
mod tests {
    use super::*;
    use zonekit_ftl::GcTrigger;
    use zonekit_trace::input::Input;

    fn small_spec(interfaces: Vec<Interface>) -> InterfacesSpec {
        let w: zonekit_trace::synth::Workload = "hotcold:blocks=60000,writes=600000,hot=0.1,hot-writes=0.9".parse().unwrap();
        InterfacesSpec {
            inputs: vec![SweepInput { label: "hotcold".into(), input: Input::generated(w, 1), utilization: Some(0.8) }],
            placements: vec!["normal".into(), "sepbit".into()],
            interfaces,
            base: ReplaySpec { preset: "tiny".into(), config: zonekit_ftl::FtlConfig { trigger: GcTrigger::FreeZones, ..Default::default() }, ..ReplaySpec::default() },
            threads: 2,
        }
    }

    #[test]
    fn every_interface_runs_at_the_same_raw_capacity_and_separation_pays_on_fdp() {
        let spec = small_spec(vec![Interface::Zns, Interface::Fdp { handles: 2, ruh_type: zonekit_ssd::RuhType::InitiallyIsolated }, Interface::Conventional]);
        let rows = run(&spec, &|n| assert_eq!(n, 6), &|| {}).unwrap();
        assert_eq!(rows.len(), 6);
        let get = |p: &str, i: &str| rows.iter().find(|r| r.placement == p && r.interface == i).unwrap();
        for r in &rows {
            assert!((r.waf - r.host_waf * r.device_waf).abs() < 1e-9, "{r:?}");
            if r.interface == "zns" {
                assert_eq!(r.device_waf, 1.0);
            } else {
                assert_eq!(r.host_waf, 1.0);
            }
        }
        // A conventional SSD ignores the placement: both placements give one WAF.
        assert_eq!(get("normal", "conventional").waf, get("sepbit", "conventional").waf);
        // SepBIT's two user classes on two handles beat no separation on the same device.
        assert!(get("sepbit", "fdp:2").waf < get("sepbit", "conventional").waf, "{rows:?}");
        let dir = TempDir::new().unwrap();
        let names: Vec<String> = spec.interfaces.iter().map(Interface::name).collect();
        let text = write(dir.path(), &spec.placements, &names, &rows).unwrap();
        assert!(text.contains("fdp:2") && dir.path().join("waf.svg").exists() && dir.path().join("interfaces.csv").exists());
    }
}
