//! Every application follows the template of `docs/adding-an-application.md`: the same
//! files, a `main.rs` of a few lines, no `#[allow(missing_docs)]`, and imports that flow one
//! way (no module imports a module that imports it back; the kernel, the graph and the CLI
//! never import the runner).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Apps not yet moved to the template (issue 28): none may be added.
const NOT_YET: &[&str] = &[];

/// Modules that must not import these (the one-way flow of the template).
const NEVER_IMPORTS: &[(&str, &[&str])] = &[
    ("kernel", &["cli", "run", "graph", "record"]),
    ("graph", &["cli", "run"]),
    ("cli", &["run", "graph"]),
    ("record", &["run", "graph"]),
];

fn apps_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../apps")
}

/// The application crates: the directories of apps/ with a `src/main.rs`.
fn apps() -> Vec<(String, PathBuf)> {
    let mut apps: Vec<(String, PathBuf)> = std::fs::read_dir(apps_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src/main.rs").exists())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    apps.sort();
    apps
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// The crate's top-level module a source file belongs to (`src/kernel/avx2.rs` -> `kernel`).
fn top_module(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap();
    let first = relative.components().next().unwrap().as_os_str().to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The top-level modules a file's code names through `crate::` (comments left out).
fn crate_imports(code: &str) -> BTreeSet<String> {
    let code: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| l.split(" // ").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::c, d::{e, f}}`: the names at depth 0 of the group.
            let (mut depth, mut name) = (0, String::new());
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.insert(std::mem::take(&mut name));
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 && (c.is_alphanumeric() || c == '_') && !name.contains(':') {
                    name.push(c);
                } else if depth == 0 && c == ':' {
                    name.push(':');
                }
            }
            found.insert(name);
        } else {
            found.insert(rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect());
        }
    }
    found.into_iter().map(|n| n.trim_end_matches(':').to_string()).filter(|n| !n.is_empty()).collect()
}

/// Module -> the other top-level modules it imports.
fn import_graph(app: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let src = app.join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in sources(&src) {
        let module = top_module(&src, &file);
        let imports = crate_imports(&std::fs::read_to_string(&file).unwrap());
        let entry = graph.entry(module.clone()).or_default();
        entry.extend(imports.into_iter().filter(|m| *m != module));
    }
    graph
}

/// The cycles of the import graph, each as its modules, found by following imports from
/// every module (the graphs are small).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<Vec<String>> {
    fn reaches(graph: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str, seen: &mut BTreeSet<String>) -> bool {
        for next in graph.get(from).into_iter().flatten() {
            if next == to || (seen.insert(next.clone()) && reaches(graph, next, to, seen)) {
                return true;
            }
        }
        false
    }
    let mut found = BTreeSet::new();
    for (module, imports) in graph {
        for import in imports {
            if reaches(graph, import, module, &mut BTreeSet::new()) {
                let mut pair = vec![module.clone(), import.clone()];
                pair.sort();
                found.insert(pair);
            }
        }
    }
    found
}

#[test]
fn every_app_follows_the_template() {
    let mut problems = Vec::new();
    for (name, dir) in apps() {
        if NOT_YET.contains(&name.as_str()) {
            continue;
        }
        for file in ["README.md", "src/main.rs", "src/lib.rs", "src/record.rs", "tests/bad_input.rs", "tests/mpi.rs"] {
            if !dir.join(file).exists() {
                problems.push(format!("{name}: no {file}"));
            }
        }
        for module in ["cli", "run", "graph", "kernel"] {
            let src = dir.join("src");
            if !src.join(format!("{module}.rs")).exists() && !src.join(module).join("mod.rs").exists() {
                problems.push(format!("{name}: no module {module} (src/{module}.rs or src/{module}/mod.rs)"));
            }
        }
        let main = std::fs::read_to_string(dir.join("src/main.rs")).unwrap_or_default();
        let code_lines = main.lines().filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//")).count();
        if code_lines > 8 {
            problems.push(format!("{name}: main.rs has {code_lines} lines of code (a few: the work is in run.rs)"));
        }
        for file in sources(&dir.join("src")) {
            if std::fs::read_to_string(&file).unwrap().contains("allow(missing_docs)") {
                problems.push(format!("{name}: {} allows missing docs", file.display()));
            }
        }
        let graph = import_graph(&dir);
        for cycle in cycles(&graph) {
            problems.push(format!("{name}: {} and {} import each other (through a cycle)", cycle[0], cycle[1]));
        }
        for (module, forbidden) in NEVER_IMPORTS {
            for import in graph.get(*module).into_iter().flatten() {
                if forbidden.contains(&import.as_str()) {
                    problems.push(format!(
                        "{name}: {module} imports {import} (imports flow run → cli/graph/record → kernel)"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn imports_are_read_from_use_lines_and_paths() {
    let code = "use crate::{graph::{self, Graphs}, kernel, record::Record};\n\
                // crate::run is a comment\n\
                let x = crate::cli::Args::parse(); // and crate::life too\n";
    let found: Vec<String> = crate_imports(code).into_iter().collect();
    assert_eq!(found, ["cli", "graph", "kernel", "record"]);
    let graph = BTreeMap::from([
        ("a".to_string(), BTreeSet::from(["b".to_string()])),
        ("b".to_string(), BTreeSet::from(["c".to_string()])),
        ("c".to_string(), BTreeSet::from(["a".to_string()])),
        ("d".to_string(), BTreeSet::from(["a".to_string()])),
    ]);
    let found = cycles(&graph);
    assert!(found.contains(&vec!["a".to_string(), "b".to_string()]) && !found.iter().any(|c| c.contains(&"d".into())));
}
