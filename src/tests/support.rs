//! Helpers shared by the integration tests: paths, running the pipeline
//! in-process, normalising outputs that carry timings.

use std::path::{Path, PathBuf};

use memform::embed::hashed::HashedEmbedder;
use memform::pipeline::Config;
use memform::pipeline::Stages;
use memform::pipeline::extract::RulesExtractor;
use memform::pipeline::judge::RulesJudge;
use memform::run::{RunOptions, RunOutput, run};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn scenarios_dir() -> PathBuf {
    root().join("datasets/scenarios")
}

pub fn snapshots_dir() -> PathBuf {
    root().join("snapshots")
}

/// The second opt-in the fault-injection variables need
/// (`MEMFORM_FAULT_INJECTION=tests-only`, see `src/main.rs`): without it the
/// binary ignores them.
pub const FAULT_OPT_IN: (&str, &str) = ("MEMFORM_FAULT_INJECTION", "tests-only");

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_memform")
}

/// Runs `dataset_dir` in rules mode into `out` with `threads` workers.
pub fn run_rules(dataset_dir: &Path, out: &Path, cfg: &Config, threads: Option<usize>) -> RunOutput {
    let dataset = memform::dataset::load(dataset_dir).expect("load dataset");
    let extractor = RulesExtractor::new(cfg.max_input_chars);
    let embedder = HashedEmbedder::new(cfg.hashed_dims);
    let judge = RulesJudge::new(cfg);
    let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
    let opts = RunOptions { out_dir: out.to_path_buf(), threads, ..RunOptions::default() };
    run(&dataset, cfg, stages, &opts).expect("run")
}

/// A JSON value with every `timings` object removed (wall-clock figures).
pub fn without_timings(mut v: serde_json::Value) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.remove("timings");
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

/// A JSONL file with timings removed from every row.
pub fn jsonl_without_timings(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("read jsonl")
        .lines()
        .map(|l| without_timings(serde_json::from_str(l).expect("jsonl row")))
        .collect()
}
