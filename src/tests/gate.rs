//! The regression gate against the committed baseline: it passes on a run of
//! the baseline's own configuration and fails with exit 1 and a readable
//! table on a run made worse on purpose.

use std::path::Path;
use std::process::Command;

use crate::support::{bin, root, scenarios_dir, snapshots_dir};

fn memform(args: &[&str], cwd: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(bin()).args(args).current_dir(cwd).output().expect("spawn memform");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn run_scenarios(cwd: &Path, out: &str, extra: &[&str]) {
    let scenarios = scenarios_dir().display().to_string();
    let mut args = vec!["run", "--dataset", &scenarios, "--mode", "rules", "--embedder", "minilm", "--out", out];
    args.extend_from_slice(extra);
    let (code, _, stderr) = memform(&args, cwd);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn gate_passes_on_the_baseline_config_and_fails_on_a_worse_one() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let baseline = root().join("reports/baseline.json").display().to_string();
    run_scenarios(tmp.path(), "same", &[]);
    let (code, table, stderr) = memform(&["gate", "--baseline", &baseline, "--run", "same"], tmp.path());
    assert_eq!(code, Some(0), "{table}{stderr}");
    assert!(!table.contains("FAIL"));

    run_scenarios(tmp.path(), "worse", &["--set", "dedup_enabled=false"]);
    let (code, table, stderr) = memform(&["gate", "--baseline", &baseline, "--run", "worse"], tmp.path());
    assert_eq!(code, Some(1), "{table}{stderr}");
    assert!(table.contains("| dedup_rate |") && table.contains("FAIL"), "{table}");
    assert!(stderr.contains("gate failed"), "{stderr}");
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshots_dir());
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("gate_worse_table", table));

    let (code, _, stderr) = memform(&["gate", "--baseline", "nope.json", "--run", "same"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.starts_with("error: read nope.json"), "{stderr}");
}
