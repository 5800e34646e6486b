//! The `FormedMemory` record: what Memorix's three stages did to one
//! observation, written as the `formed` object of its `facts.jsonl` row.
//! Field names follow Memorix's own record.

use serde::{Deserialize, Serialize};

use super::evaluate::Value;
use super::extract::ResolvedEntity;
use super::resolve::Resolution;
use crate::pipeline::StageMode;

/// Which stages ran and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineInfo {
    pub mode: StageMode,
    #[serde(rename = "stagesCompleted")]
    pub stages_completed: u8,
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
