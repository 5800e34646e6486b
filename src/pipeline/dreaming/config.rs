//! `[dreaming]`: the `dreaming` profile's keys (docs/dreaming.md, sections
//! 5 and 8). Field docs are the reference for each key; ranges in
//! [`DreamingConfig::BOUNDS`].

use serde::{Deserialize, Serialize};

use super::contract::ContractLimits;
use super::pass::TriggerConfig;
use super::plan::PlanConfig;
use crate::config::{Bound, Section, float, int};
use crate::model::ontology::OntoCaps;
use crate::types::string_enum;

string_enum! {
    /// Which dreamer a pass runs (docs/dreaming.md, section 10).
    pub enum Dreamer {
        /// The rules extractor's triples become operations.
        Rules => "rules",
        /// The dataset's gold facts become operations (the ceiling).
        Gold => "gold",
        /// A model in an agentic loop over the capability registry (the
        /// run's judge in LLM mode is the model).
        Llm => "llm",
    }
}

/// `[dreaming]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DreamingConfig {
    /// `rules`, `gold` or `llm` (needs the judge in LLM mode: `--mode llm`
    /// or `--judge llm`).
    pub dreamer: String,
    /// `paused`: triggers are evaluated, no pass runs (the backlog grows).
    pub paused: bool,
    /// A pass runs once at least this many episodes were stored since the
    /// last one and there is a backlog (memform's stand-in for Signet's
    /// 6-hour `maxInterval`; 0 = off).
    pub every_episodes: usize,
    /// A backlog of at least this many tokens (`ceil(chars / 4)` per turn)
    /// triggers a pass (Signet's `tokenThreshold`, 100,000).
    pub token_threshold: usize,
    /// The conversation's last episode triggers passes until the backlog is
    /// empty or `max_final_passes` ran.
    pub end_of_conversation: bool,
    /// Passes at the end of a conversation, at most.
    pub max_final_passes: usize,
    /// Operations per `apply_ontology_ops` call (Signet's
    /// `DREAMING_MAX_OPERATIONS_PER_REQUEST`, 100).
    pub max_ops_per_call: usize,
    /// Applied operations per pass (memform's; Signet has none).
    pub max_ops_per_pass: usize,
    /// Entities a pass may create (memform's; Signet has none).
    pub max_new_entities_per_pass: usize,
    /// Active aspects per entity (Signet's `maxWriteAspectsPerEntity`, 20).
    pub max_aspects_per_entity: usize,
    /// Active claims per aspect (Signet's `maxWriteAttributesPerAspect`, 50).
    pub max_claims_per_aspect: usize,
    /// Characters of a payload text (memform's).
    pub max_text_chars: usize,
    /// Characters of a quote (memform's).
    pub max_quote_chars: usize,
    /// Citations per operation (memform's).
    pub max_citations: usize,
    /// Characters of a request's JSON (memform's).
    pub max_request_chars: usize,
    /// Aspects (predicates) that hold one active value: a different value
    /// added beside it is a `contradiction`; `set_claim_value` supersedes.
    pub single_valued_predicates: Vec<String>,
    /// Capability calls of one pass, at most (memform's; Signet bounds a
    /// pass by time and output tokens): past it a call is refused and the
    /// llm dreamer's pass ends.
    pub max_tool_calls: usize,
    /// Model turns of one llm pass, at most (memform's).
    pub max_model_turns: usize,
    /// A proposed entity whose name's vector is at least this close (cosine)
    /// to a live entity of the same type is that entity (stage 2's resolver,
    /// after the exact and alias checks; the default is stage 2's
    /// `soda.entity_merge_threshold`, 0.88). 1.0: identical vectors only.
    pub entity_merge_threshold: f64,
}

impl Default for DreamingConfig {
    fn default() -> Self {
        let limits = ContractLimits::default();
        let triggers = TriggerConfig::default();
        DreamingConfig {
            dreamer: Dreamer::Rules.as_str().to_string(),
            paused: false,
            every_episodes: triggers.every_episodes,
            token_threshold: triggers.token_threshold,
            end_of_conversation: triggers.end_of_conversation,
            max_final_passes: 3,
            max_ops_per_call: limits.max_ops_per_call,
            max_ops_per_pass: 500,
            max_new_entities_per_pass: 50,
            max_aspects_per_entity: 20,
            max_claims_per_aspect: 50,
            max_text_chars: limits.max_text_chars,
            max_quote_chars: limits.max_quote_chars,
            max_citations: limits.max_citations,
            max_request_chars: limits.max_request_chars,
            single_valued_predicates: crate::pipeline::soda::default_single_valued_predicates(),
            max_tool_calls: 40,
            max_model_turns: 40,
            entity_merge_threshold: 0.88,
        }
    }
}

impl Section for DreamingConfig {
    const NAME: &'static str = "dreaming";
    const BOUNDS: &'static [Bound] = &[
        int("every_episodes", 0, 10_000),
        int("token_threshold", 1, 10_000_000),
        int("max_final_passes", 1, 1_000),
        int("max_ops_per_call", 1, 100),
        int("max_ops_per_pass", 1, 100_000),
        int("max_new_entities_per_pass", 1, 10_000),
        int("max_aspects_per_entity", 1, 1_000),
        int("max_claims_per_aspect", 1, 10_000),
        int("max_text_chars", 1, 100_000),
        int("max_quote_chars", 1, 100_000),
        int("max_citations", 1, 100),
        int("max_request_chars", 1_000, 10_000_000),
        int("max_tool_calls", 1, 1_000),
        int("max_model_turns", 1, 1_000),
        float("entity_merge_threshold", 0.0, 1.0),
    ];
    const FLAT_ALIASES: &'static [(&'static str, &'static str)] = &[];
    fn check_relations(&self) -> std::result::Result<(), String> {
        if Dreamer::parse(&self.dreamer).is_none() {
            return Err(format!("dreamer = {:?}: expected \"rules\", \"gold\" or \"llm\"", self.dreamer));
        }
        Ok(())
    }
}

impl DreamingConfig {
    pub fn dreamer(&self) -> Dreamer {
        Dreamer::parse(&self.dreamer).unwrap_or(Dreamer::Rules)
    }
    pub fn limits(&self) -> ContractLimits {
        ContractLimits {
            max_ops_per_call: self.max_ops_per_call,
            max_text_chars: self.max_text_chars,
            max_quote_chars: self.max_quote_chars,
            max_citations: self.max_citations,
            max_request_chars: self.max_request_chars,
        }
    }
    pub fn caps(&self) -> OntoCaps {
        OntoCaps {
            max_ops_per_call: self.max_ops_per_call,
            max_ops_per_pass: self.max_ops_per_pass,
            max_new_entities_per_pass: self.max_new_entities_per_pass,
        }
    }
    pub fn plan(&self, shadow: bool, mutations_frozen: bool) -> PlanConfig {
        PlanConfig {
            single_valued: self.single_valued_predicates.iter().map(|p| super::quality::normalize_entity_name(p)).collect(),
            max_aspects_per_entity: self.max_aspects_per_entity,
            max_claims_per_aspect: self.max_claims_per_aspect,
            shadow,
            mutations_frozen,
        }
    }
    pub fn triggers(&self, enabled: bool) -> TriggerConfig {
        TriggerConfig {
            enabled,
            paused: self.paused,
            token_threshold: self.token_threshold,
            every_episodes: self.every_episodes,
            end_of_conversation: self.end_of_conversation,
        }
    }
}
