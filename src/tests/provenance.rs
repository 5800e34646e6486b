//! What produced a run: run.json's build, recorded digests and tags, shown
//! in report.md; build.rs's git description of a checkout (clean, dirty,
//! not a checkout); `memform report` redrawing a run's report from its files.

use std::path::Path;
use std::process::Command;

use crate::support::{bin, scenarios_dir};

#[path = "../../build.rs"]
#[allow(dead_code)]
mod build_script;

fn memform(args: &[&str], cwd: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(bin()).args(args).current_dir(cwd).output().expect("spawn memform");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))).expect("json")
}

#[test]
fn run_json_records_build_recorded_digests_and_tags() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    let (code, _, stderr) = memform(
        &["run", "--dataset", &ds, "--mode", "llm", "--embedder", "minilm", "--tag", "team=memory", "--tag", "ticket=16", "--out", "r"],
        tmp.path(),
    );
    assert_eq!(code, Some(0), "{stderr}");
    let m = read_json(&tmp.path().join("r/run.json"));
    assert_eq!(m["build"], memform::provenance::build_info());
    assert_eq!(m["build"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(m["tags"], serde_json::json!({"team": "memory", "ticket": "16"}));
    let fixtures = &m["recorded"]["fixtures"];
    let fixture_dir = scenarios_dir().join("fixtures/smollm2-135m-instruct.q4_1");
    assert_eq!(fixtures["files"], std::fs::read_dir(&fixture_dir).expect("read").count());
    assert_eq!(fixtures["sha256"], memform::provenance::fixture_set_digest(&fixture_dir).expect("digest")["sha256"]);
    let embeddings = &m["recorded"]["embeddings"];
    let index = read_json(&scenarios_dir().join("embeddings/minilm-all-minilm-l6-v2/index.json"));
    assert_eq!(embeddings["sha256"], index["sha256"], "the cache's own integrity record");
    assert_eq!(embeddings["entries"], index["count"]);
    let report = std::fs::read_to_string(tmp.path().join("r/report.md")).expect("report.md");
    for row in ["| memform build | ", "| recorded answers | `", "| embedding cache | `", "| tags | `team=memory`, `ticket=16` |"] {
        assert!(report.contains(row), "{row} in report.md:\n{report}");
    }

    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--out", "h", "--tag", "bad key=1"], tmp.path());
    assert_eq!(code, Some(2));
    assert_eq!(stderr.trim(), "error: config: --tag \"bad key=1\": the key must be letters, digits, '_', '.' or '-'");
    let (code, _, _) = memform(&["run", "--dataset", &ds, "--out", "h"], tmp.path());
    assert_eq!(code, Some(0));
    let m = read_json(&tmp.path().join("h/run.json"));
    assert_eq!(
        m["recorded"],
        serde_json::json!({"fixtures": null, "embeddings": null}),
        "rules mode with the hashed embedder reads nothing recorded"
    );
    assert_eq!(m["tags"], serde_json::json!({}));
}

#[test]
fn compare_reuses_a_run_only_with_the_same_tags() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    let compare = |tag: &str| {
        let (code, stdout, stderr) = memform(
            &[
                "compare",
                "--dataset",
                &ds,
                "--modes",
                "rules,rules",
                "--set-b",
                "dedup_enabled=false",
                "--runs-dir",
                "runs",
                "--out",
                "cmp",
                "--tag",
                tag,
            ],
            tmp.path(),
        );
        assert_eq!(code, Some(0), "{stderr}");
        (stdout, stderr)
    };
    assert_eq!(compare("exp=a").1.matches("running ").count(), 2);
    assert_eq!(compare("exp=a").1.matches("reusing ").count(), 2);
    let (stdout, stderr) = compare("exp=b");
    assert_eq!(stderr.matches("running ").count(), 2, "{stderr}");
    let c: serde_json::Value = serde_json::from_str(&stdout).expect("compare.json");
    let rows = c["a"]["provenance"].as_array().expect("provenance");
    assert!(rows.iter().any(|r| r[0] == "tags" && r[1] == "`exp=b`"), "{rows:?}");
    let md = std::fs::read_to_string(tmp.path().join("cmp/compare.md")).expect("compare.md");
    assert!(md.contains("| what produced it | A | B |") && md.contains("| tags | `exp=b` | `exp=b` |"), "{md}");
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn build_script_describes_clean_dirty_and_foreign_checkouts() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    assert_eq!(build_script::describe(&repo), None, "not a checkout");
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("a.txt"), "one\n").expect("write");
    git(&repo, &["add", "a.txt"]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    let (rev, dirty) = build_script::describe(&repo).expect("a checkout");
    assert_eq!(rev.len(), 40);
    assert!(!dirty, "clean after the commit");
    std::fs::write(repo.join("notes.txt"), "untracked\n").expect("write");
    assert_eq!(build_script::describe(&repo), Some((rev.clone(), false)), "untracked files do not count");
    std::fs::write(repo.join("a.txt"), "two\n").expect("write");
    assert_eq!(build_script::describe(&repo), Some((rev.clone(), true)), "an uncommitted change");
    std::fs::write(repo.join("a.txt"), "one\n").expect("write");
    assert_eq!(build_script::describe(&repo), Some((rev, false)), "reverted");
    // A directory inside someone else's checkout is not a memform checkout.
    let sub = repo.join("vendored");
    std::fs::create_dir_all(&sub).expect("mkdir");
    assert_eq!(build_script::describe(&sub), None);
}

#[test]
fn memform_report_redraws_a_finished_run_byte_for_byte() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    let (code, _, stderr) = memform(&["run", "--dataset", &ds, "--mode", "llm", "--embedder", "minilm", "--out", "r"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let dir = tmp.path().join("r");
    let drawn = |d: &Path| -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(d)
            .expect("read")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "svg") || p.file_name().is_some_and(|n| n == "report.md"))
            .map(|p| (p.file_name().expect("name").to_string_lossy().into_owned(), std::fs::read(&p).expect("read")))
            .collect();
        files.sort();
        files
    };
    let before = drawn(&dir);
    assert!(before.len() >= 3, "report.md and plots: {:?}", before.iter().map(|f| &f.0).collect::<Vec<_>>());
    let others = |d: &Path| -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(d)
            .expect("read")
            .map(|e| e.expect("entry").path())
            .filter(|p| !(p.extension().is_some_and(|x| x == "svg") || p.file_name().is_some_and(|n| n == "report.md")))
            .map(|p| (p.file_name().expect("name").to_string_lossy().into_owned(), std::fs::read(&p).expect("read")))
            .collect();
        files.sort();
        files
    };
    let untouched = others(&dir);
    for (name, _) in &before {
        std::fs::remove_file(dir.join(name)).expect("remove");
    }
    let (code, _, stderr) = memform(&["report", "r"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.starts_with("wrote r/report.md"), "{stderr}");
    let after = drawn(&dir);
    assert_eq!(after.iter().map(|f| &f.0).collect::<Vec<_>>(), before.iter().map(|f| &f.0).collect::<Vec<_>>());
    for ((name, a), (_, b)) in before.iter().zip(&after) {
        assert!(a == b, "{name} differs after memform report");
    }
    assert!(others(&dir) == untouched, "nothing else changes");

    // An old run: run.json without the provenance fields still redraws.
    let mut m = read_json(&dir.join("run.json"));
    for k in ["build", "recorded", "tags"] {
        m.as_object_mut().expect("object").remove(k);
    }
    std::fs::write(dir.join("run.json"), serde_json::to_string_pretty(&m).expect("json")).expect("write");
    let (code, _, stderr) = memform(&["report", "r"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(report.contains("| recorded answers | not recorded in run.json |"), "{report}");

    std::fs::remove_file(dir.join("episodes.jsonl")).expect("remove");
    let (code, _, stderr) = memform(&["report", "r"], tmp.path());
    assert_eq!(code, Some(2));
    assert_eq!(stderr.trim(), "error: r/episodes.jsonl: missing: not a finished run directory (a run writes it at the end)");
    let (code, _, stderr) = memform(&["report", "nope"], tmp.path());
    assert_eq!((code, stderr.trim()), (Some(2), "error: nope: not a directory"));
}
