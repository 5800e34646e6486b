//! The store's hybrid search: a BM25 leg over the FTS5 table `facts_fts`
//! and a vector leg over the `embeddings` table, merged by fact id, over a
//! conversation's live facts (or the facts live at an instant). The one
//! retrieval every caller uses: candidate retrieval before a decision, and
//! the QA evaluation. Rules and figures in docs/search.md.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};

use rusqlite::{Connection, params};
use rustc_hash::FxHashMap;

use super::Store;
use super::tokenize::{TermId, Tokens};
use crate::config::Shared;
use crate::error::Result;

/// What one search asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchParams {
    /// Weight of the vector score when both legs scored a fact:
    /// `alpha·vector + (1 − alpha)·bm25`.
    pub alpha: f64,
    /// Merged scores below this are dropped.
    pub min_score: f64,
    /// Most hits returned.
    pub top_k: usize,
    /// Most hits each leg contributes before the merge.
    pub leg_k: usize,
    /// `None`: the facts live now. `Some(t)` (ISO-8601, compared as text
    /// with the episodes' timestamps): the facts written at or before `t`
    /// and not invalidated at or before `t`.
    pub as_of: Option<String>,
}

impl SearchParams {
    /// The config's `search_*` keys; each leg fetches `top_k × search_leg_factor`.
    pub fn from_config(cfg: &Shared) -> SearchParams {
        SearchParams::with_top_k(cfg, cfg.search_top_k)
    }

    /// [`SearchParams::from_config`] with another `top_k` (the QA evaluation asks for 10).
    pub fn with_top_k(cfg: &Shared, top_k: usize) -> SearchParams {
        SearchParams {
            alpha: cfg.search_alpha,
            min_score: cfg.search_min_score,
            top_k,
            leg_k: top_k.saturating_mul(cfg.search_leg_factor),
            as_of: None,
        }
    }
}

/// How the QA evaluation's search ranks (`qa_retriever`, docs/search.md
/// "Retrievers"): the store's own search is always [`Retriever::And`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Retriever {
    /// Signet's hybrid: the keyword leg matches documents holding every
    /// term of the query (FTS5's implicit AND), merged with the vector leg.
    #[default]
    And,
    /// The keyword leg matches documents holding any term, each scored by
    /// its BM25 over the terms it holds divided by the leg's best, merged
    /// with the vector leg as `And`'s are.
    Or,
    /// The vector leg alone.
    Vector,
}

impl Retriever {
    /// The config's names: `and`, `or`, `vector`.
    pub const NAMES: [&'static str; 3] = ["and", "or", "vector"];

    pub fn parse(name: &str) -> Option<Retriever> {
        match name {
            "and" => Some(Retriever::And),
            "or" => Some(Retriever::Or),
            "vector" => Some(Retriever::Vector),
            _ => None,
        }
    }
}

/// One fact found, with the score of each leg that found it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SearchHit {
    pub fact_id: String,
    /// The merged score the hits are ranked by.
    pub score: f64,
    /// `1 / (1 + |bm25|)` when the BM25 leg found the fact.
    pub bm25: Option<f64>,
    /// The cosine, clamped to [0, 1], when the vector leg found the fact.
    pub vector: Option<f64>,
}

/// The FTS5 query for a text: lower-cased, split on every character that is
/// not a letter, a digit or `_`, each term quoted (`"` doubled) and the terms
/// joined by spaces, which FTS5 reads as AND. `None` when no term is left.
pub fn fts_match_query(text: &str) -> Option<String> {
    let terms = fts_phrases(text);
    if terms.is_empty() { None } else { Some(terms.join(" ")) }
}

/// The quoted terms [`fts_match_query`] joins, in order.
fn fts_phrases(text: &str) -> Vec<String> {
    fts_terms(text).iter().map(|t| format!("\"{}\"", t.replace('"', "\"\""))).collect()
}

/// The terms of a query, unquoted: each is one FTS5 phrase, which FTS5
/// tokenises (one term can be several tokens, as `snake_case`, or none).
fn fts_terms(text: &str) -> Vec<String> {
    text.to_lowercase().split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|t| !t.is_empty()).map(String::from).collect()
}

/// FTS5's `bm25()` (lower is better, usually negative) mapped into (0, 1].
pub fn normalise_bm25(raw: f64) -> f64 {
    1.0 / (1.0 + raw.abs())
}

/// Merges the legs by id: `alpha·vector + (1 − alpha)·bm25` when both
/// scored (a score of 0 counts as not scored), else the one present; drops
/// scores below `min_score`; ranks by score, ties to the smaller id (byte
/// order); keeps `top_k`.
pub fn merge<A: AsRef<str>, V: AsRef<str>>(
    bm25: &[(A, f64)],
    vector: &[(V, f64)],
    alpha: f64,
    min_score: f64,
    top_k: usize,
) -> Vec<SearchHit> {
    let bm25: Vec<(&str, f64)> = bm25.iter().map(|(id, s)| (id.as_ref(), *s)).collect();
    let vector: Vec<(&str, f64)> = vector.iter().map(|(id, s)| (id.as_ref(), *s)).collect();
    merge_by(&bm25, &vector, alpha, min_score, top_k, |a, b| a.cmp(b)).into_iter().map(Hit::into_search_hit).collect()
}

/// One hit of a search by the caller's handle of a document (its id, or
/// its slot in a [`DocumentIndex`]), with the score of each leg that found it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit<I> {
    pub id: I,
    /// The merged score the hits are ranked by.
    pub score: f64,
    pub bm25: Option<f64>,
    pub vector: Option<f64>,
}

impl<I: AsRef<str>> Hit<I> {
    fn into_search_hit(self) -> SearchHit {
        SearchHit { fact_id: self.id.as_ref().to_string(), score: self.score, bm25: self.bm25, vector: self.vector }
    }
}

/// [`merge`] over any handle of a document that names it once (`id_order`
/// orders the handles as [`merge`] orders the ids, byte order): the same
/// hits in the same order.
fn merge_by<I: Copy + Eq + std::hash::Hash>(
    bm25: &[(I, f64)],
    vector: &[(I, f64)],
    alpha: f64,
    min_score: f64,
    top_k: usize,
    id_order: impl Fn(I, I) -> std::cmp::Ordering,
) -> Vec<Hit<I>> {
    // Both legs' positive scores, by id (each leg names an id once; were
    // one named twice, its first score would hold).
    let mut by_id: Vec<(I, Option<f64>, Option<f64>)> = Vec::with_capacity(bm25.len() + vector.len());
    let mut slot_of: FxHashMap<I, usize> = FxHashMap::with_capacity_and_hasher(by_id.capacity(), Default::default());
    let legs = bm25.iter().filter(|(_, s)| *s > 0.0).map(|(id, s)| (*id, Some(*s), None));
    for (id, b, v) in legs.chain(vector.iter().filter(|(_, s)| *s > 0.0).map(|(id, s)| (*id, None, Some(*s)))) {
        match slot_of.entry(id) {
            std::collections::hash_map::Entry::Occupied(e) => {
                let first = &mut by_id[*e.get()];
                first.1 = first.1.or(b);
                first.2 = first.2.or(v);
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(by_id.len());
                by_id.push((id, b, v));
            }
        }
    }
    let mut hits: Vec<Hit<I>> = by_id
        .into_iter()
        .filter_map(|(id, b, v)| {
            let score = match (b, v) {
                (Some(b), Some(v)) => alpha * v + (1.0 - alpha) * b,
                (Some(s), None) | (None, Some(s)) => s,
                (None, None) => return None,
            };
            (score >= min_score).then_some(Hit { id, score, bm25: b, vector: v })
        })
        .collect();
    // Best first, ties to the smaller id: a total order (the ids are
    // distinct), so only the first `top_k` need ordering.
    let better = |a: &Hit<I>, b: &Hit<I>| b.score.total_cmp(&a.score).then_with(|| id_order(a.id, b.id));
    if top_k < hits.len() {
        hits.select_nth_unstable_by(top_k, better);
        hits.truncate(top_k);
    }
    hits.sort_unstable_by(better);
    hits
}

/// The vectors of one conversation's facts (or of a baseline's documents),
/// loaded from `embeddings` and topped up with the rows written since (rows
/// are only ever added; a fact whose vector is rewritten keeps its slot).
///
/// Vectors of the common width (the first one's) are held in blocks of
/// [`LANES`] slots, dimension-major inside a block, so a query is scored
/// against a whole block at once and only over its non-zero dimensions
/// (most of a hashed embedding's are zero). The sums are the ones [`dot`]
/// makes, in its order, bit for bit (a test checks it); a vector of another
/// width, or holding a value that is not finite, is kept apart and scored
/// with [`dot`].
#[derive(Debug, Default)]
pub(super) struct ConvVectors {
    ids: Vec<String>,
    slot_of: FxHashMap<String, usize>,
    dims: Vec<usize>,
    norm: Vec<f32>,
    /// The blocks' vector width: the first non-empty vector's (0 until then).
    width: usize,
    /// Value `d` of slot `s` is at `(s / LANES) · width · LANES + d · LANES + s % LANES`.
    blocks: Vec<f32>,
    /// The slots whose vector is not in the blocks (another width, or a
    /// value that is not finite), with that vector; their block values, if
    /// any, are stale and never read.
    apart: HashMap<usize, Vec<f32>>,
    /// The highest `embeddings` rowid read (of any conversation).
    seen: i64,
}

/// Slots per block of [`ConvVectors`].
const LANES: usize = 16;

impl ConvVectors {
    /// Room for `n` more vectors of `width` values (the blocks' width when
    /// they have one), so that putting them moves nothing.
    fn reserve(&mut self, n: usize, width: usize) {
        self.ids.reserve(n);
        self.slot_of.reserve(n);
        self.dims.reserve(n);
        self.norm.reserve(n);
        let width = if self.width > 0 { self.width } else { width };
        let slots = (self.ids.len() + n).div_ceil(LANES) * LANES;
        self.blocks.reserve((slots * width).saturating_sub(self.blocks.len()));
    }

    fn put(&mut self, id: String, v: &[f32]) {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        let (slot, fresh) = match self.slot_of.get(&id) {
            Some(&s) => {
                (self.dims[s], self.norm[s]) = (v.len(), norm);
                (s, false)
            }
            None => {
                let s = self.ids.len();
                self.slot_of.insert(id.clone(), s);
                self.ids.push(id);
                self.dims.push(v.len());
                self.norm.push(norm);
                (s, true)
            }
        };
        if self.width == 0 {
            self.width = v.len();
        }
        if self.width > 0 && v.len() == self.width && v.iter().all(|x| x.is_finite()) {
            let block = self.width * LANES;
            let start = (slot / LANES) * block;
            if self.blocks.len() < start + block {
                self.blocks.resize(start + block, 0.0);
            }
            // A new slot's values in the blocks are all still zero: only
            // its non-zero values are written (most of a hashed vector's
            // are zero).
            for (d, x) in v.iter().enumerate() {
                if !fresh || *x != 0.0 {
                    self.blocks[start + d * LANES + slot % LANES] = *x;
                }
            }
            self.apart.remove(&slot);
        } else {
            self.apart.insert(slot, v.to_vec());
        }
    }

    /// Every slot's cosine with `q` clamped to [0, 1]; slots of another
    /// dimension, or a zero vector, score 0.
    fn scores(&self, q: &[f32]) -> Vec<f32> {
        let n = self.ids.len();
        let mut out = vec![0f32; n];
        let qn = q.iter().map(|x| x * x).sum::<f32>().sqrt();
        if qn == 0.0 {
            return out;
        }
        let cosine = |s: usize, dot: f32| {
            if self.dims[s] != q.len() || self.norm[s] == 0.0 { 0.0 } else { (dot / (qn * self.norm[s])).clamp(0.0, 1.0) }
        };
        if self.width > 0 && q.len() == self.width {
            // The query's non-zero values, by the lane of `dot` that sums
            // them (a zero adds nothing to a finite sum, and these sums
            // never hold -0), each lane's in the order `dot` adds them.
            let chunked = q.len() / 8 * 8;
            let lane_of = |j: usize| if j < chunked { j % 8 } else { 0 };
            let mut terms: Vec<(usize, f32)> = q.iter().copied().enumerate().filter(|(_, x)| *x != 0.0).collect();
            // A stable sort: each lane's terms stay in the order of `q`.
            terms.sort_by_key(|&(j, _)| lane_of(j));
            let mut ends = [0usize; 8];
            for &(j, _) in &terms {
                ends[lane_of(j)] += 1;
            }
            for l in 1..8 {
                ends[l] += ends[l - 1];
            }
            let by_lane: [&[(usize, f32)]; 8] = std::array::from_fn(|l| &terms[if l == 0 { 0 } else { ends[l - 1] }..ends[l]]);
            let dots = blocked_dots_dispatched(&self.blocks, self.width, &by_lane, n);
            for (s, &d) in dots.iter().enumerate() {
                out[s] = cosine(s, d);
            }
        }
        // Scored apart, over whatever the blocks held for these slots.
        for (&s, v) in &self.apart {
            out[s] = if v.len() == q.len() { cosine(s, dot(q, v)) } else { 0.0 };
        }
        out
    }
}

/// The sums of [`ConvVectors::scores`]' blocks: each slot's dot product
/// with the query (its non-zero terms `by_lane`, by the lane of [`dot`]
/// that adds them), for the first `n` slots the blocks hold, the lanes
/// summed as [`dot`] sums its eight. Inlined into each instruction set's
/// copy: every slot's sum is made by the same additions in the same order
/// in each (the vector instructions only do more slots at once).
#[inline(always)]
fn blocked_dots(blocks: &[f32], width: usize, by_lane: &[&[(usize, f32)]; 8], n: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(n);
    for block in blocks.chunks_exact(width * LANES) {
        let (rows, _) = block.as_chunks::<LANES>();
        let mut lanes = [[0f32; LANES]; 8];
        for (lane, terms) in lanes.iter_mut().zip(by_lane) {
            let mut acc = [0f32; LANES];
            for &(j, x) in *terms {
                let row = &rows[j];
                for i in 0..LANES {
                    acc[i] += x * row[i];
                }
            }
            *lane = acc;
        }
        // Each slot's lanes summed as `dot` sums its eight.
        let mut sum = [std::iter::empty::<&f32>().sum::<f32>(); LANES];
        for lane in &lanes {
            for i in 0..LANES {
                sum[i] += lane[i];
            }
        }
        let take = n.saturating_sub(out.len()).min(LANES);
        out.extend_from_slice(&sum[..take]);
    }
    out
}

/// [`blocked_dots`] compiled for AVX2 (eight slots an instruction instead of four).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn blocked_dots_avx2(blocks: &[f32], width: usize, by_lane: &[&[(usize, f32)]; 8], n: usize) -> Vec<f32> {
    blocked_dots(blocks, width, by_lane, n)
}

/// [`blocked_dots`] with the widest instructions the processor has (the
/// same sums: each is a slot's own additions, in order).
fn blocked_dots_dispatched(blocks: &[f32], width: usize, by_lane: &[&[(usize, f32)]; 8], n: usize) -> Vec<f32> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2 (checked just above).
        return unsafe { blocked_dots_avx2(blocks, width, by_lane, n) };
    }
    blocked_dots(blocks, width, by_lane, n)
}

/// A dot product in eight independent lanes, so the loop vectorises.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (ca, ra) = a.as_chunks::<8>();
    let (cb, rb) = b.as_chunks::<8>();
    let mut acc = [0f32; 8];
    for (x, y) in ca.iter().zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    for (x, y) in ra.iter().zip(rb) {
        acc[0] += x * y;
    }
    acc.iter().sum()
}

/// Live now: neither invalidated nor superseded.
const LIVE_NOW: &str = "f.invalid_at IS NULL AND f.superseded_by IS NULL";
/// Live at `?9` (the instant): written at or before it, and not invalidated at or
/// before it (a fact superseded without a clock counts as ended).
const LIVE_AT: &str = "f.created_at IS NOT NULL AND f.created_at <= ?9 \
     AND (f.invalid_at IS NULL OR f.invalid_at > ?9) AND NOT (f.invalid_at IS NULL AND f.superseded_by IS NOT NULL)";

/// The parameter number of the instant in [`LIVE_AT`] (above every positional one).
const AS_OF: usize = 9;

fn live_clause(as_of: &Option<String>) -> &'static str {
    if as_of.is_some() { LIVE_AT } else { LIVE_NOW }
}

/// Binds `positional` to ?1, ?2, … and `as_of` (when given) to ?9.
fn bind(st: &mut rusqlite::Statement<'_>, positional: &[&dyn rusqlite::ToSql], as_of: &Option<String>) -> rusqlite::Result<()> {
    st.clear_bindings();
    for (i, v) in positional.iter().enumerate() {
        st.raw_bind_parameter(i + 1, *v)?;
    }
    if let Some(t) = as_of {
        st.raw_bind_parameter(AS_OF, t)?;
    }
    Ok(())
}

impl Store {
    /// The hybrid search over `conversation`'s live facts (see the module
    /// docs): `query_text` goes to the BM25 leg, `query_vector` (may be
    /// empty: no vector leg) to the vector leg.
    pub fn search(&self, conversation: &str, query_text: &str, query_vector: &[f32], params: &SearchParams) -> Result<Vec<SearchHit>> {
        if params.top_k == 0 {
            return Ok(Vec::new());
        }
        let live = self.with(|c| self.live.get(c, conversation, &params.as_of))?;
        let phrases = self.live.phrases(query_text).map_err(|e| crate::error::Error::Store { path: self.path.clone(), source: e })?;
        hybrid(&live.text, &phrases, query_vector, params, |leg_k| {
            let conv = self.topped_up_vectors(conversation)?;
            let conv = conv.read().unwrap_or_else(|p| p.into_inner());
            let ranked = conv.ranked(query_vector, leg_k);
            Ok(first_live(&conv, ranked, leg_k, |s| live.live_ids.contains(&conv.ids[s]))
                .into_iter()
                .map(|(id, s)| (id.to_string(), s))
                .collect::<Vec<_>>())
        })
    }

    /// The vectors of `conversation`, topped up with the rows written since
    /// they were last read (under the write lock; searches rank under a read
    /// lock, so searches of one conversation from several threads rank at once).
    fn topped_up_vectors(&self, conversation: &str) -> Result<Arc<RwLock<ConvVectors>>> {
        let conv = {
            let mut cache = self.vectors.lock().unwrap_or_else(|p| p.into_inner());
            Arc::clone(cache.entry(conversation.to_string()).or_default())
        };
        self.with(|c| top_up(c, conversation, &mut conv.write().unwrap_or_else(|p| p.into_inner())))?;
        Ok(conv)
    }

    /// A [`Searcher`] of `conversation`: its facts as they are now, for
    /// many searches with no SQL after the first of each instant.
    pub fn searcher(&self, conversation: &str) -> Result<Searcher<'_>> {
        Ok(Searcher {
            store: self,
            conversation: conversation.to_string(),
            vectors: self.topped_up_vectors(conversation)?,
            live: Mutex::default(),
        })
    }
}

/// [`Store::search`] over one conversation as it was when the searcher was
/// made: its vectors are read then, and its live facts at each instant
/// (`params.as_of`) on that instant's first search; later writes are not
/// seen. For many searches of a conversation that is no longer written
/// (the QA evaluation of a formed conversation): the same hits as
/// [`Store::search`] (a test checks it), without a query of the store each.
pub struct Searcher<'a> {
    store: &'a Store,
    conversation: String,
    vectors: Arc<RwLock<ConvVectors>>,
    /// Each instant's live facts, and which vector slots they hold.
    live: Mutex<HashMap<Option<String>, LiveAt>>,
}

/// A conversation's live facts at an instant, and whether each vector slot is one.
type LiveAt = (Arc<LiveFacts>, Arc<[bool]>);

impl std::fmt::Debug for Searcher<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Searcher").field("conversation", &self.conversation).finish()
    }
}

impl Searcher<'_> {
    /// The conversation's live facts at `as_of`, and the live vector slots.
    fn live_at(&self, as_of: &Option<String>) -> Result<LiveAt> {
        let mut at = self.live.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((live, slots)) = at.get(as_of) {
            return Ok((Arc::clone(live), Arc::clone(slots)));
        }
        let live = self.store.with(|c| self.store.live.get(c, &self.conversation, as_of))?;
        let slots: Arc<[bool]> = {
            let conv = self.vectors.read().unwrap_or_else(|p| p.into_inner());
            conv.ids.iter().map(|id| live.live_ids.contains(id)).collect()
        };
        at.insert(as_of.clone(), (Arc::clone(&live), Arc::clone(&slots)));
        Ok((live, slots))
    }

    /// [`Store::search`] of the searcher's conversation.
    pub fn search(&self, query_text: &str, query_vector: &[f32], params: &SearchParams) -> Result<Vec<SearchHit>> {
        if params.top_k == 0 {
            return Ok(Vec::new());
        }
        let (live, slots) = self.live_at(&params.as_of)?;
        let store = self.store;
        let phrases = store.live.phrases(query_text).map_err(|e| crate::error::Error::Store { path: store.path.clone(), source: e })?;
        let guard = self.vectors.read().unwrap_or_else(|p| p.into_inner());
        let conv: &ConvVectors = &guard;
        hybrid(&live.text, &phrases, query_vector, params, |leg_k| {
            let ranked = conv.ranked(query_vector, leg_k);
            Ok(first_live(conv, ranked, leg_k, |s| slots.get(s).copied().unwrap_or(false)))
        })
    }
}

/// The search once the live set is known: the BM25 leg over `text`, the
/// vector leg (`vector_leg(leg_k)`, not called for an empty query vector),
/// merged.
fn hybrid<V: AsRef<str>>(
    text: &TextIndex,
    phrases: &QueryPhrases,
    query_vector: &[f32],
    params: &SearchParams,
    vector_leg: impl FnOnce(usize) -> Result<Vec<(V, f64)>>,
) -> Result<Vec<SearchHit>> {
    hybrid_with(Retriever::And, text, phrases, query_vector, params, vector_leg)
}

/// [`hybrid`] with the keyword leg `retriever` asks for (none for [`Retriever::Vector`]).
///
/// `vector_leg(k)` gives the first `k` of one ranking (best first, ties to
/// the smaller id, distinct ids, every score positive), so its first `j`
/// for any `j < k` are `vector_leg(j)`. When the keyword leg scored nothing
/// (most searches: Signet's implicit AND rarely matches), the merge keeps
/// the vector leg's order and only its first `top_k` can be kept, so only
/// those are asked for and the merge is their cut at `min_score` (the
/// same hits as [`merge`] of the whole leg; a test checks it).
fn hybrid_with<V: AsRef<str>>(
    retriever: Retriever,
    text: &TextIndex,
    phrases: &QueryPhrases,
    query_vector: &[f32],
    params: &SearchParams,
    vector_leg: impl FnOnce(usize) -> Result<Vec<(V, f64)>>,
) -> Result<Vec<SearchHit>> {
    let leg_k = params.leg_k.max(params.top_k);
    let bm25 = match retriever {
        Retriever::And => bm25_leg(text, phrases, leg_k),
        Retriever::Or => bm25_or_leg(text, phrases, leg_k),
        Retriever::Vector => Vec::new(),
    };
    if bm25.iter().all(|(_, s)| *s <= 0.0) {
        let vector = if query_vector.is_empty() { Vec::new() } else { vector_leg(params.top_k)? };
        return Ok(vector
            .into_iter()
            .filter(|(_, s)| *s > 0.0 && *s >= params.min_score)
            .take(params.top_k)
            .map(|(id, s)| SearchHit { fact_id: id.as_ref().to_string(), score: s, bm25: None, vector: Some(s) })
            .collect());
    }
    let vector = if query_vector.is_empty() { Vec::new() } else { vector_leg(leg_k)? };
    Ok(merge(&bm25, &vector, params.alpha, params.min_score, params.top_k))
}

/// The BM25 leg's view of a set of documents (a conversation's live facts,
/// or a baseline corpus): each document's id, its tokens as FTS5's
/// `unicode61` tokenizer cuts them (see `tokenize`), their count, and each
/// token's postings (the documents holding it, with its hits in each).
#[derive(Debug, Default)]
pub(super) struct TextIndex {
    ids: Vec<String>,
    /// Each slot's document in the corpus it was taken from (a
    /// [`DocumentIndex`]'s slot; for a conversation's live facts, its own slot).
    origin: Vec<u32>,
    lens: Vec<u32>,
    n_tokens: u64,
    seqs: Vec<Arc<[TermId]>>,
    /// Token → (slot, hits), by slot.
    postings: FxHashMap<TermId, Vec<(u32, u32)>>,
    /// A buffer `push` sorts a sequence's tokens in.
    scratch: Vec<TermId>,
}

impl TextIndex {
    fn push(&mut self, id: String, seq: Arc<[TermId]>) {
        let slot = u32::try_from(self.ids.len()).unwrap_or(u32::MAX);
        self.push_from(id, seq, slot);
    }

    /// [`TextIndex::push`] of the document `origin` of its corpus.
    fn push_from(&mut self, id: String, seq: Arc<[TermId]>, origin: u32) {
        let slot = u32::try_from(self.ids.len()).unwrap_or(u32::MAX);
        self.origin.push(origin);
        let mut sorted = std::mem::take(&mut self.scratch);
        sorted.clear();
        sorted.extend_from_slice(&seq);
        sorted.sort_unstable();
        for run in sorted.chunk_by(|a, b| a == b) {
            self.postings.entry(run[0]).or_default().push((slot, u32::try_from(run.len()).unwrap_or(u32::MAX)));
        }
        self.lens.push(u32::try_from(seq.len()).unwrap_or(u32::MAX));
        self.n_tokens += seq.len() as u64;
        self.ids.push(id);
        self.seqs.push(seq);
        self.scratch = sorted;
    }

    /// `hits` by the documents' ids.
    fn named(&self, hits: Vec<(u32, f64)>) -> Vec<(&str, f64)> {
        hits.into_iter().map(|(slot, s)| (self.ids[slot as usize].as_str(), s)).collect()
    }

    /// The documents holding `phrase` (its tokens, consecutive), with the
    /// number of places it starts in each (overlapping ones counted, as
    /// FTS5 counts a phrase's instances).
    fn posting(&self, phrase: &[TermId]) -> Cow<'_, [(u32, u32)]> {
        let Some((first, rest)) = phrase.split_first() else { return Cow::Borrowed(&[]) };
        let Some(p) = self.postings.get(first) else { return Cow::Borrowed(&[]) };
        if rest.is_empty() {
            return Cow::Borrowed(p);
        }
        Cow::Owned(
            p.iter()
                .filter_map(|&(slot, _)| {
                    let n = self.seqs[slot as usize].windows(phrase.len()).filter(|w| *w == phrase).count();
                    (n > 0).then(|| (slot, u32::try_from(n).unwrap_or(u32::MAX)))
                })
                .collect(),
        )
    }
}

/// What the search needs of one conversation's live facts (now, or at one
/// instant): their [`TextIndex`] and ids. Built from the store and valid
/// while its [`Stamp`] holds.
#[derive(Debug)]
pub(super) struct LiveFacts {
    stamp: Stamp,
    text: TextIndex,
    live_ids: HashSet<String>,
}

/// What an entry was built from: SQLite's `PRAGMA data_version` (moves when
/// another connection commits), and the [`LiveCache`]'s epoch (moves on any
/// change made through this connection that the store did not account for)
/// and the conversation's generation (moves on each write of the store's
/// own that touches that conversation's facts). Equal stamps mean the
/// conversation's facts are as they were.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    data_version: i64,
    epoch: u64,
    generation: u64,
}

/// At most this many (conversation, instant) entries are kept; past it the
/// cache is emptied and refills as searches ask.
const LIVE_CACHE_ENTRIES: usize = 256;

/// Each conversation's [`LiveFacts`], now and at each instant asked for,
/// the counters that say when one is stale, and the tokenizer.
#[derive(Debug, Default)]
pub(super) struct LiveCache {
    entries: Mutex<HashMap<LiveKey, Arc<LiveFacts>>>,
    counters: Mutex<Counters>,
    /// FTS5's tokenizer and the token sequences of the contents seen
    /// (made on first use).
    tokens: Mutex<Option<Tokens>>,
}

/// A conversation and the instant (`None`: now).
type LiveKey = (String, Option<String>);

#[derive(Debug, Default)]
struct Counters {
    /// The connection's `total_changes()` after the last change accounted for.
    known: u64,
    /// Moves when `total_changes()` moved without the store accounting for it
    /// (a change of any kind, anywhere): every entry is stale.
    epoch: u64,
    /// Per conversation: moves on each write that touches its facts.
    generation: HashMap<String, u64>,
}

impl Counters {
    /// Accounts for any change since the last one as unknown.
    fn catch_up(&mut self, c: &Connection) {
        let now = c.total_changes();
        if now != self.known {
            self.epoch += 1;
            self.known = now;
        }
    }
}

/// Runs `f` with a [`Tokens`], made on first use.
fn with_tokens<T>(slot: &Mutex<Option<Tokens>>, f: impl FnOnce(&mut Tokens) -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let mut guard = slot.lock().unwrap_or_else(|p| p.into_inner());
    let tokens = match guard.as_mut() {
        Some(t) => t,
        None => guard.insert(Tokens::new()?),
    };
    f(tokens)
}

/// A query's phrases (see [`fts_phrases`]) as token sequences: `None` when
/// a phrase can match nothing (a token no document held), so nothing
/// matches (FTS5's implicit AND); a phrase with no token is dropped, as
/// FTS5 drops it.
type QueryPhrases = Option<Vec<Vec<TermId>>>;

fn query_phrases(tokens: &mut Tokens, text: &str) -> rusqlite::Result<QueryPhrases> {
    let mut out = Vec::new();
    for term in fts_terms(text) {
        match tokens.phrase(&term)? {
            None => return Ok(None),
            Some(p) if p.is_empty() => {}
            Some(p) => out.push(p),
        }
    }
    Ok(Some(out))
}

/// [`query_phrases`] for a keyword OR: a phrase no document holds is
/// dropped instead of ending the match, as is one with no token; `None`
/// when none is left.
fn query_phrases_any(tokens: &mut Tokens, text: &str) -> rusqlite::Result<QueryPhrases> {
    let mut out: Vec<Vec<TermId>> = Vec::new();
    for term in fts_terms(text) {
        if let Some(p) = tokens.phrase(&term)?.filter(|p| !p.is_empty() && !out.contains(p)) {
            out.push(p);
        }
    }
    Ok((!out.is_empty()).then_some(out))
}

impl LiveCache {
    /// Called with the connection held, before a write the store accounts for.
    pub(super) fn before_write(&self, c: &Connection) {
        self.counters.lock().unwrap_or_else(|p| p.into_inner()).catch_up(c);
    }

    /// Called with the connection still held, after that write (committed or
    /// not): it touched the facts of `conversation` only (`None`: no facts).
    pub(super) fn after_write(&self, c: &Connection, conversation: Option<&str>) {
        let mut k = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        k.known = c.total_changes();
        if let Some(conv) = conversation {
            *k.generation.entry(conv.to_string()).or_default() += 1;
        }
    }

    fn stamp(&self, c: &Connection, conversation: &str) -> rusqlite::Result<Stamp> {
        let data_version = c.prepare_cached("PRAGMA data_version")?.query_row([], |r| r.get(0))?;
        let mut k = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        k.catch_up(c);
        Ok(Stamp { data_version, epoch: k.epoch, generation: k.generation.get(conversation).copied().unwrap_or(0) })
    }

    /// The entry of `conversation` at `as_of`, rebuilt if its facts changed since it was built.
    fn get(&self, c: &Connection, conversation: &str, as_of: &Option<String>) -> rusqlite::Result<Arc<LiveFacts>> {
        let now = self.stamp(c, conversation)?;
        let key = (conversation.to_string(), as_of.clone());
        let mut map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = map.get(&key).filter(|e| e.stamp == now) {
            return Ok(Arc::clone(e));
        }
        let built = Arc::new(with_tokens(&self.tokens, |t| LiveFacts::read(c, t, conversation, as_of, now))?);
        if map.len() >= LIVE_CACHE_ENTRIES {
            map.clear();
        }
        map.insert(key, Arc::clone(&built));
        Ok(built)
    }

    fn phrases(&self, text: &str) -> rusqlite::Result<QueryPhrases> {
        with_tokens(&self.tokens, |t| query_phrases(t, text))
    }
}

impl LiveFacts {
    /// Reads the live facts' ids and normalised contents (the column
    /// `facts_fts` indexes) and tokenises each content once.
    fn read(c: &Connection, tokens: &mut Tokens, conversation: &str, as_of: &Option<String>, stamp: Stamp) -> rusqlite::Result<LiveFacts> {
        let sql = format!("SELECT f.id, f.normalized_content FROM facts f WHERE f.conversation_id = ?1 AND {}", live_clause(as_of));
        let mut st = c.prepare_cached(&sql)?;
        bind(&mut st, &[&conversation], as_of)?;
        let mut live = LiveFacts { stamp, text: TextIndex::default(), live_ids: HashSet::new() };
        let mut rows = st.raw_query();
        while let Some(r) = rows.next()? {
            let id: String = r.get(0)?;
            let seq = tokens.document(r.get_ref(1)?.as_str_or_null()?.unwrap_or(""))?;
            live.live_ids.insert(id.clone());
            live.text.push(id, seq);
        }
        Ok(live)
    }
}

/// Slots in rank order, ordered a chunk at a time as they are asked for.
struct Ranked {
    scores: Vec<f32>,
    order: Vec<usize>,
    /// `order[..sorted]` is in rank order and ranks before the rest.
    sorted: usize,
}

impl ConvVectors {
    /// Every slot with a positive cosine, best first, ties to the smaller
    /// id; only the first `k` are ordered now (most of them are live).
    fn ranked(&self, q: &[f32], k: usize) -> Ranked {
        let scores = self.scores(q);
        let order: Vec<usize> = (0..scores.len()).filter(|&s| scores[s] > 0.0).collect();
        let mut r = Ranked { scores, order, sorted: 0 };
        self.order_next(&mut r, k);
        r
    }

    /// Orders the next `n` slots of `r` (the best `n` of the rest, sorted).
    fn order_next(&self, r: &mut Ranked, n: usize) {
        let (scores, ids) = (&r.scores, &self.ids);
        let better = |a: &usize, b: &usize| scores[*b].total_cmp(&scores[*a]).then_with(|| ids[*a].cmp(&ids[*b]));
        let rest = &mut r.order[r.sorted..];
        let n = n.min(rest.len());
        if n < rest.len() {
            rest.select_nth_unstable_by(n, better);
        }
        rest[..n].sort_unstable_by(better);
        r.sorted += n;
    }
}

/// The vector leg's hits: the first `k` slots of the ranking that are live.
fn first_live(conv: &ConvVectors, r: Ranked, k: usize, live: impl Fn(usize) -> bool) -> Vec<(&str, f64)> {
    first_live_slots(conv, r, k, live).into_iter().map(|(s, score)| (conv.ids[s].as_str(), score)).collect()
}

/// [`first_live`] by the slots of `conv`.
fn first_live_slots(conv: &ConvVectors, mut r: Ranked, k: usize, live: impl Fn(usize) -> bool) -> Vec<(usize, f64)> {
    let mut out = Vec::with_capacity(k);
    let mut chunk = k.max(1);
    let mut i = 0;
    while out.len() < k && i < r.order.len() {
        if i == r.sorted {
            conv.order_next(&mut r, chunk);
            chunk = chunk.saturating_mul(2);
        }
        let s = r.order[i];
        if live(s) {
            out.push((s, f64::from(r.scores[s])));
        }
        i += 1;
    }
    out
}

/// A document of a baseline corpus (a raw turn or a whole session).
#[derive(Debug, Clone, Copy)]
pub struct Document<'a> {
    pub id: &'a str,
    pub episode: &'a str,
    pub text: &'a str,
    /// The turns it holds.
    pub turns: &'a [String],
    pub vector: &'a [f32],
    /// When it was said (its episode's timestamp), if known: a search at an
    /// instant holds the documents said by then (as [`LIVE_AT`]: an undated
    /// document is held by none).
    pub written_at: Option<&'a str>,
    /// When it stopped being live, if it did (a fact invalidated at that
    /// instant; `Some("")`: ended without a clock, as a fact superseded
    /// without one): held by no search now, and at an instant only before
    /// its end. [`Store::insert_documents`] ignores it.
    pub ended_at: Option<&'a str>,
}

impl Store {
    /// Stores `docs` as live facts of `conversation` (content the text,
    /// content hash the id, source turns the document's turns, written at
    /// the document's instant) with their vectors, in one transaction, so
    /// that [`Store::search`] searches them. The test that a
    /// [`DocumentIndex`] searches as the store does uses it.
    pub fn insert_documents(&self, conversation: &str, docs: &[Document<'_>]) -> Result<()> {
        self.write_with(Some(conversation), |c| {
            let tx = c.savepoint()?;
            {
                let mut fact = tx.prepare_cached(
                    "INSERT INTO facts (id, conversation_id, subject, predicate, object, kind, fact_type, content,
                        normalized_content, content_hash, confidence, source_episode, source_turns, source_quote, created_at)
                     VALUES (?1, ?2, '', '', '', 'literal', 'fact', ?3, ?4, ?1, 1.0, ?5, ?6, '', ?7)",
                )?;
                let mut vector =
                    tx.prepare_cached("INSERT INTO embeddings (fact_id, conversation_id, dims, vector) VALUES (?1, ?2, ?3, ?4)")?;
                for d in docs {
                    let turns = serde_json::to_string(d.turns).unwrap_or_default();
                    let normalized = crate::normalize::normalize_content(d.text);
                    fact.execute(params![d.id, conversation, d.text, normalized, d.episode, turns, d.written_at])?;
                    if !d.vector.is_empty() {
                        vector.execute(params![d.id, conversation, d.vector.len() as i64, vector_to_blob(d.vector)])?;
                    }
                }
            }
            tx.commit()
        })
    }
}

/// A corpus searched as a conversation's live facts are, held in memory
/// instead of the store: the QA evaluation's baselines (every raw turn, or
/// every session, a document). The same tokenizer (FTS5's `unicode61`, on
/// the text normalised as a fact's content is), the same BM25 leg, vector
/// leg and merge as [`Store::search`]; a test checks that both give the
/// same hits for the same documents.
pub struct DocumentIndex {
    /// Each slot's place among the documents' ids in byte order (the ids
    /// are distinct), so ties are broken by comparing numbers.
    id_rank: Vec<u32>,
    /// The slot at each place of `id_rank`.
    by_id_rank: Vec<u32>,
    written_at: Vec<Option<String>>,
    ended_at: Vec<Option<String>>,
    seqs: Vec<Arc<[TermId]>>,
    vectors: ConvVectors,
    /// The interner of its documents' tokens (shared by an index and the
    /// indexes [`DocumentIndex::build_joined`] makes from it).
    tokens: Arc<Mutex<Option<Tokens>>>,
    /// The text index of the documents said by each instant asked for.
    at: Mutex<HashMap<Option<String>, Arc<TextIndex>>>,
}

/// A document of [`DocumentIndex::build_joined`]: a header, then other
/// documents' texts as lines.
#[derive(Debug, Clone, Copy)]
pub struct Joined<'a> {
    /// The text before the lines (none: empty).
    pub header: &'a str,
    /// The slots of the base index's documents that are the lines, in order.
    pub lines: &'a [usize],
}

/// An error of a [`DocumentIndex`]'s tokenizer (its connection is in memory).
fn in_memory(e: rusqlite::Error) -> crate::error::Error {
    crate::error::Error::Store { path: std::path::PathBuf::from(":memory:"), source: e }
}

impl std::fmt::Debug for DocumentIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DocumentIndex").field("documents", &self.seqs.len()).finish()
    }
}

impl DocumentIndex {
    /// Tokenises `docs` and keeps their vectors.
    pub fn build(docs: &[Document<'_>]) -> Result<DocumentIndex> {
        let mut tokens = Tokens::new().map_err(in_memory)?;
        let mut seqs = Vec::with_capacity(docs.len());
        for d in docs {
            seqs.push(tokens.document_once(&crate::normalize::normalize_content(d.text)).map_err(in_memory)?);
        }
        Ok(DocumentIndex::of_sequences(docs, seqs, Arc::new(Mutex::new(Some(tokens)))))
    }

    /// [`DocumentIndex::build`] of documents made of `base`'s: document
    /// `i`'s text is `joined[i].header`, then the texts of `base`'s
    /// documents `joined[i].lines` with that header and one space cut off
    /// the front of each (whole when the header is empty), one per line
    /// (joined by `\n`, the header on the first). Its token sequence is
    /// then the header's, then each line document's after the header's
    /// tokens (FTS5's `unicode61` splits at whitespace, lower-casing never
    /// looks across whitespace, and normalising only trims punctuation at
    /// the text's end, where `unicode61` splits too), so nothing is
    /// tokenised twice; a document with no line, or a line document not
    /// starting with the header's tokens, is tokenised afresh. The index
    /// shares `base`'s interner (a query token none of its documents holds
    /// then finds an empty posting instead of none: the same hits for
    /// either keyword leg); its statistics are its own documents'. A test
    /// checks that it searches as [`DocumentIndex::build`] does.
    pub fn build_joined(base: &DocumentIndex, docs: &[Document<'_>], joined: &[Joined<'_>]) -> Result<DocumentIndex> {
        let mut seqs = Vec::with_capacity(docs.len());
        with_tokens(&base.tokens, |tokens| {
            for (i, d) in docs.iter().enumerate() {
                let made = match joined.get(i) {
                    Some(j) if !j.lines.is_empty() => {
                        let header: Arc<[TermId]> = if j.header.is_empty() {
                            Arc::from([])
                        } else {
                            tokens.document_once(&crate::normalize::normalize_content(j.header))?
                        };
                        let lines: Option<Vec<&[TermId]>> =
                            j.lines.iter().map(|&s| base.seqs.get(s).and_then(|seq| seq.strip_prefix(&header[..]))).collect();
                        lines.map(|lines| {
                            let mut seq: Vec<TermId> = Vec::with_capacity(header.len() + lines.iter().map(|l| l.len()).sum::<usize>());
                            seq.extend_from_slice(&header);
                            lines.iter().for_each(|l| seq.extend_from_slice(l));
                            Arc::<[TermId]>::from(seq)
                        })
                    }
                    _ => None,
                };
                seqs.push(match made {
                    Some(seq) => seq,
                    None => tokens.document_once(&crate::normalize::normalize_content(d.text))?,
                });
            }
            Ok(())
        })
        .map_err(in_memory)?;
        Ok(DocumentIndex::of_sequences(docs, seqs, Arc::clone(&base.tokens)))
    }

    /// The index of `docs` with their token sequences `seqs` (by `tokens`).
    fn of_sequences(docs: &[Document<'_>], seqs: Vec<Arc<[TermId]>>, tokens: Arc<Mutex<Option<Tokens>>>) -> DocumentIndex {
        let mut vectors = ConvVectors::default();
        vectors.reserve(docs.len(), docs.iter().map(|d| d.vector.len()).find(|&n| n > 0).unwrap_or(0));
        for d in docs {
            vectors.put(d.id.to_string(), d.vector);
        }
        let ids = &vectors.ids;
        let mut by_id_rank: Vec<u32> = (0..u32::try_from(ids.len()).unwrap_or(u32::MAX)).collect();
        by_id_rank.sort_unstable_by(|&a, &b| ids[a as usize].cmp(&ids[b as usize]));
        let mut id_rank = vec![0u32; by_id_rank.len()];
        for (rank, &slot) in by_id_rank.iter().enumerate() {
            id_rank[slot as usize] = u32::try_from(rank).unwrap_or(u32::MAX);
        }
        DocumentIndex {
            id_rank,
            by_id_rank,
            written_at: docs.iter().map(|d| d.written_at.map(String::from)).collect(),
            ended_at: docs.iter().map(|d| d.ended_at.map(String::from)).collect(),
            seqs,
            vectors,
            tokens,
            at: Mutex::default(),
        }
    }

    /// How many documents it holds.
    pub fn len(&self) -> usize {
        self.seqs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seqs.is_empty()
    }

    fn held(&self, slot: usize, as_of: &Option<String>) -> bool {
        let ended = self.ended_at[slot].as_deref();
        match as_of {
            None => ended.is_none(),
            Some(t) => {
                self.written_at[slot].as_deref().is_some_and(|w| w <= t.as_str()) && ended.is_none_or(|e| !e.is_empty() && e > t.as_str())
            }
        }
    }

    fn text_at(&self, as_of: &Option<String>) -> Arc<TextIndex> {
        let mut at = self.at.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(at.entry(as_of.clone()).or_insert_with(|| {
            let mut text = TextIndex::default();
            for (slot, seq) in self.seqs.iter().enumerate().filter(|(s, _)| self.held(*s, as_of)) {
                text.push_from(self.vectors.ids[slot].clone(), Arc::clone(seq), u32::try_from(slot).unwrap_or(u32::MAX));
            }
            Arc::new(text)
        }))
    }

    /// [`Store::search`] over these documents (at `params.as_of`: those said by then).
    pub fn search(&self, query_text: &str, query_vector: &[f32], params: &SearchParams) -> Result<Vec<SearchHit>> {
        self.search_with(Retriever::And, query_text, query_vector, params)
    }

    /// [`DocumentIndex::search`] with the keyword leg `retriever` asks for.
    pub fn search_with(
        &self,
        retriever: Retriever,
        query_text: &str,
        query_vector: &[f32],
        params: &SearchParams,
    ) -> Result<Vec<SearchHit>> {
        let hits = self.search_slots(retriever, query_text, query_vector, params)?;
        Ok(hits.into_iter().map(|h| Hit { id: self.id(h.id), score: h.score, bm25: h.bm25, vector: h.vector }.into_search_hit()).collect())
    }

    /// The id of the document at `slot` (its place in the documents built from).
    pub fn id(&self, slot: usize) -> &str {
        &self.vectors.ids[slot]
    }

    /// [`DocumentIndex::search_with`]'s hits by the documents' slots (their
    /// places in the documents built from), with no id copied: the same
    /// hits in the same order: a document's slot names it as its id does
    /// (the ids are distinct), and ties are still broken by the ids.
    pub fn search_slots(
        &self,
        retriever: Retriever,
        query_text: &str,
        query_vector: &[f32],
        params: &SearchParams,
    ) -> Result<Vec<Hit<usize>>> {
        if params.top_k == 0 {
            return Ok(Vec::new());
        }
        let text = self.text_at(&params.as_of);
        let phrases = match retriever {
            Retriever::Vector => None,
            Retriever::And => with_tokens(&self.tokens, |t| query_phrases(t, query_text)).map_err(in_memory)?,
            Retriever::Or => with_tokens(&self.tokens, |t| query_phrases_any(t, query_text)).map_err(in_memory)?,
        };
        let leg_k = params.leg_k.max(params.top_k);
        let bm25: Vec<(usize, f64)> = match retriever {
            Retriever::And => bm25_leg_slots(&text, &phrases, leg_k),
            Retriever::Or => bm25_or_slots(&text, &phrases, leg_k),
            Retriever::Vector => Vec::new(),
        }
        .into_iter()
        .map(|(slot, s)| (text.origin[slot as usize] as usize, s))
        .collect();
        let vector_leg = |k: usize| self.first_live_by_vector(query_vector, k, |s| self.held(s, &params.as_of));
        // As `hybrid_with`: the vector leg's first `top_k` when the keyword leg scored nothing.
        if bm25.iter().all(|(_, s)| *s <= 0.0) {
            let vector = if query_vector.is_empty() { Vec::new() } else { vector_leg(params.top_k) };
            return Ok(vector
                .into_iter()
                .filter(|(_, s)| *s > 0.0 && *s >= params.min_score)
                .take(params.top_k)
                .map(|(slot, s)| Hit { id: slot, score: s, bm25: None, vector: Some(s) })
                .collect());
        }
        let vector = if query_vector.is_empty() { Vec::new() } else { vector_leg(leg_k) };
        let rank = &self.id_rank;
        Ok(merge_by(&bm25, &vector, params.alpha, params.min_score, params.top_k, |a, b| rank[a].cmp(&rank[b])))
    }

    /// The vector leg's hits by slot: [`first_live_slots`] of
    /// [`ConvVectors::ranked`], the same slots and scores in the same order,
    /// with each slot ranked by one integer: its cosine's bits (positive
    /// finite floats order as their bits do), then its place among the ids.
    /// The order is as total as the ranking's (the ids are distinct).
    fn first_live_by_vector(&self, q: &[f32], k: usize, live: impl Fn(usize) -> bool) -> Vec<(usize, f64)> {
        let scores = self.vectors.scores(q);
        let key = |s: usize| (u64::from(!scores[s].to_bits()) << 32) | u64::from(self.id_rank[s]);
        let mut keys: Vec<u64> = (0..scores.len()).filter(|&s| scores[s] > 0.0).map(key).collect();
        let mut out = Vec::with_capacity(k);
        // Ordered a chunk at a time as they are asked for, as `first_live_slots` does.
        let (mut sorted, mut chunk, mut i) = (0, k.max(1), 0);
        while out.len() < k && i < keys.len() {
            if i == sorted {
                let rest = &mut keys[sorted..];
                let n = chunk.min(rest.len());
                if n < rest.len() {
                    rest.select_nth_unstable(n);
                }
                rest[..n].sort_unstable();
                sorted += n;
                chunk = chunk.saturating_mul(2);
            }
            let s = self.by_id_rank[(keys[i] & u64::from(u32::MAX)) as usize] as usize;
            if live(s) {
                out.push((s, f64::from(scores[s])));
            }
            i += 1;
        }
        out
    }
}

/// Reads the `embeddings` rows written since `conv.seen`.
fn top_up(c: &Connection, conversation: &str, conv: &mut ConvVectors) -> rusqlite::Result<()> {
    let max: i64 = c.prepare_cached("SELECT COALESCE(MAX(rowid), 0) FROM embeddings")?.query_row([], |r| r.get(0))?;
    if max <= conv.seen {
        return Ok(());
    }
    let mut st = c.prepare_cached(
        "SELECT fact_id, vector FROM embeddings WHERE rowid > ?1 AND rowid <= ?2 AND conversation_id = ?3 ORDER BY rowid",
    )?;
    let mut rows = st.query(params![conv.seen, max, conversation])?;
    while let Some(r) = rows.next()? {
        let id: String = r.get(0)?;
        let blob: Vec<u8> = r.get(1)?;
        conv.put(id, &blob_to_vector(&blob));
    }
    conv.seen = max;
    Ok(())
}

/// FTS5's `bm25()` constants.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The BM25 leg: the `k` best of the index's documents matching every
/// phrase of the query, scored with FTS5's `bm25()` formula but with its
/// statistics (document count, average length, each phrase's document
/// count) taken over the documents the leg searches (a conversation's live
/// facts, `as_of` respected) instead of the whole table, so a fact's score
/// never depends on other conversations, nor on which of their facts were
/// written yet. Tokens are FTS5's own (`tokenize`): a document holding
/// every phrase is a hit (FTS5's implicit AND), a phrase's hits in it are
/// its instances, and its length is its token count (what FTS5 stores in
/// `facts_fts_docsize`). Scores normalised with [`normalise_bm25`].
fn bm25_leg<'a>(text: &'a TextIndex, phrases: &QueryPhrases, k: usize) -> Vec<(&'a str, f64)> {
    text.named(bm25_leg_slots(text, phrases, k))
}

/// [`bm25_leg`] by the documents' slots in `text`.
fn bm25_leg_slots(text: &TextIndex, phrases: &QueryPhrases, k: usize) -> Vec<(u32, f64)> {
    bm25_raw_slots(text, phrases, k).into_iter().map(|(slot, raw)| (slot, normalise_bm25(raw))).collect()
}

/// The keyword OR leg: the `k` best documents holding any phrase of the
/// query, each scored with FTS5's `bm25()` formula summed over the phrases
/// it holds (what FTS5 gives for the phrases joined by `OR`), with the
/// statistics of [`bm25_leg`]; normalised as `|bm25| / max |bm25|` over the
/// documents matched, so the best is 1 (Signet's `1 / (1 + |bm25|)` would
/// rank a match on one common word, whose score is near 0, first).
fn bm25_or_leg<'a>(text: &'a TextIndex, phrases: &QueryPhrases, k: usize) -> Vec<(&'a str, f64)> {
    text.named(bm25_or_slots(text, phrases, k))
}

/// [`bm25_or_leg`] by the documents' slots in `text`.
fn bm25_or_slots(text: &TextIndex, phrases: &QueryPhrases, k: usize) -> Vec<(u32, f64)> {
    let Some(phrases) = phrases else { return Vec::new() };
    if phrases.is_empty() || text.ids.is_empty() {
        return Vec::new();
    }
    let n_docs = text.ids.len() as f64;
    let avgdl = text.n_tokens as f64 / n_docs;
    let mut score: FxHashMap<u32, f64> = FxHashMap::default();
    for p in phrases {
        let posting = text.posting(p);
        if posting.is_empty() {
            continue;
        }
        let n_hit = posting.len() as f64;
        let idf = ((n_docs - n_hit + 0.5) / (n_hit + 0.5)).ln();
        let idf = if idf <= 0.0 { 1e-6 } else { idf };
        for &(slot, hits) in posting.iter() {
            let (f, dl) = (f64::from(hits), f64::from(text.lens[slot as usize]));
            *score.entry(slot).or_default() += idf * (f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * dl / avgdl));
        }
    }
    let mut out: Vec<(u32, f64)> = score.into_iter().collect();
    best_first(&mut out, k, |a, b| b.1.total_cmp(&a.1).then_with(|| text.ids[a.0 as usize].cmp(&text.ids[b.0 as usize])));
    let best = out.first().map_or(0.0, |x| x.1);
    if best > 0.0 {
        for x in &mut out {
            x.1 /= best;
        }
    }
    out
}

/// [`bm25_leg`]'s hits with their raw scores (as `bm25()` returns them).
#[cfg(test)]
fn bm25_raw<'a>(text: &'a TextIndex, phrases: &QueryPhrases, k: usize) -> Vec<(&'a str, f64)> {
    text.named(bm25_raw_slots(text, phrases, k))
}

/// [`bm25_raw`] by the documents' slots in `text`.
fn bm25_raw_slots(text: &TextIndex, phrases: &QueryPhrases, k: usize) -> Vec<(u32, f64)> {
    let Some(phrases) = phrases else { return Vec::new() };
    if phrases.is_empty() || text.ids.is_empty() {
        return Vec::new();
    }
    let postings: Vec<Cow<'_, [(u32, u32)]>> = phrases.iter().map(|p| text.posting(p)).collect();
    let Some(smallest) = postings.iter().min_by_key(|p| p.len()) else { return Vec::new() };
    let n_docs = text.ids.len() as f64;
    let avgdl = text.n_tokens as f64 / n_docs;
    let idf: Vec<f64> = postings
        .iter()
        .map(|p| {
            let n_hit = p.len() as f64;
            let idf = ((n_docs - n_hit + 0.5) / (n_hit + 0.5)).ln();
            if idf <= 0.0 { 1e-6 } else { idf }
        })
        .collect();
    let hits_of = |p: &[(u32, u32)], slot: u32| p.binary_search_by_key(&slot, |e| e.0).ok().map(|i| p[i].1);
    let mut out: Vec<(u32, f64)> = smallest
        .iter()
        .filter_map(|&(slot, _)| {
            let dl = f64::from(text.lens[slot as usize]);
            let mut score = 0.0;
            for (p, idf) in postings.iter().zip(&idf) {
                let f = f64::from(hits_of(p, slot)?);
                score += idf * (f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * dl / avgdl));
            }
            Some((slot, -score))
        })
        .collect();
    best_first(&mut out, k, |a, b| a.1.total_cmp(&b.1).then_with(|| text.ids[a.0 as usize].cmp(&text.ids[b.0 as usize])));
    out
}

/// The first `k` of `v` in the order `order`, sorted: a selection, then a
/// sort of those `k` only (the same as sorting all of `v` and cutting it at
/// `k`: `order` is total on distinct hits, and equal hits are alike).
fn best_first<T>(v: &mut Vec<T>, k: usize, order: impl Fn(&T, &T) -> std::cmp::Ordering) {
    if k < v.len() {
        v.select_nth_unstable_by(k, &order);
        v.truncate(k);
    }
    v.sort_by(order);
}

/// The BM25 leg computed afresh from the store, nothing cached (the
/// implementation before the cache): the oracle the cached leg is checked against.
#[cfg(test)]
fn bm25_raw_uncached(
    c: &Connection,
    conversation: &str,
    text: &str,
    k: usize,
    as_of: &Option<String>,
) -> rusqlite::Result<Vec<(String, f64)>> {
    let phrases = fts_phrases(text);
    if phrases.is_empty() {
        return Ok(Vec::new());
    }
    // The live facts searched, each with its length: N and the average length.
    let sql = format!(
        "SELECT f.rowid, d.sz FROM facts f JOIN facts_fts_docsize d ON d.id = f.rowid WHERE f.conversation_id = ?1 AND {}",
        live_clause(as_of)
    );
    let mut st = c.prepare_cached(&sql)?;
    bind(&mut st, &[&conversation], as_of)?;
    let mut len_of: HashMap<i64, i64> = HashMap::new();
    let mut n_tokens = 0i64;
    let mut rows = st.raw_query();
    while let Some(r) = rows.next()? {
        let dl = docsize(r.get_ref(1)?.as_blob()?);
        n_tokens += dl;
        len_of.insert(r.get(0)?, dl);
    }
    if len_of.is_empty() {
        return Ok(Vec::new());
    }
    let n_docs = len_of.len() as f64;
    let avgdl = n_tokens as f64 / n_docs;
    // Each term's live facts (the posting list only, no content read).
    let mut st = c.prepare_cached("SELECT rowid FROM facts_fts WHERE facts_fts MATCH ?1")?;
    let mut holding: Vec<std::collections::HashSet<i64>> = Vec::with_capacity(phrases.len());
    for phrase in &phrases {
        let mut set = std::collections::HashSet::new();
        let mut rows = st.query([phrase])?;
        while let Some(r) = rows.next()? {
            let rowid: i64 = r.get(0)?;
            if len_of.contains_key(&rowid) {
                set.insert(rowid);
            }
        }
        holding.push(set);
    }
    let idf: Vec<f64> = holding
        .iter()
        .map(|set| {
            let n_hit = set.len() as f64;
            let idf = ((n_docs - n_hit + 0.5) / (n_hit + 0.5)).ln();
            if idf <= 0.0 { 1e-6 } else { idf }
        })
        .collect();
    // The facts holding every term, scored as FTS5's bm25() scores them; a
    // term's hits in a fact counted from `highlight()` (`char(1)` opens each
    // instance; normalised content holds no control characters).
    let Some(smallest) = holding.iter().min_by_key(|s| s.len()) else { return Ok(Vec::new()) };
    let hits: Vec<i64> = smallest.iter().copied().filter(|r| holding.iter().all(|s| s.contains(r))).collect();
    if hits.is_empty() {
        return Ok(Vec::new());
    }
    let hits_json = serde_json::to_string(&hits).unwrap_or_default();
    let mut tf_st = c.prepare_cached(
        "SELECT rowid, highlight(facts_fts, 0, char(1), '') FROM facts_fts
         WHERE facts_fts MATCH ?1 AND rowid IN (SELECT value FROM json_each(?2))",
    )?;
    // rowid → score so far
    let mut score: HashMap<i64, f64> = hits.iter().map(|r| (*r, 0.0)).collect();
    for (phrase, idf) in phrases.iter().zip(&idf) {
        let mut rows = tf_st.query(params![phrase, hits_json])?;
        while let Some(r) = rows.next()? {
            let rowid: i64 = r.get(0)?;
            let f = r.get_ref(1)?.as_str().map_or(0, |h| h.matches('\u{1}').count()) as f64;
            let dl = len_of.get(&rowid).copied().unwrap_or(0) as f64;
            if let Some(s) = score.get_mut(&rowid) {
                *s += idf * (f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * dl / avgdl));
            }
        }
    }
    let mut id_st = c.prepare_cached("SELECT id FROM facts WHERE rowid = ?1")?;
    let mut out: Vec<(String, f64)> = Vec::with_capacity(hits.len());
    for rowid in hits {
        out.push((id_st.query_row([rowid], |r| r.get(0))?, -score.get(&rowid).copied().unwrap_or(0.0)));
    }
    out.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    out.truncate(k);
    Ok(out)
}

#[cfg(test)]
/// A `facts_fts_docsize` row: the fact's token count, an SQLite varint
/// (7 bits a byte, high bit set on all but the last; a ninth byte holds 8).
fn docsize(b: &[u8]) -> i64 {
    let mut v: i64 = 0;
    for (i, &x) in b.iter().enumerate() {
        if i == 8 {
            return (v << 8) | i64::from(x);
        }
        v = (v << 7) | i64::from(x & 0x7f);
        if x & 0x80 == 0 {
            break;
        }
    }
    v
}

/// A vector as the store keeps it: f32 little-endian.
pub fn vector_to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The inverse of [`vector_to_blob`] (a trailing partial float is ignored).
pub fn blob_to_vector(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::WriteMode;
    use crate::normalize::normalize_and_hash_content;
    use crate::pipeline::write::{Action, Proposal, WritePlan, policy};
    use crate::state::FactRec;
    use crate::store::tests::{insert, plan};

    /// Episode `e1`'s documents (id, text) with their vectors and written dates, by index.
    fn episode_documents<'a>(texts: &'a [(String, String)], vectors: &'a [Vec<f32>], dates: &'a [Option<String>]) -> Vec<Document<'a>> {
        texts
            .iter()
            .zip(vectors)
            .zip(dates)
            .map(|(((id, text), v), at)| Document {
                id,
                episode: "e1",
                text,
                turns: &[],
                vector: v,
                written_at: at.as_deref(),
                ended_at: None,
            })
            .collect()
    }
    use crate::types::{Episode, Turn};

    fn hits(v: &[SearchHit]) -> Vec<(&str, f64)> {
        v.iter().map(|h| (h.fact_id.as_str(), h.score)).collect()
    }

    fn ids(v: &[SearchHit]) -> Vec<&str> {
        v.iter().map(|h| h.fact_id.as_str()).collect()
    }

    fn scored(v: &[(&str, f64)]) -> Vec<(String, f64)> {
        v.iter().map(|(i, s)| (i.to_string(), *s)).collect()
    }

    #[test]
    fn the_match_query_quotes_each_term_and_ands_them() {
        assert_eq!(fts_match_query("Where does Alice work?").as_deref(), Some(r#""where" "does" "alice" "work""#));
        assert_eq!(fts_match_query("snake_case AND \"x\" -y OR z*").as_deref(), Some(r#""snake_case" "and" "x" "y" "or" "z""#));
        assert_eq!(fts_match_query("Café, déjà-vu 42").as_deref(), Some(r#""café" "déjà" "vu" "42""#));
        assert_eq!(fts_match_query(" ?! -- "), None);
        assert_eq!(fts_match_query(""), None);
    }

    #[test]
    fn bm25_is_normalised_into_zero_one() {
        assert_eq!(normalise_bm25(0.0), 1.0);
        assert_eq!(normalise_bm25(-3.0), 0.25);
        assert_eq!(normalise_bm25(3.0), 0.25);
        assert!(normalise_bm25(-1e9) > 0.0);
    }

    #[test]
    fn alpha_weighs_the_legs_only_where_both_scored() {
        let b = scored(&[("both", 0.4), ("bm25_only", 0.3)]);
        let v = scored(&[("both", 0.9), ("vec_only", 0.2)]);
        assert_eq!(hits(&merge(&b, &v, 0.0, 0.0, 10)), vec![("both", 0.4), ("bm25_only", 0.3), ("vec_only", 0.2)]);
        assert_eq!(hits(&merge(&b, &v, 1.0, 0.0, 10)), vec![("both", 0.9), ("bm25_only", 0.3), ("vec_only", 0.2)]);
        let m = merge(&b, &v, 0.7, 0.0, 10);
        assert!((m[0].score - (0.7 * 0.9 + 0.3 * 0.4)).abs() < 1e-12, "{m:?}");
        assert_eq!((m[0].bm25, m[0].vector), (Some(0.4), Some(0.9)));
        assert_eq!((m[1].bm25, m[1].vector), (Some(0.3), None));
        assert_eq!((m[2].bm25, m[2].vector), (None, Some(0.2)));
    }

    #[test]
    fn a_zero_score_counts_as_not_scored() {
        let m = merge(&scored(&[("a", 0.5)]), &scored(&[("a", 0.0), ("z", 0.0)]), 0.7, 0.0, 10);
        assert_eq!(hits(&m), vec![("a", 0.5)]);
        assert_eq!(m[0].vector, None);
    }

    #[test]
    fn min_score_drops_and_top_k_keeps() {
        let b = scored(&[("a", 0.5), ("b", 0.1), ("c", 0.09999), ("d", 0.3)]);
        assert_eq!(ids(&merge(&b, &[] as &[(String, f64)], 0.7, 0.1, 10)), vec!["a", "d", "b"]);
        assert_eq!(ids(&merge(&b, &[] as &[(String, f64)], 0.7, 0.1, 2)), vec!["a", "d"]);
        assert_eq!(ids(&merge(&b, &[] as &[(String, f64)], 0.7, 0.6, 10)), Vec::<&str>::new());
    }

    #[test]
    fn ties_go_to_the_smaller_id_whatever_the_input_order() {
        let b = scored(&[("c/e1/c2", 0.5), ("c/e1/c10", 0.5), ("c/e0/c9", 0.5), ("a", 0.25)]);
        let v = scored(&[("b", 0.5)]);
        let want = vec!["b", "c/e0/c9", "c/e1/c10", "c/e1/c2", "a"];
        assert_eq!(ids(&merge(&b, &v, 0.7, 0.0, 10)), want);
        let (mut rb, mut rv) = (b.clone(), v.clone());
        rb.reverse();
        rv.reverse();
        assert_eq!(ids(&merge(&rb, &rv, 0.7, 0.0, 10)), want);
        assert_eq!(ids(&merge(&b, &v, 0.7, 0.0, 2)), vec!["b", "c/e0/c9"]);
    }

    // ---- through a real store ----

    fn fact(id: &str, content: &str, embedding: Vec<f32>) -> FactRec {
        let n = normalize_and_hash_content(content);
        let mut f = FactRec { normalized: n.normalized, hash: n.hash, embedding, ..FactRec::for_test(id, "Alice", "p", id) };
        f.content = n.storage;
        f
    }

    fn store_at(path: &std::path::Path) -> Store {
        let s = Store::open(path).unwrap();
        s.write_conversation("c", &["Alice".into()], &[]).unwrap();
        for (i, ep) in ["e1", "e2", "e3"].iter().enumerate() {
            let turns = vec![Turn { id: format!("{ep}t"), speaker: "Alice".into(), text: "x".into() }];
            s.write_evidence(
                "c",
                i,
                &Episode { id: ep.to_string(), timestamp: Some(format!("2024-0{}-01", i + 1)), turns, observations: vec![] },
            )
            .unwrap();
        }
        s
    }

    fn write(s: &Store, p: &WritePlan) {
        s.write_episode(p, WriteMode::Full, |tx| policy::apply(tx, p, WriteMode::Full, 0.7)).unwrap();
    }

    fn params(alpha: f64) -> SearchParams {
        SearchParams { alpha, min_score: 0.0, top_k: 10, leg_k: 20, as_of: None }
    }

    #[test]
    fn the_store_file_has_a_real_fts5_index() {
        let dir = tempfile::tempdir().unwrap();
        let s = store_at(&dir.path().join("s.sqlite"));
        let (sql, fts5): (String, i64) = s
            .with(|c| {
                let sql = c.query_row("SELECT sql FROM sqlite_master WHERE name = 'facts_fts'", [], |r| r.get(0))?;
                let fts5 = c.query_row("SELECT sqlite_compileoption_used('ENABLE_FTS5')", [], |r| r.get(0))?;
                Ok((sql, fts5))
            })
            .unwrap();
        assert!(sql.contains("USING fts5("), "{sql}");
        assert_eq!(fts5, 1);
    }

    #[test]
    fn bm25_terms_are_anded() {
        let dir = tempfile::tempdir().unwrap();
        let s = store_at(&dir.path().join("s.sqlite"));
        write(
            &s,
            &plan(
                "e1",
                "2024-01-01",
                vec![
                    insert(fact("f1", "Alice likes green tea", vec![])),
                    insert(fact("f2", "Alice likes black tea", vec![])),
                    insert(fact("f3", "Alice drinks green smoothies", vec![])),
                ],
            ),
        );
        assert_eq!(ids(&s.search("c", "green tea", &[], &params(0.7)).unwrap()), vec!["f1"]);
        let tea = s.search("c", "TEA!", &[], &params(0.7)).unwrap();
        assert_eq!(tea.len(), 2, "{tea:?}");
        assert!(tea.iter().all(|h| h.vector.is_none() && h.bm25.is_some_and(|b| b > 0.0 && b < 1.0)));
        assert!(s.search("c", "green coffee", &[], &params(0.7)).unwrap().is_empty());
        assert!(s.search("c", "?!", &[], &params(0.7)).unwrap().is_empty());
        assert!(s.search("other", "tea", &[], &params(0.7)).unwrap().is_empty(), "another conversation's facts are not searched");
    }

    #[test]
    fn the_vector_leg_ranks_by_cosine_and_alpha_one_follows_it() {
        let dir = tempfile::tempdir().unwrap();
        let s = store_at(&dir.path().join("s.sqlite"));
        write(
            &s,
            &plan(
                "e1",
                "2024-01-01",
                vec![
                    insert(fact("f1", "Alice likes green tea", vec![1.0, 0.0, 0.0])),
                    insert(fact("f2", "Alice likes black tea", vec![0.6, 0.8, 0.0])),
                    insert(fact("f3", "Alice rides horses", vec![0.0, 0.0, 1.0])),
                ],
            ),
        );
        let q = [0.0f32, 1.0, 0.0];
        let only_vec = s.search("c", "", &q, &params(0.7)).unwrap();
        assert_eq!(ids(&only_vec), vec!["f2"], "f1 and f3 are orthogonal: cosine 0 is no score");
        assert!((only_vec[0].score - 0.8).abs() < 1e-6);
        // Both legs: alpha 1 ranks by the vector, alpha 0 by BM25.
        let q = [0.6f32, 0.8, 0.0];
        let by_vec = s.search("c", "green tea", &q, &params(1.0)).unwrap();
        assert_eq!(ids(&by_vec), vec!["f2", "f1"]);
        let by_bm25 = s.search("c", "green tea", &q, &params(0.0)).unwrap();
        let f1 = by_bm25.iter().find(|h| h.fact_id == "f1").unwrap();
        assert_eq!((f1.score, f1.vector.is_some()), (f1.bm25.unwrap(), true), "alpha 0: both legs scored, BM25's score");
    }

    #[test]
    fn invalidated_facts_are_never_returned_but_are_as_of_before() {
        let dir = tempfile::tempdir().unwrap();
        let s = store_at(&dir.path().join("s.sqlite"));
        let v = vec![1.0f32, 0.0];
        write(&s, &plan("e1", "2024-01-01", vec![insert(fact("f1", "Alice works at Google", v.clone()))]));
        let replace =
            Proposal { candidate_id: "f2".into(), action: Action::Invalidate { target: "f1".into(), by: "f2".into(), cascade: vec![] } };
        write(&s, &plan("e2", "2024-02-01", vec![replace, insert(fact("f2", "Alice works at Anthropic", vec![0.9, 0.1]))]));
        // Now (both legs, then each alone): only the new fact.
        for (text, q) in [("Alice works at", &v[..]), ("Alice works at", &[][..]), ("", &v[..])] {
            let found = s.search("c", text, q, &params(0.7)).unwrap();
            assert_eq!(ids(&found), vec!["f2"], "{text:?} {q:?}");
        }
        assert!(s.search("c", "google", &v, &params(0.7)).unwrap().iter().all(|h| h.fact_id != "f1"));
        // As of a time before the change: the old fact only; after it: the new one only.
        let at = |t: &str| SearchParams { as_of: Some(t.into()), ..params(0.7) };
        assert_eq!(ids(&s.search("c", "Alice works at", &v, &at("2024-01-15")).unwrap()), vec!["f1"]);
        assert_eq!(ids(&s.search("c", "Alice works at", &v, &at("2024-02-01")).unwrap()), vec!["f2"]);
        assert_eq!(ids(&s.search("c", "Alice works at", &v, &at("2023-12-31")).unwrap()), Vec::<&str>::new());
        // A searcher of the conversation finds the same, now and at each instant.
        let searcher = s.searcher("c").unwrap();
        for text in ["Alice works at", "google", "anthropic", ""] {
            for q in [&v[..], &[][..], &[0.0, 1.0][..]] {
                for p in [params(0.7), params(1.0), at("2024-01-15"), at("2024-02-01"), at("2023-12-31")] {
                    assert_eq!(searcher.search(text, q, &p).unwrap(), s.search("c", text, q, &p).unwrap(), "{text:?} {q:?} {p:?}");
                }
            }
        }
        // It is a snapshot: a later write is not seen by it, and is by the store's search.
        let replace =
            Proposal { candidate_id: "f3".into(), action: Action::Invalidate { target: "f2".into(), by: "f3".into(), cascade: vec![] } };
        write(&s, &plan("e3", "2024-03-01", vec![replace, insert(fact("f3", "Alice works at Acme", vec![1.0, 0.0]))]));
        assert_eq!(ids(&searcher.search("Alice works at", &v, &params(0.7)).unwrap()), vec!["f2"]);
        assert_eq!(ids(&s.search("c", "Alice works at", &v, &params(0.7)).unwrap()), vec!["f3"]);
        assert_eq!(ids(&s.searcher("c").unwrap().search("Alice works at", &v, &params(0.7)).unwrap()), vec!["f3"]);
    }

    #[test]
    fn the_embeddings_row_is_written_in_its_facts_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let s = store_at(&dir.path().join("s.sqlite"));
        let count = |s: &Store| -> (i64, i64) {
            s.with(|c| {
                let f = c.query_row("SELECT COUNT(*) FROM facts", [], |r| r.get(0))?;
                let e = c.query_row("SELECT COUNT(*) FROM embeddings", [], |r| r.get(0))?;
                Ok((f, e))
            })
            .unwrap()
        };
        // A write that fails after inserting rolls back the fact and its vector together.
        let p = plan("e1", "2024-01-01", vec![insert(fact("f1", "Alice likes tea", vec![0.5, -0.25]))]);
        let err = s.write_episode(&p, WriteMode::Full, |tx| {
            policy::apply(tx, &p, WriteMode::Full, 0.7)?;
            Err(crate::error::Error::Other("injected failure".into()))
        });
        assert!(err.is_err());
        assert_eq!(count(&s), (0, 0));
        write(&s, &p);
        assert_eq!(count(&s), (1, 1));
        let (dims, blob): (i64, Vec<u8>) = s
            .with(|c| c.query_row("SELECT dims, vector FROM embeddings WHERE fact_id = 'f1'", [], |r| Ok((r.get(0)?, r.get(1)?))))
            .unwrap();
        assert_eq!((dims, blob_to_vector(&blob)), (2, vec![0.5, -0.25]));
        assert_eq!(blob, [0.5f32.to_le_bytes(), (-0.25f32).to_le_bytes()].concat());
        // A fact without a vector gets no row.
        write(&s, &plan("e2", "2024-02-01", vec![insert(fact("f2", "Alice likes coffee", vec![]))]));
        assert_eq!(count(&s), (2, 1));
    }

    #[test]
    fn vectors_written_after_a_search_are_seen_by_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let s = store_at(&dir.path().join("s.sqlite"));
        write(&s, &plan("e1", "2024-01-01", vec![insert(fact("f1", "Alice likes tea", vec![1.0, 0.0]))]));
        assert_eq!(ids(&s.search("c", "", &[0.0, 1.0], &params(0.7)).unwrap()), Vec::<&str>::new());
        write(&s, &plan("e2", "2024-02-01", vec![insert(fact("f2", "Alice likes coffee", vec![0.0, 1.0]))]));
        assert_eq!(ids(&s.search("c", "", &[0.0, 1.0], &params(0.7)).unwrap()), vec!["f2"]);
        // A query of another dimension scores nothing.
        assert!(s.search("c", "", &[0.0, 1.0, 0.0], &params(0.7)).unwrap().is_empty());
    }

    #[test]
    fn both_legs_together_find_what_each_finds_alone() {
        let dir = tempfile::tempdir().unwrap();
        let s = store_at(&dir.path().join("s.sqlite"));
        let words = ["tea", "chess", "jazz", "yoga", "golf", "sushi", "piano", "rowing"];
        let n = 300;
        let facts: Vec<Proposal> = (0..n)
            .map(|i| {
                let text = format!("Alice likes {} and {} number {i}", words[i % 8], words[(i / 8) % 8]);
                let v = vec![(i % 7) as f32, (i % 11) as f32, 1.0, (i % 3) as f32];
                insert(fact(&format!("f{i:05}"), &text, v))
            })
            .collect();
        write(&s, &plan("e1", "2024-01-01", facts));
        let p = SearchParams { alpha: 0.7, min_score: 0.0, top_k: 30, leg_k: 30, as_of: None };
        let q = [3.0f32, 5.0, 1.0, 1.0];
        let both = s.search("c", "chess", &q, &p).unwrap();
        let bm25: Vec<(String, f64)> = s.search("c", "chess", &[], &p).unwrap().into_iter().map(|h| (h.fact_id, h.score)).collect();
        let vector: Vec<(String, f64)> = s.search("c", "", &q, &p).unwrap().into_iter().map(|h| (h.fact_id, h.score)).collect();
        assert_eq!(bm25.len(), 30);
        assert_eq!(vector.len(), 30);
        assert_eq!(both, merge(&bm25, &vector, 0.7, 0.0, 30));
    }

    /// A store whose FTS5 index is deferred and filled per conversation
    /// (then resumed) searches as one indexed by the triggers, and ends with
    /// the same index; its triggers are back (a later write is indexed).
    #[test]
    fn a_deferred_index_searches_as_the_triggers_index() {
        let texts = |c: &str| -> Vec<(String, String)> {
            (0..40).map(|i| (format!("{c}{i:03}"), format!("{} plays chess {} and likes tea {}", c, i % 5, i % 3))).collect()
        };
        let plain = Store::in_memory().unwrap();
        let deferred = Store::in_memory().unwrap();
        deferred.defer_search_index().unwrap();
        for s in [&plain, &deferred] {
            documents(s, "a", &texts("a"));
            documents(s, "b", &texts("b"));
        }
        let p = SearchParams { alpha: 0.0, min_score: 0.0, top_k: 10, leg_k: 10, as_of: None };
        deferred.index_conversation("a").unwrap();
        assert_eq!(deferred.search("a", "chess tea", &[], &p).unwrap(), plain.search("a", "chess tea", &[], &p).unwrap());
        deferred.resume_search_index().unwrap();
        for s in [&plain, &deferred] {
            documents(s, "b", &[("late".into(), "b plays chess late".into())]);
        }
        for (c, q) in [("a", "chess 3"), ("b", "tea 1"), ("b", "late")] {
            let hits = plain.search(c, q, &[], &p).unwrap();
            assert!(!hits.is_empty(), "{c} {q}");
            assert_eq!(deferred.search(c, q, &[], &p).unwrap(), hits, "{c} {q}");
        }
        let fts = |s: &Store| -> Vec<(i64, Vec<u8>)> {
            s.with(|c| {
                c.prepare("SELECT id, sz FROM facts_fts_docsize ORDER BY id")?.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect()
            })
            .unwrap()
        };
        assert_eq!(fts(&deferred), fts(&plain));
        let integrity =
            |s: &Store| s.with(|c| c.execute("INSERT INTO facts_fts(facts_fts, rank) VALUES ('integrity-check', 1)", [])).is_ok();
        assert!(integrity(&deferred));
    }

    fn documents(s: &Store, conversation: &str, texts: &[(String, String)]) {
        let docs: Vec<Document<'_>> = texts
            .iter()
            .map(|(id, text)| Document { id, episode: "e1", text, turns: &[], vector: &[], written_at: None, ended_at: None })
            .collect();
        s.insert_documents(conversation, &docs).unwrap();
    }

    /// The scores as first computed: each slot's cosine from [`dot`] over
    /// its whole vector (the reference the blocked scoring must equal, bit for bit).
    fn scores_by_dot(vectors: &[(String, Vec<f32>)], q: &[f32]) -> Vec<f32> {
        let mut last: Vec<(String, Vec<f32>)> = Vec::new();
        for (id, v) in vectors {
            match last.iter_mut().find(|(i, _)| i == id) {
                Some(slot) => slot.1 = v.clone(),
                None => last.push((id.clone(), v.clone())),
            }
        }
        let qn = q.iter().map(|x| x * x).sum::<f32>().sqrt();
        last.iter()
            .map(|(_, v)| {
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                if v.len() != q.len() || qn == 0.0 || n == 0.0 { 0.0 } else { (dot(q, v) / (qn * n)).clamp(0.0, 1.0) }
            })
            .collect()
    }

    #[test]
    fn blocked_scores_are_the_dot_products_bit_for_bit() {
        let e = crate::embed::hashed::HashedEmbedder::new(256);
        let texts: Vec<String> = (0..70).map(|i| format!("fact {i} on topic {} with word{}", i % 7, i % 11)).collect();
        // Hashed vectors (mostly zeros), dense ones, a width that is not a
        // multiple of eight, vectors of another width, a non-finite value,
        // a zero vector, and slots rewritten.
        let dense = |seed: usize, n: usize| (0..n).map(|d| ((seed * 31 + d * 17) as f32 * 0.37).sin()).collect::<Vec<f32>>();
        for width in [256usize, 13, 8, 5] {
            let mut vectors: Vec<(String, Vec<f32>)> = Vec::new();
            for (i, t) in texts.iter().enumerate() {
                let v = if width == 256 && i % 3 != 0 { e.embed_one(t) } else { dense(i, width) };
                vectors.push((format!("f{i:02}"), v));
            }
            vectors.push(("odd-width".into(), dense(1, width + 3)));
            vectors.push(("zero".into(), vec![0.0; width]));
            let mut nan = dense(2, width);
            nan[width / 2] = f32::NAN;
            vectors.push(("nan".into(), nan));
            let mut inf = dense(3, width);
            inf[0] = f32::INFINITY;
            vectors.push(("inf".into(), inf));
            vectors.push(("f03".into(), dense(99, width)));
            vectors.push(("f05".into(), dense(98, width + 1)));
            vectors.push(("nan".into(), dense(97, width)));
            vectors.push(("f07".into(), vec![0.0; width]));
            let mut cv = ConvVectors::default();
            for (id, v) in &vectors {
                cv.put(id.clone(), v);
            }
            let mut queries: Vec<Vec<f32>> = vec![dense(5, width), vec![0.0; width], dense(6, width + 3), dense(7, width + 1)];
            if width == 256 {
                queries.extend(["what topic was fact 12 on", "word3", ""].iter().map(|t| e.embed_one(t)));
            }
            let mut sparse = dense(8, width);
            for (d, x) in sparse.iter_mut().enumerate() {
                if d % 3 != 1 {
                    *x = if d % 2 == 0 { 0.0 } else { -0.0 };
                }
            }
            queries.push(sparse);
            let mut neg = dense(9, width);
            neg.iter_mut().for_each(|x| *x = -*x);
            queries.push(neg);
            for q in &queries {
                let got: Vec<u32> = cv.scores(q).iter().map(|x| x.to_bits()).collect();
                let want: Vec<u32> = scores_by_dot(&vectors, q).iter().map(|x| x.to_bits()).collect();
                assert_eq!(got, want, "width {width}, query of {} dims", q.len());
            }
        }
    }

    #[test]
    fn a_document_index_searches_as_the_store_does() {
        let mut texts = owned(A);
        texts.extend((0..60).map(|i| (format!("x{i:03}"), format!("Alice: tea {} time {} snake_case", "very ".repeat(i % 7), i % 5))));
        texts.extend(owned(&[("y1", "Bob: the Café Noël 🎉 — don’t"), ("y2", "Alice: naïve ÉCOLE tea")]));
        let vectors: Vec<Vec<f32>> =
            (0..texts.len()).map(|i| vec![(i % 7) as f32, (i % 3) as f32 - 1.0, if i % 11 == 0 { 0.0 } else { 1.0 }]).collect();
        let dates: Vec<Option<String>> =
            (0..texts.len()).map(|i| if i % 13 == 5 { None } else { Some(format!("2024-0{}-01", 1 + i % 9)) }).collect();
        let docs = episode_documents(&texts, &vectors, &dates);
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.sqlite")).unwrap();
        s.insert_documents("c", &docs).unwrap();
        let index = DocumentIndex::build(&docs).unwrap();
        assert_eq!(index.len(), texts.len());
        let searcher = s.searcher("c").unwrap();
        let mut compared = 0;
        for q in ["tea", "alice tea", "very time", "snake_case", "cafe", "NAÏVE", "zzz", "_", ""] {
            for v in [vec![], vec![1.0f32, 0.0, 0.0], vec![0.2, -1.0, 0.5], vec![1.0, 0.0]] {
                for as_of in [None, Some("2024-03-15".to_string()), Some("2024-12-31".to_string()), Some("2023-01-01".to_string())] {
                    for alpha in [0.0, 0.3, 1.0] {
                        let p = SearchParams { as_of: as_of.clone(), min_score: 0.05, ..params(alpha) };
                        let ours = index.search(q, &v, &p).unwrap();
                        assert_eq!(ours, s.search("c", q, &v, &p).unwrap(), "{q:?} {v:?} {as_of:?} {alpha}");
                        assert_eq!(ours, searcher.search(q, &v, &p).unwrap(), "{q:?} {v:?} {as_of:?} {alpha}");
                        compared += usize::from(!ours.is_empty());
                    }
                }
            }
        }
        assert!(compared > 100, "most searches find something: {compared}");
    }

    /// The search as first written: both legs fetched to `leg_k` and merged
    /// whatever the keyword leg found (the definition the shortcut of
    /// [`hybrid_with`] must agree with).
    fn search_by_merge(index: &DocumentIndex, retriever: Retriever, q: &str, v: &[f32], p: &SearchParams) -> Vec<SearchHit> {
        let text = index.text_at(&p.as_of);
        let leg_k = p.leg_k.max(p.top_k);
        let bm25 = match retriever {
            Retriever::And => bm25_leg(&text, &with_tokens(&index.tokens, |t| query_phrases(t, q)).unwrap(), leg_k),
            Retriever::Or => bm25_or_leg(&text, &with_tokens(&index.tokens, |t| query_phrases_any(t, q)).unwrap(), leg_k),
            Retriever::Vector => Vec::new(),
        };
        let vector = if v.is_empty() {
            Vec::new()
        } else {
            first_live(&index.vectors, index.vectors.ranked(v, leg_k), leg_k, |s| index.held(s, &p.as_of))
        };
        merge(&bm25, &vector, p.alpha, p.min_score, p.top_k)
    }

    /// When the keyword leg scores nothing, the search asks the vector leg
    /// for `top_k` only and cuts it at `min_score`: the same hits, scores
    /// and legs as merging the whole of both legs, for every retriever,
    /// depth, leg factor, threshold and instant (ties included).
    #[test]
    fn the_vector_only_shortcut_gives_the_merges_hits() {
        // A small linear congruential generator: `below(n)` in 0..n.
        let mut state = 7u64;
        let mut below = move |n: u64| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % n
        };
        let words = ["tea", "alice", "porto", "may", "cat", "bob", "moved", "sunday"];
        let texts: Vec<(String, String)> = (0..120)
            .map(|i| {
                let n = 1 + below(6) as usize;
                (format!("d{i:03}"), (0..n).map(|_| words[below(words.len() as u64) as usize]).collect::<Vec<_>>().join(" "))
            })
            .collect();
        // Few distinct vectors: many tied scores.
        let vectors: Vec<Vec<f32>> = (0..texts.len()).map(|_| (0..4).map(|_| below(3) as f32 - 0.5).collect()).collect();
        let dates: Vec<Option<String>> = (0..texts.len()).map(|i| Some(format!("2024-0{}-01", 1 + i % 9))).collect();
        let docs = episode_documents(&texts, &vectors, &dates);
        let index = DocumentIndex::build(&docs).unwrap();
        let (mut shortcut, mut merged) = (0, 0);
        for q in ["tea", "porto may", "alice tea cat", "zzz", ""] {
            for v in [vec![], vec![1.0f32, 0.5, -0.5, 0.0], vec![0.5, 0.5, 0.5, 0.5]] {
                for retriever in [Retriever::And, Retriever::Or, Retriever::Vector] {
                    for (top_k, leg_k) in [(1, 2), (5, 10), (10, 20), (37, 111), (200, 400), (10, 10)] {
                        for min_score in [0.0, 0.1, 0.4] {
                            for as_of in [None, Some("2024-04-15".to_string())] {
                                let p = SearchParams { alpha: 0.7, min_score, top_k, leg_k, as_of };
                                let want = search_by_merge(&index, retriever, q, &v, &p);
                                assert_eq!(index.search_with(retriever, q, &v, &p).unwrap(), want, "{q:?} {v:?} {retriever:?} {p:?}");
                                if want.iter().any(|h| h.bm25.is_some()) {
                                    merged += 1;
                                } else if !want.is_empty() {
                                    shortcut += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(shortcut > 100 && merged > 100, "both paths exercised: {shortcut} vector only, {merged} merged");
    }

    /// The index's vector leg ranks by one integer per slot (the cosine's
    /// bits, then the id's place): the same slots, scores and order as the
    /// ranking by cosine then id, with ids out of slot order, many ties,
    /// vectors of another width or zero, and any depth or live set.
    #[test]
    fn the_vector_legs_integer_order_is_the_rankings() {
        let texts: Vec<(String, String)> = (0..150).map(|i| (format!("d{}", (i * 37) % 151), format!("text {i}"))).collect();
        let vectors: Vec<Vec<f32>> = (0..texts.len())
            .map(|i| match i % 23 {
                0 => vec![0.0; 4],
                1 => vec![1.0, 1.0],
                _ => vec![(i % 3) as f32 - 0.5, (i % 4) as f32, 0.5, if i % 5 == 0 { -1.0 } else { 0.25 }],
            })
            .collect();
        let dates: Vec<Option<String>> = (0..texts.len()).map(|_| None).collect();
        let docs = episode_documents(&texts, &vectors, &dates);
        let index = DocumentIndex::build(&docs).unwrap();
        for q in [vec![1.0f32, 0.5, -0.5, 0.0], vec![0.5, 0.5, 0.5, 0.5], vec![0.0, 1.0, 0.0, 0.0], vec![1.0, 1.0], vec![0.0; 4]] {
            for k in [0, 1, 2, 7, 40, 149, 150, 400] {
                for live in [0usize, 2, 3] {
                    let live = |s: usize| live == 0 || !s.is_multiple_of(live);
                    let want = first_live_slots(&index.vectors, index.vectors.ranked(&q, k), k, live);
                    assert_eq!(index.first_live_by_vector(&q, k, live), want, "{q:?} {k}");
                }
            }
        }
    }

    /// A document's tokens by their texts (for comparing indexes whose
    /// interners number them differently).
    fn token_texts(index: &DocumentIndex, slot: usize) -> Vec<String> {
        let guard = index.tokens.lock().unwrap();
        let names = guard.as_ref().unwrap().names();
        index.seqs[slot].iter().map(|id| names[id].to_string()).collect()
    }

    /// Sessions made of their turns (a date header, then each turn's text
    /// after the date, a line each), and a subset of the turns (no header),
    /// indexed from the turns' tokens: the same token sequences and the
    /// same hits as indexing their texts afresh, with line ends that
    /// punctuation, case folding (a final sigma), diacritics or other
    /// scripts could join, and a line document whose tokens do not start
    /// with the header's (tokenised afresh).
    #[test]
    fn documents_joined_from_others_tokens_are_indexed_as_their_texts() {
        let lines = [
            "Alice: I moved to Porto. Really!",
            "Bob: ΟΔΟΣ",
            "Σ Alice: ΑΣ. naïve ÉCOLE, don’t",
            "Bob: \u{301}combining and İstanbul 42x snake_case?",
            "Alice: 🎉 — ’ ...",
            "Bob: tea; tea: TEA",
            "Alice: last words:",
        ];
        let dates = ["[8 May 2023]", "[9 May 2023]"];
        // Turns: each line after its session's date (lines 0..4 in the
        // first session, 4.. in the second), and one undated turn.
        let mut turns: Vec<(String, String)> =
            lines.iter().enumerate().map(|(i, l)| (format!("t{}", 9 - i), format!("{} {l}", dates[usize::from(i >= 4)]))).collect();
        turns.push(("u1".into(), "Carol: ΟΔΟΣ. tea".into()));
        let vectors: Vec<Vec<f32>> = (0..turns.len()).map(|i| vec![1.0, (i % 3) as f32]).collect();
        let at: Vec<Option<String>> = (0..turns.len()).map(|i| Some(format!("2023-05-0{}", 1 + i % 3))).collect();
        let base = DocumentIndex::build(&episode_documents(&turns, &vectors, &at)).unwrap();
        let sessions = owned(&[
            ("s1", &format!("{}\n{}", dates[0], lines[..4].join("\n"))),
            ("s2", &format!("{}\n{}", dates[1], lines[4..].join("\n"))),
            ("s3", &format!("{}\nCarol: ΟΔΟΣ. tea", dates[0])),
            ("s4", dates[1]),
        ]);
        let (s1, s2, s3): (Vec<usize>, Vec<usize>, Vec<usize>) = ((0..4).collect(), (4..7).collect(), vec![7]);
        let joined = [
            Joined { header: dates[0], lines: &s1 },
            Joined { header: dates[1], lines: &s2 },
            Joined { header: dates[0], lines: &s3 },
            Joined { header: dates[1], lines: &[] },
        ];
        let subset: Vec<usize> = vec![1, 2, 5, 7];
        let picked: Vec<(String, String)> = subset.iter().map(|&i| turns[i].clone()).collect();
        let picked_joined: Vec<Joined<'_>> = subset.iter().map(|i| Joined { header: "", lines: std::slice::from_ref(i) }).collect();
        let (sv, sa): (Vec<Vec<f32>>, Vec<Option<String>>) = (vec![vec![1.0, 0.0]; 4], vec![Some("2023-05-02".into()); 4]);
        let (pv, pa): (Vec<Vec<f32>>, Vec<Option<String>>) =
            (subset.iter().map(|&i| vectors[i].clone()).collect(), subset.iter().map(|&i| at[i].clone()).collect());
        for (texts, vs, ats, joined) in [(&sessions, &sv, &sa, &joined[..]), (&picked, &pv, &pa, &picked_joined[..])] {
            let docs = episode_documents(texts, vs, ats);
            let fresh = DocumentIndex::build(&docs).unwrap();
            let made = DocumentIndex::build_joined(&base, &docs, joined).unwrap();
            for (slot, (_, text)) in texts.iter().enumerate() {
                assert_eq!(token_texts(&made, slot), token_texts(&fresh, slot), "{text}");
            }
            for q in ["tea", "alice porto", "οδος", "ΑΣ", "naive ecole", "istanbul", "may 2023", "words", "zzz tea", ""] {
                for v in [vec![], vec![1.0f32, 0.5]] {
                    for retriever in [Retriever::And, Retriever::Or, Retriever::Vector] {
                        for as_of in [None, Some("2023-05-02".to_string())] {
                            let p = SearchParams { as_of, min_score: 0.0, ..params(0.5) };
                            let want = fresh.search_with(retriever, q, &v, &p).unwrap();
                            assert_eq!(made.search_with(retriever, q, &v, &p).unwrap(), want, "{q:?} {v:?} {retriever:?}");
                        }
                    }
                }
            }
        }
    }

    /// The keyword legs' cut: a selection then a sort of the first `k`
    /// equals a sort of all cut at `k` (scores tied, ids distinct).
    #[test]
    fn best_first_is_the_sorted_prefix() {
        let ids: Vec<String> = (0..50).map(|i| format!("d{}", (i * 37) % 50)).collect();
        let all: Vec<(&str, f64)> = ids.iter().enumerate().map(|(i, id)| (id.as_str(), f64::from((i % 7) as u8) * 0.5)).collect();
        let order = |a: &(&str, f64), b: &(&str, f64)| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0));
        for k in [0, 1, 3, 7, 49, 50, 80] {
            let mut want = all.clone();
            want.sort_by(order);
            want.truncate(k);
            let mut got = all.clone();
            best_first(&mut got, k, order);
            assert_eq!(got, want, "k = {k}");
        }
    }

    /// The QA retrievers: `or` matches any term (the best scaled to 1, a
    /// shorter document holding the term above a longer one), `and` every
    /// term, `vector` none by keyword.
    #[test]
    fn the_retrievers_keyword_legs() {
        let texts = owned(&[("d1", "apple banana"), ("d2", "apple"), ("d3", "cherry"), ("d4", "banana cherry plum")]);
        let docs: Vec<Document<'_>> = texts
            .iter()
            .map(|(id, text)| Document { id, episode: "e1", text, turns: &[], vector: &[], written_at: None, ended_at: None })
            .collect();
        let index = DocumentIndex::build(&docs).unwrap();
        let p = SearchParams { min_score: 0.0, ..params(0.7) };
        let ids = |hits: Vec<SearchHit>| hits.iter().map(|h| h.fact_id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(index.search_with(Retriever::And, "banana cherry", &[], &p).unwrap()), ["d4"]);
        let or = index.search_with(Retriever::Or, "banana cherry zzz", &[], &p).unwrap();
        assert_eq!(ids(or.clone()), ["d4", "d3", "d1"], "both terms first, then the shorter single match");
        assert_eq!(or[0].score, 1.0);
        assert!(or[1].score < 1.0 && or[2].score < or[1].score, "{or:?}");
        assert!(index.search_with(Retriever::Vector, "banana cherry", &[], &p).unwrap().is_empty());
        assert!(index.search_with(Retriever::Or, "zzz", &[], &p).unwrap().is_empty());
    }

    /// A document's end: ended without a clock is held by no search; ended
    /// at an instant is held now by none and at an instant only before it.
    #[test]
    fn an_ended_document_is_held_only_before_its_end() {
        let texts = owned(&[("d1", "tea"), ("d2", "tea"), ("d3", "tea")]);
        let ends = [None, Some(""), Some("2024-06-01")];
        let docs: Vec<Document<'_>> = texts
            .iter()
            .zip(ends)
            .map(|((id, text), end)| Document {
                id,
                episode: "e1",
                text,
                turns: &[],
                vector: &[],
                written_at: Some("2024-01-01"),
                ended_at: end,
            })
            .collect();
        let index = DocumentIndex::build(&docs).unwrap();
        let at = |as_of: Option<&str>| {
            let p = SearchParams { as_of: as_of.map(String::from), min_score: 0.0, ..params(0.7) };
            let mut ids: Vec<String> = index.search("tea", &[], &p).unwrap().into_iter().map(|h| h.fact_id).collect();
            ids.sort();
            ids
        };
        assert_eq!(at(None), ["d1"]);
        assert_eq!(at(Some("2024-03-01")), ["d1", "d3"]);
        assert_eq!(at(Some("2024-06-01")), ["d1"], "ended at that instant");
        assert_eq!(at(Some("2023-12-31")), Vec::<String>::new(), "not yet written");
    }

    fn owned(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(i, t)| (i.to_string(), t.to_string())).collect()
    }

    const A: &[(&str, &str)] = &[
        ("a1", "Alice likes green tea"),
        ("a2", "Alice likes tea and cake, tea every day"),
        ("a3", "Bob plays chess in the café"),
        ("a4", "Tea"),
        ("a5", "Alice drinks green smoothies at the cafe near the station"),
    ];

    #[test]
    fn bm25_scores_depend_only_on_the_conversations_own_facts() {
        let b: Vec<(String, String)> = (0..200).map(|i| (format!("b{i:04}"), format!("green tea with alice number {i}"))).collect();
        let (b1, b2) = b.split_at(120);
        let queries = ["tea", "green tea", "alice", "cafe", "alice likes tea"];
        let run = |layout: &[&[(String, String)]], conv: &[&str]| -> Vec<Vec<SearchHit>> {
            let dir = tempfile::tempdir().unwrap();
            let s = Store::open(&dir.path().join("s.sqlite")).unwrap();
            for (texts, c) in layout.iter().zip(conv) {
                documents(&s, c, texts);
            }
            queries.iter().map(|q| s.search("a", q, &[], &params(0.0)).unwrap()).collect()
        };
        let a = owned(A);
        let alone = run(&[&a], &["a"]);
        assert!(alone.iter().all(|h| !h.is_empty()), "{alone:?}");
        assert_eq!(run(&[b1, &a, b2], &["b", "a", "b"]), alone, "B's facts written around A's");
        assert_eq!(run(&[&b, &a], &["b", "a"]), alone, "B's facts written before A's");
        assert_eq!(run(&[&a, &b], &["a", "b"]), alone, "B's facts written after A's");
        let (a1, a2) = a.split_at(2);
        assert_eq!(run(&[a2, b1, a1, b2], &["a", "b", "a", "b"]), alone, "A's facts in another order");
    }

    #[test]
    fn bm25_in_rust_is_fts5s_bm25_over_one_conversation() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.sqlite")).unwrap();
        let mut texts = owned(A);
        texts.extend((0..40).map(|i| (format!("x{i:03}"), format!("tea {} time {}", "very ".repeat(i % 7), i % 3))));
        texts.extend(owned(&[
            ("y1", "snake_case and snake case, snake_case again"),
            ("y2", "tea tea tea at the Café Noël 🎉 — don’t"),
            ("y3", "naïve ÉCOLE coöperate"),
        ]));
        documents(&s, "a", &texts);
        for q in [
            "tea",
            "green tea",
            "tea tea",
            "Café",
            "cafe",
            "alice likes",
            "time very tea",
            "TIME 2 very",
            "snake_case",
            "snake_case snake",
            "tea _",
            "_",
            "noel",
            "NAÏVE école",
            "don t",
            "🎉 tea",
            "nothing here",
        ] {
            let (ours, fts5) = s
                .with(|c| {
                    let ours = cached_bm25(&s, c, "a", q, 1000, &None)?;
                    if !q.contains('_') {
                        // (the oracle MATCHes each term alone: a term with no token matches nothing there)
                        assert_eq!(ours, bm25_raw_uncached(c, "a", q, 1000, &None)?, "{q}");
                    }
                    let mut st = c.prepare(
                        "SELECT f.id, bm25(facts_fts) AS raw FROM facts_fts CROSS JOIN facts f ON f.rowid = facts_fts.rowid
                         WHERE facts_fts MATCH ?1 ORDER BY raw, f.id",
                    )?;
                    let fts5 = match fts_match_query(q) {
                        Some(m) => st
                            .query_map([m], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?)))?
                            .collect::<rusqlite::Result<Vec<_>>>()?,
                        None => Vec::new(),
                    };
                    Ok((ours, fts5))
                })
                .unwrap();
            assert_eq!(ours.iter().map(|h| &h.0).collect::<Vec<_>>(), fts5.iter().map(|h| &h.0).collect::<Vec<_>>(), "{q}");
            for ((id, x), (_, y)) in ours.iter().zip(&fts5) {
                assert!((x - y).abs() < 1e-9, "{q} {id}: {x} vs FTS5 {y}");
            }
        }
    }

    /// The BM25 leg's raw scores through the store's cache.
    fn cached_bm25(
        s: &Store,
        c: &Connection,
        conv: &str,
        text: &str,
        k: usize,
        as_of: &Option<String>,
    ) -> rusqlite::Result<Vec<(String, f64)>> {
        let live = s.live.get(c, conv, as_of)?;
        Ok(bm25_raw(&live.text, &s.live.phrases(text)?, k).into_iter().map(|(id, s)| (id.to_string(), s)).collect())
    }

    /// The cached search against the uncached oracle and against a store
    /// opened afresh (empty caches), for every query, now and at instants.
    fn assert_matches_uncached(s: &Store, path: &std::path::Path, why: &str) {
        let fresh = Store::open(path).unwrap();
        let queries = ["alice", "tea", "green tea", "alice works at", "coffee", "likes", "zzz"];
        let q = [1.0f32, 0.5, 0.0];
        for as_of in [None, Some("2024-01-15".to_string()), Some("2024-02-15".to_string()), Some("2024-12-31".to_string())] {
            let p = SearchParams { as_of: as_of.clone(), ..params(0.7) };
            for text in queries {
                let cached = s.search("c", text, &q, &p).unwrap();
                assert_eq!(cached, fresh.search("c", text, &q, &p).unwrap(), "{why}: {text:?} as of {as_of:?}");
                let (ours, oracle) =
                    s.with(|c| Ok((cached_bm25(s, c, "c", text, 20, &as_of)?, bm25_raw_uncached(c, "c", text, 20, &as_of)?))).unwrap();
                assert_eq!(ours, oracle, "{why}: {text:?} as of {as_of:?}");
            }
        }
    }

    #[test]
    fn the_cache_follows_every_write_between_searches() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sqlite");
        let s = store_at(&path);
        assert_matches_uncached(&s, &path, "empty");
        write(
            &s,
            &plan(
                "e1",
                "2024-01-01",
                vec![
                    insert(fact("f1", "Alice works at Google", vec![1.0, 0.0, 0.0])),
                    insert(fact("f2", "Alice likes green tea", vec![0.5, 0.5, 0.0])),
                    insert(fact("f3", "Bob likes coffee", vec![0.0, 1.0, 0.0])),
                ],
            ),
        );
        assert_matches_uncached(&s, &path, "after the first insert");
        // A second search of the same query hits the cache: same answer.
        let before = s.search("c", "alice works at", &[1.0, 0.0, 0.0], &params(0.7)).unwrap();
        assert_eq!(before, s.search("c", "alice works at", &[1.0, 0.0, 0.0], &params(0.7)).unwrap());
        assert_eq!(before[0].fact_id, "f1", "{before:?}");
        let replace =
            Proposal { candidate_id: "f4".into(), action: Action::Invalidate { target: "f1".into(), by: "f4".into(), cascade: vec![] } };
        write(
            &s,
            &plan(
                "e2",
                "2024-02-01",
                vec![
                    replace,
                    insert(fact("f4", "Alice works at Anthropic", vec![0.9, 0.1, 0.0])),
                    insert(fact("f5", "Alice likes tea and tea", vec![0.1, 0.1, 1.0])),
                ],
            ),
        );
        let after = s.search("c", "alice works at", &[1.0, 0.0, 0.0], &params(0.7)).unwrap();
        assert_eq!(after[0].fact_id, "f4", "{after:?}");
        assert!(after.iter().all(|h| h.fact_id != "f1"), "the invalidated fact is gone at once: {after:?}");
        assert_matches_uncached(&s, &path, "after an invalidation");
        // A rewrite in place (as signet's update): the trigger re-indexes, the length changes.
        s.with(|c| c.execute("UPDATE facts SET normalized_content = 'bob likes coffee and green tea every day' WHERE id = 'f3'", []))
            .unwrap();
        let mut found = ids(&s.search("c", "green tea", &[], &params(0.0)).unwrap()).into_iter().map(String::from).collect::<Vec<_>>();
        found.sort();
        assert_eq!(found, vec!["f2", "f3"], "the rewritten fact is found by its new words");
        assert_matches_uncached(&s, &path, "after a rewrite in place");
        // A write through another connection (another process) is seen too.
        let other = Store::open(&path).unwrap();
        other.with(|c| c.execute("UPDATE facts SET invalid_at = '2024-03-01', superseded_by = 'f4' WHERE id = 'f2'", [])).unwrap();
        assert_eq!(ids(&s.search("c", "green tea", &[], &params(0.0)).unwrap()), vec!["f3"]);
        assert_matches_uncached(&s, &path, "after another connection's write");
        // A rolled-back write leaves the answers as they were.
        let p = plan("e3", "2024-03-01", vec![insert(fact("f6", "Alice likes green tea again", vec![]))]);
        assert!(
            s.write_episode(&p, WriteMode::Full, |tx| {
                policy::apply(tx, &p, WriteMode::Full, 0.7)?;
                Err(crate::error::Error::Other("injected failure".into()))
            })
            .is_err()
        );
        assert_eq!(ids(&s.search("c", "green tea", &[], &params(0.0)).unwrap()), vec!["f3"]);
        assert_matches_uncached(&s, &path, "after a rolled-back write");
    }

    #[test]
    fn docsize_reads_sqlite_varints() {
        assert_eq!(docsize(&[5]), 5);
        assert_eq!(docsize(&[0x81, 0x00]), 128);
        assert_eq!(docsize(&[0x82, 0x81, 0x03]), (2 << 14) | (1 << 7) | 3);
    }
}
