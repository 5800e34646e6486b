//! What one episode's run through the stages leaves behind: a
//! [`CandidateRecord`] per candidate fact (a row of `facts.jsonl`) and an
//! [`EpisodeRecord`] per episode (a row of `episodes.jsonl`).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::judge::FinalVerdict;
use super::resolve::EntityDecision;
use super::write::{InsertOutcome, Outcome, WriteResult};
use crate::types::{FactKind, FactType, LlmUsage, ValueTier, Warning, string_enum};

string_enum! {
    /// What became of a candidate fact, as `facts.jsonl` names it.
    pub enum CandidateOutcome {
        /// Its value score fell in the ephemeral tier.
        NoiseRejected => "noise_rejected",
        ExactDuplicate => "exact_duplicate",
        NearDuplicate => "near_duplicate",
        /// It closed the fact it matches (set its validUntil).
        Closure => "closure",
        /// The judge found it wrong or adding nothing against a live fact.
        JudgedNew => "judged_new",
        /// Planned for insert; the write stage replaces it with one of the below.
        Insert => "insert",
        Created => "created",
        /// Shadow mode: it would have been created.
        ShadowCreated => "shadow_created",
        /// The write stage's race re-check found its content hash live.
        Deduped => "deduped",
        LowFactConfidence => "low_fact_confidence",
        EmptyFactContent => "empty_fact_content",
        Conflict => "conflict",
    }
}

impl CandidateOutcome {
    /// Dropped as a duplicate before writing (audited as `deduped`).
    pub fn is_duplicate(self) -> bool {
        matches!(self, CandidateOutcome::ExactDuplicate | CandidateOutcome::NearDuplicate)
    }

    /// The outcome an `Insert` proposal ends with, and whether it was stored.
    pub fn of_insert(o: InsertOutcome) -> (CandidateOutcome, bool) {
        match o {
            InsertOutcome::Created => (CandidateOutcome::Created, true),
            InsertOutcome::Recorded => (CandidateOutcome::ShadowCreated, false),
            InsertOutcome::Deduped => (CandidateOutcome::Deduped, false),
            InsertOutcome::LowFactConfidence => (CandidateOutcome::LowFactConfidence, false),
            InsertOutcome::EmptyFactContent => (CandidateOutcome::EmptyFactContent, false),
            InsertOutcome::Conflict => (CandidateOutcome::Conflict, false),
        }
    }
}

/// Milliseconds spent per stage (not deterministic; kept out of comparisons).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    pub extract_ms: f64,
    pub embed_ms: f64,
    pub resolve_ms: f64,
    pub dedupe_ms: f64,
    pub judge_ms: f64,
    pub write_ms: f64,
}

impl Timings {
    pub fn add(&mut self, o: &Timings) {
        self.extract_ms += o.extract_ms;
        self.embed_ms += o.embed_ms;
        self.resolve_ms += o.resolve_ms;
        self.dedupe_ms += o.dedupe_ms;
        self.judge_ms += o.judge_ms;
        self.write_ms += o.write_ms;
    }
}

/// Everything that happened to one candidate fact (a row of `facts.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateRecord {
    pub id: String,
    pub conversation: String,
    pub episode: String,
    pub turn: String,
    pub subject: String,
    pub predicate: String,
    pub object: String,
    pub kind: FactKind,
    pub fact_type: FactType,
    pub content: String,
    pub confidence: f64,
    pub value_score: f64,
    pub tier: ValueTier,
    pub content_hash: String,
    pub outcome: CandidateOutcome,
    pub reason: String,
    /// The fact or candidate this one duplicates or closes.
    pub related: Option<String>,
    pub subject_entity: Option<String>,
    pub object_entity: Option<String>,
    pub verdicts: Vec<FinalVerdict>,
    /// Facts this candidate invalidated or closed (applied, cascades included).
    pub ended: Vec<String>,
    pub stored: bool,
}

/// One episode's record (a row of `episodes.jsonl`) with its candidates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeRecord {
    pub conversation: String,
    pub episode: String,
    pub timestamp: Option<String>,
    pub turns: usize,
    pub candidates: usize,
    pub stored: usize,
    pub entity_decisions: Vec<EntityDecision>,
    pub warnings: Vec<Warning>,
    pub usage: LlmUsage,
    pub invalidations: usize,
    pub closures: usize,
    pub review_needed: usize,
    pub blocked: usize,
    #[serde(skip)]
    pub facts: Vec<CandidateRecord>,
    pub timings: Timings,
}

/// Write-stage counts of one episode.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WriteCounts {
    pub invalidations: usize,
    pub closures: usize,
    pub blocked: usize,
}

/// Folds what the write stage did into the candidates' records: the final
/// outcome of each insert, and the facts each candidate ended. Records are
/// found by id through an index (one lookup per audit row, not a scan).
pub fn settle(records: &mut [CandidateRecord], result: &WriteResult) -> WriteCounts {
    let mut counts = WriteCounts::default();
    let index: HashMap<String, usize> = records.iter().enumerate().map(|(i, r)| (r.id.clone(), i)).collect();
    for a in &result.audit {
        match a.outcome {
            Outcome::Invalidated => counts.invalidations += 1,
            Outcome::Closed => counts.closures += 1,
            Outcome::Blocked => counts.blocked += 1,
            _ => {}
        }
        if matches!(a.outcome, Outcome::Invalidated | Outcome::Closed)
            && let (Some(&i), Some(t)) = (index.get(&a.candidate_id), &a.target_fact_id)
        {
            records[i].ended.push(t.clone());
        }
    }
    for (cand, outcome, audit) in &result.inserts {
        let Some(&i) = index.get(cand) else { continue };
        let rec = &mut records[i];
        let a = &result.audit[*audit];
        (rec.outcome, rec.stored) = CandidateOutcome::of_insert(*outcome);
        rec.reason = a.reason.clone();
        if a.target_fact_id.is_some() {
            rec.related = a.target_fact_id.clone();
        }
    }
    counts
}
