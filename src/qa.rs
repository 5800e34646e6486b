//! Retrieval evaluation after formation: every QA item's question is sent
//! through the store's hybrid search ([`Store::search`]) against the
//! conversation's final store (the formed memory) and against two baselines
//! searched the same way with the same embedder: every turn a document
//! (`raw_turns`) and every session a document (`raw_sessions`). The
//! retrievals are scored with LongMemEval's retrieval metrics. Definitions in
//! docs/metrics.md, "Retrieval (QA)".

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};

use polars::prelude::{Column, DataFrame};
use serde_json::{Value, json};

use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::pipeline::Config;
use crate::store::{Document, DocumentIndex, Joined, Retriever, SearchHit, SearchParams, Store};
use crate::types::{Conversation, Dataset};
use rustc_hash::FxHashMap;

pub mod budget;
pub mod interval;
pub use budget::{ANSWER_BUDGETS, BUDGETS, Budgeted, READ_KS, SESSION_KS};

/// LoCoMo's adversarial category (questions about something the
/// conversation never says, their evidence a near miss): reported apart
/// and out of the headline figures.
pub const ADVERSARIAL: &str = "5";

/// The figures the QA section gives with a clustered interval, and (but
/// `hit_holds_answer`, defined on different items per source) as a paired
/// difference formed memory − raw turns: (key, value of a row).
#[allow(clippy::type_complexity)]
pub const INTERVAL_KEYS: [(&str, fn(&QaRow) -> Option<f64>); 10] = [
    ("recall_any_at_100w", |r| Some(r.budgeted.recall_any_w[0])),
    ("recall_any_at_200w", |r| Some(r.budgeted.recall_any_w[1])),
    ("recall_any_at_500w", |r| Some(r.budgeted.recall_any_w[2])),
    ("recall_any_at_1000w", |r| Some(r.budgeted.recall_any_w[3])),
    ("recall_any_at_5", |r| Some(r.scored.recall_any[1])),
    ("session_recall_any_at_5", |r| Some(r.budgeted.session_recall_any[0])),
    ("answer_in_100w", |r| r.budgeted.answer_in_w[0]),
    ("answer_in_200w", |r| r.budgeted.answer_in_w[1]),
    ("answer_in_500w", |r| r.budgeted.answer_in_w[2]),
    ("hit_holds_answer", |r| r.budgeted.hit_holds_answer),
];

/// A session's date as every source's text carries it, `[8 May 2023]`
/// (day, English month, year: as LoCoMo's answers write dates); `None`
/// without a timestamp or when it does not start `YYYY-MM-DD`.
pub fn date_label(timestamp: Option<&str>) -> Option<String> {
    const MONTHS: [&str; 12] =
        ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
    let t = timestamp?;
    let (y, m, d) = (t.get(0..4)?, t.get(5..7)?, t.get(8..10)?);
    let (m, d): (usize, u32) = (m.parse().ok()?, d.parse().ok()?);
    let month = MONTHS.get(m.checked_sub(1)?)?;
    (y.chars().all(|c| c.is_ascii_digit()) && (1..=31).contains(&d)).then(|| format!("[{d} {month} {y}]"))
}

/// Whether `category` is LoCoMo's adversarial one, with or without its
/// name (`5`, `5 adversarial`: the importer names LoCoMo's categories).
pub fn is_adversarial(category: &str) -> bool {
    category.strip_prefix(ADVERSARIAL).is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
}

/// Whether a row counts in the headline figures: neither an abstention
/// item nor an adversarial one (each reported apart).
pub fn in_headline(r: &QaRow) -> bool {
    !r.abstention && !is_adversarial(&r.category)
}

/// The largest k reported (the rows keep this many retrieved ids); every
/// search goes as deep as the corpus, for the budgeted figures.
pub const MAX_K: usize = 10;
pub use crate::names::{EXTRA_SOURCES, ROW_ORDER, SOURCES, SYSTEM_SOURCE, qa_metric_names as metric_names};

/// One ranked retrieval scored against one item's evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub recall_any: [f64; 3],
    pub recall_all: [f64; 3],
    pub ndcg_any: [f64; 3],
    pub mrr: f64,
}

/// The ks of [`Scored`]'s arrays.
pub const KS: [usize; 3] = [1, 5, 10];

/// LongMemEval's DCG: `rel_1 + Σ_{i≥2} rel_i / log2(i)` over the first `k`.
pub fn dcg(relevances: &[bool], k: usize) -> f64 {
    relevances
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, &r)| {
            if !r {
                0.0
            } else if i == 0 {
                1.0
            } else {
                1.0 / ((i + 1) as f64).log2()
            }
        })
        .sum()
}

/// Scores a ranking: `retrieved[i]` is the set of source turns of the i-th
/// document retrieved, `evidence` the item's (known) evidence turns, and
/// `relevant_in_corpus` how many documents of the searched corpus hold an
/// evidence turn (the ideal ranking puts them all first).
pub fn score<T: AsRef<[K]>, K: Ord>(retrieved: &[T], evidence: &BTreeSet<K>, relevant_in_corpus: usize) -> Scored {
    let hit: Vec<bool> = retrieved.iter().map(|turns| turns.as_ref().iter().any(|t| evidence.contains(t))).collect();
    let ideal: Vec<bool> = (0..relevant_in_corpus.min(MAX_K)).map(|_| true).collect();
    let mut out = Scored { recall_any: [0.0; 3], recall_all: [0.0; 3], ndcg_any: [0.0; 3], mrr: 0.0 };
    for (j, &k) in KS.iter().enumerate() {
        out.recall_any[j] = f64::from(u8::from(hit.iter().take(k).any(|&h| h)));
        let covered: BTreeSet<&K> = retrieved.iter().take(k).flat_map(|r| r.as_ref().iter()).filter(|t| evidence.contains(*t)).collect();
        out.recall_all[j] = f64::from(u8::from(!evidence.is_empty() && covered.len() == evidence.len()));
        let ideal_dcg = dcg(&ideal, k);
        out.ndcg_any[j] = if ideal_dcg == 0.0 { 0.0 } else { dcg(&hit, k) / ideal_dcg };
    }
    out.mrr = hit.iter().take(MAX_K).position(|&h| h).map_or(0.0, |i| 1.0 / (i + 1) as f64);
    out
}

/// One row of `qa.csv` / `qa.parquet`: one item, one source.
#[derive(Debug, Clone, PartialEq)]
pub struct QaRow {
    pub conversation: String,
    pub item: usize,
    pub category: String,
    pub source: &'static str,
    pub question: String,
    /// The instant searched (`qa_as_of = "question"` and the item's
    /// `asked_at`); `None`: the final store.
    pub as_of: Option<String>,
    /// An abstention item (LongMemEval's `_abs`): reported apart.
    pub abstention: bool,
    pub evidence: Vec<String>,
    pub retrieved: Vec<String>,
    pub scores: Vec<f64>,
    pub scored: Scored,
    /// The figures at equal reading cost and with answer-bearing credit.
    pub budgeted: Budgeted,
}

/// What the evaluation produced.
#[derive(Debug, Clone, Default)]
pub struct QaResult {
    pub rows: Vec<QaRow>,
    /// Documents each source indexes, summed over conversations.
    pub indexed: BTreeMap<&'static str, usize>,
    /// Words of the documents each source indexes, summed over conversations.
    pub words_indexed: BTreeMap<&'static str, usize>,
    /// Evidence turn ids that name no turn of their conversation (one warning each).
    pub warnings: Vec<String>,
    /// Items with no known evidence turn, or an empty question: excluded
    /// from every figure.
    pub excluded: usize,
    /// Items whose question is empty or only whitespace (one warning each;
    /// excluded, and counted in `excluded` too).
    pub empty_questions: Vec<String>,
    /// `Some(n)` when the items' gold was audited (`--evidence audited`):
    /// `n` items the audit corrected; `None`: the evidence as the dataset gives it.
    pub audited: Option<usize>,
}

impl QaResult {
    /// `self`'s rows followed by `other`'s (another source's evaluation of
    /// the same items: the summary's means do not depend on row order); the
    /// warnings and exclusions stay `self`'s (the items are the same).
    pub fn with_sources_of(self, other: &QaResult) -> QaResult {
        self.taking_sources_of(QaResult {
            rows: other.rows.clone(),
            indexed: other.indexed.clone(),
            words_indexed: other.words_indexed.clone(),
            ..QaResult::default()
        })
    }

    fn taking_sources_of(mut self, other: QaResult) -> QaResult {
        self.rows.extend(other.rows);
        self.indexed.extend(other.indexed);
        self.words_indexed.extend(other.words_indexed);
        self
    }

    /// Adds another conversation's evaluation (its rows after these; the
    /// documents indexed summed per source).
    pub fn absorb(&mut self, part: QaResult) {
        self.rows.extend(part.rows);
        for (k, v) in part.indexed {
            *self.indexed.entry(k).or_default() += v;
        }
        for (k, v) in part.words_indexed {
            *self.words_indexed.entry(k).or_default() += v;
        }
        self.warnings.extend(part.warnings);
        self.excluded += part.excluded;
        self.empty_questions.extend(part.empty_questions);
        if let Some(n) = part.audited {
            self.audited = Some(self.audited.unwrap_or(0) + n);
        }
    }

    /// [`QaResult::with_sources_of`] taking `other`'s rows, then ordered as
    /// [`evaluate`] orders them: by conversation (in `dataset`'s order),
    /// item, and source (in [`ROW_ORDER`]).
    pub fn joined(self, other: QaResult, dataset: &Dataset) -> QaResult {
        let mut out = self.taking_sources_of(other);
        let conv_order: HashMap<&str, usize> = dataset.conversations.iter().enumerate().map(|(i, c)| (c.id.as_str(), i)).collect();
        let source_order = |s: &str| ROW_ORDER.iter().position(|x| *x == s).unwrap_or(ROW_ORDER.len());
        out.rows.sort_by_key(|r| (conv_order.get(r.conversation.as_str()).copied().unwrap_or(usize::MAX), r.item, source_order(r.source)));
        out
    }
}

/// A conversation's corpus for one source: each document's turns, and when
/// it was written (`None`: no timestamp) and ended (`Some("")`: ended
/// without a clock), for the documents live at an instant. Its documents
/// are in the order of its index's, so a hit's slot is its document's.
struct Corpus {
    /// Document id → its index in `docs` (for hits ranked elsewhere).
    slot_of: FxHashMap<String, usize>,
    docs: Vec<Doc>,
    /// Turn position → the documents holding it.
    holding: Vec<Vec<usize>>,
    /// The median words of a document (0 when there is none).
    median_words: usize,
    /// Documents a search now can return.
    searchable_now: usize,
}

struct Doc {
    /// What a reader of the document reads (its indexed text), with its turns.
    text: Arc<budget::Text>,
    created_at: Option<String>,
    ended_at: Option<String>,
    live_now: bool,
}

impl Corpus {
    fn new(docs: Vec<(String, Doc)>, turns: usize) -> Corpus {
        let mut c = Corpus {
            slot_of: FxHashMap::default(),
            docs: Vec::with_capacity(docs.len()),
            holding: vec![Vec::new(); turns],
            median_words: 0,
            searchable_now: 0,
        };
        for (id, d) in docs {
            let slot = c.docs.len();
            for &t in &d.text.turns {
                if let Some(v) = c.holding.get_mut(t as usize)
                    && v.last() != Some(&slot)
                {
                    v.push(slot);
                }
            }
            c.slot_of.insert(id, slot);
            c.docs.push(d);
        }
        let mut lens: Vec<usize> = c.docs.iter().map(|d| d.text.len()).collect();
        lens.sort_unstable();
        c.median_words = lens.get(lens.len() / 2).copied().unwrap_or(0);
        c.searchable_now = c.docs.iter().filter(|d| d.live_now).count();
        c
    }

    /// The turns of the document at `slot` (none for a document the corpus does not hold).
    fn turns_of(&self, slot: Option<usize>) -> &[u32] {
        slot.map_or(&[], |s| self.docs[s].text.turns.as_slice())
    }

    /// The texts of the documents `hits` names that the corpus holds, in order.
    fn texts_of(&self, hits: &[Found<'_>]) -> Vec<&budget::Text> {
        hits.iter().filter_map(|h| h.slot).map(|s| &*self.docs[s].text).collect()
    }

    /// Documents holding an evidence turn that a search (now, or at `as_of`)
    /// can return: the ideal ranking's length.
    fn relevant(&self, evidence: &BTreeSet<u32>, as_of: Option<&str>) -> usize {
        let mut slots: Vec<usize> = evidence.iter().filter_map(|&t| self.holding.get(t as usize)).flatten().copied().collect();
        slots.sort_unstable();
        slots.dedup();
        slots.into_iter().filter(|&s| searchable(&self.docs[s], as_of)).count()
    }

    /// Documents a search (now, or at `as_of`) can return.
    fn searchable(&self, as_of: Option<&str>) -> usize {
        match as_of {
            None => self.searchable_now,
            Some(_) => self.docs.iter().filter(|d| searchable(d, as_of)).count(),
        }
    }
}

/// A conversation's turns and episodes by position, so that the scoring
/// compares numbers, not ids: a turn id's position is the index, among all
/// the conversation's turns in order, of its last turn with that id, and
/// an episode id's is the index of its last episode with that id (ids and
/// positions name each other one to one, and a turn's session is its last
/// turn's episode, as a map from ids keeps them).
struct Positions<'a> {
    turn: FxHashMap<&'a str, u32>,
    episode: FxHashMap<&'a str, u32>,
    /// Each turn position's episode position.
    episode_of: Vec<u32>,
}

/// The position of an id that names no turn of the conversation: no
/// evidence turn has it, and it has no session.
const UNKNOWN_TURN: u32 = u32::MAX;

impl<'a> Positions<'a> {
    fn new(conv: &'a Conversation) -> Positions<'a> {
        let mut p = Positions { turn: FxHashMap::default(), episode: FxHashMap::default(), episode_of: Vec::new() };
        for (e, ep) in conv.episodes.iter().enumerate() {
            p.episode.insert(ep.id.as_str(), e as u32);
        }
        for ep in &conv.episodes {
            let e = p.episode[ep.id.as_str()];
            for t in &ep.turns {
                p.turn.insert(t.id.as_str(), p.episode_of.len() as u32);
                p.episode_of.push(e);
            }
        }
        p
    }

    /// How many turn positions there are (turns, counted with their repeats).
    fn turns_len(&self) -> usize {
        self.episode_of.len()
    }

    /// The position of turn `id` ([`UNKNOWN_TURN`] when no turn has it).
    fn turn(&self, id: &str) -> u32 {
        self.turn.get(id).copied().unwrap_or(UNKNOWN_TURN)
    }

    fn turns(&self, ids: &[String]) -> Vec<u32> {
        ids.iter().map(|t| self.turn(t)).collect()
    }

    /// The position of episode `id`.
    fn episode(&self, id: &str) -> u32 {
        self.episode.get(id).copied().unwrap_or(u32::MAX)
    }

    /// The sessions of `turns` (positions), in order of first appearance;
    /// an unknown turn has none.
    fn sessions(&self, turns: &[u32]) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        for &s in turns.iter().filter_map(|&t| self.episode_of.get(t as usize)) {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }
}

/// Whether a search now (`None`) or at `as_of` can return `d`.
fn searchable(d: &Doc, as_of: Option<&str>) -> bool {
    match as_of {
        None => d.live_now,
        Some(t) => d.created_at.as_deref().is_some_and(|c| c <= t) && d.ended_at.as_deref().is_none_or(|e| !e.is_empty() && e > t),
    }
}

/// Evaluates every QA item of `dataset` against `store` (the run's store)
/// and the two baselines. `embedder` is the run's (its cache records or
/// replays the questions', turns' and sessions' vectors).
pub fn evaluate(dataset: &Dataset, store: &Store, embedder: &dyn Embedder, cfg: &Config) -> Result<QaResult> {
    evaluate_sources(dataset, Some(store), embedder, cfg, true)
}

/// [`evaluate`] over the formed memory (when `store` is given) and the
/// baselines (when `baselines`): a sweep evaluates the baselines once per
/// search configuration and the formed memory at every point. The rows come
/// in dataset order, each item's sources in [`ROW_ORDER`].
pub fn evaluate_sources(
    dataset: &Dataset,
    store: Option<&Store>,
    embedder: &dyn Embedder,
    cfg: &Config,
    baselines: bool,
) -> Result<QaResult> {
    let params = SearchParams::with_top_k(cfg, MAX_K);
    let at_question = cfg.qa_as_of == "question";
    let facts = match store {
        Some(s) => s.facts()?,
        None => Vec::new(),
    };
    let convs: Vec<&Conversation> = dataset.conversations.iter().filter(|c| !c.gold.qa.is_empty()).collect();
    // Conversations in parallel (each baseline is an index of its own), merged in dataset order.
    let parts: Vec<Result<QaResult>> = convs
        .par_iter()
        .map(|conv| {
            let shared = Shared::new(baselines);
            evaluate_conversation(conv, &facts, store, embedder, (&params, retriever(cfg)), at_question, baselines, &shared)
        })
        .collect();
    let mut out = QaResult::default();
    for part in parts {
        out.absorb(part?);
    }
    Ok(out)
}

/// [`evaluate_sources`]' formed-memory rows of one conversation, as soon as
/// its formation is done (its facts are final; the search's statistics are
/// the conversation's own), while other conversations still form. `shared`
/// is the conversation's, the same for [`evaluate_baselines`].
pub fn evaluate_formed(conv: &Conversation, store: &Store, embedder: &dyn Embedder, cfg: &Config, shared: &Shared) -> Result<QaResult> {
    if conv.gold.qa.is_empty() {
        return Ok(QaResult::default());
    }
    let params = SearchParams::with_top_k(cfg, MAX_K);
    let facts = store.facts_of(&conv.id)?;
    evaluate_conversation(conv, &facts, Some(store), embedder, (&params, retriever(cfg)), cfg.qa_as_of == "question", false, shared)
}

/// What one conversation's evaluations share, made once by whichever needs
/// it first (a run evaluates a conversation's formed memory and its
/// baselines in two tasks): the questions' vectors, and every turn as a
/// document with its vector (the raw turns', the selected turns' among
/// them: the same text embedded once) and the raw turns' index (the
/// selected turns' and the sessions' indexes take their tokens from it).
/// Each is made outside the lock, so a task waiting on another never
/// holds it; were both to make one at once, the first kept is used (the
/// embedder gives the same vectors for the same texts).
pub struct Shared {
    questions: Mutex<Option<Arc<Vec<Vec<f32>>>>>,
    turns: Mutex<Option<Arc<Turns>>>,
    /// Whether the conversation's baselines are evaluated too: else the
    /// selected turns are made and embedded alone (a sweep point's formed
    /// memory), not every turn.
    with_baselines: bool,
}

/// Every turn of a conversation as a document, and its vector (by index),
/// and the raw turns' index and corpus of them (the sessions and the
/// selected turns take their tokens from it).
struct Turns {
    docs: Vec<RawDoc>,
    vectors: Vec<Vec<f32>>,
    index: DocumentIndex,
    corpus: Corpus,
}

impl Turns {
    /// Each document with its vector (none when the embedder gave none).
    fn each(&self) -> impl Iterator<Item = (&RawDoc, &[f32])> {
        self.docs.iter().enumerate().map(|(i, d)| (d, self.vectors.get(i).map_or(&[][..], Vec::as_slice)))
    }
}

impl Shared {
    /// Nothing made yet; `with_baselines`: the baselines will be evaluated too.
    pub fn new(with_baselines: bool) -> Shared {
        Shared { questions: Mutex::default(), turns: Mutex::default(), with_baselines }
    }

    fn questions(&self, conv: &Conversation, embedder: &dyn Embedder) -> Result<Arc<Vec<Vec<f32>>>> {
        made_once(&self.questions, || {
            let questions: Vec<&str> = conv.gold.qa.iter().map(|q| q.question.as_str()).collect();
            embedder.embed(&questions, &format!("{}/qa", conv.id))
        })
    }

    fn turns(&self, conv: &Conversation, embedder: &dyn Embedder, pos: &Positions<'_>) -> Result<Arc<Turns>> {
        made_once(&self.turns, || {
            let docs = turn_docs(conv, pos, |_| true);
            let vectors = embed_docs(conv, embedder, &docs, "raw_turns")?;
            let vector = |i: usize| vectors.get(i).map_or(&[][..], Vec::as_slice);
            let (index, corpus) = build_index(docs.iter().enumerate().map(|(i, d)| (d, vector(i))), pos, None)?;
            Ok(Turns { docs, vectors, index, corpus })
        })
    }
}

/// `slot`'s value, made by `make` (outside the lock) when there is none yet.
fn made_once<T>(slot: &Mutex<Option<Arc<T>>>, make: impl FnOnce() -> Result<T>) -> Result<Arc<T>> {
    let lock = || slot.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(v) = lock().as_ref() {
        return Ok(Arc::clone(v));
    }
    let made = Arc::new(make()?);
    Ok(Arc::clone(lock().get_or_insert(made)))
}

/// [`evaluate_sources`]' baseline rows (raw turns, raw sessions) of one
/// conversation: a run evaluates each conversation's once formation leaves
/// a core idle.
pub fn evaluate_baselines(conv: &Conversation, embedder: &dyn Embedder, cfg: &Config, shared: &Shared) -> Result<QaResult> {
    if conv.gold.qa.is_empty() {
        return Ok(QaResult::default());
    }
    let params = SearchParams::with_top_k(cfg, MAX_K);
    evaluate_conversation(conv, &[], None, embedder, (&params, retriever(cfg)), cfg.qa_as_of == "question", true, shared)
}

use rayon::prelude::{IntoParallelRefIterator, ParallelIterator};

/// The config's `qa_retriever` (checked when the config loads).
fn retriever(cfg: &Config) -> Retriever {
    Retriever::parse(&cfg.qa_retriever).unwrap_or_default()
}

#[allow(clippy::too_many_arguments)]
fn evaluate_conversation(
    conv: &Conversation,
    facts: &[crate::store::StoredFact],
    store: Option<&Store>,
    embedder: &dyn Embedder,
    (params, retriever): (&SearchParams, Retriever),
    at_question: bool,
    with_baselines: bool,
    shared: &Shared,
) -> Result<QaResult> {
    let mut out = QaResult::default();
    let pos = Positions::new(conv);
    let date_of: HashMap<&str, String> =
        conv.episodes.iter().filter_map(|e| Some((e.id.as_str(), date_label(e.timestamp.as_deref())?))).collect();
    let mine: Vec<&crate::store::StoredFact> = facts.iter().filter(|f| f.conversation_id == conv.id).collect();
    // Each fact's text with the date of the session of its first source
    // turn in front, as the baselines' texts carry theirs: searched and read.
    let dated: Vec<(Vec<String>, Vec<u32>, String)> = mine
        .iter()
        .map(|f| {
            let turns = serde_json::from_str::<Vec<String>>(&f.source_turns).unwrap_or_default();
            let sessions = pos.sessions(&pos.turns(&turns));
            let text = match sessions.first().and_then(|&s| date_of.get(conv.episodes[s as usize].id.as_str())) {
                Some(date) => format!("{date} {}", f.content),
                None => f.content.clone(),
            };
            (turns, sessions, text)
        })
        .collect();
    // Superseded without a clock: ended (as the search's live-at rule).
    let ended = |f: &crate::store::StoredFact| f.invalid_at.clone().or_else(|| f.superseded_by.as_ref().map(|_| String::new()));
    let formed_index = match store {
        Some(s) => {
            let vectors = s.fact_vectors(&conv.id)?;
            let ends: Vec<Option<String>> = mine.iter().map(|f| ended(f)).collect();
            let documents: Vec<Document<'_>> = mine
                .iter()
                .zip(&dated)
                .zip(&ends)
                .map(|((f, (turns, _, text)), end)| Document {
                    id: &f.id,
                    episode: &f.source_episode,
                    text,
                    turns,
                    vector: vectors.get(&f.id).map_or(&[][..], Vec::as_slice),
                    written_at: f.created_at.as_deref(),
                    ended_at: end.as_deref(),
                })
                .collect();
            Some(DocumentIndex::build(&documents)?)
        }
        None => None,
    };
    // The turns that yielded a fact (any fact of the conversation), for the ablation.
    let yielded: BTreeSet<String> = dated.iter().flat_map(|(turns, _, _)| turns.iter().cloned()).collect();
    let formed = Corpus::new(
        mine.iter()
            .zip(dated)
            .map(|(f, (turns, sessions, text))| {
                let doc = Doc {
                    text: Arc::new(budget::Text::whole(&text, pos.turns(&turns), sessions)),
                    created_at: f.created_at.clone(),
                    ended_at: ended(f),
                    live_now: f.invalid_at.is_none() && f.superseded_by.is_none(),
                };
                (f.id.clone(), doc)
            })
            .collect(),
        pos.turns_len(),
    );
    let raw = if with_baselines { Some(baselines(conv, embedder, shared, &pos)?) } else { None };
    // The ablation: the raw turns that yielded a fact (any fact of the
    // conversation), searched as the raw turns are.
    let selected = match store {
        Some(_) => {
            if shared.with_baselines {
                let turns = shared.turns(conv, embedder, &pos)?;
                let kept: Vec<usize> = (0..turns.docs.len()).filter(|&i| yielded.contains(&turns.docs[i].id)).collect();
                let joined: Vec<Joined<'_>> = kept.iter().map(|i| Joined { header: "", lines: std::slice::from_ref(i) }).collect();
                let docs = turns.each().enumerate().filter(|(i, _)| kept.binary_search(i).is_ok()).map(|(_, d)| d);
                Some(build_index(docs, &pos, Some((&turns.index, &joined)))?)
            } else {
                Some(index(conv, embedder, turn_docs(conv, &pos, |t| yielded.contains(t)), "selected_turns", &pos)?)
            }
        }
        None => None,
    };
    // The ceiling: the dataset's gold facts as the memory, each with its
    // evidence turns and its episode's date.
    let gold = if with_baselines && !conv.gold.facts.is_empty() {
        Some(index(conv, embedder, gold_docs(conv, &pos), "gold_facts", &pos)?)
    } else {
        None
    };
    let mut sources: Vec<(&'static str, Searched<'_>, &Corpus)> = Vec::new();
    let mut count = |name: &'static str, c: &Corpus| {
        out.indexed.insert(name, c.docs.iter().filter(|d| d.live_now).count());
        out.words_indexed.insert(name, c.docs.iter().filter(|d| d.live_now).map(|d| d.text.len()).sum());
    };
    if let Some(index) = &formed_index {
        count("formed", &formed);
        sources.push(("formed", Searched::Documents(index), &formed));
    }
    if let Some((turns, sessions)) = &raw {
        count("raw_turns", &turns.corpus);
        count("raw_sessions", &sessions.1);
        sources.push(("raw_turns", Searched::Documents(&turns.index), &turns.corpus));
        sources.push(("raw_sessions", Searched::Documents(&sessions.0), &sessions.1));
    }
    // The external system's own search: its recorded hits, read over the
    // same corpus (the facts its memories became).
    let system: HashMap<usize, Vec<SearchHit>> = match store {
        Some(s) => {
            let mut by_item: HashMap<usize, Vec<SearchHit>> = HashMap::new();
            for h in s.system_search_of(&conv.id)? {
                let e = by_item.entry(h.item).or_default();
                if let Some(fact_id) = h.fact_id {
                    e.push(SearchHit { fact_id, score: h.score.unwrap_or(0.0), bm25: None, vector: None });
                }
            }
            by_item
        }
        None => HashMap::new(),
    };
    if !system.is_empty() {
        count(SYSTEM_SOURCE, &formed);
        sources.push((SYSTEM_SOURCE, Searched::Ranked(&system), &formed));
    }
    if let Some((index, corpus)) = &selected {
        count("selected_turns", corpus);
        sources.push(("selected_turns", Searched::Documents(index), corpus));
    }
    if let Some((index, corpus)) = &gold {
        count("gold_facts", corpus);
        sources.push(("gold_facts", Searched::Documents(index), corpus));
    }
    if conv.gold.qa.iter().any(|q| q.audit.is_some()) {
        out.audited = Some(conv.gold.qa.iter().filter(|q| q.audit.as_deref().is_some_and(|a| !a.is_empty())).count());
    }
    let vectors = shared.questions(conv, embedder)?;
    let mut scored_items = Vec::new();
    for (i, item) in conv.gold.qa.iter().enumerate() {
        // Nothing to search with: a warning, and the item is not scored as a miss.
        if item.question.trim().is_empty() {
            out.empty_questions.push(format!("{}: QA item {i}: the question is empty; the item is excluded", conv.id));
            out.excluded += 1;
            continue;
        }
        let mut evidence = BTreeSet::new();
        for t in item.evidence.iter().chain(&item.unknown_evidence) {
            if pos.turn.contains_key(t.as_str()) {
                evidence.insert(t.clone());
            } else {
                out.warnings.push(format!("{}: QA item {i}: evidence turn {t:?} is not a turn of the conversation", conv.id));
            }
        }
        if evidence.is_empty() {
            out.excluded += 1;
            continue;
        }
        // The evidence by position (every one a turn's), and as the rows write it.
        let turns: Vec<u32> = evidence.iter().map(|t| pos.turn(t)).collect();
        let evidence_sessions: BTreeSet<u32> = pos.sessions(&turns).into_iter().collect();
        let evidence_turns: BTreeSet<u32> = turns.into_iter().collect();
        let listed: Vec<String> = evidence.into_iter().collect();
        let answer = item.answer.as_deref().map(budget::tokens).unwrap_or_default();
        scored_items.push((i, item, (evidence_turns, listed), evidence_sessions, answer));
    }
    // The items in parallel (the searches only read), their rows kept in item order.
    let rows: Vec<Result<Vec<QaRow>>> = scored_items
        .par_iter()
        .map(|(i, item, (evidence, listed), evidence_sessions, answer)| {
            let q = vectors.get(*i).map_or(&[][..], Vec::as_slice);
            let category = item.category_name();
            let as_of = if at_question { item.asked_at.clone() } else { None };
            let params = SearchParams { as_of: as_of.clone(), ..params.clone() };
            let mut rows = Vec::with_capacity(sources.len());
            for &(source, st, corpus) in &sources {
                // As deep as the largest budget needs: first twice the documents
                // of median length it holds, then four times deeper while the
                // words returned fall short and the corpus holds more.
                let n = corpus.docs.len().max(MAX_K);
                let need = BUDGETS[BUDGETS.len() - 1];
                let mut deep = (2 * need).div_ceil(corpus.median_words.max(1)).clamp(MAX_K, n);
                let (mut hits, ranked) = loop {
                    let leg_k = deep.saturating_mul(params.leg_k / MAX_K.max(1));
                    let hits =
                        st.search(retriever, *i, &item.question, q, &SearchParams { top_k: deep, leg_k, ..params.clone() }, corpus)?;
                    let ranked = corpus.texts_of(&hits);
                    let words: usize = ranked.iter().map(|t| t.len()).sum();
                    if words >= need || hits.len() < deep || deep >= n {
                        break (hits, ranked);
                    }
                    deep = deep.saturating_mul(4).min(n);
                };
                let relevant = corpus.relevant(evidence, as_of.as_deref());
                let budgeted = budget::score_budgeted(
                    &ranked,
                    &budget::Item { evidence, evidence_sessions, answer, searchable: corpus.searchable(as_of.as_deref()), relevant },
                );
                hits.truncate(MAX_K);
                let retrieved: Vec<&[u32]> = hits.iter().map(|h| corpus.turns_of(h.slot)).collect();
                rows.push(QaRow {
                    conversation: conv.id.clone(),
                    item: *i,
                    category: category.clone(),
                    source,
                    question: item.question.clone(),
                    as_of: as_of.clone(),
                    abstention: item.abstention,
                    evidence: listed.clone(),
                    retrieved: hits.iter().map(|h| h.id.to_string()).collect(),
                    scores: hits.iter().map(|h| h.score).collect(),
                    scored: score(&retrieved, evidence, relevant),
                    budgeted,
                });
            }
            Ok(rows)
        })
        .collect();
    for r in rows {
        out.rows.extend(r?);
    }
    Ok(out)
}

/// What a source is searched in: its documents indexed in memory (the
/// formed memory's live facts, a baseline's turns or sessions, each with
/// its session's date in front), all searched the same way.
#[derive(Clone, Copy)]
enum Searched<'a> {
    Documents(&'a DocumentIndex),
    /// Hits ranked elsewhere (an external system's own search), per item.
    Ranked(&'a HashMap<usize, Vec<SearchHit>>),
}

/// A document a source's search found: its slot in the source's corpus
/// (`None`: a document the corpus does not hold), its id and score.
struct Found<'a> {
    slot: Option<usize>,
    id: &'a str,
    score: f64,
}

impl<'a> Searched<'a> {
    fn search(
        &self,
        retriever: Retriever,
        item: usize,
        text: &str,
        vector: &[f32],
        params: &SearchParams,
        corpus: &Corpus,
    ) -> Result<Vec<Found<'a>>> {
        match *self {
            Searched::Documents(d) => Ok(d
                .search_slots(retriever, text, vector, params)?
                .into_iter()
                .map(|h| Found { slot: Some(h.id), id: d.id(h.id), score: h.score })
                .collect()),
            Searched::Ranked(r) => Ok(r
                .get(&item)
                .map(|h| {
                    h.iter()
                        .take(params.top_k)
                        .map(|h| Found { slot: corpus.slot_of.get(h.fact_id.as_str()).copied(), id: h.fact_id.as_str(), score: h.score })
                        .collect()
                })
                .unwrap_or_default()),
        }
    }
}

/// A baseline document: its id, episode, text as searched (its session's
/// date in front), text as embedded (without the date, as a fact's vector
/// is of its content), turns, written at, and its text as read.
struct RawDoc {
    id: String,
    episode: String,
    searched: String,
    embedded: String,
    turns: Vec<String>,
    written_at: Option<String>,
    read: Arc<budget::Text>,
}

/// Every turn of `conv` that `keep` keeps (by its id) a document, its session's date in front.
fn turn_docs(conv: &Conversation, pos: &Positions<'_>, keep: impl Fn(&str) -> bool + Copy) -> Vec<RawDoc> {
    conv.episodes
        .iter()
        .flat_map(|e| {
            let session = pos.episode(&e.id);
            e.turns.iter().filter(move |t| keep(&t.id)).map(move |t| {
                let text = format!("{}: {}", t.speaker, t.text);
                let date = date_label(e.timestamp.as_deref());
                let mut parts: Vec<(Option<u32>, &str)> = date.iter().map(|d| (None, d.as_str())).collect();
                parts.push((Some(pos.turn(&t.id)), text.as_str()));
                let read = Arc::new(budget::Text::of_parts(&parts, vec![session]));
                let searched = match &date {
                    Some(d) => format!("{d} {text}"),
                    None => text.clone(),
                };
                RawDoc {
                    id: t.id.clone(),
                    episode: e.id.clone(),
                    searched,
                    embedded: text,
                    turns: vec![t.id.clone()],
                    written_at: e.timestamp.clone(),
                    read,
                }
            })
        })
        .collect()
}

/// Every gold fact of `conv` a document (its evidence turns its turns), its
/// episode's date in front.
fn gold_docs(conv: &Conversation, pos: &Positions<'_>) -> Vec<RawDoc> {
    let episode: HashMap<&str, &crate::types::Episode> = conv.episodes.iter().map(|e| (e.id.as_str(), e)).collect();
    conv.gold
        .facts
        .iter()
        .map(|f| {
            let timestamp = episode.get(f.episode.as_str()).and_then(|e| e.timestamp.clone());
            let searched = match date_label(timestamp.as_deref()) {
                Some(d) => format!("{d} {}", f.text),
                None => f.text.clone(),
            };
            let turns = pos.turns(&f.evidence);
            let sessions = pos.sessions(&turns);
            RawDoc {
                id: f.id.clone(),
                episode: f.episode.clone(),
                read: Arc::new(budget::Text::whole(&searched, turns, sessions)),
                searched,
                embedded: f.text.clone(),
                turns: f.evidence.clone(),
                written_at: timestamp,
            }
        })
        .collect()
}

/// The two baselines' in-memory indexes: every turn a document (the
/// conversation's shared turns), every session a document (its tokens
/// taken from its turns').
fn baselines(
    conv: &Conversation,
    embedder: &dyn Embedder,
    shared: &Shared,
    pos: &Positions<'_>,
) -> Result<(Arc<Turns>, (DocumentIndex, Corpus))> {
    let dates: Vec<Option<String>> = conv.episodes.iter().map(|e| date_label(e.timestamp.as_deref())).collect();
    let lines: Vec<Vec<String>> =
        conv.episodes.iter().map(|e| e.turns.iter().map(|t| format!("{}: {}", t.speaker, t.text)).collect()).collect();
    let parts: Vec<Vec<(Option<u32>, &str)>> = conv
        .episodes
        .iter()
        .zip(&dates)
        .zip(&lines)
        .map(|((e, date), lines)| {
            let mut parts: Vec<(Option<u32>, &str)> = date.iter().map(|d| (None, d.as_str())).collect();
            parts.extend(e.turns.iter().zip(lines).map(|(t, l)| (Some(pos.turn(&t.id)), l.as_str())));
            parts
        })
        .collect();
    // Each session's read text is made below, from its turns'.
    let mut session_docs: Vec<RawDoc> = conv
        .episodes
        .iter()
        .zip(&lines)
        .zip(&parts)
        .map(|((e, lines), parts)| RawDoc {
            id: e.id.clone(),
            episode: e.id.clone(),
            searched: parts.iter().map(|p| p.1).collect::<Vec<_>>().join("\n"),
            embedded: lines.join("\n"),
            turns: e.turns.iter().map(|t| t.id.clone()).collect(),
            written_at: e.timestamp.clone(),
            read: Arc::default(),
        })
        .collect();
    let (turns, vectors) = rayon::join(|| shared.turns(conv, embedder, pos), || embed_docs(conv, embedder, &session_docs, "raw_sessions"));
    let (turns, vectors) = (turns?, vectors?);
    // Each session's turns are the next of the turns' documents (every
    // turn a document, in the episodes' order).
    let mut first = 0;
    let slots: Vec<Vec<usize>> = conv
        .episodes
        .iter()
        .map(|e| {
            first += e.turns.len();
            (first - e.turns.len()..first).collect()
        })
        .collect();
    for (((d, e), (date, slots)), parts) in session_docs.iter_mut().zip(&conv.episodes).zip(dates.iter().zip(&slots)).zip(&parts) {
        let texts: Option<Vec<&budget::Text>> = slots.iter().map(|&s| turns.docs.get(s).map(|t| &*t.read)).collect();
        let session = vec![pos.episode(&e.id)];
        let joined = texts.and_then(|texts| budget::Text::joined(date.as_deref().unwrap_or(""), &texts, session.clone()));
        d.read = Arc::new(joined.unwrap_or_else(|| budget::Text::of_parts(parts, session)));
    }
    let joined: Vec<Joined<'_>> =
        dates.iter().zip(&slots).map(|(date, lines)| Joined { header: date.as_deref().unwrap_or(""), lines }).collect();
    let vector = |i: usize| vectors.get(i).map_or(&[][..], Vec::as_slice);
    let sessions = build_index(session_docs.iter().enumerate().map(|(i, d)| (d, vector(i))), pos, Some((&turns.index, &joined)))?;
    Ok((turns, sessions))
}

/// The vectors of `docs`' embedded texts (none to embed: none).
fn embed_docs(conv: &Conversation, embedder: &dyn Embedder, docs: &[RawDoc], what: &str) -> Result<Vec<Vec<f32>>> {
    let texts: Vec<&str> = docs.iter().map(|d| d.embedded.as_str()).collect();
    if texts.is_empty() { Ok(Vec::new()) } else { embedder.embed(&texts, &format!("{}/{what}", conv.id)) }
}

fn index(
    conv: &Conversation,
    embedder: &dyn Embedder,
    docs: Vec<RawDoc>,
    what: &str,
    pos: &Positions<'_>,
) -> Result<(DocumentIndex, Corpus)> {
    let vectors = embed_docs(conv, embedder, &docs, what)?;
    // A document the embedder gave no vector (it gives one each) has none.
    let vector = |i: usize| vectors.get(i).map_or(&[][..], Vec::as_slice);
    build_index(docs.iter().enumerate().map(|(i, d)| (d, vector(i))), pos, None)
}

/// The in-memory index and the corpus of `docs`, each with its vector;
/// with `joined`, each document made of the given index's documents
/// ([`DocumentIndex::build_joined`]).
fn build_index<'a>(
    docs: impl Iterator<Item = (&'a RawDoc, &'a [f32])>,
    pos: &Positions<'_>,
    joined: Option<(&DocumentIndex, &[Joined<'_>])>,
) -> Result<(DocumentIndex, Corpus)> {
    let docs: Vec<(&RawDoc, &[f32])> = docs.collect();
    let documents: Vec<Document<'_>> = docs
        .iter()
        .map(|&(d, vector)| Document {
            id: &d.id,
            episode: &d.episode,
            text: &d.searched,
            turns: &d.turns,
            vector,
            written_at: d.written_at.as_deref(),
            ended_at: None,
        })
        .collect();
    let index = match joined {
        Some((base, joined)) => DocumentIndex::build_joined(base, &documents, joined)?,
        None => DocumentIndex::build(&documents)?,
    };
    let corpus = Corpus::new(
        docs.iter()
            .map(|(d, _)| {
                let doc = Doc { text: Arc::clone(&d.read), created_at: d.written_at.clone(), ended_at: None, live_now: true };
                (d.id.clone(), doc)
            })
            .collect(),
        pos.turns_len(),
    );
    Ok((index, corpus))
}

/// The mean of `f` over `rows`, or `None` when there are none.
fn mean(rows: &[&QaRow], f: impl Fn(&Scored) -> f64) -> Option<f64> {
    (!rows.is_empty()).then(|| rows.iter().map(|r| f(&r.scored)).sum::<f64>() / rows.len() as f64)
}

/// The mean of `f` over the rows where it is defined, or `None` when it is nowhere.
fn mean_of(rows: &[&QaRow], f: impl Fn(&Budgeted) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = rows.iter().filter_map(|r| f(&r.budgeted)).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The figures of one group of rows, keys prefixed with `pre`.
fn figures(m: &mut BTreeMap<String, Value>, rows: &[&QaRow], pre: &str) {
    for (j, k) in KS.iter().enumerate() {
        m.insert(format!("{pre}recall_any_at_{k}"), json!(mean(rows, |s| s.recall_any[j])));
        if *k > 1 {
            m.insert(format!("{pre}recall_all_at_{k}"), json!(mean(rows, |s| s.recall_all[j])));
            m.insert(format!("{pre}ndcg_any_at_{k}"), json!(mean(rows, |s| s.ndcg_any[j])));
        }
    }
    m.insert(format!("{pre}mrr"), json!(mean(rows, |s| s.mrr)));
    m.insert(format!("{pre}items_scored"), json!(rows.len()));
    for (j, b) in BUDGETS.iter().enumerate() {
        m.insert(format!("{pre}recall_any_at_{b}w"), json!(mean_of(rows, |x| Some(x.recall_any_w[j]))));
    }
    for (j, b) in ANSWER_BUDGETS.iter().enumerate() {
        m.insert(format!("{pre}answer_in_{b}w"), json!(mean_of(rows, |x| x.answer_in_w[j])));
    }
    m.insert(format!("{pre}hit_holds_answer"), json!(mean_of(rows, |x| x.hit_holds_answer)));
    for (j, k) in SESSION_KS.iter().enumerate() {
        m.insert(format!("{pre}session_recall_any_at_{k}"), json!(mean_of(rows, |x| Some(x.session_recall_any[j]))));
    }
    for (j, k) in KS.iter().enumerate() {
        m.insert(format!("{pre}chance_recall_any_at_{k}"), json!(mean_of(rows, |x| Some(x.chance_recall_any[j]))));
    }
    for (j, k) in READ_KS.iter().enumerate() {
        m.insert(format!("{pre}words_read_at_{k}"), json!(mean_of(rows, |x| Some(x.words_read[j]))));
    }
}

/// The summary metrics: per source (prefix `qa_` for the formed memory,
/// `qa_raw_turns_` and `qa_raw_sessions_` for the baselines) the recall,
/// nDCG and MRR figures, the items scored, the documents indexed, and per
/// category the same; plus the evaluation's warnings and exclusions.
pub fn summary_metrics(r: &QaResult) -> BTreeMap<String, Value> {
    let mut m = BTreeMap::new();
    let mut intervals = serde_json::Map::new();
    let present = |s: &&str| r.rows.iter().any(|row| row.source == *s);
    let extra: Vec<&str> = [SYSTEM_SOURCE].into_iter().chain(EXTRA_SOURCES).filter(present).collect();
    for source in SOURCES.into_iter().chain(extra) {
        let prefix = if source == "formed" { "qa_".to_string() } else { format!("qa_{source}_") };
        let rows: Vec<&QaRow> = r.rows.iter().filter(|row| row.source == source && in_headline(row)).collect();
        figures(&mut m, &rows, &prefix);
        for (key, get) in INTERVAL_KEYS {
            let c = interval::clusters(rows.iter().filter_map(|row| get(row).map(|v| (row.conversation.as_str(), v))));
            if let Some((lo, hi)) = interval::interval(&c, interval::RESAMPLES, interval::SEED) {
                intervals.insert(format!("{prefix}{key}"), json!([round6(lo), round6(hi)]));
            }
        }
        let (misses, without, median) =
            budget::attribution(&rows.iter().map(|row| (&row.budgeted, row.scored.recall_any[1])).collect::<Vec<_>>());
        m.insert(
            format!("{prefix}attribution"),
            json!({"misses_at_5": misses, "share_without_evidence_document": without, "median_rank_of_evidence_document": median}),
        );
        let adversarial: Vec<&QaRow> = r.rows.iter().filter(|row| row.source == source && !row.abstention && !in_headline(row)).collect();
        if !adversarial.is_empty() {
            let mut am = BTreeMap::new();
            figures(&mut am, &adversarial, "");
            m.insert(format!("{prefix}adversarial"), json!(am));
        }
        let abstention: Vec<&QaRow> = r.rows.iter().filter(|row| row.source == source && row.abstention).collect();
        if !abstention.is_empty() {
            let mut am = BTreeMap::new();
            figures(&mut am, &abstention, "");
            m.insert(format!("{prefix}abstention"), json!(am));
        }
        m.insert(format!("{prefix}items_indexed"), json!(r.indexed.get(source).copied().unwrap_or(0)));
        m.insert(format!("{prefix}words_indexed"), json!(r.words_indexed.get(source).copied().unwrap_or(0)));
        // Per category, the adversarial one among them.
        let answerable: Vec<&QaRow> = r.rows.iter().filter(|row| row.source == source && !row.abstention).collect();
        let categories: BTreeSet<&str> = answerable.iter().map(|row| row.category.as_str()).collect();
        let mut by_cat = serde_json::Map::new();
        for c in categories {
            let mut cm = BTreeMap::new();
            let in_c: Vec<&QaRow> = answerable.iter().copied().filter(|row| row.category == c).collect();
            figures(&mut cm, &in_c, "");
            by_cat.insert(c.to_string(), json!(cm));
        }
        m.insert(format!("{prefix}by_category"), Value::Object(by_cat));
    }
    m.insert("qa_evidence_unknown_turns".into(), json!(r.warnings.len()));
    m.insert("qa_items_excluded".into(), json!(r.excluded));
    m.insert("qa_questions_empty".into(), json!(r.empty_questions.len()));
    if let Some(n) = r.audited {
        // Which evidence was scored: absent, the dataset's own.
        m.insert("qa_items_audited".into(), json!(n));
    }
    let conversations: BTreeSet<&str> = r.rows.iter().map(|row| row.conversation.as_str()).collect();
    m.insert("qa_interval_clusters".into(), json!(conversations.len()));
    m.insert("qa_intervals".into(), Value::Object(intervals));
    m.insert("qa_formed_minus_raw_turns".into(), paired_differences(r, "raw_turns"));
    m
}

/// Per [`INTERVAL_KEYS`] key (but `hit_holds_answer`): the mean over the
/// headline items both sources scored of formed − `baseline`, with its
/// interval resampling conversations (`{diff, lo, hi}`; no `lo`/`hi` with
/// fewer than two conversations). An empty object without formed rows.
pub fn paired_differences(r: &QaResult, baseline: &str) -> Value {
    let mut out = serde_json::Map::new();
    let of = |source: &str| -> HashMap<(&str, usize), &QaRow> {
        r.rows
            .iter()
            .filter(|row| row.source == source && in_headline(row))
            .map(|row| ((row.conversation.as_str(), row.item), row))
            .collect()
    };
    let (formed, base) = (of("formed"), of(baseline));
    if formed.is_empty() || base.is_empty() {
        return Value::Object(out);
    }
    let mut keys: Vec<&(&str, usize)> = formed.keys().collect();
    keys.sort_unstable();
    for (key, get) in INTERVAL_KEYS.iter().filter(|(k, _)| *k != "hit_holds_answer") {
        let diffs: Vec<(&str, f64)> = keys.iter().filter_map(|k| Some((k.0, get(formed[*k])? - get(base.get(*k)?)?))).collect();
        if diffs.is_empty() {
            continue;
        }
        let diff = diffs.iter().map(|d| d.1).sum::<f64>() / diffs.len() as f64;
        let mut v = serde_json::Map::new();
        v.insert("diff".into(), json!(round6(diff)));
        if let Some((lo, hi)) = interval::interval(&interval::clusters(diffs), interval::RESAMPLES, interval::SEED) {
            v.insert("lo".into(), json!(round6(lo)));
            v.insert("hi".into(), json!(round6(hi)));
        }
        out.insert(key.to_string(), Value::Object(v));
    }
    Value::Object(out)
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// The columns `qa.csv` and `qa.parquet` share: one row per item and
/// source, the item's figures, `hit_rank` the rank of the first retrieved
/// document holding an evidence turn (null when none in the top 10).
fn scalar_columns(r: &QaResult) -> Vec<Column> {
    let rows = &r.rows;
    let f = |name: &str, get: &dyn Fn(&Scored) -> f64| Column::new(name.into(), rows.iter().map(|x| get(&x.scored)).collect::<Vec<f64>>());
    let mut cols = vec![
        Column::new("conversation".into(), rows.iter().map(|x| x.conversation.as_str()).collect::<Vec<_>>()),
        Column::new("item".into(), rows.iter().map(|x| x.item as i64).collect::<Vec<_>>()),
        Column::new("category".into(), rows.iter().map(|x| x.category.as_str()).collect::<Vec<_>>()),
        Column::new("source".into(), rows.iter().map(|x| x.source).collect::<Vec<_>>()),
        Column::new("question".into(), rows.iter().map(|x| x.question.as_str()).collect::<Vec<_>>()),
        Column::new("as_of".into(), rows.iter().map(|x| x.as_of.as_deref()).collect::<Vec<_>>()),
        Column::new("abstention".into(), rows.iter().map(|x| x.abstention).collect::<Vec<_>>()),
        Column::new("hit_rank".into(), rows.iter().map(|x| hit_rank(&x.scored)).collect::<Vec<Option<i64>>>()),
        f("recall_any_at_1", &|s| s.recall_any[0]),
        f("recall_any_at_5", &|s| s.recall_any[1]),
        f("recall_any_at_10", &|s| s.recall_any[2]),
        f("recall_all_at_5", &|s| s.recall_all[1]),
        f("recall_all_at_10", &|s| s.recall_all[2]),
        f("ndcg_any_at_5", &|s| s.ndcg_any[1]),
        f("ndcg_any_at_10", &|s| s.ndcg_any[2]),
        f("mrr", &|s| s.mrr),
    ];
    let b = |name: String, get: &dyn Fn(&Budgeted) -> Option<f64>| {
        Column::new(name.into(), rows.iter().map(|x| get(&x.budgeted)).collect::<Vec<Option<f64>>>())
    };
    for (j, w) in BUDGETS.iter().enumerate() {
        cols.push(b(format!("recall_any_at_{w}w"), &|x| Some(x.recall_any_w[j])));
    }
    for (j, w) in ANSWER_BUDGETS.iter().enumerate() {
        cols.push(b(format!("answer_in_{w}w"), &|x| x.answer_in_w[j]));
    }
    cols.push(b("hit_holds_answer".into(), &|x| x.hit_holds_answer));
    for (j, k) in SESSION_KS.iter().enumerate() {
        cols.push(b(format!("session_recall_any_at_{k}"), &|x| Some(x.session_recall_any[j])));
    }
    cols.push(b("chance_recall_any_at_5".into(), &|x| Some(x.chance_recall_any[1])));
    for (j, k) in READ_KS.iter().enumerate() {
        cols.push(b(format!("words_read_at_{k}"), &|x| Some(x.words_read[j])));
    }
    cols
}

/// The rank (from 1) of the first hit, from the MRR.
pub fn hit_rank(s: &Scored) -> Option<i64> {
    (s.mrr > 0.0).then(|| (1.0 / s.mrr).round() as i64)
}

fn frame_err(e: polars::prelude::PolarsError) -> Error {
    Error::Other(format!("QA table: {e}"))
}

/// `qa.parquet`: [`scalar_columns`] and, as lists in rank order, the
/// evidence turns, the retrieved ids and their scores.
pub fn parquet_frame(r: &QaResult) -> Result<DataFrame> {
    use polars::prelude::{
        DataType, Float64Type, IntoColumn, IntoSeries, ListBuilderTrait, ListPrimitiveChunkedBuilder, ListStringChunkedBuilder,
    };
    // List columns built in one pass each (a Series per row costs more than the rest of the file).
    let n = r.rows.len();
    let strings = |name: &str, get: &dyn Fn(&QaRow) -> &Vec<String>| {
        let mut b = ListStringChunkedBuilder::new(name.into(), n, n * MAX_K);
        for x in &r.rows {
            b.append_values_iter(get(x).iter().map(String::as_str));
        }
        b.finish().into_series().into_column()
    };
    let mut scores = ListPrimitiveChunkedBuilder::<Float64Type>::new("scores".into(), n, n * MAX_K, DataType::Float64);
    for x in &r.rows {
        scores.append_slice(&x.scores);
    }
    let mut cols = scalar_columns(r);
    cols.insert(7, strings("evidence", &|x| &x.evidence));
    cols.insert(8, strings("retrieved", &|x| &x.retrieved));
    cols.insert(9, scores.finish().into_series().into_column());
    DataFrame::new(r.rows.len(), cols).map_err(frame_err)
}

/// `qa.csv`: [`scalar_columns`] with the evidence, retrieved ids and scores
/// `|`-separated in rank order.
pub fn csv_frame(r: &QaResult) -> Result<DataFrame> {
    let joined = |name: &str, get: &dyn Fn(&QaRow) -> String| Column::new(name.into(), r.rows.iter().map(get).collect::<Vec<String>>());
    let mut cols = scalar_columns(r);
    cols.insert(7, joined("evidence", &|x| x.evidence.join("|")));
    cols.insert(8, joined("retrieved", &|x| x.retrieved.join("|")));
    cols.insert(9, joined("scores", &|x| x.scores.iter().map(|s| format!("{s:.6}")).collect::<Vec<_>>().join("|")));
    DataFrame::new(r.rows.len(), cols).map_err(frame_err)
}

/// Writes `qa.parquet` and `qa.csv` into `dir`.
pub fn write(dir: &Path, r: &QaResult) -> Result<()> {
    let (parquet, csv) = rayon::join(
        || crate::tables::write_parquet(&dir.join("qa.parquet"), &parquet_frame(r)?),
        || crate::tables::write_csv(&dir.join("qa.csv"), &csv_frame(r)?),
    );
    csv.and(parquet)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turns(v: &[&[&str]]) -> Vec<Vec<String>> {
        v.iter().map(|d| d.iter().map(|t| t.to_string()).collect()).collect()
    }

    fn ev(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn session_dates_are_written_as_locomos_answers_write_them() {
        assert_eq!(date_label(Some("2023-05-08T13:56:00")).as_deref(), Some("[8 May 2023]"));
        assert_eq!(date_label(Some("2022-12-31")).as_deref(), Some("[31 December 2022]"));
        assert_eq!(date_label(Some("2023-13-08")), None);
        assert_eq!(date_label(Some("soon")), None);
        assert_eq!(date_label(None), None);
    }

    #[test]
    fn dcg_is_longmemevals() {
        // rel_1 + rel_2/log2(2) + rel_3/log2(3): ranks 1 and 2 weigh 1.
        assert_eq!(dcg(&[true, true, false], 10), 2.0);
        assert!((dcg(&[false, false, true], 10) - 1.0 / 3f64.log2()).abs() < 1e-12);
        assert_eq!(dcg(&[false, true], 1), 0.0);
    }

    #[test]
    fn recall_any_counts_a_hit_within_k() {
        let r = turns(&[&["t9"], &["t8"], &["t1"], &[], &[], &[], &[], &[], &[], &[]]);
        let s = score(&r, &ev(&["t1", "t2"]), 2);
        assert_eq!(s.recall_any, [0.0, 1.0, 1.0]);
    }

    #[test]
    fn recall_all_needs_every_evidence_turn() {
        let r = turns(&[&["t1"], &["t5"], &["t9"], &["t9"], &["t9"], &["t2", "t3"]]);
        let s = score(&r, &ev(&["t1", "t2"]), 2);
        assert_eq!(s.recall_all, [0.0, 0.0, 1.0]);
        // A session holding both evidence turns covers them at rank 1.
        assert_eq!(score(&turns(&[&["t1", "t2", "t7"]]), &ev(&["t1", "t2"]), 1).recall_all, [1.0, 1.0, 1.0]);
    }

    #[test]
    fn ndcg_any_against_the_ideal_of_the_corpus() {
        // Two relevant documents in the corpus; one retrieved, at rank 3.
        let r = turns(&[&["x"], &["y"], &["t1"]]);
        let s = score(&r, &ev(&["t1"]), 2);
        assert_eq!(s.ndcg_any[0], 0.0);
        let want = (1.0 / 3f64.log2()) / 2.0;
        assert!((s.ndcg_any[1] - want).abs() < 1e-12, "{s:?}");
        // Everything relevant first is 1.
        assert_eq!(score(&turns(&[&["t1"], &["t1"]]), &ev(&["t1"]), 2).ndcg_any, [1.0, 1.0, 1.0]);
    }

    #[test]
    fn mrr_is_the_reciprocal_rank_of_the_first_hit() {
        assert_eq!(score(&turns(&[&["x"], &["x"], &["t1"], &["t1"]]), &ev(&["t1"]), 2).mrr, 1.0 / 3.0);
        assert_eq!(score(&turns(&[&["x"]]), &ev(&["t1"]), 1).mrr, 0.0);
        assert_eq!(
            score::<Vec<String>, String>(&[], &ev(&["t1"]), 1),
            Scored { recall_any: [0.0; 3], recall_all: [0.0; 3], ndcg_any: [0.0; 3], mrr: 0.0 }
        );
    }

    #[test]
    fn abstention_items_are_reported_apart() {
        let row = |abstention: bool, hit: bool| QaRow {
            conversation: "c".into(),
            item: 0,
            category: "knowledge-update".into(),
            source: "formed",
            question: "q".into(),
            as_of: None,
            abstention,
            evidence: vec!["t1".into()],
            retrieved: vec![],
            scores: vec![],
            scored: score(&turns(&[if hit { &["t1"] } else { &["x"] }]), &ev(&["t1"]), 1),
            budgeted: Budgeted::default(),
        };
        let r = QaResult { rows: vec![row(false, true), row(true, false), row(true, false)], ..QaResult::default() };
        let m = summary_metrics(&r);
        assert_eq!((m["qa_recall_any_at_5"].clone(), m["qa_items_scored"].clone()), (json!(1.0), json!(1)));
        assert_eq!(m["qa_by_category"]["knowledge-update"]["items_scored"], json!(1));
        assert_eq!((m["qa_abstention"]["recall_any_at_5"].clone(), m["qa_abstention"]["items_scored"].clone()), (json!(0.0), json!(2)));
        assert!(!m.contains_key("qa_raw_turns_abstention"), "no abstention rows for that source");
    }

    /// LoCoMo's categories arrive named (`5 adversarial`): the adversarial
    /// items stay out of the headline figures under their name too.
    #[test]
    fn locomos_named_adversarial_items_are_reported_apart() {
        let row = |category: &str, hit: bool| QaRow {
            conversation: "c".into(),
            item: 0,
            category: category.into(),
            source: "formed",
            question: "q".into(),
            as_of: None,
            abstention: false,
            evidence: vec!["t1".into()],
            retrieved: vec![],
            scores: vec![],
            scored: score(&turns(&[if hit { &["t1"] } else { &["x"] }]), &ev(&["t1"]), 1),
            budgeted: Budgeted::default(),
        };
        let r = QaResult { rows: vec![row("4 single-hop", true), row("5 adversarial", false)], ..QaResult::default() };
        let m = summary_metrics(&r);
        assert_eq!(m["qa_items_scored"], json!(1), "the adversarial item is apart");
        assert_eq!(m["qa_recall_any_at_5"], json!(1.0));
        assert_eq!(m["qa_adversarial"]["items_scored"], json!(1));
        assert!(is_adversarial("5") && is_adversarial("5 adversarial"));
        assert!(!is_adversarial("50") && !is_adversarial("4 single-hop") && !is_adversarial("none"));
    }

    #[test]
    fn summary_means_per_source_and_category() {
        let row = |source: &'static str, category: &str, hit: bool| QaRow {
            conversation: "c".into(),
            item: 0,
            category: category.into(),
            source,
            question: "q".into(),
            as_of: None,
            abstention: false,
            evidence: vec!["t1".into()],
            retrieved: vec![],
            scores: vec![],
            scored: score(&turns(&[if hit { &["t1"] } else { &["x"] }]), &ev(&["t1"]), 1),
            budgeted: Budgeted::default(),
        };
        let r = QaResult {
            rows: vec![row("formed", "1", true), row("formed", "2", false), row("raw_turns", "1", false), row("raw_turns", "2", false)],
            indexed: [("formed", 7), ("raw_turns", 40)].into(),
            words_indexed: [("formed", 70), ("raw_turns", 400)].into(),
            warnings: vec!["w".into()],
            excluded: 3,
            empty_questions: vec!["e".into()],
            audited: None,
        };
        let m = summary_metrics(&r);
        assert_eq!(m["qa_recall_any_at_5"], json!(0.5));
        assert_eq!(m["qa_mrr"], json!(0.5));
        assert_eq!(m["qa_items_scored"], json!(2));
        assert_eq!(m["qa_items_indexed"], json!(7));
        assert_eq!(m["qa_raw_turns_recall_any_at_1"], json!(0.0));
        assert_eq!(m["qa_raw_turns_items_indexed"], json!(40));
        assert_eq!(m["qa_raw_sessions_recall_any_at_5"], Value::Null, "no rows: no figure");
        assert_eq!(m["qa_by_category"]["1"]["recall_any_at_10"], json!(1.0));
        assert_eq!(m["qa_by_category"]["2"]["items_scored"], json!(1));
        assert_eq!((m["qa_evidence_unknown_turns"].clone(), m["qa_items_excluded"].clone()), (json!(1), json!(3)));
        assert_eq!(m["qa_questions_empty"], json!(1));
    }
}
