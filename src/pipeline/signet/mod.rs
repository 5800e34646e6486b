//! The `signet` profile: Signet Pipeline v2's formation after extraction.
//! Per episode, [`front`] extracts in Signet's contract ([`extract`]:
//! rules mode's extraction put in it, or [`extract_llm`]'s one call), and
//! each of the contract's facts (content, type, confidence) goes through:
//!
//! - [`retrieve`]: candidate retrieval, the top 5 stored memories;
//! - [`decide`]: ADD / UPDATE / DELETE / NONE (rules: memform's policy;
//!   LLM: [`llm::LlmDecider`]), no model call without candidates;
//! - the contradiction detector, which only flags UPDATE and DELETE
//!   proposals `review_needed`;
//! - [`linker`]: mentions of existing entities (never creates one);
//! - [`write`]: the gates and the write mode's semantics, in one
//!   transaction, every audit row with its provenance.
//!
//! Rules in docs/pipeline.md, "The signet profile".

pub mod config;
pub mod decide;
pub mod extract;
pub mod extract_llm;
pub mod front;
pub mod linker;
pub mod llm;
pub mod retrieve;
pub mod write;

use std::time::Instant;

pub use decide::{Decider, Decision, DecisionAction, MemoryCandidate, RulesDecider};

use super::records::{CandidateOutcome, CandidateRecord, DecisionRecord, EpisodeRecord, Timings};
use super::write::plan::candidate_id;
use super::write::{Effect, Provenance, WritePlan, WriteResult};
use super::{EpisodeFront, ms};
use crate::error::{Error, Result};
use crate::normalize::normalize_and_hash_content;
use crate::pipeline::Config;
use crate::pipeline::judge::{Judge, JudgeContext};
use crate::state::{ConvState, FactKeys, FactRec, KeyCache, ScanCache};
use crate::store::Store;
use crate::types::{Conversation, Episode, LlmUsage, Warning};
use write::{Applied, SignetProposal};

/// One fact's decision with what it was decided against.
struct Decided {
    decision: Option<Decision>,
    dropped: Option<String>,
    candidates: Vec<MemoryCandidate>,
}

/// Retrieval and decision for every fact of the episode, in order. Facts are
/// decided against the store as it was before the episode (Signet decides a
/// batch before writing it); a failed call drops that fact's decision with a
/// warning, a fixture miss stops the run.
fn decide_all(
    front: &EpisodeFront,
    ctx: JudgeContext<'_>,
    (state, store): (&ConvState, &Store),
    cfg: &Config,
    decider: &dyn Decider,
) -> Result<(Vec<Decided>, Vec<Warning>, LlmUsage)> {
    let mut warnings = Vec::new();
    let mut usage = LlmUsage::default();
    let mut out = Vec::with_capacity(front.extraction.facts.len());
    for (i, sf) in front.extraction.facts.iter().enumerate() {
        let vector = front.fact_embeddings.get(i).map_or(&[][..], Vec::as_slice);
        let candidates = retrieve::candidates(store, state, ctx.conversation_id, &sf.fact.content, vector, cfg)?;
        if candidates.is_empty() {
            let d = Decision {
                action: DecisionAction::Add,
                target: None,
                confidence: sf.fact.confidence,
                reason: decide::NO_CANDIDATES_REASON.into(),
            };
            out.push(Decided { decision: Some(d), dropped: None, candidates });
            continue;
        }
        let input = decide::DecisionInput { fact: &sf.fact, candidates: &candidates };
        let (decision, dropped) = match decider.decide(&ctx, &input, cfg) {
            Ok(a) => {
                let why = a.warnings.first().map(|w| format!("{}: {}", w.kind, w.message));
                warnings.extend(a.warnings);
                usage.add(a.usage);
                (a.decision, why)
            }
            Err(e @ Error::FixtureMiss(_)) => return Err(e),
            Err(e) => {
                let m = crate::error::chain(&e);
                warnings.push(Warning::new("decision_failed", m.clone()));
                (None, Some(m))
            }
        };
        out.push(Decided { decision, dropped, candidates });
    }
    Ok((out, warnings, usage))
}

/// Fact `i` of the episode as the row it would become.
fn fact_row(front: &EpisodeFront, i: usize, id: String, episode: &Episode) -> FactRec {
    let fact = &front.extraction.facts[i].fact;
    let n = normalize_and_hash_content(&fact.content);
    let mut fact = fact.clone();
    fact.content = n.storage;
    FactRec {
        id,
        keys: KeyCache::with(FactKeys::of(&fact.subject, &fact.predicate, &fact.object)),
        fact,
        normalized: n.normalized,
        hash: n.hash,
        invalid_at: None,
        superseded_by: None,
        source_episode: episode.id.clone(),
        pinned: false,
        subject_entity: None,
        object_entity: None,
        embedding: front.fact_embeddings.get(i).cloned().unwrap_or_default(),
        slot: None,
    }
}

/// Stages after extraction for one episode of the `signet` profile.
#[allow(clippy::too_many_arguments)]
pub fn back(
    front: &EpisodeFront,
    conv: &Conversation,
    episode: &Episode,
    state: &mut ConvState,
    cfg: &Config,
    judge: &dyn Judge,
    store: &Store,
) -> Result<EpisodeRecord> {
    let decider =
        judge.decider().ok_or_else(|| Error::Config(format!("profile signet needs its decision stage, not the judge {}", judge.id())))?;
    let now = episode.timestamp.as_deref();
    let mut timings = Timings { extract_ms: front.extract_ms, embed_ms: front.embed_ms, ..Timings::default() };
    let t = Instant::now();
    let ctx = JudgeContext { conversation_id: &conv.id, episode_id: &episode.id };
    let (decided, decide_warnings, decide_usage) = decide_all(front, ctx, (state, store), cfg, decider)?;
    timings.judge_ms = ms(t);

    let t = Instant::now();
    let facts = &front.extraction.facts;
    let proposals: Vec<SignetProposal> = decided
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let fact = fact_row(front, i, candidate_id(conv, episode, i), episode);
            let target = d.decision.as_ref().and_then(|x| x.target.as_deref());
            let target = d.candidates.iter().find(|c| Some(c.id.as_str()) == target);
            let review_needed = d.decision.as_ref().is_some_and(|x| decide::review_needed(x, &fact.fact, target, cfg));
            let provenance = Provenance {
                action: d.decision.as_ref().map_or("dropped", |x| x.action.as_str()).to_string(),
                content: fact.content.clone(),
                confidence: fact.confidence,
                // A model's contract facts name no turn: the episode is the source.
                source: if fact.source_turn.is_empty() { episode.id.clone() } else { format!("{}/{}", episode.id, fact.source_turn) },
                extractor: front.extractor.clone(),
                decider: decider.id(),
                fact_count: facts.len(),
                entity_count: front.triples.len(),
                review_needed,
            };
            let mentions = linker::link(&fact.content, state);
            SignetProposal { fact, decision: d.decision.clone(), dropped: d.dropped.clone(), review_needed, mentions, provenance }
        })
        .collect();
    let plan = WritePlan {
        conversation_id: conv.id.clone(),
        episode_id: episode.id.clone(),
        now: episode.timestamp.clone(),
        new_entities: Vec::new(),
        new_aliases: Vec::new(),
        proposals: Vec::new(),
        verdicts: Vec::new(),
        attributions: Vec::new(),
    };
    let mode = cfg.write_mode();
    let mut applied = Vec::new();
    let result = store.write_episode(&plan, mode, |tx| {
        let (result, a) = write::apply(tx, &proposals, mode, cfg.min_fact_confidence_for_write, now)?;
        applied = a;
        Ok(result)
    })?;
    mirror(state, &proposals, &result);
    let records: Vec<CandidateRecord> = proposals
        .iter()
        .zip(&decided)
        .zip(&applied)
        .enumerate()
        .map(|(i, ((p, d), a))| record(front, (&conv.id, i), p, d, *a, cfg))
        .collect();
    timings.write_ms = ms(t);

    let mut warnings = front.extraction.warnings.clone();
    warnings.extend(decide_warnings);
    let mut usage = front.usage;
    usage.add(decide_usage);
    let count = |o: &[Applied]| applied.iter().filter(|a| o.contains(a)).count();
    Ok(EpisodeRecord {
        conversation: conv.id.clone(),
        episode: episode.id.clone(),
        timestamp: episode.timestamp.clone(),
        turns: episode.turns.len(),
        candidates: records.len(),
        stored: records.iter().filter(|r| r.stored).count(),
        entity_decisions: Vec::new(),
        warnings,
        usage,
        invalidations: count(&[Applied::Deleted]),
        closures: 0,
        review_needed: proposals.iter().filter(|p| p.review_needed).count(),
        blocked: count(&[Applied::Blocked]),
        facts: records,
        timings,
    })
}

/// Folds what the store applied into the state: inserted facts, facts
/// updated in place (the candidate's content under the target's id) and
/// soft-deleted facts.
fn mirror(state: &mut ConvState, proposals: &[SignetProposal], result: &WriteResult) {
    let by_id = |id: &str| proposals.iter().find(|p| p.fact.id == id).map(|p| p.fact.clone());
    for eff in &result.effects {
        match eff {
            Effect::Inserted { id } => state.facts.extend(by_id(id)),
            Effect::Updated { id, by } => {
                if let (Some(pos), Some(mut new)) = (state.facts.iter().position(|f| &f.id == id), by_id(by)) {
                    new.id = id.clone();
                    state.facts[pos] = new;
                    // The facts' match index is rebuilt: a fact's keys changed.
                    state.scan = ScanCache::default();
                }
            }
            Effect::Invalidated { id, at, superseded_by } => {
                if let Some(f) = state.fact_mut(id) {
                    f.invalid_at = Some(at.clone().unwrap_or_else(|| "unknown".into()));
                    f.superseded_by = superseded_by.clone();
                }
            }
            Effect::ValidUntilSet { .. } => {}
        }
    }
}

/// A fact's row of `facts.jsonl`.
fn record(
    front: &EpisodeFront,
    (conv, i): (&str, usize),
    p: &SignetProposal,
    d: &Decided,
    applied: Applied,
    cfg: &Config,
) -> CandidateRecord {
    let sf = &front.extraction.facts[i];
    let decision = p.decision.as_ref();
    let (outcome, stored) = match applied {
        Applied::Created => (CandidateOutcome::Created, true),
        Applied::Updated => (CandidateOutcome::Updated, false),
        Applied::Deleted => (CandidateOutcome::Deleted, false),
        Applied::Kept => (CandidateOutcome::NoneDecided, false),
        Applied::Blocked => (CandidateOutcome::Blocked, false),
        Applied::Recorded if decision.is_some_and(|d| d.action == DecisionAction::Add) => (CandidateOutcome::ShadowCreated, false),
        Applied::Recorded if decision.is_some_and(|d| d.action == DecisionAction::None) => (CandidateOutcome::NoneDecided, false),
        Applied::Recorded => (CandidateOutcome::ShadowRecorded, false),
        Applied::LowConfidence => (CandidateOutcome::LowFactConfidence, false),
        Applied::EmptyContent => (CandidateOutcome::EmptyFactContent, false),
        Applied::Deduped => (CandidateOutcome::Deduped, false),
        Applied::Conflict => (CandidateOutcome::Conflict, false),
        Applied::TargetSkipped => (CandidateOutcome::TargetSkipped, false),
        Applied::Dropped => (CandidateOutcome::DecisionDropped, false),
    };
    let ended = match (applied, decision) {
        (Applied::Updated | Applied::Deleted, Some(d)) => d.target.iter().cloned().collect(),
        _ => Vec::new(),
    };
    CandidateRecord {
        id: p.fact.id.clone(),
        conversation: conv.to_string(),
        episode: p.fact.source_episode.clone(),
        turn: sf.fact.source_turn.clone(),
        subject: sf.fact.subject.clone(),
        predicate: sf.fact.predicate.clone(),
        object: sf.fact.object.clone(),
        kind: sf.fact.kind,
        fact_type: sf.fact.fact_type,
        content: p.fact.content.clone(),
        confidence: sf.fact.confidence,
        value_score: sf.value_score,
        tier: super::extract::tier_of(sf, cfg.signet.value_core_min, cfg.signet.value_contextual_min),
        content_hash: p.fact.hash.clone(),
        outcome,
        reason: decision.map_or_else(|| p.dropped.clone().unwrap_or_default(), |d| d.reason.clone()),
        related: decision.and_then(|d| d.target.clone()),
        subject_entity: None,
        object_entity: None,
        verdicts: Vec::new(),
        neither_unlisted: 0,
        unlisted: Vec::new(),
        ended,
        stored,
        decision: Some(Box::new(DecisionRecord {
            action: decision.map(|d| d.action.as_str().to_string()),
            target: decision.and_then(|d| d.target.clone()),
            confidence: decision.map(|d| d.confidence),
            reason: decision.map_or_else(|| p.dropped.clone().unwrap_or_default(), |d| d.reason.clone()),
            review_needed: p.review_needed,
            candidates: d.candidates.iter().map(|c| (c.id.clone(), c.score)).collect(),
            mentions: p.mentions.iter().map(|m| m.entity_id.clone()).collect(),
        })),
        formed: None,
    }
}
