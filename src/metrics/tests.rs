//! Unit tests of the metrics on a tiny hand-built run whose every expected
//! value is computed by hand in the comments (and in docs/metrics.md's
//! worked example).
//!
//! Conversation `c1` (speakers Ann, Assistant):
//! - e1: t1 "I work at Acme." · t2 "ok" · t3 "I work at Acme!" · t4 "I love tea."
//! - e2: t5 "I now work at Beta." · t6 "I love tea." · t7 "Tea, I love it."
//! - gold facts: g1 (e1) "Ann works at Acme" [t1 t3] · g2 (e1) "Ann loves tea"
//!   [t4 t6 t7] · g3 (e2) "Ann works at Beta" [t5]
//! - QA: q0 [t5] cat 1 · q1 [t4] cat 2 · q2 [t1 t5] cat 1
//! - duplicate groups: [t1 t3] · [t4 t6 t7]
//! - contradictions: (t1, t5, old) · (t4, t7, neither) · (t3, t6, neither) · (t1, t7, old)
//!
//! Conversation `c2` (speaker Bo), no gold: e1: u1 "I like jazz."
//!
//! Candidates (`*` stored; `live` = still live at the end):
//! - c1/e1/c0 t1 "Ann works at Acme" created*, entities linked (invalidated in e2)
//! - c1/e1/c1 t3 "Ann works at Acme" exact_duplicate → c1/e1/c0
//! - c1/e1/c2 t4 "Ann loves tea" created* live, literal, subject linked
//! - c1/e1/c3 t2 "ok ok ok ok" noise_rejected
//! - c1/e2/c0 t5 "Ann is employed by Beta Corp" created* live, subject not linked;
//!   verdict old vs c1/e1/c0 (judge said old)
//! - c1/e2/c1 t6 "Ann loves tea" near_duplicate → c1/e1/c2
//! - c1/e2/c2 t6 "Ann loves green tea" exact_duplicate → c1/e1/c0 (a wrong link)
//! - c1/e2/c3 t7 "Ann really loves tea" created* live, literal, subject linked;
//!   verdict neither vs c1/e1/c2 (judge said new, a guard made it neither)
//! - c2/e1/c0 u1 "Bo likes jazz" created* live, literal, subject linked

use std::collections::BTreeSet;

use serde_json::{Value, json};

use polars::prelude::{DataFrame, DataType, IntoLazy};

use super::{
    Analysis, CONTENT_LEXICAL_THRESHOLD, METRICS, RunData, aggregate, analyze, lexical_similarity, max_matching, prf, scalar_f64, summarize,
};
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::pipeline::judge::{FinalVerdict, PairReason};
use crate::pipeline::resolve::EntityDecision;
use crate::pipeline::{CandidateOutcome, CandidateRecord, EpisodeRecord, Timings};
use crate::types::{
    Conversation, Dataset, DatasetFormat, Episode, FactKind, FactType, Gold, GoldContradiction, GoldFact, GoldQa, LlmUsage, Turn,
    ValueTier, Verdict, Warning,
};

fn turn(id: &str, speaker: &str, text: &str) -> Turn {
    Turn { id: id.into(), speaker: speaker.into(), text: text.into() }
}

fn gold_fact(id: &str, episode: &str, text: &str, evidence: &[&str]) -> GoldFact {
    GoldFact {
        id: id.into(),
        episode: episode.into(),
        text: text.into(),
        evidence: evidence.iter().map(|s| s.to_string()).collect(),
        subject: None,
        predicate: None,
        object: None,
    }
}

fn qa(evidence: &[&str], category: i64) -> GoldQa {
    GoldQa {
        question: "?".into(),
        answer: None,
        evidence: evidence.iter().map(|s| s.to_string()).collect(),
        category: Some(category),
        asked_at: None,
        unknown_evidence: vec![],
        label: None,
        abstention: false,
        audit: None,
    }
}

fn contradiction(old: &str, new: &str, verdict: Verdict) -> GoldContradiction {
    GoldContradiction { old_turn: old.into(), new_turn: new.into(), verdict }
}

pub(crate) fn cand(conv: &str, ep: &str, n: usize, turn: &str, content: &str, outcome: &str, stored: bool) -> CandidateRecord {
    CandidateRecord {
        formed: None,
        id: format!("{conv}/{ep}/c{n}"),
        conversation: conv.into(),
        episode: ep.into(),
        turn: turn.into(),
        subject: "Ann".into(),
        predicate: "p".into(),
        object: "o".into(),
        kind: FactKind::Literal,
        fact_type: FactType::Fact,
        content: content.into(),
        confidence: 0.9,
        value_score: 0.8,
        tier: ValueTier::Core,
        content_hash: crate::normalize::normalize_and_hash_content(content).hash,
        outcome: CandidateOutcome::parse(outcome).expect("a known outcome"),
        reason: String::new(),
        related: None,
        subject_entity: Some(format!("{conv}/e0")),
        object_entity: None,
        verdicts: Vec::new(),
        neither_unlisted: 0,
        unlisted: Vec::new(),
        ended: Vec::new(),
        stored,
        decision: None,
    }
}

pub(crate) fn episode_record(conv: &str, ep: &str, turns: usize, facts: Vec<CandidateRecord>) -> EpisodeRecord {
    EpisodeRecord {
        conversation: conv.into(),
        episode: ep.into(),
        timestamp: None,
        turns,
        candidates: facts.len(),
        stored: facts.iter().filter(|f| f.stored).count(),
        entity_decisions: Vec::new(),
        warnings: Vec::new(),
        usage: LlmUsage::default(),
        invalidations: 0,
        closures: 0,
        review_needed: 0,
        blocked: 0,
        facts,
        timings: Timings::default(),
    }
}

fn verdict(live: &str, verdict: Verdict, judged: Verdict) -> FinalVerdict {
    FinalVerdict {
        live_id: live.into(),
        reason: PairReason::SamePredicate,
        verdict,
        judged,
        review_needed: false,
        guard: (verdict != judged).then(|| "low_confidence".to_string()),
        cosine: 0.5,
    }
}

pub(crate) fn fixture() -> (Dataset, Vec<EpisodeRecord>, BTreeSet<String>) {
    let c1 = Conversation {
        id: "c1".into(),
        speakers: vec!["Ann".into(), "Assistant".into()],
        episodes: vec![
            Episode {
                observations: vec![],
                id: "e1".into(),
                timestamp: Some("2024-01-01T10:00:00".into()),
                turns: vec![
                    turn("t1", "Ann", "I work at Acme."),
                    turn("t2", "Assistant", "ok"),
                    turn("t3", "Ann", "I work at Acme!"),
                    turn("t4", "Ann", "I love tea."),
                ],
            },
            Episode {
                observations: vec![],
                id: "e2".into(),
                timestamp: Some("2024-02-01T10:00:00".into()),
                turns: vec![
                    turn("t5", "Ann", "I now work at Beta."),
                    turn("t6", "Ann", "I love tea."),
                    turn("t7", "Ann", "Tea, I love it."),
                ],
            },
        ],
        gold: Gold {
            observations: vec![],
            facts: vec![
                gold_fact("g1", "e1", "Ann works at Acme", &["t1", "t3"]),
                gold_fact("g2", "e1", "Ann loves tea", &["t4", "t6", "t7"]),
                gold_fact("g3", "e2", "Ann works at Beta", &["t5"]),
            ],
            qa: vec![qa(&["t5"], 1), qa(&["t4"], 2), qa(&["t1", "t5"], 1)],
            duplicate_groups: vec![vec!["t1".into(), "t3".into()], vec!["t4".into(), "t6".into(), "t7".into()]],
            contradictions: vec![
                contradiction("t1", "t5", Verdict::Old),
                contradiction("t4", "t7", Verdict::Neither),
                contradiction("t3", "t6", Verdict::Neither),
                contradiction("t1", "t7", Verdict::Old),
            ],
        },
    };
    let c2 = Conversation {
        id: "c2".into(),
        speakers: vec!["Bo".into()],
        episodes: vec![Episode { id: "e1".into(), timestamp: None, turns: vec![turn("u1", "Bo", "I like jazz.")], observations: vec![] }],
        gold: Gold::default(),
    };
    let dataset = Dataset { name: "tiny".into(), format: DatasetFormat::Native, digest: "d".into(), conversations: vec![c1, c2] };

    let mut acme = cand("c1", "e1", 0, "t1", "Ann works at Acme", "created", true);
    acme.kind = FactKind::Relationship;
    acme.object_entity = Some("c1/e1".into());
    let mut dup = cand("c1", "e1", 1, "t3", "Ann works at Acme", "exact_duplicate", false);
    dup.related = Some("c1/e1/c0".into());
    let tea = cand("c1", "e1", 2, "t4", "Ann loves tea", "created", true);
    let noise = cand("c1", "e1", 3, "t2", "ok ok ok ok", "noise_rejected", false);
    let mut e1 = episode_record("c1", "e1", 4, vec![acme, dup, tea, noise]);
    e1.warnings = vec![Warning::new("fact_too_short", "fact \"ok\" is shorter than 10 characters")];
    e1.entity_decisions = vec![
        EntityDecision::Insert { raw: "Acme".into(), entity_id: "c1/e1".into() },
        EntityDecision::Merge { raw: "ACME".into(), entity_id: "c1/e1".into(), canonical: "Acme".into(), cosine: 0.9 },
    ];
    e1.timings.extract_ms = 2.0;

    let mut beta = cand("c1", "e2", 0, "t5", "Ann is employed by Beta Corp", "created", true);
    beta.subject_entity = None;
    beta.verdicts = vec![verdict("c1/e1/c0", Verdict::Old, Verdict::Old)];
    beta.ended = vec!["c1/e1/c0".into()];
    let mut near = cand("c1", "e2", 1, "t6", "Ann loves tea", "near_duplicate", false);
    near.related = Some("c1/e1/c2".into());
    let mut wrong = cand("c1", "e2", 2, "t6", "Ann loves green tea", "exact_duplicate", false);
    wrong.related = Some("c1/e1/c0".into());
    let mut really = cand("c1", "e2", 3, "t7", "Ann really loves tea", "created", true);
    really.verdicts = vec![verdict("c1/e1/c2", Verdict::Neither, Verdict::New)];
    let mut e2 = episode_record("c1", "e2", 3, vec![beta, near, wrong, really]);
    e2.invalidations = 1;
    e2.usage = LlmUsage { calls: 1, prompt_tokens: 100, completion_tokens: 20, ..LlmUsage::default() };
    e2.timings.extract_ms = 3.0;

    let mut jazz = cand("c2", "e1", 0, "u1", "Bo likes jazz", "created", true);
    jazz.subject = "Bo".into();
    let e3 = episode_record("c2", "e1", 1, vec![jazz]);

    let live: BTreeSet<String> = ["c1/e1/c2", "c1/e2/c0", "c1/e2/c3", "c2/e1/c0"].iter().map(|s| s.to_string()).collect();
    (dataset, vec![e1, e2, e3], live)
}

/// Embeds a text as the axis of the first keyword it contains (Acme, tea,
/// Beta), else as zero: a stand-in whose cosines are 1 or 0 by construction.
struct KeywordEmbedder;

impl Embedder for KeywordEmbedder {
    fn id(&self) -> String {
        "keyword:3".into()
    }
    fn dims(&self) -> usize {
        3
    }
    fn embed(&self, texts: &[&str], _source: &str) -> Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0f32; 3];
                if let Some(i) = ["Acme", "tea", "Beta"].iter().position(|k| t.contains(k)) {
                    v[i] = 1.0;
                }
                v
            })
            .collect())
    }
}

struct FailingEmbedder;

impl Embedder for FailingEmbedder {
    fn id(&self) -> String {
        "failing".into()
    }
    fn dims(&self) -> usize {
        3
    }
    fn embed(&self, _texts: &[&str], source: &str) -> Result<Vec<Vec<f32>>> {
        Err(Error::Embed(format!("no fixture for {source}")))
    }
}

pub(crate) fn analysis_with(embedder: Option<&dyn Embedder>) -> Analysis {
    let (dataset, episodes, live) = fixture();
    analyze(&RunData { dataset: &dataset, episodes: &episodes, live_ids: &live, skipped_conversations: 0, wall_ms: 5.0, embedder })
        .expect("analyze")
}

fn metric(a: &Analysis, key: &str) -> Value {
    a.summary.metrics.get(key).cloned().unwrap_or_else(|| panic!("metric {key} missing"))
}

fn f(a: &Analysis, key: &str) -> f64 {
    metric(a, key).as_f64().unwrap_or_else(|| panic!("metric {key} is not a number"))
}

fn close(a: &Analysis, key: &str, expected: f64) {
    let got = f(a, key);
    assert!((got - expected).abs() < 1e-6, "{key}: got {got}, expected {expected}");
}

#[test]
fn prf_hand_computed() {
    assert_eq!(prf(4, 5, 2), (0.5, 0.4, 2.0 * 0.5 * 0.4 / 0.9));
    assert_eq!(prf(0, 5, 0), (0.0, 0.0, 0.0));
    assert_eq!(prf(3, 0, 0), (0.0, 0.0, 0.0));
}

#[test]
fn counts() {
    let a = analysis_with(None);
    for (k, v) in [
        ("episodes", 3),
        ("turns", 8),
        ("candidates", 9),
        ("stored_facts", 5),
        ("live_facts", 4),
        ("judged_new", 0),
        ("low_fact_confidence", 0),
        ("alias_merges", 1),
        ("entities_created", 1),
        ("contradictions_judged", 2),
        ("verdict_old", 1),
        ("verdict_new", 0),
        ("verdict_neither", 1),
        ("invalidations", 1),
        ("closures", 0),
        ("review_needed", 0),
        ("blocked", 0),
        ("warnings", 1),
        ("llm_calls", 1),
        ("prompt_tokens", 100),
        ("completion_tokens", 20),
        ("skipped_conversations", 0),
    ] {
        assert_eq!(metric(&a, k), json!(v), "{k}");
    }
    assert_eq!(metric(&a, "warnings_by_kind"), json!({"fact_too_short": 1}));
    assert_eq!(metric(&a, "outcomes"), json!({"created": 5, "exact_duplicate": 2, "near_duplicate": 1, "noise_rejected": 1}));
}

#[test]
fn formation_rates() {
    let a = analysis_with(None);
    close(&a, "fact_density", 5.0 / 3.0);
    close(&a, "facts_per_100_turns", 62.5);
    close(&a, "dedup_rate", 3.0 / 9.0);
    close(&a, "exact_dup_rate", 2.0 / 9.0);
    close(&a, "near_dup_rate", 1.0 / 9.0);
    // Removed as duplicates: two exact and one near; the noise rejection is not one.
    close(&a, "duplicate_reduction", 3.0 / 9.0);
    close(&a, "noise_rejection_rate", 1.0 / 9.0);
    // Stored: acme (linked), tea, really, jazz (literal, subject linked); beta has no subject entity.
    close(&a, "entity_resolution_rate", 4.0 / 5.0);
    // Candidates whose subject entity existed before their episode: all but
    // beta (no subject entity); e1 created c1/e1, an object only.
    close(&a, "entity_coherence", 8.0 / 9.0);
    // Stored 5, invalidated 1, of 9 candidates.
    close(&a, "growth_rate", 4.0 / 9.0);
    // No FormedMemory records: Memorix's observation metrics are empty.
    assert_eq!(metric(&a, "observations"), json!(0));
    close(&a, "fact_density_before", 0.0);
    close(&a, "title_quality", 0.0);
}

fn formed(caller: usize, extracted: usize, title: &str, existed: bool, action: &str) -> Box<crate::pipeline::memorix::FormedMemory> {
    use crate::pipeline::StageMode;
    use crate::pipeline::memorix::evaluate::{Category, Value};
    use crate::pipeline::memorix::extract::{EntityMatch, ResolvedEntity};
    use crate::pipeline::memorix::formed::{FormedMemory, PipelineInfo};
    use crate::pipeline::memorix::resolve::{Resolution, ResolveAction};
    Box::new(FormedMemory {
        obs_type: "discovery".into(),
        title: title.into(),
        caller_facts: (0..caller).map(|i| format!("Caller: {i}")).collect(),
        extracted_facts: (0..extracted).map(|i| format!("Port: {i}000")).collect(),
        resolved_entity: ResolvedEntity { name: "m".into(), resolved: existed, existed, matched: EntityMatch::None },
        title_improved: false,
        type_corrected: false,
        resolution: Resolution { action: ResolveAction::parse(action).unwrap(), target_id: None, reason: String::new(), merged: None },
        value: Value { score: 0.5, category: Category::Contextual, reason: String::new() },
        pipeline: PipelineInfo { mode: StageMode::Rules, stages_completed: 3, stages: None },
        hits: vec![],
    })
}

/// Memorix's metrics on three observations in two episodes of one conversation:
/// - e1 o1: 2 caller facts + 1 extracted, title "Port setting", new entity, `new`, created
/// - e1 o2: 0 + 0, title "Updated a.ts" (generic), existing entity, `discard`
/// - e2 o3: 1 + 2, title "Lock gotcha", existing entity, `evolve`, created, supersedes o1
#[test]
fn memorix_observation_metrics() {
    let (mut dataset, _, _) = fixture();
    dataset.conversations.truncate(1);
    let mut o1 = cand("c1", "e1", 0, "t1", "Port 3000 is the server's port", "created", true);
    o1.formed = Some(formed(2, 1, "Port setting", false, "new"));
    let mut o2 = cand("c1", "e1", 1, "t2", "Updated a.ts and nothing else", "discarded", false);
    o2.formed = Some(formed(0, 0, "Updated a.ts", true, "discard"));
    let mut o3 = cand("c1", "e2", 0, "t5", "The lock gotcha, restated with more", "evolved", true);
    o3.formed = Some(formed(1, 2, "Lock gotcha", true, "evolve"));
    let e1 = episode_record("c1", "e1", 4, vec![o1, o2]);
    let mut e2 = episode_record("c1", "e2", 3, vec![o3]);
    e2.invalidations = 1;
    let live: BTreeSet<String> = ["c1/e2/c0".to_string()].into();
    let a = analyze(&RunData {
        dataset: &dataset,
        episodes: &[e1, e2],
        live_ids: &live,
        skipped_conversations: 0,
        wall_ms: 0.0,
        embedder: None,
    })
    .unwrap();
    assert_eq!(metric(&a, "observations"), json!(3));
    close(&a, "fact_density_before", 3.0 / 3.0);
    close(&a, "fact_density_after", 6.0 / 3.0);
    close(&a, "title_quality", 2.0 / 3.0);
    close(&a, "entity_coherence", 2.0 / 3.0);
    // Two rows stored, one superseded: one more live memory per three observations.
    close(&a, "growth_rate", 1.0 / 3.0);
    close(&a, "noise_rejection_rate", 0.0);
    for (k, v) in [("resolution_new", 1), ("resolution_merge", 0), ("resolution_evolve", 1), ("resolution_discard", 1)] {
        assert_eq!(metric(&a, k), json!(v), "{k}");
    }
}

/// `duplicate_reduction` counts the observations Resolve removed as
/// duplicates (discarded, merged in place), not the noise rejections, nor an
/// evolve (a new row superseding its target), on one episode of five
/// observations: o1 new, created · o2 new, noise_rejected · o3 discard ·
/// o4 merge · o5 evolve, created.
#[test]
fn memorix_duplicate_reduction_counts_discards_and_merges_not_noise() {
    let (mut dataset, _, _) = fixture();
    dataset.conversations.truncate(1);
    let obs = |n: usize, turn: &str, outcome: &str, stored: bool, action: &str| {
        let mut c = cand("c1", "e1", n, turn, &format!("Observation {n} about the lock file"), outcome, stored);
        c.formed = Some(formed(1, 0, "Lock file", true, action));
        c
    };
    let e1 = episode_record(
        "c1",
        "e1",
        4,
        vec![
            obs(0, "t1", "created", true, "new"),
            obs(1, "t2", "noise_rejected", false, "new"),
            obs(2, "t3", "discarded", false, "discard"),
            obs(3, "t4", "merged", false, "merge"),
            obs(4, "t4", "evolved", true, "evolve"),
        ],
    );
    let live: BTreeSet<String> = ["c1/e1/c0".to_string(), "c1/e1/c4".to_string()].into();
    let a =
        analyze(&RunData { dataset: &dataset, episodes: &[e1], live_ids: &live, skipped_conversations: 0, wall_ms: 0.0, embedder: None })
            .unwrap();
    assert_eq!(metric(&a, "observations"), json!(5));
    close(&a, "duplicate_reduction", 2.0 / 5.0);
    close(&a, "noise_rejection_rate", 1.0 / 5.0);
    // Memorix removes its duplicates in Resolve, not in stage 3.
    close(&a, "dedup_rate", 0.0);
}

#[test]
fn every_duplicate_removing_outcome_is_a_candidate_outcome() {
    for o in super::DUPLICATE_REMOVED_OUTCOMES.iter().chain(super::EXACT_DUP_OUTCOMES).chain(super::NEAR_DUP_OUTCOMES) {
        assert!(CandidateOutcome::parse(o).is_some(), "{o}");
    }
    assert!(!super::DUPLICATE_REMOVED_OUTCOMES.contains(&"noise_rejected"));
}

#[test]
fn turn_level_against_gold_with_baselines() {
    let a = analysis_with(None);
    // Predicted turns t1 t4 t5 t7 u1; gold t1 t3 t4 t5 t6 t7; hits t1 t4 t5 t7.
    assert_eq!(metric(&a, "gold_turns"), json!(6));
    assert_eq!(metric(&a, "gold_facts"), json!(3));
    close(&a, "turn_precision", 4.0 / 5.0);
    close(&a, "turn_recall", 4.0 / 6.0);
    close(&a, "turn_f1", 2.0 * 4.0 / (5.0 + 6.0));
    // Every turn (8) predicted: 6 hits.
    close(&a, "baseline_all_turns_precision", 6.0 / 8.0);
    close(&a, "baseline_all_turns_recall", 1.0);
    close(&a, "baseline_all_turns_f1", 2.0 * 6.0 / (8.0 + 6.0));
    close(&a, "baseline_no_turns_precision", 0.0);
    close(&a, "baseline_no_turns_recall", 0.0);
    close(&a, "baseline_no_turns_f1", 0.0);
}

#[test]
fn content_level_lexical() {
    let a = analysis_with(None);
    // e1: acme↔g1 and tea↔g2 (identical text, Dice 1). e2: beta vs g3 has
    // Dice 2·2/(6+4) = 0.4 < 0.5 and really vs g3 2·1/(4+4) = 0.25: no match.
    close(&a, "content_precision", 2.0 / 5.0);
    close(&a, "content_recall", 2.0 / 3.0);
    close(&a, "content_f1", 2.0 * 2.0 / (5.0 + 3.0));
    assert_eq!(metric(&a, "content_lexical_threshold"), json!(CONTENT_LEXICAL_THRESHOLD));
    assert!(!a.summary.metrics.contains_key("content_precision_cosine"), "no embedder, no cosine variant");
    let matched: Vec<Option<&str>> = a.facts.column("gold_match").expect("gold_match").str().expect("str").iter().collect();
    assert_eq!(matched, [Some("g1"), None, Some("g2"), None, None, None, None, None, None]);
}

#[test]
fn content_level_cosine_when_an_embedder_is_given() {
    let a = analysis_with(Some(&KeywordEmbedder));
    // By keyword axis: acme↔g1, tea↔g2, beta↔g3 (cosine 1); really (tea) vs g3 (Beta) 0.
    close(&a, "content_precision_cosine", 3.0 / 5.0);
    close(&a, "content_recall_cosine", 1.0);
    close(&a, "content_f1_cosine", 2.0 * 3.0 / (5.0 + 3.0));
    assert_eq!(metric(&a, "content_embedder"), json!("keyword:3"));
    assert_eq!(metric(&a, "content_cosine_threshold"), json!(super::CONTENT_COSINE_THRESHOLD));
    let matched: Vec<Option<&str>> = a.facts.column("gold_match_cosine").expect("column").str().expect("str").iter().collect();
    assert_eq!(matched, [Some("g1"), None, Some("g2"), None, Some("g3"), None, None, None, None]);
    // The lexical figures do not change.
    close(&a, "content_precision", 2.0 / 5.0);
}

#[test]
fn a_failing_embedder_drops_only_the_cosine_variant() {
    let a = analysis_with(Some(&FailingEmbedder));
    let err = metric(&a, "content_cosine_error");
    assert!(err.as_str().is_some_and(|e| e.contains("no fixture for metrics: content matching")), "{err}");
    assert!(!a.summary.metrics.contains_key("content_recall_cosine"));
    close(&a, "content_recall", 2.0 / 3.0);
}

#[test]
fn qa_evidence_coverage_overall_per_category_and_per_item() {
    let a = analysis_with(None);
    // Evidence turns t1 t4 t5; live facts at t4 t5 (t1's fact was invalidated).
    assert_eq!(metric(&a, "qa_evidence_turns"), json!(3));
    close(&a, "qa_evidence_coverage", 2.0 / 3.0);
    // Category 1: t5 t1 → 1/2; category 2: t4 → 1.
    assert_eq!(metric(&a, "qa_evidence_coverage_by_category"), json!({"1": 0.5, "2": 1.0}));
    // q0 and q1 fully covered, q2 (t1, t5) not.
    assert_eq!(metric(&a, "qa_items"), json!(3));
    close(&a, "qa_item_coverage", 2.0 / 3.0);
}

#[test]
fn dedup_precision_and_recall_on_duplicate_groups() {
    let a = analysis_with(None);
    // Links t3→t1 (group 0), t6→t4 (group 1) right; t6→t1 wrong.
    assert_eq!(metric(&a, "duplicate_groups"), json!(2));
    assert_eq!(metric(&a, "dedup_links"), json!(3));
    close(&a, "dedup_precision", 2.0 / 3.0);
    // Expected: t3 (group 0), t6 and t7 (group 1); t7 was stored, not deduped.
    assert_eq!(metric(&a, "dedup_expected"), json!(3));
    close(&a, "dedup_recall", 2.0 / 3.0);
    close(&a, "dedup_f1", 2.0 / 3.0);
}

#[test]
fn judge_accuracy_coverage_and_confusion() {
    let a = analysis_with(None);
    // (t1,t5,old) judged old; (t4,t7,neither) judged neither after a guard
    // (the judge said new); (t3,t6,neither) and (t1,t7,old) never judged.
    assert_eq!(metric(&a, "judge_pairs_labelled"), json!(4));
    assert_eq!(metric(&a, "judge_pairs_judged"), json!(2));
    close(&a, "judge_coverage", 0.5);
    close(&a, "judge_accuracy", 1.0);
    close(&a, "judge_accuracy_raw", 0.5);
    // Unjudged neither counts as right (both stand), unjudged old as wrong.
    close(&a, "contradiction_accuracy", 3.0 / 4.0);
    assert_eq!(
        metric(&a, "judge_confusion"),
        json!({
            "old": {"old": 1, "new": 0, "neither": 0, "not_judged": 1},
            "new": {"old": 0, "new": 0, "neither": 0, "not_judged": 0},
            "neither": {"old": 0, "new": 0, "neither": 1, "not_judged": 1},
        })
    );
}

#[test]
fn timings_are_summed_per_stage() {
    let a = analysis_with(None);
    assert_eq!(a.summary.timings.get("extract_ms"), Some(&5.0));
    assert_eq!(a.summary.timings.get("write_ms"), Some(&0.0));
    assert_eq!(a.summary.timings.get("wall_ms"), Some(&5.0));
}

fn column_f64(df: &DataFrame, name: &str) -> Vec<f64> {
    df.column(name).expect(name).cast(&DataType::Float64).expect("cast").f64().expect("f64").iter().map(|x| x.unwrap_or(f64::NAN)).collect()
}

#[test]
fn per_conversation_and_per_episode_come_from_the_same_definitions() {
    let a = analysis_with(None);
    let pc = &a.per_conversation;
    let convs: Vec<Option<&str>> = pc.column("conversation").expect("conversation").str().expect("str").iter().collect();
    assert_eq!(convs, [Some("c1"), Some("c2")]);
    assert_eq!(column_f64(pc, "stored_facts"), [4.0, 1.0]);
    assert_eq!(column_f64(pc, "fact_density"), [2.0, 1.0]);
    assert_eq!(column_f64(pc, "turn_precision"), [1.0, 0.0]);
    assert_eq!(column_f64(pc, "content_precision"), [0.5, 0.0]);
    let ep = &a.episodes;
    assert_eq!(column_f64(ep, "stored"), [2.0, 2.0, 1.0]);
    assert_eq!(column_f64(ep, "turn_hits"), [2.0, 2.0, 0.0]);
    assert_eq!(column_f64(ep, "gold_turns"), [3.0, 3.0, 0.0]);
    assert_eq!(column_f64(ep, "stored_cumulative"), [2.0, 4.0, 1.0]);
    // Live after e2: 2 + 2 stored − 1 invalidated.
    assert_eq!(column_f64(ep, "live_after"), [2.0, 3.0, 1.0]);
    assert_eq!(column_f64(ep, "episode_index"), [0.0, 1.0, 0.0]);
    // Summing the episodes' components gives the run's metrics.
    let run = aggregate(ep.clone().lazy(), None, &a.labels).collect().expect("aggregate");
    assert!((scalar_f64(&run, "turn_f1").expect("turn_f1") - f(&a, "turn_f1")).abs() < 1e-6);
}

#[test]
fn a_dataset_without_gold_gets_formation_metrics_only() {
    let (mut dataset, episodes, live) = fixture();
    dataset.conversations.retain(|c| c.id == "c2");
    let c2: Vec<_> = episodes.into_iter().filter(|e| e.conversation == "c2").collect();
    let s = summarize(&dataset, &c2, &live, 0, 0.0, Some(&KeywordEmbedder)).expect("summarize");
    assert_eq!(s.metrics.get("stored_facts"), Some(&json!(1)));
    for k in ["turn_precision", "content_f1", "content_f1_cosine", "qa_evidence_coverage", "dedup_precision", "judge_accuracy"] {
        assert!(!s.metrics.contains_key(k), "{k} present without gold labels");
    }
}

#[test]
fn an_empty_run_is_all_zeros_not_an_error() {
    let (dataset, _, _) = fixture();
    let s = summarize(&dataset, &[], &BTreeSet::new(), 2, 0.0, None).expect("summarize");
    assert_eq!(s.metrics.get("episodes"), Some(&json!(0)));
    assert_eq!(s.metrics.get("fact_density"), Some(&json!(0.0)));
    assert_eq!(s.metrics.get("dedup_rate"), Some(&json!(0.0)));
    assert_eq!(s.metrics.get("skipped_conversations"), Some(&json!(2)));
    assert_eq!(s.metrics.get("outcomes"), Some(&json!({})));
}

#[test]
fn every_metric_definition_reaches_the_summary() {
    let a = analysis_with(Some(&KeywordEmbedder));
    for d in METRICS {
        assert!(a.summary.metrics.contains_key(d.key), "{} missing from summary.json", d.key);
        assert!(a.per_conversation.column(d.key).is_ok(), "{} missing from per_conversation", d.key);
    }
}

#[test]
fn token_sets_hold_the_same_tokens_as_tokens() {
    for text in ["Ann works at Acme", "ann, ANN and Ann!", "", "  ", "Zürich's café-bar; ÉCOLE 42b", "x1 x1 x2 a a"] {
        let set = super::TokenSet::new(text);
        let fast: Vec<&str> = set.iter().collect();
        // The definition, written plainly.
        let reference: std::collections::BTreeSet<String> =
            text.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|t| !t.is_empty()).map(str::to_string).collect();
        let reference: Vec<String> = reference.into_iter().collect();
        assert_eq!(fast, reference, "{text:?}");
    }
}

#[test]
fn lexical_similarity_is_token_dice() {
    assert_eq!(lexical_similarity("Ann works at Acme", "ann WORKS at acme."), 1.0);
    assert!((lexical_similarity("Ann is employed by Beta Corp", "Ann works at Beta") - 0.4).abs() < 1e-12);
    assert_eq!(lexical_similarity("", ""), 0.0);
    assert_eq!(lexical_similarity("tea", "jazz"), 0.0);
}

#[test]
fn matching_is_one_to_one_and_maximal() {
    // Two stored facts both similar to gold 0; only one can have it.
    let m = max_matching(2, 1, 0.5, |_, _| 0.9);
    assert_eq!(m.iter().filter(|x| x.is_some()).count(), 1);
    // Left 0 prefers right 0 (0.9) but left 1 can only take right 0: an
    // augmenting path moves left 0 to right 1, matching both.
    let sims = [[0.9, 0.6], [0.8, 0.0]];
    let m = max_matching(2, 2, 0.5, |l, r| sims[l][r]);
    assert_eq!(m, [Some((1, 0.6)), Some((0, 0.8))]);
    // Below the threshold nothing matches.
    assert_eq!(max_matching(1, 1, 0.95, |_, _| 0.9), [None]);
}

#[test]
fn docs_define_every_summary_key() {
    let docs = include_str!("../../docs/metrics.md");
    let a = analysis_with(Some(&KeywordEmbedder));
    let failing = analysis_with(Some(&FailingEmbedder));
    let keys = a.summary.metrics.keys().chain(failing.summary.metrics.keys()).chain(a.summary.timings.keys());
    for k in keys {
        assert!(docs.contains(&format!("`{k}`")), "docs/metrics.md does not define `{k}`");
    }
}

/// A `signet` fact has no subject entity (the profile resolves none); its
/// link to memory is the inline linker's mention of an existing entity. The
/// metric counts those, so a signet run's `entity_coherence` is not 0.
#[test]
fn signet_mentions_count_as_links_to_existing_entities() {
    let (mut dataset, _, _) = fixture();
    dataset.conversations.truncate(1);
    let decided = |n: usize, mentions: &[&str]| {
        let mut c = cand("c1", "e1", n, "t1", "Dana plays chess with Eli", "created", true);
        c.subject_entity = None;
        c.decision = Some(Box::new(crate::pipeline::records::DecisionRecord {
            action: Some("add".into()),
            target: None,
            confidence: Some(0.9),
            reason: "no existing memories match this fact".into(),
            review_needed: false,
            candidates: Vec::new(),
            mentions: mentions.iter().map(|m| m.to_string()).collect(),
        }));
        c
    };
    let facts = vec![decided(0, &["c1/e0", "c1/e1"]), decided(1, &[]), decided(2, &["c1/e1"])];
    assert_eq!(super::entity_existed(&[episode_record("c1", "e1", 4, facts.clone())]), [true, false, true]);
    let live: BTreeSet<String> = facts.iter().map(|f| f.id.clone()).collect();
    let a = analyze(&RunData {
        dataset: &dataset,
        episodes: &[episode_record("c1", "e1", 4, facts)],
        live_ids: &live,
        skipped_conversations: 0,
        wall_ms: 0.0,
        embedder: None,
    })
    .unwrap();
    close(&a, "entity_coherence", 2.0 / 3.0);
}

#[test]
fn a_points_metrics_from_its_conversations_parts_are_the_runs() {
    use super::{GoldIndex, conversation_parts, metrics_of_parts, point_metrics};
    let (dataset, episodes, live) = fixture();
    let gold = GoldIndex::new(&dataset).expect("gold");
    let point = point_metrics(&gold, &episodes, &live).expect("point metrics");
    let run = summarize(&dataset, &episodes, &live, 0, 0.0, None).expect("summarize");
    let numeric: std::collections::BTreeMap<String, f64> =
        run.metrics.iter().filter_map(|(k, v)| v.as_f64().map(|x| (k.clone(), x))).collect();
    assert_eq!(point, numeric, "every numeric metric of the run, and only those");
    for k in ["qa_items", "qa_item_coverage", "duplicate_groups", "dedup_recall", "judge_accuracy", "content_f1", "turn_f1"] {
        assert!(point.get(k).is_some_and(|v| *v > 0.0), "{k} is reached: {point:?}");
    }
    // Each conversation's part computed from its records alone adds up to the same.
    let mut parts = Vec::new();
    for c in ["c2", "c1"] {
        let own: Vec<EpisodeRecord> = episodes.iter().filter(|e| e.conversation == c).cloned().collect();
        let mut by_conv = conversation_parts(&gold, &own, &live).expect("parts");
        assert_eq!(by_conv.keys().collect::<Vec<_>>(), vec![c]);
        parts.extend(by_conv.remove(c));
    }
    assert_eq!(metrics_of_parts(&gold, &parts.iter().collect::<Vec<_>>()).expect("metrics"), point);
    let c1_only: Vec<EpisodeRecord> = episodes.iter().filter(|e| e.conversation == "c1").cloned().collect();
    let err = point_metrics(&gold, &c1_only, &live).expect_err("c2 has no records");
    assert!(err.to_string().contains("a conversation with episodes has no records"), "{err}");
}
