//! [`GoldExtractor`] (`--extract gold`): the oracle. Stage 1 returns the
//! dataset's own gold facts, as a perfect extractor would: each in the
//! episode the gold names, at the first of its evidence turns that episode
//! holds, with the configured `gold_confidence`, its sentence as content.
//!
//! Subject, predicate and object come from the gold sentence through the
//! rules clause parser: a sentence that opens with a speaker's name (or
//! `Name's`) is turned into that speaker's first-person statement ("Caroline
//! attended a workshop" → "I attended a workshop") and read as the rules
//! extractor reads a turn; its first fact gives the triple. Where the parser
//! finds no clause, the fact is kept as a literal: subject the speaker it
//! names (else the conversation's first speaker), predicate
//! [`LITERAL_PREDICATE`], object the sentence. Every literal is counted by a
//! `gold_literal` warning, so a run's summary gives the share of each.
//! Stages 2–5 then run as normal.

use std::collections::HashMap;

use super::rules::RulesExtractor;
use super::{ExtractInput, Extractor, RawEntity, RawExtraction, RawFact};
use crate::error::{Error, Result};
use crate::pipeline::Config;
use crate::pipeline::StageMode;
use crate::types::{Dataset, Episode, GoldFact, Turn, Warning};

/// The predicate of a gold fact the clause parser could not read.
pub const LITERAL_PREDICATE: &str = "states";

/// Extraction by the dataset's gold facts.
pub struct GoldExtractor {
    /// Gold facts by (conversation, episode), in the dataset's order.
    facts: HashMap<(String, String), Vec<GoldFact>>,
    confidence: f64,
    rules: RulesExtractor,
}

impl GoldExtractor {
    /// The oracle for `dataset`; a dataset without a single gold fact is an error.
    pub fn new(dataset: &Dataset, cfg: &Config) -> Result<Self> {
        let mut facts: HashMap<(String, String), Vec<GoldFact>> = HashMap::new();
        for c in &dataset.conversations {
            for g in &c.gold.facts {
                facts.entry((c.id.clone(), g.episode.clone())).or_default().push(g.clone());
            }
        }
        if facts.is_empty() {
            return Err(Error::Other(format!(
                "--extract gold: dataset {} has no gold facts in any of its {} conversation(s): there is nothing to extract",
                dataset.name,
                dataset.conversations.len()
            )));
        }
        // The parser reads one synthetic sentence at a time: no input cap applies.
        Ok(GoldExtractor { facts, confidence: cfg.gold_confidence, rules: RulesExtractor::new(usize::MAX) })
    }
}

impl Extractor for GoldExtractor {
    fn id(&self) -> String {
        format!("gold:v1:confidence={}", self.confidence)
    }
    fn mode(&self) -> StageMode {
        StageMode::Gold
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<RawExtraction> {
        let mut out = RawExtraction::default();
        let Some(golds) = self.facts.get(&(input.conversation_id.to_string(), input.episode.id.clone())) else { return Ok(out) };
        for g in golds {
            let turn = evidence_turn(g, input.episode);
            let speaker = named_speaker(&g.text, input.speakers);
            let parsed = speaker.and_then(|s| self.parse(g, s, &turn, input));
            let (fact, entities, edge) = match parsed {
                Some(p) => p,
                None => {
                    out.warnings.push(Warning::new(
                        "gold_literal",
                        format!("gold fact {} kept as a literal (the clause parser found no clause): {:?}", g.id, g.text),
                    ));
                    let subject = speaker.or(input.speakers.first().map(String::as_str)).unwrap_or("unknown");
                    (self.fact(g, subject, LITERAL_PREDICATE, g.text.trim(), "fact", &turn), Vec::new(), false)
                }
            };
            for e in entities {
                if !out.entities.iter().any(|x| x.name.eq_ignore_ascii_case(&e.name) && x.entity_type == e.entity_type) {
                    out.entities.push(e);
                }
            }
            if edge {
                out.relationships.push(fact);
            } else {
                out.literal_facts.push(fact);
            }
        }
        Ok(out)
    }
}

impl GoldExtractor {
    fn fact(&self, g: &GoldFact, subject: &str, predicate: &str, object: &str, fact_type: &str, turn: &str) -> RawFact {
        RawFact {
            subject: subject.to_string(),
            predicate: predicate.to_string(),
            object: object.to_string(),
            content: Some(g.text.trim().to_string()),
            fact_type: fact_type.to_string(),
            confidence: self.confidence,
            source_quote: g.text.trim().to_string(),
            source_turn: turn.to_string(),
            valid_from: None,
            valid_until: None,
        }
    }

    /// The triple the clause parser reads in `g`'s sentence as `speaker`'s
    /// statement, with the entities it names and whether its object is one.
    fn parse(&self, g: &GoldFact, speaker: &str, turn: &str, input: &ExtractInput<'_>) -> Option<(RawFact, Vec<RawEntity>, bool)> {
        let text = first_person(&g.text, speaker)?;
        let episode = Episode {
            id: input.episode.id.clone(),
            timestamp: input.episode.timestamp.clone(),
            turns: vec![Turn { id: turn.to_string(), speaker: speaker.to_string(), text }],
            observations: Vec::new(),
        };
        let sub = ExtractInput { episode: &episode, ..*input };
        let raw = self.rules.extract(&sub).ok()?;
        let (found, edge) = match (raw.relationships.first(), raw.literal_facts.first()) {
            (Some(r), _) => (r, true),
            (None, Some(l)) => (l, false),
            (None, None) => return None,
        };
        let mut fact = self.fact(g, &found.subject, &found.predicate, &found.object, &found.fact_type, turn);
        fact.valid_from = found.valid_from.clone();
        fact.valid_until = found.valid_until.clone();
        let entities = raw.entities.into_iter().filter(|e| e.name.eq_ignore_ascii_case(&found.object)).collect();
        Some((fact, entities, edge))
    }
}

/// The first of `g`'s evidence turns that `episode` holds; else its first
/// evidence turn; else the episode's first turn.
fn evidence_turn(g: &GoldFact, episode: &Episode) -> String {
    g.evidence
        .iter()
        .find(|t| episode.turns.iter().any(|x| &x.id == *t))
        .or(g.evidence.first())
        .cloned()
        .or_else(|| episode.turns.first().map(|t| t.id.clone()))
        .unwrap_or_default()
}

/// The speaker a gold sentence is about: the one it opens with, else the
/// first one it names.
fn named_speaker<'s>(text: &str, speakers: &'s [String]) -> Option<&'s str> {
    let lower = text.trim().to_lowercase();
    let opens = speakers.iter().find(|s| opens_with_name(&lower, &s.to_lowercase()).is_some());
    let named = || {
        speakers
            .iter()
            .filter_map(|s| lower.split(|c: char| !c.is_alphanumeric()).position(|w| w == s.to_lowercase()).map(|i| (i, s)))
            .min_by_key(|(i, _)| *i)
            .map(|(_, s)| s)
    };
    opens.or_else(named).map(String::as_str)
}

/// The rest of `lower` after `name` and a space or `'s `.
fn opens_with_name<'t>(lower: &'t str, name: &str) -> Option<(&'t str, bool)> {
    let rest = lower.strip_prefix(name)?;
    if let Some(r) = rest.strip_prefix("'s ").or_else(|| rest.strip_prefix("’s ")) {
        return Some((r, true));
    }
    rest.strip_prefix(' ').map(|r| (r, false))
}

/// Words that may stand between the subject and its verb.
const SKIPPED: &[&str] = &["also", "still", "often", "now", "just", "never", "always", "really", "usually", "sometimes", "already"];

/// `text`, which opens with `speaker`'s name, as the speaker's own
/// first-person sentence: "Ann likes tea" → "I like tea", "Ann's dog is
/// Rex" → "My dog is Rex". `None` when it does not open with the name or
/// the name is followed by another subject ("Ann and Bo …").
pub fn first_person(text: &str, speaker: &str) -> Option<String> {
    let text = text.trim();
    let lower = text.to_lowercase();
    let (_, possessive) = opens_with_name(&lower, &speaker.to_lowercase())?;
    let skip = speaker.len() + if possessive { 3 } else { 1 };
    let rest = text.get(skip..)?;
    if possessive {
        return Some(format!("My {rest}"));
    }
    let mut words: Vec<String> = rest.split(' ').map(str::to_string).collect();
    if words.first().is_some_and(|w| matches!(w.to_lowercase().as_str(), "and" | "or" | "with" | "&")) {
        return None;
    }
    if let Some(i) = words.iter().position(|w| {
        let w = w.to_lowercase();
        !(w.ends_with("ly") || SKIPPED.contains(&w.as_str()))
    }) {
        words[i] = first_person_verb(&words[i]);
    }
    Some(format!("I {}", words.join(" ")))
}

/// A third-person present verb in the first person (`is` → `am`,
/// `likes` → `like`, `studies` → `study`); other words unchanged.
fn first_person_verb(w: &str) -> String {
    if !w.chars().all(|c| c.is_ascii_lowercase()) {
        return w.to_string();
    }
    match w {
        "is" => return "am".into(),
        "has" => return "have".into(),
        "does" => return "do".into(),
        "goes" => return "go".into(),
        "was" | "this" | "his" | "us" | "yes" | "bus" | "gas" | "plus" | "as" => return w.to_string(),
        _ => {}
    }
    if let Some(stem) = w.strip_suffix("ies").filter(|s| s.len() > 1) {
        return format!("{stem}y");
    }
    for end in ["ches", "shes", "sses", "xes", "zes"] {
        if w.ends_with(end) {
            return w[..w.len() - 2].to_string();
        }
    }
    match w.strip_suffix('s') {
        Some(stem) if !stem.ends_with('s') && !stem.ends_with('u') && stem.len() > 1 => stem.to_string(),
        _ => w.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Conversation, DatasetFormat, Gold};

    #[test]
    fn gold_sentences_become_first_person_statements() {
        assert_eq!(first_person("Ann likes green tea.", "Ann").as_deref(), Some("I like green tea."));
        assert_eq!(first_person("Ann is researching agencies", "Ann").as_deref(), Some("I am researching agencies"));
        assert_eq!(first_person("Ann recently studies law", "Ann").as_deref(), Some("I recently study law"));
        assert_eq!(first_person("Ann watches films", "Ann").as_deref(), Some("I watch films"));
        assert_eq!(first_person("Ann attended a workshop", "Ann").as_deref(), Some("I attended a workshop"));
        assert_eq!(first_person("Ann's car budget is $800", "Ann").as_deref(), Some("My car budget is $800"));
        assert_eq!(first_person("Ann and Bo went out", "Ann"), None);
        assert_eq!(first_person("The group helped Ann", "Ann"), None);
    }

    fn dataset(facts: Vec<GoldFact>) -> Dataset {
        let turns = vec![
            Turn { id: "t1".into(), speaker: "Ann".into(), text: "x".into() },
            Turn { id: "t2".into(), speaker: "Bo".into(), text: "y".into() },
        ];
        Dataset {
            name: "d".into(),
            format: DatasetFormat::Native,
            digest: String::new(),
            conversations: vec![Conversation {
                id: "c".into(),
                speakers: vec!["Ann".into(), "Bo".into()],
                episodes: vec![Episode { id: "e1".into(), timestamp: Some("2024-01-01T10:00:00".into()), turns, observations: vec![] }],
                gold: Gold { facts, ..Gold::default() },
            }],
        }
    }

    fn gold(id: &str, text: &str, evidence: &[&str]) -> GoldFact {
        GoldFact {
            id: id.into(),
            episode: "e1".into(),
            text: text.into(),
            evidence: evidence.iter().map(|s| s.to_string()).collect(),
            subject: None,
            predicate: None,
            object: None,
        }
    }

    #[test]
    fn gold_facts_are_the_candidates_parsed_or_literal_at_their_evidence_turn() {
        let ds = dataset(vec![gold("g1", "Ann works at Google", &["t9", "t1"]), gold("g2", "The weather pleased Bo greatly", &["t2"])]);
        let cfg = {
            let mut c = Config::default();
            c.gold_confidence = 0.8;
            c
        };
        let x = GoldExtractor::new(&ds, &cfg).unwrap();
        let conv = &ds.conversations[0];
        let input = ExtractInput {
            conversation_id: "c",
            speakers: &conv.speakers,
            episode: &conv.episodes[0],
            known_entities: &[],
            recent_facts: &[],
        };
        let raw = x.extract(&input).unwrap();
        let all: Vec<&RawFact> = raw.relationships.iter().chain(&raw.literal_facts).collect();
        assert_eq!(all.len(), 2);
        let works = all.iter().find(|f| f.content.as_deref() == Some("Ann works at Google")).unwrap();
        assert_eq!((works.subject.as_str(), works.predicate.as_str(), works.object.as_str()), ("Ann", "works at", "Google"));
        assert_eq!((works.source_turn.as_str(), works.confidence), ("t1", 0.8));
        let lit = all.iter().find(|f| f.predicate == LITERAL_PREDICATE).unwrap();
        assert_eq!((lit.subject.as_str(), lit.object.as_str(), lit.source_turn.as_str()), ("Bo", "The weather pleased Bo greatly", "t2"));
        assert_eq!(raw.warnings.iter().filter(|w| w.kind == "gold_literal").count(), 1);
        assert_eq!(x.mode(), StageMode::Gold);
    }

    #[test]
    fn a_dataset_without_gold_facts_is_an_error_naming_it() {
        let err = GoldExtractor::new(&dataset(vec![]), &Config::default()).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("dataset d has no gold facts"), "{err}");
    }
}
