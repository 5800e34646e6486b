//! The layering of `src/` (ARCHITECTURE.md, "Layers"): every module's code
//! (its tests and comments aside) names only modules of its own layer or
//! below, the modules of one layer form no circle, and the store and the
//! config name nothing of the pipeline. A new module must be given a layer
//! here, or this test fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers from bottom to top, as ARCHITECTURE.md states them.
const LAYERS: &[&[&str]] = &[
    &["error", "types", "model"],
    &["config", "normalize", "limits", "memory", "paths", "redact", "http", "embed", "llm", "dataset"],
    &["store"],
    &["state"],
    &["pipeline"],
    &["names", "tables", "provenance", "rundir", "qa", "metrics"],
    &["report"],
    &["run", "compare", "sweep", "gate", "regenerate", "housekeeping", "calibrate"],
    &["cli"],
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level module a file of `src/` belongs to (`None`: the crate
/// root, `main.rs` and the integration tests).
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?.trim_end_matches(".rs").to_string();
    (!["lib", "main", "tests"].contains(&first.as_str())).then_some(first)
}

/// A file's code: comments, string and char literals blanked, and every
/// item under `#[cfg(test)]` (a test module, a test-only `impl` or `use`)
/// removed.
fn code_of(text: &str) -> String {
    // Blank comments and literals, keeping the code's shape.
    let b = text.as_bytes();
    let mut code = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            let end = rest.find('\n').unwrap_or(rest.len());
            i += end;
        } else if rest.starts_with("/*") {
            let end = rest.find("*/").map_or(rest.len(), |e| e + 2);
            i += end;
        } else if rest.starts_with("r#\"") || rest.starts_with("r\"") {
            let hashes = rest[1..].chars().take_while(|c| *c == '#').count();
            let close = format!("\"{}", "#".repeat(hashes));
            let body = 2 + hashes;
            let end = rest[body..].find(&close).map_or(rest.len(), |e| body + e + close.len());
            code.push_str("\"\"");
            i += end;
        } else if rest.starts_with('"') {
            let mut j = 1;
            while j < rest.len() && rest.as_bytes()[j] != b'"' {
                j += if rest.as_bytes()[j] == b'\\' { 2 } else { 1 };
            }
            code.push_str("\"\"");
            i += (j + 1).min(rest.len());
        } else if rest.starts_with('\'') && (rest[1..].starts_with('\\') || rest.get(2..).is_some_and(|r| r.starts_with('\''))) {
            // A char literal ('x', '\n', '\''); a lifetime has no closing quote here.
            let end = if rest[1..].starts_with('\\') { rest.get(3..).and_then(|r| r.find('\'')).map_or(rest.len(), |e| e + 4) } else { 3 };
            code.push_str("' '");
            i += end;
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            code.push(c);
            i += c.len_utf8();
        }
    }
    // Drop each item under #[cfg(test)].
    let mut out = String::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let semi = after.find(';').unwrap_or(after.len());
        let open = after.find('{').unwrap_or(after.len());
        if semi < open {
            rest = &after[(semi + 1).min(after.len())..];
            continue;
        }
        let mut depth = 0usize;
        let mut end = after.len();
        for (j, c) in after.char_indices().skip_while(|(j, _)| *j < open) {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = j + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Every `crate::X` a piece of code names, including `use crate::{X, …}`.
fn named(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let word = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = group.split('}').next().unwrap_or_default();
            let mut depth = 0;
            let mut start = 0;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.insert(word(group[start..j].trim()));
                        start = j + 1;
                    }
                    _ => {}
                }
            }
            out.insert(word(group[start..].trim()));
        } else {
            out.insert(word(rest));
        }
    }
    out.retain(|w| !w.is_empty());
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Module → the modules its code names, and the files that name each.
fn graph() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut g: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&root).unwrap().to_path_buf();
        let Some(m) = module_of(&rel) else { continue };
        let entry = g.entry(m.clone()).or_default();
        for n in named(&code_of(&std::fs::read_to_string(&f).unwrap())) {
            if n != m {
                entry.entry(n).or_default().insert(rel.display().to_string());
            }
        }
    }
    g
}

fn layer(m: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&m))
}

#[test]
fn every_module_has_a_layer_and_imports_only_go_down() {
    let mut wrong = Vec::new();
    for (m, deps) in graph() {
        let Some(lm) = layer(&m) else {
            wrong.push(format!("module {m} has no layer in tests/layers.rs (and ARCHITECTURE.md)"));
            continue;
        };
        for (d, files) in deps {
            match layer(&d) {
                Some(ld) if ld <= lm => {}
                Some(_) => {
                    wrong.push(format!("{m} names {d}, a layer above it ({})", files.iter().cloned().collect::<Vec<_>>().join(", ")))
                }
                None => wrong.push(format!("{m} names {d}, which has no layer")),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_module_circles() {
    let g = graph();
    // Depth-first search for a back edge.
    fn visit(
        m: &str,
        g: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(m) {
            Some(2) => return None,
            Some(1) => {
                let from = path.iter().position(|p| p == m).unwrap_or(0);
                let mut cycle = path[from..].to_vec();
                cycle.push(m.to_string());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(m.to_string(), 1);
        path.push(m.to_string());
        for d in g.get(m).map(|d| d.keys().cloned().collect::<Vec<_>>()).unwrap_or_default() {
            if let Some(c) = visit(&d, g, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(m.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in g.keys() {
        if let Some(cycle) = visit(m, &g, &mut state, &mut Vec::new()) {
            panic!("an import circle: {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn the_store_and_the_config_name_nothing_of_the_pipeline() {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut wrong = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&root).unwrap().display().to_string();
        let forbidden: &[&str] = if rel.starts_with("store") {
            &["pipeline", "state"]
        } else if rel == "config.rs" {
            &["pipeline", "state", "store", "llm", "embed"]
        } else {
            continue;
        };
        let names = named(&code_of(&std::fs::read_to_string(&f).unwrap()));
        for n in forbidden {
            if names.contains(*n) {
                wrong.push(format!("{rel} names crate::{n} outside its tests"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_scanner_sees_imports_in_every_form() {
    let code = code_of(concat!(
        "use crate::store::Store;\nuse crate::{config::Shared, error::{Error, Result}};\n",
        "fn f() { crate::pipeline::front(); let s = \"crate::qa {\"; let c = '{'; }\n// crate::report\n",
        "#[cfg(test)]\nuse crate::sweep;\n#[cfg(test)]\nimpl X { fn g() { let c = '}'; crate::run::run(); } }\n",
        "fn h() { crate::metrics::analyze(); }\n#[cfg(test)]\nmod tests { use crate::gate; }",
    ));
    let n = named(&code);
    assert_eq!(n.into_iter().collect::<Vec<_>>(), vec!["config", "error", "metrics", "pipeline", "store"]);
}
