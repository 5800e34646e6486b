//! A whole run: conversations in parallel (rayon), episodes of one
//! conversation in time order, evidence raw first, and the run's files.
//!
//! Re-running into the same output directory starts clean: the previous
//! run's files there are removed first. A killed run leaves a consistent
//! store (every committed transaction is whole) and its partial outputs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use rayon::prelude::{IntoParallelRefIterator, ParallelIterator};
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::metrics::{Analysis, RunData, Summary, analyze};
use crate::pipeline::{EpisodeRecord, Stages, back, front, speaker_entities};
use crate::state::ConvState;
use crate::store::Store;
use crate::types::{Conversation, Dataset};
use crate::write::EntityRow;

/// Files a run writes into its output directory.
pub const RUN_FILES: &[&str] =
    &["run.json", "summary.json", "facts.jsonl", "episodes.jsonl", "store.sqlite", "store.sqlite-wal", "store.sqlite-shm"];

/// Environment variable for fault injection in tests: abort the process
/// right after this many episode write transactions have committed.
pub const FAULT_ABORT_ENV: &str = "MEMFORM_FAULT_ABORT_AFTER_WRITES";

/// Progress events for the CLI's bar (the library never prints).
#[derive(Debug, Clone)]
pub enum Progress {
    Start { episodes: usize },
    Episode { conversation: String, episode: String },
}

pub type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;

/// How to run.
#[derive(Clone, Default)]
pub struct RunOptions {
    pub out_dir: PathBuf,
    /// Worker threads; `None` = rayon's default (one per core).
    pub threads: Option<usize>,
    /// Skip a conversation that fails instead of stopping the run.
    pub keep_going: bool,
    pub progress: Option<ProgressFn>,
    /// Conversations already skipped while loading (`--keep-going`).
    pub skipped_inputs: Vec<Skipped>,
    /// What the manifest says about the run (mode, stage ids, dataset path…).
    pub manifest_extra: serde_json::Map<String, serde_json::Value>,
}

/// A conversation the run skipped, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    pub conversation: String,
    pub error: String,
}

/// What a run produced.
pub struct RunOutput {
    pub summary: Summary,
    pub episodes: Vec<EpisodeRecord>,
    pub skipped: Vec<Skipped>,
    pub out_dir: PathBuf,
}

/// Runs `dataset` through the pipeline and writes the run's files.
pub fn run(dataset: &Dataset, cfg: &Config, stages: Stages<'_>, opts: &RunOptions) -> Result<RunOutput> {
    cfg.validate()?;
    let started = Instant::now();
    prepare_out_dir(&opts.out_dir)?;
    let manifest = write_manifest(dataset, cfg, stages, opts)?;
    let store = Store::open(&opts.out_dir.join("store.sqlite"))?;
    let total: usize = dataset.conversations.iter().map(|c| c.episodes.len()).sum();
    if let Some(p) = &opts.progress {
        p(Progress::Start { episodes: total });
    }
    let abort_after: Option<usize> = std::env::var(FAULT_ABORT_ENV).ok().and_then(|v| v.parse().ok());
    let writes = AtomicUsize::new(0);
    let work = || -> Vec<(String, Result<Vec<EpisodeRecord>>)> {
        dataset
            .conversations
            .par_iter()
            .map(|c| {
                (c.id.clone(), run_conversation(c, cfg, stages, &store, opts.progress.as_ref(), &writes, abort_after))
            })
            .collect()
    };
    let results = match opts.threads {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build()
            .map_err(|e| Error::Other(format!("start {n} threads: {e}")))?
            .install(work),
        None => work(),
    };
    let mut episodes = Vec::new();
    let mut skipped = opts.skipped_inputs.clone();
    for (id, r) in results {
        match r {
            Ok(eps) => episodes.extend(eps),
            Err(e) if opts.keep_going => skipped.push(Skipped { conversation: id, error: crate::error::chain(&e) }),
            Err(e) => return Err(Error::Other(format!("conversation {id}: {}", crate::error::chain(&e)))),
        }
    }
    let live = live_fact_ids(&store)?;
    let analysis = analyze(&RunData {
        dataset,
        episodes: &episodes,
        live_ids: &live,
        skipped_conversations: skipped.len(),
        wall_ms: started.elapsed().as_secs_f64() * 1000.0,
        embedder: Some(stages.embedder),
    })?;
    write_outputs(&opts.out_dir, &analysis.summary, &episodes)?;
    crate::report::write_run_reports(&opts.out_dir, &manifest, &analysis)?;
    let Analysis { summary, .. } = analysis;
    Ok(RunOutput { summary, episodes, skipped, out_dir: opts.out_dir.clone() })
}

/// Ids of the facts live in `store` (neither invalidated nor superseded).
pub fn live_fact_ids(store: &Store) -> Result<std::collections::BTreeSet<String>> {
    Ok(store.facts()?.into_iter().filter(|f| f.invalid_at.is_none() && f.superseded_by.is_none()).map(|f| f.id).collect())
}

fn run_conversation(
    conv: &Conversation,
    cfg: &Config,
    stages: Stages<'_>,
    store: &Store,
    progress: Option<&ProgressFn>,
    writes: &AtomicUsize,
    abort_after: Option<usize>,
) -> Result<Vec<EpisodeRecord>> {
    let mut state = ConvState::default();
    let speakers = speaker_entities(conv, stages.embedder)?;
    let rows: Vec<EntityRow> =
        speakers.iter().map(|e| EntityRow { id: e.id.clone(), name: e.name.clone(), entity_type: e.entity_type }).collect();
    store.write_conversation(&conv.id, &conv.speakers, &rows)?;
    state.entities = speakers;
    let mut out = Vec::with_capacity(conv.episodes.len());
    for (seq, episode) in conv.episodes.iter().enumerate() {
        store.write_evidence(&conv.id, seq, episode)?;
        let f = front(stages, conv, episode, &state, cfg)?;
        let rec = back(&f, conv, episode, &mut state, cfg, stages.judge, store)?;
        let n = writes.fetch_add(1, Ordering::SeqCst) + 1;
        if abort_after.is_some_and(|a| n >= a) {
            std::process::abort();
        }
        if let Some(p) = progress {
            p(Progress::Episode { conversation: conv.id.clone(), episode: episode.id.clone() });
        }
        out.push(rec);
    }
    Ok(out)
}

fn prepare_out_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, e))?;
    for f in RUN_FILES.iter().chain(crate::report::REPORT_FILES) {
        let p = dir.join(f);
        if p.exists() {
            std::fs::remove_file(&p).map_err(|e| Error::write(&p, e))?;
        }
    }
    Ok(())
}

fn write_manifest(dataset: &Dataset, cfg: &Config, stages: Stages<'_>, opts: &RunOptions) -> Result<serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("memform_version".into(), env!("CARGO_PKG_VERSION").into());
    m.insert("build".into(), crate::provenance::build_info());
    m.insert(
        "dataset".into(),
        serde_json::json!({
            "name": dataset.name,
            "format": dataset.format,
            "digest": dataset.digest,
            "conversations": dataset.conversations.len(),
        }),
    );
    m.insert("write_mode".into(), cfg.write_mode().as_str().into());
    m.insert("extractor".into(), stages.extractor.id().into());
    m.insert("embedder".into(), stages.embedder.id().into());
    m.insert("judge".into(), stages.judge.id().into());
    m.insert("config".into(), serde_json::to_value(cfg).unwrap_or_default());
    for (k, v) in &opts.manifest_extra {
        m.insert(k.clone(), v.clone());
    }
    let manifest = serde_json::Value::Object(m);
    write_json(&opts.out_dir.join("run.json"), &manifest)?;
    Ok(manifest)
}

/// Writes `value` as pretty JSON with a trailing newline.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| Error::Other(format!("serialise {}: {e}", path.display())))?;
    text.push('\n');
    std::fs::write(path, text).map_err(|e| Error::write(path, e))
}

fn write_outputs(dir: &Path, summary: &Summary, episodes: &[EpisodeRecord]) -> Result<()> {
    write_json(&dir.join("summary.json"), summary)?;
    let jsonl = |name: &str, rows: &mut dyn Iterator<Item = serde_json::Result<String>>| -> Result<()> {
        let path = dir.join(name);
        let file = std::fs::File::create(&path).map_err(|e| Error::write(&path, e))?;
        let mut w = std::io::BufWriter::new(file);
        for row in rows {
            let row = row.map_err(|e| Error::Other(format!("serialise {name}: {e}")))?;
            writeln!(w, "{row}").map_err(|e| Error::write(&path, e))?;
        }
        w.flush().map_err(|e| Error::write(&path, e))
    };
    jsonl("facts.jsonl", &mut episodes.iter().flat_map(|e| &e.facts).map(serde_json::to_string))?;
    jsonl("episodes.jsonl", &mut episodes.iter().map(serde_json::to_string))
}
