//! FAULT INJECTION: the `signet` profile's LLM path against a scripted fake
//! HTTP server (`support/fake_server.rs`), not a model. The bundled
//! SmolLM2-135M answers `add` to nearly every decision, so the recorded
//! scenarios never reach what a model's UPDATE, DELETE, hallucinated target
//! or empty reason does; these tests script those answers and check what
//! the whole run (`memform run --profile signet --mode llm --llm live`) makes
//! of them: an applied UPDATE with its history (archive) row in `full`
//! mode, the same UPDATE blocked in `controlled` mode, an UPDATE naming a
//! non-candidate dropped with a warning, a DELETE with an empty reason
//! dropped with a warning; Signet's extraction contract on a model's answer
//! (an empty fact dropped, an unknown type made `fact`, an answer over the
//! 20-fact cap cut, each with its warning), and the write gates (confidence
//! below 0.7, content that normalises to nothing, a content hash already
//! live) on the contract's facts.
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

/// One fact of Signet's extraction contract, as a model would write it.
fn fact(content: &str, ty: &str, confidence: f64) -> Value {
    json!({"content": content, "type": ty, "confidence": confidence})
}

fn extraction(facts: Vec<Value>, entities: Vec<Value>) -> Reply {
    let answer = json!({"facts": facts, "entities": entities});
    Reply::openai(&answer.to_string(), 500, 80)
}

fn decision(action: &str, target: &str, reason: &str) -> Reply {
    let answer = json!({"action": action, "targetId": target, "confidence": 0.9, "reason": reason});
    Reply::openai(&answer.to_string(), 300, 30)
}

/// The scripted answers, in call order: e1's extraction (no stored memory,
/// so no decision call), e2's extraction, then one decision per e2 fact.
/// e1's facts, as candidates c0..c4: a fact, one below the confidence gate,
/// one that normalises to nothing, a duplicate of c0 (the content-hash
/// gate), one of an unknown type; then one with empty content, which the
/// contract drops before it is a candidate.
fn script() -> Vec<Reply> {
    vec![
        extraction(
            vec![
                fact("Alice works at Google", "fact", 0.9),
                fact("Alice maybe likes tea", "preference", 0.5),
                fact("..........", "fact", 0.9),
                fact("Alice works at Google", "fact", 0.9),
                fact("Alice rides an old blue bicycle", "hobby", 0.8),
                fact("", "fact", 0.9),
            ],
            vec![json!({"source": "Alice", "relationship": "works at", "target": "Google", "confidence": 0.9})],
        ),
        extraction(
            vec![
                fact("Alice works at Anthropic", "fact", 0.9),
                fact("Alice works at Anthropic Labs", "fact", 0.9),
                fact("Alice no longer works at Google", "fact", 0.9),
            ],
            Vec::new(),
        ),
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
    run_with(write_mode, CONVERSATION, script())
}

fn run_with(write_mode: &str, conversation: &str, script: Vec<Reply>) -> Ran {
    let server = FakeServer::start(script);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(data.join("conversations")).unwrap();
    std::fs::write(data.join("conversations/faults.json"), conversation).unwrap();
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

    // The extraction request is Signet's contract: its own template, the contract's schema.
    let extract = r.requests[0].json();
    let system = extract["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("\"facts\" is a list") && system.contains("\"entities\" is a list"), "{system}");
    let body = &r.requests[0].body;
    for key in ["\"relationship\"", "\"preference\"", "\"procedural\""] {
        assert!(body.contains(key), "the schema names {key}: {body}");
    }

    // The contract on e1's answer: the empty fact never became a candidate,
    // the unknown type became `fact`; each with its warning.
    let e1: Vec<&Value> = r.facts.iter().filter(|f| f["episode"] == "e1").collect();
    assert_eq!(e1.len(), 5, "{e1:#?}");
    let kinds = warning_kinds(&r, "e1");
    for k in ["fact_too_short", "unknown_fact_type"] {
        assert!(kinds.iter().any(|w| w == k), "{k} missing from {kinds:?}");
    }
    assert_eq!((&by_id(&r, "faults/e1/c4")["fact_type"], &by_id(&r, "faults/e1/c4")["outcome"]), (&json!("fact"), &json!("created")));
    // A model's facts name no turn: each is given the turn sharing the most
    // words with it ("alice", "google": t1), so retrieval can credit it.
    assert_eq!(by_id(&r, "faults/e1/c0")["turn"], "t1");
    // e2's UPDATE rewrote c0 from its own fact (t4's, "alice", "works",
    // "anthropic"): the row's content and turn are the update's.
    let facts = r.store.facts().unwrap();
    let c0 = facts.iter().find(|f| f.id == "faults/e1/c0").unwrap();
    assert_eq!(c0.source_turns, r#"["t4"]"#);

    // The gates on e1's contract facts: confidence 0.5 < 0.7, content that
    // normalises to nothing, and a content hash already live.
    assert_eq!(by_id(&r, "faults/e1/c0")["outcome"], "created");
    assert_eq!(by_id(&r, "faults/e1/c1")["outcome"], "low_fact_confidence");
    assert_eq!(by_id(&r, "faults/e1/c2")["outcome"], "empty_fact_content");
    assert_eq!(by_id(&r, "faults/e1/c3")["outcome"], "deduped");
    let prov = r.store.provenance().unwrap();
    let (_, _, _, p) = prov.iter().find(|(_, e, i, _)| e == "e1" && *i == 0).unwrap();
    assert_eq!((p.source.as_str(), p.fact_count, p.entity_count), ("e1/t1", 5, 1), "{p:?}");
    assert!(p.extractor.ends_with(":signet_extract-v1"), "{}", p.extractor);

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

/// Hand-written: one episode; the scripted answer is over the contract's cap.
const ONE_EPISODE: &str = r#"{
  "format": "memform-conversation/1",
  "id": "faults",
  "description": "Hand-written input for the fault-injection tests: the answers come from a scripted fake server, not from this text.",
  "speakers": ["Alice", "Assistant"],
  "episodes": [
    {"id": "e1", "timestamp": "2024-08-01T09:00:00", "turns": [
      {"id": "t1", "speaker": "Alice", "text": "Let me tell you everything about my week."}
    ]}
  ]
}"#;

#[test]
fn an_answer_over_the_contracts_cap_is_cut_to_twenty_facts_with_a_warning() {
    let facts: Vec<Value> = (1..=25).map(|i| fact(&format!("Alice did thing number {i} this week"), "fact", 0.9)).collect();
    let r = run_with("full", ONE_EPISODE, vec![extraction(facts, Vec::new())]);
    assert_eq!(r.requests.len(), 1, "one extraction; no memory stored before, so no decision call");
    assert_eq!(r.facts.len(), 20, "the contract keeps the first 20");
    assert_eq!(r.facts[19]["content"], "Alice did thing number 20 this week");
    assert!(r.facts.iter().all(|f| f["outcome"] == "created"));
    assert!(warning_kinds(&r, "e1").iter().any(|k| k == "too_many_facts"));
}
