//! A run killed mid-way leaves nothing in `--out` itself (its private
//! build directory, `--out/.memform-build-<id>/`, is never read: its store
//! is written in batches without durability, so it may hold a partial or
//! torn file); running again into the same `--out` removes it, starts clean
//! and gives what an uninterrupted run gives; a run killed while replacing a
//! finished run leaves that run byte-identical and readable.

use std::path::{Path, PathBuf};
use std::process::Command;

use memform::store::Store;

use crate::support::{FAULT_OPT_IN, bin, jsonl_without_timings, scenarios_dir};

fn run_cli(out: &Path, abort_after: Option<usize>) -> std::process::Output {
    let mut cmd = Command::new(bin());
    cmd.args(["run", "--dataset"]).arg(scenarios_dir()).arg("--out").arg(out).args(["--threads", "2"]);
    if let Some(n) = abort_after {
        cmd.env("MEMFORM_FAULT_ABORT_AFTER_WRITES", n.to_string()).env(FAULT_OPT_IN.0, FAULT_OPT_IN.1);
    }
    cmd.output().expect("spawn memform")
}

fn build_dirs(out: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(out)
        .expect("list out")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(".memform-build-")))
        .collect()
}

#[test]
fn killed_run_leaves_consistent_store_and_rerun_starts_clean() {
    let killed = tempfile::tempdir().expect("tempdir");
    let out = run_cli(killed.path(), Some(5));
    assert!(!out.status.success(), "the fault must kill the run");
    assert_eq!(out.status.code(), None, "killed by a signal, not an exit code");
    for f in ["run.json", "summary.json", "facts.jsonl", "store.sqlite"] {
        assert!(!killed.path().join(f).exists(), "{f}: nothing of a killed run reaches --out");
    }
    let builds = build_dirs(killed.path());
    assert_eq!(builds.len(), 1, "the killed run's build directory: {builds:?}");
    assert!(!builds[0].join("summary.json").exists(), "no summary for a killed run");

    let rerun = run_cli(killed.path(), None);
    assert_eq!(rerun.status.code(), Some(0), "{}", String::from_utf8_lossy(&rerun.stderr));
    assert_eq!(build_dirs(killed.path()), Vec::<PathBuf>::new(), "the rerun removed the killed run's build directory");
    let fresh = tempfile::tempdir().expect("tempdir");
    assert_eq!(run_cli(fresh.path(), None).status.code(), Some(0));
    assert_eq!(jsonl_without_timings(&killed.path().join("facts.jsonl")), jsonl_without_timings(&fresh.path().join("facts.jsonl")));
    let dump_of = |dir: &Path| Store::open(&dir.join("store.sqlite")).expect("open").dump().expect("dump");
    assert_eq!(dump_of(killed.path()), dump_of(fresh.path()), "rerun store equals a fresh run's");

    // Killed again, now over a finished run: that run stays, whole and readable.
    let manifest = std::fs::read_to_string(killed.path().join("run.json")).expect("run.json");
    let facts = std::fs::read(killed.path().join("facts.jsonl")).expect("facts.jsonl");
    let dump = dump_of(killed.path());
    let store_bytes = std::fs::read(killed.path().join("store.sqlite")).expect("store.sqlite");
    assert_eq!(run_cli(killed.path(), Some(5)).status.code(), None);
    assert_eq!(std::fs::read_to_string(killed.path().join("run.json")).expect("run.json"), manifest);
    assert_eq!(std::fs::read(killed.path().join("facts.jsonl")).expect("facts.jsonl"), facts);
    assert_eq!(dump_of(killed.path()), dump);
    assert_eq!(std::fs::read(killed.path().join("store.sqlite")).expect("store.sqlite"), store_bytes, "the store file is untouched");
    let run = memform::gate::read_run(killed.path()).expect("the finished run is still complete");
    assert_eq!(run.mode, "rules");
}

/// The fault-injection variables need a second opt-in
/// (`MEMFORM_FAULT_INJECTION=tests-only`): a stray
/// `MEMFORM_FAULT_ABORT_AFTER_WRITES`, alone or with another opt-in value,
/// is ignored and the run finishes; with the opt-in the same variable
/// aborts the run.
#[test]
fn a_stray_fault_variable_is_ignored_without_the_opt_in() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for (name, opt_in) in [("alone", None), ("wrong", Some("1")), ("opted", Some(FAULT_OPT_IN.1))] {
        let out = tmp.path().join(name);
        let mut cmd = Command::new(bin());
        cmd.args(["run", "--dataset"]).arg(scenarios_dir()).arg("--out").arg(&out).env("MEMFORM_FAULT_ABORT_AFTER_WRITES", "1");
        cmd.env_remove(FAULT_OPT_IN.0);
        if let Some(v) = opt_in {
            cmd.env(FAULT_OPT_IN.0, v);
        }
        let status = cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).status().expect("spawn memform");
        if opt_in == Some(FAULT_OPT_IN.1) {
            assert!(!status.success(), "opted in: the run aborts after its first write");
            assert!(!out.join("run.json").exists(), "an aborted run leaves no readable run");
        } else {
            assert!(status.success(), "{name}: the variable is ignored ({status})");
            memform::gate::read_run(&out).expect("a complete run");
        }
    }
}
