//! `make locomo-data` on a local copy: a small synthetic locomo10-shaped
//! file (made up here, no LoCoMo text) is "downloaded" from a file: URL,
//! checked against its SHA-256 and split per conversation into files the
//! LoCoMo importer reads; a wrong digest writes nothing; an unreachable
//! download is one line, with or without a fallback directory.

use std::path::Path;
use std::process::Command;

use crate::support::root;

/// A locomo10.json-shaped list of two made-up conversations.
pub fn synthetic() -> serde_json::Value {
    let sample = |id: &str, a: &str, b: &str| {
        serde_json::json!({
            "sample_id": id,
            "conversation": {
                "speaker_a": a,
                "speaker_b": b,
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": a, "dia_id": "D1:1", "text": format!("Hi {b}, I started working at Acme last week.")},
                    {"speaker": b, "dia_id": "D1:2", "text": "Congratulations! I adopted a cat named Pixel."}
                ],
                "session_2_date_time": "10:02 am on 20 May, 2023",
                "session_2": [
                    {"speaker": a, "dia_id": "D2:1", "text": "I moved to Lisbon for the new job."}
                ]
            },
            "event_summary": {"events_session_1": {a: ["Starts at Acme"], b: [], "date": "8 May, 2023"}},
            "observation": {"session_1_observation": {a: [[format!("{a} works at Acme."), "D1:1"]], b: [[format!("{b} has a cat named Pixel."), "D1:2"]]}},
            "session_summary": {"session_1_summary": format!("{a} and {b} talk about work and pets.")},
            "qa": [{"question": format!("Where does {a} work?"), "answer": "Acme", "evidence": ["D1:1"], "category": 1}]
        })
    };
    serde_json::json!([sample("conv-3", "Ann", "Bo"), sample("conv-12", "Cy", "Di")])
}

fn sha256(bytes: &[u8]) -> String {
    memform::normalize::sha256_hex(bytes)
}

/// `make locomo-data` in the repository with the given variables.
fn make_locomo_data(vars: &[(&str, String)]) -> (Option<i32>, String) {
    let mut cmd = Command::new("make");
    cmd.arg("-s").arg("-C").arg(root()).arg("--no-print-directory").arg("locomo-data");
    for (k, v) in vars {
        cmd.arg(format!("{k}={v}"));
    }
    let out = cmd.env_remove("MAKEFLAGS").env_remove("MAKELEVEL").env_remove("MFLAGS").output().expect("run make");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The script's own lines on stderr (make adds its standard trailer on failure).
fn own_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| !l.starts_with("make: ***") && !l.starts_with("make[")).collect()
}

#[test]
fn locomo_data_checks_the_digest_and_splits_per_conversation() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let src = tmp.path().join("upstream/locomo10.json");
    std::fs::create_dir_all(src.parent().expect("dir")).expect("mkdir");
    let bytes = serde_json::to_vec_pretty(&synthetic()).expect("json");
    std::fs::write(&src, &bytes).expect("write");
    let out = tmp.path().join("data/locomo");
    let vars = |digest: &str, url: String, fallback: &Path| {
        vec![
            ("LOCOMO_URL", url),
            ("LOCOMO_SHA256", digest.to_string()),
            ("LOCOMO_DATA", out.display().to_string()),
            ("LOCOMO_FALLBACK", fallback.display().to_string()),
        ]
    };
    let url = format!("file://{}", src.display());
    let nowhere = tmp.path().join("no-fallback");

    // A wrong digest: one line, nothing written.
    let (code, stderr) = make_locomo_data(&vars(&"0".repeat(64), url.clone(), &nowhere));
    assert_ne!(code, Some(0));
    let lines = own_lines(&stderr);
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].starts_with("locomo-data: ") && lines[0].contains(&format!("has SHA-256 {}", sha256(&bytes))), "{stderr}");
    assert!(!out.exists() && !tmp.path().join("data/locomo10.json").exists(), "nothing written");

    // The right digest: split per conversation, named by sample id.
    let (code, stderr) = make_locomo_data(&vars(&sha256(&bytes), url.clone(), &nowhere));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(own_lines(&stderr).len(), 1, "{stderr}");
    let mut names: Vec<String> =
        std::fs::read_dir(&out).expect("read").map(|e| e.expect("entry").file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, [".verified", "12.json", "3.json"]);
    let conv: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("3.json")).expect("read")).expect("json");
    // Key order as written (serde_json's map here sorts keys).
    let order = Command::new("python3")
        .args(["-c", "import json, sys; print(json.dumps(list(json.load(open(sys.argv[1])))))"])
        .arg(out.join("3.json"))
        .output()
        .expect("python3");
    let keys: Vec<String> = serde_json::from_slice(&order.stdout).expect("key list");
    // The conversation's keys as given (serde_json wrote them sorted), then
    // the events, the QA, the observations and the summaries.
    let mut want: Vec<String> = synthetic()[0]["conversation"].as_object().expect("object").keys().cloned().collect();
    want.extend(["events_session_1", "qa", "session_1_observation", "session_1_summary"].map(String::from));
    assert_eq!(keys, want, "the flat per-conversation shape, in its key order");
    assert_eq!(conv["session_1_observation"]["Ann"][0][0], "Ann works at Acme.");
    let dataset = memform::dataset::load(&out).expect("the importer reads the split");
    assert_eq!(dataset.format, memform::types::DatasetFormat::Locomo);
    let ids: Vec<&str> = dataset.conversations.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["12", "3"]);
    assert_eq!(dataset.conversations[1].episodes.len(), 2);
    assert_eq!(dataset.conversations[1].gold.facts.len(), 2);

    // Again: up to date, even with the source gone.
    std::fs::remove_file(&src).expect("remove");
    let (code, stderr) = make_locomo_data(&vars(&sha256(&bytes), url.clone(), &nowhere));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("is up to date (2 conversations"), "{stderr}");

    // Unreachable, no fallback: one line, failure.
    std::fs::remove_dir_all(tmp.path().join("data")).expect("clean");
    let (code, stderr) = make_locomo_data(&vars(&sha256(&bytes), url.clone(), &nowhere));
    assert_ne!(code, Some(0));
    let lines = own_lines(&stderr);
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].starts_with("locomo-data: cannot download ") && lines[0].contains("no fallback at"), "{stderr}");
    assert!(!stderr.contains("Traceback"), "{stderr}");

    // Unreachable with a fallback directory: one line, success.
    let fallback = tmp.path().join("shared/datasets/locomo");
    std::fs::create_dir_all(&fallback).expect("mkdir");
    let (code, stderr) = make_locomo_data(&vars(&sha256(&bytes), url, &fallback));
    assert_eq!(code, Some(0), "{stderr}");
    let lines = own_lines(&stderr);
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].ends_with(&format!("using {} instead", fallback.display())), "{stderr}");
}
