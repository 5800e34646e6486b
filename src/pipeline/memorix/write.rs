//! The memorix profile's write: one transaction per episode runs the
//! planned operations through [`WriteTx`] under the write mode, audits
//! each, and the state then mirrors what was applied.
//!
//! - insert: the memory row, then its importance (`high` for core,
//!   `normal` for contextual, `low` with the decay flag for an ephemeral
//!   one kept by `ephemeral_policy = "decay"`); an evolve's insert then
//!   supersedes its target (`invalid_at` = the episode date, `superseded_by`
//!   = the rewrite), so the old state stays as history;
//! - merge: the target rewritten in place (title, narrative, facts, and its
//!   vector, re-embedded from the new text), its `source_turns` gaining the
//!   merged observation's turn;
//! - an evolve's rewrite lists its target's source turns beside its own.
//!
//! Shadow mode records every operation and writes nothing; controlled mode
//! inserts new memories but blocks a merge or an evolve whole (the rewrite
//! is not written, the target stays as it was; outcome `blocked`); full
//! mode applies all.

use crate::config::WriteMode;
use crate::error::Result;
use crate::pipeline::records::{CandidateOutcome, CandidateRecord, WriteCounts};
use crate::pipeline::write::{AuditAction, AuditRow, EntityRow, MemoryUpdate, Outcome, WritePlan, WriteResult, WriteTx};
use crate::state::{ConvState, EntityRec, FactRec};
use crate::store::Store;

/// One planned write.
#[derive(Debug, Clone)]
pub enum Op {
    Insert { row: Box<FactRec>, importance: &'static str, decay: bool, supersedes: Option<String> },
    Merge { candidate: String, target: String, update: MemoryUpdate },
}

/// An episode's planned writes.
pub struct Plan {
    pub conversation: String,
    pub episode: String,
    pub now: Option<String>,
    pub entities: Vec<EntityRec>,
    pub ops: Vec<Op>,
}

/// What the store applied, for the mirror.
enum Applied {
    Inserted(Box<FactRec>),
    Superseded { id: String, by: String, at: Option<String> },
    Merged { id: String, update: MemoryUpdate },
}

fn apply(tx: &mut dyn WriteTx, plan: &Plan, mode: WriteMode, applied: &mut Vec<Applied>) -> Result<WriteResult> {
    let mut out = WriteResult::default();
    let date = plan.now.as_deref().map(|t| t.get(..10).unwrap_or(t).to_string());
    if mode != WriteMode::Shadow {
        for e in &plan.entities {
            tx.insert_entity(&EntityRow::of(e))?;
        }
        out.entities_written = true;
    }
    for op in &plan.ops {
        match op {
            Op::Insert { row, importance, decay, supersedes } => {
                let id = row.id.as_str();
                if mode == WriteMode::Shadow {
                    out.audit.push(AuditRow::new(
                        id,
                        AuditAction::Insert,
                        Outcome::Recorded,
                        Some(id),
                        supersedes.as_deref(),
                        "shadow: would be created",
                    ));
                    continue;
                }
                // Controlled mode blocks an evolve whole: the rewrite would end a
                // live memory, so neither is written (docs/profiles.md).
                if mode == WriteMode::Controlled
                    && let Some(target) = supersedes
                    && tx.pinned(target)?.is_some()
                {
                    let reason = format!("controlled mode: evolve of {target} blocked; the rewrite is not written");
                    out.audit.push(AuditRow::new(id, AuditAction::Insert, Outcome::Blocked, None, Some(target), &reason));
                    continue;
                }
                if !tx.insert_fact(row)? {
                    out.audit.push(AuditRow::new(
                        id,
                        AuditAction::Insert,
                        Outcome::Skipped,
                        None,
                        None,
                        "conflict: a live memory has this content hash",
                    ));
                    continue;
                }
                tx.set_importance(id, importance, *decay)?;
                // An evolve's rewrite keeps its target's turns beside its own.
                if let Some(target) = supersedes {
                    tx.add_source_turns(id, &[], Some(target))?;
                }
                out.audit.push(AuditRow::new(id, AuditAction::Insert, Outcome::Created, Some(id), None, importance));
                applied.push(Applied::Inserted(row.clone()));
                let Some(target) = supersedes else { continue };
                if tx.pinned(target)?.is_some() {
                    tx.invalidate(target, date.as_deref(), Some(id))?;
                    out.audit.push(AuditRow::new(
                        id,
                        AuditAction::Invalidate,
                        Outcome::Invalidated,
                        Some(id),
                        Some(target),
                        "evolve: superseded",
                    ));
                    applied.push(Applied::Superseded { id: target.clone(), by: id.to_string(), at: date.clone() });
                } else {
                    out.audit.push(AuditRow::new(
                        id,
                        AuditAction::Invalidate,
                        Outcome::Skipped,
                        Some(id),
                        Some(target),
                        "evolve: target no longer live",
                    ));
                }
            }
            Op::Merge { candidate, target, update } => {
                let (outcome, reason) = match mode {
                    WriteMode::Shadow => (Outcome::Recorded, "merge: rewritten in place"),
                    WriteMode::Controlled => (Outcome::Blocked, "controlled mode: merge blocked; the target is not rewritten"),
                    WriteMode::Full if tx.update_memory(target, update)? => {
                        applied.push(Applied::Merged { id: target.clone(), update: update.clone() });
                        (Outcome::Updated, "merge: rewritten in place")
                    }
                    WriteMode::Full => {
                        (Outcome::Skipped, "merge refused: the target is no longer live, or a live memory has the merged content")
                    }
                };
                out.audit.push(AuditRow::new(candidate, AuditAction::Update, outcome, None, Some(target), reason));
            }
        }
    }
    Ok(out)
}

/// Writes `plan`, settles the records' outcomes and mirrors the state.
pub fn execute(store: &Store, plan: Plan, mode: WriteMode, state: &mut ConvState, records: &mut [CandidateRecord]) -> Result<WriteCounts> {
    let shell = WritePlan {
        conversation_id: plan.conversation.clone(),
        episode_id: plan.episode.clone(),
        now: plan.now.clone(),
        new_entities: Vec::new(),
        new_aliases: Vec::new(),
        proposals: Vec::new(),
        verdicts: Vec::new(),
        attributions: Vec::new(),
    };
    let mut applied = Vec::new();
    let result = store.write_episode(&shell, mode, |tx| apply(tx, &plan, mode, &mut applied))?;
    let mut counts = WriteCounts::default();
    for a in &result.audit {
        let Some(rec) = records.iter_mut().find(|r| r.id == a.candidate_id) else { continue };
        match (a.action, a.outcome) {
            (AuditAction::Insert, Outcome::Created) => {
                rec.stored = true;
                if rec.outcome == CandidateOutcome::Insert {
                    rec.outcome = if rec.related.is_some() { CandidateOutcome::Evolved } else { CandidateOutcome::Created };
                }
            }
            (AuditAction::Insert, Outcome::Recorded) => rec.outcome = CandidateOutcome::ShadowCreated,
            // A merge or an evolve the write mode blocked: neither side written.
            (AuditAction::Insert | AuditAction::Update, Outcome::Blocked) => {
                rec.outcome = CandidateOutcome::Blocked;
                rec.reason = a.reason.clone();
            }
            // The store refused the merge: another live memory holds its content.
            (AuditAction::Insert | AuditAction::Update, Outcome::Skipped) => rec.outcome = CandidateOutcome::Conflict,
            (AuditAction::Insert, _) => rec.outcome = CandidateOutcome::Conflict,
            (AuditAction::Invalidate, Outcome::Invalidated) => {
                counts.invalidations += 1;
                rec.ended.extend(a.target_fact_id.clone());
            }
            _ => {}
        }
    }
    counts.blocked = records.iter().filter(|r| r.outcome == CandidateOutcome::Blocked).count();
    if result.entities_written {
        state.entities.extend(plan.entities);
    }
    for a in applied {
        match a {
            Applied::Inserted(row) => state.facts.push(*row),
            Applied::Superseded { id, by, at } => {
                if let Some(f) = state.fact_mut(&id) {
                    f.invalid_at = Some(at.unwrap_or_else(|| "unknown".into()));
                    f.superseded_by = Some(by);
                }
            }
            Applied::Merged { id, update } => {
                if let Some(f) = state.fact_mut(&id) {
                    f.fact.object = update.title;
                    f.fact.content = update.content;
                    f.fact.source_quote = update.facts;
                    f.normalized = update.normalized;
                    f.hash = update.hash;
                    if !update.embedding.is_empty() {
                        f.embedding = update.embedding;
                    }
                }
            }
        }
    }
    Ok(counts)
}
