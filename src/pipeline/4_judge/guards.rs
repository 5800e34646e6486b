//! Stage 4c, the guards applied to any judge's answer.

use serde::{Deserialize, Serialize};

use super::JudgeOutput;
use super::pairs::{FoundPair, PairReason};
use crate::types::Verdict;

/// A pair's final verdict after the guards, and why it changed if it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinalVerdict {
    pub live_id: String,
    pub reason: PairReason,
    pub verdict: Verdict,
    /// The judge's own answer before the guards.
    pub judged: Verdict,
    pub review_needed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guard: Option<String>,
    /// The pair's cosine, which orders a candidate's pairs by nearness
    /// (not written: `facts.jsonl` rows keep their shape).
    #[serde(skip)]
    pub cosine: f64,
}

/// What the guards need of each candidate.
#[derive(Debug, Clone, Copy)]
pub struct GuardInput<'a> {
    pub confidence: f64,
    pub valid_until: Option<&'a str>,
}

/// Applies the stage-4 guards (docs/pipeline.md) to a judge's answer (or failure): a failed
/// call makes every verdict `neither`; historical candidates supersede only
/// the relationship they end; candidates below `min_trusted_confidence` never
/// destroy a fact. Returns the final verdicts per pair, in pair order.
pub fn apply_guards(
    pairs: &[FoundPair],
    answer: &std::result::Result<JudgeOutput, String>,
    candidates: &[GuardInput<'_>],
    now: Option<&str>,
    min_trusted_confidence: f64,
) -> Vec<FinalVerdict> {
    pairs
        .iter()
        .map(|p| {
            let (judged, review) = match answer {
                Ok(o) => (
                    o.verdicts.iter().find(|(i, _)| *i == p.pair.index).map_or(Verdict::Neither, |(_, v)| *v),
                    o.review_needed.contains(&p.pair.index),
                ),
                Err(_) => (Verdict::Neither, false),
            };
            let c = candidates[p.candidate];
            let mut guard = answer.as_ref().err().map(|e| format!("judge_failed: {e}"));
            let mut verdict = judged;
            if verdict == Verdict::Old {
                if crate::state::is_past(c.valid_until, now) && p.reason != PairReason::EndsRelationship {
                    verdict = Verdict::Neither;
                    guard = Some("historical_cannot_supersede".into());
                } else if c.confidence < min_trusted_confidence {
                    verdict = Verdict::Neither;
                    guard = Some("below_min_trusted_confidence".into());
                }
            }
            FinalVerdict {
                live_id: p.live_id.clone(),
                reason: p.reason,
                verdict,
                judged,
                review_needed: review,
                guard,
                cosine: p.pair.cosine,
            }
        })
        .collect()
}
