//! The run's metrics, computed with polars. The per-candidate and per-episode
//! records (and the dataset's gold labels) become frames; every aggregate —
//! per episode, per conversation, per run — is a group-by or a filter on them.
//!
//! Each metric is defined once, in [`METRICS`], as a sum of a per-episode
//! component, a ratio of two summed components, or the F1 of two such
//! ratios. The same definitions produce the per-episode columns of
//! `episodes.parquet`, the rows of `per_conversation.csv`, the run's
//! `summary.json` and (in `compare`) the bootstrap replicates, so the four
//! can never disagree. `docs/metrics.md` gives the formula of every key.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use polars::prelude::{
    Column, DataFrame, DataType, Expr, IntoColumn, IntoLazy, JoinArgs, JoinType, LazyFrame, NewChunkedArray, PolarsError,
    SortMultipleOptions, StringChunked, UniqueKeepStrategy, col, len, lit, when,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::embed::{Embedder, cosine};
use crate::error::{Error, Result};
use crate::pipeline::EpisodeRecord;
use crate::pipeline::resolve::EntityDecision;
use crate::types::{Dataset, FactKind, ValueTier};

/// Lexical similarity (token Dice, [`lexical_similarity`]) at or above which
/// a stored fact may match a gold fact of its episode.
pub const CONTENT_LEXICAL_THRESHOLD: f64 = 0.5;
/// Cosine (of the run's embedder) at or above which a stored fact may match a
/// gold fact of its episode. Calibrated for the hashed embedder on the LoCoMo
/// development conversations: gold facts that a stored fact matches lexically
/// have a best cosine of 0.54 at the 10th percentile, those with no lexical
/// counterpart (Dice < 0.3) 0.38 at the 90th. Other embedders need their own.
pub const CONTENT_COSINE_THRESHOLD: f64 = 0.5;

/// Candidate outcomes that count as duplicates dropped by exact match
/// (content hash or s|p|o; `deduped` is the write stage's race re-check).
pub const EXACT_DUP_OUTCOMES: &[&str] = &["exact_duplicate", "deduped"];
pub const NEAR_DUP_OUTCOMES: &[&str] = &["near_duplicate"];
/// Candidate outcomes that remove a duplicate: the candidate did not become
/// a new row because a live memory already holds it, whatever the profile —
/// dropped by dedupe (exact or near, or the write stage's re-check), refused
/// by the store's unique index (`conflict`), decided NONE (signet), or
/// discarded or merged in place by Resolve (memorix). A noise rejection, a
/// gate's refusal, a closure or a supersession (an update, a memorix
/// evolve) is not one.
pub const DUPLICATE_REMOVED_OUTCOMES: &[&str] =
    &["exact_duplicate", "near_duplicate", "deduped", "conflict", "none", "discarded", "merged"];

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub metrics: BTreeMap<String, Value>,
    /// Milliseconds per stage, summed over episodes, and the run's wall time.
    pub timings: BTreeMap<String, f64>,
}

/// Which gold labels a metric needs. A dataset that has a kind of label for
/// any conversation that ran is scored on every conversation that ran (a
/// conversation without such labels is taken to expect none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Needs {
    Nothing,
    GoldFacts,
    /// Gold facts and an embedder that embedded them.
    Cosine,
    Qa,
    DuplicateGroups,
    Contradictions,
}

/// How a metric is computed from the per-episode components.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Formula {
    /// Σ component.
    Sum(&'static str),
    /// scale · Σ numerator / Σ denominator; 0 when the denominator is 0.
    Ratio(&'static str, &'static str, f64),
    /// 2·p·r / (p + r) of two earlier metrics; 0 when p + r = 0.
    F1(&'static str, &'static str),
    /// A constant (the no-turns baseline).
    Const(f64),
}

/// One metric: its `summary.json` key, formula, the labels it needs, and
/// whether a higher value is better (`None`: neither, it describes).
#[derive(Debug, Clone, Copy)]
pub struct MetricDef {
    pub key: &'static str,
    pub formula: Formula,
    pub needs: Needs,
    pub higher_is_better: Option<bool>,
}

const fn m(key: &'static str, formula: Formula, needs: Needs, higher_is_better: Option<bool>) -> MetricDef {
    MetricDef { key, formula, needs, higher_is_better }
}

use Formula::{Const, F1, Ratio, Sum};
use Needs::{Contradictions, Cosine, DuplicateGroups, GoldFacts, Nothing, Qa};

/// Every metric computed from per-episode components, in report order.
pub const METRICS: &[MetricDef] = &[
    m("episodes", Sum("episodes"), Nothing, None),
    m("turns", Sum("turns"), Nothing, None),
    m("candidates", Sum("candidates"), Nothing, None),
    m("stored_facts", Sum("stored"), Nothing, None),
    m("live_facts", Sum("live"), Nothing, None),
    m("fact_density", Ratio("stored", "episodes", 1.0), Nothing, None),
    m("facts_per_100_turns", Ratio("stored", "turns", 100.0), Nothing, None),
    m("dedup_rate", Ratio("dup", "candidates", 1.0), Nothing, None),
    m("exact_dup_rate", Ratio("exact_dup", "candidates", 1.0), Nothing, None),
    m("near_dup_rate", Ratio("near_dup", "candidates", 1.0), Nothing, None),
    m("duplicate_reduction", Ratio("dup_removed", "candidates", 1.0), Nothing, None),
    m("noise_rejection_rate", Ratio("noise", "candidates", 1.0), Nothing, None),
    m("judged_new", Sum("judged_new"), Nothing, None),
    m("low_fact_confidence", Sum("low_confidence"), Nothing, None),
    m("entity_coherence", Ratio("entity_existed", "candidates", 1.0), Nothing, Some(true)),
    m("entity_resolution_rate", Ratio("coherent", "stored", 1.0), Nothing, Some(true)),
    m("growth_rate", Ratio("growth", "candidates", 1.0), Nothing, None),
    // Memorix's formation metrics (observations: candidates with a FormedMemory record).
    m("observations", Sum("observations"), Nothing, None),
    m("fact_density_before", Ratio("facts_before", "observations", 1.0), Nothing, None),
    m("fact_density_after", Ratio("facts_after", "observations", 1.0), Nothing, None),
    m("title_quality", Ratio("good_titles", "observations", 1.0), Nothing, Some(true)),
    m("resolution_new", Sum("resolution_new"), Nothing, None),
    m("resolution_merge", Sum("resolution_merge"), Nothing, None),
    m("resolution_evolve", Sum("resolution_evolve"), Nothing, None),
    m("resolution_discard", Sum("resolution_discard"), Nothing, None),
    m("alias_merges", Sum("alias_merges"), Nothing, None),
    m("entities_created", Sum("entities_created"), Nothing, None),
    m("contradictions_judged", Sum("pairs_judged"), Nothing, None),
    m("verdict_old", Sum("verdict_old"), Nothing, None),
    m("verdict_new", Sum("verdict_new"), Nothing, None),
    m("verdict_neither", Sum("verdict_neither"), Nothing, None),
    m("invalidations", Sum("invalidations"), Nothing, None),
    m("closures", Sum("closures"), Nothing, None),
    m("review_needed", Sum("review_needed"), Nothing, None),
    m("blocked", Sum("blocked"), Nothing, None),
    m("warnings", Sum("warnings"), Nothing, Some(false)),
    m("llm_calls", Sum("llm_calls"), Nothing, None),
    m("prompt_tokens", Sum("prompt_tokens"), Nothing, None),
    m("completion_tokens", Sum("completion_tokens"), Nothing, None),
    // Against gold facts: turn level.
    m("gold_facts", Sum("gold_facts"), GoldFacts, None),
    m("gold_turns", Sum("gold_turns"), GoldFacts, None),
    m("turn_precision", Ratio("turn_hits", "pred_turns", 1.0), GoldFacts, Some(true)),
    m("turn_recall", Ratio("turn_hits", "gold_turns", 1.0), GoldFacts, Some(true)),
    m("turn_f1", F1("turn_precision", "turn_recall"), GoldFacts, Some(true)),
    m("baseline_all_turns_precision", Ratio("gold_turns", "turns", 1.0), GoldFacts, None),
    m("baseline_all_turns_recall", Ratio("gold_turns", "gold_turns", 1.0), GoldFacts, None),
    m("baseline_all_turns_f1", F1("baseline_all_turns_precision", "baseline_all_turns_recall"), GoldFacts, None),
    m("baseline_no_turns_precision", Const(0.0), GoldFacts, None),
    m("baseline_no_turns_recall", Const(0.0), GoldFacts, None),
    m("baseline_no_turns_f1", Const(0.0), GoldFacts, None),
    // Against gold facts: content level.
    m("content_precision", Ratio("content_matched", "stored", 1.0), GoldFacts, Some(true)),
    m("content_recall", Ratio("content_matched", "gold_facts", 1.0), GoldFacts, Some(true)),
    m("content_f1", F1("content_precision", "content_recall"), GoldFacts, Some(true)),
    m("content_precision_cosine", Ratio("content_matched_cosine", "stored", 1.0), Cosine, Some(true)),
    m("content_recall_cosine", Ratio("content_matched_cosine", "gold_facts", 1.0), Cosine, Some(true)),
    m("content_f1_cosine", F1("content_precision_cosine", "content_recall_cosine"), Cosine, Some(true)),
    // Against QA evidence.
    m("qa_evidence_turns", Sum("qa_turns"), Qa, None),
    m("qa_evidence_coverage", Ratio("qa_covered", "qa_turns", 1.0), Qa, Some(true)),
    // Against duplicate groups.
    m("dedup_links", Sum("dedup_links"), DuplicateGroups, None),
    m("dedup_expected", Sum("dedup_expected"), DuplicateGroups, None),
    m("dedup_precision", Ratio("dedup_correct", "dedup_links", 1.0), DuplicateGroups, Some(true)),
    m("dedup_recall", Ratio("dedup_found", "dedup_expected", 1.0), DuplicateGroups, Some(true)),
    m("dedup_f1", F1("dedup_precision", "dedup_recall"), DuplicateGroups, Some(true)),
    // Against labelled contradiction pairs.
    m("judge_pairs_labelled", Sum("judge_items"), Contradictions, None),
    m("judge_pairs_judged", Sum("judge_judged"), Contradictions, None),
    m("judge_coverage", Ratio("judge_judged", "judge_items", 1.0), Contradictions, Some(true)),
    m("judge_accuracy", Ratio("judge_correct", "judge_judged", 1.0), Contradictions, Some(true)),
    m("judge_accuracy_raw", Ratio("judge_correct_raw", "judge_judged", 1.0), Contradictions, Some(true)),
    m("contradiction_accuracy", Ratio("contradiction_correct", "judge_items", 1.0), Contradictions, Some(true)),
];

/// The per-episode components every metric is built from (Int64 columns of
/// the episodes frame). Sums of them over any set of episodes are meaningful.
pub const COMPONENTS: &[&str] = &[
    "episodes",
    "turns",
    "candidates",
    "stored",
    "live",
    "exact_dup",
    "near_dup",
    "dup",
    "dup_removed",
    "noise",
    "judged_new",
    "low_confidence",
    "coherent",
    "entity_existed",
    "growth",
    "observations",
    "facts_before",
    "facts_after",
    "good_titles",
    "resolution_new",
    "resolution_merge",
    "resolution_evolve",
    "resolution_discard",
    "alias_merges",
    "entities_created",
    "pairs_judged",
    "verdict_old",
    "verdict_new",
    "verdict_neither",
    "invalidations",
    "closures",
    "review_needed",
    "blocked",
    "warnings",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "pred_turns",
    "gold_turns",
    "turn_hits",
    "gold_facts",
    "content_matched",
    "content_matched_cosine",
    "qa_turns",
    "qa_covered",
    "dedup_links",
    "dedup_correct",
    "dedup_expected",
    "dedup_found",
    "judge_items",
    "judge_judged",
    "judge_correct",
    "judge_correct_raw",
    "contradiction_correct",
];

/// Stage timings (milliseconds) per episode, summed into `summary.timings`.
pub const TIMING_COLUMNS: &[&str] = &["extract_ms", "embed_ms", "resolve_ms", "dedupe_ms", "judge_ms", "write_ms"];

/// Which labels the run can be scored on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Labels {
    pub gold_facts: bool,
    pub cosine: bool,
    pub qa: bool,
    pub duplicate_groups: bool,
    pub contradictions: bool,
}

impl Labels {
    pub fn has(&self, needs: Needs) -> bool {
        match needs {
            Needs::Nothing => true,
            Needs::GoldFacts => self.gold_facts,
            Needs::Cosine => self.gold_facts && self.cosine,
            Needs::Qa => self.qa,
            Needs::DuplicateGroups => self.duplicate_groups,
            Needs::Contradictions => self.contradictions,
        }
    }

    /// The metrics this run is scored on, in [`METRICS`] order.
    pub fn metrics(&self) -> impl Iterator<Item = &'static MetricDef> + '_ {
        METRICS.iter().filter(|d| self.has(d.needs))
    }
}

/// What [`analyze`] needs of a run.
#[derive(Clone, Copy)]
pub struct RunData<'a> {
    pub dataset: &'a Dataset,
    pub episodes: &'a [EpisodeRecord],
    /// Ids of the facts live in the store at the end of the run.
    pub live_ids: &'a BTreeSet<String>,
    /// Conversations `--keep-going` skipped.
    pub skipped_conversations: usize,
    pub wall_ms: f64,
    /// When given, content is also matched by cosine of this embedder.
    pub embedder: Option<&'a dyn Embedder>,
}

/// Everything computed from one run.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub summary: Summary,
    pub labels: Labels,
    /// One row per candidate fact with its stage outcomes (`facts.parquet`).
    pub facts: DataFrame,
    /// One row per episode: counts, components, per-episode metrics, timings
    /// (`episodes.parquet`).
    pub episodes: DataFrame,
    /// One row per conversation: every metric the run is scored on.
    pub per_conversation: DataFrame,
    /// One row per judged (candidate, live fact) pair, with its final verdict.
    pub verdicts: DataFrame,
    /// One row per warning: conversation, episode, kind, message.
    pub warnings: DataFrame,
}

/// Computes `summary.json`'s metrics (see [`analyze`]).
pub fn summarize(
    dataset: &Dataset,
    episodes: &[EpisodeRecord],
    live_ids: &BTreeSet<String>,
    skipped_conversations: usize,
    wall_ms: f64,
    embedder: Option<&dyn Embedder>,
) -> Result<Summary> {
    let data = RunData { dataset, episodes, live_ids, skipped_conversations, wall_ms, embedder };
    Ok(analyze(&data)?.summary)
}

/// Builds the frames of a run and computes every metric from them.
pub fn analyze(data: &RunData<'_>) -> Result<Analysis> {
    let ran: BTreeSet<&str> = data.episodes.iter().map(|e| e.conversation.as_str()).collect();
    let convs: Vec<_> = data.dataset.conversations.iter().filter(|c| ran.contains(c.id.as_str())).collect();
    let gold = GoldFrames::new(&convs).ctx("build gold frames")?;
    analyze_with(data, &convs, &gold)
}

/// [`analyze`] of `episodes` (`data.episodes` is not read), taking their
/// candidates' records out (`facts` left empty) as soon as the frames
/// that hold what is read of them are built, before the aggregations: a
/// run that has written `facts.jsonl` needs them no more, and on a long
/// run they are the largest structure held. The same [`Analysis`].
pub fn analyze_taking(data: &RunData<'_>, episodes: &mut [EpisodeRecord]) -> Result<Analysis> {
    analyze_taking_beside(data, episodes, |_| Ok(()))
}

/// [`analyze_taking`] that runs `beside` on the records, candidates
/// included, while their frames are built (a run writes `facts.jsonl`
/// there); its error, if any, is returned first.
pub fn analyze_taking_beside(
    data: &RunData<'_>,
    episodes: &mut [EpisodeRecord],
    beside: impl FnOnce(&[EpisodeRecord]) -> Result<()> + Send,
) -> Result<Analysis> {
    let ran: BTreeSet<&str> = episodes.iter().map(|e| e.conversation.as_str()).collect();
    let convs: Vec<_> = data.dataset.conversations.iter().filter(|c| ran.contains(c.id.as_str())).collect();
    drop(ran);
    // The gold frames read only the dataset: built beside the candidates' frames.
    let records: &[EpisodeRecord] = episodes;
    let ((written, gold), frames) = rayon::join(
        || rayon::join(|| beside(records), || GoldFrames::new(&convs).ctx("build gold frames")),
        || candidate_frames(&RunData { episodes: records, ..*data }, &convs),
    );
    written?;
    let (gold, frames) = (gold?, frames?);
    for e in episodes.iter_mut() {
        e.facts = Vec::new();
    }
    // Freed on the threads that formed them: returned to the system, not
    // kept in those threads' arenas (crate::memory).
    crate::memory::release_free();
    analyze_frames(&RunData { episodes: &*episodes, ..*data }, &gold, frames)
}

/// A dataset's gold labels as frames, built once and shared by every grid
/// point of a sweep (each point runs every conversation that has episodes).
pub struct GoldIndex<'a> {
    dataset: &'a Dataset,
    convs: Vec<&'a crate::types::Conversation>,
    frames: GoldFrames,
    /// Each gold fact's tokens, by (conversation, gold fact id).
    tokens: GoldTokens<'a>,
    /// The labels the conversations with episodes give a point's metrics.
    labels: Labels,
    /// Per conversation, each QA item's evidence turns that are turns of
    /// the conversation (an item with none is not counted), as
    /// [`qa_extras`] reads them.
    qa_items: HashMap<&'a str, Vec<Vec<&'a str>>>,
    /// The gold duplicate groups with a turn (the `duplicate_groups` metric).
    duplicate_groups: usize,
    /// The lexical matchings of episodes' stored facts already computed
    /// ([`LexicalMemo`]): a sweep forms many conversations whose episodes
    /// store the same contents.
    matchings: LexicalMemo,
}

/// An episode's lexical matching of its stored facts (by their place in the
/// episode's stored list) to its gold facts, by the conversation, the
/// episode and the stored contents in order: all that matching reads
/// besides the gold facts, which are fixed for a [`GoldIndex`].
#[derive(Debug, Default)]
struct LexicalMemo(std::sync::Mutex<HashMap<MatchKey, Matching>>);

/// A [`LexicalMemo`] key: conversation id, episode id, stored contents.
type MatchKey = (String, String, Vec<String>);
/// Per stored fact, its gold fact (index in the episode's) and similarity.
type Matching = Vec<Option<(usize, f64)>>;

impl LexicalMemo {
    fn key(conv: &str, episode: &str, stored: &[&crate::pipeline::CandidateRecord]) -> MatchKey {
        (conv.to_string(), episode.to_string(), stored.iter().map(|f| f.content.clone()).collect())
    }

    /// The matching kept for this key, or `compute`'s, kept.
    fn get_or(&self, key: MatchKey, compute: impl FnOnce() -> Matching) -> Matching {
        if let Some(m) = self.0.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return m.clone();
        }
        let m = compute();
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(key, m.clone());
        m
    }
}

/// Gold facts' token sets by (conversation id, gold fact id).
use crate::normalize::{TokenSet, dice};

type GoldTokens<'a> = HashMap<(&'a str, &'a str), TokenSet>;

impl<'a> GoldIndex<'a> {
    pub fn new(dataset: &'a Dataset) -> Result<Self> {
        let convs: Vec<_> = dataset.conversations.iter().filter(|c| !c.episodes.is_empty()).collect();
        let frames = GoldFrames::new(&convs).ctx("build gold frames")?;
        let tokens =
            convs.iter().flat_map(|c| c.gold.facts.iter().map(|g| ((c.id.as_str(), g.id.as_str()), TokenSet::new(&g.text)))).collect();
        let labels = labels_of(&convs);
        let qa_items = convs
            .iter()
            .map(|c| {
                let known: std::collections::HashSet<&str> = c.episodes.iter().flat_map(|e| &e.turns).map(|t| t.id.as_str()).collect();
                let items = c
                    .gold
                    .qa
                    .iter()
                    .map(|q| q.evidence.iter().map(String::as_str).filter(|t| known.contains(t)).collect::<Vec<_>>())
                    .filter(|turns| !turns.is_empty())
                    .collect();
                (c.id.as_str(), items)
            })
            .collect();
        let groups = frames.dup_groups.clone().lazy().select([col("conversation"), col("group")]).unique(None, UniqueKeepStrategy::Any);
        let duplicate_groups = height(groups).ctx("count duplicate groups")?;
        Ok(GoldIndex { dataset, convs, frames, tokens, labels, qa_items, duplicate_groups, matchings: LexicalMemo::default() })
    }
}

/// The labels a run over `convs` is scored on (no cosine matches).
fn labels_of(convs: &[&crate::types::Conversation]) -> Labels {
    Labels {
        gold_facts: convs.iter().any(|c| !c.gold.facts.is_empty()),
        cosine: false,
        qa: convs.iter().any(|c| c.gold.qa.iter().any(|q| !q.evidence.is_empty())),
        duplicate_groups: convs.iter().any(|c| !c.gold.duplicate_groups.is_empty()),
        contradictions: convs.iter().any(|c| !c.gold.contradictions.is_empty()),
    }
}

/// Every numeric metric of `summary.json` for one grid point's records,
/// computed as [`analyze`] computes them (lexical content matching; no
/// per-conversation table, no breakdown objects, no timings): from the
/// [`ConversationPart`]s of its conversations.
pub fn point_metrics(gold: &GoldIndex<'_>, episodes: &[EpisodeRecord], live_ids: &BTreeSet<String>) -> Result<BTreeMap<String, f64>> {
    let parts = conversation_parts(gold, episodes, live_ids)?;
    if gold.convs.iter().any(|c| !parts.contains_key(c.id.as_str())) {
        return Err(Error::Other("point metrics: a conversation with episodes has no records".into()));
    }
    metrics_of_parts(gold, &parts.values().collect::<Vec<_>>())
}

/// One conversation's share of a point's metrics: its episodes' components
/// summed ([`COMPONENTS`], in order) and its QA items, counted and counted
/// answerable (every evidence turn covered by a live fact). The metrics
/// are ratios of sums over episodes, and the QA items are per conversation,
/// so a point's metrics computed from its conversations' parts
/// ([`metrics_of_parts`]) are those computed from all its records at once;
/// a sweep keeps each formed conversation's part instead of its records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConversationPart {
    components: Vec<i64>,
    qa_items: i64,
    qa_answerable: i64,
}

/// The [`ConversationPart`] of each conversation `episodes` holds records
/// of (records of one or several conversations, each complete), by
/// conversation id; `live_ids` are (at least) their live facts.
pub fn conversation_parts(
    gold: &GoldIndex<'_>,
    episodes: &[EpisodeRecord],
    live_ids: &BTreeSet<String>,
) -> Result<BTreeMap<String, ConversationPart>> {
    let matches = match_content(episodes, &gold.convs, None, Some((&gold.tokens, &gold.matchings)))?;
    let facts = facts_frame(episodes, live_ids, &matches, Scope::Metrics).ctx("build the facts frame")?;
    let verdicts = verdicts_frame(episodes).ctx("build the verdicts frame")?;
    let per_episode = episodes_frame(episodes, gold.dataset, &facts, &verdicts, &gold.frames, &gold.labels, Scope::Metrics)
        .ctx("compute per-episode components")?;
    let sums: Vec<Expr> = COMPONENTS.iter().map(|c| col(*c).sum().cast(DataType::Int64).alias(*c)).collect();
    let by_conv = per_episode.lazy().group_by([col("conversation")]).agg(sums).collect().ctx("sum components per conversation")?;
    let names = by_conv.column("conversation").and_then(|c| c.str().cloned()).ctx("conversation column")?;
    let columns = COMPONENTS
        .iter()
        .map(|c| by_conv.column(c).and_then(|v| v.i64().cloned()))
        .collect::<std::result::Result<Vec<_>, _>>()
        .ctx("component columns")?;
    // The QA items' evidence turns covered: the turns of live facts.
    let mut live_turns: HashMap<&str, std::collections::HashSet<&str>> = HashMap::new();
    for f in episodes.iter().flat_map(|e| &e.facts).filter(|f| f.stored && live_ids.contains(&f.id)) {
        live_turns.entry(f.conversation.as_str()).or_default().insert(f.turn.as_str());
    }
    let none = std::collections::HashSet::new();
    let mut out = BTreeMap::new();
    for (row, name) in names.iter().enumerate() {
        let Some(name) = name else { continue };
        let components = columns.iter().map(|c| c.get(row).unwrap_or(0)).collect();
        let items = gold.qa_items.get(name).map_or(&[][..], Vec::as_slice);
        let covered = live_turns.get(name).unwrap_or(&none);
        let qa_answerable = items.iter().filter(|turns| turns.iter().all(|t| covered.contains(t))).count() as i64;
        out.insert(name.to_string(), ConversationPart { components, qa_items: items.len() as i64, qa_answerable });
    }
    Ok(out)
}

/// A point's numeric metrics from its conversations' parts (one part per
/// conversation with episodes; [`point_metrics`] checks that).
pub fn metrics_of_parts(gold: &GoldIndex<'_>, parts: &[&ConversationPart]) -> Result<BTreeMap<String, f64>> {
    let labels = &gold.labels;
    let cols: Vec<Column> = COMPONENTS
        .iter()
        .enumerate()
        .map(|(i, c)| icol(c, parts.iter().map(|p| p.components.get(i).copied().unwrap_or(0)).collect()))
        .collect();
    let summed = frame(parts.len(), cols).ctx("the parts' components")?;
    let run = aggregate(summed.lazy(), None, labels).collect().ctx("compute run metrics")?;
    let mut metrics = run_metrics(&run, labels)?;
    metrics.insert("skipped_conversations".into(), json!(0));
    if labels.gold_facts {
        metrics.insert("content_lexical_threshold".into(), json!(CONTENT_LEXICAL_THRESHOLD));
    }
    if labels.qa {
        let n: i64 = parts.iter().map(|p| p.qa_items).sum();
        let answerable: i64 = parts.iter().map(|p| p.qa_answerable).sum();
        insert_qa_items(&mut metrics, n, answerable);
    }
    if labels.duplicate_groups {
        metrics.insert("duplicate_groups".into(), json!(gold.duplicate_groups));
    }
    Ok(metrics.into_iter().filter_map(|(k, v)| v.as_f64().map(|x| (k, x))).collect())
}

/// Each metric `labels` allows, read from the one-row frame of a run's
/// summed components ([`aggregate`] over all its episodes).
fn run_metrics(run: &DataFrame, labels: &Labels) -> Result<BTreeMap<String, Value>> {
    let mut metrics = BTreeMap::new();
    for d in labels.metrics() {
        let v = match d.formula {
            Formula::Sum(_) => json!(scalar_i64(run, d.key).ctx(d.key)?),
            _ => round(scalar_f64(run, d.key).ctx(d.key)?),
        };
        metrics.insert(d.key.to_string(), v);
    }
    Ok(metrics)
}

/// `qa_items` and `qa_item_coverage` from the items counted and the answerable ones.
fn insert_qa_items(metrics: &mut BTreeMap<String, Value>, n: i64, answerable: i64) {
    metrics.insert("qa_items".into(), json!(n));
    metrics.insert("qa_item_coverage".into(), round(if n == 0 { 0.0 } else { answerable as f64 / n as f64 }));
}

/// The keys [`point_metrics`] returns for `dataset`: the metrics its gold
/// labels allow (no cosine matches), `skipped_conversations`, and the
/// numeric extras of its labels.
pub fn point_metric_names(dataset: &Dataset) -> Vec<String> {
    let convs: Vec<_> = dataset.conversations.iter().filter(|c| !c.episodes.is_empty()).collect();
    names_for(&labels_of(&convs))
}

/// Every key [`point_metrics`] can return, on a dataset with every kind of
/// gold label: what a sweep's `--objective` and `--pareto` may name.
pub fn all_point_metric_names() -> Vec<String> {
    names_for(&Labels { gold_facts: true, cosine: false, qa: true, duplicate_groups: true, contradictions: true })
}

fn names_for(labels: &Labels) -> Vec<String> {
    let mut names: Vec<String> = labels.metrics().map(|d| d.key.to_string()).collect();
    names.push("skipped_conversations".into());
    if labels.gold_facts {
        names.push("content_lexical_threshold".into());
    }
    if labels.qa {
        names.extend(["qa_items".to_string(), "qa_item_coverage".to_string()]);
        names.extend(crate::names::qa_metric_names());
    }
    if labels.duplicate_groups {
        names.push("duplicate_groups".into());
    }
    names
}

/// How much of the analysis to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Everything a run's reports need.
    Full,
    /// The scalar metrics only (sweep points).
    Metrics,
}

/// What [`analyze`] reads of the candidates' records: the facts and
/// verdicts frames, the labels (cosine matching done or not) and a cosine
/// matching's error.
struct CandidateFrames {
    labels: Labels,
    facts: DataFrame,
    verdicts: DataFrame,
    cosine_error: Option<String>,
}

fn analyze_with(data: &RunData<'_>, convs: &[&crate::types::Conversation], gold: &GoldFrames) -> Result<Analysis> {
    let frames = candidate_frames(data, convs)?;
    analyze_frames(data, gold, frames)
}

fn candidate_frames(data: &RunData<'_>, convs: &[&crate::types::Conversation]) -> Result<CandidateFrames> {
    let mut labels = labels_of(convs);
    // The lexical and the cosine matching, and the verdicts frame, read the
    // records alone: computed side by side.
    let ((lexical, cosine), verdicts) = rayon::join(
        || {
            rayon::join(
                || match_content(data.episodes, convs, None, None),
                || match (data.embedder, labels.gold_facts) {
                    (Some(embedder), true) => Some(match_content(data.episodes, convs, Some(embedder), None)),
                    _ => None,
                },
            )
        },
        || verdicts_frame(data.episodes),
    );
    let mut matches = lexical?;
    let mut cosine_error = None;
    match cosine {
        Some(Ok(c)) => {
            matches.cosine = c.cosine;
            labels.cosine = true;
        }
        Some(Err(e)) => cosine_error = Some(e.to_string()),
        None => {}
    }
    let facts = facts_frame(data.episodes, data.live_ids, &matches, Scope::Full).ctx("build the facts frame")?;
    let verdicts = verdicts.ctx("build the verdicts frame")?;
    Ok(CandidateFrames { labels, facts, verdicts, cosine_error })
}

/// The rest of [`analyze`], from the frames of the candidates' records:
/// `data.episodes` is read for the episodes' own fields only.
fn analyze_frames(data: &RunData<'_>, gold: &GoldFrames, frames: CandidateFrames) -> Result<Analysis> {
    let CandidateFrames { labels, facts, verdicts, cosine_error } = frames;
    let episodes =
        episodes_frame(data.episodes, data.dataset, &facts, &verdicts, gold, &labels, Scope::Full).ctx("compute per-episode components")?;
    let per_conversation = aggregate(episodes.clone().lazy(), Some("conversation"), &labels)
        .sort(["conversation"], SortMultipleOptions::default())
        .collect()
        .ctx("compute per-conversation metrics")?;
    let run = aggregate(episodes.clone().lazy(), None, &labels).collect().ctx("compute run metrics")?;

    let mut metrics = run_metrics(&run, &labels)?;
    metrics.insert("skipped_conversations".into(), json!(data.skipped_conversations));
    let warnings = warnings_frame(data.episodes).ctx("build the warnings frame")?;
    metrics.insert("warnings_by_kind".into(), counts_by(warnings.clone(), "kind")?);
    metrics.insert("outcomes".into(), counts_by(facts.clone(), "outcome")?);
    if labels.gold_facts {
        metrics.insert("content_lexical_threshold".into(), json!(CONTENT_LEXICAL_THRESHOLD));
        if let Some(e) = data.embedder {
            metrics.insert("content_embedder".into(), json!(e.id()));
            metrics.insert("content_cosine_threshold".into(), json!(CONTENT_COSINE_THRESHOLD));
        }
        if let Some(err) = cosine_error {
            metrics.insert("content_cosine_error".into(), json!(err));
        }
    }
    if labels.qa {
        qa_extras(&facts, gold, &mut metrics).ctx("compute QA coverage")?;
    }
    if labels.duplicate_groups {
        let n = gold.dup_groups.clone().lazy().select([col("conversation"), col("group")]).unique(None, UniqueKeepStrategy::Any);
        metrics.insert("duplicate_groups".into(), json!(height(n).ctx("count duplicate groups")?));
    }
    if labels.contradictions {
        metrics.insert("judge_confusion".into(), judge_confusion(&facts, &verdicts, gold)?);
    }

    let mut timings = BTreeMap::new();
    let sums: Vec<Expr> = TIMING_COLUMNS.iter().map(|c| col(*c).sum()).collect();
    let t = episodes.clone().lazy().select(sums).collect().ctx("sum timings")?;
    for c in TIMING_COLUMNS {
        timings.insert(c.to_string(), scalar_f64(&t, c).ctx(c)?);
    }
    timings.insert("wall_ms".to_string(), data.wall_ms);
    Ok(Analysis { summary: Summary { metrics, timings }, labels, facts, episodes, per_conversation, verdicts, warnings })
}

/// Sums the components of `episodes` (per `by` column, or over all rows) and
/// computes every metric `labels` allows from the sums. The result has `by`
/// (when given), every component and every metric key.
pub fn aggregate(episodes: LazyFrame, by: Option<&str>, labels: &Labels) -> LazyFrame {
    let sums: Vec<Expr> = COMPONENTS.iter().map(|c| col(*c).sum().alias(*c)).collect();
    let summed = match by {
        Some(k) => episodes.group_by([col(k)]).agg(sums),
        None => episodes.select(sums),
    };
    with_metrics(summed, labels)
}

/// Adds a column per metric `labels` allows to a frame of (summed) components.
pub fn with_metrics(lf: LazyFrame, labels: &Labels) -> LazyFrame {
    let defs: Vec<&MetricDef> = labels.metrics().collect();
    let first: Vec<Expr> = defs
        .iter()
        .filter_map(|d| match d.formula {
            Formula::Sum(c) => Some(col(c).cast(DataType::Int64).alias(d.key)),
            Formula::Ratio(n, den, scale) => Some(ratio(col(n), col(den), scale).alias(d.key)),
            Formula::Const(x) => Some(lit(x).alias(d.key)),
            Formula::F1(..) => None,
        })
        .collect();
    let second: Vec<Expr> = defs
        .iter()
        .filter_map(|d| match d.formula {
            Formula::F1(p, r) => Some(f1(col(p), col(r)).alias(d.key)),
            _ => None,
        })
        .collect();
    let lf = lf.with_columns(first);
    if second.is_empty() { lf } else { lf.with_columns(second) }
}

fn ratio(num: Expr, den: Expr, scale: f64) -> Expr {
    let den = den.cast(DataType::Float64);
    when(den.clone().eq(lit(0.0))).then(lit(0.0)).otherwise(num.cast(DataType::Float64) * lit(scale) / den)
}

fn f1(p: Expr, r: Expr) -> Expr {
    let s = p.clone() + r.clone();
    when(s.clone().eq(lit(0.0))).then(lit(0.0)).otherwise(lit(2.0) * p * r / s)
}

/// Precision, recall and F1 of a predicted set against a gold set.
pub fn prf(predicted: usize, gold: usize, hits: usize) -> (f64, f64, f64) {
    let p = if predicted == 0 { 0.0 } else { hits as f64 / predicted as f64 };
    let r = if gold == 0 { 0.0 } else { hits as f64 / gold as f64 };
    let f = if p + r == 0.0 { 0.0 } else { 2.0 * p * r / (p + r) };
    (p, r, f)
}

/// Rounds to six decimals (what `summary.json` carries).
pub fn round(x: f64) -> Value {
    json!((x * 1e6).round() / 1e6)
}

// ---------------------------------------------------------------------------
// Errors and small frame helpers.

trait Ctx<T> {
    fn ctx(self, what: &str) -> Result<T>;
}

impl<T> Ctx<T> for std::result::Result<T, PolarsError> {
    fn ctx(self, what: &str) -> Result<T> {
        self.map_err(|e| Error::Other(format!("compute metrics: {what}: {e}")))
    }
}

fn scol(name: &str, v: Vec<String>) -> Column {
    Column::new(name.into(), v)
}
/// A string column from borrowed values (no copy per cell before polars').
fn sref<'s>(name: &str, v: impl Iterator<Item = &'s str>) -> Column {
    StringChunked::from_iter_values(name.into(), v).into_column()
}
fn oref<'s>(name: &str, v: impl Iterator<Item = Option<&'s str>>) -> Column {
    StringChunked::from_iter_options(name.into(), v).into_column()
}
fn ocol(name: &str, v: Vec<Option<String>>) -> Column {
    Column::new(name.into(), v)
}
fn icol(name: &str, v: Vec<i64>) -> Column {
    Column::new(name.into(), v)
}
fn fcol(name: &str, v: Vec<f64>) -> Column {
    Column::new(name.into(), v)
}
fn ofcol(name: &str, v: Vec<Option<f64>>) -> Column {
    Column::new(name.into(), v)
}
fn bcol(name: &str, v: Vec<bool>) -> Column {
    Column::new(name.into(), v)
}

fn frame(rows: usize, cols: Vec<Column>) -> std::result::Result<DataFrame, PolarsError> {
    DataFrame::new(rows, cols)
}

/// Reads row 0 of `name` as f64 (0 when null or absent rows).
pub fn scalar_f64(df: &DataFrame, name: &str) -> std::result::Result<f64, PolarsError> {
    let c = df.column(name)?.cast(&DataType::Float64)?;
    Ok(if c.is_empty() { 0.0 } else { c.f64()?.get(0).unwrap_or(0.0) })
}

/// Reads row 0 of `name` as i64 (0 when null or absent rows).
pub fn scalar_i64(df: &DataFrame, name: &str) -> std::result::Result<i64, PolarsError> {
    let c = df.column(name)?.cast(&DataType::Int64)?;
    Ok(if c.is_empty() { 0 } else { c.i64()?.get(0).unwrap_or(0) })
}

fn height(lf: LazyFrame) -> std::result::Result<usize, PolarsError> {
    Ok(lf.collect()?.height())
}

fn count(name: &str) -> Expr {
    len().cast(DataType::Int64).alias(name)
}

fn count_if(cond: Expr, name: &str) -> Expr {
    cond.cast(DataType::Int64).sum().alias(name)
}

fn one_of(column: &str, values: &[&str]) -> Expr {
    values.iter().fold(lit(false), |acc, v| acc.or(col(column).eq(lit(*v))))
}

fn keys(names: &[&str]) -> Vec<Expr> {
    names.iter().map(|n| col(*n)).collect()
}

fn distinct(lf: LazyFrame, names: &[&str]) -> LazyFrame {
    lf.select(keys(names)).unique(None, UniqueKeepStrategy::Any)
}

fn join(left: LazyFrame, right: LazyFrame, on: &[&str], how: JoinType) -> LazyFrame {
    left.join(right, keys(on), keys(on), JoinArgs::new(how))
}

const EP: &[&str] = &["conversation", "episode"];

/// `{value: count}` of a string column, keys sorted.
fn counts_by(df: DataFrame, column: &str) -> Result<Value> {
    let pairs = (|| -> std::result::Result<Vec<(String, i64)>, PolarsError> {
        let out = df.lazy().group_by([col(column)]).agg([count("n")]).sort([column], SortMultipleOptions::default()).collect()?;
        string_counts(&out, column, "n")
    })()
    .ctx(column)?;
    Ok(Value::Object(pairs.into_iter().map(|(k, n)| (k, json!(n))).collect()))
}

/// The (string, count) pairs of two columns of `df`, in row order.
pub fn string_counts(df: &DataFrame, names: &str, counts: &str) -> std::result::Result<Vec<(String, i64)>, PolarsError> {
    let k = df.column(names)?.str()?;
    let n = df.column(counts)?.cast(&DataType::Int64)?;
    let n = n.i64()?;
    Ok(k.iter().zip(n.iter()).map(|(k, n)| (k.unwrap_or("").to_string(), n.unwrap_or(0))).collect())
}

// ---------------------------------------------------------------------------
// Frames built from the records (construction only; no counting here).

/// Per candidate, in record order: linked to an entity that existed before
/// its episode. An observation (memorix): its resolved entity already
/// existed. A decided fact (signet): the inline linker recorded a mention
/// (it links only to entities that already exist, and never creates one).
/// Any other fact: its subject entity was not created in its own episode.
pub(crate) fn entity_existed(episodes: &[EpisodeRecord]) -> Vec<bool> {
    let mut out = Vec::new();
    for e in episodes {
        let created: BTreeSet<&str> = e
            .entity_decisions
            .iter()
            .filter_map(|d| match d {
                crate::pipeline::resolve::EntityDecision::Insert { entity_id, .. } => Some(entity_id.as_str()),
                _ => None,
            })
            .collect();
        out.extend(e.facts.iter().map(|r| match &r.formed {
            Some(f) => f.resolved_entity.existed,
            None if r.decision.as_ref().is_some_and(|d| !d.mentions.is_empty()) => true,
            None => r.subject_entity.as_deref().is_some_and(|id| !created.contains(id)),
        }));
    }
    out
}

fn facts_frame(
    episodes: &[EpisodeRecord],
    live_ids: &BTreeSet<String>,
    matches: &ContentMatches,
    scope: Scope,
) -> std::result::Result<DataFrame, PolarsError> {
    let facts: Vec<_> = episodes.iter().flat_map(|e| &e.facts).collect();
    let n = facts.len();
    let lex = |i: usize| matches.lexical.get(&facts[i].id);
    let cos = |i: usize| matches.cosine.get(&facts[i].id);
    let it = || facts.iter();
    let mut cols = vec![
        icol("ord", (0..n as i64).collect()),
        sref("conversation", it().map(|r| r.conversation.as_str())),
        sref("episode", it().map(|r| r.episode.as_str())),
        sref("id", it().map(|r| r.id.as_str())),
        sref("turn", it().map(|r| r.turn.as_str())),
        sref("kind", it().map(|r| if r.kind == FactKind::Literal { "literal" } else { "relationship" })),
        sref("outcome", it().map(|r| r.outcome.as_str())),
        oref("related", it().map(|r| r.related.as_deref())),
        oref("subject_entity", it().map(|r| r.subject_entity.as_deref())),
        oref("object_entity", it().map(|r| r.object_entity.as_deref())),
        bcol("stored", it().map(|r| r.stored).collect()),
        bcol("live", it().map(|r| r.stored && live_ids.contains(&r.id)).collect()),
        bcol("entity_existed", entity_existed(episodes)),
        bcol("observation", it().map(|r| r.formed.is_some()).collect()),
        icol("facts_before", it().map(|r| r.formed.as_ref().map_or(0, |f| f.caller_facts.len() as i64)).collect()),
        icol(
            "facts_after",
            it().map(|r| r.formed.as_ref().map_or(0, |f| (f.caller_facts.len() + f.extracted_facts.len()) as i64)).collect(),
        ),
        bcol(
            "good_title",
            it().map(|r| r.formed.as_ref().is_some_and(|f| !crate::pipeline::memorix::extract::is_generic_title(&f.title))).collect(),
        ),
        oref("resolution", it().map(|r| r.formed.as_ref().map(|f| f.resolution.action.as_str()))),
        oref("gold_match", (0..n).map(|i| lex(i).map(|m| m.0.as_str()))),
        oref("gold_match_cosine", (0..n).map(|i| cos(i).map(|m| m.0.as_str()))),
    ];
    if scope == Scope::Full {
        // What `facts.parquet` carries beyond what the metrics read.
        cols.extend([
            sref("subject", it().map(|r| r.subject.as_str())),
            sref("predicate", it().map(|r| r.predicate.as_str())),
            sref("object", it().map(|r| r.object.as_str())),
            sref("fact_type", it().map(|r| r.fact_type.as_str())),
            sref("content", it().map(|r| r.content.as_str())),
            fcol("confidence", it().map(|r| r.confidence).collect()),
            fcol("value_score", it().map(|r| r.value_score).collect()),
            sref("tier", it().map(|r| tier_str(r.tier))),
            sref("content_hash", it().map(|r| r.content_hash.as_str())),
            sref("reason", it().map(|r| r.reason.as_str())),
            icol("pairs", it().map(|r| r.pairs_judged() as i64).collect()),
            scol("ended", it().map(|r| r.ended.join(" ")).collect()),
            ofcol("gold_similarity", (0..n).map(|i| lex(i).map(|m| m.1)).collect()),
            ofcol("gold_cosine", (0..n).map(|i| cos(i).map(|m| m.1)).collect()),
        ]);
    }
    let df = frame(n, cols)?;
    let linked = col("subject_entity").is_not_null().and(col("kind").eq(lit("literal")).or(col("object_entity").is_not_null()));
    let df = df.lazy().with_column(col("stored").and(linked).alias("coherent"));
    if scope == Scope::Full { df.select(FACT_COLUMNS.iter().map(|c| col(*c)).collect::<Vec<_>>()).collect() } else { df.collect() }
}

/// `facts.parquet`'s columns, in order.
const FACT_COLUMNS: &[&str] = &[
    "ord",
    "conversation",
    "episode",
    "id",
    "turn",
    "subject",
    "predicate",
    "object",
    "kind",
    "fact_type",
    "content",
    "confidence",
    "value_score",
    "tier",
    "content_hash",
    "outcome",
    "reason",
    "related",
    "subject_entity",
    "object_entity",
    "stored",
    "live",
    "pairs",
    "ended",
    "gold_match",
    "gold_similarity",
    "gold_match_cosine",
    "gold_cosine",
    "coherent",
    "entity_existed",
    "observation",
    "facts_before",
    "facts_after",
    "good_title",
    "resolution",
];

fn tier_str(t: ValueTier) -> &'static str {
    match t {
        ValueTier::Core => "core",
        ValueTier::Contextual => "contextual",
        ValueTier::Ephemeral => "ephemeral",
    }
}

fn verdicts_frame(episodes: &[EpisodeRecord]) -> std::result::Result<DataFrame, PolarsError> {
    let rows: Vec<_> = episodes.iter().flat_map(|e| &e.facts).flat_map(|f| f.all_verdicts().map(move |v| (f, v))).collect();
    let listed: Vec<bool> =
        episodes.iter().flat_map(|e| &e.facts).flat_map(|f| f.all_verdicts().enumerate().map(|(i, _)| i < f.verdicts.len())).collect();
    let it = || rows.iter();
    frame(
        rows.len(),
        vec![
            bcol("listed", listed),
            sref("conversation", it().map(|(f, _)| f.conversation.as_str())),
            sref("episode", it().map(|(f, _)| f.episode.as_str())),
            sref("candidate", it().map(|(f, _)| f.id.as_str())),
            sref("candidate_turn", it().map(|(f, _)| f.turn.as_str())),
            sref("candidate_content", it().map(|(f, _)| f.content.as_str())),
            sref("live_id", it().map(|(_, v)| v.live_id.as_str())),
            scol("reason", s_reason(&rows)),
            sref("verdict", it().map(|(_, v)| v.verdict.as_str())),
            sref("judged", it().map(|(_, v)| v.judged.as_str())),
            bcol("review_needed", it().map(|(_, v)| v.review_needed).collect()),
            oref("guard", it().map(|(_, v)| v.guard.as_deref())),
        ],
    )
}

fn s_reason(rows: &[(&crate::pipeline::CandidateRecord, &crate::pipeline::judge::FinalVerdict)]) -> Vec<String> {
    rows.iter().map(|(_, v)| serde_json::to_value(v.reason).ok().and_then(|x| x.as_str().map(str::to_string)).unwrap_or_default()).collect()
}

fn warnings_frame(episodes: &[EpisodeRecord]) -> std::result::Result<DataFrame, PolarsError> {
    let rows: Vec<_> = episodes.iter().flat_map(|e| e.warnings.iter().map(move |w| (e, w))).collect();
    frame(
        rows.len(),
        vec![
            scol("conversation", rows.iter().map(|(e, _)| e.conversation.clone()).collect()),
            scol("episode", rows.iter().map(|(e, _)| e.episode.clone()).collect()),
            scol("kind", rows.iter().map(|(_, w)| w.kind.clone()).collect()),
            scol("message", rows.iter().map(|(_, w)| w.message.clone()).collect()),
        ],
    )
}

/// The verdicts and warnings frames of a run's records (`memform report`
/// rebuilds a finished run's [`Analysis`] from its files with these).
pub fn record_frames(episodes: &[EpisodeRecord]) -> Result<(DataFrame, DataFrame)> {
    Ok((verdicts_frame(episodes).ctx("build the verdicts frame")?, warnings_frame(episodes).ctx("build the warnings frame")?))
}

fn decisions_frame(episodes: &[EpisodeRecord]) -> std::result::Result<DataFrame, PolarsError> {
    let rows: Vec<_> = episodes.iter().flat_map(|e| e.entity_decisions.iter().map(move |d| (e, d))).collect();
    let kind = |d: &EntityDecision| match d {
        EntityDecision::Reuse { .. } => "reuse",
        EntityDecision::Merge { .. } => "merge",
        EntityDecision::Insert { .. } => "insert",
    };
    frame(
        rows.len(),
        vec![
            scol("conversation", rows.iter().map(|(e, _)| e.conversation.clone()).collect()),
            scol("episode", rows.iter().map(|(e, _)| e.episode.clone()).collect()),
            scol("decision", rows.iter().map(|(_, d)| kind(d).to_string()).collect()),
        ],
    )
}

/// The dataset's turns and gold labels as frames, for conversations that ran.
struct GoldFrames {
    /// conversation, episode, turn, turn_index (position in the conversation).
    turns: DataFrame,
    /// conversation, qa, category, turn: QA evidence.
    qa: DataFrame,
    /// conversation, group, turn.
    dup_groups: DataFrame,
    /// The rest is derived once here, as it depends on no run.
    /// conversation, turn: distinct gold-fact evidence turns that are turns of the dataset.
    evidence_turn_keys: DataFrame,
    /// conversation, episode, gold_turns.
    gold_turn_counts: DataFrame,
    /// conversation, episode, gold_facts.
    gold_fact_counts: DataFrame,
    /// Distinct QA evidence turns that are turns of the dataset (conversation, turn, episode, turn_index).
    qa_turns: DataFrame,
    /// Distinct contradiction items placed in the new turn's episode.
    contradiction_items: DataFrame,
}

impl GoldFrames {
    fn new(convs: &[&crate::types::Conversation]) -> std::result::Result<Self, PolarsError> {
        let mut t: (Vec<String>, Vec<String>, Vec<String>, Vec<i64>) = Default::default();
        let mut ft: (Vec<String>, Vec<String>) = Default::default();
        let mut gf: (Vec<String>, Vec<String>, Vec<String>) = Default::default();
        let mut qa: (Vec<String>, Vec<i64>, Vec<String>, Vec<String>) = Default::default();
        let mut dg: (Vec<String>, Vec<i64>, Vec<String>) = Default::default();
        let mut ct: (Vec<String>, Vec<String>, Vec<String>, Vec<String>) = Default::default();
        for c in convs {
            let mut i = 0i64;
            for e in &c.episodes {
                for turn in &e.turns {
                    t.0.push(c.id.clone());
                    t.1.push(e.id.clone());
                    t.2.push(turn.id.clone());
                    t.3.push(i);
                    i += 1;
                }
            }
            for g in &c.gold.facts {
                gf.0.push(c.id.clone());
                gf.1.push(g.episode.clone());
                gf.2.push(g.id.clone());
                for turn in &g.evidence {
                    ft.0.push(c.id.clone());
                    ft.1.push(turn.clone());
                }
            }
            for (k, q) in c.gold.qa.iter().enumerate() {
                let cat = q.category_name();
                for turn in &q.evidence {
                    qa.0.push(c.id.clone());
                    qa.1.push(k as i64);
                    qa.2.push(cat.clone());
                    qa.3.push(turn.clone());
                }
            }
            for (k, g) in c.gold.duplicate_groups.iter().enumerate() {
                for turn in g {
                    dg.0.push(c.id.clone());
                    dg.1.push(k as i64);
                    dg.2.push(turn.clone());
                }
            }
            for x in &c.gold.contradictions {
                ct.0.push(c.id.clone());
                ct.1.push(x.old_turn.clone());
                ct.2.push(x.new_turn.clone());
                ct.3.push(x.verdict.as_str().to_string());
            }
        }
        let turns = frame(t.0.len(), vec![scol("conversation", t.0), scol("episode", t.1), scol("turn", t.2), icol("turn_index", t.3)])?;
        let fact_turns = frame(ft.0.len(), vec![scol("conversation", ft.0), scol("turn", ft.1)])?;
        let facts = frame(gf.0.len(), vec![scol("conversation", gf.0), scol("episode", gf.1), scol("id", gf.2)])?;
        let qa = frame(qa.0.len(), vec![scol("conversation", qa.0), icol("qa", qa.1), scol("category", qa.2), scol("turn", qa.3)])?;
        let contradictions =
            frame(ct.0.len(), vec![scol("conversation", ct.0), scol("old_turn", ct.1), scol("new_turn", ct.2), scol("gold", ct.3)])?;
        let by_ep = |lf: LazyFrame, aggs: Vec<Expr>| lf.group_by(keys(EP)).agg(aggs);
        let evidence_turns = join(
            distinct(fact_turns.clone().lazy(), &["conversation", "turn"]),
            turns.clone().lazy(),
            &["conversation", "turn"],
            JoinType::Inner,
        )
        .collect()?;
        let evidence_turn_keys = distinct(evidence_turns.clone().lazy(), &["conversation", "turn"]).collect()?;
        let gold_turn_counts = by_ep(evidence_turns.clone().lazy(), vec![count("gold_turns")]).collect()?;
        let gold_fact_counts = by_ep(facts.clone().lazy(), vec![count("gold_facts")]).collect()?;
        let qa_turns =
            join(distinct(qa.clone().lazy(), &["conversation", "turn"]), turns.clone().lazy(), &["conversation", "turn"], JoinType::Inner)
                .collect()?;
        let items = distinct(contradictions.clone().lazy(), &["conversation", "old_turn", "new_turn", "gold"]);
        let new_turns = turns.clone().lazy().select([col("conversation"), col("episode"), col("turn").alias("new_turn")]);
        let contradiction_items = join(items, new_turns, &["conversation", "new_turn"], JoinType::Inner).collect()?;
        Ok(GoldFrames {
            turns,
            qa,
            dup_groups: frame(dg.0.len(), vec![scol("conversation", dg.0), icol("group", dg.1), scol("turn", dg.2)])?,
            evidence_turn_keys,
            gold_turn_counts,
            gold_fact_counts,
            qa_turns,
            contradiction_items,
        })
    }
}

// ---------------------------------------------------------------------------
// Per-episode components: one group-by per source, left-joined onto the
// episodes.

/// One row per episode record: its keys, counts from the record, usage and timings.
fn base_episodes_frame(records: &[EpisodeRecord], dataset: &Dataset) -> std::result::Result<DataFrame, PolarsError> {
    let index: HashMap<(&str, &str), i64> = dataset
        .conversations
        .iter()
        .flat_map(|c| c.episodes.iter().enumerate().map(move |(i, e)| ((c.id.as_str(), e.id.as_str()), i as i64)))
        .collect();
    let n = records.len();
    let u = |f: &dyn Fn(&EpisodeRecord) -> u64| records.iter().map(|r| f(r) as i64).collect::<Vec<_>>();
    let ms = |f: &dyn Fn(&EpisodeRecord) -> f64| records.iter().map(f).collect::<Vec<_>>();
    frame(
        n,
        vec![
            icol("ord", (0..n as i64).collect()),
            scol("conversation", records.iter().map(|r| r.conversation.clone()).collect()),
            scol("episode", records.iter().map(|r| r.episode.clone()).collect()),
            icol(
                "episode_index",
                records.iter().map(|r| index.get(&(r.conversation.as_str(), r.episode.as_str())).copied().unwrap_or(-1)).collect(),
            ),
            ocol("timestamp", records.iter().map(|r| r.timestamp.clone()).collect()),
            icol("episodes", vec![1; n]),
            icol("turns", u(&|r| r.turns as u64)),
            icol("invalidations", u(&|r| r.invalidations as u64)),
            icol("closures", u(&|r| r.closures as u64)),
            icol("review_needed", u(&|r| r.review_needed as u64)),
            icol("blocked", u(&|r| r.blocked as u64)),
            icol("llm_calls", u(&|r| r.usage.calls)),
            icol("prompt_tokens", u(&|r| r.usage.prompt_tokens)),
            icol("completion_tokens", u(&|r| r.usage.completion_tokens)),
            fcol("extract_ms", ms(&|r| r.timings.extract_ms)),
            fcol("embed_ms", ms(&|r| r.timings.embed_ms)),
            fcol("resolve_ms", ms(&|r| r.timings.resolve_ms)),
            fcol("dedupe_ms", ms(&|r| r.timings.dedupe_ms)),
            fcol("judge_ms", ms(&|r| r.timings.judge_ms)),
            fcol("write_ms", ms(&|r| r.timings.write_ms)),
        ],
    )
}

fn episodes_frame(
    records: &[EpisodeRecord],
    dataset: &Dataset,
    facts: &DataFrame,
    verdicts: &DataFrame,
    gold: &GoldFrames,
    labels: &Labels,
    scope: Scope,
) -> std::result::Result<DataFrame, PolarsError> {
    let base = base_episodes_frame(records, dataset)?;
    let f = facts.clone().lazy();
    let by_ep = |lf: LazyFrame, aggs: Vec<Expr>| lf.group_by(keys(EP)).agg(aggs);

    let fact_counts = by_ep(
        f.clone(),
        vec![
            count("candidates"),
            count_if(col("stored"), "stored"),
            count_if(col("live"), "live"),
            count_if(one_of("outcome", EXACT_DUP_OUTCOMES), "exact_dup"),
            count_if(one_of("outcome", NEAR_DUP_OUTCOMES), "near_dup"),
            count_if(one_of("outcome", DUPLICATE_REMOVED_OUTCOMES), "dup_removed"),
            count_if(col("outcome").eq(lit("noise_rejected")), "noise"),
            count_if(col("outcome").eq(lit("judged_new")), "judged_new"),
            count_if(col("outcome").eq(lit("low_fact_confidence")), "low_confidence"),
            count_if(col("coherent"), "coherent"),
            count_if(col("entity_existed"), "entity_existed"),
            count_if(col("observation"), "observations"),
            col("facts_before").sum().alias("facts_before"),
            col("facts_after").sum().alias("facts_after"),
            count_if(col("observation").and(col("good_title")), "good_titles"),
            count_if(col("resolution").eq(lit("new")).fill_null(lit(false)), "resolution_new"),
            count_if(col("resolution").eq(lit("merge")).fill_null(lit(false)), "resolution_merge"),
            count_if(col("resolution").eq(lit("evolve")).fill_null(lit(false)), "resolution_evolve"),
            count_if(col("resolution").eq(lit("discard")).fill_null(lit(false)), "resolution_discard"),
            count_if(col("gold_match").is_not_null(), "content_matched"),
            count_if(col("gold_match_cosine").is_not_null(), "content_matched_cosine"),
        ],
    );
    let verdict_counts = by_ep(
        verdicts.clone().lazy(),
        vec![
            count("pairs_judged"),
            count_if(col("verdict").eq(lit("old")), "verdict_old"),
            count_if(col("verdict").eq(lit("new")), "verdict_new"),
            count_if(col("verdict").eq(lit("neither")), "verdict_neither"),
        ],
    );
    let warning_counts = by_ep(warnings_frame(records)?.lazy(), vec![count("warnings")]);
    let decision_counts = by_ep(
        decisions_frame(records)?.lazy(),
        vec![count_if(col("decision").eq(lit("merge")), "alias_merges"), count_if(col("decision").eq(lit("insert")), "entities_created")],
    );

    // Turn level: distinct source turns of stored facts vs gold evidence turns.
    let pred = distinct(f.clone().filter(col("stored")), &["conversation", "episode", "turn"]);
    let pred_counts = by_ep(pred.clone(), vec![count("pred_turns")]);
    let gold_counts = gold.gold_turn_counts.clone().lazy();
    let hits = join(pred, gold.evidence_turn_keys.clone().lazy(), &["conversation", "turn"], JoinType::Inner);
    let hit_counts = by_ep(hits, vec![count("turn_hits")]);
    let gold_fact_counts = gold.gold_fact_counts.clone().lazy();

    // QA evidence turns that yielded a live stored fact.
    let live_turns = distinct(f.clone().filter(col("live")), &["conversation", "turn"]).with_column(lit(true).alias("covered"));
    let qa_turns = gold.qa_turns.clone().lazy();
    let qa_counts = by_ep(
        join(qa_turns, live_turns, &["conversation", "turn"], JoinType::Left),
        vec![count("qa_turns"), count_if(col("covered").fill_null(lit(false)), "qa_covered")],
    );

    // A sweep point skips the components of labels the dataset lacks (their
    // metrics are not reported); a run keeps them for episodes.parquet.
    let lean = scope == Scope::Metrics;
    let mut absent: Vec<&str> = Vec::new();
    let mut parts: Vec<LazyFrame> = Vec::new();
    if lean && !labels.duplicate_groups {
        absent.extend(["dedup_links", "dedup_correct", "dedup_expected", "dedup_found"]);
    } else {
        parts.extend(dedup_components(&f, gold));
    }
    if lean && !labels.contradictions {
        absent.extend(["judge_items", "judge_judged", "judge_correct", "judge_correct_raw", "contradiction_correct"]);
    } else {
        parts.push(judge_counts(&f, verdicts, gold)?);
    }

    let mut lf = base.lazy();
    for part in
        [fact_counts, verdict_counts, warning_counts, decision_counts, pred_counts, gold_counts, hit_counts, gold_fact_counts, qa_counts]
            .into_iter()
            .chain(parts)
    {
        lf = join(lf, part, EP, JoinType::Left);
    }
    if !absent.is_empty() {
        lf = lf.with_columns(absent.iter().map(|c| lit(0i64).alias(*c)).collect::<Vec<_>>());
    }
    let derived = ["dup", "growth"];
    let fill: Vec<Expr> =
        COMPONENTS.iter().filter(|c| !derived.contains(c)).map(|c| col(*c).cast(DataType::Int64).fill_null(lit(0i64)).alias(*c)).collect();
    let lf = lf
        .with_columns(fill)
        .with_columns([(col("exact_dup") + col("near_dup")).alias("dup"), (col("stored") - col("invalidations")).alias("growth")])
        .sort(["ord"], SortMultipleOptions::default());
    if scope == Scope::Metrics {
        // The components are all the run's aggregate needs.
        return lf.collect();
    }
    with_metrics(lf, labels)
        .with_columns([
            col("stored").cum_sum(false).over([col("conversation")])?.alias("stored_cumulative"),
            (col("stored") - col("invalidations")).cum_sum(false).over([col("conversation")])?.alias("live_after"),
        ])
        .collect()
}

/// Per-episode judge components on conversations' contradiction labels.
fn judge_counts(f: &LazyFrame, verdicts: &DataFrame, gold: &GoldFrames) -> std::result::Result<LazyFrame, PolarsError> {
    let by_ep = |lf: LazyFrame, aggs: Vec<Expr>| lf.group_by(keys(EP)).agg(aggs);
    Ok(by_ep(
        judge_items(f, &verdicts.clone().lazy(), gold)?,
        vec![
            count("judge_items"),
            count_if(col("judged"), "judge_judged"),
            count_if(col("judged").and(col("predicted").eq(col("gold"))), "judge_correct"),
            count_if(col("judged").and(col("predicted_raw").eq(col("gold"))), "judge_correct_raw"),
            count_if(col("predicted").eq(col("gold")).or(col("gold").eq(lit("neither")).and(col("judged").not())), "contradiction_correct"),
        ],
    ))
}

/// Per-episode dedup components on conversations' duplicate groups.
///
/// A *link* is a candidate dropped as a duplicate (exact, near or race) from
/// turn `turn_c`, pointing at a fact or candidate from another turn `turn_r`;
/// it is correct when one gold group holds both turns. A group's *expected*
/// duplicates are its turns that yielded a non-noise candidate, except the
/// earliest such turn; one is *found* when it has a correct link in that group.
fn dedup_components(f: &LazyFrame, gold: &GoldFrames) -> [LazyFrame; 3] {
    let dup_outcomes: Vec<&str> = EXACT_DUP_OUTCOMES.iter().chain(NEAR_DUP_OUTCOMES).copied().collect();
    let targets = f.clone().select([col("id").alias("related"), col("turn").alias("turn_r")]);
    let links = f.clone().filter(one_of("outcome", &dup_outcomes).and(col("related").is_not_null())).select([
        col("conversation"),
        col("episode"),
        col("turn").alias("turn_c"),
        col("related"),
    ]);
    let links = join(links, targets, &["related"], JoinType::Inner).filter(col("turn_c").neq(col("turn_r")));
    let links = distinct(links, &["conversation", "episode", "turn_c", "turn_r"]);
    let groups = gold.dup_groups.clone().lazy();
    let gc = groups.clone().select([col("conversation"), col("group"), col("turn").alias("turn_c")]);
    let gr = groups.clone().select([col("conversation"), col("group"), col("turn").alias("turn_r")]);
    let correct = join(
        join(links.clone(), gc, &["conversation", "turn_c"], JoinType::Inner),
        gr,
        &["conversation", "group", "turn_r"],
        JoinType::Inner,
    );
    let link_counts = links.group_by(keys(EP)).agg([count("dedup_links")]);
    let correct_counts =
        distinct(correct.clone(), &["conversation", "episode", "turn_c", "turn_r"]).group_by(keys(EP)).agg([count("dedup_correct")]);

    let cand_turns = distinct(f.clone().filter(col("outcome").neq(lit("noise_rejected"))), &["conversation", "turn"]);
    let eligible = join(
        join(groups, cand_turns, &["conversation", "turn"], JoinType::Inner),
        gold.turns.clone().lazy(),
        &["conversation", "turn"],
        JoinType::Inner,
    );
    let firsts = eligible.clone().group_by([col("conversation"), col("group")]).agg([col("turn_index").min().alias("first")]);
    let expected = join(eligible, firsts, &["conversation", "group"], JoinType::Inner).filter(col("turn_index").gt(col("first")));
    let found =
        distinct(correct.select([col("conversation"), col("group"), col("turn_c").alias("turn")]), &["conversation", "group", "turn"])
            .with_column(lit(true).alias("found"));
    let expected_counts = join(expected, found, &["conversation", "group", "turn"], JoinType::Left)
        .group_by(keys(EP))
        .agg([count("dedup_expected"), count_if(col("found").fill_null(lit(false)), "dedup_found")]);
    [link_counts, correct_counts, expected_counts]
}

/// One row per labelled contradiction pair (conversation, old_turn,
/// new_turn, gold) with the episode of its new turn and the pipeline's
/// verdict on it: over every judged pair between a fact from `old_turn` and a
/// candidate from `new_turn`, `old` if any is old, else `new` if any is new,
/// else `neither`; `not_judged` when none was judged. `predicted_raw` is the
/// same over the judge's own answers (before the guards).
fn judge_items(f: &LazyFrame, verdicts: &LazyFrame, gold: &GoldFrames) -> std::result::Result<LazyFrame, PolarsError> {
    let rank = |c: &str| when(col(c).eq(lit("old"))).then(lit(3i64)).when(col(c).eq(lit("new"))).then(lit(2i64)).otherwise(lit(1i64));
    let unrank = |c: &str| {
        when(col(c).eq(lit(3i64)))
            .then(lit("old"))
            .when(col(c).eq(lit(2i64)))
            .then(lit("new"))
            .when(col(c).eq(lit(1i64)))
            .then(lit("neither"))
            .otherwise(lit("not_judged"))
    };
    let live_turns = f.clone().select([col("id").alias("live_id"), col("turn").alias("old_turn")]);
    let judged = join(verdicts.clone(), live_turns, &["live_id"], JoinType::Inner)
        .select([
            col("conversation"),
            col("old_turn"),
            col("candidate_turn").alias("new_turn"),
            rank("verdict").alias("rank"),
            rank("judged").alias("rank_raw"),
        ])
        .group_by([col("conversation"), col("old_turn"), col("new_turn")])
        .agg([col("rank").max(), col("rank_raw").max()]);
    let items = gold.contradiction_items.clone().lazy();
    Ok(join(items, judged, &["conversation", "old_turn", "new_turn"], JoinType::Left).with_columns([
        col("rank").is_not_null().alias("judged"),
        unrank("rank").alias("predicted"),
        unrank("rank_raw").alias("predicted_raw"),
    ]))
}

fn judge_confusion(facts: &DataFrame, verdicts: &DataFrame, gold: &GoldFrames) -> Result<Value> {
    let items = judge_items(&facts.clone().lazy(), &verdicts.clone().lazy(), gold).ctx("judge items")?;
    let out = items.group_by([col("gold"), col("predicted")]).agg([count("n")]).collect().ctx("judge confusion")?;
    let g = string_counts(&out, "gold", "n").ctx("gold")?;
    let p = string_counts(&out, "predicted", "n").ctx("predicted")?;
    let cells = ["old", "new", "neither", "not_judged"];
    let mut matrix = serde_json::Map::new();
    for row in &cells[..3] {
        let mut r = serde_json::Map::new();
        for c in cells {
            r.insert(c.to_string(), json!(0));
        }
        matrix.insert(row.to_string(), Value::Object(r));
    }
    for ((g, n), (p, _)) in g.into_iter().zip(p) {
        if let Some(Value::Object(r)) = matrix.get_mut(&g) {
            r.insert(p, json!(n));
        }
    }
    Ok(Value::Object(matrix))
}

fn qa_extras(facts: &DataFrame, gold: &GoldFrames, metrics: &mut BTreeMap<String, Value>) -> std::result::Result<(), PolarsError> {
    let live_turns = distinct(facts.clone().lazy().filter(col("live")), &["conversation", "turn"]).with_column(lit(true).alias("covered"));
    let known = distinct(gold.turns.clone().lazy(), &["conversation", "turn"]);
    let qa = join(gold.qa.clone().lazy(), known, &["conversation", "turn"], JoinType::Inner);
    let covered = join(qa, live_turns, &["conversation", "turn"], JoinType::Left).with_column(col("covered").fill_null(lit(false)));
    // A breakdown object: summary.json has it, a sweep row (numbers only) does not.
    let by_cat = distinct(covered.clone(), &["conversation", "category", "turn", "covered"])
        .group_by([col("category")])
        .agg([count("n"), count_if(col("covered"), "covered")])
        .with_column(ratio(col("covered"), col("n"), 1.0).alias("coverage"))
        .sort(["category"], SortMultipleOptions::default())
        .collect()?;
    let cats = by_cat.column("category")?.str()?;
    let cov = by_cat.column("coverage")?.f64()?;
    let mut map = serde_json::Map::new();
    for (c, v) in cats.iter().zip(cov.iter()) {
        map.insert(c.unwrap_or("none").to_string(), round(v.unwrap_or(0.0)));
    }
    metrics.insert("qa_evidence_coverage_by_category".into(), Value::Object(map));
    let items = covered
        .group_by([col("conversation"), col("qa")])
        .agg([col("covered").cast(DataType::Int64).min().alias("all_covered")])
        .select([count("qa_items"), col("all_covered").sum().alias("answerable")])
        .collect()?;
    insert_qa_items(metrics, scalar_i64(&items, "qa_items")?, scalar_i64(&items, "answerable")?);
    Ok(())
}

// ---------------------------------------------------------------------------
// Content-level matching of stored facts to gold facts.

/// Dice coefficient of the two texts' token sets: 2·|A ∩ B| / (|A| + |B|),
/// in [0, 1]; 0 when both are empty.
pub fn lexical_similarity(a: &str, b: &str) -> f64 {
    dice(&TokenSet::new(a), &TokenSet::new(b))
}

/// A maximum one-to-one matching of left items to right items over the pairs
/// with `sim(l, r) >= threshold`: as many pairs as possible (augmenting
/// paths), each left item trying its candidates from most to least similar.
/// Returns, per left item, the matched right item and the similarity.
pub fn max_matching(n_left: usize, n_right: usize, threshold: f64, sim: impl Fn(usize, usize) -> f64) -> Vec<Option<(usize, f64)>> {
    let mut adj: Vec<Vec<(usize, f64)>> =
        (0..n_left).map(|l| (0..n_right).map(|r| (r, sim(l, r))).filter(|(_, s)| *s >= threshold).collect()).collect();
    for a in &mut adj {
        a.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    }
    let mut right_of: Vec<Option<usize>> = vec![None; n_right];
    for l in 0..n_left {
        let mut seen = vec![false; n_right];
        augment(l, &adj, &mut seen, &mut right_of);
    }
    let mut out = vec![None; n_left];
    for (r, l) in right_of.iter().enumerate() {
        if let Some(l) = l {
            let s = adj[*l].iter().find(|(x, _)| *x == r).map_or(0.0, |(_, s)| *s);
            out[*l] = Some((r, s));
        }
    }
    out
}

fn augment(l: usize, adj: &[Vec<(usize, f64)>], seen: &mut [bool], right_of: &mut [Option<usize>]) -> bool {
    for &(r, _) in &adj[l] {
        if seen[r] {
            continue;
        }
        seen[r] = true;
        let free = match right_of[r] {
            None => true,
            Some(other) => augment(other, adj, seen, right_of),
        };
        if free {
            right_of[r] = Some(l);
            return true;
        }
    }
    false
}

/// Stored fact id → (matched gold fact id, similarity).
#[derive(Debug, Default)]
struct ContentMatches {
    lexical: HashMap<String, (String, f64)>,
    cosine: HashMap<String, (String, f64)>,
}

/// Matches, per episode, the stored facts to the gold facts of that episode:
/// lexically, or by cosine of `embedder` when given.
fn match_content(
    episodes: &[EpisodeRecord],
    convs: &[&crate::types::Conversation],
    embedder: Option<&dyn Embedder>,
    known: Option<(&GoldTokens<'_>, &LexicalMemo)>,
) -> Result<ContentMatches> {
    let gold: HashMap<&str, &crate::types::Conversation> = convs.iter().map(|c| (c.id.as_str(), *c)).collect();
    // Stored facts by the episode each names (a dreaming claim is recorded
    // with the record of the conversation's last episode but names the
    // episode of its first citation), in first-seen order.
    let mut order: Vec<(&str, &str)> = Vec::new();
    let mut stored: HashMap<(&str, &str), Vec<&crate::pipeline::CandidateRecord>> = HashMap::new();
    for f in episodes.iter().flat_map(|e| &e.facts).filter(|f| f.stored) {
        let key = (f.conversation.as_str(), f.episode.as_str());
        stored.entry(key).or_insert_with(|| {
            order.push(key);
            Vec::new()
        });
        stored.entry(key).or_default().push(f);
    }
    let mut work = Vec::new();
    for key in order {
        let Some(c) = gold.get(key.0) else { continue };
        let g: Vec<_> = c.gold.facts.iter().filter(|g| g.episode == key.1).collect();
        let s = stored.remove(&key).unwrap_or_default();
        if !g.is_empty() && !s.is_empty() {
            work.push((c.id.as_str(), s, g));
        }
    }
    let mut out = ContentMatches::default();
    match embedder {
        None => {
            for (conv, s, g) in &work {
                let matching = || {
                    // Each text tokenised once, not once per pair (gold texts once per sweep).
                    let st: Vec<_> = s.iter().map(|f| TokenSet::new(&f.content)).collect();
                    let computed: Vec<TokenSet>;
                    let gt: Vec<&TokenSet> = match known {
                        Some((t, _)) if g.iter().all(|x| t.contains_key(&(*conv, x.id.as_str()))) => {
                            g.iter().map(|x| &t[&(*conv, x.id.as_str())]).collect()
                        }
                        _ => {
                            computed = g.iter().map(|x| TokenSet::new(&x.text)).collect();
                            computed.iter().collect()
                        }
                    };
                    max_matching(s.len(), g.len(), CONTENT_LEXICAL_THRESHOLD, |i, j| dice(&st[i], gt[j]))
                };
                let m = match known {
                    Some((_, memo)) => memo.get_or(LexicalMemo::key(conv, &g[0].episode, s), matching),
                    None => matching(),
                };
                for (i, x) in m.into_iter().enumerate() {
                    if let Some((j, sim)) = x {
                        out.lexical.insert(s[i].id.clone(), (g[j].id.clone(), sim));
                    }
                }
            }
        }
        Some(embedder) => {
            let texts: Vec<&str> =
                work.iter().flat_map(|(_, s, g)| s.iter().map(|f| f.content.as_str()).chain(g.iter().map(|g| g.text.as_str()))).collect();
            let vectors = if texts.is_empty() { Vec::new() } else { embedder.embed(&texts, "metrics: content matching")? };
            if vectors.len() != texts.len() {
                return Err(Error::Embed(format!("content matching: {} vectors for {} texts", vectors.len(), texts.len())));
            }
            let mut at = 0;
            for (_, s, g) in &work {
                let sv = &vectors[at..at + s.len()];
                let gv = &vectors[at + s.len()..at + s.len() + g.len()];
                at += s.len() + g.len();
                let m = max_matching(s.len(), g.len(), CONTENT_COSINE_THRESHOLD, |i, j| cosine(&sv[i], &gv[j]));
                for (i, x) in m.into_iter().enumerate() {
                    if let Some((j, sim)) = x {
                        out.cosine.insert(s[i].id.clone(), (g[j].id.clone(), sim));
                    }
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests;
