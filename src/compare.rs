//! Two runs of one dataset side by side (`memform compare`): each metric for
//! both, the uplift B − A with a paired bootstrap 95% confidence interval over
//! episodes, the uplift per conversation, and facts one run stored and the
//! other did not. Works from run directories only (their `run.json`,
//! `summary.json`, `episodes.parquet` and `facts.parquet`), so finished runs
//! are reused rather than re-run.
//!
//! The bootstrap draws conversations with replacement, each with all its
//! paired episodes (clustered: memory carries across a conversation's
//! episodes, so they are not independent draws; the same draws for both
//! runs: the pairing), recomputes every metric from the summed per-episode
//! components of each run (the definitions of [`crate::metrics::METRICS`]),
//! and takes the 2.5th and 97.5th percentiles of B − A. Its random numbers
//! come from a seeded SplitMix64, so the report is deterministic.

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use polars::prelude::{
    Column, DataFrame, DataType, Expr, IntoLazy, JoinArgs, JoinType, LazyFrame, PolarsError, QuantileMethod, SortMultipleOptions, col, lit,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::metrics::{COMPONENTS, Formula, Labels, METRICS, aggregate, scalar_f64};
use crate::report::{config_changes, md, read_parquet, table, write_text};
use crate::rundir::{RunDir, write_json};

/// Bootstrap resamples and seed unless told otherwise.
pub const DEFAULT_RESAMPLES: usize = crate::limits::DEFAULT_RESAMPLES;
pub const DEFAULT_SEED: u64 = crate::limits::DEFAULT_SEED;
/// Most examples listed per side in `compare.md`.
const EXAMPLES: usize = 12;

/// Metrics that do not depend on the run (the dataset fixes them) or are
/// constant: shown once as context, not compared.
const NOT_COMPARED: &[&str] = &["episodes", "turns", "gold_facts", "gold_turns", "qa_evidence_turns", "judge_pairs_labelled"];

/// Metrics in the headline table of `compare.md` (when compared).
const HEADLINE: &[&str] = &[
    "stored_facts",
    "fact_density",
    "dedup_rate",
    "noise_rejection_rate",
    "entity_coherence",
    "turn_precision",
    "turn_recall",
    "turn_f1",
    "content_precision",
    "content_recall",
    "content_f1",
    "content_f1_cosine",
    "qa_evidence_coverage",
    "qa_recall_any_at_5",
    "qa_mrr",
    "qa_items_indexed",
    "dedup_f1",
    "judge_accuracy",
    "contradiction_accuracy",
    "llm_calls",
    "prompt_tokens",
];

/// Metrics shown per conversation (when the run is scored on them).
const PER_CONVERSATION: &[&str] = &["fact_density", "dedup_rate", "noise_rejection_rate", "turn_f1", "content_f1", "qa_evidence_coverage"];

/// A small, fast, seedable PRNG (Steele, Lea & Flood's SplitMix64).
pub use crate::qa::interval::SplitMix64;

/// One side of a comparison: a finished run directory and its label.
#[derive(Debug, Clone)]
pub struct Side {
    pub label: String,
    pub dir: PathBuf,
}

#[derive(Debug, Clone, Copy)]
pub struct CompareOptions {
    pub resamples: usize,
    pub seed: u64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions { resamples: DEFAULT_RESAMPLES, seed: DEFAULT_SEED }
    }
}

/// `compare.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub format: String,
    pub dataset: DatasetInfo,
    pub a: RunInfo,
    pub b: RunInfo,
    pub bootstrap: BootstrapInfo,
    /// Values fixed by the dataset (episodes, turns, gold sizes, baselines).
    pub context: Vec<(String, Value)>,
    pub metrics: Vec<MetricRow>,
    pub per_conversation: Vec<ConversationRow>,
    pub facts: FactDiff,
    /// Wall-clock figures of both runs (not deterministic).
    pub timings: Timings,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetInfo {
    pub name: String,
    pub digest: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub label: String,
    /// The run directory, relative to the comparison's output directory.
    pub dir: String,
    pub mode: String,
    pub extractor: String,
    pub embedder: String,
    pub judge: String,
    pub write_mode: String,
    /// Config keys that differ from the defaults, `key = value`.
    pub config_changes: Vec<String>,
    /// What produced the run (see [`crate::report::report_rows`]).
    #[serde(default)]
    pub provenance: Vec<(String, String)>,
    /// What a reader must know first ([`crate::report::caveats::of_run`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BootstrapInfo {
    pub unit: String,
    pub resamples: usize,
    pub seed: u64,
    pub confidence: f64,
    pub paired_episodes: usize,
    /// Episodes present in only one of the runs (not resampled).
    pub unpaired_episodes: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricRow {
    pub metric: String,
    pub a: f64,
    pub b: f64,
    pub uplift: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// `Some(true)`: higher is better; `None`: the metric describes.
    pub higher_is_better: Option<bool>,
    /// A ratio whose denominator is 0 in a run has no value there (it is
    /// shown as 0): `"A"`, `"B"` or `"A and B"`, with the denominator.
    pub undefined: Option<String>,
    /// The sides (`A`, `B`) whose profile does not compute the metric
    /// ([`crate::report::caveats::not_computed`]): shown as "n/a", with
    /// the reason in `undefined`, never compared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_computed: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationRow {
    pub conversation: String,
    /// (metric, a, b, uplift).
    pub metrics: Vec<(String, f64, f64, f64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactDiff {
    /// Stored facts with the same (conversation, content hash) in both runs.
    pub both: usize,
    pub only_a: usize,
    pub only_b: usize,
    pub examples_only_a: Vec<FactExample>,
    pub examples_only_b: Vec<FactExample>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactExample {
    pub conversation: String,
    pub episode: String,
    pub turn: String,
    pub content: String,
    /// The gold fact it matched (lexical), if any.
    pub gold_match: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    pub a: std::collections::BTreeMap<String, f64>,
    pub b: std::collections::BTreeMap<String, f64>,
}

/// What a finished run directory holds.
struct Loaded {
    manifest: Value,
    summary: Value,
    episodes: DataFrame,
    facts: DataFrame,
}

/// Reads a complete run (an incomplete one is an error).
fn load(dir: &Path) -> Result<Loaded> {
    let run = RunDir::new(dir);
    run.read_complete(|manifest| {
        let episodes = read_parquet(&dir.join("episodes.parquet"))?;
        for c in COMPONENTS.iter().chain(&["conversation", "episode"]) {
            if episodes.column(c).is_err() {
                return Err(Error::input(
                    dir.join("episodes.parquet"),
                    format!("column {c}: missing (written by an older memform? re-run it)"),
                ));
            }
        }
        Ok(Loaded { manifest: manifest.clone(), summary: run.read_summary()?, episodes, facts: read_parquet(&dir.join("facts.parquet"))? })
    })
}

/// True when `dir` holds a complete run whose manifest matches `expected`
/// on every key `expected` has but those that differ from run to run
/// ([`crate::rundir::Manifest::PER_RUN_KEYS`]), compared as JSON, with the
/// files a comparison reads.
pub fn reusable(dir: &Path, expected: &serde_json::Map<String, Value>) -> bool {
    let Ok(manifest) = RunDir::new(dir).read_manifest() else { return false };
    let fits = expected.iter().filter(|(k, _)| !crate::rundir::Manifest::PER_RUN_KEYS.contains(&k.as_str())).all(|(k, v)| {
        match k.split_once('.') {
            Some((a, b)) => manifest.get(a).and_then(|x| x.get(b)) == Some(v),
            None => manifest.get(k) == Some(v),
        }
    });
    fits && load(dir).is_ok()
}

fn perr(what: &str) -> impl Fn(PolarsError) -> Error + '_ {
    move |e| Error::Other(format!("compare: {what}: {e}"))
}

/// The labels both runs are scored on, read from their summaries.
fn labels_of(summary: &Value) -> Labels {
    let has = |k: &str| summary["metrics"].get(k).is_some();
    Labels {
        gold_facts: has("turn_precision"),
        cosine: has("content_precision_cosine"),
        qa: has("qa_evidence_coverage"),
        duplicate_groups: has("dedup_precision"),
        contradictions: has("judge_accuracy"),
    }
}

fn both(a: Labels, b: Labels) -> Labels {
    Labels {
        gold_facts: a.gold_facts && b.gold_facts,
        cosine: a.cosine && b.cosine,
        qa: a.qa && b.qa,
        duplicate_groups: a.duplicate_groups && b.duplicate_groups,
        contradictions: a.contradictions && b.contradictions,
    }
}

/// Compares two finished runs of the same dataset. `out` is where the
/// comparison will be written (run directories are shown relative to it).
pub fn compare_runs(a: &Side, b: &Side, out: &Path, opts: CompareOptions) -> Result<Comparison> {
    let la = load(&a.dir)?;
    let lb = load(&b.dir)?;
    let digest = |l: &Loaded| l.manifest["dataset"]["digest"].as_str().unwrap_or("").to_string();
    if digest(&la) != digest(&lb) {
        return Err(Error::Other(format!(
            "compare: {} and {} ran on different datasets (digest {} vs {})",
            a.dir.display(),
            b.dir.display(),
            digest(&la),
            digest(&lb)
        )));
    }
    let labels = both(labels_of(&la.summary), labels_of(&lb.summary));
    let (paired_a, paired_b, unpaired) = pair_episodes(&la.episodes, &lb.episodes)?;
    let n = paired_a.height();
    let ci = bootstrap(&paired_a, &paired_b, &labels, opts)?;

    let value = |l: &Loaded, k: &str| l.summary["metrics"][k].as_f64().unwrap_or(0.0);
    let mut metrics = Vec::new();
    let mut context = Vec::new();
    for d in labels.metrics() {
        if NOT_COMPARED.contains(&d.key) || d.key.starts_with("baseline_") {
            context.push((d.key.to_string(), la.summary["metrics"][d.key].clone()));
            continue;
        }
        let (va, vb) = (value(&la, d.key), value(&lb, d.key));
        let (lo, hi) = ci.iter().find(|c| c.0 == d.key).map_or((None, None), |c| (Some(c.1), Some(c.2)));
        let undefined = match d.formula {
            Formula::Ratio(_, den, _) => match (total(&la.episodes, den)? == 0, total(&lb.episodes, den)? == 0) {
                (true, true) => Some(format!("A and B ({den} = 0)")),
                (true, false) => Some(format!("A ({den} = 0)")),
                (false, true) => Some(format!("B ({den} = 0)")),
                (false, false) => None,
            },
            _ => None,
        };
        let profile = |l: &Loaded| l.manifest["profile"].as_str().unwrap_or(crate::pipeline::profiles::DEFAULT).to_string();
        let na: Vec<(String, &str)> = [("A", profile(&la)), ("B", profile(&lb))]
            .into_iter()
            .filter_map(|(side, p)| crate::report::caveats::not_computed(&p, d.key).map(|why| (side.to_string(), why)))
            .collect();
        let (undefined, lo, hi) = match na.first() {
            Some((_, why)) => {
                let sides: Vec<String> = na.iter().map(|(s, _)| s.clone()).collect();
                (Some(format!("{} (n/a: {why})", sides.join(" and "))), None, None)
            }
            None => (undefined, lo, hi),
        };
        metrics.push(MetricRow {
            metric: d.key.to_string(),
            a: va,
            b: vb,
            uplift: round6(vb - va),
            ci_low: lo,
            ci_high: hi,
            higher_is_better: d.higher_is_better,
            undefined,
            not_computed: na.into_iter().map(|(s, _)| s).collect(),
        });
    }
    // Retrieval (QA): the formed memory's figures compared, the headline
    // ones with a paired interval over items resampling conversations
    // (from both runs' qa.parquet); the
    // baselines' depend on the dataset, embedder and search keys alone:
    // context when equal (compared when the runs searched differently).
    let qa_ci = qa_intervals(&a.dir, &b.dir, opts)?;
    for key in crate::qa::metric_names() {
        let (Some(va), Some(vb)) = (la.summary["metrics"][&key].as_f64(), lb.summary["metrics"][&key].as_f64()) else { continue };
        let (ci_low, ci_high) = qa_ci.get(&key).map_or((None, None), |(lo, hi)| (Some(*lo), Some(*hi)));
        let fixed = key.starts_with("qa_raw_")
            || key.starts_with("qa_gold_facts_")
            || key == "qa_items_audited"
            || key == "qa_evidence_unknown_turns"
            || key == "qa_items_excluded"
            || key == "qa_questions_empty"
            || key == "qa_interval_clusters"
            || key == "qa_items_scored";
        if fixed && va == vb {
            context.push((key.clone(), la.summary["metrics"][&key].clone()));
            continue;
        }
        metrics.push(MetricRow {
            metric: key.clone(),
            a: va,
            b: vb,
            uplift: round6(vb - va),
            ci_low,
            ci_high,
            // How much was indexed or read describes the memory (neither more
            // nor less is better in itself), and a random ranking's recall is
            // no quality: no direction.
            higher_is_better: (!(key.contains("chance_recall")
                || key.ends_with("items_indexed")
                || key.ends_with("words_indexed")
                || key.contains("words_read")))
            .then_some(true),
            undefined: None,
            not_computed: Vec::new(),
        });
    }
    metrics.extend(dreaming_rows(&la.summary, &lb.summary));
    let per_conversation = per_conversation(&la.episodes, &lb.episodes, &labels)?;
    let facts = fact_diff(&la.facts, &lb.facts)?;
    let timings = |l: &Loaded| -> std::collections::BTreeMap<String, f64> {
        serde_json::from_value(l.summary["timings"].clone()).unwrap_or_default()
    };
    Ok(Comparison {
        format: "memform-compare/1".into(),
        dataset: DatasetInfo { name: la.manifest["dataset"]["name"].as_str().unwrap_or("?").into(), digest: digest(&la) },
        a: run_info(a, &la.manifest, out),
        b: run_info(b, &lb.manifest, out),
        bootstrap: BootstrapInfo {
            unit: "episode".into(),
            resamples: opts.resamples,
            seed: opts.seed,
            confidence: 0.95,
            paired_episodes: n,
            unpaired_episodes: unpaired,
        },
        context,
        metrics,
        per_conversation,
        facts,
        timings: Timings { a: timings(&la), b: timings(&lb) },
    })
}

/// The numbers of a summary's nested `dreaming` object (the dreaming
/// profile's own figures, docs/metrics.md), flattened to `a.b` keys.
pub fn dreaming_figures(summary: &Value) -> std::collections::BTreeMap<String, f64> {
    fn walk(prefix: &str, v: &Value, out: &mut std::collections::BTreeMap<String, f64>) {
        match v {
            Value::Number(n) => {
                if let Some(x) = n.as_f64() {
                    out.insert(prefix.to_string(), x);
                }
            }
            Value::Object(m) => {
                for (k, v) in m {
                    walk(&if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") }, v, out);
                }
            }
            _ => {}
        }
    }
    let mut out = std::collections::BTreeMap::new();
    let nested = if summary["dreaming"].is_object() { &summary["dreaming"] } else { &summary["metrics"]["dreaming"] };
    walk("", nested, &mut out);
    out
}

/// One row per dreaming figure either run has, as `dreaming.<key>`; a side
/// that is not a dreaming run is "n/a" (no uplift, no interval).
fn dreaming_rows(a: &Value, b: &Value) -> Vec<MetricRow> {
    let (fa, fb) = (dreaming_figures(a), dreaming_figures(b));
    let keys: std::collections::BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
    keys.into_iter()
        .map(|k| {
            let (va, vb) = (fa.get(k).copied(), fb.get(k).copied());
            let not_computed: Vec<String> =
                [("A", va), ("B", vb)].iter().filter(|(_, v)| v.is_none()).map(|(s, _)| s.to_string()).collect();
            let undefined = (!not_computed.is_empty()).then(|| format!("{} (n/a: not a dreaming run)", not_computed.join(" and ")));
            let higher_is_better = match k.as_str() {
                "evidence_coverage" => Some(true),
                "entity_duplicate_rate" => Some(false),
                _ => None,
            };
            MetricRow {
                metric: format!("dreaming.{k}"),
                a: va.unwrap_or(0.0),
                b: vb.unwrap_or(0.0),
                uplift: match (va, vb) {
                    (Some(x), Some(y)) => round6(y - x),
                    _ => 0.0,
                },
                ci_low: None,
                ci_high: None,
                higher_is_better,
                undefined,
                not_computed,
            }
        })
        .collect()
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn run_info(side: &Side, m: &Value, out: &Path) -> RunInfo {
    let s = |k: &str| m[k].as_str().unwrap_or("?").to_string();
    RunInfo {
        label: side.label.clone(),
        dir: relative(&side.dir, out),
        mode: s("mode"),
        extractor: s("extractor"),
        embedder: s("embedder"),
        judge: s("judge"),
        write_mode: s("write_mode"),
        config_changes: config_changes(&m["config"]).into_iter().map(|c| c.trim_matches('`').to_string()).collect(),
        provenance: crate::report::report_rows(m),
        caveats: crate::report::caveats::of_run(m),
    }
}

/// A run directory as `compare.json` names it (relative to the comparison's `out`).
pub fn relative_dir(path: &Path, out: &Path) -> String {
    relative(path, out)
}

/// A few lines for a person: the caveats' leads, then each headline
/// metric's A → B and its reading.
pub fn summary_lines(c: &Comparison) -> Vec<String> {
    let mut out = vec![format!("{}: A = {}, B = {}", c.dataset.name, c.a.label, c.b.label)];
    for cav in c.a.caveats.iter().chain(&c.b.caveats) {
        let lead = cav.split("**").nth(1).unwrap_or(cav).to_string();
        if !out.contains(&lead) {
            out.push(lead);
        }
    }
    for r in HEADLINE.iter().filter_map(|k| c.metrics.iter().find(|r| r.metric == *k)) {
        let read = reading(r);
        out.push(format!("  {}: {:.3} → {:.3}{}", r.metric, r.a, r.b, if read.is_empty() { String::new() } else { format!(" ({read})") }));
    }
    out
}

/// `path` relative to `from` when both are relative or both absolute, else `path` as given.
fn relative(path: &Path, from: &Path) -> String {
    let norm = |p: &Path| -> Vec<String> {
        p.components().filter(|c| !matches!(c, Component::CurDir)).map(|c| c.as_os_str().to_string_lossy().into_owned()).collect()
    };
    if path.is_absolute() != from.is_absolute() {
        return path.display().to_string();
    }
    let (p, f) = (norm(path), norm(from));
    let common = p.iter().zip(&f).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".to_string(); f.len() - common];
    parts.extend(p[common..].iter().cloned());
    if parts.is_empty() { ".".to_string() } else { parts.join("/") }
}

/// The two runs' component rows for the episodes both ran, in the same
/// (conversation, episode) order, with a `row` index; and how many episodes
/// only one of them ran.
fn pair_episodes(a: &DataFrame, b: &DataFrame) -> Result<(DataFrame, DataFrame, usize)> {
    let keys = [col("conversation"), col("episode")];
    let comps: Vec<Expr> = keys.iter().cloned().chain(COMPONENTS.iter().map(|c| col(*c))).collect();
    let ka = a.clone().lazy().select(keys.clone());
    let kb = b.clone().lazy().select(keys.clone());
    let paired = ka
        .join(kb, keys.clone(), keys.clone(), JoinArgs::new(JoinType::Inner))
        .sort(["conversation", "episode"], SortMultipleOptions::default())
        .with_row_index("row", None);
    let side = |df: &DataFrame| -> std::result::Result<DataFrame, PolarsError> {
        paired
            .clone()
            .join(df.clone().lazy().select(comps.clone()), keys.clone(), keys.clone(), JoinArgs::new(JoinType::Inner))
            .with_column(col("row").cast(DataType::Int64))
            .sort(["row"], SortMultipleOptions::default())
            .collect()
    };
    let pa = side(a).map_err(perr("pair episodes"))?;
    let pb = side(b).map_err(perr("pair episodes"))?;
    let unpaired = a.height() + b.height() - 2 * pa.height();
    Ok((pa, pb, unpaired))
}

/// The formed memory's QA figures per item of one run (`qa.parquet`):
/// `(conversation, item)` → the value of each of [`crate::qa::INTERVAL_KEYS`]
/// (headline items only); empty when the run has no `qa.parquet`.
type QaValues = std::collections::HashMap<(String, i64), Vec<Option<f64>>>;

fn qa_values(dir: &Path) -> Result<QaValues> {
    let path = dir.join("qa.parquet");
    let mut out = QaValues::new();
    if !path.is_file() {
        return Ok(out);
    }
    let df = read_parquet(&path)?;
    let err = perr("qa.parquet");
    let strs = |name: &str| df.column(name).and_then(|c| c.str().cloned()).map_err(perr("qa.parquet"));
    let (conv, source, category) = (strs("conversation")?, strs("source")?, strs("category")?);
    let item = df.column("item").and_then(|c| c.i64().cloned()).map_err(&err)?;
    let abstention = df.column("abstention").and_then(|c| c.bool().cloned()).map_err(&err)?;
    let mut values = Vec::new();
    for (key, _) in crate::qa::INTERVAL_KEYS {
        // A run written before a figure existed has no column for it.
        values.push(df.column(key).ok().and_then(|c| c.cast(&DataType::Float64).ok()).and_then(|c| c.f64().ok().cloned()));
    }
    for i in 0..df.height() {
        let headline =
            source.get(i) == Some("formed") && abstention.get(i) != Some(true) && !category.get(i).is_some_and(crate::qa::is_adversarial);
        if let (true, Some(c), Some(it)) = (headline, conv.get(i), item.get(i)) {
            out.insert((c.to_string(), it), values.iter().map(|v| v.as_ref().and_then(|v| v.get(i))).collect());
        }
    }
    Ok(out)
}

/// The paired bootstrap intervals of the formed memory's QA figures,
/// B − A per item, resampling conversations: `qa_<key>` → (lo, hi). None
/// when a run has no `qa.parquet` or there are fewer than two conversations.
fn qa_intervals(a: &Path, b: &Path, opts: CompareOptions) -> Result<std::collections::HashMap<String, (f64, f64)>> {
    let (va, vb) = (qa_values(a)?, qa_values(b)?);
    let mut keys: Vec<&(String, i64)> = va.keys().filter(|k| vb.contains_key(*k)).collect();
    keys.sort_unstable();
    let mut out = std::collections::HashMap::new();
    for (j, (key, _)) in crate::qa::INTERVAL_KEYS.iter().enumerate() {
        let diffs: Vec<(&str, f64)> = keys.iter().filter_map(|k| Some((k.0.as_str(), vb[*k][j]? - va[*k][j]?))).collect();
        let clusters = crate::qa::interval::clusters(diffs);
        if let Some((lo, hi)) = crate::qa::interval::interval(&clusters, opts.resamples, opts.seed) {
            out.insert(format!("qa_{key}"), (round6(lo), round6(hi)));
        }
    }
    Ok(out)
}

/// Refuses a bootstrap of `resamples` over `episodes` paired episodes that
/// is out of range or would make more than
/// [`crate::limits::MAX_BOOTSTRAP_DRAWS`] draws (each a row of every
/// component): checked before the runs and again before allocating.
pub fn check_bootstrap(episodes: usize, resamples: usize) -> Result<()> {
    crate::limits::check("--resamples", resamples as u64, &crate::limits::RESAMPLES)?;
    let max = crate::limits::MAX_BOOTSTRAP_DRAWS;
    match episodes.checked_mul(resamples) {
        Some(t) if t <= max => Ok(()),
        _ => Err(Error::Config(format!(
            "--resamples {resamples}: {episodes} episodes × {resamples} resamples is more than {max} bootstrap draws; use at most {}",
            max / episodes.max(1)
        ))),
    }
}

/// (metric, 2.5th percentile, 97.5th percentile) of the bootstrap uplift
/// B − A, for every compared metric.
fn bootstrap(a: &DataFrame, b: &DataFrame, labels: &Labels, opts: CompareOptions) -> Result<Vec<(String, f64, f64)>> {
    let n = a.height();
    if n == 0 || opts.resamples == 0 {
        return Ok(Vec::new());
    }
    check_bootstrap(n, opts.resamples)?;
    // The paired rows of each conversation (rows are sorted by conversation).
    let convs = a.column("conversation").and_then(|c| c.str().cloned()).map_err(perr("bootstrap clusters"))?;
    let mut clusters: Vec<(Option<&str>, Vec<i64>)> = Vec::new();
    for (i, c) in convs.iter().enumerate() {
        match clusters.last_mut() {
            Some((last, rows)) if *last == c => rows.push(i as i64),
            _ => clusters.push((c, vec![i as i64])),
        }
    }
    // One conversation: nothing to resample (an interval of width 0 would mislead).
    if clusters.len() < 2 {
        return Ok(Vec::new());
    }
    let mut rng = SplitMix64::new(opts.seed);
    let mut replicate = Vec::with_capacity(n * opts.resamples);
    let mut row = Vec::with_capacity(n * opts.resamples);
    for r in 0..opts.resamples {
        for _ in 0..clusters.len() {
            let drawn = &clusters[rng.below(clusters.len() as u64) as usize].1;
            replicate.extend(std::iter::repeat_n(r as i64, drawn.len()));
            row.extend_from_slice(drawn);
        }
        if row.len() > crate::limits::MAX_BOOTSTRAP_DRAWS {
            return Err(Error::Config(format!(
                "--resamples {}: more than {} bootstrap draws; use fewer",
                opts.resamples,
                crate::limits::MAX_BOOTSTRAP_DRAWS
            )));
        }
    }
    let total = row.len();
    let draws = DataFrame::new(total, vec![Column::new("replicate".into(), replicate), Column::new("row".into(), row)])
        .map_err(perr("bootstrap draws"))?
        .lazy();
    let keys: Vec<&MetricKey> = METRIC_KEYS.iter().filter(|k| labels.has(k.1)).collect();
    let replicate_metrics = |df: &DataFrame| -> LazyFrame {
        let joined = draws.clone().join(df.clone().lazy(), [col("row")], [col("row")], JoinArgs::new(JoinType::Inner));
        let summed = aggregate(joined, Some("replicate"), labels);
        summed.select(std::iter::once(col("replicate")).chain(keys.iter().map(|k| col(k.0))).collect::<Vec<_>>())
    };
    let ra = replicate_metrics(a);
    let rb = replicate_metrics(b)
        .select(std::iter::once(col("replicate")).chain(keys.iter().map(|k| col(k.0).alias(format!("{}__b", k.0)))).collect::<Vec<_>>());
    let uplift = ra
        .join(rb, [col("replicate")], [col("replicate")], JoinArgs::new(JoinType::Inner))
        .select(keys.iter().map(|k| (col(format!("{}__b", k.0)) - col(k.0)).cast(DataType::Float64).alias(k.0)).collect::<Vec<_>>());
    let q = |p: f64, suffix: &str| -> Vec<Expr> {
        keys.iter().map(|k| col(k.0).quantile(lit(p), QuantileMethod::Linear).alias(format!("{}{suffix}", k.0))).collect()
    };
    let ci = uplift
        .select(q(0.025, "__lo").into_iter().chain(q(0.975, "__hi")).collect::<Vec<_>>())
        .collect()
        .map_err(perr("bootstrap percentiles"))?;
    keys.iter()
        .map(|k| {
            let lo = scalar_f64(&ci, &format!("{}__lo", k.0)).map_err(perr("bootstrap"))?;
            let hi = scalar_f64(&ci, &format!("{}__hi", k.0)).map_err(perr("bootstrap"))?;
            Ok((k.0.to_string(), round6(lo), round6(hi)))
        })
        .collect()
}

/// (metric key, labels it needs) of every metric the bootstrap resamples.
struct MetricKey(&'static str, crate::metrics::Needs);

static METRIC_KEYS: std::sync::LazyLock<Vec<MetricKey>> = std::sync::LazyLock::new(|| {
    METRICS
        .iter()
        .filter(|d| !matches!(d.formula, Formula::Const(_)) && !NOT_COMPARED.contains(&d.key) && !d.key.starts_with("baseline_"))
        .map(|d| MetricKey(d.key, d.needs))
        .collect()
});

fn per_conversation(a: &DataFrame, b: &DataFrame, labels: &Labels) -> Result<Vec<ConversationRow>> {
    let keys: Vec<&str> = PER_CONVERSATION.iter().copied().filter(|k| labels.metrics().any(|d| d.key == *k)).collect();
    let side = |df: &DataFrame, suffix: &str| {
        aggregate(df.clone().lazy(), Some("conversation"), labels).select(
            std::iter::once(col("conversation")).chain(keys.iter().map(|k| col(*k).alias(format!("{k}{suffix}")))).collect::<Vec<_>>(),
        )
    };
    let joined = side(a, "__a")
        .join(side(b, "__b"), [col("conversation")], [col("conversation")], JoinArgs::new(JoinType::Inner))
        .sort(["conversation"], SortMultipleOptions::default());
    let joined = joined.collect().map_err(perr("per-conversation uplift"))?;
    let convs = joined.column("conversation").and_then(|c| c.str().cloned()).map_err(perr("conversation"))?;
    let mut rows = Vec::new();
    for (i, c) in convs.iter().enumerate() {
        let mut metrics = Vec::new();
        for k in &keys {
            let get = |suffix: &str| -> Result<f64> {
                let c =
                    joined.column(&format!("{k}{suffix}")).and_then(|c| c.cast(&DataType::Float64)).map_err(perr("per-conversation"))?;
                Ok(c.f64().map_err(perr("per-conversation"))?.get(i).unwrap_or(0.0))
            };
            let (va, vb) = (round6(get("__a")?), round6(get("__b")?));
            metrics.push((k.to_string(), va, vb, round6(vb - va)));
        }
        rows.push(ConversationRow { conversation: c.unwrap_or("").to_string(), metrics });
    }
    Ok(rows)
}

fn fact_diff(a: &DataFrame, b: &DataFrame) -> Result<FactDiff> {
    let stored = |df: &DataFrame| df.clone().lazy().filter(col("stored"));
    let key = [col("conversation"), col("content_hash")];
    let marker = |df: &DataFrame| {
        stored(df).select(key.clone()).unique(None, polars::prelude::UniqueKeepStrategy::Any).with_column(lit(true).alias("other"))
    };
    let only = |x: &DataFrame, y: &DataFrame| -> std::result::Result<DataFrame, PolarsError> {
        stored(x)
            .join(marker(y), key.clone(), key.clone(), JoinArgs::new(JoinType::Left))
            .filter(col("other").is_null())
            .sort(["ord"], SortMultipleOptions::default())
            .collect()
    };
    let oa = only(a, b).map_err(perr("facts only in A"))?;
    let ob = only(b, a).map_err(perr("facts only in B"))?;
    let stored_a = stored(a).collect().map_err(perr("stored facts"))?.height();
    let examples = |df: &DataFrame| -> Result<Vec<FactExample>> {
        let ex = df
            .clone()
            .lazy()
            .group_by_stable([col("conversation")])
            .head(Some(3))
            .sort(["ord"], SortMultipleOptions::default())
            .limit(EXAMPLES as u32)
            .collect()
            .map_err(perr("fact examples"))?;
        Ok((0..ex.height())
            .map(|i| {
                let raw = |c: &str| ex.column(c).ok().and_then(|c| c.get(i).ok()).and_then(|v| v.get_str().map(str::to_string));
                FactExample {
                    conversation: raw("conversation").unwrap_or_default(),
                    episode: raw("episode").unwrap_or_default(),
                    turn: raw("turn").unwrap_or_default(),
                    content: raw("content").unwrap_or_default(),
                    gold_match: raw("gold_match"),
                }
            })
            .collect())
    };
    Ok(FactDiff {
        both: stored_a - oa.height(),
        only_a: oa.height(),
        only_b: ob.height(),
        examples_only_a: examples(&oa)?,
        examples_only_b: examples(&ob)?,
    })
}

// ---------------------------------------------------------------------------
// compare.md

fn f3(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e12 { format!("{x:.0}") } else { format!("{x:.3}") }
}

/// A metric value: counts as integers, rates with three decimals.
fn value(x: f64, count: bool) -> String {
    if count { f3(x) } else { format!("{x:.3}") }
}

/// A difference with its sign; differences too small for three decimals
/// keep one significant digit rather than print as ±0.000.
fn signed(x: f64) -> String {
    let body = if x != 0.0 && x.abs() < 0.0005 { format!("{:.0e}", x.abs()) } else { f3(x.abs()) };
    match x.partial_cmp(&0.0) {
        Some(std::cmp::Ordering::Greater) => format!("+{body}"),
        Some(std::cmp::Ordering::Less) => format!("−{body}"),
        _ => body,
    }
}

fn is_count(metric: &str) -> bool {
    METRICS.iter().any(|d| d.key == metric && matches!(d.formula, Formula::Sum(_)))
}

/// The sum of component `column` over a run's episodes (0 when absent).
fn total(episodes: &DataFrame, column: &str) -> Result<i64> {
    if episodes.column(column).is_err() {
        return Ok(0);
    }
    let sum =
        episodes.clone().lazy().select([col(column).sum()]).collect().map_err(|e| Error::Other(format!("compare: sum {column}: {e}")))?;
    crate::metrics::scalar_i64(&sum, column).map_err(|e| Error::Other(format!("compare: sum {column}: {e}")))
}

/// What the interval says, in words; a ratio with no value in a run says so
/// instead of naming a winner.
fn reading(r: &MetricRow) -> String {
    if let Some(u) = &r.undefined {
        let what = if r.not_computed.is_empty() { "undefined" } else { "not computed" };
        return format!("{what} for {u}");
    }
    reading_of_interval(r).to_string()
}

fn reading_of_interval(r: &MetricRow) -> &'static str {
    let (Some(lo), Some(hi)) = (r.ci_low, r.ci_high) else { return "" };
    let up = lo > 0.0;
    let down = hi < 0.0;
    match (up || down, r.higher_is_better) {
        (false, _) => "no clear difference",
        (true, Some(true)) if up => "B better",
        (true, Some(true)) => "A better",
        (true, Some(false)) if up => "A better",
        (true, Some(false)) => "B better",
        (true, None) if up => "B higher",
        (true, None) => "A higher",
    }
}

/// "Facts one run stored and the other did not", with examples of each side.
fn fact_diff_section(o: &mut String, c: &Comparison) {
    let _ = writeln!(o, "## Facts one run stored and the other did not\n");
    let _ = writeln!(
        o,
        "Matched by conversation and content hash: {} stored by both, {} only by A, {} only by B. \
         `gold` names the gold fact a stored fact matched (lexical), if any.\n",
        c.facts.both, c.facts.only_a, c.facts.only_b
    );
    for (title, ex) in [("Only in A", &c.facts.examples_only_a), ("Only in B", &c.facts.examples_only_b)] {
        let _ = writeln!(o, "### {title}\n");
        if ex.is_empty() {
            let _ = writeln!(o, "None.\n");
            continue;
        }
        let rows: Vec<Vec<String>> = ex
            .iter()
            .map(|e| {
                vec![
                    format!("{} / {} / {}", md(&e.conversation), md(&e.episode), md(&e.turn)),
                    md(&e.content),
                    e.gold_match.as_deref().map_or("–".into(), md),
                ]
            })
            .collect();
        table(o, &["conversation / episode / turn", "fact", "gold"], &rows);
    }
}

/// The variants' caveats, each once, naming the variants it concerns.
fn compare_caveats(runs: &[&RunInfo]) -> String {
    let mut seen: Vec<(String, Vec<String>)> = Vec::new();
    for r in runs {
        for c in &r.caveats {
            match seen.iter_mut().find(|(t, _)| t == c) {
                Some((_, labels)) => labels.push(r.label.clone()),
                None => seen.push((c.clone(), vec![r.label.clone()])),
            }
        }
    }
    let lines: Vec<String> = seen
        .into_iter()
        .map(|(c, labels)| format!("{c} (variant {})", labels.iter().map(|l| format!("`{}`", md(l))).collect::<Vec<_>>().join(", ")))
        .collect();
    crate::report::caveats::block(&lines)
}

/// Renders `compare.md`.
pub fn render_markdown(c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# memform compare: {}, {} vs {}\n", c.dataset.name, c.a.label, c.b.label);
    o.push_str(&compare_caveats(&[&c.a, &c.b]));
    let _ = writeln!(o, "## What was compared\n");
    let side = |r: &RunInfo| -> Vec<String> {
        vec![
            format!("`{}`", md(&r.label)),
            format!("`{}`", md(&r.dir)),
            r.mode.clone(),
            format!("`{}` / `{}` / `{}`", r.extractor, r.judge, r.embedder),
            r.write_mode.clone(),
            if r.config_changes.is_empty() { "defaults".into() } else { md(&r.config_changes.join(", ")) },
        ]
    };
    let mut rows = vec![side(&c.a), side(&c.b)];
    rows[0].insert(0, "A".into());
    rows[1].insert(0, "B".into());
    table(&mut o, &["", "label", "run directory", "mode", "extractor / judge / embedder", "write mode", "config"], &rows);
    let provenance: Vec<Vec<String>> =
        c.a.provenance.iter().zip(&c.b.provenance).map(|((k, a), (_, b))| vec![k.clone(), a.clone(), b.clone()]).collect();
    if !provenance.is_empty() {
        table(&mut o, &["what produced it", "A", "B"], &provenance);
    }
    for (side, r) in [("A", &c.a), ("B", &c.b)] {
        if r.extractor.starts_with("gold:") {
            let _ = writeln!(
                o,
                "**Extraction in {side} was the oracle**: its candidates are the dataset's gold facts, so its extraction metrics are the \
                 ceiling, not a measurement of an extractor.\n"
            );
        }
    }
    let digest: String = c.dataset.digest.chars().take(12).collect();
    let _ = writeln!(
        o,
        "Dataset `{}` (digest `{digest}`). Uplift is **B − A**. The 95% interval is a paired bootstrap over {} episodes \
         ({} resamples, seed {}) clustered by conversation: conversations are drawn with replacement, each with all its \
         episodes, the same draws for both runs, and each metric is recomputed from the drawn episodes' summed components \
         (no interval with fewer than two conversations).{}\n",
        c.dataset.name,
        c.bootstrap.paired_episodes,
        c.bootstrap.resamples,
        c.bootstrap.seed,
        if c.bootstrap.unpaired_episodes > 0 {
            format!(" **{} episodes ran in only one of the runs** and are left out of the intervals.", c.bootstrap.unpaired_episodes)
        } else {
            String::new()
        }
    );
    if !c.context.is_empty() {
        let ctx: Vec<String> = c.context.iter().map(|(k, v)| format!("{k} {}", crate::report::num(Some(v)))).collect();
        let _ = writeln!(o, "Fixed by the dataset: {}.\n", ctx.join(", "));
    }

    let _ = writeln!(o, "## Headline\n");
    let row = |r: &MetricRow| -> Vec<String> {
        let ci = match (r.ci_low, r.ci_high) {
            (Some(lo), Some(hi)) => format!("[{}, {}]", signed(lo), signed(hi)),
            _ => "–".into(),
        };
        let dir = match r.higher_is_better {
            Some(true) => " ↑",
            Some(false) => " ↓",
            None => "",
        };
        let count = is_count(&r.metric);
        let cell = |side: &str, x: f64| if r.not_computed.iter().any(|s| s == side) { "n/a".to_string() } else { value(x, count) };
        let uplift = if r.not_computed.is_empty() { format!("**{}**", signed(r.uplift)) } else { "–".to_string() };
        vec![format!("`{}`{dir}", r.metric), cell("A", r.a), cell("B", r.b), uplift, ci, reading(r)]
    };
    let header = ["metric", "A", "B", "uplift B − A", "95% CI", "reading"];
    let headline: Vec<Vec<String>> = HEADLINE.iter().filter_map(|k| c.metrics.iter().find(|r| r.metric == *k)).map(row).collect();
    table(&mut o, &header, &headline);
    let _ = writeln!(
        o,
        "↑: higher is better; ↓: lower is better; unmarked metrics describe formation and have no better direction. Every metric is defined in docs/metrics.md.\n"
    );
    let _ = writeln!(o, "## All metrics\n");
    table(&mut o, &header, &c.metrics.iter().map(row).collect::<Vec<_>>());

    if !c.per_conversation.is_empty() {
        let _ = writeln!(o, "## Per conversation\n");
        let _ = writeln!(o, "Each cell is A → B (uplift).\n");
        let keys: Vec<String> = c.per_conversation[0].metrics.iter().map(|m| m.0.clone()).collect();
        let header: Vec<&str> = std::iter::once("conversation").chain(keys.iter().map(String::as_str)).collect();
        let rows: Vec<Vec<String>> = c
            .per_conversation
            .iter()
            .map(|r| {
                std::iter::once(format!("`{}`", md(&r.conversation)))
                    .chain(r.metrics.iter().map(|(_, a, b, u)| format!("{:.3} → {:.3} ({})", a, b, signed(*u))))
                    .collect()
            })
            .collect();
        table(&mut o, &header, &rows);
    }

    fact_diff_section(&mut o, c);

    let _ = writeln!(o, "## Timings\n");
    let _ = writeln!(o, "Wall-clock milliseconds (not deterministic; the only such section).\n");
    let rows: Vec<Vec<String>> = crate::metrics::TIMING_COLUMNS
        .iter()
        .chain(&["wall_ms"])
        .map(|k| {
            let g = |t: &std::collections::BTreeMap<String, f64>| t.get(*k).map_or("–".into(), |v| format!("{v:.1}"));
            vec![format!("`{k}`"), g(&c.timings.a), g(&c.timings.b)]
        })
        .collect();
    table(&mut o, &["stage", "A", "B"], &rows);
    o
}

/// The files a comparison writes into its `--out`.
pub const COMPARE_FILES: &[&str] = &["compare.json", "compare.md", crate::report::html::FILE];

/// An error when `out` holds a run's or a sweep's output, or a
/// `compare.json`/`compare.md` that is not memform's (a `compare.md` is
/// memform's when memform's `compare.json` is beside it), or a symbolic
/// link of either name. A missing `out` is fine.
pub fn check_out(out: &Path) -> Result<()> {
    if !out.is_dir() {
        return Ok(());
    }
    crate::rundir::check_kind(out, COMPARE_FILES[0])?;
    let ours = |v: &Value| v.get("format").and_then(Value::as_str).is_some_and(|f| f.starts_with("memform-compare/"));
    crate::rundir::check_owned(out, COMPARE_FILES[0], ours, &COMPARE_FILES[1..])
}

/// Writes `compare.json` and `compare.md` into `out`.
pub fn write_comparison(out: &Path, c: &Comparison) -> Result<()> {
    std::fs::create_dir_all(out).map_err(|e| Error::write(out, e))?;
    check_out(out)?;
    write_json(&out.join("compare.json"), c)?;
    write_text(&out.join("compare.md"), &render_markdown(c))
}

pub mod page;
#[cfg(test)]
mod tests;

// ---------------------------------------------------------------------------
// Three or more variants: one table, each variant a column, uplift against the first.

/// `compare.json` of three or more variants (`memform-compare/2`): every
/// variant against the first, each pair computed as [`compare_runs`] does
/// (the pairs are kept whole in `pairs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManyComparison {
    pub format: String,
    pub dataset: DatasetInfo,
    /// The variants in order; the first is the baseline of every uplift.
    pub variants: Vec<RunInfo>,
    /// Values fixed by the dataset.
    pub context: Vec<(String, Value)>,
    /// One row per metric compared in every pair.
    pub metrics: Vec<ManyRow>,
    /// Variant `i + 1` against the first.
    pub pairs: Vec<Comparison>,
}

/// One metric across the variants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManyRow {
    pub metric: String,
    /// The metric per variant, in order.
    pub values: Vec<f64>,
    pub higher_is_better: Option<bool>,
    /// Variant `i + 1` − the first: uplift, interval, and what it reads as.
    pub against_first: Vec<Against>,
    /// The variants (by index) whose profile does not compute the metric
    /// ([`crate::report::caveats::not_computed`]): "n/a", with the reason
    /// in their `Against::undefined`, never compared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_computed: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Against {
    pub uplift: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub undefined: Option<String>,
    pub reading: String,
}

/// Compares every variant after the first with the first.
pub fn compare_many(sides: &[Side], out: &Path, opts: CompareOptions) -> Result<ManyComparison> {
    let [first, rest @ ..] = sides else { return Err(Error::Other("compare: no variants".into())) };
    if rest.is_empty() {
        return Err(Error::Other("compare: one variant; there is nothing to compare it with".into()));
    }
    let pairs: Vec<Comparison> = rest.iter().map(|s| compare_runs(first, s, out, opts)).collect::<Result<_>>()?;
    let base = &pairs[0];
    let mut metrics = Vec::new();
    // The dreaming figures are rows of the pairs with a dreaming side only:
    // each shows in every variant's column, "n/a" where it is not computed.
    let mut dreaming: Vec<&MetricRow> = Vec::new();
    for p in &pairs {
        for r in p.metrics.iter().filter(|r| r.metric.starts_with("dreaming.")) {
            if !dreaming.iter().any(|d| d.metric == r.metric) {
                dreaming.push(r);
            }
        }
    }
    let mut dreaming_many = Vec::new();
    for row in &dreaming {
        let first = pairs.iter().find_map(|p| p.metrics.iter().find(|r| r.metric == row.metric)).map(|r| r.a).unwrap_or(0.0);
        let first_na =
            pairs.iter().all(|p| p.metrics.iter().find(|r| r.metric == row.metric).is_none_or(|r| r.not_computed.iter().any(|s| s == "A")));
        let mut values = vec![first];
        let mut against_first = Vec::new();
        let mut not_computed: Vec<usize> = if first_na { vec![0] } else { Vec::new() };
        for (i, p) in pairs.iter().enumerate() {
            match p.metrics.iter().find(|r| r.metric == row.metric) {
                Some(r) => {
                    values.push(r.b);
                    if r.not_computed.iter().any(|s| s == "B") {
                        not_computed.push(i + 1);
                    }
                    against_first.push(Against {
                        uplift: r.uplift,
                        ci_low: None,
                        ci_high: None,
                        undefined: r.undefined.clone(),
                        reading: reading(r),
                    });
                }
                None => {
                    values.push(0.0);
                    not_computed.push(i + 1);
                    let undefined = Some("n/a: not a dreaming run".to_string());
                    against_first.push(Against { uplift: 0.0, ci_low: None, ci_high: None, undefined, reading: String::new() });
                }
            }
        }
        dreaming_many.push(ManyRow {
            metric: row.metric.clone(),
            values,
            higher_is_better: row.higher_is_better,
            against_first,
            not_computed,
        });
    }
    for row in base.metrics.iter().filter(|r| !r.metric.starts_with("dreaming.")) {
        let found: Vec<&MetricRow> = pairs.iter().filter_map(|p| p.metrics.iter().find(|r| r.metric == row.metric)).collect();
        if found.len() != pairs.len() {
            continue;
        }
        let mut values = vec![row.a];
        values.extend(found.iter().map(|r| r.b));
        let against_first = found
            .iter()
            .map(|r| Against {
                uplift: r.uplift,
                ci_low: r.ci_low,
                ci_high: r.ci_high,
                undefined: r.undefined.clone(),
                reading: reading(r),
            })
            .collect();
        // The first variant is every pair's A; variant i + 1 is pair i's B.
        let mut not_computed: Vec<usize> = Vec::new();
        if found.iter().any(|r| r.not_computed.iter().any(|s| s == "A")) {
            not_computed.push(0);
        }
        not_computed.extend(found.iter().enumerate().filter(|(_, r)| r.not_computed.iter().any(|s| s == "B")).map(|(i, _)| i + 1));
        metrics.push(ManyRow { metric: row.metric.clone(), values, higher_is_better: row.higher_is_better, against_first, not_computed });
    }
    metrics.extend(dreaming_many);
    let mut variants = vec![base.a.clone()];
    variants.extend(pairs.iter().map(|p| p.b.clone()));
    Ok(ManyComparison {
        format: "memform-compare/2".into(),
        dataset: base.dataset.clone(),
        variants,
        context: base.context.clone(),
        metrics,
        pairs,
    })
}

/// The column letter of variant `i` (A, B, C, …).
fn letter(i: usize) -> String {
    char::from(b'A' + (i % 26) as u8).to_string()
}

/// An uplift cell: the uplift, its interval and its reading, with the
/// baseline's letters in place of "A" and "B".
fn against_cell(a: &Against, i: usize) -> String {
    let ci = match (a.ci_low, a.ci_high) {
        (Some(lo), Some(hi)) => format!(" [{}, {}]", signed(lo), signed(hi)),
        _ => String::new(),
    };
    let reading = a.reading.replace("A and B", "both").replace('B', &letter(i + 1));
    let reading = if reading.is_empty() { String::new() } else { format!(" {reading}") };
    format!("**{}**{ci}{reading}", signed(a.uplift))
}

/// Renders `compare.md` for three or more variants.
pub fn render_many(c: &ManyComparison) -> String {
    let mut o = String::new();
    let labels: Vec<String> = c.variants.iter().map(|v| v.label.clone()).collect();
    let _ = writeln!(o, "# memform compare: {}, {}\n", c.dataset.name, labels.join(" vs "));
    o.push_str(&compare_caveats(&c.variants.iter().collect::<Vec<_>>()));
    let _ = writeln!(o, "## What was compared\n");
    let rows: Vec<Vec<String>> = c
        .variants
        .iter()
        .enumerate()
        .map(|(i, r)| {
            vec![
                letter(i),
                format!("`{}`", md(&r.label)),
                format!("`{}`", md(&r.dir)),
                r.mode.clone(),
                format!("`{}` / `{}` / `{}`", r.extractor, r.judge, r.embedder),
                r.write_mode.clone(),
                if r.config_changes.is_empty() { "defaults".into() } else { md(&r.config_changes.join(", ")) },
            ]
        })
        .collect();
    table(&mut o, &["", "label", "run directory", "mode (extract/judge)", "extractor / judge / embedder", "write mode", "config"], &rows);
    let letters: Vec<String> = (0..c.variants.len()).map(letter).collect();
    let provenance: Vec<Vec<String>> = c.variants[0]
        .provenance
        .iter()
        .map(|(k, _)| {
            std::iter::once(k.clone())
                .chain(c.variants.iter().map(|v| v.provenance.iter().find(|(x, _)| x == k).map_or("–".into(), |(_, val)| val.clone())))
                .collect()
        })
        .collect();
    if !provenance.is_empty() {
        let header: Vec<&str> = std::iter::once("what produced it").chain(letters.iter().map(String::as_str)).collect();
        table(&mut o, &header, &provenance);
    }
    if c.variants.iter().any(|v| v.extractor.starts_with("gold:")) {
        let which: Vec<String> =
            c.variants.iter().enumerate().filter(|(_, v)| v.extractor.starts_with("gold:")).map(|(i, _)| letter(i)).collect();
        let _ = writeln!(
            o,
            "**Extraction in {} was the oracle**: its candidates are the dataset's gold facts, so its extraction metrics are the ceiling, \
             not a measurement of an extractor.\n",
            which.join(", ")
        );
    }
    let pb = &c.pairs[0].bootstrap;
    let digest: String = c.dataset.digest.chars().take(12).collect();
    let _ = writeln!(
        o,
        "Dataset `{}` (digest `{digest}`). Every uplift is against **A**, with a paired bootstrap 95% interval over the episodes \
         both runs ran, clustered by conversation ({} resamples, seed {}), as in a two-run comparison.\n",
        c.dataset.name, pb.resamples, pb.seed
    );
    if !c.context.is_empty() {
        let ctx: Vec<String> = c.context.iter().map(|(k, v)| format!("{k} {}", crate::report::num(Some(v)))).collect();
        let _ = writeln!(o, "Fixed by the dataset: {}.\n", ctx.join(", "));
    }
    let uplift_heads: Vec<String> = (1..c.variants.len()).map(|i| format!("{} − A", letter(i))).collect();
    let header: Vec<&str> =
        std::iter::once("metric").chain(letters.iter().map(String::as_str)).chain(uplift_heads.iter().map(String::as_str)).collect();
    let row = |r: &ManyRow| -> Vec<String> {
        let dir = match r.higher_is_better {
            Some(true) => " ↑",
            Some(false) => " ↓",
            None => "",
        };
        let count = is_count(&r.metric);
        let na = |i: usize| r.not_computed.contains(&i);
        std::iter::once(format!("`{}`{dir}", r.metric))
            .chain(r.values.iter().enumerate().map(|(i, v)| if na(i) { "n/a".to_string() } else { value(*v, count) }))
            .chain(r.against_first.iter().enumerate().map(|(i, a)| {
                if na(0) || na(i + 1) {
                    format!("– ({})", md(a.undefined.as_deref().unwrap_or("n/a: not computed")))
                } else {
                    against_cell(a, i)
                }
            }))
            .collect()
    };
    let _ = writeln!(o, "## Headline\n");
    let headline: Vec<Vec<String>> = HEADLINE.iter().filter_map(|k| c.metrics.iter().find(|r| r.metric == *k)).map(row).collect();
    table(&mut o, &header, &headline);
    let _ = writeln!(
        o,
        "↑: higher is better; ↓: lower is better; unmarked metrics describe formation and have no better direction. Every metric is defined in docs/metrics.md.\n"
    );
    let _ = writeln!(o, "## All metrics\n");
    table(&mut o, &header, &c.metrics.iter().map(row).collect::<Vec<_>>());
    let _ = writeln!(o, "## Facts one run stored and the other did not\n");
    let rows: Vec<Vec<String>> = c
        .pairs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            vec![format!("{} vs A", letter(i + 1)), p.facts.both.to_string(), p.facts.only_a.to_string(), p.facts.only_b.to_string()]
        })
        .collect();
    table(&mut o, &["pair", "stored by both", "only by A", "only by the other"], &rows);
    let _ = writeln!(o, "## Timings\n");
    let _ = writeln!(o, "Wall-clock milliseconds (not deterministic; the only such section).\n");
    let timings: Vec<&std::collections::BTreeMap<String, f64>> =
        std::iter::once(&c.pairs[0].timings.a).chain(c.pairs.iter().map(|p| &p.timings.b)).collect();
    let rows: Vec<Vec<String>> = crate::metrics::TIMING_COLUMNS
        .iter()
        .chain(&["wall_ms"])
        .map(|k| {
            std::iter::once(format!("`{k}`")).chain(timings.iter().map(|t| t.get(*k).map_or("–".into(), |v| format!("{v:.1}")))).collect()
        })
        .collect();
    let header: Vec<&str> = std::iter::once("stage").chain(letters.iter().map(String::as_str)).collect();
    table(&mut o, &header, &rows);
    o
}

/// Writes `compare.json` and `compare.md` of three or more variants into `out`.
pub fn write_many(out: &Path, c: &ManyComparison) -> Result<()> {
    std::fs::create_dir_all(out).map_err(|e| Error::write(out, e))?;
    check_out(out)?;
    write_json(&out.join("compare.json"), c)?;
    write_text(&out.join("compare.md"), &render_many(c))
}
