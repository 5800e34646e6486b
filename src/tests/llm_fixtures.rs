//! The fixture store: record then replay gives the same answers, misses
//! explain themselves, keys are stable and depend on everything that shapes
//! an answer (and nothing else), and lookups are safe in parallel.

// Test and bench code may unwrap and print (the library may not).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use memform::error::Error;
use memform::llm::{
    AnswerSource, CallContext, FixtureStore, Llm, LlmRequest, LlmResponse, LlmSettings, Message, RecordedLlm, Sampling, Stage, TemplateId,
    default_fixtures_dir, fixtures_check, request_key,
};
use memform::pipeline::Config;
use memform::pipeline::extract::{ExtractInput, Extractor, LlmExtractor};
use memform::pipeline::judge::{Judge, JudgeContext, JudgePair, LlmJudge, PairFact};
use memform::types::{Episode, LlmUsage, Turn, Verdict};
use rayon::prelude::{IntoParallelIterator, ParallelIterator};

/// A model that answers by a function of the request, counting its calls.
struct Scripted {
    calls: AtomicU64,
    answer: Box<dyn Fn(&LlmRequest) -> String + Send + Sync>,
}

impl Scripted {
    fn new(answer: impl Fn(&LlmRequest) -> String + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(Scripted { calls: AtomicU64::new(0), answer: Box::new(answer) })
    }
}

impl Llm for Scripted {
    fn complete(&self, req: &LlmRequest) -> memform::error::Result<LlmResponse> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let chars: usize = req.messages.iter().map(|m| m.content.len()).sum();
        Ok(LlmResponse {
            text: (self.answer)(req),
            usage: LlmUsage { calls: 1, prompt_tokens: chars as u64 / 4, completion_tokens: 17, ..LlmUsage::default() },
            model: "scripted-1".into(),
            source: AnswerSource::Live,
            wall: Duration::from_millis(3),
            finish_reason: Some("stop".into()),
            tool_calls: Vec::new(),
        })
    }
}

fn settings() -> LlmSettings {
    LlmSettings::from_config(&Config::default()).unwrap()
}

fn episode(id: &str, job: &str) -> Episode {
    Episode {
        observations: vec![],
        id: id.into(),
        timestamp: Some("2024-03-01T10:00:00".into()),
        turns: vec![
            Turn { id: format!("{id}:1"), speaker: "Ann".into(), text: format!("I started working at {job} last month.") },
            Turn { id: format!("{id}:2"), speaker: "Bo".into(), text: "Nice, I adopted a dog named Rex.".into() },
        ],
    }
}

fn speakers() -> Vec<String> {
    vec!["Ann".into(), "Bo".into()]
}

fn input<'a>(ep: &'a Episode, sp: &'a [String]) -> ExtractInput<'a> {
    ExtractInput { conversation_id: "conv-a", speakers: sp, episode: ep, known_entities: &[], recent_facts: &[] }
}

/// Answers extraction with one fact quoting the first turn, judge with `old` for pair 0.
fn model() -> Arc<Scripted> {
    Scripted::new(|req| match req.stage {
        Stage::Extract => {
            let user = &req.messages[1].content;
            let turn = user.split("[").nth(1).and_then(|s| s.split(']').next()).unwrap_or("?").to_string();
            format!(
                r#"<think>ok</think>{{"entities":[{{"name":"Acme","type":"ORG"}}],"relationships":[{{"subject":"Ann","predicate":"works at","object":"Acme","content":"Ann works at Acme","factType":"fact","confidence":0.9,"sourceQuote":"started working","sourceTurn":"{turn}"}}],"literalFacts":[]}}"#
            )
        }
        Stage::Judge => r#"{"verdicts":[{"pair":0,"verdict":"old"},{"pair":5,"verdict":"new"}]}"#.into(),
        // A hallucinated target: no candidate has this id.
        Stage::Decide => r#"{"action":"update","targetId":"conv-a/e9/c9","confidence":0.9,"reason":"newer"}"#.into(),
        Stage::Resolve | Stage::Evaluate | Stage::Proxy | Stage::Dream => "not asked in these tests".into(),
    })
}

/// Fault injection: a decision naming a non-candidate id is dropped with a
/// warning (Signet's decision.test.ts, "rejects UPDATE referencing a
/// non-candidate ID"), through the recorded boundary.
#[test]
fn signet_decision_with_a_hallucinated_target_is_dropped_with_a_warning() {
    use memform::pipeline::signet::Decider;
    use memform::pipeline::signet::decide::{DecisionInput, MemoryCandidate};
    use memform::pipeline::signet::llm::LlmDecider;
    use memform::types::{CandidateFact, FactKind, FactType};
    let settings = memform::llm::LlmSettings::from_config(&Config::default()).unwrap();
    let decider = LlmDecider::new(model(), &settings).unwrap();
    let fact = CandidateFact {
        subject: "Ann".into(),
        predicate: "works at".into(),
        object: "Initech".into(),
        kind: FactKind::Literal,
        fact_type: FactType::Fact,
        content: "Ann works at Initech".into(),
        confidence: 0.9,
        source_turn: "t1".into(),
        source_quote: String::new(),
        valid_from: None,
        valid_until: None,
    };
    let candidates = [MemoryCandidate {
        id: "conv-a/e1/c0".into(),
        fact_type: FactType::Fact,
        content: "Ann works at Acme".into(),
        subject: "Ann".into(),
        predicate: "works at".into(),
        object: "Acme".into(),
        score: 0.8,
        cosine: 0.8,
    }];
    let ctx = JudgeContext { conversation_id: "conv-a", episode_id: "e2" };
    let a = decider.decide(&ctx, &DecisionInput { fact: &fact, candidates: &candidates }, &Config::default()).unwrap();
    assert_eq!(a.decision, None);
    assert_eq!(a.warnings.iter().map(|w| w.kind.as_str()).collect::<Vec<_>>(), ["decision_unknown_target"]);
    assert_eq!(a.usage.calls, 1);
}

fn pairs() -> Vec<JudgePair> {
    let f = |o: &str| PairFact {
        subject: "Ann".into(),
        predicate: "works at".into(),
        object: o.into(),
        content: format!("Ann works at {o}"),
        valid_until: None,
    };
    vec![JudgePair { index: 0, live: f("Initech"), candidate: f("Acme"), cosine: 0.9 }]
}

#[test]
fn record_then_replay_gives_equal_extractions_and_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings();
    let live = model();
    let rec = Arc::new(RecordedLlm::record(FixtureStore::new(dir.path()), live.clone()));
    let sp = speakers();
    let eps = [episode("s1", "Acme"), episode("s2", "Initech")];
    let ctx = JudgeContext { conversation_id: "conv-a", episode_id: "s2" };
    let ex = LlmExtractor::new(rec.clone(), &s).unwrap();
    let judge = LlmJudge::new(rec.clone(), &s).unwrap();
    let recorded: Vec<_> = eps.iter().map(|e| ex.extract(&input(e, &sp)).unwrap()).collect();
    let recorded_verdicts = judge.judge(&ctx, &pairs()).unwrap();
    assert_eq!(live.calls.load(Ordering::SeqCst), 3);
    assert_eq!(recorded[1].relationships[0].source_turn, "s2:1");
    assert_eq!(recorded_verdicts.verdicts, vec![(0, Verdict::Old)]);
    assert_eq!(recorded_verdicts.warnings[0].kind, "llm_unknown_pair");
    assert_eq!(rec.used_keys().len(), 3);

    let replay = Arc::new(RecordedLlm::replay(FixtureStore::new(dir.path())));
    let ex = LlmExtractor::new(replay.clone(), &s).unwrap();
    let judge = LlmJudge::new(replay.clone(), &s).unwrap();
    // reversed order: lookups are by key, not by call order
    let replayed_verdicts = judge.judge(&ctx, &pairs()).unwrap();
    let mut replayed: Vec<_> = eps.iter().rev().map(|e| ex.extract(&input(e, &sp)).unwrap()).collect();
    replayed.reverse();
    assert_eq!(replayed, recorded);
    assert_eq!(replayed_verdicts, recorded_verdicts);
    assert_eq!(live.calls.load(Ordering::SeqCst), 3, "replay never calls the model");
    assert_eq!(replay.used_keys(), rec.used_keys());
    let t = replay.totals();
    assert_eq!((t.live_calls, t.fixture_hits), (0, 3));
    assert_eq!(t.completion_tokens, 3 * 17, "replay reports the recorded usage");
}

#[test]
fn fixture_files_are_readable_json_named_by_key() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings();
    let rec = Arc::new(RecordedLlm::record(FixtureStore::new(dir.path()), model()));
    let ex = LlmExtractor::new(rec, &s).unwrap();
    let (sp, ep) = (speakers(), episode("s1", "Acme"));
    ex.extract(&input(&ep, &sp)).unwrap();
    let req = ex.request(&input(&ep, &sp)).unwrap().0;
    let key = request_key(&req).unwrap();
    let text = std::fs::read_to_string(dir.path().join(format!("{key}.json"))).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(text.contains("\n  \"key\": "), "pretty-printed: {text}");
    assert_eq!(v["key"], key.as_str());
    assert_eq!(v["format"], "memform-llm-fixture/2");
    assert_eq!(v["answer_sha256"].as_str().map(str::len), Some(64));
    assert_eq!(v["context"]["episode"], "s1");
    assert_eq!(v["request"]["template"]["name"], "extract");
    assert_eq!(v["request"]["stage"], "extract");
    assert_eq!(v["response"]["model"], "scripted-1");
    assert!(v["response"]["text"].as_str().unwrap().starts_with("<think>ok</think>"), "raw answer kept");
    assert_eq!(v["response"]["usage"]["completion_tokens"], 17);
    assert_eq!(v["wall_ms"], 3);
    let at = v["recorded_at"].as_str().unwrap();
    assert!(at.len() == 20 && at.ends_with('Z') && at.starts_with("20"), "{at}");
}

#[test]
fn a_miss_names_stage_episode_key_and_what_differs_from_the_closest() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings();
    let rec = Arc::new(RecordedLlm::record(FixtureStore::new(dir.path()), model()));
    let ex = LlmExtractor::new(rec, &s).unwrap();
    let sp = speakers();
    ex.extract(&input(&episode("s1", "Acme"), &sp)).unwrap();
    ex.extract(&input(&episode("s1", "a completely different employer of hers"), &sp)).unwrap();
    let recorded_key = request_key(&ex.request(&input(&episode("s1", "Acme"), &sp)).unwrap().0).unwrap();

    let replay = Arc::new(RecordedLlm::replay(FixtureStore::new(dir.path())));
    let ex = LlmExtractor::new(replay.clone(), &s).unwrap();
    let changed = episode("s1", "Acma");
    let wanted_key = request_key(&ex.request(&input(&changed, &sp)).unwrap().0).unwrap();
    let err = ex.extract(&input(&changed, &sp)).unwrap_err();
    assert!(matches!(&err, Error::FixtureMiss(m) if m.episode == "s1" && m.key == wanted_key), "{err}");
    let msg = err.to_string();
    for part in [
        "replay extract call for conversation conv-a, episode s1",
        &format!("no fixture {wanted_key}.json in {}", dir.path().display()),
        &format!("closest recorded extract request is {recorded_key}.json (conversation conv-a, episode s1)"),
        "messages[1] differs at char",
        "(recorded \"e last month.",
        "now \"a last month.",
        "--llm record",
    ] {
        assert!(msg.contains(part), "missing {part:?} in: {msg}");
    }
    assert!(!msg.contains("template"), "only what differs is listed: {msg}");

    let mut req = ex.request(&input(&episode("s1", "Acme"), &sp)).unwrap().0;
    req.template.version += 1;
    req.sampling.seed = 7;
    let msg = replay.complete(&req).unwrap_err().to_string();
    assert!(msg.contains("template extract v3 vs extract v4"), "{msg}");
    assert!(msg.contains("seed 42 vs 7"), "{msg}");
    assert!(!msg.contains("messages[1]"), "{msg}");

    let judge = LlmJudge::new(replay, &s).unwrap();
    let ctx = JudgeContext { conversation_id: "conv-a", episode_id: "s3" };
    let msg = judge.judge(&ctx, &pairs()).unwrap_err().to_string();
    assert!(msg.contains("replay judge call for conversation conv-a, episode s3"), "{msg}");
    assert!(msg.contains("no judge request is recorded there"), "{msg}");

    let nowhere = RecordedLlm::replay(FixtureStore::new(dir.path().join("nope")));
    let msg = nowhere.complete(&req).unwrap_err().to_string();
    assert!(msg.contains("the fixture directory does not exist"), "{msg}");
}

fn base_request() -> LlmRequest {
    LlmRequest {
        stage: Stage::Extract,
        model: "m".into(),
        template: TemplateId { name: "extract".into(), version: 1 },
        messages: vec![Message::new("system", "sys"), Message::new("user", "hello")],
        sampling: Sampling { temperature: 0.0, seed: 42, max_tokens: 100 },
        schema: Some(r#"{"type": "object", "required": ["a"]}"#.into()),
        tools: None,
        context: CallContext { conversation: "c".into(), episode: "e".into() },
    }
}

#[test]
fn keys_are_stable_and_cover_everything_that_shapes_an_answer() {
    let base = base_request();
    let key = request_key(&base).unwrap();
    // Pinned: a change here orphans every recorded fixture. The figure is
    // SHA-256 of Python's json.dumps(material, sort_keys=True,
    // separators=(",", ":"), ensure_ascii=False), computed outside Rust.
    assert_eq!(key, "79777af0e644820b0a1b475bfb1e70352a13746b37628cd5c2717b4caf39e48e");
    assert_eq!(request_key(&base.clone()).unwrap(), key);
    let mut reformatted = base.clone();
    reformatted.schema = Some("{\"required\":[\"a\"],\n \"type\":\"object\"}".into());
    assert_eq!(request_key(&reformatted).unwrap(), key, "the schema is hashed in canonical form");
    let mut other_context = base.clone();
    other_context.context = CallContext { conversation: "x".into(), episode: "y".into() };
    assert_eq!(request_key(&other_context).unwrap(), key, "where a call comes from is not in the key");

    type Change = Box<dyn Fn(&mut LlmRequest)>;
    let variants: Vec<(&str, Change)> = vec![
        ("stage", Box::new(|r| r.stage = Stage::Judge)),
        ("model", Box::new(|r| r.model = "m2".into())),
        ("template name", Box::new(|r| r.template.name = "judge".into())),
        ("template version", Box::new(|r| r.template.version = 2)),
        ("system message", Box::new(|r| r.messages[0].content.push(' '))),
        ("role", Box::new(|r| r.messages[1].role = "assistant".into())),
        ("temperature", Box::new(|r| r.sampling.temperature = 0.1)),
        ("seed", Box::new(|r| r.sampling.seed = 43)),
        ("max_tokens", Box::new(|r| r.sampling.max_tokens = 101)),
        ("schema", Box::new(|r| r.schema = None)),
    ];
    let mut seen = BTreeSet::from([key]);
    for (what, change) in variants {
        let mut r = base.clone();
        change(&mut r);
        assert!(seen.insert(request_key(&r).unwrap()), "changing the {what} must change the key");
    }
}

#[test]
fn parallel_lookups_and_recordings_are_safe() {
    let dir = tempfile::tempdir().unwrap();
    let live = Scripted::new(|r| format!("answer to {}", r.messages[1].content));
    let rec = RecordedLlm::record(FixtureStore::new(dir.path()), live.clone());
    let request = |i: usize| {
        let mut r = base_request();
        r.messages[1].content = format!("question {}", i % 20);
        r
    };
    // parallel recording, each key asked several times at once
    let answers: Vec<String> = (0..200).into_par_iter().map(|i| rec.complete(&request(i)).unwrap().text).collect();
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a, &format!("answer to question {}", i % 20));
    }
    assert_eq!(rec.used_keys().len(), 20);
    let calls_after_record = live.calls.load(Ordering::SeqCst);
    assert!((20..=200).contains(&calls_after_record));

    let replay = RecordedLlm::replay(FixtureStore::new(dir.path()));
    let answers: Vec<(usize, LlmResponse)> = (0..400).into_par_iter().map(|i| (i, replay.complete(&request(i)).unwrap())).collect();
    for (i, a) in &answers {
        assert_eq!(a.text, format!("answer to question {}", i % 20));
        assert_eq!(a.source, AnswerSource::Fixture);
    }
    assert_eq!(replay.used_keys(), rec.used_keys());
    assert_eq!(replay.totals().fixture_hits, 400);
    assert_eq!(live.calls.load(Ordering::SeqCst), calls_after_record);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_name().to_string_lossy().ends_with(".json"))
        .collect();
    assert!(leftovers.is_empty(), "no temp files left behind");
}

#[test]
fn fixtures_check_lists_missing_unused_and_invalid_files() {
    let dir = tempfile::tempdir().unwrap();
    let rec = RecordedLlm::record(FixtureStore::new(dir.path()), model());
    let mut keys = Vec::new();
    for i in 0..3 {
        let mut r = base_request();
        r.messages[1].content = format!("q{i}");
        rec.complete(&r).unwrap();
        keys.push(request_key(&r).unwrap());
    }
    // a hand-edited fixture: its request no longer hashes to its name
    let edited = dir.path().join(format!("{}.json", keys[2]));
    let text = std::fs::read_to_string(&edited).unwrap().replace("\"q2\"", "\"q2 edited\"");
    std::fs::write(&edited, text).unwrap();
    std::fs::write(dir.path().join("junk.json"), "{not json").unwrap();
    let needed: BTreeSet<String> = [keys[0].clone(), "f".repeat(64)].into_iter().collect();
    let check = fixtures_check(dir.path(), &needed).unwrap();
    assert_eq!(check.missing, vec!["f".repeat(64)]);
    assert_eq!(check.unused, vec![keys[1].clone()]);
    let invalid: Vec<String> = check.invalid.iter().map(|(p, m)| format!("{} {m}", p.display())).collect();
    assert_eq!(invalid.len(), 2, "{invalid:?}");
    assert!(invalid.iter().any(|m| m.contains(&keys[2]) && m.contains("hashes to")), "{invalid:?}");
    assert!(!check.is_clean());

    let replay = RecordedLlm::replay(FixtureStore::new(dir.path()));
    let mut r = base_request();
    r.messages[1].content = "q2".into();
    let err = replay.complete(&r).unwrap_err();
    assert!(matches!(err, Error::Fixture { .. }) && err.to_string().contains("edited by hand"), "{err}");

    let empty = fixtures_check(&dir.path().join("none"), &BTreeSet::new()).unwrap();
    assert!(empty.is_clean());
}

#[test]
fn collecting_misses_answers_empty_and_lists_the_keys() {
    let dir = tempfile::tempdir().unwrap();
    let replay = Arc::new(RecordedLlm::replay(FixtureStore::new(dir.path())).collecting_misses());
    let ex = LlmExtractor::new(replay.clone(), &settings()).unwrap();
    let (sp, ep) = (speakers(), episode("s1", "Acme"));
    let raw = ex.extract(&input(&ep, &sp)).unwrap();
    assert_eq!(raw.warnings[0].kind, "llm_empty_answer");
    let key = request_key(&ex.request(&input(&ep, &sp)).unwrap().0).unwrap();
    assert_eq!(replay.missed_keys(), BTreeSet::from([key]));
    assert!(replay.used_keys().is_empty());
}

#[test]
fn live_mode_writes_nothing_and_fixture_dirs_follow_the_model() {
    let live = model();
    let rec = RecordedLlm::live(live.clone());
    let r = base_request();
    assert_eq!(rec.complete(&r).unwrap().source, AnswerSource::Live);
    assert_eq!(rec.complete(&r).unwrap().source, AnswerSource::Live);
    assert_eq!(live.calls.load(Ordering::SeqCst), 2);
    assert!(rec.store().is_none() && rec.used_keys().is_empty());
    let d = default_fixtures_dir(std::path::Path::new("datasets/scenarios"), "SmolLM2-135M-Instruct.Q4_1");
    assert_eq!(d, std::path::Path::new("datasets/scenarios/fixtures/smollm2-135m-instruct.q4_1"));
    let err = RecordedLlm::from_settings(&settings(), memform::llm::LlmMode::Replay, None).unwrap_err();
    assert!(err.to_string().contains("--llm replay needs a fixture directory"), "{err}");
}
