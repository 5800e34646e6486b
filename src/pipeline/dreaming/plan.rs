//! The planner of `apply_ontology_ops` (docs/dreaming.md, 4.3): the
//! graph-state guards, evaluated against a read snapshot of the
//! conversation's ontology before the transaction, turn a validated request
//! into a complete [`OntoPlan`] the store applies in one transaction
//! (`Store::apply_ontology_ops`, which adds the write caps). [`apply`] is the
//! whole path: parse, the pure checks, read, plan, apply.
//!
//! `decline_attention` resolves a pending hygiene attention record
//! ([`super::hygiene`]); `flag` mints one (its id is its subject); the
//! archives and `merge_entities` consume the record they cite as
//! provenance. `merge_aspects` is not carried out yet: it is recorded
//! `failed` with kind `unsupported` (docs/dreaming.md, 14).
//!
//! Duplicate entities: exact canonical name, then an alias of a live entity
//! of the same type, then (with an embedder, [`apply_resolving`]) the
//! nearest live entity of the same type by cosine through stage 2's
//! resolver ([`duplicate_of`]).

use std::collections::{HashMap, HashSet};

use serde_json::json;

use super::contract::{ApplyRequest, ContractLimits, LinkType, Op, Operation, Rejection, parse_apply_request};
use super::quality::{classify_entity_quality, is_concrete_type, normalize_entity_name};
use super::validate::{AttentionRef, TurnIndex, ValidatedOperation, validate_request};
use crate::embed::Embedder;
use crate::error::Result;
use crate::model::ontology::{
    Cardinality, ClaimStatus, Effect, EvidenceRef, OntoCaps, OntoPlan, OntoWrite, OntologyView, OpOutcome, PlannedOp, ViewAspect,
    ViewClaim, ViewEntity, ViewLink, next_seq,
};
use crate::normalize::normalize_content;
use crate::store::Store;

/// The controls and graph caps the planner applies (docs/dreaming.md, 5 and 8.5).
#[derive(Debug, Clone, PartialEq)]
pub struct PlanConfig {
    /// Aspect names (predicates) whose aspect holds one active value.
    pub single_valued: HashSet<String>,
    /// Active aspects per entity (Signet's `maxWriteAspectsPerEntity`, 20).
    pub max_aspects_per_entity: usize,
    /// Active claims per aspect (Signet's `maxWriteAttributesPerAspect`, 50).
    pub max_claims_per_aspect: usize,
    /// `shadow_mode`: everything is planned and logged, nothing written.
    pub shadow: bool,
    /// `mutations_frozen`: every operation is skipped.
    pub mutations_frozen: bool,
}

impl Default for PlanConfig {
    fn default() -> Self {
        PlanConfig {
            single_valued: HashSet::new(),
            max_aspects_per_entity: 20,
            max_claims_per_aspect: 50,
            shadow: false,
            mutations_frozen: false,
        }
    }
}

/// The answer of one `apply_ontology_ops` call.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ApplyAnswer {
    /// True when any operation applied.
    pub ok: bool,
    pub items: Vec<OpOutcome>,
    /// A request rejected whole: its kind and message.
    pub error: Option<String>,
    pub rejection_kind: Option<String>,
}

/// One call of `apply_ontology_ops`: parse, the pure checks, the planner
/// against the store's snapshot, then the store's one transaction. A request
/// rejected whole is logged as one `failed` row (operation `request`) with
/// its kind, so the rejection is counted; nothing else is written.
#[allow(clippy::too_many_arguments)]
pub fn apply(
    store: &Store,
    json: &str,
    turns: &TurnIndex,
    limits: &ContractLimits,
    cfg: &PlanConfig,
    caps: OntoCaps,
    pass_id: &str,
    call_seq: usize,
) -> Result<ApplyAnswer> {
    apply_resolving(store, json, turns, limits, cfg, caps, pass_id, call_seq, None)
}

/// Stage 2's resolver for the planner's duplicate check: the embedder of
/// entity names and the cosine at which a same-type entity is the same
/// (`[dreaming] entity_merge_threshold`).
#[derive(Clone, Copy)]
pub struct NameResolver<'a> {
    pub embedder: &'a dyn Embedder,
    pub threshold: f64,
}

/// Canonical entity names with their vectors, and the threshold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NameVectors {
    pub vectors: HashMap<String, Vec<f32>>,
    pub threshold: f64,
}

/// The vectors the duplicate check needs for `request`: each name an
/// operation would create an entity under, and each live entity's name.
/// Computed before any transaction (an embedder may call a model).
pub fn name_vectors(request: &ApplyRequest, view: &OntologyView, resolver: NameResolver<'_>) -> Result<NameVectors> {
    let mut names: Vec<&str> = Vec::new();
    for o in &request.operations {
        let name = match &o.op {
            Op::CreateEntity(p) => &p.name,
            Op::CreateActionType(p) | Op::CreateInterface(p) => &p.name,
            _ => continue,
        };
        names.push(name);
    }
    vectors_for(&names, view, resolver)
}

/// The vectors of `proposed` names and of every live entity's name (none
/// when nothing is proposed): what [`duplicate_of`]'s cosine check reads.
pub fn vectors_for(proposed: &[&str], view: &OntologyView, resolver: NameResolver<'_>) -> Result<NameVectors> {
    let mut names: Vec<String> = proposed.iter().map(|n| normalize_entity_name(n)).collect();
    if names.is_empty() {
        return Ok(NameVectors { vectors: HashMap::new(), threshold: resolver.threshold });
    }
    names.extend(view.entities.iter().filter(|e| e.active).map(|e| e.canonical_name.clone()));
    let mut seen = HashSet::new();
    names.retain(|n| !n.is_empty() && seen.insert(n.clone()));
    let texts: Vec<&str> = names.iter().map(String::as_str).collect();
    let vectors = resolver.embedder.embed(&texts, &format!("{}/dreaming entity names", view.conversation_id))?;
    Ok(NameVectors { vectors: names.into_iter().zip(vectors).collect(), threshold: resolver.threshold })
}

/// [`apply`], with stage 2's cosine duplicate check when `resolver` is given.
#[allow(clippy::too_many_arguments)]
pub fn apply_resolving(
    store: &Store,
    json: &str,
    turns: &TurnIndex,
    limits: &ContractLimits,
    cfg: &PlanConfig,
    caps: OntoCaps,
    pass_id: &str,
    call_seq: usize,
    resolver: Option<NameResolver<'_>>,
) -> Result<ApplyAnswer> {
    let plan = plan_call(store, json, turns, limits, cfg, pass_id, call_seq, resolver)?;
    let items = store.apply_ontology_ops(&plan, caps)?;
    Ok(answer(&plan, items))
}

/// `validate_proposal` over a whole request (memform's extension,
/// docs/dreaming.md 4.2): the same function as `apply_ontology_ops`'s
/// (`plan_call`: the contract, the pure checks, the graph-state guards
/// and the duplicate check — exact, alias, then cosine through stage 2's
/// resolver when `resolver` is given), then the write caps by the store's
/// own rule ([`OntoCaps::refusal`]) against what the pass has applied, and
/// what each operation would do; nothing is written. What a dry run cannot
/// foresee is a store error, which would roll the real call back whole.
#[allow(clippy::too_many_arguments)]
pub fn dry_run(
    store: &Store,
    json: &str,
    turns: &TurnIndex,
    limits: &ContractLimits,
    cfg: &PlanConfig,
    caps: OntoCaps,
    pass_id: &str,
    call_seq: usize,
    resolver: Option<NameResolver<'_>>,
) -> Result<ApplyAnswer> {
    let plan = plan_call(store, json, turns, limits, cfg, pass_id, call_seq, resolver)?;
    // The write caps as the store applies them (`OntoCaps::refusal`), from
    // what the pass has applied so far.
    let (mut applied, mut created) = store.pass_applied_counts(pass_id)?;
    let items = plan
        .ops
        .iter()
        .map(|o| {
            let mut out = OpOutcome {
                index: o.index,
                op_id: format!("{}/{}/{}", plan.pass_id, plan.call_seq, o.index),
                effect: o.effect,
                kind: o.kind.clone(),
                message: o.message.clone(),
                result: o.result.clone(),
            };
            if o.effect == Effect::Applied {
                let new_entities = o.writes.iter().filter(|w| w.creates_entity()).count();
                match caps.refusal(applied, created, new_entities) {
                    Some((kind, message)) => {
                        out.effect = Effect::Failed;
                        out.kind = Some(kind.to_string());
                        out.message = Some(message);
                        out.result = None;
                    }
                    None => {
                        applied += 1;
                        created += new_entities;
                    }
                }
            }
            out
        })
        .collect();
    Ok(answer(&plan, items))
}

#[allow(clippy::too_many_arguments)]
fn plan_call(
    store: &Store,
    json: &str,
    turns: &TurnIndex,
    limits: &ContractLimits,
    cfg: &PlanConfig,
    pass_id: &str,
    call_seq: usize,
    resolver: Option<NameResolver<'_>>,
) -> Result<OntoPlan> {
    let checked = parse_apply_request(json, limits).and_then(|r| validate_request(&r, turns).map(|v| (r, v)));
    Ok(match checked {
        Ok((request, validated)) => {
            let view = store.ontology_view(turns.conversation())?;
            let vectors = match resolver {
                Some(r) => Some(name_vectors(&request, &view, r)?),
                None => None,
            };
            plan_request_resolving(&request, &validated, &view, cfg, pass_id, call_seq, vectors.as_ref())
        }
        Err(rejection) => rejected_request(turns.conversation(), pass_id, call_seq, &rejection),
    })
}

fn answer(plan: &OntoPlan, items: Vec<OpOutcome>) -> ApplyAnswer {
    let rejection = plan.ops.first().filter(|o| o.operation == "request");
    let ok = items.iter().any(|i| i.effect == Effect::Applied);
    let error = match rejection {
        Some(r) => r.message.clone(),
        None if !ok => Some("No ontology operations applied".to_string()),
        None => None,
    };
    ApplyAnswer {
        ok,
        items: if rejection.is_some() { Vec::new() } else { items },
        error,
        rejection_kind: rejection.and_then(|r| r.kind.clone()),
    }
}

fn rejected_request(conversation: &str, pass_id: &str, call_seq: usize, r: &Rejection) -> OntoPlan {
    let message = match r.index {
        Some(i) => format!("operation {i}: {}", r.message),
        None => r.message.clone(),
    };
    OntoPlan {
        conversation_id: conversation.to_string(),
        pass_id: pass_id.to_string(),
        call_seq,
        ops: vec![PlannedOp {
            index: 0,
            operation: "request".into(),
            payload: "{}".into(),
            reason: None,
            confidence: None,
            effect: Effect::Failed,
            kind: Some(r.kind.as_str().to_string()),
            message: Some(message),
            result: None,
            writes: Vec::new(),
            evidence: Vec::new(),
        }],
    }
}

/// The snapshot as the planner changes it while it plans a request (later
/// operations see earlier ones), with the next free id of each kind.
pub(super) struct Work<'v> {
    conv: String,
    pub(super) view: OntologyView,
    next_entity: usize,
    next_aspect: usize,
    next_claim: usize,
    next_link: usize,
    /// Stage 2's resolver's inputs, when the caller gave an embedder.
    pub(super) vectors: Option<&'v NameVectors>,
    /// `flag`s of this request the planner applied: index → attention id.
    pub(super) flags: HashMap<usize, String>,
    /// Attention ids hygiene operations of this request consumed.
    pub(super) consumed: HashSet<String>,
}

impl<'v> Work<'v> {
    fn new(view: &OntologyView, vectors: Option<&'v NameVectors>) -> Work<'v> {
        let conv = view.conversation_id.clone();
        Work {
            vectors,
            flags: HashMap::new(),
            consumed: HashSet::new(),
            next_entity: next_seq(&conv, "o", view.entities.iter().map(|e| e.id.as_str())),
            next_aspect: next_seq(&conv, "a", view.aspects.iter().map(|e| e.id.as_str())),
            next_claim: next_seq(&conv, "c", view.claims.iter().map(|e| e.id.as_str())),
            next_link: next_seq(&conv, "l", view.links.iter().map(|e| e.id.as_str())),
            conv,
            view: view.clone(),
        }
    }

    pub(super) fn id(&mut self, prefix: &str) -> String {
        let n = match prefix {
            "o" => &mut self.next_entity,
            "a" => &mut self.next_aspect,
            "c" => &mut self.next_claim,
            _ => &mut self.next_link,
        };
        let id = format!("{}/{prefix}{n}", self.conv);
        *n += 1;
        id
    }

    /// A live entity by id, or by canonical name or alias when exactly one has it.
    pub(super) fn entity(&self, selector: &str) -> std::result::Result<&ViewEntity, String> {
        if let Some(e) = self.view.entities.iter().find(|e| e.active && e.id == selector) {
            return Ok(e);
        }
        let canonical = normalize_entity_name(selector);
        let by_name: Vec<&ViewEntity> = self.view.entities.iter().filter(|e| e.active && e.canonical_name == canonical).collect();
        let by_name = if by_name.is_empty() {
            self.view.entities.iter().filter(|e| e.active && e.aliases.contains(&canonical)).collect()
        } else {
            by_name
        };
        match by_name.as_slice() {
            [one] => Ok(one),
            [] => Err(format!("entity {selector} not found in this agent; read it back with get_entity before retrying")),
            _ => Err(format!("Entity selector is ambiguous: {selector}. Use an id.")),
        }
    }

    /// A live entity by id only (a hygiene operation names its target by id).
    pub(super) fn live_entity(&self, id: &str) -> std::result::Result<ViewEntity, String> {
        self.view
            .entities
            .iter()
            .find(|e| e.active && e.id == id)
            .cloned()
            .ok_or_else(|| format!("entity {id} not found in this agent; read it back with get_entity before retrying"))
    }

    pub(super) fn aspect(&self, entity: &str, selector: &str) -> Option<&ViewAspect> {
        let canonical = normalize_entity_name(selector);
        self.view.aspects.iter().find(|a| a.active && a.entity_id == entity && (a.id == selector || a.canonical_name == canonical))
    }

    fn active_in_slot(&self, aspect: &str, key: &str) -> Vec<&ViewClaim> {
        self.view.claims.iter().filter(|c| c.status == ClaimStatus::Active && c.aspect_id == aspect && c.claim_key == key).collect()
    }
}

/// What planning one operation decided.
pub(super) struct Decision {
    effect: Effect,
    kind: Option<String>,
    message: Option<String>,
    pub(super) result: Option<serde_json::Value>,
    writes: Vec<OntoWrite>,
}

impl Decision {
    pub(super) fn applied(writes: Vec<OntoWrite>, result: serde_json::Value) -> Decision {
        Decision { effect: Effect::Applied, kind: None, message: None, result: Some(result), writes }
    }
    pub(super) fn skipped(kind: &str, message: String, result: Option<serde_json::Value>) -> Decision {
        Decision { effect: Effect::Skipped, kind: Some(kind.into()), message: Some(message), result, writes: Vec::new() }
    }
    pub(super) fn is_applied(&self) -> bool {
        self.effect == Effect::Applied
    }
    pub(super) fn failed(kind: &str, message: String) -> Decision {
        Decision { effect: Effect::Failed, kind: Some(kind.into()), message: Some(message), result: None, writes: Vec::new() }
    }
}

/// Plans a validated request against `view` (docs/dreaming.md, 4.3).
pub fn plan_request(
    request: &ApplyRequest,
    validated: &[ValidatedOperation],
    view: &OntologyView,
    cfg: &PlanConfig,
    pass_id: &str,
    call_seq: usize,
) -> OntoPlan {
    plan_request_resolving(request, validated, view, cfg, pass_id, call_seq, None)
}

/// [`plan_request`] with stage 2's cosine duplicate check over `vectors`.
pub fn plan_request_resolving(
    request: &ApplyRequest,
    validated: &[ValidatedOperation],
    view: &OntologyView,
    cfg: &PlanConfig,
    pass_id: &str,
    call_seq: usize,
    vectors: Option<&NameVectors>,
) -> OntoPlan {
    let mut work = Work::new(view, vectors);
    let mut ops = Vec::with_capacity(request.operations.len());
    for (index, operation) in request.operations.iter().enumerate() {
        let evidence: Vec<EvidenceRef> = validated
            .get(index)
            .map(|v| {
                v.citations
                    .iter()
                    .map(|c| EvidenceRef {
                        episode_id: c.episode.clone(),
                        turn_id: c.turn_id.clone(),
                        revision: c.revision.clone(),
                        quote: c.quote.clone(),
                        quote_start: c.quote_start,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut d = if cfg.mutations_frozen {
            Decision::skipped("mutations_frozen", "Mutations are frozen (kill switch active)".into(), None)
        } else if operation.risk.as_deref() == Some("review_required") {
            Decision::skipped("review_required", "review required: recorded as a pending proposal, not applied".into(), None)
        } else {
            let attention = validated.get(index).and_then(|v| v.attention.clone());
            plan_one(&mut work, index, operation, attention, cfg)
        };
        if cfg.shadow && d.effect == Effect::Applied {
            d = Decision::skipped("shadow", "shadow mode: would be applied".into(), d.result);
        }
        ops.push(PlannedOp {
            index,
            operation: operation.op.kind().as_str().to_string(),
            payload: payload_json(&operation.op),
            reason: operation.reason.clone(),
            confidence: operation.confidence,
            effect: d.effect,
            kind: d.kind,
            message: d.message,
            result: d.result.map(|r| r.to_string()),
            evidence: if d.effect == Effect::Applied { evidence } else { Vec::new() },
            writes: d.writes,
        });
    }
    OntoPlan { conversation_id: view.conversation_id.clone(), pass_id: pass_id.to_string(), call_seq, ops }
}

fn payload_json(op: &Op) -> String {
    let v = match op {
        Op::CreateEntity(p) => serde_json::to_value(p),
        Op::AddClaimValue(p) | Op::SetClaimValue(p) => serde_json::to_value(p),
        Op::SupersedeClaimValue(p) => serde_json::to_value(p),
        Op::CreateLink(p) => serde_json::to_value(p),
        Op::CreateAspect(p) => serde_json::to_value(p),
        Op::CreatePolicy(p) => serde_json::to_value(p),
        Op::CreateActionType(p) | Op::CreateInterface(p) => serde_json::to_value(p),
        Op::DeclineAttention(p) => serde_json::to_value(p),
        Op::RenameEntity(p) => serde_json::to_value(p),
        Op::RenameAspect(p) => serde_json::to_value(p),
        Op::UpdateLink(p) => serde_json::to_value(p),
        Op::Flag(p) => serde_json::to_value(p),
        Op::ArchiveEntity(p) | Op::ArchiveAspect(p) | Op::ArchiveClaimValue(p) | Op::ArchiveLink(p) => serde_json::to_value(p),
        Op::MergeEntities(p) => serde_json::to_value(p),
        Op::MergeAspects(p) => serde_json::to_value(p),
    };
    v.map(|v| v.to_string()).unwrap_or_else(|_| "{}".into())
}

fn plan_one(work: &mut Work<'_>, index: usize, operation: &Operation, attention: Option<AttentionRef>, cfg: &PlanConfig) -> Decision {
    let confidence = operation.confidence.unwrap_or(1.0);
    if let Some(aref) = attention {
        return super::graph_ops::hygiene(work, operation, aref, cfg);
    }
    match &operation.op {
        Op::Flag(p) => super::graph_ops::flag(work, index, p),
        Op::RenameEntity(p) => super::graph_ops::rename_entity(work, &p.entity_id, &p.new_name),
        Op::RenameAspect(p) => super::graph_ops::rename_aspect(work, &p.entity_id, &p.aspect_id, &p.new_name),
        Op::UpdateLink(p) => super::graph_ops::update_link(work, p, operation.reason.as_deref()),
        Op::CreateEntity(p) => create_entity(work, &p.name, p.entity_type.as_str()),
        Op::CreateActionType(p) => create_entity(work, &p.name, "action"),
        Op::CreateInterface(p) => create_entity(work, &p.name, "interface"),
        Op::CreateAspect(p) => {
            let entity = match work.entity(&p.entity_id) {
                Ok(e) => e.id.clone(),
                Err(m) => return Decision::failed("unresolved_target", m),
            };
            if let Some(a) = work.aspect(&entity, &p.name) {
                return Decision::skipped("deduped", format!("aspect {} exists", a.id), Some(json!({"aspectId": a.id})));
            }
            match new_aspect(work, &entity, &p.name, cfg) {
                Ok((id, w)) => Decision::applied(vec![w], json!({"aspectId": id})),
                Err(d) => d,
            }
        }
        Op::AddClaimValue(p) | Op::SetClaimValue(p) => {
            let set = matches!(operation.op, Op::SetClaimValue(_));
            claim(work, &p.entity_id, &p.aspect_id, &p.claim_key, &p.value, p.review_after.clone(), set, None, confidence, "attribute", cfg)
        }
        Op::SupersedeClaimValue(p) => {
            let target = p.attribute_id.clone().unwrap_or_default();
            claim(work, &p.entity_id, &p.aspect_id, &p.claim_key, &p.value, None, true, Some(target), confidence, "attribute", cfg)
        }
        Op::CreatePolicy(p) => {
            claim(work, &p.entity_id, "policy", &p.name, &p.definition, None, false, None, confidence, "constraint", cfg)
        }
        Op::CreateLink(p) => {
            let (from, to) = match (work.entity(&p.from_entity_id), work.entity(&p.to_entity_id)) {
                (Ok(a), Ok(b)) => (a.id.clone(), b.id.clone()),
                (Err(m), _) | (_, Err(m)) => return Decision::failed("unresolved_target", m),
            };
            let reason = operation.reason.as_deref().map(|r| r.split_whitespace().collect::<Vec<_>>().join(" "));
            let reason: Option<String> = reason.filter(|r| !r.is_empty()).map(|r| r.chars().take(300).collect());
            if p.link_type == LinkType::RelatedTo && reason.is_none() {
                return Decision::failed("link_reason", "related_to dependencies require a non-empty reason".into());
            }
            let existing = work
                .view
                .links
                .iter()
                .find(|l| l.source_entity_id == from && l.target_entity_id == to && l.link_type == p.link_type.as_str())
                .map(|l| l.id.clone());
            let id = existing.clone().unwrap_or_else(|| work.id("l"));
            if existing.is_none() {
                work.view.links.push(ViewLink {
                    id: id.clone(),
                    source_entity_id: from.clone(),
                    target_entity_id: to.clone(),
                    link_type: p.link_type.as_str().into(),
                    active: true,
                });
            }
            let w = OntoWrite::Link {
                id: id.clone(),
                source_entity_id: from,
                target_entity_id: to,
                link_type: p.link_type.as_str().into(),
                confidence,
                reason,
            };
            Decision::applied(vec![w], json!({"linkId": id, "updated": existing.is_some()}))
        }
        Op::DeclineAttention(p) => {
            let id = p.attention_id.trim();
            let pending = super::hygiene::pending_attention(&work.view, cfg.max_claims_per_aspect);
            if !pending.iter().any(|a| a.subject_ref == id) {
                return Decision::failed("attention_not_pending", format!("Attention record is not pending in this agent scope: {id}"));
            }
            work.view.resolved_attention.push(id.to_string());
            Decision::applied(Vec::new(), json!({"attentionId": id, "resolved": true}))
        }
        other => Decision::failed("unsupported", format!("{} is not carried out by memform's planner yet", other.kind())),
    }
}

fn create_entity(work: &mut Work<'_>, name: &str, entity_type: &str) -> Decision {
    let canonical = normalize_entity_name(name);
    match duplicate_of(&work.view, name, entity_type, None) {
        Ok(Some(d)) => {
            let msg = format!("duplicate of {} ({})", d.entity_id, d.how);
            return Decision::skipped("duplicate_entity", msg, Some(json!({"entityId": d.entity_id})));
        }
        Err(message) => return Decision::failed("ambiguous_target", message),
        Ok(None) => {}
    }
    // Signet's apply path judges the name alone; memform passes a concrete
    // type along, so a short proper name of a person or place ("Jon") is
    // not `too_short` (docs/dreaming.md, 4.3). A non-concrete type is not
    // judged here, as in Signet.
    let typed = is_concrete_type(entity_type).then_some(entity_type);
    if let Err(reason) = classify_entity_quality(name, typed) {
        return Decision::failed("entity_label", format!("Entity name rejected: {reason}"));
    }
    // Stage 2's resolver: the nearest live entity of the same type by
    // cosine. The name is kept as that entity's alias (stage 2's merge),
    // so later operations that name it resolve.
    if let Ok(Some(d)) = duplicate_of(&work.view, name, entity_type, work.vectors) {
        let msg = format!("duplicate of {} ({})", d.entity_id, d.how);
        if let Some(e) = work.view.entities.iter_mut().find(|e| e.id == d.entity_id) {
            e.aliases.push(canonical.clone());
        }
        let alias = OntoWrite::Alias { entity_id: d.entity_id.clone(), alias: name.trim().to_string(), canonical_alias: canonical };
        let mut skip = Decision::skipped("duplicate_entity", msg, Some(json!({"entityId": d.entity_id, "cosine": d.cosine})));
        skip.writes.push(alias);
        return skip;
    }
    let id = work.id("o");
    work.view.entities.push(ViewEntity {
        id: id.clone(),
        name: name.trim().to_string(),
        canonical_name: canonical.clone(),
        entity_type: entity_type.to_string(),
        active: true,
        aliases: Vec::new(),
    });
    let w = OntoWrite::Entity {
        id: id.clone(),
        name: name.trim().to_string(),
        canonical_name: canonical,
        entity_type: entity_type.to_string(),
    };
    Decision::applied(vec![w], json!({"entityId": id}))
}

fn new_aspect(work: &mut Work, entity: &str, name: &str, cfg: &PlanConfig) -> std::result::Result<(String, OntoWrite), Decision> {
    let active = work.view.aspects.iter().filter(|a| a.active && a.entity_id == entity).count();
    if active >= cfg.max_aspects_per_entity {
        let ename = work.view.entities.iter().find(|e| e.id == entity).map(|e| e.name.clone()).unwrap_or_default();
        let msg = format!(
            "entity '{ename}' is at aspect cap ({active}/{}) — consolidate or archive an existing aspect before creating a new one",
            cfg.max_aspects_per_entity
        );
        return Err(Decision::failed("aspect_cap", msg));
    }
    let canonical = normalize_entity_name(name);
    let cardinality = if cfg.single_valued.contains(&canonical) { Cardinality::Single } else { Cardinality::Multi };
    let id = work.id("a");
    let aspect = ViewAspect {
        id: id.clone(),
        entity_id: entity.to_string(),
        name: name.trim().to_string(),
        canonical_name: canonical.clone(),
        cardinality,
        active: true,
    };
    work.view.aspects.push(aspect);
    Ok((
        id.clone(),
        OntoWrite::Aspect { id, entity_id: entity.to_string(), name: name.trim().to_string(), canonical_name: canonical, cardinality },
    ))
}

/// `add_claim_value` (`set = false`), `set_claim_value` and
/// `supersede_claim_value` (`set = true`; `target`: the claim superseded,
/// empty for the slot's current one), `create_policy`.
#[allow(clippy::too_many_arguments)]
fn claim(
    work: &mut Work,
    entity_sel: &str,
    aspect_sel: &str,
    key: &str,
    value: &str,
    review_after: Option<String>,
    set: bool,
    target: Option<String>,
    confidence: f64,
    kind: &str,
    cfg: &PlanConfig,
) -> Decision {
    let entity = match work.entity(entity_sel) {
        Ok(e) => e.id.clone(),
        Err(m) => return Decision::failed("unresolved_target", m),
    };
    let mut writes = Vec::new();
    let aspect = match work.aspect(&entity, aspect_sel) {
        Some(a) => (a.id.clone(), a.cardinality, a.name.clone()),
        None if target.is_some() => {
            return Decision::failed(
                "unresolved_target",
                format!("aspect {aspect_sel} not found on entity {entity}; read it back with get_entity before retrying"),
            );
        }
        None => match new_aspect(work, &entity, aspect_sel, cfg) {
            Ok((id, w)) => {
                writes.push(w);
                let cardinality = work.aspect(&entity, &id).map(|a| a.cardinality).unwrap_or(Cardinality::Multi);
                (id, cardinality, aspect_sel.trim().to_string())
            }
            Err(d) => return d,
        },
    };
    let (aspect_id, cardinality, aspect_name) = aspect;
    let normalized = normalize_content(value);
    let slot: Vec<ViewClaim> = work.active_in_slot(&aspect_id, key).into_iter().cloned().collect();
    let supersedes = match (&target, set) {
        (Some(t), _) if !t.is_empty() => match slot.iter().find(|c| &c.id == t) {
            Some(c) => Some(c.id.clone()),
            None => return Decision::failed("unresolved_target", "No active claim values matched supersession payload".into()),
        },
        (Some(_), _) => match slot.last() {
            Some(c) => Some(c.id.clone()),
            None => return Decision::failed("unresolved_target", format!("no active claim {key} on aspect {aspect_id} to supersede")),
        },
        (None, true) => {
            if slot.len() == 1 && slot[0].normalized_content == normalized {
                return Decision::skipped("deduped", format!("{} already holds this value", slot[0].id), Some(json!({"deduped": true})));
            }
            if slot.iter().any(|c| c.kind == "constraint") {
                return Decision::failed("constraint_force", "Refusing to replace active constraint claim without force".into());
            }
            slot.last().map(|c| c.id.clone())
        }
        (None, false) => {
            if let Some(c) = slot.iter().find(|c| c.normalized_content == normalized) {
                return Decision::skipped("deduped", format!("{} already holds this value", c.id), Some(json!({"deduped": true})));
            }
            if cardinality == Cardinality::Single
                && let Some(c) = slot.first()
            {
                let msg = format!(
                    "aspect '{aspect_name}' is single-valued and holds {}: supersede it with evidence (set_claim_value or supersede_claim_value)",
                    c.id
                );
                // Flagged: the rejection's result names the claim it
                // conflicts with, so `list_contradictions` and
                // `attention_list` read it from the log (no message parsed).
                let mut d = Decision::failed("contradiction", msg);
                d.result = Some(json!({"entityId": entity, "aspectId": aspect_id, "claimKey": key, "conflictsWith": c.id, "value": value}));
                return d;
            }
            None
        }
    };
    let active = work.view.claims.iter().filter(|c| c.status == ClaimStatus::Active && c.aspect_id == aspect_id).count();
    if supersedes.is_none() && active >= cfg.max_claims_per_aspect {
        let msg = format!(
            "aspect '{aspect_name}' is at attribute cap ({active}/{}) — supersede or expire an existing claim, or consolidate duplicates, before adding",
            cfg.max_claims_per_aspect
        );
        return Decision::failed("attribute_cap", msg);
    }
    let id = work.id("c");
    // Other active values of the slot a set replaces leave it too.
    if set && target.is_none() {
        for c in slot.iter().filter(|c| Some(&c.id) != supersedes.as_ref()) {
            writes.push(OntoWrite::RetractClaim { id: c.id.clone(), reason: Some(format!("replaced by {id}")) });
        }
    }
    for c in work.view.claims.iter_mut() {
        if c.status == ClaimStatus::Active && c.aspect_id == aspect_id && c.claim_key == key && set {
            c.status = ClaimStatus::Superseded;
        }
    }
    work.view.claims.push(ViewClaim {
        id: id.clone(),
        aspect_id: aspect_id.clone(),
        claim_key: key.to_string(),
        kind: kind.to_string(),
        content: value.to_string(),
        normalized_content: normalized.clone(),
        confidence,
        status: ClaimStatus::Active,
        superseded_by: None,
        version: 1,
    });
    writes.push(OntoWrite::Claim {
        id: id.clone(),
        aspect_id: aspect_id.clone(),
        claim_key: key.to_string(),
        kind: kind.to_string(),
        content: value.to_string(),
        normalized_content: normalized,
        confidence,
        valid_from: None,
        review_after,
        supersedes: supersedes.clone(),
    });
    Decision::applied(writes, json!({"entityId": entity, "aspectId": aspect_id, "attributeId": id, "supersedes": supersedes}))
}

/// How a proposed entity duplicates a live one.
#[derive(Debug, Clone, PartialEq)]
pub struct Duplicate {
    pub entity_id: String,
    /// `exact`, `alias` or `cosine 0.93`.
    pub how: String,
    pub cosine: Option<f64>,
}

/// The duplicate check of `create_entity` and `validate_proposal`
/// (docs/dreaming.md, 4.3), in order: a live entity with the same canonical
/// name (any type, as Signet; two of them: `Err`, the selector is
/// ambiguous); a live entity of the same type holding the name as an alias;
/// then, given `vectors`, stage 2's resolver (`resolve_entities`) over the
/// live entities of the same type: the nearest one by cosine, if at least
/// the threshold. Type-aware: a `place` never duplicates a `person`.
pub fn duplicate_of(
    view: &OntologyView,
    name: &str,
    entity_type: &str,
    vectors: Option<&NameVectors>,
) -> std::result::Result<Option<Duplicate>, String> {
    duplicate_among(view, name, entity_type, vectors, None)
}

/// [`duplicate_of`] over the live entities other than `skip` (an entity's
/// own duplicate candidates, `attention_list`).
pub fn duplicate_among(
    view: &OntologyView,
    name: &str,
    entity_type: &str,
    vectors: Option<&NameVectors>,
    skip: Option<&str>,
) -> std::result::Result<Option<Duplicate>, String> {
    let canonical = normalize_entity_name(name);
    let live = |e: &&ViewEntity| e.active && skip != Some(e.id.as_str());
    let same: Vec<&ViewEntity> = view.entities.iter().filter(live).filter(|e| e.canonical_name == canonical).collect();
    match same.as_slice() {
        [one] => return Ok(Some(Duplicate { entity_id: one.id.clone(), how: "exact".into(), cosine: None })),
        [_, _, ..] => return Err(format!("Entity selector is ambiguous: {name}. Use an id.")),
        [] => {}
    }
    if let Some(e) = view.entities.iter().filter(live).find(|e| e.entity_type == entity_type && e.aliases.contains(&canonical)) {
        return Ok(Some(Duplicate { entity_id: e.id.clone(), how: "alias".into(), cosine: None }));
    }
    let Some(nv) = vectors else { return Ok(None) };
    let Some(v) = nv.vectors.get(&canonical) else { return Ok(None) };
    // Stage 2 compares same-type entities only; the ontology's types are
    // finer than stage 1's, so the candidates are filtered here by the
    // ontology type and handed to the resolver under one stage-1 type.
    let proxy = crate::types::EntityType::Thing;
    let mut state = crate::state::ConvState::default();
    for e in view.entities.iter().filter(live).filter(|e| e.entity_type == entity_type) {
        if let Some(ev) = nv.vectors.get(&e.canonical_name) {
            state.entities.push(crate::model::fact::EntityRec {
                id: e.id.clone(),
                name: e.canonical_name.clone(),
                entity_type: proxy,
                aliases: e.aliases.clone(),
                embedding: ev.clone(),
            });
        }
    }
    if state.entities.is_empty() {
        return Ok(None);
    }
    let candidate = crate::types::CandidateEntity { name: canonical, entity_type: proxy };
    let res =
        crate::pipeline::resolve::resolve_entities(&view.conversation_id, &[candidate], std::slice::from_ref(v), &state, nv.threshold);
    Ok(res.decisions.into_iter().find_map(|d| match d {
        crate::pipeline::resolve::EntityDecision::Merge { entity_id, cosine, .. } => {
            Some(Duplicate { entity_id, how: format!("cosine {cosine:.2}"), cosine: Some(cosine) })
        }
        crate::pipeline::resolve::EntityDecision::Reuse { entity_id, .. } => {
            Some(Duplicate { entity_id, how: "exact".into(), cosine: None })
        }
        crate::pipeline::resolve::EntityDecision::Insert { .. } => None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Episode, Turn};

    const CONV: &str = "conv-a";

    fn setup() -> (Store, TurnIndex) {
        let store = Store::in_memory().unwrap();
        let episode = Episode {
            id: "s1".into(),
            timestamp: None,
            turns: vec![
                Turn { id: "D1:1".into(), speaker: "Ann".into(), text: "Ann lives in Porto with her dog Rex.".into() },
                Turn { id: "D1:2".into(), speaker: "Ann".into(), text: "Actually Ann moved to Lisbon last May.".into() },
            ],
            observations: Vec::new(),
        };
        store.write_conversation(CONV, &["Ann".into()], &[]).unwrap();
        store.write_evidence(CONV, 0, &episode).unwrap();
        let mut turns = TurnIndex::new(CONV);
        turns.add_episode(&episode, |_| false);
        (store, turns)
    }

    fn cfg() -> PlanConfig {
        PlanConfig { single_valued: ["lives_in".to_string()].into_iter().collect(), ..PlanConfig::default() }
    }

    fn caps() -> OntoCaps {
        OntoCaps { max_ops_per_call: 100, max_ops_per_pass: 500, max_new_entities_per_pass: 50 }
    }

    fn call(store: &Store, turns: &TurnIndex, call_seq: usize, ops: serde_json::Value) -> ApplyAnswer {
        let json = json!({"agentId": CONV, "operations": ops}).to_string();
        apply(store, &json, turns, &ContractLimits::default(), &cfg(), caps(), "conv-a/p1", call_seq).unwrap()
    }

    fn cite(turn: &str, quote: &str) -> serde_json::Value {
        json!([{"source_ref": format!("turn:{turn}"), "quote": quote}])
    }

    fn effects(a: &ApplyAnswer) -> Vec<(String, Option<String>)> {
        a.items.iter().map(|i| (i.effect.as_str().to_string(), i.kind.clone())).collect()
    }

    #[test]
    fn an_operation_without_an_exact_quote_is_rejected_counted_and_nothing_is_written() {
        let (store, turns) = setup();
        let a = call(
            &store,
            &turns,
            1,
            json!([
                {"operation": "create_entity", "payload": {"name": "Ann", "type": "person"}, "evidence": cite("D1:1", "Ann lives in Porto")},
                {"operation": "create_entity", "payload": {"name": "Rex", "type": "person"}, "evidence": cite("D1:1", "her cat Rex")}
            ]),
        );
        assert!(!a.ok && a.items.is_empty());
        assert_eq!(a.rejection_kind.as_deref(), Some("quote_not_found"));
        assert!(store.ontology_view(CONV).unwrap().entities.is_empty(), "the whole request is rejected, the first operation too");
        let counts = store.onto_op_counts().unwrap();
        assert_eq!(counts, vec![("request".into(), "failed".into(), Some("quote_not_found".into()), 1)]);
        // Without any evidence at all.
        let a = call(&store, &turns, 2, json!([{"operation": "create_entity", "payload": {"name": "Ann", "type": "person"}}]));
        assert_eq!(a.rejection_kind.as_deref(), Some("missing_evidence"));
        // Malformed: an unknown field, an unknown operation.
        let a = call(
            &store,
            &turns,
            3,
            json!([{"operation": "create_entity", "payload": {"name": "Ann", "type": "person", "x": 1}, "evidence": cite("D1:1", "Ann")}]),
        );
        assert_eq!(a.rejection_kind.as_deref(), Some("schema"));
        let a = call(&store, &turns, 4, json!([{"operation": "drop_everything", "payload": {}}]));
        assert_eq!(a.rejection_kind.as_deref(), Some("unknown_operation"));
        assert!(store.ontology_view(CONV).unwrap().entities.is_empty());
    }

    #[test]
    fn a_duplicate_entity_is_caught_by_canonical_name_and_reused() {
        let (store, turns) = setup();
        let a = call(
            &store,
            &turns,
            1,
            json!([
                {"operation": "create_entity", "payload": {"name": "Ann", "type": "person"}, "evidence": cite("D1:1", "Ann")},
                {"operation": "create_entity", "payload": {"name": "  ANN ", "type": "person"}, "evidence": cite("D1:2", "Ann")}
            ]),
        );
        assert_eq!(effects(&a), vec![("applied".into(), None), ("skipped".into(), Some("duplicate_entity".into()))]);
        let a = call(
            &store,
            &turns,
            2,
            json!([
                {"operation": "create_entity", "payload": {"name": "ann", "type": "person"}, "evidence": cite("D1:2", "Ann")}
            ]),
        );
        assert_eq!(effects(&a), vec![("skipped".into(), Some("duplicate_entity".into()))]);
        assert!(a.items[0].result.as_deref().unwrap_or("").contains("conv-a/o1"));
        assert_eq!(store.ontology_view(CONV).unwrap().entities.len(), 1);
        // The label gate: a generic word is no entity.
        let a = call(
            &store,
            &turns,
            3,
            json!([
                {"operation": "create_entity", "payload": {"name": "Status", "type": "person"}, "evidence": cite("D1:2", "Ann")}
            ]),
        );
        assert_eq!(effects(&a), vec![("failed".into(), Some("entity_label".into()))]);
    }

    #[test]
    fn a_conflicting_single_valued_claim_is_flagged_or_superseded_with_evidence() {
        let (store, turns) = setup();
        call(
            &store,
            &turns,
            1,
            json!([
                {"operation": "create_entity", "payload": {"name": "Ann", "type": "person"}, "evidence": cite("D1:1", "Ann")},
                {"operation": "add_claim_value", "payload": {"entityId": "Ann", "aspectId": "lives_in", "claimKey": "lives_in", "value": "Ann lives in Porto"}, "evidence": cite("D1:1", "Ann lives in Porto")}
            ]),
        );
        // A second value added beside the first: rejected as a contradiction.
        let a = call(
            &store,
            &turns,
            2,
            json!([
                {"operation": "add_claim_value", "payload": {"entityId": "Ann", "aspectId": "lives_in", "claimKey": "lives_in", "value": "Ann lives in Lisbon"}, "evidence": cite("D1:2", "Ann moved to Lisbon")}
            ]),
        );
        assert_eq!(effects(&a), vec![("failed".into(), Some("contradiction".into()))]);
        // A set with evidence supersedes it.
        let a = call(
            &store,
            &turns,
            3,
            json!([
                {"operation": "set_claim_value", "payload": {"entityId": "Ann", "aspectId": "lives_in", "claimKey": "lives_in", "value": "Ann lives in Lisbon"}, "evidence": cite("D1:2", "Ann moved to Lisbon")}
            ]),
        );
        assert_eq!(effects(&a), vec![("applied".into(), None)]);
        let view = store.ontology_view(CONV).unwrap();
        let claims: Vec<(&str, ClaimStatus, Option<&str>)> =
            view.claims.iter().map(|c| (c.content.as_str(), c.status, c.superseded_by.as_deref())).collect();
        assert_eq!(
            claims,
            vec![("Ann lives in Porto", ClaimStatus::Superseded, Some("conv-a/c2")), ("Ann lives in Lisbon", ClaimStatus::Active, None)]
        );
        // A multi-valued aspect takes both values; the same value twice is deduped.
        let a = call(
            &store,
            &turns,
            4,
            json!([
                {"operation": "add_claim_value", "payload": {"entityId": "Ann", "aspectId": "has_pet", "claimKey": "has_pet", "value": "Rex"}, "evidence": cite("D1:1", "her dog Rex")},
                {"operation": "add_claim_value", "payload": {"entityId": "Ann", "aspectId": "has_pet", "claimKey": "has_pet", "value": "a dog"}, "evidence": cite("D1:1", "her dog")},
                {"operation": "add_claim_value", "payload": {"entityId": "Ann", "aspectId": "has_pet", "claimKey": "has_pet", "value": "rex"}, "evidence": cite("D1:1", "Rex")}
            ]),
        );
        assert_eq!(effects(&a), vec![("applied".into(), None), ("applied".into(), None), ("skipped".into(), Some("deduped".into()))]);
    }

    #[test]
    fn shadow_and_frozen_write_nothing_but_log_every_operation() {
        let (store, turns) = setup();
        let ops = json!([{"operation": "create_entity", "payload": {"name": "Ann", "type": "person"}, "evidence": cite("D1:1", "Ann")}]);
        let json = json!({"agentId": CONV, "operations": ops}).to_string();
        for (n, c) in [PlanConfig { shadow: true, ..cfg() }, PlanConfig { mutations_frozen: true, ..cfg() }].iter().enumerate() {
            let a = apply(&store, &json, &turns, &ContractLimits::default(), c, caps(), "conv-a/p1", n).unwrap();
            assert_eq!(a.items[0].effect, Effect::Skipped);
        }
        assert!(store.ontology_view(CONV).unwrap().entities.is_empty());
        assert_eq!(store.onto_op_counts().unwrap().iter().map(|c| c.3).sum::<usize>(), 2);
    }

    // Signet's `dreaming-agent-tools.test.ts`: "decline_attention resolves a
    // pending flag and is one-use and scoped".
    #[test]
    fn decline_attention_resolves_pending_attention_once() {
        let (store, turns) = setup();
        call(
            &store,
            &turns,
            1,
            json!([{"operation": "create_entity", "payload": {"name": "Porto", "type": "place"}, "evidence": cite("D1:1", "Porto")}]),
        );
        let pending = super::super::hygiene::pending_attention(&store.ontology_view(CONV).unwrap(), 50);
        assert_eq!(pending.len(), 1);
        let decline = json!([{"operation": "decline_attention", "payload": {"attentionId": pending[0].subject_ref}}]);
        let a = call(&store, &turns, 2, decline.clone());
        assert_eq!(effects(&a), vec![("applied".into(), None)]);
        assert!(super::super::hygiene::pending_attention(&store.ontology_view(CONV).unwrap(), 50).is_empty());
        let a = call(&store, &turns, 3, decline);
        assert_eq!(effects(&a), vec![("failed".into(), Some("attention_not_pending".into()))]);
        // Another conversation's record is not pending here.
        let a = call(&store, &turns, 4, json!([{"operation": "decline_attention", "payload": {"attentionId": "entity:conv-b/o1"}}]));
        assert_eq!(effects(&a), vec![("failed".into(), Some("attention_not_pending".into()))]);
    }

    // Signet's `dreaming-operations.test.ts`: "supersedes the current active
    // claim for a key without an explicit attribute id".
    #[test]
    fn supersedes_the_current_active_claim_for_a_key_without_an_attribute_id() {
        let (store, turns) = setup();
        call(
            &store,
            &turns,
            1,
            json!([
                {"operation": "create_entity", "payload": {"name": "Ann", "type": "person"}, "evidence": cite("D1:1", "Ann")},
                {"operation": "add_claim_value", "payload": {"entityId": "Ann", "aspectId": "home", "claimKey": "status", "value": "Old claim value."}, "evidence": cite("D1:1", "Ann lives in Porto")}
            ]),
        );
        let a = call(
            &store,
            &turns,
            2,
            json!([{"operation": "supersede_claim_value", "payload": {"entityId": "Ann", "aspectId": "home", "claimKey": "status", "value": "Lisbon"}, "evidence": cite("D1:2", "Ann moved to Lisbon")}]),
        );
        assert_eq!(effects(&a), vec![("applied".into(), None)]);
        let view = store.ontology_view(CONV).unwrap();
        let got: Vec<(&str, ClaimStatus)> = view.claims.iter().map(|c| (c.content.as_str(), c.status)).collect();
        assert_eq!(got, vec![("Old claim value.", ClaimStatus::Superseded), ("Lisbon", ClaimStatus::Active)]);
    }

    // Signet's `dreaming-operations.test.ts`: "bounds large apply requests
    // across yielding writer transactions (#1337)": 25 entities each citing
    // its own source come back as 25 items in order (memform: one
    // transaction per call).
    #[test]
    fn a_request_of_25_cited_entities_applies_all_in_order() {
        let store = Store::in_memory().unwrap();
        const WORDS: [&str; 25] = [
            "Amber", "Birch", "Cedar", "Delta", "Ember", "Fjord", "Garnet", "Harbor", "Indigo", "Juniper", "Kestrel", "Lagoon", "Maple",
            "Nimbus", "Onyx", "Pebble", "Quartz", "Raven", "Sierra", "Tundra", "Umber", "Violet", "Willow", "Xenon", "Yarrow",
        ];
        let episode = Episode {
            id: "s1".into(),
            timestamp: None,
            turns: WORDS
                .iter()
                .enumerate()
                .map(|(i, w)| Turn { id: format!("D1:{i}"), speaker: "Ann".into(), text: format!("Project {w} ships next week.") })
                .collect(),
            observations: Vec::new(),
        };
        store.write_conversation(CONV, &["Ann".into()], &[]).unwrap();
        store.write_evidence(CONV, 0, &episode).unwrap();
        let mut turns = TurnIndex::new(CONV);
        turns.add_episode(&episode, |_| false);
        let ops: Vec<serde_json::Value> = WORDS
            .iter()
            .enumerate()
            .map(|(i, w)| json!({"operation": "create_entity", "payload": {"name": format!("Project {w}"), "type": "project"}, "evidence": cite(&format!("D1:{i}"), &format!("Project {w}"))}))
            .collect();
        let a = call(&store, &turns, 1, json!(ops));
        assert!(a.ok);
        assert_eq!(a.items.iter().map(|i| i.index).collect::<Vec<_>>(), (0..25).collect::<Vec<_>>());
        assert!(a.items.iter().all(|i| i.effect == Effect::Applied));
        assert_eq!(store.ontology_view(CONV).unwrap().entities.len(), 25);
    }
}
