//! The `soda` profile: memory-soda's five stages (`pipeline::back`), with
//! Signet v2's caps and write gates and Memorix's value score, and its
//! config section `[soda]`: the thresholds of stages 1 (the value score),
//! 2, 3 and 4 (docs/pipeline.md).

use serde::{Deserialize, Serialize};

use super::profiles::Profile;
use super::{EpisodeFront, EpisodeRecord, Stages, back};
use crate::config::{Bound, Section, float, int};
use crate::error::Result;
use crate::state::ConvState;
use crate::store::Store;
use crate::types::{Conversation, Episode};

/// `[soda]`: the soda profile's thresholds. Field docs are the reference for
/// each key; ranges in [`SodaConfig::BOUNDS`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SodaConfig {
    // ---- stage 1: value score (noise filter) ----
    /// Value score at or above which a fact is `core`.
    pub value_core_min: f64,
    /// Value score at or above which a fact is `contextual`; below it the
    /// fact is `ephemeral`, dropped and counted as noise rejected.
    pub value_contextual_min: f64,

    // ---- stage 2: entity resolution ----
    /// Cosine at or above which an extracted entity merges into the nearest
    /// existing entity of the same type. Depends on the embedder.
    pub entity_merge_threshold: f64,

    // ---- stage 3: dedupe ----
    /// Cosine at or above which a candidate is a near duplicate of a live
    /// fact or an earlier candidate of the batch. Depends on the embedder.
    pub near_dup_threshold: f64,
    /// `false` turns all of stage 3 off, exact and near duplicates and
    /// closures alike: every candidate past the noise filter survives it
    /// (for experiments; the seeds always dedupe).
    pub dedup_enabled: bool,

    // ---- stage 4: judge ----
    /// Lower end of the cosine band [min, near_dup_threshold) in which a
    /// candidate with the same subject and a different object is paired with
    /// a live fact. Depends on the embedder.
    pub contradiction_band_min: f64,
    /// Shared tokens needed for a negation/antonym conflict verdict.
    pub antonym_min_shared_tokens: usize,
    /// Count only content words towards `antonym_min_shared_tokens`: no
    /// stopword, no word of the subject both facts share; two facts with
    /// the same subject and object then need no shared word (memform's
    /// own, opt-in; the default `false` counts every word, as Signet's
    /// detector does).
    pub polarity_content_words_only: bool,
    /// The rules stand-ins decide on evidence of change (memform's own,
    /// docs/pipeline.md "Evidence of change"): a fact is replaced only by
    /// the same slot with another value, an explicit ending or a polarity
    /// flip of the same proposition, and restatements merge. `false`
    /// restores the seeds' rules as written: any negation or antonym with
    /// enough shared words replaces, and only exact content, s|p|o or the
    /// cosine merge.
    pub evidence_of_change: bool,
    /// Most live facts a candidate is paired with (the nearest by cosine,
    /// ties to the earlier fact); the rest are not judged.
    pub max_pairs_per_candidate: usize,
    /// Facts below this confidence are stored but never destroy a fact.
    /// (Not given a figure by the seeds; memform's choice.)
    pub min_trusted_confidence: f64,
    /// Predicates that hold one object at a time: a different object replaces
    /// the old one (verdict `old`).
    pub single_valued_predicates: Vec<String>,
    /// Predicates that hold many objects at once: a candidate with one is
    /// paired with a live fact only to end a relationship or on a polarity
    /// conflict. (The rules judge treats every predicate not in
    /// `single_valued_predicates` as multi-valued.) A predicate may not be
    /// in both lists.
    pub multi_valued_predicates: Vec<String>,
    /// Antonym pairs for the polarity conflict rule.
    pub antonyms: Vec<[String; 2]>,
    /// Preference polarity pairing (memform's addition, `soda` profile): a
    /// candidate with the same subject and object as a current fact and a
    /// predicate of opposite polarity (love/like/enjoy/prefer against
    /// hate/dislike/avoid, or negated against plain) is paired with it, and
    /// the rules judge lets the later statement win.
    pub preference_polarity_pairing: bool,
}

impl Default for SodaConfig {
    fn default() -> Self {
        SodaConfig {
            value_core_min: 0.7,
            value_contextual_min: 0.4,
            entity_merge_threshold: 0.88,
            near_dup_threshold: 0.95,
            dedup_enabled: true,
            contradiction_band_min: 0.80,
            antonym_min_shared_tokens: 2,
            polarity_content_words_only: false,
            evidence_of_change: true,
            max_pairs_per_candidate: 16,
            min_trusted_confidence: 0.8,
            single_valued_predicates: default_single_valued_predicates(),
            multi_valued_predicates: strings(&[
                "likes",
                "loves",
                "enjoys",
                "visited",
                "owns",
                "has",
                "has sister",
                "has brother",
                "has friend",
                "has pet",
                "plays",
                "went to",
                "attended",
                "dislikes",
                "hates",
                "states",
            ]),
            antonyms: default_antonyms(),
            preference_polarity_pairing: true,
        }
    }
}

impl SodaConfig {
    /// Whether `predicate` (trimmed, case-insensitive) is in `single_valued_predicates`.
    pub fn is_single_valued(&self, predicate: &str) -> bool {
        is_in(&self.single_valued_predicates, predicate)
    }
}

/// Whether `predicate` (trimmed, case-insensitive) is in `list`.
pub(crate) fn is_in(list: &[String], predicate: &str) -> bool {
    let p = predicate.trim();
    list.iter().any(|s| s.trim().eq_ignore_ascii_case(p))
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// The seeds' single-valued predicates (soda's and signet's default).
pub fn default_single_valued_predicates() -> Vec<String> {
    strings(&[
        "works at",
        "works as",
        "lives in",
        "is married to",
        "is engaged to",
        "is dating",
        "has car budget of",
        "has tv budget of",
        "has budget of",
        "is named",
        "is aged",
        "drives",
        "uses version",
        "has role",
        "studies at",
        "has birthday",
    ])
}

/// The seeds' antonym pairs (soda's and signet's default).
pub fn default_antonyms() -> Vec<[String; 2]> {
    [
        ("enabled", "disabled"),
        ("enable", "disable"),
        ("allow", "deny"),
        ("allowed", "denied"),
        ("love", "hate"),
        ("loves", "hates"),
        ("like", "dislike"),
        ("likes", "dislikes"),
        ("on", "off"),
        ("true", "false"),
        ("yes", "no"),
        ("always", "never"),
        ("accept", "reject"),
        ("include", "exclude"),
    ]
    .iter()
    .map(|(a, b)| [a.to_string(), b.to_string()])
    .collect()
}

/// The tiers are core ≥ contextual; no predicate both single- and multi-valued.
pub(crate) fn check_tiers(core: f64, contextual: f64) -> std::result::Result<(), String> {
    if contextual > core {
        return Err(format!("value_contextual_min = {contextual:?} is above value_core_min = {core:?} (the tiers are core >= contextual)"));
    }
    Ok(())
}

impl Section for SodaConfig {
    const NAME: &'static str = "soda";
    const BOUNDS: &'static [Bound] = &[
        float("value_core_min", 0.0, 1.0),
        float("value_contextual_min", 0.0, 1.0),
        float("entity_merge_threshold", 0.0, 1.0),
        float("near_dup_threshold", 0.0, 1.0),
        float("contradiction_band_min", 0.0, 1.0),
        int("antonym_min_shared_tokens", 0, 100),
        float("min_trusted_confidence", 0.0, 1.0),
        int("max_pairs_per_candidate", 1, 1000),
    ];
    const FLAT_ALIASES: &'static [(&'static str, &'static str)] = &[
        ("value_core_min", "value_core_min"),
        ("value_contextual_min", "value_contextual_min"),
        ("entity_merge_threshold", "entity_merge_threshold"),
        ("near_dup_threshold", "near_dup_threshold"),
        ("dedup_enabled", "dedup_enabled"),
        ("contradiction_band_min", "contradiction_band_min"),
        ("antonym_min_shared_tokens", "antonym_min_shared_tokens"),
        ("polarity_content_words_only", "polarity_content_words_only"),
        ("evidence_of_change", "evidence_of_change"),
        ("max_pairs_per_candidate", "max_pairs_per_candidate"),
        ("min_trusted_confidence", "min_trusted_confidence"),
        ("single_valued_predicates", "single_valued_predicates"),
        ("multi_valued_predicates", "multi_valued_predicates"),
        ("antonyms", "antonyms"),
        ("preference_polarity_pairing", "preference_polarity_pairing"),
    ];
    fn check_relations(&self) -> std::result::Result<(), String> {
        check_tiers(self.value_core_min, self.value_contextual_min)?;
        if self.contradiction_band_min > self.near_dup_threshold {
            return Err(format!(
                "contradiction_band_min = {:?} is above near_dup_threshold = {:?}",
                self.contradiction_band_min, self.near_dup_threshold
            ));
        }
        let norm = |p: &String| p.trim().to_lowercase();
        let multi: std::collections::BTreeSet<String> = self.multi_valued_predicates.iter().map(norm).collect();
        if let Some(p) = self.single_valued_predicates.iter().find(|p| multi.contains(&norm(p))) {
            return Err(format!("predicate {:?} is in both single_valued_predicates and multi_valued_predicates", p.trim()));
        }
        Ok(())
    }
}

/// memory-soda's five stages, with Signet v2's extraction caps and write
/// gates and Memorix's value score (docs/pipeline.md, "The soda profile").
pub struct Soda;

impl Profile for Soda {
    fn name(&self) -> &'static str {
        "soda"
    }
    fn summary(&self) -> &'static str {
        "memory-soda's extract, resolve, dedupe, judge and write, with Signet v2's caps and write gates and Memorix's value score"
    }
    fn searches_while_forming(&self) -> bool {
        false
    }
    fn back(
        &self,
        front: &EpisodeFront,
        conv: &Conversation,
        episode: &Episode,
        state: &mut ConvState,
        cfg: &super::Config,
        stages: Stages<'_>,
        store: &Store,
    ) -> Result<EpisodeRecord> {
        back(front, conv, episode, state, cfg, stages.judge, store)
    }
}
