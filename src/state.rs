//! A conversation's memory as the pipeline sees it between episodes: entities
//! and facts with their vectors. It mirrors the store and changes only from
//! what a write actually applied, so shadow runs leave it untouched.

use serde::{Deserialize, Serialize};

use crate::types::{EntityType, FactKind, FactType};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntityRec {
    pub id: String,
    pub name: String,
    pub entity_type: EntityType,
    pub aliases: Vec<String>,
    #[serde(skip)]
    pub embedding: Vec<f32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactRec {
    pub id: String,
    pub subject: String,
    pub predicate: String,
    pub object: String,
    pub kind: FactKind,
    pub fact_type: FactType,
    pub content: String,
    pub normalized: String,
    pub hash: String,
    pub confidence: f64,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub invalid_at: Option<String>,
    pub superseded_by: Option<String>,
    pub source_episode: String,
    pub source_turn: String,
    pub source_quote: String,
    pub pinned: bool,
    /// Entity ids the fact is anchored on (subject and entity object).
    pub subject_entity: Option<String>,
    pub object_entity: Option<String>,
    #[serde(skip)]
    pub embedding: Vec<f32>,
}

impl FactRec {
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
    pub fn spo_key(&self) -> String {
        spo_key(&self.subject, &self.predicate, &self.object)
    }
}

pub fn spo_key(subject: &str, predicate: &str, object: &str) -> String {
    format!(
        "{}|{}|{}",
        subject.trim().to_lowercase(),
        predicate.trim().to_lowercase(),
        crate::normalize::normalize_content(object)
    )
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

/// One conversation's entities and facts, in creation order.
#[derive(Debug, Clone, Default)]
pub struct ConvState {
    pub entities: Vec<EntityRec>,
    pub facts: Vec<FactRec>,
}

impl ConvState {
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
        self.entities.iter().find(|e| {
            e.name.to_lowercase() == n || e.aliases.iter().any(|a| a.to_lowercase() == n)
        })
    }
}

#[cfg(test)]
impl FactRec {
    /// A live literal fact `s p o` from episode `e1`, turn `t1`, with
    /// confidence 0.9 and no vector: tests override what they need.
    pub(crate) fn for_test(id: &str, s: &str, p: &str, o: &str) -> FactRec {
        FactRec {
            id: id.into(),
            subject: s.into(),
            predicate: p.into(),
            object: o.into(),
            kind: FactKind::Literal,
            fact_type: FactType::Fact,
            content: format!("{s} {p} {o}"),
            normalized: String::new(),
            hash: id.into(),
            confidence: 0.9,
            valid_from: None,
            valid_until: None,
            invalid_at: None,
            superseded_by: None,
            source_episode: "e1".into(),
            source_turn: "t1".into(),
            source_quote: String::new(),
            pinned: false,
            subject_entity: None,
            object_entity: None,
            embedding: Vec::new(),
        }
    }
}
