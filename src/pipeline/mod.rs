//! The formation pipeline: one episode through five stages, in order.
//!
//! - [`extract`] (stage 1): turns → candidate entities and facts, value scores;
//! - [`resolve`] (stage 2): entity names → canonical entities;
//! - [`dedupe`] (stage 3): exact and near duplicates, closures;
//! - [`judge`] (stage 4): contradiction pairs and verdicts, with guards;
//! - [`write`] (stage 5): the plan and the write policy, executed by the store.
//!
//! [`front`] does the work no threshold can change (extraction, value
//! scores, embeddings), so a sweep can reuse it; [`back`] runs stages 2–5
//! against a conversation's state and store. A [`profiles::Profile`] names a
//! composition of stage implementations; every rule is in docs/pipeline.md.

pub mod config;
#[path = "3_dedupe.rs"]
pub mod dedupe;
pub mod dreaming;
pub mod external;
#[path = "1_extract/mod.rs"]
pub mod extract;
#[path = "4_judge/mod.rs"]
pub mod judge;
pub mod memorix;
pub mod profiles;
pub mod records;
#[path = "2_resolve.rs"]
pub mod resolve;
pub mod signet;
pub mod soda;
#[path = "5_write/mod.rs"]
pub mod write;

use std::time::Instant;

use crate::embed::Embedder;
use crate::error::Result;
use crate::normalize::{NormalizedContent, normalize_and_hash_content};
use crate::state::{ConvState, EntityRec, FactKeys, Vector};
use crate::store::Store;
use crate::types::{Conversation, EntityType, Episode, LlmUsage, ValueTier, string_enum};
pub use config::Config;
use extract::{ExtractInput, Extraction, Extractor, postprocess};
use judge::{Judge, JudgeContext};
use resolve::ResolvedFact;
use write::plan::Planned;

pub use records::{CandidateOutcome, CandidateRecord, EpisodeRecord, Timings};

string_enum! {
    /// How a model stage (extract, judge) answers: rules, a model, or (for
    /// extraction only) the dataset's gold facts, the oracle.
    pub enum StageMode {
        Rules => "rules",
        Llm => "llm",
        Gold => "gold",
    }
}

/// The per-stage modes of a run: how stage 1 extracts and how stage 4 judges.
///
/// Written `EXTRACT/JUDGE` (`gold/rules`, `rules/llm`); a single word sets
/// both stages where both take it (`rules`, `llm`), and `gold` alone is
/// `gold/rules`. [`Modes::name`] is the canonical spelling, used in
/// `run.json`'s `mode`, baselines, sweeps and compare labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Modes {
    pub extract: StageMode,
    pub judge: StageMode,
}

impl Modes {
    pub const RULES: Modes = Modes { extract: StageMode::Rules, judge: StageMode::Rules };

    /// `rules` or `llm` when both stages run that way, else `EXTRACT/JUDGE`.
    pub fn name(self) -> String {
        if self.extract == self.judge { self.extract.as_str().to_string() } else { format!("{}/{}", self.extract, self.judge) }
    }

    /// [`Modes::name`] safe in a directory name (`gold-rules`).
    pub fn slug(self) -> String {
        self.name().replace('/', "-")
    }

    /// Parses `rules`, `llm`, `gold` or `EXTRACT/JUDGE`; the error names what is allowed.
    pub fn parse(spec: &str) -> std::result::Result<Modes, String> {
        let bad =
            || format!("{spec:?}: expected rules, llm, gold or EXTRACT/JUDGE (extract rules|llm|gold, judge rules|llm), e.g. gold/rules");
        let stage = |s: &str| StageMode::parse(s.trim()).ok_or_else(bad);
        let modes = match spec.trim().split_once('/') {
            Some((e, j)) => Modes { extract: stage(e)?, judge: stage(j)? },
            None => match stage(spec)? {
                StageMode::Gold => Modes { extract: StageMode::Gold, judge: StageMode::Rules },
                m => Modes { extract: m, judge: m },
            },
        };
        if modes.judge == StageMode::Gold {
            return Err(format!("{spec:?}: the judge is rules or llm (gold is an extraction mode only)"));
        }
        Ok(modes)
    }

    /// True when a stage asks a model.
    pub fn uses_llm(self) -> bool {
        self.extract == StageMode::Llm || self.judge == StageMode::Llm
    }
}

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
    /// The extractor's id (provenance of what it extracted).
    pub extractor: String,
    pub extract_ms: f64,
    pub embed_ms: f64,
    /// Slot of the first fact vector in the conversation's [`SimTable`]
    /// (set by a sweep, which precomputes the cosines; `None` in a run).
    ///
    /// [`SimTable`]: crate::state::SimTable
    pub slot_base: Option<u32>,
    /// The entity triples of Signet's extraction contract (the `signet`
    /// profile's front fills them; empty otherwise).
    pub triples: Vec<signet::extract::SignetEntity>,
}

/// Extraction, value scores and embeddings for one episode.
pub fn front(stages: Stages<'_>, conv: &Conversation, episode: &Episode, state: &ConvState, cfg: &Config) -> Result<EpisodeFront> {
    let t0 = Instant::now();
    let (known, recent) = known_context(episode, state);
    let input =
        ExtractInput { conversation_id: &conv.id, speakers: &conv.speakers, episode, known_entities: &known, recent_facts: &recent };
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
    let extractor = stages.extractor.id();
    Ok(EpisodeFront {
        extraction,
        fact_embeddings,
        entity_embeddings,
        usage,
        extractor,
        extract_ms,
        embed_ms: ms(t1),
        slot_base: None,
        triples: Vec::new(),
    })
}

/// What an extractor is shown of the store: the conversation's entity
/// names (at most [`MAX_KNOWN_ENTITIES`]) and its latest facts current at
/// the episode (at most [`MAX_RECENT_FACTS`]).
pub(crate) fn known_context(episode: &Episode, state: &ConvState) -> (Vec<String>, Vec<String>) {
    let known: Vec<String> = state.entities.iter().take(MAX_KNOWN_ENTITIES).map(|e| e.name.clone()).collect();
    let recent: Vec<String> = state
        .facts
        .iter()
        .rev()
        .filter(|f| f.is_current(episode.timestamp.as_deref()))
        .take(MAX_RECENT_FACTS)
        .map(|f| f.content.clone())
        .collect();
    (known, recent)
}

pub(crate) fn ms(t: Instant) -> f64 {
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

/// One episode's candidates between stages 2 and 5, indexed as extracted:
/// their value tiers, resolved facts, content hashes and matching keys.
pub struct Batch<'f> {
    pub front: &'f EpisodeFront,
    pub tiers: Vec<ValueTier>,
    pub facts: Vec<ResolvedFact>,
    pub hashes: Vec<NormalizedContent>,
    pub keys: Vec<FactKeys>,
}

impl<'f> Batch<'f> {
    pub fn new(front: &'f EpisodeFront, tiers: Vec<ValueTier>, facts: Vec<ResolvedFact>) -> Batch<'f> {
        let hashes = facts.iter().map(|r| normalize_and_hash_content(&r.fact.content)).collect();
        let keys = facts.iter().map(|r| FactKeys::of(&r.fact.subject, &r.fact.predicate, &r.fact.object)).collect();
        Batch { front, tiers, facts, hashes, keys }
    }

    pub fn len(&self) -> usize {
        self.facts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.facts.is_empty()
    }

    /// Candidate `i`'s content vector (empty when the embedder gave none).
    pub fn embedding(&self, i: usize) -> &'f [f32] {
        self.front.fact_embeddings.get(i).map_or(&[], Vec::as_slice)
    }

    /// Candidate `i`'s row in the conversation's [`SimTable`], in a sweep.
    pub fn slot(&self, i: usize) -> Option<u32> {
        self.front.slot_base.filter(|_| i < self.front.fact_embeddings.len()).map(|b| b + i as u32)
    }

    pub fn vector(&self, i: usize) -> Vector<'f> {
        Vector { slot: self.slot(i), values: self.embedding(i) }
    }
}

/// Stages 2–5 of one episode whose [`front`] is done: resolve, dedupe,
/// judge, plan and write, then mirror what the store applied into `state`.
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
    // Dedupe, pairing and the rules judge each read the episode's contents:
    // read once (a sweep installs its own memo for the whole conversation).
    let _readings = crate::state::readings_for_now();

    let t = Instant::now();
    let tiers = extract::noise_filter(&front.extraction.facts, cfg);
    let (resolution, resolved) = resolve::stage(&conv.id, &front.extraction, &front.entity_embeddings, state, cfg);
    timings.resolve_ms = ms(t);

    let t = Instant::now();
    let batch = Batch::new(front, tiers, resolved);
    let deduped = dedupe::stage(&batch, state, now, cfg);
    timings.dedupe_ms = ms(t);

    let t = Instant::now();
    let ctx = JudgeContext { conversation_id: &conv.id, episode_id: &episode.id };
    let judged = judge::stage(&batch, &deduped, state, ctx, now, cfg, judge)?;
    timings.judge_ms = ms(t);

    let t = Instant::now();
    let Planned { plan, mut records } = write::plan::build(batch, &deduped, judged.verdicts, &resolution, state, (conv, episode), cfg);
    let mode = cfg.write_mode();
    let result = store.write_episode(&plan, mode, |tx| write::policy::apply(tx, &plan, mode, cfg.min_fact_confidence_for_write))?;
    let before = state.facts.len();
    write::mirror(state, &resolution.new_entities, plan, &result);
    // The facts stored keep the readings this episode made of their
    // candidates (the memo above), not read again when next paired.
    let rules = judge::PairRules::new(cfg);
    for fact in state.facts.get(before..).unwrap_or_default() {
        rules.read_stored(fact);
    }
    let counts = records::settle(&mut records, &result);
    timings.write_ms = ms(t);

    let mut warnings = front.extraction.warnings.clone();
    warnings.extend(judged.warnings);
    let mut usage = front.usage;
    usage.add(judged.usage);
    Ok(EpisodeRecord {
        conversation: conv.id.clone(),
        episode: episode.id.clone(),
        timestamp: episode.timestamp.clone(),
        turns: episode.turns.len(),
        candidates: records.len(),
        stored: records.iter().filter(|r| r.stored).count(),
        entity_decisions: resolution.decisions,
        warnings,
        usage,
        invalidations: counts.invalidations,
        closures: counts.closures,
        review_needed: records.iter().flat_map(|r| &r.verdicts).filter(|v| v.review_needed).count(),
        blocked: counts.blocked,
        facts: records,
        timings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::hashed::HashedEmbedder;
    use crate::error::Error;
    use crate::pipeline::extract::ScoredFact;
    use crate::pipeline::judge::{JudgeOutput, JudgePair};
    use crate::types::{CandidateFact, FactKind, FactType, Gold, Turn, Verdict};

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
            observations: vec![],
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
            extractor: "test".into(),
            extract_ms: 0.0,
            embed_ms: 0.0,
            slot_base: None,
            triples: vec![],
        }
    }

    /// Episode 1 stores "works at Google"; episode 2 proposes "works at
    /// Anthropic", judged by `judge`.
    fn two_episodes(judge: &dyn Judge) -> (EpisodeRecord, ConvState) {
        let (rec, state, _) = two_episodes_in_store(judge);
        (rec, state)
    }

    fn two_episodes_in_store(judge: &dyn Judge) -> (EpisodeRecord, ConvState, Store) {
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
        (rec, state, store)
    }

    #[test]
    fn every_judged_pair_is_a_verdict_row_with_the_guard_that_changed_it() {
        use crate::pipeline::judge::PairReason;
        use crate::pipeline::write::VerdictRow;
        let (_, _, store) = two_episodes_in_store(&Scripted(Some(Verdict::Old)));
        let row = |v: Verdict, guard: Option<&str>| VerdictRow {
            candidate_id: "c/e2/c0".into(),
            target_fact_id: "c/e1/c0".into(),
            // A single-valued predicate with another object is evidence of change.
            pair_reason: PairReason::EvidenceOfChange,
            judged: v,
            guard: guard.map(str::to_string),
            verdict: v,
            review_needed: false,
        };
        let rows: Vec<VerdictRow> = store.verdicts().unwrap().into_iter().map(|(_, _, r)| r).collect();
        assert_eq!(rows, vec![row(Verdict::Old, None)]);
        let (_, _, store) = two_episodes_in_store(&Scripted(None));
        let rows: Vec<VerdictRow> = store.verdicts().unwrap().into_iter().map(|(_, _, r)| r).collect();
        assert_eq!(rows, vec![row(Verdict::Neither, Some("judge_failed: model timed out"))]);
    }

    #[test]
    fn per_stage_modes_parse_and_name_themselves() {
        let m = |s: &str| Modes::parse(s).map(|m| (m.name(), m.slug()));
        assert_eq!(m("rules"), Ok(("rules".into(), "rules".into())));
        assert_eq!(m("llm"), Ok(("llm".into(), "llm".into())));
        assert_eq!(m("gold"), Ok(("gold/rules".into(), "gold-rules".into())));
        assert_eq!(m(" rules / llm "), Ok(("rules/llm".into(), "rules-llm".into())));
        assert_eq!(m("llm/llm"), Ok(("llm".into(), "llm".into())));
        assert!(m("gold/gold").unwrap_err().contains("gold is an extraction mode only"));
        assert!(m("fancy").unwrap_err().contains("expected rules, llm, gold or EXTRACT/JUDGE"));
        assert!(Modes::parse("gold/llm").unwrap().uses_llm());
        assert!(!Modes::parse("gold").unwrap().uses_llm());
    }

    #[test]
    fn verdict_old_invalidates_the_live_fact() {
        let (rec, state) = two_episodes(&Scripted(Some(Verdict::Old)));
        assert_eq!(rec.facts[0].outcome, CandidateOutcome::Created);
        assert_eq!(rec.facts[0].ended, vec!["c/e1/c0".to_string()]);
        assert_eq!(rec.invalidations, 1);
        assert_eq!(state.fact("c/e1/c0").unwrap().superseded_by.as_deref(), Some("c/e2/c0"));
    }

    #[test]
    fn verdict_new_discards_the_candidate_entirely() {
        let (rec, state) = two_episodes(&Scripted(Some(Verdict::New)));
        assert_eq!(rec.facts[0].outcome, CandidateOutcome::JudgedNew);
        assert!(!rec.facts[0].stored);
        assert_eq!(rec.invalidations, 0);
        assert!(state.fact("c/e1/c0").unwrap().is_live());
        assert_eq!(state.facts.len(), 1);
    }

    #[test]
    fn judge_failure_makes_every_verdict_neither_and_warns() {
        let (rec, state) = two_episodes(&Scripted(None));
        assert_eq!(rec.facts[0].outcome, CandidateOutcome::Created);
        assert_eq!(rec.facts[0].verdicts[0].verdict, Verdict::Neither);
        assert!(rec.warnings.iter().any(|w| w.kind == "judge_failed"));
        assert!(state.facts.iter().all(|f| f.is_live()));
    }

    #[test]
    fn low_confidence_and_historical_candidates_skip_judging() {
        // A judge that fails when called: a call would leave `judge_failed`.
        let judge = Scripted(None);
        let conv = Conversation {
            id: "c".into(),
            speakers: vec!["Alice".into()],
            episodes: vec![episode("e1", "t1", "2024-01-01"), episode("e2", "t2", "2024-02-01"), episode("e3", "t3", "2024-03-01")],
            gold: Gold::default(),
        };
        let (store, cfg, mut state) = (Store::in_memory().unwrap(), Config::default(), ConvState::default());
        back(&front_of(vec![fact("Google", "t1")]), &conv, &conv.episodes[0], &mut state, &cfg, &judge, &store).unwrap();
        let hedged = CandidateFact { confidence: 0.75, ..fact("Anthropic", "t2") };
        let rec = back(&front_of(vec![hedged]), &conv, &conv.episodes[1], &mut state, &cfg, &judge, &store).unwrap();
        assert_eq!(rec.facts[0].outcome, CandidateOutcome::Created, "stored");
        assert!(rec.facts[0].verdicts.is_empty(), "paired with nothing");
        assert!(rec.warnings.is_empty(), "the judge was not asked: {:?}", rec.warnings);
        let past = CandidateFact {
            predicate: "worked at".into(),
            content: "Alice worked at Google until 2023".into(),
            valid_until: Some("2023-12-31".into()),
            ..fact("Google", "t3")
        };
        let rec = back(&front_of(vec![past]), &conv, &conv.episodes[2], &mut state, &cfg, &judge, &store).unwrap();
        let v = &rec.facts[0].verdicts;
        assert_eq!(v.len(), 1, "only the relationship it ends: {v:?}");
        assert_eq!(
            (v[0].live_id.as_str(), v[0].verdict, v[0].guard.as_deref()),
            ("c/e1/c0", Verdict::Old, Some("historical_skips_judging"))
        );
        assert!(rec.warnings.is_empty(), "the judge was not asked: {:?}", rec.warnings);
        assert_eq!(state.fact("c/e1/c0").unwrap().superseded_by.as_deref(), Some("c/e3/c0"));
        assert!(state.fact("c/e2/c0").unwrap().is_live(), "a historical candidate ends only the relationship it names");
    }
}
