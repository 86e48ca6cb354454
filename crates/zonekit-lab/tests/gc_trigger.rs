//! The GC trigger of a fixed-capacity device is a setting with consequences: under
//! `free-zones` the over-provisioning (1 − utilisation) sets the write amplification, as a
//! user sizing a device expects; the garbage-proportion triggers collect at the same garbage
//! share whatever the spare space.

use zonekit_ftl::GcTrigger;
use zonekit_lab::replay::{replay, ReplaySpec};
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
