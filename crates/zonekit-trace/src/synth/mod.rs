//! Seeded synthetic workloads, streamed without materialising the trace.
//!
//! A [`Workload`] is parsed from a spec string (what `zonekit trace gen` and `zonekit replay
//! --workload` take) and yields [`Record`]s:
//!
//! | spec | what |
//! |---|---|
//! | `zipf:blocks=1M,alpha=0.9,writes=10M` | single-block writes, Zipf(α) popularity scattered over the blocks |
//! | `uniform:blocks=1M,writes=10M` | single-block writes, uniform |
//! | `hotcold:blocks=1M,writes=10M,hot=0.2,hot-writes=0.8` | x % of writes to y % of blocks |
//! | `cloud:volumes=64,blocks=4M,writes=20M,hours=24[,burst=0.1,once=0.5]` | multi-tenant cloud node ([`cloud`]) |
//! | `lammps[:scale=0.1]`, `macdrp[:scale=0.1]` | seed 002's HPC patterns ([`hpc`]) |
//! | `ycsb:keys=1M,ops=10M,dist=zipfian` | YCSB key choices (zipfian, uniform, latest) as block writes |
//!
//! Counts accept `K`, `M`, `G` suffixes (powers of 1000).

pub mod cloud;
pub mod hpc;
pub mod ycsb;
pub mod zipf;

use std::str::FromStr;

use crate::record::{Op, Record, SpecError};
pub use cloud::{CloudNode, CloudNodeConfig};
pub use hpc::{Hpc, HpcPattern};
pub use zipf::Zipf;
pub use zonekit_base::Rng;

#[derive(Clone, Debug, PartialEq)]
pub enum Workload {
    Zipf {
        blocks: u64,
        alpha: f64,
        writes: u64,
    },
    Uniform {
        blocks: u64,
        writes: u64,
    },
    HotCold {
        blocks: u64,
        writes: u64,
        hot_blocks: f64,
        hot_writes: f64,
    },
    Cloud(CloudNodeConfig),
    /// `split`: MACDRP-like only, the share of the boundaries between its slabs in the middle
    /// of a block (default [`hpc::MACDRP_SPLIT_SHARE`]).
    Hpc {
        pattern: HpcPattern,
        scale: f64,
        split: Option<f64>,
    },
    Ycsb {
        keys: u64,
        ops: u64,
        dist: YcsbDist,
    },
}

/// YCSB's request distributions (`requestdistribution`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum YcsbDist {
    Zipfian,
    Uniform,
    Latest,
}

impl YcsbDist {
    pub const ALL: [YcsbDist; 3] = [YcsbDist::Zipfian, YcsbDist::Uniform, YcsbDist::Latest];

    /// YCSB's name for it.
    pub fn name(self) -> &'static str {
        match self {
            YcsbDist::Zipfian => "zipfian",
            YcsbDist::Uniform => "uniform",
            YcsbDist::Latest => "latest",
        }
    }

    pub fn from_name(name: &str) -> Option<YcsbDist> {
        YcsbDist::ALL.into_iter().find(|d| d.name() == name)
    }
}

const BLOCK: u64 = 4096;
/// Virtual time between two generated single-block writes.
const GAP_US: u64 = 100;

fn count(key: &str, v: &str) -> Result<u64, SpecError> {
    let (digits, mult) = match v.chars().last() {
        Some('K' | 'k') => (&v[..v.len() - 1], 1e3),
        Some('M' | 'm') => (&v[..v.len() - 1], 1e6),
        Some('G' | 'g') => (&v[..v.len() - 1], 1e9),
        _ => (v, 1.0),
    };
    let x: f64 = digits.parse().map_err(|_| format!("{key}={v}: not a number"))?;
    if !(x >= 0.0 && x.is_finite()) {
        return Err(format!("{key}={v}: not a non-negative number").into());
    }
    let n = (x * mult).round();
    // `as u64` would saturate silently; 2^63 is far beyond any count a run could reach.
    if n >= 9.2e18 {
        return Err(format!("{key}={v}: too large").into());
    }
    Ok(n as u64)
}

/// The spec syntax `FromStr` reads, so a workload prints as the text that makes it again.
impl std::fmt::Display for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Workload::Zipf { blocks, alpha, writes } => write!(f, "zipf:blocks={blocks},alpha={alpha},writes={writes}"),
            Workload::Uniform { blocks, writes } => write!(f, "uniform:blocks={blocks},writes={writes}"),
            Workload::HotCold { blocks, writes, hot_blocks, hot_writes } => write!(f, "hotcold:blocks={blocks},writes={writes},hot={hot_blocks},hot-writes={hot_writes}"),
            Workload::Cloud(c) => {
                write!(f, "cloud:volumes={},blocks={},writes={},hours={}", c.volumes, c.total_blocks, c.writes, c.hours)?;
                if c.burst > 0.0 {
                    write!(f, ",burst={}", c.burst)?;
                }
                if c.once != 1.0 {
                    write!(f, ",once={}", c.once)?;
                }
                Ok(())
            }
            Workload::Hpc { pattern, scale, split } => {
                write!(f, "{}:scale={scale}", if *pattern == HpcPattern::Lammps { "lammps" } else { "macdrp" })?;
                match split {
                    Some(split) => write!(f, ",split={split}"),
                    None => Ok(()),
                }
            }
            Workload::Ycsb { keys, ops, dist } => write!(f, "ycsb:keys={keys},ops={ops},dist={}", dist.name()),
        }
    }
}

impl FromStr for Workload {
    type Err = SpecError;

    fn from_str(spec: &str) -> Result<Workload, SpecError> {
        let (kind, args) = spec.split_once(':').unwrap_or((spec, ""));
        let mut params = std::collections::BTreeMap::new();
        for kv in args.split(',').filter(|s| !s.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(|| format!("{kv:?}: expected key=value"))?;
            // Given twice, one of the two would be ignored without a word.
            if let Some(first) = params.insert(k.trim().to_string(), v.trim().to_string()) {
                return Err(SpecError(format!("{}: given twice ({}={first} and {kv})", k.trim(), k.trim())));
            }
        }
        let mut take = |k: &str| params.remove(k);
        let num = |v: Option<String>, k: &str, default: u64| v.map_or(Ok(default), |v| count(k, &v));
        let float = |v: Option<String>, k: &str, default: f64| v.map_or(Ok(default), |v| v.parse::<f64>().map_err(|_| SpecError(format!("{k}={v}: not a number"))));
        let w = match kind {
            "zipf" => {
                Workload::Zipf { blocks: num(take("blocks"), "blocks", 1 << 20)?, alpha: float(take("alpha"), "alpha", 0.9)?, writes: num(take("writes"), "writes", 10 << 20)? }
            }
            "uniform" => Workload::Uniform { blocks: num(take("blocks"), "blocks", 1 << 20)?, writes: num(take("writes"), "writes", 10 << 20)? },
            "hotcold" => Workload::HotCold {
                blocks: num(take("blocks"), "blocks", 1 << 20)?,
                writes: num(take("writes"), "writes", 10 << 20)?,
                hot_blocks: float(take("hot"), "hot", 0.2)?,
                hot_writes: float(take("hot-writes"), "hot-writes", 0.8)?,
            },
            "cloud" => {
                let d = CloudNodeConfig::default();
                Workload::Cloud(CloudNodeConfig {
                    volumes: {
                        let v = num(take("volumes"), "volumes", d.volumes as u64)?;
                        u32::try_from(v).map_err(|_| SpecError(format!("volumes={v}: at most {} volumes", u32::MAX)))?
                    },
                    total_blocks: num(take("blocks"), "blocks", d.total_blocks)?,
                    writes: num(take("writes"), "writes", d.writes)?,
                    hours: float(take("hours"), "hours", d.hours)?,
                    burst: float(take("burst"), "burst", d.burst)?,
                    once: float(take("once"), "once", d.once)?,
                    ..d
                })
            }
            "lammps" => Workload::Hpc { pattern: HpcPattern::Lammps, scale: float(take("scale"), "scale", 1.0)?, split: None },
            "macdrp" => {
                Workload::Hpc { pattern: HpcPattern::Macdrp, scale: float(take("scale"), "scale", 1.0)?, split: take("split").map(|v| float(Some(v), "split", 0.0)).transpose()? }
            }
            "ycsb" => Workload::Ycsb {
                keys: num(take("keys"), "keys", 1 << 20)?,
                ops: num(take("ops"), "ops", 10 << 20)?,
                dist: match take("dist").as_deref() {
                    None => YcsbDist::Zipfian,
                    Some(name) => YcsbDist::from_name(name).ok_or_else(|| format!("dist={name}: expected zipfian, uniform or latest"))?,
                },
            },
            other => return Err(format!("unknown workload {other:?}; valid: zipf, uniform, hotcold, cloud, lammps, macdrp, ycsb").into()),
        };
        if let Some(k) = params.keys().next() {
            return Err(format!("{kind}: unknown parameter {k:?}").into());
        }
        w.validate()?;
        Ok(w)
    }
}

/// The most blocks a workload may address: the block keys' range (`blocks::BLOCK_BITS`), so a
/// block's byte offset (`block × 4096`) never wraps a u64.
const BLOCKS_MAX: u64 = 1 << crate::blocks::BLOCK_BITS;
/// The most writes a single-block workload may make: its virtual clock (`i × GAP_US`) stays
/// within a u64.
const WRITES_MAX: u64 = u64::MAX / GAP_US;

/// Refuses `key=value` beyond `max`, naming the key.
fn at_most(key: &str, value: u64, max: u64, why: &str) -> Result<(), SpecError> {
    if value > max {
        return Err(format!("{key}={value}: at most {max} ({why})").into());
    }
    Ok(())
}

impl Workload {
    fn validate(&self) -> Result<(), SpecError> {
        // Ranges first, so no generator computes an offset or a time that wraps
        // (`uniform:blocks=9e18` wrote offsets of block × 4096 mod 2^64).
        const BLOCK_RANGE: &str = "the block keys' range, 2^40";
        const CLOCK: &str = "the virtual clock's range";
        match self {
            Workload::Zipf { blocks, writes, .. } | Workload::Uniform { blocks, writes } | Workload::HotCold { blocks, writes, .. } => {
                at_most("blocks", *blocks, BLOCKS_MAX, BLOCK_RANGE)?;
                at_most("writes", *writes, WRITES_MAX, CLOCK)?;
            }
            Workload::Ycsb { keys, ops, .. } => {
                at_most("keys", *keys, BLOCKS_MAX, BLOCK_RANGE)?;
                at_most("ops", *ops, WRITES_MAX, CLOCK)?;
            }
            Workload::Cloud(c) => {
                at_most("blocks", c.total_blocks, BLOCKS_MAX, BLOCK_RANGE)?;
                // Each volume keeps its own state, and volume ids are below 2^24.
                at_most("volumes", c.volumes as u64, crate::blocks::MAX_VOLUME as u64 + 1, "the volume ids' range, 2^24")?;
                // The rest of the node's settings, checked here rather than when a run starts.
                c.validate()?;
            }
            Workload::Hpc { .. } => {}
        }
        match self {
            Workload::Zipf { blocks: 0, .. } | Workload::Uniform { blocks: 0, .. } | Workload::HotCold { blocks: 0, .. } => return Err("blocks must be positive".into()),
            // Named here: Zipf's own refusal does not say which key it was.
            Workload::Zipf { alpha, .. } if !(*alpha > 0.0 && alpha.is_finite()) => return Err(format!("alpha={alpha}: the Zipf exponent must be positive and finite").into()),
            Workload::Zipf { blocks, alpha, .. } => {
                Zipf::new(*blocks, *alpha)?;
            }
            Workload::HotCold { hot_blocks, hot_writes, .. } if !(0.0 < *hot_blocks && *hot_blocks < 1.0 && (0.0..=1.0).contains(hot_writes)) => {
                return Err("hotcold: hot must be in (0, 1) and hot-writes in [0, 1]".into())
            }
            Workload::Ycsb { keys: 0, .. } => return Err("ycsb: keys must be positive".into()),
            Workload::Hpc { scale, .. } if !(*scale > 0.0 && *scale <= 1000.0) => return Err(format!("scale={scale}: must be in (0, 1000]").into()),
            Workload::Hpc { split: Some(split), .. } if !(0.0..=1.0).contains(split) => return Err(format!("split={split}: a share, in [0, 1]").into()),
            _ => {}
        }
        Ok(())
    }

    /// The record stream for `seed`.
    pub fn records(&self, seed: u64) -> Result<Box<dyn Iterator<Item = Record> + Send>, SpecError> {
        let single = |block: u64, i: u64| Record { time_us: i * GAP_US, volume: 0, offset_bytes: block * BLOCK, len_bytes: BLOCK, op: Op::Write };
        Ok(match self.clone() {
            Workload::Zipf { blocks, alpha, writes } => {
                let zipf = Zipf::new(blocks, alpha)?;
                let mut rng = Rng::new(seed);
                // Scatter ranks so the hottest blocks are not adjacent (as in YCSB's scrambled
                // zipfian); (rank * odd) mod blocks is a bijection when blocks is a power of two
                // and close to one otherwise.
                Box::new((0..writes).map(move |i| single((zipf.sample(&mut rng) - 1).wrapping_mul(0x9E37_79B9) % blocks, i)))
            }
            Workload::Uniform { blocks, writes } => {
                let mut rng = Rng::new(seed);
                Box::new((0..writes).map(move |i| single(rng.below(blocks), i)))
            }
            Workload::HotCold { blocks, writes, hot_blocks, hot_writes } => {
                let mut rng = Rng::new(seed);
                // Within the blocks: one block, or a share that rounds to all of them, is all hot
                // (the cold branch wrote block `blocks`, one past the last).
                let hot = ((blocks as f64 * hot_blocks) as u64).clamp(1, blocks);
                Box::new((0..writes).map(move |i| {
                    let b = if hot == blocks || rng.chance(hot_writes) { rng.below(hot) } else { hot + rng.below(blocks - hot) };
                    single(b, i)
                }))
            }
            Workload::Cloud(mut config) => {
                config.seed = seed;
                Box::new(CloudNode::new(config)?)
            }
            Workload::Hpc { pattern, scale, split } => Box::new(Hpc::with_split_share(pattern, scale, seed, split.unwrap_or(hpc::MACDRP_SPLIT_SHARE))),
            Workload::Ycsb { keys, ops, dist } => {
                let mut rng = Rng::new(seed);
                let mut chooser = match dist {
                    YcsbDist::Zipfian => ycsb::KeyChooser::Zipfian(ycsb::ScrambledZipfian::new(0, keys - 1)),
                    YcsbDist::Uniform => ycsb::KeyChooser::Uniform(ycsb::Uniform::new(0, keys - 1)),
                    YcsbDist::Latest => ycsb::KeyChooser::Latest(ycsb::Latest::new(keys)),
                };
                Box::new((0..ops).map(move |i| single(chooser.next(&mut rng), i)))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_reject_with_reasons() {
        assert_eq!("zipf:blocks=1K,alpha=1.2,writes=2M".parse::<Workload>().unwrap(), Workload::Zipf { blocks: 1000, alpha: 1.2, writes: 2_000_000 });
        assert!(matches!("cloud:volumes=8,blocks=64K".parse::<Workload>().unwrap(), Workload::Cloud(c) if c.volumes == 8 && c.total_blocks == 64_000));
        for (bad, needle) in [
            ("zipf:alpha=-1", "positive"),
            ("zipf:blocks=x", "not a number"),
            ("zipf:colour=red", "unknown parameter"),
            ("fractal", "unknown workload"),
            ("ycsb:dist=gaussian", "expected zipfian"),
            ("hotcold:hot=1.5", "hot must be"),
            // The last value used to win without a word.
            ("zipf:blocks=2K,blocks=4K,writes=1K", "blocks: given twice"),
        ] {
            let e = bad.parse::<Workload>().unwrap_err();
            assert!(e.to_string().contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn counts_that_would_wrap_an_offset_or_a_clock_are_refused_by_key() {
        // blocks=9e18 used to generate offsets of block × 4096 mod 2^64.
        for (spec, key) in [
            ("uniform:blocks=9e18,writes=5", "blocks=9000000000000000000"),
            ("zipf:blocks=2e12,writes=5", "blocks=2000000000000"),
            ("hotcold:blocks=1M,writes=9e18", "writes=9000000000000000000"),
            ("ycsb:keys=9e18,ops=5", "keys=9000000000000000000"),
            ("ycsb:keys=1K,ops=1e18", "ops=1000000000000000000"),
            ("cloud:volumes=8,blocks=9e18,writes=5", "blocks=9000000000000000000"),
            ("cloud:volumes=4294967295,blocks=9e18,writes=5", "blocks=9000000000000000000"),
            ("cloud:volumes=20M,blocks=2G,writes=5", "volumes=20000000"),
        ] {
            let e = spec.parse::<Workload>().map(|w| w.to_string()).unwrap_err();
            assert!(e.to_string().starts_with(key), "{spec}: {e}");
        }
        let w: Workload = "uniform:blocks=1099511627776,writes=3".parse().unwrap();
        assert!(w.records(1).unwrap().all(|r| r.offset_bytes < 1 << 52));
    }

    /// Found by the `input_specs` fuzz target: settings a generator cannot run were accepted
    /// when read (and refused only when a run started), a Zipf refusal did not name its key,
    /// and a one-block hot/cold workload wrote a second block.
    #[test]
    fn accepted_specs_are_in_range_and_refusals_name_the_key() {
        for (spec, needle) in [
            ("cloud:burst=5", "burst=5"),
            ("cloud:blocks=0", "64 blocks per volume"),
            ("cloud:volumes=0", "volumes > 0"),
            ("cloud:once=11", "once=11"),
            ("cloud:hours=0", "positive hours"),
            ("cloud:hours=inf", "hours=inf"),
            ("cloud:writes=0", "positive hours and writes"),
            ("zipf:blocks=0", "blocks must be positive"),
            ("zipf:alpha=0", "alpha=0"),
            ("zipf:alpha=inf", "alpha=inf"),
        ] {
            let e = spec.parse::<Workload>().unwrap_err().to_string();
            assert!(e.contains(needle), "{spec}: {e}");
        }
        for (spec, blocks) in [("hotcold:blocks=1,writes=1K", 1), ("hotcold:blocks=3,hot=0.9999999999999999,writes=1K", 3)] {
            let w: Workload = spec.parse().unwrap();
            assert!(w.records(1).unwrap().all(|r| r.offset_bytes / 4096 < blocks), "{spec}");
        }
    }

    #[test]
    fn generators_are_reproducible_from_a_seed() {
        for spec in [
            "zipf:blocks=10K,writes=5K",
            "uniform:blocks=10K,writes=5K",
            "hotcold:blocks=10K,writes=5K",
            "cloud:volumes=4,blocks=64K,writes=20K",
            "macdrp:scale=0.001",
            "lammps:scale=0.001",
            "ycsb:keys=1K,ops=5K,dist=latest",
        ] {
            let w: Workload = spec.parse().unwrap();
            let a: Vec<Record> = w.records(7).unwrap().collect();
            let b: Vec<Record> = w.records(7).unwrap().collect();
            let c: Vec<Record> = w.records(8).unwrap().collect();
            assert_eq!(a, b, "{spec}: same seed, same trace");
            assert_ne!(a, c, "{spec}: another seed, another trace");
            assert!(!a.is_empty());
        }
    }

    #[test]
    fn the_split_share_is_macdrp_only_and_a_share() {
        for (spec, why) in
            [("lammps:split=0.5", "unknown parameter \"split\""), ("macdrp:split=1.5", "split=1.5: a share"), ("macdrp:split=-0", ""), ("macdrp:split=x", "split=x: not a number")]
        {
            match spec.parse::<Workload>() {
                Ok(_) => assert!(why.is_empty(), "{spec} accepted"),
                Err(e) => assert!(!why.is_empty() && e.to_string().contains(why), "{spec}: {e}"),
            }
        }
    }

    #[test]
    fn hotcold_sends_the_hot_share_to_the_hot_blocks() {
        let w: Workload = "hotcold:blocks=100K,writes=200K,hot=0.1,hot-writes=0.9".parse().unwrap();
        let hot = w.records(1).unwrap().filter(|r| r.offset_bytes / 4096 < 10_000).count();
        assert!((178_000..182_000).contains(&hot), "{hot}");
    }

    #[test]
    fn a_workload_prints_as_the_spec_that_makes_it() {
        for spec in [
            "zipf:blocks=1K,alpha=0.8,writes=2M",
            "uniform:blocks=5",
            "hotcold:hot=0.1",
            "cloud:volumes=8,blocks=64K,hours=2.5",
            "lammps:scale=0.5",
            "macdrp",
            "macdrp:scale=0.2,split=0.25",
            "ycsb:dist=latest,keys=10",
        ] {
            let w: Workload = spec.parse().unwrap();
            let again: Workload = w.to_string().parse().unwrap_or_else(|e| panic!("{spec} -> {w}: {e}"));
            assert_eq!(again, w, "{spec} -> {w}");
        }
    }
}
