//! Snapshots over `datasets/scenarios/`: for every conversation, the store's
//! live, closed and invalidated facts with their verdicts, and the audit
//! outcomes. One test per scenario, so one failing scenario does not hide
//! the others; adding a scenario adds a file, a line to `scenario_tests!`
//! and a snapshot (a test fails until the line is there). Every scenario
//! also runs with `--extract gold` (the gold facts as candidates, rules
//! judge) under its own snapshot, `scenario_gold__<id>`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::OnceLock;

use memform::embed::hashed::HashedEmbedder;
use memform::pipeline::Config;
use memform::pipeline::Stages;
use memform::pipeline::extract::GoldExtractor;
use memform::pipeline::judge::RulesJudge;
use memform::run::{RunOptions, run};
use memform::store::Store;

use crate::support::{jsonl_without_timings, run_rules, scenarios_dir, snapshots_dir};

struct Ran {
    _dir: tempfile::TempDir,
    facts: Vec<serde_json::Value>,
    store: Store,
}

#[derive(Clone, Copy)]
enum Extraction {
    Rules,
    Gold,
}

fn read(dir: tempfile::TempDir) -> Ran {
    let facts = jsonl_without_timings(&dir.path().join("facts.jsonl"));
    let store = Store::open(&dir.path().join("store.sqlite")).expect("open store");
    Ran { _dir: dir, facts, store }
}

fn ran(extraction: Extraction) -> &'static Ran {
    static RULES: OnceLock<Ran> = OnceLock::new();
    static GOLD: OnceLock<Ran> = OnceLock::new();
    match extraction {
        Extraction::Rules => RULES.get_or_init(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            run_rules(&scenarios_dir(), dir.path(), &Config::default(), None);
            read(dir)
        }),
        Extraction::Gold => GOLD.get_or_init(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            let cfg = Config::default();
            let dataset = memform::dataset::load(&scenarios_dir()).expect("load dataset");
            let extractor = GoldExtractor::new(&dataset, &cfg).expect("gold extractor");
            let embedder = HashedEmbedder::new(cfg.hashed_dims);
            let judge = RulesJudge::new(&cfg);
            let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
            let opts = RunOptions { out_dir: dir.path().to_path_buf(), ..RunOptions::default() };
            run(&dataset, &cfg, stages, &opts).expect("gold run");
            read(dir)
        }),
    }
}

fn s(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "-".into(),
        other => other.to_string(),
    }
}

fn render(conversation: &str, extraction: Extraction) -> String {
    let r = ran(extraction);
    let mut out = String::new();
    let _ = writeln!(out, "# entities");
    for (conv, id, name, ty, aliases) in r.store.entities().expect("entities") {
        if conv == conversation {
            let aliases = if aliases.is_empty() { String::new() } else { format!(" aliases={}", aliases.join(",")) };
            let _ = writeln!(out, "{id} {name} {ty}{aliases}");
        }
    }
    let _ = writeln!(out, "\n# store facts");
    for f in r.store.facts().expect("facts").iter().filter(|f| f.conversation_id == conversation) {
        let state = match (&f.invalid_at, &f.superseded_by, &f.valid_until) {
            (Some(at), Some(by), _) => format!("invalidated {at} by {by}"),
            (Some(at), None, _) => format!("invalidated {at}"),
            (None, _, Some(until)) => format!("live, valid_until {until}"),
            (None, _, None) => "live".to_string(),
        };
        let _ = writeln!(out, "{} [{state}] {} | {} | {}  «{}»", f.id, f.subject, f.predicate, f.object, f.content);
    }
    let _ = writeln!(out, "\n# candidates");
    for f in r.facts.iter().filter(|f| f["conversation"] == conversation) {
        let _ = writeln!(
            out,
            "{} {} {} conf={} value={:.2} «{}»{}",
            s(&f["id"]),
            s(&f["turn"]),
            s(&f["outcome"]),
            s(&f["confidence"]),
            f["value_score"].as_f64().unwrap_or(0.0),
            s(&f["content"]),
            if f["related"].is_null() { String::new() } else { format!(" → {}", s(&f["related"])) }
        );
        for v in f["verdicts"].as_array().into_iter().flatten() {
            let _ = writeln!(
                out,
                "    verdict {} (judged {}) vs {} [{}]{}{}",
                s(&v["verdict"]),
                s(&v["judged"]),
                s(&v["live_id"]),
                s(&v["reason"]),
                if v["review_needed"] == true { " review-needed" } else { "" },
                v.get("guard").map(|g| format!(" guard={}", s(g))).unwrap_or_default()
            );
        }
    }
    let _ = writeln!(out, "\n# audit");
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for (conv, episode, a) in r.store.audit().expect("audit") {
        if conv != conversation {
            continue;
        }
        *counts.entry(a.outcome.as_str().to_string()).or_default() += 1;
        let _ = writeln!(
            out,
            "{episode} {} {} {}{}{}",
            a.candidate_id.rsplit('/').next().unwrap_or(""),
            a.action,
            a.outcome.as_str(),
            a.target_fact_id.map(|t| format!(" target={t}")).unwrap_or_default(),
            if a.reason.is_empty() { String::new() } else { format!(" ({})", a.reason) }
        );
    }
    let _ = writeln!(out, "outcomes: {counts:?}");
    out
}

fn check(id: &str, extraction: Extraction) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshots_dir());
    settings.set_prepend_module_to_snapshot(false);
    let name = match extraction {
        Extraction::Rules => format!("scenario__{id}"),
        Extraction::Gold => format!("scenario_gold__{id}"),
    };
    settings.bind(|| insta::assert_snapshot!(name, render(id, extraction)));
}

macro_rules! scenario_tests {
    ($($test:ident => $id:literal,)+) => {
        $(
            #[test]
            fn $test() {
                check($id, Extraction::Rules);
            }
        )+
        /// The same scenarios with `--extract gold`.
        mod gold {
            $(
                #[test]
                fn $test() {
                    super::check($id, super::Extraction::Gold);
                }
            )+
        }
        const SCENARIOS: &[&str] = &[$($id),+];
    };
}

scenario_tests! {
    alias_and_types => "alias-and-types",
    budgets => "budgets",
    closure => "closure",
    content_hash_variants => "content-hash-variants",
    empty_and_long_turns => "empty-and-long-turns",
    historical => "historical",
    job_change => "job-change",
    low_confidence => "low-confidence",
    negation_antonym => "negation-antonym",
    noise => "noise",
    paraphrase_duplicates => "paraphrase-duplicates",
    prompt_injection => "prompt-injection",
    technical_details => "technical-details",
}

#[test]
fn every_bundled_scenario_has_its_own_test() {
    let dataset = memform::dataset::load(&scenarios_dir()).expect("load scenarios");
    let ids: Vec<&str> = dataset.conversations.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, SCENARIOS, "add a line to scenario_tests! for each scenario file");
}
