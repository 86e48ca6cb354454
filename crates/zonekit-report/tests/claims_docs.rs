//! Every seed write-up with a claims file agrees with it and with its result files: the
//! acceptance table is what `zonekit claims render` writes, every claim's source row and column
//! exists, and every number in the write-up's tables comes from a result file.

use std::path::Path;

use zonekit_report::claims;

#[test]
fn every_seed_writeup_with_claims_agrees_with_its_files() {
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results");
    let dirs = claims::claim_dirs(&results);
    assert!(!dirs.is_empty(), "no claims file under {}: the check would pass on nothing", results.display());
    let problems: Vec<String> = dirs.iter().flat_map(|d| claims::check(d)).map(|p| p.to_string()).collect();
    assert!(problems.is_empty(), "run `zonekit claims check docs/results` (and `claims render` after editing claims):\n{}", problems.join("\n"));
}
