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
    assert!(stderr.starts_with("error: nope.json: no such baseline"), "{stderr}");
}

/// The committed baseline records what each entry was run with: a run of a
/// tuned config is named as such (a warning naming the changed key, on
/// stderr and as a GitHub annotation), and `--strict` fails it.
#[test]
fn a_tuned_config_is_named_and_fails_with_strict() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let baseline = root().join("reports/baseline.json").display().to_string();
    run_scenarios(tmp.path(), "same", &[]);
    let (code, _, stderr) = memform(&["gate", "--strict", "--baseline", &baseline, "--run", "same"], tmp.path());
    assert_eq!(code, Some(0), "the baseline's own configuration passes --strict: {stderr}");
    assert!(!stderr.contains("warning") && !stderr.contains("note:"), "{stderr}");

    run_scenarios(tmp.path(), "tuned", &["--set", "soda.near_dup_threshold=0.97"]);
    let (_, _, stderr) = memform(&["gate", "--baseline", &baseline, "--run", "tuned"], tmp.path());
    assert!(
        stderr
            .contains("warning: tuned differs from the baseline's rules run in config soda.near_dup_threshold: baseline default, run 0.97"),
        "{stderr}"
    );
    assert!(!stderr.contains("--strict"), "{stderr}");
    let (code, stdout, stderr) =
        memform(&["gate", "--strict", "--format", "github", "--baseline", &baseline, "--run", "tuned"], tmp.path());
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("gate failed: --strict: tuned (rules mode)"), "{stderr}");
    assert!(stdout.lines().any(|l| l.starts_with("::warning ") && l.contains("soda.near_dup_threshold")), "{stdout}");

    // Accepting it names the change; a missing baseline suggests making one.
    std::fs::copy(root().join("reports/baseline.json"), tmp.path().join("b.json")).expect("copy");
    let (code, _, stderr) = memform(&["gate", "--update-baseline", "--baseline", "b.json", "--run", "tuned"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("accepted a run that differs") && stderr.contains("config soda.near_dup_threshold: baseline default, run 0.97"),
        "{stderr}"
    );
    let (code, _, stderr) = memform(&["gate", "--baseline", "missing.json", "--run", "same"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("missing.json: no such baseline") && stderr.contains("--update-baseline"), "{stderr}");
}
