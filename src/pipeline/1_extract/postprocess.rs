//! Post-processing of stage 1, applied whatever produced the raw extraction
//! (rules or a model): every guard and cap of stage 1 (docs/pipeline.md), then the value
//! score. It never fails: each problem becomes a [`Warning`] with a stable
//! snake_case kind and the rest of the extraction comes back.
//!
//! Order: entities validated (unknown type → THING); facts validated
//! (fields trimmed, predicate normalised, fact type, confidence, dates,
//! lengths, source turn); edge-or-attribute decided by the entity list; the
//! subject allow-list; the fact cap (a round robin over source turns, best
//! value first, so one chatty turn cannot crowd out the rest); orphan
//! entities pruned; the entity cap.
//!
//! Warning kinds: `missing_field`, `empty_entity_name`, `unknown_entity_type`,
//! `unknown_fact_type`, `bad_confidence`, `confidence_clamped`, `bad_date`,
//! `placeholder_date`, `bad_date_range`, `fact_too_short`, `fact_truncated`,
//! `object_truncated`, `quote_truncated`, `unknown_source_turn`,
//! `source_turn_repaired`, `relationship_demoted`, `literal_promoted`,
//! `subject_not_allowed`, `too_many_facts`, `orphan_entity_pruned`,
//! `too_many_entities`.

use std::collections::{BTreeMap, BTreeSet};

use super::value::value_score;
use super::{ExtractInput, Extraction, RawExtraction, RawFact, ScoredFact};
use crate::pipeline::Config;
use crate::types::{CandidateEntity, CandidateFact, EntityType, FactKind, FactType, Warning};

/// Applies every guard and cap to `raw` and scores the surviving facts.
pub fn postprocess(raw: RawExtraction, input: &ExtractInput<'_>, cfg: &Config) -> Extraction {
    let mut warnings = raw.warnings;
    let mut entities = validate_entities(raw.entities, &mut warnings);

    let mut facts = Vec::new();
    let tagged = raw
        .relationships
        .into_iter()
        .map(|f| (f, FactKind::Relationship))
        .chain(raw.literal_facts.into_iter().map(|f| (f, FactKind::Literal)));
    for (f, kind) in tagged {
        if let Some(c) = validate_fact(f, kind, input, cfg, &mut warnings) {
            facts.push(c);
        }
    }

    let mut names: BTreeSet<String> = entities.iter().map(|e| key(&e.name)).collect();
    names.extend(input.known_entities.iter().map(|n| key(n)));
    names.extend(input.speakers.iter().map(|n| key(n)));
    decide_edges(&mut facts, &names, &mut warnings);

    let facts = apply_allow_list(facts, input, &mut warnings);

    let cap = if raw.graph { cfg.max_facts_graph } else { cfg.max_facts };
    let mut scored: Vec<ScoredFact> = facts.into_iter().map(|fact| ScoredFact { value_score: value_score(&fact), fact }).collect();
    if scored.len() > cap {
        warnings.push(Warning::new("too_many_facts", format!("{} facts, kept the {cap} best spread over source turns", scored.len())));
        scored = cap_facts(scored, cap);
    }

    prune_orphans(&mut entities, &scored, &mut warnings);
    if entities.len() > cfg.max_entities {
        warnings.push(Warning::new("too_many_entities", format!("{} entities, kept the first {}", entities.len(), cfg.max_entities)));
        entities.truncate(cfg.max_entities);
        let mut kept: BTreeSet<String> = entities.iter().map(|e| key(&e.name)).collect();
        kept.extend(input.known_entities.iter().map(|n| key(n)));
        kept.extend(input.speakers.iter().map(|n| key(n)));
        for s in scored.iter_mut() {
            if s.fact.kind == FactKind::Relationship && !kept.contains(&key(&s.fact.object)) {
                s.fact.kind = FactKind::Literal;
                warnings
                    .push(Warning::new("relationship_demoted", format!("object {:?} lost its entity to the entity cap", s.fact.object)));
            }
        }
    }

    Extraction { entities, facts: scored, warnings }
}

/// Case-insensitive, whitespace-collapsed comparison key for names.
fn key(name: &str) -> String {
    name.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Lower-cased, punctuation stripped (`-`, `_` and `/` become spaces),
/// whitespace collapsed.
pub fn normalize_predicate(p: &str) -> String {
    let mapped: String = p
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            '-' | '_' | '/' => Some(' '),
            c if c.is_alphanumeric() || c.is_whitespace() => Some(c),
            _ => None,
        })
        .collect();
    collapse(&mapped)
}

/// At most `max` characters, cut on a character boundary, trailing space trimmed.
fn truncate_chars(s: &str, max: usize) -> String {
    s.chars().take(max).collect::<String>().trim_end().to_string()
}

fn validate_entities(raw: Vec<super::RawEntity>, warnings: &mut Vec<Warning>) -> Vec<CandidateEntity> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for e in raw {
        let name = collapse(&e.name);
        if name.is_empty() {
            warnings.push(Warning::new("empty_entity_name", format!("entity of type {:?} has no name", e.entity_type)));
            continue;
        }
        let entity_type = match EntityType::parse(&e.entity_type) {
            Some(t) => t,
            None => {
                warnings.push(Warning::new("unknown_entity_type", format!("entity {name:?} has type {:?}; using THING", e.entity_type)));
                EntityType::Thing
            }
        };
        if seen.insert((key(&name), entity_type)) {
            out.push(CandidateEntity { name, entity_type });
        }
    }
    out
}

fn validate_fact(f: RawFact, kind: FactKind, input: &ExtractInput<'_>, cfg: &Config, warnings: &mut Vec<Warning>) -> Option<CandidateFact> {
    let subject = collapse(&f.subject);
    let predicate = normalize_predicate(&f.predicate);
    let mut object = collapse(&f.object);
    let missing: Vec<&str> = [("subject", &subject), ("predicate", &predicate), ("object", &object)]
        .iter()
        .filter(|(_, v)| v.is_empty())
        .map(|(n, _)| *n)
        .collect();
    if !missing.is_empty() {
        warnings.push(Warning::new("missing_field", format!("fact from turn {:?} has an empty {}", f.source_turn, missing.join(" and "))));
        return None;
    }
    let subject = input.speakers.iter().find(|s| key(s) == key(&subject)).cloned().unwrap_or(subject);

    let fact_type = FactType::parse(&f.fact_type).unwrap_or_else(|| {
        warnings.push(Warning::new("unknown_fact_type", format!("fact {subject:?} {predicate:?} has type {:?}; using fact", f.fact_type)));
        FactType::Fact
    });

    let confidence = if f.confidence.is_nan() {
        warnings.push(Warning::new("bad_confidence", format!("fact {subject:?} {predicate:?} has NaN confidence; using 0")));
        0.0
    } else if !(0.0..=1.0).contains(&f.confidence) {
        warnings.push(Warning::new(
            "confidence_clamped",
            format!("fact {subject:?} {predicate:?} has confidence {} outside [0, 1]", f.confidence),
        ));
        f.confidence.clamp(0.0, 1.0)
    } else {
        f.confidence
    };

    let mut valid_from = sanitize_date(f.valid_from.as_deref(), false, "valid_from", warnings);
    let valid_until = sanitize_date(f.valid_until.as_deref(), true, "valid_until", warnings);
    if let (Some(a), Some(b)) = (&valid_from, &valid_until)
        && a > b
    {
        warnings.push(Warning::new("bad_date_range", format!("valid_from {a} is after valid_until {b}; dropping valid_from")));
        valid_from = None;
    }

    let content = f.content.as_deref().map(str::trim).filter(|c| !c.is_empty());
    let mut content = match content {
        Some(c) => c.to_string(),
        None => format!("{subject} {predicate} {object}"),
    };
    let content_chars = content.chars().count();
    if content_chars < cfg.min_fact_chars {
        warnings
            .push(Warning::new("fact_too_short", format!("fact {content:?} has {content_chars} characters (< {})", cfg.min_fact_chars)));
        return None;
    }
    if content_chars > cfg.max_fact_chars {
        warnings.push(Warning::new("fact_truncated", format!("fact of {content_chars} characters cut to {}", cfg.max_fact_chars)));
        content = truncate_chars(&content, cfg.max_fact_chars);
    }
    let object_chars = object.chars().count();
    if object_chars > cfg.max_object_chars {
        warnings.push(Warning::new("object_truncated", format!("object of {object_chars} characters cut to {}", cfg.max_object_chars)));
        object = truncate_chars(&object, cfg.max_object_chars);
    }
    let mut source_quote = f.source_quote.trim().to_string();
    let quote_chars = source_quote.chars().count();
    if quote_chars > cfg.max_quote_chars {
        warnings.push(Warning::new("quote_truncated", format!("quote of {quote_chars} characters cut to {}", cfg.max_quote_chars)));
        source_quote = truncate_chars(&source_quote, cfg.max_quote_chars);
    }

    let source_turn = check_source_turn(f.source_turn.trim(), &source_quote, input, warnings);

    Some(CandidateFact {
        subject,
        predicate,
        object,
        kind,
        fact_type,
        content,
        confidence,
        source_turn,
        source_quote,
        valid_from,
        valid_until,
    })
}

/// Keeps a source turn of the episode; otherwise repairs it from the quote
/// when exactly one turn holds the quote, else keeps it with a warning.
fn check_source_turn(turn: &str, quote: &str, input: &ExtractInput<'_>, warnings: &mut Vec<Warning>) -> String {
    let turns = &input.episode.turns;
    if turns.is_empty() || turns.iter().any(|t| t.id == turn) {
        return turn.to_string();
    }
    let needle = key(quote);
    if !needle.is_empty() {
        let holders: Vec<&str> = turns.iter().filter(|t| key(&t.text).contains(&needle)).map(|t| t.id.as_str()).collect();
        if let [only] = holders.as_slice() {
            warnings.push(Warning::new(
                "source_turn_repaired",
                format!("source turn {turn:?} is not in the episode; the quote is in turn {only:?}"),
            ));
            return only.to_string();
        }
    }
    warnings.push(Warning::new("unknown_source_turn", format!("source turn {turn:?} is not in episode {:?}", input.episode.id)));
    turn.to_string()
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => 29,
        _ => 28,
    }
}

/// `YYYY-MM-DD`, `YYYY-MM` or `YYYY` (a date-time keeps its date) →
/// `YYYY-MM-DD`. A partial date becomes the start of its period, or the end
/// when `end_of_period` (a `valid_until` of `2018` means through 2018).
/// Null-like and empty values become `None`; placeholders and junk become
/// `None` with a warning.
pub fn sanitize_date(raw: Option<&str>, end_of_period: bool, field: &str, warnings: &mut Vec<Warning>) -> Option<String> {
    let v = raw?.trim();
    let lower = v.to_ascii_lowercase();
    if v.is_empty() || matches!(lower.as_str(), "null" | "none" | "n/a" | "na" | "unknown" | "-") {
        return None;
    }
    if lower.contains("yyyy") || lower.contains("mm") || lower.contains("dd") {
        warnings.push(Warning::new("placeholder_date", format!("{field} {v:?} is a placeholder")));
        return None;
    }
    let date_part = v.split(['T', ' ']).next().unwrap_or(v);
    let parts: Vec<&str> = date_part.split('-').collect();
    let num = |s: &str, len: usize| -> Option<u32> {
        (s.len() == len && s.chars().all(|c| c.is_ascii_digit())).then(|| s.parse().ok()).flatten()
    };
    let parsed = match parts.as_slice() {
        [y] => num(y, 4).map(|y| if end_of_period { (y, 12, 31) } else { (y, 1, 1) }),
        [y, m] => match (num(y, 4), num(m, 2)) {
            (Some(y), Some(m)) if (1..=12).contains(&m) => Some(if end_of_period { (y, m, days_in_month(y, m)) } else { (y, m, 1) }),
            _ => None,
        },
        [y, m, d] => match (num(y, 4), num(m, 2), num(d, 2)) {
            (Some(y), Some(m), Some(d)) if (1..=12).contains(&m) && (1..=days_in_month(y, m)).contains(&d) => Some((y, m, d)),
            _ => None,
        },
        _ => None,
    };
    match parsed {
        Some((y, m, d)) if (1000..=9999).contains(&y) => Some(format!("{y:04}-{m:02}-{d:02}")),
        _ => {
            warnings.push(Warning::new("bad_date", format!("{field} {v:?} is not a date; dropped")));
            None
        }
    }
}

/// Demotes relationships whose object is no known entity; promotes literals
/// whose object names one.
fn decide_edges(facts: &mut [CandidateFact], names: &BTreeSet<String>, warnings: &mut Vec<Warning>) {
    for f in facts.iter_mut() {
        let known = names.contains(&key(&f.object));
        match (f.kind, known) {
            (FactKind::Relationship, false) => {
                f.kind = FactKind::Literal;
                warnings.push(Warning::new(
                    "relationship_demoted",
                    format!("object {:?} of {:?} is no known entity; kept as a literal", f.object, f.predicate),
                ));
            }
            (FactKind::Literal, true) => {
                f.kind = FactKind::Relationship;
                warnings.push(Warning::new(
                    "literal_promoted",
                    format!("object {:?} of {:?} names a known entity; kept as a relationship", f.object, f.predicate),
                ));
            }
            _ => {}
        }
    }
}

/// Keeps facts whose subject is a speaker, a known entity, or an entity
/// linked (through relationships of this extraction, transitively) to one.
fn apply_allow_list(facts: Vec<CandidateFact>, input: &ExtractInput<'_>, warnings: &mut Vec<Warning>) -> Vec<CandidateFact> {
    let mut allowed: BTreeSet<String> = input.speakers.iter().map(|s| key(s)).collect();
    allowed.extend(input.known_entities.iter().map(|s| key(s)));
    loop {
        let before = allowed.len();
        for f in facts.iter().filter(|f| f.kind == FactKind::Relationship) {
            let (s, o) = (key(&f.subject), key(&f.object));
            if allowed.contains(&s) {
                allowed.insert(o);
            } else if allowed.contains(&o) {
                allowed.insert(s);
            }
        }
        if allowed.len() == before {
            break;
        }
    }
    facts
        .into_iter()
        .filter(|f| {
            let ok = allowed.contains(&key(&f.subject));
            if !ok {
                warnings
                    .push(Warning::new("subject_not_allowed", format!("subject {:?} is neither a speaker nor linked to one", f.subject)));
            }
            ok
        })
        .collect()
}

/// Keeps `cap` facts: each turn's best fact first, then each turn's second
/// best, …; ties by value, then by position. The survivors keep their order.
fn cap_facts(scored: Vec<ScoredFact>, cap: usize) -> Vec<ScoredFact> {
    let mut by_turn: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, s) in scored.iter().enumerate() {
        by_turn.entry(s.fact.source_turn.as_str()).or_default().push(i);
    }
    let mut rank = vec![0usize; scored.len()];
    for idx in by_turn.values_mut() {
        idx.sort_by(|&a, &b| scored[b].value_score.total_cmp(&scored[a].value_score).then(a.cmp(&b)));
        for (r, &i) in idx.iter().enumerate() {
            rank[i] = r;
        }
    }
    let mut order: Vec<usize> = (0..scored.len()).collect();
    order.sort_by(|&a, &b| rank[a].cmp(&rank[b]).then(scored[b].value_score.total_cmp(&scored[a].value_score)).then(a.cmp(&b)));
    let keep: BTreeSet<usize> = order.into_iter().take(cap).collect();
    scored.into_iter().enumerate().filter(|(i, _)| keep.contains(i)).map(|(_, s)| s).collect()
}

fn prune_orphans(entities: &mut Vec<CandidateEntity>, facts: &[ScoredFact], warnings: &mut Vec<Warning>) {
    let mentioned: BTreeSet<String> = facts.iter().flat_map(|s| [key(&s.fact.subject), key(&s.fact.object)]).collect();
    entities.retain(|e| {
        let keep = mentioned.contains(&key(&e.name));
        if !keep {
            warnings.push(Warning::new("orphan_entity_pruned", format!("entity {:?} is in no fact", e.name)));
        }
        keep
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::extract::RawEntity;
    use crate::types::{Episode, Turn};

    struct Fixture {
        speakers: Vec<String>,
        known: Vec<String>,
        episode: Episode,
    }

    impl Fixture {
        fn new() -> Self {
            let turn = |id: &str, speaker: &str, text: &str| Turn { id: id.into(), speaker: speaker.into(), text: text.into() };
            Fixture {
                speakers: vec!["Alice".into(), "Bob".into()],
                known: vec!["Globex".into()],
                episode: Episode {
                    observations: vec![],
                    id: "s1".into(),
                    timestamp: Some("2024-02-03T10:00:00".into()),
                    turns: vec![
                        turn("t1", "Alice", "I work at Initech and my sister is Anna."),
                        turn("t2", "Bob", "I drive a Volvo."),
                        turn("t3", "Alice", "Dark mode: enabled"),
                    ],
                },
            }
        }
        fn input(&self) -> ExtractInput<'_> {
            ExtractInput {
                conversation_id: "c1",
                speakers: &self.speakers,
                episode: &self.episode,
                known_entities: &self.known,
                recent_facts: &[],
            }
        }
    }

    fn raw_fact(subject: &str, predicate: &str, object: &str) -> RawFact {
        RawFact {
            subject: subject.into(),
            predicate: predicate.into(),
            object: object.into(),
            content: Some(format!("{subject} {predicate} {object}")),
            fact_type: "fact".into(),
            confidence: 0.9,
            source_quote: "I work at Initech".into(),
            source_turn: "t1".into(),
            valid_from: None,
            valid_until: None,
        }
    }

    fn entity(name: &str, t: &str) -> RawEntity {
        RawEntity { name: name.into(), entity_type: t.into() }
    }

    fn kinds(w: &[Warning]) -> Vec<&str> {
        w.iter().map(|w| w.kind.as_str()).collect()
    }

    fn run(raw: RawExtraction) -> Extraction {
        let fx = Fixture::new();
        postprocess(raw, &fx.input(), &Config::default())
    }

    #[test]
    fn predicate_is_normalised() {
        assert_eq!(normalize_predicate("  Works   AT! "), "works at");
        assert_eq!(normalize_predicate("has car-budget of:"), "has car budget of");
        assert_eq!(normalize_predicate("It's\tfav/color"), "its fav color");
        let out = run(RawExtraction { literal_facts: vec![raw_fact("Alice", "Has  TV_Budget-Of.", "$800")], ..Default::default() });
        assert_eq!(out.facts[0].fact.predicate, "has tv budget of");
    }

    #[test]
    fn subject_allow_list_keeps_speakers_and_linked_entities() {
        let raw = RawExtraction {
            entities: vec![entity("Anna", "PERSON"), entity("Initech", "ORG"), entity("Rome", "PLACE")],
            relationships: vec![
                raw_fact("Alice", "has sister", "Anna"),
                raw_fact("Anna", "lives in", "Rome"),
                raw_fact("Mallory", "works at", "Initech"),
                raw_fact("Globex", "is based in", "Rome"),
            ],
            literal_facts: vec![raw_fact("alice", "dark mode", "enabled"), raw_fact("Eve", "likes", "secrets")],
            ..Default::default()
        };
        let out = run(raw);
        let subjects: Vec<&str> = out.facts.iter().map(|s| s.fact.subject.as_str()).collect();
        assert_eq!(subjects, ["Alice", "Anna", "Globex", "Alice"]);
        assert_eq!(kinds(&out.warnings).iter().filter(|k| **k == "subject_not_allowed").count(), 2);
        assert!(out.facts.iter().all(|s| s.fact.subject != "Mallory"));
    }

    #[test]
    fn entity_linked_to_a_speaker_as_object_is_allowed() {
        let raw = RawExtraction {
            entities: vec![entity("Carol", "PERSON")],
            relationships: vec![raw_fact("Carol", "is married to", "Bob")],
            literal_facts: vec![raw_fact("Carol", "works as", "a nurse")],
            ..Default::default()
        };
        let out = run(raw);
        assert_eq!(out.facts.len(), 2, "{:?}", out.warnings);
        assert_eq!(out.facts[0].fact.kind, FactKind::Relationship);
    }

    #[test]
    fn edge_or_attribute_follows_the_entity_list() {
        let raw = RawExtraction {
            entities: vec![entity("Initech", "ORG")],
            relationships: vec![raw_fact("Alice", "works at", "Initech"), raw_fact("Alice", "lives in", "a small town")],
            literal_facts: vec![raw_fact("Alice", "used to work at", "Globex"), raw_fact("Alice", "met", "bob")],
            ..Default::default()
        };
        let out = run(raw);
        let k: Vec<FactKind> = out.facts.iter().map(|s| s.fact.kind).collect();
        assert_eq!(k, [FactKind::Relationship, FactKind::Literal, FactKind::Relationship, FactKind::Relationship]);
        let w = kinds(&out.warnings);
        assert_eq!(w.iter().filter(|k| **k == "relationship_demoted").count(), 1);
        assert_eq!(w.iter().filter(|k| **k == "literal_promoted").count(), 2);
    }

    #[test]
    fn orphan_entities_are_pruned() {
        let raw = RawExtraction {
            entities: vec![entity("Initech", "ORG"), entity("Atlantis", "PLACE"), entity("alice", "PERSON")],
            relationships: vec![raw_fact("Alice", "works at", "Initech")],
            ..Default::default()
        };
        let out = run(raw);
        let names: Vec<&str> = out.entities.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["Initech", "alice"]);
        assert_eq!(kinds(&out.warnings), ["orphan_entity_pruned"]);
    }

    #[test]
    fn unknown_types_fall_back_with_warnings() {
        let mut f = raw_fact("Alice", "works at", "Initech");
        f.fact_type = "gossip".into();
        let mut g = raw_fact("Alice", "prefers", "tea over coffee");
        g.fact_type = " Preference ".into();
        let raw = RawExtraction {
            entities: vec![entity("Initech", "corporation"), entity("", "ORG"), entity("Initech", "Company")],
            relationships: vec![f],
            literal_facts: vec![g],
            ..Default::default()
        };
        let out = run(raw);
        assert_eq!(out.entities.len(), 2);
        assert_eq!(out.entities[0].entity_type, EntityType::Thing);
        assert_eq!(out.entities[1].entity_type, EntityType::Org);
        assert_eq!(out.facts[0].fact.fact_type, FactType::Fact);
        assert_eq!(out.facts[1].fact.fact_type, FactType::Preference);
        let w = kinds(&out.warnings);
        for k in ["unknown_entity_type", "empty_entity_name", "unknown_fact_type"] {
            assert!(w.contains(&k), "{k} in {w:?}");
        }
    }

    #[test]
    fn missing_fields_drop_the_fact() {
        let raw = RawExtraction {
            literal_facts: vec![raw_fact(" ", "likes", "tea"), raw_fact("Alice", "!!", "tea"), raw_fact("Alice", "likes", "  ")],
            ..Default::default()
        };
        let out = run(raw);
        assert!(out.facts.is_empty());
        assert_eq!(kinds(&out.warnings), ["missing_field"; 3]);
    }

    #[test]
    fn fact_cap_spreads_over_turns_and_graph_cap_is_tighter() {
        let mut lits = Vec::new();
        for i in 0..30 {
            let mut f = raw_fact("Alice", "noted item", &format!("item number {i}"));
            f.source_turn = if i < 25 { "t1".into() } else { "t3".into() };
            lits.push(f);
        }
        let out = run(RawExtraction { literal_facts: lits.clone(), ..Default::default() });
        assert_eq!(out.facts.len(), 20);
        assert_eq!(out.facts.iter().filter(|s| s.fact.source_turn == "t3").count(), 5);
        assert!(kinds(&out.warnings).contains(&"too_many_facts"));
        let out = run(RawExtraction { literal_facts: lits, graph: true, ..Default::default() });
        assert_eq!(out.facts.len(), 12);
        assert!(out.facts.iter().any(|s| s.fact.source_turn == "t3"));
    }

    #[test]
    fn entity_cap_demotes_edges_to_dropped_entities() {
        let fx = Fixture::new();
        let cfg = {
            let mut c = Config::default();
            c.max_entities = 2;
            c
        };
        let raw = RawExtraction {
            entities: vec![entity("Initech", "ORG"), entity("Anna", "PERSON"), entity("Rome", "PLACE")],
            relationships: vec![
                raw_fact("Alice", "works at", "Initech"),
                raw_fact("Alice", "has sister", "Anna"),
                raw_fact("Alice", "lives in", "Rome"),
            ],
            ..Default::default()
        };
        let out = postprocess(raw, &fx.input(), &cfg);
        assert_eq!(out.entities.len(), 2);
        assert_eq!(out.facts.len(), 3);
        assert_eq!(out.facts[2].fact.kind, FactKind::Literal);
        let w = kinds(&out.warnings);
        assert!(w.contains(&"too_many_entities") && w.contains(&"relationship_demoted"), "{w:?}");
    }

    #[test]
    fn length_caps() {
        let fx = Fixture::new();
        let cfg = {
            let mut c = Config::default();
            c.max_fact_chars = 40;
            c.max_object_chars = 12;
            c.max_quote_chars = 15;
            c
        };
        let mut short = raw_fact("Alice", "likes", "tea");
        short.content = Some("Alice tea".into());
        let mut long = raw_fact("Alice", "likes", "a very long description of tea leaves");
        long.content = Some("Alice likes a very long description of tea leaves from the hills".into());
        long.source_quote = "I like a very long description of tea leaves".into();
        let raw = RawExtraction { literal_facts: vec![short, long], ..Default::default() };
        let out = postprocess(raw, &fx.input(), &cfg);
        assert_eq!(out.facts.len(), 1);
        let f = &out.facts[0].fact;
        assert!(f.content.chars().count() <= 40 && f.content.starts_with("Alice likes a very"));
        assert_eq!(f.object, "a very long");
        assert!(f.source_quote.chars().count() <= 15);
        let w = kinds(&out.warnings);
        for k in ["fact_too_short", "fact_truncated", "object_truncated", "quote_truncated"] {
            assert!(w.contains(&k), "{k} in {w:?}");
        }
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_chars("Zoë Zürich", 3), "Zoë");
        assert_eq!(truncate_chars("ab cd", 3), "ab");
    }

    #[test]
    fn missing_content_is_built_from_the_triple() {
        let mut f = raw_fact("Alice", "works at", "Initech");
        f.content = None;
        let out = run(RawExtraction { relationships: vec![f], ..Default::default() });
        assert_eq!(out.facts[0].fact.content, "Alice works at Initech");
    }

    #[test]
    fn confidence_is_clamped_and_nan_zeroed() {
        let mut lits = Vec::new();
        for c in [1.7, -0.2, f64::NAN, 0.8] {
            let mut f = raw_fact("Alice", "likes", "green tea");
            f.confidence = c;
            lits.push(f);
        }
        let out = run(RawExtraction { literal_facts: lits, ..Default::default() });
        let c: Vec<f64> = out.facts.iter().map(|s| s.fact.confidence).collect();
        assert_eq!(c, [1.0, 0.0, 0.0, 0.8]);
        let w = kinds(&out.warnings);
        assert_eq!(w.iter().filter(|k| **k == "confidence_clamped").count(), 2);
        assert_eq!(w.iter().filter(|k| **k == "bad_confidence").count(), 1);
    }

    #[test]
    fn dates_are_sanitised() {
        let mut w = Vec::new();
        assert_eq!(sanitize_date(None, false, "f", &mut w), None);
        assert_eq!(sanitize_date(Some("  "), false, "f", &mut w), None);
        assert_eq!(sanitize_date(Some("null"), false, "f", &mut w), None);
        assert!(w.is_empty());
        assert_eq!(sanitize_date(Some("2015"), false, "f", &mut w).as_deref(), Some("2015-01-01"));
        assert_eq!(sanitize_date(Some("2018"), true, "f", &mut w).as_deref(), Some("2018-12-31"));
        assert_eq!(sanitize_date(Some("2024-02"), true, "f", &mut w).as_deref(), Some("2024-02-29"));
        assert_eq!(sanitize_date(Some("2023-02"), false, "f", &mut w).as_deref(), Some("2023-02-01"));
        assert_eq!(sanitize_date(Some("2023-05-08"), true, "f", &mut w).as_deref(), Some("2023-05-08"));
        assert_eq!(sanitize_date(Some("2023-05-08T13:56:00"), false, "f", &mut w).as_deref(), Some("2023-05-08"));
        assert!(w.is_empty());
        assert_eq!(sanitize_date(Some("YYYY-MM-DD"), false, "f", &mut w), None);
        assert_eq!(kinds(&w), ["placeholder_date"]);
        w.clear();
        for junk in ["last week", "2023-02-30", "2023-13", "23-05-08", "2023/05/08", "0999"] {
            assert_eq!(sanitize_date(Some(junk), false, "f", &mut w), None, "{junk}");
        }
        assert_eq!(kinds(&w), ["bad_date"; 6]);
    }

    #[test]
    fn fact_dates_are_sanitised_and_ordered() {
        let mut a = raw_fact("Alice", "works at", "Initech");
        a.valid_from = Some("2015".into());
        a.valid_until = Some("2018".into());
        let mut b = raw_fact("Alice", "lives in", "Rome");
        b.valid_from = Some("2020-01-01".into());
        b.valid_until = Some("2019-01-01".into());
        let mut c = raw_fact("Alice", "drives", "a Volvo");
        c.valid_until = Some("soon".into());
        let out = run(RawExtraction { literal_facts: vec![a, b, c], ..Default::default() });
        let f = &out.facts;
        assert_eq!((f[0].fact.valid_from.as_deref(), f[0].fact.valid_until.as_deref()), (Some("2015-01-01"), Some("2018-12-31")));
        assert_eq!((f[1].fact.valid_from.as_deref(), f[1].fact.valid_until.as_deref()), (None, Some("2019-01-01")));
        assert_eq!(f[2].fact.valid_until, None);
        let w = kinds(&out.warnings);
        assert!(w.contains(&"bad_date_range") && w.contains(&"bad_date"), "{w:?}");
    }

    #[test]
    fn source_turn_is_checked_and_repaired_from_the_quote() {
        let mut a = raw_fact("Alice", "dark mode", "enabled");
        a.source_turn = "t9".into();
        a.source_quote = "dark mode: enabled".into();
        let mut b = raw_fact("Alice", "likes", "green tea");
        b.source_turn = "t9".into();
        b.source_quote = "not said anywhere".into();
        let out = run(RawExtraction { literal_facts: vec![a, b], ..Default::default() });
        assert_eq!(out.facts[0].fact.source_turn, "t3");
        assert_eq!(out.facts[1].fact.source_turn, "t9");
        assert_eq!(kinds(&out.warnings), ["source_turn_repaired", "unknown_source_turn"]);
    }

    #[test]
    fn every_fact_is_scored_and_raw_warnings_are_kept() {
        let raw = RawExtraction {
            entities: vec![entity("Initech", "ORG")],
            relationships: vec![raw_fact("Alice", "works at", "Initech")],
            warnings: vec![Warning::new("prompt_injection", "x")],
            ..Default::default()
        };
        let out = run(raw);
        assert_eq!(out.facts.len(), 1);
        assert_eq!(out.facts[0].value_score, value_score(&out.facts[0].fact));
        assert!(out.facts[0].value_score > 0.0);
        assert_eq!(kinds(&out.warnings), ["prompt_injection"]);
    }
}
