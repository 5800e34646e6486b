//! One episode through the memorix profile: each observation in order is
//! formed against the conversation's memories and those planned before it
//! in the episode, the plan is written in one transaction, and the state
//! mirrors what the store applied. Rules in docs/profiles.md.

use std::time::Instant;

use super::evaluate::Category;
use super::form::{self, Figures, Formation};
use super::llm::{Calls, MemorixLlm};
use super::observe::{self, Input};
use super::resolve::ResolveAction;
use super::search::{Indexed, Lexical, MemorySearch, StoreSearch, query_text};
use super::write::{self, Op, Plan};
use crate::embed::Embedder;
use crate::error::Result;
use crate::normalize::normalize_and_hash_content;
use crate::pipeline::Config;
use crate::pipeline::judge::JudgeContext;
use crate::pipeline::records::{CandidateOutcome, CandidateRecord, EpisodeRecord, Timings};
use crate::pipeline::resolve::EntityDecision;
use crate::pipeline::{StageMode, ms};
use crate::state::{ConvState, EntityRec, FactRec};
use crate::store::Store;
use crate::types::{CandidateFact, Conversation, EntityType, Episode, FactKind, FactType, ValueTier};

/// Planning state of one episode: memories as they will be after the plan.
struct Planner<'s> {
    conv: &'s Conversation,
    episode: &'s Episode,
    memories: Vec<Indexed>,
    /// Existing entity names, then the episode's new ones.
    names: Vec<String>,
    entity_ids: Vec<String>,
    new_entities: Vec<EntityRec>,
    decisions: Vec<EntityDecision>,
    next_entity: usize,
}

impl<'s> Planner<'s> {
    fn new(conv: &'s Conversation, episode: &'s Episode, state: &ConvState) -> Planner<'s> {
        let memories = state.facts.iter().filter(|f| f.is_live()).map(Indexed::of).collect();
        Planner {
            conv,
            episode,
            memories,
            names: state.entities.iter().map(|e| e.name.clone()).collect(),
            entity_ids: state.entities.iter().map(|e| e.id.clone()).collect(),
            new_entities: Vec::new(),
            decisions: Vec::new(),
            next_entity: state.entities.len(),
        }
    }

    /// The entity id for `name`, creating it (planned) when new.
    fn entity(&mut self, name: &str) -> String {
        if let Some(i) = self.names.iter().position(|n| n == name) {
            return self.entity_ids[i].clone();
        }
        let id = format!("{}/e{}", self.conv.id, self.next_entity);
        self.next_entity += 1;
        self.names.push(name.to_string());
        self.entity_ids.push(id.clone());
        self.new_entities.push(EntityRec {
            id: id.clone(),
            name: name.to_string(),
            entity_type: EntityType::Thing,
            aliases: vec![],
            embedding: vec![],
        });
        self.decisions.push(EntityDecision::Insert { raw: name.to_string(), entity_id: id.clone() });
        id
    }

    fn memory(&self, id: &str) -> Option<usize> {
        self.memories.iter().position(|m| m.hit.id == id)
    }
}

fn tier(c: Category) -> ValueTier {
    match c {
        Category::Core => ValueTier::Core,
        Category::Contextual => ValueTier::Contextual,
        Category::Ephemeral => ValueTier::Ephemeral,
    }
}

/// The stored row of a formed observation.
fn memory_row(id: &str, input: &Input, f: &Formation, narrative: &str, facts: &[String], entity: (&str, String), episode: &str) -> FactRec {
    let x = &f.extracted;
    let (entity_name, entity_id) = entity;
    let content = narrative.trim().to_string();
    let h = normalize_and_hash_content(&content);
    FactRec {
        id: id.to_string(),
        fact: CandidateFact {
            subject: entity_name.to_string(),
            predicate: x.obs_type.clone(),
            object: x.title.clone(),
            kind: FactKind::Literal,
            fact_type: if x.obs_type == "decision" { FactType::Decision } else { FactType::Fact },
            content,
            confidence: 1.0,
            source_turn: input.id.clone(),
            source_quote: facts.join("\n"),
            valid_from: None,
            valid_until: None,
        },
        normalized: h.normalized,
        hash: h.hash,
        invalid_at: None,
        superseded_by: None,
        source_episode: episode.to_string(),
        pinned: false,
        subject_entity: Some(entity_id),
        object_entity: None,
        embedding: Vec::new(),
        slot: None,
        keys: Default::default(),
    }
}

/// Embeds a text through the run's embedder.
type Embed<'e> = &'e dyn Fn(&str) -> Result<Vec<f32>>;

/// A memory's vector: the run's embedder applied to its query text (its
/// title and the start of its narrative, [`query_text`]); none without an
/// embedder.
fn memory_vector(embed: Option<Embed<'_>>, m: &Indexed) -> Result<Vec<f32>> {
    embed.map_or_else(|| Ok(Vec::new()), |e| e(&query_text(&m.hit)))
}

/// The record and the write operation of one formed observation; a memory
/// it writes (new, evolved or merged) carries its vector, embedded here,
/// before the episode's write transaction.
fn plan_one(
    p: &mut Planner<'_>,
    id: String,
    input: &Input,
    f: &Formation,
    mode: StageMode,
    cfg: &Config,
    embed: Option<Embed<'_>>,
) -> Result<(CandidateRecord, Option<Op>)> {
    let x = &f.extracted;
    let decay = cfg.memorix.ephemeral_policy == "decay";
    let importance = match f.value.category {
        Category::Core => "high",
        Category::Contextual => "normal",
        Category::Ephemeral => "low",
    };
    let discard_noise = f.value.category == Category::Ephemeral && !decay;
    let (merged_narrative, merged_facts) = f.resolution.merged.clone().unwrap_or_else(|| (x.narrative.clone(), x.facts.clone()));
    let target = f.resolution.target_id.clone();
    let (outcome, op, reason) = match f.resolution.action {
        ResolveAction::Discard => (CandidateOutcome::Discarded, None, f.resolution.reason.clone()),
        _ if discard_noise => (CandidateOutcome::NoiseRejected, None, f.value.reason.clone()),
        ResolveAction::New => {
            let entity = p.entity(&x.entity.name);
            let mut row = memory_row(&id, input, f, &x.narrative, &x.facts, (&x.entity.name, entity), &p.episode.id);
            let mut m = Indexed::of(&row);
            m.vector = memory_vector(embed, &m)?;
            row.embedding = m.vector.clone();
            p.memories.push(m);
            (
                CandidateOutcome::Insert,
                Some(Op::Insert { row: Box::new(row), importance, decay: f.value.category == Category::Ephemeral, supersedes: None }),
                f.resolution.reason.clone(),
            )
        }
        ResolveAction::Evolve => {
            // The rewrite keeps the target's entity, as Memorix's upsert does.
            let k = target.as_deref().and_then(|t| p.memory(t));
            let name = k.map_or_else(|| x.entity.name.clone(), |k| p.memories[k].hit.entity_name.clone());
            if let Some(k) = k {
                p.memories.remove(k);
            }
            let entity = p.entity(&name);
            let mut row = memory_row(&id, input, f, &merged_narrative, &merged_facts, (&name, entity), &p.episode.id);
            let mut m = Indexed::of(&row);
            m.vector = memory_vector(embed, &m)?;
            row.embedding = m.vector.clone();
            p.memories.push(m);
            let op =
                Op::Insert { row: Box::new(row), importance, decay: f.value.category == Category::Ephemeral, supersedes: target.clone() };
            (CandidateOutcome::Insert, Some(op), f.resolution.reason.clone())
        }
        ResolveAction::Merge => {
            let t = target.clone().unwrap_or_default();
            // The rewrite's vector is its new query text's, written with it.
            let mut embedding = Vec::new();
            if let Some(k) = p.memory(&t) {
                let mut hit = p.memories[k].hit.clone();
                hit.narrative = merged_narrative.trim().to_string();
                hit.facts = merged_facts.clone();
                hit.title = x.title.clone();
                let mut m = Indexed::of_hit(hit);
                m.vector = memory_vector(embed, &m)?;
                embedding = m.vector.clone();
                p.memories[k] = m;
            }
            let h = normalize_and_hash_content(merged_narrative.trim());
            let update = crate::pipeline::write::MemoryUpdate {
                title: x.title.clone(),
                content: merged_narrative.trim().to_string(),
                normalized: h.normalized,
                hash: h.hash,
                facts: merged_facts.join("\n"),
                turns: vec![input.id.clone()],
                embedding,
            };
            (CandidateOutcome::Merged, Some(Op::Merge { candidate: id.clone(), target: t, update }), f.resolution.reason.clone())
        }
    };
    let h = normalize_and_hash_content(x.narrative.trim());
    let rec = CandidateRecord {
        id: id.clone(),
        conversation: p.conv.id.clone(),
        episode: p.episode.id.clone(),
        turn: input.id.clone(),
        subject: x.entity.name.clone(),
        predicate: x.obs_type.clone(),
        object: x.title.clone(),
        kind: FactKind::Literal,
        fact_type: if x.obs_type == "decision" { FactType::Decision } else { FactType::Fact },
        content: x.narrative.trim().to_string(),
        confidence: 1.0,
        value_score: f.value.score,
        tier: tier(f.value.category),
        content_hash: h.hash,
        outcome,
        reason,
        related: target,
        subject_entity: p.names.iter().position(|n| *n == x.entity.name).map(|i| p.entity_ids[i].clone()),
        object_entity: None,
        verdicts: vec![],
        neither_unlisted: 0,
        unlisted: vec![],
        ended: vec![],
        stored: false,
        decision: None,
        formed: Some(Box::new(f.record(input, mode))),
    };
    Ok((rec, op))
}

/// One observation's formation with what it was formed against: the
/// entity names and the search's hits (for the differential test).
#[derive(Debug, Clone)]
pub struct Traced {
    pub input: Input,
    pub entity_names: Vec<String>,
    pub formation: Formation,
}

/// LLM mode: the model, and whether Extract asks it too (`--extract llm`).
#[derive(Clone, Copy)]
pub struct LlmStages<'m> {
    pub model: &'m MemorixLlm,
    pub extract: bool,
}

/// What an episode's formation may call besides the store: the model (LLM
/// mode) and the embedder (each written memory's vector; the queries of
/// `memorix_search = "store"`, which needs it). Without an embedder the
/// memories are written without vectors.
#[derive(Clone, Copy, Default)]
pub struct Deps<'m> {
    pub llm: Option<LlmStages<'m>>,
    pub embedder: Option<&'m dyn Embedder>,
}

/// The memorix profile's work on one episode.
pub fn back(
    conv: &Conversation,
    episode: &Episode,
    state: &mut ConvState,
    cfg: &Config,
    store: &Store,
    deps: Deps<'_>,
) -> Result<EpisodeRecord> {
    back_traced(conv, episode, state, cfg, store, deps, None)
}

/// [`back`], pushing each observation's [`Traced`] onto `trace` when given.
pub fn back_traced(
    conv: &Conversation,
    episode: &Episode,
    state: &mut ConvState,
    cfg: &Config,
    store: &Store,
    deps: Deps<'_>,
    mut trace: Option<&mut Vec<Traced>>,
) -> Result<EpisodeRecord> {
    let llm = deps.llm;
    let store_search = cfg.memorix.search == "store";
    // Every memory written gets its vector (the QA search's vector leg,
    // and the store search's); the store search cannot do without one.
    let embedder = match (store_search, deps.embedder) {
        (true, None) => return Err(crate::error::Error::Config("memorix_search = \"store\" needs the run's embedder".into())),
        (_, e) => e,
    };
    // Resolve reads each observation's narrative and each hit's (evidence
    // of change): a narrative found again, in this episode or a later one,
    // is read once in the conversation.
    let _readings = state.keep_readings();
    let source = format!("{}/{} memorix", conv.id, episode.id);
    let embed = |text: &str| -> Result<Vec<f32>> {
        let e = embedder.ok_or_else(|| crate::error::Error::Other("no embedder".into()))?;
        Ok(e.embed(&[text], &source)?.pop().unwrap_or_default())
    };
    let memory_embed: Option<Embed<'_>> = embedder.map(|_| &embed as Embed<'_>);
    let stored: std::collections::HashSet<String> =
        if store_search { state.facts.iter().filter(|f| f.is_live()).map(|f| f.id.clone()).collect() } else { Default::default() };
    let params = crate::store::SearchParams::from_config(cfg);
    let t = Instant::now();
    let mut warnings = Vec::new();
    let inputs = observe::inputs(episode, &conv.speakers, &mut warnings);
    let figures = Figures::of(cfg);
    let mut planner = Planner::new(conv, episode, state);
    let mut records = Vec::with_capacity(inputs.len());
    let mut ops = Vec::new();
    let mut calls = Calls::default();
    let ctx = JudgeContext { conversation_id: &conv.id, episode_id: &episode.id };
    let mode = if llm.is_some() { StageMode::Llm } else { StageMode::Rules };
    for (i, input) in inputs.iter().enumerate() {
        let lexical = Lexical { memories: &planner.memories, min_score: cfg.memorix.search_min };
        let hybrid = StoreSearch {
            store,
            conversation: &conv.id,
            memories: &planner.memories,
            stored: &stored,
            embed: &embed,
            params: params.clone(),
        };
        let search: &dyn MemorySearch = if store_search { &hybrid } else { &lexical };
        let f = match llm {
            None => form::rules(input, &planner.names, search, figures)?,
            Some(l) => form::llm(input, &planner.names, search, figures, l.model, &ctx, l.extract, &mut calls)?,
        };
        let names = trace.is_some().then(|| planner.names.clone());
        let id = format!("{}/{}/c{i}", conv.id, episode.id);
        let (rec, op) = plan_one(&mut planner, id, input, &f, mode, cfg, memory_embed)?;
        if let (Some(t), Some(entity_names)) = (trace.as_deref_mut(), names) {
            t.push(Traced { input: input.clone(), entity_names, formation: f });
        }
        records.push(rec);
        ops.extend(op);
    }
    let extract_ms = ms(t);
    let t = Instant::now();
    let plan = Plan {
        conversation: conv.id.clone(),
        episode: episode.id.clone(),
        now: episode.timestamp.clone(),
        entities: planner.new_entities,
        ops,
    };
    let counts = write::execute(store, plan, cfg.write_mode(), state, &mut records)?;
    let timings = Timings { extract_ms, write_ms: ms(t), ..Timings::default() };
    Ok(EpisodeRecord {
        conversation: conv.id.clone(),
        episode: episode.id.clone(),
        timestamp: episode.timestamp.clone(),
        turns: episode.turns.len(),
        candidates: records.len(),
        stored: records.iter().filter(|r| r.stored).count(),
        entity_decisions: planner.decisions,
        warnings: {
            warnings.extend(calls.warnings);
            warnings
        },
        usage: calls.usage,
        invalidations: counts.invalidations,
        closures: 0,
        review_needed: 0,
        blocked: counts.blocked,
        facts: records,
        timings,
    })
}
