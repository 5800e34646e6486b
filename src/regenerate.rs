//! `memform report RUN_DIR`: redraws a finished run's `report.md` and its
//! plots from the files the run wrote, with no pipeline work and no model —
//! after a change to the report's format, or for an old run.
//!
//! The run's [`Analysis`] is rebuilt from its files: `summary.json` (the
//! metrics and timings, as they are), `facts.parquet` and
//! `episodes.parquet` (the frames), the per-conversation table aggregated
//! from the episodes frame as a run aggregates it, and the verdicts and
//! warnings from `episodes.jsonl` and `facts.jsonl`. `run.json` supplies
//! what was run. Nothing else in the directory changes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use polars::prelude::{IntoLazy, SortMultipleOptions};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::metrics::{Analysis, Labels, Summary, aggregate, record_frames};
use crate::pipeline::{CandidateRecord, EpisodeRecord};
use crate::report::{PLOT_OUTCOMES, PLOT_SCORES, PLOT_STORED, PLOT_VERDICTS, PLOT_WARNINGS, read_parquet, write_report_md_with};

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
    let manifest = read_json(&dir.join("run.json"))?;
    if !manifest.is_object() {
        return Err(Error::input(dir.join("run.json"), "expected a JSON object"));
    }
    let summary_path = dir.join("summary.json");
    let summary: Summary = serde_json::from_value(read_json(&summary_path)?).map_err(|e| Error::input(&summary_path, e.to_string()))?;
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

/// Redraws `report.md` and its plots in the finished run `dir`.
pub fn regenerate(dir: &Path) -> Result<Regenerated> {
    regenerate_with(dir, &[])
}

/// [`regenerate`] with extra sections in `report.md` (a calibration's
/// "Decision quality", `memform report --calibration DIR`).
pub fn regenerate_with(dir: &Path, sections: &[String]) -> Result<Regenerated> {
    let (manifest, analysis) = load_analysis(dir)?;
    let plots = [PLOT_STORED, PLOT_OUTCOMES, PLOT_VERDICTS, PLOT_WARNINGS, PLOT_SCORES];
    let before: Vec<&str> = plots.iter().copied().filter(|p| dir.join(p).is_file()).collect();
    for p in &before {
        let path = dir.join(p);
        std::fs::remove_file(&path).map_err(|e| Error::write(&path, e))?;
    }
    write_report_md_with(dir, &manifest, &analysis, sections)?;
    let mut written = vec![dir.join("report.md")];
    written.extend(plots.iter().filter(|p| dir.join(p).is_file()).map(|p| dir.join(p)));
    let removed = before.iter().filter(|p| !dir.join(p).is_file()).map(|p| dir.join(p)).collect();
    Ok(Regenerated { written, removed })
}
