//! Lenient reading of model answers. The text is cleaned (`<think>` blocks
//! stripped, Markdown fences removed), the first JSON object in it is found
//! (prose around it tolerated, a cut-off answer repaired to its last
//! complete element), then read field by field: an item with a wrong type is
//! skipped with a warning and the rest survives. Nothing here fails.

use std::collections::{BTreeSet, HashSet};

use serde_json::{Map, Value};

use crate::model::raw::{RawEntity, RawExtraction, RawFact};
use crate::types::{Turn, Verdict, Warning};

/// Most characters of an answer quoted in a warning.
const EXCERPT: usize = 120;

/// The answer with reasoning blocks and Markdown fence lines removed.
pub fn clean_answer(text: &str, warnings: &mut Vec<Warning>) -> String {
    let mut s = text.to_string();
    while let Some(open) = find_ci(&s, "<think>") {
        match find_ci(&s[open..], "</think>") {
            Some(rel) => s.replace_range(open..open + rel + "</think>".len(), ""),
            None => {
                warnings.push(Warning::new("llm_unclosed_think", "answer opens a <think> block that never closes; dropped from there on"));
                s.truncate(open);
                break;
            }
        }
    }
    if let Some(close) = find_ci(&s, "</think>") {
        s.replace_range(..close + "</think>".len(), "");
    }
    s.lines().filter(|l| !l.trim_start().starts_with("```")).collect::<Vec<_>>().join("\n").trim().to_string()
}

fn find_ci(hay: &str, needle: &str) -> Option<usize> {
    hay.to_ascii_lowercase().find(needle)
}

/// The first JSON object in `text`. A cut-off object is closed after its
/// last complete element (with an `llm_truncated_json` warning).
pub fn find_json_object(text: &str, warnings: &mut Vec<Warning>) -> Option<Map<String, Value>> {
    for (start, _) in text.match_indices('{').take(64) {
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(Value::Object(map))) => return Some(map),
            Some(Err(e)) if e.is_eof() => {
                if let Some(map) = repair_truncated(&text[start..]) {
                    warnings.push(Warning::new("llm_truncated_json", "answer JSON is cut off; kept what was complete"));
                    return Some(map);
                }
            }
            _ => {}
        }
    }
    None
}

/// Closes a cut-off JSON object after the last `}`, `]` or `[` at which
/// every open container can be closed into valid JSON.
fn repair_truncated(text: &str) -> Option<Map<String, Value>> {
    let mut stack: Vec<u8> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    let mut cuts: Vec<(usize, Vec<u8>)> = Vec::new();
    for (i, b) in text.bytes().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => stack.push(b'}'),
            b'[' => {
                stack.push(b']');
                cuts.push((i + 1, stack.clone()));
            }
            b'}' | b']' => {
                stack.pop();
                if stack.is_empty() {
                    break;
                }
                cuts.push((i + 1, stack.clone()));
            }
            _ => {}
        }
    }
    for (end, open) in cuts.iter().rev().take(256) {
        let mut candidate = text[..*end].to_string();
        candidate.extend(open.iter().rev().map(|&c| c as char));
        if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(&candidate) {
            return Some(map);
        }
    }
    None
}

fn excerpt(text: &str) -> String {
    let t: String = text.chars().take(EXCERPT).collect();
    if t.len() < text.len() { format!("{t}…") } else { t }
}

/// The cleaned answer's JSON object, or a warning saying why there is none.
fn answer_object(text: &str, warnings: &mut Vec<Warning>) -> Option<Map<String, Value>> {
    let cleaned = clean_answer(text, warnings);
    if cleaned.is_empty() {
        warnings.push(Warning::new("llm_empty_answer", "the model's answer is empty"));
        return None;
    }
    let found = find_json_object(&cleaned, warnings);
    if found.is_none() {
        warnings.push(Warning::new("llm_no_json", format!("no JSON object in the answer: {:?}", excerpt(&cleaned))));
    }
    found
}

/// Reads the first present key of `names`.
fn field<'a>(obj: &'a Map<String, Value>, names: &[&str]) -> Option<&'a Value> {
    names.iter().find_map(|n| obj.get(*n)).filter(|v| !v.is_null())
}

/// An array field: missing → empty with a warning; not an array → empty with a warning.
fn array<'a>(obj: &'a Map<String, Value>, names: &[&str], warnings: &mut Vec<Warning>) -> &'a [Value] {
    match field(obj, names) {
        Some(Value::Array(items)) => items,
        Some(other) => {
            warnings.push(Warning::new("llm_wrong_type", format!("`{}` is {}, not an array; ignored", names[0], type_name(other))));
            &[]
        }
        None => {
            warnings.push(Warning::new("llm_missing_field", format!("answer has no `{}` array", names[0])));
            &[]
        }
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A string, or a number/boolean written as one.
fn scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Parses an extraction answer into the graph contract. `turns` are the
/// episode's turns: a fact naming an unknown turn id is re-attached to the
/// turn its quote comes from, or dropped.
pub fn parse_extraction(text: &str, turns: &[Turn]) -> RawExtraction {
    let mut out = RawExtraction { graph: true, ..RawExtraction::default() };
    let Some(obj) = answer_object(text, &mut out.warnings) else { return out };
    let mut warnings = std::mem::take(&mut out.warnings);

    for (i, item) in array(&obj, &["entities"], &mut warnings).iter().enumerate() {
        let Some(e) = item.as_object() else {
            warnings.push(skip("entities", i, format!("is {}, not an object", type_name(item))));
            continue;
        };
        let Some(name) = field(e, &["name"]).and_then(Value::as_str) else {
            warnings.push(skip("entities", i, "has no string `name`".into()));
            continue;
        };
        let entity_type = match field(e, &["type", "entityType", "entity_type"]) {
            Some(Value::String(t)) => t.clone(),
            Some(other) => {
                warnings.push(Warning::new("llm_wrong_type", format!("entities[{i}].type is {}; left empty", type_name(other))));
                String::new()
            }
            None => String::new(),
        };
        out.entities.push(RawEntity { name: name.to_string(), entity_type });
    }

    let ids: HashSet<&str> = turns.iter().map(|t| t.id.as_str()).collect();
    for (list, names) in [("relationships", &["relationships"][..]), ("literalFacts", &["literalFacts", "literal_facts"][..])] {
        let items = array(&obj, names, &mut warnings);
        for (i, item) in items.iter().enumerate() {
            if let Some(f) = parse_fact(list, i, item, turns, &ids, &mut warnings) {
                if list == "relationships" {
                    out.relationships.push(f);
                } else {
                    out.literal_facts.push(f);
                }
            }
        }
    }
    out.warnings = warnings;
    out
}

fn skip(list: &str, i: usize, why: String) -> Warning {
    Warning::new("llm_wrong_type", format!("{list}[{i}] {why}; skipped"))
}

fn parse_fact(list: &str, i: usize, item: &Value, turns: &[Turn], ids: &HashSet<&str>, warnings: &mut Vec<Warning>) -> Option<RawFact> {
    let Some(f) = item.as_object() else {
        warnings.push(skip(list, i, format!("is {}, not an object", type_name(item))));
        return None;
    };
    let text_field = |names: &[&str], warnings: &mut Vec<Warning>| -> Option<String> {
        match field(f, names) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                warnings.push(skip(list, i, format!("`{}` is {}", names[0], type_name(other))));
                None
            }
            None => {
                warnings.push(skip(list, i, format!("has no `{}`", names[0])));
                None
            }
        }
    };
    let subject = text_field(&["subject"], warnings)?;
    let predicate = text_field(&["predicate"], warnings)?;
    let object = match field(f, &["object"]) {
        Some(v) => match scalar_string(v) {
            Some(s) => s,
            None => {
                warnings.push(skip(list, i, format!("`object` is {}", type_name(v))));
                return None;
            }
        },
        None => {
            warnings.push(skip(list, i, "has no `object`".into()));
            return None;
        }
    };
    let optional_text = |names: &[&str], warnings: &mut Vec<Warning>| -> Option<String> {
        match field(f, names) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                warnings.push(Warning::new("llm_wrong_type", format!("{list}[{i}].{} is {}; ignored", names[0], type_name(other))));
                None
            }
            None => None,
        }
    };
    let content = optional_text(&["content", "fact"], warnings);
    let fact_type = optional_text(&["factType", "fact_type", "type"], warnings).unwrap_or_default();
    let source_quote = optional_text(&["sourceQuote", "source_quote", "quote"], warnings).unwrap_or_default();
    let valid_from = optional_text(&["validFrom", "valid_from"], warnings);
    let valid_until = optional_text(&["validUntil", "valid_until"], warnings);
    let confidence = match field(f, &["confidence"]) {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(DEFAULT_CONFIDENCE),
        Some(Value::String(s)) if s.trim().parse::<f64>().is_ok() => s.trim().parse::<f64>().unwrap_or(DEFAULT_CONFIDENCE),
        Some(other) => {
            warnings
                .push(Warning::new("llm_wrong_type", format!("{list}[{i}].confidence is {}; {DEFAULT_CONFIDENCE} used", type_name(other))));
            DEFAULT_CONFIDENCE
        }
        None => {
            warnings.push(Warning::new("llm_missing_field", format!("{list}[{i}] has no confidence; {DEFAULT_CONFIDENCE} used")));
            DEFAULT_CONFIDENCE
        }
    };
    let claimed = field(f, &["sourceTurn", "source_turn", "turn"]).and_then(scalar_string);
    let source_turn = resolve_turn(claimed.as_deref(), &source_quote, turns, ids);
    let source_turn = match (source_turn, claimed) {
        (Some(t), Some(c)) if t == normalise_turn_ref(&c) => t,
        (Some(t), claimed) => {
            warnings.push(Warning::new(
                "llm_unknown_turn",
                format!(
                    "{list}[{i}] names turn {:?}, not a turn of this episode; attached to {t} where its quote is",
                    claimed.unwrap_or_default()
                ),
            ));
            t
        }
        (None, claimed) => {
            warnings.push(Warning::new(
                "llm_unknown_turn",
                format!(
                    "{list}[{i}] names turn {:?}, not a turn of this episode, and its quote is in no turn; skipped",
                    claimed.unwrap_or_default()
                ),
            ));
            return None;
        }
    };
    Some(RawFact { subject, predicate, object, content, fact_type, confidence, source_quote, source_turn, valid_from, valid_until })
}

/// Confidence given to a fact whose answer has none.
pub const DEFAULT_CONFIDENCE: f64 = 0.5;

fn normalise_turn_ref(s: &str) -> String {
    s.trim().trim_start_matches('[').trim_end_matches(']').trim().to_string()
}

/// The episode turn a fact belongs to: its claimed id when that is a turn of
/// the episode, else the first turn whose text contains the quote.
fn resolve_turn(claimed: Option<&str>, quote: &str, turns: &[Turn], ids: &HashSet<&str>) -> Option<String> {
    if let Some(c) = claimed {
        let c = normalise_turn_ref(c);
        if ids.contains(c.as_str()) {
            return Some(c);
        }
    }
    let q = quote.trim().to_lowercase();
    if q.chars().count() < 4 {
        return None;
    }
    turns.iter().find(|t| t.text.to_lowercase().contains(&q)).map(|t| t.id.clone())
}

/// A judge answer read leniently.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedVerdicts {
    pub verdicts: Vec<(usize, Verdict)>,
    pub warnings: Vec<Warning>,
}

/// Parses a batched judge answer. Verdicts naming an index outside
/// `known` are dropped with a warning; a second verdict for an index is
/// ignored; indices with no valid verdict are listed in one warning (they
/// count as `neither`).
pub fn parse_verdicts(text: &str, known: &BTreeSet<usize>) -> ParsedVerdicts {
    let mut out = ParsedVerdicts::default();
    let Some(obj) = answer_object(text, &mut out.warnings) else { return out };
    let mut warnings = std::mem::take(&mut out.warnings);
    let mut seen = BTreeSet::new();
    for (i, item) in array(&obj, &["verdicts"], &mut warnings).iter().enumerate() {
        let Some(v) = item.as_object() else {
            warnings.push(skip("verdicts", i, format!("is {}, not an object", type_name(item))));
            continue;
        };
        let index = match field(v, &["pair", "index", "id"]) {
            Some(Value::Number(n)) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
            Some(Value::String(s)) => s.trim().parse::<usize>().ok(),
            _ => None,
        };
        let Some(index) = index else {
            warnings.push(skip("verdicts", i, "has no pair number".into()));
            continue;
        };
        if !known.contains(&index) {
            warnings.push(Warning::new("llm_unknown_pair", format!("verdicts[{i}] names pair {index}, which was not asked; dropped")));
            continue;
        }
        let verdict = field(v, &["verdict"]).and_then(Value::as_str).and_then(|s| match s.trim().to_ascii_lowercase().as_str() {
            "old" => Some(Verdict::Old),
            "new" => Some(Verdict::New),
            "neither" => Some(Verdict::Neither),
            _ => None,
        });
        let Some(verdict) = verdict else {
            warnings.push(Warning::new(
                "llm_bad_verdict",
                format!(
                    "verdicts[{i}] for pair {index} is not old, new or neither: {}; dropped",
                    field(v, &["verdict"]).map(Value::to_string).unwrap_or_else(|| "missing".into())
                ),
            ));
            continue;
        };
        if !seen.insert(index) {
            warnings
                .push(Warning::new("llm_duplicate_verdict", format!("verdicts[{i}] answers pair {index} again; the first answer stands")));
            continue;
        }
        out.verdicts.push((index, verdict));
    }
    let missing: Vec<String> = known.iter().filter(|k| !seen.contains(*k)).map(|k| k.to_string()).collect();
    if !missing.is_empty() {
        warnings.push(Warning::new("llm_missing_verdict", format!("no verdict for pair(s) {}; counted as neither", missing.join(", "))));
    }
    out.warnings = warnings;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turns() -> Vec<Turn> {
        vec![
            Turn { id: "D1:1".into(), speaker: "Ann".into(), text: "I work at Acme Corp now.".into() },
            Turn { id: "D1:2".into(), speaker: "Bo".into(), text: "I love hiking in the Alps.".into() },
        ]
    }

    fn fact(turn: &str, quote: &str) -> String {
        format!(
            r#"{{"subject":"Ann","predicate":"works at","object":"Acme Corp","content":"Ann works at Acme Corp","factType":"fact","confidence":0.9,"sourceQuote":"{quote}","sourceTurn":"{turn}"}}"#
        )
    }

    #[test]
    fn think_blocks_and_fences_are_stripped() {
        let text = format!(
            "<think>the user wants {{\"entities\": 1}}</think>\n```json\n{{\"entities\":[{{\"name\":\"Acme Corp\",\"type\":\"ORG\"}}],\"relationships\":[{}],\"literalFacts\":[]}}\n```",
            fact("D1:1", "work at Acme")
        );
        let r = parse_extraction(&text, &turns());
        assert_eq!(r.warnings, vec![]);
        assert!(r.graph);
        assert_eq!(r.entities, vec![RawEntity { name: "Acme Corp".into(), entity_type: "ORG".into() }]);
        assert_eq!(r.relationships.len(), 1);
        assert_eq!(r.relationships[0].source_turn, "D1:1");
        assert_eq!(r.relationships[0].confidence, 0.9);
    }

    #[test]
    fn unclosed_think_and_orphan_close_tag() {
        let mut w = Vec::new();
        assert_eq!(clean_answer("{\"a\":1} <think> and then", &mut w), "{\"a\":1}");
        assert_eq!(w[0].kind, "llm_unclosed_think");
        let mut w = Vec::new();
        assert_eq!(clean_answer("reasoning...</think>{\"a\":1}", &mut w), "{\"a\":1}");
        assert!(w.is_empty());
    }

    #[test]
    fn prose_around_json_is_tolerated() {
        let text = format!(
            "Sure! Here {{is}} the memory: {{\"entities\":[],\"relationships\":[],\"literalFacts\":[{}]}} Hope this helps {{:)}}",
            fact("D1:1", "Acme")
        );
        let r = parse_extraction(&text, &turns());
        assert_eq!(r.literal_facts.len(), 1, "{:?}", r.warnings);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    #[test]
    fn truncated_json_keeps_complete_items() {
        let full = format!(
            "{{\"entities\":[{{\"name\":\"Acme Corp\",\"type\":\"ORG\"}}],\"relationships\":[],\"literalFacts\":[{},{}]}}",
            fact("D1:1", "Acme"),
            fact("D1:2", "hiking")
        );
        let cut = &full[..full.len() - 40];
        let r = parse_extraction(cut, &turns());
        assert_eq!(r.entities.len(), 1);
        assert_eq!(r.literal_facts.len(), 1);
        assert_eq!(r.literal_facts[0].source_turn, "D1:1");
        let kinds: Vec<&str> = r.warnings.iter().map(|w| w.kind.as_str()).collect();
        assert!(kinds.contains(&"llm_truncated_json"), "{kinds:?}");
    }

    #[test]
    fn wrong_types_skip_items_with_warnings_and_keep_the_rest() {
        let text = format!(
            r#"{{"entities":[{{"name":3,"type":"ORG"}},"Acme",{{"name":"Acme Corp","type":7}}],
               "relationships":{{"oops":true}},
               "literalFacts":[{{"subject":"Ann","predicate":["x"],"object":"y"}},
                               {{"subject":"Ann","predicate":"is aged","object":34,"confidence":"0.8","sourceQuote":"","sourceTurn":"D1:1"}},
                               {},
                               {{"subject":"Ann","predicate":"likes","object":"tea","confidence":"high","sourceTurn":"D1:2","validFrom":5}}]}}"#,
            fact("D1:1", "Acme")
        );
        let r = parse_extraction(&text, &turns());
        assert_eq!(r.entities, vec![RawEntity { name: "Acme Corp".into(), entity_type: String::new() }]);
        assert!(r.relationships.is_empty());
        assert_eq!(r.literal_facts.len(), 3, "{:?}", r.warnings);
        assert_eq!(r.literal_facts[0].object, "34");
        assert_eq!(r.literal_facts[0].confidence, 0.8);
        assert_eq!(r.literal_facts[2].confidence, DEFAULT_CONFIDENCE);
        assert_eq!(r.literal_facts[2].valid_from, None);
        let wrong = r.warnings.iter().filter(|w| w.kind == "llm_wrong_type").count();
        // name 3, "Acme", type 7, relationships object, predicate array, confidence "high", validFrom 5
        assert_eq!(wrong, 7, "{:?}", r.warnings);
    }

    #[test]
    fn unknown_turn_ids_are_repaired_from_the_quote_or_dropped() {
        let text = format!(
            "{{\"entities\":[],\"relationships\":[],\"literalFacts\":[{},{},{}]}}",
            fact("[D1:1]", "Acme"),
            fact("D9:9", "hiking in the alps"),
            fact("turn 4", "something never said")
        );
        let r = parse_extraction(&text, &turns());
        let got: Vec<&str> = r.literal_facts.iter().map(|f| f.source_turn.as_str()).collect();
        assert_eq!(got, vec!["D1:1", "D1:2"]);
        let unknown: Vec<&Warning> = r.warnings.iter().filter(|w| w.kind == "llm_unknown_turn").collect();
        assert_eq!(unknown.len(), 2, "{:?}", r.warnings);
        assert!(unknown[0].message.contains("D9:9") && unknown[0].message.contains("D1:2"));
        assert!(unknown[1].message.contains("skipped"));
    }

    #[test]
    fn empty_and_non_json_answers_warn() {
        let r = parse_extraction("  <think>hmm</think> ", &turns());
        assert_eq!(r.warnings[0].kind, "llm_empty_answer");
        assert!(r.entities.is_empty() && r.graph);
        let r = parse_extraction("I cannot help with that.", &turns());
        assert_eq!(r.warnings[0].kind, "llm_no_json");
        let r = parse_extraction("{\"facts\": []}", &turns());
        let kinds: Vec<&str> = r.warnings.iter().map(|w| w.kind.as_str()).collect();
        assert_eq!(kinds, vec!["llm_missing_field"; 3]);
    }

    #[test]
    fn verdicts_by_index_with_unknown_duplicate_and_bad_entries() {
        let known: BTreeSet<usize> = [0, 1, 2, 3].into_iter().collect();
        let text = r#"```json
{"verdicts":[{"pair":0,"verdict":"old"},{"pair":"1","verdict":"NEITHER"},{"pair":7,"verdict":"new"},
 {"pair":0,"verdict":"new"},{"pair":2,"verdict":"maybe"},{"verdict":"old"}]}
```"#;
        let p = parse_verdicts(text, &known);
        assert_eq!(p.verdicts, vec![(0, Verdict::Old), (1, Verdict::Neither)]);
        let kinds: Vec<&str> = p.warnings.iter().map(|w| w.kind.as_str()).collect();
        assert_eq!(kinds, vec!["llm_unknown_pair", "llm_duplicate_verdict", "llm_bad_verdict", "llm_wrong_type", "llm_missing_verdict"]);
        assert!(p.warnings[4].message.contains("2, 3"));
    }

    #[test]
    fn garbage_verdicts_give_no_verdict_and_a_warning() {
        let known: BTreeSet<usize> = [0].into_iter().collect();
        let p = parse_verdicts("old", &known);
        assert!(p.verdicts.is_empty());
        assert_eq!(p.warnings[0].kind, "llm_no_json");
    }
}
