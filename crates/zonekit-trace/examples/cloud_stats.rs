//! Prints the chapter-2 statistics of a generated cloud node: `cargo run --release -p
//! zonekit-trace --example cloud_stats -- 'cloud:volumes=64,blocks=1M,writes=8M'`.
use zonekit_trace::analyze::analyze;
use zonekit_trace::blocks::{SplitOptions, Splitter};
use zonekit_trace::synth::Workload;
use zonekit_trace::{BlockIo, Result};

fn main() {
    let spec = std::env::args().nth(1).unwrap_or_else(|| "cloud:volumes=64,blocks=1M,writes=8M".into());
    let w: Workload = spec.parse().unwrap();
    let source = move || -> Result<Box<dyn Iterator<Item = Result<BlockIo>>>> { Ok(Box::new(Splitter::new(w.records(1).unwrap().map(Ok), SplitOptions::default())?)) };
    let a = analyze(&source, 4096).unwrap();
    println!(
        "writes {} distinct {} written-once {:.3} infinite {:.3} zipf {:?} top {:?}",
        a.block_writes, a.distinct_blocks, a.written_once_share, a.infinite_lifetime_share, a.zipf_exponent, a.top_share_of_writes
    );
    for h in a.hourly_thresholds.iter().step_by(3) {
        println!("hour {:>3} writes {:>8} P20/40/60/80 {:?}", h.hour, h.writes, h.bilt_p20_p40_p60_p80);
    }
}
