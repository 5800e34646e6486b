//! `[signet]`: the signet profile's decision thresholds, owned by the
//! profile (docs/pipeline.md, "The signet profile"). Its keys share their
//! names with soda's, but each profile reads its own section.

use serde::{Deserialize, Serialize};

use crate::config::{Bound, Section, float, int};
use crate::pipeline::soda::{check_tiers, default_antonyms, default_single_valued_predicates};

/// The signet decider's and detector's figures, and the value tiers its
/// records carry. Field docs are the reference for each key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SignetConfig {
    /// Value score at or above which a fact's tier is `core` (recorded; the
    /// decision does not read it).
    pub value_core_min: f64,
    /// Value score at or above which a fact's tier is `contextual` (recorded).
    pub value_contextual_min: f64,
    /// Cosine at or above which a candidate is a near duplicate of a
    /// retrieved memory (decision NONE). Depends on the embedder.
    pub near_dup_threshold: f64,
    /// Shared tokens needed for a negation/antonym conflict (UPDATE, and
    /// the detector's flag).
    pub antonym_min_shared_tokens: usize,
    /// Count only content words towards `antonym_min_shared_tokens` (see
    /// `[soda]`'s key of the same name; the default `false` counts every
    /// word, as Signet's detector does).
    pub polarity_content_words_only: bool,
    /// Decide on evidence of change (see `[soda]`'s key of the same name):
    /// UPDATE only on the same slot with another value, an explicit ending
    /// or a polarity flip of the same proposition, and NONE for a
    /// restatement. `false` keeps Signet's rules as written.
    pub evidence_of_change: bool,
    /// Predicates that hold one object at a time: a candidate with another
    /// object UPDATEs the retrieved memory.
    pub single_valued_predicates: Vec<String>,
    /// Antonym pairs for the conflict rule and the detector.
    pub antonyms: Vec<[String; 2]>,
}

impl Default for SignetConfig {
    fn default() -> Self {
        SignetConfig {
            value_core_min: 0.7,
            value_contextual_min: 0.4,
            near_dup_threshold: 0.95,
            antonym_min_shared_tokens: 2,
            polarity_content_words_only: false,
            evidence_of_change: true,
            single_valued_predicates: default_single_valued_predicates(),
            antonyms: default_antonyms(),
        }
    }
}

impl SignetConfig {
    /// Whether `predicate` (trimmed, case-insensitive) is in `single_valued_predicates`.
    pub fn is_single_valued(&self, predicate: &str) -> bool {
        crate::pipeline::soda::is_in(&self.single_valued_predicates, predicate)
    }
}

impl Section for SignetConfig {
    const NAME: &'static str = "signet";
    const BOUNDS: &'static [Bound] = &[
        float("value_core_min", 0.0, 1.0),
        float("value_contextual_min", 0.0, 1.0),
        float("near_dup_threshold", 0.0, 1.0),
        int("antonym_min_shared_tokens", 0, 100),
    ];
    const FLAT_ALIASES: &'static [(&'static str, &'static str)] = &[
        ("value_core_min", "value_core_min"),
        ("value_contextual_min", "value_contextual_min"),
        ("near_dup_threshold", "near_dup_threshold"),
        ("antonym_min_shared_tokens", "antonym_min_shared_tokens"),
        ("polarity_content_words_only", "polarity_content_words_only"),
        ("evidence_of_change", "evidence_of_change"),
        ("single_valued_predicates", "single_valued_predicates"),
        ("antonyms", "antonyms"),
    ];
    fn check_relations(&self) -> std::result::Result<(), String> {
        check_tiers(self.value_core_min, self.value_contextual_min)
    }
}
