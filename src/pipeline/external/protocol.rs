//! The adapter protocol's messages (docs/adapters.md, docs/adapter.schema.json):
//! one JSON object per line, memform's requests on the adapter's stdin, one
//! reply per request on its stdout.

use serde::{Deserialize, Serialize};

use crate::types::Episode;

/// The protocol's version, sent in `begin_conversation`.
pub const PROTOCOL: u32 = 1;

/// A turn as `add_episode` sends it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnMsg<'a> {
    pub id: &'a str,
    pub speaker: &'a str,
    /// Always `user`: a transcript's speakers are people (docs/adapters.md).
    pub role: &'static str,
    pub text: &'a str,
}

/// A request memform writes to the adapter.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request<'a> {
    BeginConversation { protocol: u32, conversation: &'a str, speakers: &'a [String], data_dir: String },
    AddEpisode { conversation: &'a str, episode: &'a str, timestamp: Option<&'a str>, turns: Vec<TurnMsg<'a>> },
    Search { conversation: &'a str, query: &'a str, k: u64 },
    End { conversation: &'a str },
}

impl<'a> Request<'a> {
    /// The op's name (for errors).
    pub fn op(&self) -> &'static str {
        match self {
            Request::BeginConversation { .. } => "begin_conversation",
            Request::AddEpisode { .. } => "add_episode",
            Request::Search { .. } => "search",
            Request::End { .. } => "end",
        }
    }

    /// `add_episode` of `episode`.
    pub fn add_episode(conversation: &'a str, episode: &'a Episode) -> Request<'a> {
        Request::AddEpisode {
            conversation,
            episode: &episode.id,
            timestamp: episode.timestamp.as_deref(),
            turns: episode.turns.iter().map(|t| TurnMsg { id: &t.id, speaker: &t.speaker, role: "user", text: &t.text }).collect(),
        }
    }
}

/// A memory the system holds, as `add_episode`'s reply lists it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Memory {
    /// The system's id: stable across episodes while the memory lives.
    pub id: String,
    pub content: String,
    /// The turns it was formed from, where the system keeps them.
    #[serde(default)]
    pub source_turns: Vec<String>,
}

/// A decision the system reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum Event {
    #[serde(rename = "ADD")]
    Add,
    #[serde(rename = "UPDATE")]
    Update,
    #[serde(rename = "DELETE")]
    Delete,
    #[serde(rename = "NONE")]
    None,
}

impl Event {
    pub fn name(self) -> &'static str {
        match self {
            Event::Add => "add",
            Event::Update => "update",
            Event::Delete => "delete",
            Event::None => "none",
        }
    }
}

/// One decision of an episode: what happened to memory `id` (its target).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Decision {
    pub event: Event,
    /// The memory it concerns (added, updated, deleted or kept).
    #[serde(default)]
    pub id: Option<String>,
    /// The memory's text after the decision (for DELETE and NONE, as it was).
    #[serde(default)]
    pub content: Option<String>,
    /// An UPDATE's text before it.
    #[serde(default)]
    pub previous: Option<String>,
}

/// One hit of the system's own search.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Hit {
    pub id: String,
    pub content: String,
    #[serde(default)]
    pub score: Option<f64>,
}

/// A reply line, any op's.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Reply {
    pub ok: bool,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub memories: Option<Vec<Memory>>,
    #[serde(default)]
    pub decisions: Option<Vec<Decision>>,
    #[serde(default)]
    pub hits: Option<Vec<Hit>>,
}

/// What `add_episode` answered.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Held {
    pub memories: Vec<Memory>,
    pub decisions: Vec<Decision>,
}

/// Reads one reply line for `op`: a JSON object with `ok`; `ok: false` is the
/// adapter's error; `add_episode` needs `memories` (unique ids, text), `search`
/// needs `hits`. The error is one line.
pub fn parse_reply(op: &str, line: &str) -> std::result::Result<Reply, String> {
    let reply: Reply = serde_json::from_str(line).map_err(|e| {
        let start: String = line.chars().take(80).collect();
        format!("malformed reply to {op} ({e}); the line begins {start:?}")
    })?;
    if !reply.ok {
        return Err(format!("the adapter answered {op} with an error: {}", reply.error.as_deref().unwrap_or("(no message)")));
    }
    match op {
        "add_episode" => {
            let Some(memories) = &reply.memories else {
                return Err("malformed reply to add_episode: no `memories` array".into());
            };
            let mut seen = std::collections::HashSet::new();
            for m in memories {
                if m.id.is_empty() || !seen.insert(m.id.as_str()) {
                    return Err(format!("malformed reply to add_episode: memory id {:?} is empty or listed twice", m.id));
                }
            }
        }
        "search" if reply.hits.is_none() => return Err("malformed reply to search: no `hits` array".into()),
        _ => {}
    }
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_serialise_with_their_op() {
        let speakers = vec!["A".to_string()];
        let r = Request::BeginConversation { protocol: PROTOCOL, conversation: "c", speakers: &speakers, data_dir: "/d".into() };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"op":"begin_conversation","protocol":1,"conversation":"c","speakers":["A"],"data_dir":"/d"}"#
        );
        assert_eq!(serde_json::to_string(&Request::End { conversation: "c" }).unwrap(), r#"{"op":"end","conversation":"c"}"#);
    }

    #[test]
    fn replies_are_checked_per_op() {
        assert!(parse_reply("add_episode", r#"{"ok":true,"memories":[{"id":"m","content":"x"}]}"#).is_ok());
        let err = parse_reply("add_episode", r#"{"ok":true}"#).unwrap_err();
        assert!(err.contains("no `memories`"), "{err}");
        let err = parse_reply("add_episode", r#"{"ok":true,"memories":[{"id":"m","content":"x"},{"id":"m","content":"y"}]}"#).unwrap_err();
        assert!(err.contains("listed twice"), "{err}");
        let err = parse_reply("search", r#"{"ok":false,"error":"unknown op: search"}"#).unwrap_err();
        assert!(err.contains("with an error: unknown op: search"), "{err}");
        let err = parse_reply("end", "hello").unwrap_err();
        assert!(err.starts_with("malformed reply to end") && err.contains("\"hello\""), "{err}");
        let err = parse_reply("add_episode", r#"{"ok":true,"memories":[],"decisions":[{"event":"MERGE"}]}"#).unwrap_err();
        assert!(err.contains("malformed reply"), "{err}");
    }
}
