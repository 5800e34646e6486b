//! The CLI's error messages and exit codes on bad input, as snapshots.
//! Each case writes a small bad dataset or config into a temporary directory.

use std::path::Path;
use std::process::Command;

use crate::support::{bin, scenarios_dir, snapshots_dir};

fn memform(args: &[&str], cwd: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(bin()).args(args).current_dir(cwd).output().expect("spawn memform");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn native(dir: &Path, name: &str, body: &str) {
    let conv = dir.join("conversations");
    std::fs::create_dir_all(&conv).expect("mkdir");
    std::fs::write(conv.join(name), body).expect("write");
}

const GOOD: &str = r#"{"format": "memform-conversation/1", "id": "ok", "speakers": ["Ann"],
 "episodes": [{"id": "e1", "timestamp": "2024-01-01T10:00:00",
   "turns": [{"id": "t1", "speaker": "Ann", "text": "I work at Google."}]}]}"#;

fn case(name: &str, setup: impl FnOnce(&Path), args: &[&str]) -> String {
    let tmp = tempfile::tempdir().expect("tempdir");
    setup(tmp.path());
    let (code, _stdout, stderr) = memform(args, tmp.path());
    let stderr: Vec<&str> = stderr.lines().filter(|l| !l.starts_with("wrote ")).collect();
    format!("## {name}\nexit: {code:?}\n{}\n", stderr.join("\n"))
}

#[test]
fn bad_input_errors_and_exit_codes() {
    let mut all = String::new();
    all += &case("malformed json", |d| native(&d.join("ds"), "a.json", "{\"format\": \"memform-conversation/1\", \"id\": "), &["run", "--dataset", "ds", "--out", "o"]);
    all += &case("missing field", |d| native(&d.join("ds"), "a.json", r#"{"format": "memform-conversation/1", "id": "x", "speakers": ["A"], "episodes": [{"id": "e1", "turns": [{"id": "t1", "text": "hi"}]}]}"#), &["run", "--dataset", "ds", "--out", "o"]);
    all += &case("wrong type", |d| native(&d.join("ds"), "a.json", r#"{"format": "memform-conversation/1", "id": "x", "speakers": "A", "episodes": []}"#), &["run", "--dataset", "ds", "--out", "o"]);
    all += &case("unknown format", |d| {
        std::fs::create_dir_all(d.join("ds")).expect("mkdir");
        std::fs::write(d.join("ds/notes.txt"), "hello").expect("write");
    }, &["run", "--dataset", "ds", "--out", "o"]);
    all += &case("missing directory", |_| {}, &["run", "--dataset", "nope", "--out", "o"]);
    all += &case("bad --set key", |d| native(&d.join("ds"), "ok.json", GOOD), &["run", "--dataset", "ds", "--set", "bogus=1", "--out", "o"]);
    all += &case("bad --set value", |d| native(&d.join("ds"), "ok.json", GOOD), &["run", "--dataset", "ds", "--set", "near_dup_threshold=high", "--out", "o"]);
    all += &case("bad config file", |d| {
        native(&d.join("ds"), "ok.json", GOOD);
        std::fs::write(d.join("c.toml"), "near_dup_threshold = 0.9\nmax_facts = \"many\"\n").expect("write");
    }, &["run", "--dataset", "ds", "--config", "c.toml", "--out", "o"]);
    all += &case("bad write mode", |d| native(&d.join("ds"), "ok.json", GOOD), &["run", "--dataset", "ds", "--write-mode", "yolo", "--out", "o"]);
    all += &case("keep going over a bad conversation", |d| {
        native(&d.join("ds"), "ok.json", GOOD);
        native(&d.join("ds"), "b.json", "[1, 2");
    }, &["run", "--dataset", "ds", "--keep-going", "--out", "o"]);
    all += &case("good run", |d| native(&d.join("ds"), "ok.json", GOOD), &["run", "--dataset", "ds", "--out", "o"]);
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshots_dir());
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("cli_errors", all));
}

#[test]
fn keep_going_keeps_the_good_conversation() {
    let tmp = tempfile::tempdir().expect("tempdir");
    native(&tmp.path().join("ds"), "ok.json", GOOD);
    native(&tmp.path().join("ds"), "b.json", "[1, 2");
    let (code, stdout, _) = memform(&["run", "--dataset", "ds", "--keep-going", "--out", "o"], tmp.path());
    assert_eq!(code, Some(2));
    let summary: serde_json::Value = serde_json::from_str(&stdout).expect("summary on stdout");
    assert_eq!(summary["metrics"]["skipped_conversations"], 1);
    assert_eq!(summary["metrics"]["episodes"], 1);
    assert!(tmp.path().join("o/store.sqlite").exists());
}

#[test]
fn run_prints_summary_json_with_required_keys() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (code, stdout, stderr) =
        memform(&["run", "--dataset", &scenarios_dir().display().to_string(), "--out", "o"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&stdout).expect("summary json on stdout");
    for key in [
        "episodes", "turns", "candidates", "stored_facts", "fact_density", "dedup_rate", "noise_rejection_rate",
        "entity_coherence", "invalidations", "warnings", "turn_precision", "turn_recall", "turn_f1",
        "baseline_all_turns_precision", "baseline_all_turns_recall", "baseline_all_turns_f1",
    ] {
        assert!(summary["metrics"].get(key).is_some(), "summary lacks {key}");
    }
    for f in ["run.json", "summary.json", "facts.jsonl", "episodes.jsonl", "store.sqlite"] {
        assert!(tmp.path().join("o").join(f).exists(), "missing {f}");
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("o/run.json")).expect("run.json")).expect("json");
    assert_eq!(manifest["config"]["near_dup_threshold"], 0.95);
    assert_eq!(manifest["dataset"]["digest"].as_str().map(str::len), Some(64));
}

#[test]
fn minilm_replay_needs_no_model_and_a_miss_names_the_record_command() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let scenarios = scenarios_dir().display().to_string();
    // The working directory is empty: models/all-MiniLM-L6-v2 is not there to load.
    let args = ["run", "--dataset", &scenarios, "--embedder", "minilm", "--out", "o"];
    let (code, _, stderr) = memform(&args, tmp.path());
    assert!(!tmp.path().join("models").exists());
    assert_eq!(code, Some(0), "recorded vectors replay without the model: {stderr}");
    assert!(stderr.contains("0 recorded"), "{stderr}");
    let manifest = std::fs::read_to_string(tmp.path().join("o/run.json")).expect("run.json");
    assert!(manifest.contains("\"embedder\": \"minilm:"), "{manifest}");

    native(&tmp.path().join("ds"), "ok.json", GOOD);
    let (code, _, stderr) = memform(&["run", "--dataset", "ds", "--embedder", "minilm", "--out", "o2"], tmp.path());
    assert_eq!(code, Some(2));
    assert!(stderr.contains("no recorded vector") && stderr.contains("--embed record"), "{stderr}");
    assert_eq!(stderr.lines().filter(|l| l.starts_with("error:")).count(), 1, "{stderr}");
}
