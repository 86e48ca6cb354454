//! Hot paths of the device layer. Run: `cargo bench -p zonekit-device --bench device`.
//! Results and the machine they came from: docs/benchmarks.md.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use zonekit_device::timing::{TimedDevice, TimingModel};
use zonekit_device::{preset, Geometry, Lba, MemDevice, StorageMode, ZoneBehavior, ZoneFilter, ZoneId, ZonedDevice};

fn geometry(zone_count: u32, zone_blocks: u64) -> Geometry {
    Geometry {
        block_size_bytes: 4096,
        zone_size_blocks: zone_blocks,
        zone_capacity_blocks: zone_blocks,
        zone_count,
        conventional_zone_count: 0,
        open_zones_max: Some(14),
        active_zones_max: Some(14),
    }
}

/// Appends `chunk` forever, moving to the next zone when one fills and resetting zones as the
/// device wraps around, so the benchmark never runs out of space.
struct Appender<D> {
    dev: D,
    zone: u32,
}

impl<D: ZonedDevice> Appender<D> {
    #[inline]
    fn append(&mut self, chunk: &[u8]) {
        match self.dev.append(ZoneId(self.zone), chunk) {
            Ok(lba) => {
                black_box(lba);
            }
            Err(_) => {
                self.zone = (self.zone + 1) % self.dev.geometry().zone_count;
                self.dev.reset_zone(ZoneId(self.zone)).unwrap();
                self.dev.append(ZoneId(self.zone), chunk).unwrap();
            }
        }
    }
}

fn append_data_mode(c: &mut Criterion) {
    let mut group = c.benchmark_group("append_data_mode");
    for chunk_bytes in [4096usize, 128 << 10] {
        // 8 zones of 64 MiB: large enough that zone switches and resets are rare.
        let dev = MemDevice::new(geometry(8, 16384), ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap();
        let mut a = Appender { dev, zone: 0 };
        let chunk = vec![0x5Au8; chunk_bytes];
        group.throughput(Throughput::Bytes(chunk_bytes as u64));
        group.bench_function(BenchmarkId::from_parameter(format!("{}KiB", chunk_bytes >> 10)), |b| b.iter(|| a.append(&chunk)));
        // Reference: the copy alone, into a warm preallocated 64 MiB buffer (the ceiling).
        let mut sink = vec![0u8; 64 << 20];
        let mut at = 0usize;
        group.bench_function(BenchmarkId::new("reference_memcpy", format!("{}KiB", chunk_bytes >> 10)), |b| {
            b.iter(|| {
                if at + chunk_bytes > sink.len() {
                    at = 0;
                }
                sink[at..at + chunk_bytes].copy_from_slice(&chunk);
                at += chunk_bytes;
                black_box(&sink[at - 1]);
            })
        });
    }
    group.finish();
}

fn append_metadata_only(c: &mut Criterion) {
    let mut group = c.benchmark_group("append_metadata_only");
    let dev = MemDevice::new(geometry(64, 65536), ZoneBehavior::QEMU_NVME, StorageMode::MetadataOnly).unwrap();
    let mut a = Appender { dev, zone: 0 };
    let block = vec![0u8; 4096];
    group.throughput(Throughput::Elements(1));
    group.bench_function("4KiB", |b| b.iter(|| a.append(&block)));
    // Reference: the least any zoned emulator must do per append, a bounds-checked
    // write-pointer bump with a wrap (the ceiling).
    let mut wps = vec![0u64; 64];
    let mut zone = 0usize;
    group.bench_function("reference_wp_bump", |b| {
        b.iter(|| {
            if wps[zone] == 65536 {
                zone = (zone + 1) % 64;
                wps[zone] = 0;
            }
            wps[zone] += 1;
            black_box(wps[zone])
        })
    });
    group.finish();
}

fn report_100k_zones(c: &mut Criterion) {
    let mut group = c.benchmark_group("report_zones");
    let g = Geometry { open_zones_max: None, active_zones_max: None, ..geometry(100_000, 256) };
    let mut dev = MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::MetadataOnly).unwrap();
    for z in (0..100_000).step_by(7) {
        dev.append(ZoneId(z), &[0u8; 4096]).unwrap();
        dev.close_zone(ZoneId(z)).ok();
        if z % 2 == 0 {
            dev.finish_zone(ZoneId(z)).unwrap();
        }
    }
    let mut out = Vec::with_capacity(100_000);
    group.throughput(Throughput::Elements(100_000));
    group.bench_function("all_100000", |b| {
        b.iter(|| {
            out.clear();
            dev.report_zones(Lba(0), ZoneFilter::All, usize::MAX, &mut out).unwrap();
            black_box(out.len())
        })
    });
    group.bench_function("filtered_closed_100000", |b| {
        b.iter(|| {
            out.clear();
            dev.report_zones(Lba(0), ZoneFilter::Only(zonekit_device::ZoneState::Closed), usize::MAX, &mut out).unwrap();
            black_box(out.len())
        })
    });
    group.finish();
}

fn timing_model(c: &mut Criterion) {
    let mut group = c.benchmark_group("timing_model");
    let p = preset::find("zn540").unwrap();
    let mut model = TimingModel::new(p.flash, &p.geometry).unwrap();
    let zone_bytes = p.geometry.zone_capacity_bytes();
    let mut offset = 0u64;
    let mut now = 0u64;
    group.throughput(Throughput::Elements(1));
    group.bench_function("write_4KiB", |b| {
        b.iter(|| {
            now = model.write(now, 3, offset, 4096);
            offset = (offset + 4096) % zone_bytes;
            if offset == 0 {
                // A full zone is reset before it is written again, as on the device.
                now = model.reset(now, 3);
            }
        })
    });
    let mut i = 0u64;
    group.bench_function("read_4KiB", |b| {
        b.iter(|| {
            i = i.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            black_box(model.read(now, 3, (i >> 20) % (zone_bytes / 4096) * 4096, 4096))
        })
    });
    // The whole timed-device stack: metadata-only emulator plus timing, per 4 KiB append.
    let dev = MemDevice::new(p.geometry, p.behavior, StorageMode::MetadataOnly).unwrap();
    let mut a = Appender { dev: TimedDevice::new(dev, p.flash, 32).unwrap(), zone: 0 };
    let block = vec![0u8; 4096];
    group.bench_function("timed_append_4KiB", |b| b.iter(|| a.append(&block)));
    group.finish();
}

criterion_group!(benches, append_data_mode, append_metadata_only, report_100k_zones, timing_model);
criterion_main!(benches);
