//! Stage 4a, pairing: which live facts a surviving candidate may contradict.
//! Rules in docs/pipeline.md, "Stage 4: judge".

use super::{JudgePair, PairFact};
use crate::state::{ConvState, FactKeys, Vector};
use crate::types::string_enum;

string_enum! {
    /// Why a candidate was paired with a live fact (the three pairing conditions).
    pub enum PairReason {
        /// Same subject and predicate, different object.
        SamePredicate => "same_predicate",
        /// Same subject and object, and the candidate carries validUntil.
        EndsRelationship => "ends_relationship",
        /// Cosine in [contradiction_band_min, near_dup_threshold), same subject,
        /// different object.
        SimilarContent => "similar_content",
    }
}

/// A candidate's view for pairing.
#[derive(Debug, Clone)]
pub struct PairInput<'a> {
    pub fact: PairFact,
    pub embedding: Vector<'a>,
    /// The fact's lower-cased and normalised parts.
    pub keys: &'a FactKeys,
}

/// A pair found by [`find_pairs`]: candidate index (into the inputs), live
/// fact id, and the pair as the judge sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundPair {
    pub candidate: usize,
    pub live_id: String,
    pub reason: PairReason,
    pub pair: JudgePair,
}

/// Pairs each candidate with the current live facts it may contradict.
pub fn find_pairs(candidates: &[PairInput<'_>], state: &ConvState, now: Option<&str>, band_min: f64, band_max: f64) -> Vec<FoundPair> {
    let mut out = Vec::new();
    let current: Vec<_> = state.facts.iter().filter(|f| f.is_current(now)).collect();
    for (ci, c) in candidates.iter().enumerate() {
        let (cs, cp, co) = (&c.keys.subject, &c.keys.predicate, &c.keys.object);
        for live in &current {
            let k = live.keys();
            if k.subject != *cs {
                continue;
            }
            let same_object = k.object == *co;
            let cos = state.cosine(c.embedding, live.vector());
            let reason = if k.predicate == *cp && !same_object {
                PairReason::SamePredicate
            } else if same_object && c.fact.valid_until.is_some() {
                PairReason::EndsRelationship
            } else if !same_object && cos >= band_min && cos < band_max {
                PairReason::SimilarContent
            } else {
                continue;
            };
            let index = out.len();
            out.push(FoundPair {
                candidate: ci,
                live_id: live.id.clone(),
                reason,
                pair: JudgePair { index, live: PairFact::of(live), candidate: c.fact.clone(), cosine: cos },
            });
        }
    }
    out
}
