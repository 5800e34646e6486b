//! The large-run shape of `docs/speed.md`: many conversations of many
//! sessions (`benches/gen_longmem.py`), rules mode, hashed embedder, no QA,
//! store and report files written: what `memform run --dataset D --no-qa`
//! does at 250,000 turns, scaled down.
//!
//! The dataset is generated once into a temporary directory by
//! `python3 benches/gen_longmem.py DIR C` (deterministic). C, the number of
//! conversations of 500 turns each, is MEMFORM_BENCH_LONGMEM_CONVERSATIONS
//! (default 20, i.e. 10,000 turns, so that ten samples take about a minute
//! on a quiet 2-core machine; 500 is the full 250,000-turn shape).

// Test and bench code may unwrap and print (the library may not).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

/// The allocator the `memform` binary uses (src/main.rs), so the timings
/// here are the command line's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::Path;
use std::process::Command;

use criterion::{Criterion, criterion_group, criterion_main};

use memform::embed::hashed::HashedEmbedder;
use memform::pipeline::Config;
use memform::pipeline::Stages;
use memform::pipeline::extract::RulesExtractor;
use memform::pipeline::judge::RulesJudge;
use memform::run::{RunOptions, run};

fn bench_longmem(c: &mut Criterion) {
    let conversations: usize = std::env::var("MEMFORM_BENCH_LONGMEM_CONVERSATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let data = tempfile::tempdir().expect("tempdir");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/gen_longmem.py");
    let status = Command::new("python3")
        .arg(&script)
        .arg(data.path())
        .arg(conversations.to_string())
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run python3 benches/gen_longmem.py");
    assert!(status.success(), "gen_longmem.py failed");
    let cfg = Config::default();
    let out = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("longmem");
    group.sample_size(10);
    group.bench_function(format!("rules_run_hashed_no_qa_{}_turns", conversations * 500), |b| {
        b.iter(|| {
            let dataset = memform::dataset::load(data.path()).expect("load dataset");
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

criterion_group!(benches, bench_longmem);
criterion_main!(benches);
