//! `[memorix]`: the memorix profile's thresholds (docs/profiles.md), owned
//! by the profile; `memorix_*` keys of the flat config are their old names.

use serde::{Deserialize, Serialize};

use crate::config::{Bound, Section, float};

/// The memorix profile's Resolve and Evaluate cut-offs, its search and its
/// ephemeral policy. Field docs are the reference for each key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemorixConfig {
    /// Resolve: the best hit's own search score at or above which the
    /// observation is a near duplicate (evolve when richer, else discard).
    pub duplicate_min: f64,
    /// Resolve: the combined score at or above which the topic is the same
    /// (evolve on a contradiction, merge when richer, else discard).
    pub high_min: f64,
    /// Resolve: the combined score at or above which, with an entity match,
    /// an observation with more facts merges.
    pub medium_min: f64,
    /// Evaluate: value score at or above which an observation is core.
    pub core_min: f64,
    /// Evaluate: value score at or above which it is contextual (else ephemeral).
    pub contextual_min: f64,
    /// The lexical search: the least score (Dice of word sets) of a hit.
    pub search_min: f64,
    /// What Resolve searches with: `lexical` (Dice of word sets over the
    /// conversation's memories, the default) or `store` (the store's hybrid
    /// search, `Store::search`). See docs/profiles.md.
    pub search: String,
    /// What becomes of an ephemeral observation: `discard` (not stored) or
    /// `decay` (stored with the decay flag, as Memorix's own store keeps it
    /// with a halved retention).
    pub ephemeral_policy: String,
    /// Resolve judges a contradiction on evidence of change (see `[soda]`'s
    /// key of the same name): a hit is superseded only on the same slot
    /// with another value, an explicit ending or a polarity flip of the same
    /// proposition. `false` keeps Memorix's contradiction rule as written.
    pub evidence_of_change: bool,
}

impl Default for MemorixConfig {
    fn default() -> Self {
        MemorixConfig {
            duplicate_min: 0.9,
            high_min: 0.75,
            medium_min: 0.5,
            core_min: 0.6,
            contextual_min: 0.35,
            search_min: 0.1,
            search: "lexical".into(),
            ephemeral_policy: "discard".into(),
            evidence_of_change: true,
        }
    }
}

impl Section for MemorixConfig {
    const NAME: &'static str = "memorix";
    const BOUNDS: &'static [Bound] = &[
        float("duplicate_min", 0.0, 1.0),
        float("high_min", 0.0, 1.0),
        float("medium_min", 0.0, 1.0),
        float("core_min", 0.0, 1.0),
        float("contextual_min", 0.0, 1.0),
        float("search_min", 0.0, 1.0),
    ];
    const FLAT_ALIASES: &'static [(&'static str, &'static str)] = &[
        ("memorix_duplicate_min", "duplicate_min"),
        ("memorix_high_min", "high_min"),
        ("memorix_medium_min", "medium_min"),
        ("memorix_core_min", "core_min"),
        ("memorix_contextual_min", "contextual_min"),
        ("memorix_search_min", "search_min"),
        ("memorix_search", "search"),
        ("ephemeral_policy", "ephemeral_policy"),
        ("evidence_of_change", "evidence_of_change"),
    ];
    fn check_relations(&self) -> std::result::Result<(), String> {
        if self.contextual_min > self.core_min {
            return Err(format!(
                "contextual_min = {:?} is above core_min = {:?} (the categories are core >= contextual)",
                self.contextual_min, self.core_min
            ));
        }
        if self.medium_min > self.high_min {
            return Err(format!("medium_min = {:?} is above high_min = {:?}", self.medium_min, self.high_min));
        }
        if !["lexical", "store"].contains(&self.search.as_str()) {
            return Err(format!("search = {:?}: unknown search, expected \"lexical\" or \"store\"", self.search));
        }
        if !["discard", "decay"].contains(&self.ephemeral_policy.as_str()) {
            return Err(format!("ephemeral_policy = {:?}: unknown policy, expected \"discard\" or \"decay\"", self.ephemeral_policy));
        }
        Ok(())
    }
}
