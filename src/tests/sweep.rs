//! Sweeps: extraction once per episode whatever the grid size, the same
//! rows for any thread count, and shards merged into the same bytes as an
//! unsharded sweep.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use memform::embed::hashed::HashedEmbedder;
use memform::error::Result;
use memform::pipeline::Config;
use memform::pipeline::Stages;
use memform::pipeline::extract::{ExtractInput, Extractor, RawExtraction, RulesExtractor};
use memform::pipeline::judge::RulesJudge;
use memform::sweep::{parse_axis, points, run_sweep, run_sweep_with, to_csv};

use crate::support::{bin, scenarios_dir};

/// The rules extractor, counting its calls.
struct Counting {
    inner: RulesExtractor,
    calls: AtomicUsize,
}

impl Extractor for Counting {
    fn id(&self) -> String {
        self.inner.id()
    }
    fn extract(&self, input: &ExtractInput<'_>) -> Result<RawExtraction> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.extract(input)
    }
}

fn sweep_csv(grid: &[&str], threads: usize) -> (String, usize, usize) {
    let dataset = memform::dataset::load(&scenarios_dir()).expect("load");
    let episodes: usize = dataset.conversations.iter().map(|c| c.episodes.len()).sum();
    let cfg = Config::default();
    let extractor = Counting { inner: RulesExtractor::new(cfg.max_input_chars), calls: AtomicUsize::new(0) };
    let embedder = HashedEmbedder::new(cfg.hashed_dims);
    let judge = RulesJudge::new(&cfg);
    let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
    let axes: Vec<_> = grid.iter().map(|g| parse_axis(g).expect("axis")).collect();
    let pts = points(&axes);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
    let (rows, shared) = pool.install(|| run_sweep(&dataset, &cfg, stages, &pts, None)).expect("sweep");
    assert_eq!(rows.len(), pts.len());
    assert_eq!(shared.fronts_computed, episodes);
    (to_csv(&rows), extractor.calls.load(Ordering::SeqCst), episodes)
}

#[test]
fn extraction_runs_once_per_episode_whatever_the_grid() {
    let (_, small, episodes) = sweep_csv(&["near_dup_threshold=0.90,0.95"], 2);
    let (_, large, _) = sweep_csv(&["near_dup_threshold=0.80:0.99:0.01", "entity_merge_threshold=0.80,0.88,0.95"], 2);
    assert_eq!(small, episodes);
    assert_eq!(large, episodes, "60 grid points, still one extraction per episode");
}

#[test]
fn same_grid_same_csv_for_any_thread_count() {
    let grid = ["near_dup_threshold=0.60:0.95:0.05", "contradiction_band_min=0.40,0.60"];
    let (one, _, _) = sweep_csv(&grid, 1);
    let (two, _, _) = sweep_csv(&grid, 2);
    let (three, _, _) = sweep_csv(&grid, 3);
    assert_eq!(one, two);
    assert_eq!(one, three);
    assert!(one.lines().count() == 17, "a header and 16 points:\n{one}");
    let col = one.lines().next().unwrap_or_default().split(',').position(|h| h == "dedup_rate").expect("dedup_rate column");
    let values: std::collections::BTreeSet<&str> = one.lines().skip(1).map(|l| l.split(',').nth(col).unwrap_or_default()).collect();
    assert!(values.len() > 1, "the swept thresholds change a metric:\n{one}");
}

/// Every grid point's metrics are those of a plain run with that config:
/// the shared fronts and the precomputed cosines change no result.
#[test]
fn each_point_equals_a_run_with_its_config() {
    let dataset = memform::dataset::load(&scenarios_dir()).expect("load");
    let base = Config::default();
    let extractor = RulesExtractor::new(base.max_input_chars);
    let embedder = HashedEmbedder::new(base.hashed_dims);
    let judge = RulesJudge::new(&base);
    let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
    let axes = [
        parse_axis("near_dup_threshold=0.75,0.92").expect("axis"),
        parse_axis("contradiction_band_min=0.30,0.70").expect("axis"),
        parse_axis("antonym_min_shared_tokens=1,2").expect("axis"),
        parse_axis("polarity_content_words_only=false,true").expect("axis"),
    ];
    let pts = points(&axes);
    let (rows, _) = run_sweep(&dataset, &base, stages, &pts, None).expect("sweep");
    let mut differ = 0;
    for (p, row) in pts.iter().zip(&rows) {
        let mut cfg = base.clone();
        for (k, v) in &p.settings {
            cfg.set(&format!("{k}={v}")).expect("set");
        }
        let point_judge = RulesJudge::new(&cfg);
        let out = tempfile::tempdir().expect("tempdir");
        let opts = memform::run::RunOptions { out_dir: out.path().to_path_buf(), ..Default::default() };
        let ran = memform::run::run(&dataset, &cfg, Stages { judge: &point_judge, ..stages }, &opts).expect("run");
        for (metric, value) in &row.metrics {
            let in_run = ran.summary.metrics.get(metric).and_then(|v| v.as_f64());
            assert_eq!(in_run, Some(*value), "point {} ({:?}): {metric}", p.index, p.settings);
        }
        // Every numeric metric of the run is in the row (cosine matching needs an embedder a sweep does not pass).
        let missing: Vec<&String> = ran
            .summary
            .metrics
            .iter()
            .filter(|(k, v)| v.as_f64().is_some() && !row.metrics.contains_key(*k) && !k.contains("cosine"))
            .map(|(k, _)| k)
            .collect();
        assert!(missing.is_empty(), "point {}: the sweep row lacks {missing:?}", p.index);
        differ += usize::from(rows[0].metrics != row.metrics);
    }
    assert!(differ > 0, "the grid changes some metric, so the comparison means something");
    // Without QA nothing reads a point's store, so the points form into
    // scratch stores: every other figure is the same.
    let hooks = memform::sweep::Hooks { no_qa: true, ..Default::default() };
    let (bare, _) = run_sweep_with(&dataset, &base, stages, &pts, &hooks).expect("sweep");
    for (with, without) in rows.iter().zip(&bare) {
        let kept: std::collections::BTreeMap<&String, &f64> =
            with.metrics.iter().filter(|(k, _)| without.metrics.contains_key(*k)).collect();
        assert_eq!(kept, without.metrics.iter().collect(), "point {}", with.index);
        assert!(with.metrics.keys().filter(|k| !without.metrics.contains_key(*k)).all(|k| k.starts_with("qa_")), "point {}", with.index);
    }
}

/// The metric names a sweep checks `--objective` against are exactly a
/// point's keys, on a labelled dataset and on one without gold; the
/// estimating run (first point alone) gives the same rows.
#[test]
fn point_metric_names_are_a_points_keys_and_estimating_changes_no_row() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bare = tmp.path().join("bare/conversations");
    std::fs::create_dir_all(&bare).expect("mkdir");
    std::fs::write(
        bare.join("a.json"),
        r#"{"format": "memform-conversation/1", "id": "a", "speakers": ["Ann"], "episodes": [{"id": "e1",
            "turns": [{"id": "t1", "speaker": "Ann", "text": "I work at Google."}]}]}"#,
    )
    .expect("write");
    let cfg = Config::default();
    let extractor = RulesExtractor::new(cfg.max_input_chars);
    let embedder = HashedEmbedder::new(cfg.hashed_dims);
    let judge = RulesJudge::new(&cfg);
    let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
    let pts = points(&[parse_axis("near_dup_threshold=0.8,0.9,0.95").expect("axis")]);
    for dir in [scenarios_dir(), tmp.path().join("bare")] {
        let dataset = memform::dataset::load(&dir).expect("load");
        let (rows, _) = run_sweep(&dataset, &cfg, stages, &pts, None).expect("sweep");
        let mut names = memform::metrics::point_metric_names(&dataset);
        names.sort();
        let keys: Vec<String> = rows[0].metrics.keys().cloned().collect();
        assert_eq!(names, keys, "{}", dir.display());
        let all = memform::metrics::all_point_metric_names();
        assert!(keys.iter().all(|k| all.contains(k)));

        let estimates = std::sync::Mutex::new(Vec::new());
        let report = |e: &memform::sweep::Estimate| estimates.lock().expect("lock").push(*e);
        let hooks = memform::sweep::Hooks { done: None, estimate: Some(&report), ..Default::default() };
        let (timed, _) = memform::sweep::run_sweep_with(&dataset, &cfg, stages, &pts, &hooks).expect("sweep");
        assert_eq!(timed, rows);
        let estimates = estimates.into_inner().expect("lock");
        assert_eq!(estimates.len(), 1);
        assert_eq!(estimates[0].points, 3);
    }
    assert!(
        memform::metrics::point_metric_names(&memform::dataset::load(&tmp.path().join("bare")).expect("load"))
            .iter()
            .all(|n| !n.starts_with("turn_"))
    );
}

/// The formed-memory QA runs once per conversation and distinct store of
/// it: points whose stores QA reads alike share one evaluation (same rows
/// as evaluating each), and
/// `no_qa` gives the same rows without the QA evaluation's `qa_*` metrics.
#[test]
fn formed_qa_once_per_distinct_store_and_no_qa_drops_only_qa_metrics() {
    let dataset = memform::dataset::load(&scenarios_dir()).expect("load");
    assert!(dataset.conversations.iter().any(|c| !c.gold.qa.is_empty()), "the scenarios have QA items");
    let cfg = Config::default();
    let extractor = RulesExtractor::new(cfg.max_input_chars);
    let embedder = HashedEmbedder::new(cfg.hashed_dims);
    let judge = RulesJudge::new(&cfg);
    let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
    // Four points, two distinct configs (each twice): at most two stores.
    let pts = points(&[parse_axis("near_dup_threshold=0.85,0.85,0.98,0.98").expect("axis")]);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("pool");
    let (rows, shared) = pool.install(|| run_sweep(&dataset, &cfg, stages, &pts, None)).expect("sweep");
    assert!(rows[0].metrics.keys().any(|k| k.starts_with("qa_")), "{:?}", rows[0].metrics.keys());
    assert_eq!(rows[0].metrics, rows[1].metrics);
    assert_eq!(rows[2].metrics, rows[3].metrics);
    let with_qa = dataset.conversations.iter().filter(|c| !c.gold.qa.is_empty()).count();
    assert!(
        (with_qa..=2 * with_qa).contains(&shared.formed_qa_evaluated),
        "one thread: each conversation with QA items evaluated at most once per distinct config, got {} for {with_qa}",
        shared.formed_qa_evaluated
    );
    // Each point alone (nothing to reuse) gives the same figures.
    for (p, r) in pts.iter().zip(&rows) {
        let (alone, _) = run_sweep(&dataset, &cfg, stages, std::slice::from_ref(p), None).expect("sweep");
        assert_eq!(alone[0].metrics, r.metrics, "point {}", p.index);
    }
    let hooks = memform::sweep::Hooks { no_qa: true, ..Default::default() };
    let (bare, shared) = run_sweep_with(&dataset, &cfg, stages, &pts, &hooks).expect("sweep");
    assert_eq!(shared.formed_qa_evaluated, 0);
    for (with, without) in rows.iter().zip(&bare) {
        for (k, v) in &without.metrics {
            assert_eq!(with.metrics.get(k), Some(v), "{k}");
        }
        let dropped: Vec<&String> = with.metrics.keys().filter(|k| !without.metrics.contains_key(*k)).collect();
        assert!(!dropped.is_empty() && dropped.iter().all(|k| k.starts_with("qa_")), "{dropped:?}");
    }
}

fn cli(args: &[&str], cwd: &Path) {
    let out = Command::new(bin()).args(args).current_dir(cwd).output().expect("spawn");
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn sharded_and_merged_equals_unsharded() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    let base = [
        "sweep",
        "--dataset",
        &ds,
        "--grid",
        "near_dup_threshold=0.70:0.95:0.05",
        "--grid",
        "min_fact_confidence_for_write=0.6,0.8",
        "--set",
        "contradiction_band_min=0.5",
    ];
    cli(&[&base[..], &["--out", "whole"]].concat(), tmp.path());
    for k in 0..3 {
        let shard = format!("{k}/3");
        let out = format!("shard{k}");
        cli(&[&base[..], &["--shard", &shard, "--out", &out]].concat(), tmp.path());
    }
    cli(&["sweep", "merge", "shard0", "shard1", "shard2", "--out", "merged"], tmp.path());
    let files = |d: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(tmp.path().join(d))
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let written = files("whole");
    assert_eq!(written, files("merged"));
    for f in ["sweep.csv", "sweep.parquet", "sweep.md", "rows.jsonl", "sweep.json", "sweep-content_precision.svg"] {
        assert!(written.iter().any(|w| w == f), "{f} not written: {written:?}");
    }
    for f in &written {
        let a = std::fs::read(tmp.path().join("whole").join(f)).expect("whole");
        let b = std::fs::read(tmp.path().join("merged").join(f)).expect("merged");
        assert!(a == b, "{f} differs between the unsharded and the merged sweep");
    }
    let out = Command::new(bin())
        .args(["sweep", "merge", "shard0", "shard1", "--out", "partial"])
        .current_dir(tmp.path())
        .output()
        .expect("spawn");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_held_out_split_chooses_on_tune_and_reports_the_choice_on_conversations_it_never_saw() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir().display().to_string();
    let grid = ["--grid", "near_dup_threshold=0.80:0.95:0.05", "--objective", "content_precision"];
    let held = "budgets,job-change,noise";
    cli(&[&["sweep", "--dataset", &ds][..], &grid, &["--holdout-conversations", held, "--out", "split"]].concat(), tmp.path());
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("split/sweep.json")).expect("sweep.json")).expect("json");
    let h = &meta["holdout"];
    let tune: Vec<String> = h["tune"].as_array().expect("tune").iter().map(|v| v.as_str().unwrap().to_string()).collect();
    assert_eq!(h["holdout"], serde_json::json!(["budgets", "job-change", "noise"]));
    assert!(!tune.is_empty() && tune.iter().all(|t| !held.contains(t.as_str())), "{tune:?}");
    // The grid ran on the tune conversations alone: the same rows as a sweep of them.
    cli(&[&["sweep", "--dataset", &ds][..], &grid, &["--conversations", &tune.join(","), "--out", "tune"]].concat(), tmp.path());
    let csv = |d: &str| std::fs::read_to_string(tmp.path().join(d).join("sweep.csv")).expect("sweep.csv");
    assert_eq!(csv("split"), csv("tune"));
    // The chosen point is the best on tune, and its held-out figures are a run of it on the held-out conversations.
    let rows = memform::sweep::read_rows(&[tmp.path().join("tune").as_path()]).expect("rows");
    let defaults = vec![("near_dup_threshold".to_string(), "0.95".to_string())];
    let chosen = memform::sweep::best_near_default(&rows, "content_precision", false, &defaults).expect("best");
    assert_eq!(h["chosen"], chosen, "chosen on tune");
    let value = rows[chosen].settings[0].1.clone();
    assert_ne!(value, "0.95", "the grid must choose a change for this test to check both held-out rows");
    let one = format!("near_dup_threshold={value}");
    cli(&["sweep", "--dataset", &ds, "--grid", &one, "--conversations", held, "--out", "held"], tmp.path());
    let held_rows = memform::sweep::read_rows(&[tmp.path().join("held").as_path()]).expect("rows");
    let first = &h["rows"][0];
    assert_eq!(first["label"], "best on tune");
    for (k, v) in &held_rows[0].metrics {
        assert_eq!(first["metrics"][k].as_f64(), Some(*v), "{k}");
    }
    assert_eq!(h["rows"][1]["label"], "seed defaults");
    assert_eq!(h["rows"][1]["settings"][0][1], "0.95");
    let md = std::fs::read_to_string(tmp.path().join("split/sweep.md")).expect("sweep.md");
    assert!(md.contains("chosen on the tune conversations") && md.contains("## Held-out check"), "{md}");
    assert!(md.contains("| best on tune |") && md.contains("| seed defaults |"), "{md}");
    // A split is not a shard.
    let out = Command::new(bin()).args(["sweep", "merge", "split", "--out", "m"]).current_dir(tmp.path()).output().expect("spawn");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("held-out split"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Sweeps a grid over `dataset` with and without reusing decision traces:
/// the rows, and so every file written from them, are the same.
fn reuse_matches_full_runs(dir: &Path, grid: &[&str], no_qa: bool) -> memform::sweep::SharedWork {
    let dataset = memform::dataset::load(dir).expect("load");
    let cfg = Config::default();
    let extractor = RulesExtractor::new(cfg.max_input_chars);
    let embedder = HashedEmbedder::new(cfg.hashed_dims);
    let judge = RulesJudge::new(&cfg);
    let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
    let axes: Vec<_> = grid.iter().map(|g| parse_axis(g).expect("axis")).collect();
    let pts = points(&axes);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("pool");
    let sweep = |full_runs: bool| {
        let hooks = memform::sweep::Hooks { no_qa, full_runs, ..Default::default() };
        pool.install(|| run_sweep_with(&dataset, &cfg, stages, &pts, &hooks)).expect("sweep")
    };
    let (full, full_work) = sweep(true);
    let (reused, work) = sweep(false);
    assert_eq!(full_work.conversations_reused, 0);
    assert_eq!(full_work.conversations_formed, pts.len() * dataset.conversations.len());
    let json = |rows: &[memform::sweep::Row]| rows.iter().map(|r| serde_json::to_string(r).expect("json")).collect::<Vec<_>>().join("\n");
    assert_eq!(to_csv(&full), to_csv(&reused), "{}: {grid:?}, no_qa {no_qa}", dir.display());
    assert_eq!(json(&full), json(&reused), "{}: {grid:?}, no_qa {no_qa}", dir.display());
    let distinct: std::collections::BTreeSet<String> = full.iter().map(|r| format!("{:?}", r.metrics)).collect();
    assert!(distinct.len() > 1, "the grid changes some metric, so the comparison means something");
    work
}

/// Reusing a conversation's result wherever the point's thresholds fall
/// inside the intervals its comparisons allow changes no row, on the
/// scenarios and on LoCoMo-shaped conversations, with and without QA; a
/// grid over a key no comparison records forms every conversation.
#[test]
fn decision_trace_reuse_changes_no_row() {
    let grid = ["near_dup_threshold=0.60:0.98:0.02", "contradiction_band_min=0.30:0.58:0.04"];
    for no_qa in [true, false] {
        let work = reuse_matches_full_runs(&scenarios_dir(), &grid, no_qa);
        assert!(work.conversations_reused > 0, "no_qa {no_qa}: {work:?}");
        assert!(work.conversations_formed < 160 * 20, "no_qa {no_qa}: {work:?}");
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    // LoCoMo-shaped: two speakers, dated sessions of alternating turns, facts that repeat and change.
    let status = Command::new("python3")
        .arg(crate::support::root().join("benches/gen_longmem.py"))
        .arg(tmp.path().join("long"))
        .args(["3", "8", "10"])
        .status()
        .expect("python3");
    assert!(status.success());
    let work = reuse_matches_full_runs(&tmp.path().join("long"), &grid, true);
    assert!(work.conversations_reused > 0, "{work:?}");
    let untraced = ["near_dup_threshold=0.80,0.95", "entity_merge_threshold=0.80,0.95"];
    let work = reuse_matches_full_runs(&scenarios_dir(), &untraced, true);
    assert_eq!(work.conversations_reused, 0, "entity_merge_threshold is compared unrecorded: no reuse");
}
