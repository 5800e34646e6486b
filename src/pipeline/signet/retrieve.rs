//! `signet`'s candidate retrieval: the stored memories a fact is decided
//! against, from the same search a recall would use (top 5 by merged
//! score, those below the minimum score dropped). The seam is
//! [`candidates`]; what it asks of the store is named there.

use super::decide::MemoryCandidate;
use crate::config::Config;
use crate::embed::cosine;
use crate::error::Result;
use crate::state::ConvState;
use crate::store::Store;

/// Most candidates a fact is decided against (Signet v2's `CANDIDATE_LIMIT`).
pub const CANDIDATE_LIMIT: usize = 5;

/// Until the store's hybrid search lands: the minimum merged score
/// (Signet's default `min_score` is applied to the vector leg alone).
pub const MIN_SCORE: f64 = 0.1;

/// The current facts of the conversation that best match `query` (and its
/// vector), best first, at most [`CANDIDATE_LIMIT`].
///
/// This is an exact vector scan over the conversation's current facts
/// (cosine, ties to the earlier fact) with no BM25 leg: the simplest
/// honest stand-in until `Store::search` is available.
pub fn candidates(
    _store: &Store,
    state: &ConvState,
    _query: &str,
    vector: &[f32],
    now: Option<&str>,
    _cfg: &Config,
) -> Result<Vec<MemoryCandidate>> {
    let mut scored: Vec<(f64, usize)> = state
        .facts
        .iter()
        .enumerate()
        .filter(|(_, f)| f.is_current(now))
        .map(|(i, f)| (cosine(vector, &f.embedding), i))
        .filter(|(s, _)| *s >= MIN_SCORE)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.truncate(CANDIDATE_LIMIT);
    Ok(scored
        .into_iter()
        .map(|(score, i)| {
            let f = &state.facts[i];
            MemoryCandidate {
                id: f.id.clone(),
                fact_type: f.fact_type,
                content: f.content.clone(),
                subject: f.subject.clone(),
                predicate: f.predicate.clone(),
                object: f.object.clone(),
                score,
                cosine: score,
            }
        })
        .collect())
}
