//! Embedding throughput, in sentences per second: MiniLM (in process, CPU)
//! and the hashed embedder, one sentence per call and 32 per call. Needs the
//! model (`make models`).

// Test and bench code may unwrap and print (the library may not).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

/// The allocator the `memform` binary uses (src/main.rs), so the timings
/// here are the command line's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::path::Path;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use memform::embed::Embedder;
use memform::embed::hashed::HashedEmbedder;
use memform::embed::minilm::MiniLmEmbedder;

const MODEL_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/models/all-MiniLM-L6-v2");

/// Fact-like sentences of 5 to 20 words, made up for the bench.
fn sentences(n: usize) -> Vec<String> {
    let subjects = ["Alice", "Bob", "my sister", "the team lead", "our landlord", "Dr. Chen"];
    let verbs = ["works at", "moved to", "prefers", "is allergic to", "bought", "plans to visit"];
    let objects = [
        "Google",
        "a small flat near the river in Lisbon",
        "green tea without sugar",
        "peanuts and most tree nuts, which makes eating out hard",
        "a second-hand road bike for the commute",
        "the national park in the autumn with two old friends from university",
    ];
    (0..n)
        .map(|i| {
            format!(
                "{} {} {} since {}",
                subjects[i % subjects.len()],
                verbs[(i / 6) % verbs.len()],
                objects[(i / 36) % objects.len()],
                2000 + i % 25
            )
        })
        .collect()
}

fn bench_embed(c: &mut Criterion) {
    assert!(Path::new(MODEL_DIR).join("model.safetensors").is_file(), "no MiniLM model in {MODEL_DIR}: run `make models` first");
    let minilm = MiniLmEmbedder::load(Path::new(MODEL_DIR)).expect("load MiniLM");
    let hashed = HashedEmbedder::new(256);
    let pool = sentences(256);
    let mut group = c.benchmark_group("embed");
    group.sample_size(20);
    for batch in [1usize, 32] {
        group.throughput(Throughput::Elements(batch as u64));
        for (name, model) in [("minilm", &minilm as &dyn Embedder), ("hashed", &hashed as &dyn Embedder)] {
            let mut start = 0usize;
            group.bench_function(BenchmarkId::new(name, batch), |b| {
                b.iter(|| {
                    let texts: Vec<&str> = (0..batch).map(|k| pool[(start + k) % pool.len()].as_str()).collect();
                    start = (start + batch) % pool.len();
                    black_box(model.embed(&texts, "bench").expect("embed"))
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_embed);
criterion_main!(benches);
