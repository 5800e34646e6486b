//! One episode through the five stages. [`front`] does the work no threshold
//! can change (extraction, value scores, embeddings) so a sweep can reuse it;
//! [`back`] runs resolve → dedupe → judge → write against a conversation's
//! state and store, and returns the record of everything that happened.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::dedupe::{DedupeItem, DedupeOutcome, Target, dedupe, closure_cascade};
use crate::embed::Embedder;
use crate::error::Result;
use crate::extract::{ExtractInput, Extraction, Extractor, postprocess, tier_of};
use crate::judge::{FinalVerdict, GuardInput, Judge, JudgeContext, PairInput, PairFact, apply_guards, find_pairs};
use crate::normalize::normalize_and_hash_content;
use crate::resolve::{EntityDecision, apply_map, resolve_entities};
use crate::state::{ConvState, EntityRec, FactKeys, FactRec, KeyCache, Vector};
use crate::store::Store;
use crate::types::{Conversation, EntityType, Episode, FactKind, FactType, LlmUsage, ValueTier, Verdict, Warning};
use crate::write::{Action, Effect, EntityRow, Outcome, Proposal, WritePlan};

/// Most known entity names and recent live facts shown to an extractor.
pub const MAX_KNOWN_ENTITIES: usize = 200;
pub const MAX_RECENT_FACTS: usize = 100;

/// The stage implementations a run uses.
#[derive(Clone, Copy)]
pub struct Stages<'a> {
    pub extractor: &'a dyn Extractor,
    pub embedder: &'a dyn Embedder,
    pub judge: &'a dyn Judge,
}

/// Threshold-independent results for one episode.
#[derive(Debug, Clone)]
pub struct EpisodeFront {
    pub extraction: Extraction,
    pub fact_embeddings: Vec<Vec<f32>>,
    pub entity_embeddings: Vec<Vec<f32>>,
    pub usage: LlmUsage,
    pub extract_ms: f64,
    pub embed_ms: f64,
    /// Slot of the first fact vector in the conversation's [`SimTable`]
    /// (set by a sweep, which precomputes the cosines; `None` in a run).
    ///
    /// [`SimTable`]: crate::state::SimTable
    pub slot_base: Option<u32>,
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
    /// `noise_rejected`, `exact_duplicate`, `near_duplicate`, `closure`,
    /// `judged_new`, `created`, `low_fact_confidence`, `empty_fact_content`,
    /// `deduped` (race re-check), `conflict`, or `shadow_created`.
    pub outcome: String,
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

/// Extraction, value scores and embeddings for one episode.
pub fn front(stages: Stages<'_>, conv: &Conversation, episode: &Episode, state: &ConvState, cfg: &Config) -> Result<EpisodeFront> {
    let t0 = Instant::now();
    let known: Vec<String> = state.entity_names().into_iter().take(MAX_KNOWN_ENTITIES).collect();
    let recent: Vec<String> = state
        .facts
        .iter()
        .rev()
        .filter(|f| f.is_current(episode.timestamp.as_deref()))
        .take(MAX_RECENT_FACTS)
        .map(|f| f.content.clone())
        .collect();
    let input = ExtractInput {
        conversation_id: &conv.id,
        speakers: &conv.speakers,
        episode,
        known_entities: &known,
        recent_facts: &recent,
    };
    let raw = stages.extractor.extract(&input)?;
    let usage = raw.usage;
    let extraction = postprocess(raw, &input, cfg);
    let extract_ms = ms(t0);
    let t1 = Instant::now();
    let source = format!("conversation {} episode {}", conv.id, episode.id);
    let texts: Vec<&str> = extraction.facts.iter().map(|f| f.fact.content.as_str()).collect();
    let fact_embeddings = if texts.is_empty() { Vec::new() } else { stages.embedder.embed(&texts, &source)? };
    let names: Vec<&str> = extraction.entities.iter().map(|e| e.name.as_str()).collect();
    let entity_embeddings = if names.is_empty() { Vec::new() } else { stages.embedder.embed(&names, &source)? };
    Ok(EpisodeFront { extraction, fact_embeddings, entity_embeddings, usage, extract_ms, embed_ms: ms(t1), slot_base: None })
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// The speakers' entities, created when a conversation starts.
pub fn speaker_entities(conv: &Conversation, embedder: &dyn Embedder) -> Result<Vec<EntityRec>> {
    let names: Vec<&str> = conv.speakers.iter().map(String::as_str).collect();
    let embs = if names.is_empty() { Vec::new() } else { embedder.embed(&names, &format!("conversation {} speakers", conv.id))? };
    Ok(conv
        .speakers
        .iter()
        .zip(embs)
        .enumerate()
        .map(|(i, (name, embedding))| EntityRec {
            id: format!("{}/e{i}", conv.id),
            name: name.clone(),
            entity_type: EntityType::Person,
            aliases: Vec::new(),
            embedding,
        })
        .collect())
}

/// Resolve, dedupe, judge and write one episode whose [`front`] is done.
pub fn back(
    front: &EpisodeFront,
    conv: &Conversation,
    episode: &Episode,
    state: &mut ConvState,
    cfg: &Config,
    judge: &dyn Judge,
    store: &Store,
) -> Result<EpisodeRecord> {
    let now = episode.timestamp.as_deref();
    let mut timings = Timings { extract_ms: front.extract_ms, embed_ms: front.embed_ms, ..Timings::default() };
    let mut warnings = front.extraction.warnings.clone();
    let mut usage = front.usage;
    let base = |i: usize| format!("{}/{}/c{i}", conv.id, episode.id);

    // Noise filter (value tiers), then stage 2.
    let t = Instant::now();
    let scored = &front.extraction.facts;
    let tiers: Vec<ValueTier> = scored.iter().map(|f| tier_of(f, cfg.value_core_min, cfg.value_contextual_min)).collect();
    let resolution = resolve_entities(&conv.id, &front.extraction.entities, &front.entity_embeddings, state, cfg.entity_merge_threshold);
    let resolved = apply_map(scored.iter().map(|f| &f.fact), &front.extraction.entities, &resolution, state);
    timings.resolve_ms = ms(t);

    // Stage 3 over the non-noise candidates.
    let t = Instant::now();
    let kept: Vec<usize> = (0..scored.len()).filter(|i| tiers[*i] != ValueTier::Ephemeral).collect();
    let hashes: Vec<_> = resolved.iter().map(|r| normalize_and_hash_content(&r.fact.content)).collect();
    let mut fact_keys: Vec<FactKeys> = resolved.iter().map(|r| FactKeys::of(&r.fact.subject, &r.fact.predicate, &r.fact.object)).collect();
    let empty: Vec<f32> = Vec::new();
    let emb = |i: usize| front.fact_embeddings.get(i).unwrap_or(&empty).as_slice();
    let slot = |i: usize| front.slot_base.filter(|_| i < front.fact_embeddings.len()).map(|b| b + i as u32);
    let vector = |i: usize| Vector { slot: slot(i), values: emb(i) };
    let items: Vec<DedupeItem<'_>> = kept
        .iter()
        .map(|&i| DedupeItem {
            hash: &hashes[i].hash,
            subject: &resolved[i].fact.subject,
            predicate: &resolved[i].fact.predicate,
            object: &resolved[i].fact.object,
            valid_until: resolved[i].fact.valid_until.as_deref(),
            object_entity: resolved[i].object_entity.as_deref(),
            embedding: vector(i),
            spo: &fact_keys[i].spo,
        })
        .collect();
    let dd = if cfg.dedup_enabled {
        dedupe(&items, state, now, cfg.near_dup_threshold)
    } else {
        vec![DedupeOutcome::Survivor; items.len()]
    };
    timings.dedupe_ms = ms(t);

    // Stage 4 over the survivors.
    let t = Instant::now();
    let survivors: Vec<usize> = kept.iter().zip(&dd).filter(|(_, d)| **d == DedupeOutcome::Survivor).map(|(i, _)| *i).collect();
    let pair_inputs: Vec<PairInput<'_>> = survivors
        .iter()
        .map(|&i| {
            let f = &resolved[i].fact;
            PairInput {
                fact: PairFact {
                    subject: f.subject.clone(),
                    predicate: f.predicate.clone(),
                    object: f.object.clone(),
                    content: f.content.clone(),
                    valid_until: f.valid_until.clone(),
                },
                embedding: vector(i),
                keys: &fact_keys[i],
            }
        })
        .collect();
    let pairs = find_pairs(&pair_inputs, state, now, cfg.contradiction_band_min, cfg.near_dup_threshold);
    let answer = if pairs.is_empty() {
        Ok(Default::default())
    } else {
        let judge_pairs: Vec<_> = pairs.iter().map(|p| p.pair.clone()).collect();
        match judge.judge(&JudgeContext { conversation_id: &conv.id, episode_id: &episode.id }, &judge_pairs) {
            Ok(o) => Ok(o),
            // A replay miss is a hole in the recording, not a judge failure:
            // the run stops rather than silently judging `neither`.
            Err(e @ crate::error::Error::FixtureMiss(_)) => return Err(e),
            Err(e) => Err(crate::error::chain(&e)),
        }
    };
    match &answer {
        Ok(o) => {
            warnings.extend(o.warnings.iter().cloned());
            usage.add(o.usage);
        }
        Err(e) => warnings.push(Warning::new("judge_failed", e.clone())),
    }
    let guard_inputs: Vec<GuardInput<'_>> = survivors
        .iter()
        .map(|&i| GuardInput { confidence: resolved[i].fact.confidence, valid_until: resolved[i].fact.valid_until.as_deref() })
        .collect();
    let finals = apply_guards(&pairs, &answer, &guard_inputs, now, cfg.min_trusted_confidence);
    let mut verdicts_of: Vec<Vec<FinalVerdict>> = vec![Vec::new(); survivors.len()];
    for (p, v) in pairs.iter().zip(finals) {
        verdicts_of[p.candidate].push(v);
    }
    timings.judge_ms = ms(t);

    // The plan.
    let mut records: Vec<CandidateRecord> = resolved
        .iter()
        .enumerate()
        .map(|(i, r)| CandidateRecord {
            id: base(i),
            conversation: conv.id.clone(),
            episode: episode.id.clone(),
            turn: r.fact.source_turn.clone(),
            subject: r.fact.subject.clone(),
            predicate: r.fact.predicate.clone(),
            object: r.fact.object.clone(),
            kind: r.fact.kind,
            fact_type: r.fact.fact_type,
            content: hashes[i].storage.clone(),
            confidence: r.fact.confidence,
            value_score: scored[i].value_score,
            tier: tiers[i],
            content_hash: hashes[i].hash.clone(),
            outcome: String::new(),
            reason: String::new(),
            related: None,
            subject_entity: r.subject_entity.clone(),
            object_entity: r.object_entity.clone(),
            verdicts: Vec::new(),
            ended: Vec::new(),
            stored: false,
        })
        .collect();
    let mut proposals: Vec<Proposal> = Vec::new();
    let target_id = |t: &Target| match t {
        Target::Live(id) => id.clone(),
        Target::Batch(j) => base(kept[*j]),
    };
    let mut kept_iter = kept.iter().zip(&dd).peekable();
    let mut survivor_pos = 0usize;
    let mut batch_closures: Vec<(usize, String)> = Vec::new();
    for i in 0..resolved.len() {
        let rec = &mut records[i];
        if tiers[i] == ValueTier::Ephemeral {
            rec.outcome = "noise_rejected".into();
            rec.reason = format!("value score {:.2} < {:.2}", scored[i].value_score, cfg.value_contextual_min);
            proposals.push(Proposal { candidate_id: rec.id.clone(), action: Action::Reject { outcome: rec.outcome.clone(), reason: rec.reason.clone(), related: None } });
            continue;
        }
        let Some((_, d)) = kept_iter.next() else { break };
        match d {
            DedupeOutcome::ExactDuplicate { of, by } => {
                rec.outcome = "exact_duplicate".into();
                rec.reason = format!("same {}", if *by == crate::dedupe::MatchBy::Hash { "content hash" } else { "subject|predicate|object" });
                rec.related = Some(target_id(of));
            }
            DedupeOutcome::NearDuplicate { of, cosine } => {
                rec.outcome = "near_duplicate".into();
                rec.reason = format!("cosine {cosine:.3} >= {:.3}", cfg.near_dup_threshold);
                rec.related = Some(target_id(of));
            }
            DedupeOutcome::Closure { of, valid_until, cascade } => {
                rec.outcome = "closure".into();
                rec.reason = format!("valid_until {valid_until}");
                rec.related = Some(target_id(of));
                match of {
                    Target::Live(id) => proposals.push(Proposal {
                        candidate_id: rec.id.clone(),
                        action: Action::Close { target: id.clone(), valid_until: valid_until.clone(), cascade: cascade.clone() },
                    }),
                    Target::Batch(j) => batch_closures.push((kept[*j], valid_until.clone())),
                }
                continue;
            }
            DedupeOutcome::Survivor => {
                let verdicts = std::mem::take(&mut verdicts_of[survivor_pos]);
                survivor_pos += 1;
                if let Some(v) = verdicts.iter().find(|v| v.verdict == Verdict::New) {
                    rec.outcome = "judged_new".into();
                    rec.reason = format!("judged new against {}", v.live_id);
                    rec.related = Some(v.live_id.clone());
                    rec.verdicts = verdicts;
                } else {
                    rec.verdicts = verdicts;
                    rec.outcome = "insert".into();
                    continue;
                }
            }
        }
        proposals.push(Proposal {
            candidate_id: rec.id.clone(),
            action: Action::Reject { outcome: rec.outcome.clone(), reason: rec.reason.clone(), related: rec.related.clone() },
        });
    }
    // Inserts and their invalidations, in candidate order.
    let ending: Vec<(usize, Vec<String>)> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.outcome == "insert")
        .map(|(i, r)| (i, r.verdicts.iter().filter(|v| v.verdict == Verdict::Old).map(|v| v.live_id.clone()).collect()))
        .collect();
    for (i, olds) in &ending {
        let r = &resolved[*i];
        let h = &hashes[*i];
        let valid_until = batch_closures.iter().rev().find(|(j, _)| j == i).map(|(_, u)| u.clone()).or_else(|| r.fact.valid_until.clone());
        let fact = FactRec {
            id: records[*i].id.clone(),
            subject: r.fact.subject.clone(),
            predicate: r.fact.predicate.clone(),
            object: r.fact.object.clone(),
            kind: r.fact.kind,
            fact_type: r.fact.fact_type,
            content: h.storage.clone(),
            normalized: h.normalized.clone(),
            hash: h.hash.clone(),
            confidence: r.fact.confidence,
            valid_from: r.fact.valid_from.clone(),
            valid_until,
            invalid_at: None,
            superseded_by: None,
            source_episode: episode.id.clone(),
            source_turn: r.fact.source_turn.clone(),
            source_quote: r.fact.source_quote.clone(),
            pinned: false,
            subject_entity: r.subject_entity.clone(),
            object_entity: r.object_entity.clone(),
            embedding: emb(*i).to_vec(),
            slot: slot(*i),
            keys: KeyCache::with(std::mem::take(&mut fact_keys[*i])),
        };
        for old in olds {
            let cascade = closure_cascade(state, &[old.as_str()], now);
            proposals.push(Proposal {
                candidate_id: fact.id.clone(),
                action: Action::Invalidate { target: old.clone(), by: fact.id.clone(), cascade },
            });
        }
        proposals.push(Proposal { candidate_id: fact.id.clone(), action: Action::Insert { fact } });
    }
    let plan = WritePlan {
        conversation_id: conv.id.clone(),
        episode_id: episode.id.clone(),
        now: episode.timestamp.clone(),
        new_entities: resolution
            .new_entities
            .iter()
            .map(|e| EntityRow { id: e.id.clone(), name: e.name.clone(), entity_type: e.entity_type })
            .collect(),
        new_aliases: resolution.new_aliases.clone(),
        proposals,
    };

    // Stage 5: the transaction. Nothing below calls a model or an embedder.
    let t = Instant::now();
    let mode = cfg.write_mode();
    let result = store.apply(&plan, mode, cfg.min_fact_confidence_for_write)?;
    timings.write_ms = ms(t);

    // Mirror what was applied.
    if result.entities_written {
        state.entities.extend(resolution.new_entities.iter().cloned());
        for (id, alias) in &resolution.new_aliases {
            if let Some(e) = state.entities.iter_mut().find(|e| &e.id == id) {
                if !e.aliases.contains(alias) {
                    e.aliases.push(alias.clone());
                }
            }
        }
    }
    let mut inserts: Vec<FactRec> = plan
        .proposals
        .into_iter()
        .filter_map(|p| match p.action {
            Action::Insert { fact } => Some(fact),
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
        }
    }

    // Outcomes from the audit.
    let mut invalidations = 0;
    let mut closures = 0;
    let mut blocked = 0;
    for a in &result.audit {
        let idx = records.iter().position(|r| r.id == a.candidate_id);
        match a.outcome {
            Outcome::Invalidated => invalidations += 1,
            Outcome::Closed => closures += 1,
            Outcome::Blocked => blocked += 1,
            _ => {}
        }
        let Some(idx) = idx else { continue };
        let rec = &mut records[idx];
        if matches!(a.outcome, Outcome::Invalidated | Outcome::Closed) {
            if let Some(t) = &a.target_fact_id {
                rec.ended.push(t.clone());
            }
        }
        if a.action == "insert" {
            let (outcome, stored) = match a.outcome {
                Outcome::Created => ("created".to_string(), true),
                Outcome::Recorded => ("shadow_created".to_string(), false),
                Outcome::Deduped => ("deduped".to_string(), false),
                _ if a.reason.starts_with("low_fact_confidence") => ("low_fact_confidence".to_string(), false),
                _ if a.reason.starts_with("empty_fact_content") => ("empty_fact_content".to_string(), false),
                _ => ("conflict".to_string(), false),
            };
            rec.outcome = outcome;
            rec.stored = stored;
            rec.reason = a.reason.clone();
            if a.target_fact_id.is_some() {
                rec.related = a.target_fact_id.clone();
            }
        }
    }
    let review_needed = records.iter().flat_map(|r| &r.verdicts).filter(|v| v.review_needed).count();
    let stored = records.iter().filter(|r| r.stored).count();
    Ok(EpisodeRecord {
        conversation: conv.id.clone(),
        episode: episode.id.clone(),
        timestamp: episode.timestamp.clone(),
        turns: episode.turns.len(),
        candidates: records.len(),
        stored,
        entity_decisions: resolution.decisions,
        warnings,
        usage,
        invalidations,
        closures,
        review_needed,
        blocked,
        facts: records,
        timings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::hashed::HashedEmbedder;
    use crate::error::Error;
    use crate::extract::ScoredFact;
    use crate::judge::{JudgeOutput, JudgePair};
    use crate::types::{CandidateFact, Gold, Turn};

    /// A judge scripted to answer one way (or to fail): fault injection for the guards.
    struct Scripted(Option<Verdict>);

    impl Judge for Scripted {
        fn id(&self) -> String {
            "scripted".into()
        }
        fn judge(&self, _ctx: &JudgeContext<'_>, pairs: &[JudgePair]) -> Result<JudgeOutput> {
            match self.0 {
                Some(v) => Ok(JudgeOutput { verdicts: pairs.iter().map(|p| (p.index, v)).collect(), ..Default::default() }),
                None => Err(Error::Other("model timed out".into())),
            }
        }
    }

    fn fact(object: &str, turn: &str) -> CandidateFact {
        CandidateFact {
            subject: "Alice".into(),
            predicate: "works at".into(),
            object: object.into(),
            kind: FactKind::Literal,
            fact_type: FactType::Fact,
            content: format!("Alice works at {object}"),
            confidence: 0.9,
            source_turn: turn.into(),
            source_quote: String::new(),
            valid_from: None,
            valid_until: None,
        }
    }

    fn episode(id: &str, turn: &str, date: &str) -> Episode {
        Episode {
            id: id.into(),
            timestamp: Some(format!("{date}T10:00:00")),
            turns: vec![Turn { id: turn.into(), speaker: "Alice".into(), text: String::new() }],
        }
    }

    fn front_of(facts: Vec<CandidateFact>) -> EpisodeFront {
        let e = HashedEmbedder::new(64);
        EpisodeFront {
            fact_embeddings: facts.iter().map(|f| e.embed_one(&f.content)).collect(),
            extraction: Extraction {
                entities: vec![],
                facts: facts.into_iter().map(|fact| ScoredFact { fact, value_score: 0.9 }).collect(),
                warnings: vec![],
            },
            entity_embeddings: vec![],
            usage: LlmUsage::default(),
            extract_ms: 0.0,
            embed_ms: 0.0,
            slot_base: None,
        }
    }

    /// Episode 1 stores "works at Google"; episode 2 proposes "works at
    /// Anthropic", judged by `judge`.
    fn two_episodes(judge: &dyn Judge) -> (EpisodeRecord, ConvState) {
        let conv = Conversation {
            id: "c".into(),
            speakers: vec!["Alice".into()],
            episodes: vec![episode("e1", "t1", "2024-01-01"), episode("e2", "t2", "2024-02-01")],
            gold: Gold::default(),
        };
        let store = Store::in_memory().unwrap();
        let cfg = Config::default();
        let mut state = ConvState::default();
        back(&front_of(vec![fact("Google", "t1")]), &conv, &conv.episodes[0], &mut state, &cfg, judge, &store).unwrap();
        let rec = back(&front_of(vec![fact("Anthropic", "t2")]), &conv, &conv.episodes[1], &mut state, &cfg, judge, &store).unwrap();
        (rec, state)
    }

    #[test]
    fn verdict_old_invalidates_the_live_fact() {
        let (rec, state) = two_episodes(&Scripted(Some(Verdict::Old)));
        assert_eq!(rec.facts[0].outcome, "created");
        assert_eq!(rec.facts[0].ended, vec!["c/e1/c0".to_string()]);
        assert_eq!(rec.invalidations, 1);
        assert_eq!(state.fact("c/e1/c0").unwrap().superseded_by.as_deref(), Some("c/e2/c0"));
    }

    #[test]
    fn verdict_new_discards_the_candidate_entirely() {
        let (rec, state) = two_episodes(&Scripted(Some(Verdict::New)));
        assert_eq!(rec.facts[0].outcome, "judged_new");
        assert!(!rec.facts[0].stored);
        assert_eq!(rec.invalidations, 0);
        assert!(state.fact("c/e1/c0").unwrap().is_live());
        assert_eq!(state.facts.len(), 1);
    }

    #[test]
    fn judge_failure_makes_every_verdict_neither_and_warns() {
        let (rec, state) = two_episodes(&Scripted(None));
        assert_eq!(rec.facts[0].outcome, "created");
        assert_eq!(rec.facts[0].verdicts[0].verdict, Verdict::Neither);
        assert!(rec.warnings.iter().any(|w| w.kind == "judge_failed"));
        assert!(state.facts.iter().all(|f| f.is_live()));
    }
}
