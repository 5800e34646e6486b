//! Stage 2, resolve entities: exact name match of the same type → reuse;
//! else the nearest same-type entity by cosine ≥ `entity_merge_threshold` →
//! merge (alias recorded); else insert. The raw→canonical map is then applied
//! to every fact's subject and object. Type-aware: apple the ORG never merges
//! into apple the FOOD.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::extract::Extraction;
use crate::embed::cosine;
use crate::pipeline::Config;
use crate::state::{ConvState, EntityIndex, EntityRec, Norms, Vector};
use crate::types::{CandidateEntity, CandidateFact, EntityType, FactKind};

/// What happened to one extracted entity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum EntityDecision {
    /// Same name (or alias) and type as an existing entity.
    Reuse { raw: String, entity_id: String },
    /// Close enough to an existing same-type entity: `raw` becomes its alias.
    Merge { raw: String, entity_id: String, canonical: String, cosine: f64 },
    /// A new entity.
    Insert { raw: String, entity_id: String },
}

/// Stage 2's output for one episode.
#[derive(Debug, Clone, Default)]
pub struct Resolution {
    pub decisions: Vec<EntityDecision>,
    /// Entities to create (ids assigned), in order.
    pub new_entities: Vec<EntityRec>,
    /// (entity id, alias) pairs to record.
    pub new_aliases: Vec<(String, String)>,
    /// (lower-cased raw name, type) → (canonical name, entity id).
    pub map: BTreeMap<(String, EntityType), (String, String)>,
}

/// A candidate fact with its names resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedFact {
    pub fact: CandidateFact,
    pub subject_entity: Option<String>,
    pub object_entity: Option<String>,
}

/// Stage 2 for one episode: resolves the extracted entities against
/// `state`, then maps every fact's names onto them.
pub fn stage(
    conversation_id: &str,
    extraction: &Extraction,
    embeddings: &[Vec<f32>],
    state: &ConvState,
    cfg: &Config,
) -> (Resolution, Vec<ResolvedFact>) {
    let resolution = resolve_entities(conversation_id, &extraction.entities, embeddings, state, cfg.soda.entity_merge_threshold);
    let facts = apply_map(extraction.facts.iter().map(|f| &f.fact), &extraction.entities, &resolution, state);
    (resolution, facts)
}

/// Resolves `entities` (with their `embeddings`, same order) against `state`.
/// New entity ids continue `state`'s numbering under `conversation_id`.
pub fn resolve_entities(
    conversation_id: &str,
    entities: &[CandidateEntity],
    embeddings: &[Vec<f32>],
    state: &ConvState,
    merge_threshold: f64,
) -> Resolution {
    let mut res = Resolution::default();
    let index = state.entity_index();
    for (i, ent) in entities.iter().enumerate() {
        let raw = ent.name.trim().to_string();
        let key = raw.to_lowercase();
        let map_key = (key.clone(), ent.entity_type);
        if raw.is_empty() || res.map.contains_key(&map_key) {
            continue;
        }
        let emb = embeddings.get(i).cloned().unwrap_or_default();
        // The conversation's entities from the index (by name, by type),
        // then the episode's new ones: the first exact match, else the
        // nearest by cosine (the first of equal best) at or above the threshold.
        let exact = index
            .named(&key)
            .iter()
            .map(|&p| &state.entities[p as usize])
            .chain(res.new_entities.iter())
            .find(|e| e.entity_type == ent.entity_type && names_match(e, &key));
        if let Some(e) = exact {
            res.map.insert(map_key, (e.name.clone(), e.id.clone()));
            res.decisions.push(EntityDecision::Reuse { raw, entity_id: e.id.clone() });
            continue;
        }
        let norms = Norms::of(&emb);
        let probe = Vector { slot: None, values: &emb };
        let near_known = index.of_type(ent.entity_type).iter().filter_map(|&p| {
            let e = &state.entities[p as usize];
            // `entity_merge_threshold` is no traced key of a sweep: compared
            // unrecorded (a recorded comparison would narrow a swept key
            // that happens to have the same value).
            let c = state.cosine_unless_below(
                probe,
                &norms,
                Vector { slot: None, values: &e.embedding },
                index.norms(p as usize),
                merge_threshold,
            )?;
            (c >= merge_threshold).then_some((c, e))
        });
        let nearest = near_known
            .chain(res.new_entities.iter().filter(|e| e.entity_type == ent.entity_type).map(|e| (cosine(&emb, &e.embedding), e)))
            .fold(None::<(f64, &EntityRec)>, |best, (c, e)| match best {
                Some((bc, _)) if bc >= c => best,
                _ => Some((c, e)),
            });
        if let Some((c, e)) = nearest.filter(|(c, _)| *c >= merge_threshold) {
            let (id, canonical) = (e.id.clone(), e.name.clone());
            res.new_aliases.push((id.clone(), raw.clone()));
            if let Some(pending) = res.new_entities.iter_mut().find(|p| p.id == id) {
                pending.aliases.push(raw.clone());
            }
            res.map.insert(map_key, (canonical.clone(), id.clone()));
            res.decisions.push(EntityDecision::Merge { raw, entity_id: id, canonical, cosine: c });
            continue;
        }
        let id = format!("{conversation_id}/e{}", state.entities.len() + res.new_entities.len());
        res.new_entities.push(EntityRec {
            id: id.clone(),
            name: raw.clone(),
            entity_type: ent.entity_type,
            aliases: Vec::new(),
            embedding: emb,
        });
        res.map.insert(map_key, (raw.clone(), id.clone()));
        res.decisions.push(EntityDecision::Insert { raw, entity_id: id });
    }
    res
}

fn names_match(e: &EntityRec, key: &str) -> bool {
    e.name.to_lowercase() == key || e.aliases.iter().any(|a| a.to_lowercase() == key)
}

/// Applies the raw→canonical map to subjects and entity objects, and links
/// each fact to the entities it is anchored on. A name's type comes from the
/// episode's extracted `entities` (an exact-case match first), so "Apple"
/// the ORG and "apple" the FOOD map to different entities.
pub fn apply_map<'f>(
    facts: impl IntoIterator<Item = &'f CandidateFact>,
    entities: &[CandidateEntity],
    res: &Resolution,
    state: &ConvState,
) -> Vec<ResolvedFact> {
    let type_of = |name: &str| {
        let n = name.trim();
        entities
            .iter()
            .find(|e| e.name.trim() == n)
            .or_else(|| entities.iter().find(|e| e.name.trim().eq_ignore_ascii_case(n)))
            .map(|e| e.entity_type)
    };
    let index = state.entity_index();
    facts
        .into_iter()
        .map(|f| {
            let mut fact = f.clone();
            let subject_entity = lookup(&fact.subject, res, state, &index, type_of(&f.subject)).map(|(name, id)| {
                fact.subject = name;
                id
            });
            let object_entity = if fact.kind == FactKind::Relationship {
                lookup(&fact.object, res, state, &index, type_of(&f.object)).map(|(name, id)| {
                    fact.object = name;
                    id
                })
            } else {
                None
            };
            ResolvedFact { fact, subject_entity, object_entity }
        })
        .collect()
}

fn lookup(name: &str, res: &Resolution, state: &ConvState, index: &EntityIndex, ty: Option<EntityType>) -> Option<(String, String)> {
    let key = name.trim().to_lowercase();
    let mapped = match ty {
        Some(t) => res.map.get(&(key.clone(), t)),
        None => res.map.iter().find(|((k, _), _)| *k == key).map(|(_, v)| v),
    };
    if let Some((canonical, id)) = mapped {
        return Some((canonical.clone(), id.clone()));
    }
    index
        .named(&key)
        .iter()
        .map(|&p| &state.entities[p as usize])
        .chain(res.new_entities.iter())
        .find(|e| ty.is_none_or(|t| t == e.entity_type) && names_match(e, &key))
        .map(|e| (e.name.clone(), e.id.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ent(name: &str, t: EntityType) -> CandidateEntity {
        CandidateEntity { name: name.into(), entity_type: t }
    }

    fn state_with(entities: &[(&str, EntityType, Vec<f32>)]) -> ConvState {
        let mut s = ConvState::default();
        for (i, (n, t, v)) in entities.iter().enumerate() {
            s.entities.push(EntityRec {
                id: format!("c/e{i}"),
                name: n.to_string(),
                entity_type: *t,
                aliases: vec![],
                embedding: v.clone(),
            });
        }
        s
    }

    /// Entity resolution as it was before the index: every known entity
    /// compared, in order.
    fn resolve_scan(entities: &[CandidateEntity], embeddings: &[Vec<f32>], state: &ConvState, merge_threshold: f64) -> Resolution {
        let mut res = Resolution::default();
        for (i, ent) in entities.iter().enumerate() {
            let raw = ent.name.trim().to_string();
            let key = raw.to_lowercase();
            let map_key = (key.clone(), ent.entity_type);
            if raw.is_empty() || res.map.contains_key(&map_key) {
                continue;
            }
            let emb = embeddings.get(i).cloned().unwrap_or_default();
            let known = state.entities.iter().chain(res.new_entities.iter());
            if let Some(e) = known.clone().find(|e| e.entity_type == ent.entity_type && names_match(e, &key)) {
                res.map.insert(map_key, (e.name.clone(), e.id.clone()));
                res.decisions.push(EntityDecision::Reuse { raw, entity_id: e.id.clone() });
                continue;
            }
            let nearest = known.filter(|e| e.entity_type == ent.entity_type).map(|e| (cosine(&emb, &e.embedding), e)).fold(
                None::<(f64, &EntityRec)>,
                |best, (c, e)| match best {
                    Some((bc, _)) if bc >= c => best,
                    _ => Some((c, e)),
                },
            );
            if let Some((c, e)) = nearest.filter(|(c, _)| *c >= merge_threshold) {
                let (id, canonical) = (e.id.clone(), e.name.clone());
                res.new_aliases.push((id.clone(), raw.clone()));
                if let Some(pending) = res.new_entities.iter_mut().find(|p| p.id == id) {
                    pending.aliases.push(raw.clone());
                }
                res.map.insert(map_key, (canonical.clone(), id.clone()));
                res.decisions.push(EntityDecision::Merge { raw, entity_id: id, canonical, cosine: c });
                continue;
            }
            let id = format!("c/e{}", state.entities.len() + res.new_entities.len());
            res.new_entities.push(EntityRec {
                id: id.clone(),
                name: raw.clone(),
                entity_type: ent.entity_type,
                aliases: vec![],
                embedding: emb,
            });
            res.map.insert(map_key, (raw.clone(), id.clone()));
            res.decisions.push(EntityDecision::Insert { raw, entity_id: id });
        }
        res
    }

    /// Random episodes resolved against a growing state (entities and
    /// aliases mirrored as a write would) decide exactly as the scan of
    /// every entity does, and map every name as it did.
    #[test]
    fn the_indexed_resolution_decides_as_the_scan_does() {
        use crate::state::random::Rng;
        const NAMES: &[&str] = &[
            "Olivia Kowalski",
            "olivia kowalski",
            "Olivia Kowalsky",
            "Olivia",
            "Liam Okafor",
            "Liam Okafr",
            "Apple",
            "apple",
            "Google",
            "Google LLC",
            " Mei Tanaka ",
            "Mei",
            "",
        ];
        const TYPES: &[EntityType] = &[EntityType::Person, EntityType::Org, EntityType::Food];
        let embedder = crate::embed::hashed::HashedEmbedder::new(64);
        let mut r = Rng(0x1234_5678_9abc_def1);
        let (mut merged, mut reused) = (0, 0);
        for round in 0..20 {
            let mut st = ConvState::default();
            let threshold = [0.88, 0.6, 0.3][round % 3];
            for _ in 0..25 {
                let ents: Vec<CandidateEntity> = (0..r.below(5) + 1).map(|_| ent(r.pick(NAMES), TYPES[r.below(TYPES.len())])).collect();
                let embs: Vec<Vec<f32>> = ents.iter().map(|e| embedder.embed_one(&e.name)).collect();
                let got = resolve_entities("c", &ents, &embs, &st, threshold);
                let want = resolve_scan(&ents, &embs, &st, threshold);
                assert_eq!(
                    (&got.decisions, &got.new_entities, &got.new_aliases, &got.map),
                    (&want.decisions, &want.new_entities, &want.new_aliases, &want.map)
                );
                merged += got.decisions.iter().filter(|d| matches!(d, EntityDecision::Merge { .. })).count();
                reused += got.decisions.iter().filter(|d| matches!(d, EntityDecision::Reuse { .. })).count();
                for name in NAMES {
                    for t in [None, Some(EntityType::Person)] {
                        let scanned = st
                            .entities
                            .iter()
                            .chain(got.new_entities.iter())
                            .find(|e| t.is_none_or(|t| t == e.entity_type) && names_match(e, &name.trim().to_lowercase()))
                            .map(|e| (e.name.clone(), e.id.clone()));
                        let mapped = lookup(name, &Resolution { map: Default::default(), ..got.clone() }, &st, &st.entity_index(), t);
                        assert_eq!(mapped, scanned, "{name:?} {t:?}");
                    }
                }
                // The write's mirror: new entities, then the aliases.
                st.entities.extend(got.new_entities.iter().cloned());
                for (id, alias) in &got.new_aliases {
                    if let Some(e) = st.entities.iter_mut().find(|e| &e.id == id)
                        && !e.aliases.contains(alias)
                    {
                        e.aliases.push(alias.clone());
                    }
                }
            }
        }
        assert!(merged > 10 && reused > 50, "{merged} merged, {reused} reused");
    }

    #[test]
    fn exact_same_type_reuses_case_insensitively() {
        let s = state_with(&[("Google", EntityType::Org, vec![1.0, 0.0])]);
        let r = resolve_entities("c", &[ent("google", EntityType::Org)], &[vec![0.0, 1.0]], &s, 0.88);
        assert_eq!(r.decisions, vec![EntityDecision::Reuse { raw: "google".into(), entity_id: "c/e0".into() }]);
        assert!(r.new_entities.is_empty());
    }

    #[test]
    fn type_aware_apple_org_never_merges_into_apple_food() {
        let s = state_with(&[("Apple", EntityType::Org, vec![1.0, 0.0])]);
        let r = resolve_entities("c", &[ent("apple", EntityType::Food)], &[vec![1.0, 0.0]], &s, 0.88);
        assert!(matches!(&r.decisions[0], EntityDecision::Insert { entity_id, .. } if entity_id == "c/e1"));
        assert_eq!(r.new_entities[0].entity_type, EntityType::Food);
    }

    #[test]
    fn merge_at_threshold_and_not_below() {
        let s = state_with(&[("Google", EntityType::Org, vec![1.0, 0.0])]);
        let at = [0.88f32, (1.0f32 - 0.88 * 0.88).sqrt()];
        let threshold = cosine(&at, &[1.0, 0.0]);
        let r = resolve_entities("c", &[ent("Google LLC", EntityType::Org)], &[at.to_vec()], &s, threshold);
        assert!(matches!(&r.decisions[0], EntityDecision::Merge { canonical, .. } if canonical == "Google"));
        assert_eq!(r.new_aliases, vec![("c/e0".to_string(), "Google LLC".to_string())]);
        let below = [0.87f32, (1.0f32 - 0.87 * 0.87).sqrt()];
        let r = resolve_entities("c", &[ent("Google LLC", EntityType::Org)], &[below.to_vec()], &s, threshold);
        assert!(matches!(&r.decisions[0], EntityDecision::Insert { .. }));
    }

    #[test]
    fn same_name_two_types_in_one_episode_stay_apart_in_the_map() {
        let s = state_with(&[("Priya", EntityType::Person, vec![0.0, 1.0])]);
        let ents = [ent("Apple", EntityType::Org), ent("apple", EntityType::Food)];
        let r = resolve_entities("c", &ents, &[vec![1.0, 0.0], vec![1.0, 0.0]], &s, 0.88);
        assert_eq!(r.new_entities.len(), 2);
        let f = |o: &str| CandidateFact {
            subject: "Priya".into(),
            predicate: "ate".into(),
            object: o.into(),
            kind: FactKind::Relationship,
            fact_type: crate::types::FactType::Fact,
            content: format!("Priya ate {o}"),
            confidence: 0.9,
            source_turn: "t1".into(),
            source_quote: "".into(),
            valid_from: None,
            valid_until: None,
        };
        let out = apply_map(&[f("apple"), f("Apple")], &ents, &r, &s);
        assert_eq!(out[0].object_entity.as_deref(), Some("c/e2"), "apple the FOOD");
        assert_eq!(out[1].object_entity.as_deref(), Some("c/e1"), "Apple the ORG");
    }

    #[test]
    fn map_applies_to_subject_and_entity_object_only() {
        let s = state_with(&[("Google", EntityType::Org, vec![1.0, 0.0]), ("Alice", EntityType::Person, vec![0.0, 1.0])]);
        let r = resolve_entities("c", &[ent("Google LLC", EntityType::Org)], &[vec![1.0, 0.0]], &s, 0.88);
        let f = |kind, object: &str| CandidateFact {
            subject: "alice".into(),
            predicate: "works at".into(),
            object: object.into(),
            kind,
            fact_type: crate::types::FactType::Fact,
            content: "Alice works at Google LLC".into(),
            confidence: 0.9,
            source_turn: "t1".into(),
            source_quote: "".into(),
            valid_from: None,
            valid_until: None,
        };
        let ents = [ent("Google LLC", EntityType::Org)];
        let out = apply_map(&[f(FactKind::Relationship, "Google LLC"), f(FactKind::Literal, "Google LLC")], &ents, &r, &s);
        assert_eq!(out[0].fact.subject, "Alice");
        assert_eq!(out[0].fact.object, "Google");
        assert_eq!(out[0].object_entity.as_deref(), Some("c/e0"));
        assert_eq!(out[1].fact.object, "Google LLC");
        assert_eq!(out[1].object_entity, None);
        assert_eq!(out[1].subject_entity.as_deref(), Some("c/e1"));
    }
}
