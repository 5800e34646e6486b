//! Rules-mode runs over a dataset directory, store writes included: with the
//! hashed embedder, with recorded MiniLM vectors (a warm cache, no model),
//! a 100-point sweep beside them (with and without QA), and a run without
//! QA (the sweep's yardstick).
//!
//! MEMFORM_BENCH_DATASET picks the dataset (default: datasets/scenarios);
//! MEMFORM_BENCH_EMBED_CACHE its embeddings directory (default:
//! DATASET/embeddings; `make locomo-embeddings` records LoCoMo's under
//! locomo-fixtures/). The MiniLM bench is skipped, with a note on stderr,
//! when that cache does not exist.

// Test and bench code may unwrap and print (the library may not).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

/// The allocator the `memform` binary uses (src/main.rs), so the timings
/// here are the command line's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};

use memform::embed::cache::EmbedMode;
use memform::embed::hashed::HashedEmbedder;
use memform::embed::{Embedder, EmbedderKind, EmbedderSpec, build_embedder};
use memform::pipeline::Config;
use memform::pipeline::Stages;
use memform::pipeline::extract::RulesExtractor;
use memform::pipeline::judge::RulesJudge;
use memform::run::{RunOptions, run};

fn bench_run(c: &mut Criterion) {
    let dir = std::env::var("MEMFORM_BENCH_DATASET")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/datasets/scenarios")));
    let cache = std::env::var("MEMFORM_BENCH_EMBED_CACHE").map(PathBuf::from).unwrap_or_else(|_| dir.join("embeddings"));
    let cfg = Config::default();
    let out = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("run");
    group.sample_size(10);
    let run_with = |embedder: &dyn Embedder| {
        let dataset = memform::dataset::load(&dir).expect("load dataset");
        let extractor = RulesExtractor::new(cfg.max_input_chars);
        let judge = RulesJudge::new(&cfg);
        let stages = Stages { extractor: &extractor, embedder, judge: &judge };
        let opts = RunOptions { out_dir: out.path().to_path_buf(), ..RunOptions::default() };
        run(&dataset, &cfg, stages, &opts).expect("run")
    };
    group.bench_function("rules_run_hashed", |b| b.iter(|| run_with(&HashedEmbedder::new(cfg.hashed_dims))));
    if cache.is_dir() {
        let mut spec = EmbedderSpec::new(EmbedderKind::MiniLm);
        spec.mode = EmbedMode::Replay;
        spec.cache_dir = Some(cache.clone());
        group.bench_function("rules_run_minilm_warm_cache", |b| {
            b.iter(|| {
                // Opening the cache is part of a run: it is inside the timing.
                let embedder = build_embedder(&spec).expect("open the recorded cache");
                run_with(embedder.as_ref())
            })
        });
    } else {
        eprintln!("skipping rules_run_minilm_warm_cache: no embedding cache at {}", cache.display());
    }

    // A 100-point 2-D sweep (10 × 10) over the same data, to compare with
    // one run: the grid docs/speed.md times on LoCoMo dev.
    let axes = vec![
        memform::sweep::parse_axis("soda.near_dup_threshold=0.80:0.98:0.02").expect("axis"),
        memform::sweep::parse_axis("soda.contradiction_band_min=0.50:0.68:0.02").expect("axis"),
    ];
    let points = memform::sweep::points(&axes);
    assert_eq!(points.len(), 100);
    group.bench_function("sweep_100_points", |b| {
        b.iter(|| {
            let dataset = memform::dataset::load(&dir).expect("load dataset");
            let extractor = RulesExtractor::new(cfg.max_input_chars);
            let embedder = HashedEmbedder::new(cfg.hashed_dims);
            let judge = RulesJudge::new(&cfg);
            let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
            memform::sweep::run_sweep(&dataset, &cfg, stages, &points, None).expect("sweep")
        })
    });
    // The same without QA (`sweep --no-qa`), and one run without QA, its yardstick.
    group.bench_function("sweep_100_points_no_qa", |b| {
        b.iter(|| {
            let dataset = memform::dataset::load(&dir).expect("load dataset");
            let extractor = RulesExtractor::new(cfg.max_input_chars);
            let embedder = HashedEmbedder::new(cfg.hashed_dims);
            let judge = RulesJudge::new(&cfg);
            let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
            let hooks = memform::sweep::Hooks { no_qa: true, ..Default::default() };
            memform::sweep::run_sweep_with(&dataset, &cfg, stages, &points, &hooks).expect("sweep")
        })
    });
    group.bench_function("rules_run_hashed_no_qa", |b| {
        b.iter(|| {
            let dataset = memform::dataset::load(&dir).expect("load dataset");
            let extractor = RulesExtractor::new(cfg.max_input_chars);
            let embedder = HashedEmbedder::new(cfg.hashed_dims);
            let judge = RulesJudge::new(&cfg);
            let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
            let opts = RunOptions { out_dir: out.path().to_path_buf(), qa: Some(false), ..RunOptions::default() };
            run(&dataset, &cfg, stages, &opts).expect("run")
        })
    });
    group.finish();
}

criterion_group!(benches, bench_run);
criterion_main!(benches);
