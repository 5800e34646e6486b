//! What the `dreaming` profile's planner and the store share about the
//! ontology (docs/dreaming.md, sections 4.4 and 6): the read snapshot the
//! planner plans against ([`OntologyView`]), the complete plan of one
//! `apply_ontology_ops` call ([`OntoPlan`]: every operation with its effect,
//! its writes and its evidence references) and the caps the store enforces
//! while it applies ([`OntoCaps`]). Nothing here decides: the planner
//! decides, the store executes (`Store::apply_ontology_ops`).

use serde::{Deserialize, Serialize};

use crate::types::string_enum;

string_enum! {
    /// What happened to one operation.
    pub enum Effect {
        Applied => "applied",
        Skipped => "skipped",
        Failed => "failed",
    }
}

string_enum! {
    /// How many active values an aspect holds at once.
    pub enum Cardinality {
        Single => "single",
        Multi => "multi",
    }
}

string_enum! {
    /// A claim's life.
    pub enum ClaimStatus {
        Active => "active",
        Superseded => "superseded",
        Retracted => "retracted",
    }
}

/// The write caps the store enforces inside the transaction
/// (docs/dreaming.md, section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OntoCaps {
    /// Operations of one call; a larger plan is refused whole.
    pub max_ops_per_call: usize,
    /// Applied operations of one pass; past it an operation is `failed`
    /// with kind `pass_cap`.
    pub max_ops_per_pass: usize,
    /// Entities a pass may create; past it an operation that creates one is
    /// `failed` with kind `new_entity_cap`.
    pub max_new_entities_per_pass: usize,
}

impl OntoCaps {
    /// The write cap an applied operation would cross (kind and message),
    /// given what the pass already applied (`applied` operations, `created`
    /// entities) and how many entities the operation creates. The one rule
    /// both the store's apply path and the planner's dry run read.
    pub fn refusal(&self, applied: usize, created: usize, new_entities: usize) -> Option<(&'static str, String)> {
        if applied >= self.max_ops_per_pass {
            return Some(("pass_cap", format!("pass cap reached: {applied} operations applied, at most {}", self.max_ops_per_pass)));
        }
        if new_entities > 0 && created + new_entities > self.max_new_entities_per_pass {
            let msg =
                format!("new-entity cap reached: {created} entities created in this pass, at most {}", self.max_new_entities_per_pass);
            return Some(("new_entity_cap", msg));
        }
        None
    }
}

/// An exact-quote evidence reference: the turn, its episode and revision
/// (SHA-256 hex of its text), and the quote with its byte offset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceRef {
    pub episode_id: String,
    pub turn_id: String,
    pub revision: String,
    pub quote: String,
    pub quote_start: usize,
}

/// One row-level write of an applied operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "write", rename_all = "snake_case")]
pub enum OntoWrite {
    Entity {
        id: String,
        name: String,
        canonical_name: String,
        entity_type: String,
    },
    Alias {
        entity_id: String,
        alias: String,
        canonical_alias: String,
    },
    Aspect {
        id: String,
        entity_id: String,
        name: String,
        canonical_name: String,
        cardinality: Cardinality,
    },
    Claim {
        id: String,
        aspect_id: String,
        claim_key: String,
        kind: String,
        content: String,
        normalized_content: String,
        confidence: f64,
        valid_from: Option<String>,
        review_after: Option<String>,
        /// The claim this one replaces (it becomes `superseded`, its
        /// `superseded_by` this claim), making this its next version.
        supersedes: Option<String>,
    },
    /// A claim leaves the active set without a successor.
    RetractClaim {
        id: String,
        reason: Option<String>,
    },
    Link {
        id: String,
        source_entity_id: String,
        target_entity_id: String,
        link_type: String,
        confidence: f64,
        reason: Option<String>,
    },
    /// `rename_entity`: a new display and canonical name.
    RenameEntity {
        id: String,
        name: String,
        canonical_name: String,
    },
    /// `rename_aspect`.
    RenameAspect {
        id: String,
        name: String,
        canonical_name: String,
    },
    /// `archive_entity`: the entity leaves the live graph (its rows stay).
    ArchiveEntity {
        id: String,
        reason: Option<String>,
    },
    /// `archive_aspect`: the aspect is archived and its active claims retracted.
    ArchiveAspect {
        id: String,
        reason: Option<String>,
    },
    /// `archive_link`.
    ArchiveLink {
        id: String,
        reason: Option<String>,
    },
    /// `update_link`: the link's type and reason (`None`: kept).
    UpdateLink {
        id: String,
        link_type: String,
        reason: Option<String>,
    },
    /// A merge moves an aspect to the surviving entity.
    MoveAspect {
        id: String,
        entity_id: String,
    },
    /// A merge folds every claim of `from_aspect` into `to_aspect` (the
    /// survivor's aspect of the same name).
    MoveClaims {
        from_aspect: String,
        to_aspect: String,
    },
    /// A merge points a link at the surviving entity.
    RepointLink {
        id: String,
        source_entity_id: String,
        target_entity_id: String,
    },
    /// A merge archives its source entity, recorded as merged into `into`.
    MergeEntity {
        id: String,
        into: String,
    },
}

impl OntoWrite {
    /// Whether the write creates an entity (counted by the new-entity cap).
    pub fn creates_entity(&self) -> bool {
        matches!(self, OntoWrite::Entity { .. })
    }
}

/// One operation of a call, as planned: its log fields, the effect the
/// planner decided (`applied` may still become `failed` at a cap), and the
/// writes and evidence of an applied operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedOp {
    pub index: usize,
    pub operation: String,
    /// The operation's payload as JSON.
    pub payload: String,
    pub reason: Option<String>,
    pub confidence: Option<f64>,
    pub effect: Effect,
    /// The guard kind of a skip or a failure.
    pub kind: Option<String>,
    pub message: Option<String>,
    /// What the operation produced or reused (JSON), e.g. `{"entityId": …}`.
    pub result: Option<String>,
    pub writes: Vec<OntoWrite>,
    pub evidence: Vec<EvidenceRef>,
}

/// A whole `apply_ontology_ops` call: applied by the store in one
/// transaction, or not at all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OntoPlan {
    pub conversation_id: String,
    pub pass_id: String,
    /// The call's number within the pass.
    pub call_seq: usize,
    pub ops: Vec<PlannedOp>,
}

/// What the store did with one operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpOutcome {
    pub index: usize,
    pub op_id: String,
    pub effect: Effect,
    pub kind: Option<String>,
    pub message: Option<String>,
    pub result: Option<String>,
}

/// A live or archived ontology entity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewEntity {
    pub id: String,
    pub name: String,
    pub canonical_name: String,
    pub entity_type: String,
    pub active: bool,
    pub aliases: Vec<String>,
}

/// An aspect of an entity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewAspect {
    pub id: String,
    pub entity_id: String,
    pub name: String,
    pub canonical_name: String,
    pub cardinality: Cardinality,
    pub active: bool,
}

/// A claim, whatever its status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewClaim {
    pub id: String,
    pub aspect_id: String,
    pub claim_key: String,
    pub kind: String,
    pub content: String,
    pub normalized_content: String,
    pub confidence: f64,
    pub status: ClaimStatus,
    pub superseded_by: Option<String>,
    pub version: i64,
}

/// A link between two entities.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewLink {
    pub id: String,
    pub source_entity_id: String,
    pub target_entity_id: String,
    pub link_type: String,
    pub active: bool,
}

/// The read snapshot of one conversation's ontology, in id order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OntologyView {
    pub conversation_id: String,
    pub entities: Vec<ViewEntity>,
    pub aspects: Vec<ViewAspect>,
    pub claims: Vec<ViewClaim>,
    pub links: Vec<ViewLink>,
    /// Attention ids an applied `decline_attention` or hygiene operation
    /// resolved (and no later `flag` reopened), in order.
    #[serde(default)]
    pub resolved_attention: Vec<String>,
    /// Attention an applied `flag` minted and nothing resolved since, in order.
    #[serde(default)]
    pub flagged: Vec<FlaggedAttention>,
}

/// A hygiene attention record minted by `flag`: its id is its subject.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlaggedAttention {
    pub subject_ref: String,
    /// 0–100 (Signet's `priority`; 50 when the flag gave none).
    pub priority: u32,
}

/// Ids are `<conversation>/<prefix><n>`; the next free `n` of a prefix.
pub fn next_seq<'a>(conversation: &str, prefix: &str, ids: impl Iterator<Item = &'a str>) -> usize {
    let head = format!("{conversation}/{prefix}");
    ids.filter_map(|id| id.strip_prefix(&head)).filter_map(|n| n.parse::<usize>().ok()).max().map(|n| n + 1).unwrap_or(1)
}

/// A claim as the run's memory reads it (`Store::claim_projection`): its
/// entity and aspect by name, its citations and the pass that created it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectedClaim {
    pub id: String,
    pub entity: String,
    pub aspect: String,
    pub claim_key: String,
    pub content: String,
    pub normalized_content: String,
    pub confidence: f64,
    pub status: ClaimStatus,
    pub superseded_by: Option<String>,
    /// The creating operation's citations: (episode, turn, quote), in order.
    pub citations: Vec<(String, String, String)>,
    /// The episode after which the creating pass ran.
    pub pass_after_episode: Option<String>,
}

/// A claim written into `facts` for the QA search (`Store::write_claim_facts`).
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimFact {
    pub id: String,
    pub subject: String,
    pub predicate: String,
    pub content: String,
    pub normalized_content: String,
    pub content_hash: String,
    pub confidence: f64,
    /// The claim that superseded it (the row is then not live).
    pub superseded_by: Option<String>,
    /// `retracted`: the row is written ended (`invalid_at`).
    pub ended_at: Option<String>,
    pub source_episode: String,
    pub source_turns: Vec<String>,
    pub source_quote: String,
    pub created_at: Option<String>,
    /// Empty: no vector row.
    pub embedding: Vec<f32>,
}

/// A pass record (docs/dreaming.md, 8.1).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PassRecord {
    pub id: String,
    pub conversation_id: String,
    pub seq: usize,
    pub mode: String,
    pub trigger: String,
    /// `completed` or `failed`.
    pub status: String,
    pub after_episode: String,
    pub tool_calls: usize,
    pub ops_applied: usize,
    pub ops_skipped: usize,
    pub ops_failed: usize,
    pub evidence_consumed: usize,
    pub evidence_remaining: usize,
    pub evidence_withheld: usize,
    pub backlog_tokens_before: usize,
    pub backlog_tokens_after: usize,
    pub watermark_before: Option<usize>,
    pub watermark_after: Option<usize>,
    pub summary: String,
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_seq_reads_the_largest_number_of_the_prefix_in_the_conversation() {
        let ids = ["c1/o1", "c1/o7", "c1/a9", "c2/o20", "c1/ox"];
        assert_eq!(next_seq("c1", "o", ids.iter().copied()), 8);
        assert_eq!(next_seq("c1", "l", ids.iter().copied()), 1);
        assert_eq!(next_seq("c1", "a", ids.iter().copied()), 10);
    }
}
