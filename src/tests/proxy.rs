//! `memform proxy` over real HTTP on the loopback: record against a fake
//! upstream (a scripted in-process server, for fault injection), replay,
//! a miss (500 naming the key, exit 2 from the command), malformed and
//! oversized requests, upstream failures (nothing recorded), the date
//! normalisation, embeddings, and the command's stdin/stdout contract.

// Test and bench code may unwrap and print (the library may not).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

// Shared with llm_fake, which uses the parts this test does not.
#[allow(dead_code)]
#[path = "support/fake_server.rs"]
mod fake_server;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use fake_server::{FakeServer, Reply};
use memform::embed::Embedder;
use memform::embed::hashed::HashedEmbedder;
use memform::llm::FixtureFile;
use memform::llm::proxy::{Normalise, ProxyConfig, ProxyLimits, ProxyMode, ProxyServer};
use serde_json::{Value, json};

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(Duration::from_secs(20))).build().into()
}

/// POSTs `body` to `url`; the status and the body.
fn post(url: &str, body: &str) -> (u16, String) {
    let mut r = agent().post(url).header("Content-Type", "application/json").send(body).unwrap();
    (r.status().as_u16(), r.body_mut().read_to_string().unwrap())
}

fn get(url: &str) -> (u16, String) {
    let mut r = agent().get(url).call().unwrap();
    (r.status().as_u16(), r.body_mut().read_to_string().unwrap())
}

/// A chat request as mem0 sends one: a system prompt with today's date.
fn chat_body(today: &str, user: &str) -> String {
    json!({
        "model": "qwen-test",
        "messages": [
            {"role": "system", "content": format!("Extract facts. Today's date is {today}.")},
            {"role": "user", "content": user},
        ],
        "temperature": 0.1,
        "max_tokens": 200,
        "response_format": {"type": "json_object"},
    })
    .to_string()
}

fn fixture_files(dir: &Path) -> Vec<FixtureFile> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<(String, FixtureFile)> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| (p.display().to_string(), serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.into_iter().map(|(_, f)| f).collect()
}

fn start(mode: ProxyMode, dir: &Path, rules: &str, limits: ProxyLimits) -> ProxyServer {
    let mut cfg = ProxyConfig::new(mode, dir);
    cfg.normalise = Normalise::named(rules).unwrap();
    cfg.limits = limits;
    ProxyServer::start(cfg).unwrap()
}

fn record(upstream: &FakeServer) -> ProxyMode {
    ProxyMode::Record { upstream: upstream.url.clone() }
}

fn error_message(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("error body is not JSON ({e}): {body}"));
    v["error"]["message"].as_str().unwrap().to_string()
}

#[test]
fn record_writes_a_fixture_and_replay_answers_it_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = FakeServer::start(vec![Reply::openai(r#"{"facts":["Ann moved to Lyon"]}"#, 120, 9)]);
    let body = chat_body("2026-12-01", "I moved to Lyon.");

    let proxy = start(record(&upstream), dir.path(), "none", ProxyLimits::default());
    let url = format!("{}/chat/completions", proxy.base_url());
    assert!(proxy.used_keys().is_empty());
    let (status, recorded) = post(&url, &body);
    assert_eq!(status, 200, "{recorded}");
    let answer: Value = serde_json::from_str(&recorded).unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], r#"{"facts":["Ann moved to Lyon"]}"#);
    assert_eq!(answer["usage"]["prompt_tokens"], 120);
    // Forwarded as the client sent it.
    let sent = upstream.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, "/v1/chat/completions");
    assert_eq!(sent[0].body, body);

    // Asked again, the fixture answers: the upstream is not called.
    let (status, again) = post(&url, &body);
    assert_eq!((status, again.as_str()), (200, recorded.as_str()));
    assert_eq!(upstream.requests().len(), 1);
    let used = proxy.used_keys();
    let stats = proxy.shutdown();
    assert_eq!((stats.requests, stats.chat, stats.recorded, stats.hits), (2, 2, 1, 1));
    assert!(stats.clean(), "{stats:?}");

    // One fixture in memform's format: named by its key, its request's key material, the answer's digest.
    let files = fixture_files(dir.path());
    assert_eq!(files.len(), 1);
    let f = &files[0];
    assert_eq!(f.format, "memform-llm-fixture/2");
    assert!(dir.path().join(format!("{}.json", f.key)).is_file());
    assert_eq!(f.request.key().unwrap(), f.key);
    assert_eq!(used.into_iter().collect::<Vec<_>>(), vec![f.key.clone()]);
    assert_eq!(f.request.stage.as_str(), "proxy");
    assert_eq!(f.request.model, "qwen-test");
    assert_eq!(f.request.messages[1].content, "I moved to Lyon.");
    assert_eq!(f.request.params.as_ref().unwrap()["response_format"], json!({"type": "json_object"}));
    assert_eq!(f.response.text, r#"{"facts":["Ann moved to Lyon"]}"#);
    assert_eq!(f.answer_sha256.len(), 64);
    assert!(recorded.contains(&f.key[..24]), "the answer's id names its fixture: {recorded}");

    // Replay: no upstream at all, the same bytes.
    let proxy = start(ProxyMode::Replay, dir.path(), "none", ProxyLimits::default());
    let (status, replayed) = post(&format!("{}/chat/completions", proxy.base_url()), &body);
    assert_eq!((status, replayed.as_str()), (200, recorded.as_str()));
    let stats = proxy.shutdown();
    assert_eq!((stats.hits, stats.recorded, stats.misses.len()), (1, 0, 0));
}

#[test]
fn a_replay_miss_is_a_500_naming_the_key_the_recording_would_write() {
    let recorded_dir = tempfile::tempdir().unwrap();
    let replay_dir = tempfile::tempdir().unwrap();
    let body = chat_body("2026-12-01", "I adopted a cat.");
    let proxy = start(ProxyMode::Replay, replay_dir.path(), "none", ProxyLimits::default());
    let (status, answer) = post(&format!("{}/chat/completions", proxy.base_url()), &body);
    assert_eq!(status, 500, "{answer}");
    let v: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(v["error"]["type"], "fixture_miss");
    let key = v["error"]["key"].as_str().unwrap().to_string();
    assert!(v["error"]["message"].as_str().unwrap().contains(&key));
    // A client that retries asks again: one missing key, two miss answers.
    let (status, _) = post(&format!("{}/chat/completions", proxy.base_url()), &body);
    assert_eq!(status, 500);
    let stats = proxy.shutdown();
    assert_eq!(stats.misses, vec![key.clone()]);
    assert_eq!((stats.miss_answers, stats.errors), (2, 0));
    assert!(!stats.clean());

    // The key named is the one a recording of that request writes.
    let upstream = FakeServer::start(vec![Reply::openai("{}", 1, 1)]);
    let proxy = start(record(&upstream), recorded_dir.path(), "none", ProxyLimits::default());
    assert_eq!(post(&format!("{}/chat/completions", proxy.base_url()), &body).0, 200);
    proxy.shutdown();
    assert!(recorded_dir.path().join(format!("{key}.json")).is_file());
}

#[test]
fn malformed_requests_are_400s_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let proxy = start(ProxyMode::Replay, dir.path(), "none", ProxyLimits::default());
    let url = format!("{}/chat/completions", proxy.base_url());
    for (body, names) in [
        ("{not json", "not JSON"),
        ("[1,2]", "not a JSON object"),
        (r#"{"messages":[{"role":"user","content":"hi"}]}"#, "model"),
        (r#"{"model":"m","messages":[]}"#, "messages"),
        (r#"{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}"#, "messages[0].content"),
        (r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}"#, "stream"),
        (r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":"hot"}"#, "temperature"),
    ] {
        let (status, answer) = post(&url, body);
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(error_message(&answer).contains(names), "{body}: {answer}");
    }
    // Not HTTP at all.
    let mut s = TcpStream::connect(proxy.addr()).unwrap();
    s.write_all(b"HELLO THERE\r\n\r\n").unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 400 "), "{raw}");
    // An unknown route and a wrong method.
    assert_eq!(post(&format!("{}/completions", proxy.base_url()), "{}").0, 404);
    assert_eq!(get(&url).0, 405);
    let stats = proxy.shutdown();
    assert_eq!(stats.errors, 10);
    assert_eq!(stats.errors_by_status.get("400"), Some(&8));
    assert!(stats.misses.is_empty());
    assert!(fixture_files(dir.path()).is_empty());
}

#[test]
fn an_upstream_failure_is_a_502_or_504_and_records_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = FakeServer::start(vec![
        Reply::Status(500, r#"{"error":"model crashed"}"#.into()),
        Reply::ok("this is not json"),
        Reply::ok(r#"{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1"}]}}]}"#),
        Reply::After(Duration::from_secs(4), Box::new(Reply::openai("too late", 1, 1))),
    ]);
    let limits = ProxyLimits { upstream_timeout_secs: 1, ..ProxyLimits::default() };
    let proxy = start(record(&upstream), dir.path(), "none", limits);
    let url = format!("{}/chat/completions", proxy.base_url());
    let body = chat_body("2026-12-01", "I moved to Lyon.");
    for (status, names) in [(502, "answered 500"), (502, "not JSON"), (502, "tool calls"), (504, "did not answer within 1 s")] {
        let (got, answer) = post(&url, &body);
        assert_eq!(got, status, "{answer}");
        let message = error_message(&answer);
        assert!(message.contains(names) && message.contains("nothing recorded"), "{message}");
    }
    let stats = proxy.shutdown();
    assert_eq!((stats.recorded, stats.errors), (0, 4));
    assert!(fixture_files(dir.path()).is_empty(), "an upstream failure wrote a fixture");

    // No upstream listening at all.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let proxy = start(ProxyMode::Record { upstream: format!("http://127.0.0.1:{port}") }, dir.path(), "none", ProxyLimits::default());
    let (status, answer) = post(&format!("{}/chat/completions", proxy.base_url()), &body);
    assert_eq!(status, 502, "{answer}");
    proxy.shutdown();
    assert!(fixture_files(dir.path()).is_empty());
}

#[test]
fn an_oversized_request_is_a_413_and_never_reaches_the_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = FakeServer::start(vec![Reply::openai("{}", 1, 1)]);
    let limits = ProxyLimits { max_request_bytes: 1024, ..ProxyLimits::default() };
    let proxy = start(record(&upstream), dir.path(), "none", limits);
    let body = chat_body("2026-12-01", &"I moved to Lyon. ".repeat(400));
    assert!(body.len() > 1024);
    let (status, answer) = post(&format!("{}/chat/completions", proxy.base_url()), &body);
    assert_eq!(status, 413, "{answer}");
    assert!(error_message(&answer).contains("--max-request-bytes"), "{answer}");
    // Just under the limit is served.
    let small = chat_body("2026-12-01", "I moved to Lyon.");
    assert_eq!(post(&format!("{}/chat/completions", proxy.base_url()), &small).0, 200);
    let stats = proxy.shutdown();
    assert_eq!(stats.errors_by_status.get("413"), Some(&1));
    assert_eq!(upstream.requests().len(), 1);
    assert_eq!(fixture_files(dir.path()).len(), 1);
}

#[test]
fn mem0_normalisation_keys_two_days_alike_and_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = FakeServer::start(vec![Reply::openai(r#"{"facts":["Ann moved to Lyon"]}"#, 5, 5)]);
    let proxy = start(record(&upstream), dir.path(), "mem0", ProxyLimits::default());
    let (status, day1) = post(&format!("{}/chat/completions", proxy.base_url()), &chat_body("2026-12-01", "I moved to Lyon."));
    assert_eq!(status, 200, "{day1}");
    let stats = proxy.shutdown();
    assert_eq!(stats.normalisations.get("mem0.today"), Some(&1));
    let files = fixture_files(dir.path());
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].request.messages[0].content, "Extract facts. Today's date is <DATE>.");
    assert_eq!(files[0].request.template.name, "proxy/mem0");

    // The next day, in replay: the same key, the same answer.
    let proxy = start(ProxyMode::Replay, dir.path(), "mem0", ProxyLimits::default());
    let (status, day2) = post(&format!("{}/chat/completions", proxy.base_url()), &chat_body("2026-12-02", "I moved to Lyon."));
    assert_eq!((status, day2.as_str()), (200, day1.as_str()));
    let stats = proxy.shutdown();
    assert_eq!((stats.hits, stats.normalisations.get("mem0.today").copied()), (1, Some(1)));
    assert!(stats.clean(), "{stats:?}");

    // Without the rule set the second day is another key: a miss.
    let proxy = start(ProxyMode::Replay, dir.path(), "none", ProxyLimits::default());
    let (status, _) = post(&format!("{}/chat/completions", proxy.base_url()), &chat_body("2026-12-02", "I moved to Lyon."));
    assert_eq!(status, 500);
    assert_eq!(proxy.shutdown().misses.len(), 1);
}

#[test]
fn embeddings_come_from_memforms_embedder_as_floats_or_base64() {
    let dir = tempfile::tempdir().unwrap();
    let proxy = start(ProxyMode::Replay, dir.path(), "none", ProxyLimits { max_embed_inputs: 2, ..ProxyLimits::default() });
    let url = format!("{}/embeddings", proxy.base_url());
    let want = HashedEmbedder::new(256).embed(&["Ann moved to Lyon", "Bo has a dog"], "test").unwrap();

    let (status, answer) =
        post(&url, &json!({"model": "text-embedding-3-small", "input": ["Ann moved to Lyon", "Bo has a dog"]}).to_string());
    assert_eq!(status, 200, "{answer}");
    let v: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(v["model"], "hashed:char3+word:256");
    for (i, w) in want.iter().enumerate() {
        let got: Vec<f32> = v["data"][i]["embedding"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
        assert_eq!(&got, w);
    }

    let (status, answer) =
        post(&url, &json!({"model": "m", "input": "Ann moved to Lyon", "encoding_format": "base64", "dimensions": 256}).to_string());
    assert_eq!(status, 200, "{answer}");
    let v: Value = serde_json::from_str(&answer).unwrap();
    let b64 = v["data"][0]["embedding"].as_str().unwrap();
    let bytes = decode_base64(b64);
    let got: Vec<f32> = bytes.chunks(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    assert_eq!(got, want[0]);

    for (body, names) in [
        (json!({"model": "m", "input": [1, 2, 3]}), "input[0]"),
        (json!({"model": "m", "input": ["a", "b", "c"]}), "--max-embed-inputs"),
        (json!({"model": "m", "input": "a", "dimensions": 1536}), "dimensions"),
        (json!({"model": "m"}), "input"),
    ] {
        let (status, answer) = post(&url, &body.to_string());
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(error_message(&answer).contains(names), "{body}: {answer}");
    }
    let (status, models) = get(&format!("{}/models", proxy.base_url()));
    assert_eq!(status, 200);
    assert!(models.contains("hashed:char3+word:256"), "{models}");
    let stats = proxy.shutdown();
    assert_eq!((stats.embeddings, stats.errors), (6, 4));
}

fn decode_base64(s: &str) -> Vec<u8> {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let vals: Vec<u32> = s.bytes().filter(|b| *b != b'=').map(|b| alphabet.iter().position(|a| *a == b).unwrap() as u32).collect();
    let mut out = Vec::new();
    for chunk in vals.chunks(4) {
        let mut n = 0u32;
        for (i, v) in chunk.iter().enumerate() {
            n |= v << (18 - 6 * i);
        }
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

#[test]
fn requests_beyond_max_concurrency_wait_for_a_slot() {
    let dir = tempfile::tempdir().unwrap();
    // The first upstream answer takes a while; with one slot, the second request waits for it.
    let upstream = FakeServer::start(vec![
        Reply::After(Duration::from_millis(1500), Box::new(Reply::openai("first", 1, 1))),
        Reply::openai("second", 1, 1),
    ]);
    let limits = ProxyLimits { max_concurrency: 1, ..ProxyLimits::default() };
    let proxy = Arc::new(start(record(&upstream), dir.path(), "none", limits));
    let url = format!("{}/chat/completions", proxy.base_url());
    let first = {
        let url = url.clone();
        std::thread::spawn(move || post(&url, &chat_body("2026-12-01", "first")))
    };
    std::thread::sleep(Duration::from_millis(300));
    let started = std::time::Instant::now();
    let (status, answer) = post(&url, &chat_body("2026-12-01", "second"));
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("second"));
    assert!(started.elapsed() >= Duration::from_millis(900), "the second request did not wait: {:?}", started.elapsed());
    assert_eq!(first.join().unwrap().0, 200);
    // Both reached the upstream in order: the second only after the first was answered.
    let sent = upstream.requests();
    assert_eq!(sent.len(), 2);
}

/// The command: the URL on stdout's first line, served until stdin closes,
/// the figures as one JSON line, exit 2 after a miss.
#[test]
fn the_command_prints_its_url_stops_at_stdin_eof_and_exits_2_after_a_miss() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = FakeServer::start(vec![Reply::openai(r#"{"facts":[]}"#, 3, 4)]);
    let body = chat_body("2026-12-01", "I moved to Lyon.");

    let spawn = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_memform"))
            .arg("proxy")
            .args(args)
            .arg("--fixtures")
            .arg(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let url_of = |child: &mut std::process::Child| {
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        line.trim().to_string()
    };

    // Record.
    let mut child = spawn(&["--record", "--upstream", &upstream.url, "--normalise", "mem0"]);
    let base = url_of(&mut child);
    assert!(base.starts_with("http://127.0.0.1:") && base.ends_with("/v1"), "{base}");
    assert_eq!(post(&format!("{base}/chat/completions"), &body).0, 200);
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stats: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert_eq!((stats["recorded"].as_u64(), stats["normalisations"]["mem0.today"].as_u64()), (Some(1), Some(1)));
    assert_eq!(fixture_files(dir.path()).len(), 1);

    // Replay on another day: a hit, exit 0.
    let mut child = spawn(&["--replay", "--normalise", "mem0"]);
    let base = url_of(&mut child);
    assert_eq!(post(&format!("{base}/chat/completions"), &chat_body("2026-12-02", "I moved to Lyon.")).0, 200);
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));

    // A miss: exit 2, the key on stderr and in the figures.
    let mut child = spawn(&["--replay", "--normalise", "mem0"]);
    let base = url_of(&mut child);
    let (status, answer) = post(&format!("{base}/chat/completions"), &chat_body("2026-12-02", "I adopted a cat."));
    assert_eq!(status, 500);
    let key = serde_json::from_str::<Value>(&answer).unwrap()["error"]["key"].as_str().unwrap().to_string();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("missing fixture: {key}")), "{stderr}");
    let stats: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert_eq!(stats["misses"], json!([key]));
}

#[test]
fn the_command_refuses_bad_flags_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for (args, names) in [
        (vec!["--replay", "--listen", "0.0.0.0:0"], "loopback"),
        (vec!["--record"], "--upstream"),
        (vec!["--replay", "--max-concurrency", "0"], "max-concurrency"),
        (vec!["--replay", "--max-request-bytes", "999999999999"], "max-request-bytes"),
        (vec!["--record", "--upstream", "ftp://x"], "http://"),
        (vec!["--replay", "--embedder", "minilm"], "cache directory"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_memform"))
            .arg("proxy")
            .args(&args)
            .arg("--fixtures")
            .arg(dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(names), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: printed a URL");
    }
}

/// Sends `head` (and `body`) on a raw connection; the whole answer.
fn raw(proxy: &ProxyServer, head: &str, body: &[u8]) -> String {
    let mut s = TcpStream::connect(proxy.addr()).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn slow_chunked_and_expect_continue_requests() {
    let dir = tempfile::tempdir().unwrap();
    let limits = ProxyLimits { read_timeout_secs: 1, ..ProxyLimits::default() };
    let proxy = start(ProxyMode::Replay, dir.path(), "none", limits);

    // A head that never ends: 408 after the read timeout, not a thread held forever.
    let started = std::time::Instant::now();
    let answer = raw(&proxy, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n", b"");
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // A body shorter than its Content-Length: 408 too (the rest never comes).
    let answer = raw(&proxy, "POST /v1/embeddings HTTP/1.1\r\nContent-Length: 100\r\n\r\n", b"{\"input\":");
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
    // A chunked upload: 411.
    let answer = raw(&proxy, "POST /v1/embeddings HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", b"0\r\n\r\n");
    assert!(answer.starts_with("HTTP/1.1 411 "), "{answer}");

    // Expect: 100-continue gets its interim answer before the body is sent.
    let body = json!({"model": "m", "input": "Ann moved to Lyon"}).to_string();
    let mut s = TcpStream::connect(proxy.addr()).unwrap();
    write!(s, "POST /v1/embeddings HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n", body.len()).unwrap();
    let mut interim = [0u8; 25];
    s.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(body.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    assert!(answer.contains("Connection: close"), "{answer}");

    let stats = proxy.shutdown();
    assert_eq!(stats.errors_by_status.get("408"), Some(&2));
    assert_eq!(stats.errors_by_status.get("411"), Some(&1));
    assert_eq!(stats.embeddings, 1);
}
