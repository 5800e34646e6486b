//! `memform compare RUN_DIR RUN_DIR…`: finished runs compared as they
//! are (no run made), an incomplete one refused; a `--out` holding a
//! comparison of other runs is not overwritten without `--force`; the
//! LLM run's smoke-test caveat heads compare.md.

use std::path::Path;
use std::process::Command;

use crate::support::{bin, scenarios_dir};

fn memform(args: &[&str], cwd: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(bin()).args(args).current_dir(cwd).output().expect("spawn memform");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn finished_runs_are_compared_as_they_are() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = scenarios_dir().display().to_string();
    for (mode, out) in [("rules", "r"), ("llm", "l"), ("rules", "r2")] {
        let (code, stdout, stderr) = memform(&["run", "--dataset", &ds, "--mode", mode, "--embedder", "minilm", "--out", out], tmp.path());
        assert_eq!(code, Some(0), "{stderr}");
        assert!(stdout.trim_start().starts_with('{'), "stdout is not a terminal: the JSON");
    }
    let before = std::fs::read(tmp.path().join("r/run.json")).unwrap();
    let (code, stdout, stderr) = memform(&["compare", "r", "l", "--out", "c"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("running"), "no run is made: {stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!((json["a"]["label"].as_str(), json["b"]["label"].as_str()), (Some("rules"), Some("llm")));
    assert_eq!(std::fs::read(tmp.path().join("r/run.json")).unwrap(), before, "the runs are only read");
    let md = std::fs::read_to_string(tmp.path().join("c/compare.md")).unwrap();
    let top: String = md.lines().take(4).collect::<Vec<_>>().join("\n");
    assert!(top.contains("bundled smoke-test model") && top.contains("(variant `llm`)"), "{top}");

    // The same comparison again is fine; another one into c is refused, then forced.
    assert_eq!(memform(&["compare", "r", "l", "--out", "c"], tmp.path()).0, Some(0));
    let (code, _, stderr) = memform(&["compare", "r", "r2", "--out", "c"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("c/compare.json: holds a comparison of ../r vs ../l already; pass --force"), "{stderr}");
    assert_eq!(memform(&["compare", "r", "r2", "--out", "c", "--force"], tmp.path()).0, Some(0));

    // An incomplete run is refused.
    let manifest = tmp.path().join("l/run.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["complete"] = false.into();
    std::fs::write(&manifest, m.to_string()).unwrap();
    let (code, _, stderr) = memform(&["compare", "r", "l", "--out", "c2"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("l/run.json") && stderr.contains("incomplete"), "{stderr}");
    assert!(!tmp.path().join("c2/compare.json").exists());
}
