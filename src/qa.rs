//! Retrieval evaluation after formation: every QA item's question is sent
//! through the store's hybrid search ([`Store::search`]) against the
//! conversation's final store (the formed memory) and against two baselines
//! searched the same way with the same embedder: every turn a document
//! (`raw_turns`) and every session a document (`raw_sessions`). The
//! retrievals are scored with LongMemEval's retrieval metrics. Definitions in
//! docs/metrics.md, "Retrieval (QA)".

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use serde_json::{Value, json};

use crate::config::Config;
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::store::{Document, SearchParams, Store};
use crate::types::{Conversation, Dataset};

/// The largest k reported; every search asks for this many.
pub const MAX_K: usize = 10;
/// The three sources, in report order.
pub const SOURCES: [&str; 3] = ["formed", "raw_turns", "raw_sessions"];

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
pub fn score(retrieved: &[Vec<String>], evidence: &BTreeSet<String>, relevant_in_corpus: usize) -> Scored {
    let hit: Vec<bool> = retrieved.iter().map(|turns| turns.iter().any(|t| evidence.contains(t))).collect();
    let ideal: Vec<bool> = (0..relevant_in_corpus.min(MAX_K)).map(|_| true).collect();
    let mut out = Scored { recall_any: [0.0; 3], recall_all: [0.0; 3], ndcg_any: [0.0; 3], mrr: 0.0 };
    for (j, &k) in KS.iter().enumerate() {
        out.recall_any[j] = f64::from(u8::from(hit.iter().take(k).any(|&h| h)));
        let covered: BTreeSet<&String> = retrieved.iter().take(k).flatten().filter(|t| evidence.contains(*t)).collect();
        out.recall_all[j] = f64::from(u8::from(!evidence.is_empty() && covered.len() == evidence.len()));
        let ideal_dcg = dcg(&ideal, k);
        out.ndcg_any[j] = if ideal_dcg == 0.0 { 0.0 } else { dcg(&hit, k) / ideal_dcg };
    }
    out.mrr = hit.iter().take(MAX_K).position(|&h| h).map_or(0.0, |i| 1.0 / (i + 1) as f64);
    out
}

/// One row of `qa.csv`: one item, one source.
#[derive(Debug, Clone, PartialEq)]
pub struct QaRow {
    pub conversation: String,
    pub item: usize,
    pub category: String,
    pub source: &'static str,
    pub question: String,
    pub evidence: Vec<String>,
    pub retrieved: Vec<String>,
    pub scores: Vec<f64>,
    pub scored: Scored,
}

/// What the evaluation produced.
#[derive(Debug, Clone, Default)]
pub struct QaResult {
    pub rows: Vec<QaRow>,
    /// Documents each source indexes, summed over conversations.
    pub indexed: BTreeMap<&'static str, usize>,
    /// Evidence turn ids that name no turn of their conversation (one warning each).
    pub warnings: Vec<String>,
    /// Items with no known evidence turn: excluded from every figure.
    pub excluded: usize,
}

/// A conversation's corpus for one source: documents and each one's turns.
struct Corpus {
    turns_of: HashMap<String, Vec<String>>,
}

/// Evaluates every QA item of `dataset` against `store` (the run's store)
/// and the two baselines. `embedder` is the run's (its cache records or
/// replays the questions', turns' and sessions' vectors).
pub fn evaluate(dataset: &Dataset, store: &Store, embedder: &dyn Embedder, cfg: &Config) -> Result<QaResult> {
    use rayon::prelude::{IntoParallelRefIterator, ParallelIterator};
    let params = SearchParams::with_top_k(cfg, MAX_K);
    let facts = store.facts()?;
    let convs: Vec<&Conversation> = dataset.conversations.iter().filter(|c| !c.gold.qa.is_empty()).collect();
    // Conversations in parallel (each baseline is a store of its own), merged in dataset order.
    let parts: Vec<Result<QaResult>> = convs.par_iter().map(|conv| evaluate_conversation(conv, &facts, store, embedder, &params)).collect();
    let mut out = QaResult::default();
    for part in parts {
        let part = part?;
        out.rows.extend(part.rows);
        for (k, v) in part.indexed {
            *out.indexed.entry(k).or_default() += v;
        }
        out.warnings.extend(part.warnings);
        out.excluded += part.excluded;
    }
    Ok(out)
}

fn evaluate_conversation(
    conv: &Conversation,
    facts: &[crate::store::StoredFact],
    store: &Store,
    embedder: &dyn Embedder,
    params: &SearchParams,
) -> Result<QaResult> {
    let mut out = QaResult::default();
    let known: BTreeSet<&str> = conv.episodes.iter().flat_map(|e| e.turns.iter().map(|t| t.id.as_str())).collect();
    let formed = Corpus {
        turns_of: facts
            .iter()
            .filter(|f| f.conversation_id == conv.id && f.invalid_at.is_none() && f.superseded_by.is_none())
            .map(|f| (f.id.clone(), serde_json::from_str::<Vec<String>>(&f.source_turns).unwrap_or_default()))
            .collect(),
    };
    let (turns, sessions) = baselines(conv, embedder)?;
    out.indexed.insert("formed", formed.turns_of.len());
    out.indexed.insert("raw_turns", turns.1.turns_of.len());
    out.indexed.insert("raw_sessions", sessions.1.turns_of.len());
    let questions: Vec<&str> = conv.gold.qa.iter().map(|q| q.question.as_str()).collect();
    let vectors = embedder.embed(&questions, &format!("{}/qa", conv.id))?;
    for (i, item) in conv.gold.qa.iter().enumerate() {
        let mut evidence = BTreeSet::new();
        for t in &item.evidence {
            if known.contains(t.as_str()) {
                evidence.insert(t.clone());
            } else {
                out.warnings.push(format!("{}: QA item {i}: evidence turn {t:?} is not a turn of the conversation", conv.id));
            }
        }
        if evidence.is_empty() {
            out.excluded += 1;
            continue;
        }
        let q = vectors.get(i).map_or(&[][..], Vec::as_slice);
        let category = item.category.map_or_else(|| "none".to_string(), |c| c.to_string());
        for (source, st, corpus) in
            [("formed", store, &formed), ("raw_turns", &turns.0, &turns.1), ("raw_sessions", &sessions.0, &sessions.1)]
        {
            let hits = st.search(&conv.id, &item.question, q, params)?;
            let retrieved: Vec<Vec<String>> = hits.iter().map(|h| corpus.turns_of.get(&h.fact_id).cloned().unwrap_or_default()).collect();
            let relevant = corpus.turns_of.values().filter(|ts| ts.iter().any(|t| evidence.contains(t))).count();
            out.rows.push(QaRow {
                conversation: conv.id.clone(),
                item: i,
                category: category.clone(),
                source,
                question: item.question.clone(),
                evidence: evidence.iter().cloned().collect(),
                retrieved: hits.iter().map(|h| h.fact_id.clone()).collect(),
                scores: hits.iter().map(|h| h.score).collect(),
                scored: score(&retrieved, &evidence, relevant),
            });
        }
    }
    Ok(out)
}

/// The two baselines' in-memory stores: every turn a document, every session a document.
fn baselines(conv: &Conversation, embedder: &dyn Embedder) -> Result<((Store, Corpus), (Store, Corpus))> {
    let turn_docs: Vec<(String, String, String, Vec<String>)> = conv
        .episodes
        .iter()
        .flat_map(|e| e.turns.iter().map(move |t| (t.id.clone(), e.id.clone(), format!("{}: {}", t.speaker, t.text), vec![t.id.clone()])))
        .collect();
    let session_docs: Vec<(String, String, String, Vec<String>)> = conv
        .episodes
        .iter()
        .map(|e| {
            let text = e.turns.iter().map(|t| format!("{}: {}", t.speaker, t.text)).collect::<Vec<_>>().join("\n");
            (e.id.clone(), e.id.clone(), text, e.turns.iter().map(|t| t.id.clone()).collect())
        })
        .collect();
    Ok((index(conv, embedder, &turn_docs, "raw_turns")?, index(conv, embedder, &session_docs, "raw_sessions")?))
}

fn index(
    conv: &Conversation,
    embedder: &dyn Embedder,
    docs: &[(String, String, String, Vec<String>)],
    what: &str,
) -> Result<(Store, Corpus)> {
    let store = Store::in_memory()?;
    let texts: Vec<&str> = docs.iter().map(|d| d.2.as_str()).collect();
    let vectors = if texts.is_empty() { Vec::new() } else { embedder.embed(&texts, &format!("{}/{what}", conv.id))? };
    let documents: Vec<Document<'_>> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| Document { id: &d.0, episode: &d.1, text: &d.2, turns: &d.3, vector: vectors.get(i).map_or(&[][..], Vec::as_slice) })
        .collect();
    store.insert_documents(&conv.id, &documents)?;
    Ok((store, Corpus { turns_of: docs.iter().map(|d| (d.0.clone(), d.3.clone())).collect() }))
}

/// The mean of `f` over `rows`, or `None` when there are none.
fn mean(rows: &[&QaRow], f: impl Fn(&Scored) -> f64) -> Option<f64> {
    (!rows.is_empty()).then(|| rows.iter().map(|r| f(&r.scored)).sum::<f64>() / rows.len() as f64)
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
}

/// The summary metrics: per source (prefix `qa_` for the formed memory,
/// `qa_raw_turns_` and `qa_raw_sessions_` for the baselines) the recall,
/// nDCG and MRR figures, the items scored, the documents indexed, and per
/// category the same; plus the evaluation's warnings and exclusions.
pub fn summary_metrics(r: &QaResult) -> BTreeMap<String, Value> {
    let mut m = BTreeMap::new();
    for source in SOURCES {
        let prefix = if source == "formed" { "qa_".to_string() } else { format!("qa_{source}_") };
        let rows: Vec<&QaRow> = r.rows.iter().filter(|row| row.source == source).collect();
        figures(&mut m, &rows, &prefix);
        m.insert(format!("{prefix}items_indexed"), json!(r.indexed.get(source).copied().unwrap_or(0)));
        let categories: BTreeSet<&str> = rows.iter().map(|row| row.category.as_str()).collect();
        let mut by_cat = serde_json::Map::new();
        for c in categories {
            let mut cm = BTreeMap::new();
            let in_c: Vec<&QaRow> = rows.iter().copied().filter(|row| row.category == c).collect();
            figures(&mut cm, &in_c, "");
            by_cat.insert(c.to_string(), json!(cm));
        }
        m.insert(format!("{prefix}by_category"), Value::Object(by_cat));
    }
    m.insert("qa_evidence_unknown_turns".into(), json!(r.warnings.len()));
    m.insert("qa_items_excluded".into(), json!(r.excluded));
    m
}

/// `qa.csv`: one row per item and source, the retrieved ids and scores
/// `|`-separated in rank order.
pub fn write_csv(path: &Path, r: &QaResult) -> Result<()> {
    let cell = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let mut out = String::from(
        "conversation,item,category,source,question,evidence,retrieved,scores,hit_rank,recall_any_at_1,recall_any_at_5,recall_any_at_10,recall_all_at_5,recall_all_at_10,ndcg_any_at_5,ndcg_any_at_10,mrr\n",
    );
    for row in &r.rows {
        let s = &row.scored;
        let hit_rank = if s.mrr > 0.0 { format!("{}", (1.0 / s.mrr).round() as usize) } else { String::new() };
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6},{:.6},{:.6}\n",
            cell(&row.conversation),
            row.item,
            cell(&row.category),
            row.source,
            cell(&row.question),
            cell(&row.evidence.join("|")),
            cell(&row.retrieved.join("|")),
            cell(&row.scores.iter().map(|x| format!("{x:.6}")).collect::<Vec<_>>().join("|")),
            hit_rank,
            s.recall_any[0],
            s.recall_any[1],
            s.recall_any[2],
            s.recall_all[1],
            s.recall_all[2],
            s.ndcg_any[1],
            s.ndcg_any[2],
            s.mrr
        ));
    }
    std::fs::write(path, out).map_err(|e| Error::io(path, e))
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
        assert_eq!(score(&[], &ev(&["t1"]), 1), Scored { recall_any: [0.0; 3], recall_all: [0.0; 3], ndcg_any: [0.0; 3], mrr: 0.0 });
    }

    #[test]
    fn summary_means_per_source_and_category() {
        let row = |source: &'static str, category: &str, hit: bool| QaRow {
            conversation: "c".into(),
            item: 0,
            category: category.into(),
            source,
            question: "q".into(),
            evidence: vec!["t1".into()],
            retrieved: vec![],
            scores: vec![],
            scored: score(&turns(&[if hit { &["t1"] } else { &["x"] }]), &ev(&["t1"]), 1),
        };
        let r = QaResult {
            rows: vec![row("formed", "1", true), row("formed", "2", false), row("raw_turns", "1", false), row("raw_turns", "2", false)],
            indexed: [("formed", 7), ("raw_turns", 40)].into(),
            warnings: vec!["w".into()],
            excluded: 3,
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
    }
}
