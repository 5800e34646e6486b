//! A comparison's `report.html` (beside `compare.md`): the metrics of
//! every variant, and the gold facts, QA items and stored facts whose
//! outcome differs between variants, each with its per-variant detail.
//! Each run is read from its directory as `memform report` reads it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::Side;
use crate::error::Result;
use crate::report::explore::{Explore, Gold, Inputs, MAX_ERRORS, ran_episodes};

/// Retrieved items shown per variant in a QA item's detail.
const SHOWN_RETRIEVED: usize = 5;

struct Variant {
    label: String,
    manifest: Value,
    x: Explore,
}

/// A gold fact's outcome in one variant: `matched` or why it was missed.
fn gold_status(x: &Explore) -> BTreeMap<(String, String), (String, Vec<String>)> {
    let mut out = BTreeMap::new();
    if let Gold::Listed { facts, .. } = &x.gold {
        for g in facts {
            let matched: Vec<String> = x
                .cands
                .iter()
                .filter(|c| c.stored && c.conversation == g.conversation && c.gold_match.as_deref() == Some(g.id.as_str()))
                .map(|c| c.content.clone())
                .collect();
            let status = match x.errors.missed_gold.iter().find(|m| m.gold.conversation == g.conversation && m.gold.id == g.id) {
                Some(m) => format!("missed: {}", m.cause),
                None => "matched".to_string(),
            };
            out.insert((g.conversation.clone(), g.id.clone()), (status, matched));
        }
    }
    out
}

/// The page data of a comparison of `sides` (`comparison`: its
/// `compare.json`), read from the runs' directories.
pub fn data(sides: &[Side], comparison: &Value) -> Result<Value> {
    let mut vs = Vec::new();
    for s in sides {
        let (manifest, a) = crate::regenerate::load_analysis(&s.dir)?;
        let gold = Gold::from_manifest(&manifest, &ran_episodes(&a));
        let x = Explore::new(&a, Inputs::read(&s.dir, gold)?);
        vs.push(Variant { label: s.label.clone(), manifest, x });
    }
    let labels: Vec<&str> = vs.iter().map(|v| v.label.as_str()).collect();
    let caveats: Vec<String> =
        vs.iter().flat_map(|v| crate::report::caveats::of_run(&v.manifest).into_iter().map(move |c| format!("{}: {c}", v.label))).collect();
    // Metric rows: [metric, values per variant, uplift of each against the first, direction, variants not computing it].
    let metrics: Vec<Value> = match comparison.get("pairs") {
        None => comparison["metrics"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .map(|r| {
                        let na: Vec<usize> = r["not_computed"]
                            .as_array()
                            .map(|s| {
                                s.iter()
                                    .filter_map(|x| match x.as_str() {
                                        Some("A") => Some(0),
                                        Some("B") => Some(1),
                                        _ => None,
                                    })
                                    .collect()
                            })
                            .unwrap_or_default();
                        json!([r["metric"], [r["a"], r["b"]], [[r["uplift"], r["ci_low"], r["ci_high"]]], r["higher_is_better"], na])
                    })
                    .collect()
            })
            .unwrap_or_default(),
        Some(_) => comparison["metrics"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .map(|r| {
                        let up: Vec<Value> = r["against_first"]
                            .as_array()
                            .map(|a| a.iter().map(|x| json!([x["uplift"], x["ci_low"], x["ci_high"]])).collect())
                            .unwrap_or_default();
                        json!([r["metric"], r["values"], up, r["higher_is_better"], r.get("not_computed").cloned().unwrap_or(json!([]))])
                    })
                    .collect()
            })
            .unwrap_or_default(),
    };
    // Gold facts whose outcome differs.
    let statuses: Vec<_> = vs.iter().map(|v| gold_status(&v.x)).collect();
    let texts: BTreeMap<(String, String), String> = match &vs[0].x.gold {
        Gold::Listed { facts, .. } => facts.iter().map(|g| ((g.conversation.clone(), g.id.clone()), g.text.clone())).collect(),
        Gold::Unavailable(_) => BTreeMap::new(),
    };
    let keys: BTreeSet<&(String, String)> = statuses.iter().flat_map(|s| s.keys()).collect();
    let mut gold = Vec::new();
    for k in keys {
        let per: Vec<Option<&(String, Vec<String>)>> = statuses.iter().map(|s| s.get(k)).collect();
        let matched: Vec<bool> = per.iter().map(|p| p.is_some_and(|(s, _)| s == "matched")).collect();
        if matched.iter().all(|m| *m == matched[0]) {
            continue;
        }
        let cells: Vec<Value> = per.iter().map(|p| p.map_or(json!(["–", []]), |(s, m)| json!([s, m]))).collect();
        gold.push(json!({"c": k.0, "id": k.1, "x": texts.get(k), "v": cells}));
        if gold.len() >= MAX_ERRORS {
            break;
        }
    }
    // QA items whose formed-memory outcome (recall_any at 200 words) differs.
    let qa_of = |x: &Explore| -> BTreeMap<(String, String), usize> {
        x.qa.iter().enumerate().map(|(i, q)| ((q.conversation.clone(), q.item.clone()), i)).collect()
    };
    let idx: Vec<_> = vs.iter().map(|v| qa_of(&v.x)).collect();
    let mut qa = Vec::new();
    for (k, &i0) in &idx[0] {
        let q0 = &vs[0].x.qa[i0];
        let per: Vec<Option<&crate::report::explore::Ranked>> =
            vs.iter().zip(&idx).map(|(v, ix)| ix.get(k).and_then(|&i| v.x.qa[i].sources.get("formed"))).collect();
        let hit: Vec<Option<bool>> = per.iter().map(|r| r.and_then(|r| r.recall_any_at_200w).map(|x| x > 0.0)).collect();
        if hit.iter().all(|h| *h == hit[0]) {
            continue;
        }
        let cells: Vec<Value> = vs
            .iter()
            .zip(&per)
            .map(|(v, r)| match r {
                None => json!(null),
                Some(r) => {
                    let content = |id: &str| v.x.cands.iter().find(|c| c.id == id).map(|c| c.content.clone());
                    let turn = |id: &str| v.x.cands.iter().find(|c| c.id == id).map(|c| c.turn.clone());
                    let items: Vec<Value> = r
                        .retrieved
                        .iter()
                        .take(SHOWN_RETRIEVED)
                        .map(|id| json!([id, content(id), turn(id).map(|t| q0.evidence.contains(&t))]))
                        .collect();
                    json!({"r200": r.recall_any_at_200w, "h": r.hit_rank, "r": items})
                }
            })
            .collect();
        qa.push(json!({"c": k.0, "i": k.1, "cat": q0.category, "q": q0.question, "ev": q0.evidence, "apart": q0.apart, "v": cells}));
        if qa.len() >= MAX_ERRORS {
            break;
        }
    }
    // Stored facts (by conversation and content) some variants stored and others did not.
    let stored: Vec<BTreeSet<(String, String)>> =
        vs.iter().map(|v| v.x.cands.iter().filter(|c| c.stored).map(|c| (c.conversation.clone(), c.content.clone())).collect()).collect();
    let all: BTreeSet<&(String, String)> = stored.iter().flatten().collect();
    let facts: Vec<Value> = all
        .into_iter()
        .filter(|k| !stored.iter().all(|s| s.contains(*k)))
        .take(MAX_ERRORS)
        .map(|k| json!({"c": k.0, "x": k.1, "v": stored.iter().map(|s| s.contains(k)).collect::<Vec<_>>()}))
        .collect();
    let dataset = comparison.pointer("/dataset/name").and_then(Value::as_str).unwrap_or("?");
    Ok(json!({
        "kind": "compare",
        "title": format!("memform compare: {dataset}, {}", labels.join(" vs ")),
        "variants": labels,
        "caveats": caveats,
        "metrics": metrics,
        "gold": gold,
        "qa": qa,
        "stored": facts,
    }))
}

/// The page of a comparison (see [`data`]).
pub fn render(sides: &[Side], comparison: &Value) -> Result<String> {
    let d = data(sides, comparison)?;
    let title = d["title"].as_str().unwrap_or("memform compare").to_string();
    Ok(crate::report::html::page(&title, &d))
}
