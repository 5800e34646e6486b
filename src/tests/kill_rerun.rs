//! A run killed mid-way leaves a consistent store; running again into the
//! same `--out` starts clean and gives what an uninterrupted run gives.

use std::process::Command;

use memform::store::Store;

use crate::support::{bin, jsonl_without_timings, scenarios_dir};

fn run_cli(out: &std::path::Path, abort_after: Option<usize>) -> std::process::Output {
    let mut cmd = Command::new(bin());
    cmd.args(["run", "--dataset"]).arg(scenarios_dir()).arg("--out").arg(out).args(["--threads", "2"]);
    if let Some(n) = abort_after {
        cmd.env("MEMFORM_FAULT_ABORT_AFTER_WRITES", n.to_string());
    }
    cmd.output().expect("spawn memform")
}

#[test]
fn killed_run_leaves_consistent_store_and_rerun_starts_clean() {
    let killed = tempfile::tempdir().expect("tempdir");
    let out = run_cli(killed.path(), Some(5));
    assert!(!out.status.success(), "the fault must kill the run");
    assert_eq!(out.status.code(), None, "killed by a signal, not an exit code");
    let store = Store::open(&killed.path().join("store.sqlite")).expect("open killed store");
    assert_eq!(store.consistency_problems().expect("check"), Vec::<String>::new());
    let dump = store.dump().expect("dump");
    let finished = dump.split("## episode_runs\n").nth(1).map_or(0, |s| s.lines().count());
    assert!(finished >= 5, "at least the 5 committed episodes are kept, got {finished}");
    assert!(!killed.path().join("summary.json").exists(), "no summary for a killed run");
    drop(store);

    let rerun = run_cli(killed.path(), None);
    assert_eq!(rerun.status.code(), Some(0), "{}", String::from_utf8_lossy(&rerun.stderr));
    let fresh = tempfile::tempdir().expect("tempdir");
    assert_eq!(run_cli(fresh.path(), None).status.code(), Some(0));
    assert_eq!(jsonl_without_timings(&killed.path().join("facts.jsonl")), jsonl_without_timings(&fresh.path().join("facts.jsonl")));
    let a = Store::open(&killed.path().join("store.sqlite")).expect("open").dump().expect("dump");
    let b = Store::open(&fresh.path().join("store.sqlite")).expect("open").dump().expect("dump");
    assert_eq!(a, b, "rerun store equals a fresh run's");
}
