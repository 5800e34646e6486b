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

use crate::support::{FAULT_OPT_IN, bin, root, scenarios_dir};

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
        .env(FAULT_OPT_IN.0, FAULT_OPT_IN.1)
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

    // What a previous run wrote and this one does not (a plot this run does
    // not draw) goes; so do the store's SQLite leftovers and a killed run's
    // build directory (memform's marker in it names its run).
    std::fs::write(out.join("store.sqlite-wal"), "stale").expect("wal");
    std::fs::write(out.join("store.sqlite-journal"), "stale").expect("journal");
    std::fs::create_dir_all(out.join(".memform-build-1-killed/x")).expect("stale build dir");
    std::fs::write(out.join(".memform-build-1-killed/.memform-build"), "1-killed").expect("marker");
    std::fs::write(out.join(".memform-build-1-killed/store.sqlite"), "partial").expect("stale store");
    std::fs::write(out.join("report.md"), "edited by hand").expect("report.md");
    assert!(out.join("plot_verdicts.svg").is_file(), "the full run draws verdicts");
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "o", "--write-mode", "shadow"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let (mode, second) = consistent_run(&out);
    assert_eq!(mode, "shadow");
    assert_ne!(first, second);
    assert_eq!(std::fs::read_to_string(out.join("notes.md")).expect("notes.md"), "mine", "a user's file is kept");
    for gone in ["store.sqlite-wal", "store.sqlite-journal", ".memform-build-1-killed", "plot_verdicts.svg"] {
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
        .env(FAULT_OPT_IN.0, FAULT_OPT_IN.1)
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
    let a = tmp.path().join("runs/scenarios-soda-rules");
    std::fs::remove_file(a.join("report.md")).expect("rm report.md");
    let (code, _, stderr) = memform(&args, tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("running rules into runs/scenarios-soda-rules"), "the damaged side runs again: {stderr}");
    assert!(stderr.contains("reusing runs/scenarios-soda-rules+dedup_enabled=false"), "the complete side is reused: {stderr}");
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
    let (code, _, stderr) = memform(&["sweep", "--dataset", &ds, "--grid", "soda.near_dup_threshold=0.9,0.95", "--out", "o"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains(&format!("is in use by another memform process (pid {}", holder.child().id())), "{stderr}");
    std::fs::write(&go, "").expect("go");
    assert_eq!(holder.finish().status.code(), Some(0));
    consistent_run(&out);
}

fn build_dirs_or_none(out: &Path) -> Vec<PathBuf> {
    if out.is_dir() { build_dirs(out) } else { Vec::new() }
}

/// The memform-named files in `out` (artefacts, plots) that its `run.json` does not list.
fn unlisted_artefacts(out: &Path) -> Vec<String> {
    let listed: Vec<String> = read_json(&out.join("run.json"))["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f.as_str().expect("name").to_string())
        .collect();
    let mut names: Vec<String> = std::fs::read_dir(out)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.') && n != "notes.md" && !listed.contains(n))
        .collect();
    names.sort();
    names
}

/// `memform report` beside `memform run` into one directory, round after
/// round with the report started at a different moment of the run each
/// time: each either finishes or exits 2 naming the other as the holder,
/// and the directory always holds one complete run whose files are all
/// there and listed, whose report describes it, and that `gate` and a
/// later run accept.
#[test]
fn report_beside_run_into_one_directory_never_breaks_it() {
    const ROUNDS: u32 = 40;
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    let baseline = root().join("reports/baseline.json").display().to_string();
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "o"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let out = tmp.path().join("o");
    // How long a run takes here: the report starts at spread points of it.
    let since = Instant::now();
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "o", "--threads", "1", "--no-qa"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let span = since.elapsed().as_millis() as u64;
    let (mut runs_won, mut reports_won) = (0, 0);
    for round in 0..ROUNDS {
        let mode = if round % 2 == 0 { "shadow" } else { "full" };
        let mut run = Running(Some(
            Command::new(bin())
                .args(["run", "--dataset", &ds, "--out", "o", "--threads", "1", "--no-qa", "--write-mode", mode])
                .current_dir(tmp.path())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn run"),
        ));
        let pid = run.child().id();
        std::thread::sleep(Duration::from_millis(span * u64::from(round) / u64::from(ROUNDS)));
        let (report_code, _, report_err) = memform(&["report", "o"], tmp.path());
        let run_out = run.finish();
        let run_err = String::from_utf8_lossy(&run_out.stderr);
        for (what, code, err) in [("run", run_out.status.code(), run_err.as_ref()), ("report", report_code, report_err.as_str())] {
            match code {
                Some(0) => {}
                Some(2) => assert!(err.contains("is in use by another memform process"), "round {round}: {what}: {err}"),
                other => panic!("round {round}: {what} exited {other:?}: {err}"),
            }
        }
        runs_won += usize::from(run_out.status.code() == Some(0));
        reports_won += usize::from(report_code == Some(0));
        let (written_mode, id) = consistent_run(&out);
        if run_out.status.code() == Some(0) {
            assert_eq!(written_mode, mode, "round {round}: the directory holds the run that exited 0");
            assert!(id.starts_with(&format!("{pid}-")), "round {round}: run id {id} is not the run's (pid {pid})");
        }
        assert!(unlisted_artefacts(&out).is_empty(), "round {round}: files no run.json lists: {:?}", unlisted_artefacts(&out));
        let md = std::fs::read_to_string(out.join("report.md")).expect("report.md");
        assert!(md.contains(&format!("| write mode | {written_mode} |")), "round {round}: report.md describes another run");
    }
    eprintln!("{ROUNDS} rounds over {span} ms: the run finished in {runs_won}, the report in {reports_won}");
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "o"], tmp.path());
    assert_eq!(code, Some(0), "a later run into the directory: {stderr}");
    let (code, _, stderr) = memform(&["gate", "--baseline", &baseline, "--run", "o", "--allow-dataset-change"], tmp.path());
    assert!(code == Some(0) || code == Some(1), "gate refused the directory: {stderr}");
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).expect("symlink");
}

/// A symbolic link planted in an output directory is refused by name,
/// never written through: `.memform.lock`, a run's `report.md`,
/// `report`'s `report.md`, `sweep`'s `sweep.md`, `compare`'s `compare.md`.
#[cfg(unix)]
#[test]
fn planted_symlinks_are_refused_by_name_and_never_written_through() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    let victim = tmp.path().join("victim.txt");
    std::fs::write(&victim, "precious").expect("victim");
    let intact = || assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "precious", "written through a symlink");

    std::fs::create_dir_all(tmp.path().join("l")).expect("mkdir");
    symlink(&victim, &tmp.path().join("l/.memform.lock"));
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "l"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: l/.memform.lock: is a symbolic link"), "{stderr}");
    intact();

    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "o"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    std::fs::remove_file(tmp.path().join("o/report.md")).expect("rm");
    symlink(&victim, &tmp.path().join("o/report.md"));
    let (code, _, stderr) = memform(&["report", "o"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.starts_with("error: o/report.md: is a symbolic link"), "{stderr}");
    intact();
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "o"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.starts_with("error: o/report.md: is a symbolic link"), "{stderr}");
    intact();

    std::fs::create_dir_all(tmp.path().join("s")).expect("mkdir");
    symlink(&victim, &tmp.path().join("s/sweep.md"));
    let (code, _, stderr) = memform(&["sweep", "--dataset", &ds, "--grid", "soda.near_dup_threshold=0.9,0.95", "--out", "s"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.starts_with("error: s/sweep.md: is a symbolic link"), "{stderr}");
    intact();

    std::fs::create_dir_all(tmp.path().join("c")).expect("mkdir");
    symlink(&victim, &tmp.path().join("c/compare.md"));
    let args =
        ["compare", "--dataset", &ds, "--modes", "rules,rules", "--set-b", "dedup_enabled=false", "--runs-dir", "runs", "--out", "c"];
    let (code, _, stderr) = memform(&args, tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.starts_with("error: c/compare.md: is a symbolic link"), "{stderr}");
    intact();
}

/// The lock file records the command line (which may carry a URL): it is
/// the owner's alone, also when an older memform left it readable.
#[cfg(unix)]
#[test]
fn the_lock_file_is_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    let mode = |p: &Path| std::fs::metadata(p).expect("lock file").permissions().mode() & 0o777;
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "o"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let lock = tmp.path().join("o/.memform.lock");
    assert_eq!(mode(&lock), 0o600);
    std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let (code, _, stderr) = memform(&["report", "o"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(mode(&lock), 0o600);
}

/// `report` refuses what `gate` refuses: an incomplete run, a `run.json`
/// of `{}`, a `files` list that leads out of the directory, a metric that
/// is not a number.
#[test]
fn report_refuses_what_gate_refuses() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "o"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let out = tmp.path().join("o");
    let good_manifest = std::fs::read_to_string(out.join("run.json")).expect("run.json");
    let good_summary = std::fs::read_to_string(out.join("summary.json")).expect("summary.json");
    let mut incomplete = read_json(&out.join("run.json"));
    incomplete["complete"] = false.into();
    let mut escaping = read_json(&out.join("run.json"));
    escaping["files"].as_array_mut().expect("files").push("../../../etc/passwd".into());
    let mut summary = read_json(&out.join("summary.json"));
    summary["metrics"]["turn_f1"] = "excellent".into();
    let cases: [(&str, String, &str, &str); 4] = [
        ("run.json", incomplete.to_string(), "o/run.json: incomplete run", "incomplete"),
        ("run.json", "{}".into(), "o/run.json: incomplete run", "{}"),
        ("run.json", escaping.to_string(), "o/run.json: files: \"../../../etc/passwd\" is not a file name", "escaping"),
        ("summary.json", summary.to_string(), "o/summary.json: metrics.turn_f1: \"excellent\" is not a number", "non-numeric"),
    ];
    let baseline = root().join("reports/baseline.json").display().to_string();
    for (file, text, expected, what) in cases {
        std::fs::write(out.join(file), &text).expect("tamper");
        let before_report = std::fs::read(out.join("report.md")).expect("report.md");
        let (code, stdout, stderr) = memform(&["report", "o"], tmp.path());
        assert_eq!((code, stdout.as_str()), (Some(2), ""), "{what}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{what}: {stderr}");
        assert!(stderr.starts_with(&format!("error: {expected}")), "{what}: {stderr}");
        assert_eq!(std::fs::read(out.join("report.md")).expect("report.md"), before_report, "{what}: report.md was rewritten");
        let (code, _, stderr) = memform(&["gate", "--baseline", &baseline, "--run", "o", "--allow-dataset-change"], tmp.path());
        assert_eq!(code, Some(2), "{what}: gate refuses it too: {stderr}");
        std::fs::write(out.join("run.json"), &good_manifest).expect("restore");
        std::fs::write(out.join("summary.json"), &good_summary).expect("restore");
    }
    let (code, _, stderr) = memform(&["report", "o"], tmp.path());
    assert_eq!(code, Some(0), "restored: {stderr}");
}

/// Only memform's own artefact names are ever deleted: a forged `run.json`
/// listing `notes.md` deletes nothing of the user's, and a user's
/// directory named like a build directory (no marker of memform's in it)
/// is kept, while a killed run's build directory goes.
#[test]
fn a_forged_file_list_or_a_users_build_named_directory_deletes_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    let out = tmp.path().join("o");
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "o"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    std::fs::write(out.join("notes.md"), "mine").expect("notes.md");
    let mut manifest = read_json(&out.join("run.json"));
    manifest["files"].as_array_mut().expect("files").push("notes.md".into());
    std::fs::write(out.join("run.json"), manifest.to_string()).expect("forge");
    std::fs::create_dir_all(out.join(".memform-build-mine/data")).expect("user dir");
    std::fs::write(out.join(".memform-build-mine/data/keep.txt"), "mine").expect("user file");
    killed_run(tmp.path(), "o");
    assert_eq!(build_dirs(&out).len(), 2, "the killed run's build directory and the user's");
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "o"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    consistent_run_but(&out, &[".memform-build-mine"]);
    assert_eq!(std::fs::read_to_string(out.join("notes.md")).expect("notes.md kept"), "mine");
    assert_eq!(std::fs::read_to_string(out.join(".memform-build-mine/data/keep.txt")).expect("user dir kept"), "mine");
    assert_eq!(build_dirs(&out), vec![out.join(".memform-build-mine")], "the killed run's build directory went");
}

/// [`consistent_run`], with directories `keep` (a user's) allowed beside the run.
fn consistent_run_but(out: &Path, keep: &[&str]) {
    let moved: Vec<PathBuf> = keep.iter().map(|k| out.parent().expect("parent").join(format!("kept-{k}"))).collect();
    for (k, m) in keep.iter().zip(&moved) {
        std::fs::rename(out.join(k), m).expect("move aside");
    }
    consistent_run(out);
    for (k, m) in keep.iter().zip(&moved) {
        std::fs::rename(m, out.join(k)).expect("move back");
    }
}

/// `gate --junit` never overwrites the gate's own inputs.
#[test]
fn gate_junit_never_overwrites_the_gates_inputs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "o"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    std::fs::copy(root().join("reports/baseline.json"), tmp.path().join("baseline.json")).expect("copy baseline");
    let baseline = std::fs::read(tmp.path().join("baseline.json")).expect("baseline");
    let summary = std::fs::read(tmp.path().join("o/summary.json")).expect("summary");
    for (junit, expected) in [
        ("baseline.json", "error: --junit baseline.json: is the baseline baseline.json, an input of this command"),
        ("./o/../baseline.json", "error: --junit ./o/../baseline.json: is the baseline baseline.json"),
        ("o/summary.json", "error: --junit o/summary.json: is inside the run directory o, an input of this command"),
    ] {
        let (code, stdout, stderr) =
            memform(&["gate", "--baseline", "baseline.json", "--run", "o", "--allow-dataset-change", "--junit", junit], tmp.path());
        assert_eq!((code, stdout.as_str()), (Some(2), ""), "{junit}: {stderr}");
        assert!(stderr.starts_with(expected), "{junit}: {stderr}");
    }
    assert_eq!(std::fs::read(tmp.path().join("baseline.json")).expect("baseline"), baseline);
    assert_eq!(std::fs::read(tmp.path().join("o/summary.json")).expect("summary"), summary);
    let (code, _, stderr) =
        memform(&["gate", "--baseline", "baseline.json", "--run", "o", "--allow-dataset-change", "--junit", "gate.xml"], tmp.path());
    assert!(code == Some(0) || code == Some(1), "{stderr}");
    assert!(tmp.path().join("gate.xml").is_file());
}

/// `sweep` and `compare` keep a user's own `sweep.md`/`compare.md` (as
/// `run` keeps a user's `report.md`), and a run, a sweep and a comparison
/// each need a directory of their own.
#[test]
fn sweep_and_compare_keep_a_users_files_and_no_two_kinds_share_a_directory() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    let sweep = |out: &str| memform(&["sweep", "--dataset", &ds, "--grid", "soda.near_dup_threshold=0.9,0.95", "--out", out], tmp.path());
    let compare = |out: &str| {
        memform(
            &["compare", "--dataset", &ds, "--modes", "rules,rules", "--set-b", "dedup_enabled=false", "--runs-dir", "runs", "--out", out],
            tmp.path(),
        )
    };
    for (dir, file) in [("s", "sweep.md"), ("c", "compare.md")] {
        std::fs::create_dir_all(tmp.path().join(dir)).expect("mkdir");
        std::fs::write(tmp.path().join(dir).join(file), "my own notes").expect("user file");
    }
    let (code, _, stderr) = sweep("s");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.starts_with("error: s/sweep.md: not written by memform"), "{stderr}");
    let (code, _, stderr) = compare("c");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.starts_with("error: c/compare.md: not written by memform"), "{stderr}");
    assert!(!tmp.path().join("runs").exists(), "refused before running anything");
    for (dir, file) in [("s", "sweep.md"), ("c", "compare.md")] {
        assert_eq!(std::fs::read_to_string(tmp.path().join(dir).join(file)).expect("kept"), "my own notes");
    }

    // Memform's own sweep and comparison are replaced by the next.
    for (code, _, stderr) in [sweep("s2"), sweep("s2"), compare("c2"), compare("c2")] {
        assert_eq!(code, Some(0), "{stderr}");
    }
    // One kind per directory.
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "r"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let (code, _, stderr) = sweep("r");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.starts_with("error: r/run.json: this directory holds a run's output; a sweep needs a directory of its own"), "{stderr}");
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "s2"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error: s2/sweep.json: this directory holds a sweep's output; a run needs a directory of its own"),
        "{stderr}"
    );
    let (code, _, stderr) = compare("r");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.starts_with("error: r/run.json: this directory holds a run's output; a comparison needs"), "{stderr}");
    assert!(!tmp.path().join("s2/run.json").exists() && !tmp.path().join("r/sweep.json").exists());
}

/// A failed run leaves no directory it created behind (not even one
/// holding only `.memform.lock`); a directory that existed stays.
#[test]
fn a_failed_run_removes_the_directories_it_created() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    std::fs::create_dir_all(tmp.path().join("empty-fixtures")).expect("mkdir");
    // LLM replay from an empty fixture directory: the run fails after taking the lock.
    let failing =
        |out: &str| memform(&["run", "--dataset", &ds, "--mode", "llm", "--fixtures", "empty-fixtures", "--out", out], tmp.path());
    let (code, _, stderr) = failing("new/deeper");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no fixture"), "{stderr}");
    assert!(!tmp.path().join("new").exists(), "the run created new/deeper and removes both");
    std::fs::create_dir_all(tmp.path().join("mine")).expect("mkdir");
    let (code, _, stderr) = failing("mine");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(tmp.path().join("mine").is_dir(), "a directory the run did not create stays");
    let left: Vec<_> = std::fs::read_dir(tmp.path().join("mine")).expect("list").flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "an empty directory stays empty, without the lock file: {left:?}");
}

/// A dangling symbolic link as `--out` is named as one (not `File exists`).
#[cfg(unix)]
#[test]
fn a_dangling_symlink_out_is_named() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    symlink(&tmp.path().join("missing"), &tmp.path().join("o"));
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "o"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: --out o: a symbolic link to ") && stderr.contains("which does not exist"), "{stderr}");
    assert!(!stderr.contains("File exists"), "{stderr}");
}
