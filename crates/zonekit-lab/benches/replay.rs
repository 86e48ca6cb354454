//! Replay throughput, metadata only. Run: `cargo bench -p zonekit-lab --bench replay`. The
//! scaling run from 1 M to 100 M writes is `scripts/bench-replay`; figures in docs/benchmarks.md.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use zonekit_lab::block::replay::{replay, ReplaySpec};
use zonekit_trace::input::Input;

fn replay_zipf(c: &mut Criterion) {
    let writes = 2_000_000u64;
    let input = Input::generated(format!("zipf:blocks=200K,alpha=1.0,writes={writes}").parse().unwrap(), 1);
    let mut group = c.benchmark_group("replay");
    group.sample_size(10);
    group.throughput(Throughput::Elements(writes));
    for placement in ["sepbit", "bhbdp", "lifespan"] {
        let spec = ReplaySpec { placement: placement.into(), ..ReplaySpec::default() };
        group.bench_function(format!("{placement}+cbe_zipf_2M"), |b| b.iter(|| replay(&input, &spec, &mut |_| {}).unwrap().waf));
    }
    group.finish();
}

criterion_group!(benches, replay_zipf);
criterion_main!(benches);
