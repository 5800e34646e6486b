//! `signet`'s write semantics (Signet v2's worker), applied inside the
//! store's episode transaction through [`WriteTx`]:
//!
//! - the three gates before anything is written: confidence below
//!   `min_fact_confidence_for_write`, empty normalised content, and a
//!   content hash already live (deduped, naming the existing id);
//! - **shadow**: every decision is audited as `recorded`, nothing written;
//! - **controlled**: ADD applied, NONE recorded, UPDATE and DELETE blocked
//!   and audited, and neither side written;
//! - **full**: UPDATE modifies the target in place and DELETE soft-deletes
//!   it, each after archiving the target's previous state to the history
//!   table; a pinned target is skipped.
//!
//! Every audit row carries its proposal's provenance.

use super::decide::{Decision, DecisionAction};
use super::linker::Mention;
use crate::config::WriteMode;
use crate::error::Result;
use crate::pipeline::write::{AuditAction, AuditRow, Effect, Outcome, Provenance, WriteResult, WriteTx};
use crate::state::{FactRec, is_past};

/// One fact's proposal: the fact as the row it would become (its id is the
/// candidate's), its decision (none when validation dropped it), the
/// detector's flag, the entities it mentions, and its provenance.
#[derive(Debug, Clone)]
pub struct SignetProposal {
    pub fact: FactRec,
    pub decision: Option<Decision>,
    /// Why there is no decision (validation or a failed call).
    pub dropped: Option<String>,
    pub review_needed: bool,
    pub mentions: Vec<Mention>,
    pub provenance: Provenance,
}

/// What became of a proposal (its candidate's outcome is derived from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    Created,
    Updated,
    Deleted,
    Kept,
    Blocked,
    Recorded,
    LowConfidence,
    EmptyContent,
    Deduped,
    Conflict,
    /// An UPDATE or DELETE whose target is pinned or no longer live.
    TargetSkipped,
    Dropped,
}

/// The audit under construction (as stage 5's, with provenance per row),
/// and the episode's timestamp (the logical clock) and date.
struct Audit<'a> {
    mode: WriteMode,
    out: WriteResult,
    now: Option<&'a str>,
    date: Option<String>,
}

impl Audit<'_> {
    fn push(
        &mut self,
        p: &SignetProposal,
        action: AuditAction,
        outcome: Outcome,
        fact: Option<&str>,
        target: Option<&str>,
        reason: String,
    ) {
        let (outcome, reason) = if self.mode == WriteMode::Shadow && !matches!(outcome, Outcome::Skipped | Outcome::Deduped) {
            (Outcome::Recorded, format!("shadow: would be {} ({reason})", outcome.as_str()))
        } else {
            (outcome, reason)
        };
        self.out.provenance.push((self.out.audit.len(), p.provenance.clone()));
        self.out.audit.push(AuditRow {
            candidate_id: p.fact.id.clone(),
            action,
            outcome,
            fact_id: fact.map(str::to_string),
            target_fact_id: target.map(str::to_string),
            reason,
        });
    }
}

/// Applies the proposals in order under `mode`; returns the audit and
/// effects, and what became of each proposal.
/// `now` is the episode's timestamp.
pub fn apply(
    tx: &mut dyn WriteTx,
    proposals: &[SignetProposal],
    mode: WriteMode,
    min_confidence: f64,
    now: Option<&str>,
) -> Result<(WriteResult, Vec<Applied>)> {
    let date = now.map(|t| t.get(..10).unwrap_or(t).to_string());
    let out = WriteResult { entities_written: mode != WriteMode::Shadow, ..WriteResult::default() };
    let mut cx = Audit { mode, out, now, date };
    let mut applied = Vec::with_capacity(proposals.len());
    for p in proposals {
        applied.push(apply_one(tx, p, &mut cx, min_confidence)?);
    }
    Ok((cx.out, applied))
}

fn apply_one(tx: &mut dyn WriteTx, p: &SignetProposal, cx: &mut Audit<'_>, min_confidence: f64) -> Result<Applied> {
    let Some(d) = &p.decision else {
        let reason = format!("decision dropped: {}", p.dropped.as_deref().unwrap_or("no decision"));
        cx.push(p, AuditAction::Reject, Outcome::Skipped, None, None, reason);
        return Ok(Applied::Dropped);
    };
    let action = audit_action(d.action);
    let target = d.target.as_deref();
    if d.action == DecisionAction::None {
        cx.push(p, action, Outcome::Kept, None, target, d.reason.clone());
        return Ok(if cx.mode == WriteMode::Shadow { Applied::Recorded } else { Applied::Kept });
    }
    if let Some(gate) = gate(tx, p, d, min_confidence, cx.now)? {
        let (outcome, applied, existing, reason) = gate;
        cx.push(p, action, outcome, None, existing.as_deref().or(target), reason);
        return Ok(applied);
    }
    match (d.action, cx.mode) {
        (DecisionAction::Add, WriteMode::Shadow) => {
            cx.push(p, action, Outcome::Created, Some(&p.fact.id), None, d.reason.clone());
            Ok(Applied::Recorded)
        }
        (DecisionAction::Add, _) => {
            if !tx.insert_fact(&p.fact)? {
                cx.push(p, action, Outcome::Skipped, None, None, "conflict: content hash already live".into());
                return Ok(Applied::Conflict);
            }
            for m in &p.mentions {
                tx.insert_mention(&p.fact.id, &m.entity_id, &m.text)?;
            }
            cx.out.effects.push(Effect::Inserted { id: p.fact.id.clone() });
            cx.push(p, action, Outcome::Created, Some(&p.fact.id), None, d.reason.clone());
            Ok(Applied::Created)
        }
        (_, WriteMode::Shadow) => {
            let would = if d.action == DecisionAction::Update { Outcome::Updated } else { Outcome::Deleted };
            cx.push(p, action, would, None, target, d.reason.clone());
            Ok(Applied::Recorded)
        }
        (_, WriteMode::Controlled) => {
            cx.push(p, action, Outcome::Blocked, None, target, format!("controlled mode: {} blocked ({})", d.action.as_str(), d.reason));
            Ok(Applied::Blocked)
        }
        (_, WriteMode::Full) => mutate(tx, p, d, cx),
    }
}

/// The three gates on a proposal that would write: the outcome, what
/// became of it, the existing id (hash gate) and the reason; `None` passes.
#[allow(clippy::type_complexity)]
fn gate(
    tx: &mut dyn WriteTx,
    p: &SignetProposal,
    d: &Decision,
    min_confidence: f64,
    now: Option<&str>,
) -> Result<Option<(Outcome, Applied, Option<String>, String)>> {
    if p.fact.confidence < min_confidence {
        let reason = format!("low_fact_confidence: {:.2} < {min_confidence:.2}", p.fact.confidence);
        return Ok(Some((Outcome::Skipped, Applied::LowConfidence, None, reason)));
    }
    if p.fact.normalized.is_empty() {
        return Ok(Some((Outcome::Skipped, Applied::EmptyContent, None, "empty_fact_content".into())));
    }
    if d.action != DecisionAction::Delete
        && let Some(live) = tx.live_by_hash(&p.fact.hash)?.filter(|l| !is_past(l.valid_until.as_deref(), now))
    {
        let reason = format!("content hash already live as {}", live.id);
        return Ok(Some((Outcome::Deduped, Applied::Deduped, Some(live.id), reason)));
    }
    Ok(None)
}

/// Full mode's UPDATE (in place) or DELETE (soft), the target archived first.
fn mutate(tx: &mut dyn WriteTx, p: &SignetProposal, d: &Decision, cx: &mut Audit<'_>) -> Result<Applied> {
    let action = audit_action(d.action);
    let Some(target) = d.target.as_deref() else {
        cx.push(p, action, Outcome::Skipped, None, None, "no target".into());
        return Ok(Applied::TargetSkipped);
    };
    match tx.pinned(target)? {
        None => {
            cx.push(p, action, Outcome::Skipped, None, Some(target), "target no longer live".into());
            return Ok(Applied::TargetSkipped);
        }
        Some(true) => {
            cx.push(p, action, Outcome::Skipped, None, Some(target), "pinned".into());
            return Ok(Applied::TargetSkipped);
        }
        Some(false) => {}
    }
    tx.archive(target, action, &p.fact.id, &d.reason)?;
    if d.action == DecisionAction::Update {
        if !tx.update_fact(target, &p.fact)? {
            cx.push(p, action, Outcome::Skipped, None, Some(target), "conflict: content hash already live".into());
            return Ok(Applied::Conflict);
        }
        for m in &p.mentions {
            tx.insert_mention(target, &m.entity_id, &m.text)?;
        }
        cx.out.effects.push(Effect::Updated { id: target.to_string(), by: p.fact.id.clone() });
        cx.push(p, action, Outcome::Updated, Some(target), Some(target), d.reason.clone());
        Ok(Applied::Updated)
    } else {
        let at = cx.date.clone();
        tx.invalidate(target, at.as_deref(), None)?;
        cx.out.effects.push(Effect::Invalidated { id: target.to_string(), at, superseded_by: None });
        cx.push(p, action, Outcome::Deleted, None, Some(target), d.reason.clone());
        Ok(Applied::Deleted)
    }
}

fn audit_action(a: DecisionAction) -> AuditAction {
    match a {
        DecisionAction::Add => AuditAction::Insert,
        DecisionAction::Update => AuditAction::Update,
        DecisionAction::Delete => AuditAction::Delete,
        DecisionAction::None => AuditAction::None,
    }
}
