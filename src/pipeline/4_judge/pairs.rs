//! Stage 4a, pairing: which live facts a surviving candidate may contradict.
//! Rules in docs/pipeline.md, "Stage 4: judge".

use std::sync::Arc;

use super::rules::{Antonyms, PolarityKeys, SharedWords, opposite_preferences, polarity_conflict};
use super::{JudgePair, PairFact};
pub use crate::model::outcome::PairReason;
use crate::model::proposition::{Reading, change};
use crate::pipeline::Config;
use crate::state::{ConvState, FactKeys, FactRec, Norms, Vector};

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

/// What pairing needs of the config: the cosine band, which predicates are
/// multi-valued, the polarity rule's figures, and the cap per candidate.
#[derive(Debug, Clone)]
pub struct PairRules {
    pub band_min: f64,
    pub band_max: f64,
    /// `multi_valued_predicates`, lower-cased.
    multi_valued: Vec<String>,
    antonyms: Arc<Antonyms>,
    min_shared_tokens: usize,
    /// `polarity_content_words_only`.
    content_words_only: bool,
    pub max_per_candidate: usize,
    /// `preference_polarity_pairing`.
    pub preference_pairing: bool,
    /// `evidence_of_change`.
    pub evidence: bool,
    /// `single_valued_predicates`, lower-cased (the evidence rules' slots).
    single_valued: Vec<String>,
}

impl PairRules {
    pub fn new(cfg: &Config) -> PairRules {
        PairRules {
            band_min: cfg.soda.contradiction_band_min,
            band_max: cfg.soda.near_dup_threshold,
            multi_valued: cfg.soda.multi_valued_predicates.iter().map(|p| p.trim().to_lowercase()).collect(),
            antonyms: Antonyms::interned(&cfg.soda.antonyms),
            min_shared_tokens: cfg.soda.antonym_min_shared_tokens,
            content_words_only: cfg.soda.polarity_content_words_only,
            max_per_candidate: cfg.soda.max_pairs_per_candidate,
            preference_pairing: cfg.soda.preference_polarity_pairing,
            evidence: cfg.soda.evidence_of_change,
            single_valued: cfg.soda.single_valued_predicates.iter().map(|p| p.trim().to_lowercase()).collect(),
        }
    }

    /// Whether a (lower-cased) predicate holds one object at a time.
    pub fn is_single_valued(&self, predicate: &str) -> bool {
        self.single_valued.iter().any(|p| p == predicate.trim())
    }

    /// Whether a (lower-cased) predicate holds many objects at once.
    pub fn is_multi_valued(&self, predicate: &str) -> bool {
        self.multi_valued.iter().any(|p| p == predicate.trim())
    }
}

/// Pairs each candidate with the current live facts it may contradict: the
/// three conditions (and, when switched on, opposite preferences), except that a candidate whose predicate is
/// multi-valued pairs only to end a relationship or on a polarity conflict
/// (both facts could stand otherwise); then at most `max_per_candidate`
/// pairs per candidate, the nearest by cosine (ties: the earlier live fact),
/// kept in live-fact order. Pairs are indexed in candidate, then live-fact
/// order.
pub fn find_pairs(candidates: &[PairInput<'_>], state: &ConvState, now: Option<&str>, rules: &PairRules) -> Vec<FoundPair> {
    let current: Vec<(usize, &FactRec)> = state.facts.iter().enumerate().filter(|(_, f)| f.is_current(now)).collect();
    let scan = state.scan();
    // A multi-valued candidate's polarity keys, and every candidate's norms, computed once.
    let polarity: Vec<Option<PolarityKeys>> = candidates
        .iter()
        .map(|c| (!rules.evidence && rules.is_multi_valued(&c.keys.predicate)).then(|| PolarityKeys::of(&c.fact.content, &rules.antonyms)))
        .collect();
    let norms: Vec<Norms> = candidates.iter().map(|c| Norms::of(c.embedding.values)).collect();
    // With `evidence_of_change`, every candidate's reading, once.
    let readings: Vec<Option<Reading>> = candidates
        .iter()
        .map(|c| {
            rules.evidence.then(|| {
                let object = rules.is_single_valued(&c.keys.predicate).then_some(c.fact.object.as_str());
                Reading::of_fact(&c.fact.subject, &c.fact.predicate, object, &c.fact.content, rules.antonyms.pairs())
            })
        })
        .collect();
    // Per candidate: (cosine, position in `current`, reason). One pass over
    // the facts with the candidates inside, so each fact is read once.
    let mut found: Vec<Vec<(f64, usize, PairReason)>> = vec![Vec::new(); candidates.len()];
    // The candidates' keys as the index's ids (none: no fact has that key).
    let ids: Vec<[Option<u32>; 3]> =
        candidates.iter().map(|c| [scan.id(&c.keys.subject), scan.id(&c.keys.predicate), scan.id(&c.keys.object)]).collect();
    for (li, &(pos, live)) in current.iter().enumerate() {
        let row = scan.row(pos);
        let mut live_polarity = None;
        let mut live_reading = None;
        for (ci, c) in candidates.iter().enumerate() {
            let [subject, predicate, object] = ids[ci];
            if subject != Some(row.subject) {
                continue;
            }
            // Evidence of change: the same slot with another value, an
            // explicit ending or a polarity flip of the same proposition.
            let evidence = readings[ci].as_ref().is_some_and(|r| {
                let read = || live.reading(&rules.antonyms, rules.is_single_valued(&live.keys().predicate));
                change(live_reading.get_or_insert_with(read), r).is_some()
            });
            let reason = if rules.evidence {
                if object == Some(row.object) && c.fact.valid_until.is_some() {
                    PairReason::EndsRelationship
                } else if evidence {
                    PairReason::EvidenceOfChange
                } else if object == Some(row.object) || rules.is_multi_valued(&c.keys.predicate) {
                    // Multi-valued, or the same object without an ending: both stand.
                    continue;
                } else if predicate == Some(row.predicate) {
                    PairReason::SamePredicate
                } else {
                    PairReason::SimilarContent
                }
            } else if object == Some(row.object) {
                if c.fact.valid_until.is_some() {
                    PairReason::EndsRelationship
                } else if rules.preference_pairing && opposite_preferences(&c.keys.predicate, &live.keys().predicate) {
                    PairReason::OppositePreference
                } else {
                    continue;
                }
            } else if let Some(p) = &polarity[ci]
                && !polarity_conflict(
                    p,
                    live_polarity.get_or_insert_with(|| live.polarity(&rules.antonyms)),
                    &SharedWords {
                        min: rules.min_shared_tokens,
                        content_only: rules.content_words_only,
                        facts: [(&c.fact.subject, &c.fact.object), (&live.subject, &live.object)],
                    },
                )
            {
                // Multi-valued: both facts can stand.
                continue;
            } else if predicate == Some(row.predicate) {
                PairReason::SamePredicate
            } else {
                // Paired only if the cosine falls in the band (below).
                PairReason::SimilarContent
            };
            let cos = if reason == PairReason::SimilarContent {
                match scan.cosine_at_least(state, c.embedding, &norms[ci], pos, live.vector(), rules.band_min) {
                    Some(cos) if crate::state::trace::below(cos, rules.band_max) => cos,
                    _ => continue,
                }
            } else {
                state.cosine(c.embedding, live.vector())
            };
            found[ci].push((cos, li, reason));
        }
    }
    drop(scan);
    let mut out = Vec::new();
    for (ci, (c, mut pairs)) in candidates.iter().zip(found).enumerate() {
        keep_nearest(&mut pairs, rules.max_per_candidate);
        for (cos, li, reason) in pairs {
            let live = current[li].1;
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

/// Keeps the `cap` nearest of one candidate's pairs (cosine, live-fact
/// position, reason): highest cosine first, a NaN lowest, ties to the
/// earlier live fact; the kept pairs stay in live-fact order.
fn keep_nearest(pairs: &mut Vec<(f64, usize, PairReason)>, cap: usize) {
    if pairs.len() <= cap {
        return;
    }
    let key = |c: f64| if c.is_nan() { f64::NEG_INFINITY } else { c };
    // Pairs with evidence of change first: the cap never drops them for
    // nearer pairs the rules judge would let stand.
    pairs.sort_by(|a, b| {
        (b.2 == PairReason::EvidenceOfChange)
            .cmp(&(a.2 == PairReason::EvidenceOfChange))
            .then(key(b.0).total_cmp(&key(a.0)))
            .then(a.1.cmp(&b.1))
    });
    pairs.truncate(cap);
    pairs.sort_by_key(|p| p.1);
}
