//! The memories Resolve searches: the conversation's live memorix memories
//! and those planned earlier in the same episode, behind [`MemorySearch`].
//!
//! Memorix searches its Orama index (BM25 over title, entity, narrative,
//! facts, with field boosts, a wall-clock recency boost and, with an
//! embedding provider, vectors). memform has no Orama; its stand-in scores
//! a memory by the Dice coefficient of the word sets of the query and of the
//! memory's own query text (title and the start of its narrative), so an
//! identical observation scores 1. See docs/profiles.md.

use super::resolve::{Hit, QUERY_NARRATIVE_CHARS};
use crate::error::Result;
use crate::pipeline::memorix::js;
use crate::state::FactRec;
use crate::store::{SearchParams, Store};

/// Finds existing memories for a query.
pub trait MemorySearch {
    /// At most `limit` hits, best first.
    fn search(&self, query: &str, limit: usize) -> Result<Vec<Hit>>;
}

pub use crate::normalize::{TokenSet, dice};

/// The token set of a text.
pub fn tokens(s: &str) -> TokenSet {
    TokenSet::new(s)
}

/// A memory as the search sees it, with its token set (and, with the
/// store's search, its vector).
pub struct Indexed {
    pub hit: Hit,
    tokens: TokenSet,
    pub vector: Vec<f32>,
}

impl Indexed {
    /// A stored memory: title in `object`, narrative in `content`, entity in
    /// `subject`, facts one per line in `source_quote`.
    pub fn of(f: &FactRec) -> Indexed {
        let mut m = Indexed::of_hit(Hit {
            id: f.id.clone(),
            title: f.object.clone(),
            narrative: f.content.clone(),
            facts: f.source_quote.lines().map(str::to_string).collect(),
            entity_name: f.subject.clone(),
            score: 0.0,
        });
        m.vector = f.embedding.clone();
        m
    }

    pub fn of_hit(hit: Hit) -> Indexed {
        let tokens = tokens(&query_text(&hit));
        Indexed { hit, tokens, vector: Vec::new() }
    }
}

/// A memory's own query text: its title and the start of its narrative
/// (what the lexical search compares and the store's vector embeds).
pub fn query_text(hit: &Hit) -> String {
    format!("{} {}", hit.title, js::slice(&hit.narrative, QUERY_NARRATIVE_CHARS))
}

/// The lexical stand-in over a list of memories.
pub struct Lexical<'a> {
    pub memories: &'a [Indexed],
    pub min_score: f64,
}

impl MemorySearch for Lexical<'_> {
    fn search(&self, query: &str, limit: usize) -> Result<Vec<Hit>> {
        let q = tokens(query);
        let mut hits: Vec<(f64, usize)> = self
            .memories
            .iter()
            .enumerate()
            .map(|(i, m)| (dice(&q, &m.tokens), i))
            .filter(|(s, _)| *s > 0.0 && *s >= self.min_score)
            .collect();
        // Best first; ties to the older memory.
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        hits.truncate(limit);
        Ok(hits.into_iter().map(|(s, i)| Hit { score: s, ..self.memories[i].hit.clone() }).collect())
    }
}

/// The store's hybrid search ([`Store::search`]: BM25 over the stored
/// memories' narratives and the vector leg over their vectors) for the
/// memories already written; a memory planned earlier in the same episode
/// is not in the store yet and is scored as the vector leg scores a fact it
/// alone finds (the cosine with its planned vector, clamped to [0, 1]). A
/// stored memory the episode already superseded is left out; one it merged
/// into shows its planned text but is scored as the store holds it until the
/// episode commits. Hits below `min_score` are dropped, best first (ties to
/// the older memory), at most `limit`.
pub struct StoreSearch<'a> {
    pub store: &'a Store,
    pub conversation: &'a str,
    /// The planner's memories (stored live ones and planned ones).
    pub memories: &'a [Indexed],
    /// Ids of the memories in the store.
    pub stored: &'a std::collections::HashSet<String>,
    /// Embeds a query.
    pub embed: &'a dyn Fn(&str) -> Result<Vec<f32>>,
    pub params: SearchParams,
}

impl MemorySearch for StoreSearch<'_> {
    fn search(&self, query: &str, limit: usize) -> Result<Vec<Hit>> {
        let vector = (self.embed)(query)?;
        let params = SearchParams { top_k: limit, leg_k: self.params.leg_k.max(limit), ..self.params.clone() };
        let mut hits: Vec<(f64, usize)> = Vec::new();
        for h in self.store.search(self.conversation, query, &vector, &params)? {
            if let Some(i) = self.memories.iter().position(|m| m.hit.id == h.fact_id) {
                hits.push((h.score, i));
            }
        }
        for (i, m) in self.memories.iter().enumerate() {
            if self.stored.contains(&m.hit.id) || m.vector.is_empty() {
                continue;
            }
            let s = crate::embed::cosine(&vector, &m.vector).clamp(0.0, 1.0);
            if s > 0.0 && s >= self.params.min_score {
                hits.push((s, i));
            }
        }
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        hits.truncate(limit);
        Ok(hits.into_iter().map(|(s, i)| Hit { score: s, ..self.memories[i].hit.clone() }).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dice_of_word_sets() {
        assert_eq!(dice(&tokens("Port is 3000"), &tokens("port IS 3000!")), 1.0);
        assert_eq!(dice(&tokens("a b"), &tokens("b c")), 0.5);
        assert_eq!(dice(&tokens(""), &tokens("")), 0.0);
    }
}
