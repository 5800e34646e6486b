//! One long conversation with many distinct people (docs/speed.md, "One long
//! conversation with many people"): rules mode, hashed embedder, no QA, at
//! two lengths, so that the ratio of the two shows how the cost grows with
//! the conversation (linear: about 4x for 4x the turns).
//!
//! Scaled down from the 100,000 turns of docs/speed.md to 3,000 and 12,000
//! turns so that a sample takes seconds. The conversations are written by
//! `benches/gen_people.py` (python3); without python3 the bench is skipped
//! with a note on stderr.

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

fn bench_people(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/gen_people.py");
    let cfg = Config::default();
    let mut group = c.benchmark_group("people");
    group.sample_size(10);
    for turns in [3_000, 12_000] {
        let dir = tmp.path().join(format!("people-{turns}"));
        let written = Command::new("python3").arg(&script).arg(&dir).arg(turns.to_string()).output();
        if !written.as_ref().is_ok_and(|o| o.status.success()) {
            eprintln!("skipping people/{turns}: benches/gen_people.py did not run ({written:?})");
            continue;
        }
        let out = tmp.path().join(format!("out-{turns}"));
        group.bench_function(format!("one_conversation_{turns}_turns"), |b| {
            b.iter(|| {
                let dataset = memform::dataset::load(&dir).expect("load dataset");
                let extractor = RulesExtractor::new(cfg.max_input_chars);
                let embedder = HashedEmbedder::new(cfg.hashed_dims);
                let judge = RulesJudge::new(&cfg);
                let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
                let opts = RunOptions { out_dir: out.clone(), qa: Some(false), ..RunOptions::default() };
                run(&dataset, &cfg, stages, &opts).expect("run")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_people);
criterion_main!(benches);
