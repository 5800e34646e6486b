//! The `FormedMemory` record: what Memorix's three stages did to one
//! observation, written as the `formed` object of its `facts.jsonl` row.
//! Field names follow Memorix's own record.

use serde::{Deserialize, Serialize};

use super::evaluate::Value;
use super::extract::ResolvedEntity;
use super::resolve::Resolution;
use crate::pipeline::StageMode;
use crate::types::string_enum;

/// Which stages ran and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineInfo {
    /// `llm` when the run asked the model for any stage, else `rules`.
    pub mode: StageMode,
    #[serde(rename = "stagesCompleted")]
    pub stages_completed: u8,
    /// LLM mode only: what decided each stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<StagesRan>,
}

string_enum! {
    /// What decided one stage of one observation in LLM mode.
    pub enum StageRan {
        /// The model's answer.
        Llm => "llm",
        /// The stage is in rules mode (`--extract rules --judge llm`: Extract).
        Rules => "rules",
        /// The model was asked, its answer was not usable: the rules decided (with a warning).
        Fallback => "rules-fallback",
        /// The model was not asked: Resolve found no existing memory, so the observation is new.
        NoCall => "no-call",
    }
}

/// Per stage, what decided it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StagesRan {
    pub extract: StageRan,
    pub resolve: StageRan,
    pub evaluate: StageRan,
}

/// One observation's formation, as Memorix's `FormedMemory` reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormedMemory {
    /// The observation's type after Extract.
    #[serde(rename = "type")]
    pub obs_type: String,
    /// The title after normalisation.
    pub title: String,
    /// Facts the caller gave (`fact_density_before` counts them).
    #[serde(rename = "callerFacts")]
    pub caller_facts: Vec<String>,
    /// Facts Extract added.
    #[serde(rename = "extractedFacts")]
    pub extracted_facts: Vec<String>,
    #[serde(rename = "resolvedEntity")]
    pub resolved_entity: ResolvedEntity,
    #[serde(rename = "titleImproved")]
    pub title_improved: bool,
    #[serde(rename = "typeCorrected")]
    pub type_corrected: bool,
    pub resolution: Resolution,
    pub value: Value,
    pub pipeline: PipelineInfo,
    /// The ids of the existing memories the search returned, best first, with their scores.
    pub hits: Vec<(String, f64)>,
}
