//! Replay results must not move when the replay gets faster: every report field except the
//! timings and the memory figure is compared with the committed `golden/replay.json`.
//!
//! The cases cover a text trace with reads, the same trace as a binary trace, a generated
//! workload, both capacity modes, an oracle (future knowledge) and the timing model.
//! To record new values after an intended change of results:
//! `ZONEKIT_BLESS=1 cargo test -p zonekit-lab --test replay_golden`.

use std::io::Write;

use serde_json::Value;
use zonekit_ftl::CapacityMode;
use zonekit_lab::block::replay::{replay, ReplaySpec};
use zonekit_trace::input::Input;

/// Fields that are measurements of this run, not results.
const MEASURED: &[&str] = &["stage_s", "wall_s", "blocks_per_s", "ftl_bytes_per_block", "workload"];

fn cases(dir: &std::path::Path) -> Vec<(String, Input, ReplaySpec)> {
    // A small cloud node with reads added, as Alibaba CSV text and as a binary trace.
    let workload = "cloud:volumes=6,blocks=60000,writes=400000";
    let csv = dir.join("node.csv");
    let input = Input::generated(workload.parse().unwrap(), 7);
    let mut out = std::io::BufWriter::new(std::fs::File::create(&csv).unwrap());
    for (i, r) in input.requests().unwrap().enumerate() {
        let r = r.unwrap();
        writeln!(out, "{},W,{},{},{}", r.volume, r.offset_bytes, r.len_bytes, r.time_us).unwrap();
        // The generator writes only; every third request is read back.
        if i % 3 == 0 {
            writeln!(out, "{},R,{},{},{}", r.volume, r.offset_bytes, r.len_bytes, r.time_us).unwrap();
        }
    }
    out.flush().unwrap();
    drop(out);
    let text = Input::path(&csv, None, false);
    let zkt = dir.join("node.zkt");
    let mut w = zonekit_trace::binary::BinaryWriter::create(&zkt, 4096, "golden").unwrap();
    for r in text.records().unwrap() {
        w.push(&r.unwrap().io).unwrap();
    }
    w.finish().unwrap();
    let binary = Input::path(&zkt, None, false);
    let zipf = Input::generated("zipf:blocks=30000,alpha=0.9,writes=300000".parse().unwrap(), 3);
    let spec = |placement: &str, victim: &str| ReplaySpec { placement: placement.into(), victim: victim.into(), preset: "tiny".into(), ..ReplaySpec::default() };
    let unbounded = |mut s: ReplaySpec| {
        s.config.capacity = CapacityMode::Unbounded;
        s
    };
    vec![
        ("text bhbdp cbe".into(), text.clone(), spec("bhbdp", "cbe")),
        ("binary bhbdp cbe".into(), binary.clone(), spec("bhbdp", "cbe")),
        ("text sepbit6 cb-sepbit unbounded".into(), text.clone(), unbounded(spec("sepbit6", "cb-sepbit"))),
        ("binary warcip greedy".into(), binary.clone(), spec("warcip", "greedy")),
        ("binary fk cbe".into(), binary, spec("fk", "cbe")),
        ("text normal cb timing".into(), text, ReplaySpec { timing: true, ..spec("normal", "cb") }),
        ("zipf lifespan cbe-sqrt".into(), zipf.clone(), spec("lifespan", "cbe-sqrt")),
        ("zipf sepgc greedy unbounded".into(), zipf, unbounded(spec("sepgc", "greedy"))),
    ]
}

#[test]
fn replay_reports_match_the_committed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut got = serde_json::Map::new();
    for (name, input, spec) in cases(dir.path()) {
        let report = replay(&input, &spec, &mut |_| {}).unwrap_or_else(|e| panic!("{name}: {e}"));
        // Through text, as the committed file is read, so floats are compared as printed.
        let mut v: Value = serde_json::from_str(&serde_json::to_string(&report).unwrap()).unwrap();
        let obj = v.as_object_mut().unwrap();
        for k in MEASURED {
            obj.remove(*k);
        }
        got.insert(name, v);
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/replay.json");
    if std::env::var_os("ZONEKIT_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
        return;
    }
    let want: serde_json::Map<String, Value> = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(want.keys().collect::<Vec<_>>(), got.keys().collect::<Vec<_>>(), "cases");
    let mut differ = Vec::new();
    for (name, w) in &want {
        for (field, value) in w.as_object().unwrap() {
            if Some(value) != got[name].get(field) {
                differ.push(format!("{name}: {field} was {value}, now {:?}", got[name].get(field)));
            }
        }
    }
    assert!(differ.is_empty(), "replay results moved:\n{}", differ.join("\n"));
}
