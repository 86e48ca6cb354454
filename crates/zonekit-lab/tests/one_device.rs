//! A comparison compares policies, not devices: a device sized from the workload is the same
//! size whatever the policy's class count (issue 10, item 6).

use zonekit_ftl::placement;
use zonekit_lab::block::replay::{replay, ReplaySpec};
use zonekit_trace::input::Input;

fn zones(placement: &str, preset: &str, unbounded: bool) -> u32 {
    let input = Input::generated("zipf:blocks=20000,alpha=0.9,writes=60000".parse().unwrap(), 3);
    let mut spec = ReplaySpec { placement: placement.into(), victim: "greedy".into(), preset: preset.into(), utilization: Some(0.8), ..ReplaySpec::default() };
    if unbounded {
        spec.config.capacity = zonekit_ftl::CapacityMode::Unbounded;
    }
    replay(&input, &spec, &mut |_| {}).unwrap_or_else(|e| panic!("{placement} on {preset}: {e}")).zones
}

#[test]
fn every_placement_gets_the_same_device() {
    for preset in ["tiny", "femu-zns"] {
        for unbounded in [false, true] {
            let sizes: Vec<(&str, u32)> = placement::compared().map(|p| p.name).chain(["nosep", "sepgc"]).map(|p| (p, zones(p, preset, unbounded))).collect();
            assert!(sizes.iter().all(|(_, z)| *z == sizes[0].1), "{preset}, unbounded {unbounded}: {sizes:?}");
        }
    }
}

#[test]
fn a_placement_with_more_classes_than_the_reserve_is_refused_not_given_a_bigger_device() {
    // nvmevirt-zns sets no open-zone limit: a sized device reserves room for 16 open zones.
    let input = Input::generated("zipf:blocks=20000,alpha=0.9,writes=60000".parse().unwrap(), 3);
    let spec = ReplaySpec {
        placement: "lifespan".into(),
        params: [("classes".to_string(), "20".to_string())].into(),
        preset: "nvmevirt-zns".into(),
        utilization: Some(0.8),
        ..ReplaySpec::default()
    };
    let e = replay(&input, &spec, &mut |_| {}).unwrap_err().to_string();
    assert!(e.contains("20 open zones") && e.contains("16"), "{e}");
}
