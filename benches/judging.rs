//! Judging at scale (issue 11): whole rules-mode runs (hashed embedder,
//! store and run files written) of one conversation in which one speaker
//! states 1,000, 2,000 and 4,000 different likes, ten a session. The datasets are
//! written by `benches/gen_likes.py` (python3) into a temporary directory.
//! Before the fix both grew quadratically (pairs, verdict rows, facts.jsonl);
//! compare the two timings to see how the cost grows with N.

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

fn generate(n: usize, dir: &Path) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/gen_likes.py");
    let status = Command::new("python3").arg(script).arg(n.to_string()).arg(dir).status().expect("run python3 benches/gen_likes.py");
    assert!(status.success(), "gen_likes.py {n} failed");
}

fn bench_judging(c: &mut Criterion) {
    let cfg = Config::default();
    let mut group = c.benchmark_group("judging");
    group.sample_size(10);
    for n in [1000, 2000, 4000] {
        let data = tempfile::tempdir().expect("tempdir");
        generate(n, data.path());
        let dataset = memform::dataset::load(data.path()).expect("load dataset");
        let out = tempfile::tempdir().expect("tempdir");
        group.bench_function(format!("likes_{n}"), |b| {
            b.iter(|| {
                let extractor = RulesExtractor::new(cfg.max_input_chars);
                let embedder = HashedEmbedder::new(cfg.hashed_dims);
                let judge = RulesJudge::new(&cfg);
                let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
                let opts = RunOptions { out_dir: out.path().to_path_buf(), ..RunOptions::default() };
                run(&dataset, &cfg, stages, &opts).expect("run")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_judging);
criterion_main!(benches);
