//! The native conversation format, `memform-conversation/1`: one JSON file
//! per conversation under `datasets/<name>/conversations/<id>.json`.
//!
//! Parsing is strict (unknown fields are errors) and every error names the
//! file and the field path; the reference is `datasets/README.md`.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;

use super::{is_local_datetime, json_error};
use crate::error::{Error, Result};
use crate::types::{
    Conversation, Episode, Gold, GoldContradiction, GoldFact, GoldObservation, GoldQa, Observation, ToolEvent, Turn, Verdict,
};

/// The value of the `format` field this version reads.
pub const FORMAT: &str = "memform-conversation/1";

/// Speakers that may speak without being listed in `speakers`.
pub const UNLISTED_SPEAKERS: [&str; 2] = ["tool", "system"];

/// Parses and validates one native conversation file. `path` is used in
/// error messages and its stem must equal the conversation's `id`.
///
/// A well-formed file is read once, into its types. A file that reading
/// rejects, or that is not an object of this format, is first checked by
/// [`check_format`], whose error comes first (a file of another format or
/// version fails on `format`, whatever else differs).
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Conversation> {
    let typed = (|| {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let file: File = serde_path_to_error::deserialize(&mut de).map_err(|e| json_error(path, &field_path(e.path()), e.inner()))?;
        de.end().map_err(|e| json_error(path, "", &e))?;
        Ok(file)
    })();
    // The types also take a JSON array for `File` and any string for `format`.
    let is_object = bytes.iter().find(|b| !b" \t\n\r".contains(b)) == Some(&b'{');
    let file = match typed {
        Ok(file) if is_object && file._format == FORMAT => file,
        typed => {
            check_format(path, bytes)?;
            typed?
        }
    };
    validate(&file, path.file_stem().map(|s| s.to_string_lossy()).as_deref()).map_err(|message| Error::input(path, message))?;
    Ok(file.into_conversation())
}

/// Reads only `format`, so that a file of another format or version fails
/// on that field rather than on whatever differs first.
fn check_format(path: &Path, bytes: &[u8]) -> Result<()> {
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| json_error(path, "", &e))?;
    let Some(object) = value.as_object() else {
        return Err(Error::input(path, "expected a memform conversation object"));
    };
    match object.get("format") {
        Some(serde_json::Value::String(s)) if s == FORMAT => Ok(()),
        Some(other) => Err(Error::input(path, format!("format: unknown value {other}, expected {FORMAT:?}"))),
        None => Err(Error::input(path, format!("format: missing field (expected {FORMAT:?})"))),
    }
}

fn field_path(path: &serde_path_to_error::Path) -> String {
    if path.iter().next().is_none() { String::new() } else { path.to_string() }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a memform conversation object")]
struct File {
    #[serde(rename = "format")]
    _format: String,
    id: String,
    #[serde(default, rename = "description")]
    _description: Option<String>,
    speakers: Vec<String>,
    episodes: Vec<FileEpisode>,
    #[serde(default)]
    gold: FileGold,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "an episode object")]
struct FileEpisode {
    id: String,
    #[serde(default)]
    timestamp: Option<String>,
    turns: Vec<FileTurn>,
    #[serde(default)]
    observations: Vec<FileObservation>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "an observation object")]
struct FileObservation {
    id: String,
    title: String,
    #[serde(default)]
    narrative: Option<String>,
    #[serde(default)]
    facts: Vec<String>,
    entity_name: String,
    #[serde(rename = "type")]
    obs_type: String,
    #[serde(default)]
    tool_event: Option<FileToolEvent>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a tool event object")]
struct FileToolEvent {
    tool: String,
    #[serde(default)]
    path: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a gold observation object")]
struct FileGoldObservation {
    observation: String,
    action: String,
    category: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a turn object")]
struct FileTurn {
    id: String,
    speaker: String,
    text: String,
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields, expecting = "a gold object")]
struct FileGold {
    facts: Vec<FileFact>,
    qa: Vec<FileQa>,
    duplicate_groups: Vec<Vec<String>>,
    contradictions: Vec<FileContradiction>,
    observations: Vec<FileGoldObservation>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a gold fact object")]
struct FileFact {
    id: String,
    episode: String,
    text: String,
    evidence: Vec<String>,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    predicate: Option<String>,
    #[serde(default)]
    object: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a question-answer object")]
struct FileQa {
    question: String,
    #[serde(default)]
    answer: Option<String>,
    #[serde(default)]
    evidence: Vec<String>,
    #[serde(default)]
    category: Option<i64>,
    #[serde(default)]
    asked_at: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a contradiction object")]
struct FileContradiction {
    old_turn: String,
    new_turn: String,
    verdict: Verdict,
}

/// The resolution actions and value categories a gold observation may name.
pub const GOLD_ACTIONS: [&str; 4] = ["new", "merge", "evolve", "discard"];
pub const GOLD_CATEGORIES: [&str; 3] = ["core", "contextual", "ephemeral"];

/// Every turn's field path and id, in file order.
fn episodes_turn_ids(file: &File) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    for (e, episode) in file.episodes.iter().enumerate() {
        for (t, turn) in episode.turns.iter().enumerate() {
            out.push((format!("episodes[{e}].turns[{t}]"), turn.id.as_str()));
        }
    }
    out
}

/// Checks what the types cannot say; the error is `field.path: message`.
fn validate(file: &File, stem: Option<&str>) -> Result<(), String> {
    if file.id.is_empty() {
        return Err("id: empty".into());
    }
    if stem != Some(file.id.as_str()) {
        return Err(format!("id: {:?} does not match the file name (expected {}.json)", file.id, file.id));
    }
    if file.speakers.is_empty() {
        return Err("speakers: empty (list at least one speaker)".into());
    }
    let mut speakers = HashSet::new();
    for (i, speaker) in file.speakers.iter().enumerate() {
        if speaker.trim().is_empty() {
            return Err(format!("speakers[{i}]: empty"));
        }
        if !speakers.insert(speaker.as_str()) {
            return Err(format!("speakers[{i}]: duplicate speaker {speaker:?}"));
        }
    }

    // Turn id → (position in the conversation, where it was defined).
    let mut turns: HashMap<&str, (usize, String)> = HashMap::new();
    let mut episodes: HashSet<&str> = HashSet::new();
    let mut last_timestamp: Option<(usize, &str)> = None;
    let mut position = 0usize;
    let mut observations: HashMap<&str, String> = HashMap::new();
    for (e, episode) in file.episodes.iter().enumerate() {
        if episode.id.is_empty() {
            return Err(format!("episodes[{e}].id: empty"));
        }
        if !episodes.insert(episode.id.as_str()) {
            return Err(format!("episodes[{e}].id: duplicate episode id {:?}", episode.id));
        }
        if let Some(ts) = episode.timestamp.as_deref() {
            if !is_local_datetime(ts) {
                return Err(format!(
                    "episodes[{e}].timestamp: {ts:?} is not an ISO 8601 local date-time \
                     (YYYY-MM-DDTHH:MM:SS)"
                ));
            }
            if let Some((prev_index, prev)) = last_timestamp
                && ts < prev
            {
                return Err(format!(
                    "episodes[{e}].timestamp: {ts} is earlier than episodes[{prev_index}].timestamp \
                     {prev} (episodes must be in time order)"
                ));
            }
            last_timestamp = Some((e, ts));
        }
        for (t, turn) in episode.turns.iter().enumerate() {
            let here = format!("episodes[{e}].turns[{t}]");
            if turn.id.is_empty() {
                return Err(format!("{here}.id: empty"));
            }
            if let Some((_, first)) = turns.get(turn.id.as_str()) {
                return Err(format!("{here}.id: duplicate turn id {:?} (first at {first})", turn.id));
            }
            if !speakers.contains(turn.speaker.as_str()) && !UNLISTED_SPEAKERS.contains(&turn.speaker.as_str()) {
                return Err(format!(
                    "{here}.speaker: {:?} is not in speakers (only \"tool\" and \"system\" may \
                     speak unlisted)",
                    turn.speaker
                ));
            }
            turns.insert(turn.id.as_str(), (position, here));
            position += 1;
        }
        for (o, obs) in episode.observations.iter().enumerate() {
            let here = format!("episodes[{e}].observations[{o}]");
            if obs.id.is_empty() {
                return Err(format!("{here}.id: empty"));
            }
            if let Some(first) = observations.insert(obs.id.as_str(), here.clone()) {
                return Err(format!("{here}.id: duplicate observation id {:?} (first at {first})", obs.id));
            }
            if let Some((_, first)) = turns.get(obs.id.as_str()) {
                return Err(format!("{here}.id: {:?} is also a turn id (at {first})", obs.id));
            }
            if obs.entity_name.trim().is_empty() {
                return Err(format!("{here}.entity_name: empty (an observation must name what it is about)"));
            }
        }
    }
    for (t, id) in episodes_turn_ids(file) {
        if let Some(first) = observations.get(id) {
            return Err(format!("{t}.id: {id:?} is also an observation id (at {first})"));
        }
    }

    let known = |field: String, id: &str| -> Result<usize, String> {
        turns.get(id).map(|(pos, _)| *pos).ok_or_else(|| format!("{field}: unknown turn id {id:?}"))
    };
    let mut fact_ids = HashSet::new();
    for (i, fact) in file.gold.facts.iter().enumerate() {
        let here = format!("gold.facts[{i}]");
        if fact.id.is_empty() {
            return Err(format!("{here}.id: empty"));
        }
        if !fact_ids.insert(fact.id.as_str()) {
            return Err(format!("{here}.id: duplicate gold fact id {:?}", fact.id));
        }
        if !episodes.contains(fact.episode.as_str()) {
            return Err(format!("{here}.episode: unknown episode id {:?}", fact.episode));
        }
        if fact.evidence.is_empty() {
            return Err(format!("{here}.evidence: empty (a gold fact needs at least one evidence turn)"));
        }
        for (j, id) in fact.evidence.iter().enumerate() {
            known(format!("{here}.evidence[{j}]"), id)?;
        }
    }
    // A QA item's evidence naming no turn is not an error: the QA
    // evaluation warns, counts it, and scores the item on its known turns.
    for (i, qa) in file.gold.qa.iter().enumerate() {
        if let Some(t) = qa.asked_at.as_deref()
            && !is_local_datetime(t)
        {
            return Err(format!("gold.qa[{i}].asked_at: {t:?} is not an ISO 8601 local date-time (YYYY-MM-DDTHH:MM:SS)"));
        }
    }
    for (i, group) in file.gold.duplicate_groups.iter().enumerate() {
        if group.len() < 2 {
            return Err(format!("gold.duplicate_groups[{i}]: fewer than two turn ids"));
        }
        let mut seen = HashSet::new();
        for (j, id) in group.iter().enumerate() {
            known(format!("gold.duplicate_groups[{i}][{j}]"), id)?;
            if !seen.insert(id.as_str()) {
                return Err(format!("gold.duplicate_groups[{i}][{j}]: turn id {id:?} listed twice"));
            }
        }
    }
    let mut labelled = HashSet::new();
    for (i, g) in file.gold.observations.iter().enumerate() {
        let here = format!("gold.observations[{i}]");
        if !observations.contains_key(g.observation.as_str()) {
            return Err(format!("{here}.observation: unknown observation id {:?}", g.observation));
        }
        if !labelled.insert(g.observation.as_str()) {
            return Err(format!("{here}.observation: {:?} labelled twice", g.observation));
        }
        if !GOLD_ACTIONS.contains(&g.action.as_str()) {
            return Err(format!("{here}.action: unknown value {:?}, expected one of {}", g.action, GOLD_ACTIONS.join(", ")));
        }
        if !GOLD_CATEGORIES.contains(&g.category.as_str()) {
            return Err(format!("{here}.category: unknown value {:?}, expected one of {}", g.category, GOLD_CATEGORIES.join(", ")));
        }
    }
    for (i, c) in file.gold.contradictions.iter().enumerate() {
        let old = known(format!("gold.contradictions[{i}].old_turn"), &c.old_turn)?;
        let new = known(format!("gold.contradictions[{i}].new_turn"), &c.new_turn)?;
        if old >= new {
            return Err(format!("gold.contradictions[{i}]: old_turn {:?} does not come before new_turn {:?}", c.old_turn, c.new_turn));
        }
    }
    Ok(())
}

impl File {
    fn into_conversation(self) -> Conversation {
        let turn_ids: HashSet<String> = self.episodes.iter().flat_map(|e| e.turns.iter().map(|t| t.id.clone())).collect();
        Conversation {
            id: self.id,
            speakers: self.speakers,
            episodes: self
                .episodes
                .into_iter()
                .map(|e| Episode {
                    id: e.id,
                    timestamp: e.timestamp,
                    turns: e.turns.into_iter().map(|t| Turn { id: t.id, speaker: t.speaker, text: t.text }).collect(),
                    observations: e
                        .observations
                        .into_iter()
                        .map(|o| Observation {
                            id: o.id,
                            title: o.title,
                            narrative: o.narrative,
                            facts: o.facts,
                            entity_name: o.entity_name,
                            obs_type: o.obs_type,
                            tool_event: o.tool_event.map(|t| ToolEvent { tool: t.tool, path: t.path }),
                        })
                        .collect(),
                })
                .collect(),
            gold: Gold {
                facts: self
                    .gold
                    .facts
                    .into_iter()
                    .map(|f| GoldFact {
                        id: f.id,
                        episode: f.episode,
                        text: f.text,
                        evidence: f.evidence,
                        subject: f.subject,
                        predicate: f.predicate,
                        object: f.object,
                    })
                    .collect(),
                qa: self
                    .gold
                    .qa
                    .into_iter()
                    .map(|q| {
                        let (evidence, unknown_evidence) = q.evidence.into_iter().partition(|t| turn_ids.contains(t.as_str()));
                        GoldQa {
                            question: q.question,
                            answer: q.answer,
                            evidence,
                            category: q.category,
                            asked_at: q.asked_at,
                            unknown_evidence,
                            label: None,
                            abstention: false,
                            audit: None,
                        }
                    })
                    .collect(),
                duplicate_groups: self.gold.duplicate_groups,
                contradictions: self
                    .gold
                    .contradictions
                    .into_iter()
                    .map(|c| GoldContradiction { old_turn: c.old_turn, new_turn: c.new_turn, verdict: c.verdict })
                    .collect(),
                observations: self
                    .gold
                    .observations
                    .into_iter()
                    .map(|g| GoldObservation { observation: g.observation, action: g.action, category: g.category })
                    .collect(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{
  "format": "memform-conversation/1",
  "id": "a",
  "description": "one fact, then the same fact again",
  "speakers": ["Alice", "Assistant"],
  "episodes": [
    {"id": "e1", "timestamp": "2024-01-05T10:00:00",
     "turns": [{"id": "t1", "speaker": "Alice", "text": "I work at Google."},
               {"id": "t2", "speaker": "tool", "text": "[log] saved"}]},
    {"id": "e2", "turns": [{"id": "t3", "speaker": "Alice", "text": "I work at Google!"}]},
    {"id": "e3", "timestamp": "2024-01-06T09:00:00",
     "turns": [{"id": "t4", "speaker": "system", "text": ""}]}
  ],
  "gold": {
    "facts": [{"id": "g1", "episode": "e1", "text": "Alice works at Google", "evidence": ["t1"],
               "subject": "Alice", "predicate": "works at", "object": "Google"}],
    "qa": [{"question": "Where does Alice work?", "answer": "Google", "evidence": ["t1"], "category": 1}],
    "duplicate_groups": [["t1", "t3"]],
    "contradictions": [{"old_turn": "t1", "new_turn": "t3", "verdict": "neither"}]
  }
}"#;

    fn parse_str(name: &str, text: &str) -> Result<Conversation> {
        parse(Path::new(&format!("datasets/x/conversations/{name}.json")), text.as_bytes())
    }

    /// The error message for `GOOD` with `from` replaced by `to`.
    fn error_after(from: &str, to: &str) -> String {
        assert!(GOOD.contains(from), "test edit {from:?} does not apply");
        let err = parse_str("a", &GOOD.replacen(from, to, 1)).unwrap_err();
        assert!(matches!(err, Error::Input { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.starts_with("datasets/x/conversations/a.json: "), "{msg}");
        msg
    }

    #[test]
    fn parses_the_full_example() {
        let c = parse_str("a", GOOD).unwrap();
        assert_eq!(c.id, "a");
        assert_eq!(c.speakers, ["Alice", "Assistant"]);
        assert_eq!(c.episodes.len(), 3);
        assert_eq!(c.episodes[0].timestamp.as_deref(), Some("2024-01-05T10:00:00"));
        assert_eq!(c.episodes[1].timestamp, None);
        assert_eq!(c.turn_count(), 4);
        assert_eq!(c.episodes[1].turns[0].text, "I work at Google!");
        let g = &c.gold.facts[0];
        assert_eq!((g.subject.as_deref(), g.predicate.as_deref(), g.object.as_deref()), (Some("Alice"), Some("works at"), Some("Google")));
        assert_eq!(c.gold.qa[0].category, Some(1));
        assert_eq!(c.gold.duplicate_groups, [["t1", "t3"]]);
        assert_eq!(c.gold.contradictions[0].verdict, Verdict::Neither);
    }

    #[test]
    fn gold_and_optional_fields_default_to_empty() {
        let c = parse_str(
            "b",
            r#"{"format": "memform-conversation/1", "id": "b", "speakers": ["U"],
                "episodes": [{"id": "e", "turns": []}], "gold": {"qa": []}}"#,
        )
        .unwrap();
        assert_eq!(c.gold, Gold::default());
        let c = parse_str("b", r#"{"format": "memform-conversation/1", "id": "b", "speakers": ["U"], "episodes": []}"#).unwrap();
        assert!(c.episodes.is_empty() && c.gold.facts.is_empty());
    }

    #[test]
    fn malformed_json_names_line_and_column() {
        let msg = error_after(r#""id": "a","#, r#""id": "a""#);
        assert!(msg.contains("line 4 column 3"), "{msg}");
        assert!(msg.contains("expected `,` or `}`"), "{msg}");
    }

    #[test]
    fn missing_field_names_its_path() {
        let msg = error_after(r#""speaker": "Alice", "text": "I work at Google!""#, r#""text": "I work at Google!""#);
        assert!(msg.contains("episodes[1].turns[0].speaker: missing field"), "{msg}");
        assert!(msg.contains("line "), "{msg}");
        let msg = error_after(r#""speakers": ["Alice", "Assistant"],"#, "");
        assert!(msg.contains(": speakers: missing field"), "{msg}");
    }

    #[test]
    fn wrong_type_names_its_path() {
        let msg = error_after(r#""category": 1"#, r#""category": "one""#);
        assert!(msg.contains("gold.qa[0].category: invalid type: string \"one\""), "{msg}");
        let msg = error_after(r#""evidence": ["t1"],"#, r#""evidence": "t1","#);
        assert!(msg.contains("gold.facts[0].evidence: invalid type"), "{msg}");
    }

    #[test]
    fn unknown_field_and_bad_verdict_are_errors() {
        let msg = error_after(r#""verdict": "neither""#, r#""verdict": "neither", "note": "x""#);
        assert!(msg.contains("gold.contradictions[0]") && msg.contains("unknown field `note`"), "{msg}");
        let msg = error_after(r#""verdict": "neither""#, r#""verdict": "both""#);
        assert!(msg.contains("gold.contradictions[0].verdict: unknown variant `both`"), "{msg}");
    }

    #[test]
    fn format_value_is_checked_first() {
        let msg = error_after(r#""format": "memform-conversation/1""#, r#""format": "memform-conversation/2""#);
        assert!(msg.contains(r#"format: unknown value "memform-conversation/2", expected "memform-conversation/1""#), "{msg}");
        let msg = error_after(r#""format": "memform-conversation/1","#, "");
        assert!(msg.contains("format: missing field"), "{msg}");
        let msg = error_after(r#""format": "memform-conversation/1""#, r#""format": 1"#);
        assert!(msg.contains("format: unknown value 1"), "{msg}");
    }

    #[test]
    fn id_must_match_the_file_name() {
        let err = parse_str("other", GOOD).unwrap_err().to_string();
        assert!(err.contains("other.json: id: \"a\" does not match the file name"), "{err}");
    }

    #[test]
    fn duplicate_turn_id_names_both_places() {
        let msg = error_after(r#"{"id": "t3", "speaker""#, r#"{"id": "t1", "speaker""#);
        assert!(msg.contains(r#"episodes[1].turns[0].id: duplicate turn id "t1" (first at episodes[0].turns[0])"#), "{msg}");
    }

    #[test]
    fn qa_evidence_naming_an_unknown_turn_is_kept_apart() {
        let text = GOOD.replacen(r#""evidence": ["t1"], "category": 1"#, r#""evidence": ["t9", "t1"], "category": 1"#, 1);
        assert_ne!(text, GOOD);
        let c = parse_str("a", &text).unwrap();
        assert_eq!(
            (c.gold.qa[0].evidence.clone(), c.gold.qa[0].unknown_evidence.clone()),
            (vec!["t1".to_string()], vec!["t9".to_string()])
        );
    }

    #[test]
    fn qa_asked_at_is_read_and_checked() {
        let c = parse_str("a", &GOOD.replacen(r#""category": 1"#, r#""category": 1, "asked_at": "2024-01-05T12:00:00""#, 1)).unwrap();
        assert_eq!(c.gold.qa[0].asked_at.as_deref(), Some("2024-01-05T12:00:00"));
        let msg = error_after(r#""category": 1"#, r#""category": 1, "asked_at": "5 Jan 2024""#);
        assert!(msg.contains(r#"gold.qa[0].asked_at: "5 Jan 2024" is not an ISO 8601"#), "{msg}");
    }

    #[test]
    fn duplicate_episode_id_is_an_error() {
        let msg = error_after(r#"{"id": "e2""#, r#"{"id": "e1""#);
        assert!(msg.contains(r#"episodes[1].id: duplicate episode id "e1""#), "{msg}");
    }

    #[test]
    fn evidence_naming_an_unknown_turn_is_an_error() {
        let msg = error_after(r#""evidence": ["t1"],"#, r#""evidence": ["t1", "t9"],"#);
        assert!(msg.contains(r#"gold.facts[0].evidence[1]: unknown turn id "t9""#), "{msg}");
        let msg = error_after(r#"[["t1", "t3"]]"#, r#"[["t1", "t7"]]"#);
        assert!(msg.contains(r#"gold.duplicate_groups[0][1]: unknown turn id "t7""#), "{msg}");
        let msg = error_after(r#""old_turn": "t1""#, r#""old_turn": "x""#);
        assert!(msg.contains(r#"gold.contradictions[0].old_turn: unknown turn id "x""#), "{msg}");
        let msg = error_after(r#""episode": "e1""#, r#""episode": "e9""#);
        assert!(msg.contains(r#"gold.facts[0].episode: unknown episode id "e9""#), "{msg}");
    }

    #[test]
    fn gold_shape_rules() {
        let msg = error_after(r#"[["t1", "t3"]]"#, r#"[["t1"]]"#);
        assert!(msg.contains("gold.duplicate_groups[0]: fewer than two turn ids"), "{msg}");
        let msg = error_after(r#""old_turn": "t1", "new_turn": "t3""#, r#""old_turn": "t3", "new_turn": "t1""#);
        assert!(msg.contains(r#"gold.contradictions[0]: old_turn "t3" does not come before new_turn "t1""#), "{msg}");
        let msg = error_after(r#""evidence": ["t1"],"#, r#""evidence": [],"#);
        assert!(msg.contains("gold.facts[0].evidence: empty"), "{msg}");
    }

    #[test]
    fn timestamps_must_be_valid_and_in_order() {
        let msg = error_after("2024-01-06T09:00:00", "2024-01-04T09:00:00");
        assert!(
            msg.contains("episodes[2].timestamp: 2024-01-04T09:00:00 is earlier than episodes[0].timestamp 2024-01-05T10:00:00"),
            "{msg}"
        );
        let msg = error_after("2024-01-06T09:00:00", "6 Jan 2024");
        assert!(msg.contains(r#"episodes[2].timestamp: "6 Jan 2024" is not an ISO 8601 local date-time"#), "{msg}");
    }

    #[test]
    fn unlisted_speaker_allowed_only_for_tool_and_system() {
        let msg = error_after(r#""speaker": "tool""#, r#""speaker": "Bob""#);
        assert!(msg.contains(r#"episodes[0].turns[1].speaker: "Bob" is not in speakers"#), "{msg}");
        let msg = error_after(r#""speaker": "tool""#, r#""speaker": "Tool""#);
        assert!(msg.contains("episodes[0].turns[1].speaker"), "{msg}");
    }

    #[test]
    fn speakers_must_be_unique_and_present() {
        let msg = error_after(r#"["Alice", "Assistant"]"#, r#"["Alice", "Alice"]"#);
        assert!(msg.contains(r#"speakers[1]: duplicate speaker "Alice""#), "{msg}");
        let msg = error_after(r#"["Alice", "Assistant"]"#, "[]");
        assert!(msg.contains("speakers: empty"), "{msg}");
    }

    #[test]
    fn trailing_content_and_non_objects_are_errors() {
        let msg = error_after("\n}", "\n} {}");
        assert!(msg.contains("trailing characters"), "{msg}");
        let err = parse_str("a", r#"["memform-conversation/1"]"#).unwrap_err().to_string();
        assert!(err.ends_with("a.json: expected a memform conversation object"), "{err}");
        // A whole conversation as an array of its fields' values, in order,
        // which the types alone would read.
        let v: serde_json::Value = serde_json::from_str(GOOD).unwrap();
        let fields = ["format", "id", "description", "speakers", "episodes", "gold"];
        let array = serde_json::Value::Array(fields.iter().map(|k| v.get(k).cloned().unwrap_or_default()).collect());
        let err = parse_str("a", &format!("  {array}")).unwrap_err().to_string();
        assert!(err.ends_with("a.json: expected a memform conversation object"), "{err}");
    }

    #[test]
    fn the_example_in_the_format_doc_is_valid() {
        let doc = include_str!("../../datasets/README.md");
        let start = doc.find("```json\n").map(|i| i + "```json\n".len()).unwrap();
        let example = &doc[start..start + doc[start..].find("```").unwrap()];
        let c = parse(Path::new("job-change.json"), example.as_bytes()).unwrap();
        assert_eq!(c.id, "job-change");
        assert_eq!(c.turn_count(), 4);
        assert_eq!(c.gold.contradictions[0].verdict, Verdict::Old);
    }
}
