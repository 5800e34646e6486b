//! Stage 5, write: the plan an episode's decisions add up to, and what the
//! store did with it. The plan is complete before the write transaction
//! opens, so no model or embedding call can happen inside it.

use serde::{Deserialize, Serialize};

use crate::state::FactRec;
use crate::types::EntityType;

/// A new entity to create.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntityRow {
    pub id: String,
    pub name: String,
    pub entity_type: EntityType,
}

/// One proposal of the plan; each gets one audit row whatever its outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Insert a surviving candidate (after the safety gates and race re-check;
    /// expired matching rows are renewed first).
    Insert { fact: FactRec },
    /// Set `valid_until` on a live fact (and on `cascade`).
    Close { target: String, valid_until: String, cascade: Vec<String> },
    /// Invalidate a live fact that `by` replaces (and `cascade`).
    Invalidate { target: String, by: String, cascade: Vec<String> },
    /// A candidate the pipeline dropped before writing: audited only.
    Reject { outcome: String, reason: String, related: Option<String> },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    pub candidate_id: String,
    pub action: Action,
}

/// Everything one episode writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WritePlan {
    pub conversation_id: String,
    pub episode_id: String,
    /// The episode's timestamp: the logical clock for invalid_at and expiry.
    pub now: Option<String>,
    pub new_entities: Vec<EntityRow>,
    pub new_aliases: Vec<(String, String)>,
    pub proposals: Vec<Proposal>,
}

/// Audit outcomes (DESIGN stage 5), plus `closed` for closures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Created,
    Deduped,
    Skipped,
    Invalidated,
    Closed,
    Blocked,
    /// Shadow mode: what would have happened is recorded, nothing else.
    Recorded,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Created => "created",
            Outcome::Deduped => "deduped",
            Outcome::Skipped => "skipped",
            Outcome::Invalidated => "invalidated",
            Outcome::Closed => "closed",
            Outcome::Blocked => "blocked",
            Outcome::Recorded => "recorded",
        }
    }
}

/// One audit row as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRow {
    pub candidate_id: String,
    pub action: String,
    pub outcome: Outcome,
    pub fact_id: Option<String>,
    pub target_fact_id: Option<String>,
    pub reason: String,
}

/// A change the store applied, for the pipeline's mirror of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum Effect {
    Inserted { id: String },
    ValidUntilSet { id: String, valid_until: String },
    Invalidated { id: String, at: Option<String>, superseded_by: Option<String> },
}

/// What the write stage did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WriteResult {
    pub audit: Vec<AuditRow>,
    pub effects: Vec<Effect>,
    pub entities_written: bool,
}
