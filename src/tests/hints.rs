//! memform's own hints name what to run: on a LoCoMo file, a missing
//! vector names the LoCoMo file as `--dataset` (not the folder its vectors
//! are cached in) and a missing LLM answer names `make record-locomo`.

use std::path::Path;
use std::process::Command;

use crate::support::bin;

fn memform(args: &[&str], cwd: &Path) -> (Option<i32>, String) {
    let out = Command::new(bin()).args(args).current_dir(cwd).output().expect("spawn memform");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn locomo_hints_name_the_dataset_and_the_locomo_make_target() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("locomo10.json"), crate::locomo_data::synthetic().to_string()).unwrap();
    let (code, stderr) =
        memform(&["run", "--dataset", "locomo10.json", "--embedder", "minilm", "--embed", "replay", "--out", "o"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("record them with `memform run --dataset locomo10.json --embedder minilm --embed record`"), "{stderr}");
    assert!(!stderr.contains("--dataset locomo-fixtures"), "{stderr}");

    let (code, stderr) = memform(&["run", "--dataset", "locomo10.json", "--mode", "llm", "--out", "o"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no fixture") && stderr.contains("(e.g. `make record-locomo`)"), "{stderr}");
}

/// A user's own dataset has no make target: the hint is the flag alone.
#[test]
fn a_users_dataset_gets_no_make_target() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = tmp.path().join("ds/conversations");
    std::fs::create_dir_all(&ds).unwrap();
    let conv = serde_json::json!({"format": "memform-conversation/1", "id": "c1", "speakers": ["Alice"],
        "episodes": [{"id": "s1", "timestamp": "2024-01-01T10:00:00", "turns": [{"id": "t1", "speaker": "Alice", "text": "I like tea."}]}]});
    std::fs::write(ds.join("c1.json"), conv.to_string()).unwrap();
    let (code, stderr) = memform(&["run", "--dataset", "ds", "--mode", "llm", "--out", "o"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no fixture") && stderr.trim_end().ends_with("re-record with `--llm record`"), "{stderr}");
}
