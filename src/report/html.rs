//! `report.html`: one standalone page per run and per comparison, to
//! explore it in a browser with no server and no network. The page's
//! code is `assets/report.{html,css,js}` (vanilla, no library), built
//! into the binary; its data is embedded as one JSON object (a `<script
//! type="application/json">` element) and bounded by the caps of
//! [`super::explore`].

use serde_json::{Value, json};

use super::explore::{Explore, run_data};
use super::{caveats, meaning, per_conversation_columns};
use crate::metrics::Analysis;

const TEMPLATE: &str = include_str!("../../assets/report.html");
const STYLE: &str = include_str!("../../assets/report.css");
const SCRIPT: &str = include_str!("../../assets/report.js");

/// The page's file name, beside `report.md` or `compare.md`.
pub const FILE: &str = "report.html";

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The page with `data` embedded: `<` is written `\u003c` in the JSON, so
/// no text in the data can close its element.
pub fn page(title: &str, data: &Value) -> String {
    page_json(title, &serde_json::to_string(data).unwrap_or_else(|_| "{}".to_string()))
}

/// [`page`] with `data`'s keys of `raw` (an object's, each set to any
/// placeholder) written as the JSON beside each, serialised already: the
/// bytes [`page`] writes when `data[key]` holds that JSON, without the
/// value tree in memory (a run's candidates and QA items, [`run_data`]).
fn page_raw(title: &str, data: &Value, raw: &[(&str, &str)]) -> String {
    let Value::Object(o) = data else { return page(title, data) };
    let mut json = String::with_capacity(raw.iter().map(|(_, r)| r.len()).sum::<usize>() + 4096);
    json.push('{');
    for (i, (k, v)) in o.iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        json.push_str(&serde_json::to_string(k).unwrap_or_default());
        json.push(':');
        if let Some((_, raw)) = raw.iter().find(|(key, _)| k == key) {
            json.push_str(raw);
        } else {
            json.push_str(&serde_json::to_string(v).unwrap_or_else(|_| "null".to_string()));
        }
    }
    json.push('}');
    page_json(title, &json)
}

/// The page with `json` (the data, serialised) embedded.
fn page_json(title: &str, json: &str) -> String {
    let json = json.replace('<', "\\u003c");
    TEMPLATE.replace("{{TITLE}}", &escape(title)).replace("/*STYLE*/", STYLE).replace("/*SCRIPT*/", SCRIPT).replace("{{DATA}}", &json)
}

/// The QA sources whose budgeted figures the summary has: the three of
/// every run first, then any other (a ceiling or an ablation a run adds,
/// `qa_<name>_recall_any_at_200w`), with their metric prefix.
fn qa_sources(m: &std::collections::BTreeMap<String, Value>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = super::QA_SOURCES
        .iter()
        .filter(|(_, p, _)| m.contains_key(&format!("{p}recall_any_at_200w")))
        .map(|(l, p, _)| (l.to_string(), p.to_string()))
        .collect();
    for k in m.keys() {
        if let Some(p) = k.strip_suffix("recall_any_at_200w").filter(|p| p.starts_with("qa_"))
            && !out.iter().any(|(_, q)| q == p)
        {
            out.push((p.trim_start_matches("qa_").trim_end_matches('_').replace('_', " "), p.to_string()));
        }
    }
    out
}

/// The budgeted QA figures: one row per source.
pub fn budgeted(m: &std::collections::BTreeMap<String, Value>) -> Value {
    let cols = ["recall_any_at_100w", "recall_any_at_200w", "recall_any_at_500w", "answer_in_100w", "answer_in_200w", "answer_in_500w"];
    let rows: Vec<Value> = qa_sources(m)
        .iter()
        .map(|(label, p)| {
            let mut row = vec![json!(label)];
            row.extend(cols.iter().map(|c| json!(super::with_interval(m, &format!("{p}{c}")))));
            Value::Array(row)
        })
        .collect();
    json!({"cols": cols, "rows": rows})
}

/// Headline metrics shown when the run has them, with what each means.
const HEADLINE: &[&str] = &[
    "candidates",
    "stored_facts",
    "live_facts",
    "invalidations",
    "turn_f1",
    "content_precision",
    "content_recall",
    "content_f1",
    "qa_evidence_coverage",
    "dedup_f1",
    "judge_accuracy",
    "contradiction_accuracy",
    "entity_resolution_rate",
];

/// The page of a run.
pub fn run_page(manifest: &Value, a: &Analysis, x: &Explore) -> String {
    let m = &a.summary.metrics;
    let dataset = manifest.pointer("/dataset/name").and_then(Value::as_str).unwrap_or("?");
    let mode = manifest.get("mode").and_then(Value::as_str).unwrap_or("?");
    let profile = manifest.get("profile").and_then(Value::as_str).unwrap_or(crate::config::DEFAULT_PROFILE);
    let title = format!("memform run: {dataset}, {mode} mode");
    let s = |k: &str| manifest.get(k).and_then(Value::as_str).unwrap_or("?").to_string();
    let mut what = vec![
        json!(["dataset", format!("{dataset} ({} format)", manifest.pointer("/dataset/format").and_then(Value::as_str).unwrap_or("?"))]),
        json!(["profile", profile]),
        json!(["mode", format!("{mode}: extractor {}, judge {}, embedder {}", s("extractor"), s("judge"), s("embedder"))]),
        json!(["write mode", s("write_mode")]),
    ];
    let changes = super::config_changes(&manifest["config"]);
    what.push(json!(["config", if changes.is_empty() { "defaults".to_string() } else { changes.join(", ") }]));
    let headline: Vec<Value> = HEADLINE
        .iter()
        .filter(|k| m.contains_key(**k))
        .map(|k| match caveats::not_computed(profile, k) {
            Some(why) => json!([k, "n/a", why]),
            None => json!([k, super::num(m.get(*k)), meaning(k)]),
        })
        .collect();
    let cols = per_conversation_columns(a);
    let df = &a.per_conversation;
    let conv_rows: Vec<Value> = (0..df.height())
        .map(|i| {
            let mut r = vec![json!(super::cell(df, "conversation", i))];
            r.extend(cols.iter().map(|c| json!(super::cell(df, c, i))));
            Value::Array(r)
        })
        .collect();
    let (mut data, facts, qa) = run_data(x);
    if let Value::Object(o) = &mut data {
        o.insert("kind".into(), json!("run"));
        o.insert("title".into(), json!(title));
        o.insert("caveats".into(), json!(caveats::of_run(manifest)));
        o.insert("what".into(), Value::Array(what));
        o.insert("headline".into(), Value::Array(headline));
        o.insert("budgeted".into(), if m.contains_key("qa_recall_any_at_200w") { budgeted(m) } else { Value::Null });
        o.insert("conversations".into(), json!({"cols": cols, "rows": conv_rows}));
    }
    page_raw(&title, &data, &[("facts", &facts), ("qa", &qa)])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page written with a key's JSON given apart is the page written
    /// from the whole value: same key order, separators and escaping (`<`
    /// inside the given JSON included).
    #[test]
    fn a_key_serialised_apart_gives_the_same_page() {
        let facts = json!([{"x": "a </script> b", "p": [["f1", "old", null]], "cf": 0.9}, {"x": "ünï \"q\"", "cf": null}]);
        let whole = json!({"budgeted": null, "errors": {"n": 1}, "facts": facts, "facts_total": 2, "qa": [], "title": "t <b>"});
        let mut apart = whole.clone();
        apart["facts"] = Value::Null;
        let raw = serde_json::to_string(&facts).unwrap();
        assert_eq!(page_raw("T", &apart, &[("facts", &raw)]), page("T", &whole));
        assert_ne!(page_raw("T", &apart, &[("facts", "[]")]), page("T", &whole));
    }
}
