//! The `dreaming` profile on the bundled `datasets/dreaming` conversations:
//! a pass after every episode, and a snapshot of the graph after each pass
//! (the ontology: entities, aspects, claims with their status, links; the
//! pass records), with the rules and gold dreamers, and with the llm
//! dreamer replaying its recorded fixtures (`make record-dreaming`).

use std::fmt::Write as _;

use std::sync::Arc;

use memform::embed::hashed::HashedEmbedder;
use memform::llm::{FixtureStore, LlmSettings, RecordedLlm, default_fixtures_dir};
use memform::pipeline::Config;
use memform::pipeline::Stages;
use memform::pipeline::dreaming::llm::DreamLlm;
use memform::pipeline::dreaming::profile::dream_episode;
use memform::pipeline::extract::RulesExtractor;
use memform::pipeline::judge::Judge;
use memform::pipeline::judge::RulesJudge;
use memform::store::Store;

use crate::support::{root, snapshots_dir};

const CONVERSATIONS: [&str; 2] = ["garden-club", "harbor-move"];

/// The llm dreamer's settings for the bundled fixtures (the recording's:
/// `make record-dreaming`).
pub fn llm_cfg() -> Config {
    let mut cfg = Config::default();
    cfg.profile = "dreaming".into();
    cfg.dreaming.dreamer = "llm".into();
    cfg.dreaming.every_episodes = 1;
    cfg.dreaming.max_model_turns = 4;
    cfg.dreaming.max_tool_calls = 8;
    cfg.max_input_chars = 24_000;
    cfg
}

fn render(id: &str, dreamer: &str) -> String {
    let mut cfg = Config::default();
    cfg.profile = "dreaming".into();
    cfg.dreaming.dreamer = dreamer.into();
    cfg.dreaming.every_episodes = 1;
    if dreamer == "llm" {
        cfg = llm_cfg();
    }
    let extractor = RulesExtractor::new(cfg.max_input_chars);
    let embedder = HashedEmbedder::new(cfg.hashed_dims);
    let rules_judge = RulesJudge::new(&cfg);
    let settings = LlmSettings::from_config(&cfg.shared).unwrap();
    let fixtures = default_fixtures_dir(&root().join("datasets/dreaming"), &settings.model);
    let llm_judge = DreamLlm::new(Arc::new(RecordedLlm::replay(FixtureStore::new(fixtures))), &settings);
    let judge: &dyn Judge = if dreamer == "llm" { &llm_judge } else { &rules_judge };
    render_with(id, &cfg, Stages { extractor: &extractor, embedder: &embedder, judge })
}

fn render_with(id: &str, cfg: &Config, stages: Stages<'_>) -> String {
    let dataset = memform::dataset::load(&root().join("datasets/dreaming")).unwrap();
    let conv = dataset.conversations.iter().find(|c| c.id == id).unwrap();
    let store = Store::in_memory().unwrap();
    store.write_conversation(&conv.id, &conv.speakers, &[]).unwrap();
    store.write_evidence_from(&conv.id, 0, &conv.episodes).unwrap();
    let mut out = String::new();
    let mut seen = 0;
    for episode in &conv.episodes {
        dream_episode(stages, conv, episode, cfg, &store).unwrap();
        let passes = store.dream_passes(Some(&conv.id)).unwrap();
        for p in &passes[seen..] {
            let _ = writeln!(
                out,
                "== after {}: pass {} ({}, {}): {} calls, {} applied, {} skipped, {} failed; {} turns consumed, {} remaining; watermark {:?} -> {:?}{}",
                p.after_episode,
                p.id,
                p.mode,
                p.trigger,
                p.tool_calls,
                p.ops_applied,
                p.ops_skipped,
                p.ops_failed,
                p.evidence_consumed,
                p.evidence_remaining,
                p.watermark_before,
                p.watermark_after,
                if cfg.dreaming.dreamer == "llm" { format!("\n   summary: {:?}", p.summary) } else { String::new() }
            );
            if cfg.dreaming.dreamer == "llm" {
                for c in store.tool_calls_of(&p.id).unwrap() {
                    let _ = writeln!(out, "   call {} {} ok={} input {}", c.seq, c.tool, c.ok, c.input);
                }
            }
        }
        seen = passes.len();
        let view = store.ontology_view(&conv.id).unwrap();
        let name = |id: &str| view.entities.iter().find(|e| e.id == id).map(|e| e.name.clone()).unwrap_or_else(|| id.to_string());
        for e in &view.entities {
            let _ = writeln!(out, "entity {} {} ({}){}", e.id, e.name, e.entity_type, if e.active { "" } else { " archived" });
        }
        for a in &view.aspects {
            let _ = writeln!(out, "aspect {} {} / {} ({})", a.id, name(&a.entity_id), a.name, a.cardinality.as_str());
        }
        for c in &view.claims {
            let by = c.superseded_by.as_deref().map(|s| format!(" by {s}")).unwrap_or_default();
            let _ = writeln!(out, "claim {} [{}{}] {}: {:?}", c.id, c.status.as_str(), by, c.claim_key, c.content);
        }
        for l in &view.links {
            let _ = writeln!(out, "link {} {} -{}-> {}", l.id, name(&l.source_entity_id), l.link_type, name(&l.target_entity_id));
        }
        if !view.resolved_attention.is_empty() {
            let _ = writeln!(out, "attention declined: {}", view.resolved_attention.join(", "));
        }
    }
    let _ = writeln!(out, "== operations (operation, effect, kind, count)");
    for c in store.onto_op_counts().unwrap() {
        let _ = writeln!(out, "{} {} {} {}", c.0, c.1, c.2.as_deref().unwrap_or("-"), c.3);
    }
    let _ = writeln!(out, "== memory (claims as facts, live or not)");
    let live = store.live_fact_ids().unwrap();
    for f in store.facts_of(&conv.id).unwrap() {
        let _ = writeln!(out, "{} {} {:?} turns {}", f.id, if live.contains(&f.id) { "live" } else { "ended" }, f.content, f.source_turns);
    }
    out
}

fn check(dreamer: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshots_dir());
    settings.set_prepend_module_to_snapshot(false);
    for id in CONVERSATIONS {
        settings.bind(|| insta::assert_snapshot!(format!("dreaming__{id}__{dreamer}"), render(id, dreamer)));
    }
}

#[test]
fn the_graph_after_each_pass_rules() {
    check("rules");
}

#[test]
fn the_graph_after_each_pass_gold() {
    check("gold");
}

/// The llm dreamer replaying its recorded transcripts: every model turn's
/// request (the tool answers so far included) finds its fixture, and two
/// replays are identical.
#[test]
fn the_graph_after_each_pass_llm_replay() {
    for id in CONVERSATIONS {
        assert_eq!(render(id, "llm"), render(id, "llm"), "{id}: the replay is deterministic");
    }
    check("llm");
}

fn memform(args: &[&str]) -> (Option<i32>, String, String) {
    let o = std::process::Command::new(crate::support::bin()).args(args).output().expect("spawn");
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// `memform dream tool` on a finished run: a capability answers one JSON
/// line; an unknown capability and an input its schema refuses are one
/// error line and exit 2.
#[test]
fn dream_tool_answers_and_refuses_an_unknown_capability_or_bad_input_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let dataset = root().join("datasets/dreaming");
    let (code, _, err) = memform(&["run", "--profile", "dreaming", "--dataset", dataset.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let run = out.to_str().unwrap();
    let (code, stdout, err) =
        memform(&["dream", "tool", "search_entities", "--input", r#"{"agentId": "harbor-move", "query": "nadia"}"#, "--store", run]);
    assert_eq!(code, Some(0), "{err}");
    let answer: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!((answer["tool"].as_str(), answer["ok"].as_bool()), (Some("search_entities"), Some(true)), "{answer}");
    assert_eq!(answer["items"][0]["name"], "Nadia", "{answer}");
    for (name, input, want) in [
        ("summon", r#"{"agentId": "harbor-move"}"#, "unknown capability \"summon\""),
        ("get_entity", r#"{"agentId": "harbor-move", "entityId": "Nadia", "depth": 3}"#, "unknown field `depth`"),
        ("search_evidence", r#"{"agentId": "harbor-move", "limit": 5000}"#, "limit = 5000"),
        ("search_evidence", "not json", "not JSON"),
    ] {
        let (code, stdout, err) = memform(&["dream", "tool", name, "--input", input, "--store", run, "--conversation", "harbor-move"]);
        assert_eq!(code, Some(2), "{name}: {err}");
        assert!(stdout.is_empty(), "{stdout}");
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(lines[0].contains(want), "{name}: {err}");
    }
    let (code, stdout, _) = memform(&["dream", "tools"]);
    assert_eq!(code, Some(0));
    let manifest: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(manifest.as_array().map(Vec::len), Some(12));
}

/// The llm dreamer replays only: a model turn without its fixture stops
/// the run with exit 2, naming the stage and the pass.
#[test]
fn an_llm_dreamer_replay_miss_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("no-fixtures");
    std::fs::create_dir_all(&empty).unwrap();
    let dataset = root().join("datasets/dreaming");
    let (code, _, err) = memform(&[
        "run",
        "--profile",
        "dreaming",
        "--judge",
        "llm",
        "--set",
        "dreaming.dreamer=\"llm\"",
        "--set",
        "llm_url=\"http://127.0.0.1:9\"",
        "--fixtures",
        empty.to_str().unwrap(),
        "--dataset",
        dataset.to_str().unwrap(),
        "--out",
        tmp.path().join("run").to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("dream") && lines[0].contains("/p1 turn 1"), "{err}");
}

/// `memform dream tool validate_proposal` on a run's store checks
/// duplicates as the run's passes do (the hashed embedder is rebuilt from
/// the run's config: the cosine check through stage 2's resolver), and its
/// answer for a request is what `apply_ontology_ops` then does.
#[test]
fn dream_tool_validate_proposal_checks_by_cosine_and_matches_apply() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let dataset = root().join("datasets/dreaming");
    let (code, _, err) = memform(&["run", "--profile", "dreaming", "--dataset", dataset.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let run = out.to_str().unwrap();
    let call = |tool: &str, input: &serde_json::Value| {
        let (code, stdout, err) = memform(&["dream", "tool", tool, "--input", &input.to_string(), "--store", run]);
        assert_eq!(code, Some(0), "{tool}: {err}");
        serde_json::from_str::<serde_json::Value>(stdout.trim()).unwrap()
    };
    let v = call("validate_proposal", &serde_json::json!({"agentId": "harbor-move", "name": "Nadia", "type": "person"}));
    assert_eq!(v["cosineChecked"], true, "{v}");
    assert_eq!(v["createEntity"]["effect"], "skipped", "{v}");
    // A request citing a quote its turn does not hold: the same rejection both ways, nothing written.
    let ops = serde_json::json!([{"operation": "create_entity", "payload": {"name": "Zanzibar Office", "type": "place"},
        "evidence": [{"source_ref": "turn:nope", "quote": "Zanzibar"}]}]);
    let v = call("validate_proposal", &serde_json::json!({"agentId": "harbor-move", "operations": ops}));
    let a = call("apply_ontology_ops", &serde_json::json!({"agentId": "harbor-move", "operations": ops}));
    assert_eq!(
        (v["kind"].clone(), a["kind"].clone()),
        (serde_json::json!("unknown_source"), serde_json::json!("unknown_source")),
        "{v} {a}"
    );
}

/// `memform ontology-extract`: a dry run writes nothing and prints one line
/// per conversation and a total; `--write-proposals` and
/// `--write-assertions` write the operations and the applied graph; bad
/// arguments exit 2.
#[test]
fn ontology_extract_is_a_dry_run_by_default_and_writes_proposals_and_assertions_on_request() {
    let tmp = tempfile::tempdir().unwrap();
    let dataset = root().join("datasets/dreaming");
    let ds = dataset.to_str().unwrap();
    let (code, stdout, err) = memform(&["ontology-extract", "--dataset", ds]);
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), CONVERSATIONS.len() + 1, "{stdout}");
    let total = lines.last().unwrap();
    assert!(total["applied"].as_u64().unwrap() > 0 && total["claims"].as_u64().unwrap() > 0, "{total}");
    assert_eq!(total["written"], serde_json::json!([]));
    let out = tmp.path().join("extract");
    let (code, stdout, err) =
        memform(&["ontology-extract", "--dataset", ds, "--write-proposals", "--write-assertions", "--out", out.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let again: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(again["operations"], total["operations"], "the same passes");
    let proposals = std::fs::read_to_string(out.join("proposals.jsonl")).unwrap();
    assert_eq!(proposals.lines().count() as u64, total["operations"].as_u64().unwrap());
    let first: serde_json::Value = serde_json::from_str(proposals.lines().next().unwrap()).unwrap();
    assert!(first["effect"].is_string() && first["payload"].is_object(), "{first}");
    let store = Store::open(&out.join("store.sqlite")).unwrap();
    let claims: usize =
        CONVERSATIONS.iter().map(|c| store.ontology_view(c).unwrap().claims.iter().filter(|x| x.status.as_str() == "active").count()).sum();
    assert_eq!(claims as u64, total["claims"].as_u64().unwrap());
    for (args, want) in [
        (vec!["ontology-extract", "--dataset", ds, "--write-proposals"], "--out"),
        (vec!["ontology-extract", "--dataset", ds, "--write-proposals", "--out", ds], "--out"),
        (vec!["ontology-extract", "--dataset", ds, "--set", "dreaming.dreamer=\"llm\""], "scripted dreamers"),
        (vec!["ontology-extract", "--dataset", ds, "--set", "dreaming.max_ops_per_call=0"], "max_ops_per_call"),
    ] {
        let (code, _, err) = memform(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
