//! Hygiene attention (docs/dreaming.md, 8.2 and 12.4): Signet's
//! deterministic graph detectors (`getDreamingHygieneCandidatesInDb`,
//! `knowledge-hygiene.ts`) turn the graph's cleanup work into attention
//! records, which a `hygiene` pass works through without touching evidence.
//!
//! memform derives the records from the graph rather than keeping a queue:
//! an attention record is pending while its detector still finds it and no
//! applied `decline_attention` names it (the operation log keeps that, see
//! `OntologyView::resolved_attention`). Detectors, reasons and priorities
//! are Signet's: an entity whose label the gate rejects (100), an entity
//! with no active claim (`zero_active_attributes`, 90), an aspect over the
//! claims cap (`attribute_over_cap`, Signet's #1138 enqueuer, 85: memform's
//! priority), a duplicate canonical name (`duplicate_canonical_name`, 75), a
//! generic aspect name (`generic_aspect`, 65), a `related_to` link
//! (`generic_related_to`, 55); at most [`MAX_ATTENTION`] records, highest
//! priority first, then by subject.

use std::collections::{BTreeMap, HashSet};

use super::quality::{classify_entity_quality, normalize_entity_name};
use crate::model::ontology::{ClaimStatus, OntologyView};

/// Signet's limit on hygiene candidates per check (`limit`, default 50).
pub const MAX_ATTENTION: usize = 50;

/// Signet's `GENERIC_ASPECTS`.
const GENERIC_ASPECTS: &[&str] = &["general", "properties", "overview", "profile", "details", "information"];

/// One attention record: its id is its subject (`entity:<id>`,
/// `aspect:<id>`, `duplicate:<canonical name>`, `link:<id>`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Attention {
    pub subject_ref: String,
    pub reason: String,
    pub priority: u32,
}

/// Every hygiene candidate of `view` (pending or not), Signet's order.
pub fn hygiene_candidates(view: &OntologyView, max_claims_per_aspect: usize) -> Vec<Attention> {
    let mut found: BTreeMap<String, Attention> = BTreeMap::new();
    let mut add = |subject_ref: String, reason: &str, priority: u32| {
        let keep = found.get(&subject_ref).is_none_or(|a| priority > a.priority);
        if keep {
            found.insert(subject_ref.clone(), Attention { subject_ref, reason: reason.to_string(), priority });
        }
    };
    let active_aspects: Vec<_> = view.aspects.iter().filter(|a| a.active).collect();
    let active_claims = |aspect: &str| view.claims.iter().filter(|c| c.status == ClaimStatus::Active && c.aspect_id == aspect).count();
    let mut canonical: BTreeMap<&str, usize> = BTreeMap::new();
    for e in view.entities.iter().filter(|e| e.active) {
        if let Err(reason) = classify_entity_quality(&e.name, Some(&e.entity_type)) {
            add(format!("entity:{}", e.id), reason.as_str(), 100);
        }
        let has_claim = active_aspects.iter().any(|a| a.entity_id == e.id && active_claims(&a.id) > 0);
        if !has_claim {
            add(format!("entity:{}", e.id), "zero_active_attributes", 90);
        }
        *canonical.entry(e.canonical_name.as_str()).or_default() += 1;
    }
    for a in &active_aspects {
        if active_claims(&a.id) > max_claims_per_aspect {
            add(format!("aspect:{}", a.id), "attribute_over_cap", 85);
        } else if GENERIC_ASPECTS.contains(&normalize_entity_name(&a.canonical_name).as_str()) {
            add(format!("aspect:{}", a.id), "generic_aspect", 65);
        }
    }
    for (name, n) in canonical {
        if n > 1 && !name.trim().is_empty() {
            add(format!("duplicate:{name}#{n}"), "duplicate_canonical_name", 75);
        }
    }
    for l in view.links.iter().filter(|l| l.active && l.link_type == "related_to") {
        add(format!("link:{}", l.id), "generic_related_to", 55);
    }
    let mut out: Vec<Attention> = found.into_values().collect();
    out.sort_by(|a, b| b.priority.cmp(&a.priority).then_with(|| a.subject_ref.cmp(&b.subject_ref)));
    out
}

/// The pending attention of `view`: its candidates no applied
/// `decline_attention` resolved, at most [`MAX_ATTENTION`].
///
/// A record an applied `flag` minted (`OntologyView::flagged`) is pending
/// too, with reason `flagged` and the flag's priority, unless a detector
/// already finds its subject.
pub fn pending_attention(view: &OntologyView, max_claims_per_aspect: usize) -> Vec<Attention> {
    let resolved: HashSet<&str> = view.resolved_attention.iter().map(String::as_str).collect();
    let mut out: Vec<Attention> = hygiene_candidates(view, max_claims_per_aspect);
    for f in &view.flagged {
        if !out.iter().any(|a| a.subject_ref == f.subject_ref) {
            out.push(Attention { subject_ref: f.subject_ref.clone(), reason: "flagged".into(), priority: f.priority });
        }
    }
    out.retain(|a| !resolved.contains(a.subject_ref.as_str()));
    out.sort_by(|a, b| b.priority.cmp(&a.priority).then_with(|| a.subject_ref.cmp(&b.subject_ref)));
    out.truncate(MAX_ATTENTION);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ontology::{Cardinality, ViewAspect, ViewClaim, ViewEntity, ViewLink};

    fn entity(id: &str, name: &str) -> ViewEntity {
        ViewEntity {
            id: id.into(),
            name: name.into(),
            canonical_name: normalize_entity_name(name),
            entity_type: "project".into(),
            active: true,
            aliases: Vec::new(),
        }
    }

    fn aspect(id: &str, entity: &str, name: &str) -> ViewAspect {
        ViewAspect {
            id: id.into(),
            entity_id: entity.into(),
            name: name.into(),
            canonical_name: normalize_entity_name(name),
            cardinality: Cardinality::Multi,
            active: true,
        }
    }

    fn claim(id: &str, aspect: &str) -> ViewClaim {
        ViewClaim {
            id: id.into(),
            aspect_id: aspect.into(),
            claim_key: "k".into(),
            kind: "attribute".into(),
            content: id.into(),
            normalized_content: id.into(),
            confidence: 1.0,
            status: ClaimStatus::Active,
            superseded_by: None,
            version: 1,
        }
    }

    fn refs(v: &[Attention]) -> Vec<(&str, &str)> {
        v.iter().map(|a| (a.subject_ref.as_str(), a.reason.as_str())).collect()
    }

    // Signet's `dreaming.test.ts`: "turns deterministic graph hygiene into
    // scoped attention without episodic evidence" and "enqueues over-cap
    // attention rows when caps are supplied (#1138)": a husk (no active
    // claim) and an aspect of 7 claims under a cap of 5.
    #[test]
    fn a_husk_and_an_over_cap_aspect_become_attention() {
        let mut view = OntologyView { conversation_id: "c".into(), ..OntologyView::default() };
        view.entities = vec![entity("e-husk", "Legacy Husk"), entity("e-full", "Acme Project")];
        view.aspects = vec![aspect("a-s3", "e-full", "releases")];
        view.claims = (0..7).map(|i| claim(&format!("c{i}"), "a-s3")).collect();
        let got = hygiene_candidates(&view, 5);
        assert_eq!(refs(&got), vec![("entity:e-husk", "zero_active_attributes"), ("aspect:a-s3", "attribute_over_cap")]);
        // Under the cap, only the husk.
        assert_eq!(refs(&hygiene_candidates(&view, 7)), vec![("entity:e-husk", "zero_active_attributes")]);
        // A superseded claim does not count as active: with none left the entity is a husk too.
        for c in &mut view.claims {
            c.status = ClaimStatus::Superseded;
        }
        assert_eq!(hygiene_candidates(&view, 5).len(), 2);
        assert!(hygiene_candidates(&view, 5).iter().all(|a| a.reason == "zero_active_attributes"));
    }

    // "reopens duplicate hygiene attention when group membership changes":
    // a declined duplicate group is pending again once a third member joins.
    #[test]
    fn a_duplicate_group_is_flagged_and_reopened_when_its_membership_changes() {
        let mut view = OntologyView { conversation_id: "c".into(), ..OntologyView::default() };
        view.entities = vec![entity("e1", "Acme"), entity("e2", "ACME")];
        view.aspects = vec![aspect("a1", "e1", "status"), aspect("a2", "e2", "status")];
        view.claims = vec![claim("c1", "a1"), claim("c2", "a2")];
        assert_eq!(refs(&pending_attention(&view, 50)), vec![("duplicate:acme#2", "duplicate_canonical_name")]);
        view.resolved_attention.push("duplicate:acme#2".into());
        assert!(pending_attention(&view, 50).is_empty());
        view.entities.push(entity("e3", "acme"));
        view.aspects.push(aspect("a3", "e3", "status"));
        view.claims.push(claim("c3", "a3"));
        assert_eq!(refs(&pending_attention(&view, 50)), vec![("duplicate:acme#3", "duplicate_canonical_name")]);
    }

    // Signet's other detectors: a rejected label (100) outranks a husk; a
    // generic aspect name; a `related_to` link; at most 50, by priority.
    #[test]
    fn labels_generic_aspects_and_related_to_links_and_the_limit() {
        let mut view = OntologyView { conversation_id: "c".into(), ..OntologyView::default() };
        view.entities = vec![entity("e1", "Status"), entity("e2", "Acme Project"), entity("e3", "Beta Project")];
        view.aspects = vec![aspect("a1", "e2", "General"), aspect("a2", "e3", "owner")];
        view.claims = vec![claim("c1", "a1"), claim("c2", "a2")];
        view.links = vec![ViewLink {
            id: "l1".into(),
            source_entity_id: "e2".into(),
            target_entity_id: "e3".into(),
            link_type: "related_to".into(),
            active: true,
        }];
        let got = hygiene_candidates(&view, 50);
        assert_eq!(got[0].subject_ref, "entity:e1");
        assert_eq!(got[0].priority, 100);
        assert_eq!(refs(&got[1..]), vec![("aspect:a1", "generic_aspect"), ("link:l1", "generic_related_to")]);
        view.entities = (0..80).map(|i| entity(&format!("h{i:02}"), &format!("Husk Project {i}"))).collect();
        assert_eq!(pending_attention(&view, 50).len(), MAX_ATTENTION);
    }
}
