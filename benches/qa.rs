//! The QA evaluation after formation: every QA item of the dataset through
//! the store's hybrid search against the formed memory and the two raw
//! baselines (LoCoMo's five dev conversations: 999 items, about 3,000
//! searches), the baselines alone (indexing and searching them) and the
//! formed memory's loop alone.
//!
//! MEMFORM_BENCH_DATASET picks the dataset (default: datasets/scenarios;
//! point it at LoCoMo for the 999-query loop). Formation runs once, outside
//! the timing; the hashed embedder throughout.

// Test and bench code may unwrap and print (the library may not).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

/// The allocator the `memform` binary uses (src/main.rs), so the timings
/// here are the command line's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};

use memform::embed::hashed::HashedEmbedder;
use memform::pipeline::Config;
use memform::pipeline::Stages;
use memform::pipeline::extract::RulesExtractor;
use memform::pipeline::judge::RulesJudge;
use memform::qa::{evaluate, evaluate_sources};
use memform::run::{RunOptions, run};
use memform::store::Store;

fn bench_qa(c: &mut Criterion) {
    let dir = std::env::var("MEMFORM_BENCH_DATASET")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/datasets/scenarios")));
    let cfg = Config::default();
    let dataset = memform::dataset::load(&dir).expect("load dataset");
    let embedder = HashedEmbedder::new(cfg.hashed_dims);
    let out = tempfile::tempdir().expect("tempdir");
    let extractor = RulesExtractor::new(cfg.max_input_chars);
    let judge = RulesJudge::new(&cfg);
    let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
    let opts = RunOptions { out_dir: out.path().to_path_buf(), qa: Some(false), ..RunOptions::default() };
    run(&dataset, &cfg, stages, &opts).expect("formation");
    let store = Store::open(&out.path().join("store.sqlite")).expect("open the run's store");
    let items: usize = dataset.conversations.iter().map(|c| c.gold.qa.len()).sum();
    eprintln!("qa bench: {} conversations, {items} QA items", dataset.conversations.len());

    let mut group = c.benchmark_group("qa");
    group.sample_size(10);
    group.bench_function("evaluate_all_sources", |b| b.iter(|| evaluate(&dataset, &store, &embedder, &cfg).expect("evaluate")));
    group.bench_function("baselines_only", |b| b.iter(|| evaluate_sources(&dataset, None, &embedder, &cfg, true).expect("evaluate")));
    group.bench_function("formed_only", |b| b.iter(|| evaluate_sources(&dataset, Some(&store), &embedder, &cfg, false).expect("evaluate")));
    group.finish();
}

criterion_group!(benches, bench_qa);
criterion_main!(benches);
