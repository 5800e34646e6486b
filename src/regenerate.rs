//! `memform report RUN_DIR`: redraws a finished run's `report.md` and its
//! plots from the files the run wrote, with no pipeline work and no model —
//! after a change to the report's format, or for an old run.
//!
//! The run's [`Analysis`] is rebuilt from its files: `summary.json` (the
//! metrics and timings, as they are), `facts.parquet` and
//! `episodes.parquet` (the frames), the per-conversation table aggregated
//! from the episodes frame as a run aggregates it, and the verdicts and
//! warnings from `episodes.jsonl` and `facts.jsonl`. `run.json` supplies
//! what was run.
//!
//! The directory is read as `gate` reads it: only a complete run (its
//! `run.json` says `"complete": true`, every file it lists is there and
//! every metric of `summary.json` is a number). `report` holds the
//! directory's lock (`.memform.lock`, as a run does) while it reads and
//! writes, and writes each file by a temporary file and a rename. The
//! files it draws go into `run.json`'s list (a plot it no longer draws is
//! removed from both); nothing else in the directory changes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use polars::prelude::{IntoLazy, SortMultipleOptions};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::metrics::{Analysis, Labels, Summary, aggregate, record_frames};
use crate::pipeline::{CandidateRecord, EpisodeRecord};
use crate::report::{Gold, Inputs, read_parquet, report_files, write_text};
use crate::rundir::{DirLock, RunDir, refuse_symlink, write_json};

/// Files a run must hold for its report to be redrawn.
pub const NEEDED: &[&str] = &["run.json", "summary.json", "facts.parquet", "episodes.parquet", "episodes.jsonl", "facts.jsonl"];

fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| Error::input(path, format!("line {} column {}: {e}", e.line(), e.column())))
}

fn read_jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let de = &mut serde_json::Deserializer::from_str(l);
            serde_path_to_error::deserialize(de).map_err(|e| Error::input(path, format!("line {}: {}: {}", i + 1, e.path(), e.inner())))
        })
        .collect()
}

/// The labels a run was scored on, read from the metrics its summary has.
fn labels_of(metrics: &BTreeMap<String, Value>) -> Labels {
    let has = |k: &str| metrics.contains_key(k);
    Labels {
        gold_facts: has("turn_precision"),
        cosine: has("content_precision_cosine"),
        qa: has("qa_evidence_coverage"),
        duplicate_groups: has("dedup_precision"),
        contradictions: has("judge_accuracy"),
    }
}

/// Rebuilds the [`Analysis`] of the finished run in `dir` from its files.
pub fn load_analysis(dir: &Path) -> Result<(Value, Analysis)> {
    if !dir.is_dir() {
        return Err(Error::input(dir, "not a directory"));
    }
    for f in NEEDED {
        if !dir.join(f).is_file() {
            return Err(Error::input(dir.join(f), "missing: not a finished run directory (a run writes it at the end)"));
        }
    }
    // Complete, as `gate` reads it, except for the files this redraws.
    let mut redrawn = crate::rundir::REPORT_PLOTS.to_vec();
    redrawn.push("report.md");
    redrawn.push(crate::report::html::FILE);
    let manifest = RunDir::new(dir).read_complete_but(&redrawn, |m| Ok(m.clone()))?;
    if !manifest.is_object() {
        return Err(Error::input(dir.join("run.json"), "expected a JSON object"));
    }
    let summary_path = dir.join("summary.json");
    let summary: Summary = serde_json::from_value(read_json(&summary_path)?).map_err(|e| Error::input(&summary_path, e.to_string()))?;
    for def in crate::metrics::METRICS {
        if let Some(v) = summary.metrics.get(def.key).filter(|v| !(v.is_number() || v.is_null())) {
            return Err(Error::input(&summary_path, format!("metrics.{}: {v} is not a number", def.key)));
        }
    }
    let facts = read_parquet(&dir.join("facts.parquet"))?;
    let episodes = read_parquet(&dir.join("episodes.parquet"))?;
    let labels = labels_of(&summary.metrics);
    let per_conversation = aggregate(episodes.clone().lazy(), Some("conversation"), &labels)
        .sort(["conversation"], SortMultipleOptions::default())
        .collect()
        .map_err(|e| {
            Error::input(dir.join("episodes.parquet"), format!("aggregate per conversation: {e} (written by an older memform? re-run it)"))
        })?;
    let mut records: Vec<EpisodeRecord> = read_jsonl(&dir.join("episodes.jsonl"))?;
    let candidates: Vec<CandidateRecord> = read_jsonl(&dir.join("facts.jsonl"))?;
    let mut by_episode: BTreeMap<(String, String), Vec<CandidateRecord>> = BTreeMap::new();
    for c in candidates {
        by_episode.entry((c.conversation.clone(), c.episode.clone())).or_default().push(c);
    }
    for r in &mut records {
        r.facts = by_episode.remove(&(r.conversation.clone(), r.episode.clone())).unwrap_or_default();
    }
    if let Some(((c, e), _)) = by_episode.into_iter().next() {
        return Err(Error::input(
            dir.join("facts.jsonl"),
            format!("candidates of conversation {c}, episode {e}, which episodes.jsonl does not have"),
        ));
    }
    let (verdicts, warnings) = record_frames(&records)?;
    Ok((manifest, Analysis { summary, labels, facts, episodes, per_conversation, verdicts, warnings }))
}

/// What [`regenerate`] wrote and removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Regenerated {
    pub written: Vec<PathBuf>,
    /// Plots of the old report the new one no longer draws.
    pub removed: Vec<PathBuf>,
}

/// Redraws `report.md` and its plots in the finished run `dir`, holding
/// its lock (an error naming the holder when another process has it).
pub fn regenerate(dir: &Path) -> Result<Regenerated> {
    regenerate_with(dir, &[])
}

/// [`regenerate`] under `lock`, the lock of `dir` the caller holds (a run
/// that redraws its report after recording).
pub fn regenerate_locked(dir: &Path, lock: &DirLock) -> Result<Regenerated> {
    regenerate_locked_with(dir, lock, &[])
}

/// [`regenerate`] with extra sections in `report.md` (a calibration's
/// "Decision quality", `memform report --calibration DIR`).
pub fn regenerate_with(dir: &Path, sections: &[String]) -> Result<Regenerated> {
    if !dir.is_dir() {
        return Err(Error::input(dir, "not a directory"));
    }
    let lock = DirLock::acquire(dir)?;
    regenerate_locked_with(dir, &lock, sections)
}

/// [`regenerate_locked`] with extra sections in `report.md`.
pub fn regenerate_locked_with(dir: &Path, lock: &DirLock, sections: &[String]) -> Result<Regenerated> {
    lock.check_holds(dir)?;
    let (mut manifest, analysis) = load_analysis(dir)?;
    let plots = crate::rundir::REPORT_PLOTS;
    let listed: BTreeSet<String> = manifest
        .get("files")
        .and_then(|f| f.as_array())
        .map(|f| f.iter().filter_map(|n| n.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let gold = Gold::from_manifest(&manifest, &crate::report::explore::ran_episodes(&analysis));
    let drawn = report_files(&manifest, &analysis, sections, Inputs::read(dir, gold)?)?;
    let names: BTreeSet<String> = drawn.iter().map(|(n, _)| n.to_string()).collect();
    for name in names.iter().map(String::as_str).chain(plots.iter().copied()) {
        let p = dir.join(name);
        refuse_symlink(&p)?;
        if p.symlink_metadata().is_ok() && !listed.contains(name) {
            return Err(Error::input(&p, "not written by memform (the run.json here does not list it); move it away"));
        }
    }
    let stale: Vec<&str> = plots.iter().copied().filter(|p| listed.contains(*p) && !names.contains(*p)).collect();
    let manifest_path = dir.join("run.json");
    let mut set_files = |files: &BTreeSet<String>| -> Result<()> {
        manifest["files"] = files.iter().cloned().collect::<Vec<_>>().into();
        write_json(&manifest_path, &manifest)
    };
    // run.json lists a new plot before it is written, so it is memform's
    // even if this process dies meanwhile (the run then reads as
    // incomplete until it is redrawn or run again).
    let mut files: BTreeSet<String> = listed.union(&names).cloned().collect();
    if files != listed {
        set_files(&files)?;
    }
    for (name, text) in &drawn {
        write_text(&dir.join(name), text)?;
    }
    let mut removed = Vec::new();
    for p in stale {
        let path = dir.join(p);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::write(&path, e)),
            _ => removed.push(path),
        }
        files.remove(p);
    }
    if !removed.is_empty() {
        set_files(&files)?;
    }
    let mut written = vec![dir.join("report.md"), dir.join(crate::report::html::FILE)];
    written.extend(plots.iter().filter(|p| names.contains(**p)).map(|p| dir.join(p)));
    Ok(Regenerated { written, removed })
}
