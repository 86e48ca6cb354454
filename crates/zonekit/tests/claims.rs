//! `zonekit claims render | check` end to end: render then check passes, a stale table fails
//! with status 1 naming the claim and the write-up, a directory without claims is refused (2).

#[allow(dead_code)] // the shared helpers this suite does not use
mod common;

use common::{ok, refused};

const CLAIMS: &str = "id,seed_words,seed_where,kind,seed_value,unit,margin,setting,ours,note\n\
1,\"\"\"97 %\"\"\",l. 1045,value,97,%,10 % (default),1:8,captured: 100 * r.csv[label=a].hit_ratio,\n";

#[test]
fn render_then_check_passes_and_a_stale_table_fails_naming_the_claim() {
    let dir = tempfile::tempdir().unwrap();
    let seed = dir.path().join("seed-x");
    std::fs::create_dir(&seed).unwrap();
    std::fs::write(seed.join("r.csv"), "label,hit_ratio\na,0.9780\n").unwrap();
    std::fs::write(seed.join("claims.csv"), CLAIMS).unwrap();
    std::fs::write(dir.path().join("seed-x.md"), "# x\n<!-- claims:begin -->\n<!-- claims:end -->\n").unwrap();
    assert!(ok(&["claims", "render", "seed-x"], dir.path()).contains("1 claims rendered"));
    let md = std::fs::read_to_string(dir.path().join("seed-x.md")).unwrap();
    assert!(md.contains("captured: 97.80 (within) | **reproduced**"), "{md}");
    ok(&["claims", "check", "."], dir.path());
    std::fs::write(seed.join("r.csv"), "label,hit_ratio\na,0.4135\n").unwrap();
    let err = refused(&["claims", "check", "seed-x"], dir.path(), 1);
    assert!(err.contains("seed-x.md: claim 1: the acceptance table differs"), "{err}");
    let err = refused(&["claims", "check", "seed-x/.."], &seed, 2);
    assert!(err.contains("no claims.csv"), "{err}");
}
