//! The zn540 preset against the ZN540's published measurements: the fit reproduces the
//! shipped figures, and the fit rows' median error stays within the goal (computed
//! from a run of every fit row's experiment, not written down).

use zonekit_device::preset;
use zonekit_lab::device::data::{default_dir, read_zn540};
use zonekit_lab::device::fidelity::{compare, summarise};
use zonekit_lab::device::fidelity_report::GOAL_MEDIAN;
use zonekit_lab::device::fit::fit;

#[test]
fn the_shipped_zn540_preset_is_what_the_fit_gives() {
    let rows = read_zn540(&default_dir()).unwrap();
    let f = fit(&rows).unwrap();
    assert_eq!(f.flash, preset::find("zn540").unwrap().flash, "rerun `zonekit device fit` and paste its config into preset.rs");
    // The fit reads fit rows only: dropping every validation row changes nothing.
    let fit_only: Vec<_> = rows.iter().filter(|r| r.is_fit()).cloned().collect();
    assert_eq!(fit(&fit_only).unwrap().flash, f.flash);
}

#[test]
fn the_fit_rows_median_error_is_within_the_goal() {
    let rows: Vec<_> = read_zn540(&default_dir()).unwrap().into_iter().filter(|r| r.is_fit()).collect();
    let f = fit(&rows).unwrap();
    let p = preset::find("zn540").unwrap();
    let result = compare(p.name, &p.geometry, &p.flash, &rows, f.fio_think_ns, &mut |_, _| {});
    let s = summarise(result.rows.iter());
    assert!(s.count > 900, "most fit rows are compared: {}", s.count);
    assert!(s.median_abs <= GOAL_MEDIAN, "median |error| {:.3} over {} fit rows", s.median_abs, s.count);
}
