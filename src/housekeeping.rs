//! Fixture and embedding-cache housekeeping: what is recorded where
//! (`memform fixtures list`, `memform embeddings list`) and the tables the
//! CLI prints. Which recorded items a dataset still needs is found by
//! replaying it (the CLI does that: it builds the stages); pruning then goes
//! through [`crate::llm::fixtures`] and [`crate::embed::cache`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::embed::cache::{CacheInfo, cache_info};
use crate::error::{Error, Result};
use crate::llm::fixtures::{FixtureStore, utc_from_unix};

/// The subdirectories of `dir`, in name order (none when it does not exist).
fn subdirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if entry.file_type().map_err(|e| Error::io(entry.path(), e))?.is_dir() {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// Where datasets keep their recorded calls, from the working directory:
/// `datasets/*` and `locomo-fixtures/*` (each holding `fixtures/` and
/// `embeddings/`).
pub fn recorded_roots(cwd: &Path) -> Result<Vec<PathBuf>> {
    let mut roots = subdirs(&cwd.join("datasets"))?;
    roots.extend(subdirs(&cwd.join("locomo-fixtures"))?);
    // `./datasets/x` reads better as `datasets/x`.
    Ok(roots.into_iter().map(|r| r.strip_prefix(".").map(Path::to_path_buf).unwrap_or(r)).collect())
}

/// The fixture directories (one per model) under recorded roots.
pub fn fixture_dirs(roots: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for r in roots {
        out.extend(subdirs(&r.join("fixtures"))?);
    }
    Ok(out)
}

/// The embedding cache directories (one per embedder) under recorded roots.
pub fn cache_dirs(roots: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for r in roots {
        out.extend(subdirs(&r.join("embeddings"))?.into_iter().filter(|d| d.join(crate::embed::cache::INDEX_FILE).is_file()));
    }
    Ok(out)
}

/// One row of `memform fixtures list`: the fixtures of one directory, model
/// and stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureGroup {
    pub dir: PathBuf,
    /// The model named in the requests (`invalid` for files that cannot be used).
    pub model: String,
    /// `extract`, `judge`, or `invalid`.
    pub stage: String,
    pub count: usize,
    /// Bytes on disk.
    pub bytes: u64,
    /// `recorded_at` of the oldest and newest (empty for invalid files).
    pub oldest: String,
    pub newest: String,
}

/// Groups the fixture files of `dirs` by directory, model and stage. Files
/// that cannot be used (unparseable, a request or answer that does not
/// match its hashes) are one `invalid` row per directory.
pub fn list_fixtures(dirs: &[PathBuf]) -> Result<Vec<FixtureGroup>> {
    let mut groups: BTreeMap<(PathBuf, String, String), FixtureGroup> = BTreeMap::new();
    for dir in dirs {
        for (path, parsed) in FixtureStore::new(dir).scan()? {
            let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            let (model, stage, at) = match parsed {
                Ok(f) => (f.request.model.clone(), f.request.stage.as_str().to_string(), f.recorded_at),
                Err(_) => ("invalid".to_string(), "invalid".to_string(), String::new()),
            };
            let g = groups.entry((dir.clone(), model.clone(), stage.clone())).or_insert_with(|| FixtureGroup {
                dir: dir.clone(),
                model,
                stage,
                count: 0,
                bytes: 0,
                oldest: at.clone(),
                newest: at.clone(),
            });
            g.count += 1;
            g.bytes += bytes;
            if !at.is_empty() {
                if g.oldest.is_empty() || at < g.oldest {
                    g.oldest = at.clone();
                }
                if at > g.newest {
                    g.newest = at;
                }
            }
        }
    }
    Ok(groups.into_values().collect())
}

/// The caches of `dirs` (directories with nothing recorded are skipped).
pub fn list_caches(dirs: &[PathBuf]) -> Result<Vec<CacheInfo>> {
    let mut out = Vec::new();
    for d in dirs {
        if let Some(info) = cache_info(d)? {
            out.push(info);
        }
    }
    Ok(out)
}

/// Bytes as text: `812 B`, `15.6 KiB`, `3.1 MiB`.
pub fn human_bytes(n: u64) -> String {
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{:.1} KiB", n as f64 / 1024.0),
        _ => format!("{:.1} MiB", n as f64 / 1_048_576.0),
    }
}

fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n|{}\n", header.join(" | "), "---|".repeat(header.len()));
    for r in rows {
        out.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    out
}

/// `memform fixtures list`'s table.
pub fn render_fixture_groups(groups: &[FixtureGroup]) -> String {
    let rows: Vec<Vec<String>> = groups
        .iter()
        .map(|g| {
            vec![
                g.dir.display().to_string(),
                g.model.clone(),
                g.stage.clone(),
                g.count.to_string(),
                human_bytes(g.bytes),
                if g.oldest.is_empty() { "–".into() } else { g.oldest.clone() },
                if g.newest.is_empty() { "–".into() } else { g.newest.clone() },
            ]
        })
        .collect();
    table(&["fixtures", "model", "stage", "count", "size", "oldest", "newest"], &rows)
}

/// `memform embeddings list`'s table.
pub fn render_caches(caches: &[CacheInfo]) -> String {
    let rows: Vec<Vec<String>> = caches
        .iter()
        .map(|c| {
            vec![
                c.dir.display().to_string(),
                c.embedder.clone(),
                c.dims.to_string(),
                c.vectors.to_string(),
                human_bytes(c.bytes),
                c.written.map_or("–".into(), utc_from_unix),
                match &c.problem {
                    None => "ok".into(),
                    Some(p) => format!("FAILED: {}", p.replace('|', "\\|")),
                },
            ]
        })
        .collect();
    table(&["cache", "embedder", "dims", "vectors", "size", "written", "integrity"], &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_bytes(812), "812 B");
        assert_eq!(human_bytes(16_004), "15.6 KiB");
        assert_eq!(human_bytes(3_250_000), "3.1 MiB");
    }

    #[test]
    fn the_bundled_scenarios_list_by_model_and_stage() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("datasets/scenarios");
        let groups = list_fixtures(&fixture_dirs(std::slice::from_ref(&root)).unwrap()).unwrap();
        let stages: Vec<&str> = groups.iter().map(|g| g.stage.as_str()).collect();
        // SmolLM2-135M extracts no candidate from the scenarios: nothing was judged.
        assert_eq!(stages, ["extract"], "{groups:?}");
        let files = std::fs::read_dir(&groups[0].dir).unwrap().count();
        assert_eq!(groups.iter().map(|g| g.count).sum::<usize>(), files);
        assert!(groups.iter().all(|g| g.model == "SmolLM2-135M-Instruct.Q4_1" && g.oldest <= g.newest && g.bytes > 0));
        let caches = list_caches(&cache_dirs(&[root]).unwrap()).unwrap();
        assert_eq!(caches.len(), 1);
        assert_eq!((caches[0].dims, caches[0].problem.as_deref()), (384, None));
    }
}
