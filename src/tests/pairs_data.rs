//! `make pairs-data`, `make locomo-audit-data` and `make pairs-check` on
//! local copies. The fetches get small made-up files (no SICK, MSRP or audit
//! text) from file: URLs: a wrong digest writes nothing and fails, the right
//! one writes the files, a second run does nothing, an unreachable download
//! falls back to a directory checked by the same digests. The checker passes
//! on the committed `datasets/pairs/` and fails (exit 2, one line naming the
//! file, line and field) on a broken copy.

use std::path::Path;
use std::process::Command;

use crate::support::root;

fn sha256(bytes: &[u8]) -> String {
    memform::normalize::sha256_hex(bytes)
}

/// `make <target>` in the repository with the given variables: (exit code, stdout, stderr).
fn make(target: &str, vars: &[(&str, String)]) -> (Option<i32>, String, String) {
    let mut cmd = Command::new("make");
    cmd.arg("-s").arg("-C").arg(root()).arg("--no-print-directory").arg(target);
    for (k, v) in vars {
        cmd.arg(format!("{k}={v}"));
    }
    let out = cmd.env_remove("MAKEFLAGS").env_remove("MAKELEVEL").env_remove("MFLAGS").output().expect("run make");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The script's own lines on stderr (make adds its standard trailer on failure).
fn own_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| !l.starts_with("make: ***") && !l.starts_with("make[")).collect()
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).expect("read").map(|e| e.expect("entry").file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn pairs_data_checks_each_digest_and_falls_back() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let up = tmp.path().join("upstream");
    std::fs::create_dir_all(&up).expect("mkdir");
    let sick =
        b"pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n1\tA cat sleeps.\tA cat is asleep.\t4.8\tENTAILMENT\n";
    let msrp = "\u{feff}Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tAnn left.\tAnn went away.\n".as_bytes();
    std::fs::write(up.join("SICK_train.txt"), sick).expect("write");
    std::fs::write(up.join("msr-para-train.tsv"), msrp).expect("write");
    std::fs::write(up.join("readme.txt"), "SICK notes\n").expect("write");
    let out = tmp.path().join("data/pairs");
    let url = |f: &str| format!("file://{}", up.join(f).display());
    let vars = |sick_sha: &str, sick_url: String, fallback: &Path| {
        vec![
            ("SICK_URL", sick_url),
            ("SICK_SHA256", sick_sha.to_string()),
            ("MSRP_URL", url("msr-para-train.tsv")),
            ("MSRP_SHA256", sha256(msrp)),
            ("SICK_README_URL", url("readme.txt")),
            ("MSRP_README_URL", url("no-such-readme.md")),
            ("PAIRS_DATA", out.display().to_string()),
            ("PAIRS_FALLBACK", fallback.display().to_string()),
        ]
    };
    let nowhere = tmp.path().join("no-fallback");

    // A wrong digest: one line naming the file and both digests, nothing written.
    let (code, _, stderr) = make("pairs-data", &vars(&"0".repeat(64), url("SICK_train.txt"), &nowhere));
    assert_ne!(code, Some(0));
    let lines = own_lines(&stderr);
    assert!(
        lines.iter().any(|l| l.starts_with("pairs-data: SICK_train.txt from the download has SHA-256 ")
            && l.contains(&sha256(sick))
            && l.contains("nothing written")),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing written");
    assert_eq!(names(&tmp.path().join("data")), Vec::<String>::new(), "no staging directory left behind");

    // The right digests: both files and the readme that exists; the missing readme is a note.
    let (code, _, stderr) = make("pairs-data", &vars(&sha256(sick), url("SICK_train.txt"), &nowhere));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(names(&out), ["SICK_readme.txt", "SICK_train.txt", "msr-para-train.tsv"]);
    assert_eq!(std::fs::read(out.join("msr-para-train.tsv")).expect("read"), msrp);
    assert!(stderr.contains("note: cannot download MSR_README.md"), "{stderr}");

    // Again: up to date, even with the source gone.
    std::fs::remove_dir_all(&up).expect("remove");
    let (code, _, stderr) = make("pairs-data", &vars(&sha256(sick), url("SICK_train.txt"), &nowhere));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        own_lines(&stderr),
        [format!("pairs-data: {}/ is up to date (SICK_train.txt, msr-para-train.tsv, SHA-256 checked)", out.display())]
    );

    // Unreachable, no fallback: one line, failure, nothing written.
    std::fs::remove_dir_all(tmp.path().join("data")).expect("clean");
    let (code, _, stderr) = make("pairs-data", &vars(&sha256(sick), url("SICK_train.txt"), &nowhere));
    assert_ne!(code, Some(0));
    let lines = own_lines(&stderr);
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].starts_with("pairs-data: cannot download ") && lines[0].contains("no fallback at"), "{stderr}");
    assert!(!stderr.contains("Traceback") && !out.exists(), "{stderr}");

    // Unreachable with a fallback: copied from it, readmes included, checked by the same digests.
    let fallback = tmp.path().join("shared/datasets/pairs");
    std::fs::create_dir_all(&fallback).expect("mkdir");
    std::fs::write(fallback.join("SICK_train.txt"), sick).expect("write");
    std::fs::write(fallback.join("msr-para-train.tsv"), msrp).expect("write");
    std::fs::write(fallback.join("MSR_README.md"), "MSRP notes\n").expect("write");
    let (code, _, stderr) = make("pairs-data", &vars(&sha256(sick), url("SICK_train.txt"), &fallback));
    assert_eq!(code, Some(0), "{stderr}");
    let lines = own_lines(&stderr);
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(lines[0].ends_with(&format!("copying from {} instead", fallback.display())), "{stderr}");
    assert_eq!(names(&out), ["MSR_README.md", "SICK_train.txt", "msr-para-train.tsv"]);

    // A fallback whose file does not match: nothing written, failure.
    std::fs::remove_dir_all(tmp.path().join("data")).expect("clean");
    std::fs::write(fallback.join("SICK_train.txt"), b"changed\n").expect("write");
    let (code, _, stderr) = make("pairs-data", &vars(&sha256(sick), url("SICK_train.txt"), &fallback));
    assert_ne!(code, Some(0));
    assert!(stderr.contains(&format!("SICK_train.txt from {} has SHA-256 {}", fallback.display(), sha256(b"changed\n"))), "{stderr}");
    assert!(!out.exists(), "nothing written");
}

#[test]
fn locomo_audit_data_checks_the_digest() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let src = tmp.path().join("errors.json");
    let bytes = br#"[{"question_id": "x_qa1", "error_type": "AMBIGUOUS"}]"#;
    std::fs::write(&src, bytes).expect("write");
    let out = tmp.path().join("data/locomo-audit");
    let vars = |digest: &str| {
        vec![
            ("LOCOMO_AUDIT_URL", format!("file://{}", src.display())),
            ("LOCOMO_AUDIT_SHA256", digest.to_string()),
            ("LOCOMO_AUDIT_DATA", out.display().to_string()),
            ("LOCOMO_AUDIT_FALLBACK", tmp.path().join("no-fallback").display().to_string()),
        ]
    };
    let (code, _, stderr) = make("locomo-audit-data", &vars(&"f".repeat(64)));
    assert_ne!(code, Some(0));
    assert!(stderr.contains(&format!("errors.json from the download has SHA-256 {}", sha256(bytes))), "{stderr}");
    assert!(!out.exists(), "nothing written");
    let (code, _, stderr) = make("locomo-audit-data", &vars(&sha256(bytes)));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(std::fs::read(out.join("errors.json")).expect("read"), bytes);
}

#[test]
fn pairs_check_passes_on_the_set_and_names_each_problem() {
    let (code, stdout, stderr) = make("pairs-check", &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("| update | job |") && stdout.contains("| modelled_on |"), "{stdout}");
    assert!(stdout.contains("is valid: "), "{stdout}");

    // A broken copy: the second date before the first, a kind of another label.
    let tmp = tempfile::tempdir().expect("tempdir");
    let set = root().join("datasets/pairs");
    std::fs::copy(set.join("test.jsonl"), tmp.path().join("test.jsonl")).expect("copy");
    let tune = std::fs::read_to_string(set.join("tune.jsonl")).expect("read");
    let mut lines: Vec<serde_json::Value> = tune.lines().map(|l| serde_json::from_str(l).expect("json")).collect();
    lines[0]["second"]["date"] = serde_json::json!("2001-01-01");
    lines[1]["kind"] = serde_json::json!("games");
    let text: String = lines.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(tmp.path().join("tune.jsonl"), text).expect("write");
    let out = Command::new("python3").arg(root().join("scripts/check_pairs.py")).arg(tmp.path()).output().expect("python3");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tune_path = tmp.path().join("tune.jsonl");
    assert!(stderr.contains(&format!("{}:1: second.date: 2001-01-01 is not after first.date", tune_path.display())), "{stderr}");
    assert!(stderr.contains(&format!("{}:2: kind: 'games' is not a kind of update", tune_path.display())), "{stderr}");
}
