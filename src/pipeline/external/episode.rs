//! One episode through an external system: `add_episode` answers with the
//! memories the system now holds (and, where it reports them, its
//! decisions); memform maps them onto its facts by the system's ids and
//! writes the difference in one transaction through [`WriteTx`]:
//!
//! - a memory with an id not seen before is a new fact (outcome `created`;
//!   its source turns where the system reports them, else none);
//! - a known id whose text changed is rewritten in place (`updated`);
//! - a known id no longer listed is invalidated at the episode's date
//!   (`deleted`);
//! - a reported `NONE` decision is a candidate kept out (`none`).
//!
//! A reported decision is kept on its candidate (`decision`, with its
//! target). Each written memory gets the run's embedder's vector, so that
//! memform's own search (the QA evaluation) reads it as any profile's fact.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use super::protocol::{Decision, Event, Held, Memory};
use crate::config::WriteMode;
use crate::embed::Embedder;
use crate::error::Result;
use crate::normalize::normalize_and_hash_content;
use crate::pipeline::ms;
use crate::pipeline::records::{CandidateOutcome, CandidateRecord, DecisionRecord, EpisodeRecord, Timings};
use crate::pipeline::write::{AuditAction, AuditRow, MemoryUpdate, Outcome, WritePlan, WriteResult, WriteTx};
use crate::state::{ConvState, FactRec};
use crate::store::Store;
use crate::types::{CandidateFact, Conversation, Episode, FactKind, FactType, ValueTier, Warning};

/// The system's memory ids and the facts they became, for one conversation.
#[derive(Debug, Default)]
pub struct IdMap {
    /// System id → memform fact id.
    pub facts: HashMap<String, String>,
    /// memform fact id → system id.
    pub systems: HashMap<String, String>,
    /// System ids the store refused (their text is another live memory's),
    /// with that text's hash: not offered again until the text changes.
    pub refused: HashMap<String, String>,
}

enum Op {
    Insert(Box<FactRec>, Vec<String>),
    Update { candidate: String, target: String, update: MemoryUpdate },
    Delete { candidate: String, target: String },
}

fn fact_row(id: &str, m: &Memory, turns: &[String], episode: &str, embedding: Vec<f32>) -> FactRec {
    let content = m.content.trim().to_string();
    let h = normalize_and_hash_content(&content);
    FactRec {
        id: id.to_string(),
        fact: CandidateFact {
            subject: String::new(),
            predicate: "memory".into(),
            object: content.clone(),
            kind: FactKind::Literal,
            fact_type: FactType::Fact,
            content,
            confidence: 1.0,
            source_turn: turns.first().cloned().unwrap_or_default(),
            source_quote: String::new(),
            valid_from: None,
            valid_until: None,
        },
        normalized: h.normalized,
        hash: h.hash,
        invalid_at: None,
        superseded_by: None,
        source_episode: episode.to_string(),
        pinned: false,
        subject_entity: None,
        object_entity: None,
        embedding,
        slot: None,
        keys: Default::default(),
    }
}

fn record(conv: &Conversation, episode: &Episode, id: &str, content: &str, turn: &str, outcome: CandidateOutcome) -> CandidateRecord {
    let h = normalize_and_hash_content(content.trim());
    CandidateRecord {
        id: id.to_string(),
        conversation: conv.id.clone(),
        episode: episode.id.clone(),
        turn: turn.to_string(),
        subject: String::new(),
        predicate: "memory".into(),
        object: content.trim().to_string(),
        kind: FactKind::Literal,
        fact_type: FactType::Fact,
        content: content.trim().to_string(),
        confidence: 1.0,
        value_score: 1.0,
        tier: ValueTier::Core,
        content_hash: h.hash,
        outcome,
        reason: String::new(),
        related: None,
        subject_entity: None,
        object_entity: None,
        verdicts: vec![],
        neither_unlisted: 0,
        unlisted: vec![],
        ended: vec![],
        stored: false,
        decision: None,
        formed: None,
    }
}

fn decision_record(d: &Decision, target: Option<&str>) -> Box<DecisionRecord> {
    Box::new(DecisionRecord {
        action: Some(d.event.name().to_string()),
        target: target.map(str::to_string),
        confidence: None,
        reason: "reported by the system".into(),
        review_needed: false,
        candidates: Vec::new(),
        mentions: Vec::new(),
    })
}

fn apply(tx: &mut dyn WriteTx, ops: &[Op], date: Option<&str>, mode: WriteMode) -> Result<WriteResult> {
    let mut out = WriteResult::default();
    for op in ops {
        match op {
            Op::Insert(row, turns) => {
                let id = row.id.as_str();
                if mode == WriteMode::Shadow {
                    out.audit.push(AuditRow::new(id, AuditAction::Insert, Outcome::Recorded, Some(id), None, "shadow: would be created"));
                } else if tx.insert_fact(row)? {
                    if turns.len() > 1 {
                        tx.add_source_turns(id, turns, None)?;
                    }
                    out.audit.push(AuditRow::new(
                        id,
                        AuditAction::Insert,
                        Outcome::Created,
                        Some(id),
                        None,
                        "the system holds a new memory",
                    ));
                } else {
                    out.audit.push(AuditRow::new(
                        id,
                        AuditAction::Insert,
                        Outcome::Skipped,
                        None,
                        None,
                        "conflict: a live memory has this content hash",
                    ));
                }
            }
            Op::Update { candidate, target, update } => {
                let (outcome, reason) = match mode {
                    WriteMode::Shadow => (Outcome::Recorded, "the system rewrote the memory"),
                    WriteMode::Controlled => (Outcome::Blocked, "controlled mode: the rewrite is blocked"),
                    WriteMode::Full if tx.update_memory(target, update)? => (Outcome::Updated, "the system rewrote the memory"),
                    WriteMode::Full => (Outcome::Skipped, "rewrite refused: the target is not live, or a live memory has its content"),
                };
                out.audit.push(AuditRow::new(candidate, AuditAction::Update, outcome, None, Some(target), reason));
            }
            Op::Delete { candidate, target } => {
                let (outcome, reason) = match mode {
                    WriteMode::Shadow => (Outcome::Recorded, "the system no longer holds the memory"),
                    WriteMode::Controlled => (Outcome::Blocked, "controlled mode: the deletion is blocked"),
                    WriteMode::Full if tx.pinned(target)?.is_some() => {
                        tx.invalidate(target, date, None)?;
                        (Outcome::Invalidated, "the system no longer holds the memory")
                    }
                    WriteMode::Full => (Outcome::Skipped, "the memory is no longer live"),
                };
                out.audit.push(AuditRow::new(candidate, AuditAction::Invalidate, outcome, None, Some(target), reason));
            }
        }
    }
    Ok(out)
}

/// Maps `held` onto the conversation's facts and writes the difference.
#[allow(clippy::too_many_arguments)]
pub fn write(
    conv: &Conversation,
    episode: &Episode,
    held: Held,
    ids: &mut IdMap,
    state: &mut ConvState,
    cfg: &crate::pipeline::Config,
    embedder: &dyn Embedder,
    store: &Store,
    form_ms: f64,
) -> Result<EpisodeRecord> {
    let t = Instant::now();
    let mut warnings = Vec::new();
    let turn_ids: HashSet<&str> = conv.episodes.iter().flat_map(|e| e.turns.iter().map(|t| t.id.as_str())).collect();
    let decisions: HashMap<&str, &Decision> = held.decisions.iter().filter_map(|d| d.id.as_deref().map(|id| (id, d))).collect();
    let mut records = Vec::new();
    let mut ops = Vec::new();
    let mut next = 0usize;
    let mut candidate = || {
        let id = format!("{}/{}/c{next}", conv.id, episode.id);
        next += 1;
        id
    };
    let source = format!("{}/{} external", conv.id, episode.id);
    let listed: HashSet<&str> = held.memories.iter().map(|m| m.id.as_str()).collect();
    let mut new_ids = Vec::new();
    for m in &held.memories {
        if m.content.trim().is_empty() {
            warnings.push(Warning::new("external_empty_memory", format!("memory {:?} has no text: not stored", m.id)));
            continue;
        }
        let mut turns = Vec::new();
        for t in &m.source_turns {
            if turn_ids.contains(t.as_str()) {
                turns.push(t.clone());
            } else {
                warnings
                    .push(Warning::new("external_unknown_turn", format!("memory {:?} names turn {t:?}, not in the conversation", m.id)));
            }
        }
        let decision = decisions.get(m.id.as_str()).copied();
        match ids.facts.get(&m.id).cloned() {
            None if ids.refused.get(&m.id).is_some_and(|h| *h == normalize_and_hash_content(m.content.trim()).hash) => {}
            None => {
                let id = candidate();
                let vector = embedder.embed(&[m.content.trim()], &source)?.pop().unwrap_or_default();
                let row = fact_row(&id, m, &turns, &episode.id, vector);
                let mut rec = record(conv, episode, &id, &m.content, &row.source_turn, CandidateOutcome::Insert);
                rec.decision = decision.map(|d| decision_record(d, None));
                records.push(rec);
                new_ids.push((m.id.clone(), id));
                ops.push(Op::Insert(Box::new(row), turns));
            }
            Some(fact) => {
                let Some(current) = state.facts.iter().find(|f| f.id == fact) else { continue };
                if !current.is_live() {
                    continue;
                }
                let h = normalize_and_hash_content(m.content.trim());
                if h.hash == current.hash {
                    continue;
                }
                let id = candidate();
                let embedding = embedder.embed(&[m.content.trim()], &source)?.pop().unwrap_or_default();
                let mut rec = record(conv, episode, &id, &m.content, turns.first().map_or("", String::as_str), CandidateOutcome::Updated);
                rec.related = Some(fact.clone());
                rec.decision = decision.map(|d| decision_record(d, Some(&fact)));
                records.push(rec);
                let update = MemoryUpdate {
                    title: m.content.trim().to_string(),
                    content: m.content.trim().to_string(),
                    normalized: h.normalized,
                    hash: h.hash,
                    facts: String::new(),
                    turns,
                    embedding,
                };
                ops.push(Op::Update { candidate: id, target: fact, update });
            }
        }
    }
    // Facts the system held and no longer lists: deleted.
    for f in state.facts.iter().filter(|f| f.is_live()) {
        let Some(system) = ids.systems.get(&f.id) else { continue };
        if listed.contains(system.as_str()) {
            continue;
        }
        let id = candidate();
        let mut rec = record(conv, episode, &id, &f.content, &f.source_turn, CandidateOutcome::Deleted);
        rec.related = Some(f.id.clone());
        rec.decision = decisions.get(system.as_str()).map(|d| decision_record(d, Some(&f.id)));
        records.push(rec);
        ops.push(Op::Delete { candidate: id, target: f.id.clone() });
    }
    // NONE decisions: the system kept what it had.
    for d in held.decisions.iter().filter(|d| d.event == Event::None) {
        let target = d.id.as_deref().and_then(|s| ids.facts.get(s)).cloned();
        let content = d.content.clone().unwrap_or_default();
        let id = candidate();
        let mut rec = record(conv, episode, &id, &content, "", CandidateOutcome::NoneDecided);
        rec.related = target.clone();
        rec.decision = Some(decision_record(d, target.as_deref()));
        records.push(rec);
    }
    let embed_ms = ms(t);
    let t = Instant::now();
    let mode = cfg.write_mode();
    let date = episode.timestamp.as_deref().map(|t| t.get(..10).unwrap_or(t).to_string());
    let shell = WritePlan {
        conversation_id: conv.id.clone(),
        episode_id: episode.id.clone(),
        now: episode.timestamp.clone(),
        new_entities: Vec::new(),
        new_aliases: Vec::new(),
        proposals: Vec::new(),
        verdicts: Vec::new(),
        attributions: Vec::new(),
    };
    let result = store.write_episode(&shell, mode, |tx| apply(tx, &ops, date.as_deref(), mode))?;
    let mut invalidations = 0;
    for a in &result.audit {
        let Some(rec) = records.iter_mut().find(|r| r.id == a.candidate_id) else { continue };
        match (a.action, a.outcome) {
            (AuditAction::Insert, Outcome::Created) => {
                rec.stored = true;
                rec.outcome = CandidateOutcome::Created;
            }
            (AuditAction::Insert, Outcome::Recorded) => rec.outcome = CandidateOutcome::ShadowCreated,
            (AuditAction::Insert | AuditAction::Update, Outcome::Skipped) => rec.outcome = CandidateOutcome::Conflict,
            (AuditAction::Update | AuditAction::Invalidate, Outcome::Recorded) => rec.outcome = CandidateOutcome::ShadowRecorded,
            (_, Outcome::Blocked) => {
                rec.outcome = CandidateOutcome::Blocked;
                rec.reason = a.reason.clone();
            }
            (AuditAction::Invalidate, Outcome::Invalidated) => {
                invalidations += 1;
                rec.ended.extend(a.target_fact_id.clone());
            }
            (AuditAction::Invalidate, Outcome::Skipped) => rec.outcome = CandidateOutcome::TargetSkipped,
            _ => {}
        }
        if rec.reason.is_empty() {
            rec.reason = a.reason.clone();
        }
    }
    // The mirror: what the store applied.
    let applied: HashMap<&str, &AuditRow> = result.audit.iter().map(|a| (a.candidate_id.as_str(), a)).collect();
    for op in ops {
        match op {
            Op::Insert(row, _) => {
                if applied.get(row.id.as_str()).is_some_and(|a| a.outcome == Outcome::Skipped)
                    && let Some((system, _)) = new_ids.iter().find(|(_, f)| *f == row.id)
                {
                    ids.refused.insert(system.clone(), row.hash.clone());
                }
                if applied.get(row.id.as_str()).is_some_and(|a| a.outcome == Outcome::Created) {
                    if let Some((system, _)) = new_ids.iter().find(|(_, f)| *f == row.id) {
                        ids.facts.insert(system.clone(), row.id.clone());
                        ids.systems.insert(row.id.clone(), system.clone());
                    }
                    state.facts.push(*row);
                }
            }
            Op::Update { candidate, target, update } => {
                if applied.get(candidate.as_str()).is_some_and(|a| a.outcome == Outcome::Updated)
                    && let Some(f) = state.fact_mut(&target)
                {
                    f.fact.object = update.title;
                    f.fact.content = update.content;
                    f.normalized = update.normalized;
                    f.hash = update.hash;
                    if !update.embedding.is_empty() {
                        f.embedding = update.embedding;
                    }
                }
            }
            Op::Delete { candidate, target } => {
                if applied.get(candidate.as_str()).is_some_and(|a| a.outcome == Outcome::Invalidated)
                    && let Some(f) = state.fact_mut(&target)
                {
                    f.invalid_at = Some(date.clone().unwrap_or_else(|| "unknown".into()));
                }
            }
        }
    }
    let blocked = records.iter().filter(|r| r.outcome == CandidateOutcome::Blocked).count();
    Ok(EpisodeRecord {
        conversation: conv.id.clone(),
        episode: episode.id.clone(),
        timestamp: episode.timestamp.clone(),
        turns: episode.turns.len(),
        candidates: records.len(),
        stored: records.iter().filter(|r| r.stored).count(),
        entity_decisions: Vec::new(),
        warnings,
        usage: Default::default(),
        invalidations,
        closures: 0,
        review_needed: 0,
        blocked,
        facts: records,
        timings: Timings { extract_ms: form_ms, embed_ms, write_ms: ms(t), ..Timings::default() },
    })
}
