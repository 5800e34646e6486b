//! MiniLM against an independent reference: the 28 sentences and 14 pairs of
//! `src/tests/data/minilm-reference.json` (reference data of this project,
//! produced by an independent NumPy forward pass of the same weights). Needs
//! the model (`make models`); without it the test fails and says so.

// Test and bench code may unwrap and print (the library may not).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;

use memform::embed::cache::EmbedMode;
use memform::embed::minilm::{DIMS, MiniLmEmbedder};
use memform::embed::{Embedder, EmbedderKind, EmbedderSpec, build_embedder, cosine};
use serde::Deserialize;

const REFERENCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/tests/data/minilm-reference.json");
const MODEL_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/models/all-MiniLM-L6-v2");

#[derive(Deserialize)]
struct Reference {
    sentences: Vec<Sentence>,
    pairs: Vec<Pair>,
}

#[derive(Deserialize)]
struct Sentence {
    text: String,
    embedding: Vec<f32>,
}

#[derive(Deserialize)]
struct Pair {
    a: String,
    b: String,
    cosine: f64,
}

fn load() -> (Reference, MiniLmEmbedder) {
    let model_dir = Path::new(MODEL_DIR);
    assert!(model_dir.join("model.safetensors").is_file(), "no MiniLM model in {MODEL_DIR}: run `make models` first");
    let text = std::fs::read_to_string(REFERENCE).expect("read the reference file");
    let reference: Reference = serde_json::from_str(&text).expect("parse the reference file");
    let model = MiniLmEmbedder::load(model_dir).expect("load MiniLM");
    (reference, model)
}

#[test]
fn embeddings_and_cosines_match_the_reference() {
    let (reference, model) = load();
    assert_eq!(reference.sentences.len(), 28);
    assert_eq!(reference.pairs.len(), 14);
    let texts: Vec<&str> = reference.sentences.iter().map(|s| s.text.as_str()).collect();
    let got = model.embed(&texts, "reference").expect("embed the reference sentences");

    let mut worst = 0f32;
    for (s, v) in reference.sentences.iter().zip(&got) {
        assert_eq!(v.len(), DIMS);
        assert_eq!(s.embedding.len(), DIMS);
        for (d, (x, y)) in v.iter().zip(&s.embedding).enumerate() {
            let diff = (x - y).abs();
            worst = worst.max(diff);
            assert!(diff <= 1e-4, "{:?} dimension {d}: {x} vs reference {y}", s.text);
        }
    }
    assert!(worst > 0.0 || got.iter().all(|v| v.iter().any(|x| *x != 0.0)));

    let vector = |t: &str| {
        let i = texts.iter().position(|x| *x == t).expect("pair sentence is among the sentences");
        &got[i]
    };
    for p in &reference.pairs {
        let c = cosine(vector(&p.a), vector(&p.b));
        assert!((c - p.cosine).abs() <= 1e-3, "{:?} / {:?}: {c:.4} vs reference {:.4}", p.a, p.b, p.cosine);
    }
}

#[test]
fn batching_and_padding_do_not_change_vectors() {
    let (reference, model) = load();
    let texts: Vec<&str> = reference.sentences.iter().map(|s| s.text.as_str()).collect();
    let batched = model.embed(&texts, "reference").expect("batched");
    let small = MiniLmEmbedder::load(Path::new(MODEL_DIR)).expect("load").with_batch_size(1);
    for (t, b) in texts.iter().zip(&batched) {
        let one = small.embed(&[t], "reference").expect("single");
        for (x, y) in one[0].iter().zip(b) {
            assert!((x - y).abs() <= 1e-5, "{t:?}: alone {x} vs in a batch {y}");
        }
    }
    let n: f64 = batched[0].iter().map(|x| f64::from(*x).powi(2)).sum();
    assert!((n - 1.0).abs() < 1e-5, "unit length, got {n}");
}

#[test]
fn long_inputs_are_truncated_not_rejected() {
    let (_, model) = load();
    let long = "the quick brown fox jumps over the lazy dog ".repeat(200);
    let v = model.embed(&[&long, ""], "reference").expect("long and empty inputs embed");
    assert_eq!(v[0].len(), DIMS);
    assert!(v[1].iter().any(|x| *x != 0.0));
}

#[test]
fn recorded_vectors_replay_without_the_model() {
    let (reference, model) = load();
    let texts: Vec<&str> = reference.sentences.iter().take(6).map(|s| s.text.as_str()).collect();
    let root = tempfile::tempdir().expect("tempdir");
    let mut spec = EmbedderSpec::new(EmbedderKind::MiniLm);
    spec.model_dir = MODEL_DIR.into();
    spec.cache_dir = Some(root.path().to_path_buf());
    spec.mode = EmbedMode::Record;
    let recorder = build_embedder(&spec).expect("record");
    let recorded = recorder.embed(&texts, "reference").expect("record");
    recorder.flush().expect("flush");

    spec.mode = EmbedMode::Replay;
    spec.model_dir = root.path().join("no-model-here/all-MiniLM-L6-v2");
    let replayer = build_embedder(&spec).expect("replay needs no model");
    assert_eq!(replayer.embed(&texts, "reference").expect("replay"), recorded);
    assert_eq!(replayer.id(), model.id());

    let normalized: Vec<String> = texts.iter().map(|t| memform::normalize::normalize_content(t)).collect();
    let refs: Vec<&str> = normalized.iter().map(String::as_str).collect();
    let direct = model.embed(&refs, "reference").expect("direct");
    for (a, b) in recorded.iter().zip(&direct) {
        assert!(a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-5));
    }
}
