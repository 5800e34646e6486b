//! FAULT INJECTION: the `signet` profile's LLM path against a scripted fake
//! HTTP server (`support/fake_server.rs`), not a model. The bundled
//! SmolLM2-135M answers `add` to nearly every decision, so the recorded
//! scenarios never reach what a model's UPDATE, DELETE, hallucinated target
//! or empty reason does; these tests script those answers and check what
//! the whole run (`memform run --profile signet --mode llm --llm live`) makes
//! of them: an applied UPDATE with its history (archive) row in `full`
//! mode, the same UPDATE blocked in `controlled` mode, an UPDATE naming a
//! non-candidate dropped with a warning, a DELETE with an empty reason
//! dropped with a warning, and the write gates (confidence below 0.7,
//! content that normalises to nothing) on a model's facts.
//!
//! The conversation and every scripted answer are written by hand here (no
//! recorded data): they stand for what a model could answer.

// Test and bench code may unwrap and print (the library may not).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

// Shared with llm_fake.rs, which uses every reply kind; these tests need only some.
#[allow(dead_code)]
#[path = "support/fake_server.rs"]
mod fake_server;

use std::path::Path;
use std::process::Command;

use fake_server::{FakeServer, Reply};
use memform::store::Store;
use serde_json::{Value, json};

const CONVERSATION: &str = r#"{
  "format": "memform-conversation/1",
  "id": "faults",
  "description": "Hand-written input for the fault-injection tests: the answers come from a scripted fake server, not from this text.",
  "speakers": ["Alice", "Assistant"],
  "episodes": [
    {"id": "e1", "timestamp": "2024-08-01T09:00:00", "turns": [
      {"id": "t1", "speaker": "Alice", "text": "I work at Google."},
      {"id": "t2", "speaker": "Alice", "text": "I maybe like tea."},
      {"id": "t3", "speaker": "Alice", "text": "..."}
    ]},
    {"id": "e2", "timestamp": "2024-09-01T09:00:00", "turns": [
      {"id": "t4", "speaker": "Alice", "text": "I work at Anthropic now, not at Google."}
    ]}
  ]
}"#;

/// One literal fact of the extraction contract, as a model would write it.
fn fact(predicate: &str, object: &str, content: &str, confidence: f64, turn: &str) -> Value {
    json!({"subject": "Alice", "predicate": predicate, "object": object, "content": content, "factType": "fact",
           "confidence": confidence, "sourceTurn": turn, "sourceQuote": ""})
}

fn extraction(facts: Vec<Value>) -> Reply {
    let answer = json!({"entities": [], "relationships": [], "literalFacts": facts});
    Reply::openai(&answer.to_string(), 500, 80)
}

fn decision(action: &str, target: &str, reason: &str) -> Reply {
    let answer = json!({"action": action, "targetId": target, "confidence": 0.9, "reason": reason});
    Reply::openai(&answer.to_string(), 300, 30)
}

/// The scripted answers, in call order: e1's extraction (no stored memory,
/// so no decision call), e2's extraction, then one decision per e2 fact.
fn script() -> Vec<Reply> {
    vec![
        extraction(vec![
            fact("works at", "Google", "Alice works at Google", 0.9, "t1"),
            fact("likes", "tea", "Alice maybe likes tea", 0.5, "t2"),
            fact("said", "dots", "..........", 0.9, "t3"),
        ]),
        extraction(vec![
            fact("works at", "Anthropic", "Alice works at Anthropic", 0.9, "t4"),
            fact("works at", "Anthropic Labs", "Alice works at Anthropic Labs", 0.9, "t4"),
            fact("no longer works at", "Google", "Alice no longer works at Google", 0.9, "t4"),
        ]),
        decision("update", "faults/e1/c0", "Alice changed employer"),
        decision("update", "faults/e7/c3", "a memory that was never a candidate"),
        decision("delete", "faults/e1/c0", "  "),
    ]
}

struct Ran {
    requests: Vec<fake_server::Received>,
    facts: Vec<Value>,
    episodes: Vec<Value>,
    store: Store,
    _dir: tempfile::TempDir,
}

fn run(write_mode: &str) -> Ran {
    let server = FakeServer::start(script());
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(data.join("conversations")).unwrap();
    std::fs::write(data.join("conversations/faults.json"), CONVERSATION).unwrap();
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_memform"))
        .args(["run", "--profile", "signet", "--mode", "llm", "--llm", "live", "--write-mode", write_mode, "--dataset"])
        .arg(&data)
        .arg("--out")
        .arg(&out)
        .env("MEMFORM_LLM_URL", &server.url)
        .output()
        .unwrap();
    assert!(o.status.success(), "memform run failed: {}", String::from_utf8_lossy(&o.stderr));
    let read = |p: &Path| -> Vec<Value> {
        std::fs::read_to_string(p).unwrap().lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    Ran {
        requests: server.requests(),
        facts: read(&out.join("facts.jsonl")),
        episodes: read(&out.join("episodes.jsonl")),
        store: Store::open(&out.join("store.sqlite")).unwrap(),
        _dir: dir,
    }
}

fn by_id<'a>(r: &'a Ran, id: &str) -> &'a Value {
    r.facts.iter().find(|f| f["id"] == id).unwrap_or_else(|| panic!("no fact {id} in {:#?}", r.facts))
}

fn warning_kinds(r: &Ran, episode: &str) -> Vec<String> {
    let e = r.episodes.iter().find(|e| e["episode"] == episode).unwrap();
    e["warnings"].as_array().unwrap().iter().map(|w| w["kind"].as_str().unwrap().to_string()).collect()
}

#[test]
fn full_mode_applies_the_update_with_its_archive_row_and_drops_bad_decisions() {
    let r = run("full");
    assert_eq!(r.requests.len(), 5, "2 extractions and 3 decisions (every e2 fact had candidates)");
    for req in &r.requests {
        assert_eq!((req.method.as_str(), req.path.as_str()), ("POST", "/v1/chat/completions"));
        assert_eq!(req.header("content-type"), Some("application/json"));
        assert_eq!(req.json()["chat_template_kwargs"], json!({"enable_thinking": false}), "thinking is switched off");
        assert!(req.headers.iter().all(|(k, _)| !k.eq_ignore_ascii_case("authorization")), "no key was set");
    }
    let asked: Vec<String> = r.requests.iter().map(|q| q.body.clone()).collect();
    assert!(asked[2].contains("faults/e1/c0"), "the decision request lists the candidate's id");

    // The gates on e1's facts: confidence 0.5 < 0.7, and content that normalises to nothing.
    assert_eq!(by_id(&r, "faults/e1/c0")["outcome"], "created");
    assert_eq!(by_id(&r, "faults/e1/c1")["outcome"], "low_fact_confidence");
    assert_eq!(by_id(&r, "faults/e1/c2")["outcome"], "empty_fact_content");

    // The applied UPDATE: the target row now holds the new content, its old content is archived.
    let c0 = by_id(&r, "faults/e2/c0");
    assert_eq!(
        (&c0["decision"]["action"], &c0["decision"]["target"], &c0["outcome"]),
        (&json!("update"), &json!("faults/e1/c0"), &json!("updated"))
    );
    let facts = r.store.facts().unwrap();
    let target = facts.iter().find(|f| f.id == "faults/e1/c0").unwrap();
    assert_eq!((target.content.as_str(), target.invalid_at.is_none()), ("Alice works at Anthropic", true));
    let history = r.store.history().unwrap();
    assert_eq!(history.len(), 1, "{history:?}");
    let h = &history[0];
    assert_eq!((h.fact_id.as_str(), h.event.as_str(), h.by_candidate.as_str()), ("faults/e1/c0", "update", "faults/e2/c0"));
    assert_eq!(h.content, "Alice works at Google");

    // The hallucinated target and the empty reason: dropped, each with its warning, nothing written.
    let c1 = by_id(&r, "faults/e2/c1");
    assert_eq!((&c1["outcome"], &c1["decision"]["action"]), (&json!("decision_dropped"), &Value::Null));
    assert!(c1["reason"].as_str().unwrap().contains("decision_unknown_target"), "{c1}");
    let c2 = by_id(&r, "faults/e2/c2");
    assert_eq!((&c2["outcome"], &c2["decision"]["action"]), (&json!("decision_dropped"), &Value::Null));
    assert!(c2["reason"].as_str().unwrap().contains("decision_missing_reason"), "{c2}");
    let kinds = warning_kinds(&r, "e2");
    for k in ["decision_unknown_target", "decision_missing_reason"] {
        assert!(kinds.iter().any(|w| w == k), "{k} missing from {kinds:?}");
    }
    assert!(facts.iter().all(|f| f.id != "faults/e2/c1" && f.id != "faults/e2/c2"), "dropped decisions write nothing");
}

#[test]
fn controlled_mode_blocks_the_same_update_and_archives_nothing() {
    let r = run("controlled");
    assert_eq!(r.requests.len(), 5);
    let c0 = by_id(&r, "faults/e2/c0");
    assert_eq!((&c0["decision"]["action"], &c0["outcome"]), (&json!("update"), &json!("blocked")));
    let facts = r.store.facts().unwrap();
    let target = facts.iter().find(|f| f.id == "faults/e1/c0").unwrap();
    assert_eq!(target.content, "Alice works at Google", "the target is untouched");
    assert!(r.store.history().unwrap().is_empty(), "no archive row for a blocked update");
    let audit = r.store.audit().unwrap();
    assert!(
        audit.iter().any(|(_, e, a)| e == "e2" && a.outcome.as_str() == "blocked" && a.target_fact_id.as_deref() == Some("faults/e1/c0")),
        "the blocked update is audited"
    );
    assert_eq!(by_id(&r, "faults/e2/c1")["outcome"], "decision_dropped");
}
