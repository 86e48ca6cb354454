//! The workspace's shape, kept so by a test (issue 47): no circle of imports between the
//! modules of any crate (a module that uses another which, through others, uses it back), and
//! no source file over 800 lines but the few ARCHITECTURE.md names, each one algorithm.
//! The crate graph cannot have circles: cargo refuses them.
//!
//! A module's imports are the `crate::` paths its code names outside its `#[cfg(test)]` tests
//! (tests may reach anywhere), resolved to the longest module path that exists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Files allowed past [`LINES_MAX`], with the length they may reach: each one algorithm that
/// reads best whole (ARCHITECTURE.md says why) ...
const LONG_FILES: [(&str, usize); 7] = [
    ("crates/zonekit-ftl/src/engine.rs", 900),
    ("crates/zonekit-ssd/src/ssd.rs", 880),
    ("crates/zonekit-cache/src/cache.rs", 995),
    ("crates/zonekit-zbtree/src/zbtree.rs", 1352),
    ("crates/zonekit-zbtree/src/cow.rs", 1430),
    ("crates/zonekit-zfs/src/fs.rs", 1080),
    ("crates/zonekit-trace/src/format/mod.rs", 875),
];
const LINES_MAX: usize = 800;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A crate's modules by path (`""` the crate root, `a::b`) and their files.
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files
        .into_iter()
        .map(|file| {
            let rel = file.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            if parts == ["lib"] || parts == ["main"] {
                parts.clear();
            }
            (parts.join("::"), file)
        })
        .collect()
}

/// The code of a file without its test-only items, comments dropped. Every `#[cfg(test)]`
/// item is cut (a `mod tests;` line, or the item through its closing brace), not the whole rest
/// of the file: a test helper in the middle once hid an import that ran in a circle.
fn code(file: &Path) -> String {
    without_tests(&std::fs::read_to_string(file).unwrap())
}

fn without_tests(text: &str) -> String {
    let text: String = text.lines().map(|l| l.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n");
    let mut kept = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        kept.push_str(&rest[..at]);
        let item = &rest[at..];
        let end = match (item.find('{'), item.find(';')) {
            (Some(open), semi) if semi.is_none_or(|s| open < s) => {
                let mut depth = 0usize;
                let close = item[open..].char_indices().find(|&(_, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                });
                close.map_or(item.len(), |(i, _)| open + i + 1)
            }
            (_, Some(semi)) => semi + 1,
            _ => item.len(),
        };
        rest = &item[end..];
    }
    kept.push_str(rest);
    kept
}

/// The modules `module`'s code imports: every `crate::a::b::…` path, and the heads of a
/// `use crate::{a, b::c}` group.
fn imports(module: &str, code: &str, known: &BTreeMap<String, PathBuf>) -> BTreeSet<String> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut paths: Vec<String> = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = group.split('}').next().unwrap_or_default();
            paths.extend(inner.split(',').map(|item| item.trim().to_string()));
        } else {
            paths.push(rest.chars().take_while(|&c| ident(c)).collect::<String>().trim_end_matches(':').to_string());
        }
    }
    let mut out = BTreeSet::new();
    for path in paths {
        let parts: Vec<&str> = path.split("::").collect();
        // The longest prefix that is a module: `crate::a::B` imports module `a`.
        if let Some(target) = (1..=parts.len()).rev().map(|k| parts[..k].join("::")).find(|m| known.contains_key(m)) {
            if target != module && !module.starts_with(&format!("{target}::")) {
                out.insert(target);
            }
        }
    }
    out
}

/// The circles of a graph: its strongly connected components of more than one node.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Two nodes are on a circle when each reaches the other.
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(node) = todo.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> = graph.keys().map(|n| (n, reach(n))).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for node in graph.keys() {
        let circle: Vec<String> = graph.keys().filter(|other| reaches[node].contains(*other) && reaches[*other].contains(node)).cloned().collect();
        if circle.len() > 1 && !out.contains(&circle) {
            out.push(circle);
        }
    }
    out
}

#[test]
fn no_module_imports_itself_through_others() {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(workspace().join("crates")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        let known = modules(&src);
        let graph: BTreeMap<String, BTreeSet<String>> = known.iter().map(|(m, file)| (m.clone(), imports(m, &code(file), &known))).collect();
        for circle in circles(&graph) {
            found.push(format!("{}: {}", src.parent().unwrap().file_name().unwrap().to_string_lossy(), circle.join(" <-> ")));
        }
    }
    assert!(found.is_empty(), "modules that import each other (move what both need below them):\n{}", found.join("\n"));
}

#[test]
fn the_circle_finder_finds_a_circle() {
    let graph: BTreeMap<String, BTreeSet<String>> =
        [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec!["a"]), ("d", vec!["a"])].into_iter().map(|(n, to)| (n.to_string(), to.into_iter().map(str::to_string).collect())).collect();
    assert_eq!(circles(&graph), vec![vec!["a".to_string(), "b".into(), "c".into()]]);
    let known: BTreeMap<String, PathBuf> = ["", "a", "a::b", "c"].iter().map(|m| (m.to_string(), PathBuf::new())).collect();
    let found = imports("c", "use crate::a::b::Thing;\nuse crate::{a, c::X};\nlet x = crate::Top;", &known);
    assert_eq!(found, ["a", "a::b"].iter().map(|s| s.to_string()).collect());
    let kept = without_tests("use crate::a;\n#[cfg(test)]\nfn helper() { if x { y() } }\nuse crate::b; // crate::c\n#[cfg(test)]\nmod tests;\nfn z() {}");
    assert_eq!(kept, "use crate::a;\n\nuse crate::b; \n\nfn z() {}");
}

#[test]
fn no_file_over_800_lines_but_the_named_algorithms() {
    let root = workspace();
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    let mut long = Vec::new();
    for file in files {
        let lines = std::fs::read_to_string(&file).unwrap().lines().count();
        let rel = file.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
        let allowed = LONG_FILES.iter().find(|(f, _)| *f == rel).map_or(LINES_MAX, |(_, n)| *n);
        if lines > allowed {
            long.push(format!("{rel}: {lines} lines (at most {allowed})"));
        }
    }
    long.sort();
    assert!(long.is_empty(), "files past their length (split them, or name the algorithm in ARCHITECTURE.md and LONG_FILES):\n{}", long.join("\n"));
}

/// STYLE.md's rule that a new policy is one file and one table row, checked against the code:
/// every `PolicyInfo` row a policy file defines is in its family's table (the family's
/// `mod.rs`), so no policy can exist that the commands, sweeps and Python do not see.
#[test]
fn every_policy_row_is_in_its_familys_table() {
    let root = workspace().join("crates");
    let families = ["zonekit-ftl/src/placement", "zonekit-pool/src/victim", "zonekit-cache/src/evict", "zonekit-cache/src/sampler", "zonekit-ocssd/src/ftl"];
    let mut missing = Vec::new();
    let mut rows = 0;
    for family in families {
        let dir = root.join(family);
        let table = std::fs::read_to_string(dir.join("mod.rs")).unwrap();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let file = path.file_stem().unwrap().to_string_lossy().into_owned();
            if file == "mod" || path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = code(&path);
            for line in text.lines() {
                let Some(rest) = line.trim_start().strip_prefix("pub const ") else { continue };
                let Some((name, ty)) = rest.split_once(':') else { continue };
                // `PolicyInfo<M>` or a family's alias of it (`SamplerInfo`).
                let ty = ty.split('=').next().unwrap_or_default().trim();
                if !(ty.starts_with("PolicyInfo") || ty.ends_with("Info")) {
                    continue;
                }
                rows += 1;
                if !table.contains(&format!("{file}::{name}")) {
                    missing.push(format!("{family}/{file}.rs: {name} is in no table of {family}/mod.rs"));
                }
            }
        }
    }
    assert!(rows >= 20, "only {rows} policy rows found in policy files: has a family moved?");
    assert!(missing.is_empty(), "policies no command can reach:\n{}", missing.join("\n"));
}
