//! The run's summary metrics, computed from the per-episode and per-candidate
//! records and the dataset's gold labels. Each key is defined where it is
//! computed; `summary.json` is `{"metrics": {...}, "timings": {...}}`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::pipeline::{EpisodeRecord, Timings};
use crate::types::{Dataset, FactKind, Verdict};

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub metrics: BTreeMap<String, Value>,
    /// Milliseconds per stage, summed over episodes, and the run's wall time.
    pub timings: BTreeMap<String, f64>,
}

/// Precision, recall and F1 of a predicted set against a gold set.
pub fn prf(predicted: usize, gold: usize, hits: usize) -> (f64, f64, f64) {
    let p = if predicted == 0 { 0.0 } else { hits as f64 / predicted as f64 };
    let r = if gold == 0 { 0.0 } else { hits as f64 / gold as f64 };
    let f = if p + r == 0.0 { 0.0 } else { 2.0 * p * r / (p + r) };
    (p, r, f)
}

fn ratio(n: usize, d: usize) -> f64 {
    if d == 0 { 0.0 } else { n as f64 / d as f64 }
}

fn round(x: f64) -> Value {
    json!((x * 1e6).round() / 1e6)
}

/// Computes every metric. `live_facts` is read from the store at the end;
/// `skipped_conversations` counts conversations `--keep-going` skipped.
pub fn summarize(
    dataset: &Dataset,
    episodes: &[EpisodeRecord],
    live_facts: usize,
    skipped_conversations: usize,
    wall_ms: f64,
) -> Summary {
    let mut m = BTreeMap::new();
    let facts: Vec<_> = episodes.iter().flat_map(|e| &e.facts).collect();
    let n_eps = episodes.len();
    let turns: usize = episodes.iter().map(|e| e.turns).sum();
    let candidates = facts.len();
    let stored: Vec<_> = facts.iter().filter(|f| f.stored).collect();
    let count = |o: &str| facts.iter().filter(|f| f.outcome == o).count();
    let exact = count("exact_duplicate");
    let near = count("near_duplicate");
    let race = count("deduped");
    let noise = count("noise_rejected");

    m.insert("episodes".into(), json!(n_eps));
    m.insert("turns".into(), json!(turns));
    m.insert("candidates".into(), json!(candidates));
    m.insert("stored_facts".into(), json!(stored.len()));
    m.insert("live_facts".into(), json!(live_facts));
    m.insert("fact_density".into(), round(ratio(stored.len(), n_eps)));
    m.insert("facts_per_100_turns".into(), round(100.0 * ratio(stored.len(), turns)));
    m.insert("dedup_rate".into(), round(ratio(exact + near + race, candidates)));
    m.insert("exact_dup_rate".into(), round(ratio(exact + race, candidates)));
    m.insert("near_dup_rate".into(), round(ratio(near, candidates)));
    m.insert("duplicate_reduction".into(), round(if candidates == 0 { 0.0 } else { 1.0 - ratio(stored.len(), candidates) }));
    m.insert("closures".into(), json!(episodes.iter().map(|e| e.closures).sum::<usize>()));
    m.insert("noise_rejection_rate".into(), round(ratio(noise, candidates)));
    m.insert("judged_new".into(), json!(count("judged_new")));
    m.insert("low_fact_confidence".into(), json!(count("low_fact_confidence")));
    let coherent = stored
        .iter()
        .filter(|f| f.subject_entity.is_some() && (f.kind == FactKind::Literal || f.object_entity.is_some()))
        .count();
    m.insert("entity_coherence".into(), round(ratio(coherent, stored.len())));
    let decisions: Vec<_> = episodes.iter().flat_map(|e| &e.entity_decisions).collect();
    let merges = decisions.iter().filter(|d| matches!(d, crate::resolve::EntityDecision::Merge { .. })).count();
    let inserts = decisions.iter().filter(|d| matches!(d, crate::resolve::EntityDecision::Insert { .. })).count();
    m.insert("alias_merges".into(), json!(merges));
    m.insert("entities_created".into(), json!(inserts));
    let verdicts: Vec<_> = facts.iter().flat_map(|f| &f.verdicts).collect();
    m.insert("contradictions_judged".into(), json!(verdicts.len()));
    for v in [Verdict::Old, Verdict::New, Verdict::Neither] {
        m.insert(format!("verdict_{}", v.as_str()), json!(verdicts.iter().filter(|x| x.verdict == v).count()));
    }
    m.insert("invalidations".into(), json!(episodes.iter().map(|e| e.invalidations).sum::<usize>()));
    m.insert("review_needed".into(), json!(episodes.iter().map(|e| e.review_needed).sum::<usize>()));
    m.insert("blocked".into(), json!(episodes.iter().map(|e| e.blocked).sum::<usize>()));
    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    for w in episodes.iter().flat_map(|e| &e.warnings) {
        *by_kind.entry(w.kind.clone()).or_default() += 1;
    }
    m.insert("warnings".into(), json!(by_kind.values().sum::<usize>()));
    m.insert("warnings_by_kind".into(), json!(by_kind));
    m.insert("llm_calls".into(), json!(episodes.iter().map(|e| e.usage.calls).sum::<u64>()));
    m.insert("prompt_tokens".into(), json!(episodes.iter().map(|e| e.usage.prompt_tokens).sum::<u64>()));
    m.insert("completion_tokens".into(), json!(episodes.iter().map(|e| e.usage.completion_tokens).sum::<u64>()));
    m.insert("skipped_conversations".into(), json!(skipped_conversations));

    // Turn level against gold: a stored fact's source turn vs the gold facts'
    // evidence turns, pooled over conversations that ran.
    let ran: BTreeSet<&str> = episodes.iter().map(|e| e.conversation.as_str()).collect();
    let convs: Vec<_> = dataset.conversations.iter().filter(|c| ran.contains(c.id.as_str())).collect();
    if convs.iter().any(|c| !c.gold.facts.is_empty()) {
        let gold: BTreeSet<(String, String)> = convs
            .iter()
            .flat_map(|c| c.gold.facts.iter().flat_map(move |g| g.evidence.iter().map(move |t| (c.id.clone(), t.clone()))))
            .collect();
        let predicted: BTreeSet<(String, String)> = stored.iter().map(|f| (f.conversation.clone(), f.turn.clone())).collect();
        let hits = predicted.intersection(&gold).count();
        let (p, r, f) = prf(predicted.len(), gold.len(), hits);
        m.insert("turn_precision".into(), round(p));
        m.insert("turn_recall".into(), round(r));
        m.insert("turn_f1".into(), round(f));
        let all: BTreeSet<(String, String)> = convs
            .iter()
            .flat_map(|c| c.episodes.iter().flat_map(move |e| e.turns.iter().map(move |t| (c.id.clone(), t.id.clone()))))
            .collect();
        let all_hits = all.intersection(&gold).count();
        let (p, r, f) = prf(all.len(), gold.len(), all_hits);
        m.insert("baseline_all_turns_precision".into(), round(p));
        m.insert("baseline_all_turns_recall".into(), round(r));
        m.insert("baseline_all_turns_f1".into(), round(f));
        m.insert("gold_facts".into(), json!(convs.iter().map(|c| c.gold.facts.len()).sum::<usize>()));
        m.insert("gold_turns".into(), json!(gold.len()));
    }

    let mut t = Timings::default();
    for e in episodes {
        t.add(&e.timings);
    }
    let timings = BTreeMap::from([
        ("extract_ms".to_string(), t.extract_ms),
        ("embed_ms".to_string(), t.embed_ms),
        ("resolve_ms".to_string(), t.resolve_ms),
        ("dedupe_ms".to_string(), t.dedupe_ms),
        ("judge_ms".to_string(), t.judge_ms),
        ("write_ms".to_string(), t.write_ms),
        ("wall_ms".to_string(), wall_ms),
    ]);
    Summary { metrics: m, timings }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prf_hand_computed() {
        assert_eq!(prf(4, 5, 2), (0.5, 0.4, 2.0 * 0.5 * 0.4 / 0.9));
        assert_eq!(prf(0, 5, 0), (0.0, 0.0, 0.0));
        assert_eq!(prf(3, 0, 0), (0.0, 0.0, 0.0));
    }
}
