//! mem0 through its reference adapter and the proxy, in replay (no model,
//! no network): its figures and memories on the recorded scenarios, a
//! deleted fixture, and two replays on different days. Needs `make mem0`
//! (mem0ai in adapters/mem0/.venv; `make test` installs it).

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::{bin, jsonl_without_timings, root, snapshots_dir, without_timings};

/// The conversations whose mem0 calls are recorded in datasets/scenarios/proxy-fixtures/mem0.
const RECORDED: &str = "job-change,historical";

fn mem0_installed() {
    assert!(root().join("adapters/mem0/.venv/bin/python").exists(), "adapters/mem0/.venv is missing: run `make mem0` (make test does)");
}

fn replay(out: &Path, fixtures: Option<&Path>, now: Option<&str>) -> (Option<i32>, String) {
    mem0_installed();
    let mut args = vec![
        "run".to_string(),
        "--dataset".into(),
        "datasets/scenarios".into(),
        "--conversations".into(),
        RECORDED.into(),
        "--profile".into(),
        "mem0".into(),
        "--mode".into(),
        "llm".into(),
        "--out".into(),
        out.display().to_string(),
    ];
    if let Some(f) = fixtures {
        args.extend(["--fixtures".to_string(), f.display().to_string()]);
    }
    let mut cmd = Command::new(bin());
    cmd.args(&args).current_dir(root());
    match now {
        Some(n) => cmd.env("MEM0_ADAPTER_NOW", n),
        None => cmd.env_remove("MEM0_ADAPTER_NOW"),
    };
    let o = cmd.output().expect("spawn memform");
    (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn read(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn mem0_replays_the_recorded_scenarios_end_to_end() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let (code, err) = replay(&out, None, None);
    assert_eq!(code, Some(0), "{err}");
    let m = read(&out.join("summary.json"))["metrics"].clone();
    let manifest = read(&out.join("run.json"));
    let proxy = &manifest["recorded"]["proxy"];
    assert_eq!(proxy["misses"], json!([]), "{proxy}");
    assert_eq!(proxy["recorded"], json!(0), "replay records nothing");
    let memories: Vec<Value> = std::fs::read_to_string(out.join("facts.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|f| json!({"id": f["id"], "outcome": f["outcome"], "content": f["content"], "decision": f["decision"]["action"]}))
        .collect();
    let keys = [
        "stored_facts",
        "content_precision",
        "content_recall",
        "invalidations",
        "qa_recall_any_at_5",
        "qa_hit_holds_answer",
        "qa_system_recall_any_at_5",
        "qa_system_hit_holds_answer",
        "qa_system_items_scored",
    ];
    let figures: serde_json::Map<String, Value> = keys.iter().map(|k| (k.to_string(), m[*k].clone())).collect();
    let snap = json!({
        "figures": figures,
        "memories": memories,
        "proxy": {"chat": proxy["chat"], "hits": proxy["hits"], "normalisations": proxy["normalisations"]},
    });
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshots_dir());
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_json_snapshot!("mem0_scenarios_replay", snap));
}

#[test]
fn a_deleted_fixture_fails_the_run_naming_its_key() {
    let tmp = tempfile::tempdir().unwrap();
    let fixtures = tmp.path().join("fx");
    std::fs::create_dir_all(&fixtures).unwrap();
    // job-change's first episode opens with this turn: its extraction call's fixture goes.
    let first_turn = "I work at Google.";
    let mut deleted = None;
    for e in std::fs::read_dir(root().join("datasets/scenarios/proxy-fixtures/mem0")).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        let key = p.file_stem().unwrap().to_string_lossy().into_owned();
        let v: Value = serde_json::from_str(&text).unwrap();
        let asks_first = v["request"]["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|m| m["content"].as_str().is_some_and(|c| c.contains(first_turn) && c.contains("Maya") && !c.contains("Anthropic")));
        if asks_first && deleted.is_none() {
            deleted = Some(key);
            continue;
        }
        std::fs::write(fixtures.join(p.file_name().unwrap()), text).unwrap();
    }
    let key = deleted.expect("a recorded fixture for job-change's first episode");
    let out = tmp.path().join("out");
    let (code, err) = replay(&out, Some(&fixtures), None);
    assert_eq!(code, Some(2), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("conversation job-change: episode e1: the proxy has no fixture for 1 model call(s)"), "{err}");
    assert!(lines[0].contains(&key), "names the deleted key {key}: {err}");
    assert!(!out.join("run.json").exists(), "no partial run");
}

#[test]
fn two_replays_on_different_days_give_the_same_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let outputs = |day: &str| {
        let out = tmp.path().join(day);
        let (code, err) = replay(&out, None, Some(day));
        assert_eq!(code, Some(0), "{day}: {err}");
        (
            std::fs::read(out.join("facts.jsonl")).unwrap(),
            std::fs::read(out.join("qa.csv")).unwrap(),
            without_timings(read(&out.join("summary.json"))),
            jsonl_without_timings(&out.join("episodes.jsonl")),
        )
    };
    let (a, b) = (outputs("2001-01-01"), outputs("2031-06-15"));
    assert!(!a.0.is_empty());
    assert!(a.0 == b.0, "facts.jsonl differs between the two days");
    assert!(a.1 == b.1, "qa.csv differs between the two days");
    assert_eq!(a.2, b.2, "summary.json");
    assert_eq!(a.3, b.3, "episodes.jsonl");
}
