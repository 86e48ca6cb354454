//! The multi-tenant cloud-node generator reproduces the workload statistics seed 000 reports
//! for cloud block storage nodes (chapter 2): Zipf-like write counts, more than 40 % of blocks
//! written once, 10–20 % of writes never overwritten, lifetime thresholds that drift by hour.

use zonekit_trace::analyze::analyze;
use zonekit_trace::blocks::{SplitOptions, Splitter};
use zonekit_trace::synth::Workload;
use zonekit_trace::{BlockIo, Result};

#[test]
fn generated_node_has_the_thesis_workload_statistics() {
    for seed in [1u64, 2] {
        let w: Workload = "cloud:volumes=48,blocks=512K,writes=4M,hours=24".parse().unwrap();
        let source = move || -> Result<Box<dyn Iterator<Item = Result<BlockIo>>>> { Ok(Box::new(Splitter::new(w.records(seed).unwrap().map(Ok), SplitOptions::default())?)) };
        let a = analyze(&source, 4096).unwrap();
        let ctx = format!("seed {seed}");
        assert!(a.written_once_share > 0.40, "{ctx}: written once {}", a.written_once_share);
        assert!((0.10..=0.20).contains(&a.infinite_lifetime_share), "{ctx}: infinite {}", a.infinite_lifetime_share);
        let alpha = a.zipf_exponent.unwrap();
        assert!((0.3..1.2).contains(&alpha), "{ctx}: zipf exponent {alpha}");
        let top1 = a.top_share_of_writes.iter().find(|t| t.0 == 1.0).unwrap().1;
        assert!(top1 > 0.2, "{ctx}: the top 1 % of blocks get {top1} of writes");
        assert!(a.span_hours > 23.0, "{ctx}: span {}", a.span_hours);
        // Thresholds drift: the hourly P60 moves by at least 1.5x over the day.
        let p60: Vec<u64> = a.hourly_thresholds.iter().filter(|h| h.writes > 10_000).map(|h| h.bilt_p20_p40_p60_p80[2]).collect();
        let (lo, hi) = (*p60.iter().min().unwrap(), *p60.iter().max().unwrap());
        assert!(hi as f64 > 1.5 * lo as f64, "{ctx}: hourly P60 only ranges {lo}..{hi}");
        assert!(a.state_bytes_per_block <= 16.0, "{ctx}: {} bytes per block", a.state_bytes_per_block);
    }
}
