//! `memform calibrate`: pairs through the real stages, the curves over
//! shared fronts, the outputs, bad input. The pair files under
//! `src/tests/data/calibrate-pairs/` are test inputs written for these tests.

use std::path::{Path, PathBuf};
use std::process::Command;

use memform::calibrate::{self, Label, Outcome, Source, Split};
use memform::embed::hashed::HashedEmbedder;
use memform::pipeline::Config;
use memform::pipeline::Stages;
use memform::pipeline::extract::{GoldExtractor, RulesExtractor};
use memform::pipeline::judge::RulesJudge;

use crate::support::{bin, root};

fn pairs_dir() -> PathBuf {
    root().join("src/tests/data/calibrate-pairs")
}

fn memform(args: &[&str], cwd: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(bin()).args(args).current_dir(cwd).output().expect("spawn memform");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn options(out: &Path, grids: &[(&str, &[&str])]) -> calibrate::Options {
    calibrate::Options {
        source: Source::Pairs,
        name: "pairs-all".into(),
        out_dir: out.to_path_buf(),
        limits: calibrate::Limits::default(),
        grids: grids.iter().map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect())).collect(),
        no_curves: false,
        recorded: Default::default(),
        digests: serde_json::Value::Null,
        dataset_path: None,
        tags: Default::default(),
        lock: None,
        threads: Some(2),
    }
}

/// The gold-extraction calibration of the test pairs with `cfg`.
fn gold(cfg: &Config, grids: &[(&str, &[&str])]) -> calibrate::Calibration {
    let pairs = calibrate::input::read_pairs_dir(&pairs_dir(), Split::All).unwrap();
    let dataset = calibrate::dataset("pairs-all", "d", &pairs, false);
    let extractor = GoldExtractor::new(&dataset, cfg).unwrap();
    let embedder = HashedEmbedder::new(cfg.hashed_dims);
    let judge = memform::pipeline::profiles::by_name(&cfg.profile).unwrap().rules_judge(cfg);
    let stages = Stages { extractor: &extractor, embedder: &embedder, judge: judge.as_ref() };
    let tmp = tempfile::tempdir().unwrap();
    calibrate::compute(&pairs, &dataset, cfg, stages, &options(&tmp.path().join("o"), grids)).unwrap().0
}

#[test]
fn a_word_for_word_restatement_merges_and_the_outcomes_fill_the_matrix() {
    let cal = gold(&Config::default(), &[("near_dup_threshold", &["0.9", "0.95"])]);
    let by_id = |id: &str| cal.pairs.iter().find(|p| p.id == id).unwrap();
    // Gold extraction: each side is its observation.
    let exact = by_id("t-dup-exact");
    assert_eq!(exact.observed.first, ["Maya has a cat named Miso."]);
    assert_eq!(exact.outcome, Outcome::Merged, "{:?}", exact.observed);
    assert!(exact.observed.second_live.is_empty());
    // The matrix counts every pair once, and the rates are its ratios.
    let total: usize = cal.matrix.values().flat_map(|r| r.values()).sum();
    assert_eq!(total, 7);
    let dup = &cal.matrix[&Label::Duplicate];
    let formed_dups: usize = dup.iter().filter(|(o, _)| **o != Outcome::NotFormed).map(|(_, n)| n).sum();
    assert_eq!(cal.rates.duplicate_recall.den, formed_dups);
    assert_eq!(cal.rates.duplicate_recall.num, dup.get(&Outcome::Merged).copied().unwrap_or(0));
    let metrics = cal.metrics();
    assert_eq!(metrics["pairs_pairs"], 7);
    assert!(metrics["pairs_by_kind"]["restatement"]["pairs_duplicate_recall"].as_f64() == Some(1.0));
}

#[test]
fn a_curve_point_at_the_base_value_equals_the_base_run() {
    // Shared fronts change no value: the curve's point at the config's value
    // is the base run's rates, for every key of soda and of signet.
    for profile in ["soda", "signet"] {
        let cfg = {
            let mut c = Config::default();
            c.profile = profile.into();
            c
        };
        let cal = gold(&cfg, &[("near_dup_threshold", &["0.5", "0.85", "0.9"])]);
        assert_eq!(cal.curves.len(), calibrate::decision_keys(&cfg).len(), "{profile}");
        for c in &cal.curves {
            let at = c.points.iter().find(|p| (p.value - c.default).abs() < 1e-9).unwrap_or_else(|| panic!("{profile} {}", c.key));
            assert_eq!(at.rates, cal.rates, "{profile} {}", c.key);
        }
        // The grid given for a key is used (plus the default); for soda 0.5 is
        // refused with contradiction_band_min at 0.8 above it (the config's
        // relation holds whatever the profile), and named.
        let nd = cal.curves.iter().find(|c| c.key == "near_dup_threshold").unwrap();
        assert_eq!(nd.points.iter().map(|p| p.value).collect::<Vec<_>>(), [0.85, 0.9, 0.95], "{profile}");
        assert_eq!(nd.skipped, [0.5], "{profile}");
    }
}

#[test]
fn a_lower_near_duplicate_cut_merges_a_paraphrase_the_default_keeps() {
    // "Ravi has two dogs." / "Ravi has 2 dogs." are not exact duplicates: at a
    // low enough cut the hashed cosine calls them near duplicates. (With
    // the seed's rules: evidence of change already merges them as a
    // restatement, whatever the cut.)
    let cfg = {
        let mut c = Config::default();
        c.soda.evidence_of_change = false;
        c.soda.contradiction_band_min = 0.25;
        c
    };
    let cal = gold(&cfg, &[("near_dup_threshold", &["0.3"])]);
    let nd = cal.curves.iter().find(|c| c.key == "near_dup_threshold").unwrap();
    assert!(nd.skipped.is_empty());
    let low = &nd.points[0];
    assert_eq!(low.value, 0.3);
    assert!(low.rates.duplicate_recall.num > cal.rates.duplicate_recall.num, "{:?} vs {:?}", low.rates, cal.rates);
}

#[test]
fn rules_extraction_runs_the_turns() {
    let cfg = Config::default();
    let pairs = calibrate::input::read_pairs_dir(&pairs_dir(), Split::Test).unwrap();
    assert_eq!(pairs.len(), 3);
    let dataset = calibrate::dataset("pairs-test", "d", &pairs, false);
    let extractor = RulesExtractor::new(cfg.max_input_chars);
    let embedder = HashedEmbedder::new(cfg.hashed_dims);
    let judge = RulesJudge::new(&cfg);
    let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = options(&tmp.path().join("o"), &[]);
    opts.no_curves = true;
    let (cal, _) = calibrate::compute(&pairs, &dataset, &cfg, stages, &opts).unwrap();
    assert!(cal.curves.is_empty());
    // The first side's facts come from the turn ("I work at Google."), in the speaker's name.
    let job = cal.pairs.iter().find(|p| p.id == "s-upd-job").unwrap();
    assert!(job.observed.first.iter().any(|f| f.contains("Google")), "{:?}", job.observed);
}

#[test]
fn the_cli_writes_a_complete_calibration_that_gate_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let pairs = pairs_dir();
    let (code, stdout, stderr) = memform(
        &[
            "calibrate",
            "--pairs",
            pairs.to_str().unwrap(),
            "--extract",
            "gold",
            "--grid",
            "near_dup_threshold=0.9,0.95",
            "--grid",
            "contradiction_band_min=0.7,0.8",
            "--grid",
            "entity_merge_threshold=0.88",
            "--out",
            "cal",
        ],
        tmp.path(),
    );
    assert_eq!(code, Some(0), "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    for k in ["pairs_update_recall", "pairs_false_invalidation_rate", "pairs_duplicate_recall", "pairs_false_merge_rate"] {
        assert!(summary["metrics"][k].is_number(), "{k}: {stdout}");
    }
    let dir = tmp.path().join("cal");
    let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["complete"], true);
    assert_eq!(run["mode"], "gold/rules");
    let files: Vec<&str> = run["files"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    for f in calibrate::FILES.iter().chain(&["run.json", "curve-near_dup_threshold.svg", "curve-contradiction_band_min.svg"]) {
        assert!(files.contains(f) && dir.join(f).is_file(), "{f}: {files:?}");
    }
    let csv = std::fs::read_to_string(dir.join("calibration.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 7, "{csv}");
    assert!(csv.lines().next().unwrap().starts_with("id,split,label,kind,outcome,"));
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("Label (rows) × outcome (columns)") && report.contains("## Per kind") && report.contains("Recommended"));
    let cal = calibrate::read(&dir).unwrap();
    assert_eq!(cal.pairs.len(), 7);
    // gate reads it like any run, with rules for the pairs' metrics.
    std::fs::write(
        tmp.path().join("rules.toml"),
        "[metrics.pairs_update_recall]\ndirection = \"higher\"\nabs_tol = 0.0\n\n[metrics.pairs_false_merge_rate]\ndirection = \"lower\"\nabs_tol = 0.0\n",
    )
    .unwrap();
    let (code, _, stderr) = memform(&["gate", "--update-baseline", "--baseline", "base.json", "--run", "cal"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stdout, stderr) = memform(&["gate", "--baseline", "base.json", "--run", "cal", "--rules", "rules.toml"], tmp.path());
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("pairs_update_recall") && stdout.contains("pairs_false_merge_rate"), "{stdout}");
}

/// A calibration can be run again into its own directory: its files
/// (curve charts included) are memform's, replaced, and a chart the new one
/// does not draw is removed; a user's file of a calibration's name, with no
/// run.json listing it, still stops it.
#[test]
fn calibrate_writes_over_its_own_directory_but_not_over_a_users_file() {
    let tmp = tempfile::tempdir().unwrap();
    let pairs = pairs_dir();
    let p = pairs.to_str().unwrap();
    let (code, _, stderr) =
        memform(&["calibrate", "--pairs", p, "--extract", "gold", "--grid", "near_dup_threshold=0.9,0.95", "--out", "cal"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let dir = tmp.path().join("cal");
    assert!(dir.join("curve-near_dup_threshold.svg").is_file());
    let (code, _, stderr) = memform(&["calibrate", "--pairs", p, "--extract", "gold", "--no-curves", "--out", "cal"], tmp.path());
    assert_eq!(code, Some(0), "a second calibration into its own directory: {stderr}");
    assert!(dir.join("calibration.csv").is_file());
    assert!(!dir.join("curve-near_dup_threshold.svg").exists(), "the first calibration's chart stays behind");
    let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["complete"], true);
    // A user's file named like a calibration's, in a directory of its own.
    let user = tmp.path().join("mine");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("calibration.csv"), "my own\n").unwrap();
    let (code, _, stderr) = memform(&["calibrate", "--pairs", p, "--extract", "gold", "--no-curves", "--out", "mine"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.starts_with("error: mine/calibration.csv: not written by memform"), "{stderr}");
    assert_eq!(std::fs::read_to_string(user.join("calibration.csv")).unwrap(), "my own\n");
}

#[test]
fn bad_pair_input_is_one_line_naming_file_line_and_field_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("p");
    std::fs::create_dir_all(&d).unwrap();
    let good = std::fs::read_to_string(pairs_dir().join("test.jsonl")).unwrap();
    let first = good.lines().next().unwrap();
    std::fs::write(d.join("test.jsonl"), format!("{first}\n{}\n", first.replace("\"duplicate\"", "\"same\""))).unwrap();
    let (code, _, stderr) = memform(&["calibrate", "--pairs", "p", "--split", "test", "--out", "o"], tmp.path());
    assert_eq!(code, Some(2));
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].starts_with("error: ") && lines[0].contains("test.jsonl: line 2: label: unknown variant `same`"), "{stderr}");
    std::fs::write(
        tmp.path().join("s.txt"),
        "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n1\ta\tb\t9\tNEUTRAL\n",
    )
    .unwrap();
    let (code, _, stderr) = memform(&["calibrate", "--sick", "s.txt", "--out", "o"], tmp.path());
    assert_eq!(code, Some(2));
    assert_eq!(stderr.trim(), "error: s.txt: line 2: relatedness_score: 9 is outside 1..5");
    let (code, _, stderr) = memform(&["calibrate", "--pairs", "p", "--max-false-merge", "2", "--out", "o"], tmp.path());
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--max-false-merge") && stderr.contains("not within 0..=1"), "{stderr}");
    // A grid over a key the profile's decisions never read is refused.
    let (code, _, stderr) =
        memform(&["calibrate", "--pairs", &pairs_dir().to_string_lossy(), "--grid", "memorix_high_min=0.5", "--out", "o"], tmp.path());
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--grid memorix_high_min: not a threshold the soda profile's decisions read"), "{stderr}");
}

#[test]
fn sick_and_msrp_run_through_the_same_stages() {
    // Test inputs in the published layouts (not corpus text).
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("sick.txt"),
        "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n\
         1\tI work at a bakery\tI do not work at a bakery\t4.0\tCONTRADICTION\n\
         2\tI have a red car\tI have a red car\t5.0\tENTAILMENT\n",
    )
    .unwrap();
    let mut msrp = vec![0xEF, 0xBB, 0xBF];
    msrp.extend_from_slice(b"Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\r\n1\t1\t2\tI love green tea.\tI love green tea.\r\n");
    std::fs::write(tmp.path().join("msr.tsv"), msrp).unwrap();
    let (code, stdout, stderr) =
        memform(&["calibrate", "--sick", "sick.txt", "--extract", "gold", "--no-curves", "--out", "s"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["metrics"]["sick_pairs"], 2);
    assert!(v["metrics"]["sick_confusion"]["entailment"].is_object(), "{stdout}");
    let (code, stdout, stderr) = memform(&["calibrate", "--msrp", "msr.tsv", "--extract", "gold", "--no-curves", "--out", "m"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    // A word-for-word paraphrase is an exact duplicate: merged.
    assert_eq!(v["metrics"]["msrp_merge_recall"], 1.0, "{stdout}");
    assert_eq!(v["metrics"]["msrp_merge_precision"], 1.0, "{stdout}");
}

#[test]
fn a_gold_run_lists_every_ended_fact_with_both_texts_and_takes_a_calibration_section() {
    let tmp = tempfile::tempdir().unwrap();
    let pairs = pairs_dir();
    let (code, _, stderr) =
        memform(&["calibrate", "--pairs", pairs.to_str().unwrap(), "--extract", "gold", "--no-curves", "--out", "cal"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let ds = crate::support::scenarios_dir();
    let (code, _, stderr) = memform(
        &["run", "--dataset", ds.to_str().unwrap(), "--extract", "gold", "--no-qa", "--calibration", "cal", "--out", "run"],
        tmp.path(),
    );
    assert_eq!(code, Some(0), "{stderr}");
    let report = std::fs::read_to_string(tmp.path().join("run/report.md")).unwrap();
    // Every (candidate, ended fact) of facts.jsonl is a row, with both contents.
    let facts: Vec<serde_json::Value> =
        std::fs::read_to_string(tmp.path().join("run/facts.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let content = |id: &str| facts.iter().find(|f| f["id"] == id).map(|f| f["content"].as_str().unwrap().to_string()).unwrap();
    let section = report.split("### Every fact ended, with both texts").nth(1).expect("the section").split("\n## ").next().unwrap();
    let mut ended = 0;
    for f in &facts {
        for e in f["ended"].as_array().unwrap() {
            ended += 1;
            let row = format!(
                "{}: «{}» | {}: «{}»",
                e.as_str().unwrap(),
                content(e.as_str().unwrap()),
                f["id"].as_str().unwrap(),
                f["content"].as_str().unwrap()
            );
            assert!(section.contains(&row), "{row}\n{section}");
        }
    }
    assert!(ended > 0, "the scenarios end facts");
    assert!(section.contains(&format!("each of these {ended} should be a real change")), "{section}");
    // The calibration's section, linking its report.
    assert!(report.contains("## Decision quality") && report.contains("](../cal/report.md)"), "{report}");
    // `memform report` redraws it only when given the calibration again.
    let (code, _, stderr) = memform(&["report", "run"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!std::fs::read_to_string(tmp.path().join("run/report.md")).unwrap().contains("## Decision quality"));
    let (code, _, stderr) = memform(&["report", "run", "--calibration", "cal"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(std::fs::read_to_string(tmp.path().join("run/report.md")).unwrap().contains("## Decision quality"));
}

#[test]
fn compare_calibrates_each_variant_and_adds_decision_quality() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = crate::support::scenarios_dir();
    let pairs = pairs_dir();
    let (code, _, stderr) = memform(
        &[
            "compare",
            "--dataset",
            ds.to_str().unwrap(),
            "--modes",
            "rules,gold/rules",
            "--calibrate",
            "--calibrate-pairs",
            pairs.to_str().unwrap(),
            "--calibrate-split",
            "all",
            "--resamples",
            "0",
            "--runs-dir",
            "runs",
            "--out",
            "cmp",
        ],
        tmp.path(),
    );
    assert_eq!(code, Some(0), "{stderr}");
    let md = std::fs::read_to_string(tmp.path().join("cmp/compare.md")).unwrap();
    let section = md.split("## Decision quality").nth(1).expect("the section");
    assert!(section.contains("`pairs_update_recall` (higher is better)") && section.contains("`pairs_false_merge_rate` (lower is better)"));
    // One calibration per variant, each a complete run directory.
    for label in ["soda-rules", "soda-gold-rules"] {
        let cal = calibrate::read(&tmp.path().join(format!("runs/calibrate-pairs-all-{label}"))).unwrap();
        assert_eq!(cal.pairs.len(), 7);
        assert!(cal.curves.is_empty());
    }
}
