//! `signet`'s front (extraction and vectors), in Signet's extraction
//! contract ([`super::extract`]) in every mode:
//!
//! - rules (and gold) mode: the stage-1 extractor's answer, post-processed,
//!   is put in the contract ([`SignetExtraction::from_extraction`]) and
//!   validated with its caps; each contract fact keeps the subject,
//!   predicate, object, dates and source turn of the fact it came from
//!   (provenance, metrics and the rules decision policy read them), with
//!   the contract's content, type and confidence;
//! - LLM mode: the extractor answers in the contract itself
//!   ([`super::extract_llm::SignetLlmExtractor`]); its facts carry only
//!   content, type and confidence (no subject, predicate, object or turn).
//!   Each is given the turn of the episode that shares the most distinct
//!   words (three letters or more, lower-cased) with its content, the
//!   earliest on a tie, none when no turn shares one
//!   ([`attribute_turn`]): provenance, so that retrieval metrics can credit it.
//!
//! The facts that reach the decision stage are the contract's facts, in
//! its order; its entity triples are kept on the front (counted in the
//! provenance's `entity_count`; Signet's graph of them is not built, the
//! linker only finds mentions of existing entities).

use std::time::Instant;

use super::extract::{SignetExtraction, SignetFact};
use crate::error::Result;
use crate::pipeline::Config;
use crate::pipeline::extract::{ExtractInput, Extraction, ScoredFact, postprocess, value_score};
use crate::pipeline::{EpisodeFront, Stages, known_context, ms};
use crate::state::ConvState;
use crate::types::{CandidateFact, Conversation, Episode, FactKind};

/// Extraction in the contract and the facts' vectors for one episode.
pub fn front(stages: Stages<'_>, conv: &Conversation, episode: &Episode, state: &ConvState, cfg: &Config) -> Result<EpisodeFront> {
    let t0 = Instant::now();
    let (known, recent) = known_context(episode, state);
    let input =
        ExtractInput { conversation_id: &conv.id, speakers: &conv.speakers, episode, known_entities: &known, recent_facts: &recent };
    let (contract, usage, base) = match stages.extractor.contract() {
        Some(x) => {
            let (c, usage) = x.extract_contract(&input, cfg)?;
            (c, usage, Extraction::default())
        }
        None => {
            let raw = stages.extractor.extract(&input)?;
            let usage = raw.usage;
            let ex = postprocess(raw, &input, cfg);
            (SignetExtraction::from_extraction(&ex, cfg), usage, ex)
        }
    };
    let mut extraction = in_contract(base, &contract);
    for f in extraction.facts.iter_mut().filter(|f| f.fact.source_turn.is_empty()) {
        f.fact.source_turn = attribute_turn(&f.fact.content, episode).unwrap_or_default();
    }
    let extract_ms = ms(t0);
    let t1 = Instant::now();
    let texts: Vec<&str> = extraction.facts.iter().map(|f| f.fact.content.as_str()).collect();
    let source = format!("conversation {} episode {}", conv.id, episode.id);
    let fact_embeddings = if texts.is_empty() { Vec::new() } else { stages.embedder.embed(&texts, &source)? };
    Ok(EpisodeFront {
        extraction,
        fact_embeddings,
        // Signet's stages read no entity vectors: the linker matches names.
        entity_embeddings: Vec::new(),
        usage,
        extractor: stages.extractor.id(),
        extract_ms,
        embed_ms: ms(t1),
        slot_base: None,
        triples: contract.entities,
    })
}

/// The episode's extraction with the contract's facts: each from the
/// post-processed fact it came from (rules mode) or from its own fields
/// (LLM mode). The warnings are the post-processing's, then the contract's.
pub fn in_contract(base: Extraction, contract: &SignetExtraction) -> Extraction {
    let facts = contract.facts.iter().map(|f| scored(f, &base.facts)).collect();
    let mut warnings = base.warnings;
    warnings.extend(contract.warnings.iter().cloned());
    Extraction { entities: base.entities, facts, warnings }
}

/// The words [`attribute_turn`] compares: lower-cased alphanumeric runs of three characters or more.
fn words(text: &str) -> std::collections::BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() >= 3).map(str::to_lowercase).collect()
}

/// The turn of `episode` whose speaker and text share the most distinct
/// [`words`] with `content`; the earliest on a tie; `None` when none shares one.
pub fn attribute_turn(content: &str, episode: &Episode) -> Option<String> {
    let want = words(content);
    let mut best: Option<(usize, &str)> = None;
    for t in &episode.turns {
        let have = words(&format!("{} {}", t.speaker, t.text));
        let n = want.intersection(&have).count();
        if n > 0 && best.is_none_or(|(m, _)| n > m) {
            best = Some((n, t.id.as_str()));
        }
    }
    best.map(|(_, id)| id.to_string())
}

fn scored(f: &SignetFact, base: &[ScoredFact]) -> ScoredFact {
    if let Some(b) = f.origin.and_then(|i| base.get(i)) {
        let mut s = b.clone();
        let changed = s.fact.content != f.content || s.fact.fact_type != f.fact_type;
        s.fact.content = f.content.clone();
        s.fact.fact_type = f.fact_type;
        s.fact.confidence = f.confidence;
        if changed {
            s.value_score = value_score(&s.fact);
        }
        return s;
    }
    let fact = CandidateFact {
        subject: String::new(),
        predicate: String::new(),
        object: String::new(),
        kind: FactKind::Literal,
        fact_type: f.fact_type,
        content: f.content.clone(),
        confidence: f.confidence,
        source_turn: f.source_turn.clone().unwrap_or_default(),
        source_quote: String::new(),
        valid_from: None,
        valid_until: None,
    };
    ScoredFact { value_score: value_score(&fact), fact }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::FactType;

    #[test]
    fn an_llm_fact_is_given_the_turn_sharing_most_words() {
        use crate::types::{Episode, Turn};
        let turn = |id: &str, speaker: &str, text: &str| Turn { id: id.into(), speaker: speaker.into(), text: text.into() };
        let e = Episode {
            id: "e1".into(),
            timestamp: None,
            turns: vec![
                turn("t1", "Ann", "I adopted a dog last week."),
                turn("t2", "Bo", "Nice! I started painting at the art school."),
                turn("t3", "Ann", "Painting sounds fun."),
            ],
            observations: vec![],
        };
        // "painting", "art", "school" and "started" are t2's; t3 shares only "painting".
        assert_eq!(attribute_turn("Bo started painting at an art school", &e).as_deref(), Some("t2"));
        // The speaker counts; a tie goes to the earliest turn.
        assert_eq!(attribute_turn("Ann adopted a dog", &e).as_deref(), Some("t1"));
        assert_eq!(attribute_turn("Painting", &e).as_deref(), Some("t2"));
        assert_eq!(attribute_turn("Zebra", &e), None);
    }

    fn base_fact(content: &str, turn: &str, until: Option<&str>) -> ScoredFact {
        ScoredFact {
            fact: CandidateFact {
                subject: "Alice".into(),
                predicate: "works at".into(),
                object: "Google".into(),
                kind: FactKind::Relationship,
                fact_type: FactType::Fact,
                content: content.into(),
                confidence: 0.9,
                source_turn: turn.into(),
                source_quote: "I work at Google.".into(),
                valid_from: None,
                valid_until: until.map(str::to_string),
            },
            value_score: 0.5,
        }
    }

    #[test]
    fn rules_facts_keep_their_structure_and_take_the_contracts_fields() {
        // The second fact is shorter than the contract's 10 characters: the
        // contract drops it, and the third keeps its own structure.
        let base = Extraction {
            entities: Vec::new(),
            facts: vec![
                base_fact("Alice works at Google", "t1", None),
                base_fact("Al at G", "t2", None),
                base_fact("Alice left Google again", "t3", Some("2024-09-01")),
            ],
            warnings: Vec::new(),
        };
        let contract = SignetExtraction::from_extraction(&base, &Config::default());
        let ex = in_contract(base, &contract);
        assert_eq!(
            ex.facts.iter().map(|f| (f.fact.content.as_str(), f.fact.source_turn.as_str())).collect::<Vec<_>>(),
            [("Alice works at Google", "t1"), ("Alice left Google again", "t3")]
        );
        assert_eq!(ex.facts[1].fact.valid_until.as_deref(), Some("2024-09-01"), "the dropped fact did not shift the origins");
        assert_eq!((ex.facts[1].fact.subject.as_str(), ex.facts[1].fact.object.as_str()), ("Alice", "Google"));
        assert_eq!(ex.warnings.iter().map(|w| w.kind.as_str()).collect::<Vec<_>>(), ["fact_too_short"]);
        assert_eq!(contract.entities.len(), 3, "each relationship fact is a triple (its sentence's length does not gate it)");
    }

    #[test]
    fn model_facts_carry_only_the_contract() {
        let answer = r#"{"facts": [{"content": "Alice works at Google", "type": "bogus", "confidence": 0.4}], "entities": []}"#;
        let contract = super::super::extract::parse_answer(answer, &Config::default());
        let ex = in_contract(Extraction::default(), &contract);
        let f = &ex.facts[0].fact;
        assert_eq!((f.content.as_str(), f.fact_type, f.confidence), ("Alice works at Google", FactType::Fact, 0.4));
        assert_eq!((f.subject.as_str(), f.source_turn.as_str(), f.kind), ("", "", FactKind::Literal));
        assert_eq!(ex.warnings.iter().map(|w| w.kind.as_str()).collect::<Vec<_>>(), ["unknown_fact_type"]);
    }
}
