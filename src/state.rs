//! A conversation's memory as the pipeline sees it between episodes: entities
//! and facts with their vectors. It mirrors the store and changes only from
//! what a write actually applied, so shadow runs leave it untouched.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use crate::embed::cosine;
use crate::types::{CandidateFact, EntityType};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntityRec {
    pub id: String,
    pub name: String,
    pub entity_type: EntityType,
    pub aliases: Vec<String>,
    #[serde(skip)]
    pub embedding: Vec<f32>,
}

/// A fact of the store: the [`CandidateFact`] that was written (its content
/// in storage form), with what writing it added. It derefs to that fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactRec {
    pub id: String,
    #[serde(flatten)]
    pub fact: CandidateFact,
    pub normalized: String,
    pub hash: String,
    pub invalid_at: Option<String>,
    pub superseded_by: Option<String>,
    pub source_episode: String,
    pub pinned: bool,
    /// Entity ids the fact is anchored on (subject and entity object).
    pub subject_entity: Option<String>,
    pub object_entity: Option<String>,
    #[serde(skip)]
    pub embedding: Vec<f32>,
    /// The vector's row in the conversation's [`SimTable`], when a sweep
    /// built one; `None` in a plain run.
    #[serde(skip)]
    pub slot: Option<u32>,
    /// Matching keys, computed on first use (subject, predicate and object
    /// never change once a fact exists).
    #[serde(skip)]
    pub keys: KeyCache,
}

impl std::ops::Deref for FactRec {
    type Target = CandidateFact;
    fn deref(&self) -> &CandidateFact {
        &self.fact
    }
}

impl std::ops::DerefMut for FactRec {
    fn deref_mut(&mut self) -> &mut CandidateFact {
        &mut self.fact
    }
}

/// A fact's [`FactKeys`] once computed. It is derived data, so it never
/// makes two facts unequal.
#[derive(Debug, Clone, Default)]
pub struct KeyCache(OnceLock<FactKeys>);

impl KeyCache {
    /// A cache that already holds `keys` (computed by whoever built the fact).
    pub fn with(keys: FactKeys) -> KeyCache {
        KeyCache(OnceLock::from(keys))
    }
}

impl PartialEq for KeyCache {
    fn eq(&self, _: &KeyCache) -> bool {
        true
    }
}

/// A fact's lower-cased and normalised parts, for exact matching and pairing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FactKeys {
    /// `subject` lower-cased.
    pub subject: String,
    /// `predicate` lower-cased.
    pub predicate: String,
    /// `object` through `normalize_content`.
    pub object: String,
    /// `subject|predicate|object`: trimmed and lower-cased subject and
    /// predicate, normalised object; exact dedup's key.
    pub spo: String,
}

impl FactKeys {
    pub fn of(subject: &str, predicate: &str, object: &str) -> FactKeys {
        let object = crate::normalize::normalize_content(object);
        let spo = format!("{}|{}|{}", subject.trim().to_lowercase(), predicate.trim().to_lowercase(), object);
        FactKeys { subject: subject.to_lowercase(), predicate: predicate.to_lowercase(), object, spo }
    }
}

impl FactRec {
    /// The fact's vector, with its slot.
    pub fn vector(&self) -> Vector<'_> {
        Vector { slot: self.slot, values: &self.embedding }
    }

    /// The fact's matching keys (computed once).
    pub fn keys(&self) -> &FactKeys {
        self.keys.0.get_or_init(|| FactKeys::of(&self.subject, &self.predicate, &self.object))
    }

    /// Not invalidated: the row the partial unique index covers.
    pub fn is_live(&self) -> bool {
        self.invalid_at.is_none() && self.superseded_by.is_none()
    }

    /// Live and not expired at `now` (a `YYYY-MM-DD…` string): what dedupe
    /// and judge compare against.
    pub fn is_current(&self, now: Option<&str>) -> bool {
        self.is_live() && !is_past(self.valid_until.as_deref(), now)
    }

    /// Live but its validUntil has passed, and nothing superseded it.
    pub fn is_expired(&self, now: Option<&str>) -> bool {
        self.is_live() && is_past(self.valid_until.as_deref(), now)
    }

    /// `subject|predicate|object`, lower-cased, for exact matching.
    pub fn spo_key(&self) -> &str {
        &self.keys().spo
    }
}

/// True when `date` (YYYY-MM-DD) is at or before the date of `now`.
pub fn is_past(date: Option<&str>, now: Option<&str>) -> bool {
    match (date, now) {
        (Some(d), Some(n)) => {
            let n = n.get(..10).unwrap_or(n);
            d <= n
        }
        _ => false,
    }
}

/// A conversation's candidate vectors and a memo of their cosines, shared by
/// all the grid points of a sweep (a candidate's slot is its position over
/// the conversation's episodes). Each entry, computed the first time any
/// point asks for it, is [`cosine`] of the two vectors, so lookups change
/// no result.
#[derive(Debug)]
pub struct SimTable {
    vectors: Vec<Vec<f32>>,
    /// `f64` bits per (a, b); [`UNSET`] until computed.
    memo: Vec<AtomicU64>,
}

/// A NaN payload no cosine produces (`cosine` clamps to [-1, 1]).
const UNSET: u64 = 0x7ff8_dead_beef_0001;

impl SimTable {
    pub fn new(vectors: Vec<Vec<f32>>) -> SimTable {
        let n = vectors.len();
        SimTable { vectors, memo: (0..n * n).map(|_| AtomicU64::new(UNSET)).collect() }
    }

    /// The cosine of slots `a` and `b`, when both are in the table. A slot
    /// names the vector the sweep put there (`values` must be that vector).
    fn get(&self, a: Vector<'_>, b: Vector<'_>) -> Option<f64> {
        let (i, j) = (a.slot? as usize, b.slot? as usize);
        let n = self.vectors.len();
        if i >= n || j >= n {
            return None;
        }
        debug_assert!(self.vectors[i] == a.values && self.vectors[j] == b.values, "slot {i} or {j} holds another vector");
        let cell = &self.memo[i * n + j];
        let bits = cell.load(Ordering::Relaxed);
        if bits != UNSET {
            return Some(f64::from_bits(bits));
        }
        let c = cosine(a.values, b.values);
        cell.store(c.to_bits(), Ordering::Relaxed);
        Some(c)
    }
}

/// A vector and, when a [`SimTable`] holds it, its slot.
#[derive(Debug, Clone, Copy)]
pub struct Vector<'a> {
    pub slot: Option<u32>,
    pub values: &'a [f32],
}

/// One conversation's entities and facts, in creation order.
#[derive(Debug, Clone, Default)]
pub struct ConvState {
    pub entities: Vec<EntityRec>,
    pub facts: Vec<FactRec>,
    /// Precomputed cosines of the conversation's candidate vectors (sweeps).
    pub sims: Option<Arc<SimTable>>,
}

impl ConvState {
    /// Cosine of two vectors: from the table when both have a slot in it,
    /// otherwise computed.
    pub fn cosine(&self, a: Vector<'_>, b: Vector<'_>) -> f64 {
        if let Some(c) = self.sims.as_ref().and_then(|t| t.get(a, b)) {
            return c;
        }
        cosine(a.values, b.values)
    }

    pub fn entity(&self, id: &str) -> Option<&EntityRec> {
        self.entities.iter().find(|e| e.id == id)
    }
    pub fn fact_mut(&mut self, id: &str) -> Option<&mut FactRec> {
        self.facts.iter_mut().find(|f| f.id == id)
    }
    pub fn fact(&self, id: &str) -> Option<&FactRec> {
        self.facts.iter().find(|f| f.id == id)
    }
    /// Canonical names of all entities, in creation order.
    pub fn entity_names(&self) -> Vec<String> {
        self.entities.iter().map(|e| e.name.clone()).collect()
    }
    /// The entity whose name or alias is `name` (case-insensitive), any type.
    pub fn entity_by_name(&self, name: &str) -> Option<&EntityRec> {
        let n = name.trim().to_lowercase();
        self.entities.iter().find(|e| e.name.to_lowercase() == n || e.aliases.iter().any(|a| a.to_lowercase() == n))
    }
}

#[cfg(test)]
impl FactRec {
    /// A live literal fact `s p o` from episode `e1`, turn `t1`, with
    /// confidence 0.9 and no vector: tests override what they need.
    pub(crate) fn for_test(id: &str, s: &str, p: &str, o: &str) -> FactRec {
        FactRec {
            id: id.into(),
            fact: CandidateFact {
                subject: s.into(),
                predicate: p.into(),
                object: o.into(),
                kind: crate::types::FactKind::Literal,
                fact_type: crate::types::FactType::Fact,
                content: format!("{s} {p} {o}"),
                confidence: 0.9,
                source_turn: "t1".into(),
                source_quote: String::new(),
                valid_from: None,
                valid_until: None,
            },
            normalized: String::new(),
            hash: id.into(),
            invalid_at: None,
            superseded_by: None,
            source_episode: "e1".into(),
            pinned: false,
            subject_entity: None,
            object_entity: None,
            embedding: Vec::new(),
            slot: None,
            keys: KeyCache::default(),
        }
    }
}
