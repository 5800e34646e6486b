//! The operations that change the graph's shape (docs/dreaming.md, 3.2 and
//! 4.3), planned against the planner's working snapshot: `flag`, the four
//! archives, `merge_entities`, `rename_entity`, `rename_aspect` and
//! `update_link`. Payloads, guards and messages are Signet's
//! (`ontology-proposals.ts`: `applyArchiveEntity`, `applyArchiveAspect`,
//! `applyArchiveClaimValue`, `applyArchiveLink`, `applyMergeEntities`,
//! `applyRenameEntity`, `applyRenameAspect`, `applyUpdateLink`;
//! `dreaming-operations.ts`: attention provenance), except where a comment
//! says memform's. Each returns a [`Decision`] whose writes the store
//! applies in the call's one transaction, with history rows.

use serde_json::json;

use super::contract::{Flag, LinkType, Op, Operation, UpdateLink};
use super::plan::{Decision, PlanConfig, Work};
use super::quality::{classify_entity_quality, is_concrete_type, normalize_entity_name};
use super::validate::{AttentionRef, HYGIENE_PROVENANCE_ERROR, target_mismatch};
use crate::model::ontology::{ClaimStatus, FlaggedAttention, OntoWrite};

/// A flag's priority when it gives none (memform's; Signet's enqueue
/// default is the middle of 0–100).
pub const DEFAULT_FLAG_PRIORITY: u32 = 50;

/// The subjects a `flag` may name.
const SUBJECT_PREFIXES: &[&str] = &["entity:", "aspect:", "attribute:", "link:", "duplicate:"];

/// `flag`: mints a hygiene attention record whose id is its subject. The
/// subject must name a live entity, an active aspect, claim or link of this
/// conversation, or a duplicate group by canonical name (memform checks the
/// target exists; Signet enqueues any subject).
pub(super) fn flag(work: &mut Work<'_>, index: usize, p: &Flag) -> Decision {
    let subject = p.subject_ref.trim().to_string();
    let Some(prefix) = SUBJECT_PREFIXES.iter().find(|pre| subject.starts_with(**pre)) else {
        return Decision::failed(
            "schema",
            format!(
                "flag payload.subjectRef `{subject}` must be entity:<id>, aspect:<id>, attribute:<id>, link:<id> or duplicate:<canonical name>"
            ),
        );
    };
    let id = &subject[prefix.len()..];
    let v = &work.view;
    let found = match *prefix {
        "entity:" => v.entities.iter().any(|e| e.active && e.id == id),
        "aspect:" => v.aspects.iter().any(|a| a.active && a.id == id),
        "attribute:" => v.claims.iter().any(|c| c.status == ClaimStatus::Active && c.id == id),
        "link:" => v.links.iter().any(|l| l.active && l.id == id),
        _ => !id.trim().is_empty(),
    };
    if !found {
        return Decision::failed("unresolved_target", format!("flag subject {subject} not found in this agent"));
    }
    let priority = p.priority.map(|x| x.clamp(0.0, 100.0).round() as u32).unwrap_or(DEFAULT_FLAG_PRIORITY);
    work.view.resolved_attention.retain(|a| a != &subject);
    work.view.flagged.retain(|f| f.subject_ref != subject);
    work.view.flagged.push(FlaggedAttention { subject_ref: subject.clone(), priority });
    work.flags.insert(index, subject.clone());
    Decision::applied(Vec::new(), json!({"attentionId": subject, "priority": priority}))
}

fn provenance_failed(detail: &str) -> Decision {
    Decision::failed("attention_provenance", format!("{HYGIENE_PROVENANCE_ERROR}: {detail}"))
}

/// A hygiene operation (an archive, a merge): its attention provenance, then
/// the operation; on success the attention is consumed (resolved).
pub(super) fn hygiene(work: &mut Work<'_>, operation: &Operation, aref: AttentionRef, cfg: &PlanConfig) -> Decision {
    let id = match aref {
        AttentionRef::SameBatch(j) => match work.flags.get(&j) {
            Some(id) => id.clone(),
            None => return provenance_failed(&format!("the flag at attention:${j} was not applied")),
        },
        AttentionRef::Prior(id) => {
            let pending = super::hygiene::pending_attention(&work.view, cfg.max_claims_per_aspect);
            if !pending.iter().any(|a| a.subject_ref == id) && !work.consumed.contains(&id) {
                return provenance_failed(&format!(
                    "{id} is not a pending hygiene attention in this agent (already resolved, or the id is mistyped); copy a pending id from attention_list"
                ));
            }
            let as_flag = Flag { subject_ref: id.clone(), details: None, priority: None };
            if let Some(detail) = target_mismatch(&operation.op, &as_flag) {
                return provenance_failed(&detail);
            }
            id
        }
    };
    if work.consumed.contains(&id) {
        return Decision::failed("attention_consumed", "Attention already consumed by an earlier operation in this batch".into());
    }
    let reason = match &operation.op {
        Op::ArchiveEntity(p) | Op::ArchiveAspect(p) | Op::ArchiveClaimValue(p) | Op::ArchiveLink(p) => p.reason.clone(),
        Op::MergeEntities(p) => p.reason.clone(),
        Op::MergeAspects(p) => p.reason.clone(),
        _ => None,
    }
    .or_else(|| operation.reason.clone());
    let mut d = match &operation.op {
        Op::ArchiveEntity(p) => archive_entity(work, &p.target, reason),
        Op::ArchiveAspect(p) => archive_aspect(work, &p.target, reason),
        Op::ArchiveClaimValue(p) => archive_claim(work, &p.target, reason),
        Op::ArchiveLink(p) => archive_link(work, &p.target, reason),
        Op::MergeEntities(p) => merge_entities(work, &id, &p.targets, &p.survivor),
        Op::MergeAspects(p) => merge_aspects(work, p, reason),
        other => Decision::failed("unsupported", format!("{} is not carried out by memform's planner yet", other.kind())),
    };
    if d.is_applied() {
        work.consumed.insert(id.clone());
        work.view.flagged.retain(|f| f.subject_ref != id);
        if !work.view.resolved_attention.contains(&id) {
            work.view.resolved_attention.push(id.clone());
        }
        if let Some(serde_json::Value::Object(m)) = d.result.as_mut() {
            m.insert("consumedAttention".into(), json!(id));
        }
    }
    d
}

fn archive_entity(work: &mut Work<'_>, target: &str, reason: Option<String>) -> Decision {
    let e = match work.live_entity(target) {
        Ok(e) => e,
        Err(m) => return Decision::failed("unresolved_target", m),
    };
    // Signet refuses a pinned entity ("Refusing to archive pinned entity
    // without force"); memform's Dreaming has no pin operation, so no
    // entity is pinned.
    for x in work.view.entities.iter_mut().filter(|x| x.id == e.id) {
        x.active = false;
    }
    Decision::applied(vec![OntoWrite::ArchiveEntity { id: e.id.clone(), reason }], json!({"entityId": e.id, "archived": true}))
}

fn archive_aspect(work: &mut Work<'_>, target: &str, reason: Option<String>) -> Decision {
    let Some(aspect) = work.view.aspects.iter().find(|a| a.active && a.id == target).cloned() else {
        return Decision::failed(
            "unresolved_target",
            format!("aspect {target} not found in this agent; read it back with get_entity before retrying"),
        );
    };
    let active = |c: &&crate::model::ontology::ViewClaim| c.status == ClaimStatus::Active && c.aspect_id == aspect.id;
    if work.view.claims.iter().filter(active).any(|c| c.kind == "constraint") {
        return Decision::failed("constraint_force", "Refusing to archive aspect with active constraint attributes without force".into());
    }
    for a in work.view.aspects.iter_mut().filter(|a| a.id == aspect.id) {
        a.active = false;
    }
    for c in work.view.claims.iter_mut().filter(|c| c.status == ClaimStatus::Active && c.aspect_id == aspect.id) {
        c.status = ClaimStatus::Retracted;
    }
    let result = json!({"entityId": aspect.entity_id, "aspectId": aspect.id, "archived": true});
    Decision::applied(vec![OntoWrite::ArchiveAspect { id: aspect.id, reason }], result)
}

fn archive_claim(work: &mut Work<'_>, target: &str, reason: Option<String>) -> Decision {
    let Some(claim) = work.view.claims.iter().find(|c| c.status == ClaimStatus::Active && c.id == target).cloned() else {
        return Decision::failed("unresolved_target", "Attribute not found".into());
    };
    if claim.kind == "constraint" {
        return Decision::failed("constraint_force", "Refusing to archive constraint attribute without force".into());
    }
    for c in work.view.claims.iter_mut().filter(|c| c.id == claim.id) {
        c.status = ClaimStatus::Retracted;
    }
    Decision::applied(vec![OntoWrite::RetractClaim { id: claim.id.clone(), reason }], json!({"attributeId": claim.id, "archived": true}))
}

fn archive_link(work: &mut Work<'_>, target: &str, reason: Option<String>) -> Decision {
    let Some(link) = work.view.links.iter_mut().find(|l| l.active && l.id == target) else {
        return Decision::failed("unresolved_target", "Link not found".into());
    };
    link.active = false;
    let id = link.id.clone();
    Decision::applied(vec![OntoWrite::ArchiveLink { id: id.clone(), reason }], json!({"linkId": id, "archived": true}))
}

/// `merge_entities` (Signet's `applyMergeEntities`): each source's aspects
/// move to the survivor (an aspect whose name the survivor already has
/// folds its claims into the survivor's and is archived), its links are
/// pointed at the survivor (a link that would join the survivor to itself,
/// or repeat one of its links, is archived), its name becomes the
/// survivor's alias, and it is archived as merged (Signet deletes it;
/// memform keeps the row for the history).
fn merge_entities(work: &mut Work<'_>, attention: &str, targets: &[String], survivor: &str) -> Decision {
    let name = attention.strip_prefix("duplicate:").unwrap_or("");
    let name = match name.rsplit_once('#') {
        Some((n, count)) if !count.is_empty() && count.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => name,
    };
    let mut members = Vec::new();
    for t in targets {
        match work.live_entity(t) {
            Ok(e) => members.push(e),
            Err(m) => return Decision::failed("unresolved_target", m),
        }
    }
    let group: Vec<String> = work.view.entities.iter().filter(|e| e.active && e.canonical_name == name).map(|e| e.id.clone()).collect();
    if group.len() < 2 {
        return provenance_failed(&format!("no duplicate group named \"{name}\" remains; decline_attention if the flag no longer applies"));
    }
    if let Some(outside) = members.iter().find(|m| !group.contains(&m.id)) {
        return provenance_failed(&format!(
            "targets {} are not in the \"{name}\" duplicate group ({}); merge only that group, or decline_attention if the flag is wrong",
            outside.id,
            group.join(", ")
        ));
    }
    let mut sources: Vec<String> = Vec::new();
    for m in &members {
        if m.id != survivor && !sources.contains(&m.id) {
            sources.push(m.id.clone());
        }
    }
    if sources.is_empty() {
        return Decision::failed("merge_blocked", "No distinct source entities to merge".into());
    }
    let mut writes = Vec::new();
    let mut merged = Vec::new();
    for source in &sources {
        let Some(src) = work.view.entities.iter().find(|e| e.id == *source).cloned() else { continue };
        let aspects: Vec<_> = work.view.aspects.iter().filter(|a| a.active && a.entity_id == *source).cloned().collect();
        for a in &aspects {
            let same = work.view.aspects.iter().find(|b| b.active && b.entity_id == survivor && b.canonical_name == a.canonical_name);
            match same.map(|b| b.id.clone()) {
                Some(to) => {
                    writes.push(OntoWrite::MoveClaims { from_aspect: a.id.clone(), to_aspect: to.clone() });
                    writes.push(OntoWrite::ArchiveAspect { id: a.id.clone(), reason: Some(format!("merged into {to}")) });
                    for c in work.view.claims.iter_mut().filter(|c| c.aspect_id == a.id) {
                        c.aspect_id = to.clone();
                    }
                    for x in work.view.aspects.iter_mut().filter(|x| x.id == a.id) {
                        x.active = false;
                    }
                }
                None => {
                    writes.push(OntoWrite::MoveAspect { id: a.id.clone(), entity_id: survivor.to_string() });
                    for x in work.view.aspects.iter_mut().filter(|x| x.id == a.id) {
                        x.entity_id = survivor.to_string();
                    }
                }
            }
        }
        let links: Vec<_> = work
            .view
            .links
            .iter()
            .filter(|l| l.active && (l.source_entity_id == *source || l.target_entity_id == *source))
            .cloned()
            .collect();
        for l in links {
            let swap = |x: &str| if x == source { survivor.to_string() } else { x.to_string() };
            let (s, t) = (swap(&l.source_entity_id), swap(&l.target_entity_id));
            let repeat = work
                .view
                .links
                .iter()
                .any(|o| o.id != l.id && o.source_entity_id == s && o.target_entity_id == t && o.link_type == l.link_type);
            let entry = work.view.links.iter_mut().find(|o| o.id == l.id);
            if s == t || repeat {
                writes.push(OntoWrite::ArchiveLink { id: l.id.clone(), reason: Some(format!("merged into {survivor}")) });
                if let Some(o) = entry {
                    o.active = false;
                }
            } else {
                writes.push(OntoWrite::RepointLink { id: l.id.clone(), source_entity_id: s.clone(), target_entity_id: t.clone() });
                if let Some(o) = entry {
                    o.source_entity_id = s;
                    o.target_entity_id = t;
                }
            }
        }
        let survivor_canonical = work.view.entities.iter().find(|e| e.id == survivor).map(|e| e.canonical_name.clone());
        if survivor_canonical.as_deref() != Some(src.canonical_name.as_str()) {
            writes.push(OntoWrite::Alias {
                entity_id: survivor.to_string(),
                alias: src.name.clone(),
                canonical_alias: src.canonical_name.clone(),
            });
        }
        writes.push(OntoWrite::MergeEntity { id: source.clone(), into: survivor.to_string() });
        for x in work.view.entities.iter_mut().filter(|x| x.id == *source) {
            x.active = false;
        }
        merged.push(json!({"entityId": source, "name": src.name, "movedAspects": aspects.len()}));
    }
    Decision::applied(writes, json!({"targetEntityId": survivor, "mergedEntities": merged}))
}

/// `merge_aspects` (Signet's applicator payload `{entity, target, sources,
/// new_name}`, its result `{targetAspect, totalAttributesMoved}`): every
/// claim of each source aspect moves to the target aspect of the same
/// entity, the sources are archived, and the target takes `newName` when
/// given. Guards: the entity, the target and every source resolve to live
/// rows of that entity (`unresolved_target`), each source once and not the
/// target (`merge_blocked`, `No distinct source aspects to merge`);
/// `newName` must not be another active
/// aspect's name (`name_collision`, Signet's "Aspect collides with …");
/// the claims cap does not apply (a merge is the remedy the cap forces).
/// memform's, as its aspects have a cardinality: a single-valued target
/// refuses a merge that would leave two different active values in one
/// claim key (`contradiction`; supersede one first).
fn merge_aspects(work: &mut Work<'_>, p: &super::contract::MergeAspects, reason: Option<String>) -> Decision {
    let entity = match work.entity(&p.entity_id) {
        Ok(e) => e.id.clone(),
        Err(m) => return Decision::failed("unresolved_target", m),
    };
    let not_found = |sel: &str| {
        Decision::failed(
            "unresolved_target",
            format!("aspect {sel} not found on entity {entity}; read it back with get_entity before retrying"),
        )
    };
    let Some(target) = work.aspect(&entity, p.target.trim()).cloned() else {
        return not_found(p.target.trim());
    };
    let mut sources = Vec::new();
    for sel in &p.sources {
        let Some(a) = work.aspect(&entity, sel.trim()).cloned() else {
            return not_found(sel.trim());
        };
        if a.id == target.id || sources.iter().any(|s: &crate::model::ontology::ViewAspect| s.id == a.id) {
            return Decision::failed("merge_blocked", "No distinct source aspects to merge".into());
        }
        sources.push(a);
    }
    let new_name = p.new_name.as_deref().map(str::trim).filter(|n| !n.is_empty());
    if let Some(n) = new_name {
        let canonical = normalize_entity_name(n);
        let merged = |id: &str| id == target.id || sources.iter().any(|s| s.id == id);
        if let Some(other) =
            work.view.aspects.iter().find(|o| o.active && o.entity_id == entity && !merged(&o.id) && o.canonical_name == canonical)
        {
            return Decision::failed("name_collision", format!("Aspect collides with \"{}\"", other.name));
        }
    }
    let active = |c: &&crate::model::ontology::ViewClaim| c.status == ClaimStatus::Active;
    if target.cardinality == crate::model::ontology::Cardinality::Single {
        let mut slots: std::collections::BTreeMap<&str, &str> = std::collections::BTreeMap::new();
        for c in work.view.claims.iter().filter(active).filter(|c| c.aspect_id == target.id || sources.iter().any(|s| s.id == c.aspect_id))
        {
            if let Some(held) = slots.insert(c.claim_key.as_str(), c.normalized_content.as_str())
                && held != c.normalized_content
            {
                return Decision::failed(
                    "contradiction",
                    format!(
                        "aspect '{}' is single-valued: merging would hold two active values of {}; supersede one with evidence first",
                        target.name, c.claim_key
                    ),
                );
            }
        }
    }
    let mut writes = Vec::new();
    let mut moved = 0usize;
    for s in &sources {
        moved += work.view.claims.iter().filter(active).filter(|c| c.aspect_id == s.id).count();
        writes.push(OntoWrite::MoveClaims { from_aspect: s.id.clone(), to_aspect: target.id.clone() });
        let why = reason.clone().unwrap_or_else(|| format!("merged into {}", target.id));
        writes.push(OntoWrite::ArchiveAspect { id: s.id.clone(), reason: Some(why) });
        for c in work.view.claims.iter_mut().filter(|c| c.aspect_id == s.id) {
            c.aspect_id = target.id.clone();
        }
        for a in work.view.aspects.iter_mut().filter(|a| a.id == s.id) {
            a.active = false;
        }
    }
    let mut name = target.name.clone();
    if let Some(n) = new_name
        && normalize_entity_name(n) != target.canonical_name
    {
        let canonical = normalize_entity_name(n);
        name = n.to_string();
        writes.push(OntoWrite::RenameAspect { id: target.id.clone(), name: name.clone(), canonical_name: canonical.clone() });
        for a in work.view.aspects.iter_mut().filter(|a| a.id == target.id) {
            a.name = name.clone();
            a.canonical_name = canonical.clone();
        }
    }
    let result = json!({"entityId": entity, "aspectId": target.id, "targetAspect": name,
        "mergedAspects": sources.iter().map(|s| s.id.clone()).collect::<Vec<_>>(), "totalAttributesMoved": moved});
    Decision::applied(writes, result)
}

/// `rename_entity`: the label gate on the new name (memform's: as for a
/// new entity, with a concrete type passed along), then Signet's collision
/// guard.
pub(super) fn rename_entity(work: &mut Work<'_>, selector: &str, new_name: &str) -> Decision {
    let e = match work.entity(selector) {
        Ok(e) => e.clone(),
        Err(m) => return Decision::failed("unresolved_target", m),
    };
    let canonical = normalize_entity_name(new_name);
    if let Some(other) = work.view.entities.iter().find(|o| o.active && o.id != e.id && o.canonical_name == canonical) {
        return Decision::failed(
            "name_collision",
            format!("Entity canonical name collides with \"{}\". Use merge_entities instead.", other.name),
        );
    }
    let typed = is_concrete_type(&e.entity_type).then_some(e.entity_type.as_str());
    if let Err(reason) = classify_entity_quality(new_name, typed) {
        return Decision::failed("entity_label", format!("Entity name rejected: {reason}"));
    }
    let name = new_name.trim().to_string();
    for x in work.view.entities.iter_mut().filter(|x| x.id == e.id) {
        x.name = name.clone();
        x.canonical_name = canonical.clone();
    }
    let result = json!({"entityId": e.id, "oldName": e.name, "newName": name});
    Decision::applied(vec![OntoWrite::RenameEntity { id: e.id.clone(), name, canonical_name: canonical }], result)
}

/// `rename_aspect`: Signet's collision guard. The aspect keeps its
/// cardinality (memform's: set when it was created).
pub(super) fn rename_aspect(work: &mut Work<'_>, entity_sel: &str, aspect_sel: &str, new_name: &str) -> Decision {
    let entity = match work.entity(entity_sel) {
        Ok(e) => e.id.clone(),
        Err(m) => return Decision::failed("unresolved_target", m),
    };
    let Some(aspect) = work.aspect(&entity, aspect_sel).cloned() else {
        return Decision::failed(
            "unresolved_target",
            format!("aspect {aspect_sel} not found on entity {entity}; read it back with get_entity before retrying"),
        );
    };
    let canonical = normalize_entity_name(new_name);
    if let Some(other) =
        work.view.aspects.iter().find(|o| o.active && o.entity_id == entity && o.id != aspect.id && o.canonical_name == canonical)
    {
        return Decision::failed("name_collision", format!("Aspect collides with \"{}\"", other.name));
    }
    let name = new_name.trim().to_string();
    for x in work.view.aspects.iter_mut().filter(|x| x.id == aspect.id) {
        x.name = name.clone();
        x.canonical_name = canonical.clone();
    }
    let result = json!({"entityId": entity, "aspectId": aspect.id, "oldName": aspect.name, "newName": name});
    Decision::applied(vec![OntoWrite::RenameAspect { id: aspect.id.clone(), name, canonical_name: canonical }], result)
}

/// `update_link` (Signet's `applyUpdateLink`): a new type and/or reason;
/// the type is kept when none is given, the reason when none is given
/// (`payload.reason`, else the operation's `reason`). A `related_to` link
/// needs a reason (`requireDependencyReason`). memform's: a type that would
/// repeat another link between the same entities is a `name_collision`
/// (Signet's table has the same unique key and fails in SQL).
pub(super) fn update_link(work: &mut Work<'_>, p: &UpdateLink, op_reason: Option<&str>) -> Decision {
    let Some(link) = work.view.links.iter().find(|l| l.id == p.link_id.trim()).cloned() else {
        return Decision::failed("unresolved_target", "Link not found".into());
    };
    let link_type = p.link_type.map(|t| t.as_str().to_string()).unwrap_or_else(|| link.link_type.clone());
    let reason = p.reason.as_deref().or(op_reason).map(|r| r.split_whitespace().collect::<Vec<_>>().join(" "));
    let reason: Option<String> = reason.filter(|r| !r.is_empty()).map(|r| r.chars().take(300).collect());
    // A `related_to` link was created with a reason; another type has none to keep.
    if link_type == LinkType::RelatedTo.as_str() && reason.is_none() && link.link_type != LinkType::RelatedTo.as_str() {
        return Decision::failed("link_reason", "related_to dependencies require a non-empty reason".into());
    }
    if let Some(other) = work.view.links.iter().find(|o| {
        o.id != link.id
            && o.source_entity_id == link.source_entity_id
            && o.target_entity_id == link.target_entity_id
            && o.link_type == link_type
    }) {
        return Decision::failed(
            "name_collision",
            format!("Link collides with {}: these entities already have a {link_type} link", other.id),
        );
    }
    for x in work.view.links.iter_mut().filter(|x| x.id == link.id) {
        x.link_type = link_type.clone();
    }
    Decision::applied(vec![OntoWrite::UpdateLink { id: link.id.clone(), link_type, reason }], json!({"linkId": link.id, "updated": true}))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::contract::ContractLimits;
    use super::super::plan::{ApplyAnswer, NameResolver, PlanConfig, apply, apply_resolving, dry_run};
    use super::super::validate::TurnIndex;
    use crate::embed::hashed::HashedEmbedder;
    use crate::model::ontology::{ClaimStatus, Effect, OntoCaps, OntoPlan, OntoWrite, PlannedOp};
    use crate::store::Store;
    use crate::types::{Episode, Turn};

    const CONV: &str = "conv-a";

    fn setup() -> (Store, TurnIndex) {
        let store = Store::in_memory().unwrap();
        let episode = Episode {
            id: "s1".into(),
            timestamp: None,
            turns: vec![
                Turn { id: "D1:1".into(), speaker: "Ann".into(), text: "Ann lives in Porto with her dog Rex.".into() },
                Turn { id: "D1:2".into(), speaker: "Ann".into(), text: "Ann works with Bob at Acme Robotics on Project Nimbus.".into() },
            ],
            observations: Vec::new(),
        };
        store.write_conversation(CONV, &["Ann".into()], &[]).unwrap();
        store.write_evidence(CONV, 0, &episode).unwrap();
        let mut turns = TurnIndex::new(CONV);
        turns.add_episode(&episode, |_| false);
        (store, turns)
    }

    fn caps() -> OntoCaps {
        OntoCaps { max_ops_per_call: 100, max_ops_per_pass: 500, max_new_entities_per_pass: 50 }
    }

    fn call(store: &Store, turns: &TurnIndex, call_seq: usize, ops: Value) -> ApplyAnswer {
        let json = json!({"agentId": CONV, "operations": ops}).to_string();
        apply(store, &json, turns, &ContractLimits::default(), &PlanConfig::default(), caps(), "conv-a/p1", call_seq).unwrap()
    }

    fn cite(turn: &str, quote: &str) -> Value {
        json!([{"source_ref": format!("turn:{turn}"), "quote": quote}])
    }

    fn effects(a: &ApplyAnswer) -> Vec<(&'static str, Option<String>)> {
        a.items.iter().map(|i| (i.effect.as_str(), i.kind.clone())).collect()
    }

    fn entity(name: &str, ty: &str, turn: &str, quote: &str) -> Value {
        json!({"operation": "create_entity", "payload": {"name": name, "type": ty}, "evidence": cite(turn, quote)})
    }

    fn claim(entity: &str, aspect: &str, value: &str) -> Value {
        json!({"operation": "add_claim_value", "payload": {"entityId": entity, "aspectId": aspect, "claimKey": aspect, "value": value}, "evidence": cite("D1:1", "Ann lives in Porto")})
    }

    fn events(store: &Store) -> Vec<(String, String)> {
        store.onto_history_events(CONV).unwrap()
    }

    /// Ann and Porto, a claim each, a `related_to` link between them.
    fn graph(store: &Store, turns: &TurnIndex) {
        let a = call(
            store,
            turns,
            1,
            json!([
                entity("Ann", "person", "D1:1", "Ann"),
                entity("Porto", "place", "D1:1", "Porto"),
                claim("Ann", "home", "Ann lives in Porto"),
                claim("Porto", "residents", "Ann lives in Porto"),
                {"operation": "create_link", "payload": {"fromEntityId": "Ann", "toEntityId": "Porto", "linkType": "related_to"}, "reason": "lives there", "evidence": cite("D1:1", "Ann lives in Porto")}
            ]),
        );
        assert!(a.items.iter().all(|i| i.effect == Effect::Applied), "{:?}", a.items);
    }

    // Signet's `dreaming-agent-tools.test.ts`: "flag then archive in one
    // batch: the archive cites attention:$0" — a flag mints attention, the
    // archive consumes it, a second consumer of it in the batch is refused.
    #[test]
    fn flag_then_archive_entity_in_one_batch_and_the_attention_is_consumed_once() {
        let (store, turns) = setup();
        graph(&store, &turns);
        let a = call(
            &store,
            &turns,
            2,
            json!([
                {"operation": "flag", "payload": {"subjectRef": "entity:conv-a/o2", "priority": 80}},
                {"operation": "archive_entity", "payload": {"target": "conv-a/o2", "reason": "not a topic"}, "provenance": "attention:$0"},
                {"operation": "archive_entity", "payload": {"target": "conv-a/o2"}, "provenance": "attention:entity:conv-a/o2"}
            ]),
        );
        assert_eq!(effects(&a), vec![("applied", None), ("applied", None), ("failed", Some("attention_consumed".into()))]);
        let view = store.ontology_view(CONV).unwrap();
        assert!(!view.entities[1].active && view.entities[0].active);
        assert!(events(&store).contains(&("conv-a/o2".into(), "archived".into())));
        assert!(view.flagged.is_empty() && view.resolved_attention.contains(&"entity:conv-a/o2".to_string()));
        // Archived: a second archive finds no pending attention for it.
        let a = call(
            &store,
            &turns,
            3,
            json!([{"operation": "archive_entity", "payload": {"target": "conv-a/o2"}, "provenance": "attention:entity:conv-a/o2"}]),
        );
        assert_eq!(effects(&a), vec![("failed", Some("attention_provenance".into()))]);
        assert!(a.items[0].message.as_deref().unwrap_or("").contains("is not a pending hygiene attention"));
    }

    #[test]
    fn flag_rejections_and_a_flag_left_pending_until_declined() {
        let (store, turns) = setup();
        graph(&store, &turns);
        let a = call(
            &store,
            &turns,
            2,
            json!([
                {"operation": "flag", "payload": {"subjectRef": "entity:conv-a/o99"}},
                {"operation": "flag", "payload": {"subjectRef": "claim:conv-a/c1"}},
                {"operation": "flag", "payload": {"subjectRef": "attribute:conv-a/c1", "priority": 20}}
            ]),
        );
        assert_eq!(effects(&a), vec![("failed", Some("unresolved_target".into())), ("failed", Some("schema".into())), ("applied", None)]);
        let pending = super::super::hygiene::pending_attention(&store.ontology_view(CONV).unwrap(), 50);
        assert!(pending.iter().any(|p| p.subject_ref == "attribute:conv-a/c1" && p.reason == "flagged" && p.priority == 20), "{pending:?}");
        // A hygiene operation without provenance: the whole request is refused.
        let a = call(&store, &turns, 3, json!([{"operation": "archive_claim_value", "payload": {"target": "conv-a/c1"}}]));
        assert_eq!(a.rejection_kind.as_deref(), Some("attention_provenance"));
        let a = call(&store, &turns, 4, json!([{"operation": "decline_attention", "payload": {"attentionId": "attribute:conv-a/c1"}}]));
        assert_eq!(effects(&a), vec![("applied", None)]);
        let view = store.ontology_view(CONV).unwrap();
        assert!(view.flagged.is_empty());
        assert!(super::super::hygiene::pending_attention(&view, 50).iter().all(|p| p.subject_ref != "attribute:conv-a/c1"));
    }

    #[test]
    fn archive_claim_aspect_and_link_with_their_guards() {
        let (store, turns) = setup();
        graph(&store, &turns);
        let policy = json!({"operation": "create_policy", "payload": {"entityId": "Ann", "name": "pets", "definition": "Ann keeps her dog Rex"}, "evidence": cite("D1:1", "her dog Rex")});
        assert_eq!(effects(&call(&store, &turns, 2, json!([policy]))), vec![("applied", None)]);
        let view = store.ontology_view(CONV).unwrap();
        let policy_aspect = view.aspects.iter().find(|a| a.name == "policy").unwrap().id.clone();
        let constraint = view.claims.iter().find(|c| c.kind == "constraint").unwrap().id.clone();
        let a = call(
            &store,
            &turns,
            3,
            json!([
                {"operation": "flag", "payload": {"subjectRef": "attribute:conv-a/c1"}},
                {"operation": "archive_claim_value", "payload": {"target": "conv-a/c1"}, "provenance": "attention:$0"},
                {"operation": "flag", "payload": {"subjectRef": format!("attribute:{constraint}")}},
                {"operation": "archive_claim_value", "payload": {"target": constraint}, "provenance": "attention:$2"},
                {"operation": "flag", "payload": {"subjectRef": format!("aspect:{policy_aspect}")}},
                {"operation": "archive_aspect", "payload": {"target": policy_aspect}, "provenance": "attention:$4"},
                {"operation": "flag", "payload": {"subjectRef": "aspect:conv-a/a2"}},
                {"operation": "archive_aspect", "payload": {"target": "conv-a/a2"}, "provenance": "attention:$6"},
                {"operation": "archive_link", "payload": {"target": "conv-a/l1"}, "provenance": "attention:link:conv-a/l1"},
                {"operation": "flag", "payload": {"subjectRef": "link:conv-a/l1"}}
            ]),
        );
        assert_eq!(
            effects(&a),
            vec![
                ("applied", None),
                ("applied", None),
                ("applied", None),
                ("failed", Some("constraint_force".into())),
                ("applied", None),
                ("failed", Some("constraint_force".into())),
                ("applied", None),
                ("applied", None),
                ("applied", None),
                ("failed", Some("unresolved_target".into())),
            ]
        );
        let view = store.ontology_view(CONV).unwrap();
        let status = |id: &str| view.claims.iter().find(|c| c.id == id).unwrap().status;
        assert_eq!(status("conv-a/c1"), ClaimStatus::Retracted);
        assert_eq!(status(&constraint), ClaimStatus::Active);
        assert_eq!(status("conv-a/c2"), ClaimStatus::Retracted, "archiving Porto's aspect retracts its claim");
        assert!(!view.aspects.iter().find(|a| a.id == "conv-a/a2").unwrap().active);
        assert!(!view.links[0].active);
        let ev = events(&store);
        assert!(ev.contains(&("conv-a/a2".into(), "archived".into())) && ev.contains(&("conv-a/l1".into(), "archived".into())));
    }

    /// Two live entities with one canonical name (the planner never creates
    /// them, an older graph or another writer might): written as a plan.
    fn duplicate_pair(store: &Store) {
        let ops = vec![PlannedOp {
            index: 0,
            operation: "create_entity".into(),
            payload: "{}".into(),
            reason: None,
            confidence: None,
            effect: Effect::Applied,
            kind: None,
            message: None,
            result: None,
            writes: vec![OntoWrite::Entity {
                id: "conv-a/o9".into(),
                name: "ann".into(),
                canonical_name: "ann".into(),
                entity_type: "person".into(),
            }],
            evidence: Vec::new(),
        }];
        let plan = OntoPlan { conversation_id: CONV.into(), pass_id: "conv-a/p0".into(), call_seq: 1, ops };
        store.apply_ontology_ops(&plan, caps()).unwrap();
    }

    // Signet's `ontology-proposals` merge: aspects move (a shared aspect
    // folds its claims), links follow the survivor, the source is gone
    // from the live graph; the duplicate group's attention is consumed.
    #[test]
    fn merge_entities_moves_aspects_claims_and_links_to_the_survivor() {
        let (store, turns) = setup();
        graph(&store, &turns);
        duplicate_pair(&store);
        let a = call(
            &store,
            &turns,
            2,
            json!([
                claim("conv-a/o9", "home", "Ann lives in Porto with Rex"),
                claim("conv-a/o9", "pets", "Ann has a dog Rex"),
                {"operation": "create_link", "payload": {"fromEntityId": "conv-a/o9", "toEntityId": "Porto", "linkType": "knows"}, "evidence": cite("D1:1", "Porto")},
                {"operation": "create_link", "payload": {"fromEntityId": "conv-a/o9", "toEntityId": "conv-a/o1", "linkType": "knows"}, "evidence": cite("D1:1", "Ann")}
            ]),
        );
        assert!(a.items.iter().all(|i| i.effect == Effect::Applied), "{:?}", a.items);
        let pending = super::super::hygiene::pending_attention(&store.ontology_view(CONV).unwrap(), 50);
        let group = pending.iter().find(|p| p.reason == "duplicate_canonical_name").unwrap().subject_ref.clone();
        assert_eq!(group, "duplicate:ann#2");
        let provenance = format!("attention:{group}");
        // Rejections first: the survivor alone, a target outside the group.
        let a = call(
            &store,
            &turns,
            3,
            json!([
                {"operation": "merge_entities", "payload": {"targets": ["conv-a/o1", "conv-a/o2"], "survivor": "conv-a/o1"}, "provenance": provenance},
                {"operation": "merge_entities", "payload": {"targets": ["conv-a/o1", "conv-a/o77"], "survivor": "conv-a/o1"}, "provenance": provenance}
            ]),
        );
        assert_eq!(effects(&a), vec![("failed", Some("attention_provenance".into())), ("failed", Some("unresolved_target".into()))]);
        let a = call(
            &store,
            &turns,
            4,
            json!([{"operation": "merge_entities", "payload": {"targets": ["conv-a/o1", "conv-a/o9"], "survivor": "conv-a/o1"}, "provenance": provenance}]),
        );
        assert_eq!(effects(&a), vec![("applied", None)]);
        let view = store.ontology_view(CONV).unwrap();
        assert!(!view.entities.iter().find(|e| e.id == "conv-a/o9").unwrap().active);
        let live_aspects: Vec<(&str, &str)> =
            view.aspects.iter().filter(|a| a.active).map(|a| (a.entity_id.as_str(), a.name.as_str())).collect();
        assert_eq!(live_aspects, vec![("conv-a/o1", "home"), ("conv-a/o2", "residents"), ("conv-a/o1", "pets")]);
        let home = view.aspects.iter().find(|a| a.active && a.name == "home").unwrap().id.clone();
        let home_claims = view.claims.iter().filter(|c| c.aspect_id == home && c.status == ClaimStatus::Active).count();
        assert_eq!(home_claims, 2, "the source's home claim folded into the survivor's aspect");
        let links: Vec<(&str, &str, &str, bool)> =
            view.links.iter().map(|l| (l.source_entity_id.as_str(), l.target_entity_id.as_str(), l.link_type.as_str(), l.active)).collect();
        assert_eq!(
            links,
            vec![
                ("conv-a/o1", "conv-a/o2", "related_to", true),
                ("conv-a/o1", "conv-a/o2", "knows", true),
                ("conv-a/o9", "conv-a/o1", "knows", false)
            ]
        );
        let ev = events(&store);
        assert!(ev.contains(&("conv-a/o9".into(), "merged".into())), "{ev:?}");
        assert!(ev.iter().any(|(_, e)| e == "moved"));
        assert!(super::super::hygiene::pending_attention(&view, 50).iter().all(|p| p.reason != "duplicate_canonical_name"));
        // The group is gone: a second merge has nothing to merge.
        let a = call(
            &store,
            &turns,
            5,
            json!([{"operation": "merge_entities", "payload": {"targets": ["conv-a/o1", "conv-a/o9"], "survivor": "conv-a/o1"}, "provenance": provenance}]),
        );
        assert_eq!(effects(&a), vec![("failed", Some("attention_provenance".into()))]);
    }

    #[test]
    fn rename_entity_and_aspect_with_their_guards() {
        let (store, turns) = setup();
        graph(&store, &turns);
        let rename = |entity: &str, name: &str| json!({"operation": "rename_entity", "payload": {"entityId": entity, "newName": name}, "evidence": cite("D1:1", "Porto")});
        let a = call(
            &store,
            &turns,
            2,
            json!([
                rename("Porto", "Oporto"),
                rename("Ann", "oporto"),
                rename("Ann", "Status"),
                rename("Nobody", "Someone Else"),
                {"operation": "rename_aspect", "payload": {"entityId": "Ann", "aspectId": "home", "newName": "residence"}, "evidence": cite("D1:1", "lives in Porto")},
                {"operation": "create_aspect", "payload": {"entityId": "Ann", "name": "work"}, "evidence": cite("D1:2", "works")},
                {"operation": "rename_aspect", "payload": {"entityId": "Ann", "aspectId": "work", "newName": "Residence"}, "evidence": cite("D1:2", "works")},
                {"operation": "rename_aspect", "payload": {"entityId": "Ann", "aspectId": "hobbies", "newName": "pastimes"}, "evidence": cite("D1:2", "works")}
            ]),
        );
        assert_eq!(
            effects(&a),
            vec![
                ("applied", None),
                ("failed", Some("name_collision".into())),
                ("failed", Some("entity_label".into())),
                ("failed", Some("unresolved_target".into())),
                ("applied", None),
                ("applied", None),
                ("failed", Some("name_collision".into())),
                ("failed", Some("unresolved_target".into())),
            ]
        );
        assert!(a.items[1].message.as_deref().unwrap_or("").contains("Use merge_entities instead"));
        let view = store.ontology_view(CONV).unwrap();
        assert_eq!((view.entities[1].name.as_str(), view.entities[1].canonical_name.as_str()), ("Oporto", "oporto"));
        assert_eq!(view.aspects[0].name, "residence");
        let ev = events(&store);
        assert!(ev.contains(&("conv-a/o2".into(), "renamed".into())) && ev.contains(&("conv-a/a1".into(), "renamed".into())));
        // The renamed entity answers to its new name.
        assert_eq!(effects(&call(&store, &turns, 3, json!([claim("Oporto", "rivers", "Ann lives in Porto")]))), vec![("applied", None)]);
        assert!(store.onto_evidence().unwrap().iter().any(|e| e.1 == "conv-a/p1/2/0"), "a rename cites evidence");
    }

    #[test]
    fn update_link_changes_type_and_reason_with_its_guards() {
        let (store, turns) = setup();
        graph(&store, &turns);
        let update = |link: &str, payload: Value| {
            let mut p = payload;
            p["linkId"] = json!(link);
            json!({"operation": "update_link", "payload": p, "evidence": cite("D1:1", "Ann lives in Porto")})
        };
        let a = call(
            &store,
            &turns,
            2,
            json!([
                update("conv-a/l1", json!({"linkType": "knows"})),
                update("conv-a/l1", json!({"linkType": "related_to"})),
                update("conv-a/l9", json!({"linkType": "knows"})),
                {"operation": "create_link", "payload": {"fromEntityId": "Ann", "toEntityId": "Porto", "linkType": "uses"}, "evidence": cite("D1:1", "Porto")},
                update("conv-a/l2", json!({"linkType": "knows"})),
                update("conv-a/l1", json!({"linkType": "related_to", "reason": "her city"}))
            ]),
        );
        assert_eq!(
            effects(&a),
            vec![
                ("applied", None),
                ("failed", Some("link_reason".into())),
                ("failed", Some("unresolved_target".into())),
                ("applied", None),
                ("failed", Some("name_collision".into())),
                ("applied", None),
            ]
        );
        let reason: Option<String> = store.onto_link_reason("conv-a/l1").unwrap();
        assert_eq!(reason.as_deref(), Some("her city"));
        let ev = events(&store);
        assert_eq!(ev.iter().filter(|(id, e)| id == "conv-a/l1" && e == "updated").count(), 2);
        // An update_link without evidence is a content operation without a quote.
        let a = call(&store, &turns, 3, json!([{"operation": "update_link", "payload": {"linkId": "conv-a/l1", "linkType": "knows"}}]));
        assert_eq!(a.rejection_kind.as_deref(), Some("missing_evidence"));
    }

    // The duplicate check through stage 2's resolver: a near-duplicate label
    // of the same type is caught by cosine (and kept as an alias); the same
    // label under another type is a new entity; the dry run reports it
    // without writing.
    #[test]
    fn a_near_duplicate_label_is_caught_by_cosine_and_another_type_is_not_merged() {
        let (store, turns) = setup();
        let embedder = HashedEmbedder::new(256);
        let resolver = NameResolver { embedder: &embedder, threshold: 0.8 };
        let run = |seq: usize, ops: Value, resolver: Option<NameResolver<'_>>| {
            let json = json!({"agentId": CONV, "operations": ops}).to_string();
            apply_resolving(&store, &json, &turns, &ContractLimits::default(), &PlanConfig::default(), caps(), "conv-a/p1", seq, resolver)
                .unwrap()
        };
        let a = run(1, json!([entity("Acme Robotics", "organization", "D1:2", "Acme Robotics")]), Some(resolver));
        assert_eq!(effects(&a), vec![("applied", None)]);
        // Dry run: reported, nothing written.
        let near = json!([entity("Acme Robotics Inc", "organization", "D1:2", "Acme Robotics")]);
        let json = json!({"agentId": CONV, "operations": near}).to_string();
        let d = dry_run(&store, &json, &turns, &ContractLimits::default(), &PlanConfig::default(), caps(), "conv-a/p1", 2, Some(resolver))
            .unwrap();
        assert_eq!(effects(&d), vec![("skipped", Some("duplicate_entity".into()))]);
        assert!(d.items[0].message.as_deref().unwrap_or("").contains("(cosine 0."), "{:?}", d.items[0].message);
        assert!(store.ontology_view(CONV).unwrap().entities[0].aliases.is_empty());
        // Without the resolver (exact and alias only) it would be a new entity.
        let d = dry_run(&store, &json, &turns, &ContractLimits::default(), &PlanConfig::default(), caps(), "conv-a/p1", 2, None).unwrap();
        assert_eq!(effects(&d), vec![("applied", None)]);
        // Applied: skipped as a duplicate, its name an alias the next claim resolves.
        let a = run(
            3,
            json!([
                entity("Acme Robotics Inc", "organization", "D1:2", "Acme Robotics"),
                claim("Acme Robotics Inc", "staff", "Ann works with Bob")
            ]),
            Some(resolver),
        );
        assert_eq!(effects(&a), vec![("skipped", Some("duplicate_entity".into())), ("applied", None)]);
        let view = store.ontology_view(CONV).unwrap();
        assert_eq!(view.entities.len(), 1);
        assert_eq!(view.entities[0].aliases, vec!["acme robotics inc".to_string()]);
        // The same near-duplicate label typed `place`: a different type is never merged.
        let a = run(4, json!([entity("Acme Robotics Inc", "place", "D1:2", "Acme Robotics")]), Some(resolver));
        assert_eq!(effects(&a), vec![("applied", None)]);
        assert_eq!(store.ontology_view(CONV).unwrap().entities.len(), 2);
        // A different name of the same type stays apart.
        let a = run(5, json!([entity("Project Nimbus", "organization", "D1:2", "Project Nimbus")]), Some(resolver));
        assert_eq!(effects(&a), vec![("applied", None)]);
    }

    // Signet's `dreaming-operations.test.ts`: "merges aspects through the
    // hygiene seam with attention provenance" — a target with one claim, a
    // source with two; the source flagged, then merged under a new name:
    // 2 claims moved, the source archived, 3 active claims under the target.
    #[test]
    fn merges_aspects_through_the_hygiene_seam_with_attention_provenance() {
        let (store, turns) = setup();
        let a = call(
            &store,
            &turns,
            1,
            json!([
                entity("Ann", "person", "D1:1", "Ann"),
                claim("Ann", "status", "Ann lives in Porto"),
                claim("Ann", "changelog", "Ann adopted Rex"),
                claim("Ann", "changelog", "Ann works with Bob"),
                claim("Ann", "pets", "Ann has a dog")
            ]),
        );
        assert!(a.items.iter().all(|i| i.effect == Effect::Applied), "{:?}", a.items);
        let view = store.ontology_view(CONV).unwrap();
        let id = |name: &str| view.aspects.iter().find(|a| a.name == name).unwrap().id.clone();
        let (target, source, pets) = (id("status"), id("changelog"), id("pets"));
        // Without provenance: the whole request is refused (Signet's
        // "requires attention provenance for merge_aspects like other hygiene ops").
        let bare = json!([{"operation": "merge_aspects", "payload": {"entityId": "conv-a/o1", "target": target, "sources": [source]}}]);
        let a = call(&store, &turns, 2, bare);
        assert_eq!(a.rejection_kind.as_deref(), Some("attention_provenance"));
        assert!(a.error.as_deref().unwrap_or("").contains("Hygiene archives require attention provenance"));
        // The guards: a new name another aspect holds; the target as its own source.
        let a = call(
            &store,
            &turns,
            3,
            json!([
                {"operation": "flag", "payload": {"subjectRef": format!("aspect:{source}"), "details": {"aspectId": source, "reason": "aspect_over_cap"}}},
                {"operation": "merge_aspects", "payload": {"entityId": "conv-a/o1", "target": target, "sources": [source], "newName": "Pets"}, "provenance": "attention:$0"},
                {"operation": "merge_aspects", "payload": {"entityId": "conv-a/o1", "target": source, "sources": [source]}, "provenance": "attention:$0"},
                {"operation": "merge_aspects", "payload": {"entityId": "conv-a/o1", "target": target, "sources": [source], "newName": "timeline", "reason": "fold changelog into status history"}, "provenance": "attention:$0"}
            ]),
        );
        assert_eq!(
            effects(&a),
            vec![("applied", None), ("failed", Some("name_collision".into())), ("failed", Some("merge_blocked".into())), ("applied", None)]
        );
        let result: Value = serde_json::from_str(a.items[3].result.as_deref().unwrap()).unwrap();
        assert_eq!((result["targetAspect"].clone(), result["totalAttributesMoved"].clone()), (json!("timeline"), json!(2)));
        let view = store.ontology_view(CONV).unwrap();
        let aspect = |id: &str| view.aspects.iter().find(|a| a.id == id).unwrap();
        assert!(!aspect(&source).active, "the source is archived");
        assert_eq!(aspect(&target).name, "timeline");
        assert!(aspect(&pets).active);
        let active = view.claims.iter().filter(|c| c.aspect_id == target && c.status == ClaimStatus::Active).count();
        assert_eq!(active, 3);
        let ev = events(&store);
        assert!(ev.contains(&(source.clone(), "archived".into())) && ev.contains(&(target.clone(), "renamed".into())), "{ev:?}");
        assert!(ev.iter().any(|(_, e)| e == "moved"));
        // The attention is consumed: a second merge citing it is refused.
        let a = call(
            &store,
            &turns,
            4,
            json!([{"operation": "merge_aspects", "payload": {"entityId": "conv-a/o1", "target": target, "sources": [pets]}, "provenance": format!("attention:aspect:{source}")}]),
        );
        assert_eq!(effects(&a), vec![("failed", Some("attention_provenance".into()))]);
    }

    /// memform's guard: a single-valued target refuses a merge that would
    /// hold two different active values of one claim key.
    #[test]
    fn a_single_valued_target_refuses_a_merge_that_would_hold_two_values() {
        let (store, turns) = setup();
        let cfg = PlanConfig { single_valued: ["home".to_string()].into_iter().collect(), ..PlanConfig::default() };
        let run = |seq: usize, ops: Value| {
            let json = json!({"agentId": CONV, "operations": ops}).to_string();
            apply(&store, &json, &turns, &ContractLimits::default(), &cfg, caps(), "conv-a/p1", seq).unwrap()
        };
        let in_slot = |aspect: &str, value: &str| json!({"operation": "add_claim_value", "payload": {"entityId": "Ann", "aspectId": aspect, "claimKey": "home", "value": value}, "evidence": cite("D1:1", "Ann lives in Porto")});
        let a = run(1, json!([entity("Ann", "person", "D1:1", "Ann"), in_slot("home", "Porto"), in_slot("residence", "Lisbon")]));
        assert!(a.items.iter().all(|i| i.effect == Effect::Applied), "{:?}", a.items);
        let view = store.ontology_view(CONV).unwrap();
        let id = |name: &str| view.aspects.iter().find(|a| a.name == name).unwrap().id.clone();
        let (home, residence) = (id("home"), id("residence"));
        let a = run(
            2,
            json!([
                {"operation": "flag", "payload": {"subjectRef": format!("aspect:{residence}")}},
                {"operation": "merge_aspects", "payload": {"entityId": "Ann", "target": home, "sources": [residence]}, "provenance": "attention:$0"}
            ]),
        );
        assert_eq!(effects(&a), vec![("applied", None), ("failed", Some("contradiction".into()))]);
        assert!(store.ontology_view(CONV).unwrap().aspects.iter().all(|a| a.active), "nothing moved");
    }
}
