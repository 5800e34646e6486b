//! `memform calibrate`: the quality of the pipeline's decisions on
//! labelled pairs of statements. Each pair (one speaker, two sessions) runs
//! through the profile's real stages as two episodes of one conversation
//! (the pair set's turns, or with `--extract gold` its third-person
//! observations as the candidates); what the stages left decides the pair's
//! outcome (`merged`, `replaced`, `both_kept`, `not_formed`: [`score`]), and
//! the outcomes against the labels give the rates. The same pairs run again
//! for every value of each threshold the profile's decisions read, with the
//! fronts (extraction, vectors) computed once and shared, as a sweep does;
//! each threshold gets its curve and a recommended value. Outputs:
//! `calibration.csv`/`.parquet`, `curves.csv`, `curve-<key>.svg`,
//! `report.md`, `summary.json`, `calibration.json`, `run.json` (through
//! [`crate::rundir`]: the directory's lock, a build directory, the move
//! into place). Definitions in docs/metrics.md, "Decision quality".

pub mod input;
pub mod score;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::{IntoParallelRefIterator, ParallelIterator};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::pipeline::Config;
use crate::pipeline::judge::Judge;
use crate::pipeline::{EpisodeFront, EpisodeRecord, StageMode, Stages, profiles, speaker_entities};
use crate::rundir::{DirLock, Manifest, Recorded, RunDir, RunStamp};
use crate::state::{ConvState, EntityRec};
use crate::store::Store;
use crate::types::{Conversation, Dataset, DatasetFormat, Episode, Gold, GoldFact, Turn};
pub use input::{Label, Pair, Source, Split};
pub use score::{Candidate, CurvePoint, Limits, Observed, Outcome, Rates, Ratio, Replacement};

/// `calibration.json`'s format.
pub const FORMAT: &str = "memform-calibration/1";

/// The files a calibration writes besides `run.json` and the curves' SVGs.
pub const FILES: &[&str] = crate::names::CALIBRATE_FILES;

/// The episodes' ids in a pair's conversation.
pub const EPISODES: [&str; 2] = ["session_1", "session_2"];

/// The pairs as a dataset: one conversation per pair (its id the pair's),
/// the speaker's two turns as two episodes dated by their sessions, the
/// observations as the gold facts of their episodes, each with its turn as
/// evidence. `observations_as_turns` puts the observation in place of the
/// turn (the memorix profile forms from turns, so that is how gold
/// extraction reaches it).
pub fn dataset(name: &str, digest: &str, pairs: &[Pair], observations_as_turns: bool) -> Dataset {
    let conversations = pairs
        .iter()
        .map(|p| {
            let mut speakers = vec![p.speaker.clone()];
            if !p.other.trim().is_empty() && p.other != p.speaker {
                speakers.push(p.other.clone());
            }
            let sides = [&p.first, &p.second];
            let episodes = sides
                .iter()
                .enumerate()
                .map(|(i, s)| Episode {
                    id: EPISODES[i].to_string(),
                    timestamp: Some(format!("{}T12:00:00", s.date)),
                    turns: vec![Turn {
                        id: format!("s{}:1", i + 1),
                        speaker: p.speaker.clone(),
                        text: if observations_as_turns { s.observation.clone() } else { s.turn.clone() },
                    }],
                    observations: Vec::new(),
                })
                .collect();
            let facts = sides
                .iter()
                .enumerate()
                .map(|(i, s)| GoldFact {
                    id: format!("g{}", i + 1),
                    episode: EPISODES[i].to_string(),
                    text: s.observation.clone(),
                    evidence: vec![format!("s{}:1", i + 1)],
                    subject: None,
                    predicate: None,
                    object: None,
                })
                .collect();
            Conversation { id: p.id.clone(), speakers, episodes, gold: Gold { facts, ..Gold::default() } }
        })
        .collect();
    Dataset { name: name.to_string(), format: DatasetFormat::Native, digest: digest.to_string(), conversations }
}

/// SHA-256 over the input files' names and bytes, in order (the manifest's dataset digest).
pub fn digest_files(paths: &[PathBuf]) -> Result<String> {
    let mut h = Sha256::new();
    for p in paths {
        let bytes = std::fs::read(p).map_err(|e| Error::io(p, e))?;
        h.update(p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default().as_bytes());
        h.update([0]);
        h.update(&bytes);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// The config keys whose value the profile's decisions on a pair depend on
/// (the curves' keys): soda's dedupe, pairing and entity cut-offs, signet's
/// near-duplicate and search cut-offs, memorix's resolve cut-offs (and the
/// store search's, when Resolve searches the store).
pub fn decision_keys(cfg: &Config) -> Vec<&'static str> {
    match cfg.profile.as_str() {
        "signet" => vec!["near_dup_threshold", "search_min_score", "search_alpha"],
        "memorix" => {
            let mut keys = vec!["memorix_duplicate_min", "memorix_high_min", "memorix_medium_min"];
            if cfg.memorix.search == "store" {
                keys.extend(["search_min_score", "search_alpha"]);
            }
            keys
        }
        _ => vec!["near_dup_threshold", "contradiction_band_min", "entity_merge_threshold"],
    }
}

/// The grid a key's curve runs over by default: `(start, stop, step)`.
pub fn default_grid(key: &str) -> (f64, f64, f64) {
    match key {
        "search_min_score" => (0.0, 0.5, 0.02),
        "search_alpha" => (0.0, 1.0, 0.05),
        "memorix_medium_min" => (0.1, 0.9, 0.02),
        "memorix_high_min" => (0.3, 1.0, 0.02),
        "contradiction_band_min" => (0.4, 1.0, 0.02),
        _ => (0.6, 1.0, 0.02),
    }
}

/// A key's curve values: its grid (`--grid` or [`default_grid`]) with the
/// base config's value added when the grid misses it, ascending.
fn curve_values(key: &str, grid: Option<&[String]>, base: f64) -> Result<Vec<f64>> {
    let mut vals: Vec<f64> = match grid {
        Some(v) => v
            .iter()
            .map(|s| s.trim().parse::<f64>().map_err(|_| Error::Config(format!("--grid {key}={s}: not a number"))))
            .collect::<Result<_>>()?,
        None => {
            let (start, stop, step) = default_grid(key);
            let n = ((stop - start) / step + 1e-9).floor() as usize;
            (0..=n).map(|i| ((start + step * i as f64) * 1e6).round() / 1e6).collect()
        }
    };
    if !vals.iter().any(|v| (v - base).abs() < 1e-9) {
        vals.push(base);
    }
    vals.sort_by(f64::total_cmp);
    vals.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
    Ok(vals)
}

/// What to calibrate on and how.
pub struct Options {
    pub source: Source,
    /// The pairs' name (`pairs-test`, `SICK_train`, …): the manifest's dataset name.
    pub name: String,
    pub out_dir: PathBuf,
    pub limits: Limits,
    /// Per-key grids given on the command line (`--grid KEY=…`), overriding [`default_grid`].
    pub grids: BTreeMap<String, Vec<String>>,
    /// Draw no curves (the base run only).
    pub no_curves: bool,
    pub recorded: Recorded,
    pub digests: serde_json::Value,
    pub dataset_path: Option<PathBuf>,
    pub tags: BTreeMap<String, String>,
    /// The out directory's lock, when the caller took it already.
    pub lock: Option<Arc<DirLock>>,
    /// Worker threads (`None`: one per core).
    pub threads: Option<usize>,
}

/// One pair's row: its label and kind, its outcome and what the stages left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairRow {
    pub id: String,
    pub split: String,
    pub label: Label,
    pub kind: String,
    pub outcome: Outcome,
    pub first_text: String,
    pub second_text: String,
    pub observed: Observed,
}

/// One threshold's curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    pub key: String,
    /// The base config's value.
    pub default: f64,
    pub points: Vec<CurvePoint>,
    /// Values refused with the other keys at their base values (e.g.
    /// `contradiction_band_min` above `near_dup_threshold`).
    pub skipped: Vec<f64>,
    /// The recommended value ([`score::recommend`]); `None`: no value meets the limits.
    pub recommended: Option<f64>,
}

/// A kind's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindRow {
    pub kind: String,
    /// Its labels (usually one).
    pub labels: Vec<Label>,
    pub outcomes: BTreeMap<Outcome, usize>,
    pub rates: Rates,
}

/// A whole calibration (`calibration.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub format: String,
    pub source: Source,
    pub name: String,
    pub profile: String,
    pub mode: String,
    pub embedder: String,
    pub limits: Limits,
    pub pairs: Vec<PairRow>,
    /// label → outcome → pairs.
    pub matrix: Matrix,
    pub rates: Rates,
    pub by_kind: Vec<KindRow>,
    pub curves: Vec<Curve>,
}

impl Calibration {
    /// `summary.json`'s `metrics`: the rates under the source's names, the
    /// matrix (`<source>_confusion`) and the per-kind rates (`<source>_by_kind`).
    pub fn metrics(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m: serde_json::Map<String, serde_json::Value> =
            self.rates.metrics(self.source).into_iter().map(|(k, v)| (k, serde_json::json!(v))).collect();
        let src = self.source.as_str();
        m.insert(format!("{src}_pairs"), serde_json::json!(self.pairs.len()));
        let matrix: serde_json::Map<String, serde_json::Value> = self
            .matrix
            .iter()
            .map(|(l, row)| (l.as_str().to_string(), row.iter().map(|(o, n)| (o.as_str().to_string(), serde_json::json!(n))).collect()))
            .collect();
        m.insert(format!("{src}_confusion"), serde_json::Value::Object(matrix));
        let kinds: serde_json::Map<String, serde_json::Value> =
            self.by_kind.iter().map(|k| (k.kind.clone(), serde_json::to_value(k.rates.metrics(self.source)).unwrap_or_default())).collect();
        m.insert(format!("{src}_by_kind"), serde_json::Value::Object(kinds));
        for c in &self.curves {
            if let Some(v) = c.recommended {
                m.insert(format!("{src}_recommended_{}", c.key), serde_json::json!(v));
            }
        }
        m
    }
}

/// A pair's threshold-independent work: its speakers' entities and both
/// episodes' fronts.
struct PairFronts {
    speakers: Vec<EntityRec>,
    fronts: [EpisodeFront; 2],
}

/// Runs one pair's conversation: both episodes through the profile's
/// stages against `store`, from `fronts` when given (else computed, and
/// returned); what they left.
fn run_pair(
    conv: &Conversation,
    cfg: &Config,
    stages: Stages<'_>,
    store: &Store,
    fronts: Option<&PairFronts>,
) -> Result<(Observed, Option<PairFronts>)> {
    let profile = profiles::by_name(&cfg.profile)?;
    let speakers = match fronts {
        Some(f) => f.speakers.clone(),
        None => speaker_entities(conv, stages.embedder)?,
    };
    let mut state = ConvState { entities: speakers.clone(), ..ConvState::default() };
    let (e1, e2) = match conv.episodes.as_slice() {
        [a, b] => (a, b),
        _ => return Err(Error::Other(format!("pair {}: expected two episodes", conv.id))),
    };
    let made1;
    let f1 = match fronts {
        Some(f) => &f.fronts[0],
        None => {
            made1 = profile.front(stages, conv, e1, &state, cfg)?;
            &made1
        }
    };
    let _r1 = profile.back(f1, conv, e1, &mut state, cfg, stages, store)?;
    let first: Vec<(String, String)> =
        state.facts.iter().filter(|f| f.source_episode == e1.id && f.is_live()).map(|f| (f.id.clone(), f.content.clone())).collect();
    let made2;
    let f2 = match fronts {
        Some(f) => &f.fronts[1],
        None => {
            made2 = profile.front(stages, conv, e2, &state, cfg)?;
            &made2
        }
    };
    let r2 = profile.back(f2, conv, e2, &mut state, cfg, stages, store)?;
    let observed = observe(&first, &r2, &state, &e2.id);
    let made = match fronts {
        Some(_) => None,
        None => Some(PairFronts { speakers, fronts: [f1.clone(), f2.clone()] }),
    };
    Ok((observed, made))
}

/// What the second episode (`r2`, `state` after it) did to the first
/// episode's live facts (`first`: id, content).
fn observe(first: &[(String, String)], r2: &EpisodeRecord, state: &ConvState, second_episode: &str) -> Observed {
    let mut replaced = Vec::new();
    for (id, old) in first {
        let after = state.facts.iter().find(|f| &f.id == id);
        let by = r2.facts.iter().find(|c| c.ended.iter().any(|e| e == id));
        if after.is_none_or(|f| !f.is_live()) || by.is_some() {
            let (new, how) = match by {
                Some(c) => (c.content.clone(), c.outcome.as_str().to_string()),
                None => (after.map(|f| f.content.clone()).unwrap_or_default(), "ended".to_string()),
            };
            replaced.push(Replacement { old: old.clone(), new, how });
        }
    }
    Observed {
        first: first.iter().map(|(_, c)| c.clone()).collect(),
        second: r2.facts.iter().map(|c| Candidate { content: c.content.clone(), outcome: c.outcome }).collect(),
        second_live: state.facts.iter().filter(|f| f.source_episode == second_episode && f.is_live()).map(|f| f.content.clone()).collect(),
        replaced,
    }
}

/// Runs every pair with `cfg` (fronts shared when given), pairs in order
/// over one in-memory store.
fn run_all(dataset: &Dataset, cfg: &Config, stages: Stages<'_>, fronts: &[PairFronts]) -> Result<Vec<Observed>> {
    let store = Store::in_memory()?;
    dataset.conversations.iter().zip(fronts).map(|(c, f)| run_pair(c, cfg, stages, &store, Some(f)).map(|(o, _)| o)).collect()
}

/// The base run: every pair with `cfg`, in parallel over one in-memory
/// store, keeping each pair's fronts for the curves.
fn run_base(dataset: &Dataset, cfg: &Config, stages: Stages<'_>) -> Result<(Vec<Observed>, Vec<PairFronts>)> {
    let store = Store::in_memory()?;
    let done: Vec<Result<(Observed, Option<PairFronts>)>> =
        dataset.conversations.par_iter().map(|c| run_pair(c, cfg, stages, &store, None)).collect();
    let mut observed = Vec::with_capacity(done.len());
    let mut fronts = Vec::with_capacity(done.len());
    for (c, r) in dataset.conversations.iter().zip(done) {
        let (o, f) = r.map_err(|e| Error::Other(format!("pair {}: {}", c.id, crate::error::chain(&e))))?;
        observed.push(o);
        fronts.push(f.ok_or_else(|| Error::Other(format!("pair {}: no fronts", c.id)))?);
    }
    Ok((observed, fronts))
}

/// Pairs per label and outcome.
pub type Matrix = BTreeMap<Label, BTreeMap<Outcome, usize>>;

/// The rows, matrix, rates and per-kind figures of the observed pairs.
fn tabulate(pairs: &[Pair], observed: Vec<Observed>) -> (Vec<PairRow>, Matrix, Rates, Vec<KindRow>) {
    let rows: Vec<PairRow> = pairs
        .iter()
        .zip(observed)
        .map(|(p, o)| PairRow {
            id: p.id.clone(),
            split: p.split.clone(),
            label: p.label,
            kind: p.kind.clone(),
            outcome: score::classify(&o),
            first_text: p.first.turn.clone(),
            second_text: p.second.turn.clone(),
            observed: o,
        })
        .collect();
    let mut matrix = Matrix::new();
    for r in &rows {
        *matrix.entry(r.label).or_default().entry(r.outcome).or_default() += 1;
    }
    let rates = Rates::of(rows.iter().map(|r| (r.label, r.outcome)));
    let mut kinds: BTreeMap<&str, Vec<&PairRow>> = BTreeMap::new();
    for r in &rows {
        kinds.entry(r.kind.as_str()).or_default().push(r);
    }
    let by_kind = kinds
        .into_iter()
        .map(|(kind, rs)| {
            let mut labels: Vec<Label> = rs.iter().map(|r| r.label).collect();
            labels.sort_by_key(|l| l.as_str());
            labels.dedup();
            let mut outcomes = BTreeMap::new();
            for r in &rs {
                *outcomes.entry(r.outcome).or_default() += 1;
            }
            KindRow { kind: kind.to_string(), labels, outcomes, rates: Rates::of(rs.iter().map(|r| (r.label, r.outcome))) }
        })
        .collect();
    (rows, matrix, rates, by_kind)
}

/// The number of a config key (the curves' keys are all numbers).
fn key_value(cfg: &Config, key: &str) -> Result<f64> {
    cfg.value_of(key).as_ref().and_then(serde_json::Value::as_f64).ok_or_else(|| Error::Config(format!("{key}: not a numeric config key")))
}

/// Calibrates `pairs` with `cfg` through `stages` (the judge's mode is
/// `stages.judge.mode()`), writing the outputs into `opts.out_dir`.
pub fn calibrate(pairs: &[Pair], dataset: &Dataset, cfg: &Config, stages: Stages<'_>, opts: &Options) -> Result<Calibration> {
    cfg.validate()?;
    if let Some(n) = opts.threads {
        crate::limits::check_threads(n)?;
    }
    if pairs.len() != dataset.conversations.len() {
        return Err(Error::Other("calibrate: the dataset is not the pairs'".into()));
    }
    // A calibration measures what the decisions do to the store: always in full write mode.
    let mut cfg = cfg.clone();
    cfg.set_write_mode(crate::config::WriteMode::Full);
    let cfg = &cfg;
    let out = RunDir::new(&opts.out_dir);
    let lock = match &opts.lock {
        Some(l) => l.clone(),
        None => Arc::new(DirLock::acquire(out.path())?),
    };
    let stamp = RunStamp::now();
    let build = out.begin(lock, &stamp)?;
    let work = || compute(pairs, dataset, cfg, stages, opts);
    let (result, timings) = match opts.threads {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build()
            .map_err(|e| Error::Other(format!("start {n} threads: {e}")))?
            .install(work)?,
        None => work()?,
    };
    let dir = build.dir();
    let mut manifest =
        Manifest::with(dataset, cfg, stages, &opts.recorded, opts.dataset_path.as_deref(), opts.digests.clone(), opts.tags.clone());
    manifest.run = Some(stamp);
    write_outputs(dir.path(), &result, &timings)?;
    dir.write_manifest(&manifest)?;
    build.commit(&mut manifest)?;
    Ok(result)
}

/// The calibration itself, without writing anything: the base run, then
/// each key's curve over the shared fronts (points in parallel).
pub fn compute(
    pairs: &[Pair],
    dataset: &Dataset,
    cfg: &Config,
    stages: Stages<'_>,
    opts: &Options,
) -> Result<(Calibration, BTreeMap<String, f64>)> {
    let mut cfg = cfg.clone();
    cfg.set_write_mode(crate::config::WriteMode::Full);
    let t0 = Instant::now();
    let (observed, fronts) = run_base(dataset, &cfg, stages)?;
    let base_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let (rows, matrix, rates, by_kind) = tabulate(pairs, observed);
    let t1 = Instant::now();
    let mut curves = Vec::new();
    if !opts.no_curves {
        for k in opts.grids.keys() {
            if !decision_keys(&cfg).contains(&k.as_str()) {
                return Err(Error::Config(format!(
                    "--grid {k}: not a threshold the {} profile's decisions read; one of: {}",
                    cfg.profile,
                    decision_keys(&cfg).join(", ")
                )));
            }
        }
        let profile = profiles::by_name(&cfg.profile)?;
        let mut jobs: Vec<(usize, f64, Config)> = Vec::new();
        for (ki, key) in decision_keys(&cfg).into_iter().enumerate() {
            let base = key_value(&cfg, key)?;
            let values = curve_values(key, opts.grids.get(key).map(Vec::as_slice), base)?;
            let mut skipped = Vec::new();
            for v in values {
                let mut c = cfg.clone();
                c.set_from("--grid", &format!("{key}={v}"))?;
                if c.validate().is_err() {
                    skipped.push(v);
                    continue;
                }
                jobs.push((ki, v, c));
            }
            curves.push(Curve { key: key.to_string(), default: base, points: Vec::new(), skipped, recommended: None });
        }
        let judged_by_rules = stages.judge.mode() == StageMode::Rules;
        let results: Vec<Result<(usize, f64, Rates)>> = jobs
            .par_iter()
            .map(|(ki, v, c)| {
                // The rules judge is built from the config, so each point builds its own.
                let own: Option<Box<dyn Judge>> = judged_by_rules.then(|| profile.rules_judge(c));
                let judge: &dyn Judge = own.as_deref().unwrap_or(stages.judge);
                let observed = run_all(dataset, c, Stages { judge, ..stages }, &fronts)?;
                let rates = Rates::of(pairs.iter().zip(&observed).map(|(p, o)| (p.label, score::classify(o))));
                Ok((*ki, *v, rates))
            })
            .collect();
        for r in results {
            let (ki, value, rates) = r?;
            curves[ki].points.push(CurvePoint { value, rates });
        }
        for c in &mut curves {
            c.points.sort_by(|a, b| a.value.total_cmp(&b.value));
            c.recommended = score::recommend(&c.points, c.default, opts.limits);
        }
    }
    let curves_ms = t1.elapsed().as_secs_f64() * 1000.0;
    let cal = Calibration {
        format: FORMAT.to_string(),
        source: opts.source,
        name: opts.name.clone(),
        profile: cfg.profile.clone(),
        mode: crate::pipeline::Modes { extract: stages.extractor.mode(), judge: stages.judge.mode() }.name(),
        embedder: stages.embedder.id(),
        limits: opts.limits,
        pairs: rows,
        matrix,
        rates,
        by_kind,
        curves,
    };
    let timings = BTreeMap::from([
        ("base_ms".to_string(), base_ms),
        ("curves_ms".to_string(), curves_ms),
        ("curve_points".to_string(), cal.curves.iter().map(|c| c.points.len()).sum::<usize>() as f64),
    ]);
    Ok((cal, timings))
}

/// The name of a key's curve plot.
pub fn curve_svg(key: &str) -> String {
    format!("curve-{key}.svg")
}

/// Writes every output of `cal` into `dir`.
pub fn write_outputs(dir: &Path, cal: &Calibration, timings: &BTreeMap<String, f64>) -> Result<()> {
    let frame = pairs_frame(cal).map_err(|e| Error::Other(format!("calibration frame: {e}")))?;
    crate::report::write_csv(&dir.join("calibration.csv"), &frame)?;
    crate::report::write_parquet(&dir.join("calibration.parquet"), &frame)?;
    crate::report::write_text(&dir.join("curves.csv"), &curves_csv(cal))?;
    let mut plots = Vec::new();
    for c in &cal.curves {
        if c.points.is_empty() {
            continue;
        }
        let name = curve_svg(&c.key);
        crate::report::write_text(&dir.join(&name), &curve_chart(c, cal.source)?)?;
        plots.push(name);
    }
    crate::report::write_text(&dir.join("report.md"), &render_md(cal, &plots))?;
    let summary = serde_json::json!({"metrics": cal.metrics(), "timings": timings});
    crate::rundir::write_json(&dir.join("summary.json"), &summary)?;
    crate::rundir::write_json(&dir.join("calibration.json"), cal)
}

fn join(items: impl IntoIterator<Item = String>) -> String {
    items.into_iter().collect::<Vec<_>>().join(" | ")
}

fn second_text(o: &Observed) -> String {
    join(o.second.iter().map(|c| format!("{} [{}]", c.content, c.outcome)))
}

fn replaced_text(o: &Observed) -> String {
    join(o.replaced.iter().map(|r| format!("{} -> {} ({})", r.old, r.new, r.how)))
}

/// One row per pair: id, split, label, kind, outcome and the facts involved.
fn pairs_frame(cal: &Calibration) -> std::result::Result<polars::prelude::DataFrame, polars::prelude::PolarsError> {
    use polars::prelude::{Column, DataFrame};
    let col = |name: &str, f: &dyn Fn(&PairRow) -> String| Column::new(name.into(), cal.pairs.iter().map(f).collect::<Vec<String>>());
    DataFrame::new(
        cal.pairs.len(),
        vec![
            col("id", &|r| r.id.clone()),
            col("split", &|r| r.split.clone()),
            col("label", &|r| r.label.as_str().to_string()),
            col("kind", &|r| r.kind.clone()),
            col("outcome", &|r| r.outcome.as_str().to_string()),
            col("first_turn", &|r| r.first_text.clone()),
            col("second_turn", &|r| r.second_text.clone()),
            col("first_facts", &|r| join(r.observed.first.iter().cloned())),
            col("second_candidates", &|r| second_text(&r.observed)),
            col("second_live", &|r| join(r.observed.second_live.iter().cloned())),
            col("replaced", &|r| replaced_text(&r.observed)),
        ],
    )
}

fn opt(v: Option<f64>) -> String {
    v.map_or(String::new(), |x| format!("{x}"))
}

/// `curves.csv`: one row per (key, value).
fn curves_csv(cal: &Calibration) -> String {
    let mut out = String::from(
        "key,value,default,update_recall,false_invalidation_rate,duplicate_recall,false_merge_rate,merge_precision,formed,not_formed,objective,meets_limits\n",
    );
    for c in &cal.curves {
        for p in &c.points {
            let r = &p.rates;
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{}",
                c.key,
                p.value,
                (p.value - c.default).abs() < 1e-9,
                opt(r.update_recall.value()),
                opt(r.false_invalidation.value()),
                opt(r.duplicate_recall.value()),
                opt(r.false_merge.value()),
                opt(r.merge_precision.value()),
                r.formed,
                r.not_formed,
                r.objective(),
                r.meets(cal.limits)
            );
        }
    }
    out
}

/// The four rates' names as the source reads them.
fn rate_names(source: Source) -> [&'static str; 4] {
    match source {
        Source::Sick => ["conflict recall", "false conflict rate", "merge recall (paraphrase)", "false merge rate"],
        Source::Msrp => ["update recall", "false invalidation rate", "merge recall", "false merge rate"],
        Source::Pairs => ["update recall", "false invalidation rate", "duplicate recall", "false merge rate"],
    }
}

fn curve_chart(c: &Curve, source: Source) -> Result<String> {
    let names = rate_names(source);
    let get: [fn(&Rates) -> Ratio; 4] = [|r| r.update_recall, |r| r.false_invalidation, |r| r.duplicate_recall, |r| r.false_merge];
    let series: Vec<(String, Vec<(f64, f64)>)> = names
        .iter()
        .zip(get)
        .map(|(n, g)| (n.to_string(), c.points.iter().filter_map(|p| Some((p.value, g(&p.rates).value()?))).collect::<Vec<_>>()))
        .filter(|(_, pts)| !pts.is_empty())
        .collect();
    let label = format!("default {}", c.default);
    crate::report::threshold_chart(&format!("Decision rates over {}", c.key), &c.key, &series, Some((c.default, label.as_str())))
}

fn pct(r: Ratio) -> String {
    match r.value() {
        Some(v) => format!("{:.3} ({}/{})", v, r.num, r.den),
        None => "– (0/0)".to_string(),
    }
}

fn cell(s: &str) -> String {
    crate::report::md(s)
}

/// The rates table rows for `source`: name, `summary.json` key, value.
fn rate_rows(rates: &Rates, source: Source) -> Vec<Vec<String>> {
    let rows: Vec<(&str, &str, Ratio)> = match source {
        Source::Pairs => vec![
            ("update recall", "update_recall", rates.update_recall),
            ("false invalidation rate", "false_invalidation_rate", rates.false_invalidation),
            ("duplicate recall", "duplicate_recall", rates.duplicate_recall),
            ("false merge rate", "false_merge_rate", rates.false_merge),
            ("merge precision", "merge_precision", rates.merge_precision),
        ],
        Source::Sick => vec![
            ("conflict recall (contradictions replaced)", "conflict_recall", rates.update_recall),
            ("false conflict rate (non-contradictions replaced)", "false_conflict_rate", rates.false_invalidation),
            ("false merge rate (contradictions and neutrals merged)", "false_merge_rate", rates.false_merge),
        ],
        Source::Msrp => vec![
            ("merge precision (merged that are paraphrases)", "merge_precision", rates.merge_precision),
            ("merge recall (paraphrases merged)", "merge_recall", rates.duplicate_recall),
            ("false merge rate (non-paraphrases merged)", "false_merge_rate", rates.false_merge),
        ],
    };
    rows.into_iter().map(|(n, k, r)| vec![n.to_string(), format!("`{}_{k}`", source.as_str()), pct(r)]).collect()
}

/// The "decision quality" section other reports embed: the matrix, the
/// rates and the recommendations, with a link to the whole report.
pub fn decision_quality_md(cal: &Calibration, link: Option<&str>) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "## Decision quality\n\n{} {} pairs ({}), profile `{}`, modes `{}`, embedder `{}`.{}\n",
        cal.pairs.len(),
        cal.source,
        cal.name,
        cal.profile,
        cal.mode,
        cal.embedder,
        link.map(|l| format!(" The whole calibration: [{l}]({l}).")).unwrap_or_default()
    );
    let _ = writeln!(o, "Label (rows) × outcome (columns):\n");
    matrix_md(&mut o, cal);
    rates_md(&mut o, cal);
    recommendations_md(&mut o, cal);
    o
}

fn matrix_md(o: &mut String, cal: &Calibration) {
    let outcomes = Outcome::ALL;
    let rows: Vec<Vec<String>> = cal
        .matrix
        .iter()
        .map(|(l, row)| {
            std::iter::once(format!("**{l}**"))
                .chain(outcomes.iter().map(|oc| row.get(oc).copied().unwrap_or(0).to_string()))
                .chain(std::iter::once(row.values().sum::<usize>().to_string()))
                .collect()
        })
        .collect();
    let mut header = vec!["label \\ outcome"];
    header.extend(outcomes.iter().map(|o| o.as_str()));
    header.push("pairs");
    crate::report::table(o, &header, &rows);
}

fn rates_md(o: &mut String, cal: &Calibration) {
    let _ = writeln!(o, "Rates over the {} pairs formed ({} not formed are left out):\n", cal.rates.formed, cal.rates.not_formed);
    crate::report::table(o, &["rate", "summary key", "value (n/d)"], &rate_rows(&cal.rates, cal.source));
}

fn recommendations_md(o: &mut String, cal: &Calibration) {
    if cal.curves.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "Recommended operating points (maximise update recall + duplicate recall with false merge ≤ {} and false invalidation ≤ {}):\n",
        cal.limits.max_false_merge, cal.limits.max_false_invalidation
    );
    let rows: Vec<Vec<String>> = cal
        .curves
        .iter()
        .map(|c| {
            let at = |v: f64| c.points.iter().find(|p| (p.value - v).abs() < 1e-9);
            let desc = |p: Option<&CurvePoint>| {
                p.map_or("–".to_string(), |p| {
                    format!(
                        "{} / {} / {} / {}",
                        opt3(p.rates.update_recall.value()),
                        opt3(p.rates.false_invalidation.value()),
                        opt3(p.rates.duplicate_recall.value()),
                        opt3(p.rates.false_merge.value())
                    )
                })
            };
            vec![
                format!("`{}`", c.key),
                format!("{}", c.default),
                desc(at(c.default)),
                c.recommended.map_or("none meets the constraints".to_string(), |v| format!("{v}")),
                desc(c.recommended.and_then(at)),
            ]
        })
        .collect();
    crate::report::table(
        o,
        &["key", "default", "at default (upd / false inv / dup / false merge)", "recommended", "at recommended"],
        &rows,
    );
}

fn opt3(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| format!("{x:.3}"))
}

/// Most pairs listed per kind of error in `report.md` (all are in `calibration.csv`).
pub const LISTED: usize = 200;

/// `report.md`.
pub fn render_md(cal: &Calibration, plots: &[String]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# Calibration: {} ({})\n\n{} pairs through the `{}` profile's stages, modes `{}` (`EXTRACT/JUDGE`), embedder `{}`. \
         Each pair is one conversation of two sessions; its outcome says what the second session did to the first \
         (docs/metrics.md, \"Decision quality\").\n",
        cal.name,
        cal.source,
        cal.pairs.len(),
        cal.profile,
        cal.mode,
        cal.embedder
    );
    if cal.mode.starts_with("gold") {
        let _ = writeln!(o, "Extraction was the oracle: the candidates are the pairs' gold observations.\n");
    }
    let _ = writeln!(o, "## Outcomes\n\nLabel (rows) × outcome (columns):\n");
    matrix_md(&mut o, cal);
    rates_md(&mut o, cal);
    let _ = writeln!(o, "## Per kind\n");
    let names = rate_names(cal.source);
    let rows: Vec<Vec<String>> = cal
        .by_kind
        .iter()
        .map(|k| {
            let n = |oc: Outcome| k.outcomes.get(&oc).copied().unwrap_or(0).to_string();
            vec![
                cell(&k.kind),
                k.labels.iter().map(|l| l.as_str()).collect::<Vec<_>>().join(", "),
                n(Outcome::Merged),
                n(Outcome::Replaced),
                n(Outcome::BothKept),
                n(Outcome::NotFormed),
                opt3(k.rates.update_recall.value()),
                opt3(k.rates.false_invalidation.value()),
                opt3(k.rates.duplicate_recall.value()),
                opt3(k.rates.false_merge.value()),
            ]
        })
        .collect();
    let header = ["kind", "label", "merged", "replaced", "both kept", "not formed", names[0], names[1], names[2], names[3]];
    crate::report::table(&mut o, &header, &rows);
    if !cal.curves.is_empty() {
        let _ = writeln!(o, "## Curves\n");
        recommendations_md(&mut o, cal);
        for c in &cal.curves {
            if !c.skipped.is_empty() {
                let _ = writeln!(
                    o,
                    "`{}`: {} value(s) not run, refused with the other keys at their values ({}).\n",
                    c.key,
                    c.skipped.len(),
                    c.skipped.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
                );
            }
        }
        for p in plots {
            let _ = writeln!(o, "![{p}]({p})\n");
        }
        let _ = writeln!(o, "Every point is in `curves.csv`.\n");
    }
    let list = |o: &mut String, title: &str, rows: Vec<&PairRow>| {
        let _ = writeln!(o, "## {title} ({})\n", rows.len());
        if rows.is_empty() {
            let _ = writeln!(o, "None.\n");
            return;
        }
        let shown: Vec<Vec<String>> = rows
            .iter()
            .take(LISTED)
            .map(|r| {
                vec![
                    cell(&r.id),
                    cell(&r.kind),
                    cell(&join(r.observed.first.iter().cloned())),
                    cell(&join(r.observed.second.iter().map(|c| c.content.clone()))),
                    cell(&if r.observed.replaced.is_empty() {
                        join(r.observed.second.iter().map(|c| c.outcome.as_str().to_string()))
                    } else {
                        join(r.observed.replaced.iter().map(|x| x.how.clone()))
                    }),
                ]
            })
            .collect();
        crate::report::table(o, &["pair", "kind", "first (stored)", "second (candidates)", "how"], &shown);
        if rows.len() > LISTED {
            let _ = writeln!(o, "… and {} more in `calibration.csv`.\n", rows.len() - LISTED);
        }
    };
    let falsely_replaced: Vec<&PairRow> =
        cal.pairs.iter().filter(|r| r.outcome == Outcome::Replaced && score::must_not_replace(r.label)).collect();
    let falsely_merged: Vec<&PairRow> =
        cal.pairs.iter().filter(|r| r.outcome == Outcome::Merged && score::must_not_merge(r.label)).collect();
    list(&mut o, "Replaced, but both should stay (false invalidations)", falsely_replaced);
    list(&mut o, "Merged, but not duplicates (false merges)", falsely_merged);
    o
}

/// Reads a finished calibration directory's `calibration.json` (a complete
/// run per its `run.json`).
pub fn read(dir: &Path) -> Result<Calibration> {
    RunDir::new(dir).read_complete(|_| {
        let p = dir.join("calibration.json");
        let text = std::fs::read_to_string(&p).map_err(|e| Error::io(&p, e))?;
        let mut de = serde_json::Deserializer::from_str(&text);
        let cal: Calibration =
            serde_path_to_error::deserialize(&mut de).map_err(|e| Error::input(&p, format!("{}: {}", e.path(), e.inner())))?;
        if cal.format != FORMAT {
            return Err(Error::input(&p, format!("format: {:?}, expected {FORMAT:?}", cal.format)));
        }
        Ok(cal)
    })
}

/// The "Decision quality" section of `compare.md`: each variant's
/// calibration in a column (its pairs, the rates, the matrix's counts).
pub fn compare_md(cals: &[(String, Calibration)]) -> String {
    let mut o = String::from("## Decision quality\n\n");
    let _ = writeln!(
        o,
        "Each variant calibrated on labelled pairs (`memform calibrate`; docs/metrics.md, \"Decision quality\"): {}.\n",
        cals.iter().map(|(l, c)| format!("{l}: {} {} pairs ({})", c.pairs.len(), c.source, c.name)).collect::<Vec<_>>().join("; ")
    );
    let mut keys: Vec<String> = Vec::new();
    for (_, c) in cals {
        for k in c.rates.metrics(c.source).into_keys() {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    let rows: Vec<Vec<String>> = keys
        .iter()
        .map(|k| {
            let dir = match score::higher_is_better(k) {
                Some(true) => " (higher is better)",
                Some(false) => " (lower is better)",
                None => "",
            };
            std::iter::once(format!("`{k}`{dir}"))
                .chain(cals.iter().map(|(_, c)| c.rates.metrics(c.source).get(k).map_or("–".into(), |v| format!("{v:.3}"))))
                .collect()
        })
        .collect();
    let mut header = vec!["metric"];
    header.extend(cals.iter().map(|(l, _)| l.as_str()));
    crate::report::table(&mut o, &header, &rows);
    for (label, c) in cals {
        let _ = writeln!(o, "**{label}**, label (rows) × outcome (columns):\n");
        matrix_md(&mut o, c);
    }
    o
}
