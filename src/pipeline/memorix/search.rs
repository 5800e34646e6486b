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
use crate::pipeline::memorix::js;
use crate::state::FactRec;

/// Finds existing memories for a query.
pub trait MemorySearch {
    /// At most `limit` hits, best first.
    fn search(&self, query: &str, limit: usize) -> Vec<Hit>;
}

/// Lower-cased runs of letters and digits.
pub fn tokens(s: &str) -> std::collections::BTreeSet<String> {
    s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Dice coefficient of two token sets.
pub fn dice(a: &std::collections::BTreeSet<String>, b: &std::collections::BTreeSet<String>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 0.0;
    }
    2.0 * a.intersection(b).count() as f64 / (a.len() + b.len()) as f64
}

/// A memory as the search sees it, with its token set.
pub struct Indexed {
    pub hit: Hit,
    tokens: std::collections::BTreeSet<String>,
}

impl Indexed {
    /// A stored memory: title in `object`, narrative in `content`, entity in
    /// `subject`, facts one per line in `source_quote`.
    pub fn of(f: &FactRec) -> Indexed {
        Indexed::of_hit(Hit {
            id: f.id.clone(),
            title: f.object.clone(),
            narrative: f.content.clone(),
            facts: f.source_quote.lines().map(str::to_string).collect(),
            entity_name: f.subject.clone(),
            score: 0.0,
        })
    }

    pub fn of_hit(hit: Hit) -> Indexed {
        let tokens = tokens(&format!("{} {}", hit.title, js::slice(&hit.narrative, QUERY_NARRATIVE_CHARS)));
        Indexed { hit, tokens }
    }
}

/// The lexical stand-in over a list of memories.
pub struct Lexical<'a> {
    pub memories: &'a [Indexed],
    pub min_score: f64,
}

impl MemorySearch for Lexical<'_> {
    fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
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
        hits.into_iter().map(|(s, i)| Hit { score: s, ..self.memories[i].hit.clone() }).collect()
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
