//! Stage 3, dedupe. Exact: same content hash or identical
//! subject|predicate|object against current live facts and earlier candidates
//! of the batch; an exact match that carries validUntil is a *closure* (the
//! matched fact gets the validUntil, and closing the last link to an entity
//! closes the facts anchored on it). Near duplicate: cosine ≥
//! `near_dup_threshold` against current live facts and earlier batch survivors.

use serde::{Deserialize, Serialize};

use super::Batch;
use crate::model::proposition::{Reading, change};
use crate::pipeline::Config;
use crate::pipeline::judge::Antonyms;
use crate::pipeline::soda::SodaConfig;
use crate::state::{ConvState, Norms, Vector, hash64, trace};

/// What a candidate is compared with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "in", content = "id", rename_all = "snake_case")]
pub enum Target {
    /// A live fact of the store, by id.
    Live(String),
    /// An earlier candidate of this episode, by index.
    Batch(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchBy {
    Hash,
    Spo,
    /// The same subject and a restatement of the content
    /// (`evidence_of_change`, [`Reading::restates`]).
    Restatement,
}

/// Stage 3's decision for one candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum DedupeOutcome {
    Survivor,
    ExactDuplicate {
        of: Target,
        by: MatchBy,
    },
    /// Sets `valid_until` on the matched fact, and on `cascade` (live facts
    /// anchored on an entity whose last link this closes).
    Closure {
        of: Target,
        valid_until: String,
        cascade: Vec<String>,
    },
    NearDuplicate {
        of: Target,
        cosine: f64,
    },
}

/// Stage 3's decisions for one episode.
#[derive(Debug, Clone, PartialEq)]
pub struct Deduped {
    /// The candidates past the noise filter, in order (what [`Target::Batch`] indexes).
    pub kept: Vec<usize>,
    /// Per candidate: its outcome, or `None` for noise (never deduplicated).
    pub outcomes: Vec<Option<DedupeOutcome>>,
}

impl Deduped {
    /// The candidates that survived, in order.
    pub fn survivors(&self) -> impl Iterator<Item = usize> + '_ {
        self.outcomes.iter().enumerate().filter(|(_, o)| **o == Some(DedupeOutcome::Survivor)).map(|(i, _)| i)
    }
}

/// Stage 3 for one episode: every candidate past the noise filter against
/// the live facts and the batch (all survive when dedupe is disabled).
pub fn stage(batch: &Batch<'_>, state: &ConvState, now: Option<&str>, cfg: &Config) -> Deduped {
    let kept: Vec<usize> = (0..batch.len()).filter(|i| !batch.is_noise(*i)).collect();
    let antonyms = Antonyms::interned(&cfg.soda.antonyms);
    let items: Vec<DedupeItem<'_>> = kept
        .iter()
        .map(|&i| {
            let f = &batch.facts[i];
            DedupeItem {
                hash: &batch.hashes[i].hash,
                subject: &f.fact.subject,
                predicate: &f.fact.predicate,
                object: &f.fact.object,
                valid_until: f.fact.valid_until.as_deref(),
                object_entity: f.object_entity.as_deref(),
                embedding: batch.vector(i),
                spo: &batch.keys[i].spo,
                reading: cfg.soda.evidence_of_change.then(|| {
                    let object = cfg.soda.is_single_valued(&f.fact.predicate).then_some(f.fact.object.as_str());
                    crate::state::read_fact(&f.fact.subject, &f.fact.predicate, object, &f.fact.content, &antonyms)
                }),
            }
        })
        .collect();
    let evidence = cfg.soda.evidence_of_change.then_some(Evidence { antonyms: &antonyms, cfg: &cfg.soda });
    let decided = if cfg.soda.dedup_enabled {
        dedupe(&items, state, now, cfg.soda.near_dup_threshold, evidence)
    } else {
        vec![DedupeOutcome::Survivor; items.len()]
    };
    let mut outcomes = vec![None; batch.len()];
    for (&i, d) in kept.iter().zip(decided) {
        outcomes[i] = Some(d);
    }
    Deduped { kept, outcomes }
}

/// What dedupe needs of each candidate.
#[derive(Debug, Clone)]
pub struct DedupeItem<'a> {
    pub hash: &'a str,
    pub subject: &'a str,
    pub predicate: &'a str,
    pub object: &'a str,
    pub valid_until: Option<&'a str>,
    pub object_entity: Option<&'a str>,
    pub embedding: Vector<'a>,
    /// [`FactKeys::spo`](crate::state::FactKeys::spo) of subject, predicate and object.
    pub spo: &'a str,
    /// The content's reading, when restatements merge (`evidence_of_change`).
    pub reading: Option<Reading>,
}

/// Decides every candidate of a batch, in order. `now` is the episode date.
/// What the evidence-of-change rules need in stage 3: the antonym list the
/// readings were made against and the single-valued predicates.
#[derive(Clone, Copy)]
pub struct Evidence<'a> {
    pub antonyms: &'a Antonyms,
    pub cfg: &'a SodaConfig,
}

impl Evidence<'_> {
    /// A current fact's reading.
    fn read<'f>(&self, f: &'f crate::state::FactRec) -> std::borrow::Cow<'f, Reading> {
        f.reading(self.antonyms, self.cfg.is_single_valued(&f.predicate))
    }
}

/// With `evidence` (`evidence_of_change`), a restatement of a current fact
/// or an earlier survivor with the same subject is an exact duplicate too
/// ([`MatchBy::Restatement`]), and a near duplicate by cosine that shows
/// evidence of change against its match is not one (it survives, for the
/// judge).
pub fn dedupe(
    items: &[DedupeItem<'_>],
    state: &ConvState,
    now: Option<&str>,
    near_dup_threshold: f64,
    evidence: Option<Evidence<'_>>,
) -> Vec<DedupeOutcome> {
    let current = &state.facts;
    let mut out: Vec<DedupeOutcome> = Vec::with_capacity(items.len());
    // Batch survivors' validUntil as closures of this batch set it.
    let mut batch_until: Vec<Option<String>> = items.iter().map(|i| i.valid_until.map(str::to_string)).collect();
    let norms: Vec<Norms> = items.iter().map(|i| Norms::of(i.embedding.values)).collect();
    let (live_exact, live_near) = against_live(items, &norms, now, state, near_dup_threshold, evidence);
    let recording = trace::active();
    for (i, item) in items.iter().enumerate() {
        let key = item.spo;
        if let Some((k, by)) = live_exact[i] {
            let f = &current[k];
            out.push(match item.valid_until {
                Some(until) if f.valid_until.as_deref() != Some(until) => DedupeOutcome::Closure {
                    of: Target::Live(f.id.clone()),
                    valid_until: until.to_string(),
                    cascade: closure_cascade(state, &[f.id.as_str()], now),
                },
                _ => DedupeOutcome::ExactDuplicate { of: Target::Live(f.id.clone()), by },
            });
            continue;
        }
        let survivors = (0..i).filter(|j| out[*j] == DedupeOutcome::Survivor);
        let batch_exact = survivors.clone().find_map(|j| {
            let o = &items[j];
            if o.hash == item.hash {
                Some((j, MatchBy::Hash))
            } else if o.spo == key
                && (item.valid_until.is_some() || item.reading.as_ref().zip(o.reading.as_ref()).is_none_or(|(r, o)| change(o, r).is_none()))
            {
                Some((j, MatchBy::Spo))
            } else if let (Some(a), Some(b)) = (&item.reading, &o.reading)
                && item.subject.trim().eq_ignore_ascii_case(o.subject.trim())
                && a.restates(b)
            {
                Some((j, MatchBy::Restatement))
            } else {
                None
            }
        });
        if let Some((j, by)) = batch_exact {
            out.push(match item.valid_until {
                Some(until) if batch_until[j].as_deref() != Some(until) => {
                    batch_until[j] = Some(until.to_string());
                    DedupeOutcome::Closure { of: Target::Batch(j), valid_until: until.to_string(), cascade: vec![] }
                }
                _ => DedupeOutcome::ExactDuplicate { of: Target::Batch(j), by },
            });
            continue;
        }
        // Live facts first, then batch survivors; the first of equal best wins.
        enum Near {
            Live(usize),
            Batch(usize),
        }
        // The nearest (the first of equal best), then one comparison with
        // the threshold: the same outcome as keeping only the cosines at or
        // above it, and a sweep's trace records only what decided it.
        let floor = if recording { f64::NEG_INFINITY } else { near_dup_threshold };
        let near = live_near[i]
            .map(|(c, k)| (c, Near::Live(k)))
            .into_iter()
            .chain(survivors.filter_map(|j| {
                let c = state.cosine_unless_below(item.embedding, &norms[i], items[j].embedding, &norms[j], floor)?;
                Some((c, Near::Batch(j)))
            }))
            .filter(|(c, _)| !c.is_nan())
            .fold(None::<(f64, Near)>, |best, (c, t)| match best {
                Some((bc, _)) if bc >= c => best,
                _ => Some((c, t)),
            })
            .filter(|(c, _)| trace::at_least(*c, near_dup_threshold));
        out.push(match near {
            // Evidence of change is no duplicate, however near.
            Some((_, Near::Live(k)))
                if evidence.zip(item.reading.as_ref()).is_some_and(|(e, r)| change(&e.read(&current[k]), r).is_some()) =>
            {
                DedupeOutcome::Survivor
            }
            Some((_, Near::Batch(j)))
                if item.reading.as_ref().zip(items[j].reading.as_ref()).is_some_and(|(r, o)| change(o, r).is_some()) =>
            {
                DedupeOutcome::Survivor
            }
            Some((c, Near::Live(k))) => DedupeOutcome::NearDuplicate { of: Target::Live(current[k].id.clone()), cosine: c },
            Some((c, Near::Batch(j))) => DedupeOutcome::NearDuplicate { of: Target::Batch(j), cosine: c },
            None => DedupeOutcome::Survivor,
        });
    }
    out
}

/// A current fact (its position in `ConvState::facts`) an item matches exactly, and how.
type ExactLive = (usize, MatchBy);
/// The cosine of the nearest current fact at or above the threshold, and its position.
type NearLive = (f64, usize);

impl Evidence<'_> {
    /// The name of this way of reading facts in the [`ScanIndex`]'s reading
    /// indexes: the single-valued predicates (the antonym list is the other half).
    ///
    /// [`ScanIndex`]: crate::state::ScanIndex
    fn sig(&self) -> (u64, usize) {
        let list = self.cfg.single_valued_predicates.join("\u{1f}");
        (hash64(&format!("dedupe\u{1e}{list}")), self.antonyms.id())
    }
}

/// Per item, what the current facts (by position, in order) hold for it:
/// the first with the same content hash or, failing that, the same s|p|o
/// (unless the contents show a change) or a restatement; and, for an item
/// with none, the nearest at or above `threshold` (the first of equal best).
///
/// The exact matches are looked up in the state's [`ScanIndex`] (by hash,
/// by s|p|o, and by the readings' restatement and proposition keys): only
/// facts found there can match, and each is checked as a scan of every fact
/// would check it, in order. The near search then passes over the current
/// facts once for the items left, reading each fact's norms and first half
/// from the index.
///
/// [`ScanIndex`]: crate::state::ScanIndex
fn against_live(
    items: &[DedupeItem<'_>],
    norms: &[Norms],
    now: Option<&str>,
    state: &ConvState,
    threshold: f64,
    evidence: Option<Evidence<'_>>,
) -> (Vec<Option<ExactLive>>, Vec<Option<NearLive>>) {
    let mut exact: Vec<Option<ExactLive>> = vec![None; items.len()];
    let mut near: Vec<Option<NearLive>> = vec![None; items.len()];
    let mut scan = state.scan();
    if let Some(e) = evidence {
        scan.sync_readings(e.sig(), &state.facts, |f| e.read(f));
    }
    let readings = evidence.and_then(|e| scan.readings(e.sig()));
    let mut found: Vec<u32> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        found.clear();
        found.extend_from_slice(scan.with_hash(hash64(item.hash)));
        found.extend_from_slice(scan.with_spo(hash64(item.spo)));
        if let (Some(ri), Some(r)) = (readings, &item.reading) {
            found.extend_from_slice(ri.restatement(r.restatement()));
            if let Some(p) = r.proposition() {
                found.extend_from_slice(ri.proposition(p));
            }
        }
        found.sort_unstable();
        found.dedup();
        exact[i] = found.iter().map(|&p| p as usize).find_map(|pos| {
            let f = &state.facts[pos];
            if !f.is_current(now) {
                return None;
            }
            exact_match(item, f, evidence).map(|by| (pos, by))
        });
    }
    if exact.iter().all(Option::is_some) {
        return (exact, near);
    }
    // Recording a sweep's decision trace, the search keeps the nearest fact
    // whatever its cosine: [`dedupe`] compares only the best against the
    // threshold, the one comparison the outcome depends on.
    // Whether a fact is current is read from the fact (its own memory)
    // only once some item's bound, read from the index, lets it through.
    let recording = trace::active();
    let left: Vec<usize> = (0..items.len()).filter(|&i| exact[i].is_none()).collect();
    // Each item's cosine bounds against every fact, in 8 bits (none while
    // recording: the floor starts at minus infinity there).
    let bounds: Vec<Option<std::sync::Arc<Vec<f64>>>> = (0..items.len())
        .map(|i| {
            let probe = (exact[i].is_none() && !recording).then(|| scan.probe8(items[i].embedding.values, &norms[i]))??;
            scan.cosine_bounds_8_all(&probe)
        })
        .collect();
    for (pos, f) in state.facts.iter().enumerate() {
        let mut current = None;
        for &i in &left {
            let item = &items[i];
            let best = near[i].map_or(f64::NEG_INFINITY, |(best, _)| best);
            let floor = if recording { best } else { best.max(threshold) };
            if floor > f64::NEG_INFINITY
                && !scan.may_reach_under(
                    bounds[i].as_ref().and_then(|b| b.get(pos)).copied().unwrap_or(f64::INFINITY),
                    item.embedding.values,
                    &norms[i],
                    pos,
                    floor,
                )
            {
                continue;
            }
            if !*current.get_or_insert_with(|| f.is_current(now)) {
                break;
            }
            if let Some(c) = scan.cosine_unless_below(state, item.embedding, &norms[i], pos, f.vector(), f64::NEG_INFINITY)
                && (recording || c >= threshold)
                && c > best
            {
                near[i] = Some((c, pos));
            }
        }
    }
    (exact, near)
}

/// How `item` matches the current fact `f` exactly, if it does: the same
/// content hash, else the same s|p|o (unless the contents show a change,
/// "… is 7" / "… is 8"; with a validUntil it is a closure, the extractor's
/// own ending), else (with `evidence`) the same subject and a restatement.
fn exact_match(item: &DedupeItem<'_>, f: &crate::state::FactRec, evidence: Option<Evidence<'_>>) -> Option<MatchBy> {
    if f.hash == item.hash {
        Some(MatchBy::Hash)
    } else if f.spo_key() == item.spo
        && (item.valid_until.is_some() || evidence.zip(item.reading.as_ref()).is_none_or(|(e, r)| change(&e.read(f), r).is_none()))
    {
        Some(MatchBy::Spo)
    } else if let (Some(e), Some(r)) = (evidence, &item.reading)
        && f.subject.trim().eq_ignore_ascii_case(item.subject.trim())
        && e.read(f).restates(r)
    {
        Some(MatchBy::Restatement)
    } else {
        None
    }
}

/// [`against_live`] as one scan of every current fact, in order, with the
/// items inside: what the index must answer exactly as.
#[cfg(test)]
fn against_live_scan(
    items: &[DedupeItem<'_>],
    norms: &[Norms],
    now: Option<&str>,
    state: &ConvState,
    threshold: f64,
    evidence: Option<Evidence<'_>>,
) -> (Vec<Option<ExactLive>>, Vec<Option<NearLive>>) {
    let mut exact: Vec<Option<ExactLive>> = vec![None; items.len()];
    let mut near: Vec<Option<NearLive>> = vec![None; items.len()];
    for (pos, f) in state.facts.iter().enumerate().filter(|(_, f)| f.is_current(now)) {
        for (i, item) in items.iter().enumerate() {
            if exact[i].is_some() {
                continue;
            }
            if let Some(by) = exact_match(item, f, evidence) {
                exact[i] = Some((pos, by));
            } else if let Some(c) = state.cosine_at_least(item.embedding, &norms[i], f.vector(), &Norms::of(&f.embedding), threshold)
                && near[i].is_none_or(|(best, _)| c > best)
            {
                near[i] = Some((c, pos));
            }
        }
    }
    (exact, near)
}

/// Live facts anchored (by subject) on an entity whose last current link ends
/// when the facts `ending` end. A link is a current relationship whose object
/// is the entity.
pub fn closure_cascade(state: &ConvState, ending: &[&str], now: Option<&str>) -> Vec<String> {
    let mut ended: Vec<String> = ending.iter().map(|s| s.to_string()).collect();
    let mut cascade = Vec::new();
    let mut frontier: Vec<String> = ended.clone();
    while let Some(id) = frontier.pop() {
        let Some(entity) = state.fact(&id).and_then(|f| f.object_entity.clone()) else { continue };
        let still_linked =
            state.facts.iter().any(|f| f.is_current(now) && !ended.contains(&f.id) && f.object_entity.as_deref() == Some(entity.as_str()));
        if still_linked {
            continue;
        }
        let anchored: Vec<String> = state
            .facts
            .iter()
            .filter(|f| f.is_current(now) && !ended.contains(&f.id) && f.subject_entity.as_deref() == Some(entity.as_str()))
            .map(|f| f.id.clone())
            .collect();
        for id in anchored {
            ended.push(id.clone());
            cascade.push(id.clone());
            frontier.push(id);
        }
    }
    cascade
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::cosine;
    use crate::state::FactRec;
    use crate::types::FactKind;

    fn live(id: &str, s: &str, p: &str, o: &str, hash: &str, emb: Vec<f32>) -> FactRec {
        let mut f = FactRec { hash: hash.into(), embedding: emb, ..FactRec::for_test(id, s, p, o) };
        f.kind = FactKind::Relationship;
        f
    }

    fn item<'a>(hash: &'a str, s: &'a str, p: &'a str, o: &'a str, until: Option<&'a str>, emb: &'a [f32]) -> DedupeItem<'a> {
        // Tests hold items for a whole call: leak the small key rather than thread a buffer.
        let spo: &'a str = Box::leak(crate::state::FactKeys::of(s, p, o).spo.into_boxed_str());
        DedupeItem {
            hash,
            subject: s,
            predicate: p,
            object: o,
            valid_until: until,
            object_entity: None,
            embedding: Vector { slot: None, values: emb },
            spo,
            reading: None,
        }
    }

    #[test]
    fn exact_by_hash_and_by_spo_against_live() {
        let mut st = ConvState::default();
        st.facts.push(live("f1", "Alice", "works at", "Google", "h1", vec![1.0, 0.0]));
        let e = [0.0f32, 1.0];
        let out = dedupe(
            &[item("h1", "x", "y", "z", None, &e), item("h9", "alice", "Works At", "google.", None, &e)],
            &st,
            Some("2024-01-01"),
            0.95,
            None,
        );
        assert_eq!(out[0], DedupeOutcome::ExactDuplicate { of: Target::Live("f1".into()), by: MatchBy::Hash });
        assert_eq!(out[1], DedupeOutcome::ExactDuplicate { of: Target::Live("f1".into()), by: MatchBy::Spo });
    }

    #[test]
    fn restatements_are_exact_duplicates_on_evidence_of_change() {
        let antonyms = Antonyms::interned(&[]);
        let mut st = ConvState::default();
        let mut dogs = live("f1", "Maya", "states", "Maya has two dogs", "h1", vec![1.0, 0.0]);
        dogs.content = "Maya has two dogs".into();
        st.facts.push(dogs);
        let e = [0.0f32, 1.0];
        let restated = |hash: &'static str, content: &'static str, subject: &'static str| DedupeItem {
            reading: Some(Reading::of(subject, "states", content, antonyms.pairs())),
            ..item(hash, subject, "states", content, None, &e)
        };
        let items = [
            restated("h2", "Maya has 2 dogs", "Maya"),
            restated("h3", "Maya has 3 dogs", "Maya"),
            restated("h4", "Maya has three dogs", "Maya"),
        ];
        let cfg = SodaConfig::default();
        let evidence = Some(Evidence { antonyms: &antonyms, cfg: &cfg });
        let out = dedupe(&items, &st, None, 0.95, evidence);
        assert_eq!(out[0], DedupeOutcome::ExactDuplicate { of: Target::Live("f1".into()), by: MatchBy::Restatement });
        assert_eq!(out[1], DedupeOutcome::Survivor, "another number is another fact");
        assert_eq!(out[2], DedupeOutcome::ExactDuplicate { of: Target::Batch(1), by: MatchBy::Restatement });
        // Another subject never restates; without the rules only hash, s|p|o and cosine merge.
        assert_eq!(dedupe(&[restated("h5", "Maya has 2 dogs", "Omar")], &st, None, 0.95, evidence)[0], DedupeOutcome::Survivor);
        assert_eq!(dedupe(&items[..1], &st, None, 0.95, None)[0], DedupeOutcome::Survivor);
    }

    #[test]
    fn exact_and_near_within_batch_against_survivors_only() {
        let st = ConvState::default();
        let a = [1.0f32, 0.0];
        let b = [0.96f32, 0.28];
        let c = [0.0f32, 1.0];
        let out = dedupe(
            &[
                item("h1", "A", "p", "o", None, &a),
                item("h1", "A", "p", "other", None, &c),
                item("h2", "A", "q", "o2", None, &b),
                item("h3", "A", "r", "o3", None, &c),
            ],
            &st,
            None,
            0.95,
            None,
        );
        assert_eq!(out[0], DedupeOutcome::Survivor);
        assert_eq!(out[1], DedupeOutcome::ExactDuplicate { of: Target::Batch(0), by: MatchBy::Hash });
        assert!(matches!(out[2], DedupeOutcome::NearDuplicate { of: Target::Batch(0), .. }));
        assert_eq!(out[3], DedupeOutcome::Survivor, "near-dup compares with survivors, not with rejected candidates");
    }

    #[test]
    fn near_duplicate_threshold_is_inclusive_against_live() {
        let mut st = ConvState::default();
        st.facts.push(live("f1", "A", "p", "o", "h1", vec![1.0, 0.0]));
        let at = [0.95f32, (1.0f32 - 0.95 * 0.95).sqrt()];
        let below = [0.94f32, (1.0f32 - 0.94 * 0.94).sqrt()];
        let threshold = cosine(&at, &[1.0, 0.0]);
        let out = dedupe(&[item("h2", "A", "q", "x", None, &at), item("h3", "A", "r", "y", None, &below)], &st, None, threshold, None);
        assert!(matches!(out[0], DedupeOutcome::NearDuplicate { .. }));
        assert_eq!(out[1], DedupeOutcome::Survivor);
    }

    #[test]
    fn closure_sets_valid_until_and_cascades_over_last_link() {
        let mut st = ConvState::default();
        let mut drives = live("f1", "Alice", "drives", "Honda Civic", "h1", vec![1.0, 0.0]);
        drives.object_entity = Some("e1".into());
        let mut color = live("f2", "Honda Civic", "has color", "red", "h2", vec![0.0, 1.0]);
        color.subject_entity = Some("e1".into());
        color.kind = FactKind::Literal;
        st.facts.push(drives);
        st.facts.push(color);
        let e = [0.6f32, 0.8];
        let out = dedupe(&[item("h9", "Alice", "drives", "Honda Civic", Some("2024-03-01"), &e)], &st, Some("2024-03-01"), 0.95, None);
        assert_eq!(
            out[0],
            DedupeOutcome::Closure { of: Target::Live("f1".into()), valid_until: "2024-03-01".into(), cascade: vec!["f2".into()] }
        );
    }

    #[test]
    fn no_cascade_while_another_link_remains() {
        let mut st = ConvState::default();
        for (id, s) in [("f1", "Alice"), ("f3", "Bob")] {
            let mut d = live(id, s, "drives", "Honda Civic", id, vec![1.0, 0.0]);
            d.object_entity = Some("e1".into());
            st.facts.push(d);
        }
        let mut color = live("f2", "Honda Civic", "has color", "red", "h2", vec![0.0, 1.0]);
        color.subject_entity = Some("e1".into());
        st.facts.push(color);
        assert!(closure_cascade(&st, &["f1"], None).is_empty());
        assert_eq!(closure_cascade(&st, &["f1", "f3"], None), vec!["f2".to_string()]);
    }

    /// The indexed search answers exactly as a scan of every current fact,
    /// on random conversations: with and without the evidence rules, at
    /// several thresholds, for items that restate, repeat or resemble facts.
    #[test]
    fn the_indexed_search_answers_as_the_scan_does() {
        use crate::state::random::{Rng, fact, fact_count, fact_rec};
        let cfg = SodaConfig::default();
        let antonyms = Antonyms::interned(&cfg.antonyms);
        let mut r = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut hits, mut restated, mut near) = (0, 0, 0);
        for round in 0..60 {
            let dims = [64, 256][round % 2];
            let mut st = ConvState::default();
            let facts = fact_count(&mut r, round);
            st.facts.extend((0..facts).map(|i| fact_rec(&mut r, i, dims)));
            let probe = &st.facts[0].embedding;
            assert_eq!(
                st.scan().probe8(probe, &Norms::of(probe)).is_some(),
                round % 4 == 3,
                "round {round}: 8-bit copies from {facts} facts"
            );
            let evidence = (round % 3 != 0).then_some(Evidence { antonyms: &antonyms, cfg: &cfg });
            let threshold = [0.95, 0.8, 0.5][round % 3];
            // Items: copies of facts (some respelt), and fresh ones.
            let raw: Vec<(String, String, String, String, Option<&str>)> = (0..r.below(12) + 1)
                .map(|_| {
                    let (s, p, o, c) = if r.chance(50) {
                        let f = &st.facts[r.below(facts)];
                        let c = if r.chance(30) { c_respelt(&f.content) } else { f.content.clone() };
                        (f.subject.clone(), f.predicate.clone(), f.object.clone(), c)
                    } else {
                        fact(&mut r)
                    };
                    (s, p, o, c, r.chance(10).then_some("2024-06-01"))
                })
                .collect();
            let embs: Vec<Vec<f32>> = raw.iter().map(|x| crate::embed::hashed::HashedEmbedder::new(dims).embed_one(&x.3)).collect();
            let items: Vec<DedupeItem<'_>> = raw
                .iter()
                .zip(&embs)
                .map(|((s, p, o, c, until), e)| {
                    let hash: &str = Box::leak(c.to_lowercase().into_boxed_str());
                    DedupeItem {
                        reading: evidence.map(|ev| {
                            let object = ev.cfg.is_single_valued(p).then_some(o.as_str());
                            Reading::of_fact(s, p, object, c, ev.antonyms.pairs())
                        }),
                        ..item(hash, s, p, o, *until, e)
                    }
                })
                .collect();
            let norms: Vec<Norms> = items.iter().map(|i| Norms::of(i.embedding.values)).collect();
            // The near match is read only for an item without an exact one:
            // the scan's partial near match of the others is left out.
            let decided = |(exact, near): (Vec<Option<ExactLive>>, Vec<Option<NearLive>>)| {
                let near: Vec<Option<NearLive>> = exact.iter().zip(near).map(|(e, n)| if e.is_some() { None } else { n }).collect();
                (exact, near)
            };
            for now in [None, Some("2024-03-01")] {
                let indexed = decided(against_live(&items, &norms, now, &st, threshold, evidence));
                let scanned = decided(against_live_scan(&items, &norms, now, &st, threshold, evidence));
                assert_eq!(indexed, scanned, "round {round}, now {now:?}");
                hits += indexed.0.iter().flatten().count();
                restated += indexed.0.iter().flatten().filter(|(_, by)| *by == MatchBy::Restatement).count();
                near += indexed.1.iter().flatten().count();
            }
            // Facts appended after a search are found by the next one.
            st.facts.push(fact_rec(&mut r, facts, dims));
            let indexed = decided(against_live(&items, &norms, None, &st, threshold, evidence));
            assert_eq!(indexed, decided(against_live_scan(&items, &norms, None, &st, threshold, evidence)), "round {round}, appended");
        }
        assert!(hits > 100 && restated > 0 && near > 20, "the inputs exercise every match: {hits} exact, {restated} restated, {near} near");
    }

    /// The same sentence said another way: number words, articles.
    fn c_respelt(content: &str) -> String {
        content.replace("two", "2").replace(" the ", " a ").replace("loves", "really loves")
    }

    /// Recording a sweep's trace, the near-duplicate search compares only
    /// each candidate's nearest cosine with the threshold: the interval it
    /// leaves is every threshold that gives the same outcomes, whatever the
    /// other cosines are.
    #[test]
    fn a_recorded_near_search_narrows_only_by_the_nearest_cosine() {
        use crate::state::trace::{Recorder, recording};
        let mut st = ConvState::default();
        st.facts.push(live("f1", "A", "p", "o1", "h1", vec![1.0, 0.0]));
        st.facts.push(live("f2", "A", "p", "o2", "h2", vec![0.6, 0.8]));
        let u = [0.0f32, 1.0];
        let v = [0.97f32, (1.0f32 - 0.97 * 0.97).sqrt()];
        let items = [item("h3", "B", "q", "x", None, &u), item("h4", "C", "r", "y", None, &v)];
        // u's nearest is f2 (0.8); v's is f1 (0.97), before f2 (0.78) and the survivor u (0.24).
        let (u_best, v_best) = (cosine(&u, &[0.6, 0.8]), cosine(&v, &[1.0, 0.0]));
        let run = |t: f64| dedupe(&items, &st, None, t, None);
        let (out, rec) = recording(Recorder::new(vec![0.9]), || run(0.9));
        assert_eq!(out[0], DedupeOutcome::Survivor);
        assert!(matches!(&out[1], DedupeOutcome::NearDuplicate { of: Target::Live(id), .. } if id == "f1"), "{out:?}");
        let interval = rec.expect("recorder").intervals()[0];
        assert!(interval.contains(v_best) && !interval.contains(v_best + 1e-9), "{interval:?}");
        assert!(interval.contains(u_best + 1e-9) && !interval.contains(u_best), "{interval:?}");
        // Inside, every threshold decides alike; outside, some candidate changes.
        for t in [u_best + 1e-9, 0.85, 0.9, 0.95, v_best] {
            assert_eq!(run(t), out, "threshold {t}");
        }
        for t in [0.5, u_best, v_best + 1e-9, 0.99] {
            assert_ne!(run(t), out, "threshold {t}");
        }
    }

    #[test]
    fn expired_live_facts_are_not_compared() {
        let mut st = ConvState::default();
        let mut f = live("f1", "Alice", "drives", "Honda Civic", "h1", vec![1.0, 0.0]);
        f.valid_until = Some("2024-01-01".into());
        st.facts.push(f);
        let e = [1.0f32, 0.0];
        let out = dedupe(&[item("h1", "Alice", "drives", "Honda Civic", None, &e)], &st, Some("2024-05-01"), 0.95, None);
        assert_eq!(out[0], DedupeOutcome::Survivor);
    }
}
