//! Arbitrary text for the spec parsers of the shared input path (issue 31): workload specs
//! (`zipf:blocks=1M,alpha=0.9`, `cloud:...`, `macdrp:scale=...`), the tree experiment's
//! `--mix 40/30/30`, the sweep's `--grid` and `--shard`, and placement and victim policies
//! with their `--param KEY=VALUE` values. (`--param`'s own KEY=VALUE split is the binary's; its
//! values are read here, by the policies.) No parser may panic; what one accepts must be in
//! range; what one refuses must say which part is wrong.
//!
//! The first byte picks the parser, the rest is the text. So that a short run reaches every
//! generator and policy, a one-character kind, key or policy name stands for one of the real
//! ones (`0:1=5` is `zipf:alpha=5` or so); everything else is parsed as given.
#![no_main]
use libfuzzer_sys::fuzz_target;
use zonekit_ftl::placement::{self, PolicyEnv};
use zonekit_lab::block::sweep::{parse_grid, Shard};
use zonekit_lab::tree::bench::Mix;
use zonekit_pool::victim;
use zonekit_trace::blocks::{BLOCK_BITS, MAX_VOLUME};
use zonekit_trace::synth::{Workload, YcsbDist};

/// The most blocks (or keys) a workload may address.
const BLOCKS_MAX: u64 = 1 << BLOCK_BITS;
/// Generated single-block writes are 100 µs apart: more would wrap the virtual clock.
const WRITES_MAX: u64 = u64::MAX / 100;
/// Records of an accepted workload looked at (enough to reach every branch of a generator).
const RECORDS_CHECKED: usize = 256;

/// What a one-character workload kind or key stands for.
const KINDS: [&str; 7] = ["zipf", "uniform", "hotcold", "cloud", "lammps", "macdrp", "ycsb"];
const KEYS: [&str; 14] = ["blocks", "alpha", "writes", "hot", "hot-writes", "volumes", "hours", "burst", "once", "scale", "split", "keys", "ops", "dist"];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(bytes);
    match selector % 5 {
        0 => workload(&workload_spec(&text)),
        1 => mix(&text),
        2 => grid(&text),
        3 => shard(&text),
        _ => policy(&text),
    }
});

/// The character's pick from `names`, if `text` is one character.
fn stands_for<'a>(text: &'a str, names: &[&'a str]) -> &'a str {
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => names[c as usize % names.len()],
        _ => text,
    }
}

/// `text` with a one-character kind and one-character keys replaced (see the module doc).
fn workload_spec(text: &str) -> String {
    let Some((kind, args)) = text.split_once(':') else { return stands_for(text, &KINDS).to_string() };
    let args: Vec<String> = args
        .split(',')
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) => format!("{}={v}", stands_for(k, &KEYS)),
            None => kv.to_string(),
        })
        .collect();
    format!("{}:{}", stands_for(kind, &KINDS), args.join(","))
}

/// Whether `message` names one of `parts` (as given, or quoted as `{:?}` quotes it).
fn names_one_of<'a>(message: &str, parts: impl IntoIterator<Item = &'a str>) -> bool {
    parts.into_iter().any(|p| (!p.is_empty() && message.contains(p)) || message.contains(&format!("{p:?}")))
}

fn workload(text: &str) {
    match text.parse::<Workload>() {
        Ok(w) => {
            in_range(&w, text);
            // What an accepted workload prints is the spec that makes it again.
            let again: Workload = w.to_string().parse().unwrap_or_else(|e| panic!("{text:?} -> {w}: {e}"));
            assert_eq!(again, w, "{text:?} -> {w}");
            generated_in_range(&w, text);
        }
        Err(e) => {
            // The kind, a key or a whole `key=value` item of the spec.
            let message = e.to_string();
            let (kind, args) = text.split_once(':').unwrap_or((text, ""));
            let items = args.split(',');
            let keys = args.split(',').filter_map(|kv| kv.split_once('=')).map(|(k, _)| k.trim());
            assert!(names_one_of(&message, std::iter::once(kind).chain(items).chain(keys)), "{text:?} refused without naming what: {message}");
        }
    }
}

/// Every size, count and share of an accepted workload within what its generator takes.
fn in_range(w: &Workload, text: &str) {
    let ok = match w {
        Workload::Zipf { blocks, alpha, writes } => (1..=BLOCKS_MAX).contains(blocks) && *alpha > 0.0 && alpha.is_finite() && *writes <= WRITES_MAX,
        Workload::Uniform { blocks, writes } => (1..=BLOCKS_MAX).contains(blocks) && *writes <= WRITES_MAX,
        Workload::HotCold { blocks, writes, hot_blocks, hot_writes } => {
            (1..=BLOCKS_MAX).contains(blocks) && *writes <= WRITES_MAX && *hot_blocks > 0.0 && *hot_blocks < 1.0 && (0.0..=1.0).contains(hot_writes)
        }
        Workload::Cloud(c) => {
            (1..=MAX_VOLUME + 1).contains(&c.volumes)
                && c.total_blocks <= BLOCKS_MAX
                && c.total_blocks >= c.volumes as u64 * 64
                && c.writes > 0
                && c.hours > 0.0
                && c.hours.is_finite()
                && (0.0..1.0).contains(&c.burst)
                && (0.0..=10.0).contains(&c.once)
        }
        Workload::Hpc { scale, split, .. } => *scale > 0.0 && *scale <= 1000.0 && split.is_none_or(|s| (0.0..=1.0).contains(&s)),
        Workload::Ycsb { keys, ops, .. } => (1..=BLOCKS_MAX).contains(keys) && *ops <= WRITES_MAX,
    };
    assert!(ok, "{text:?} accepted out of range: {w:?}");
}

/// The first records of an accepted single-block workload address only its blocks. (Cloud
/// and HPC setups, and YCSB's latest, cost time or memory in proportion to the spec.)
fn generated_in_range(w: &Workload, text: &str) {
    let blocks = match w {
        Workload::Zipf { blocks, .. } | Workload::Uniform { blocks, .. } | Workload::HotCold { blocks, .. } => *blocks,
        Workload::Ycsb { keys, dist: YcsbDist::Zipfian | YcsbDist::Uniform, .. } => *keys,
        _ => return,
    };
    let records = w.records(1).unwrap_or_else(|e| panic!("{text:?} accepted, but its records are refused: {e}"));
    for (i, r) in records.take(RECORDS_CHECKED).enumerate() {
        assert!(r.len_bytes == 4096 && r.offset_bytes % 4096 == 0, "{text:?}: record {i} is {r:?}");
        assert!(r.offset_bytes / 4096 < blocks, "{text:?}: record {i} writes block {} of {blocks}", r.offset_bytes / 4096);
    }
}

fn mix(text: &str) {
    match Mix::parse(text) {
        Ok(m) => {
            let pcts = [m.insert_pct, m.delete_pct, m.search_pct].map(u64::from);
            // Summed wide: three u32s can also sum to 100 modulo 2^32.
            assert!(pcts.iter().all(|&p| p <= 100) && pcts.iter().sum::<u64>() == 100, "{text:?} accepted as {m:?}");
            assert_eq!(Mix::parse(&m.name()).ok(), Some(m), "{text:?}: its name {} is another mix", m.name());
        }
        Err(e) => assert!(e.to_string().contains(&format!("{text:?}")), "{text:?} refused without naming it: {e}"),
    }
}

fn grid(text: &str) {
    match parse_grid(text) {
        Ok(axes) => {
            for (i, (key, values)) in axes.iter().enumerate() {
                assert!(!key.is_empty() && key.trim() == key && !key.contains([';', '=']), "{text:?}: axis key {key:?}");
                assert!(axes[..i].iter().all(|(k, _)| k != key), "{text:?}: {key} twice");
                assert!(!values.is_empty() && values.iter().all(|v| !v.is_empty() && v.trim() == v && !v.contains([';', ','])), "{text:?}: {key} = {values:?}");
            }
        }
        Err(e) => {
            let message = e.to_string();
            let dims = text.split(';');
            let keys = text.split(';').filter_map(|d| d.split_once('=')).map(|(k, _)| k.trim());
            assert!(message.contains("--grid") && names_one_of(&message, dims.chain(keys)), "{text:?} refused without naming what: {message}");
        }
    }
}

fn shard(text: &str) {
    match text.parse::<Shard>() {
        Ok(s) => assert!(s.count >= 1 && s.index < s.count, "{text:?} accepted as {s:?}"),
        Err(e) => assert!(e.to_string().contains(&format!("{text:?}")), "{text:?} refused without naming it: {e}"),
    }
}

/// `SPEC` on the first line (a placement, or with a leading `v` a victim, each `NAME` or
/// `NAME:VALUE`), then `KEY=VALUE` parameters for a placement, one per line. A one-character
/// name is one of the table's, a one-character key one of that policy's parameters.
fn policy(text: &str) {
    let mut lines = text.split('\n');
    let first = lines.next().unwrap_or_default();
    let (victim_spec, spec) = match first.strip_prefix('v') {
        Some(spec) => (true, spec),
        None => (false, first),
    };
    let (name, value) = spec.split_once(':').map_or((spec, None), |(n, v)| (n, Some(v)));
    let names: Vec<&str> = if victim_spec { victim::VICTIMS.iter().map(|p| p.name).collect() } else { placement::PLACEMENTS.iter().map(|p| p.name).collect() };
    let name = stands_for(name, &names);
    let spec = match value {
        Some(v) => format!("{name}:{v}"),
        None => name.to_string(),
    };
    let spec = spec.as_str();
    let result = match victim_spec {
        true => victim::create(spec, 1).map(|_| ()),
        false => {
            let declared: Vec<&str> = placement::PLACEMENTS.iter().find(|p| p.name == name).map_or(vec![], |p| p.params.iter().map(|q| q.name).collect());
            let key = |k: &str| if declared.is_empty() { k.to_string() } else { stands_for(k, &declared).to_string() };
            let params = lines.filter_map(|l| l.split_once('=')).map(|(k, v)| (key(k), v.to_string())).collect();
            // The sweep's environment: 32 MiB zones, a capacity it estimates from the trace.
            placement::create(spec, &params, PolicyEnv { zone_blocks: 1 << 13, capacity_blocks: 1 << 20 }).map(|p| assert!(p.classes() >= 1, "{text:?}: no class"))
        }
    };
    if let Err(e) = result {
        // Unknown names quote the spec; every other refusal starts with the policy's name.
        let message = e.to_string();
        assert!(names_one_of(&message, [name, spec]), "{spec:?} ({text:?}) refused without naming the policy: {message}");
    }
}
