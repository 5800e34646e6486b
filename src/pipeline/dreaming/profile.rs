//! The `dreaming` [`Profile`] (docs/dreaming.md): evidence is kept as it
//! arrives (the run stores it raw), and after each episode the triggers
//! decide whether a **pass** runs. A pass reads the backlog (the turns of
//! the episodes ingested so far that no pass consumed), lets a dreamer turn
//! it into `apply_ontology_ops` requests, sends each through
//! [`super::plan::apply`] (the pure checks, the planner, the store's one
//! transaction), then records the pass, the turns it consumed and the
//! watermark.
//!
//! Dreamers: `rules` (the rules extractor's triples become operations) and
//! `gold` (the dataset's gold facts become operations). Both are scripted
//! clients of the same apply path as a model would be; the `llm` dreamer
//! and the capability registry are not built yet.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use super::config::Dreamer;
use super::pass::{PassMode, TriggerReason, TriggerState, TurnState, evaluate_trigger, next_watermark, select_mode, turn_tokens};
use super::plan::apply;
use super::validate::TurnIndex;
use crate::error::Result;
use crate::model::ontology::{Effect, PassRecord};
use crate::normalize::sha256_hex;
use crate::pipeline::extract::{ExtractInput, postprocess};
use crate::pipeline::profiles::Profile;
use crate::pipeline::{Config, EpisodeFront, EpisodeRecord, Stages};
use crate::state::ConvState;
use crate::store::Store;
use crate::types::{Conversation, EntityType, Episode, Warning};

/// Signet's Dreaming pass (docs/dreaming.md).
pub struct Dreaming;

impl Profile for Dreaming {
    fn name(&self) -> &'static str {
        "dreaming"
    }
    fn summary(&self) -> &'static str {
        "Signet's Dreaming (in progress: rules and gold dreamers; its claims are not yet scored): evidence kept as it arrives, later passes submit ontology operations through validate_proposal and one audited apply path"
    }
    fn back(
        &self,
        _front: &EpisodeFront,
        conv: &Conversation,
        episode: &Episode,
        _state: &mut ConvState,
        cfg: &Config,
        stages: Stages<'_>,
        store: &Store,
    ) -> Result<EpisodeRecord> {
        dream_episode(stages, conv, episode, cfg, store)
    }
    fn episode(
        &self,
        stages: Stages<'_>,
        conv: &Conversation,
        episode: &Episode,
        _state: &mut ConvState,
        cfg: &Config,
        store: &Store,
    ) -> Result<EpisodeRecord> {
        dream_episode(stages, conv, episode, cfg, store)
    }
}

fn empty_record(conv: &Conversation, episode: &Episode) -> EpisodeRecord {
    let mut r = EpisodeRecord::disabled(&conv.id, episode);
    r.warnings.clear();
    r
}

/// After `episode` is stored: evaluate the triggers and run the passes they call for.
pub fn dream_episode(stages: Stages<'_>, conv: &Conversation, episode: &Episode, cfg: &Config, store: &Store) -> Result<EpisodeRecord> {
    let mut record = empty_record(conv, episode);
    let k = conv.episodes.iter().position(|e| e.id == episode.id).unwrap_or(0);
    let ingested = &conv.episodes[..=k];
    let dcfg = &cfg.dreaming;
    let triggers = dcfg.triggers(cfg.enabled);
    let passes = store.dream_passes(Some(&conv.id))?;
    let mut since = match passes.last().and_then(|p| ingested.iter().position(|e| e.id == p.after_episode)) {
        Some(i) => k - i,
        None => k + 1,
    };
    let ended = k + 1 == conv.episodes.len();
    let mut seq = passes.len();
    let mut watermark = passes.last().and_then(|p| p.watermark_after);
    let mut ran = 0usize;
    loop {
        let settled = store.settled_turns(&conv.id)?;
        let backlog: Vec<(&Episode, usize)> =
            ingested.iter().enumerate().filter(|(_, e)| e.turns.iter().any(|t| !settled.contains(&t.id))).map(|(i, e)| (e, i)).collect();
        let backlog_turns: Vec<&crate::types::Turn> =
            ingested.iter().flat_map(|e| e.turns.iter()).filter(|t| !settled.contains(&t.id)).collect();
        let state = TriggerState {
            backlog_turns: backlog_turns.len(),
            backlog_tokens: backlog_turns.iter().map(|t| turn_tokens(&t.text)).sum(),
            pending_attention: false,
            episodes_since_pass: since,
            conversation_ended: ended,
        };
        let Some(reason) = evaluate_trigger(&state, &triggers) else { break };
        if ran >= dcfg.max_final_passes || (ran > 0 && reason != TriggerReason::EndOfConversation && !ended) {
            break;
        }
        seq += 1;
        ran += 1;
        let mode = select_mode(Some(super::pass::Focus::Content), false, true);
        let pass = run_pass(stages, conv, ingested, &backlog, &settled, state, reason, mode, seq, watermark, episode, cfg, store)?;
        watermark = pass.watermark_after;
        record.warnings.push(Warning::new(
            "dreaming_pass",
            format!(
                "pass {} ({}, {}): {} applied, {} skipped, {} failed; {} turns consumed, {} remaining",
                pass.id,
                pass.mode,
                pass.trigger,
                pass.ops_applied,
                pass.ops_skipped,
                pass.ops_failed,
                pass.evidence_consumed,
                pass.evidence_remaining
            ),
        ));
        record.stored += pass.ops_applied;
        since = 0;
        if pass.evidence_consumed == 0 {
            break;
        }
    }
    Ok(record)
}

#[allow(clippy::too_many_arguments)]
fn run_pass(
    stages: Stages<'_>,
    conv: &Conversation,
    ingested: &[Episode],
    backlog: &[(&Episode, usize)],
    settled: &HashSet<String>,
    state: TriggerState,
    reason: TriggerReason,
    mode: PassMode,
    seq: usize,
    watermark: Option<usize>,
    after: &Episode,
    cfg: &Config,
    store: &Store,
) -> Result<PassRecord> {
    let dcfg = &cfg.dreaming;
    let pass_id = format!("{}/p{seq}", conv.id);
    let mut turns = TurnIndex::new(&conv.id);
    for e in ingested {
        turns.add_episode(e, |_| false);
    }
    let requests = match dcfg.dreamer() {
        Dreamer::Rules => rules_requests(stages, conv, backlog, cfg, store)?,
        Dreamer::Gold => gold_requests(conv, backlog, cfg),
    };
    let (limits, plan_cfg, caps) = (dcfg.limits(), dcfg.plan(cfg.shadow_mode, cfg.mutations_frozen), dcfg.caps());
    let mut pass = PassRecord {
        id: pass_id.clone(),
        conversation_id: conv.id.clone(),
        seq,
        mode: mode.as_str().into(),
        trigger: reason.as_str().into(),
        status: "completed".into(),
        after_episode: after.id.clone(),
        backlog_tokens_before: state.backlog_tokens,
        watermark_before: watermark,
        ..PassRecord::default()
    };
    let mut excluded: HashSet<String> = HashSet::new();
    for (call, (json, cited)) in requests.iter().enumerate() {
        let answer = apply(store, json, &turns, &limits, &plan_cfg, caps, &pass_id, call + 1)?;
        pass.tool_calls += 1;
        if answer.rejection_kind.is_some() {
            pass.ops_failed += 1;
            excluded.extend(cited.iter().cloned());
        }
        for item in &answer.items {
            match item.effect {
                Effect::Applied => pass.ops_applied += 1,
                Effect::Skipped => pass.ops_skipped += 1,
                Effect::Failed => pass.ops_failed += 1,
            }
        }
    }
    // Mutations frozen: nothing is consumed (docs/dreaming.md, 8.5).
    let consume = !cfg.mutations_frozen;
    let mut now_settled = Vec::new();
    for (e, _) in backlog {
        for t in &e.turns {
            if consume && !settled.contains(&t.id) && !excluded.contains(&t.id) {
                now_settled.push((t.id.clone(), sha256_hex(t.text.as_bytes()), "consumed"));
            }
        }
    }
    let done: HashSet<&str> = now_settled.iter().map(|(t, _, _)| t.as_str()).collect();
    let states: Vec<Vec<TurnState>> = ingested
        .iter()
        .map(|e| {
            e.turns
                .iter()
                .map(|t| if settled.contains(&t.id) || done.contains(t.id.as_str()) { TurnState::Consumed } else { TurnState::Pending })
                .collect()
        })
        .collect();
    pass.watermark_after = next_watermark(mode, watermark, &states);
    pass.evidence_consumed = now_settled.len();
    pass.evidence_remaining = state.backlog_turns - now_settled.len();
    pass.backlog_tokens_after = ingested
        .iter()
        .flat_map(|e| e.turns.iter())
        .filter(|t| !settled.contains(&t.id) && !done.contains(t.id.as_str()))
        .map(|t| turn_tokens(&t.text))
        .sum();
    pass.summary = format!("{} requests, {} operations applied", pass.tool_calls, pass.ops_applied);
    store.record_pass(&pass, &now_settled)?;
    Ok(pass)
}

/// The ontology's entity type for stage 1's (docs/dreaming.md, 3.3).
fn onto_type(t: EntityType) -> &'static str {
    match t {
        EntityType::Person => "person",
        EntityType::Org => "organization",
        EntityType::Place => "place",
        EntityType::Product => "product",
        EntityType::Event => "event",
        EntityType::Concept => "concept",
        EntityType::Food | EntityType::Animal | EntityType::Thing => "unknown",
    }
}

/// A quote the cited turn holds exactly: `preferred` when the turn holds it,
/// else the turn's own text (cut to the quote cap).
fn exact_quote(turn_text: &str, preferred: &str, max_chars: usize) -> String {
    let p = preferred.trim();
    if !p.is_empty() && p.chars().count() <= max_chars && turn_text.contains(p) {
        return p.to_string();
    }
    turn_text.trim().chars().take(max_chars).collect::<String>().trim_end().to_string()
}

/// Builds the requests of a pass from (episode's operations, their cited
/// turns), chunked to the per-call cap.
struct Requests<'a> {
    conv: &'a str,
    max: usize,
    out: Vec<(String, Vec<String>)>,
    ops: Vec<Value>,
    cited: Vec<String>,
}

impl Requests<'_> {
    fn push(&mut self, group: Vec<Value>, turn: &str) {
        if self.ops.len() + group.len() > self.max && !self.ops.is_empty() {
            self.flush();
        }
        self.ops.extend(group);
        self.cited.push(turn.to_string());
    }
    fn flush(&mut self) {
        if self.ops.is_empty() {
            return;
        }
        let json = json!({"agentId": self.conv, "operations": std::mem::take(&mut self.ops)}).to_string();
        self.out.push((json, std::mem::take(&mut self.cited)));
    }
}

/// One fact's operations: the subject entity (unless the pass knows it),
/// the claim (set on a single-valued aspect, else added), and for an object
/// that is an entity, that entity and a `related_to` link.
#[allow(clippy::too_many_arguments)]
fn fact_ops(
    known: &mut HashSet<String>,
    single: &HashSet<String>,
    subject: (&str, &str),
    object: Option<(&str, &str)>,
    predicate: &str,
    content: &str,
    confidence: f64,
    evidence: &Value,
) -> Vec<Value> {
    let mut ops = Vec::new();
    let mut entity = |name: &str, ty: &str, ops: &mut Vec<Value>| {
        let canonical = super::quality::normalize_entity_name(name);
        if known.insert(canonical) {
            ops.push(json!({"operation": "create_entity", "payload": {"name": name, "type": ty}, "evidence": evidence, "confidence": confidence}));
        }
    };
    entity(subject.0, subject.1, &mut ops);
    let aspect = if predicate.trim().is_empty() { "observation" } else { predicate };
    let op = if single.contains(&super::quality::normalize_entity_name(aspect)) { "set_claim_value" } else { "add_claim_value" };
    ops.push(json!({
        "operation": op,
        "payload": {"entityId": subject.0, "aspectId": aspect, "claimKey": aspect, "value": content},
        "evidence": evidence, "confidence": confidence,
    }));
    if let Some((name, ty)) = object
        && super::quality::normalize_entity_name(name) != super::quality::normalize_entity_name(subject.0)
    {
        entity(name, ty, &mut ops);
        ops.push(json!({
            "operation": "create_link",
            "payload": {"fromEntityId": subject.0, "toEntityId": name, "linkType": "related_to"},
            "reason": aspect, "evidence": evidence, "confidence": confidence,
        }));
    }
    ops
}

fn known_names(store: &Store, conv: &str) -> Result<HashSet<String>> {
    Ok(store.ontology_view(conv)?.entities.into_iter().filter(|e| e.active).map(|e| e.canonical_name).collect())
}

/// The rules dreamer: stage 1's rules extraction of each backlog episode,
/// each fact's triple as operations.
fn rules_requests(
    stages: Stages<'_>,
    conv: &Conversation,
    backlog: &[(&Episode, usize)],
    cfg: &Config,
    store: &Store,
) -> Result<Vec<(String, Vec<String>)>> {
    let dcfg = &cfg.dreaming;
    let single = dcfg.plan(false, false).single_valued;
    let mut known = known_names(store, &conv.id)?;
    let known_list: Vec<String> = known.iter().cloned().collect();
    let mut req = Requests { conv: &conv.id, max: dcfg.max_ops_per_call, out: Vec::new(), ops: Vec::new(), cited: Vec::new() };
    for (episode, _) in backlog {
        let input =
            ExtractInput { conversation_id: &conv.id, speakers: &conv.speakers, episode, known_entities: &known_list, recent_facts: &[] };
        let raw = stages.extractor.extract(&input)?;
        let extraction = postprocess(raw, &input, cfg);
        let types: HashMap<String, &'static str> =
            extraction.entities.iter().map(|e| (super::quality::normalize_entity_name(&e.name), onto_type(e.entity_type))).collect();
        let type_of = |name: &str| -> &'static str {
            let c = super::quality::normalize_entity_name(name);
            types.get(&c).copied().unwrap_or(if conv.speakers.iter().any(|s| super::quality::normalize_entity_name(s) == c) {
                "person"
            } else {
                "unknown"
            })
        };
        let texts: HashMap<&str, &str> = episode.turns.iter().map(|t| (t.id.as_str(), t.text.as_str())).collect();
        for f in &extraction.facts {
            let f = &f.fact;
            let Some(text) = texts.get(f.source_turn.as_str()) else { continue };
            let evidence = json!([{"source_ref": format!("turn:{}", f.source_turn), "quote": exact_quote(text, &f.source_quote, dcfg.max_quote_chars)}]);
            let object_is_entity = types.contains_key(&super::quality::normalize_entity_name(&f.object));
            let object = object_is_entity.then(|| (f.object.as_str(), type_of(&f.object)));
            let group =
                fact_ops(&mut known, &single, (&f.subject, type_of(&f.subject)), object, &f.predicate, &f.content, f.confidence, &evidence);
            req.push(group, &f.source_turn);
        }
    }
    req.flush();
    Ok(req.out)
}

/// The gold dreamer: each gold fact of a backlog episode becomes a claim of
/// its subject (the gold subject, else the speaker of its first evidence
/// turn), quoting that turn.
fn gold_requests(conv: &Conversation, backlog: &[(&Episode, usize)], cfg: &Config) -> Vec<(String, Vec<String>)> {
    let dcfg = &cfg.dreaming;
    let single = dcfg.plan(false, false).single_valued;
    let mut known = HashSet::new();
    let mut req = Requests { conv: &conv.id, max: dcfg.max_ops_per_call, out: Vec::new(), ops: Vec::new(), cited: Vec::new() };
    let episodes: HashSet<&str> = backlog.iter().map(|(e, _)| e.id.as_str()).collect();
    let turns: HashMap<&str, &crate::types::Turn> = backlog.iter().flat_map(|(e, _)| e.turns.iter()).map(|t| (t.id.as_str(), t)).collect();
    for g in conv.gold.facts.iter().filter(|g| episodes.contains(g.episode.as_str())) {
        let Some(turn) = g.evidence.iter().find_map(|t| turns.get(t.as_str())) else { continue };
        let subject = g.subject.clone().unwrap_or_else(|| turn.speaker.clone());
        let ty = if conv.speakers.iter().any(|s| s == &subject) { "person" } else { "unknown" };
        let predicate = g.predicate.clone().unwrap_or_else(|| "observation".into());
        let evidence = json!([{"source_ref": format!("turn:{}", turn.id), "quote": exact_quote(&turn.text, "", dcfg.max_quote_chars)}]);
        let group = fact_ops(&mut known, &single, (&subject, ty), None, &predicate, &g.text, 1.0, &evidence);
        req.push(group, &turn.id);
    }
    req.flush();
    req.out
}
