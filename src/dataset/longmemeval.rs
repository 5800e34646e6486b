//! The LongMemEval importer: its published JSON (one array of evaluation
//! instances; `longmemeval_s_cleaned.json` and its siblings) as one
//! conversation per instance. Speakers `user` and `assistant`; one episode
//! per haystack session (its id, its date as the timestamp, episodes in
//! time order); turn ids `<session id>:<index>`; one QA item asked at the
//! question's date, its evidence the turns marked `has_answer`, its
//! category the question type. An instance whose id ends in `_abs` is an
//! abstention question (the answer is not in the history): the QA
//! evaluation reports it apart. Format reference: datasets/README.md.

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::types::{Conversation, Episode, Gold, GoldQa, Turn};

/// The keys every instance has; a file whose array holds objects with
/// these is LongMemEval.
const KEYS: [&str; 5] = ["question_id", "question", "question_date", "haystack_sessions", "haystack_dates"];

/// Whether `value` is a LongMemEval file: a non-empty array of objects
/// holding [`KEYS`].
pub fn looks_like(value: &Value) -> bool {
    match value {
        Value::Array(items) => {
            !items.is_empty() && items.iter().all(|i| i.as_object().is_some_and(|m| KEYS.iter().all(|k| m.contains_key(*k))))
        }
        _ => false,
    }
}

/// LongMemEval's date (`2023/05/30 (Tue) 23:40`) as an ISO 8601 local
/// date-time (`2023-05-30T23:40:00`); `None` when it is not of that form.
pub fn iso_date(text: &str) -> Option<String> {
    let mut parts = text.split_whitespace();
    let date = parts.next()?;
    let (weekday, time) = (parts.next()?, parts.next()?);
    if parts.next().is_some() || !(weekday.starts_with('(') && weekday.ends_with(')')) {
        return None;
    }
    let d: Vec<&str> = date.split('/').collect();
    let t: Vec<&str> = time.split(':').collect();
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    if d.len() != 3 || !digits(d[0], 4) || !digits(d[1], 2) || !digits(d[2], 2) || t.len() != 2 || !digits(t[0], 2) || !digits(t[1], 2) {
        return None;
    }
    let iso = format!("{}-{}-{}T{}:{}:00", d[0], d[1], d[2], t[0], t[1]);
    crate::dataset::is_local_datetime(&iso).then_some(iso)
}

const WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

/// Why the weekday of a LongMemEval date (`2023/05/30 (Tue) 23:40`, one
/// [`iso_date`] accepted) contradicts its date, if it does: the weekday must
/// be the date's, as a three-letter English name (any case).
pub fn weekday_contradiction(text: &str) -> Option<String> {
    let mut parts = text.split_whitespace();
    let date = parts.next()?;
    let named = parts.next()?.trim_start_matches('(').trim_end_matches(')');
    let d: Vec<u32> = date.split('/').map(|x| x.parse().unwrap_or(0)).collect();
    let [y, m, day] = d[..] else { return None };
    // Sakamoto's method: 0 = Sunday.
    const T: [u32; 12] = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4];
    let yy = if m < 3 { y.saturating_sub(1) } else { y };
    let k = (yy + yy / 4 - yy / 100 + yy / 400 + T.get(m.wrapping_sub(1) as usize).copied().unwrap_or(0) + day) % 7;
    let actual = WEEKDAYS[k as usize];
    (!named.eq_ignore_ascii_case(actual)).then(|| format!("{text:?}: ({named}) is not the weekday of {date} (a {actual})"))
}

/// Imports every instance of `value` (a file [`looks_like`] accepted).
pub fn import(path: &Path, value: &Value) -> Result<Vec<Conversation>> {
    let items = value.as_array().ok_or_else(|| Error::input(path, "expected a list of LongMemEval instances"))?;
    items.iter().enumerate().map(|(i, item)| instance(path, i, item)).collect()
}

fn instance(path: &Path, i: usize, item: &Value) -> Result<Conversation> {
    let err = |field: &str, msg: &str| Error::input(path, format!("[{i}].{field}: {msg}"));
    let string = |key: &str| item.get(key).and_then(Value::as_str).ok_or_else(|| err(key, "expected a string"));
    let id = string("question_id")?;
    if id.is_empty() {
        return Err(err("question_id", "empty"));
    }
    let question = string("question")?.to_string();
    let date = |field: String, v: &Value| -> Result<String> {
        let s = v.as_str().ok_or_else(|| err(&field, "expected a date string"))?;
        let iso = iso_date(s).ok_or_else(|| err(&field, &format!("{s:?} is not a date like \"2023/05/30 (Tue) 23:40\"")))?;
        match weekday_contradiction(s) {
            Some(why) => Err(err(&field, &why)),
            None => Ok(iso),
        }
    };
    let asked_at = date("question_date".into(), item.get("question_date").unwrap_or(&Value::Null))?;
    let answer = match item.get("answer") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(_) => return Err(err("answer", "expected a string or a number")),
    };
    let question_type = match item.get("question_type") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_str().ok_or_else(|| err("question_type", "expected a string"))?.to_string()),
    };
    let list = |key: &str| item.get(key).and_then(Value::as_array).ok_or_else(|| err(key, "expected a list"));
    let sessions = list("haystack_sessions")?;
    let dates = list("haystack_dates")?;
    let ids: Vec<String> = match item.get("haystack_session_ids") {
        None | Some(Value::Null) => (0..sessions.len()).map(|j| format!("s{j}")).collect(),
        Some(v) => {
            let a = v.as_array().ok_or_else(|| err("haystack_session_ids", "expected a list"))?;
            a.iter()
                .enumerate()
                .map(|(j, s)| s.as_str().map(str::to_string).ok_or_else(|| err(&format!("haystack_session_ids[{j}]"), "expected a string")))
                .collect::<Result<_>>()?
        }
    };
    if dates.len() != sessions.len() || ids.len() != sessions.len() {
        return Err(err(
            "haystack_sessions",
            &format!("{} sessions, {} dates and {} session ids (one each expected)", sessions.len(), dates.len(), ids.len()),
        ));
    }
    let mut seen = HashSet::new();
    let mut episodes = Vec::with_capacity(sessions.len());
    let mut evidence = Vec::new();
    for (j, session) in sessions.iter().enumerate() {
        let sid = &ids[j];
        if !seen.insert(sid.as_str()) {
            return Err(err(&format!("haystack_session_ids[{j}]"), &format!("duplicate session id {sid:?}")));
        }
        let timestamp = date(format!("haystack_dates[{j}]"), &dates[j])?;
        let turns_in = session.as_array().ok_or_else(|| err(&format!("haystack_sessions[{j}]"), "expected a list of turns"))?;
        let mut turns = Vec::with_capacity(turns_in.len());
        for (k, t) in turns_in.iter().enumerate() {
            let here = format!("haystack_sessions[{j}][{k}]");
            let role = t.get("role").and_then(Value::as_str).ok_or_else(|| err(&format!("{here}.role"), "expected a string"))?;
            if role != "user" && role != "assistant" {
                return Err(err(&format!("{here}.role"), &format!("{role:?}: expected \"user\" or \"assistant\"")));
            }
            let text = t.get("content").and_then(Value::as_str).ok_or_else(|| err(&format!("{here}.content"), "expected a string"))?;
            let turn_id = format!("{sid}:{k}");
            match t.get("has_answer") {
                None | Some(Value::Null) | Some(Value::Bool(false)) => {}
                Some(Value::Bool(true)) => evidence.push(turn_id.clone()),
                Some(_) => return Err(err(&format!("{here}.has_answer"), "expected a boolean")),
            }
            turns.push(Turn { id: turn_id, speaker: role.to_string(), text: text.to_string() });
        }
        episodes.push(Episode { id: sid.clone(), timestamp: Some(timestamp), turns, observations: Vec::new() });
    }
    // The oracle file does not sort sessions by time; the pipeline needs them in order.
    episodes.sort_by(|a, b| a.timestamp.cmp(&b.timestamp));
    let qa = GoldQa {
        question,
        answer,
        evidence,
        category: None,
        asked_at: Some(asked_at),
        unknown_evidence: Vec::new(),
        label: question_type,
        abstention: id.ends_with("_abs"),
        audit: None,
    };
    Ok(Conversation {
        id: id.to_string(),
        speakers: vec!["user".into(), "assistant".into()],
        episodes,
        gold: Gold { qa: vec![qa], ..Gold::default() },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Value {
        serde_json::json!([{
            "question_id": "q1_abs", "question_type": "knowledge-update", "question": "Where do I work now?",
            "answer": 7, "question_date": "2023/06/02 (Fri) 10:00",
            "haystack_session_ids": ["b", "a"],
            "haystack_dates": ["2023/06/01 (Thu) 09:00", "2023/05/30 (Tue) 23:40"],
            "haystack_sessions": [
                [{"role": "user", "content": "I moved to Acme.", "has_answer": true}, {"role": "assistant", "content": "Noted."}],
                [{"role": "user", "content": "I work at Initech."}]
            ],
            "answer_session_ids": ["b"]
        }])
    }

    #[test]
    fn an_instance_is_a_conversation_with_one_dated_question() {
        let v = sample();
        assert!(looks_like(&v));
        let c = &import(Path::new("lme.json"), &v).unwrap()[0];
        assert_eq!(c.id, "q1_abs");
        let order: Vec<(&str, Option<&str>)> = c.episodes.iter().map(|e| (e.id.as_str(), e.timestamp.as_deref())).collect();
        assert_eq!(order, [("a", Some("2023-05-30T23:40:00")), ("b", Some("2023-06-01T09:00:00"))], "episodes in time order");
        assert_eq!(c.episodes[1].turns[0].id, "b:0");
        let q = &c.gold.qa[0];
        assert_eq!(q.evidence, ["b:0"]);
        assert_eq!(q.asked_at.as_deref(), Some("2023-06-02T10:00:00"));
        assert_eq!((q.label.as_deref(), q.abstention, q.answer.as_deref()), (Some("knowledge-update"), true, Some("7")));
    }

    #[test]
    fn bad_input_names_the_field() {
        let mut v = sample();
        v[0]["haystack_dates"][1] = Value::from("yesterday");
        let e = import(Path::new("lme.json"), &v).unwrap_err().to_string();
        assert!(e.contains("lme.json") && e.contains("[0].haystack_dates[1]: \"yesterday\" is not a date"), "{e}");
        let mut v = sample();
        v[0]["haystack_sessions"][0][1]["role"] = Value::from("system");
        let e = import(Path::new("lme.json"), &v).unwrap_err().to_string();
        assert!(e.contains("[0].haystack_sessions[0][1].role"), "{e}");
        let mut v = sample();
        v[0]["haystack_dates"] = serde_json::json!([]);
        assert!(import(Path::new("lme.json"), &v).unwrap_err().to_string().contains("2 sessions, 0 dates"));
        assert!(!looks_like(&serde_json::json!([{"question_id": "x"}])));
    }

    #[test]
    fn dates_convert_or_refuse() {
        assert_eq!(iso_date("2023/05/30 (Tue) 23:40").as_deref(), Some("2023-05-30T23:40:00"));
        for bad in ["2023-05-30 (Tue) 23:40", "2023/05/30 23:40", "2023/13/30 (Tue) 23:40", "2023/05/30 (Tue) 23:40 x", ""] {
            assert_eq!(iso_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_weekday_that_contradicts_its_date_is_refused_naming_the_field() {
        for ok in ["2023/05/30 (Tue) 23:40", "2024/02/29 (Thu) 00:00", "2000/01/01 (sat) 12:00", "2023/01/01 (Sun) 08:00"] {
            assert_eq!(weekday_contradiction(ok), None, "{ok}");
        }
        let why = weekday_contradiction("2023/05/30 (Mon) 23:40").unwrap_or_default();
        assert!(why.contains("(Mon) is not the weekday of 2023/05/30 (a Tue)"), "{why}");
        assert!(weekday_contradiction("2023/05/30 (Xyz) 23:40").is_some(), "not a weekday at all");
        let mut v = sample();
        v[0]["question_date"] = Value::from("2023/06/02 (Mon) 10:00");
        let e = import(Path::new("lme.json"), &v).unwrap_err().to_string();
        assert!(e.contains("lme.json") && e.contains("[0].question_date: ") && e.contains("(a Fri)"), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}
