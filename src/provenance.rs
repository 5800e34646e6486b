//! What produced a run, for `run.json` (and `report.md`, `compare.md`):
//! memform's version and the git revision it was built from (with a flag for
//! uncommitted changes, from `build.rs`), the digests of the recorded answers
//! and the embedding cache a run read, and the user's `--tag key=value`
//! labels.
//!
//! In `run.json`:
//!
//! ```json
//! "build":    {"version": "0.1.0", "git_revision": "<40 hex>" | "unknown", "git_dirty": true | false | "unknown"},
//! "recorded": {"fixtures":   {"dir": "…", "files": 26, "sha256": "…"} | null,
//!              "embeddings": {"dir": "…", "entries": 104, "sha256": "…"} | null},
//! "tags":     {"key": "value", …}
//! ```
//!
//! `fixtures` is null when the run made no replayable LLM call (rules mode,
//! `--llm live`); `embeddings` is null for the hashed embedder and
//! `--embed live`. `compare` reuses a run only when all of these match.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::normalize::sha256_hex;

/// memform's version (Cargo.toml).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The git revision memform was built from, or "unknown".
pub const GIT_REVISION: &str = env!("MEMFORM_GIT_REVISION");
/// "true" when tracked files had uncommitted changes at build time, "false"
/// when not, "unknown" outside a git checkout.
pub const GIT_DIRTY: &str = env!("MEMFORM_GIT_DIRTY");

/// The `build` object of `run.json`.
pub fn build_info() -> Value {
    let dirty = match GIT_DIRTY {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => Value::String("unknown".into()),
    };
    json!({"version": VERSION, "git_revision": GIT_REVISION, "git_dirty": dirty})
}

/// `--tag key=value` labels, sorted by key. A key is letters, digits, `_`,
/// `.` and `-`; a key given twice is an error.
pub fn parse_tags(specs: &[String]) -> Result<BTreeMap<String, String>> {
    let mut tags = BTreeMap::new();
    for spec in specs {
        let Some((key, value)) = spec.split_once('=') else {
            return Err(Error::Config(format!("--tag {spec:?}: expected KEY=VALUE")));
        };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)) {
            return Err(Error::Config(format!("--tag {spec:?}: the key must be letters, digits, '_', '.' or '-'")));
        }
        if tags.insert(key.to_string(), value.to_string()).is_some() {
            return Err(Error::Config(format!("--tag {key}: given twice")));
        }
    }
    Ok(tags)
}

/// The tags as a JSON object.
pub fn tags_value(tags: &BTreeMap<String, String>) -> Value {
    Value::Object(tags.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect())
}

/// The digest of a fixture directory: SHA-256 of one line `<file name>
/// <SHA-256 of its bytes>` per `*.json` file, in name order. Any change to
/// any fixture (an answer, a re-record, a rehash) changes it; a missing
/// directory has no files.
pub fn fixture_set_digest(dir: &Path) -> Result<Value> {
    let mut names = Vec::new();
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            for entry in entries {
                let entry = entry.map_err(|e| Error::io(dir, e))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.ends_with(".json") && !name.starts_with('.') {
                    names.push(name);
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(dir, e)),
    }
    names.sort();
    let mut listing = String::new();
    for name in &names {
        let path = dir.join(name);
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        listing.push_str(&format!("{name} {}\n", sha256_hex(&bytes)));
    }
    Ok(json!({"dir": dir.display().to_string(), "files": names.len(), "sha256": sha256_hex(listing.as_bytes())}))
}

/// The `recorded.embeddings` object for a cache directory with `entries`
/// vectors whose keys and vectors hash to `sha256` (see
/// [`crate::embed::cache`]).
pub fn embedding_cache_value(dir: &Path, entries: usize, sha256: &str) -> Value {
    json!({"dir": dir.display().to_string(), "entries": entries, "sha256": sha256})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_parse_sort_and_refuse_bad_keys() {
        let t = parse_tags(&["b=2".into(), "a=x=y".into(), "c=".into()]).unwrap();
        assert_eq!(tags_value(&t), json!({"a": "x=y", "b": "2", "c": ""}));
        for (spec, msg) in [("nokey", "expected KEY=VALUE"), ("=v", "the key must be"), ("a b=1", "the key must be")] {
            let e = parse_tags(&[spec.into()]).unwrap_err().to_string();
            assert!(e.contains(msg), "{spec}: {e}");
        }
        let e = parse_tags(&["a=1".into(), "a=2".into()]).unwrap_err().to_string();
        assert!(e.contains("--tag a: given twice"), "{e}");
    }

    #[test]
    fn build_info_has_version_and_a_revision_or_unknown() {
        let b = build_info();
        assert_eq!(b["version"], VERSION);
        let rev = b["git_revision"].as_str().unwrap();
        assert!(rev == "unknown" || (rev.len() == 40 && rev.chars().all(|c| c.is_ascii_hexdigit())), "{rev}");
        assert!(b["git_dirty"].is_boolean() || (b["git_dirty"] == "unknown" && rev == "unknown"), "{b}");
    }

    #[test]
    fn fixture_digest_tracks_every_byte_and_name() {
        let d = tempfile::tempdir().unwrap();
        let empty = fixture_set_digest(&d.path().join("none")).unwrap();
        assert_eq!(empty["files"], 0);
        std::fs::write(d.path().join("a.json"), "{}").unwrap();
        std::fs::write(d.path().join(".a.1.tmp"), "x").unwrap();
        std::fs::write(d.path().join("notes.txt"), "x").unwrap();
        let one = fixture_set_digest(d.path()).unwrap();
        assert_eq!(one["files"], 1);
        std::fs::write(d.path().join("a.json"), "{ }").unwrap();
        let edited = fixture_set_digest(d.path()).unwrap();
        assert_ne!(one["sha256"], edited["sha256"]);
        std::fs::rename(d.path().join("a.json"), d.path().join("b.json")).unwrap();
        assert_ne!(fixture_set_digest(d.path()).unwrap()["sha256"], edited["sha256"]);
    }
}
