//! The module map in `runtime/README.md` matches the code: every source file has a row,
//! every row a file, each file uses only the crate modules its row allows, and those are all
//! of a lower layer (apart from the engine's one documented loop).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The modules that may use each other although they share a layer (see the README).
const SAME_LAYER_UNIT: &[&str] = &["engine", "engine::thread", "engine::registry", "engine::migration"];

struct Row {
    layer: u32,
    may_import: BTreeSet<String>,
}

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The module map: module name -> row.
fn module_map() -> BTreeMap<String, Row> {
    let readme = std::fs::read_to_string(crate_dir().join("README.md")).expect("runtime/README.md");
    let section = readme.split("## Module map").nth(1).expect("a '## Module map' section");
    let mut rows = BTreeMap::new();
    for line in section.lines().take_while(|l| !l.starts_with("## ")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | `module` | layer | what | may import |
        if cells.len() != 6 || !cells[1].starts_with('`') {
            continue;
        }
        let name = cells[1].trim_matches('`').to_string();
        let layer = cells[2].parse().unwrap_or_else(|_| panic!("README: layer of {name}: {:?}", cells[2]));
        let may_import = cells[4].split(',').filter_map(|m| m.split('`').nth(1)).map(str::to_string).collect();
        assert!(rows.insert(name.clone(), Row { layer, may_import }).is_none(), "README: {name} twice");
    }
    rows
}

/// Every `.rs` file under `src/` (but `lib.rs`), as a module name.
fn source_modules() -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, prefix: &str, out: &mut BTreeMap<String, PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
            if path.is_dir() {
                walk(&path, &format!("{prefix}{stem}::"), out);
            } else if path.extension().is_some_and(|e| e == "rs") && !(prefix.is_empty() && stem == "lib") {
                let name =
                    if stem == "mod" { prefix.trim_end_matches("::").to_string() } else { format!("{prefix}{stem}") };
                out.insert(name, path);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&crate_dir().join("src"), "", &mut out);
    out
}

/// Public names `lib.rs` re-exports, by the module they come from (`Error` -> `error`).
fn reexports() -> BTreeMap<String, String> {
    let lib = std::fs::read_to_string(crate_dir().join("src/lib.rs")).unwrap();
    let mut names = BTreeMap::new();
    for line in lib.lines().filter_map(|l| l.strip_prefix("pub use ")) {
        let (module, items) = line.split_once("::").unwrap();
        for item in items.trim_end_matches(';').trim_matches(|c| c == '{' || c == '}').split(',') {
            names.insert(item.trim().to_string(), module.to_string());
        }
    }
    names
}

/// The crate modules `module`'s code (comments and unit tests left out) refers to.
fn imports_of(module: &str, path: &Path, known: &BTreeMap<String, Row>) -> BTreeSet<String> {
    let source = std::fs::read_to_string(path).unwrap();
    let code: String = source
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap()
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let names = reexports();
    // `super` is the parent module: `engine` for `engine::thread`.
    let parent = module.rsplit_once("::").map(|(p, _)| p.to_string());
    let resolve = |root: &str, rest: &str| -> Option<String> {
        let first = rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("");
        let base = if root == "crate" { String::new() } else { format!("{}::", parent.clone()?) };
        if first.chars().next().is_some_and(char::is_uppercase) {
            // A re-exported name (`crate::Error`), or an item of the parent module.
            return if root == "crate" { names.get(first).cloned() } else { parent.clone() };
        }
        let candidate = format!("{base}{first}");
        let deeper = rest[first.len()..].strip_prefix("::").map(|r| {
            let second = r.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("");
            format!("{candidate}::{second}")
        });
        match deeper {
            Some(d) if known.contains_key(&d) => Some(d),
            _ if known.contains_key(&candidate) => Some(candidate),
            _ => parent.clone().filter(|_| root == "super"),
        }
    };
    let mut found = BTreeSet::new();
    for root in ["crate", "super"] {
        let pattern = format!("{root}::");
        for (at, _) in code.match_indices(&pattern) {
            let rest = &code[at + pattern.len()..];
            if let Some(group) = rest.strip_prefix('{') {
                for item in group.split('}').next().unwrap().split(',') {
                    found.extend(resolve(root, item.trim()));
                }
            } else {
                found.extend(resolve(root, rest));
            }
        }
    }
    found.remove(module);
    found
}

#[test]
fn the_module_map_in_the_readme_matches_the_code() {
    let map = module_map();
    let files = source_modules();
    let listed: BTreeSet<_> = map.keys().collect();
    let present: BTreeSet<_> = files.keys().collect();
    assert_eq!(listed, present, "runtime/README.md's module map and the files in src/ differ");
    let mut problems = Vec::new();
    for (module, path) in &files {
        let row = &map[module];
        for import in imports_of(module, path, &map) {
            if !row.may_import.contains(&import) {
                problems.push(format!("{module} uses {import}, which its row does not list"));
            }
        }
        for allowed in &row.may_import {
            let Some(other) = map.get(allowed) else {
                problems.push(format!("{module}'s row lists {allowed}, which is no module"));
                continue;
            };
            let one_unit = SAME_LAYER_UNIT.contains(&module.as_str()) && SAME_LAYER_UNIT.contains(&allowed.as_str());
            if other.layer >= row.layer && !one_unit {
                problems.push(format!(
                    "{module} (layer {}) may import {allowed} (layer {}): imports must point down",
                    row.layer, other.layer
                ));
            }
        }
    }
    assert!(problems.is_empty(), "runtime/README.md's module map:\n{}", problems.join("\n"));
}
