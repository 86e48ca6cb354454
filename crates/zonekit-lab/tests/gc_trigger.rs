//! The GC trigger of a fixed-capacity device is a setting with consequences: under
//! `free-zones` the over-provisioning (1 − utilisation) sets the write amplification, as a
//! user sizing a device expects; the garbage-proportion triggers collect at the same garbage
//! share whatever the spare space.

use zonekit_ftl::GcTrigger;
use zonekit_lab::block::replay::{replay, ReplaySpec};
use zonekit_trace::input::Input;

fn waf(trigger: GcTrigger, utilization: f64) -> f64 {
    let input = Input::generated("zipf:blocks=40000,alpha=0.8,writes=600000".parse().unwrap(), 5);
    let mut spec = ReplaySpec { placement: "sepgc".into(), victim: "greedy".into(), preset: "tiny".into(), utilization: Some(utilization), ..ReplaySpec::default() };
    spec.config.trigger = trigger;
    let r = replay(&input, &spec, &mut |_| {}).unwrap();
    assert_eq!(r.gc_trigger, trigger.name());
    r.waf
}

#[test]
fn under_free_zones_waf_falls_with_utilisation() {
    let wafs: Vec<f64> = [0.9, 0.75, 0.6].iter().map(|&u| waf(GcTrigger::FreeZones, u)).collect();
    assert!(wafs[0] > wafs[1] && wafs[1] > wafs[2], "WAF at 90 / 75 / 60 % utilisation: {wafs:?}");
    // And it is a real difference, not noise: over-provisioning from 10 % to 40 % (the sized
    // device also keeps 2 × 8 + 2 zones for open zones and GC, which softens the 90 % end).
    assert!(wafs[0] > 1.2 * wafs[2], "{wafs:?}");
}

#[test]
fn the_garbage_proportion_triggers_ignore_spare_space() {
    for trigger in [GcTrigger::GpAll, GcTrigger::GpSealed] {
        let (tight, roomy) = (waf(trigger, 0.9), waf(trigger, 0.6));
        assert!((tight - roomy).abs() < 0.02 * tight, "{}: WAF {tight} at 90 %, {roomy} at 60 %", trigger.name());
    }
}

fn zipf(blocks: u64, writes: u64) -> Input {
    Input::generated(format!("zipf:blocks={blocks},alpha=0.9,writes={writes}").parse().unwrap(), 1)
}

fn on(preset: &str, trigger: GcTrigger) -> ReplaySpec {
    let mut spec = ReplaySpec { placement: "bhbdp".into(), victim: "greedy".into(), preset: preset.into(), ..ReplaySpec::default() };
    spec.config.trigger = trigger;
    spec
}

/// `gp-all` fires while most garbage sits in open zones; before a garbage-triggered GC was held
/// to zones at or over the threshold, greedy then copied zones holding a block or two of
/// garbage over and over: WAF 10.8 here (999 on the README's 100K-block Zipf on femu-zns), the
/// reclaimed zones' median garbage proportion 0.00.
#[test]
fn a_garbage_triggered_gc_takes_no_zone_under_the_threshold() {
    let r = replay(&zipf(40_000, 400_000), &on("tiny", GcTrigger::GpAll), &mut |_| {}).unwrap();
    let [_, median, _] = r.reclaimed_gp_q1_median_q3.expect("GC ran");
    assert!(r.waf < 4.0 && median >= 0.15, "WAF {} with the reclaimed zones' median GP {median}", r.waf);
}

#[test]
fn free_zones_is_the_default_trigger() {
    assert_eq!(ReplaySpec::default().config.trigger, GcTrigger::FreeZones);
    assert_eq!(zonekit_ftl::FtlConfig::default().trigger, GcTrigger::FreeZones);
}

#[test]
fn an_ssd_refuses_a_garbage_trigger() {
    let interface = zonekit_lab::harness::interface::Interface::parse("fdp:4").unwrap();
    for trigger in [GcTrigger::GpAll, GcTrigger::GpSealed] {
        let spec = ReplaySpec { interface, ..on("tiny", trigger) };
        let e = spec.validate().expect_err("an SSD collects by free space");
        assert!(e.is_usage() && e.to_string().contains(&format!("--gc-trigger {}", trigger.name())), "{e}");
    }
    ReplaySpec { interface, ..on("tiny", GcTrigger::FreeZones) }.validate().unwrap();
}

/// The number after `flag` in `text`.
fn number_after(text: &str, flag: &str) -> u64 {
    let rest = &text[text.find(flag).unwrap_or_else(|| panic!("no {flag} in {text:?}")) + flag.len()..];
    rest.trim_start().split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

/// A working set too small for femu-zns' reserve of zones: FDP is refused with a zone size that
/// works, and that zone size does work.
#[test]
fn the_advice_of_a_refused_ssd_spare_works() {
    let interface = zonekit_lab::harness::interface::Interface::parse("fdp:4").unwrap();
    let spec = ReplaySpec { interface, ..on("femu-zns", GcTrigger::FreeZones) };
    let e = replay(&zipf(100_000, 300_000), &spec, &mut |_| {}).expect_err("a spare over 1");
    let mib = number_after(&e.to_string(), "--zone-mib");
    let r = replay(&zipf(100_000, 300_000), &ReplaySpec { zone_mib: Some(mib), ..spec }, &mut |_| {}).unwrap();
    assert!(r.ssd.unwrap().spare < 1.0);
}

/// A report says when its figures are degenerate, and the setting it names mends it.
#[test]
fn degenerate_runs_warn_and_the_advice_mends_them() {
    // Fewer block writes (20 MiB) than the device holds: it never fills, no GC.
    let r = replay(&zipf(40_000, 5_000), &on("tiny", GcTrigger::FreeZones), &mut |_| {}).unwrap();
    assert!(r.gc_count == 0 && r.warnings.iter().any(|w| w.starts_with("no GC ran")), "{:?}", r.warnings);
    // 100K blocks on femu-zns: 16 reserved zones of 32 MiB swamp a 357 MiB working set.
    let spec = on("femu-zns", GcTrigger::FreeZones);
    let r = replay(&zipf(100_000, 1_000_000), &spec, &mut |_| {}).unwrap();
    let w = r.warnings.iter().find(|w| w.contains("--utilization asks")).unwrap_or_else(|| panic!("{:?}", r.warnings));
    let mib = number_after(w, "--zone-mib");
    let r = replay(&zipf(100_000, 1_000_000), &ReplaySpec { zone_mib: Some(mib), ..spec }, &mut |_| {}).unwrap();
    assert!(r.warnings.is_empty(), "at --zone-mib {mib}: {:?}", r.warnings);
}

/// A GC threshold other than the default changes the run or is refused: under free-zones only
/// CBE victims read it, and an SSD's device GC never does.
#[test]
fn a_threshold_nothing_reads_is_refused() {
    let with = |victim: &str, trigger: GcTrigger, interface: &str| {
        let mut spec = ReplaySpec { victim: victim.into(), interface: zonekit_lab::harness::interface::Interface::parse(interface).unwrap(), ..on("tiny", trigger) };
        spec.config.gc_threshold = 0.3;
        spec.validate()
    };
    let e = with("greedy", GcTrigger::FreeZones, "zns").expect_err("greedy under free-zones reads no threshold");
    assert!(e.is_usage() && e.to_string().contains("--gc-threshold 0.3"), "{e}");
    with("cbe", GcTrigger::FreeZones, "zns").unwrap();
    with("greedy", GcTrigger::GpSealed, "zns").unwrap();
    assert!(with("cbe", GcTrigger::FreeZones, "fdp:4").is_err(), "an SSD's GC reads no threshold");
    // Where it is read, it changes the run.
    let run = |t: f64| {
        let mut spec = on("tiny", GcTrigger::GpSealed);
        spec.config.gc_threshold = t;
        replay(&zipf(20_000, 200_000), &spec, &mut |_| {}).unwrap().waf
    };
    assert_ne!(run(0.15), run(0.3), "under gp-sealed the threshold is read");
}
