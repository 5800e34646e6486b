//! What an extractor returns before any guard (stage 1's graph contract,
//! docs/pipeline.md): the LLM boundary parses a model's answer into these,
//! and stage 1's post-processing turns them into candidates.

use serde::{Deserialize, Serialize};

use crate::types::{LlmUsage, Warning};

/// An entity as an extractor returned it: the type is free text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawEntity {
    pub name: String,
    pub entity_type: String,
}

/// A fact as an extractor returned it, before any guard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawFact {
    pub subject: String,
    pub predicate: String,
    pub object: String,
    /// The fact as a sentence; built from subject, predicate and object when absent.
    pub content: Option<String>,
    pub fact_type: String,
    pub confidence: f64,
    pub source_quote: String,
    pub source_turn: String,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
}

/// An extractor's answer: the graph contract of stage 1 (docs/pipeline.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RawExtraction {
    pub entities: Vec<RawEntity>,
    /// Facts whose object is an entity.
    pub relationships: Vec<RawFact>,
    /// Facts whose object is a value.
    pub literal_facts: Vec<RawFact>,
    /// Problems found while producing or parsing the answer.
    pub warnings: Vec<Warning>,
    /// True when the answer came as a graph (LLM mode): the tighter fact cap applies.
    pub graph: bool,
    /// Model calls spent producing this answer.
    pub usage: LlmUsage,
}
