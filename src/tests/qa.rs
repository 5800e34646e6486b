//! The QA evaluation end to end: on by default, `qa_as_of = "question"` over
//! the job-change scenario (a reviewed snapshot of its retrievals, and no
//! fact invalidated before a question ever returned for it), and evidence
//! naming unknown turns (warned, counted, scored on the known turns; an item
//! with none known excluded and counted).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use memform::embed::hashed::HashedEmbedder;
use memform::pipeline::Config;
use memform::qa::{QaResult, evaluate};
use memform::store::{Store, StoredFact};

use crate::support::{run_rules, scenarios_dir, snapshots_dir};

fn at_question() -> Config {
    {
        let mut c = Config::default();
        c.qa_as_of = "question".into();
        c
    }
}

/// The scenarios run with `cfg`, and the QA evaluation over the run's store.
fn scenarios_qa(cfg: &Config) -> (tempfile::TempDir, Vec<StoredFact>, QaResult) {
    let dir = tempfile::tempdir().unwrap();
    run_rules(&scenarios_dir(), dir.path(), cfg, None);
    let store = Store::open(&dir.path().join("store.sqlite")).unwrap();
    let dataset = memform::dataset::load(&scenarios_dir()).unwrap();
    let qa = evaluate(&dataset, &store, &HashedEmbedder::new(cfg.hashed_dims), cfg).unwrap();
    (dir, store.facts().unwrap(), qa)
}

#[test]
fn on_by_default_and_off_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_rules(&scenarios_dir(), dir.path(), &Config::default(), None);
    for f in ["qa.csv", "qa.parquet"] {
        assert!(dir.path().join(f).is_file(), "{f} missing");
    }
    let rows = memform::report::read_parquet(&dir.path().join("qa.parquet")).unwrap().height();
    let scored = out.summary.metrics["qa_items_scored"].as_u64().unwrap() as usize;
    // The three sources, the selected-turns ablation and the gold-facts ceiling (the scenarios have gold facts).
    assert_eq!(rows, 5 * scored, "one row per item and source");
    assert!(out.summary.metrics.contains_key("qa_raw_turns_recall_any_at_5"));

    let dataset = memform::dataset::load(&scenarios_dir()).unwrap();
    let cfg = Config::default();
    let extractor = memform::pipeline::extract::RulesExtractor::new(cfg.max_input_chars);
    let embedder = HashedEmbedder::new(cfg.hashed_dims);
    let judge = memform::pipeline::judge::RulesJudge::new(&cfg);
    let stages = memform::pipeline::Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
    let off = tempfile::tempdir().unwrap();
    let opts = memform::run::RunOptions { out_dir: off.path().to_path_buf(), qa: Some(false), ..Default::default() };
    let out = memform::run::run(&dataset, &cfg, stages, &opts).unwrap();
    assert!(!off.path().join("qa.csv").exists());
    assert!(!out.summary.metrics.contains_key("qa_recall_any_at_5"));
}

/// The job-change items asked at an instant: each source's retrievals with
/// what each retrieved document says.
fn render(facts: &[StoredFact], qa: &QaResult) -> String {
    let dataset = memform::dataset::load(&scenarios_dir()).unwrap();
    let conv = dataset.conversations.iter().find(|c| c.id == "job-change").unwrap();
    let turn_text: BTreeMap<&str, &str> =
        conv.episodes.iter().flat_map(|e| e.turns.iter().map(|t| (t.id.as_str(), t.text.as_str()))).collect();
    let fact_text: BTreeMap<&str, &str> = facts.iter().map(|f| (f.id.as_str(), f.content.as_str())).collect();
    let mut out = String::new();
    for row in qa.rows.iter().filter(|r| r.conversation == "job-change" && r.as_of.is_some()) {
        if row.source == "formed" {
            let _ = writeln!(
                out,
                "\n## item {} «{}» asked {} evidence {:?}",
                row.item,
                row.question,
                row.as_of.as_deref().unwrap_or("-"),
                row.evidence
            );
        }
        let _ = writeln!(out, "{} recall_any@1={} mrr={:.3}", row.source, row.scored.recall_any[0], row.scored.mrr);
        for (id, score) in row.retrieved.iter().zip(&row.scores) {
            let text = fact_text.get(id.as_str()).or_else(|| turn_text.get(id.as_str())).copied().unwrap_or("(session)");
            let _ = writeln!(out, "  {score:.4} {id} «{text}»");
        }
    }
    out
}

#[test]
fn job_change_retrievals_as_of_the_question() {
    let (_dir, facts, qa) = scenarios_qa(&at_question());
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshots_dir());
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("qa__job-change-as-of-question", render(&facts, &qa)));
}

#[test]
fn a_fact_invalidated_before_the_question_is_never_returned() {
    let (_dir, facts, qa) = scenarios_qa(&at_question());
    let by_id: BTreeMap<&str, &StoredFact> = facts.iter().map(|f| (f.id.as_str(), f)).collect();
    let google = facts.iter().find(|f| f.conversation_id == "job-change" && f.content.contains("Google")).expect("the Google fact");
    let invalid_at = google.invalid_at.as_deref().expect("the Google fact is invalidated by the job change");
    let (mut checked, mut found_before) = (0, 0);
    for row in qa.rows.iter().filter(|r| r.source == "formed") {
        let Some(t) = row.as_of.as_deref() else { continue };
        for id in &row.retrieved {
            let f = by_id[id.as_str()];
            assert!(f.created_at.as_deref().is_some_and(|c| c <= t), "{id} written after {t}");
            assert!(
                f.invalid_at.as_deref().is_none_or(|i| i > t),
                "{id} invalidated at {:?}, returned for a question at {t}",
                f.invalid_at
            );
            checked += 1;
        }
        // Asked after the invalidation, never; before it, it is there to find.
        if row.retrieved.contains(&google.id) {
            assert!(t < invalid_at, "item {} at {t}: the Google fact, invalidated at {invalid_at}", row.item);
            found_before += 1;
        }
    }
    assert!(checked > 0, "no item asked at an instant retrieved anything");
    assert!(found_before > 0, "the Google fact is never retrieved, even before its invalidation");
    // With the final store (the default), the invalidated fact is never returned.
    let (_d, _f, final_qa) = scenarios_qa(&Config::default());
    assert!(final_qa.rows.iter().filter(|r| r.source == "formed").all(|r| !r.retrieved.contains(&google.id)));
    assert!(final_qa.rows.iter().all(|r| r.as_of.is_none()));
}

fn write_dataset(dir: &Path) -> std::path::PathBuf {
    let conv = dir.join("ds/conversations");
    std::fs::create_dir_all(&conv).unwrap();
    let body = r#"{"format": "memform-conversation/1", "id": "u", "speakers": ["Ana"],
 "episodes": [{"id": "e1", "timestamp": "2025-01-01T10:00:00", "turns": [
   {"id": "t1", "speaker": "Ana", "text": "I visited Acme."},
   {"id": "t2", "speaker": "Ana", "text": "I live in Porto."}]}],
 "gold": {"qa": [
   {"question": "Where does Ana work?", "evidence": ["t1", "t8"]},
   {"question": "Where does Ana live?", "evidence": ["t9"]},
   {"question": "Where is Ana from?", "evidence": ["t2"]}]}}"#;
    std::fs::write(conv.join("u.json"), body).unwrap();
    dir.join("ds")
}

#[test]
fn unknown_evidence_is_warned_counted_and_scored_on_the_known_turns() {
    let dir = tempfile::tempdir().unwrap();
    let ds = write_dataset(dir.path());
    let out = run_rules(&ds, &dir.path().join("out"), &Config::default(), None);
    let m = &out.summary.metrics;
    assert_eq!(m["qa_evidence_unknown_turns"], 2, "t8 and t9");
    assert_eq!(m["qa_items_excluded"], 1, "the item whose only evidence is t9");
    assert_eq!(m["qa_items_scored"], 2);
    assert_eq!(out.qa_warnings.len(), 2);
    assert!(out.qa_warnings[0].contains("QA item 0: evidence turn \"t8\""), "{}", out.qa_warnings[0]);
    let csv = std::fs::read_to_string(dir.path().join("out/qa.csv")).unwrap();
    let evidence: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').nth(7).unwrap()).collect();
    // Four sources: no gold facts, so no gold-facts row.
    assert_eq!(evidence, ["t1", "t1", "t1", "t1", "t2", "t2", "t2", "t2"], "item 0 scored on t1 alone; item 1 excluded");

    // The CLI prints each warning on one line and exits 0.
    let o = std::process::Command::new(crate::support::bin())
        .args(["run", "--dataset"])
        .arg(&ds)
        .arg("--out")
        .arg(dir.path().join("cli"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("warning: u: QA item 1: evidence turn \"t9\" is not a turn of the conversation"), "{stderr}");
}

#[test]
fn empty_questions_are_warned_counted_and_excluded_not_scored_as_misses() {
    let dir = tempfile::tempdir().unwrap();
    let conv = dir.path().join("ds/conversations");
    std::fs::create_dir_all(&conv).unwrap();
    let body = r#"{"format": "memform-conversation/1", "id": "u", "speakers": ["Ana"],
 "episodes": [{"id": "e1", "timestamp": "2025-01-01T10:00:00", "turns": [
   {"id": "t1", "speaker": "Ana", "text": "I visited Acme."}]}],
 "gold": {"qa": [
   {"question": "", "evidence": ["t1"]},
   {"question": " \t\n ", "evidence": ["t1"]},
   {"question": "Where does Ana work?", "evidence": ["t1"]}]}}"#;
    std::fs::write(conv.join("u.json"), body).unwrap();
    let out = run_rules(&dir.path().join("ds"), &dir.path().join("out"), &Config::default(), None);
    let m = &out.summary.metrics;
    assert_eq!(m["qa_questions_empty"], 2);
    assert_eq!(m["qa_items_excluded"], 2);
    assert_eq!(m["qa_items_scored"], 1, "only the real question is scored");
    assert_eq!(m["qa_raw_turns_items_scored"], 1, "the baselines score the same items");
    assert_eq!(out.qa_warnings.len(), 2);
    assert!(out.qa_warnings[0].contains("u: QA item 0: the question is empty"), "{}", out.qa_warnings[0]);
    let csv = std::fs::read_to_string(dir.path().join("out/qa.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 4, "one row per source (no gold facts: four) for the one scored item: {csv}");
}

#[test]
fn the_hand_written_longmemeval_sample_runs_with_abstention_apart() {
    let sample = crate::support::root().join("datasets/longmemeval-sample/longmemeval_sample.json");
    let dataset = memform::dataset::load(&sample).unwrap();
    assert_eq!(dataset.format, memform::types::DatasetFormat::Longmemeval);
    assert_eq!(dataset.conversations.len(), 2);
    let dir = tempfile::tempdir().unwrap();
    let out = run_rules(&sample, dir.path(), &at_question(), None);
    let m = &out.summary.metrics;
    assert_eq!(m["qa_items_scored"], 1, "the abstention item is apart");
    assert_eq!(m["qa_abstention"]["items_scored"], 1);
    assert!(m["qa_by_category"].get("knowledge-update").is_some(), "{}", m["qa_by_category"]);
    let qa = memform::report::read_parquet(&dir.path().join("qa.parquet")).unwrap();
    let as_of = qa.column("as_of").unwrap().str().unwrap().get(0).map(str::to_string);
    assert_eq!(as_of.as_deref(), Some("2024-03-10T18:00:00"));
}

fn memform_in(cwd: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(crate::support::bin()).args(args).current_dir(cwd).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// `compare` carries the formed memory's retrieval figures (A against B)
/// and the baselines' as context.
#[test]
fn compare_carries_the_retrieval_figures() {
    let tmp = tempfile::tempdir().unwrap();
    let scenarios = scenarios_dir().display().to_string();
    let args = ["compare", "--dataset", &scenarios, "--modes", "rules,rules", "--set-b", "search_min_score=0.99", "--out", "cmp"];
    let (code, _, stderr) = memform_in(tmp.path(), &args);
    assert_eq!(code, Some(0), "{stderr}");
    let c: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(tmp.path().join("cmp/compare.json")).unwrap()).unwrap();
    let row = |k: &str| c["metrics"].as_array().unwrap().iter().find(|r| r["metric"] == k).cloned();
    let recall = row("qa_recall_any_at_5").expect("qa_recall_any_at_5 compared");
    assert!(recall["a"].as_f64().unwrap() > 0.5, "{recall}");
    assert_eq!(recall["b"], 0.0, "min_score 0.99 keeps no hit: {recall}");
    assert_eq!(row("qa_items_indexed").expect("qa_items_indexed")["higher_is_better"], serde_json::Value::Null, "no better direction");
    // The baselines searched differently too (the search keys changed), so they are compared.
    assert!(row("qa_raw_turns_recall_any_at_5").is_some());
    let md = std::fs::read_to_string(tmp.path().join("cmp/compare.md")).unwrap();
    assert!(md.contains("qa_recall_any_at_5"), "{md}");
}

/// A sweep point carries the retrieval figures, a threshold that changes
/// formation changes them, and `--objective` can name one.
#[test]
fn a_sweep_shows_a_thresholds_effect_on_retrieval() {
    let tmp = tempfile::tempdir().unwrap();
    let scenarios = scenarios_dir().display().to_string();
    let args = [
        "sweep",
        "--dataset",
        &scenarios,
        "--grid",
        "min_fact_confidence_for_write=0.0,0.95",
        "--objective",
        "qa_recall_any_at_5",
        "--out",
        "sw",
    ];
    let (code, _, stderr) = memform_in(tmp.path(), &args);
    assert_eq!(code, Some(0), "{stderr}");
    let csv = std::fs::read_to_string(tmp.path().join("sw/sweep.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("{name} not in {header:?}"));
    let (indexed, recall, raw) = (col("qa_items_indexed"), col("qa_recall_any_at_5"), col("qa_raw_turns_recall_any_at_5"));
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2);
    assert_ne!(rows[0][indexed], rows[1][indexed], "the threshold changes what is stored: {csv}");
    assert_ne!(rows[0][recall], rows[1][recall], "and what is retrieved: {csv}");
    assert_eq!(rows[0][raw], rows[1][raw], "the raw-turn baseline does not depend on formation");
}

/// The gate guards a retrieval figure: a run whose retrieval dropped fails.
#[test]
fn the_gate_guards_retrieval() {
    let tmp = tempfile::tempdir().unwrap();
    let scenarios = scenarios_dir().display().to_string();
    for (out, extra) in [("base", None), ("worse", Some("search_min_score=0.99"))] {
        let mut args = vec!["run", "--dataset", &scenarios, "--out", out];
        if let Some(set) = extra {
            args.extend(["--set", set]);
        }
        let (code, _, stderr) = memform_in(tmp.path(), &args);
        assert_eq!(code, Some(0), "{stderr}");
    }
    std::fs::write(tmp.path().join("rules.toml"), "[metrics.qa_recall_any_at_5]\ndirection = \"higher\"\nabs_tol = 0.02\n").unwrap();
    let (code, _, stderr) = memform_in(tmp.path(), &["gate", "--baseline", "b.json", "--update-baseline", "--run", "base"]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, table, _) = memform_in(tmp.path(), &["gate", "--baseline", "b.json", "--rules", "rules.toml", "--run", "base"]);
    assert_eq!(code, Some(0), "{table}");
    let (code, table, stderr) = memform_in(tmp.path(), &["gate", "--baseline", "b.json", "--rules", "rules.toml", "--run", "worse"]);
    assert_eq!(code, Some(1), "{table}{stderr}");
    assert!(table.contains("| qa_recall_any_at_5 |") && table.contains("FAIL"), "{table}");
    // The default rules guard it too.
    let (code, table, _) = memform_in(tmp.path(), &["gate", "--baseline", "b.json", "--run", "worse"]);
    assert_eq!(code, Some(1), "{table}");
    assert!(table.contains("| qa_recall_any_at_5 |"), "{table}");
}

/// A run schedules the QA evaluation as tasks after formation's (see
/// `src/run.rs`): its rows are the same with one thread as with four, and
/// the same as evaluating the finished store afterwards.
#[test]
fn a_runs_qa_rows_do_not_depend_on_its_threads_and_equal_an_evaluation_after() {
    let dataset = memform::dataset::load(&scenarios_dir()).unwrap();
    let cfg = Config::default();
    let embedder = HashedEmbedder::new(cfg.hashed_dims);
    let mut csvs = Vec::new();
    for threads in [1, 4] {
        let dir = tempfile::tempdir().unwrap();
        let out = run_rules(&scenarios_dir(), dir.path(), &cfg, Some(threads));
        let csv = std::fs::read(dir.path().join("qa.csv")).unwrap();
        let store = Store::open(&dir.path().join("store.sqlite")).unwrap();
        let after = evaluate(&dataset, &store, &embedder, &cfg).unwrap();
        let again = tempfile::tempdir().unwrap();
        memform::qa::write(again.path(), &after).unwrap();
        assert_eq!(csv, std::fs::read(again.path().join("qa.csv")).unwrap(), "{threads} threads: the run's rows are the evaluation's");
        for (k, v) in memform::qa::summary_metrics(&after) {
            assert_eq!(out.summary.metrics.get(&k), Some(&v), "{threads} threads: {k}");
        }
        assert!(after.rows.len() > 20, "the scenarios have QA items: {}", after.rows.len());
        csvs.push(csv);
    }
    assert_eq!(csvs[0], csvs[1]);
}

#[test]
fn a_restatement_dropped_by_dedupe_joins_the_survivors_source_turns() {
    // t2 restates t1 in the same episode (a batch duplicate), t3 in a later
    // one (a duplicate of a live fact): the one stored fact lists all three.
    let dir = tempfile::tempdir().unwrap();
    let conv = dir.path().join("ds/conversations");
    std::fs::create_dir_all(&conv).unwrap();
    let body = r#"{"format": "memform-conversation/1", "id": "d", "speakers": ["Ana"],
 "episodes": [
  {"id": "e1", "timestamp": "2025-01-01T10:00:00", "turns": [
   {"id": "t1", "speaker": "Ana", "text": "I visited Acme."},
   {"id": "t2", "speaker": "Ana", "text": "I visited Acme."}]},
  {"id": "e2", "timestamp": "2025-02-01T10:00:00", "turns": [
   {"id": "t3", "speaker": "Ana", "text": "I visited Acme."}]}]}"#;
    std::fs::write(conv.join("d.json"), body).unwrap();
    for (write_mode, want) in [("full", vec!["t1", "t2", "t3"]), ("shadow", vec![])] {
        let mut cfg = Config::default();
        cfg.set_write_mode(memform::config::WriteMode::parse(write_mode).unwrap());
        let out = tempfile::tempdir().unwrap();
        run_rules(&dir.path().join("ds"), out.path(), &cfg, None);
        let facts = Store::open(&out.path().join("store.sqlite")).unwrap().facts().unwrap();
        let acme: Vec<&StoredFact> = facts.iter().filter(|f| f.content.contains("Acme")).collect();
        if want.is_empty() {
            assert!(acme.is_empty(), "shadow mode writes nothing: {acme:?}");
            continue;
        }
        assert_eq!(acme.len(), 1, "{facts:?}");
        let turns: Vec<String> = serde_json::from_str(&acme[0].source_turns).unwrap();
        assert_eq!(turns, want);
    }
}

#[test]
fn a_temporal_question_is_answerable_from_the_retrieved_text() {
    // The answer is the session's date, which no turn says: it is in the
    // read text of every source because each document carries its date.
    let dir = tempfile::tempdir().unwrap();
    let conv = dir.path().join("ds/conversations");
    std::fs::create_dir_all(&conv).unwrap();
    let body = r#"{"format": "memform-conversation/1", "id": "when", "speakers": ["Ana", "Bo"],
 "episodes": [
  {"id": "e1", "timestamp": "2023-05-08T13:56:00", "turns": [
   {"id": "t1", "speaker": "Ana", "text": "I moved to Porto today!"},
   {"id": "t2", "speaker": "Bo", "text": "Congratulations on the move."}]},
  {"id": "e2", "timestamp": "2023-06-01T10:00:00", "turns": [
   {"id": "t3", "speaker": "Bo", "text": "I bought a red bicycle."}]}],
 "gold": {"qa": [{"question": "When did Ana move to Porto?", "answer": "8 May 2023", "evidence": ["t1"], "category": 2}]}}"#;
    std::fs::write(conv.join("when.json"), body).unwrap();
    let cfg = Config::default();
    let out = tempfile::tempdir().unwrap();
    run_rules(&dir.path().join("ds"), out.path(), &cfg, None);
    let store = Store::open(&out.path().join("store.sqlite")).unwrap();
    let dataset = memform::dataset::load(&dir.path().join("ds")).unwrap();
    let qa = evaluate(&dataset, &store, &HashedEmbedder::new(cfg.hashed_dims), &cfg).unwrap();
    for source in ["formed", "raw_turns", "raw_sessions"] {
        let row = qa.rows.iter().find(|r| r.source == source).unwrap();
        assert_eq!(row.budgeted.recall_any_w[0], 1.0, "{source}: the evidence is read within 100 words");
        assert_eq!(row.budgeted.answer_in_w[0], Some(1.0), "{source}: \"8 May 2023\" is in the words read");
    }
}

/// The session's date is in every source's **searched** text: three
/// sessions whose turns say the same words (the baselines' documents tie on
/// every word and vector) and three facts alike but for a name; a question
/// naming the month finds May's by keyword (`qa_retriever = "or"`; with
/// `and` no document holds every question word). The May session and its
/// turn have the largest ids, so without the date they would lose the tie.
#[test]
fn a_question_naming_a_month_finds_that_sessions_documents_by_their_date() {
    let dir = tempfile::tempdir().unwrap();
    let conv = dir.path().join("ds/conversations");
    std::fs::create_dir_all(&conv).unwrap();
    let body = r#"{"format": "memform-conversation/1", "id": "months", "speakers": ["Ana", "Bo"],
 "episodes": [
  {"id": "s1", "timestamp": "2023-01-10T10:00:00", "turns": [
   {"id": "t1", "speaker": "Ana", "text": "We talked for hours."},
   {"id": "f1", "speaker": "Bo", "text": "I visited Acme."}]},
  {"id": "s9", "timestamp": "2023-05-10T10:00:00", "turns": [
   {"id": "t9", "speaker": "Ana", "text": "We talked for hours."},
   {"id": "f9", "speaker": "Bo", "text": "I visited Cord."}]},
  {"id": "s2", "timestamp": "2023-09-10T10:00:00", "turns": [
   {"id": "t2", "speaker": "Ana", "text": "We talked for hours."},
   {"id": "f2", "speaker": "Bo", "text": "I visited Bolt."}]}],
 "gold": {"qa": [
  {"question": "What did Ana say in May?", "answer": "We talked for hours", "evidence": ["t9"], "category": 2},
  {"question": "Where did Bo go in May?", "answer": "Cord", "evidence": ["f9"], "category": 2}]}}"#;
    std::fs::write(conv.join("months.json"), body).unwrap();
    let mut cfg = Config::default();
    cfg.qa_retriever = "or".into();
    let out = tempfile::tempdir().unwrap();
    run_rules(&dir.path().join("ds"), out.path(), &cfg, None);
    let store = Store::open(&out.path().join("store.sqlite")).unwrap();
    let dataset = memform::dataset::load(&dir.path().join("ds")).unwrap();
    let qa = evaluate(&dataset, &store, &HashedEmbedder::new(cfg.hashed_dims), &cfg).unwrap();
    let first = |item: usize, source: &str| {
        let row = qa.rows.iter().find(|r| r.item == item && r.source == source).unwrap();
        row.retrieved.first().cloned().unwrap_or_default()
    };
    assert_eq!(first(0, "raw_turns"), "t9");
    assert_eq!(first(0, "raw_sessions"), "s9");
    let formed = qa.rows.iter().find(|r| r.item == 1 && r.source == "formed").unwrap();
    assert_eq!(formed.scored.recall_any[0], 1.0, "the fact from May's session first: {formed:?}");
}
