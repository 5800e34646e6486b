//! Stage 5, write: the plan an episode's decisions add up to ([`plan`]), the
//! write policy that decides each effect under the write mode ([`policy`]),
//! and the narrow [`WriteTx`] seam through which the store executes it. The
//! plan is complete before the write transaction opens, so no model or
//! embedding call can happen inside it. Rules in docs/pipeline.md, "Stage 5".

pub mod plan;
pub mod policy;

pub use crate::model::write::{
    Action, AuditAction, AuditRow, Effect, EntityRow, InsertOutcome, LiveByHash, MemoryUpdate, Outcome, Proposal, Provenance, VerdictRow,
    WritePlan, WriteResult, WriteTx,
};

use crate::state::{ConvState, EntityRec, FactRec};

/// Mirrors into `state` what the store reports applied: the state never
/// drifts from its store, whatever the write mode.
pub fn mirror(state: &mut ConvState, new_entities: &[EntityRec], plan: WritePlan, result: &WriteResult) {
    if result.entities_written {
        state.entities.extend(new_entities.iter().cloned());
        for (id, alias) in &plan.new_aliases {
            if let Some(e) = state.entities.iter_mut().find(|e| &e.id == id)
                && !e.aliases.contains(alias)
            {
                e.aliases.push(alias.clone());
            }
        }
    }
    let mut inserts: Vec<FactRec> = plan
        .proposals
        .into_iter()
        .filter_map(|p| match p.action {
            Action::Insert { fact } => Some(*fact),
            _ => None,
        })
        .collect();
    for eff in &result.effects {
        match eff {
            Effect::Inserted { id } => {
                if let Some(k) = inserts.iter().position(|f| &f.id == id) {
                    state.facts.push(inserts.swap_remove(k));
                }
            }
            Effect::ValidUntilSet { id, valid_until } => {
                if let Some(f) = state.fact_mut(id) {
                    f.valid_until = Some(valid_until.clone());
                }
            }
            Effect::Invalidated { id, at, superseded_by } => {
                if let Some(f) = state.fact_mut(id) {
                    f.invalid_at = Some(at.clone().unwrap_or_else(|| "unknown".into()));
                    f.superseded_by = superseded_by.clone();
                }
            }
            // Only `signet` updates in place, and its own mirror applies it.
            Effect::Updated { .. } => {}
        }
    }
}
