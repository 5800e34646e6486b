//! A whole run: conversations in parallel (rayon), episodes of one
//! conversation in time order, evidence raw first, and the run's files.
//!
//! A run holds its output directory's lock from start to end, builds in a
//! directory inside it and moves its files into place when complete
//! ([`crate::rundir`]): re-running into the same directory replaces the
//! previous run's files and no others. A killed run leaves the previous run
//! as it was, and a consistent store (every committed transaction is whole)
//! in its build directory, which the next run there removes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::{IntoParallelRefIterator, ParallelIterator};
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::metrics::{Analysis, RunData, Summary, analyze};
use crate::pipeline::write::EntityRow;
use crate::pipeline::{EpisodeRecord, Stages, profiles, speaker_entities};
use crate::rundir::{DirLock, Manifest, Recorded, RunDir, RunStamp};
use crate::state::ConvState;
use crate::store::Store;
use crate::types::{Conversation, Dataset};

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
    /// The recorded boundary the stages go through, for the manifest.
    pub recorded: Recorded,
    /// Where the dataset was read from, for the manifest.
    pub dataset_path: Option<PathBuf>,
    /// Digests of the fixture set and vector cache the stages read (run.json's `recorded`).
    pub digests: serde_json::Value,
    /// The user's labels (`--tag key=value`).
    pub tags: std::collections::BTreeMap<String, String>,
    /// `out_dir`'s lock, when the caller took it already (to fail before
    /// loading anything); else the run takes it.
    pub lock: Option<Arc<DirLock>>,
    /// Evaluate retrieval over the final store against the QA items
    /// (`None`: on when the dataset has QA items; docs/metrics.md, "Retrieval (QA)").
    pub qa: Option<bool>,
}

/// A conversation the run skipped, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    pub conversation: String,
    pub error: String,
}

/// A run's episodes, skipped conversations, analysis and QA rows.
type Done = (Vec<EpisodeRecord>, Vec<Skipped>, Analysis, Option<crate::qa::QaResult>);

/// What a run produced.
pub struct RunOutput {
    pub summary: Summary,
    pub episodes: Vec<EpisodeRecord>,
    pub skipped: Vec<Skipped>,
    pub out_dir: PathBuf,
    /// The QA evaluation's warnings (evidence naming an unknown turn).
    pub qa_warnings: Vec<String>,
}

/// Runs `dataset` through the pipeline and writes the run's files.
pub fn run(dataset: &Dataset, cfg: &Config, stages: Stages<'_>, opts: &RunOptions) -> Result<RunOutput> {
    cfg.validate()?;
    if let Some(n) = opts.threads {
        crate::limits::check_threads(n)?;
    }
    let started = Instant::now();
    let out = RunDir::new(&opts.out_dir);
    let lock = match &opts.lock {
        Some(lock) => lock.clone(),
        None => Arc::new(DirLock::acquire(out.path())?),
    };
    let stamp = RunStamp::now();
    let build = out.begin(lock, &stamp)?;
    let dir = build.dir();
    let mut manifest =
        Manifest::with(dataset, cfg, stages, &opts.recorded, opts.dataset_path.as_deref(), opts.digests.clone(), opts.tags.clone());
    manifest.run = Some(stamp);
    dir.write_manifest(&manifest)?;
    let store = Store::open_for_run(&dir.file(RunDir::STORE))?;
    let total: usize = dataset.conversations.iter().map(|c| c.episodes.len()).sum();
    if let Some(p) = &opts.progress {
        p(Progress::Start { episodes: total });
    }
    let qa_on = opts.qa.unwrap_or(true) && dataset.conversations.iter().any(|c| !c.gold.qa.is_empty());
    // Two phases, each keeping both cores busy. First formation, each
    // conversation's formed memory evaluated (QA) as soon as it is formed,
    // and alongside it the QA baselines (raw turns, raw sessions), which
    // need nothing formation writes. Then the analysis, and alongside it
    // qa.parquet and qa.csv written (they need nothing the analysis finds).
    let work = || -> Result<Done> {
        let (results, qa_baselines) = rayon::join(
            || -> Vec<_> {
                dataset
                    .conversations
                    .par_iter()
                    .map(|c| {
                        let formed = run_conversation(c, cfg, stages, &store, opts.progress.as_ref());
                        let qa = qa_on.then(|| crate::qa::evaluate_formed(c, &store, stages.embedder, cfg));
                        (c.id.clone(), formed, qa)
                    })
                    .collect()
            },
            || {
                qa_on.then(|| {
                    let started = Instant::now();
                    let r = crate::qa::evaluate_sources(dataset, None, stages.embedder, cfg, true);
                    (r, started.elapsed().as_secs_f64() * 1000.0)
                })
            },
        );
        let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
        let mut episodes = Vec::new();
        let mut skipped = opts.skipped_inputs.clone();
        let mut qa_formed = crate::qa::QaResult::default();
        for (id, r, qa) in results {
            if let Some(qa) = qa {
                qa_formed.absorb(qa?);
            }
            match r {
                Ok(eps) => episodes.extend(eps),
                Err(e) if opts.keep_going => skipped.push(Skipped { conversation: id, error: crate::error::chain(&e) }),
                Err(e) => return Err(Error::Other(format!("conversation {id}: {}", crate::error::chain(&e)))),
            }
        }
        let qa = match qa_baselines {
            Some((baselines, baselines_ms)) => Some((qa_formed.joined(baselines?, dataset), baselines_ms)),
            None => None,
        };
        let live = store.live_fact_ids()?;
        let (analysis, qa_written) = rayon::join(
            || {
                analyze(&RunData {
                    dataset,
                    episodes: &episodes,
                    live_ids: &live,
                    skipped_conversations: skipped.len(),
                    wall_ms,
                    embedder: Some(stages.embedder),
                })
            },
            || {
                let started = Instant::now();
                qa.as_ref()
                    .map_or(Ok(0.0), |(rows, _)| crate::qa::write(dir.path(), rows).map(|()| started.elapsed().as_secs_f64() * 1000.0))
            },
        );
        let mut analysis = analysis?;
        let qa_write_ms = qa_written?;
        let qa_rows = qa.map(|(rows, baselines_ms)| {
            analysis.summary.metrics.extend(crate::qa::summary_metrics(&rows));
            // The baselines are evaluated alongside formation, each
            // conversation's formed memory once it is formed, and the
            // files written alongside the analysis.
            analysis.summary.timings.insert("qa_baselines_ms".into(), baselines_ms);
            analysis.summary.timings.insert("qa_write_ms".into(), qa_write_ms);
            rows
        });
        Ok((episodes, skipped, analysis, qa_rows))
    };
    let (episodes, skipped, analysis, qa_rows) = match opts.threads {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build()
            .map_err(|e| Error::Other(format!("start {n} threads: {e}")))?
            .install(work),
        None => work(),
    }?;
    let manifest_value = manifest.to_value()?;
    dir.write_records(&analysis.summary, &episodes)?;
    crate::report::write_run_reports(dir.path(), &manifest_value, &analysis)?;
    let qa_warnings = qa_rows.map(|qa| qa.warnings).unwrap_or_default();
    // Closed, so SQLite's -wal and -shm files are gone before the store moves.
    drop(store);
    build.commit(&mut manifest)?;
    let Analysis { summary, .. } = analysis;
    Ok(RunOutput { summary, episodes, skipped, out_dir: opts.out_dir.clone(), qa_warnings })
}

fn run_conversation(
    conv: &Conversation,
    cfg: &Config,
    stages: Stages<'_>,
    store: &Store,
    progress: Option<&ProgressFn>,
) -> Result<Vec<EpisodeRecord>> {
    let profile = profiles::by_name(&cfg.profile)?;
    let mut state = ConvState::default();
    let speakers = speaker_entities(conv, stages.embedder)?;
    let rows: Vec<EntityRow> = speakers.iter().map(EntityRow::of).collect();
    store.write_conversation(&conv.id, &conv.speakers, &rows)?;
    state.entities = speakers;
    // Evidence, raw first: the whole conversation's, before any of it is processed.
    store.write_evidence_from(&conv.id, 0, &conv.episodes)?;
    let mut out = Vec::with_capacity(conv.episodes.len());
    for episode in &conv.episodes {
        if !cfg.enabled {
            out.push(EpisodeRecord::disabled(&conv.id, episode));
            continue;
        }
        let rec = profile.episode(stages, conv, episode, &mut state, cfg, store)?;
        if let Some(p) = progress {
            p(Progress::Episode { conversation: conv.id.clone(), episode: episode.id.clone() });
        }
        out.push(rec);
    }
    Ok(out)
}
