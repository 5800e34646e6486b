//! The store's hybrid search: a query (the config's defaults, top_k 5)
//! against one conversation of 10,000 live facts in a real SQLite file,
//! hashed 256-dimension vectors. The facts are synthetic sentences (8
//! subjects, 20 predicates, 37 objects, 24 places), so a query's terms each
//! occur in hundreds to thousands of facts.
//!
//! - `hybrid_10k_facts`: one fact-like query asked again and again of an
//!   unchanged store (the QA evaluation's case: the conversation's live
//!   lengths and the query terms' document counts are cached).
//! - `hybrid_10k_facts_distinct`: a different query each time, cycling
//!   through 1,000 facts' contents (a term's document count is counted the
//!   first time a query holds it).
//! - `hybrid_10k_facts_after_write`: the first query after a write to the
//!   store (the write, outside the timing, empties the cache: every live
//!   fact's length is read again and every term's posting list walked).
//! - `vector_only_10k_facts`, `bm25_only_10k_facts`: each leg alone.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

/// The allocator the `memform` binary uses (src/main.rs), so the timings
/// here are the command line's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};

use memform::config::WriteMode;
use memform::embed::hashed::HashedEmbedder;
use memform::normalize::normalize_and_hash_content;
use memform::pipeline::Config;
use memform::pipeline::write::{Action, Proposal, WritePlan, policy};
use memform::state::FactRec;
use memform::store::{SearchParams, Store};
use memform::types::{CandidateFact, Episode, FactKind, FactType, Turn};

const FACTS: usize = 10_000;
const PER_EPISODE: usize = 100;
const SUBJECTS: &[&str] = &["Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi"];
const PREDICATES: &[&str] = &[
    "likes",
    "loves",
    "enjoys",
    "visited",
    "owns",
    "plays",
    "went to",
    "attended",
    "dislikes",
    "hates",
    "works at",
    "lives in",
    "studies at",
    "drives",
    "has pet",
    "has friend",
    "is reading",
    "is learning",
    "collects",
    "bought",
];
const WORDS: &[&str] = &[
    "tea",
    "coffee",
    "painting",
    "hiking",
    "guitar",
    "novels",
    "chess",
    "swimming",
    "pottery",
    "baking",
    "cycling",
    "jazz",
    "poetry",
    "gardening",
    "yoga",
    "sushi",
    "camping",
    "photography",
    "dancing",
    "knitting",
    "running",
    "skiing",
    "tennis",
    "surfing",
    "violin",
    "piano",
    "soccer",
    "climbing",
    "sailing",
    "museums",
    "concerts",
    "theatre",
    "cooking",
    "rowing",
    "archery",
    "fencing",
    "golf",
];
const PLACES: &[&str] = &[
    "paris", "boston", "tokyo", "lisbon", "denver", "oslo", "cairo", "lima", "seoul", "austin", "rome", "madrid", "berlin", "dublin",
    "prague", "vienna", "quito", "hanoi", "accra", "perth", "nairobi", "bogota", "sydney", "toronto",
];

/// Fact `i`: a subject, one of 20 predicates, one or two of 37 objects, one
/// of 24 places and a year, mixed so that no two neighbours share much.
fn content(i: usize) -> String {
    let pick = |list: &[&'static str], salt: usize| list[(i.wrapping_mul(2_654_435_761).wrapping_add(salt) >> 7) % list.len()];
    let (who, pred, obj) = (pick(SUBJECTS, 1), pick(PREDICATES, 1_000_003), pick(WORDS, 2_000_029));
    match i % 3 {
        0 => format!("{who} {pred} {obj} on day {i}"),
        1 => format!("{who} {pred} {obj} and {} in {}", pick(WORDS, 3_000_017), pick(PLACES, 4_000_037)),
        _ => format!("{who} {pred} {obj} since {}", 1990 + i % 30),
    }
}

fn fact(i: usize, embedder: &HashedEmbedder) -> FactRec {
    let content = content(i);
    let n = normalize_and_hash_content(&content);
    let who = content.split(' ').next().unwrap_or_default().to_string();
    FactRec {
        id: format!("c/e{}/c{}", i / PER_EPISODE, i % PER_EPISODE),
        fact: CandidateFact {
            subject: who,
            predicate: "p".into(),
            object: format!("o{i}"),
            kind: FactKind::Literal,
            fact_type: FactType::Preference,
            content: n.storage.clone(),
            confidence: 0.9,
            source_turn: format!("t{i}"),
            source_quote: String::new(),
            valid_from: None,
            valid_until: None,
        },
        normalized: n.normalized,
        hash: n.hash,
        invalid_at: None,
        superseded_by: None,
        source_episode: format!("e{}", i / PER_EPISODE),
        pinned: false,
        subject_entity: None,
        object_entity: None,
        embedding: embedder.embed_one(&content),
        slot: None,
        keys: Default::default(),
    }
}

fn build(path: &std::path::Path, embedder: &HashedEmbedder) -> Store {
    let store = Store::open(path).unwrap();
    store.write_conversation("c", &["Alice".into()], &[]).unwrap();
    for e in 0..FACTS / PER_EPISODE {
        let id = format!("e{e}");
        let turns = vec![Turn { id: format!("t{e}"), speaker: "Alice".into(), text: "x".into() }];
        store
            .write_evidence(
                "c",
                e,
                &Episode { id: id.clone(), timestamp: Some(format!("2024-01-01T00:{:02}:00", e % 60)), turns, observations: vec![] },
            )
            .unwrap();
        let proposals = (e * PER_EPISODE..(e + 1) * PER_EPISODE)
            .map(|i| {
                let f = fact(i, embedder);
                Proposal { candidate_id: f.id.clone(), action: Action::Insert { fact: Box::new(f) } }
            })
            .collect();
        let plan = WritePlan {
            conversation_id: "c".into(),
            episode_id: id,
            now: Some("2024-01-01".into()),
            new_entities: vec![],
            new_aliases: vec![],
            proposals,
            verdicts: vec![],
            attributions: vec![],
        };
        store.write_episode(&plan, WriteMode::Full, |tx| policy::apply(tx, &plan, WriteMode::Full, 0.7)).unwrap();
    }
    store
}

fn bench_search(c: &mut Criterion) {
    let cfg = Config::default();
    let embedder = HashedEmbedder::new(cfg.hashed_dims);
    let dir = tempfile::tempdir().unwrap();
    let store = build(&dir.path().join("store.sqlite"), &embedder);
    let params = SearchParams::from_config(&cfg);
    // A fact-like query, as the decision stage sends: one stored fact's
    // content (two objects, a place: ten-odd facts hold every term).
    let text = content(4);
    let text = text.as_str();
    let q = embedder.embed_one(text);
    let first = store.search("c", text, &q, &params).unwrap();
    assert_eq!(first.len(), params.top_k, "{first:?}");
    // (At 10,000 facts a many-term match's normalised BM25 score is small,
    // often under the default min_score 0.1: the check lowers it.)
    let no_floor = SearchParams { min_score: 0.0, ..params.clone() };
    assert!(store.search("c", text, &[], &no_floor).unwrap().iter().any(|h| h.fact_id == "c/e0/c4"), "the BM25 leg finds the query's fact");
    assert!(!store.search("c", "", &q, &params).unwrap().is_empty(), "the vector leg finds facts");
    let mut group = c.benchmark_group("search");
    group.bench_function("hybrid_10k_facts", |b| b.iter(|| store.search("c", text, &q, &params).unwrap()));
    let pool: Vec<(String, Vec<f32>)> = (0..1000).map(|i| content(i * 7 + 3)).map(|t| (t.clone(), embedder.embed_one(&t))).collect();
    let mut next = 0;
    group.bench_function("hybrid_10k_facts_distinct", |b| {
        b.iter(|| {
            let (t, v) = &pool[next % pool.len()];
            next += 1;
            store.search("c", t, v, &params).unwrap()
        })
    });
    // A write that changes no fact still moves the store's change counter.
    let touch = WritePlan {
        conversation_id: "c".into(),
        episode_id: "e0".into(),
        now: Some("2024-01-01".into()),
        new_entities: vec![],
        new_aliases: vec![],
        proposals: vec![],
        verdicts: vec![],
        attributions: vec![],
    };
    group.bench_function("hybrid_10k_facts_after_write", |b| {
        b.iter_batched(
            || store.write_episode(&touch, WriteMode::Full, |tx| policy::apply(tx, &touch, WriteMode::Full, 0.7)).unwrap(),
            |_| store.search("c", text, &q, &params).unwrap(),
            criterion::BatchSize::PerIteration,
        )
    });
    group.bench_function("vector_only_10k_facts", |b| b.iter(|| store.search("c", "", &q, &params).unwrap()));
    group.bench_function("bm25_only_10k_facts", |b| b.iter(|| store.search("c", text, &[], &params).unwrap()));
    group.finish();
}

criterion_group!(benches, bench_search);
criterion_main!(benches);
