//! What the graph and the operation log say needs a content pass's
//! attention (docs/dreaming.md, section 7): the contradictions
//! `list_contradictions` lists and the content attention `attention_list`
//! lists beside the hygiene records ([`super::hygiene`]). Everything here is
//! derived, never stored: from the ontology's snapshot, the log's flagged
//! rejections and the conversation's evidence states.
//!
//! - **Contradictions.** Two active claims of one aspect that the graph
//!   holds against each other: on a single-valued aspect, two different
//!   values of one claim key (`single_valued`; the planner never writes
//!   that, an older graph, a merge or another writer may); on any aspect,
//!   a pair the prospective detector flags (`negation_mismatch`,
//!   `antonym_conflict`). A **flagged rejection** is an `add_claim_value`
//!   the single-valued guard refused (effect `failed`, kind
//!   `contradiction`): active while the claim it conflicted with is still
//!   active. A superseded claim and its successor are a resolved pair.
//! - **Content attention.** Flagged rejections still active
//!   (`contested_claim`, subject `attribute:<held claim>`), entities with a
//!   duplicate candidate (`hygiene`, reason `duplicate_candidate`, advisory:
//!   not a record a hygiene operation can cite), and unprocessed evidence
//!   past the watermark (`evidence_requeue`, subject `turn:<id>`).

use serde::Serialize;
use serde_json::{Value, json};

use super::plan::{NameVectors, duplicate_among};
use super::quality::prospective_contradiction;
use crate::model::ontology::{Cardinality, ClaimStatus, OntologyView};

/// Priorities of content attention (memform's; hygiene's are Signet's,
/// 55–100): a contested claim first, then a duplicate candidate, then
/// unprocessed evidence.
pub const CONTESTED_PRIORITY: u32 = 80;
pub const DUPLICATE_CANDIDATE_PRIORITY: u32 = 60;
pub const EVIDENCE_PRIORITY: u32 = 40;

/// An `add_claim_value` the single-valued guard rejected (its log row).
#[derive(Debug, Clone, PartialEq)]
pub struct FlaggedRejection {
    pub op_id: String,
    pub entity_id: String,
    pub aspect_id: String,
    pub claim_key: String,
    /// The active claim the value conflicted with.
    pub conflicts_with: String,
    /// The rejected value.
    pub value: String,
}

/// Reads the log rows of `Store::contradiction_rejections` (op id, payload,
/// result); a row whose result does not name the conflicting claim (written
/// before the result carried it) is left out.
pub fn flagged_rejections(rows: &[(String, String, Option<String>)]) -> Vec<FlaggedRejection> {
    rows.iter()
        .filter_map(|(op, _, result)| {
            let r: Value = serde_json::from_str(result.as_deref()?).ok()?;
            let s = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
            Some(FlaggedRejection {
                op_id: op.clone(),
                entity_id: s("entityId")?,
                aspect_id: s("aspectId")?,
                claim_key: s("claimKey")?,
                conflicts_with: s("conflictsWith")?,
                value: s("value").unwrap_or_default(),
            })
        })
        .collect()
}

/// One contradiction `list_contradictions` answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Contradiction {
    /// `active` or `resolved`.
    pub status: &'static str,
    /// `graph` (two active claims), `flagged` (a rejected value) or
    /// `superseded` (a resolved pair).
    pub source: &'static str,
    /// `single_valued`, `negation_mismatch`, `antonym_conflict` or `superseded`.
    pub reason: String,
    pub entity_id: String,
    pub aspect_id: String,
    pub claim_key: String,
    /// The claims involved (a flagged rejection: the held claim only).
    pub claims: Vec<String>,
    /// Their contents; a flagged rejection's second is the rejected value.
    pub contents: Vec<String>,
    /// A flagged rejection's operation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op_id: Option<String>,
}

/// Every contradiction of `view` and the log's flagged rejections, aspect
/// by aspect in id order, then the flagged ones in log order.
pub fn contradictions(view: &OntologyView, flagged: &[FlaggedRejection]) -> Vec<Contradiction> {
    let mut out = Vec::new();
    let entity_of = |aspect: &str| view.aspects.iter().find(|a| a.id == aspect).map(|a| a.entity_id.clone()).unwrap_or_default();
    for a in &view.aspects {
        let claims: Vec<_> = view.claims.iter().filter(|c| c.aspect_id == a.id).collect();
        let active: Vec<_> = claims.iter().filter(|c| c.status == ClaimStatus::Active).collect();
        for (x, c1) in active.iter().enumerate() {
            for c2 in &active[x + 1..] {
                let single =
                    a.cardinality == Cardinality::Single && c1.claim_key == c2.claim_key && c1.normalized_content != c2.normalized_content;
                let reason = if single {
                    Some("single_valued".to_string())
                } else {
                    let risk = prospective_contradiction(&c2.content, &c1.content);
                    risk.detected.then(|| risk.reason.map(|r| r.as_str().to_string()).unwrap_or_else(|| "detected".into()))
                };
                if let Some(reason) = reason {
                    out.push(Contradiction {
                        status: "active",
                        source: "graph",
                        reason,
                        entity_id: a.entity_id.clone(),
                        aspect_id: a.id.clone(),
                        claim_key: c1.claim_key.clone(),
                        claims: vec![c1.id.clone(), c2.id.clone()],
                        contents: vec![c1.content.clone(), c2.content.clone()],
                        op_id: None,
                    });
                }
            }
        }
        for c in claims.iter().filter(|c| c.status == ClaimStatus::Superseded) {
            if let Some(by) = &c.superseded_by {
                let next = view.claims.iter().find(|n| &n.id == by).map(|n| n.content.clone()).unwrap_or_default();
                out.push(Contradiction {
                    status: "resolved",
                    source: "superseded",
                    reason: "superseded".into(),
                    entity_id: a.entity_id.clone(),
                    aspect_id: a.id.clone(),
                    claim_key: c.claim_key.clone(),
                    claims: vec![c.id.clone(), by.clone()],
                    contents: vec![c.content.clone(), next],
                    op_id: None,
                });
            }
        }
    }
    for f in flagged {
        let held = view.claims.iter().find(|c| c.id == f.conflicts_with);
        let active = held.is_some_and(|c| c.status == ClaimStatus::Active);
        // The held claim may have moved (a merge); its aspect is where it is now.
        let aspect = held.map(|c| c.aspect_id.clone()).unwrap_or_else(|| f.aspect_id.clone());
        let entity = if held.is_some() { entity_of(&aspect) } else { f.entity_id.clone() };
        out.push(Contradiction {
            status: if active { "active" } else { "resolved" },
            source: "flagged",
            reason: "single_valued".into(),
            entity_id: entity,
            aspect_id: aspect,
            claim_key: f.claim_key.clone(),
            claims: vec![f.conflicts_with.clone()],
            contents: vec![held.map(|c| c.content.clone()).unwrap_or_default(), f.value.clone()],
            op_id: Some(f.op_id.clone()),
        });
    }
    out
}

/// One content attention item (`attention_list`'s shape).
#[derive(Debug, Clone, PartialEq)]
pub struct ContentAttention {
    pub id: String,
    /// `contested_claim`, `hygiene` (a duplicate candidate) or `evidence_requeue`.
    pub kind: &'static str,
    /// `pending` or `resolved`.
    pub status: &'static str,
    pub subject_ref: String,
    pub details: Value,
    pub priority: u32,
}

impl ContentAttention {
    pub fn to_json(&self, conversation: &str) -> Value {
        json!({"id": self.id, "kind": self.kind, "status": self.status, "subjectRef": self.subject_ref,
            "details": self.details, "priority": self.priority, "agentId": conversation})
    }
}

/// A turn not yet processed: its id, its episode, and whether a rejected
/// request cited it in this pass.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingTurn {
    pub turn: String,
    pub episode: String,
    pub rejected_citation: bool,
}

/// The content attention of a conversation: flagged rejections (pending
/// while the held claim is active, else resolved), each live entity with a
/// duplicate candidate (the apply path's own check, `duplicate_among`:
/// an alias or the nearest live entity of its type by cosine; exact
/// canonical groups are hygiene's `duplicate:` records already), and each
/// pending turn, in that order within a priority.
pub fn content_attention(
    view: &OntologyView,
    flagged: &[FlaggedRejection],
    vectors: Option<&NameVectors>,
    pending: &[PendingTurn],
) -> Vec<ContentAttention> {
    let mut out = Vec::new();
    for c in contradictions(view, flagged).into_iter().filter(|c| c.source == "flagged") {
        out.push(ContentAttention {
            id: format!("contested:{}", c.op_id.clone().unwrap_or_default()),
            kind: "contested_claim",
            status: if c.status == "active" { "pending" } else { "resolved" },
            subject_ref: format!("attribute:{}", c.claims[0]),
            details: json!({"reason": "single_valued", "entityId": c.entity_id, "aspectId": c.aspect_id, "claimKey": c.claim_key,
                "heldValue": c.contents[0], "rejectedValue": c.contents[1], "rejectedOp": c.op_id}),
            priority: CONTESTED_PRIORITY,
        });
    }
    for e in view.entities.iter().filter(|e| e.active) {
        let Ok(Some(d)) = duplicate_among(view, &e.name, &e.entity_type, vectors, Some(&e.id)) else { continue };
        if d.how == "exact" {
            continue;
        }
        out.push(ContentAttention {
            id: format!("candidate:{}", e.id),
            kind: "hygiene",
            status: "pending",
            subject_ref: format!("entity:{}", e.id),
            details: json!({"reason": "duplicate_candidate", "candidate": d.entity_id, "how": d.how, "cosine": d.cosine,
                "advisory": "not citable as provenance: flag entity:<id> first"}),
            priority: DUPLICATE_CANDIDATE_PRIORITY,
        });
    }
    for t in pending {
        out.push(ContentAttention {
            id: format!("evidence:{}", t.turn),
            kind: "evidence_requeue",
            status: "pending",
            subject_ref: format!("turn:{}", t.turn),
            details: json!({"reason": if t.rejected_citation { "rejected_citation" } else { "unprocessed" }, "episode": t.episode}),
            priority: EVIDENCE_PRIORITY,
        });
    }
    out.sort_by_key(|a| std::cmp::Reverse(a.priority));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::hashed::HashedEmbedder;
    use crate::model::ontology::{ViewAspect, ViewClaim, ViewEntity};
    use crate::pipeline::dreaming::plan::{NameResolver, vectors_for};

    fn entity(id: &str, name: &str, ty: &str) -> ViewEntity {
        ViewEntity {
            id: id.into(),
            name: name.into(),
            canonical_name: name.to_lowercase(),
            entity_type: ty.into(),
            active: true,
            aliases: Vec::new(),
        }
    }

    fn aspect(id: &str, entity: &str, cardinality: Cardinality) -> ViewAspect {
        ViewAspect { id: id.into(), entity_id: entity.into(), name: id.into(), canonical_name: id.into(), cardinality, active: true }
    }

    fn claim(id: &str, aspect: &str, key: &str, content: &str, status: ClaimStatus) -> ViewClaim {
        ViewClaim {
            id: id.into(),
            aspect_id: aspect.into(),
            claim_key: key.into(),
            kind: "attribute".into(),
            content: content.into(),
            normalized_content: content.to_lowercase(),
            confidence: 1.0,
            status,
            superseded_by: None,
            version: 1,
        }
    }

    fn view() -> OntologyView {
        let mut v = OntologyView { conversation_id: "c".into(), ..OntologyView::default() };
        v.entities = vec![entity("e1", "Ann", "person")];
        v.aspects = vec![aspect("home", "e1", Cardinality::Single), aspect("pets", "e1", Cardinality::Multi)];
        v.claims = vec![
            claim("c1", "home", "lives_in", "Ann lives in Porto", ClaimStatus::Active),
            claim("c2", "home", "lives_in", "Ann lives in Lisbon", ClaimStatus::Active),
            claim("c3", "home", "born_in", "Ann was born in Faro", ClaimStatus::Active),
            claim("c4", "pets", "has_pet", "Ann has a dog", ClaimStatus::Active),
            claim("c5", "pets", "has_pet", "Ann has a cat", ClaimStatus::Active),
        ];
        v
    }

    #[test]
    fn single_valued_pairs_and_flagged_rejections_come_from_the_graph_and_the_log() {
        let mut v = view();
        let rows = vec![
            (
                "c/p1/1/0".to_string(),
                "{}".to_string(),
                Some(
                    r#"{"entityId":"e1","aspectId":"home","claimKey":"born_in","conflictsWith":"c3","value":"Ann was born in Braga"}"#
                        .into(),
                ),
            ),
            ("c/p1/1/1".to_string(), "{}".to_string(), None),
        ];
        let flagged = flagged_rejections(&rows);
        assert_eq!(flagged.len(), 1, "a row without the conflicting claim is left out");
        let got: Vec<(&str, &str, String, Vec<String>)> =
            contradictions(&v, &flagged).into_iter().map(|c| (c.status, c.source, c.reason, c.claims)).collect();
        assert_eq!(
            got,
            vec![
                ("active", "graph", "single_valued".to_string(), vec!["c1".to_string(), "c2".to_string()]),
                ("active", "flagged", "single_valued".to_string(), vec!["c3".to_string()]),
            ],
            "two values of one key on a single-valued aspect; different keys and a multi-valued aspect are no pair"
        );
        // The held claim superseded: the flag is resolved, and the pair is listed resolved.
        v.claims[2].status = ClaimStatus::Superseded;
        v.claims[2].superseded_by = Some("c6".into());
        v.claims.push(claim("c6", "home", "born_in", "Ann was born in Braga", ClaimStatus::Active));
        let all = contradictions(&v, &flagged);
        assert!(all.iter().any(|c| c.source == "superseded" && c.claims == ["c3", "c6"] && c.status == "resolved"));
        assert!(all.iter().any(|c| c.source == "flagged" && c.status == "resolved"));
        let attention = content_attention(&v, &flagged, None, &[]);
        assert_eq!(attention.iter().map(|a| (a.kind, a.status)).collect::<Vec<_>>(), vec![("contested_claim", "resolved")]);
    }

    #[test]
    fn content_attention_lists_contested_claims_duplicate_candidates_and_pending_evidence() {
        let mut v = view();
        v.entities.push(entity("e2", "Acme Robotics", "organization"));
        v.entities.push(entity("e3", "Acme Robotics Inc", "organization"));
        v.entities.push(entity("e4", "Acme Robotics Inc", "place"));
        let flagged = vec![FlaggedRejection {
            op_id: "c/p1/1/0".into(),
            entity_id: "e1".into(),
            aspect_id: "home".into(),
            claim_key: "lives_in".into(),
            conflicts_with: "c1".into(),
            value: "Ann lives in Faro".into(),
        }];
        let embedder = HashedEmbedder::new(256);
        let names: Vec<&str> = v.entities.iter().map(|e| e.name.as_str()).collect();
        let vectors = vectors_for(&names, &v, NameResolver { embedder: &embedder, threshold: 0.8 }).unwrap();
        let pending = vec![
            PendingTurn { turn: "D2:1".into(), episode: "s2".into(), rejected_citation: false },
            PendingTurn { turn: "D2:2".into(), episode: "s2".into(), rejected_citation: true },
        ];
        let got = content_attention(&v, &flagged, Some(&vectors), &pending);
        let refs: Vec<(&str, &str)> = got.iter().map(|a| (a.kind, a.subject_ref.as_str())).collect();
        assert_eq!(
            refs,
            vec![
                ("contested_claim", "attribute:c1"),
                ("hygiene", "entity:e2"),
                ("evidence_requeue", "turn:D2:1"),
                ("evidence_requeue", "turn:D2:2"),
            ],
            "e2's near-duplicate of its type is e3 (cosine); e3 shares its canonical name with the place e4, an exact \
             group that hygiene's `duplicate:` record already lists (type-agnostic, as Signet's), so it is no candidate here"
        );
        assert_eq!(got[1].details["candidate"], json!("e3"));
        assert_eq!(got[3].details["reason"], json!("rejected_citation"));
        // Without the resolver only aliases count: no candidate.
        assert!(content_attention(&v, &flagged, None, &[]).iter().all(|a| a.kind != "hygiene"));
    }
}
