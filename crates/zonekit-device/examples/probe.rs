use zonekit_device::bench::{run, BenchSpec, Job, Rw};
use zonekit_device::preset;
fn main() {
    let p = preset::find("zn540").unwrap();
    let mut cases: Vec<(String, BenchSpec)> = Vec::new();
    let t = 390;
    for z in [1, 2, 4, 8, 14] {
        for bs in [4096u64, 8192, 16384, 32768, 131072] {
            cases.push((format!("write bs{bs} z{z}"), BenchSpec { job: Job { rw: Rw::Write, bs_bytes: bs, zones: z, think_ns: t, ..Job::default() }, ops: 30000, ramp_ops: 3000, ..BenchSpec::default() }));
        }
    }
    for qd in [1, 2, 4, 8, 64] {
        for bs in [4096u64, 8192, 16384] {
            cases.push((format!("append bs{bs} qd{qd}"), BenchSpec { job: Job { rw: Rw::Append, bs_bytes: bs, qd, think_ns: t, ..Job::default() }, ops: 30000, ramp_ops: 3000, ..BenchSpec::default() }));
        }
    }
    for qd in [1, 4, 16, 32, 64, 128, 256] {
        for bs in [4096u64, 16384] {
            cases.push((format!("randread bs{bs} qd{qd}"), BenchSpec { job: Job { rw: Rw::RandRead, bs_bytes: bs, qd, think_ns: t, ..Job::default() }, ops: 30000, ramp_ops: 3000, ..BenchSpec::default() }));
        }
    }
    for (rw, fill) in [(Rw::Reset, 0u64), (Rw::Reset, 4096), (Rw::Reset, 17232 * 4096), (Rw::Reset, 275712 * 4096), (Rw::Finish, 0), (Rw::Finish, 4096), (Rw::Finish, 137856 * 4096), (Rw::Finish, 275711 * 4096), (Rw::Open, 0), (Rw::Close, 275711 * 4096)] {
        cases.push((format!("{} fill{}", rw.name(), fill / 4096), BenchSpec { job: Job { rw, fill_bytes: fill, ..Job::default() }, ops: 20, ..BenchSpec::default() }));
    }
    let start = std::time::Instant::now();
    let mut cmds = 0;
    for (name, spec) in &cases {
        let r = run(&p.geometry, &p.flash, spec).unwrap();
        cmds += r.device_commands;
        let j = &r.job;
        println!("{name:<24} kiops {:>8.1} MB/s {:>7.0} mean {:>9.1} p50 {:>9.1} p99 {:>9.1} p999 {:>9.1} us", j.iops / 1e3, j.bytes_per_sec / 1e6, j.lat_ns_mean / 1e3, j.lat_ns_p50 as f64 / 1e3, j.lat_ns_p99 as f64 / 1e3, j.lat_ns_p999 as f64 / 1e3);
    }
    eprintln!("{cmds} commands in {:?}", start.elapsed());
}
