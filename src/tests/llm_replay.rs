//! LLM mode replays the committed fixtures with no server, and a deleted
//! fixture is a loud miss: exit 2 naming the stage, conversation, episode,
//! key and the closest recorded request.

use std::path::Path;
use std::process::Command;

use crate::support::{bin, scenarios_dir};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

fn run_llm(dataset: &Path, out: &Path) -> (Option<i32>, String, String) {
    let o = Command::new(bin())
        // The embedder the fixtures were recorded with (`make record`): another one
        // dedupes and pairs differently, so the judge would be asked what was never recorded.
        .args(["run", "--mode", "llm", "--embedder", "minilm", "--set", "llm_url=http://127.0.0.1:9"])
        .arg("--dataset")
        .arg(dataset)
        .arg("--out")
        .arg(out)
        .output()
        .expect("spawn");
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn replay_needs_no_server_and_a_deleted_fixture_fails_loudly() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = tmp.path().join("scenarios");
    copy_dir(&scenarios_dir(), &ds);

    // No server listens on port 9: every answer must come from fixtures.
    let (code, stdout, stderr) = run_llm(&ds, &tmp.path().join("full"));
    assert_eq!(code, Some(0), "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&stdout).expect("summary");
    let m = &summary["metrics"];
    assert!(m["llm_calls"].as_u64().unwrap_or(0) >= m["episodes"].as_u64().unwrap_or(u64::MAX), "{m}");
    assert!(m["prompt_tokens"].as_u64().unwrap_or(0) > 0 && m["completion_tokens"].as_u64().unwrap_or(0) > 0, "{m}");
    assert!(m["warnings_by_kind"].is_object(), "{m}");

    // Delete the extraction fixture of job-change's first episode.
    let fixtures = std::fs::read_dir(ds.join("fixtures")).expect("fixtures").next().expect("model dir").expect("entry").path();
    let victim = std::fs::read_dir(&fixtures)
        .expect("read")
        .map(|e| e.expect("entry").path())
        .find(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            text.contains("\"stage\": \"extract\"")
                && text.contains("\"conversation\": \"job-change\"")
                && text.contains("\"episode\": \"e1\"")
        })
        .expect("the job-change e1 extraction fixture");
    let key = victim.file_stem().expect("stem").to_string_lossy().into_owned();
    std::fs::remove_file(&victim).expect("remove");
    let (code, _, stderr) = run_llm(&ds, &tmp.path().join("miss"));
    assert_eq!(code, Some(2), "{stderr}");
    let error: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(error.len(), 1, "{stderr}");
    let e = error[0];
    for part in ["extract", "conversation job-change", "episode e1", key.as_str(), "closest recorded"] {
        assert!(e.contains(part), "the miss names {part}: {e}");
    }
}
