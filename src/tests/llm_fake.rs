//! The live LLM client, extractor and judge against a scripted in-process
//! HTTP server: request shape, lenient answer handling, retries, timeouts
//! and error classes.

// Test and bench code may unwrap and print (the library may not).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

#[path = "support/fake_server.rs"]
mod fake_server;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fake_server::{FakeServer, Reply};
use memform::error::Error;
use memform::llm::{FixtureStore, HttpLlm, Llm, LlmProgress, LlmSettings, Provider, RecordedLlm, request_key};
use memform::pipeline::Config;
use memform::pipeline::extract::{ExtractInput, Extractor, LlmExtractor};
use memform::pipeline::judge::{Judge, JudgeContext, JudgePair, LlmJudge, PairFact};
use memform::types::{Episode, Turn, Verdict};

fn settings(url: &str, provider: &str) -> LlmSettings {
    let cfg = {
        let mut c = Config::default();
        c.llm_url = url.to_string();
        c.llm_provider = provider.to_string();
        c.llm_timeout_secs = 5.0;
        c.llm_retry_backoff_ms = 10;
        c
    };
    LlmSettings::from_config(&cfg).unwrap()
}

fn episode() -> Episode {
    Episode {
        observations: vec![],
        id: "session_1".into(),
        timestamp: Some("2024-03-01T10:00:00".into()),
        turns: vec![
            Turn { id: "t1".into(), speaker: "Ann".into(), text: "I started working at Acme Corp last month.".into() },
            Turn { id: "t2".into(), speaker: "Bo".into(), text: "Nice! I adopted a dog named Rex.".into() },
        ],
    }
}

const SPEAKERS: [&str; 2] = ["Ann", "Bo"];

fn input<'a>(ep: &'a Episode, speakers: &'a [String]) -> ExtractInput<'a> {
    ExtractInput { conversation_id: "conv-a", speakers, episode: ep, known_entities: &[], recent_facts: &[] }
}

const REL: &str = r#"{"subject":"Ann","predicate":"works at","object":"Acme Corp","content":"Ann works at Acme Corp","factType":"fact","confidence":0.9,"sourceQuote":"working at Acme Corp","sourceTurn":"t1"}"#;
const LIT: &str = r#"{"subject":"Bo","predicate":"has dog named","object":"Rex","content":"Bo has a dog named Rex","factType":"fact","confidence":0.8,"sourceQuote":"adopted a dog named Rex","sourceTurn":"t2"}"#;

fn answer(rels: &str, lits: &str) -> String {
    format!(
        r#"{{"entities":[{{"name":"Acme Corp","type":"ORG"}},{{"name":"Rex","type":"ANIMAL"}}],"relationships":[{rels}],"literalFacts":[{lits}]}}"#
    )
}

fn kinds(w: &[memform::types::Warning]) -> Vec<&str> {
    w.iter().map(|w| w.kind.as_str()).collect()
}

#[test]
fn openai_request_carries_sampling_schema_and_key_and_reads_usage() {
    let server = FakeServer::start(vec![Reply::openai(&answer(REL, LIT), 321, 45)]);
    let llm = Arc::new(HttpLlm::with_api_key(settings(&server.url, "openai"), Some("sekrit".into())));
    let ex = LlmExtractor::new(llm, &settings(&server.url, "openai")).unwrap();
    let ep = episode();
    let speakers: Vec<String> = SPEAKERS.iter().map(|s| s.to_string()).collect();
    let raw = ex.extract(&input(&ep, &speakers)).unwrap();
    assert!(raw.graph);
    assert_eq!((raw.entities.len(), raw.relationships.len(), raw.literal_facts.len()), (2, 1, 1));
    assert!(raw.warnings.is_empty(), "{:?}", raw.warnings);
    assert_eq!((raw.usage.calls, raw.usage.prompt_tokens, raw.usage.completion_tokens), (1, 321, 45));

    let req = &server.requests()[0];
    assert_eq!((req.method.as_str(), req.path.as_str()), ("POST", "/v1/chat/completions"));
    assert_eq!(req.header("authorization"), Some("Bearer sekrit"));
    let body = req.json();
    assert_eq!(body["model"], "SmolLM2-135M-Instruct.Q4_1");
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["seed"], 42);
    // The budget scales with the turns shown: 128 + 32 × 2.
    assert_eq!(body["max_tokens"], 192);
    assert_eq!(body["response_format"]["type"], "json_object");
    // Thinking off by default, in the switch OpenAI-compatible servers read.
    assert_eq!(body["chat_template_kwargs"], serde_json::json!({"enable_thinking": false}));
    assert!(body.get("think").is_none());
    let schema = &body["response_format"]["schema"];
    assert_eq!(schema["required"][2], "literalFacts");
    for list in ["relationships", "literalFacts"] {
        let props = &schema["properties"][list]["items"]["properties"];
        assert_eq!(props["sourceTurn"]["enum"], serde_json::json!(["t1", "t2"]), "{list}: the request's turn ids");
        assert_eq!(props["subject"]["enum"], serde_json::json!(["Ann", "Bo"]), "{list}: the speakers and known entities");
    }
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("<transcript>\n[t1] Ann: I started working at Acme Corp last month."), "{user}");
    assert!(user.contains("Session date: 2024-03-01"), "{user}");
    assert!(!req.body.contains("sekrit"), "the key travels only in the header");
    let (subject, confidence) = (req.body.find("\"subject\"").unwrap(), req.body.find("\"confidence\"").unwrap());
    assert!(subject < confidence, "schema properties keep their writing order on the wire");
}

#[test]
fn ollama_request_uses_format_and_options_and_reads_counts() {
    let reply = serde_json::json!({
        "model": "qwen-test", "done": true,
        "message": {"role": "assistant", "content": answer(REL, "")},
        "prompt_eval_count": 111, "eval_count": 22
    });
    let server = FakeServer::start(vec![Reply::ok(reply.to_string())]);
    let s = settings(&server.url, "ollama");
    let ex = LlmExtractor::new(Arc::new(HttpLlm::with_api_key(s.clone(), None)), &s).unwrap();
    let ep = episode();
    let speakers: Vec<String> = SPEAKERS.iter().map(|s| s.to_string()).collect();
    let raw = ex.extract(&input(&ep, &speakers)).unwrap();
    assert_eq!(raw.relationships.len(), 1);
    assert_eq!((raw.usage.prompt_tokens, raw.usage.completion_tokens), (111, 22));
    let req = &server.requests()[0];
    assert_eq!(req.path, "/api/chat");
    assert_eq!(req.header("authorization"), None);
    let body = req.json();
    assert_eq!(body["stream"], false);
    assert_eq!(body["options"]["seed"], 42);
    assert_eq!(body["options"]["temperature"], 0.0);
    assert_eq!(body["options"]["num_predict"], 192);
    assert_eq!(body["format"]["type"], "object");
    assert_eq!(body["format"]["properties"]["literalFacts"]["items"]["properties"]["sourceTurn"]["enum"], serde_json::json!(["t1", "t2"]));
    assert_eq!(body["think"], false, "Ollama's own switch");
    assert!(body.get("chat_template_kwargs").is_none());
}

#[test]
fn thinking_switch_can_be_left_to_the_server() {
    // OpenAI's own API rejects unknown fields: `llm_disable_thinking = false` sends neither switch.
    for provider in ["openai", "ollama"] {
        let cfg = {
            let mut c = Config::default();
            c.llm_provider = provider.into();
            c.llm_disable_thinking = false;
            c
        };
        let s = LlmSettings::from_config(&cfg).unwrap();
        let body: serde_json::Value =
            serde_json::from_str(&HttpLlm::with_api_key(s, None).body(&request_for("http://x")).unwrap()).unwrap();
        assert!(body.get("chat_template_kwargs").is_none() && body.get("think").is_none(), "{provider}: {body}");
    }
}

#[test]
fn messy_answers_give_warnings_and_partial_results() {
    let good = answer(REL, LIT);
    let cut = &good[..good.len() - 30];
    type Case<'a> = (String, (usize, usize, usize), Vec<&'a str>);
    let cases: Vec<Case> = vec![
        (format!("<think>Let me see. {{\"entities\": []}}</think>\n```json\n{good}\n```"), (2, 1, 1), vec![]),
        (format!("Here are the memories:\n{good}\nLet me know if you need more {{help}}."), (2, 1, 1), vec![]),
        (cut.to_string(), (2, 1, 0), vec!["llm_truncated_json"]),
        (
            r#"{"entities":"Acme","relationships":[{"subject":"Ann","predicate":7,"object":"Acme Corp"}],"literalFacts":[LIT]}"#
                .replace("LIT", LIT),
            (0, 0, 1),
            vec!["llm_wrong_type", "llm_wrong_type"],
        ),
        (
            answer(&REL.replace("\"t1\"", "\"t7\""), &LIT.replace("\"t2\"", "\"t9\"").replace("adopted a dog named Rex", "has a cat")),
            (2, 1, 0),
            vec!["llm_unknown_turn", "llm_unknown_turn"],
        ),
        (String::new(), (0, 0, 0), vec!["llm_empty_answer"]),
        ("I'm sorry, I can't do that.".to_string(), (0, 0, 0), vec!["llm_no_json"]),
    ];
    let server = FakeServer::start(cases.iter().map(|(a, _, _)| Reply::openai(a, 10, 5)).collect());
    let s = settings(&server.url, "openai");
    let ex = LlmExtractor::new(Arc::new(HttpLlm::with_api_key(s.clone(), None)), &s).unwrap();
    let ep = episode();
    let speakers: Vec<String> = SPEAKERS.iter().map(|s| s.to_string()).collect();
    for (i, (text, counts, want)) in cases.iter().enumerate() {
        let raw = ex.extract(&input(&ep, &speakers)).unwrap();
        let got = (raw.entities.len(), raw.relationships.len(), raw.literal_facts.len());
        assert_eq!(&got, counts, "case {i}: {text:?} → {:?}", raw.warnings);
        assert_eq!(kinds(&raw.warnings), *want, "case {i}: {text:?}");
        assert_eq!(raw.usage.calls, 1, "case {i}");
    }
    // the repaired hallucinated turn (t7 → t1, quote found there) survived
    assert_eq!(server.requests().len(), cases.len());
}

fn pair(index: usize) -> JudgePair {
    let f = |o: &str| PairFact {
        subject: "Ann".into(),
        predicate: "works at".into(),
        object: o.into(),
        content: format!("Ann works at {o}"),
        valid_until: None,
    };
    JudgePair { index, live: f("Initech"), candidate: f("Acme Corp"), cosine: 0.9 }
}

#[test]
fn judge_reads_verdicts_by_index_and_drops_hallucinated_ones() {
    let server = FakeServer::start(vec![
        Reply::openai(r#"{"verdicts":[{"pair":3,"verdict":"old"},{"pair":9,"verdict":"new"}]}"#, 50, 9),
        Reply::openai("The first fact is outdated.", 50, 6),
    ]);
    let s = settings(&server.url, "openai");
    let judge = LlmJudge::new(Arc::new(HttpLlm::with_api_key(s.clone(), None)), &s).unwrap();
    let ctx = JudgeContext { conversation_id: "conv-a", episode_id: "session_2" };
    let pairs = [pair(3), pair(4)];
    let out = judge.judge(&ctx, &pairs).unwrap();
    assert_eq!(out.verdicts, vec![(3, Verdict::Old)]);
    assert_eq!(kinds(&out.warnings), vec!["llm_unknown_pair", "llm_missing_verdict"]);
    assert_eq!(out.usage.completion_tokens, 9);
    let body = server.requests()[0].json();
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("Pair 3:\n  stored: Ann works at Initech (Ann | works at | Initech)"), "{user}");
    assert!(user.contains("Pair 4:"));
    let verdicts = &body["response_format"]["schema"]["properties"]["verdicts"];
    assert_eq!(verdicts["items"]["properties"]["pair"]["enum"], serde_json::json!([3, 4]), "the request's pair indexes");
    assert_eq!(verdicts["items"]["properties"]["verdict"]["enum"], serde_json::json!(["old", "new", "neither"]));
    assert_eq!((verdicts["minItems"].as_u64(), verdicts["maxItems"].as_u64()), (Some(2), Some(2)), "one verdict per pair");
    assert_eq!(body["max_tokens"], 128 + 32 * 2);
    // garbage: Ok with no verdict (every pair neither) and a warning, usage kept
    let out = judge.judge(&ctx, &pairs).unwrap();
    assert!(out.verdicts.is_empty());
    assert_eq!(kinds(&out.warnings), vec!["llm_no_json"]);
    assert_eq!(out.usage.calls, 1);
    // no pairs: no call
    let out = judge.judge(&ctx, &[]).unwrap();
    assert_eq!(out.usage.calls, 0);
    assert_eq!(server.requests().len(), 2);
}

/// An OpenAI completion that stopped at its token budget.
fn cut_off(content: &str, completion_tokens: u64) -> Reply {
    let body = serde_json::json!({
        "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": completion_tokens}
    });
    Reply::ok(body.to_string())
}

#[test]
fn a_truncated_answer_is_asked_again_once_with_twice_the_budget() {
    let good = answer(REL, LIT);
    let cut = &good[..good.len() - 30];
    // Truncated, then complete: the second answer is used; both calls and the retry are counted.
    let server = FakeServer::start(vec![cut_off(cut, 192), Reply::openai(&good, 100, 80)]);
    let s = settings(&server.url, "openai");
    let ex = LlmExtractor::new(Arc::new(HttpLlm::with_api_key(s.clone(), None)), &s).unwrap();
    let ep = episode();
    let speakers: Vec<String> = SPEAKERS.iter().map(|s| s.to_string()).collect();
    let raw = ex.extract(&input(&ep, &speakers)).unwrap();
    assert_eq!((raw.entities.len(), raw.relationships.len(), raw.literal_facts.len()), (2, 1, 1));
    assert_eq!(kinds(&raw.warnings), vec!["llm_truncated_retry"]);
    assert_eq!((raw.usage.calls, raw.usage.retries, raw.usage.completion_tokens), (2, 1, 272));
    let budgets: Vec<u64> = server.requests().iter().map(|r| r.json()["max_tokens"].as_u64().unwrap()).collect();
    assert_eq!(budgets, vec![192, 384]);

    // Truncated twice: one retry only, then the complete items of the second answer.
    let server = FakeServer::start(vec![cut_off(cut, 192), cut_off(cut, 384)]);
    let s = settings(&server.url, "openai");
    let ex = LlmExtractor::new(Arc::new(HttpLlm::with_api_key(s.clone(), None)), &s).unwrap();
    let raw = ex.extract(&input(&ep, &speakers)).unwrap();
    assert_eq!((raw.entities.len(), raw.relationships.len(), raw.literal_facts.len()), (2, 1, 0));
    assert_eq!(kinds(&raw.warnings), vec!["llm_truncated_retry", "llm_truncated_json"]);
    assert_eq!((raw.usage.calls, raw.usage.retries), (2, 1));
    assert_eq!(server.requests().len(), 2);

    // At the cap already: no retry; the partial items are used at once.
    let cfg = {
        let mut c = Config::default();
        c.llm_url = server.url.clone();
        c.llm_max_tokens = 192;
        c.llm_tokens_per_turn = 0;
        c.llm_max_tokens_cap = 192;
        c
    };
    let s = LlmSettings::from_config(&cfg).unwrap();
    let server = FakeServer::start(vec![cut_off(cut, 192)]);
    let s = LlmSettings { url: server.url.clone(), ..s };
    let ex = LlmExtractor::new(Arc::new(HttpLlm::with_api_key(s.clone(), None)), &s).unwrap();
    let raw = ex.extract(&input(&ep, &speakers)).unwrap();
    assert_eq!(kinds(&raw.warnings), vec!["llm_truncated_json"]);
    assert_eq!((raw.usage.calls, raw.usage.retries, server.requests().len()), (1, 0, 1));
}

#[test]
fn the_schema_is_built_per_request_and_its_turn_ids_are_part_of_the_key() {
    let s = settings("http://127.0.0.1:9", "openai");
    let ex = LlmExtractor::new(Arc::new(HttpLlm::with_api_key(s.clone(), None)), &s).unwrap();
    let speakers: Vec<String> = SPEAKERS.iter().map(|s| s.to_string()).collect();
    let known = vec!["Acme Corp".to_string()];
    let ep = episode();
    let inp = ExtractInput { known_entities: &known, ..input(&ep, &speakers) };
    let (req, _, _) = ex.request(&inp).unwrap();
    let schema: serde_json::Value = serde_json::from_str(req.schema.as_deref().unwrap()).unwrap();
    let props = &schema["properties"]["relationships"]["items"]["properties"];
    assert_eq!(props["sourceTurn"]["enum"], serde_json::json!(["t1", "t2"]));
    assert_eq!(props["subject"]["enum"], serde_json::json!(["Ann", "Bo", "Acme Corp"]));
    // Another turn id, nothing else changed: another schema, another key.
    let mut other = episode();
    other.turns[1].id = "t3".into();
    let (req2, _, _) = ex.request(&ExtractInput { episode: &other, ..inp }).unwrap();
    let schema2: serde_json::Value = serde_json::from_str(req2.schema.as_deref().unwrap()).unwrap();
    assert_eq!(schema2["properties"]["literalFacts"]["items"]["properties"]["sourceTurn"]["enum"], serde_json::json!(["t1", "t3"]));
    assert_ne!(request_key(&req).unwrap(), request_key(&req2).unwrap());
    // The schema alone changes the key: the same messages with the second schema.
    let mut swapped = req.clone();
    swapped.schema = req2.schema.clone();
    assert_ne!(request_key(&req).unwrap(), request_key(&swapped).unwrap());
}

#[test]
fn openai_json_schema_is_sent_strict_with_closed_objects() {
    let server = FakeServer::start(vec![Reply::openai(&answer(REL, LIT), 10, 5)]);
    let cfg = {
        let mut c = Config::default();
        c.llm_url = server.url.clone();
        c.llm_response_format = "json_schema".into();
        c
    };
    let s = LlmSettings::from_config(&cfg).unwrap();
    let ex = LlmExtractor::new(Arc::new(HttpLlm::with_api_key(s.clone(), None)), &s).unwrap();
    let ep = episode();
    let speakers: Vec<String> = SPEAKERS.iter().map(|s| s.to_string()).collect();
    ex.extract(&input(&ep, &speakers)).unwrap();
    let body = server.requests()[0].json();
    let rf = &body["response_format"];
    assert_eq!((rf["type"].as_str(), rf["json_schema"]["strict"].as_bool()), (Some("json_schema"), Some(true)));
    let schema = &rf["json_schema"]["schema"];
    assert_eq!(schema["additionalProperties"], false);
    let item = &schema["properties"]["relationships"]["items"];
    assert_eq!(item["additionalProperties"], false);
    let props: Vec<&String> = item["properties"].as_object().unwrap().keys().collect();
    let required: Vec<&str> = item["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(props.iter().all(|p| required.contains(&p.as_str())), "strict mode requires every property: {required:?}");
    assert_eq!(item["properties"]["validUntil"]["type"], serde_json::json!(["string", "null"]));
    assert!(schema["properties"]["relationships"].get("maxItems").is_none());
}

fn request_for(url: &str) -> memform::llm::LlmRequest {
    let s = settings(url, "openai");
    let ex = LlmExtractor::new(Arc::new(HttpLlm::with_api_key(s.clone(), None)), &s).unwrap();
    let ep = episode();
    let speakers: Vec<String> = SPEAKERS.iter().map(|s| s.to_string()).collect();
    ex.request(&input(&ep, &speakers)).unwrap().0
}

#[test]
fn server_error_then_success_is_retried() {
    let server = FakeServer::start(vec![
        Reply::Status(500, r#"{"error":"boom"}"#.into()),
        Reply::Status(503, "busy".into()),
        Reply::openai("{}", 1, 1),
    ]);
    let llm = HttpLlm::with_api_key(settings(&server.url, "openai"), None);
    let resp = llm.complete(&request_for(&server.url)).unwrap();
    assert_eq!(resp.text, "{}");
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn server_errors_past_the_retry_budget_fail_with_the_status() {
    let server = FakeServer::start(vec![Reply::Status(502, "bad gateway".into()); 4]);
    let llm = HttpLlm::with_api_key(settings(&server.url, "openai"), None);
    let err = llm.complete(&request_for(&server.url)).unwrap_err();
    assert!(matches!(err, Error::LlmStatus { status: 502, attempts: 3, .. }), "{err}");
    assert!(err.to_string().contains("bad gateway"), "{err}");
    assert_eq!(server.requests().len(), 3, "max_retries = 2 → 3 attempts");
}

#[test]
fn client_error_is_not_retried() {
    let server =
        FakeServer::start(vec![Reply::Status(400, r#"{"error":{"message":"model not found"}}"#.into()), Reply::openai("{}", 1, 1)]);
    let llm = HttpLlm::with_api_key(settings(&server.url, "openai"), None);
    let err = llm.complete(&request_for(&server.url)).unwrap_err();
    assert!(matches!(err, Error::LlmStatus { status: 400, attempts: 1, .. }), "{err}");
    assert!(err.to_string().contains("model not found"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn timeout_is_retried_then_reported() {
    let slow = Reply::After(Duration::from_millis(1500), Box::new(Reply::openai("{}", 1, 1)));
    let server = FakeServer::start(vec![slow.clone(), Reply::openai("{\"ok\":1}", 1, 1), slow.clone(), slow]);
    let mut s = settings(&server.url, "openai");
    s.timeout_secs = 0.3;
    s.max_retries = 1;
    let llm = HttpLlm::with_api_key(s, None);
    let t = Instant::now();
    let resp = llm.complete(&request_for(&server.url)).unwrap();
    assert_eq!(resp.text, "{\"ok\":1}");
    let err = llm.complete(&request_for(&server.url)).unwrap_err();
    assert!(matches!(err, Error::LlmTimeout { attempts: 2, .. }), "{err}");
    assert!(err.to_string().contains("no answer within 0.3s"), "{err}");
    assert!(t.elapsed() < Duration::from_millis(1400), "timeouts cut the calls short: {:?}", t.elapsed());
}

#[test]
fn refused_connection_and_unparseable_body_fail_clearly() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}");
    let llm = HttpLlm::with_api_key(settings(&url, "openai"), None);
    let err = llm.complete(&request_for(&url)).unwrap_err();
    assert!(matches!(err, Error::LlmConnect { .. }), "{err}");
    assert!(err.to_string().contains("is the server running"), "{err}");

    let server = FakeServer::start(vec![Reply::ok("<html>hello</html>"), Reply::ok(r#"{"choices":[]}"#)]);
    let llm = HttpLlm::with_api_key(settings(&server.url, "openai"), None);
    let err = llm.complete(&request_for(&server.url)).unwrap_err();
    assert!(matches!(err, Error::LlmBody { .. }), "{err}");
    assert!(err.to_string().contains("not JSON") && err.to_string().contains("<html>"), "{err}");
    let err = llm.complete(&request_for(&server.url)).unwrap_err();
    assert!(err.to_string().contains("no choices[0].message.content"), "{err}");
}

#[test]
fn record_mode_writes_answers_only_and_never_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::start(vec![Reply::Status(400, "no".into()), Reply::openai(&answer(REL, LIT), 30, 20)]);
    let s = settings(&server.url, "openai");
    let live: Arc<dyn Llm> = Arc::new(HttpLlm::with_api_key(s.clone(), Some("sekrit".into())));
    let seen: Arc<Mutex<Vec<LlmProgress>>> = Arc::default();
    let seen2 = seen.clone();
    let calls = Arc::new(AtomicU64::new(0));
    let calls2 = calls.clone();
    let rec = Arc::new(RecordedLlm::record(FixtureStore::new(dir.path()), live).with_progress(Arc::new(move |p| {
        calls2.fetch_add(1, Ordering::SeqCst);
        seen2.lock().unwrap().push(*p);
    })));
    let ex = LlmExtractor::new(rec.clone(), &s).unwrap();
    let ep = episode();
    let speakers: Vec<String> = SPEAKERS.iter().map(|s| s.to_string()).collect();
    assert!(ex.extract(&input(&ep, &speakers)).is_err());
    assert_eq!(std::fs::read_dir(dir.path()).map(|d| d.count()).unwrap_or(0), 0, "errors are not recorded");
    let first = ex.extract(&input(&ep, &speakers)).unwrap();
    let again = ex.extract(&input(&ep, &speakers)).unwrap();
    assert_eq!(first, again);
    assert_eq!(server.requests().len(), 2, "the third call was a fixture hit");
    let key = request_key(&ex.request(&input(&ep, &speakers)).unwrap().0).unwrap();
    let text = std::fs::read_to_string(dir.path().join(format!("{key}.json"))).unwrap();
    assert!(!text.contains("sekrit"));
    assert!(text.contains("\"conversation\": \"conv-a\"") && text.contains("\"recorded_at\""), "{text}");
    assert_eq!(rec.used_keys().into_iter().collect::<Vec<_>>(), vec![key]);
    let seen = seen.lock().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!((seen[1].live_calls, seen[1].fixture_hits), (1, 1));
    assert_eq!((seen[1].prompt_tokens, seen[1].completion_tokens), (60, 40));
}

/// Every file under `dir`, recursively.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A planted API key and URL password appear in no output, fixture or log
/// of a run: not when the server echoes the Authorization header in a 401,
/// not in run.json's LLM settings, not in a recorded run's files.
#[test]
fn a_planted_key_is_in_no_output_fixture_or_log() {
    const KEY: &str = "sk-planted-0123456789";
    const PASSWORD: &str = "pw-planted-9876";
    let tmp = tempfile::tempdir().unwrap();
    let conv = tmp.path().join("ds/conversations");
    std::fs::create_dir_all(&conv).unwrap();
    std::fs::write(
        conv.join("a.json"),
        r#"{"format": "memform-conversation/1", "id": "a", "speakers": ["Ann", "Bo"], "episodes": [{"id": "e1",
            "timestamp": "2024-03-01T10:00:00", "turns": [{"id": "t1", "speaker": "Ann", "text": "I started working at Acme Corp last month."},
            {"id": "t2", "speaker": "Bo", "text": "Nice! I adopted a dog named Rex."}]}]}"#,
    )
    .unwrap();
    let mut logs = String::new();
    let run = |server: &FakeServer, out: &str, logs: &mut String| -> Option<i32> {
        let url = server.url.replace("http://", &format!("http://user:{PASSWORD}@"));
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_memform"))
            .args(["run", "--dataset", "ds", "--mode", "llm", "--llm", "record", "--fixtures", "fx", "--out", out])
            .args(["--set", "llm_retry_backoff_ms=1"])
            .env("MEMFORM_LLM_API_KEY", KEY)
            .env("MEMFORM_LLM_URL", &url)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        logs.push_str(&String::from_utf8_lossy(&o.stdout));
        logs.push_str(&String::from_utf8_lossy(&o.stderr));
        o.status.code()
    };
    let echo = FakeServer::start(vec![Reply::EchoHeaders(401)]);
    assert_eq!(run(&echo, "refused", &mut logs), Some(2), "{logs}");
    let seen = echo.requests();
    assert_eq!(seen[0].header("authorization"), Some(format!("Bearer {KEY}").as_str()), "the key was sent");
    assert!(logs.contains("http status 401") && logs.contains("authorization"), "the echo is reported: {logs}");
    assert!(!tmp.path().join("refused/run.json").exists(), "a failed run leaves no run in --out");

    let ok = FakeServer::start((0..8).map(|_| Reply::openai(&answer(REL, LIT), 30, 20)).collect());
    assert_eq!(run(&ok, "recorded", &mut logs), Some(0), "{logs}");
    assert!(!ok.requests().is_empty());
    let files = files_under(tmp.path());
    assert!(files.iter().any(|f| f.starts_with(tmp.path().join("fx"))), "fixtures were recorded: {files:?}");
    assert!(files.iter().any(|f| f.ends_with("recorded/facts.jsonl")));
    let manifest = std::fs::read_to_string(tmp.path().join("recorded/run.json")).unwrap();
    assert!(manifest.contains("\"url\": \"http://[redacted]@127.0.0.1:"), "{manifest}");
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(KEY) && !text.contains(PASSWORD), "{} holds a secret", f.display());
    }
    assert!(!logs.contains(KEY) && !logs.contains(PASSWORD), "{logs}");
}

#[test]
fn settings_provider_parse_is_case_insensitive() {
    assert_eq!(Provider::parse("OpenAI").unwrap(), Provider::OpenAi);
}
