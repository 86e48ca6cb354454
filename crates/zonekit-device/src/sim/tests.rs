use super::*;

fn geometry() -> Geometry {
    Geometry { block_size_bytes: 512, zone_size_blocks: 16, zone_capacity_blocks: 16, zone_count: 5, conventional_zone_count: 1, open_zones_max: None, active_zones_max: None }
}

fn block(tag: u64) -> Vec<u8> {
    let mut b = vec![0u8; 512];
    for chunk in b.chunks_mut(8) {
        chunk.copy_from_slice(&tag.to_le_bytes());
    }
    b
}

fn tag_of(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().unwrap())
}

/// Random writes, appends, flushes and resets, a crash at a seeded operation, and the
/// post-crash state checked against the model of the module doc.
fn one_run(seed: u64, coverage: &mut Coverage) {
    let g = geometry();
    let mut rng = Rng::new(seed);
    let sim = SimDevice::new(g, ZoneBehavior::default(), seed).unwrap();
    let mut dev = sim.clone();
    let crash_op = rng.below(60);
    sim.crash_at(Some(crash_op));
    // Model: per sequential zone the durable and written tags; per conventional block the
    // versions since the flush (the flushed one first).
    let mut durable: Vec<Vec<u64>> = vec![Vec::new(); 5];
    let mut written: Vec<Vec<u64>> = vec![Vec::new(); 5];
    let mut conv: Vec<Vec<u64>> = vec![vec![0]; 16];
    let mut finished = [false; 5];
    let mut tag = 1u64;
    for _ in 0..80 {
        let r = rng.below(10);
        let result = if r < 4 {
            let z = 1 + rng.below(4) as u32;
            let n = 1 + rng.below(3) as usize;
            if written[z as usize].len() + n > 16 || finished[z as usize] {
                dev.reset_zone(ZoneId(z)).map(|()| {
                    written[z as usize].clear();
                    durable[z as usize].clear();
                    finished[z as usize] = false;
                })
            } else {
                let data: Vec<u8> = (0..n).flat_map(|i| block(tag + i as u64)).collect();
                let tags: Vec<u64> = (0..n).map(|i| tag + i as u64).collect();
                tag += n as u64;
                let w = &mut written[z as usize];
                let at = g.zone_start(ZoneId(z)).0 + w.len() as u64;
                let res = if rng.chance(0.5) { dev.write(Lba(at), &data) } else { dev.append(ZoneId(z), &data).map(|_| ()) };
                // A dying write may land in part: the model's written side is an upper bound.
                w.extend(tags);
                res
            }
        } else if r < 7 {
            let b = rng.below(16);
            let res = dev.write(Lba(b), &block(tag));
            conv[b as usize].push(tag);
            tag += 1;
            res
        } else if r < 8 {
            let z = 1 + rng.below(4) as u32;
            dev.finish_zone(ZoneId(z)).map(|()| {
                durable[z as usize] = written[z as usize].clone();
                finished[z as usize] = true;
            })
        } else {
            dev.flush().map(|()| {
                durable = written.clone();
                for c in conv.iter_mut() {
                    let last = *c.last().unwrap();
                    *c = vec![last];
                }
            })
        };
        if result.is_err() {
            break;
        }
    }
    assert_eq!(sim.crashed().map(|c| c.0), if sim.ops() > crash_op { Some(crash_op) } else { None });
    let report = sim.recover(Faults::default()).unwrap();
    coverage.add(&report);
    let mut buf = vec![0u8; 512];
    for z in 1..5u32 {
        let d = dev.zone(ZoneId(z)).unwrap();
        let kept = if d.state == crate::ZoneState::Full { written[z as usize].len() as u64 } else { d.written_blocks() };
        assert!(kept >= durable[z as usize].len() as u64, "seed {seed}: zone {z} lost flushed blocks ({kept} < {})", durable[z as usize].len());
        assert!(kept <= written[z as usize].len() as u64, "seed {seed}: zone {z}");
        assert!(!d.state.is_open(), "seed {seed}: zone {z} came back {:?}", d.state);
        for b in 0..kept {
            dev.read(Lba(d.start.0 + b), &mut buf).unwrap();
            assert_eq!(tag_of(&buf), written[z as usize][b as usize], "seed {seed}: zone {z} block {b}");
        }
    }
    for (b, versions) in conv.iter().enumerate() {
        dev.read(Lba(b as u64), &mut buf).unwrap();
        assert!(versions.contains(&tag_of(&buf)), "seed {seed}: conventional block {b} holds {} of none of {versions:?}", tag_of(&buf));
    }
    // The recovered device works and crashes again on request.
    dev.append(ZoneId(1), &block(9)).map(|_| ()).or_else(|_| dev.reset_zone(ZoneId(1))).unwrap();
    sim.crash_at(Some(sim.ops()));
    assert!(dev.flush().is_err() && dev.flush().is_err());
}

#[test]
fn post_crash_states_are_those_the_model_allows_and_every_fault_kind_occurs() {
    let mut coverage = Coverage::default();
    for seed in 0..400 {
        one_run(seed, &mut coverage);
    }
    for (what, n) in [
        ("dropped zones", coverage.zones_dropped),
        ("cut zones", coverage.zones_cut),
        ("torn writes", coverage.torn_writes),
        ("kept zones", coverage.zones_kept),
        ("old blocks", coverage.blocks_old),
        ("new blocks", coverage.blocks_new),
        ("intermediate blocks", coverage.blocks_between),
        ("reordered", coverage.reordered),
    ] {
        assert!(n > 5, "only {n} {what}:\n{coverage}");
    }
    for kind in ["write", "append", "manage", "flush"] {
        assert!(coverage.by_op.get(kind).copied().unwrap_or(0) > 5, "few crashes at {kind}:\n{coverage}");
    }
}

#[test]
fn flips_change_one_bit_of_a_block_holding_data() {
    let g = geometry();
    let sim = SimDevice::new(g, ZoneBehavior::default(), 7).unwrap();
    let mut dev = sim.clone();
    dev.write(Lba(3), &block(5)).unwrap();
    dev.append(ZoneId(2), &block(6)).unwrap();
    dev.flush().unwrap();
    let report = sim.recover(Faults { flips: 1 }).unwrap();
    assert_eq!(report.flips.len(), 1);
    let (lba, bit) = report.flips[0];
    assert!(lba == Lba(3) || lba == g.zone_start(ZoneId(2)), "{lba}");
    let mut buf = vec![0u8; 512];
    dev.read(lba, &mut buf).unwrap();
    let expected = block(if lba == Lba(3) { 5 } else { 6 });
    let diff: u32 = buf.iter().zip(&expected).map(|(a, b)| (a ^ b).count_ones()).sum();
    assert_eq!(diff, 1);
    assert_eq!(buf[bit as usize / 8] ^ expected[bit as usize / 8], 1 << (bit % 8));
}

#[test]
fn a_crash_fails_the_operation_and_every_later_one() {
    let sim = SimDevice::new(geometry(), ZoneBehavior::default(), 1).unwrap();
    let mut dev = sim.clone();
    dev.append(ZoneId(1), &block(1)).unwrap();
    sim.crash_at(Some(sim.ops() + 1));
    dev.flush().unwrap();
    assert!(dev.read(Lba(0), &mut [0u8; 512]).is_err());
    assert!(dev.zone(ZoneId(1)).is_err());
    assert_eq!(sim.crashed(), Some((2, OpKind::Read)));
    sim.recover(Faults::default()).unwrap();
    assert_eq!(dev.zone(ZoneId(1)).unwrap().written_blocks(), 1, "flushed before the crash");
}
