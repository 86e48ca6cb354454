//! Our unbounded-log replay against the SepBIT authors' simulator (fallfish/sepbit,
//! `trace_replay/`): on the same trace, with the same GC (15 % garbage in sealed zones, one zone
//! of GP ≥ 15 % reclaimed by their CostBenefit) and zone size, each placement's WAF must be
//! within 5 % of what their simulator printed. When this was written NoSep, SepGC and SepBIT
//! matched it to all six printed digits and WARCIP was 0.08 % off (two zones with exactly the
//! same cost-benefit score, which the simulator orders by its hash map of segment ids and we
//! by zone index). `scripts/sepbit-compare` runs both at scale.

use zonekit_ftl::{CapacityMode, FtlConfig};
use zonekit_lab::block::replay::{replay, ReplaySpec};
use zonekit_lab::LabError;
use zonekit_trace::input::Input;

/// The trace: `zonekit trace gen 'zipf:blocks=20000,alpha=1.0,writes=400000' -o small.csv`
/// (seed 1) writes exactly this workload as an Alibaba CSV.
const WORKLOAD: &str = "zipf:blocks=20000,alpha=1.0,writes=400000";

/// The `segment WA` their simulator printed for `small.csv` (Java 17, fallfish/sepbit at
/// 1e4b664, `trace_replay` built with `mvn package`), run as
///
/// ```text
/// echo "0 20000 82000000" > prop.txt; echo $PWD/small.csv > list.txt
/// mkdir -p jtmp/segments jtmp/indexmap jtmp/ondiskfifo
/// java -cp trace_replay/target/classes:$(cat cp.txt) gcsimulator.Simulator --path list.txt \
///   --outputPrefix jtmp/ --setSeparateMethod METHOD --selectionAlgorithm CostBenefit \
///   --setSystemGarbageProportionThreshold 0.15 --setSegmentSize 1048576 --setPickSegAmount 1 \
///   --setNumOpenSegments 6 --propertyPath prop.txt --printGCInfo 0 --printSegmentInSummary 0
/// ```
///
/// (cp.txt from `mvn dependency:build-classpath`), paired with our placement run as
/// `zonekit replay small.csv --unbounded --victim cb-sepbit --zone-mib 1 --placement P`; or all of
/// it: `scripts/sepbit-compare --zone-mib 1 'zipf:blocks=20000,alpha=1.0,writes=400000'`.
const JAVA: [(&str, &str, f64); 4] = [
    ("NoSep", "nosep", 4.619638),
    ("SepGC", "sepgc", 2.739928),
    ("SepBIT", "sepbit6", 2.229070),
    // Six open segments: GC plus five user clusters.
    ("WARCIP", "warcip", 2.587603),
];

fn spec(placement: &str) -> ReplaySpec {
    let mut spec = ReplaySpec {
        placement: placement.into(),
        victim: "cb-sepbit".into(),
        config: FtlConfig { capacity: CapacityMode::Unbounded, ..FtlConfig::default() },
        utilization: None,
        zone_mib: Some(1),
        ..ReplaySpec::default()
    };
    if placement == "warcip" {
        spec.params.insert("clusters".into(), "5".into());
    }
    spec
}

#[test]
fn waf_is_within_five_percent_of_the_sepbit_simulator() {
    let input = Input::generated(WORKLOAD.parse().unwrap(), 1);
    let mut rows = Vec::new();
    for (java_name, ours, java_waf) in JAVA {
        let r = replay(&input, &spec(ours), &mut |_| {}).unwrap_or_else(|e| panic!("{ours}: {e}"));
        assert_eq!(r.zone_mib, 1.0);
        rows.push(format!("{java_name}: java {java_waf:.4}, {ours} {:.4} ({:+.2} %)", r.waf, (r.waf / java_waf - 1.0) * 100.0));
        assert!((r.waf / java_waf - 1.0).abs() < 0.05, "{}", rows.join("\n"));
    }
    eprintln!("{}", rows.join("\n"));
}

#[test]
fn zone_sizes_that_are_not_a_power_of_two_of_blocks_are_refused() {
    for mib in [0, 3, 1 << 20, u64::MAX] {
        let e = ReplaySpec { zone_mib: Some(mib), ..spec("sepgc") }.validate().unwrap_err();
        assert!(matches!(&e, LabError::Usage(m) if m.contains("power of two")), "{mib} MiB: {e}");
    }
    let on_a_device = ReplaySpec { zone_mib: Some(1), device: Some("/dev/null".into()), ..spec("sepgc") };
    assert!(on_a_device.validate().unwrap_err().to_string().contains("has its own zones"));
    assert!(ReplaySpec { zone_mib: Some(64), ..spec("sepgc") }.settings_key().contains("zone_mib=64"));
}
