//! One run at a time per output directory, and readers see only complete
//! runs: two runs started at once into one `--out` (one proceeds, the other
//! exits 2 naming it); a re-run replaces only what the previous run wrote;
//! a file named like an artefact that memform did not write stops a run;
//! `gate` and `compare` refuse an incomplete run.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use memform::compare::{CompareOptions, Side, compare_runs};
use memform::store::Store;
use serde_json::Value;

use crate::support::{bin, root, scenarios_dir};

fn memform(args: &[&str], cwd: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(bin()).args(args).current_dir(cwd).output().expect("spawn memform");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display())))
        .unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

/// The build directories (`.memform-build-*`) in `out`.
fn build_dirs(out: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(out)
        .expect("list out")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(".memform-build-")))
        .collect()
}

/// Checks that `out` holds one complete run whose files agree with each
/// other and with its store; returns its write mode and run id.
fn consistent_run(out: &Path) -> (String, String) {
    let manifest = read_json(&out.join("run.json"));
    assert_eq!(manifest["complete"], true, "{manifest}");
    let files: Vec<&str> = manifest["files"].as_array().expect("files").iter().map(|f| f.as_str().expect("name")).collect();
    for f in ["run.json", "summary.json", "facts.jsonl", "episodes.jsonl", "store.sqlite", "report.md", "facts.parquet"] {
        assert!(files.contains(&f), "run.json does not list {f}: {files:?}");
    }
    for f in &files {
        assert!(out.join(f).is_file(), "{f} listed but missing");
    }
    let mode = manifest["write_mode"].as_str().expect("write_mode").to_string();
    let stored_rows = std::fs::read_to_string(out.join("facts.jsonl"))
        .expect("facts.jsonl")
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).expect("row")["stored"] == true)
        .count();
    let summary = read_json(&out.join("summary.json"));
    assert_eq!(summary["metrics"]["stored_facts"].as_u64(), Some(stored_rows as u64), "summary.json vs facts.jsonl");
    let in_store = Store::open(&out.join("store.sqlite")).expect("open store").facts().expect("facts").len();
    assert_eq!(in_store, stored_rows, "{mode} run: store.sqlite vs facts.jsonl");
    match mode.as_str() {
        "shadow" => assert_eq!(in_store, 0, "a shadow run stores nothing"),
        "full" => assert!(in_store > 0, "a full run of the scenarios stores facts"),
        other => panic!("unexpected write mode {other}"),
    }
    assert!(build_dirs(out).is_empty(), "a finished run leaves no build directory");
    (mode, manifest["run"]["id"].as_str().expect("run id").to_string())
}

/// A `memform run` child, killed if the test gives up on it.
struct Running(Option<Child>);

impl Running {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("running")
    }

    fn finish(&mut self) -> std::process::Output {
        self.0.take().expect("running").wait_with_output().expect("wait")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn spawn_run(out: &Path, write_mode: &str, go: &Path) -> Running {
    let child = Command::new(bin())
        .args(["run", "--dataset"])
        .arg(scenarios_dir())
        .arg("--out")
        .arg(out)
        .args(["--write-mode", write_mode, "--threads", "2"])
        // The run that takes the lock holds at its start until `go` exists:
        // the two runs overlap however fast the dataset is.
        .env("MEMFORM_FAULT_HOLD_UNTIL", go)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn memform");
    Running(Some(child))
}

/// Waits until one of `runs` exits; its index.
fn first_to_exit(runs: &mut [Running]) -> usize {
    let since = Instant::now();
    loop {
        for (i, r) in runs.iter_mut().enumerate() {
            if r.child().try_wait().expect("try_wait").is_some() {
                return i;
            }
        }
        assert!(since.elapsed() < Duration::from_secs(60), "neither run exited: the second did not fail at once");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Starts two runs into `out` at once: one must exit 2 while the other holds
/// the directory, naming it, and the other then finishes. Returns the
/// winner's write mode.
fn race(out: &Path, modes: [&str; 2], go: &Path) -> String {
    let mut runs: Vec<Running> = modes.iter().map(|m| spawn_run(out, m, go)).collect();
    let pids: Vec<u32> = runs.iter_mut().map(|r| r.child().id()).collect();
    let loser = first_to_exit(&mut runs);
    let winner = 1 - loser;
    std::fs::write(go, "").expect("write go file");
    let outputs: Vec<std::process::Output> = runs.iter_mut().map(Running::finish).collect();
    let lost = &outputs[loser];
    let stderr = String::from_utf8_lossy(&lost.stderr);
    assert_eq!(lost.status.code(), Some(2), "the second run exits 2: {stderr}");
    assert!(lost.stdout.is_empty(), "the second run prints no summary");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    let holder = format!("is in use by another memform process (pid {}, started ", pids[winner]);
    assert!(stderr.starts_with(&format!("error: {}", out.display())) && stderr.contains(&holder), "{stderr}");
    assert!(stderr.contains(&format!("run --dataset {}", scenarios_dir().display())), "names the holder's command: {stderr}");
    assert!(stderr.contains(&format!("--write-mode {}", modes[winner])), "{stderr}");
    let won = &outputs[winner];
    assert_eq!(won.status.code(), Some(0), "{}", String::from_utf8_lossy(&won.stderr));
    let (mode, id) = consistent_run(out);
    assert_eq!(mode, modes[winner], "the directory holds the run that proceeded");
    assert!(id.starts_with(&format!("{}-", pids[winner])), "run id {id} is the winner's (pid {})", pids[winner]);
    mode
}

#[test]
fn two_runs_into_one_out_dir_one_proceeds_the_other_exits_2() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // One directory for every round: each round's winner replaces the last round's run.
    let out = tmp.path().join("o");
    let mut won = std::collections::BTreeMap::<String, usize>::new();
    for i in 0..20 {
        let modes = if i % 2 == 0 { ["full", "shadow"] } else { ["shadow", "full"] };
        let mode = race(&out, modes, &tmp.path().join(format!("go-{i}")));
        *won.entry(mode).or_default() += 1;
    }
    eprintln!("20 rounds, won: {won:?}");
    // The same configuration twice (the store's UNIQUE and "database is locked" failures).
    for i in 0..3 {
        race(&out, ["full", "full"], &tmp.path().join(format!("go-same-{i}")));
    }
}

#[test]
fn a_shadow_rerun_over_a_full_run_leaves_an_empty_store() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    for mode in ["full", "shadow", "full"] {
        let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "o", "--write-mode", mode], tmp.path());
        assert_eq!(code, Some(0), "{stderr}");
        assert_eq!(consistent_run(&tmp.path().join("o")).0, mode);
    }
}

#[test]
fn a_rerun_replaces_only_what_the_previous_run_wrote() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    let out = tmp.path().join("o");
    std::fs::create_dir_all(&out).expect("mkdir");
    std::fs::write(out.join("notes.md"), "mine").expect("notes.md");
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "o"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let first = consistent_run(&out).1;
    assert!(!read_json(&out.join("run.json"))["files"].as_array().expect("files").contains(&"notes.md".into()));

    // What a previous run wrote and this one does not (an artefact of an
    // older memform, say) goes; so do the store's SQLite leftovers and a
    // killed run's build directory. A plot this run does not draw goes too.
    let mut manifest = read_json(&out.join("run.json"));
    manifest["files"].as_array_mut().expect("files").push("plot_old.svg".into());
    std::fs::write(out.join("run.json"), manifest.to_string()).expect("run.json");
    std::fs::write(out.join("plot_old.svg"), "<svg/>").expect("plot_old.svg");
    std::fs::write(out.join("store.sqlite-wal"), "stale").expect("wal");
    std::fs::write(out.join("store.sqlite-journal"), "stale").expect("journal");
    std::fs::create_dir_all(out.join(".memform-build-1-killed/x")).expect("stale build dir");
    std::fs::write(out.join(".memform-build-1-killed/store.sqlite"), "partial").expect("stale store");
    std::fs::write(out.join("report.md"), "edited by hand").expect("report.md");
    assert!(out.join("plot_verdicts.svg").is_file(), "the full run draws verdicts");
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "o", "--write-mode", "shadow"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let (mode, second) = consistent_run(&out);
    assert_eq!(mode, "shadow");
    assert_ne!(first, second);
    assert_eq!(std::fs::read_to_string(out.join("notes.md")).expect("notes.md"), "mine", "a user's file is kept");
    for gone in ["plot_old.svg", "store.sqlite-wal", "store.sqlite-journal", ".memform-build-1-killed", "plot_verdicts.svg"] {
        assert!(!out.join(gone).exists(), "{gone} should be gone");
    }
    let md = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert!(md.starts_with("# memform run: scenarios"), "report.md is memform's (run.json listed it), so it is replaced");
    let mut names: Vec<String> =
        std::fs::read_dir(&out).expect("list").map(|e| e.expect("entry").file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    let mut expected: Vec<String> = read_json(&out.join("run.json"))["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f.as_str().expect("name").to_string())
        .collect();
    expected.extend([".memform.lock".to_string(), "notes.md".to_string()]);
    expected.sort();
    assert_eq!(names, expected, "the run's files, the lock file and the user's notes, nothing else");
}

#[test]
fn a_file_named_like_an_artefact_that_memform_did_not_write_stops_the_run() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    let out = tmp.path().join("o");
    std::fs::create_dir_all(&out).expect("mkdir");
    std::fs::write(out.join("notes.md"), "mine").expect("notes.md");
    std::fs::write(out.join("report.md"), "my own report").expect("report.md");
    let (code, stdout, stderr) = memform(&["run", "--dataset", &ds, "--out", "o"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stdout.is_empty());
    assert_eq!(
        stderr.trim(),
        "error: o/report.md: not written by memform (no run.json here lists it); move it away or choose another --out"
    );
    assert_eq!(std::fs::read_to_string(out.join("report.md")).expect("report.md"), "my own report");
    assert_eq!(std::fs::read_to_string(out.join("notes.md")).expect("notes.md"), "mine");
    assert!(!out.join("run.json").exists() && !out.join("store.sqlite").exists(), "nothing written");
    assert!(build_dirs(&out).is_empty());

    // A run.json that is not memform's is the user's too.
    std::fs::remove_file(out.join("report.md")).expect("rm");
    std::fs::write(out.join("run.json"), "{\"mine\": true}").expect("run.json");
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "o"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.trim(), "error: o/run.json: not a memform run's manifest; move it away or choose another --out");
    assert_eq!(std::fs::read_to_string(out.join("run.json")).expect("run.json"), "{\"mine\": true}");
}

/// A run killed after its last episode committed, before its reports.
fn killed_run(cwd: &Path, out: &str) {
    let episodes = memform::dataset::load(&scenarios_dir()).expect("load").conversations.iter().map(|c| c.episodes.len()).sum::<usize>();
    let status = Command::new(bin())
        .args(["run", "--dataset"])
        .arg(scenarios_dir())
        .args(["--out", out])
        .env("MEMFORM_FAULT_ABORT_AFTER_WRITES", episodes.to_string())
        .current_dir(cwd)
        .stderr(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .expect("spawn memform");
    assert_eq!(status.code(), None, "killed by the fault");
}

#[test]
fn gate_and_compare_refuse_an_incomplete_run() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    let baseline = root().join("reports/baseline.json").display().to_string();
    let gate = |run: &str| memform(&["gate", "--baseline", &baseline, "--run", run, "--allow-dataset-change"], tmp.path());

    // Killed before it finished: nothing of it reached the out directory.
    killed_run(tmp.path(), "killed");
    assert_eq!(build_dirs(&tmp.path().join("killed")).len(), 1, "the killed run's build directory stays");
    let (code, stdout, stderr) = gate("killed");
    assert_eq!((code, stdout.as_str()), (Some(2), ""), "{stderr}");
    assert!(stderr.starts_with("error: read killed/run.json: "), "{stderr}");

    // A complete run that lost a file it lists (a report.md).
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "damaged"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(gate("damaged").0, Some(0), "the complete run passes");
    std::fs::remove_file(tmp.path().join("damaged/report.md")).expect("rm report.md");
    let (code, stdout, stderr) = gate("damaged");
    assert_eq!((code, stdout.as_str()), (Some(2), ""), "{stderr}");
    assert_eq!(stderr.trim(), "error: damaged/report.md: listed in run.json but missing: incomplete run; run it again");
    let side = |dir: &str| Side { label: dir.into(), dir: tmp.path().join(dir) };
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "ok"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let err = compare_runs(&side("ok"), &side("damaged"), &tmp.path().join("cmp"), CompareOptions::default()).expect_err("incomplete B");
    assert!(err.to_string().contains("damaged/report.md: listed in run.json but missing: incomplete run"), "{err}");

    // What a run killed while writing its reports left before this fix:
    // summary.json without report.md, and a run.json with no completion mark.
    let mut manifest = read_json(&tmp.path().join("damaged/run.json"));
    let m = manifest.as_object_mut().expect("object");
    m.remove("complete");
    m.remove("files");
    std::fs::write(tmp.path().join("damaged/run.json"), manifest.to_string()).expect("run.json");
    let (code, _, stderr) = gate("damaged");
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: damaged/run.json: incomplete run: no \"complete\": true"), "{stderr}");
    let err = compare_runs(&side("damaged"), &side("ok"), &tmp.path().join("cmp"), CompareOptions::default()).expect_err("incomplete A");
    assert!(err.to_string().contains("damaged/run.json: incomplete run"), "{err}");
}

#[test]
fn compare_reruns_an_incomplete_run_instead_of_reusing_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    let args =
        ["compare", "--dataset", &ds, "--modes", "rules,rules", "--set-b", "dedup_enabled=false", "--runs-dir", "runs", "--out", "cmp"];
    let (code, _, stderr) = memform(&args, tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let a = tmp.path().join("runs/scenarios-rules");
    std::fs::remove_file(a.join("report.md")).expect("rm report.md");
    let (code, _, stderr) = memform(&args, tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("running rules into runs/scenarios-rules"), "the damaged side runs again: {stderr}");
    assert!(stderr.contains("reusing runs/scenarios-rules+dedup_enabled=false"), "the complete side is reused: {stderr}");
    consistent_run(&a);
}

#[test]
fn a_sweep_into_a_locked_directory_exits_2() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("o");
    let go = tmp.path().join("go");
    let mut holder = spawn_run(&out, "full", &go);
    // Wait until the run holds the lock (its build directory exists).
    let since = Instant::now();
    while build_dirs_or_none(&out).is_empty() {
        assert!(since.elapsed() < Duration::from_secs(60), "the run did not start");
        std::thread::sleep(Duration::from_millis(5));
    }
    let ds = scenarios_dir().display().to_string();
    let (code, _, stderr) = memform(&["sweep", "--dataset", &ds, "--grid", "near_dup_threshold=0.9,0.95", "--out", "o"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains(&format!("is in use by another memform process (pid {}", holder.child().id())), "{stderr}");
    std::fs::write(&go, "").expect("go");
    assert_eq!(holder.finish().status.code(), Some(0));
    consistent_run(&out);
}

fn build_dirs_or_none(out: &Path) -> Vec<PathBuf> {
    if out.is_dir() { build_dirs(out) } else { Vec::new() }
}
