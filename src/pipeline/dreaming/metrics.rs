//! The `dreaming` profile's own figures in `summary.json` (docs/metrics.md,
//! "The dreaming profile"): the ontology at the end of the run, operations
//! by effect and guard, passes and the evidence they consumed. The claims'
//! precision, recall and QA are the run's fact and QA metrics (the claims
//! are projected into the run's memory, see `profile::project_claims`).

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Value, json};

use crate::error::Result;
use crate::model::ontology::{ClaimStatus, OntologyView};
use crate::store::Store;
use crate::types::Dataset;

/// Active entities that share a canonical name or an alias with another
/// active entity of the same conversation, and the active entities.
pub fn duplicate_entities(view: &OntologyView) -> (usize, usize) {
    let active: Vec<_> = view.entities.iter().filter(|e| e.active).collect();
    let mut holders: HashMap<&str, HashSet<&str>> = HashMap::new();
    for e in &active {
        holders.entry(e.canonical_name.as_str()).or_default().insert(e.id.as_str());
        for a in &e.aliases {
            holders.entry(a.as_str()).or_default().insert(e.id.as_str());
        }
    }
    let dup = active
        .iter()
        .filter(|e| std::iter::once(&e.canonical_name).chain(&e.aliases).any(|n| holders.get(n.as_str()).is_some_and(|h| h.len() > 1)))
        .count();
    (dup, active.len())
}

fn ratio(num: usize, den: usize) -> Value {
    if den == 0 { Value::Null } else { json!((num as f64 / den as f64 * 1e6).round() / 1e6) }
}

/// The figures of a dreaming run over `dataset`'s conversations in `store`.
pub fn summary_metrics(store: &Store, dataset: &Dataset) -> Result<BTreeMap<String, Value>> {
    let mut m = BTreeMap::new();
    let (mut dup, mut entities, mut links) = (0, 0, 0);
    let mut claims: BTreeMap<&'static str, usize> = BTreeMap::new();
    let (mut turns, mut consumed, mut withheld) = (0, 0, 0);
    for conv in &dataset.conversations {
        let view = store.ontology_view(&conv.id)?;
        let (d, n) = duplicate_entities(&view);
        dup += d;
        entities += n;
        links += view.links.iter().filter(|l| l.active).count();
        for c in &view.claims {
            let k = match c.status {
                ClaimStatus::Active => "claims_active",
                ClaimStatus::Superseded => "claims_superseded",
                ClaimStatus::Retracted => "claims_retracted",
            };
            *claims.entry(k).or_default() += 1;
        }
        // Withheld turns (docs/dreaming.md, 9) are neither consumed nor
        // in the denominator.
        let held = store.withheld_turns(&conv.id)?.len();
        turns += conv.turn_count() - held.min(conv.turn_count());
        consumed += store.settled_turns(&conv.id)?.len() - held;
        withheld += held;
    }
    m.insert("entities_active".into(), json!(entities));
    m.insert("entity_duplicates".into(), json!(dup));
    m.insert("entity_duplicate_rate".into(), ratio(dup, entities));
    m.insert("links_active".into(), json!(links));
    for k in ["claims_active", "claims_superseded", "claims_retracted"] {
        m.insert(k.into(), json!(claims.get(k).copied().unwrap_or(0)));
    }
    m.insert("evidence_coverage".into(), ratio(consumed, turns));
    m.insert("evidence_withheld".into(), json!(withheld));
    let mut by_effect: BTreeMap<String, usize> = BTreeMap::new();
    let mut guards: BTreeMap<String, usize> = BTreeMap::new();
    let mut by_effect_kind: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    let mut by_op: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for (op, effect, kind, n) in store.onto_op_counts()? {
        *by_effect.entry(effect.clone()).or_default() += n;
        if let Some(k) = kind {
            *guards.entry(k.clone()).or_default() += n;
            *by_effect_kind.entry(effect.clone()).or_default().entry(k).or_default() += n;
        }
        *by_op.entry(op).or_default().entry(effect).or_default() += n;
    }
    // Guard rejections by kind: `failed` (refused) and `skipped` (not
    // applied: a duplicate, a dedupe, a control) apart.
    m.insert("rejections_failed".into(), json!(by_effect_kind.get("failed").cloned().unwrap_or_default()));
    m.insert("rejections_skipped".into(), json!(by_effect_kind.get("skipped").cloned().unwrap_or_default()));
    for e in ["applied", "skipped", "failed"] {
        m.insert(format!("ops_{e}"), json!(by_effect.get(e).copied().unwrap_or(0)));
    }
    m.insert("ops_by_operation".into(), json!(by_op));
    m.insert("guard_rejections".into(), json!(guards));
    let passes = store.dream_passes(None)?;
    let mut modes: BTreeMap<String, usize> = BTreeMap::new();
    for p in &passes {
        *modes.entry(p.mode.clone()).or_default() += 1;
    }
    m.insert("passes".into(), json!(passes.len()));
    m.insert("passes_by_mode".into(), json!(modes));
    let calls: usize = passes.iter().map(|p| p.tool_calls).sum();
    m.insert("tool_calls_per_pass_mean".into(), ratio(calls, passes.len()));
    m.insert("tool_calls_per_pass_max".into(), json!(passes.iter().map(|p| p.tool_calls).max().unwrap_or(0)));
    m.insert("backlog_after_pass_tokens_max".into(), json!(passes.iter().map(|p| p.backlog_tokens_after).max().unwrap_or(0)));
    // Every pass in order: its mode, tool calls and the backlog it left.
    let per_pass: Vec<Value> = passes
        .iter()
        .map(|p| {
            json!({
                "pass": p.id, "mode": p.mode, "trigger": p.trigger, "tool_calls": p.tool_calls,
                "ops_applied": p.ops_applied, "ops_skipped": p.ops_skipped, "ops_failed": p.ops_failed,
                "evidence_consumed": p.evidence_consumed, "backlog_turns_after": p.evidence_remaining,
                "backlog_tokens_after": p.backlog_tokens_after,
            })
        })
        .collect();
    m.insert("per_pass".into(), Value::Array(per_pass));
    Ok(m)
}

/// `report.md`'s "Dreaming" section from the figures of [`summary_metrics`].
pub fn report_section(m: &BTreeMap<String, Value>) -> String {
    use std::fmt::Write;
    let n = |k: &str| m.get(k).map(|v| v.to_string()).unwrap_or_else(|| "–".into());
    let mut o = String::from(
        "## Dreaming

",
    );
    let _ = writeln!(
        o,
        "The ontology at the end of the run (source: `summary.json`, `metrics.dreaming`): {} active entities, entity duplicate rate {}, {} active claims ({} superseded, {} retracted), {} active links; evidence coverage {}.\n",
        n("entities_active"),
        n("entity_duplicate_rate"),
        n("claims_active"),
        n("claims_superseded"),
        n("claims_retracted"),
        n("links_active"),
        n("evidence_coverage")
    );
    let _ = writeln!(o, "Operations: {} applied, {} skipped, {} failed.\n", n("ops_applied"), n("ops_skipped"), n("ops_failed"));
    let _ = writeln!(o, "| effect | guard kind | operations |\n|---|---|---:|");
    for effect in ["failed", "skipped"] {
        if let Some(Value::Object(kinds)) = m.get(&format!("rejections_{effect}")) {
            for (k, v) in kinds {
                let _ = writeln!(o, "| {effect} | `{k}` | {v} |");
            }
        }
    }
    let _ = writeln!(
        o,
        "\n| pass | mode | trigger | tool calls | applied | skipped | failed | turns consumed | backlog turns after | backlog tokens after |"
    );
    let _ = writeln!(o, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|");
    if let Some(Value::Array(passes)) = m.get("per_pass") {
        for p in passes {
            let f = |k: &str| p.get(k).map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())).unwrap_or_default();
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                f("pass"),
                f("mode"),
                f("trigger"),
                f("tool_calls"),
                f("ops_applied"),
                f("ops_skipped"),
                f("ops_failed"),
                f("evidence_consumed"),
                f("backlog_turns_after"),
                f("backlog_tokens_after")
            );
        }
    }
    o
}
