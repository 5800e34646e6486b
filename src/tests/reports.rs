//! Snapshots of a run's `summary.json` and of `compare.md` over
//! `datasets/scenarios/` (wall-clock timings removed), the report files a
//! run writes, and the `compare` command's run-or-reuse behaviour.

use std::path::Path;
use std::process::Command;

use memform::compare::{CompareOptions, Side, compare_runs, render_markdown};
use memform::embed::hashed::HashedEmbedder;
use memform::pipeline::Config;
use memform::pipeline::Stages;
use memform::pipeline::extract::RulesExtractor;
use memform::pipeline::judge::RulesJudge;
use memform::run::{RunOptions, run};

use crate::support::{bin, scenarios_dir, snapshots_dir, without_timings};

/// Runs the scenarios in rules mode under `cfg` into `out`; the library
/// writes the whole manifest, as the CLI's runs have it.
fn run_scenarios(out: &Path, cfg: &Config) {
    let dataset = memform::dataset::load(&scenarios_dir()).expect("load scenarios");
    let extractor = RulesExtractor::new(cfg.max_input_chars);
    let embedder = HashedEmbedder::new(cfg.hashed_dims);
    let judge = RulesJudge::new(cfg);
    let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
    let opts =
        RunOptions { out_dir: out.to_path_buf(), tags: [("suite".to_string(), "reports".to_string())].into(), ..RunOptions::default() };
    run(&dataset, cfg, stages, &opts).expect("run");
}

fn snapshot_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshots_dir());
    settings.set_prepend_module_to_snapshot(false);
    settings
}

/// `compare.md` or `report.md` without its wall-clock section (the last one).
fn without_timings_section(md: &str) -> &str {
    md.find("## Timings").map_or(md, |i| &md[..i])
}

/// Without the row naming the git revision memform was built from (it
/// changes with every commit).
fn without_build_row(md: &str) -> String {
    md.lines().filter(|l| !l.starts_with("| memform build |")).map(|l| format!("{l}\n")).collect()
}

#[test]
fn scenarios_summary_matches_its_snapshot() {
    let dir = tempfile::tempdir().expect("tempdir");
    run_scenarios(dir.path(), &Config::default());
    let text = std::fs::read_to_string(dir.path().join("summary.json")).expect("summary.json");
    let summary = without_timings(serde_json::from_str(&text).expect("summary json"));
    snapshot_settings().bind(|| insta::assert_json_snapshot!("summary__scenarios_rules", summary));
}

#[test]
fn scenarios_report_md_matches_its_snapshot() {
    let dir = tempfile::tempdir().expect("tempdir");
    run_scenarios(dir.path(), &Config::default());
    let md = std::fs::read_to_string(dir.path().join("report.md")).expect("report.md");
    assert!(md.contains("## Timings"), "the wall-clock section is last and is what the snapshot drops");
    assert!(md.contains("| memform build | "), "{md}");
    snapshot_settings().bind(|| insta::assert_snapshot!("report__scenarios_rules", without_build_row(without_timings_section(&md))));
}

#[test]
fn scenarios_compare_md_matches_its_snapshot() {
    let root = tempfile::tempdir().expect("tempdir");
    run_scenarios(&root.path().join("runs/a"), &Config::default());
    let mut no_dedup = Config::default();
    no_dedup.set("dedup_enabled=false").expect("set");
    run_scenarios(&root.path().join("runs/b"), &no_dedup);
    let a = Side { label: "rules".into(), dir: root.path().join("runs/a") };
    let b = Side { label: "rules+dedup_enabled=false".into(), dir: root.path().join("runs/b") };
    let c = compare_runs(&a, &b, &root.path().join("out"), CompareOptions::default()).expect("compare");
    let md = render_markdown(&c);
    assert!(md.contains("## Timings"), "the wall-clock section is last and is what the snapshot drops");
    assert!(md.contains("| memform build | "), "{md}");
    snapshot_settings()
        .bind(|| insta::assert_snapshot!("compare__scenarios_rules_vs_no_dedup", without_build_row(without_timings_section(&md))));
}

#[test]
fn a_run_writes_its_reports_and_a_rerun_replaces_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    run_scenarios(dir.path(), &Config::default());
    // The previous run's report.md (run.json lists it) is replaced.
    std::fs::write(dir.path().join("report.md"), "stale").expect("write");
    run_scenarios(dir.path(), &Config::default());
    for f in
        ["report.md", "facts.parquet", "facts.csv", "episodes.parquet", "episodes.csv", "per_conversation.csv", "plot_stored_facts.svg"]
    {
        assert!(dir.path().join(f).is_file(), "{f} not written");
    }
    let md = std::fs::read_to_string(dir.path().join("report.md")).expect("report.md");
    assert!(md.starts_with("# memform run: scenarios, rules mode"), "{md}");
    let csv = std::fs::read_to_string(dir.path().join("per_conversation.csv")).expect("csv");
    let dataset = memform::dataset::load(&scenarios_dir()).expect("load");
    assert_eq!(csv.lines().count(), dataset.conversations.len() + 1, "one row per conversation");
}

fn memform(args: &[&str], cwd: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(bin()).args(args).current_dir(cwd).output().expect("spawn memform");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn compare_runs_both_sides_then_reuses_them() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir();
    let ds = ds.to_str().expect("utf-8 path");
    let args =
        ["compare", "--dataset", ds, "--modes", "rules,rules", "--set-b", "dedup_enabled=false", "--runs-dir", "runs", "--out", "cmp"];
    let (code, stdout, stderr) = memform(&args, tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr.matches("running ").count(), 2, "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).expect("compare.json on stdout");
    assert_eq!(json["b"]["label"], "rules+dedup_enabled=false");
    assert_eq!(json["b"]["config_changes"][0], "soda.dedup_enabled = false");
    assert!(tmp.path().join("cmp/compare.md").is_file());
    assert!(tmp.path().join("runs/scenarios-soda-rules/report.md").is_file());
    let first = std::fs::read_to_string(tmp.path().join("cmp/compare.md")).expect("compare.md");

    let (code, _, stderr) = memform(&args, tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr.matches("reusing ").count(), 2, "{stderr}");
    let second = std::fs::read_to_string(tmp.path().join("cmp/compare.md")).expect("compare.md");
    assert_eq!(without_timings_section(&first), without_timings_section(&second));

    let mut changed = args.to_vec();
    changed.extend(["--set", "soda.near_dup_threshold=0.9"]);
    let (code, _, stderr) = memform(&changed, tmp.path());
    assert_eq!(code, Some(2), "another comparison is not written over the first without --force: {stderr}");
    changed.push("--force");
    let (code, _, stderr) = memform(&changed, tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr.matches("running ").count(), 2, "a config change re-runs both: {stderr}");
    // Each under its own name: the first runs are kept.
    assert!(stderr.contains("into runs/scenarios-soda-rules+soda.near_dup_threshold=0.9\n"), "{stderr}");
    assert!(tmp.path().join("runs/scenarios-soda-rules/report.md").is_file());
}

#[test]
fn compare_refuses_what_it_cannot_run_before_running_anything() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir();
    let ds = ds.to_str().expect("utf-8 path");
    for (modes, message) in [
        ("rules,rules", "error: two variants are both \"rules\": give different modes or profiles, or --set-a/--set-b to vary the config"),
        ("rules", "error: compare: expected at least two variants (got 1): give two or more --modes, --profiles or --variants"),
        (
            "rules,magic",
            "error: --modes: \"magic\": expected rules, llm, gold or EXTRACT/JUDGE (extract rules|llm|gold, judge rules|llm), e.g. gold/rules",
        ),
        ("rules,gold/gold", "error: --modes: \"gold/gold\": the judge is rules or llm (gold is an extraction mode only)"),
    ] {
        let (code, stdout, stderr) = memform(&["compare", "--dataset", ds, "--modes", modes, "--runs-dir", "runs"], tmp.path());
        assert_eq!(code, Some(2), "{modes}: {stderr}");
        assert!(stdout.is_empty(), "{modes}: {stdout}");
        assert_eq!(stderr.trim(), message, "{modes}");
    }
    assert!(!tmp.path().join("runs").exists(), "nothing ran");
}

#[test]
fn compare_rules_with_llm_on_the_recorded_scenarios() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir();
    let ds = ds.to_str().expect("utf-8 path");
    let (code, stdout, stderr) = memform(
        &["compare", "--dataset", ds, "--modes", "rules,llm", "--embedder", "minilm", "--runs-dir", "runs", "--out", "cmp"],
        tmp.path(),
    );
    assert_eq!(code, Some(0), "{stderr}");
    let comparison: serde_json::Value = serde_json::from_str(&stdout).expect("compare json on stdout");
    assert!(comparison.is_object());
    let md = std::fs::read_to_string(tmp.path().join("cmp/compare.md")).expect("compare.md");
    assert!(md.contains("llm") && md.contains("rules") && md.contains("95%"), "{md}");
}

#[test]
fn compare_puts_three_variants_in_one_table_against_the_first_and_matches_runs_by_their_modes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir();
    let ds = ds.to_str().expect("utf-8 path");
    // A gold run where the rules run would go: compare must not take it for the rules run.
    let (code, _, stderr) = memform(&["run", "--dataset", ds, "--extract", "gold", "--out", "runs/scenarios-soda-rules"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let args =
        ["compare", "--dataset", ds, "--modes", "rules,gold,rules", "--set-a", "dedup_enabled=false", "--runs-dir", "runs", "--out", "cmp"];
    let (code, stdout, stderr) = memform(&args, tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr.matches("running ").count(), 3, "the gold run in the rules directory is not reused: {stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).expect("compare.json on stdout");
    assert_eq!(json["format"], "memform-compare/2");
    let labels: Vec<&str> = json["variants"].as_array().unwrap().iter().map(|v| v["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["rules+dedup_enabled=false", "gold/rules", "rules"]);
    assert_eq!(json["variants"][1]["mode"], "gold/rules");
    assert_eq!(json["variants"][1]["dir"], "../runs/scenarios-soda-gold-rules");
    let f1 = json["metrics"].as_array().unwrap().iter().find(|r| r["metric"] == "content_f1").expect("content_f1 row");
    assert_eq!(f1["values"].as_array().unwrap().len(), 3);
    assert_eq!(f1["against_first"].as_array().unwrap().len(), 2);
    // Each uplift is that pair's own two-run comparison.
    for (i, pair) in json["pairs"].as_array().unwrap().iter().enumerate() {
        let row = pair["metrics"].as_array().unwrap().iter().find(|r| r["metric"] == "content_f1").unwrap();
        assert_eq!(row["uplift"], f1["against_first"][i]["uplift"]);
        assert_eq!(row["b"], f1["values"][i + 1]);
    }
    let md = std::fs::read_to_string(tmp.path().join("cmp/compare.md")).expect("compare.md");
    assert!(md.contains("| metric | A | B | C | B − A | C − A |"), "{md}");
    assert!(md.contains("**Extraction in B was the oracle**"), "{md}");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("runs/scenarios-soda-gold-rules/run.json")).unwrap()).unwrap();
    assert_eq!((manifest["extract_mode"].as_str(), manifest["judge_mode"].as_str()), (Some("gold"), Some("rules")));
    let (code, _, stderr) = memform(&args, tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr.matches("reusing ").count(), 3, "{stderr}");
    // The same variants spelt as PROFILE:MODES reuse the same runs.
    let (code, _, stderr) = memform(
        &["compare", "--dataset", ds, "--variants", "soda:gold/rules,soda:rules", "--runs-dir", "runs", "--out", "cmp2"],
        tmp.path(),
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr.matches("reusing ").count(), 2, "{stderr}");
    let (code, _, stderr) = memform(&["compare", "--dataset", ds, "--profiles", "soda,nope", "--runs-dir", "runs"], tmp.path());
    assert_eq!(code, Some(2));
    assert!(stderr.starts_with("error: --profiles: config: profile = \"nope\": unknown profile"), "{stderr}");
}
