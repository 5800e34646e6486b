//! LoCoMo importer: reads the upstream conversation JSON as it is
//! (`locomo10_v2/<id>.json`, one flat conversation object per file, or
//! `locomo10.json`, a list of `{sample_id, conversation, qa, observation}`)
//! and turns it into episodes and gold labels.
//!
//! Sessions become episodes (`session_N`, ordered by N), `session_N_date_time`
//! becomes the timestamp, `session_N_observation` the gold facts and `qa` the
//! QA items. Image fields of a turn (`img_url`, `blip_caption`, `query`,
//! `re-download`) are ignored; the turn keeps its text. Evidence ids naming
//! no turn are dropped and reported as warnings. The mapping is documented in
//! `datasets/README.md`.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde_json::{Map, Value};

use super::days_in_month;
use crate::error::{Error, Result};
use crate::types::{Conversation, Episode, Gold, GoldFact, GoldQa, Turn, Warning};

/// Warning kind: an evidence id (of an observation or a QA item) names no
/// turn of the conversation; the id is dropped.
pub const WARN_UNKNOWN_EVIDENCE: &str = "evidence_unknown_turn";
/// Warning kind: a turn's speaker is neither `speaker_a` nor `speaker_b`;
/// the turn is kept.
pub const WARN_UNKNOWN_SPEAKER: &str = "locomo_unknown_speaker";
/// Warning kind: `session_N_observation` for a session with no turn list;
/// its facts are dropped.
pub const WARN_OBSERVATION_WITHOUT_SESSION: &str = "locomo_observation_without_session";
/// Warning kind: a session's date is earlier than the previous session's;
/// episodes stay in session-number order.
pub const WARN_SESSIONS_OUT_OF_ORDER: &str = "locomo_sessions_out_of_order";

/// Whether `value` has the shape of LoCoMo data: a conversation object with
/// any of `speaker_a`, `speaker_b` or `session_N`, such an object under
/// `conversation`, or a non-empty list of those.
pub fn looks_like(value: &Value) -> bool {
    match value {
        Value::Array(items) => !items.is_empty() && items.iter().all(looks_like_object),
        other => looks_like_object(other),
    }
}

fn looks_like_object(value: &Value) -> bool {
    let Some(map) = value.as_object() else {
        return false;
    };
    let flat =
        |m: &Map<String, Value>| m.contains_key("speaker_a") || m.contains_key("speaker_b") || m.keys().any(|k| session_key(k).is_some());
    flat(map) || map.get("conversation").and_then(Value::as_object).is_some_and(flat)
}

/// Imports every conversation in one parsed file. `stem` (the file name
/// without `.json`) is the id of a conversation without `sample_id`.
pub fn import(path: &Path, stem: &str, value: &Value, warnings: &mut Vec<Warning>) -> Result<Vec<Conversation>> {
    let mut ctx = Ctx { path, warnings };
    match value {
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let here = format!("[{i}]");
                let root = item.as_object().ok_or_else(|| ctx.err(&here, "expected a conversation object"))?;
                out.push(import_one(&mut ctx, &here, root, &format!("{stem}-{i}"))?);
            }
            Ok(out)
        }
        Value::Object(root) => Ok(vec![import_one(&mut ctx, "", root, stem)?]),
        _ => Err(ctx.err("", "expected a conversation object or a list of them")),
    }
}

struct Ctx<'a> {
    path: &'a Path,
    warnings: &'a mut Vec<Warning>,
}

impl Ctx<'_> {
    fn err(&self, field: &str, message: impl std::fmt::Display) -> Error {
        if field.is_empty() { Error::input(self.path, message.to_string()) } else { Error::input(self.path, format!("{field}: {message}")) }
    }

    fn warn(&mut self, kind: &str, field: &str, message: impl std::fmt::Display) {
        // A field holds the file's keys, which may hold a newline: one line, as an error's.
        let line = crate::error::one_line(&format!("{}: {field}: {message}", self.path.display()));
        self.warnings.push(Warning::new(kind, line));
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() { key.to_string() } else { format!("{prefix}.{key}") }
}

fn import_one(ctx: &mut Ctx, prefix: &str, root: &Map<String, Value>, fallback_id: &str) -> Result<Conversation> {
    let (conv, conv_prefix) = match root.get("conversation") {
        Some(Value::Object(c)) => (c, join(prefix, "conversation")),
        Some(_) => return Err(ctx.err(&join(prefix, "conversation"), "expected an object")),
        None => (root, prefix.to_string()),
    };
    let id = match root.get("sample_id") {
        None | Some(Value::Null) => fallback_id.to_string(),
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(_) => return Err(ctx.err(&join(prefix, "sample_id"), "expected a non-empty string")),
    };
    let speaker = |key: &str| -> Result<String> {
        let field = join(&conv_prefix, key);
        match conv.get(key) {
            None => Err(ctx.err(&field, "missing field")),
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            Some(_) => Err(ctx.err(&field, "expected a non-empty string")),
        }
    };
    let speakers = vec![speaker("speaker_a")?, speaker("speaker_b")?];

    let mut sessions: BTreeMap<u64, (&String, &Vec<Value>)> = BTreeMap::new();
    for (key, value) in conv {
        let Some(n) = session_key(key) else { continue };
        let field = join(&conv_prefix, key);
        let n = n.map_err(|m| ctx.err(&field, m))?;
        let turns = value.as_array().ok_or_else(|| ctx.err(&field, "expected a list of turns"))?;
        if let Some((other, _)) = sessions.insert(n, (key, turns)) {
            return Err(ctx.err(&field, format!("session number {n} is also given by {other}")));
        }
    }

    let mut episodes = Vec::with_capacity(sessions.len());
    let mut turn_ids: HashSet<String> = HashSet::new();
    let mut previous: Option<(String, String)> = None;
    for (n, (key, raw_turns)) in &sessions {
        let date_key = format!("session_{n}_date_time");
        let date_field = join(&conv_prefix, &date_key);
        let timestamp = match conv.get(&date_key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(
                parse_date_time(s)
                    .ok_or_else(|| ctx.err(&date_field, format!("cannot read {s:?} as a date like \"1:56 pm on 8 May, 2023\"")))?,
            ),
            Some(_) => return Err(ctx.err(&date_field, "expected a string")),
        };
        if let Some(ts) = &timestamp {
            if let Some((prev_key, prev_ts)) = &previous
                && ts < prev_ts
            {
                ctx.warn(WARN_SESSIONS_OUT_OF_ORDER, &date_field, format!("{ts} is earlier than {prev_key} ({prev_ts})"));
            }
            previous = Some((date_key.clone(), ts.clone()));
        }
        let mut turns = Vec::with_capacity(raw_turns.len());
        for (t, raw) in raw_turns.iter().enumerate() {
            let here = format!("{}[{t}]", join(&conv_prefix, key));
            let turn = read_turn(ctx, &here, raw)?;
            if !turn_ids.insert(turn.id.clone()) {
                return Err(ctx.err(&format!("{here}.dia_id"), format!("duplicate turn id {:?}", turn.id)));
            }
            if !speakers.contains(&turn.speaker) {
                ctx.warn(
                    WARN_UNKNOWN_SPEAKER,
                    &format!("{here}.speaker"),
                    format!("{:?} is neither speaker_a nor speaker_b", turn.speaker),
                );
            }
            turns.push(turn);
        }
        episodes.push(Episode { id: (*key).clone(), timestamp, turns, observations: Vec::new() });
    }

    let mut facts = Vec::new();
    let mut observation_sources = vec![(conv, conv_prefix.clone())];
    match root.get("observation") {
        Some(Value::Object(o)) => observation_sources.push((o, join(prefix, "observation"))),
        None | Some(Value::Null) => {}
        Some(_) => return Err(ctx.err(&join(prefix, "observation"), "expected an object")),
    }
    for (source, source_prefix) in observation_sources {
        let mut observations: BTreeMap<u64, (&String, &Value)> = BTreeMap::new();
        for (key, value) in source {
            let Some(n) = key.strip_suffix("_observation").and_then(session_key) else { continue };
            let field = join(&source_prefix, key);
            let n = n.map_err(|m| ctx.err(&field, m))?;
            if let Some((other, _)) = observations.insert(n, (key, value)) {
                return Err(ctx.err(&field, format!("session number {n} is also given by {other}")));
            }
        }
        for (n, (key, value)) in observations {
            let field = join(&source_prefix, key);
            if !sessions.contains_key(&n) {
                ctx.warn(WARN_OBSERVATION_WITHOUT_SESSION, &field, format!("no session_{n}; its facts are dropped"));
                continue;
            }
            read_observations(ctx, &field, n, value, &turn_ids, &mut facts)?;
        }
    }

    let mut qa = Vec::new();
    match root.get("qa") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                qa.push(read_qa(ctx, &format!("{}[{i}]", join(prefix, "qa")), item, &turn_ids)?);
            }
        }
        Some(_) => return Err(ctx.err(&join(prefix, "qa"), "expected a list")),
    }

    Ok(Conversation {
        id,
        speakers,
        episodes,
        gold: Gold { facts, qa, duplicate_groups: Vec::new(), contradictions: Vec::new(), observations: Vec::new() },
    })
}

/// `session_12` → `Some(Ok(12))`; a session key whose number does not fit
/// in 64 bits → `Some(Err(why))`; anything else (`session_12_date_time`) → None.
fn session_key(key: &str) -> Option<std::result::Result<u64, &'static str>> {
    let digits = key.strip_prefix("session_")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse().map_err(|_| "session number too large (at most 18446744073709551615)"))
}

fn string_field(ctx: &Ctx, here: &str, obj: &Map<String, Value>, key: &str) -> Result<String> {
    let field = format!("{here}.{key}");
    match obj.get(key) {
        None => Err(ctx.err(&field, "missing field")),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(ctx.err(&field, "expected a string")),
    }
}

fn read_turn(ctx: &Ctx, here: &str, raw: &Value) -> Result<Turn> {
    let obj = raw.as_object().ok_or_else(|| ctx.err(here, "expected a turn object"))?;
    let id = string_field(ctx, here, obj, "dia_id")?;
    if id.trim().is_empty() {
        return Err(ctx.err(&format!("{here}.dia_id"), "empty"));
    }
    Ok(Turn { id, speaker: string_field(ctx, here, obj, "speaker")?, text: string_field(ctx, here, obj, "text")? })
}

/// `{speaker: [[fact, evidence], ...]}` → gold facts `session_N/<speaker>/<index>`.
fn read_observations(
    ctx: &mut Ctx,
    field: &str,
    n: u64,
    value: &Value,
    turn_ids: &HashSet<String>,
    facts: &mut Vec<GoldFact>,
) -> Result<()> {
    let by_speaker = value.as_object().ok_or_else(|| ctx.err(field, "expected an object of speaker → facts"))?;
    for (speaker, items) in by_speaker {
        let speaker_field = format!("{field}.{speaker}");
        let items = items.as_array().ok_or_else(|| ctx.err(&speaker_field, "expected a list of [fact, evidence]"))?;
        for (i, item) in items.iter().enumerate() {
            let here = format!("{speaker_field}[{i}]");
            let pair = item.as_array().filter(|p| p.len() == 2).ok_or_else(|| ctx.err(&here, "expected [fact, evidence]"))?;
            let text = pair[0].as_str().ok_or_else(|| ctx.err(&format!("{here}[0]"), "expected a string"))?;
            let evidence = read_evidence(ctx, &format!("{here}[1]"), &pair[1], turn_ids)?;
            facts.push(GoldFact {
                id: format!("session_{n}/{speaker}/{i}"),
                episode: format!("session_{n}"),
                text: text.to_string(),
                evidence,
                subject: None,
                predicate: None,
                object: None,
            });
        }
    }
    Ok(())
}

fn read_qa(ctx: &mut Ctx, here: &str, raw: &Value, turn_ids: &HashSet<String>) -> Result<GoldQa> {
    let obj = raw.as_object().ok_or_else(|| ctx.err(here, "expected a question-answer object"))?;
    let question = string_field(ctx, here, obj, "question")?;
    let answer_of = |key: &str| -> Result<Option<String>> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(Value::Bool(b)) => Ok(Some(b.to_string())),
            Some(_) => Err(ctx.err(&format!("{here}.{key}"), "expected a string or a number")),
        }
    };
    let answer = match answer_of("answer")? {
        Some(a) => Some(a),
        None => answer_of("adversarial_answer")?,
    };
    let evidence = match obj.get("evidence") {
        None => Vec::new(),
        Some(v) => read_evidence(ctx, &format!("{here}.evidence"), v, turn_ids)?,
    };
    let unknown_evidence = obj.get("evidence").map(|v| unknown_parts(v, turn_ids)).unwrap_or_default();
    let category = match obj.get("category") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_i64().ok_or_else(|| ctx.err(&format!("{here}.category"), "expected an integer"))?),
    };
    let label = category.and_then(category_label);
    Ok(GoldQa { question, answer, evidence, category, asked_at: None, unknown_evidence, label, abstention: false, audit: None })
}

/// LoCoMo's QA category with its name (`1 multi-hop`), as every table
/// shows it: 1 multi-hop (evidence in several turns), 2 temporal, 3
/// open-domain (commonsense or world knowledge), 4 single-hop, 5
/// adversarial (unanswerable from the conversation). Another number keeps
/// its number alone.
pub fn category_label(category: i64) -> Option<String> {
    let name = match category {
        1 => "multi-hop",
        2 => "temporal",
        3 => "open-domain",
        4 => "single-hop",
        5 => "adversarial",
        _ => return None,
    };
    Some(format!("{category} {name}"))
}

/// The parts of an evidence value ([`read_evidence`]'s forms) that name no
/// turn, in order, once each (what it drops).
fn unknown_parts(value: &Value, turn_ids: &HashSet<String>) -> Vec<String> {
    let strings: Vec<&str> = match value {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let mut out: Vec<String> = Vec::new();
    for part in strings.iter().flat_map(|s| s.split(';')).map(str::trim).filter(|p| !p.is_empty()) {
        if !turn_ids.contains(part) && !out.iter().any(|o| o == part) {
            out.push(part.to_string());
        }
    }
    out
}

/// Evidence as a string, a list of strings, or `;`-separated strings: split,
/// trimmed, empty parts dropped, ids naming no turn dropped with a warning.
fn read_evidence(ctx: &mut Ctx, field: &str, value: &Value, turn_ids: &HashSet<String>) -> Result<Vec<String>> {
    let mut raw: Vec<(String, &str)> = Vec::new();
    match value {
        Value::Null => {}
        Value::String(s) => raw.push((field.to_string(), s)),
        Value::Array(items) => {
            for (j, item) in items.iter().enumerate() {
                let here = format!("{field}[{j}]");
                let s = item.as_str().ok_or_else(|| ctx.err(&here, "expected a turn id string"))?;
                raw.push((here, s));
            }
        }
        _ => {
            return Err(ctx.err(field, "expected a turn id, a list of them, or a `;`-separated string"));
        }
    }
    let mut out: Vec<String> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for (here, s) in raw {
        for part in s.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            if !turn_ids.contains(part) {
                ctx.warn(WARN_UNKNOWN_EVIDENCE, &here, format!("unknown turn id {part:?} dropped"));
                continue;
            }
            if seen.insert(part) {
                out.push(part.to_string());
            }
        }
    }
    Ok(out)
}

/// `"1:56 pm on 8 May, 2023"` → `"2023-05-08T13:56:00"`. Also accepts a
/// missing comma and three-letter month names.
pub fn parse_date_time(s: &str) -> Option<String> {
    let (time, date) = s.trim().split_once(" on ")?;
    let mut time_parts = time.split_whitespace();
    let (clock, meridiem) = (time_parts.next()?, time_parts.next()?.to_ascii_lowercase());
    if time_parts.next().is_some() {
        return None;
    }
    let (h, m) = clock.split_once(':')?;
    let (hour, minute) = (small_number(h)?, small_number(m)?);
    if !(1..=12).contains(&hour) || minute > 59 || m.len() != 2 {
        return None;
    }
    let hour = match meridiem.as_str() {
        "am" => hour % 12,
        "pm" => hour % 12 + 12,
        _ => return None,
    };
    let date = date.replace(',', " ");
    let mut date_parts = date.split_whitespace();
    let (day, month, year) = (date_parts.next()?, date_parts.next()?, date_parts.next()?);
    if date_parts.next().is_some() || year.len() != 4 {
        return None;
    }
    let (day, month, year) = (small_number(day)?, month_number(month)?, small_number(year)?);
    if day < 1 || day > days_in_month(year, month) {
        return None;
    }
    Some(format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:00"))
}

fn small_number(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 4 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn month_number(name: &str) -> Option<u32> {
    const MONTHS: [&str; 12] =
        ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];
    let lower = name.to_ascii_lowercase();
    let position = MONTHS.iter().position(|m| *m == lower || (lower.len() == 3 && m.starts_with(&lower)))?;
    u32::try_from(position + 1).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONV: &str = r#"{
      "speaker_a": "Ines", "speaker_b": "Tomas",
      "session_1_date_time": "12:48 am on 1 June, 2022",
      "session_1": [
        {"speaker": "Ines", "dia_id": "D1:1", "text": "I repaired the old bike today."},
        {"speaker": "Tomas", "dia_id": "D1:2", "text": "Look at this!", "img_url": ["http://example.invalid/a.jpg"],
         "blip_caption": "a photo of a bike", "query": "bike", "re-download": true}
      ],
      "session_2_date_time": "1:56 pm on 8 May, 2023",
      "session_2": [
        {"speaker": "Ines", "dia_id": "D2:1", "text": "The bike is blue now."},
        {"speaker": "Tomas", "dia_id": "D2:2", "text": "Nice colour."}
      ],
      "session_10_date_time": "12:05 pm on 9 Sep, 2023",
      "session_10": [{"speaker": "Ines", "dia_id": "D10:1", "text": "I sold the bike."}],
      "session_11_date_time": "9:00 am on 10 September, 2023",
      "session_1_observation": {
        "Ines": [["Ines repaired an old bike.", "D1:1"]],
        "Tomas": [["Tomas shared a bike photo.", ["D1:2", "D1:1"]]]
      },
      "session_2_observation": {"Ines": [["Ines painted the bike blue.", "D2:1; D2:2 ;D9:9"]]},
      "session_7_observation": {"Ines": [["Orphan fact.", "D1:1"]]},
      "session_2_summary": "ignored",
      "events_session_2": {"Ines": []},
      "qa": [
        {"question": "What colour is the bike?", "answer": "blue", "evidence": ["D2:1"], "category": 1},
        {"question": "What year?", "answer": 2022, "evidence": ["D1:1; D1:2", "D"], "category": 2},
        {"question": "What did Tomas sell?", "adversarial_answer": "a bike", "evidence": [], "category": 5},
        {"question": "Both?", "answer": "kept", "adversarial_answer": "other", "evidence": ["D10:1"], "category": 5}
      ]
    }"#;

    fn import_str(text: &str) -> (Result<Vec<Conversation>>, Vec<Warning>) {
        let value: Value = serde_json::from_str(text).unwrap();
        let mut warnings = Vec::new();
        let result = import(Path::new("data/locomo/7.json"), "7", &value, &mut warnings);
        (result, warnings)
    }

    fn import_ok(text: &str) -> (Conversation, Vec<Warning>) {
        let (result, warnings) = import_str(text);
        let mut convs = result.unwrap();
        assert_eq!(convs.len(), 1);
        (convs.remove(0), warnings)
    }

    fn import_err(text: &str) -> String {
        let err = import_str(text).0.unwrap_err();
        assert!(matches!(err, Error::Input { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.starts_with("data/locomo/7.json: "), "{msg}");
        msg
    }

    #[test]
    fn sessions_become_episodes_in_numeric_order() {
        let (c, _) = import_ok(CONV);
        assert_eq!(c.id, "7");
        assert_eq!(c.speakers, ["Ines", "Tomas"]);
        let ids: Vec<_> = c.episodes.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["session_1", "session_2", "session_10"], "session_11 has a date but no turns");
        let ts: Vec<_> = c.episodes.iter().map(|e| e.timestamp.as_deref()).collect();
        assert_eq!(ts, [Some("2022-06-01T00:48:00"), Some("2023-05-08T13:56:00"), Some("2023-09-09T12:05:00")]);
        assert_eq!(c.turn_count(), 5);
        let image = &c.episodes[0].turns[1];
        assert_eq!(image, &Turn { id: "D1:2".into(), speaker: "Tomas".into(), text: "Look at this!".into() });
    }

    #[test]
    fn observations_become_gold_facts_with_split_evidence() {
        let (c, warnings) = import_ok(CONV);
        let facts: Vec<_> = c.gold.facts.iter().map(|f| (f.id.as_str(), f.episode.as_str(), f.evidence.clone())).collect();
        assert_eq!(
            facts,
            [
                ("session_1/Ines/0", "session_1", vec!["D1:1".to_string()]),
                ("session_1/Tomas/0", "session_1", vec!["D1:2".into(), "D1:1".into()]),
                ("session_2/Ines/0", "session_2", vec!["D2:1".into(), "D2:2".into()]),
            ]
        );
        assert_eq!(c.gold.facts[2].text, "Ines painted the bike blue.");
        assert!(c.gold.facts.iter().all(|f| f.subject.is_none() && f.predicate.is_none() && f.object.is_none()));
        let orphan: Vec<_> = warnings.iter().filter(|w| w.kind == WARN_OBSERVATION_WITHOUT_SESSION).collect();
        assert_eq!(orphan.len(), 1);
        assert!(orphan[0].message.contains("session_7_observation"), "{}", orphan[0].message);
    }

    #[test]
    fn unknown_evidence_ids_are_dropped_and_counted() {
        let (c, warnings) = import_ok(CONV);
        let dropped: Vec<_> = warnings.iter().filter(|w| w.kind == WARN_UNKNOWN_EVIDENCE).map(|w| w.message.as_str()).collect();
        assert_eq!(dropped.len(), 2, "{dropped:?}");
        assert!(dropped[0].contains("7.json: session_2_observation.Ines[0][1]: unknown turn id \"D9:9\""), "{}", dropped[0]);
        assert!(dropped[1].contains("qa[1].evidence[1]: unknown turn id \"D\""), "{}", dropped[1]);
        assert_eq!(c.gold.qa[1].evidence, ["D1:1", "D1:2"]);
    }

    #[test]
    fn qa_answers_are_strings_and_adversarial_answers_count() {
        let (c, _) = import_ok(CONV);
        let answers: Vec<_> = c.gold.qa.iter().map(|q| q.answer.as_deref()).collect();
        assert_eq!(answers, [Some("blue"), Some("2022"), Some("a bike"), Some("kept")]);
        let categories: Vec<_> = c.gold.qa.iter().map(|q| q.category).collect();
        assert_eq!(categories, [Some(1), Some(2), Some(5), Some(5)]);
        let names: Vec<_> = c.gold.qa.iter().map(|q| q.category_name()).collect();
        assert_eq!(names, ["1 multi-hop", "2 temporal", "5 adversarial", "5 adversarial"]);
        assert!(c.gold.qa[2].evidence.is_empty());
        assert_eq!(c.gold.qa[0].question, "What colour is the bike?");
    }

    #[test]
    fn list_layout_uses_sample_id_and_observation_object() {
        let text = r#"[
          {"sample_id": "conv-9",
           "conversation": {"speaker_a": "A", "speaker_b": "B",
                            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "I live in Lyon."}]},
           "observation": {"session_1_observation": {"A": [["A lives in Lyon.", "D1:1"]]}},
           "qa": [{"question": "Where?", "answer": "Lyon", "evidence": ["D1:1"], "category": 1}]},
          {"conversation": {"speaker_a": "C", "speaker_b": "D", "session_1": []}}
        ]"#;
        let (result, warnings) = import_str(text);
        let convs = result.unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(convs.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["conv-9", "7-1"]);
        assert_eq!(convs[0].gold.facts[0].id, "session_1/A/0");
        assert_eq!(convs[0].gold.qa[0].answer.as_deref(), Some("Lyon"));
        assert_eq!(convs[0].episodes[0].timestamp, None);
        let msg = import_err(r#"[{"conversation": {"speaker_b": "D", "session_1": []}}]"#);
        assert!(msg.contains("[0].conversation.speaker_a: missing field"), "{msg}");
    }

    #[test]
    fn missing_or_bad_fields_name_file_and_field() {
        let msg = import_err(&CONV.replace(r#""speaker_a": "Ines", "#, ""));
        assert!(msg.ends_with("7.json: speaker_a: missing field"), "{msg}");
        let msg = import_err(&CONV.replace(r#""dia_id": "D2:2", "#, ""));
        assert!(msg.ends_with("session_2[1].dia_id: missing field"), "{msg}");
        let msg = import_err(&CONV.replace(r#""dia_id": "D2:2""#, r#""dia_id": "D2:1""#));
        assert!(msg.contains(r#"session_2[1].dia_id: duplicate turn id "D2:1""#), "{msg}");
        let msg = import_err(&CONV.replace(r#"["Ines repaired an old bike.", "D1:1"]"#, r#"["only a fact"]"#));
        assert!(msg.contains("session_1_observation.Ines[0]: expected [fact, evidence]"), "{msg}");
        let msg = import_err(&CONV.replace(r#""category": 1"#, r#""category": "one""#));
        assert!(msg.contains("qa[0].category: expected an integer"), "{msg}");
    }

    #[test]
    fn session_numbers_that_overflow_or_repeat_name_file_and_key() {
        let text = r#"{"speaker_a": "A", "speaker_b": "B", "session_1": [],
            "session_99999999999999999999": [{"speaker": "A", "dia_id": "D9:1", "text": "Lost?"}]}"#;
        let msg = import_err(text);
        assert!(msg.contains("7.json: session_99999999999999999999: session number too large"), "{msg}");
        let msg = import_err(r#"{"speaker_a": "A", "speaker_b": "B", "session_1": [], "session_01": []}"#);
        assert!(
            msg.contains("session number 1 is also given by session_01") || msg.contains("session number 1 is also given by session_1"),
            "{msg}"
        );
        let msg = import_err(r#"{"speaker_a": "A", "speaker_b": "B", "session_1": [], "session_99999999999999999999_observation": {}}"#);
        assert!(msg.contains("session_99999999999999999999_observation: session number too large"), "{msg}");
        assert!(looks_like(&serde_json::json!({"session_99999999999999999999": []})));
        // Found by the fuzz target: a quoted value with a newline made a two-line error.
        let msg = import_err(r#"{"speaker_a": "A", "speaker_b": "B", "session_1_date_time": "1 pm\non 8 May, 2023", "session_1": []}"#);
        assert!(!msg.contains('\n') && msg.contains(r#"cannot read "1 pm\non 8 May, 2023""#), "{msg}");
    }

    #[test]
    fn unparseable_date_names_file_and_key() {
        for bad in ["yesterday", "13:05 pm on 8 May, 2023", "1:56 pm on 31 April, 2023", "1:5 pm on 8 May, 2023"] {
            let msg = import_err(&CONV.replace("1:56 pm on 8 May, 2023", bad));
            assert!(msg.contains("7.json: session_2_date_time: cannot read"), "{msg}");
            assert!(msg.contains(bad), "{msg}");
        }
        let (c, _) = import_ok(&CONV.replace("9:00 am on 10 September, 2023", "junk"));
        assert_eq!(c.episodes.len(), 3, "a date without a session is never read");
    }

    #[test]
    fn date_formats() {
        let cases = [
            ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00"),
            ("12:48 am on 1 June, 2022", "2022-06-01T00:48:00"),
            ("12:09 pm on 13 September, 2023", "2023-09-13T12:09:00"),
            ("10:04 am on 19 December, 2023", "2023-12-19T10:04:00"),
            ("9:55 AM on 29 Feb 2024", "2024-02-29T09:55:00"),
        ];
        for (input, want) in cases {
            assert_eq!(parse_date_time(input).as_deref(), Some(want), "{input}");
        }
        for bad in ["", "1:56 pm", "0:10 am on 1 May, 2023", "1:56 xm on 8 May, 2023", "1:56 pm on 29 Feb, 2023", "1:56 pm on 8 Mayo, 2023"]
        {
            assert_eq!(parse_date_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn unknown_speaker_and_out_of_order_sessions_are_warnings() {
        let text = CONV
            .replace(r#""speaker": "Tomas", "dia_id": "D2:2""#, r#""speaker": "Tom", "dia_id": "D2:2""#)
            .replace("12:05 pm on 9 Sep, 2023", "12:05 pm on 9 Sep, 2020");
        let (c, warnings) = import_ok(&text);
        let kinds: Vec<_> = warnings.iter().map(|w| w.kind.as_str()).collect();
        assert!(kinds.contains(&WARN_UNKNOWN_SPEAKER) && kinds.contains(&WARN_SESSIONS_OUT_OF_ORDER), "{kinds:?}");
        assert_eq!(c.episodes[2].id, "session_10", "order stays by session number");
        assert_eq!(c.episodes[1].turns[1].speaker, "Tom");
    }

    #[test]
    fn a_warning_naming_a_key_with_a_newline_is_one_line() {
        // Found by the fuzzer: an observation's speaker key holding "\n".
        let text = CONV.replace(r#""speaker": "Tomas", "dia_id": "D2:2""#, r#""speaker": "To\nm", "dia_id": "D2:2""#);
        let (_, warnings) = import_ok(&text);
        assert!(!warnings.is_empty());
        for w in &warnings {
            assert!(!w.message.contains('\n'), "{}", w.message);
        }
        assert!(warnings.iter().any(|w| w.message.contains("To\\nm")), "{warnings:?}");
    }

    #[test]
    fn detection() {
        let yes = [CONV, r#"{"speaker_a": "A"}"#, r#"{"session_3": []}"#, r#"[{"conversation": {"speaker_b": "B"}}]"#];
        for text in yes {
            assert!(looks_like(&serde_json::from_str(text).unwrap()), "{text}");
        }
        let no = [r#"{"format": "memform-conversation/1"}"#, "[]", r#"{"session_1_date_time": "x"}"#, "[1]", r#""speaker_a""#];
        for text in no {
            assert!(!looks_like(&serde_json::from_str(text).unwrap()), "{text}");
        }
    }
}
