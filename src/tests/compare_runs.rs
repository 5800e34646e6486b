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

/// signet has no entity resolution stage: its `entity_resolution_rate`
/// reads "n/a" with the reason in its report.md and in a comparison of
/// three variants (its column "n/a", its uplift "–"), never 0.
#[test]
fn a_metric_a_profile_does_not_compute_is_na_in_report_md_and_three_variant_compares() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = scenarios_dir().display().to_string();
    for (profile, out) in [("soda", "a"), ("signet", "b"), ("soda", "c")] {
        let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--profile", profile, "--out", out], tmp.path());
        assert_eq!(code, Some(0), "{stderr}");
    }
    let report = std::fs::read_to_string(tmp.path().join("b/report.md")).unwrap();
    let row = report.lines().find(|l| l.starts_with("| `entity_resolution_rate` |")).expect("the metric's row");
    assert!(row.starts_with("| `entity_resolution_rate` | n/a | rate | n/a: signet links entities inline"), "{row}");
    let soda = std::fs::read_to_string(tmp.path().join("a/report.md")).unwrap();
    assert!(!soda.lines().any(|l| l.starts_with("| `entity_resolution_rate` | n/a")), "soda computes it");

    let (code, _, stderr) = memform(&["compare", "a", "b", "c", "--out", "cmp"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let md = std::fs::read_to_string(tmp.path().join("cmp/compare.md")).unwrap();
    let row = md.lines().find(|l| l.starts_with("| `entity_resolution_rate`")).expect("the metric's row");
    let cells: Vec<&str> = row.split(" | ").collect();
    assert_eq!(cells[2], "n/a", "B is signet: {row}");
    assert_ne!(cells[1], "n/a", "A is soda: {row}");
    assert!(cells[4].starts_with("– (") && cells[4].contains("n/a: signet links entities inline"), "B − A: {row}");
    assert!(cells[5].starts_with("**"), "C − A is compared: {row}");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(tmp.path().join("cmp/compare.json")).unwrap()).unwrap();
    let m = json["metrics"].as_array().unwrap().iter().find(|r| r["metric"] == "entity_resolution_rate").unwrap();
    assert_eq!(m["not_computed"], serde_json::json!([1]));
    assert!(tmp.path().join("cmp/report.html").is_file(), "the comparison's page");
}
