//! Stage 4a, pairing: which live facts a surviving candidate may contradict.
//! Rules in docs/pipeline.md, "Stage 4: judge".

use std::sync::Arc;

use super::rules::{Antonyms, PolarityKeys, SharedWords, opposite_preferences, polarity_conflict};
use super::{JudgePair, PairFact};
pub use crate::model::outcome::PairReason;
use crate::model::proposition::{Reading, change};
use crate::pipeline::Config;
use crate::state::{ConvState, FactKeys, FactRec, Norms, ScanRow, Vector, hash64, trace};

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
    /// The live fact's position in `ConvState::facts`.
    pub live_pos: usize,
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

    /// The name of this way of reading facts in the scan index's reading
    /// indexes: the single-valued predicates and the antonym list.
    fn sig(&self) -> (u64, usize) {
        (hash64(&format!("pairs\u{1e}{}", self.single_valued.join("\u{1f}"))), self.antonyms.id())
    }

    /// A live fact's reading, as pairing reads it, put into the memo of
    /// readings installed on this thread (if any) so that the rules judge,
    /// which reads the pair's facts again, finds it there.
    pub fn keep_reading(&self, live: &FactRec) {
        if self.evidence {
            let single = self.is_single_valued(&live.keys().predicate);
            let object = single.then_some(live.object.as_str());
            crate::state::keep_reading(&live.subject, &live.predicate, object, &live.content, &self.antonyms, &self.read(live));
        }
    }

    /// Reads a fact just stored, as pairing will read it, while the
    /// episode's memo of readings holds its candidate's reading (the same
    /// parts): the fact keeps it instead of reading its content again in a
    /// later episode. Nothing without the evidence rules.
    pub fn read_stored(&self, fact: &FactRec) {
        if self.evidence {
            self.read(fact);
        }
    }

    /// A live fact's reading, as pairing reads it.
    fn read<'f>(&self, live: &'f FactRec) -> std::borrow::Cow<'f, Reading> {
        live.reading(&self.antonyms, self.is_single_valued(&live.keys().predicate))
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
    let mut scan = state.scan();
    // A multi-valued candidate's polarity keys, and every candidate's norms, computed once.
    let multi: Vec<bool> = candidates.iter().map(|c| rules.is_multi_valued(&c.keys.predicate)).collect();
    let polarity: Vec<Option<PolarityKeys>> = candidates
        .iter()
        .zip(&multi)
        .map(|(c, &m)| (!rules.evidence && m).then(|| PolarityKeys::of(&c.fact.content, &rules.antonyms)))
        .collect();
    let norms: Vec<Norms> = candidates.iter().map(|c| Norms::of(c.embedding.values)).collect();
    // With `evidence_of_change`, every candidate's reading, once.
    let readings: Vec<Option<Reading>> = candidates
        .iter()
        .map(|c| {
            rules.evidence.then(|| {
                let object = rules.is_single_valued(&c.keys.predicate).then_some(c.fact.object.as_str());
                crate::state::read_fact(&c.fact.subject, &c.fact.predicate, object, &c.fact.content, &rules.antonyms)
            })
        })
        .collect();
    // Per candidate with a reading, the facts against which `change` can
    // answer (ascending; `None`: any of them), from the readings' index.
    if rules.evidence {
        scan.sync_readings(rules.sig(), &state.facts, |f| rules.read(f));
    }
    let may_change: Vec<Option<Vec<u32>>> = readings
        .iter()
        .map(|r| {
            let (r, index) = (r.as_ref()?, scan.readings(rules.sig())?);
            let keys = r.change_probe()?;
            let mut found: Vec<u32> = keys.iter().flat_map(|k| index.change(k).iter().copied()).collect();
            found.sort_unstable();
            found.dedup();
            Some(found)
        })
        .collect();
    // Per candidate: (cosine, position in `state.facts`, reason), visiting
    // only the facts with the candidate's subject (from the index).
    let mut found: Vec<Vec<(f64, usize, PairReason)>> = vec![Vec::new(); candidates.len()];
    // Recording a sweep's trace: per candidate, its nearest pair by similar
    // content below the band (cosine, position), whose comparison with
    // `band_min` is recorded only if the cap would keep it ([`record_band`]).
    let recording = trace::active();
    let mut below_band: Vec<Option<(f64, usize)>> = vec![None; candidates.len()];
    for (ci, c) in candidates.iter().enumerate() {
        let [subject, predicate, object] = [scan.id(&c.keys.subject), scan.id(&c.keys.predicate), scan.id(&c.keys.object)];
        let Some(subject) = subject else { continue };
        // A candidate that is not multi-valued, when the readings' index
        // names every fact `change` can answer for: the facts that may pair
        // by something other than the predicate and the cosine are few, and
        // of the rest only the nearest `max_per_candidate` can stay
        // ([`pairs_by_predicate`]). Recording a sweep's trace, the visit
        // below records the band's comparisons as before.
        if !recording && !multi[ci] && (!rules.evidence || may_change[ci].is_some()) {
            let (ids, reading) = ([subject, predicate.unwrap_or(u32::MAX), object.unwrap_or(u32::MAX)], readings[ci].as_ref());
            found[ci] = pairs_by_predicate(c, ids, may_change[ci].as_deref(), reading, &norms[ci], state, &scan, now, rules);
            continue;
        }
        // With the evidence rules, a multi-valued candidate pairs only to end
        // a relationship (the same object) or on evidence of change: only
        // those facts are visited when the readings' index can name them.
        let few: Option<Vec<u32>> = match &may_change[ci] {
            Some(m) if rules.evidence && multi[ci] => {
                let mut v: Vec<u32> = m.iter().copied().filter(|&p| scan.row(p as usize).subject == subject).collect();
                if c.fact.valid_until.is_some()
                    && let Some(o) = object
                {
                    v.extend_from_slice(scan.with_subject_object(subject, o));
                    v.sort_unstable();
                    v.dedup();
                }
                Some(v)
            }
            _ => None,
        };
        let visit: &[u32] = few.as_deref().unwrap_or_else(|| scan.with_subject(subject));
        for &pos in visit {
            let pos = pos as usize;
            let live = &state.facts[pos];
            if !live.is_current(now) {
                continue;
            }
            let row = scan.row(pos);
            // Evidence of change: the same slot with another value, an
            // explicit ending or a polarity flip of the same proposition.
            let evidence = readings[ci].as_ref().is_some_and(|r| {
                may_change[ci].as_ref().is_none_or(|m| m.binary_search(&(pos as u32)).is_ok()) && change(&rules.read(live), r).is_some()
            });
            let Some(reason) = reason(c, live, row, [predicate, object], evidence, multi[ci], polarity[ci].as_ref(), rules) else {
                continue;
            };
            let cos = if reason == PairReason::SimilarContent && recording {
                // The same comparisons as below; the ones with `band_min` are
                // recorded once the cap is known.
                let Some(cos) = scan.cosine_unless_below(state, c.embedding, &norms[ci], pos, live.vector(), f64::NEG_INFINITY) else {
                    continue;
                };
                if cos.is_nan() {
                    continue;
                }
                if cos < rules.band_min {
                    if below_band[ci].is_none_or(|(b, bp)| cos > b || (cos == b && pos < bp)) {
                        below_band[ci] = Some((cos, pos));
                    }
                    continue;
                }
                if !trace::below(cos, rules.band_max) {
                    continue;
                }
                cos
            } else if reason == PairReason::SimilarContent {
                match scan.cosine_at_least(state, c.embedding, &norms[ci], pos, live.vector(), rules.band_min) {
                    Some(cos) if trace::below(cos, rules.band_max) => cos,
                    _ => continue,
                }
            } else {
                state.cosine(c.embedding, live.vector())
            };
            found[ci].push((cos, pos, reason));
        }
    }
    drop(scan);
    if recording {
        for (pairs, below) in found.iter().zip(below_band) {
            record_band(pairs, below, rules);
        }
    }
    collect(candidates, state, found, rules)
}

/// One candidate's pairs (cosine, position, reason) in live-fact order, as
/// the visit of every fact with its subject finds them once capped, for a
/// candidate that is not multi-valued and whose facts `change` can answer
/// for are all in `may_change` (`None`: no evidence rules). `ids`: the
/// candidate's interned subject, predicate and object (`u32::MAX`: no fact
/// has it).
///
/// The facts it may pair with otherwise than by the same predicate or a
/// similar content (the same object, evidence of change) are visited as
/// the full visit does. Every other fact with the subject pairs by the same
/// predicate (any cosine) or, with another predicate, by a cosine inside
/// the band; of those only the `max_per_candidate` nearest (ties: the
/// earlier fact) can survive the cap, so each is kept in a running top
/// list, and a fact whose [`Norms`] bound shows its cosine below the
/// list's last (or the band) is skipped without computing the cosine. The
/// cap then keeps exactly what it keeps from the full visit's pairs.
#[allow(clippy::too_many_arguments)]
fn pairs_by_predicate(
    c: &PairInput<'_>,
    [subject, predicate, object]: [u32; 3],
    may_change: Option<&[u32]>,
    reading: Option<&Reading>,
    norms: &Norms,
    state: &ConvState,
    scan: &crate::state::ScanIndex,
    now: Option<&str>,
    rules: &PairRules,
) -> Vec<(f64, usize, PairReason)> {
    let ids = [Some(predicate).filter(|&p| p != u32::MAX), Some(object).filter(|&o| o != u32::MAX)];
    let mut special: Vec<u32> =
        may_change.unwrap_or_default().iter().copied().filter(|&p| scan.row(p as usize).subject == subject).collect();
    if let Some(o) = ids[1] {
        special.extend_from_slice(scan.with_subject_object(subject, o));
    }
    special.sort_unstable();
    special.dedup();
    let mut out: Vec<(f64, usize, PairReason)> = Vec::new();
    for &pos in &special {
        let pos = pos as usize;
        let live = &state.facts[pos];
        if !live.is_current(now) {
            continue;
        }
        let row = scan.row(pos);
        let evidence = reading
            .is_some_and(|r| may_change.is_none_or(|m| m.binary_search(&(pos as u32)).is_ok()) && change(&rules.read(live), r).is_some());
        let Some(reason) = reason(c, live, row, ids, evidence, false, None, rules) else { continue };
        let cos = if reason == PairReason::SimilarContent {
            match scan.cosine_at_least(state, c.embedding, norms, pos, live.vector(), rules.band_min) {
                Some(cos) if trace::below(cos, rules.band_max) => cos,
                _ => continue,
            }
        } else {
            scan.cosine(state, c.embedding, norms, pos, live.vector())
        };
        out.push((cos, pos, reason));
    }
    // The rest, nearest first (the cap's order), at most `cap` of them.
    let cap = rules.max_per_candidate;
    let mut top: Vec<(f64, usize, PairReason)> = Vec::with_capacity(cap + 1);
    let probe = scan.probe8(c.embedding.values, norms);
    let mut bounds: Vec<f64> = Vec::new();
    for &q in scan.predicates_of(subject) {
        let same = q == predicate;
        let reason = if same { PairReason::SamePredicate } else { PairReason::SimilarContent };
        let positions = scan.with_subject_predicate(subject, q);
        // The 8-bit bounds where the index keeps 8-bit copies, else none
        // (each fact's bound is then the quarters' alone).
        match &probe {
            Some(p) => scan.cosine_bounds_8(p, positions, &mut bounds),
            None => bounds.clear(),
        }
        for (k, &pos) in positions.iter().enumerate() {
            let bound = bounds.get(k).copied().unwrap_or(f64::INFINITY);
            if special.binary_search(&pos).is_ok() {
                continue;
            }
            let pos = pos as usize;
            // What a fact must reach to join: the last kept one's cosine
            // once the list is full (an equal cosine joins only from an
            // earlier fact, so only a cosine certainly below it is skipped),
            // and the band's lower end for a similar content.
            let last = if top.len() < cap { f64::NEG_INFINITY } else { top.last().map_or(f64::NEG_INFINITY, |t| key(t.0)) };
            let floor = if same { last } else { last.max(rules.band_min) };
            if floor > f64::NEG_INFINITY && !scan.may_reach_under(bound, c.embedding.values, norms, pos, floor) {
                continue;
            }
            let live = &state.facts[pos];
            if !live.is_current(now) {
                continue;
            }
            let cos = scan.cosine(state, c.embedding, norms, pos, live.vector());
            let in_band = cos >= rules.band_min && cos < rules.band_max;
            if !same && !in_band {
                continue;
            }
            let pair = (cos, pos, reason);
            let at = top.partition_point(|t| rank(t, &pair).is_lt());
            if at < cap {
                top.insert(at, pair);
                top.truncate(cap);
            }
        }
    }
    out.extend(top);
    out.sort_by_key(|p| p.1);
    out
}

/// A cosine as the cap ranks it: a NaN lowest.
fn key(c: f64) -> f64 {
    if c.is_nan() { f64::NEG_INFINITY } else { c }
}

/// Records the comparisons with `band_min` that decide which of one
/// candidate's pairs (`pairs`, found with the band as it is) survive the
/// cap, given `below`, its nearest pair by similar content below the band
/// (cosine, position). A kept pair by similar content stays only while
/// `band_min` is at most its cosine; a pair the cap drops may leave the band
/// without changing the kept ones; and the pairs below the band join the
/// kept ones (the nearest first) only when `band_min` falls to the nearest's
/// cosine and the cap would keep it: it outranks the last kept pair, or the
/// cap is not reached. Any other `band_min` inside what is recorded keeps
/// the same pairs, so a sweep's trace is no narrower than the outcome.
fn record_band(pairs: &[(f64, usize, PairReason)], below: Option<(f64, usize)>, rules: &PairRules) {
    let mut kept = pairs.to_vec();
    keep_nearest(&mut kept, rules.max_per_candidate);
    for &(cos, _, reason) in &kept {
        if reason == PairReason::SimilarContent {
            trace::at_least(cos, rules.band_min);
        }
    }
    let Some((cos, pos)) = below else { return };
    let joins = pairs.len() < rules.max_per_candidate
        || kept.iter().max_by(|a, b| rank(a, b)).is_some_and(|last| rank(&(cos, pos, PairReason::SimilarContent), last).is_lt());
    if joins {
        trace::at_least(cos, rules.band_min);
    }
}

/// The cap's order of a candidate's pairs (cosine, live-fact position,
/// reason): evidence of change first, then the highest cosine (a NaN
/// lowest), then the earlier live fact; `Less` ranks first.
fn rank(a: &(f64, usize, PairReason), b: &(f64, usize, PairReason)) -> std::cmp::Ordering {
    (b.2 == PairReason::EvidenceOfChange)
        .cmp(&(a.2 == PairReason::EvidenceOfChange))
        .then(key(b.0).total_cmp(&key(a.0)))
        .then(a.1.cmp(&b.1))
}

/// Why candidate `c` pairs with the live fact `live` (with the same
/// subject; `row` its index row, `ids` the candidate's predicate and object
/// as the index's ids), or `None` when it does not. `evidence`: whether the
/// contents show a change; `multi`: whether the candidate's predicate is
/// multi-valued; `polarity`: a multi-valued candidate's polarity keys (off
/// `evidence_of_change`). A [`PairReason::SimilarContent`] pairs only if the
/// cosine falls in the band (the caller's).
#[allow(clippy::too_many_arguments)]
fn reason(
    c: &PairInput<'_>,
    live: &FactRec,
    row: &ScanRow,
    [predicate, object]: [Option<u32>; 2],
    evidence: bool,
    multi: bool,
    polarity: Option<&PolarityKeys>,
    rules: &PairRules,
) -> Option<PairReason> {
    Some(if rules.evidence {
        if object == Some(row.object) && c.fact.valid_until.is_some() {
            PairReason::EndsRelationship
        } else if evidence {
            PairReason::EvidenceOfChange
        } else if object == Some(row.object) || multi {
            // Multi-valued, or the same object without an ending: both stand.
            return None;
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
            return None;
        }
    } else if let Some(p) = polarity
        && !polarity_conflict(
            p,
            &live.polarity(&rules.antonyms),
            &SharedWords {
                min: rules.min_shared_tokens,
                content_only: rules.content_words_only,
                facts: [(&c.fact.subject, &c.fact.object), (&live.subject, &live.object)],
            },
        )
    {
        // Multi-valued: both facts can stand.
        return None;
    } else if predicate == Some(row.predicate) {
        PairReason::SamePredicate
    } else {
        PairReason::SimilarContent
    })
}

/// Each candidate's pairs capped ([`keep_nearest`]) and numbered, in
/// candidate, then live-fact order.
fn collect(
    candidates: &[PairInput<'_>],
    state: &ConvState,
    found: Vec<Vec<(f64, usize, PairReason)>>,
    rules: &PairRules,
) -> Vec<FoundPair> {
    let mut out = Vec::new();
    for (ci, (c, mut pairs)) in candidates.iter().zip(found).enumerate() {
        keep_nearest(&mut pairs, rules.max_per_candidate);
        for (cos, pos, reason) in pairs {
            let live = &state.facts[pos];
            let index = out.len();
            out.push(FoundPair {
                candidate: ci,
                live_id: live.id.clone(),
                live_pos: pos,
                reason,
                pair: JudgePair { index, live: PairFact::of(live), candidate: c.fact.clone(), cosine: cos },
            });
        }
    }
    out
}

/// [`find_pairs`] as one scan of every current fact with every candidate,
/// computing every reading's change: what the indexed search must answer
/// exactly as.
#[cfg(test)]
pub(crate) fn find_pairs_scan(candidates: &[PairInput<'_>], state: &ConvState, now: Option<&str>, rules: &PairRules) -> Vec<FoundPair> {
    let scan = state.scan();
    let mut found: Vec<Vec<(f64, usize, PairReason)>> = vec![Vec::new(); candidates.len()];
    for (pos, live) in state.facts.iter().enumerate().filter(|(_, f)| f.is_current(now)) {
        let row = scan.row(pos);
        for (ci, c) in candidates.iter().enumerate() {
            if scan.id(&c.keys.subject) != Some(row.subject) {
                continue;
            }
            let multi = rules.is_multi_valued(&c.keys.predicate);
            let polarity = (!rules.evidence && multi).then(|| PolarityKeys::of(&c.fact.content, &rules.antonyms));
            let evidence = rules.evidence && {
                let object = rules.is_single_valued(&c.keys.predicate).then_some(c.fact.object.as_str());
                let r = Reading::of_fact(&c.fact.subject, &c.fact.predicate, object, &c.fact.content, rules.antonyms.pairs());
                change(&rules.read(live), &r).is_some()
            };
            let ids = [scan.id(&c.keys.predicate), scan.id(&c.keys.object)];
            let Some(reason) = reason(c, live, row, ids, evidence, multi, polarity.as_ref(), rules) else { continue };
            let cos = state.cosine(c.embedding, live.vector());
            if reason == PairReason::SimilarContent && !(cos >= rules.band_min && cos < rules.band_max) {
                continue;
            }
            found[ci].push((cos, pos, reason));
        }
    }
    drop(scan);
    collect(candidates, state, found, rules)
}

/// Keeps the `cap` nearest of one candidate's pairs (cosine, live-fact
/// position, reason): highest cosine first, a NaN lowest, ties to the
/// earlier live fact; the kept pairs stay in live-fact order.
fn keep_nearest(pairs: &mut Vec<(f64, usize, PairReason)>, cap: usize) {
    if pairs.len() <= cap {
        return;
    }
    // Pairs with evidence of change first: the cap never drops them for
    // nearer pairs the rules judge would let stand.
    pairs.sort_by(rank);
    pairs.truncate(cap);
    pairs.sort_by_key(|p| p.1);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::random::{Rng, fact, fact_count, fact_rec};

    /// A random conversation's state (1 to 80 facts) and 1 to 8 random
    /// candidates (some with an ending) with their hashed vectors and keys.
    struct RandomCase {
        state: ConvState,
        raw: Vec<PairFact>,
        embs: Vec<Vec<f32>>,
        keys: Vec<FactKeys>,
    }

    impl RandomCase {
        fn new(r: &mut Rng, dims: usize, round: usize) -> RandomCase {
            let mut state = ConvState::default();
            let facts = fact_count(r, round);
            state.facts.extend((0..facts).map(|i| fact_rec(r, i, dims)));
            let raw: Vec<PairFact> = (0..r.below(8) + 1)
                .map(|_| {
                    let (subject, predicate, object, content) = fact(r);
                    PairFact { subject, predicate, object, content, valid_until: r.chance(15).then(|| "2024-06-01".to_string()) }
                })
                .collect();
            let embs = raw.iter().map(|f| crate::embed::hashed::HashedEmbedder::new(dims).embed_one(&f.content)).collect();
            let keys = raw.iter().map(|f| FactKeys::of(&f.subject, &f.predicate, &f.object)).collect();
            RandomCase { state, raw, embs, keys }
        }

        fn inputs(&self) -> Vec<PairInput<'_>> {
            self.raw
                .iter()
                .zip(&self.embs)
                .zip(&self.keys)
                .map(|((f, e), k)| PairInput { fact: f.clone(), embedding: Vector { slot: None, values: e }, keys: k })
                .collect()
        }
    }

    /// The indexed pairing (by subject, and by the readings' change keys)
    /// finds exactly the pairs a scan of every current fact finds, on
    /// random conversations, with and without the evidence rules.
    #[test]
    fn the_indexed_pairing_finds_what_the_scan_finds() {
        let mut r = Rng(0x2545_f491_4f6c_dd1d);
        let mut found = [0usize; 2];
        let mut reasons = std::collections::BTreeSet::new();
        for round in 0..60 {
            let dims = [64, 256][round % 2];
            let mut cfg = Config::default();
            cfg.soda.evidence_of_change = round % 3 != 0;
            cfg.soda.max_pairs_per_candidate = [16, 2][round % 2];
            cfg.soda.contradiction_band_min = [0.8, 0.3][round % 2];
            let rules = PairRules::new(&cfg);
            let random = RandomCase::new(&mut r, dims, round);
            let (st, inputs) = (&random.state, random.inputs());
            let probe = &st.facts[0].embedding;
            assert_eq!(st.scan().probe8(probe, &Norms::of(probe)).is_some(), round % 4 == 3, "round {round}: 8-bit copies");
            for now in [None, Some("2024-03-01")] {
                let indexed = find_pairs(&inputs, st, now, &rules);
                assert_eq!(indexed, find_pairs_scan(&inputs, st, now, &rules), "round {round}, now {now:?}");
                found[usize::from(cfg.soda.evidence_of_change)] += indexed.len();
                reasons.extend(indexed.iter().map(|p| format!("{:?}", p.reason)));
            }
        }
        assert!(found[0] > 50 && found[1] > 50, "pairs found: {found:?}");
        assert!(reasons.len() >= 5, "the inputs reach most reasons: {reasons:?}");
    }

    /// Recorded for a sweep's trace, pairing leaves intervals of
    /// `band_min` and `band_max` inside which every pair of values finds
    /// the same pairs, on random conversations; and the cap lets
    /// `band_min`'s interval reach past cosines of pairs it would drop.
    #[test]
    fn a_recorded_pairing_finds_the_same_pairs_anywhere_inside_its_intervals() {
        use crate::state::trace::{Recorder, recording};
        let mut r = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut checked, mut widened) = (0usize, 0usize);
        for round in 0..60 {
            let dims = [64, 256][round % 2];
            let mut cfg = Config::default();
            cfg.soda.evidence_of_change = round % 3 != 0;
            cfg.soda.max_pairs_per_candidate = [2, 4, 16][round % 3];
            cfg.soda.contradiction_band_min = [0.3, 0.5][round % 2];
            cfg.soda.near_dup_threshold = 0.9;
            // Short conversations only: a recording searches without bounds.
            let random = RandomCase::new(&mut r, dims, 0);
            let (st, inputs) = (&random.state, random.inputs());
            let at = |band_min: f64, band_max: f64, cap: usize| {
                let mut c = cfg.clone();
                c.soda.contradiction_band_min = band_min;
                c.soda.near_dup_threshold = band_max;
                c.soda.max_pairs_per_candidate = cap;
                find_pairs(&inputs, st, None, &PairRules::new(&c))
            };
            let values = vec![cfg.soda.contradiction_band_min, cfg.soda.near_dup_threshold];
            let (pairs, rec) = recording(Recorder::new(values), || find_pairs(&inputs, st, None, &PairRules::new(&cfg)));
            let rec = rec.expect("recorder");
            let [lo, hi] = rec.intervals() else { panic!("two intervals") };
            assert_eq!(pairs, at(cfg.soda.contradiction_band_min, 0.9, cfg.soda.max_pairs_per_candidate), "round {round}: as unrecorded");
            let cap = cfg.soda.max_pairs_per_candidate;
            for t in (0..=100).map(|i| f64::from(i) / 100.0) {
                for u in [0.6, 0.9, 1.0] {
                    if t <= u && lo.contains(t) && hi.contains(u) {
                        assert_eq!(at(t, u, cap), pairs, "round {round}: band [{t}, {u})");
                        checked += 1;
                    }
                }
            }
            // Uncapped, some band_min inside the interval finds more (or fewer) pairs: the cap widened it.
            let uncapped = at(cfg.soda.contradiction_band_min, 0.9, 1000).len();
            if (0..=90).map(|i| f64::from(i) / 100.0).any(|t| lo.contains(t) && at(t, 0.9, 1000).len() != uncapped) {
                widened += 1;
            }
        }
        assert!(checked > 500, "values checked inside the intervals: {checked}");
        assert!(widened > 0, "no interval reached past a pair the cap drops");
    }
}
