//! The documentation points only inside the repository: no README.md and no page under docs/
//! names a path outside it (the papers are cited by title and section, not by where a copy of
//! them lies on some machine), and every relative markdown link resolves to a file or
//! directory of the repository.

use std::path::{Path, PathBuf};

/// Text that points outside the repository, matched case-insensitively.
const FORBIDDEN: &[&str] = &["shared/spec", "shared/seeds", "seed 00", "/work/"];

/// Directories never walked: build output, results of runs, and hidden ones (`.git`).
const SKIPPED_DIRS: &[&str] = &["target", "results", "node_modules"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the workspace directory")
}

/// Every README.md in the workspace, and every .md file under docs/.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
            if path.is_dir() {
                if !name.starts_with('.') && !SKIPPED_DIRS.contains(&name.as_str()) {
                    dirs.push(path);
                }
            } else if name == "README.md" || (name.ends_with(".md") && path.starts_with(root.join("docs"))) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The targets of the markdown links and images in `text` (inline `[t](target)` and
/// reference definitions `[t]: target`), with their line numbers, outside fenced code blocks
/// and inline code spans.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let mut targets = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let prose = without_code_spans(line);
        let trimmed = prose.trim_start();
        if trimmed.starts_with('[') {
            if let Some(end) = trimmed.find("]:") {
                if let Some(target) = trimmed[end + 2..].split_whitespace().next() {
                    targets.push((i + 1, target.to_owned()));
                }
            }
        }
        let mut rest = prose.as_str();
        while let Some(start) = rest.find("](") {
            let after = &rest[start + 2..];
            let Some(end) = after.find(')') else { break };
            let inner = after[..end].trim();
            let target = inner.split_whitespace().next().unwrap_or_default();
            targets.push((i + 1, target.trim_start_matches('<').trim_end_matches('>').to_owned()));
            rest = &after[end..];
        }
    }
    targets
}

/// `line` with every inline code span (between backticks) blanked out.
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push(' ');
        } else {
            out.push(if in_code { ' ' } else { c });
        }
    }
    out
}

/// Whether a link target is one this test checks: a path in the repository, not a web
/// address, a mail address or an anchor on the same page.
fn is_relative(target: &str) -> bool {
    !(target.is_empty() || target.starts_with('#') || target.contains("://") || target.starts_with("mailto:"))
}

#[test]
fn readmes_and_docs_point_only_inside_the_repository() {
    let root = workspace();
    let docs = documents(&root);
    assert!(docs.iter().any(|d| d == &root.join("README.md")), "no top-level README.md under {}", root.display());
    let mut problems = Vec::new();
    for doc in &docs {
        let shown = doc.strip_prefix(&root).unwrap_or(doc).display().to_string();
        let text = std::fs::read_to_string(doc).unwrap_or_else(|e| panic!("{shown}: {e}"));
        for (i, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            for bad in FORBIDDEN {
                if lower.contains(bad) {
                    problems.push(format!("{shown}:{}: points outside the repository ({bad:?}): {line}", i + 1));
                }
            }
        }
        for (line, target) in link_targets(&text) {
            if !is_relative(&target) {
                continue;
            }
            let path = target.split('#').next().unwrap_or_default();
            let resolved = if let Some(from_root) = path.strip_prefix('/') {
                root.join(from_root)
            } else {
                doc.parent().expect("a document's directory").join(path)
            };
            if !resolved.exists() {
                problems.push(format!("{shown}:{line}: the link {target:?} resolves to no file"));
            } else if !resolved.canonicalize().is_ok_and(|p| p.starts_with(&root)) {
                problems.push(format!("{shown}:{line}: the link {target:?} leaves the repository"));
            }
        }
    }
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_link_reader_finds_links_and_skips_code() {
    let text = "See [a](docs/a.md#x) and ![p](img.png \"title\").\n\
                `[not](code.md)` [web](https://example.org) [here](#top)\n\
                ```\n[fenced](no.md)\n```\n\
                [ref]: other/b.md\n";
    let targets: Vec<String> = link_targets(text).into_iter().map(|(_, t)| t).collect();
    assert_eq!(targets, ["docs/a.md#x", "img.png", "https://example.org", "#top", "other/b.md"]);
    let relative: Vec<&String> = targets.iter().filter(|t| is_relative(t)).collect();
    assert_eq!(relative, ["docs/a.md#x", "img.png", "other/b.md"]);
}

#[test]
fn every_dated_measurement_is_in_the_index() {
    let dir = workspace().join("docs/measurements");
    let index = std::fs::read_to_string(dir.join("README.md")).expect("docs/measurements/README.md");
    let missing: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "README.md" && name.ends_with(".md") && !index.contains(&format!("]({name})")))
        .collect();
    assert!(missing.is_empty(), "docs/measurements/README.md does not list: {}", missing.join(", "));
}
