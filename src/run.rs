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
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::metrics::{Analysis, RunData, Summary, analyze_taking_beside};
use crate::pipeline::Config;
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
    /// Extra sections for `report.md` (a calibration's "Decision quality").
    pub report_sections: Vec<String>,
}

/// A conversation the run skipped, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    pub conversation: String,
    pub error: String,
}

/// A conversation's formed-memory QA: not formed yet; formed (its QA task
/// evaluates it); its QA task came first (its formation task evaluates it).
const FORMING: u8 = 0;
const FORMED: u8 = 1;
const LEFT_TO_FORMATION: u8 = 2;

/// A task's result, filled once by the task and taken once.
type Slot<T> = Mutex<Option<T>>;

/// A run's episodes, skipped conversations and analysis.
type Analysed = (Vec<EpisodeRecord>, Vec<Skipped>, Analysis);

/// The QA rows (every source), the baselines' time and the files' time (ms).
type QaDone = (crate::qa::QaResult, Vec<crate::report::explore::QaItem>, std::collections::BTreeMap<String, serde_json::Value>, f64, f64);

/// A slot's lock (a panic elsewhere does not stop the run reading it).
fn guard<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A slot's value, taken.
fn take<T>(m: &Mutex<Option<T>>) -> Option<T> {
    guard(m).take()
}

/// What a run produced.
pub struct RunOutput {
    pub summary: Summary,
    /// The episodes' records, without their candidates (`facts` is empty:
    /// they are the rows of `facts.jsonl`, dropped once it is written).
    pub episodes: Vec<EpisodeRecord>,
    pub skipped: Vec<Skipped>,
    pub out_dir: PathBuf,
    /// The QA evaluation's warnings (evidence naming an unknown turn, an empty question).
    pub qa_warnings: Vec<String>,
}

/// Runs `dataset` through the pipeline and writes the run's files.
pub fn run(dataset: &Dataset, cfg: &Config, stages: Stages<'_>, opts: &RunOptions) -> Result<RunOutput> {
    cfg.validate()?;
    if let Some(n) = opts.threads {
        crate::limits::check_threads(n)?;
    }
    // A combination of stage modes the profile refuses is one error, before
    // anything starts (not one per conversation).
    crate::pipeline::profiles::by_name(&cfg.profile)?.check_stages(stages)?;
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
    if !crate::pipeline::profiles::by_name(&cfg.profile)?.searches_while_forming() {
        store.defer_search_index()?;
    }
    let total: usize = dataset.conversations.iter().map(|c| c.episodes.len()).sum();
    if let Some(p) = &opts.progress {
        p(Progress::Start { episodes: total });
    }
    let qa_on = opts.qa.unwrap_or(true) && dataset.conversations.iter().any(|c| !c.gold.qa.is_empty());
    // One queue of tasks, taken in order by the run's threads: each
    // conversation's formation, then each conversation's formed-memory QA
    // (its facts are final once it is formed), then each conversation's QA
    // baselines (raw turns, raw sessions; they need nothing formation
    // writes). So formation is never slowed by QA, which takes the cores it
    // leaves idle. A formed-memory QA task that comes before its conversation
    // is formed leaves the work to the formation task. The last formation task
    // to finish analyses the run at once, alongside the QA still running; the
    // last QA part to be ready joins the rows and writes qa.parquet/qa.csv.
    let n = dataset.conversations.len();
    let formed: Vec<Slot<(String, Result<Vec<EpisodeRecord>>)>> = (0..n).map(|_| Mutex::new(None)).collect();
    let formed_qa: Vec<Mutex<Option<Result<crate::qa::QaResult>>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let qa_state: Vec<AtomicU8> = (0..n).map(|_| AtomicU8::new(FORMING)).collect();
    let baselines: Vec<Slot<(Result<crate::qa::QaResult>, f64)>> = (0..n).map(|_| Mutex::new(None)).collect();
    // What each conversation's two QA tasks share (its questions' and turns' vectors).
    let shared: Vec<crate::qa::Shared> = (0..n).map(|_| crate::qa::Shared::new(true)).collect();
    let (forming, qa_parts) = (AtomicUsize::new(n), AtomicUsize::new(2 * n));
    let analysed: Mutex<Option<Result<Analysed>>> = Mutex::new(None);
    let qa_done: Mutex<Option<Result<QaDone>>> = Mutex::new(None);
    let finish_qa = || {
        let started = Instant::now();
        let done = (|| -> Result<QaDone> {
            let (mut qa, mut raw, mut baselines_ms) = (crate::qa::QaResult::default(), crate::qa::QaResult::default(), 0.0);
            for slot in &formed_qa {
                if let Some(r) = take(slot) {
                    qa.absorb(r?);
                }
            }
            for slot in &baselines {
                if let Some((r, ms)) = take(slot) {
                    raw.absorb(r?);
                    baselines_ms += ms;
                }
            }
            let qa = qa.joined(raw, dataset);
            // The report's QA items and the summary's QA figures from the
            // rows, while the files are written (off the report's thread).
            let ((written, items), metrics) = rayon::join(
                || rayon::join(|| crate::qa::write(dir.path(), &qa), || crate::report::explore::qa_items_of(&qa)),
                || crate::qa::summary_metrics(&qa),
            );
            written?;
            Ok((qa, items, metrics, baselines_ms, started.elapsed().as_secs_f64() * 1000.0))
        })();
        *guard(&qa_done) = Some(done);
    };
    let qa_part_done = || {
        if qa_on && qa_parts.fetch_sub(1, Ordering::AcqRel) == 1 {
            finish_qa();
        }
    };
    let formed_qa_of = |i: usize, c: &Conversation| {
        *guard(&formed_qa[i]) = Some(crate::qa::evaluate_formed(c, &store, stages.embedder, cfg, &shared[i]));
        qa_part_done();
    };
    let analyse = || -> Result<Analysed> {
        let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
        let mut episodes = Vec::new();
        let mut skipped = opts.skipped_inputs.clone();
        for slot in &formed {
            let Some((id, r)) = take(slot) else { continue };
            match r {
                Ok(eps) => episodes.extend(eps),
                Err(e) if opts.keep_going => skipped.push(Skipped { conversation: id, error: crate::error::chain(&e) }),
                Err(e) => return Err(Error::Other(format!("conversation {id}: {}", crate::error::chain(&e)))),
            }
        }
        let live = store.live_fact_ids()?;
        // facts.jsonl is written while the frames are built: the analysis
        // then takes the candidates' records out (on a long run, the
        // largest structure held); nothing after reads them.
        let analysis = analyze_taking_beside(
            &RunData {
                dataset,
                episodes: &[],
                live_ids: &live,
                skipped_conversations: skipped.len(),
                wall_ms,
                embedder: Some(stages.embedder),
            },
            &mut episodes,
            |records| dir.write_facts(records),
        )?;
        Ok((episodes, skipped, analysis))
    };
    // The longest conversations first (by turns; ties in the dataset's
    // order): the threads' last tasks are then the short ones, so formation
    // ends with less of it on one thread while the other waits. Each
    // conversation's results keep its place in the dataset.
    let mut by_size: Vec<(usize, &Conversation)> = dataset.conversations.iter().enumerate().collect();
    by_size.sort_by_key(|(_, c)| std::cmp::Reverse(c.episodes.iter().map(|e| e.turns.len()).sum::<usize>()));
    let work = || {
        rayon::scope_fifo(|s| {
            for &(i, c) in &by_size {
                let (formed, qa_state, forming, analysed, store, analyse, formed_qa_of) =
                    (&formed, &qa_state, &forming, &analysed, &store, &analyse, &formed_qa_of);
                s.spawn_fifo(move |_| {
                    let r = run_conversation(c, cfg, stages, store, opts.progress.as_ref());
                    *guard(&formed[i]) = Some((c.id.clone(), r));
                    // The QA task came first and left it here.
                    let qa_here = qa_on && qa_state[i].compare_exchange(FORMING, FORMED, Ordering::AcqRel, Ordering::Acquire).is_err();
                    if forming.fetch_sub(1, Ordering::AcqRel) == 1 {
                        if qa_here {
                            let (_, a) = rayon::join(|| formed_qa_of(i, c), analyse);
                            *guard(analysed) = Some(a);
                        } else {
                            *guard(analysed) = Some(analyse());
                        }
                    } else if qa_here {
                        formed_qa_of(i, c);
                    }
                });
            }
            if qa_on {
                for &(i, c) in &by_size {
                    let (qa_state, formed_qa_of) = (&qa_state, &formed_qa_of);
                    s.spawn_fifo(move |_| {
                        match qa_state[i].compare_exchange(FORMING, LEFT_TO_FORMATION, Ordering::AcqRel, Ordering::Acquire) {
                            Ok(_) => {}
                            Err(_) => formed_qa_of(i, c),
                        }
                    });
                }
                for &(i, c) in &by_size {
                    let (baselines, qa_part_done, shared) = (&baselines, &qa_part_done, &shared);
                    s.spawn_fifo(move |_| {
                        let started = Instant::now();
                        let r = crate::qa::evaluate_baselines(c, stages.embedder, cfg, &shared[i]);
                        *guard(&baselines[i]) = Some((r, started.elapsed().as_secs_f64() * 1000.0));
                        qa_part_done();
                    });
                }
            }
        });
    };
    match opts.threads {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build()
            .map_err(|e| Error::Other(format!("start {n} threads: {e}")))?
            .install(work),
        None => work(),
    }
    // Formation is done: the run-private store's last batch is committed.
    store.finish()?;
    let (episodes, skipped, mut analysis) = match take(&analysed) {
        Some(done) => done?,
        None => analyse()?,
    };
    // The analysis's intermediate frames, freed on other threads, go back to
    // the system before the report is drawn on this one (crate::memory).
    crate::memory::release_free();
    let (mut qa_rows, mut qa_input) = (None, None);
    if qa_on {
        let (qa, items, metrics, baselines_ms, write_ms) =
            take(&qa_done).unwrap_or_else(|| Err(Error::Other("the QA evaluation did not finish".into())))?;
        analysis.summary.metrics.extend(metrics);
        // The baselines' evaluation, summed over conversations (it overlaps
        // formation and the analysis), and the writing of qa.parquet/qa.csv
        // (with the items and figures made alongside).
        analysis.summary.timings.insert("qa_baselines_ms".into(), baselines_ms);
        analysis.summary.timings.insert("qa_write_ms".into(), write_ms);
        qa_rows = Some(qa);
        qa_input = Some(crate::report::explore::QaInput::Items(items));
    }
    let mut sections = opts.report_sections.clone();
    if cfg.profile == "dreaming" {
        // The ontology's own figures (docs/metrics.md, "The dreaming profile").
        let figures = crate::pipeline::dreaming::metrics::summary_metrics(&store, dataset)?;
        sections.push(crate::pipeline::dreaming::metrics::report_section(&figures));
        analysis.summary.metrics.insert("dreaming".into(), serde_json::json!(figures));
    }
    let manifest_value = manifest.to_value()?;
    // facts.jsonl is written (by `analyse`).
    dir.write_summary_episodes(&analysis.summary, &episodes)?;
    let gold = crate::report::Gold::of_dataset(dataset, &crate::report::explore::ran_episodes(&analysis));
    let inputs = crate::report::Inputs { qa: qa_input, gold };
    let summary = crate::report::write_run_reports_taking(dir.path(), &manifest_value, analysis, &sections, inputs)?;
    let qa_warnings = qa_rows.map(|qa| qa.warnings.into_iter().chain(qa.empty_questions).collect()).unwrap_or_default();
    // Closed, so SQLite's -wal and -shm files are gone before the store moves.
    drop(store);
    build.commit(&mut manifest)?;
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
    // Formed: its facts go into the search index now if it was deferred.
    store.index_conversation(&conv.id)?;
    Ok(out)
}
