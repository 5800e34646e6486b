//! Stage 5's plan: the stages' decisions on one episode's candidates turned
//! into proposals (reject, close, invalidate, insert) and verdict rows, with a
//! record per candidate. Nothing here touches the store.

use super::{Action, EntityRow, Proposal, VerdictRow, WritePlan};
use crate::pipeline::Batch;
use crate::pipeline::Config;
use crate::pipeline::dedupe::{DedupeOutcome, Deduped, MatchBy, Target, closure_cascade};
use crate::pipeline::judge::FinalVerdict;
use crate::pipeline::records::{CandidateOutcome, CandidateRecord};
use crate::pipeline::resolve::Resolution;
use crate::state::{ConvState, FactRec, KeyCache};
use crate::types::{Conversation, Episode, ValueTier, Verdict};

/// The plan and the candidates' records, whose insert outcomes the write
/// stage settles.
pub struct Planned {
    pub plan: WritePlan,
    pub records: Vec<CandidateRecord>,
}

/// The candidate id (also the fact id, if it is stored) of candidate `i`.
pub fn candidate_id(conv: &Conversation, episode: &Episode, i: usize) -> String {
    format!("{}/{}/c{i}", conv.id, episode.id)
}

/// Builds the plan of one episode from its batch, stage 3's outcomes and
/// stage 4's verdicts (one list per candidate).
pub fn build(
    mut batch: Batch<'_>,
    deduped: &Deduped,
    mut verdicts: Vec<Vec<FinalVerdict>>,
    resolution: &Resolution,
    state: &ConvState,
    (conv, episode): (&Conversation, &Episode),
    cfg: &Config,
) -> Planned {
    let now = episode.timestamp.as_deref();
    let id = |i: usize| candidate_id(conv, episode, i);
    let mut records: Vec<CandidateRecord> = (0..batch.len()).map(|i| batch.record(i, id(i), conv, episode)).collect();
    let mut proposals = Vec::new();
    let target_id = |t: &Target| match t {
        Target::Live(live) => live.clone(),
        Target::Batch(j) => id(deduped.kept[*j]),
    };
    // Until dates that closures of this batch set on earlier candidates.
    let mut batch_closures: Vec<(usize, String)> = Vec::new();
    // A dropped restatement's turn joins the fact it restated (provenance).
    let mut attributions: Vec<(String, String)> = Vec::new();
    for (i, rec) in records.iter_mut().enumerate() {
        if let Some(
            DedupeOutcome::ExactDuplicate { of, .. } | DedupeOutcome::NearDuplicate { of, .. } | DedupeOutcome::Closure { of, .. },
        ) = &deduped.outcomes[i]
        {
            attributions.push((target_id(of), rec.turn.clone()));
        }
        let (outcome, reason, related) = match &deduped.outcomes[i] {
            None => {
                let reason = format!("value score {:.2} < {:.2}", rec.value_score, cfg.soda.value_contextual_min);
                (CandidateOutcome::NoiseRejected, reason, None)
            }
            Some(DedupeOutcome::ExactDuplicate { of, by }) => {
                let by = match by {
                    MatchBy::Hash => "content hash",
                    MatchBy::Spo => "subject|predicate|object",
                    MatchBy::Restatement => "subject and a restatement of the content",
                };
                (CandidateOutcome::ExactDuplicate, format!("same {by}"), Some(target_id(of)))
            }
            Some(DedupeOutcome::NearDuplicate { of, cosine }) => {
                let reason = format!("cosine {cosine:.3} >= {:.3}", cfg.soda.near_dup_threshold);
                (CandidateOutcome::NearDuplicate, reason, Some(target_id(of)))
            }
            Some(DedupeOutcome::Closure { of, valid_until, cascade }) => {
                rec.outcome = CandidateOutcome::Closure;
                rec.reason = format!("valid_until {valid_until}");
                rec.related = Some(target_id(of));
                match of {
                    Target::Live(live) => proposals.push(Proposal {
                        candidate_id: rec.id.clone(),
                        action: Action::Close { target: live.clone(), valid_until: valid_until.clone(), cascade: cascade.clone() },
                    }),
                    Target::Batch(j) => batch_closures.push((deduped.kept[*j], valid_until.clone())),
                }
                continue;
            }
            Some(DedupeOutcome::Survivor) => {
                rec.verdicts = std::mem::take(&mut verdicts[i]);
                let Some(v) = rec.verdicts.iter().find(|v| v.verdict == Verdict::New) else {
                    rec.outcome = CandidateOutcome::Insert;
                    continue;
                };
                (CandidateOutcome::JudgedNew, format!("judged new against {}", v.live_id), Some(v.live_id.clone()))
            }
        };
        (rec.outcome, rec.reason, rec.related) = (outcome, reason.clone(), related.clone());
        proposals.push(Proposal { candidate_id: rec.id.clone(), action: Action::Reject { outcome, reason, related } });
    }
    // Inserts and their invalidations, in candidate order.
    let inserts: Vec<usize> = records.iter().enumerate().filter(|(_, r)| r.outcome == CandidateOutcome::Insert).map(|(i, _)| i).collect();
    for i in inserts {
        let closed_until = batch_closures.iter().rev().find(|(j, _)| *j == i).map(|(_, u)| u.clone());
        let fact = batch.fact_rec(i, records[i].id.clone(), closed_until, &episode.id);
        for v in records[i].verdicts.iter().filter(|v| v.verdict == Verdict::Old) {
            let cascade = closure_cascade(state, &[v.live_id.as_str()], now);
            let action = Action::Invalidate { target: v.live_id.clone(), by: fact.id.clone(), cascade };
            proposals.push(Proposal { candidate_id: fact.id.clone(), action });
        }
        proposals.push(Proposal { candidate_id: fact.id.clone(), action: Action::Insert { fact: Box::new(fact) } });
    }
    let plan = WritePlan {
        conversation_id: conv.id.clone(),
        episode_id: episode.id.clone(),
        now: episode.timestamp.clone(),
        new_entities: resolution.new_entities.iter().map(EntityRow::of).collect(),
        new_aliases: resolution.new_aliases.clone(),
        proposals,
        verdicts: verdict_rows(&records),
        attributions,
    };
    Planned { plan, records }
}

/// One row per judged pair, in candidate then pair order.
fn verdict_rows(records: &[CandidateRecord]) -> Vec<VerdictRow> {
    records
        .iter()
        .flat_map(|r| {
            r.verdicts.iter().map(|v| VerdictRow {
                candidate_id: r.id.clone(),
                target_fact_id: v.live_id.clone(),
                pair_reason: v.reason,
                judged: v.judged,
                guard: v.guard.clone(),
                verdict: v.verdict,
                review_needed: v.review_needed,
            })
        })
        .collect()
}

impl Batch<'_> {
    /// Candidate `i`'s record before any decision.
    fn record(&self, i: usize, id: String, conv: &Conversation, episode: &Episode) -> CandidateRecord {
        let r = &self.facts[i];
        CandidateRecord {
            id,
            conversation: conv.id.clone(),
            episode: episode.id.clone(),
            turn: r.fact.source_turn.clone(),
            subject: r.fact.subject.clone(),
            predicate: r.fact.predicate.clone(),
            object: r.fact.object.clone(),
            kind: r.fact.kind,
            fact_type: r.fact.fact_type,
            content: self.hashes[i].storage.clone(),
            confidence: r.fact.confidence,
            value_score: self.front.extraction.facts[i].value_score,
            tier: self.tiers[i],
            content_hash: self.hashes[i].hash.clone(),
            outcome: CandidateOutcome::Insert,
            reason: String::new(),
            related: None,
            subject_entity: r.subject_entity.clone(),
            object_entity: r.object_entity.clone(),
            verdicts: Vec::new(),
            neither_unlisted: 0,
            unlisted: Vec::new(),
            ended: Vec::new(),
            stored: false,
            decision: None,
            formed: None,
        }
    }

    /// Candidate `i` as the fact row it becomes (its keys move into it);
    /// `closed_until` is a validUntil a later candidate of the batch set.
    fn fact_rec(&mut self, i: usize, id: String, closed_until: Option<String>, episode_id: &str) -> FactRec {
        let r = &self.facts[i];
        let h = &self.hashes[i];
        let mut fact = r.fact.clone();
        fact.content = h.storage.clone();
        if closed_until.is_some() {
            fact.valid_until = closed_until;
        }
        FactRec {
            id,
            fact,
            normalized: h.normalized.clone(),
            hash: h.hash.clone(),
            invalid_at: None,
            superseded_by: None,
            source_episode: episode_id.to_string(),
            pinned: false,
            subject_entity: r.subject_entity.clone(),
            object_entity: r.object_entity.clone(),
            embedding: self.embedding(i).to_vec(),
            slot: self.slot(i),
            keys: KeyCache::with(std::mem::take(&mut self.keys[i])),
        }
    }

    /// Whether candidate `i` fell in the ephemeral tier.
    pub fn is_noise(&self, i: usize) -> bool {
        self.tiers[i] == ValueTier::Ephemeral
    }
}
