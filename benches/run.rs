//! Rules-mode run over a dataset directory, store writes included.
//! MEMFORM_BENCH_DATASET picks the dataset (default: datasets/scenarios).

use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};

use memform::config::Config;
use memform::embed::hashed::HashedEmbedder;
use memform::extract::RulesExtractor;
use memform::judge::RulesJudge;
use memform::pipeline::Stages;
use memform::run::{RunOptions, run};

fn bench_run(c: &mut Criterion) {
    let dir = std::env::var("MEMFORM_BENCH_DATASET")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/datasets/scenarios")));
    let cfg = Config::default();
    let out = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("run");
    group.sample_size(10);
    group.bench_function("rules_run", |b| {
        b.iter(|| {
            let dataset = memform::dataset::load(&dir).expect("load dataset");
            let extractor = RulesExtractor::new(cfg.max_input_chars);
            let embedder = HashedEmbedder::new(cfg.hashed_dims);
            let judge = RulesJudge::new(&cfg);
            let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
            let opts = RunOptions { out_dir: out.path().to_path_buf(), ..RunOptions::default() };
            run(&dataset, &cfg, stages, &opts).expect("run")
        })
    });
    // A 100-point 2-D sweep (10 × 10) over the same data, to compare with one run.
    let axes = vec![
        memform::sweep::parse_axis("near_dup_threshold=0.86:0.95:0.01").expect("axis"),
        memform::sweep::parse_axis("contradiction_band_min=0.70:0.79:0.01").expect("axis"),
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
    group.finish();
}

criterion_group!(benches, bench_run);
criterion_main!(benches);
