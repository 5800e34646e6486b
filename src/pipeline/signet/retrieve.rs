//! `signet`'s candidate retrieval: the stored memories a fact is decided
//! against, from the same search a recall would use — the store's hybrid
//! search ([`Store::search`]: BM25 over the live facts' normalised content
//! and the vector leg, merged with `search_alpha`, below `search_min_score`
//! dropped, the best `search_top_k` kept; Signet's figures 0.7, 0.1 and 5).

use super::decide::MemoryCandidate;
use crate::embed::cosine;
use crate::error::Result;
use crate::pipeline::Config;
use crate::state::ConvState;
use crate::store::SearchParams;
use crate::store::Store;

/// The live facts of `conversation` that best match `query` and its
/// vector, best first, as the decision stage sees them (the state mirrors
/// the store, so every hit is one of its facts).
pub fn candidates(
    store: &Store,
    state: &ConvState,
    conversation: &str,
    query: &str,
    vector: &[f32],
    cfg: &Config,
) -> Result<Vec<MemoryCandidate>> {
    let hits = store.search(conversation, query, vector, &SearchParams::from_config(cfg))?;
    Ok(hits
        .into_iter()
        .filter_map(|h| {
            let f = state.fact(&h.fact_id)?;
            Some(MemoryCandidate {
                id: f.id.clone(),
                fact_type: f.fact_type,
                content: f.content.clone(),
                subject: f.subject.clone(),
                predicate: f.predicate.clone(),
                object: f.object.clone(),
                score: h.score,
                cosine: cosine(vector, &f.embedding),
            })
        })
        .collect())
}
