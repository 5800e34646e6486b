//! Answer validation and fallbacks of the memorix LLM stages. The model is a
//! fault-injection mock (`Canned`, answers written here), not a recording.
use std::sync::Mutex;

use super::*;
use crate::llm::{AnswerSource, LlmResponse};
use crate::pipeline::Config;
use crate::pipeline::memorix::extract;
use crate::pipeline::memorix::observe::Input;

fn kinds(w: &[Warning]) -> Vec<&str> {
    w.iter().map(|w| w.kind.as_str()).collect()
}

fn hit(id: &str, narrative: &str) -> Hit {
    Hit {
        id: id.into(),
        title: "Port config".into(),
        narrative: narrative.into(),
        facts: vec!["Port: 3000".into()],
        entity_name: "server".into(),
        score: 0.8,
    }
}

fn extracted() -> Extracted {
    extract::rules("Server port", "The dev server listens on port 3001 now.", &["Port: 3001".into()], "server", "what-changed", &[])
}

#[test]
fn extract_answer_keeps_new_facts_and_drops_overlapping_ones() {
    let entities = vec!["server".to_string(), "src/db.ts".to_string()];
    let caller = vec!["The dev server port is 3001".to_string()];
    let mut w = Vec::new();
    let a = parse_extract(
        r#"{"type":"gotcha","entity":"src/db.ts","facts":["the dev server port is 3001.","Restart needed after a port change","ok","Restart needed after the port change"]}"#,
        &entities,
        &caller,
        &mut w,
    )
    .expect("valid");
    assert_eq!(
        a.facts,
        ["Restart needed after a port change"],
        "a restatement of a caller fact, a too-short fact and a near repeat are dropped"
    );
    assert_eq!((a.entity.as_str(), a.obs_type.as_str()), ("src/db.ts", "gotcha"));
    assert!(w.is_empty());
}

#[test]
fn extract_answers_naming_an_unknown_type_or_entity_or_unreadable_fall_back() {
    let entities = vec!["server".to_string()];
    for text in [
        r#"{"type":"insight","entity":"server","facts":[]}"#,
        r#"{"type":"gotcha","entity":"client","facts":[]}"#,
        r#"{"type":"gotcha","entity":"server"}"#,
        "I cannot answer that",
    ] {
        let mut w = Vec::new();
        assert_eq!(parse_extract(text, &entities, &[], &mut w), None, "{text}");
        assert!(kinds(&w).contains(&"memorix_llm_extract_invalid"), "{text}: {w:?}");
    }
}

#[test]
fn apply_extract_replaces_pattern_facts_entity_and_type() {
    let x = extracted();
    assert_eq!(x.extracted_facts, Vec::<String>::new(), "the caller's fact already says Port: 3001");
    let mut w = Vec::new();
    let a = ExtractAnswer { facts: vec!["Port moved from 3000 to 3001".into()], entity: "api-server".into(), obs_type: "gotcha".into() };
    let y = apply_extract(x, a, "server", "what-changed", &mut w);
    assert_eq!(y.facts, ["Port: 3001", "Port moved from 3000 to 3001"]);
    assert_eq!(y.extracted_facts, ["Port moved from 3000 to 3001"]);
    assert_eq!((y.entity.name.as_str(), y.entity.matched), ("api-server", EntityMatch::Llm));
    assert_eq!((y.obs_type.as_str(), y.type_corrected), ("gotcha", true));
    // No new fact: the patterns' facts stand, with a warning; the caller's own entity keeps the rules' resolution.
    let x = extracted();
    let a = ExtractAnswer { facts: vec![], entity: "server".into(), obs_type: "what-changed".into() };
    let y = apply_extract(x.clone(), a, "server", "what-changed", &mut w);
    assert_eq!((y.facts, y.entity, y.type_corrected), (x.facts, x.entity, false));
    assert_eq!(kinds(&w), ["memorix_llm_extract_no_facts"]);
}

#[test]
fn resolve_answers_map_to_memorix_actions_and_invalid_targets_fall_back() {
    let x = extracted();
    let hits = [hit("c/e1/c0", "The dev server listens on port 3000.")];
    let mut w = Vec::new();
    let r = |t: &str, w: &mut Vec<Warning>| parse_resolve(t, &x, &hits, w);
    let add = r(r#"{"action":"add","targetId":"","reason":"new"}"#, &mut w).unwrap();
    assert_eq!((add.action, add.target_id, add.reason.as_str()), (ResolveAction::New, None, "LLM: new"));
    let noop = r(r#"{"action":"noop","targetId":"c/e1/c0","reason":"same"}"#, &mut w).unwrap();
    assert_eq!((noop.action, noop.target_id.as_deref()), (ResolveAction::Discard, Some("c/e1/c0")));
    let upd = r(r#"{"action":"update","targetId":"c/e1/c0","reason":"more"}"#, &mut w).unwrap();
    assert_eq!(upd.action, ResolveAction::Merge);
    let (narrative, facts) = upd.merged.unwrap();
    assert!(narrative.contains("[Previous context]: The dev server listens on port 3000."), "{narrative}");
    assert_eq!(facts, ["Port: 3001", "Port: 3000"]);
    let del = r(r#"{"action":"delete","targetId":"c/e1/c0","reason":"changed"}"#, &mut w).unwrap();
    assert_eq!((del.action, del.merged.unwrap().0), (ResolveAction::Evolve, x.narrative.clone()));
    assert!(w.is_empty(), "{w:?}");
    for bad in [
        r#"{"action":"update","targetId":"c/e9/c9","reason":"x"}"#,
        r#"{"action":"delete","targetId":"","reason":"x"}"#,
        r#"{"action":"merge"}"#,
        "no",
    ] {
        let mut w = Vec::new();
        assert_eq!(r(bad, &mut w), None, "{bad}");
        assert!(kinds(&w).contains(&"memorix_llm_resolve_invalid"), "{bad}: {w:?}");
    }
}

#[test]
fn evaluate_answers_are_clamped_or_fall_back() {
    let mut w = Vec::new();
    let cuts = (0.6, 0.35);
    let v = parse_evaluate(r#"{"score":0.72,"category":"core","reason":"a decision"}"#, cuts, &mut w).unwrap();
    assert_eq!((v.score, v.category, v.reason.as_str()), (0.72, Category::Core, "core: LLM: a decision"));
    assert!(w.is_empty());
    let v = parse_evaluate(r#"{"score":7,"category":"ephemeral","reason":""}"#, cuts, &mut w).unwrap();
    assert_eq!((v.score, v.category, v.reason.as_str()), (1.0, Category::Core, "core: LLM: LLM decision"));
    assert_eq!(kinds(&w), ["memorix_llm_score_clamped", "memorix_llm_category_mismatch"]);
    for bad in [r#"{"score":"high","category":"core"}"#, r#"{"score":0.5,"category":"vital"}"#, "{"] {
        let mut w = Vec::new();
        assert_eq!(parse_evaluate(bad, cuts, &mut w), None, "{bad}");
        assert!(kinds(&w).contains(&"memorix_llm_evaluate_invalid"), "{bad}: {w:?}");
    }
}

#[test]
fn schemas_are_json_with_the_requests_enums() {
    let e: Json = serde_json::from_str(&extract_schema(&["a".into(), "b".into()])).unwrap();
    assert_eq!(e["properties"]["entity"]["enum"], json!(["a", "b"]));
    assert_eq!(e["properties"]["type"]["enum"].as_array().unwrap().len(), 10);
    assert_eq!(e["properties"]["facts"]["maxItems"], json!(LLM_MAX_FACTS));
    let r: Json = serde_json::from_str(&resolve_schema(&["x", ""])).unwrap();
    assert_eq!(r["properties"]["targetId"]["enum"], json!(["x", ""]));
    let v: Json = serde_json::from_str(&evaluate_schema()).unwrap();
    assert_eq!(v["properties"]["category"]["enum"], json!(["core", "contextual", "ephemeral"]));
    assert_eq!(entity_choices(&["a".into(), "b".into()], "a"), ["a", "b"]);
    assert_eq!(entity_choices(&[], "z"), ["z"]);
}

/// Fault injection: answers by stage, in order; every request is kept.
struct Canned {
    answers: Mutex<Vec<(Stage, String)>>,
    asked: Mutex<Vec<LlmRequest>>,
}

impl Llm for Canned {
    fn complete(&self, req: &LlmRequest) -> Result<LlmResponse> {
        self.asked.lock().unwrap().push(req.clone());
        let mut a = self.answers.lock().unwrap();
        let i = a.iter().position(|(s, _)| *s == req.stage).expect("an answer for the stage");
        let (_, text) = a.remove(i);
        Ok(LlmResponse {
            text,
            usage: LlmUsage { calls: 1, prompt_tokens: 10, completion_tokens: 5, retries: 0 },
            model: req.model.clone(),
            source: AnswerSource::Fixture,
            wall: std::time::Duration::ZERO,
            finish_reason: Some("stop".into()),
            tool_calls: Vec::new(),
        })
    }
}

struct Hits(Vec<Hit>);
impl crate::pipeline::memorix::search::MemorySearch for Hits {
    fn search(&self, _q: &str, _l: usize) -> Result<Vec<Hit>> {
        Ok(self.0.clone())
    }
}

#[test]
fn one_call_per_stage_and_a_bad_answer_falls_back_to_the_rules_with_a_warning() {
    let canned = Arc::new(Canned {
        answers: Mutex::new(vec![
            (Stage::Extract, r#"{"type":"what-changed","entity":"server","facts":["The port changed to 3001 for the proxy"]}"#.into()),
            (Stage::Resolve, r#"{"action":"update","targetId":"nope","reason":"x"}"#.into()),
            (Stage::Evaluate, r#"{"score":0.4,"category":"contextual","reason":"a change"}"#.into()),
        ]),
        asked: Mutex::new(vec![]),
    });
    let settings = LlmSettings::from_config(&Config::default()).unwrap();
    let model = MemorixLlm::new(canned.clone(), &settings).unwrap();
    let input = Input {
        id: "o1".into(),
        title: "Server port".into(),
        narrative: "The dev server listens on port 3001 now.".into(),
        facts: vec!["Port: 3001".into()],
        entity_name: "server".into(),
        obs_type: "what-changed".into(),
    };
    let ctx = JudgeContext { conversation_id: "c", episode_id: "e2" };
    let cfg = Config::default();
    let mut calls = Calls::default();
    let search = Hits(vec![hit("c/e1/c0", "The dev server listens on port 3000.")]);
    let f = crate::pipeline::memorix::form::llm(
        &input,
        &["server".into()],
        &search,
        crate::pipeline::memorix::form::Figures::of(&cfg),
        &model,
        &ctx,
        true,
        &mut calls,
    )
    .unwrap();
    let stages: Vec<Stage> = canned.asked.lock().unwrap().iter().map(|r| r.stage).collect();
    assert_eq!(stages, [Stage::Extract, Stage::Resolve, Stage::Evaluate]);
    assert_eq!(calls.usage.calls, 3);
    assert_eq!(f.extracted.extracted_facts, ["The port changed to 3001 for the proxy"]);
    let want =
        crate::pipeline::memorix::resolve::rules(&f.extracted, &f.hits, crate::pipeline::memorix::form::Figures::of(&cfg).thresholds);
    assert_eq!(f.resolution, want, "the invalid update falls back to the rules");
    assert_eq!(kinds(&calls.warnings), ["memorix_llm_resolve_invalid"]);
    assert_eq!((f.value.score, f.value.category), (0.4, Category::Contextual));
    let s = f.stages.unwrap();
    assert_eq!((s.extract, s.resolve, s.evaluate), (StageRan::Llm, StageRan::Fallback, StageRan::Llm));
    // No hits: no Resolve call, the observation is new.
    let mut calls = Calls::default();
    canned.answers.lock().unwrap().extend([
        (Stage::Extract, "garbage".to_string()),
        (Stage::Evaluate, r#"{"score":0.9,"category":"core","reason":"r"}"#.to_string()),
    ]);
    let f = crate::pipeline::memorix::form::llm(
        &input,
        &["server".into()],
        &Hits(vec![]),
        crate::pipeline::memorix::form::Figures::of(&cfg),
        &model,
        &ctx,
        true,
        &mut calls,
    )
    .unwrap();
    assert_eq!(calls.usage.calls, 2);
    assert_eq!(f.resolution.action, ResolveAction::New);
    let s = f.stages.unwrap();
    assert_eq!((s.extract, s.resolve, s.evaluate), (StageRan::Fallback, StageRan::NoCall, StageRan::Llm));
}

use super::super::formed::StageRan;
