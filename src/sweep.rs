//! Threshold sweeps. A grid over config keys; work no swept key can change
//! (extraction and embeddings: the episode's [`EpisodeFront`]) is done once
//! per episode and shared by every grid point; only resolve → dedupe → judge
//! → write runs per point, each point in its own in-memory store, points in
//! parallel. Shards split the grid into disjoint slices that `merge` joins
//! into the same files a single-machine sweep writes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::{IntoParallelRefIterator, ParallelIterator};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::metrics::{ConversationPart, GoldIndex, conversation_parts, metrics_of_parts};
use crate::pipeline::Config;
use crate::pipeline::judge::{Judge, RulesJudge};
use crate::pipeline::{EpisodeFront, EpisodeRecord, Stages, profiles, speaker_entities};
use crate::state::{ConvState, EntityRec, ReadingMemo, SimTable};
use crate::store::Store;
use crate::types::Dataset;

/// Config keys whose value changes extraction or embeddings: sweeping one of
/// them recomputes the fronts for each of its values.
pub const FRONT_KEYS: &[&str] = &[
    "max_facts",
    "max_facts_graph",
    "max_entities",
    "min_fact_chars",
    "max_fact_chars",
    "max_object_chars",
    "max_quote_chars",
    "max_input_chars",
    "embedder",
    "hashed_dims",
];

/// One axis of the grid: a config key and its values (TOML literals).
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub key: String,
    pub values: Vec<String>,
}

/// Most values one `--grid` range expands to.
pub const MAX_AXIS_VALUES: usize = 10_000;

/// Parses `KEY=START:STOP:STEP` (inclusive, numeric) or `KEY=v1,v2,…`,
/// each value checked as `--grid KEY=VALUE` (see [`parse_grid`] for a
/// whole grid, counted before its values are checked).
pub fn parse_axis(spec: &str) -> Result<Axis> {
    let axis = parse_values(spec)?;
    check_values(spec, &axis, 1)?;
    Ok(axis)
}

/// Parses `specs` (one `--grid` each) and sizes their grid ([`check_grid`])
/// before checking every value: a grid with too many points is refused
/// having checked only each axis's key and first value. Returns the axes
/// and the number of points.
pub fn parse_grid(specs: &[String], max_points: usize) -> Result<(Vec<Axis>, usize)> {
    let axes = specs.iter().map(|s| parse_values(s)).collect::<Result<Vec<_>>>()?;
    let total = check_grid(&axes, max_points)?;
    for (spec, axis) in specs.iter().zip(&axes) {
        check_values(spec, axis, 1)?;
    }
    Ok((axes, total))
}

/// An axis's values expanded, its key and first value checked.
fn parse_values(spec: &str) -> Result<Axis> {
    let bad = |m: &str| Error::Config(format!("--grid {spec:?}: {m}"));
    let (key, rhs) = spec.split_once('=').ok_or_else(|| bad("expected KEY=START:STOP:STEP or KEY=v1,v2,…"))?;
    let key = key.trim().to_string();
    let parts: Vec<&str> = rhs.split(':').collect();
    let values: Vec<String> = if parts.len() == 3 {
        let num =
            |s: &str| s.trim().parse::<f64>().ok().filter(|x| x.is_finite()).ok_or_else(|| bad(&format!("{s:?} is not a finite number")));
        let (start, stop, step) = (num(parts[0])?, num(parts[1])?, num(parts[2])?);
        if !(step > 0.0 && stop >= start) {
            return Err(bad("needs START <= STOP and STEP > 0"));
        }
        let decimals = parts.iter().map(|p| p.trim().split_once('.').map_or(0, |(_, d)| d.len())).max().unwrap_or(0).min(12);
        let steps = ((stop - start) / step + 1e-9).floor();
        // NaN (an overflowing range) is refused too.
        if steps.partial_cmp(&(MAX_AXIS_VALUES as f64)) != Some(std::cmp::Ordering::Less) {
            return Err(bad(&format!("more than {MAX_AXIS_VALUES} values")));
        }
        let n = steps as usize + 1;
        (0..n).map(|i| format!("{:.*}", decimals, start + step * i as f64)).collect()
    } else if parts.len() == 1 {
        rhs.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect()
    } else {
        return Err(bad("expected KEY=START:STOP:STEP or KEY=v1,v2,…"));
    };
    if values.is_empty() {
        return Err(bad("no values"));
    }
    let axis = Axis { key, values };
    check_values(spec, &Axis { key: axis.key.clone(), values: axis.values[..1].to_vec() }, 0)?;
    Ok(axis)
}

/// Checks `axis`'s values from index `from` on, each as `--grid KEY=VALUE`
/// would set it.
fn check_values(spec: &str, axis: &Axis, from: usize) -> Result<()> {
    let default = Config::default();
    for v in axis.values.iter().skip(from) {
        let mut probe = default.clone();
        probe.set_from("--grid", &format!("{}={v}", axis.key))?;
        probe.check_key(&axis.key).map_err(|e| Error::Config(format!("--grid {spec:?}: {}", crate::error::chain(&e))))?;
    }
    Ok(())
}

/// Refuses an axis whose key `profile` never reads (a key of another
/// profile's section: every point would give the same figures); returns
/// the deprecation warnings of axes spelled with a flat key of before
/// sections, once per axis.
pub fn check_axes(axes: &[Axis], profile: &str) -> Result<Vec<String>> {
    let mut warnings = Vec::new();
    for a in axes {
        let sections = Config::sections_of(&a.key)?;
        if !sections.is_empty() && !sections.contains(&profile) {
            return Err(Error::Config(format!(
                "--grid {}: profile {profile} never reads it (it is read by profile {}): every point would be the same",
                a.key,
                sections.join(" and ")
            )));
        }
        let mut probe = Config::default();
        if let Some(v) = a.values.first() {
            probe.set_from("--grid", &format!("{}={v}", a.key))?;
        }
        warnings.extend(probe.deprecations());
    }
    Ok(warnings)
}

/// One grid point: its index in the full grid and its `key=value` settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub index: usize,
    pub settings: Vec<(String, String)>,
}

/// The full grid in a fixed order (first axis outermost).
pub fn points(axes: &[Axis]) -> Vec<Point> {
    let mut out = vec![Vec::new()];
    for a in axes {
        out = out
            .into_iter()
            .flat_map(|prefix: Vec<(String, String)>| {
                a.values.iter().map(move |v| {
                    let mut p = prefix.clone();
                    p.push((a.key.clone(), v.clone()));
                    p
                })
            })
            .collect();
    }
    out.into_iter().enumerate().map(|(index, settings)| Point { index, settings }).collect()
}

/// The number of points of the grid over `axes` (the product of their
/// lengths), checked before any point is built: a key on two axes, or more
/// than `max_points` points, is an error.
pub fn check_grid(axes: &[Axis], max_points: usize) -> Result<usize> {
    let mut seen = std::collections::BTreeSet::new();
    for a in axes {
        if !seen.insert(a.key.as_str()) {
            return Err(Error::Config(format!("--grid {}: the key is given twice; put all its values on one --grid", a.key)));
        }
    }
    let total = axes.iter().try_fold(1usize, |t, a| t.checked_mul(a.values.len()));
    match total {
        Some(t) if t <= max_points => Ok(t),
        _ => {
            let sizes: Vec<String> = axes.iter().map(|a| a.values.len().to_string()).collect();
            let product: f64 = axes.iter().map(|a| a.values.len() as f64).product();
            Err(Error::Config(format!(
                "--grid: {product:.0} points ({}) is more than --max-points {max_points}; narrow the grid, or raise --max-points (at most {})",
                sizes.join(" × "),
                crate::limits::MAX_POINTS.end()
            )))
        }
    }
}

/// Point `index` of the grid over `axes` (the order of [`points`]).
pub fn point_at(axes: &[Axis], index: usize) -> Point {
    let mut rest = index;
    let mut settings = vec![(String::new(), String::new()); axes.len()];
    for (slot, a) in settings.iter_mut().zip(axes).rev() {
        let n = a.values.len().max(1);
        *slot = (a.key.clone(), a.values[rest % n].clone());
        rest /= n;
    }
    Point { index, settings }
}

/// The points of shard `k` of `n` of the grid over `axes`, built without
/// building the others (the grid's size must have passed [`check_grid`]).
pub fn shard_points(axes: &[Axis], k: usize, n: usize) -> Vec<Point> {
    let total: usize = axes.iter().map(|a| a.values.len()).product();
    (k..total).step_by(n.max(1)).map(|i| point_at(axes, i)).collect()
}

/// Checks that the objective and the Pareto metrics are metrics a sweep
/// point can have (one whose gold labels `dataset` lacks is accepted: its
/// rows simply have no value); the error lists them all.
pub fn check_metrics(objective: &str, pareto_x: &str, pareto_y: &str) -> Result<()> {
    let names = crate::metrics::all_point_metric_names();
    for (flag, m) in [("--objective", objective), ("--pareto", pareto_x), ("--pareto", pareto_y)] {
        if !names.iter().any(|n| n == m) {
            let hint = crate::config::did_you_mean(m, names.iter().map(String::as_str))
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            return Err(Error::Config(format!("{flag} {m:?}: not a metric of a sweep point{hint}; one of: {}", names.join(", "))));
        }
    }
    Ok(())
}

/// Parses `K/N` (0-based K < N).
pub fn parse_shard(s: &str) -> Result<(usize, usize)> {
    let bad = || Error::Config(format!("--shard {s:?}: expected K/N with 0 <= K < N"));
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let k: usize = k.trim().parse().map_err(|_| bad())?;
    let n: usize = n.trim().parse().map_err(|_| bad())?;
    if n == 0 || k >= n {
        return Err(bad());
    }
    Ok((k, n))
}

/// The points of shard `k` of `n`: every n-th point starting at k.
pub fn shard(points: Vec<Point>, k: usize, n: usize) -> Vec<Point> {
    points.into_iter().filter(|p| p.index % n == k).collect()
}

/// A point's result: settings and every numeric metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub index: usize,
    pub settings: Vec<(String, String)>,
    pub metrics: BTreeMap<String, f64>,
}

/// Progress of a sweep, for the CLI's bar.
pub type PointDone = dyn Fn(usize) + Send + Sync;

/// Counts of shared work, for tests and the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SharedWork {
    /// Distinct front configurations (1 unless a front key is swept).
    pub front_sets: usize,
    /// Episodes whose front was computed, over all front sets.
    pub fronts_computed: usize,
    /// Formed-memory QA evaluations of a conversation run: at most one per
    /// conversation and distinct store of it (conversations whose stores QA
    /// reads alike share one), 0 with `--no-qa`.
    pub formed_qa_evaluated: usize,
    /// Conversations formed, over all points (points × conversations when
    /// no decision trace is reused).
    pub conversations_formed: usize,
    /// Conversations whose result a point took from an earlier point's
    /// decision trace instead of forming them.
    pub conversations_reused: usize,
}

/// What a sweep will take, known once the fronts and one point have run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Points this sweep runs (its shard's).
    pub points: usize,
    /// The front pass (extraction and embeddings, once).
    pub fronts: std::time::Duration,
    /// The first point, run alone.
    pub one_point: std::time::Duration,
    /// Threads the other points share.
    pub threads: usize,
}

impl Estimate {
    /// The time the remaining points should take, on [`Estimate::threads`].
    pub fn remaining(&self) -> std::time::Duration {
        let rest = self.points.saturating_sub(1);
        let rounds = rest.div_ceil(self.threads.max(1)) as u32;
        self.one_point.saturating_mul(rounds)
    }

    /// One line for a person.
    pub fn describe(&self) -> String {
        format!(
            "sweep: {} points; the front pass took {}, one point {}: about {} more on {} thread(s)",
            self.points,
            human(self.fronts),
            human(self.one_point),
            human(self.remaining()),
            self.threads
        )
    }
}

/// `0.4 s`, `12 s`, `3 min 5 s`, `2 h 10 min`.
fn human(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s < 10.0 {
        format!("{s:.1} s")
    } else if s < 60.0 {
        format!("{s:.0} s")
    } else if s < 3600.0 {
        format!("{} min {} s", (s / 60.0) as u64, (s % 60.0) as u64)
    } else {
        format!("{} h {} min", (s / 3600.0) as u64, ((s % 3600.0) / 60.0) as u64)
    }
}

/// What a sweep reports while it runs.
#[derive(Default)]
pub struct Hooks<'a> {
    /// After each point.
    pub done: Option<&'a PointDone>,
    /// Once, after the fronts and the first point, before the others.
    pub estimate: Option<&'a (dyn Fn(&Estimate) + Send + Sync)>,
    /// Skip the QA evaluation (`sweep --no-qa`): the rows have no `qa_*` metrics.
    pub no_qa: bool,
    /// Form every conversation at every point, reusing no decision trace
    /// (the same rows; for checking the reuse and measuring it).
    pub full_runs: bool,
}

/// Runs `points` of the grid over `dataset`, on top of `base`.
pub fn run_sweep(
    dataset: &Dataset,
    base: &Config,
    stages: Stages<'_>,
    points: &[Point],
    done: Option<&PointDone>,
) -> Result<(Vec<Row>, SharedWork)> {
    run_sweep_with(dataset, base, stages, points, &Hooks { done, ..Hooks::default() })
}

/// [`run_sweep`], reporting through `hooks`: the first point runs alone,
/// timed, so the estimate can be given before the others start.
pub fn run_sweep_with(
    dataset: &Dataset,
    base: &Config,
    stages: Stages<'_>,
    points: &[Point],
    hooks: &Hooks<'_>,
) -> Result<(Vec<Row>, SharedWork)> {
    crate::pipeline::profiles::by_name(&base.profile)?.check_stages(stages)?;
    let done = hooks.done;
    let started = std::time::Instant::now();
    let cfgs = point_configs(base, points)?;
    // Fronts, once per distinct front configuration.
    let mut front_sets: BTreeMap<String, Vec<ConversationFronts>> = BTreeMap::new();
    let mut shared = SharedWork::default();
    for c in &cfgs {
        if let std::collections::btree_map::Entry::Vacant(slot) = front_sets.entry(front_key(c)) {
            let fronts = compute_fronts(dataset, c, stages)?;
            shared.front_sets += 1;
            shared.fronts_computed += fronts.iter().map(|c| c.episodes.len()).sum::<usize>();
            slot.insert(fronts);
        }
    }
    let gold = GoldIndex::new(dataset)?;
    // The QA baselines depend on the search keys alone: evaluated once per distinct setting.
    let mut baselines: BTreeMap<String, crate::qa::QaResult> = BTreeMap::new();
    if !hooks.no_qa && dataset.conversations.iter().any(|c| !c.gold.qa.is_empty()) {
        for c in &cfgs {
            if let std::collections::btree_map::Entry::Vacant(slot) = baselines.entry(qa_key(c)) {
                slot.insert(crate::qa::evaluate_sources(dataset, None, stages.embedder, c, true)?);
            }
        }
    }
    let fronts_took = started.elapsed();
    let formed_qa = FormedQa::default();
    let traces = if hooks.full_runs { None } else { Traces::for_grid(base, stages, points, dataset.conversations.len()) };
    let run_one = |i: usize| {
        let fronts = &front_sets[&front_key(&cfgs[i])];
        let qa = baselines.get(&qa_key(&cfgs[i])).map(|raw| (raw, &formed_qa));
        let row = run_point(dataset, &cfgs[i], stages, fronts, &gold, &points[i], qa, traces.as_ref());
        if let Some(d) = done {
            d(points[i].index);
        }
        row
    };
    let mut first = Vec::new();
    let mut idx: Vec<usize> = (0..points.len()).collect();
    if let Some(report) = hooks.estimate
        && !points.is_empty()
    {
        let t = std::time::Instant::now();
        first.push(run_one(0));
        let threads = if rayon::current_thread_index().is_some() {
            rayon::current_num_threads()
        } else {
            polars_core::runtime::THREAD_POOL.current_num_threads()
        };
        report(&Estimate { points: points.len(), fronts: fronts_took, one_point: t.elapsed(), threads });
        idx.remove(0);
    }
    let run_points = || -> Vec<Result<Row>> { idx.par_iter().map(|&i| run_one(i)).collect() };
    // Points run on polars' own pool (one thread per core), so each point's
    // metric queries stay on the thread that runs it instead of waiting on
    // another pool; a caller that installed its own pool (`--threads`) keeps it.
    let rows = if rayon::current_thread_index().is_some() { run_points() } else { polars_core::runtime::THREAD_POOL.install(run_points) };
    let mut out = first.into_iter().chain(rows).collect::<Result<Vec<_>>>()?;
    out.sort_by_key(|r| r.index);
    shared.formed_qa_evaluated = formed_qa.evaluated.load(std::sync::atomic::Ordering::Relaxed);
    let per_point = dataset.conversations.len() * points.len();
    shared.conversations_formed = traces.as_ref().map_or(per_point, |t| t.formed.load(std::sync::atomic::Ordering::Relaxed));
    shared.conversations_reused = traces.as_ref().map_or(0, |t| t.reused.load(std::sync::atomic::Ordering::Relaxed));
    Ok((out, shared))
}

/// Each point's config: `base` with the point's settings applied in order,
/// then validated. The settings but the last are applied once per distinct
/// prefix (consecutive points of a grid share it), each point's last on a
/// copy, points in parallel; the first point in order that fails gives the
/// error, as one point after another would.
fn point_configs(base: &Config, points: &[Point]) -> Result<Vec<Config>> {
    let apply = |c: &mut Config, settings: &[(String, String)]| -> Result<()> {
        for (k, v) in settings {
            c.set_from("--grid", &format!("{k}={v}"))?;
        }
        Ok(())
    };
    // Runs of consecutive points with the same settings but the last.
    let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, p) in points.iter().enumerate() {
        let prefix = &p.settings[..p.settings.len().saturating_sub(1)];
        match runs.last_mut() {
            Some(r) if points[r.start].settings[..points[r.start].settings.len().saturating_sub(1)] == *prefix => r.end = i + 1,
            _ => runs.push(i..i + 1),
        }
    }
    let built: Vec<Vec<Result<Config>>> = runs
        .par_iter()
        .map(|r| {
            let first = &points[r.start].settings;
            let mut prefixed = base.clone();
            if let Err(e) = apply(&mut prefixed, &first[..first.len().saturating_sub(1)]) {
                return vec![Err(e)];
            }
            points[r.clone()]
                .iter()
                .map(|p| {
                    let mut c = prefixed.clone();
                    apply(&mut c, p.settings.last().map(std::slice::from_ref).unwrap_or_default())?;
                    c.validate().map_err(|e| Error::Config(format!("grid point {}: {e}", p.index)))?;
                    Ok(c)
                })
                .collect()
        })
        .collect();
    built.into_iter().flatten().collect()
}

fn front_key(c: &Config) -> String {
    let v = serde_json::to_value(c).unwrap_or_default();
    FRONT_KEYS.iter().map(|k| format!("{k}={}", v.get(*k).cloned().unwrap_or_default())).collect::<Vec<_>>().join(";")
}

/// The config keys the QA evaluation's baselines depend on.
fn qa_key(c: &Config) -> String {
    format!("{}|{}|{}|{}|{}", c.search_alpha, c.search_min_score, c.search_leg_factor, c.qa_as_of, c.qa_retriever)
}

/// The search keys ([`qa_key`]), a conversation's index and the digest of
/// what QA reads of it ([`Store::qa_digest_of`]).
type QaKey = (String, usize, [u8; 32]);

/// The formed-memory QA of each conversation a sweep has evaluated, by the
/// search keys and what the evaluation reads of the conversation in its
/// point's store ([`Store::qa_digest_of`]): a conversation formed alike at
/// another point (or whose store QA reads alike) takes the evaluation
/// instead of searching again, and a point's figures are those of its
/// conversations' evaluations joined in dataset order, as a whole store's
/// evaluation joins them. No lock is held while evaluating (the evaluation
/// runs on the pool that runs the points, and a waiting worker may be
/// handed another point): two points that need the same evaluation at once
/// may both run it, giving the same rows.
#[derive(Default)]
struct FormedQa {
    done: std::sync::Mutex<BTreeMap<QaKey, Arc<crate::qa::QaResult>>>,
    /// Conversation evaluations run (the other conversations reused one).
    evaluated: std::sync::atomic::AtomicUsize,
    /// A point's QA figures by its search keys and the digests of the
    /// evaluations it joins, one per conversation in dataset order
    /// ([`FormedQa::joined_key`]): a point whose conversations took the same
    /// evaluations as another's has its figures, not computed again.
    figures: std::sync::Mutex<HashMap<JoinedKey, BTreeMap<String, f64>>>,
}

impl FormedQa {
    /// Conversation `c`'s (`conv`) formed-memory QA over `store`, which
    /// holds it formed, with the digest of what it read of the store (zeros
    /// for a conversation without QA items, whose evaluation is empty).
    fn conversation(
        &self,
        c: usize,
        conv: &crate::types::Conversation,
        store: &Store,
        stages: Stages<'_>,
        cfg: &Config,
    ) -> Result<FormedQaPart> {
        if conv.gold.qa.is_empty() {
            return Ok(([0; 32], Arc::default()));
        }
        let digest = store.qa_digest_of(&conv.id)?;
        let key = (qa_key(cfg), c, digest);
        if let Some(r) = self.done.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok((digest, r.clone()));
        }
        // A point evaluates no baselines: only its selected turns are made and embedded.
        let r = Arc::new(crate::qa::evaluate_formed(conv, store, stages.embedder, cfg, &crate::qa::Shared::new(false))?);
        self.evaluated.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.done.lock().unwrap_or_else(|p| p.into_inner()).insert(key, r.clone());
        Ok((digest, r))
    }

    /// The key of a point's QA figures: the search keys and the digest of
    /// each conversation's evaluation, in dataset order.
    fn joined_key(cfg: &Config, taken: &[Arc<Formed>]) -> JoinedKey {
        (qa_key(cfg), taken.iter().map(|f| f.qa.as_ref().map_or([0; 32], |(digest, _)| *digest)).collect())
    }
}

/// A conversation's formed-memory QA evaluation and the digest of what it
/// read of the store ([`Store::qa_digest_of`]).
type FormedQaPart = ([u8; 32], Arc<crate::qa::QaResult>);

/// The search keys ([`qa_key`]) and each conversation's evaluation digest,
/// in dataset order: what a point's QA figures depend on.
type JoinedKey = (String, Vec<[u8; 32]>);

/// A conversation's threshold-independent work: its speakers' entities
/// (with their vectors), each episode's front, and a memo of its
/// candidates' cosines shared by every grid point (which would otherwise
/// recompute them in dedupe and pairing). The memo holds n²/2 entries, so a
/// conversation with more than [`MAX_MEMO_VECTORS`] candidates goes without.
struct ConversationFronts {
    speakers: Vec<EntityRec>,
    episodes: Vec<EpisodeFront>,
    sims: Option<Arc<SimTable>>,
    /// The readings of its candidates' and facts' contents, shared by every
    /// grid point (with the cosines' memo, and bounded as it is).
    readings: Option<Arc<ReadingMemo>>,
}

/// Candidates per conversation up to which cosines are memoised (16 MiB:
/// one cell per pair).
pub const MAX_MEMO_VECTORS: usize = 2048;

/// Fronts for every episode, produced as in a run with `cfg`: episodes in
/// order against the conversation's evolving state, so an extractor that
/// reads the store's context (LLM mode) sees what it saw in that run.
fn compute_fronts(dataset: &Dataset, cfg: &Config, stages: Stages<'_>) -> Result<Vec<ConversationFronts>> {
    dataset
        .conversations
        .par_iter()
        .map(|conv| {
            let profile = profiles::by_name(&cfg.profile)?;
            // Nothing reads the base pass's store.
            let store = forming_store(profile, false)?;
            let speakers = speaker_entities(conv, stages.embedder)?;
            let mut state = ConvState { entities: speakers.clone(), ..ConvState::default() };
            let mut episodes = Vec::with_capacity(conv.episodes.len());
            let mut slots = 0u32;
            // The base pass reads what the points will: its readings start the memo.
            let readings = Arc::new(ReadingMemo::default());
            crate::state::with_readings(readings.clone(), || -> Result<()> {
                for episode in &conv.episodes {
                    let mut f = profile.front(stages, conv, episode, &state, cfg)?;
                    profile.back(&f, conv, episode, &mut state, cfg, stages, &store)?;
                    f.slot_base = Some(slots);
                    slots += f.fact_embeddings.len() as u32;
                    episodes.push(f);
                }
                Ok(())
            })?;
            let vectors: Vec<Vec<f32>> = episodes.iter().flat_map(|f| f.fact_embeddings.iter().cloned()).collect();
            let memo = vectors.len() <= MAX_MEMO_VECTORS;
            let sims = memo.then(|| Arc::new(SimTable::new(vectors)));
            Ok(ConversationFronts { speakers, episodes, sims, readings: memo.then_some(readings) })
        })
        .collect()
}

/// A swept key every use of which in a profile's formation is a recorded
/// comparison ([`crate::state::trace`]): its profile, its name in that
/// profile's section, and the value the comparisons read.
struct TracedKey {
    profile: &'static str,
    name: &'static str,
    read: fn(&Config) -> f64,
}

/// The keys whose decision traces a sweep reuses. A grid over any other key
/// (or another profile, or a judge other than the rules judge) forms every
/// conversation at every point.
const TRACED_KEYS: &[TracedKey] = &[
    TracedKey { profile: "soda", name: "near_dup_threshold", read: |c| c.soda.near_dup_threshold },
    TracedKey { profile: "soda", name: "contradiction_band_min", read: |c| c.soda.contradiction_band_min },
];

/// The traced key a grid key names for `profile` (flat or section-qualified).
fn traced_key(profile: &str, key: &str) -> Option<&'static TracedKey> {
    let name = key.strip_prefix(profile).and_then(|r| r.strip_prefix('.')).unwrap_or(key);
    TRACED_KEYS.iter().find(|t| t.profile == profile && t.name == name)
}

/// Whether a sweep over `keys` with profile `profile` may reuse decision
/// traces: every key is one of [`TRACED_KEYS`] for that profile.
pub fn traced_grid<'k>(profile: &str, mut keys: impl Iterator<Item = &'k str>) -> bool {
    keys.all(|k| traced_key(profile, k).is_some())
}

/// What forming one conversation at a point left: its share of the point's
/// metrics (`None` for a conversation without episodes, which has none)
/// and (with QA) its formed-memory QA evaluation. The records it was
/// computed from are dropped once it is: the metrics read nothing else.
struct Formed {
    part: Option<ConversationPart>,
    qa: Option<FormedQaPart>,
}

/// A conversation formed at some point, with the interval of each swept
/// key's values that its comparisons allow.
struct Trace {
    id: usize,
    intervals: Vec<crate::state::trace::Interval>,
    formed: Arc<Formed>,
}

/// The decision traces of a sweep, per conversation, and the metrics of
/// each combination of traces already evaluated.
struct Traces {
    read: Vec<fn(&Config) -> f64>,
    convs: Vec<std::sync::Mutex<Vec<Arc<Trace>>>>,
    next: std::sync::atomic::AtomicUsize,
    /// A point's metrics by the traces its conversations took.
    metrics: std::sync::Mutex<BTreeMap<Vec<usize>, BTreeMap<String, f64>>>,
    formed: std::sync::atomic::AtomicUsize,
    reused: std::sync::atomic::AtomicUsize,
}

impl Traces {
    /// Traces for a sweep of `points` over `base`, when its grid allows.
    fn for_grid(base: &Config, stages: Stages<'_>, points: &[Point], conversations: usize) -> Option<Traces> {
        let keys = &points.first()?.settings;
        if stages.judge.id() != RulesJudge::ID {
            return None;
        }
        let read = keys.iter().map(|(k, _)| traced_key(&base.profile, k).map(|t| t.read)).collect::<Option<Vec<_>>>()?;
        Some(Traces {
            read,
            convs: (0..conversations).map(|_| std::sync::Mutex::new(Vec::new())).collect(),
            next: std::sync::atomic::AtomicUsize::new(0),
            metrics: std::sync::Mutex::new(BTreeMap::new()),
            formed: std::sync::atomic::AtomicUsize::new(0),
            reused: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    fn values(&self, cfg: &Config) -> Vec<f64> {
        self.read.iter().map(|r| r(cfg)).collect()
    }

    /// A trace of conversation `conv` whose intervals hold `values`.
    fn find(&self, conv: usize, values: &[f64]) -> Option<Arc<Trace>> {
        let traces = self.convs[conv].lock().unwrap_or_else(|p| p.into_inner());
        traces.iter().find(|t| t.intervals.iter().zip(values).all(|(i, v)| i.contains(*v))).cloned()
    }

    fn add(&self, conv: usize, intervals: Vec<crate::state::trace::Interval>, formed: Formed) -> Arc<Trace> {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let t = Arc::new(Trace { id, intervals, formed: Arc::new(formed) });
        self.convs[conv].lock().unwrap_or_else(|p| p.into_inner()).push(t.clone());
        t
    }
}

/// Forms one conversation at a point into `store`: its records and live facts.
fn form_conversation(
    conv: &crate::types::Conversation,
    conv_fronts: &ConversationFronts,
    cfg: &Config,
    profile: &dyn profiles::Profile,
    stages: Stages<'_>,
    store: &Store,
) -> Result<(Vec<EpisodeRecord>, BTreeSet<String>)> {
    let mut state = ConvState { entities: conv_fronts.speakers.clone(), sims: conv_fronts.sims.clone(), ..ConvState::default() };
    let mut records = Vec::with_capacity(conv.episodes.len());
    let mut form = || -> Result<()> {
        for (episode, f) in conv.episodes.iter().zip(&conv_fronts.episodes) {
            if !cfg.enabled {
                records.push(EpisodeRecord::disabled(&conv.id, episode));
                continue;
            }
            records.push(profile.back(f, conv, episode, &mut state, cfg, stages, store)?);
        }
        Ok(())
    };
    match &conv_fronts.readings {
        Some(memo) => crate::state::with_readings(memo.clone(), form)?,
        None => form()?,
    }
    // The state mirrors what the store applied, so its live facts are the store's.
    let live = state.facts.iter().filter(|f| f.is_live()).map(|f| f.id.clone()).collect();
    Ok((records, live))
}

/// A formed conversation's share of its point's metrics, from its records
/// and live facts (which are dropped then).
fn part_of(
    conv: &crate::types::Conversation,
    gold: &GoldIndex<'_>,
    (records, live): (Vec<EpisodeRecord>, BTreeSet<String>),
) -> Result<Formed> {
    let part = conversation_parts(gold, &records, &live)?.remove(&conv.id);
    if part.is_none() && !conv.episodes.is_empty() {
        return Err(Error::Other(format!("sweep: conversation {} has episodes but no records", conv.id)));
    }
    Ok(Formed { part, qa: None })
}

#[allow(clippy::too_many_arguments)]
fn run_point(
    dataset: &Dataset,
    cfg: &Config,
    stages: Stages<'_>,
    fronts: &[ConversationFronts],
    gold: &GoldIndex<'_>,
    point: &Point,
    qa: Option<(&crate::qa::QaResult, &FormedQa)>,
    traces: Option<&Traces>,
) -> Result<Row> {
    let values = traces.map(|t| t.values(cfg)).unwrap_or_default();
    // The traces this point's values fall in, per conversation.
    let found: Vec<Option<Arc<Trace>>> = (0..fronts.len()).map(|c| traces.and_then(|t| t.find(c, &values))).collect();
    let known = |ids: &[usize]| traces.and_then(|t| t.metrics.lock().unwrap_or_else(|p| p.into_inner()).get(ids).cloned());
    if let Some(t) = traces
        && let Some(ids) = found.iter().map(|f| f.as_ref().map(|f| f.id)).collect::<Option<Vec<usize>>>()
        && let Some(metrics) = known(&ids)
    {
        t.reused.fetch_add(fronts.len(), std::sync::atomic::Ordering::Relaxed);
        return Ok(row_of(point, metrics));
    }
    let profile = profiles::by_name(&cfg.profile)?;
    // The rules judge is built from config keys a grid may sweep (antonyms,
    // single-valued predicates, shared tokens), so each point builds its own.
    let rules_judge = (stages.judge.id() == RulesJudge::ID).then(|| RulesJudge::new(cfg));
    let judge: &dyn Judge = match &rules_judge {
        Some(j) => j,
        None => stages.judge,
    };
    let stages = Stages { judge, ..stages };
    // The store is made only where a conversation is formed.
    let mut made: Option<Store> = None;
    let mut taken: Vec<Arc<Formed>> = Vec::with_capacity(fronts.len());
    let mut ids = Vec::with_capacity(fronts.len());
    for (c, (conv, conv_fronts)) in dataset.conversations.iter().zip(fronts).enumerate() {
        // With QA, a conversation formed here is evaluated over the store it
        // was formed into (outside any recording: the evaluation hands its
        // items to other threads, which may run other points meanwhile).
        let evaluated = |mut formed: Formed, store: &Store| -> Result<Formed> {
            if let Some((_, memo)) = qa {
                formed.qa = Some(memo.conversation(c, conv, store, stages, cfg)?);
            }
            Ok(formed)
        };
        match (traces, &found[c]) {
            // A trace holds this conversation's result (and its QA): nothing to form.
            (Some(t), Some(hit)) => {
                t.reused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                ids.push(hit.id);
                taken.push(hit.formed.clone());
            }
            (Some(t), None) => {
                let store = point_store(&mut made, profile, qa.is_some())?;
                let recorder = crate::state::trace::Recorder::new(values.clone());
                let (formed, recorded) =
                    crate::state::trace::recording(recorder, || form_conversation(conv, conv_fronts, cfg, profile, stages, store));
                let formed = evaluated(part_of(conv, gold, formed?)?, store)?;
                t.formed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                match recorded {
                    Some(r) => {
                        let added = t.add(c, r.intervals().to_vec(), formed);
                        ids.push(added.id);
                        taken.push(added.formed.clone());
                    }
                    None => taken.push(Arc::new(formed)),
                }
            }
            (None, _) => {
                let store = point_store(&mut made, profile, qa.is_some())?;
                taken.push(Arc::new(evaluated(
                    part_of(conv, gold, form_conversation(conv, conv_fronts, cfg, profile, stages, store)?)?,
                    store,
                )?));
            }
        }
    }
    if let Some(metrics) = (ids.len() == fronts.len()).then(|| known(&ids)).flatten() {
        return Ok(row_of(point, metrics));
    }
    // Each conversation's part, in dataset order: no record is read again.
    let parts: Vec<&ConversationPart> = taken.iter().filter_map(|f| f.part.as_ref()).collect();
    let mut metrics = metrics_of_parts(gold, &parts)?;
    // Retrieval over the point's memory, as a run's QA evaluation (its
    // numeric figures): each conversation's evaluation, in dataset order,
    // then the baselines' rows.
    if let Some((raw, memo)) = qa {
        let key = FormedQa::joined_key(cfg, &taken);
        let known = memo.figures.lock().unwrap_or_else(|p| p.into_inner()).get(&key).cloned();
        let figures = match known {
            Some(f) => f,
            None => {
                let mut formed = crate::qa::QaResult::default();
                for f in &taken {
                    if let Some((_, part)) = &f.qa {
                        formed.absorb(crate::qa::QaResult::clone(part));
                    }
                }
                let formed = formed.with_sources_of(raw);
                let f: BTreeMap<String, f64> =
                    crate::qa::summary_metrics(&formed).into_iter().filter_map(|(k, v)| v.as_f64().map(|x| (k, x))).collect();
                memo.figures.lock().unwrap_or_else(|p| p.into_inner()).insert(key, f.clone());
                f
            }
        };
        metrics.extend(figures);
    }
    if let Some(t) = traces
        && ids.len() == fronts.len()
    {
        t.metrics.lock().unwrap_or_else(|p| p.into_inner()).insert(ids, metrics.clone());
    }
    Ok(row_of(point, metrics))
}

/// The profiles whose formation reaches its store only through
/// [`Store::write_episode`] (soda's `back` writes each episode and reads
/// nothing of the store), so a formation whose store nobody reads goes into
/// a [`Store::scratch`] store: no SQLite schema to make, no rows to write.
const SCRATCH_PROFILES: &[&str] = &["soda"];

/// A store for forming `profile`'s conversations: a scratch store when
/// nothing will read it (`read`: the formed-memory QA will) and the
/// profile allows, else an in-memory SQLite store.
fn forming_store(profile: &dyn profiles::Profile, read: bool) -> Result<Store> {
    if !read && SCRATCH_PROFILES.contains(&profile.name()) {
        return Store::scratch();
    }
    let s = Store::in_memory()?;
    if !profile.searches_while_forming() {
        // Never searched: the QA evaluation reads the facts and their
        // vectors ([`crate::qa::evaluate_formed`]).
        s.defer_search_index()?;
    }
    Ok(s)
}

/// The point's store, made on first use.
fn point_store<'s>(made: &'s mut Option<Store>, profile: &dyn profiles::Profile, read: bool) -> Result<&'s Store> {
    if made.is_none() {
        *made = Some(forming_store(profile, read)?);
    }
    made.as_ref().ok_or_else(|| Error::Other("sweep: no store".into()))
}

/// A point's row; the row is written out (sweep.csv, sweep.md): a URL keeps no password.
fn row_of(point: &Point, metrics: BTreeMap<String, f64>) -> Row {
    let settings = point.settings.iter().map(|(k, v)| (k.clone(), crate::redact::urls_in(v))).collect();
    Row { index: point.index, settings, metrics }
}

/// The rows as CSV: index, each swept key, then every metric (sorted).
pub fn to_csv(rows: &[Row]) -> String {
    let keys: Vec<String> = rows.first().map(|r| r.settings.iter().map(|(k, _)| k.clone()).collect()).unwrap_or_default();
    let metrics: Vec<String> = rows.first().map(|r| r.metrics.keys().cloned().collect()).unwrap_or_default();
    let mut out = String::new();
    out.push_str(
        &std::iter::once("point".to_string()).chain(keys.iter().cloned()).chain(metrics.iter().cloned()).collect::<Vec<_>>().join(","),
    );
    out.push('\n');
    for r in rows {
        let mut cells = vec![r.index.to_string()];
        cells.extend(r.settings.iter().map(|(_, v)| v.clone()));
        cells.extend(metrics.iter().map(|m| r.metrics.get(m).map_or(String::new(), |x| format!("{x}"))));
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// Writes a shard's (or a whole sweep's) rows as `rows.jsonl`, for merging.
pub fn write_rows(dir: &Path, rows: &[Row]) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, e))?;
    let mut text = String::new();
    for r in rows {
        text.push_str(&serde_json::to_string(r).map_err(|e| Error::Other(format!("serialise row: {e}")))?);
        text.push('\n');
    }
    crate::rundir::write_bytes(&dir.join("rows.jsonl"), text.as_bytes())
}

/// Reads and joins shards' `rows.jsonl`, sorted by point; a point present
/// twice, or a grid with holes, is an error.
pub fn read_rows(dirs: &[&Path]) -> Result<Vec<Row>> {
    let mut rows: Vec<Row> = Vec::new();
    for d in dirs {
        let p = d.join("rows.jsonl");
        let text = std::fs::read_to_string(&p).map_err(|e| Error::io(&p, e))?;
        for (i, line) in text.lines().enumerate() {
            let r: Row = serde_json::from_str(line).map_err(|e| Error::input(&p, format!("line {}: {e}", i + 1)))?;
            rows.push(r);
        }
    }
    rows.sort_by_key(|r| r.index);
    for (i, r) in rows.iter().enumerate() {
        if r.index != i {
            return Err(Error::Other(format!(
                "merge: grid point {i} is {} (shards missing or overlapping)",
                if r.index < i { "present twice" } else { "missing" }
            )));
        }
    }
    Ok(rows)
}

/// The index of the best row for `objective` (higher is better unless
/// `lower`); ties go to the lowest index.
pub fn best(rows: &[Row], objective: &str, lower: bool) -> Option<usize> {
    rows.iter()
        .filter_map(|r| r.metrics.get(objective).map(|v| (r.index, *v)))
        .fold(None::<(usize, f64)>, |acc, (i, v)| match acc {
            Some((_, bv)) if (if lower { v >= bv } else { v <= bv }) => acc,
            _ => Some((i, v)),
        })
        .map(|(i, _)| i)
}

/// [`best`], where ties go to the seed defaults, then to the tied point
/// nearest them (each swept key's distance as a fraction of its grid's
/// range; a non-numeric key counts 1 when it differs), then to the lowest
/// index: a tie never recommends a change that gains nothing.
pub fn best_near_default(rows: &[Row], objective: &str, lower: bool, defaults: &[(String, String)]) -> Option<usize> {
    let top = rows.iter().find(|r| Some(r.index) == best(rows, objective, lower))?.metrics.get(objective).copied()?;
    let keys: Vec<&String> = rows.first().map(|r| r.settings.iter().map(|(k, _)| k).collect()).unwrap_or_default();
    let span = |k: &str| -> f64 {
        let xs: Vec<f64> = rows.iter().filter_map(|r| r.settings.iter().find(|(rk, _)| rk == k)?.1.parse::<f64>().ok()).collect();
        let (lo, hi) = xs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
        if hi > lo { hi - lo } else { 1.0 }
    };
    let spans: Vec<f64> = keys.iter().map(|k| span(k)).collect();
    let distance = |r: &Row| -> f64 {
        keys.iter()
            .zip(&spans)
            .map(|(k, sp)| {
                let v = r.settings.iter().find(|(rk, _)| rk == *k).map_or("", |(_, v)| v.as_str());
                let d = defaults.iter().find(|(dk, _)| dk == *k).map_or("", |(_, d)| d.as_str());
                match (v.parse::<f64>(), d.parse::<f64>()) {
                    (Ok(x), Ok(y)) => (x - y).abs() / sp,
                    _ if values_equal(v, d) => 0.0,
                    _ => 1.0,
                }
            })
            .sum()
    };
    rows.iter()
        .filter(|r| r.metrics.get(objective) == Some(&top))
        .map(|r| (distance(r), r.index))
        .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
        .map(|(_, i)| i)
}

/// The swept keys that do not move `objective`: with the other keys held
/// at any of their values, every value of the key gives the same figure.
/// A grid of one value per key has none.
pub fn no_effect(rows: &[Row], objective: &str) -> Vec<String> {
    let keys: Vec<String> = rows.first().map(|r| r.settings.iter().map(|(k, _)| k.clone()).collect()).unwrap_or_default();
    keys.iter()
        .enumerate()
        .filter(|(i, _)| {
            let mut groups: BTreeMap<Vec<&str>, (std::collections::BTreeSet<&str>, Vec<u64>)> = BTreeMap::new();
            for r in rows {
                let rest: Vec<&str> = r.settings.iter().enumerate().filter(|(j, _)| j != i).map(|(_, (_, v))| v.as_str()).collect();
                let g = groups.entry(rest).or_default();
                g.0.insert(r.settings.get(*i).map_or("", |(_, v)| v.as_str()));
                g.1.push(r.metrics.get(objective).map_or(u64::MAX, |x| x.to_bits()));
            }
            groups.values().any(|(vals, _)| vals.len() > 1) && groups.values().all(|(_, figs)| figs.windows(2).all(|w| w[0] == w[1]))
        })
        .map(|(_, k)| k.clone())
        .collect()
}

/// Points not dominated on (x, y), both higher-is-better, sorted by x.
pub fn pareto(rows: &[Row], x: &str, y: &str) -> Vec<usize> {
    let pts: Vec<(usize, f64, f64)> = rows.iter().filter_map(|r| Some((r.index, *r.metrics.get(x)?, *r.metrics.get(y)?))).collect();
    let mut front: Vec<(usize, f64, f64)> =
        pts.iter().filter(|(_, a, b)| !pts.iter().any(|(_, c, d)| (c >= a && d >= b) && (c > a || d > b))).cloned().collect();
    front.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    front.dedup_by(|a, b| a.1 == b.1 && a.2 == b.2);
    front.into_iter().map(|(i, _, _)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_parse_ranges_and_lists() {
        let a = parse_axis("near_dup_threshold=0.90:0.95:0.01").unwrap();
        assert_eq!(a.values, vec!["0.90", "0.91", "0.92", "0.93", "0.94", "0.95"]);
        let b = parse_axis("max_facts=10,20").unwrap();
        assert_eq!(b.values, vec!["10", "20"]);
        assert!(parse_axis("nope=1,2").unwrap_err().to_string().contains("unknown config key"));
        assert!(parse_axis("near_dup_threshold=0.9:0.8:0.01").is_err());
        assert!(parse_axis("near_dup_threshold").is_err());
    }

    #[test]
    fn an_axis_the_profile_never_reads_is_refused_and_a_flat_key_warned() {
        let memorix = vec![parse_axis("memorix.high_min=0.7,0.8").unwrap()];
        let err = check_axes(&memorix, "soda").unwrap_err().to_string();
        assert!(err.contains("--grid memorix.high_min: profile soda never reads it (it is read by profile memorix)"), "{err}");
        assert!(check_axes(&memorix, "memorix").unwrap().is_empty());
        let flat = vec![parse_axis("near_dup_threshold=0.9,0.95").unwrap(), parse_axis("max_facts=10").unwrap()];
        assert!(check_axes(&flat, "memorix").unwrap_err().to_string().contains("read by profile soda and signet"));
        let warned = check_axes(&flat, "signet").unwrap();
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(warned[0].contains("near_dup_threshold is deprecated"), "{warned:?}");
        assert!(check_axes(&[parse_axis("soda.near_dup_threshold=0.9").unwrap()], "soda").unwrap().is_empty());
    }

    #[test]
    fn grids_are_sized_and_checked_before_any_point_is_built() {
        let axes = vec![parse_axis("near_dup_threshold=0.90:0.95:0.01").unwrap(), parse_axis("max_facts=10,20,30").unwrap()];
        assert_eq!(check_grid(&axes, 18).unwrap(), 18);
        let all = points(&axes);
        assert_eq!((0..all.len()).map(|i| point_at(&axes, i)).collect::<Vec<_>>(), all);
        assert_eq!(shard_points(&axes, 1, 4), shard(all, 1, 4));
        let err = check_grid(&axes, 17).unwrap_err().to_string();
        assert!(err.contains("18 points (6 × 3) is more than --max-points 17"), "{err}");
        let big = ["near_dup_threshold=0:0.9999:0.0001".to_string(), "entity_merge_threshold=0:0.9999:0.0001".to_string()];
        let err = parse_grid(&big, 10_000).unwrap_err().to_string();
        assert!(err.contains("100000000 points (10000 × 10000)"), "{err}");
        let twice = vec![parse_axis("max_facts=1,2").unwrap(), parse_axis("max_facts=3").unwrap()];
        assert!(check_grid(&twice, 100).unwrap_err().to_string().contains("--grid max_facts: the key is given twice"));
    }

    #[test]
    fn axis_values_are_each_checked_under_the_grid_flag() {
        let err = parse_axis("max_facts=10,lots").unwrap_err().to_string();
        assert!(err.contains("--grid max_facts=lots") && !err.contains("--set"), "{err}");
        let err = parse_axis("hashed_dims=256,4000000000").unwrap_err().to_string();
        assert!(err.contains("hashed_dims = 4000000000: must be within 1..=8192"), "{err}");
        let err = parse_axis("bogus=1").unwrap_err().to_string();
        assert!(err.contains("--grid bogus: unknown config key"), "{err}");
        for bad in ["near_dup_threshold=0:1e300:1e-300", "near_dup_threshold=nan:1:0.1", "near_dup_threshold=0:1:inf"] {
            assert!(parse_axis(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_grid_is_counted_before_its_values_past_the_first_are_checked() {
        // hashed_dims past 8192 is out of range: the 8193rd value on is bad.
        let grid = ["hashed_dims=1:10000:1".to_string(), "max_facts=10,20".to_string()];
        let err = parse_grid(&grid, 100).unwrap_err().to_string();
        assert!(err.contains("20000 points (10000 × 2) is more than --max-points 100"), "{err}");
        let err = parse_grid(&grid, 20_000).unwrap_err().to_string();
        assert!(err.contains("hashed_dims = 8193: must be within 1..=8192"), "{err}");
        // An unknown key or a bad first value is named before the grid is counted.
        let err = parse_grid(&["bogus=1:10000:1".to_string(), "max_facts=1,2".to_string()], 1).unwrap_err().to_string();
        assert!(err.contains("--grid bogus: unknown config key"), "{err}");
        let err = parse_grid(&["max_facts=lots,1".to_string(), "max_facts=3".to_string()], 1).unwrap_err().to_string();
        assert!(err.contains("--grid max_facts=lots"), "{err}");
        let (axes, total) = parse_grid(&["max_facts=10,20".to_string(), "near_dup_threshold=0.8:0.9:0.05".to_string()], 6).unwrap();
        assert_eq!((total, axes[0].values.len(), axes[1].values.clone()), (6, 2, vec!["0.80".to_string(), "0.85".into(), "0.90".into()]));
    }

    #[test]
    fn estimate_scales_one_point_by_the_rounds_left() {
        let e =
            Estimate { points: 9, fronts: std::time::Duration::from_secs(2), one_point: std::time::Duration::from_millis(500), threads: 2 };
        assert_eq!(e.remaining(), std::time::Duration::from_secs(2));
        assert_eq!(e.describe(), "sweep: 9 points; the front pass took 2.0 s, one point 0.5 s: about 2.0 s more on 2 thread(s)");
    }

    #[test]
    fn grid_order_and_shards_partition() {
        let axes = vec![
            Axis { key: "a".into(), values: vec!["1".into(), "2".into()] },
            Axis { key: "b".into(), values: vec!["x".into(), "y".into(), "z".into()] },
        ];
        let pts = points(&axes);
        assert_eq!(pts.len(), 6);
        assert_eq!(pts[1].settings, vec![("a".to_string(), "1".to_string()), ("b".to_string(), "y".to_string())]);
        let mut seen: Vec<usize> = (0..4).flat_map(|k| shard(pts.clone(), k, 4)).map(|p| p.index).collect();
        seen.sort();
        assert_eq!(seen, (0..6).collect::<Vec<_>>());
        assert!(parse_shard("4/4").is_err());
        assert_eq!(parse_shard("1/4").unwrap(), (1, 4));
    }

    fn row(i: usize, x: f64, y: f64) -> Row {
        Row { index: i, settings: vec![], metrics: BTreeMap::from([("p".to_string(), x), ("r".to_string(), y)]) }
    }

    #[test]
    fn plots_for_one_and_two_axes_only_with_the_default_marked() {
        let rep = SweepReport {
            dataset: "d",
            mode: "rules",
            objective: "p",
            pareto_x: "p",
            pareto_y: "r",
            defaults: vec![("a".into(), "0.2".into()), ("b".into(), "x".into())],
            holdout: None,
        };
        let one: Vec<Row> = ["0.1", "0.2", "0.3"]
            .iter()
            .enumerate()
            .map(|(i, v)| Row { settings: vec![("a".into(), v.to_string())], ..row(i, 0.1 * i as f64, 0.5) })
            .collect();
        let p1 = plots(&one, &rep).unwrap();
        assert_eq!(p1.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(), ["sweep-a.svg"]);
        assert!(p1[0].1.contains("seed default 0.2"));
        let two: Vec<Row> = points(&[
            Axis { key: "a".into(), values: vec!["0.1".into(), "0.2".into()] },
            Axis { key: "b".into(), values: vec!["x".into(), "y".into()] },
        ])
        .into_iter()
        .map(|p| Row { settings: p.settings, ..row(p.index, 0.5, 0.5) })
        .collect();
        let p2 = plots(&two, &rep).unwrap();
        assert_eq!(p2.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(), ["sweep-p.svg", "sweep-r.svg"]);
        let three: Vec<Row> =
            vec![Row { settings: vec![("a".into(), "1".into()), ("b".into(), "2".into()), ("c".into(), "3".into())], ..row(0, 0.5, 0.5) }];
        assert!(plots(&three, &rep).unwrap().is_empty());
        assert!(render_md(&three, &rep, &[]).contains("No plots"));
    }

    #[test]
    fn best_and_pareto() {
        let rows = vec![row(0, 0.5, 0.5), row(1, 0.6, 0.4), row(2, 0.4, 0.4), row(3, 0.6, 0.4), row(4, 0.3, 0.9)];
        assert_eq!(best(&rows, "p", false), Some(1));
        assert_eq!(best(&rows, "p", true), Some(4));
        assert_eq!(pareto(&rows, "p", "r"), vec![4, 0, 1]);
    }

    #[test]
    fn a_mistyped_metric_gets_a_suggestion() {
        let err = check_metrics("turn_f2", "content_precision", "content_recall").unwrap_err().to_string();
        assert!(err.contains("--objective \"turn_f2\": not a metric of a sweep point (did you mean `turn_f1`?)"), "{err}");
    }

    #[test]
    fn a_key_that_moves_nothing_is_named() {
        let at =
            |i: usize, a: &str, b: &str, p: f64| Row { settings: vec![("a".into(), a.into()), ("b".into(), b.into())], ..row(i, p, 0.0) };
        let rows = vec![at(0, "1", "x", 0.5), at(1, "1", "y", 0.5), at(2, "2", "x", 0.7), at(3, "2", "y", 0.7)];
        assert_eq!(no_effect(&rows, "p"), ["b"]);
        assert!(no_effect(&rows[..1], "p").is_empty(), "one value each: nothing to tell");
    }

    #[test]
    fn ties_go_to_the_default_then_the_nearest() {
        let at = |i: usize, a: &str, p: f64| Row { settings: vec![("a".into(), a.into())], ..row(i, p, 0.0) };
        let rows = vec![at(0, "0.1", 0.7), at(1, "0.5", 0.7), at(2, "0.8", 0.7), at(3, "0.9", 0.6)];
        assert_eq!(best(&rows, "p", false), Some(0), "the lowest-numbered of the tied");
        let defaults = |v: &str| vec![("a".to_string(), v.to_string())];
        assert_eq!(best_near_default(&rows, "p", false, &defaults("0.8")), Some(2), "the default, tied");
        assert_eq!(best_near_default(&rows, "p", false, &defaults("0.6")), Some(1), "the nearest to it");
        assert_eq!(best_near_default(&rows, "p", false, &defaults("0.9")), Some(2), "the default is not best: the nearest best");
    }

    /// `sweep.md` names the point [`best_near_default`] chose: on a tie
    /// with the seed defaults, the defaults' row is the best, and says so.
    #[test]
    fn a_tie_with_the_defaults_shows_the_defaults_as_best() {
        let at = |i: usize, a: &str, b: &str, p: f64| Row {
            settings: vec![("near_dup_threshold".into(), a.into()), ("contradiction_band_min".into(), b.into())],
            ..row(i, p, 0.0)
        };
        let rows = vec![at(0, "0.90", "0.50", 0.7), at(1, "0.90", "0.60", 0.6), at(2, "0.95", "0.50", 0.7), at(3, "0.95", "0.60", 0.7)];
        let rep = SweepReport {
            dataset: "d",
            mode: "rules",
            objective: "p",
            pareto_x: "p",
            pareto_y: "r",
            defaults: vec![("near_dup_threshold".into(), "0.95".into()), ("contradiction_band_min".into(), "0.6".into())],
            holdout: None,
        };
        assert_eq!(best_near_default(&rows, "p", false, &rep.defaults), Some(3), "the defaults, tied with points 0 and 2");
        let md = render_md(&rows, &rep, &[]);
        assert!(md.contains("| 3 (best) | near_dup_threshold=0.95, contradiction_band_min=0.60 |"), "{md}");
        assert!(md.contains("| 3 (seed defaults) |"), "{md}");
        assert!(md.contains("3 points tie for the best `p` (0.7); the seed defaults are among them"), "{md}");
        // Defaults outside the tie: the tied point nearest them.
        let rep = SweepReport {
            defaults: vec![("near_dup_threshold".into(), "0.90".into()), ("contradiction_band_min".into(), "0.55".into())],
            ..rep
        };
        assert_eq!(best_near_default(&rows, "p", false, &rep.defaults), Some(0), "0.90/0.50 is the tied point nearest 0.90/0.55");
        assert!(render_md(&rows, &rep, &[]).contains("the one nearest the seed defaults is shown"));
    }

    /// `sweep merge` reads the shards' `rows.jsonl`: every metric comes
    /// back bit for bit (a mean of QA scores has 17 significant digits),
    /// so merged shards write the bytes an unsharded sweep writes.
    #[test]
    fn rows_round_trip_through_rows_jsonl_bit_for_bit() {
        let rows: Vec<Row> = (0..2000)
            .map(|i| {
                let x = (i as f64 * 0.7311 + 0.1).sin().abs() / 3.0 + (1.0 / (i as f64 + 3.0));
                row(i, x, 1.0 - x / 7.0)
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        write_rows(dir.path(), &rows).unwrap();
        let back = read_rows(&[dir.path()]).unwrap();
        let differing: Vec<(f64, f64)> = rows
            .iter()
            .zip(&back)
            .flat_map(|(a, b)| a.metrics.values().zip(b.metrics.values()).map(|(x, y)| (*x, *y)))
            .filter(|(x, y)| x.to_bits() != y.to_bits())
            .collect();
        assert!(differing.is_empty(), "{} values changed, e.g. {:?}", differing.len(), differing.first());
    }
}

/// A sweep with a held-out split: the grid runs on the tune conversations,
/// the best point is chosen there ([`best_near_default`]), and that point
/// and the seed defaults run again on the held-out conversations, which
/// no choice has seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Holdout {
    pub split: crate::dataset::Split,
    /// The conversations the grid ran on.
    pub tune: Vec<String>,
    /// The conversations the chosen point is reported on.
    pub holdout: Vec<String>,
    /// The grid point chosen on tune.
    pub chosen: usize,
    /// On the held-out conversations: the chosen point, then the seed
    /// defaults (one row when the defaults were chosen).
    pub rows: Vec<HeldOutRow>,
}

/// One configuration's figures on the held-out conversations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldOutRow {
    /// `best on tune` or `seed defaults`.
    pub label: String,
    pub settings: Vec<(String, String)>,
    /// The objective on the tune conversations (none for seed defaults
    /// that are not a grid point).
    pub tune_objective: Option<f64>,
    /// Every metric on the held-out conversations.
    pub metrics: BTreeMap<String, f64>,
}

/// Runs the point chosen on `rows` (the grid on the tune conversations) and
/// the seed `defaults` on `held_out`, as a sweep of those two points.
pub fn holdout_check(
    held_out: &Dataset,
    base: &Config,
    stages: Stages<'_>,
    rows: &[Row],
    objective: &str,
    defaults: &[(String, String)],
    no_qa: bool,
) -> Result<(usize, Vec<HeldOutRow>)> {
    let chosen = best_near_default(rows, objective, false, defaults)
        .ok_or_else(|| Error::Other(format!("sweep: no grid point has `{objective}` to choose on")))?;
    let Some(best) = rows.iter().find(|r| r.index == chosen) else {
        return Err(Error::Other(format!("sweep: grid point {chosen} has no row")));
    };
    let is_default =
        |settings: &[(String, String)]| settings.iter().all(|(k, v)| defaults.iter().any(|(dk, dv)| dk == k && values_equal(dv, v)));
    let mut points = vec![Point { index: 0, settings: best.settings.clone() }];
    let mut labels = vec![("best on tune", best.metrics.get(objective).copied())];
    let defaults_known = !defaults.is_empty() && defaults.iter().all(|(_, v)| !v.is_empty());
    if !is_default(&best.settings) && defaults_known {
        points.push(Point { index: 1, settings: defaults.to_vec() });
        let tuned = rows.iter().find(|r| is_default(&r.settings)).and_then(|r| r.metrics.get(objective).copied());
        labels.push(("seed defaults", tuned));
    }
    let (out, _) = run_sweep_with(held_out, base, stages, &points, &Hooks { no_qa, ..Hooks::default() })?;
    let rows = out
        .into_iter()
        .zip(labels)
        .zip(&points)
        .map(|((r, (label, tune_objective)), p)| HeldOutRow {
            label: label.to_string(),
            settings: p.settings.clone(),
            tune_objective,
            metrics: r.metrics,
        })
        .collect();
    Ok((chosen, rows))
}

/// What `sweep.md` is about.
#[derive(Debug, Clone)]
pub struct SweepReport<'a> {
    pub dataset: &'a str,
    pub mode: &'a str,
    pub objective: &'a str,
    pub pareto_x: &'a str,
    pub pareto_y: &'a str,
    /// Each swept key's value in the base config (the seed default unless overridden).
    pub defaults: Vec<(String, String)>,
    /// The held-out check, when the sweep was run with a split.
    pub holdout: Option<&'a Holdout>,
}

/// The files a sweep writes into its `--out` (and its plots, `sweep-*.svg`).
pub const SWEEP_FILES: &[&str] = &["sweep.json", "rows.jsonl", "sweep.csv", "sweep.parquet", "sweep.md"];

/// An error when `dir` holds a run's or a comparison's output, or a file
/// named like a sweep's (`sweep.md`, a `sweep-*.svg`, …) that is not
/// memform's (no memform `sweep.json` beside it), or a symbolic link of
/// such a name. A missing `dir` is fine.
pub fn check_out(dir: &Path) -> Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    crate::rundir::check_kind(dir, SWEEP_FILES[0])?;
    let mut names: Vec<String> = SWEEP_FILES[1..].iter().map(|s| s.to_string()).collect();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let name = entry.map_err(|e| Error::io(dir, e))?.file_name().to_string_lossy().into_owned();
        if name.starts_with("sweep-") && name.ends_with(".svg") {
            names.push(name);
        }
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let ours = |v: &serde_json::Value| v.get("grid").is_some_and(serde_json::Value::is_array) && v.get("objective").is_some();
    crate::rundir::check_owned(dir, SWEEP_FILES[0], ours, &names)
}

/// Writes `sweep.csv`, `sweep.parquet`, `rows.jsonl`, the plots and
/// `sweep.md` into `dir`: the same bytes for the same rows, whether they
/// come from one machine or merged shards.
pub fn write_outputs(dir: &Path, rows: &[Row], report: &SweepReport<'_>) -> Result<()> {
    let plots = plots(rows, report)?;
    for (name, _) in &plots {
        crate::rundir::refuse_symlink(&dir.join(name))?;
    }
    write_rows(dir, rows)?;
    let csv = dir.join("sweep.csv");
    crate::rundir::write_bytes(&csv, to_csv(rows).as_bytes())?;
    let parquet = dir.join("sweep.parquet");
    crate::report::write_parquet(&parquet, &to_frame(rows).map_err(|e| Error::Other(format!("{}: {e}", parquet.display())))?)?;
    for (name, svg) in &plots {
        crate::report::write_text(&dir.join(name), svg)?;
    }
    let names: Vec<&str> = plots.iter().map(|(n, _)| n.as_str()).collect();
    crate::report::write_text(&dir.join("sweep.md"), &render_md(rows, report, &names))
}

/// The rows as a frame: `point`, each swept key (a number when every value
/// of it is one, else its TOML text), then every metric.
pub fn to_frame(rows: &[Row]) -> std::result::Result<polars::prelude::DataFrame, polars::prelude::PolarsError> {
    use polars::prelude::{Column, DataFrame};
    let keys: Vec<String> = rows.first().map(|r| r.settings.iter().map(|(k, _)| k.clone()).collect()).unwrap_or_default();
    let metrics: Vec<String> = rows.first().map(|r| r.metrics.keys().cloned().collect()).unwrap_or_default();
    let mut cols = vec![Column::new("point".into(), rows.iter().map(|r| r.index as i64).collect::<Vec<_>>())];
    for (k, key) in keys.iter().enumerate() {
        let text: Vec<String> = rows.iter().map(|r| r.settings.get(k).map(|s| s.1.clone()).unwrap_or_default()).collect();
        let numbers: Option<Vec<f64>> = text.iter().map(|t| t.parse::<f64>().ok()).collect();
        cols.push(match numbers {
            Some(v) => Column::new(key.as_str().into(), v),
            None => Column::new(key.as_str().into(), text),
        });
    }
    for m in &metrics {
        cols.push(Column::new(m.as_str().into(), rows.iter().map(|r| r.metrics.get(m).copied()).collect::<Vec<Option<f64>>>()));
    }
    DataFrame::new(rows.len(), cols)
}

/// An axis's values in grid order, as text and (when all numeric) numbers.
fn axis_values(rows: &[Row], k: usize) -> (Vec<String>, Option<Vec<f64>>) {
    let mut vals: Vec<String> = Vec::new();
    for r in rows {
        if let Some((_, v)) = r.settings.get(k)
            && !vals.contains(v)
        {
            vals.push(v.clone());
        }
    }
    let nums = vals.iter().map(|v| v.parse::<f64>().ok()).collect();
    (vals, nums)
}

/// The metrics `sweep.md` plots: the objective and the two Pareto metrics.
fn plotted(rep: &SweepReport<'_>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in [rep.objective, rep.pareto_x, rep.pareto_y] {
        if !out.iter().any(|o| o == m) {
            out.push(m.to_string());
        }
    }
    out
}

/// SVG plots of the sweep: for a 1-D grid over a numeric key, the plotted
/// metrics against it; for a 2-D grid, a heat map per plotted metric. The
/// seed default is marked on each. Larger grids get no plot (`sweep.csv`
/// has every point).
pub fn plots(rows: &[Row], rep: &SweepReport<'_>) -> Result<Vec<(String, String)>> {
    let Some(first) = rows.first() else { return Ok(Vec::new()) };
    let keys: Vec<&str> = first.settings.iter().map(|(k, _)| k.as_str()).collect();
    let default_of = |k: &str| rep.defaults.iter().find(|(dk, _)| dk == k).map(|(_, v)| v.clone());
    let mut out = Vec::new();
    match keys.as_slice() {
        [key] => {
            let (_, nums) = axis_values(rows, 0);
            if nums.is_none() {
                return Ok(out);
            }
            let series: Vec<(String, Vec<(f64, f64)>)> = plotted(rep)
                .into_iter()
                .map(|m| {
                    let pts = rows.iter().filter_map(|r| Some((r.settings[0].1.parse::<f64>().ok()?, *r.metrics.get(&m)?))).collect();
                    (m, pts)
                })
                .collect();
            let marker = default_of(key).and_then(|d| d.parse::<f64>().ok());
            let label = marker.map(|m| format!("seed default {m}"));
            let svg = crate::report::threshold_chart(&format!("Sweep over {key}"), key, &series, marker.zip(label.as_deref()))?;
            out.push((format!("sweep-{key}.svg"), svg));
        }
        [ky, kx] => {
            let (ys, _) = axis_values(rows, 0);
            let (xs, _) = axis_values(rows, 1);
            let pos = |vals: &[String], d: Option<String>| d.and_then(|d| vals.iter().position(|v| values_equal(v, &d)));
            let marked = pos(&xs, default_of(kx)).zip(pos(&ys, default_of(ky)));
            for m in plotted(rep) {
                let mut grid = vec![vec![None; xs.len()]; ys.len()];
                for r in rows {
                    let (Some(yi), Some(xi)) =
                        (ys.iter().position(|v| *v == r.settings[0].1), xs.iter().position(|v| *v == r.settings[1].1))
                    else {
                        continue;
                    };
                    grid[yi][xi] = r.metrics.get(&m).copied();
                }
                let svg = crate::report::heat_map(&format!("{m} over the grid"), kx, ky, &xs, &ys, &grid, marked)?;
                out.push((format!("sweep-{m}.svg"), svg));
            }
        }
        _ => {}
    }
    Ok(out)
}

fn settings_text(s: &[(String, String)]) -> String {
    s.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
}

fn metric(r: &Row, m: &str) -> String {
    r.metrics.get(m).map_or("–".to_string(), |v| if v.fract() == 0.0 && v.abs() >= 1.0 { format!("{v:.0}") } else { format!("{v:.4}") })
}

/// `sweep.md`: the best point, the seed-default point, the Pareto front,
/// and the plots named in `plots`.
pub fn render_md(rows: &[Row], rep: &SweepReport<'_>, plots: &[&str]) -> String {
    let mut out = format!(
        "# Sweep: {} ({} mode)\n\n{} grid points over {}.\n\n",
        rep.dataset,
        rep.mode,
        rows.len(),
        rows.first().map(|r| r.settings.iter().map(|(k, _)| format!("`{k}`")).collect::<Vec<_>>().join(" × ")).unwrap_or_default()
    );
    let mut cols: Vec<String> = plotted(rep);
    for c in ["turn_precision", "turn_recall", "stored_facts", "dedup_rate"] {
        if !cols.iter().any(|x| x == c) {
            cols.push(c.to_string());
        }
    }
    let header = format!("| point | settings | {} |\n|---|---|{}\n", cols.join(" | "), "---:|".repeat(cols.len()));
    let line = |r: &Row, label: &str| {
        format!(
            "| {}{label} | {} | {} |\n",
            r.index,
            settings_text(&r.settings),
            cols.iter().map(|c| metric(r, c)).collect::<Vec<_>>().join(" | ")
        )
    };
    match rep.holdout {
        Some(h) => out.push_str(&format!(
            "## Best for `{}`, chosen on the tune conversations\n\nThe grid ran on {} tune conversation(s) ({}); the held-out check below \
             reports the chosen point on the {} held-out one(s).\n\n",
            rep.objective,
            h.tune.len(),
            h.tune.join(", "),
            h.holdout.len()
        )),
        None => out.push_str(&format!("## Best for `{}`\n\n", rep.objective)),
    }
    out.push_str(&header);
    let by_index = |i: usize| rows.iter().find(|r| r.index == i);
    let chosen = best_near_default(rows, rep.objective, false, &rep.defaults);
    if let Some(r) = chosen.and_then(by_index) {
        out.push_str(&line(r, " (best)"));
    }
    let default_row =
        rows.iter().find(|r| r.settings.iter().all(|(k, v)| rep.defaults.iter().any(|(dk, dv)| dk == k && values_equal(dv, v))));
    match default_row {
        Some(r) => out.push_str(&line(r, " (seed defaults)")),
        None => out.push_str(&format!("\nThe seed defaults ({}) are not a grid point.\n", settings_text(&rep.defaults))),
    }
    let best_value = chosen.and_then(by_index).and_then(|r| r.metrics.get(rep.objective).copied());
    if let Some(v) = best_value {
        let ties = rows.iter().filter(|r| r.metrics.get(rep.objective) == Some(&v)).count();
        if ties > 1 {
            let with_default = default_row.is_some_and(|r| r.metrics.get(rep.objective) == Some(&v));
            out.push_str(&format!(
                "\n{ties} points tie for the best `{}` ({v}); {}.\n",
                rep.objective,
                if with_default {
                    "the seed defaults are among them and shown as best: no change gains anything"
                } else {
                    "the one nearest the seed defaults is shown"
                }
            ));
        }
    }
    let idle = no_effect(rows, rep.objective);
    if !idle.is_empty() {
        out.push_str(&format!(
            "\n{} no effect on `{}` over this grid: every value gives the same figure when the other keys are held.\n",
            match idle.as_slice() {
                [one] => format!("`{one}` has"),
                many => format!("{} have", many.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")),
            },
            rep.objective
        ));
    }
    if let Some(h) = rep.holdout {
        out.push_str(&holdout_md(h, rep.objective, &cols));
    }
    out.push_str(&format!("\n## Pareto front: `{}` vs `{}`\n\n", rep.pareto_x, rep.pareto_y));
    out.push_str(&header);
    for r in pareto(rows, rep.pareto_x, rep.pareto_y).into_iter().filter_map(by_index) {
        out.push_str(&line(r, ""));
    }
    if !plots.is_empty() {
        out.push_str("\n## Plots\n\nThe seed defaults are marked (a dashed line; an outlined cell).\n\n");
        for p in plots {
            out.push_str(&format!("![{p}]({p})\n\n"));
        }
    } else if rows.first().is_some_and(|r| r.settings.len() > 2) {
        out.push_str("\nNo plots: they are drawn for 1-D and 2-D grids only.\n");
    }
    out.push_str("\nEvery point, with every metric, is in `sweep.csv` and `sweep.parquet`.\n");
    out
}

/// `sweep.md`'s held-out check: the chosen point and the seed defaults on
/// the held-out conversations, beside their tune figure.
fn holdout_md(h: &Holdout, objective: &str, cols: &[String]) -> String {
    let mut out = format!(
        "\n## Held-out check\n\nOn the {} held-out conversation(s) ({}), which chose nothing:\n\n\
         | | settings | `{objective}` on tune | `{objective}` held out | {} |\n|---|---|---:|---:|{}\n",
        h.holdout.len(),
        h.holdout.join(", "),
        cols.iter().filter(|c| *c != objective).map(|c| format!("{c} held out")).collect::<Vec<_>>().join(" | "),
        "---:|".repeat(cols.iter().filter(|c| *c != objective).count())
    );
    for r in &h.rows {
        let row = Row { index: 0, settings: r.settings.clone(), metrics: r.metrics.clone() };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            r.label,
            settings_text(&r.settings),
            r.tune_objective.map_or("–".to_string(), |v| format!("{v:.4}")),
            metric(&row, objective),
            cols.iter().filter(|c| *c != objective).map(|c| metric(&row, c)).collect::<Vec<_>>().join(" | ")
        ));
    }
    let value = |label: &str| h.rows.iter().find(|r| r.label == label).and_then(|r| r.metrics.get(objective).copied());
    match (value("best on tune"), value("seed defaults")) {
        (Some(b), Some(d)) if b == d => out
            .push_str(&format!("\nHeld out, the chosen point ties the seed defaults on `{objective}`: the change gains nothing there.\n")),
        (Some(b), Some(d)) => out.push_str(&format!(
            "\nHeld out, the chosen point {} the seed defaults by {:+.4} `{objective}`{}.\n",
            if b > d { "beats" } else { "trails" },
            b - d,
            if b < d { ": held out, the change loses" } else { "" }
        )),
        (Some(_), None) if h.rows.len() == 1 => out.push_str("\nThe seed defaults were chosen on tune: no change is recommended.\n"),
        _ => {}
    }
    out
}

fn values_equal(a: &str, b: &str) -> bool {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => (x - y).abs() < 1e-9,
        _ => a.trim_matches('"') == b.trim_matches('"'),
    }
}
