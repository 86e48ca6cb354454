//! Seed 000's nodes as generated (`zonekit_lab::block::cbs`): each has Table 2.1's volumes, bytes
//! written and working set, and the chapter-2 statistics (§2.1.3–2.1.4): more than 40 % of
//! blocks written once, 10–20 % of writes never overwritten, the top 1 % of blocks written
//! fewer than 100 times a day.

use zonekit_lab::block::cbs::{CbsNode, TABLE_2_1};
use zonekit_trace::analyze::analyze;
use zonekit_trace::blocks::{SplitOptions, Splitter};
use zonekit_trace::{BlockIo, Result};

#[test]
fn a_scaled_node_has_the_thesis_statistics() {
    let scale = 0.02;
    for node in [1, 8] {
        let n = CbsNode::find(node).unwrap();
        let w = n.workload(scale).unwrap();
        let seed = n.seed();
        let source = || -> Result<Box<dyn Iterator<Item = Result<BlockIo>>>> { Ok(Box::new(Splitter::new(w.records(seed).unwrap().map(Ok), SplitOptions::default())?)) };
        let a = analyze(&source, 4096).unwrap();
        let ctx = format!("node {node} at {scale}: {w}");
        let gib = (1u64 << 30) as f64;
        let wss = a.wss_bytes as f64 / gib;
        assert!((wss / (n.wss_gib * scale) - 1.0).abs() < 0.01, "{ctx}: WSS {wss} GiB");
        let written = a.bytes_written as f64 / gib;
        assert!((written / (n.written_gib * scale) - 1.0).abs() < 0.01, "{ctx}: {written} GiB written");
        assert_eq!(a.volumes, n.volumes as u64, "{ctx}");
        assert!(a.written_once_share > 0.40, "{ctx}: written once {}", a.written_once_share);
        assert!((0.10..=0.21).contains(&a.infinite_lifetime_share), "{ctx}: infinite {}", a.infinite_lifetime_share);
        assert!((135.0..160.0).contains(&a.span_hours), "{ctx}: span {} h", a.span_hours);
        // The top 0.01 % (> 1,500 writes a day in the thesis) is a full-size property, measured
        // in docs/results/seed-000.md; at this scale every volume's one burst block dilutes it.
        let per_day = |top: f64| a.top_writes_per_day.iter().find(|t| t.0 == top).unwrap().1;
        assert!(per_day(1.0) < 100.0, "{ctx}: top 1 % {} a day", per_day(1.0));
    }
}

#[test]
fn table_2_1_is_the_thesis_table() {
    assert_eq!(TABLE_2_1.len(), 10);
    let written: f64 = TABLE_2_1.iter().map(|n| n.written_gib).sum();
    assert!((written - 4389.71).abs() < 0.01, "{written}");
    assert!(TABLE_2_1.iter().all(|n| (255..=293).contains(&n.volumes) && (57.0..65.0).contains(&n.wss_gib)));
}
