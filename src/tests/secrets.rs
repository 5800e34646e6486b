//! A credential given on the command line (`--set llm_url=http://user:KEY@host`)
//! reaches no file memform writes and no line it prints: run.json, the
//! report, the frames, the store, the lock file (read while a run holds it),
//! the "in use" error of a second process, `report`, `compare` and `sweep`
//! outputs, and every stderr.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{FAULT_OPT_IN, bin, scenarios_dir};

const KEY: &str = "SeCrEt-K3y-4711";

fn url() -> String {
    format!("llm_url=http://alice:{KEY}@127.0.0.1:9")
}

fn memform(args: &[&str], cwd: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(bin()).args(args).current_dir(cwd).output().expect("spawn memform");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Every regular file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let p = e.expect("entry").path();
        if p.is_dir() { out.extend(files(&p)) } else { out.push(p) }
    }
    out
}

/// Fails naming every file under `dir` (bytes, so the store too) holding the key.
fn assert_no_key_under(dir: &Path) {
    let all = files(dir);
    assert!(!all.is_empty(), "{} holds no file", dir.display());
    let leaks: Vec<String> = all
        .iter()
        .filter(|p| {
            let bytes = std::fs::read(p).expect("read");
            bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes())
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(leaks.is_empty(), "the key leaks into {leaks:?}");
}

struct Held(Option<Child>);

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn a_password_in_a_set_url_reaches_no_artefact_lock_or_message() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    let out = tmp.path().join("o");
    let go = tmp.path().join("go");
    let url = url();
    let child = Command::new(bin())
        .args(["run", "--dataset", &ds, "--out", "o", "--set", &url, "--threads", "2"])
        .current_dir(tmp.path())
        .env("MEMFORM_FAULT_HOLD_UNTIL", &go)
        .env(FAULT_OPT_IN.0, FAULT_OPT_IN.1)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn memform");
    let mut held = Held(Some(child));
    // The holder has written the lock file once it is not empty.
    let lock = out.join(".memform.lock");
    let since = Instant::now();
    while std::fs::read_to_string(&lock).map_or(true, |t| t.is_empty()) {
        assert!(since.elapsed() < Duration::from_secs(60), "the run did not take the lock");
        std::thread::sleep(Duration::from_millis(5));
    }
    let recorded = std::fs::read_to_string(&lock).expect("lock");
    assert!(!recorded.contains(KEY), "the lock file: {recorded}");
    assert!(recorded.contains("llm_url=http://[redacted]@127.0.0.1:9"), "the command line stays readable: {recorded}");

    // A second process finds the lock taken and names the holder.
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "o", "--set", &url], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("is in use by another memform process") && stderr.contains("[redacted]@127.0.0.1:9"), "{stderr}");
    assert!(!stderr.contains(KEY), "the in-use error: {stderr}");

    std::fs::write(&go, "").expect("go");
    let done = held.0.take().expect("child").wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains(KEY) && !String::from_utf8_lossy(&done.stdout).contains(KEY), "{stderr}");
    let manifest = std::fs::read_to_string(out.join("run.json")).expect("run.json");
    assert!(manifest.contains("\"llm_url\": \"http://[redacted]@127.0.0.1:9\""), "{manifest}");
    assert_no_key_under(&out);

    // Redrawing the report reads the manifest as written.
    let (code, _, stderr) = memform(&["report", "o"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains(KEY), "{stderr}");
    assert_no_key_under(&out);

    // compare: the key in the shared config and in one side's own --set-b.
    let (code, stdout, stderr) = memform(
        &[
            "compare",
            "--dataset",
            &ds,
            "--modes",
            "rules,rules",
            "--set",
            &url,
            "--set-b",
            &format!("llm_url=https://bob:{KEY}@h.example/v1"),
            "--out",
            "cmp",
            "--runs-dir",
            "runs",
            "--resamples",
            "10",
        ],
        tmp.path(),
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains(KEY) && !stdout.contains(KEY), "{stderr}\n{stdout}");
    assert_no_key_under(&tmp.path().join("cmp"));
    assert_no_key_under(&tmp.path().join("runs"));
    let names: Vec<String> = std::fs::read_dir(tmp.path().join("runs"))
        .expect("runs")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains(KEY)), "run directory names: {names:?}");

    // sweep: the key in the config.
    let (code, stdout, stderr) =
        memform(&["sweep", "--dataset", &ds, "--set", &url, "--grid", "near_dup_threshold=0.9,0.95", "--out", "sw"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains(KEY) && !stdout.contains(KEY), "{stderr}\n{stdout}");
    assert_no_key_under(&tmp.path().join("sw"));
    // A refused grid over the URL quotes it without the password.
    let (code, _, stderr) =
        memform(&["sweep", "--dataset", &ds, "--grid", &format!("llm_url=http://carol:{KEY}@h1,http://h2"), "--out", "sw2"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("http://[redacted]@h1") && !stderr.contains(KEY), "{stderr}");
}
