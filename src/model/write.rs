//! What the write policy and the store share: an episode's plan (its
//! proposals, verdict rows and new entities), the narrow [`WriteTx`] seam the
//! store implements, and what the write reports back (audit rows, effects).
//! The pipeline's stage 5 decides with these types; the store executes them.

use serde::{Deserialize, Serialize};

use super::fact::{EntityRec, FactRec};
use super::outcome::{CandidateOutcome, PairReason};
use crate::error::Result;
use crate::types::{EntityType, Verdict, string_enum};

/// A new entity to create.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntityRow {
    pub id: String,
    pub name: String,
    pub entity_type: EntityType,
}

impl EntityRow {
    pub fn of(e: &EntityRec) -> EntityRow {
        EntityRow { id: e.id.clone(), name: e.name.clone(), entity_type: e.entity_type }
    }
}

/// One proposal of the plan; each gets one audit row whatever its outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Insert a surviving candidate (after the safety gates and race re-check;
    /// expired matching rows are renewed first).
    Insert { fact: Box<FactRec> },
    /// Set `valid_until` on a live fact (and on `cascade`).
    Close { target: String, valid_until: String, cascade: Vec<String> },
    /// Invalidate a live fact that `by` replaces (and `cascade`).
    Invalidate { target: String, by: String, cascade: Vec<String> },
    /// A candidate the pipeline dropped before writing: audited only.
    Reject { outcome: CandidateOutcome, reason: String, related: Option<String> },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    pub candidate_id: String,
    pub action: Action,
}

/// One judged pair as the `verdicts` table records it: the judge's own
/// answer, the guard that changed it (if any) and the final verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictRow {
    pub candidate_id: String,
    pub target_fact_id: String,
    pub pair_reason: PairReason,
    pub judged: Verdict,
    pub guard: Option<String>,
    pub verdict: Verdict,
    pub review_needed: bool,
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
    /// Every judged pair, recorded whatever the write mode.
    pub verdicts: Vec<VerdictRow>,
    /// Provenance the episode adds to facts it does not insert: a dropped
    /// restatement's (exact or near duplicate, closure) turn joins the
    /// `source_turns` of the fact it restated, `(fact id, turn)`. Applied
    /// after the inserts (the fact may be a survivor of the same batch);
    /// not audited; nothing in shadow mode.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attributions: Vec<(String, String)>,
}

string_enum! {
    /// Audit outcomes, plus `closed` for closures.
    pub enum Outcome {
        Created => "created",
        Deduped => "deduped",
        Skipped => "skipped",
        Invalidated => "invalidated",
        Closed => "closed",
        Blocked => "blocked",
        /// Shadow mode: what would have happened is recorded, nothing else.
        Recorded => "recorded",
        /// A fact modified in place: `signet`'s UPDATE (its previous state
        /// archived) or the memorix profile's merge (a memory rewritten).
        Updated => "updated",
        /// `signet`: a fact soft-deleted (DELETE), its previous state archived.
        Deleted => "deleted",
        /// `signet`: a NONE decision, recorded; nothing written.
        Kept => "kept",
    }
}

string_enum! {
    /// What an audit row's proposal asked for.
    pub enum AuditAction {
        Insert => "insert",
        Reject => "reject",
        Renew => "renew",
        Close => "close",
        CloseCascade => "close_cascade",
        Invalidate => "invalidate",
        InvalidateCascade => "invalidate_cascade",
        /// `signet`'s decisions (ADD is audited as `insert`); `update` is also
        /// the memorix profile's merge (a memory rewritten in place).
        Update => "update",
        Delete => "delete",
        None => "none",
    }
}

/// One audit row as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRow {
    pub candidate_id: String,
    pub action: AuditAction,
    pub outcome: Outcome,
    pub fact_id: Option<String>,
    pub target_fact_id: Option<String>,
    pub reason: String,
}

impl AuditRow {
    /// A row for `candidate`: what was done to it, with the fact it made or
    /// touched and the fact it targeted, and why.
    pub fn new(candidate: &str, action: AuditAction, outcome: Outcome, fact: Option<&str>, target: Option<&str>, reason: &str) -> AuditRow {
        AuditRow {
            candidate_id: candidate.to_string(),
            action,
            outcome,
            fact_id: fact.map(str::to_string),
            target_fact_id: target.map(str::to_string),
            reason: reason.to_string(),
        }
    }
}

/// Where an audit row's proposal came from (`signet`: every audit row has
/// one, in the store's `audit_provenance` table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The decision: add, update, delete or none.
    pub action: String,
    pub content: String,
    pub confidence: f64,
    /// `<episode>/<turn>` of the fact's source turn.
    pub source: String,
    /// The extractor's id (rules or model and template).
    pub extractor: String,
    /// The decision stage's id (rules or model and template).
    pub decider: String,
    /// Facts and entities the episode's extraction returned.
    pub fact_count: usize,
    pub entity_count: usize,
    /// The contradiction detector flagged this UPDATE or DELETE.
    pub review_needed: bool,
}

/// What became of one `Insert` proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InsertOutcome {
    Created,
    /// Shadow mode: it would have been created.
    Recorded,
    /// Its content hash is already live (the race re-check).
    Deduped,
    LowFactConfidence,
    EmptyFactContent,
    /// The store refused it (a live row with the same hash appeared).
    Conflict,
    /// Controlled mode: it would end a live fact (a replacement), so
    /// neither is written.
    Blocked,
}

/// A change the store applied, for the pipeline's mirror of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum Effect {
    Inserted {
        id: String,
    },
    ValidUntilSet {
        id: String,
        valid_until: String,
    },
    Invalidated {
        id: String,
        at: Option<String>,
        superseded_by: Option<String>,
    },
    /// `signet`: fact `id` now holds candidate `by`'s content (UPDATE in place).
    Updated {
        id: String,
        by: String,
    },
}

/// What the write stage did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WriteResult {
    pub audit: Vec<AuditRow>,
    pub effects: Vec<Effect>,
    /// Per `Insert` proposal: its candidate id, what became of it, and its audit row.
    pub inserts: Vec<(String, InsertOutcome, usize)>,
    pub entities_written: bool,
    /// Per audit row (by index), where its proposal came from (`signet`).
    pub provenance: Vec<(usize, Provenance)>,
}

/// A live row found by content hash.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveByHash {
    pub id: String,
    pub valid_until: Option<String>,
}

/// What the write policy may ask of the store inside one episode's
/// transaction. The store implements it with SQL; the policy never sees SQL.
pub trait WriteTx {
    /// The live row (neither invalidated nor superseded) with this content hash.
    fn live_by_hash(&mut self, hash: &str) -> Result<Option<LiveByHash>>;
    /// `Some(pinned)` for a live fact, `None` when it is no longer live.
    fn pinned(&mut self, id: &str) -> Result<Option<bool>>;
    fn insert_entity(&mut self, e: &EntityRow) -> Result<()>;
    fn insert_alias(&mut self, entity_id: &str, alias: &str) -> Result<()>;
    /// Inserts a fact; `false` when a live row with its hash already exists.
    fn insert_fact(&mut self, fact: &FactRec) -> Result<bool>;
    fn set_valid_until(&mut self, id: &str, valid_until: &str) -> Result<()>;
    fn invalidate(&mut self, id: &str, at: Option<&str>, superseded_by: Option<&str>) -> Result<()>;
    /// Copies fact `id`'s current row into the history (cold-tier) table,
    /// with the event, the candidate that caused it and why.
    fn archive(&mut self, id: &str, event: AuditAction, by: &str, reason: &str) -> Result<()>;
    /// Replaces live fact `id`'s content and everything derived from it with
    /// `with`'s (UPDATE in place); `false` when a live row already has that
    /// content hash (nothing changed).
    fn update_fact(&mut self, id: &str, with: &FactRec) -> Result<bool>;
    /// Records that fact `fact_id` mentions entity `entity_id` as `text`.
    fn insert_mention(&mut self, fact_id: &str, entity_id: &str, text: &str) -> Result<()>;
    /// Rewrites a live memory in place (the memorix profile's merge);
    /// `false` when it is no longer live or another live row holds the new hash.
    fn update_memory(&mut self, id: &str, update: &MemoryUpdate) -> Result<bool>;
    /// Sets a stored fact's importance (`high`, `normal`, `low`) and decay flag.
    fn set_importance(&mut self, id: &str, importance: &str, decay: bool) -> Result<()>;
    /// Adds `turns`, and the source turns of fact `from` (if given), to fact
    /// `id`'s `source_turns` (a set, in first-seen order); nothing when `id`
    /// is not a row of the conversation.
    fn add_source_turns(&mut self, id: &str, turns: &[String], from: Option<&str>) -> Result<()>;
}

/// A memory's new title, content (its narrative), facts and vector, for an
/// in-place merge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryUpdate {
    pub title: String,
    pub content: String,
    pub normalized: String,
    pub hash: String,
    /// The facts, one per line (stored in `source_quote`).
    pub facts: String,
    /// The turns the rewrite adds to the memory's `source_turns` (the
    /// merged observation's), beside the ones it already lists.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<String>,
    /// The rewritten memory's vector, replacing its row of `embeddings`
    /// (empty: the run has no embedder, the row is left as it was).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub embedding: Vec<f32>,
}
