//! What a run's `report.html` explores and `report.md`'s error analysis
//! lists, read from the run's own records: the facts frame (each
//! candidate's outcome, reason, related fact, the facts it ended, `stored`,
//! `live`, its gold match), the verdicts frame (every listed judged pair
//! with its verdict, the judge's own answer, the pairing reason, the guard
//! and the review flag), `qa.parquet` (each QA item's retrieved ids and
//! scores per source) and the dataset's gold labels (read from the run's
//! dataset when it is still there with the digest the run recorded).
//!
//! Everything here is a function of those inputs, so `run` and `memform
//! report` draw the same lists.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

use polars::prelude::{AnyValue, DataFrame};
use serde_json::{Value, json};

use crate::error::Result;
use crate::metrics::Analysis;
use crate::types::Dataset;

use super::{md, table};

/// Rows listed per error-analysis list in `report.md`.
pub const TOP_N: usize = 10;
/// Most candidates `report.html` embeds (a LoCoMo run has about 1,100).
pub const MAX_CANDIDATES: usize = 20_000;
/// Most QA items `report.html` embeds (LoCoMo has 1,986; each with its
/// retrieved ids per source).
pub const MAX_QA_ITEMS: usize = 5_000;
/// Most rows of each error list `report.html` embeds.
pub const MAX_ERRORS: usize = 1_000;

/// A gold fact of a conversation that ran.
#[derive(Debug, Clone)]
pub struct GoldFactRow {
    pub conversation: String,
    pub id: String,
    pub episode: String,
    pub text: String,
    pub evidence: Vec<String>,
}

/// A labelled contradiction pair of a conversation that ran.
#[derive(Debug, Clone)]
pub struct GoldPair {
    pub conversation: String,
    pub old_turn: String,
    pub new_turn: String,
    pub verdict: String,
}

/// The dataset's gold labels, or why they could not be read.
#[derive(Debug, Clone)]
pub enum Gold {
    Listed {
        facts: Vec<GoldFactRow>,
        pairs: Vec<GoldPair>,
        /// (conversation, turn) → its episode, for every turn that ran and
        /// that a QA item names as evidence.
        turn_episode: HashMap<(String, String), String>,
    },
    Unavailable(String),
}

impl Gold {
    /// The gold labels of the episodes that ran (`ran`: conversation, episode).
    pub fn of_dataset(ds: &Dataset, ran: &BTreeSet<(String, String)>) -> Gold {
        let (mut facts, mut pairs, mut turn_episode) = (Vec::new(), Vec::new(), HashMap::new());
        for c in &ds.conversations {
            let ran_here = |e: &str| ran.contains(&(c.id.clone(), e.to_string()));
            // The turns that ran (borrowed), and the episodes of those a QA
            // item names: the only turns the page looks up (a QA row's
            // evidence is its item's). A map of every turn took about 40 MB
            // at 250,000 turns.
            let named: HashSet<&str> =
                c.gold.qa.iter().flat_map(|q| q.evidence.iter().chain(&q.unknown_evidence)).map(String::as_str).collect();
            let mut ran_turns: HashSet<&str> = HashSet::new();
            for e in c.episodes.iter().filter(|e| ran_here(&e.id)) {
                for t in &e.turns {
                    ran_turns.insert(t.id.as_str());
                    if named.contains(t.id.as_str()) {
                        turn_episode.insert((c.id.clone(), t.id.clone()), e.id.clone());
                    }
                }
            }
            for f in c.gold.facts.iter().filter(|f| ran_here(&f.episode)) {
                facts.push(GoldFactRow {
                    conversation: c.id.clone(),
                    id: f.id.clone(),
                    episode: f.episode.clone(),
                    text: f.text.clone(),
                    evidence: f.evidence.clone(),
                });
            }
            for p in &c.gold.contradictions {
                if ran_turns.contains(p.new_turn.as_str()) {
                    let verdict = serde_json::to_value(p.verdict).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
                    pairs.push(GoldPair {
                        conversation: c.id.clone(),
                        old_turn: p.old_turn.clone(),
                        new_turn: p.new_turn.clone(),
                        verdict,
                    });
                }
            }
        }
        Gold::Listed { facts, pairs, turn_episode }
    }

    /// The gold labels of the dataset `run.json` names (`dataset_path`),
    /// when it is still there with the digest the run recorded (the whole
    /// dataset's, or that of the subset of conversations that ran).
    pub fn from_manifest(manifest: &Value, ran: &BTreeSet<(String, String)>) -> Gold {
        let Some(path) = manifest.get("dataset_path").and_then(Value::as_str) else {
            return Gold::Unavailable("run.json records no dataset path".into());
        };
        let ds = match crate::dataset::load(Path::new(path)) {
            Ok(ds) => ds,
            Err(e) => return Gold::Unavailable(format!("the dataset {path} could not be read ({e})")),
        };
        let recorded = manifest.pointer("/dataset/digest").and_then(Value::as_str).unwrap_or("");
        let convs: BTreeSet<&str> = ran.iter().map(|(c, _)| c.as_str()).collect();
        let kept: Vec<&str> = ds.conversations.iter().map(|c| c.id.as_str()).filter(|c| convs.contains(c)).collect();
        let subset = crate::normalize::sha256_hex(format!("{}\nconversations={}", ds.digest, kept.join(",")).as_bytes());
        if recorded != ds.digest && recorded != subset {
            return Gold::Unavailable(format!("the dataset {path} has changed since the run (its digest differs)"));
        }
        Gold::of_dataset(&ds, ran)
    }
}

/// What the error analysis and the page read besides the [`Analysis`].
pub struct Inputs {
    /// The QA rows, when the run evaluated QA items.
    pub qa: Option<QaInput>,
    pub gold: Gold,
}

/// A run's QA rows as the error analysis and the page get them.
pub enum QaInput {
    /// `qa.parquet` read back.
    Frame(DataFrame),
    /// Built from the rows in memory ([`qa_items_of`]): the same items as
    /// from the frame the rows are written to.
    Items(Vec<QaItem>),
}

impl Inputs {
    /// The inputs of the run in `dir` (its `qa.parquet` if there is one),
    /// with `gold`.
    pub fn read(dir: &Path, gold: Gold) -> Result<Inputs> {
        let p = dir.join("qa.parquet");
        let qa = if p.is_file() { Some(QaInput::Frame(crate::tables::read_parquet(&p)?)) } else { None };
        Ok(Inputs { qa, gold })
    }
}

/// The (conversation, episode) pairs that ran, from the episodes frame.
pub fn ran_episodes(a: &Analysis) -> BTreeSet<(String, String)> {
    let (c, e) = (strs(&a.episodes, "conversation"), strs(&a.episodes, "episode"));
    c.into_iter().zip(e).filter_map(|(c, e)| Some((c?, e?))).collect()
}

// ---------------------------------------------------------------------------
// Frame columns as plain vectors.

fn any_str(v: AnyValue<'_>) -> Option<String> {
    match v {
        AnyValue::Null => None,
        AnyValue::String(s) => Some(s.to_string()),
        AnyValue::StringOwned(s) => Some(s.to_string()),
        other => Some(other.to_string()),
    }
}

fn any_f64(v: AnyValue<'_>) -> Option<f64> {
    match v {
        AnyValue::Float64(x) => Some(x),
        AnyValue::Float32(x) => Some(x as f64),
        AnyValue::Int64(x) => Some(x as f64),
        AnyValue::Int32(x) => Some(x as f64),
        AnyValue::UInt32(x) => Some(x as f64),
        AnyValue::UInt64(x) => Some(x as f64),
        AnyValue::Boolean(b) => Some(if b { 1.0 } else { 0.0 }),
        _ => None,
    }
}

fn column<T>(df: &DataFrame, name: &str, f: impl Fn(AnyValue<'_>) -> Option<T>) -> Vec<Option<T>> {
    match df.column(name) {
        Ok(c) => (0..df.height()).map(|i| c.get(i).ok().and_then(&f)).collect(),
        Err(_) => (0..df.height()).map(|_| None).collect(),
    }
}

/// A string column read through its typed chunks (no [`AnyValue`] per
/// cell: the same strings as [`any_str`] gives them); a column of
/// another type cell by cell.
fn strs(df: &DataFrame, name: &str) -> Vec<Option<String>> {
    match df.column(name).map(|c| c.str()) {
        Ok(Ok(c)) => c.iter().map(|v| v.map(str::to_string)).collect(),
        _ => column(df, name, any_str),
    }
}

/// A float column read through its typed chunks (as [`any_f64`] reads
/// it); a column of another type cell by cell.
fn nums(df: &DataFrame, name: &str) -> Vec<Option<f64>> {
    match df.column(name).map(|c| c.f64()) {
        Ok(Ok(c)) => c.iter().collect(),
        _ => column(df, name, any_f64),
    }
}

/// A boolean column (null and any other type: false) read through its typed chunks.
fn bools(df: &DataFrame, name: &str) -> Vec<bool> {
    match df.column(name).map(|c| c.bool()) {
        Ok(Ok(c)) => c.iter().map(|b| b.unwrap_or(false)).collect(),
        _ => column(df, name, |v| match v {
            AnyValue::Boolean(b) => Some(b),
            _ => None,
        })
        .into_iter()
        .map(|b| b.unwrap_or(false))
        .collect(),
    }
}

fn lists(df: &DataFrame, name: &str) -> Vec<Vec<AnyValue<'static>>> {
    column(df, name, |v| match v {
        AnyValue::List(s) => Some(s.iter().map(|x| x.into_static()).collect::<Vec<_>>()),
        _ => None,
    })
    .into_iter()
    .map(Option::unwrap_or_default)
    .collect()
}

// ---------------------------------------------------------------------------
// The run as plain rows.

/// A judged pair of a candidate, as listed.
#[derive(Debug, Clone)]
pub struct Pair {
    pub live_id: String,
    pub verdict: String,
    pub judged: String,
    pub reason: String,
    pub review: bool,
    pub guard: Option<String>,
}

/// One candidate fact and what happened to it.
#[derive(Debug, Clone)]
pub struct Cand {
    pub id: String,
    pub conversation: String,
    pub episode: String,
    pub turn: String,
    pub content: String,
    pub fact_type: String,
    pub confidence: Option<f64>,
    pub outcome: String,
    pub reason: String,
    pub related: Option<String>,
    pub stored: bool,
    pub live: bool,
    pub gold_match: Option<String>,
    pub ended: Vec<String>,
    pub pairs: Vec<Pair>,
}

/// One QA item as one source ranked for it.
#[derive(Debug, Clone)]
pub struct Ranked {
    pub retrieved: Vec<String>,
    pub scores: Vec<f64>,
    pub hit_rank: Option<f64>,
    pub recall_any_at_5: Option<f64>,
    pub recall_any_at_200w: Option<f64>,
    pub answer_in_200w: Option<f64>,
}

/// One QA item and its ranking per source.
#[derive(Debug, Clone)]
pub struct QaItem {
    pub conversation: String,
    pub item: String,
    pub category: String,
    pub question: String,
    pub evidence: Vec<String>,
    /// Adversarial or abstention: out of the headline figures.
    pub apart: bool,
    pub sources: BTreeMap<String, Ranked>,
}

/// The run's rows, built once for the error analysis and the page.
pub struct Explore {
    pub cands: Vec<Cand>,
    /// Candidate id → the candidate that ended it.
    pub ended_by: HashMap<String, String>,
    pub qa: Vec<QaItem>,
    pub gold: Gold,
    pub errors: Errors,
}

/// A missed gold fact and why.
#[derive(Debug, Clone)]
pub struct Missed {
    pub gold: GoldFactRow,
    /// `no_candidate`, `dropped` or `stored_unmatched`.
    pub cause: &'static str,
    /// The candidates from its evidence turns.
    pub from_turns: Vec<usize>,
}

/// A labelled pair no listed judged pair covers, and why.
#[derive(Debug, Clone)]
pub struct Unjudged {
    pub pair: GoldPair,
    /// `no_old_fact`, `no_new_candidate` or `not_paired`.
    pub cause: &'static str,
}

/// The error-analysis lists (each whole; `report.md` shows the first
/// [`TOP_N`] with counts).
#[derive(Debug, Clone, Default)]
pub struct Errors {
    pub missed_gold: Vec<Missed>,
    /// Indices into `cands`: live facts that match no gold fact.
    pub unmatched_stored: Vec<usize>,
    /// Indices into `qa`: formed memory misses at 200 words, raw turns find.
    pub formed_missed_raw_found: Vec<usize>,
    /// Indices into `qa`: raw turns miss at 200 words, formed memory finds.
    pub raw_missed_formed_found: Vec<usize>,
    pub never_judged: Vec<Unjudged>,
}

pub const CAUSES: [(&str, &str); 3] = [
    ("no_candidate", "no candidate from its evidence turns (extraction)"),
    ("dropped", "its turns' candidates were all dropped (dedupe, noise, confidence, judge)"),
    ("stored_unmatched", "a fact from its turns was stored but matches no gold fact, or another"),
];

pub const UNJUDGED_CAUSES: [(&str, &str); 3] = [
    ("no_old_fact", "no stored fact from the old turn"),
    ("no_new_candidate", "no candidate from the new turn"),
    ("not_paired", "both exist but were never paired"),
];

fn cause_text(table: &[(&str, &str)], key: &str) -> String {
    table.iter().find(|(k, _)| *k == key).map_or(key.to_string(), |(_, t)| t.to_string())
}

impl Explore {
    pub fn new(a: &Analysis, inputs: Inputs) -> Explore {
        let f = &a.facts;
        // Each column's strings are moved into the candidates, not copied
        // (two copies of every candidate's strings at once, before).
        let (mut ids, mut convs, mut eps, mut turns, mut contents) =
            (strs(f, "id"), strs(f, "conversation"), strs(f, "episode"), strs(f, "turn"), strs(f, "content"));
        let (mut types, mut outcomes, mut reasons, mut related, mut gold) =
            (strs(f, "fact_type"), strs(f, "outcome"), strs(f, "reason"), strs(f, "related"), strs(f, "gold_match"));
        let (stored, live, ended, conf) = (bools(f, "stored"), bools(f, "live"), strs(f, "ended"), nums(f, "confidence"));
        let mut cands: Vec<Cand> = (0..f.height())
            .map(|i| Cand {
                id: ids[i].take().unwrap_or_default(),
                conversation: convs[i].take().unwrap_or_default(),
                episode: eps[i].take().unwrap_or_default(),
                turn: turns[i].take().unwrap_or_default(),
                content: contents[i].take().unwrap_or_default(),
                fact_type: types[i].take().unwrap_or_default(),
                confidence: conf[i],
                outcome: outcomes[i].take().unwrap_or_default(),
                reason: reasons[i].take().unwrap_or_default(),
                related: related[i].take().filter(|r| !r.is_empty()),
                stored: stored[i],
                live: live[i],
                gold_match: gold[i].take(),
                ended: ended[i].as_deref().unwrap_or("").split_whitespace().map(str::to_string).collect(),
                pairs: Vec::new(),
            })
            .collect();
        drop((ids, convs, eps, turns, contents, types, outcomes, reasons, related, gold, ended));
        let index: HashMap<String, usize> = cands.iter().enumerate().map(|(i, c)| (c.id.clone(), i)).collect();
        let v = &a.verdicts;
        let (listed, cand, live_id, verdict, judged, reason, review, guard) = (
            bools(v, "listed"),
            strs(v, "candidate"),
            strs(v, "live_id"),
            strs(v, "verdict"),
            strs(v, "judged"),
            strs(v, "reason"),
            bools(v, "review_needed"),
            strs(v, "guard"),
        );
        for r in 0..v.height() {
            if !listed[r] {
                continue;
            }
            if let Some(&i) = cand[r].as_ref().and_then(|c| index.get(c)) {
                cands[i].pairs.push(Pair {
                    live_id: live_id[r].clone().unwrap_or_default(),
                    verdict: verdict[r].clone().unwrap_or_default(),
                    judged: judged[r].clone().unwrap_or_default(),
                    reason: reason[r].clone().unwrap_or_default(),
                    review: review[r],
                    guard: guard[r].clone(),
                });
            }
        }
        let mut ended_by = HashMap::new();
        for c in &cands {
            for e in &c.ended {
                ended_by.entry(e.clone()).or_insert_with(|| c.id.clone());
            }
        }
        let qa = match inputs.qa {
            Some(QaInput::Frame(df)) => qa_items(&df),
            Some(QaInput::Items(items)) => items,
            None => Vec::new(),
        };
        let mut x = Explore { cands, ended_by, qa, gold: inputs.gold, errors: Errors::default() };
        x.errors = x.error_lists(a);
        x
    }

    fn error_lists(&self, a: &Analysis) -> Errors {
        let mut e = Errors::default();
        let by_turn: HashMap<(&str, &str), Vec<usize>> = self.cands.iter().enumerate().fold(HashMap::new(), |mut m, (i, c)| {
            m.entry((c.conversation.as_str(), c.turn.as_str())).or_default().push(i);
            m
        });
        if let Gold::Listed { facts, pairs, .. } = &self.gold {
            let matched: BTreeSet<(&str, &str)> =
                self.cands.iter().filter(|c| c.stored).filter_map(|c| Some((c.conversation.as_str(), c.gold_match.as_deref()?))).collect();
            for g in facts.iter().filter(|g| !matched.contains(&(g.conversation.as_str(), g.id.as_str()))) {
                let from_turns: Vec<usize> = g
                    .evidence
                    .iter()
                    .flat_map(|t| by_turn.get(&(g.conversation.as_str(), t.as_str())).cloned().unwrap_or_default())
                    .collect();
                let cause = if from_turns.is_empty() {
                    "no_candidate"
                } else if from_turns.iter().all(|&i| !self.cands[i].stored) {
                    "dropped"
                } else {
                    "stored_unmatched"
                };
                e.missed_gold.push(Missed { gold: g.clone(), cause, from_turns });
            }
            if a.labels.contradictions {
                let turn_of: HashMap<&str, &str> = self.cands.iter().map(|c| (c.id.as_str(), c.turn.as_str())).collect();
                let mut judged: BTreeSet<(&str, &str, &str)> = BTreeSet::new();
                for c in &self.cands {
                    for p in &c.pairs {
                        if let Some(old) = turn_of.get(p.live_id.as_str()) {
                            judged.insert((c.conversation.as_str(), old, c.turn.as_str()));
                        }
                    }
                }
                for p in pairs {
                    if judged.contains(&(p.conversation.as_str(), p.old_turn.as_str(), p.new_turn.as_str())) {
                        continue;
                    }
                    let has = |t: &str, stored: bool| {
                        by_turn.get(&(p.conversation.as_str(), t)).is_some_and(|v| v.iter().any(|&i| !stored || self.cands[i].stored))
                    };
                    let cause = if !has(&p.old_turn, true) {
                        "no_old_fact"
                    } else if !has(&p.new_turn, false) {
                        "no_new_candidate"
                    } else {
                        "not_paired"
                    };
                    e.never_judged.push(Unjudged { pair: p.clone(), cause });
                }
            }
        }
        if a.labels.gold_facts {
            e.unmatched_stored = (0..self.cands.len()).filter(|&i| self.cands[i].live && self.cands[i].gold_match.is_none()).collect();
        }
        for (i, q) in self.qa.iter().enumerate().filter(|(_, q)| !q.apart) {
            let r = |s: &str| q.sources.get(s).and_then(|r| r.recall_any_at_200w);
            match (r("formed"), r("raw_turns")) {
                (Some(f), Some(t)) if f == 0.0 && t > 0.0 => e.formed_missed_raw_found.push(i),
                (Some(f), Some(t)) if f > 0.0 && t == 0.0 => e.raw_missed_formed_found.push(i),
                _ => {}
            }
        }
        e
    }
}

/// [`qa_items`] of the rows `qa.parquet` is written from, without the
/// frame: one item per (conversation, item) in order of first row, its
/// sources by name.
pub fn qa_items_of(r: &crate::qa::QaResult) -> Vec<QaItem> {
    let mut items: Vec<QaItem> = Vec::new();
    let mut at: HashMap<(&str, usize), usize> = HashMap::new();
    for row in &r.rows {
        let k = *at.entry((row.conversation.as_str(), row.item)).or_insert_with(|| {
            items.push(QaItem {
                conversation: row.conversation.clone(),
                item: row.item.to_string(),
                apart: row.abstention || crate::qa::is_adversarial(&row.category),
                category: row.category.clone(),
                question: row.question.clone(),
                evidence: row.evidence.clone(),
                sources: BTreeMap::new(),
            });
            items.len() - 1
        });
        items[k].sources.insert(
            row.source.to_string(),
            Ranked {
                retrieved: row.retrieved.clone(),
                scores: row.scores.clone(),
                hit_rank: crate::qa::hit_rank(&row.scored).map(|h| h as f64),
                recall_any_at_5: Some(row.scored.recall_any[1]),
                recall_any_at_200w: Some(row.budgeted.recall_any_w[1]),
                answer_in_200w: row.budgeted.answer_in_w[1],
            },
        );
    }
    items
}

fn qa_items(df: &DataFrame) -> Vec<QaItem> {
    let (conv, item, cat, src, question) =
        (strs(df, "conversation"), strs(df, "item"), strs(df, "category"), strs(df, "source"), strs(df, "question"));
    let (abst, evidence, retrieved, scores) = (bools(df, "abstention"), lists(df, "evidence"), lists(df, "retrieved"), lists(df, "scores"));
    let (hit, r5, r200, a200) =
        (nums(df, "hit_rank"), nums(df, "recall_any_at_5"), nums(df, "recall_any_at_200w"), nums(df, "answer_in_200w"));
    let mut items: Vec<QaItem> = Vec::new();
    let mut at: HashMap<(String, String), usize> = HashMap::new();
    for i in 0..df.height() {
        let key = (conv[i].clone().unwrap_or_default(), item[i].clone().unwrap_or_default());
        let k = *at.entry(key.clone()).or_insert_with(|| {
            let category = cat[i].clone().unwrap_or_default();
            items.push(QaItem {
                conversation: key.0.clone(),
                item: key.1.clone(),
                apart: abst[i] || crate::qa::is_adversarial(&category),
                category,
                question: question[i].clone().unwrap_or_default(),
                evidence: evidence[i].iter().filter_map(|v| any_str(v.clone())).collect(),
                sources: BTreeMap::new(),
            });
            items.len() - 1
        });
        items[k].sources.insert(
            src[i].clone().unwrap_or_default(),
            Ranked {
                retrieved: retrieved[i].iter().filter_map(|v| any_str(v.clone())).collect(),
                scores: scores[i].iter().filter_map(|v| any_f64(v.clone())).collect(),
                hit_rank: hit[i],
                recall_any_at_5: r5[i],
                recall_any_at_200w: r200[i],
                answer_in_200w: a200[i],
            },
        );
    }
    items
}

// ---------------------------------------------------------------------------
// report.md: the error analysis.

fn counts<'a>(keys: impl Iterator<Item = &'a str>) -> Vec<(String, usize)> {
    let mut m: BTreeMap<String, usize> = BTreeMap::new();
    for k in keys {
        *m.entry(k.to_string()).or_default() += 1;
    }
    let mut v: Vec<(String, usize)> = m.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

fn count_line(label: &str, v: &[(String, usize)]) -> String {
    let parts: Vec<String> = v.iter().map(|(k, n)| format!("{} {n}", md(k))).collect();
    format!("{label}: {}.\n", parts.join(", "))
}

fn shown(n: usize) -> String {
    if n > TOP_N { format!("The first {TOP_N}, in run order:") } else { "Each of them:".to_string() }
}

/// The "Error analysis" section of `report.md`: each list counted (in
/// total and by conversation, category or cause), its first [`TOP_N`] rows.
pub fn error_section(o: &mut String, a: &Analysis, x: &Explore) {
    let e = &x.errors;
    let _ = writeln!(o, "## Error analysis\n");
    let _ = writeln!(
        o,
        "Each list counted, then its first {TOP_N} rows; `report.html` beside this file lists every row with its decision trail.\n"
    );
    if a.labels.gold_facts {
        let _ = writeln!(o, "### Gold facts no stored fact matches\n");
        match &x.gold {
            Gold::Unavailable(why) => {
                let _ = writeln!(o, "Not listed: {}.\n", md(why));
            }
            Gold::Listed { facts, .. } if e.missed_gold.is_empty() => {
                let _ = writeln!(o, "Every one of the {} gold facts is matched by a stored fact (lexical).\n", facts.len());
            }
            Gold::Listed { facts, .. } => {
                let _ = writeln!(o, "{} of the {} gold facts are matched by no stored fact (lexical).\n", e.missed_gold.len(), facts.len());
                let by_cause = counts(e.missed_gold.iter().map(|m| m.cause));
                let rows: Vec<Vec<String>> = by_cause.iter().map(|(k, n)| vec![cause_text(&CAUSES, k), n.to_string()]).collect();
                table(o, &["why", "gold facts"], &rows);
                o.push_str(&count_line("By conversation", &counts(e.missed_gold.iter().map(|m| m.gold.conversation.as_str()))));
                let _ = writeln!(o, "\n{}\n", shown(e.missed_gold.len()));
                let rows: Vec<Vec<String>> = e
                    .missed_gold
                    .iter()
                    .take(TOP_N)
                    .map(|m| {
                        let outs: Vec<String> = m.from_turns.iter().map(|&i| format!("`{}`", x.cands[i].outcome)).collect();
                        vec![
                            format!("{} / {} / {}", m.gold.conversation, m.gold.episode, m.gold.evidence.join(" ")),
                            md(&m.gold.text),
                            m.cause.to_string(),
                            if outs.is_empty() { "–".into() } else { outs.join(", ") },
                        ]
                    })
                    .collect();
                table(o, &["conversation / episode / evidence", "gold fact", "why", "its turns' candidates"], &rows);
            }
        }
        let _ = writeln!(o, "### Stored facts that match no gold fact\n");
        let live = x.cands.iter().filter(|c| c.live).count();
        if e.unmatched_stored.is_empty() {
            let _ = writeln!(o, "Every one of the {live} live facts matches a gold fact (lexical).\n");
        } else {
            let _ = writeln!(
                o,
                "{} of the {live} live facts match no gold fact (lexical): noise, or a fact the gold set does not hold.\n",
                e.unmatched_stored.len()
            );
            o.push_str(&count_line("By conversation", &counts(e.unmatched_stored.iter().map(|&i| x.cands[i].conversation.as_str()))));
            o.push_str(&count_line("By fact type", &counts(e.unmatched_stored.iter().map(|&i| x.cands[i].fact_type.as_str()))));
            let _ = writeln!(o, "\n{}\n", shown(e.unmatched_stored.len()));
            let rows: Vec<Vec<String>> = e
                .unmatched_stored
                .iter()
                .take(TOP_N)
                .map(|&i| {
                    let c = &x.cands[i];
                    vec![format!("{} / {} / {}", c.conversation, c.episode, c.turn), md(&c.content), c.outcome.clone()]
                })
                .collect();
            table(o, &["conversation / episode / turn", "fact", "outcome"], &rows);
        }
    }
    if !x.qa.is_empty() {
        let scored = x.qa.iter().filter(|q| !q.apart).count();
        for (title, list) in [
            ("QA items formed memory misses and raw turns find", &e.formed_missed_raw_found),
            ("QA items raw turns miss and formed memory finds", &e.raw_missed_formed_found),
        ] {
            let _ = writeln!(o, "### {title}\n");
            let _ = writeln!(
                o,
                "At 200 words read (`recall_any_at_200w`), of the {scored} items scored (adversarial and abstention items apart): {}.\n",
                list.len()
            );
            if list.is_empty() {
                continue;
            }
            o.push_str(&count_line("By category", &counts(list.iter().map(|&i| x.qa[i].category.as_str()))));
            o.push_str(&count_line("By conversation", &counts(list.iter().map(|&i| x.qa[i].conversation.as_str()))));
            let _ = writeln!(o, "\n{}\n", shown(list.len()));
            let rows: Vec<Vec<String>> = list
                .iter()
                .take(TOP_N)
                .map(|&i| {
                    let q = &x.qa[i];
                    let rank =
                        |s: &str| q.sources.get(s).and_then(|r| r.hit_rank).map_or("none in the first 10".to_string(), |r| format!("{r}"));
                    vec![
                        format!("{} / {}", q.conversation, q.item),
                        md(&q.category),
                        md(&q.question),
                        q.evidence.join(" "),
                        rank("formed"),
                        rank("raw_turns"),
                    ]
                })
                .collect();
            table(o, &["conversation / item", "category", "question", "evidence", "formed: first hit", "raw turns: first hit"], &rows);
        }
    }
    if a.labels.contradictions {
        let _ = writeln!(o, "### Labelled contradiction pairs never judged\n");
        match &x.gold {
            Gold::Unavailable(why) => {
                let _ = writeln!(o, "Not listed: {}.\n", md(why));
            }
            Gold::Listed { pairs, .. } => {
                let _ = writeln!(
                    o,
                    "{} of the {} labelled pairs have no judged pair (between a fact from the old turn and a candidate from the new \
                     one) among those `facts.jsonl` lists (a plain `neither` pair beyond the nearest few is counted there, not listed).\n",
                    e.never_judged.len(),
                    pairs.len()
                );
                if !e.never_judged.is_empty() {
                    let rows: Vec<Vec<String>> = counts(e.never_judged.iter().map(|u| u.cause))
                        .iter()
                        .map(|(k, n)| vec![cause_text(&UNJUDGED_CAUSES, k), n.to_string()])
                        .collect();
                    table(o, &["why", "pairs"], &rows);
                    o.push_str(&count_line("By gold verdict", &counts(e.never_judged.iter().map(|u| u.pair.verdict.as_str()))));
                    let _ = writeln!(o, "\n{}\n", shown(e.never_judged.len()));
                    let rows: Vec<Vec<String>> = e
                        .never_judged
                        .iter()
                        .take(TOP_N)
                        .map(|u| {
                            vec![
                                u.pair.conversation.clone(),
                                u.pair.old_turn.clone(),
                                u.pair.new_turn.clone(),
                                format!("`{}`", u.pair.verdict),
                                u.cause.to_string(),
                            ]
                        })
                        .collect();
                    table(o, &["conversation", "old turn", "new turn", "gold verdict", "why"], &rows);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// report.html: the page's data.

fn r3(x: f64) -> Value {
    json!((x * 1000.0).round() / 1000.0)
}

/// A candidate as the page shows it (short keys keep the page small).
fn cand_json(x: &Explore, c: &Cand) -> Value {
    let pairs: Vec<Value> = c.pairs.iter().map(|p| json!([p.live_id, p.verdict, p.judged, p.reason, p.review, p.guard])).collect();
    json!({
        "id": c.id, "c": c.conversation, "e": c.episode, "t": c.turn, "x": c.content, "ty": c.fact_type,
        "cf": c.confidence.map(r3), "o": c.outcome, "r": c.reason, "rel": c.related, "s": c.stored, "l": c.live,
        "g": c.gold_match, "end": c.ended, "by": x.ended_by.get(&c.id), "p": pairs,
    })
}

/// Whether a retrieved id of `source` is evidence for `q`, whose evidence
/// turns' sessions are `sessions` (`None`: the gold labels are unavailable).
fn is_evidence(turn_of: &HashMap<&str, &str>, q: &QaItem, sessions: Option<&[&String]>, source: &str, id: &str) -> Option<bool> {
    match source {
        "formed" => turn_of.get(id).map(|t| q.evidence.iter().any(|e| e == t)),
        "raw_turns" => Some(q.evidence.iter().any(|e| e == id)),
        "raw_sessions" => sessions.map(|s| s.iter().any(|e| *e == id)),
        _ => None,
    }
}

/// A QA item as the page shows it: the object `json!` would make, its keys
/// in the same (sorted) order, serialised with no value tree.
#[derive(serde::Serialize)]
struct QaJson<'a> {
    apart: bool,
    c: &'a str,
    cat: &'a str,
    ev: &'a [String],
    holds: Vec<&'a str>,
    i: &'a str,
    q: &'a str,
    s: BTreeMap<&'a str, SourceJson<'a>>,
}

/// One source's ranking of a [`QaJson`].
#[derive(serde::Serialize)]
struct SourceJson<'a> {
    a200: Option<f64>,
    h: Option<f64>,
    r: Vec<RetrievedJson<'a>>,
    r200: Option<f64>,
    r5: Option<f64>,
}

/// A retrieved id and its score (rounded as [`r3`] rounds), and for the
/// sources whose evidence the page does not work out itself, whether it is.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum RetrievedJson<'a> {
    Scored(&'a str, Option<f64>),
    Judged(&'a str, Option<f64>, Option<bool>),
}

/// [`r3`]'s rounding, as a number.
fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The page data of a run: what [`super::html`] embeds. Its `facts` (up to
/// [`MAX_CANDIDATES`] candidates) come apart, serialised as a JSON array,
/// one candidate's value tree at a time (the trees of 20,000 candidates
/// took about 100 MB), and so do its `qa` items (up to [`MAX_QA_ITEMS`]),
/// serialised with no value tree; the object holds `null` in their places.
pub fn run_data(x: &Explore) -> (Value, String, String) {
    let turn_of: HashMap<&str, &str> = x.cands.iter().map(|c| (c.id.as_str(), c.turn.as_str())).collect();
    let mut cands = String::from("[");
    for (i, c) in x.cands.iter().take(MAX_CANDIDATES).enumerate() {
        if i > 0 {
            cands.push(',');
        }
        cands.push_str(&serde_json::to_string(&cand_json(x, c)).unwrap_or_else(|_| "null".to_string()));
    }
    cands.push(']');
    let missed: HashMap<(&str, &str), &Missed> =
        x.errors.missed_gold.iter().map(|m| ((m.gold.conversation.as_str(), m.gold.id.as_str()), m)).collect();
    let by_turn: HashMap<(&str, &str), Vec<&str>> = x.cands.iter().fold(HashMap::new(), |mut m, c| {
        m.entry((c.conversation.as_str(), c.turn.as_str())).or_default().push(c.id.as_str());
        m
    });
    let (gold, gold_note) = match &x.gold {
        Gold::Listed { facts, .. } => (
            facts
                .iter()
                .map(|g| {
                    let matched: Vec<&str> = x
                        .cands
                        .iter()
                        .filter(|c| c.stored && c.conversation == g.conversation && c.gold_match.as_deref() == Some(g.id.as_str()))
                        .map(|c| c.id.as_str())
                        .collect();
                    let from: Vec<&str> =
                        g.evidence.iter().flat_map(|t| by_turn.get(&(g.conversation.as_str(), t.as_str())).cloned().unwrap_or_default()).collect();
                    let cause = missed.get(&(g.conversation.as_str(), g.id.as_str())).map(|m| m.cause);
                    json!({"c": g.conversation, "id": g.id, "e": g.episode, "x": g.text, "ev": g.evidence, "m": matched, "from": from, "miss": cause})
                })
                .collect::<Vec<_>>(),
            Value::Null,
        ),
        Gold::Unavailable(why) => (Vec::new(), json!(why)),
    };
    // The QA items (up to MAX_QA_ITEMS) come apart too, serialised with no value tree.
    let qa: Vec<QaJson<'_>> = x
        .qa
        .iter()
        .take(MAX_QA_ITEMS)
        .map(|q| {
            let sessions: Option<Vec<&String>> = match &x.gold {
                Gold::Listed { turn_episode, .. } => {
                    Some(q.evidence.iter().filter_map(|t| turn_episode.get(&(q.conversation.clone(), t.clone()))).collect())
                }
                Gold::Unavailable(_) => None,
            };
            let s = q
                .sources
                .iter()
                .map(|(s, r)| {
                    let items: Vec<RetrievedJson<'_>> = r
                        .retrieved
                        .iter()
                        .enumerate()
                        .map(|(k, id)| {
                            // Whether a formed fact or a turn is evidence the page works out itself.
                            let score = r.scores.get(k).copied().map(round3);
                            match s.as_str() {
                                "formed" | "raw_turns" => RetrievedJson::Scored(id, score),
                                _ => RetrievedJson::Judged(id, score, is_evidence(&turn_of, q, sessions.as_deref(), s, id)),
                            }
                        })
                        .collect();
                    let ranked =
                        SourceJson { a200: r.answer_in_200w, h: r.hit_rank, r: items, r200: r.recall_any_at_200w, r5: r.recall_any_at_5 };
                    (s.as_str(), ranked)
                })
                .collect();
            let holds: Vec<&str> =
                q.evidence.iter().flat_map(|t| by_turn.get(&(q.conversation.as_str(), t.as_str())).cloned().unwrap_or_default()).collect();
            QaJson { apart: q.apart, c: &q.conversation, cat: &q.category, ev: &q.evidence, holds, i: &q.item, q: &q.question, s }
        })
        .collect();
    let qa = serde_json::to_string(&qa).unwrap_or_else(|_| "[]".to_string());
    let e = &x.errors;
    let errors = json!({
        "missed_gold": e.missed_gold.len(),
        "unmatched_stored": e.unmatched_stored.len(),
        "formed_missed_raw_found": e.formed_missed_raw_found.iter().take(MAX_ERRORS).map(|&i| format!("{}/{}", x.qa[i].conversation, x.qa[i].item)).collect::<Vec<_>>(),
        "raw_missed_formed_found": e.raw_missed_formed_found.iter().take(MAX_ERRORS).map(|&i| format!("{}/{}", x.qa[i].conversation, x.qa[i].item)).collect::<Vec<_>>(),
        "never_judged": e.never_judged.iter().take(MAX_ERRORS).map(|u| json!([u.pair.conversation, u.pair.old_turn, u.pair.new_turn, u.pair.verdict, cause_text(&UNJUDGED_CAUSES, u.cause)])).collect::<Vec<_>>(),
        "causes": CAUSES.iter().map(|(k, t)| json!([k, t])).collect::<Vec<_>>(),
    });
    let data = json!({
        "facts": null, "facts_total": x.cands.len(), "gold": gold, "gold_note": gold_note,
        "qa": null, "qa_total": x.qa.len(), "errors": errors,
    });
    (data, cands, qa)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qa::{Budgeted, QaResult, QaRow, score};

    /// The items built from the rows in memory are the ones built from
    /// `qa.parquet`'s frame of the same rows: misses (no hit rank), answers
    /// undefined (null), abstention and adversarial items, several sources.
    #[test]
    fn qa_items_from_the_rows_equal_those_from_the_frame() {
        let ev: std::collections::BTreeSet<String> = ["t1".to_string()].into();
        let row = |conv: &str, item: usize, category: &str, source: &'static str, hit: usize, abstention: bool| QaRow {
            conversation: conv.into(),
            item,
            category: category.into(),
            source,
            question: format!("q{item}?"),
            as_of: None,
            abstention,
            evidence: vec!["t1".into(), "t7".into()],
            retrieved: (0..hit + 2).map(|i| format!("d{i}")).collect(),
            scores: (0..hit + 2).map(|i| 1.0 / (i as f64 + 3.0)).collect(),
            scored: score(&(0..hit + 2).map(|i| vec![if i == hit { "t1" } else { "t9" }.to_string()]).collect::<Vec<_>>(), &ev, 1),
            budgeted: Budgeted {
                recall_any_w: [0.0, (hit % 2) as f64, 1.0, 1.0],
                answer_in_w: if hit == 0 { [None; 3] } else { [Some(0.0), Some(1.0), Some(1.0)] },
                ..Budgeted::default()
            },
        };
        let rows = vec![
            row("c1", 0, "1 multi-hop", "formed", 0, false),
            row("c1", 0, "1 multi-hop", "raw_turns", 3, false),
            row("c1", 2, "5 adversarial", "formed", 12, false),
            row("c1", 2, "5 adversarial", "raw_sessions", 1, false),
            row("c2", 0, "knowledge-update", "formed", 2, true),
            row("c2", 0, "knowledge-update", "gold_facts", 1, true),
        ];
        let r = QaResult { rows, ..QaResult::default() };
        let from_frame = qa_items(&crate::qa::parquet_frame(&r).expect("frame"));
        let from_rows = qa_items_of(&r);
        assert_eq!(from_rows.len(), 3);
        assert!(from_rows[0].sources["formed"].hit_rank.is_some() && from_rows[1].sources["formed"].hit_rank.is_none());
        assert_eq!(format!("{from_rows:?}"), format!("{from_frame:?}"));
    }
}
