//! Stage 5's write policy: decides every effect of a plan under the write
//! mode, with the safety gates, the race re-check, renewal, closures,
//! invalidations and pinned facts, and audits each proposal. It runs inside
//! the store's transaction and reaches the store only through [`WriteTx`].
//! Rules in docs/pipeline.md, "Stage 5".

use super::{Action, AuditAction, AuditRow, Effect, InsertOutcome, Outcome, WritePlan, WriteResult, WriteTx};
use crate::config::WriteMode;
use crate::error::Result;
use crate::state::{FactRec, is_past};

/// The audit under construction; in shadow mode every effect becomes `recorded`.
struct Audit {
    mode: WriteMode,
    out: WriteResult,
}

impl Audit {
    fn push(
        &mut self,
        cand: &str,
        action: AuditAction,
        outcome: Outcome,
        fact: Option<&str>,
        target: Option<&str>,
        reason: impl Into<String>,
    ) {
        let reason = reason.into();
        let (outcome, reason) = if self.mode == WriteMode::Shadow && outcome != Outcome::Skipped && outcome != Outcome::Deduped {
            let detail = if reason.is_empty() { String::new() } else { format!(" ({reason})") };
            (Outcome::Recorded, format!("shadow: would be {}{detail}", outcome.as_str()))
        } else {
            (outcome, reason)
        };
        self.out.audit.push(AuditRow {
            candidate_id: cand.to_string(),
            action,
            outcome,
            fact_id: fact.map(str::to_string),
            target_fact_id: target.map(str::to_string),
            reason,
        });
    }

    /// Audits an insert and records what became of it.
    fn insert(
        &mut self,
        cand: &str,
        outcome: InsertOutcome,
        audit: Outcome,
        fact: Option<&str>,
        target: Option<&str>,
        reason: impl Into<String>,
    ) {
        let outcome = if outcome == InsertOutcome::Created && self.mode == WriteMode::Shadow { InsertOutcome::Recorded } else { outcome };
        self.out.inserts.push((cand.to_string(), outcome, self.out.audit.len()));
        self.push(cand, AuditAction::Insert, audit, fact, target, reason);
    }
}

/// Applies `plan` under `mode` through `tx` and returns every audit row and
/// applied effect. `min_confidence` is the write gate's confidence floor.
pub fn apply(tx: &mut dyn WriteTx, plan: &WritePlan, mode: WriteMode, min_confidence: f64) -> Result<WriteResult> {
    let mut cx = Audit { mode, out: WriteResult::default() };
    if mode != WriteMode::Shadow {
        for e in &plan.new_entities {
            tx.insert_entity(e)?;
        }
        for (id, alias) in &plan.new_aliases {
            tx.insert_alias(id, alias)?;
        }
        cx.out.entities_written = true;
    }
    let passed = gates(tx, plan, &mut cx, min_confidence)?;
    renew(tx, plan, &passed, &mut cx)?;
    let (will_insert, replacing) = if mode == WriteMode::Controlled { replacements(tx, plan, passed)? } else { (passed, Vec::new()) };
    let inserted: Vec<&str> = will_insert.iter().map(|f| f.id.as_str()).collect();
    let blocked: Vec<&str> = replacing.iter().map(|(f, _)| f.id.as_str()).collect();
    end_facts(tx, plan, &inserted, &blocked, &mut cx)?;
    inserts_and_rejects(tx, plan, &inserted, &replacing, &mut cx)?;
    // After the inserts: a restated fact may be a survivor of this batch.
    if mode != WriteMode::Shadow {
        for (fact, turn) in &plan.attributions {
            tx.add_source_turns(fact, std::slice::from_ref(turn), None)?;
        }
    }
    Ok(cx.out)
}

/// Controlled mode blocks a replacement whole (docs/profiles.md, "Write
/// modes"): an insert that would end a live fact — invalidating it (the
/// target or one of its cascade still live) or renewing its own expired
/// row — is not written either. Returns the inserts that go ahead and the
/// blocked ones with the fact each would have ended.
#[allow(clippy::type_complexity)]
fn replacements<'p>(
    tx: &mut dyn WriteTx,
    plan: &WritePlan,
    passed: Vec<&'p FactRec>,
) -> Result<(Vec<&'p FactRec>, Vec<(&'p FactRec, String)>)> {
    let now = plan.now.as_deref();
    let (mut go, mut blocked) = (Vec::new(), Vec::new());
    for fact in passed {
        let mut ends = tx.live_by_hash(&fact.hash)?.filter(|l| is_past(l.valid_until.as_deref(), now)).map(|l| l.id);
        for p in &plan.proposals {
            if ends.is_some() {
                break;
            }
            if let Action::Invalidate { target, by, cascade } = &p.action
                && by == &fact.id
            {
                for id in std::iter::once(target).chain(cascade) {
                    if tx.pinned(id)?.is_some() {
                        ends = Some(id.clone());
                        break;
                    }
                }
            }
        }
        match ends {
            Some(target) => blocked.push((fact, target)),
            None => go.push(fact),
        }
    }
    Ok((go, blocked))
}

/// The safety gates and the race re-check: which inserts go ahead.
fn gates<'p>(tx: &mut dyn WriteTx, plan: &'p WritePlan, cx: &mut Audit, min_confidence: f64) -> Result<Vec<&'p FactRec>> {
    let now = plan.now.as_deref();
    let mut will_insert = Vec::new();
    for p in &plan.proposals {
        let Action::Insert { fact } = &p.action else { continue };
        let cand = p.candidate_id.as_str();
        if fact.confidence < min_confidence {
            let reason = format!("low_fact_confidence: {:.2} < {min_confidence:.2}", fact.confidence);
            cx.insert(cand, InsertOutcome::LowFactConfidence, Outcome::Skipped, None, None, reason);
        } else if fact.normalized.is_empty() {
            cx.insert(cand, InsertOutcome::EmptyFactContent, Outcome::Skipped, None, None, "empty_fact_content");
        } else if let Some(live) = tx.live_by_hash(&fact.hash)?.filter(|l| !is_past(l.valid_until.as_deref(), now)) {
            cx.insert(cand, InsertOutcome::Deduped, Outcome::Deduped, None, Some(&live.id), "hash already live");
        } else {
            will_insert.push(fact.as_ref());
        }
    }
    Ok(will_insert)
}

/// Renewal: an expired, not superseded row matching a survivor gets invalidAt.
fn renew(tx: &mut dyn WriteTx, plan: &WritePlan, will_insert: &[&FactRec], cx: &mut Audit) -> Result<()> {
    let now = plan.now.as_deref();
    let now_date = date_of(now);
    for fact in will_insert {
        let Some(old) = tx.live_by_hash(&fact.hash)?.filter(|l| is_past(l.valid_until.as_deref(), now)) else { continue };
        let reason = format!("renewal: expired {}", old.valid_until.unwrap_or_default());
        if cx.mode == WriteMode::Full {
            tx.invalidate(&old.id, now_date.as_deref(), None)?;
            cx.out.effects.push(Effect::Invalidated { id: old.id.clone(), at: now_date.clone(), superseded_by: None });
            cx.push(&fact.id, AuditAction::Renew, Outcome::Invalidated, Some(&fact.id), Some(&old.id), reason);
        } else {
            cx.push(&fact.id, AuditAction::Renew, Outcome::Blocked, Some(&fact.id), Some(&old.id), reason);
        }
    }
    Ok(())
}

/// Closures and invalidations, with their cascades; only full mode mutates,
/// and pinned facts are never ended.
fn end_facts(tx: &mut dyn WriteTx, plan: &WritePlan, inserted: &[&str], blocked: &[&str], cx: &mut Audit) -> Result<()> {
    let now_date = date_of(plan.now.as_deref());
    let mutates = cx.mode == WriteMode::Full;
    for p in &plan.proposals {
        let cand = p.candidate_id.as_str();
        match &p.action {
            Action::Close { target, valid_until, cascade } => {
                for (i, id) in std::iter::once(target).chain(cascade).enumerate() {
                    let action = if i == 0 { AuditAction::Close } else { AuditAction::CloseCascade };
                    match (mutates, tx.pinned(id)?) {
                        (_, None) => cx.push(cand, action, Outcome::Skipped, None, Some(id), "target no longer live"),
                        (true, Some(true)) => cx.push(cand, action, Outcome::Skipped, None, Some(id), "pinned"),
                        (true, Some(false)) => {
                            tx.set_valid_until(id, valid_until)?;
                            cx.out.effects.push(Effect::ValidUntilSet { id: id.clone(), valid_until: valid_until.clone() });
                            cx.push(cand, action, Outcome::Closed, None, Some(id), format!("valid_until {valid_until}"));
                        }
                        (false, Some(_)) => {
                            let reason = format!("{} mode: updates not allowed", cx.mode.as_str());
                            cx.push(cand, action, Outcome::Blocked, None, Some(id), reason)
                        }
                    }
                }
            }
            Action::Invalidate { target, by, cascade } => {
                // A blocked replacement's invalidations are audited as blocked below.
                if !inserted.contains(&by.as_str()) && !blocked.contains(&by.as_str()) {
                    cx.push(cand, AuditAction::Invalidate, Outcome::Skipped, None, Some(target), "superseding fact not written");
                    continue;
                }
                for (i, id) in std::iter::once(target).chain(cascade).enumerate() {
                    let action = if i == 0 { AuditAction::Invalidate } else { AuditAction::InvalidateCascade };
                    match (mutates, tx.pinned(id)?) {
                        (_, None) => cx.push(cand, action, Outcome::Skipped, None, Some(id), "target no longer live"),
                        (true, Some(true)) => cx.push(cand, action, Outcome::Skipped, None, Some(id), "pinned"),
                        (true, Some(false)) => {
                            let sup = if i == 0 { Some(by.clone()) } else { None };
                            tx.invalidate(id, now_date.as_deref(), sup.as_deref())?;
                            cx.out.effects.push(Effect::Invalidated { id: id.clone(), at: now_date.clone(), superseded_by: sup });
                            cx.push(cand, action, Outcome::Invalidated, Some(by), Some(id), "");
                        }
                        (false, Some(_)) => {
                            let reason = format!("{} mode: invalidations not allowed", cx.mode.as_str());
                            cx.push(cand, action, Outcome::Blocked, Some(by), Some(id), reason)
                        }
                    }
                }
            }
            Action::Insert { .. } | Action::Reject { .. } => {}
        }
    }
    Ok(())
}

/// Inserts that passed the gates (or were blocked as replacements), then
/// the rejected candidates' audit rows, in plan order.
fn inserts_and_rejects(
    tx: &mut dyn WriteTx,
    plan: &WritePlan,
    inserted: &[&str],
    replacing: &[(&FactRec, String)],
    cx: &mut Audit,
) -> Result<()> {
    for p in &plan.proposals {
        let cand = p.candidate_id.as_str();
        let replaces = match &p.action {
            Action::Insert { fact } => replacing.iter().find(|(f, _)| f.id == fact.id).map(|(_, t)| t.as_str()),
            _ => None,
        };
        if let Some(target) = replaces {
            let reason = format!("controlled mode: it replaces {target}; the replacement is blocked whole");
            cx.insert(cand, InsertOutcome::Blocked, Outcome::Blocked, None, Some(target), reason);
            continue;
        }
        match &p.action {
            Action::Insert { fact } if inserted.contains(&fact.id.as_str()) => {
                if cx.mode == WriteMode::Shadow {
                    cx.insert(cand, InsertOutcome::Created, Outcome::Created, Some(&fact.id), None, "");
                } else if tx.insert_fact(fact)? {
                    cx.out.effects.push(Effect::Inserted { id: fact.id.clone() });
                    cx.insert(cand, InsertOutcome::Created, Outcome::Created, Some(&fact.id), None, "");
                } else {
                    cx.insert(cand, InsertOutcome::Conflict, Outcome::Skipped, None, None, "conflict with a live fact");
                }
            }
            Action::Reject { outcome, reason, related } => {
                let audit = if outcome.is_duplicate() { Outcome::Deduped } else { Outcome::Skipped };
                let full = if reason.is_empty() { outcome.as_str().to_string() } else { format!("{}: {reason}", outcome.as_str()) };
                cx.push(cand, AuditAction::Reject, audit, None, related.as_deref(), full);
            }
            _ => {}
        }
    }
    Ok(())
}

/// The date part of the episode's timestamp: the logical clock of invalid_at.
fn date_of(now: Option<&str>) -> Option<String> {
    now.map(|n| n.get(..10).unwrap_or(n).to_string())
}
