//! `zonekit experiment device-fidelity`: wires the data, the fit and the comparison together
//! and prints the summary; `zonekit_lab::device::fidelity` and its report module do the work.

use std::path::Path;

use anyhow::Result;
use zonekit_device::preset;
use zonekit_lab::device::fidelity::{compare, summarise};
use zonekit_lab::device::{conventional, conventional_report, data as device_data, fidelity_report as device_fidelity_report, fit as device_fit};
use zonekit_report::{fitted_table, TERMINAL_COLUMNS};

use crate::error::lab;

pub fn run(preset_name: &str, data: Option<&Path>, doc: Option<&Path>, out: &Path) -> Result<()> {
    let Some(p) = preset::find(preset_name) else { usage!("--preset {preset_name:?}: no such preset; valid: {}", preset::names().join(", ")) };
    let dir = data.map_or_else(device_data::default_dir, Path::to_path_buf);
    if !dir.join("zn540").is_dir() {
        usage!("--data {}: no zn540/ directory of measurements there", dir.display());
    }
    let rows = device_data::read_zn540(&dir).map_err(lab)?;
    // The fit gives fio's host time per I/O (not a device figure) for replaying fio's runs.
    let fit = device_fit::fit(&rows).map_err(lab)?;
    say!("device-fidelity: {} ZN540 measurements from {} against the {} preset's timing model", rows.len(), dir.display(), p.name);
    let started = std::time::Instant::now();
    let bar = crate::progress::Progress::bar(0, "runs").with_message("running");
    let result = compare(p.name, &p.geometry, &p.flash, &rows, fit.fio_think_ns, &mut |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    });
    bar.finish_and_clear();
    let wall = started.elapsed().as_secs_f64();
    let command = crate::out_dir::this_command();
    let files = device_fidelity_report::write(out, doc, p.name, &result, &fit, &command, wall).map_err(lab)?;
    let fit_s = summarise(result.rows.iter().filter(|c| c.m.is_fit()));
    let val_s = summarise(result.rows.iter().filter(|c| !c.m.is_fit()));
    let pct = |x: f64| format!("{:.1} %", x * 100.0);
    let rows: Vec<Vec<String>> = [("fit", &fit_s), ("validation", &val_s)]
        .iter()
        .map(|(name, s)| vec![name.to_string(), s.count.to_string(), pct(s.median_abs), pct(s.max_abs), s.within_10.to_string(), s.beyond_25.to_string()])
        .collect();
    println!();
    print!("{}", fitted_table(&["rows", "compared", "median abs error", "max abs error", "within 10 %", "beyond 25 %"], &rows, TERMINAL_COLUMNS));
    say!("\n{} runs, {} device commands in {:.1} s ({:.2} M commands/s of wall time)", result.runs, result.device_commands, wall, result.device_commands as f64 / wall / 1e6);
    println!("wrote {} files in {}{}", files.len(), out.display(), doc.map_or(String::new(), |d| format!(" and the section of {}", d.display())));
    Ok(())
}

/// `--drive conventional`: the 980 PRO's and SN540's fio runs, each drive against its fitted
/// SSD preset (`980pro`, `sn540`), or every run against the SSD preset named (`dc-7`: the
/// unfitted figures).
pub fn run_conventional(preset_name: Option<&str>, data: Option<&Path>, doc: Option<&Path>, out: &Path) -> Result<()> {
    if let Some(name) = preset_name {
        let Some(p) = zonekit_ssd::preset::find(name) else { usage!("--preset {name:?}: no such SSD preset; valid: {}", zonekit_ssd::preset::names().join(", ")) };
        if p.handles.is_some() {
            usage!("--preset {}: an FDP preset; the conventional drives' runs name no placement, compare a conventional preset ({})", p.name, conventional_names().join(", "));
        }
    }
    let dir = data.map_or_else(device_data::default_dir, Path::to_path_buf);
    for d in ["zn540", "980pro", "sn540"] {
        if !dir.join(d).is_dir() {
            usage!("--data {}: no {d}/ directory of measurements there", dir.display());
        }
    }
    let rows = device_data::read_conventional(&dir).map_err(lab)?;
    // fio's host time per I/O, from the ZN540's fit (a figure of fio over SPDK, not of a drive).
    let think_ns = device_fit::fio_think_ns(&device_data::read_zn540(&dir).map_err(lab)?).map_err(lab)?;
    let named = preset_name.map(|n| zonekit_ssd::preset::find(n).expect("checked above"));
    let preset_of = move |drive: &str| named.unwrap_or_else(|| zonekit_ssd::preset::find(drive).expect("every drive of the data has its fitted preset"));
    let which = named.map_or_else(|| "its fitted SSD preset (980pro, sn540)".to_string(), |p| format!("the {} SSD preset", p.name));
    say!("device-fidelity: {} 980 PRO and SN540 measurements from {} against {which}'s timing model", rows.len(), dir.display());
    let started = std::time::Instant::now();
    let bar = crate::progress::Progress::bar(0, "runs").with_message("running");
    let result = conventional::compare(&preset_of, &rows, think_ns, &mut |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })
    .map_err(|e| anyhow::anyhow!("the SSD model refused a run: {e}"))?;
    bar.finish_and_clear();
    let wall = started.elapsed().as_secs_f64();
    let command = crate::out_dir::this_command();
    let files = conventional_report::write(out, doc, named, &result, think_ns, &command, wall).map_err(lab)?;
    let pct = |x: f64| format!("{:.1} %", x * 100.0);
    let table: Vec<Vec<String>> = conventional_report::drive_summaries(&result)
        .iter()
        .map(|(name, s)| vec![name.clone(), s.count.to_string(), pct(s.median_abs), pct(s.max_abs), s.within_10.to_string(), s.beyond_25.to_string()])
        .collect();
    println!();
    print!("{}", fitted_table(&["rows", "compared", "median abs error", "max abs error", "within 10 %", "beyond 25 %"], &table, TERMINAL_COLUMNS));
    let not = result.rows.iter().filter(|c| c.ours.is_none()).count();
    say!("\n{} rows not compared (listed with why in the section); {} runs, {} host commands in {:.1} s", not, result.runs, result.device_commands, wall);
    println!("wrote {} files in {}{}", files.len(), out.display(), doc.map_or(String::new(), |d| format!(" and the section of {}", d.display())));
    Ok(())
}

fn conventional_names() -> Vec<&'static str> {
    zonekit_ssd::preset::PRESETS.iter().filter(|p| p.handles.is_none()).map(|p| p.name).collect()
}
