//! `memform calibrate` on 1,000 pairs (gold extraction, rules judge, hashed
//! embedder): the base run alone, and the base run with a 21-point curve
//! over `near_dup_threshold` sharing its fronts. The pairs are
//! `datasets/pairs/test.jsonl` when it exists (else the test pairs of
//! `src/tests/data/calibrate-pairs/`), repeated under new ids to 1,000.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

/// The allocator the `memform` binary uses (src/main.rs), so the timings
/// here are the command line's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};

use memform::calibrate::{self, Pair, Source, Split};
use memform::embed::hashed::HashedEmbedder;
use memform::pipeline::Config;
use memform::pipeline::Stages;
use memform::pipeline::extract::GoldExtractor;
use memform::pipeline::judge::RulesJudge;

const N: usize = 1000;

fn pairs() -> Vec<Pair> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let set = root.join("datasets/pairs");
    let base = if set.join("test.jsonl").is_file() {
        calibrate::input::read_pairs_dir(&set, Split::Test).expect("read datasets/pairs")
    } else {
        calibrate::input::read_pairs_dir(&root.join("src/tests/data/calibrate-pairs"), Split::All).expect("read test pairs")
    };
    (0..N)
        .map(|i| {
            let mut p = base[i % base.len()].clone();
            p.id = format!("{}-{i}", p.id);
            p
        })
        .collect()
}

fn bench_calibrate(c: &mut Criterion) {
    let cfg = Config::default();
    let pairs = pairs();
    let dataset = calibrate::dataset("bench", "d", &pairs, false);
    let extractor = GoldExtractor::new(&dataset, &cfg).expect("gold");
    let embedder = HashedEmbedder::new(cfg.hashed_dims);
    let judge = RulesJudge::new(&cfg);
    let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
    let out = tempfile::tempdir().expect("tempdir");
    let opts = |no_curves: bool, grid: &[&str]| calibrate::Options {
        source: Source::Pairs,
        name: "bench".into(),
        out_dir: out.path().join("o"),
        limits: calibrate::Limits::default(),
        grids: [("near_dup_threshold".to_string(), grid.iter().map(|s| s.to_string()).collect())].into(),
        no_curves,
        recorded: Default::default(),
        digests: serde_json::Value::Null,
        dataset_path: None,
        tags: Default::default(),
        lock: None,
        threads: None,
    };
    let grid: Vec<String> = (0..=20).map(|i| format!("{:.2}", 0.6 + 0.02 * i as f64)).collect();
    let grid: Vec<&str> = grid.iter().map(String::as_str).collect();
    let mut group = c.benchmark_group("calibrate");
    group.sample_size(10);
    let base = opts(true, &[]);
    group.bench_function("pairs_1000_base", |b| b.iter(|| calibrate::compute(&pairs, &dataset, &cfg, stages, &base).expect("calibrate")));
    // Only near_dup_threshold's curve: the other keys get a one-value grid (their default).
    let mut curve = opts(false, &grid);
    curve.grids.insert("contradiction_band_min".into(), vec!["0.8".into()]);
    curve.grids.insert("entity_merge_threshold".into(), vec!["0.88".into()]);
    group.bench_function("pairs_1000_near_dup_curve_21", |b| {
        b.iter(|| calibrate::compute(&pairs, &dataset, &cfg, stages, &curve).expect("calibrate"))
    });
    group.finish();
}

criterion_group!(benches, bench_calibrate);
criterion_main!(benches);
