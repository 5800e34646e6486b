//! Stage 1, extract: an episode's turns → candidate entities and facts.
//!
//! An [`Extractor`] (rules or LLM) returns a loose [`RawExtraction`], as a
//! model would; [`postprocess`] then applies the same deterministic guards
//! and caps whatever produced it, and scores each fact's value. Validation
//! never fails: problems become warnings and partial results come back.

pub mod gold;
pub mod llm;
pub mod postprocess;
pub mod rules;
pub mod value;

use serde::{Deserialize, Serialize};

use super::StageMode;
use crate::error::Result;
pub use crate::model::raw::{RawEntity, RawExtraction, RawFact};
use crate::types::{CandidateEntity, CandidateFact, Episode, ValueTier, Warning};

pub use gold::GoldExtractor;
pub use llm::LlmExtractor;
pub use postprocess::postprocess;
pub use rules::RulesExtractor;
pub use value::{value_score, value_tier};

/// A matcher of a fixed list of phrases, built once: whether any occurs in
/// a text (bytes, case-sensitive, as `str::contains`) and where each
/// occurrence is, found in one pass over the text instead of one substring
/// search per phrase. Only for constant lists, each of which a test builds
/// (a list of phrases fails to build only past the crate's size limits).
#[allow(clippy::expect_used)]
pub(crate) fn phrase_matcher<P: AsRef<[u8]>>(phrases: &[P]) -> aho_corasick::AhoCorasick {
    aho_corasick::AhoCorasick::new(phrases).expect("a fixed list of phrases builds a matcher")
}

/// What an extractor sees of an episode and of the store.
#[derive(Debug, Clone, Copy)]
pub struct ExtractInput<'a> {
    pub conversation_id: &'a str,
    pub speakers: &'a [String],
    pub episode: &'a Episode,
    /// Canonical names of the conversation's entities (≤ 200 shown to a model).
    pub known_entities: &'a [String],
    /// Contents of recent live facts (≤ 100 shown to a model).
    pub recent_facts: &'a [String],
}

/// A post-processed fact with its value score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredFact {
    pub fact: CandidateFact,
    pub value_score: f64,
}

/// Stage 1's output for one episode.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Extraction {
    pub entities: Vec<CandidateEntity>,
    pub facts: Vec<ScoredFact>,
    pub warnings: Vec<Warning>,
}

/// Produces a raw extraction for one episode. Implementations: rules (no
/// model) and LLM (one call per episode, recorded).
pub trait Extractor: Send + Sync {
    /// Names the extractor and its version, recorded in the manifest.
    fn id(&self) -> String;
    /// Whether a model answers (LLM mode) or rules do.
    fn mode(&self) -> StageMode {
        StageMode::Rules
    }
    fn extract(&self, input: &ExtractInput<'_>) -> Result<RawExtraction>;
    /// An extractor that answers in Signet's extraction contract instead
    /// (the `signet` profile's LLM extraction); `None` for stage 1's graph.
    fn contract(&self) -> Option<&dyn crate::pipeline::signet::extract_llm::ContractExtractor> {
        None
    }
}

/// Convenience: the tier of a scored fact under the given cut-offs.
/// The noise filter: each candidate's value tier under the configured
/// thresholds (ephemeral candidates go no further than stage 1).
pub fn noise_filter(facts: &[ScoredFact], cfg: &crate::pipeline::Config) -> Vec<ValueTier> {
    facts.iter().map(|f| tier_of(f, cfg.soda.value_core_min, cfg.soda.value_contextual_min)).collect()
}

pub fn tier_of(f: &ScoredFact, core_min: f64, contextual_min: f64) -> ValueTier {
    value_tier(f.value_score, core_min, contextual_min)
}

/// Random texts for the tests that check a [`phrase_matcher`] against
/// `str::contains` of each phrase: whole phrases, their halves (which must
/// not match) and filler words, joined by one or two spaces, in lower and
/// upper case.
#[cfg(test)]
pub(crate) fn phrase_soup(phrases: &[&str], seed: u64, count: usize) -> Vec<String> {
    let mut r = crate::state::random::Rng(seed);
    let filler = ["i", "so", "we", "the", "about", "now", "you", "are", "asked", "said", "it's", "'", "x"];
    (0..count)
        .map(|_| {
            let mut t = String::new();
            for _ in 0..r.below(8) {
                let p = phrases[r.below(phrases.len())];
                let cut = p.char_indices().nth(p.chars().count() / 2).map_or(p.len(), |(i, _)| i);
                let piece = match r.below(4) {
                    0 => p,
                    1 => &p[..cut],
                    2 => &p[cut..],
                    _ => r.pick(&filler),
                };
                t.push_str(piece);
                t.push_str(if r.chance(20) { "  " } else { " " });
            }
            if r.chance(10) { t.to_uppercase() } else { t }
        })
        .collect()
}
