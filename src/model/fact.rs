//! A fact and an entity as written to the store and mirrored in the
//! pipeline's state: [`FactRec`] embeds the candidate it was written from,
//! with the keys matching and pairing need, computed once.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::polarity::PolarityKeys;
use super::proposition::Reading;
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
    /// Matching keys and the polarity rule's keys, computed on first use
    /// (subject, predicate, object and content never change once a fact
    /// exists).
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

/// A fact's [`FactKeys`] and [`PolarityKeys`] once computed. It is derived
/// data, so it never makes two facts unequal.
#[derive(Debug, Clone, Default)]
pub struct KeyCache {
    pub(crate) keys: OnceLock<FactKeys>,
    pub(crate) polarity: OnceLock<PolarityKeys>,
    /// The [`Reading`] of the content, with the id of the antonym list it
    /// was read against and whether its predicate was single-valued.
    pub(crate) reading: OnceLock<(usize, bool, Reading)>,
}

impl KeyCache {
    /// A cache that already holds `keys` (computed by whoever built the fact).
    pub fn with(keys: FactKeys) -> KeyCache {
        KeyCache { keys: OnceLock::from(keys), polarity: OnceLock::new(), reading: OnceLock::new() }
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
