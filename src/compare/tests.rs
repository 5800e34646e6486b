//! Unit tests of `compare`: the PRNG, the paired bootstrap on cases whose
//! interval is known by hand, and a comparison of two hand-built runs.

use std::path::Path;

use serde_json::json;

use super::{CompareOptions, MetricRow, Side, SplitMix64, compare_runs, reading, relative, render_markdown, write_comparison};
use crate::metrics::tests::{cand, episode_record, fixture};
use crate::metrics::{Analysis, RunData, analyze};
use crate::report::write_run_reports;
use crate::rundir::write_json;

#[test]
fn splitmix64_matches_the_reference_sequence() {
    let mut r = SplitMix64::new(1_234_567);
    let got: Vec<u64> = (0..5).map(|_| r.next_u64()).collect();
    assert_eq!(got, [6457827717110365317, 3203168211198807973, 9817491932198370423, 4593380528125082431, 16408922859458223821]);
    let mut r = SplitMix64::new(7);
    let draws: Vec<u64> = (0..1000).map(|_| r.below(3)).collect();
    assert!(draws.iter().all(|d| *d < 3));
    for v in 0..3 {
        let n = draws.iter().filter(|d| **d == v).count();
        assert!((250..420).contains(&n), "value {v} drawn {n} times of 1000");
    }
}

#[test]
fn relative_paths_between_run_and_output_directories() {
    assert_eq!(relative(Path::new("reports/x-rules"), Path::new("reports/x-compare")), "../x-rules");
    assert_eq!(relative(Path::new("/t/runs/a"), Path::new("/t/out")), "../runs/a");
    assert_eq!(relative(Path::new("./a"), Path::new("a")), ".");
}

#[test]
fn differences_print_with_their_sign_and_never_as_zero() {
    assert_eq!(super::signed(0.25), "+0.250");
    assert_eq!(super::signed(-2.0), "−2");
    assert_eq!(super::signed(0.0), "0");
    assert_eq!(super::signed(-0.0003), "−3e-4");
}

#[test]
fn reading_follows_the_interval_and_the_direction() {
    let row = |lo, hi, dir| MetricRow {
        metric: "m".into(),
        a: 0.0,
        b: 0.0,
        uplift: 0.0,
        ci_low: Some(lo),
        ci_high: Some(hi),
        higher_is_better: dir,
        undefined: None,
        not_computed: Vec::new(),
    };
    assert_eq!(reading(&row(0.1, 0.3, Some(true))), "B better");
    assert_eq!(reading(&row(-0.3, -0.1, Some(true))), "A better");
    assert_eq!(reading(&row(0.1, 0.3, Some(false))), "A better");
    assert_eq!(reading(&row(-0.1, 0.3, Some(true))), "no clear difference");
    assert_eq!(reading(&row(0.1, 0.3, None)), "B higher");
    // A ratio with no denominator in a run names no winner.
    let empty_b = MetricRow { undefined: Some("B (stored = 0)".into()), ..row(-1.0, -1.0, Some(true)) };
    assert_eq!(reading(&empty_b), "undefined for B (stored = 0)");
}

fn manifest(mode: &str) -> serde_json::Value {
    json!({
        "dataset": {"name": "tiny", "format": "native", "digest": "d", "conversations": 2},
        "mode": mode, "extractor": "rules:v1", "judge": "rules:v1", "embedder": "hashed:char3+word:256",
        "write_mode": "full", "config": serde_json::to_value(crate::pipeline::Config::default()).expect("config"),
    })
}

/// A complete run directory: its files, then `run.json` listing them.
fn write_run(dir: &Path, a: &Analysis, manifest: &serde_json::Value) {
    std::fs::create_dir_all(dir).expect("mkdir");
    write_json(&dir.join("summary.json"), &a.summary).expect("summary.json");
    write_run_reports(dir, manifest, a).expect("reports");
    mark_complete(dir, manifest);
}

fn mark_complete(dir: &Path, manifest: &serde_json::Value) {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|f| f != "run.json")
        .collect();
    files.push("run.json".into());
    files.sort();
    let mut m = manifest.clone();
    m["files"] = json!(files);
    m["complete"] = json!(true);
    write_json(&dir.join("run.json"), &m).expect("run.json");
}

/// Run A is the metrics fixture; run B is the same except that in `c2` it
/// stored a second fact ("Bo plays bass") and did not store "Bo likes jazz".
fn two_runs(root: &Path) -> (Side, Side) {
    let (dataset, episodes, live) = fixture();
    let a = analyze(&RunData {
        dataset: &dataset,
        episodes: &episodes,
        live_ids: &live,
        skipped_conversations: 0,
        wall_ms: 1.0,
        embedder: None,
    })
    .expect("analyze a");
    let mut eps_b = episodes.clone();
    let mut jazz = cand("c2", "e1", 0, "u1", "Bo likes jazz", "low_fact_confidence", false);
    jazz.subject = "Bo".into();
    let mut bass = cand("c2", "e1", 1, "u1", "Bo plays bass", "created", true);
    bass.subject = "Bo".into();
    eps_b[2] = episode_record("c2", "e1", 1, vec![jazz, bass]);
    let mut live_b = live.clone();
    live_b.insert("c2/e1/c1".into());
    let b = analyze(&RunData {
        dataset: &dataset,
        episodes: &eps_b,
        live_ids: &live_b,
        skipped_conversations: 0,
        wall_ms: 2.0,
        embedder: None,
    })
    .expect("analyze b");
    write_run(&root.join("runs/a"), &a, &manifest("rules"));
    write_run(&root.join("runs/b"), &b, &manifest("rules"));
    (Side { label: "rules".into(), dir: root.join("runs/a") }, Side { label: "rules+x".into(), dir: root.join("runs/b") })
}

#[test]
fn compares_two_runs_metric_by_metric() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = two_runs(dir.path());
    let out = dir.path().join("out");
    let c = compare_runs(&a, &b, &out, CompareOptions::default()).expect("compare");
    let row = |k: &str| c.metrics.iter().find(|r| r.metric == k).unwrap_or_else(|| panic!("{k} not compared")).clone();
    // B: 9 → 10 candidates, still 5 stored (jazz out, bass in).
    let cands = row("candidates");
    assert_eq!((cands.a, cands.b, cands.uplift), (9.0, 10.0, 1.0));
    let density = row("fact_density");
    assert_eq!(density.uplift, 0.0);
    // Only c2 changed, so resampling the two conversations moves candidates by 0, 1 (c2 drawn once) or 2 (twice).
    let (lo, hi) = (cands.ci_low.expect("ci"), cands.ci_high.expect("ci"));
    assert!(lo >= 0.0 && hi <= 2.0 && lo <= hi, "[{lo}, {hi}]");
    // A metric equal on every episode has a zero-width interval.
    let t = row("turn_recall");
    assert_eq!((t.uplift, t.ci_low, t.ci_high), (0.0, Some(0.0), Some(0.0)));
    assert!(c.context.iter().any(|(k, v)| k == "episodes" && *v == json!(3)), "{:?}", c.context);
    assert!(!c.metrics.iter().any(|r| r.metric.starts_with("baseline_")));
    assert_eq!(c.bootstrap.paired_episodes, 3);
    assert_eq!(c.a.dir, "../runs/a");
    // Facts: 4 stored by both, jazz only in A, bass only in B.
    assert_eq!((c.facts.both, c.facts.only_a, c.facts.only_b), (4, 1, 1));
    assert_eq!(c.facts.examples_only_a[0].content, "Bo likes jazz");
    assert_eq!(c.facts.examples_only_b[0].content, "Bo plays bass");
    // Per conversation: c1 unchanged, c2's content F1 unchanged (no gold), fact density unchanged.
    let c2 = c.per_conversation.iter().find(|r| r.conversation == "c2").expect("c2");
    assert!(c2.metrics.iter().any(|m| m.0 == "fact_density" && m.3 == 0.0));
    // Deterministic.
    assert_eq!(c, compare_runs(&a, &b, &out, CompareOptions::default()).expect("compare again"));
}

#[test]
fn one_paired_conversation_has_no_interval() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = two_runs(dir.path());
    // Keep only c2 in both runs' episode tables: every resample would be that
    // conversation, an interval of width 0 that says nothing.
    for side in [&a, &b] {
        let path = side.dir.join("episodes.parquet");
        let df = crate::report::read_parquet(&path).expect("read");
        let df = polars::prelude::IntoLazy::lazy(df)
            .filter(polars::prelude::col("conversation").eq(polars::prelude::lit("c2")))
            .collect()
            .expect("filter");
        crate::report::write_parquet(&path, &df).expect("write");
    }
    let c = compare_runs(&a, &b, &dir.path().join("out"), CompareOptions { resamples: 50, seed: 3 }).expect("compare");
    let cands = c.metrics.iter().find(|r| r.metric == "candidates").expect("candidates");
    assert_eq!((cands.uplift, cands.ci_low, cands.ci_high), (1.0, None, None));
    assert_eq!(c.bootstrap.paired_episodes, 1);
    assert_eq!(c.bootstrap.unpaired_episodes, 0);
}

#[test]
fn different_datasets_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = two_runs(dir.path());
    let mut m = manifest("rules");
    m["dataset"]["digest"] = json!("other");
    mark_complete(&b.dir, &m);
    let err = compare_runs(&a, &b, dir.path(), CompareOptions::default()).expect_err("different digests").to_string();
    assert!(err.contains("ran on different datasets (digest d vs other)"), "{err}");
}

#[test]
fn compare_md_reads_as_a_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = two_runs(dir.path());
    let out = dir.path().join("out");
    let c = compare_runs(&a, &b, &out, CompareOptions::default()).expect("compare");
    write_comparison(&out, &c).expect("write");
    let md = std::fs::read_to_string(out.join("compare.md")).expect("compare.md");
    assert_eq!(md, render_markdown(&c));
    for needle in [
        "# memform compare: tiny, rules vs rules+x",
        "| A | `rules` | `../runs/a` | rules |",
        "| `candidates` | 9 | 10 | **+1** |",
        "## Headline",
        "| `stored_facts` | 5 | 5 | **0** |",
        "| `turn_recall` ↑ | 0.667 | 0.667 | **0** | [0, 0] | no clear difference |",
        "| `fact_density` | 1.667 | 1.667 | **0** |",
        "4 stored by both, 1 only by A, 1 only by B",
        "| c2 / e1 / u1 | Bo plays bass | – |",
        "## Timings",
    ] {
        assert!(md.contains(needle), "compare.md lacks {needle:?}:\n{md}");
    }
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("compare.json")).expect("json")).expect("parse");
    assert_eq!(json["format"], "memform-compare/1");
    assert_eq!(json["bootstrap"]["seed"], 42);
}

/// The dreaming profile's nested figures (`metrics.dreaming` in
/// summary.json) become `dreaming.<key>` rows; a side that is not a
/// dreaming run reads "n/a" and has no uplift.
#[test]
fn the_nested_dreaming_figures_are_compared_and_na_for_other_profiles() {
    let soda = serde_json::json!({"metrics": {"content_recall": 0.3}});
    let dreaming = serde_json::json!({"metrics": {"content_recall": 0.2, "dreaming": {
        "entity_duplicate_rate": 0.1, "evidence_coverage": 0.9, "rejections_failed": {"aspect_cap": 7}, "per_pass": [{"pass": "c/p1"}]}}});
    let figures = super::dreaming_figures(&dreaming);
    assert_eq!(figures.get("rejections_failed.aspect_cap"), Some(&7.0));
    assert!(!figures.keys().any(|k| k.starts_with("per_pass")));
    let rows = super::dreaming_rows(&soda, &dreaming);
    let names: Vec<&str> = rows.iter().map(|r| r.metric.as_str()).collect();
    assert_eq!(names, vec!["dreaming.entity_duplicate_rate", "dreaming.evidence_coverage", "dreaming.rejections_failed.aspect_cap"]);
    assert!(rows.iter().all(|r| r.not_computed == vec!["A".to_string()] && r.uplift == 0.0));
    assert_eq!(rows[0].higher_is_better, Some(false));
    let both = super::dreaming_rows(&dreaming, &dreaming);
    assert!(both.iter().all(|r| r.not_computed.is_empty() && r.undefined.is_none()));
}
