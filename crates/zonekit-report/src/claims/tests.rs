use super::*;

const RESULTS: &str = "section,label,hit_ratio,device_waf\nfig5.1,\"bcache original (conventional SSD, zone/128 buckets)\",0.4135,4.651\nfig5.1,ZNS-naive (LFU),0.4265,1.000\nfig5.1,ZNS-LRU (LFU),0.4292,1.000\n";
const SUMMARY: &str = "| policy | hit ratio |\n|---|---|\n| belady | 68.63 % |\n\n- bcache original: 23054 GC rounds; WAF per GC: mean 4.74, median 4.71\n";

fn claims_csv(rows: &[[&str; 10]]) -> String {
    crate::csv(&COLUMNS, &rows.iter().map(|r| r.iter().map(|c| c.to_string()).collect()).collect::<Vec<_>>())
}

fn rows() -> Vec<[&'static str; 10]> {
    vec![
        [
            "1",
            "\"97 %\"",
            "l. 1045",
            "value",
            "97",
            "%",
            "10 % (default)",
            "1:8 cache",
            "captured: 100 * results.csv[label=bcache original (conventional SSD, zone/128 buckets)].hit_ratio\n(bound): summary.md[policy=belady].\"hit ratio\"",
            "Belady 68.63 %",
        ],
        ["2", "\"WAF 1\"", "Fig. 2.4", "value", "1", "WAF", "10 % (default)", "", "zns: results.csv[label=ZNS-naive (LFU)].device_waf", ""],
        ["3", "\"close to 8\"", "l. 498", "value", "8", "WAF", "10 % (default)", "", "per GC: summary.md~\"bcache original:\"~\"mean \"", ""],
        [
            "4",
            "\"much higher\"",
            "l. 1061",
            "ordering",
            "LRU > naive",
            "%",
            "10 % (default)",
            "",
            "captured: 100 * results.csv[label=ZNS-LRU (LFU)].hit_ratio > 100 * results.csv[label=ZNS-naive (LFU)].hit_ratio",
            "",
        ],
        ["5", "\"128 MB\"", "l. 554", "by construction", "128", "MiB", "", "", "", "zones are buckets"],
        ["6", "\"Table 5.1\"", "l. 981", "not addressed", "", "", "", "", "", "no such machine"],
    ]
}

/// A seed's results directory and its write-up, in a fresh temporary directory.
fn seed(rows: &[[&str; 10]], writeup_tail: &str) -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("seed-x");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("results.csv"), RESULTS).unwrap();
    std::fs::write(dir.join("summary.md"), SUMMARY).unwrap();
    std::fs::write(dir.join(CLAIMS_FILE), claims_csv(rows)).unwrap();
    std::fs::write(writeup_path(&dir), format!("# Seed x\n\n{BEGIN_MARKER}\nold table\n{END_MARKER}\n\n| config | hit ratio |\n|---|---|\n| naive | 42.65 % |\n{writeup_tail}"))
        .unwrap();
    (root, dir)
}

#[test]
fn render_computes_every_verdict_and_check_then_passes() {
    let (_root, dir) = seed(&rows(), "");
    let (path, judged) = render(&dir).unwrap();
    let verdicts: Vec<Verdict> = judged.iter().map(|j| j.verdict).collect();
    use Verdict::*;
    // 41.35 and 68.63 are outside 10 % of 97, 1 is 1, 4.74 is outside 10 % of 8, and LRU leads
    // naive by 0.27 points, under 10 % of 42.65
    assert_eq!(verdicts, [NotReproduced, Reproduced, NotReproduced, Partly, ByConstruction, NotAddressed]);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("| 1 | \"97 %\" | l. 1045 | 97 % | 10 % (default) | 1:8 cache | captured: 41.35 (outside); (bound): 68.63 | **not reproduced** | Belady 68.63 % |"),
        "{text}"
    );
    assert!(text.contains("captured: 42.92 vs 42.65 (under the margin) | **partly**"));
    assert!(text.contains("Verdicts of the 6 claims: 1 reproduced, 1 partly, 2 not reproduced, 1 by construction, 0 calibrated to this cell, 1 not addressed."));
    assert!(!text.contains("old table") && text.contains("| naive | 42.65 % |"), "only the block between the markers is replaced");
    assert_eq!(check(&dir), [], "a freshly rendered write-up passes");
    let (_, again) = render(&dir).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "rendering is idempotent");
    assert_eq!(again.len(), 6);
}

#[test]
fn check_names_the_claim_of_a_stale_table() {
    let (_root, dir) = seed(&rows(), "");
    let (path, _) = render(&dir).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("| **reproduced** |", "| **partly** |")).unwrap();
    let problems = check(&dir);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].claim.as_deref(), Some("2"));
    assert!(problems[0].to_string().contains("seed-x.md: claim 2: the acceptance table differs"));
}

#[test]
fn check_names_the_claim_and_file_of_a_missing_source_row_or_column() {
    let (_root, dir) = seed(&rows(), "");
    render(&dir).unwrap();
    std::fs::write(dir.join("results.csv"), RESULTS.replace("ZNS-LRU (LFU)", "ZNS-LRU (lru)")).unwrap();
    let problems = check(&dir);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].claim.as_deref(), Some("4"));
    assert!(problems[0].message.contains("results.csv: no row [label=ZNS-LRU (LFU)]"), "{}", problems[0]);
    std::fs::write(dir.join("results.csv"), RESULTS.replace("device_waf", "waf")).unwrap();
    let problems = check(&dir);
    assert!(problems.iter().any(|p| p.claim.as_deref() == Some("2") && p.message.contains("no table has the columns device_waf")), "{problems:?}");
    std::fs::remove_file(dir.join("summary.md")).unwrap();
    assert!(check(&dir).iter().any(|p| p.claim.as_deref() == Some("1") && p.message.contains("summary.md")));
}

#[test]
fn check_finds_a_table_number_or_a_note_number_in_no_result_file() {
    let (_root, dir) = seed(&rows(), "| lru | 42.29 % |\n");
    render(&dir).unwrap();
    let problems = check(&dir);
    assert_eq!(problems.len(), 1, "{problems:?}");
    let line = std::fs::read_to_string(writeup_path(&dir)).unwrap().lines().position(|l| l.contains("42.29")).unwrap() + 1;
    assert!(problems[0].message.contains(&format!("line {line}: 42.29 appears in no result file")), "{}", problems[0]);
    let mut r = rows();
    r[0][9] = "Belady 68.36 %";
    let (_root, dir) = seed(&r, "");
    render(&dir).unwrap();
    let problems = check(&dir);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].claim.as_deref(), Some("1"));
    assert!(problems[0].message.contains("68.36 in its note"));
}

#[test]
fn malformed_claims_are_refused_by_row() {
    for (column, value, says) in [
        (3, "reproduced", "kind `reproduced`"),
        (4, "about 97", "seed_value is a number"),
        (6, "ten", "starts with a number"),
        (8, "", "needs a measurement"),
        (8, "x: 1 > 2", "have no `>`"),
        (8, "(context): 1", "not only context"),
    ] {
        let mut r = rows();
        r[0][column] = value;
        let (_root, dir) = seed(&r, "");
        let problems = load(&dir).unwrap_err();
        assert_eq!(problems[0].claim.as_deref(), Some("1"), "{problems:?}");
        assert!(problems[0].message.contains(says), "{}: {}", says, problems[0]);
    }
    let mut r = rows();
    r[5][9] = "";
    let (_root, dir) = seed(&r, "");
    assert!(load(&dir).unwrap_err()[0].message.contains("needs a note"));
    let mut r = rows();
    r[3][8] = "captured: 1";
    let (_root, dir) = seed(&r, "");
    assert!(load(&dir).unwrap_err()[0].message.contains("higher > lower"));
    let mut r = rows();
    r[1][0] = "1";
    let (_root, dir) = seed(&r, "");
    assert!(load(&dir).unwrap_err()[0].message.contains("unique"));
}

#[test]
fn render_refuses_a_writeup_without_its_markers() {
    let (_root, dir) = seed(&rows(), "");
    std::fs::write(writeup_path(&dir), "# no markers\n").unwrap();
    assert!(render(&dir).unwrap_err()[0].message.contains(BEGIN_MARKER));
    assert!(check(&dir).iter().any(|p| p.message.contains(BEGIN_MARKER)));
}

#[test]
fn numbers_show_as_integers_or_two_decimals() {
    assert_eq!(show(41.35000000001), "41.35");
    assert_eq!(show(-0.33), "−0.33");
    assert_eq!(show(1602437.0), "1,602,437");
    assert_eq!(show(1.0), "1");
    assert_eq!(show(128.0), "128");
}

#[test]
fn claim_dirs_finds_the_seed_directories_with_a_claims_file() {
    let (root, dir) = seed(&rows(), "");
    std::fs::create_dir(root.path().join("seed-y")).unwrap();
    assert_eq!(claim_dirs(root.path()), std::slice::from_ref(&dir));
    assert_eq!(claim_dirs(&dir), [dir]);
}
