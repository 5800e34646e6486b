//! The CLI's error messages and exit codes on bad input, as snapshots.
//! Each case writes a small bad dataset or config into a temporary directory.

use std::path::Path;
use std::process::Command;

use crate::support::{FAULT_OPT_IN, bin, scenarios_dir, snapshots_dir};

fn memform(args: &[&str], cwd: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(bin()).args(args).current_dir(cwd).output().expect("spawn memform");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn native(dir: &Path, name: &str, body: &str) {
    let conv = dir.join("conversations");
    std::fs::create_dir_all(&conv).expect("mkdir");
    std::fs::write(conv.join(name), body).expect("write");
}

const GOOD: &str = r#"{"format": "memform-conversation/1", "id": "ok", "speakers": ["Ann"],
 "episodes": [{"id": "e1", "timestamp": "2024-01-01T10:00:00",
   "turns": [{"id": "t1", "speaker": "Ann", "text": "I work at Google."}]}]}"#;

fn case(name: &str, setup: impl FnOnce(&Path), args: &[&str]) -> String {
    let tmp = tempfile::tempdir().expect("tempdir");
    setup(tmp.path());
    let (code, _stdout, stderr) = memform(args, tmp.path());
    let stderr: Vec<&str> = stderr.lines().filter(|l| !l.starts_with("wrote ")).collect();
    format!("## {name}\nexit: {code:?}\n{}\n", stderr.join("\n"))
}

#[test]
fn bad_input_errors_and_exit_codes() {
    let mut all = String::new();
    all += &case(
        "malformed json",
        |d| native(&d.join("ds"), "a.json", "{\"format\": \"memform-conversation/1\", \"id\": "),
        &["run", "--dataset", "ds", "--out", "o"],
    );
    all += &case(
        "missing field",
        |d| {
            native(
                &d.join("ds"),
                "a.json",
                r#"{"format": "memform-conversation/1", "id": "x", "speakers": ["A"], "episodes": [{"id": "e1", "turns": [{"id": "t1", "text": "hi"}]}]}"#,
            )
        },
        &["run", "--dataset", "ds", "--out", "o"],
    );
    all += &case(
        "wrong type",
        |d| native(&d.join("ds"), "a.json", r#"{"format": "memform-conversation/1", "id": "x", "speakers": "A", "episodes": []}"#),
        &["run", "--dataset", "ds", "--out", "o"],
    );
    all += &case(
        "unknown format",
        |d| {
            std::fs::create_dir_all(d.join("ds")).expect("mkdir");
            std::fs::write(d.join("ds/notes.txt"), "hello").expect("write");
        },
        &["run", "--dataset", "ds", "--out", "o"],
    );
    all += &case("missing directory", |_| {}, &["run", "--dataset", "nope", "--out", "o"]);
    all +=
        &case("bad --set key", |d| native(&d.join("ds"), "ok.json", GOOD), &["run", "--dataset", "ds", "--set", "bogus=1", "--out", "o"]);
    all += &case(
        "bad --set value",
        |d| native(&d.join("ds"), "ok.json", GOOD),
        &["run", "--dataset", "ds", "--set", "near_dup_threshold=high", "--out", "o"],
    );
    all += &case(
        "bad config file",
        |d| {
            native(&d.join("ds"), "ok.json", GOOD);
            std::fs::write(d.join("c.toml"), "near_dup_threshold = 0.9\nmax_facts = \"many\"\n").expect("write");
        },
        &["run", "--dataset", "ds", "--config", "c.toml", "--out", "o"],
    );
    all += &case(
        "bad write mode",
        |d| native(&d.join("ds"), "ok.json", GOOD),
        &["run", "--dataset", "ds", "--write-mode", "yolo", "--out", "o"],
    );
    all += &case(
        "keep going over a bad conversation",
        |d| {
            native(&d.join("ds"), "ok.json", GOOD);
            native(&d.join("ds"), "b.json", "[1, 2");
        },
        &["run", "--dataset", "ds", "--keep-going", "--out", "o"],
    );
    all += &case(
        "gold extraction without gold facts",
        |d| native(&d.join("ds"), "ok.json", GOOD),
        &["run", "--dataset", "ds", "--extract", "gold", "--out", "o"],
    );
    all += &case(
        "unknown per-stage mode",
        |d| native(&d.join("ds"), "ok.json", GOOD),
        &["compare", "--dataset", "ds", "--modes", "rules,gold/gold"],
    );
    all += &case("good run", |d| native(&d.join("ds"), "ok.json", GOOD), &["run", "--dataset", "ds", "--out", "o"]);
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshots_dir());
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("cli_errors", all));
}

#[test]
fn keep_going_keeps_the_good_conversation() {
    let tmp = tempfile::tempdir().expect("tempdir");
    native(&tmp.path().join("ds"), "ok.json", GOOD);
    native(&tmp.path().join("ds"), "b.json", "[1, 2");
    let (code, stdout, _) = memform(&["run", "--dataset", "ds", "--keep-going", "--out", "o"], tmp.path());
    assert_eq!(code, Some(2));
    let summary: serde_json::Value = serde_json::from_str(&stdout).expect("summary on stdout");
    assert_eq!(summary["metrics"]["skipped_conversations"], 1);
    assert_eq!(summary["metrics"]["episodes"], 1);
    assert!(tmp.path().join("o/store.sqlite").exists());
}

#[test]
fn run_prints_summary_json_with_required_keys() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (code, stdout, stderr) = memform(&["run", "--dataset", &scenarios_dir().display().to_string(), "--out", "o"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&stdout).expect("summary json on stdout");
    for key in [
        "episodes",
        "turns",
        "candidates",
        "stored_facts",
        "fact_density",
        "dedup_rate",
        "noise_rejection_rate",
        "entity_coherence",
        "invalidations",
        "warnings",
        "turn_precision",
        "turn_recall",
        "turn_f1",
        "baseline_all_turns_precision",
        "baseline_all_turns_recall",
        "baseline_all_turns_f1",
    ] {
        assert!(summary["metrics"].get(key).is_some(), "summary lacks {key}");
    }
    for f in ["run.json", "summary.json", "facts.jsonl", "episodes.jsonl", "store.sqlite"] {
        assert!(tmp.path().join("o").join(f).exists(), "missing {f}");
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("o/run.json")).expect("run.json")).expect("json");
    assert_eq!(manifest["config"]["soda"]["near_dup_threshold"], 0.95);
    assert_eq!(manifest["dataset"]["digest"].as_str().map(str::len), Some(64));
}

#[test]
fn minilm_replay_needs_no_model_and_a_miss_names_the_record_command() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let scenarios = scenarios_dir().display().to_string();
    // The working directory is empty: models/all-MiniLM-L6-v2 is not there to load.
    let args = ["run", "--dataset", &scenarios, "--embedder", "minilm", "--out", "o"];
    let (code, _, stderr) = memform(&args, tmp.path());
    assert!(!tmp.path().join("models").exists());
    assert_eq!(code, Some(0), "recorded vectors replay without the model: {stderr}");
    assert!(stderr.contains("0 recorded"), "{stderr}");
    let manifest = std::fs::read_to_string(tmp.path().join("o/run.json")).expect("run.json");
    assert!(manifest.contains("\"embedder\": \"minilm:"), "{manifest}");

    native(&tmp.path().join("ds"), "ok.json", GOOD);
    let (code, _, stderr) = memform(&["run", "--dataset", "ds", "--embedder", "minilm", "--out", "o2"], tmp.path());
    assert_eq!(code, Some(2));
    assert!(stderr.contains("no recorded vector") && stderr.contains("--embed record"), "{stderr}");
    assert_eq!(stderr.lines().filter(|l| l.starts_with("error:")).count(), 1, "{stderr}");
}

/// Runs memform in `cwd`, expects exit 2 with exactly one `error:` line and
/// no panic, and returns that line.
fn refused(args: &[&str], cwd: &Path) -> String {
    let (code, _stdout, stderr) = memform(args, cwd);
    assert_eq!(code, Some(2), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{args:?}: one error line: {stderr}");
    errors[0].to_string()
}

fn good_dataset() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    native(&tmp.path().join("ds"), "ok.json", GOOD);
    tmp
}

#[test]
fn numeric_knobs_out_of_range_exit_2_naming_the_key_and_range() {
    let tmp = good_dataset();
    let d = tmp.path();
    let run = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["run", "--dataset", "ds", "--out", "o"].iter().map(|s| s.to_string()).collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (run(&["--set", "hashed_dims=4000000000"]), "hashed_dims = 4000000000: must be within 1..=8192"),
        (run(&["--mode", "llm", "--set", "llm_timeout_secs=1e300"]), "llm_timeout_secs = 1e300: must be within [0.1, 3600.0]"),
        (run(&["--set", "llm_max_retries=200"]), "llm_max_retries = 200: must be within 0..=10"),
        (run(&["--threads", "100000"]), "--threads <THREADS>': 100000 is not in 1..=1024"),
        (run(&["--threads", "0"]), "0 is not in 1..=1024"),
        (run(&["--set", "entity_merge_threshold=-0.5"]), "entity_merge_threshold = -0.5: must be within [0.0, 1.0]"),
        (run(&["--set", "value_contextual_min=0.9"]), "value_contextual_min = 0.9 is above value_core_min = 0.7"),
        (run(&["--set", "min_fact_chars=3000"]), "min_fact_chars = 3000 is above max_fact_chars = 2000"),
        (run(&["--set", r#"multi_valued_predicates=["lives in"]"#]), r#"predicate "lives in" is in both"#),
        (
            ["compare", "--dataset", "ds", "--modes", "rules,rules", "--set-b", "near_dup_threshold=0.9", "--resamples", "1000000000"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            "1000000000 is not in 0..=100000",
        ),
    ];
    for (args, want) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let line = refused(&args, d);
        assert!(line.contains(want), "{args:?}: {line}");
    }
    assert!(!d.join("o").exists(), "nothing written by a refused run");

    std::fs::write(d.join("c.toml"), "max_facts = 5\nnear_dup_threshold = nan\n").expect("write");
    let line = refused(&["run", "--dataset", "ds", "--config", "c.toml", "--out", "o"], d);
    assert!(line.contains("c.toml: line 2: soda.near_dup_threshold = NaN: must be within [0.0, 1.0]"), "{line}");

    std::fs::write(d.join("rules.toml"), "[metrics.turn_f1]\ndirection = \"higher\"\nabs_tol = nan\n").expect("write");
    let (code, _, stderr) = memform(&["run", "--dataset", "ds", "--out", "o"], d);
    assert_eq!(code, Some(0), "{stderr}");
    let line = refused(&["gate", "--baseline", "b.json", "--run", "o", "--rules", "rules.toml"], d);
    assert!(line.contains("rules.toml: metrics.turn_f1.abs_tol = NaN: must be within"), "{line}");
}

#[test]
fn sweep_refuses_big_grids_bad_metrics_and_doubled_keys_before_running() {
    let tmp = good_dataset();
    let d = tmp.path();
    let sweep = |extra: &[&str]| -> String {
        let mut a = vec!["sweep", "--dataset", "ds", "--out", "sw"];
        a.extend(extra);
        refused(&a, d)
    };
    let line = sweep(&["--grid", "near_dup_threshold=0:0.9999:0.0001", "--grid", "entity_merge_threshold=0:0.9999:0.0001"]);
    assert!(line.contains("100000000 points (10000 × 10000) is more than --max-points 10000"), "{line}");
    let line = sweep(&["--grid", "near_dup_threshold=0.9,0.95", "--max-points", "1"]);
    assert!(line.contains("2 points (2) is more than --max-points 1"), "{line}");
    let line = sweep(&["--grid", "near_dup_threshold=0.9", "--objective", "bogus"]);
    assert!(line.contains(r#"--objective "bogus": not a metric"#) && line.contains("turn_f1") && line.contains("stored_facts"), "{line}");
    let line = sweep(&["--grid", "near_dup_threshold=0.9", "--pareto", "foo,bar"]);
    assert!(line.contains(r#"--pareto "foo": not a metric"#) && line.contains("content_recall"), "{line}");
    let line = sweep(&["--grid", "near_dup_threshold=0.9", "--grid", "near_dup_threshold=0.95"]);
    assert!(line.contains("--grid near_dup_threshold: the key is given twice"), "{line}");
    let line = sweep(&["--grid", "bogus=1,2"]);
    assert!(line.contains("--grid bogus: unknown config key") && !line.contains("--set"), "{line}");
    let line = sweep(&["--grid", "near_dup_threshold=0.9", "--threads", "0"]);
    assert!(line.contains("0 is not in 1..=1024"), "{line}");
    assert!(!d.join("sw").exists());

    let (code, _, stderr) = memform(&["sweep", "--dataset", "ds", "--out", "sw", "--grid", "near_dup_threshold=0.9,0.95,0.99"], d);
    assert_eq!(code, Some(0), "{stderr}");
    let estimate = stderr.lines().find(|l| l.starts_with("sweep: 3 points; the front pass took ")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(estimate.contains(" more on ") && estimate.contains("thread(s)"), "{estimate}");
}

#[test]
fn out_inside_the_dataset_or_a_file_is_refused_and_the_dataset_stays_loadable() {
    let tmp = good_dataset();
    let d = tmp.path();
    for out in ["ds", "ds/conversations", "ds/sub/run", "./ds/../ds/x"] {
        let line = refused(&["run", "--dataset", "ds", "--out", out], d);
        assert!(line.contains(&format!("--out {out}: is ")) && line.contains("the dataset directory ds"), "{line}");
    }
    let line =
        refused(&["compare", "--dataset", "ds", "--modes", "rules,rules", "--set-b", "near_dup_threshold=0.9", "--out", "ds/cmp"], d);
    assert!(line.contains("--out ds/cmp: is inside the dataset directory"), "{line}");
    let line =
        refused(&["compare", "--dataset", "ds", "--modes", "rules,rules", "--set-b", "near_dup_threshold=0.9", "--runs-dir", "ds"], d);
    assert!(line.contains("--runs-dir ds: is the dataset directory"), "{line}");
    let line = refused(&["sweep", "--dataset", "ds", "--grid", "near_dup_threshold=0.9", "--out", "ds/conversations"], d);
    assert!(line.contains("--out ds/conversations: is inside the dataset directory"), "{line}");
    std::fs::write(d.join("afile"), "x").expect("write");
    let line = refused(&["run", "--dataset", "ds", "--out", "afile"], d);
    assert!(line.contains("--out afile: exists and is not a directory") && !line.contains("File exists"), "{line}");
    assert_eq!(std::fs::read_dir(d.join("ds/conversations")).expect("ls").count(), 1, "nothing written into the dataset");
    let (code, _, stderr) = memform(&["run", "--dataset", "ds", "--out", "o"], d);
    assert_eq!(code, Some(0), "the dataset still loads: {stderr}");
}

#[cfg(unix)]
#[test]
fn dangling_links_loops_and_directories_among_conversations_are_never_silent() {
    use std::os::unix::fs::symlink;
    type Setup = (&'static str, fn(&Path));
    let setups: [Setup; 3] = [
        ("gone.json: dangling symbolic link", |c| symlink(c.join("nowhere.json"), c.join("gone.json")).expect("link")),
        ("a.json: symbolic link loop", |c| {
            symlink(c.join("b.json"), c.join("a.json")).expect("link");
            symlink(c.join("a.json"), c.join("b.json")).expect("link");
        }),
        ("x.json: is a directory", |c| std::fs::create_dir(c.join("x.json")).expect("mkdir")),
    ];
    for (want, setup) in setups {
        let tmp = good_dataset();
        let d = tmp.path();
        setup(&d.join("ds/conversations"));
        let line = refused(&["run", "--dataset", "ds", "--out", "o"], d);
        assert!(line.contains(want), "{line}");
        let (code, stdout, stderr) = memform(&["run", "--dataset", "ds", "--out", "k", "--keep-going"], d);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("error: skipped conversation") && stderr.contains(want), "{stderr}");
        let summary: serde_json::Value = serde_json::from_str(&stdout).expect("summary");
        assert!(summary["metrics"]["skipped_conversations"].as_u64() >= Some(1), "{summary}");
        assert_eq!(summary["metrics"]["episodes"], 1);
    }
}

#[test]
fn a_byte_order_mark_is_named_with_the_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    native(&tmp.path().join("ds"), "bom.json", &format!("\u{feff}{GOOD}"));
    let line = refused(&["run", "--dataset", "ds", "--out", "o"], tmp.path());
    assert!(line.contains("ds/conversations/bom.json: line 1 column 1: starts with a UTF-8 byte-order mark"), "{line}");
}

#[test]
fn usage_errors_are_one_line_then_the_usage_hint() {
    let tmp = good_dataset();
    for (args, want) in [
        (vec!["run", "--dataset", "ds", "--bogus"], "unexpected argument '--bogus' found"),
        (vec!["run"], "the following required arguments were not provided: --dataset <DATASET>"),
        (vec!["run", "--dataset", "ds", "--mode", "magic"], "invalid value 'magic' for '--mode <MODE>'"),
    ] {
        let (code, _, stderr) = memform(&args, tmp.path());
        assert_eq!(code, Some(2), "{stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert!(lines[0].starts_with("error: ") && lines[0].contains(want), "{stderr}");
        assert!(lines.len() >= 2, "the hint follows: {stderr}");
        assert!(lines[1..].iter().all(|l| l.starts_with("Usage: memform run") || l.starts_with("For more information")), "{stderr}");
    }
    let (code, stdout, _) = memform(&["--version"], tmp.path());
    assert_eq!((code, stdout.starts_with("memform ")), (Some(0), true));
}

#[test]
fn config_prints_every_numeric_key_with_its_range() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (code, stdout, _) = memform(&["config"], tmp.path());
    assert_eq!(code, Some(0));
    for line in ["hashed_dims = 256  # 1..=8192", "llm_max_retries = 2  # 0..=10", "max_pairs_per_candidate = 16  # 1..=1000"] {
        assert!(stdout.lines().any(|l| l == line), "{line} in {stdout}");
    }
    let parsed: memform::pipeline::Config = toml::from_str(&stdout).expect("the output is TOML");
    assert_eq!(parsed, memform::pipeline::Config::default());
}

#[test]
fn config_per_profile_prints_the_shared_keys_and_that_section_only() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (code, stdout, _) = memform(&["config", "--profile", "memorix"], tmp.path());
    assert_eq!(code, Some(0));
    assert!(stdout.contains("[memorix]") && stdout.contains("high_min = 0.75  # [0.0, 1.0]"), "{stdout}");
    assert!(!stdout.contains("[soda]") && !stdout.contains("[signet]"), "{stdout}");
    assert!(stdout.lines().any(|l| l == "hashed_dims = 256  # 1..=8192"), "{stdout}");
    let (code, _, stderr) = memform(&["config", "--profile", "nope"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("unknown profile"), "{stderr}");
}

#[test]
fn a_flat_config_of_before_sections_still_runs_with_a_deprecation_warning() {
    let tmp = good_dataset();
    let d = tmp.path();
    std::fs::write(
        d.join("flat.toml"),
        "near_dup_threshold = 0.9
memorix_high_min = 0.8
",
    )
    .expect("write");
    std::fs::write(
        d.join("sections.toml"),
        "[soda]
near_dup_threshold = 0.9
[signet]
near_dup_threshold = 0.9
[memorix]
high_min = 0.8
",
    )
    .expect("write");
    let (code, _, flat_err) = memform(&["run", "--dataset", "ds", "--config", "flat.toml", "--out", "flat"], d);
    assert_eq!(code, Some(0), "{flat_err}");
    assert!(
        flat_err
            .contains("warning: config key near_dup_threshold is deprecated: write soda.near_dup_threshold and signet.near_dup_threshold"),
        "{flat_err}"
    );
    assert!(flat_err.contains("warning: config key memorix_high_min is deprecated: write memorix.high_min"), "{flat_err}");
    // The memorix key is in a section soda never reads: said so, naming the profile that does.
    assert!(flat_err.contains("warning: config key memorix.high_min is read by profile memorix, not soda: it is ignored"), "{flat_err}");
    let (code, _, new_err) = memform(&["run", "--dataset", "ds", "--config", "sections.toml", "--out", "sections"], d);
    assert_eq!(code, Some(0), "{new_err}");
    assert!(!new_err.contains("deprecated"), "{new_err}");
    let config = |dir: &str| -> serde_json::Value {
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join(dir).join("run.json")).expect("read")).expect("json");
        m["config"].clone()
    };
    assert_eq!(config("flat"), config("sections"), "both spellings give one config");
    assert_eq!(config("flat")["soda"]["near_dup_threshold"], 0.9);
    let same = |dir: &str| std::fs::read_to_string(d.join(dir).join("facts.jsonl")).expect("read");
    assert_eq!(same("flat"), same("sections"));
    let line = refused(&["run", "--dataset", "ds", "--set", "soda.near_dup_treshold=0.9", "--out", "typo"], d);
    assert!(line.contains("soda.near_dup_treshold: unknown config key (did you mean soda.near_dup_threshold?)"), "{line}");
}

#[test]
fn update_baseline_keeps_the_dataset_and_the_other_modes_and_force_drops_them() {
    let tmp = good_dataset();
    let d = tmp.path();
    native(&d.join("other"), "ok.json", &GOOD.replace("Google", "Acme"));
    for (ds, out, mode) in [("ds", "r", "rules"), ("other", "x", "rules")] {
        let (code, _, stderr) = memform(&["run", "--dataset", ds, "--mode", mode, "--out", out], d);
        assert_eq!(code, Some(0), "{stderr}");
    }
    let (code, _, stderr) = memform(&["gate", "--update-baseline", "--baseline", "b.json", "--run", "r"], d);
    assert_eq!(code, Some(0), "{stderr}");
    // A second mode under the same dataset, written by hand from the first.
    let mut b: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("b.json")).expect("read")).expect("json");
    b["modes"]["llm"] = b["modes"]["rules"].clone();
    std::fs::write(d.join("b.json"), serde_json::to_string_pretty(&b).expect("ser")).expect("write");
    let before = std::fs::read_to_string(d.join("b.json")).expect("read");

    let line = refused(&["gate", "--update-baseline", "--baseline", "b.json", "--run", "x"], d);
    assert!(line.contains("b.json: dataset.digest: the baseline is of ds") && line.contains("--force"), "{line}");
    assert_eq!(std::fs::read_to_string(d.join("b.json")).expect("read"), before, "a refused update changes nothing");

    let (code, _, stderr) = memform(&["gate", "--update-baseline", "--force", "--baseline", "b.json", "--run", "x"], d);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("dropped mode(s) llm: their numbers were of the old dataset"), "{stderr}");
    let after: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("b.json")).expect("read")).expect("json");
    assert_eq!(after["dataset"]["name"], "other");
    assert!(after["modes"].get("llm").is_none(), "ds's llm numbers do not stand under other's name: {after}");
    assert_eq!(after["modes"].as_object().map(|m| m.len()), Some(1));
    let line = refused(&["gate", "--force", "--baseline", "b.json", "--run", "x"], d);
    assert!(line.contains("--update-baseline"), "{line}");
}

/// `memform ARGS` with arguments as raw bytes (any, not only UTF-8), in `cwd`.
#[cfg(unix)]
fn memform_os(args: &[&[u8]], cwd: &Path) -> (Option<i32>, String, String) {
    use std::os::unix::ffi::OsStrExt;
    let out =
        Command::new(bin()).args(args.iter().map(|a| std::ffi::OsStr::from_bytes(a))).current_dir(cwd).output().expect("spawn memform");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Paths are bytes on Unix: `run`, `sweep`, `compare` and `report` work
/// with directories whose names are not UTF-8 (the lock file records the
/// command line with the bytes escaped); a flag whose value must be text
/// refuses such bytes in one line, exit 2.
#[cfg(unix)]
#[test]
fn non_utf8_arguments_work_where_paths_are_bytes_and_exit_2_where_text_is_needed() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().expect("tempdir");
    let ds = scenarios_dir();
    let ds = ds.as_os_str().as_bytes();
    let (code, stdout, stderr) = memform_os(&[b"run", b"--dataset", ds, b"--out", b"o/bad\xffname"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("\"metrics\""), "{stdout}");
    let out = tmp.path().join(std::ffi::OsStr::from_bytes(b"o/bad\xffname"));
    assert!(out.join("run.json").is_file() && out.join("report.md").is_file());
    let (code, _, stderr) = memform_os(&[b"report", b"o/bad\xffname"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");

    // The dataset itself under a non-UTF-8 name.
    let copy = tmp.path().join(std::ffi::OsStr::from_bytes(b"ds\xfe"));
    std::fs::create_dir_all(copy.join("conversations")).expect("mkdir");
    std::fs::write(copy.join("conversations/ok.json"), GOOD).expect("write");
    let (code, _, stderr) = memform_os(&[b"run", b"--dataset", b"ds\xfe", b"--out", b"o2\xfe"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");

    let (code, _, stderr) =
        memform_os(&[b"sweep", b"--dataset", ds, b"--grid", b"near_dup_threshold=0.9,0.95", b"--out", b"s\xff"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(tmp.path().join(std::ffi::OsStr::from_bytes(b"s\xff/sweep.md")).is_file());
    let (code, _, stderr) = memform_os(
        &[
            b"compare",
            b"--dataset",
            ds,
            b"--modes",
            b"rules,rules",
            b"--set-b",
            b"dedup_enabled=false",
            b"--runs-dir",
            b"r\xff",
            b"--out",
            b"c\xff",
        ],
        tmp.path(),
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(tmp.path().join(std::ffi::OsStr::from_bytes(b"c\xff/compare.md")).is_file());

    // A value that must be text: one line, exit 2, no panic.
    let (code, stdout, stderr) = memform_os(&[b"run", b"--dataset", ds, b"--set", b"near_dup_threshold=\xff", b"--out", b"o3"], tmp.path());
    assert_eq!((code, stdout.as_str()), (Some(2), ""), "{stderr}");
    assert!(stderr.starts_with("error: ") && stderr.contains("invalid UTF-8"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// The lock file records the command line; a non-UTF-8 argument is kept
/// with its bytes escaped, so the holder is still named.
#[cfg(unix)]
#[test]
fn the_lock_file_records_a_non_utf8_command_line_escaped() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().expect("tempdir");
    let go = tmp.path().join("go");
    let child = Command::new(bin())
        .args(["run", "--dataset"])
        .arg(scenarios_dir())
        .arg("--out")
        .arg(std::ffi::OsStr::from_bytes(b"o\xff"))
        .env("MEMFORM_FAULT_HOLD_UNTIL", &go)
        .env(FAULT_OPT_IN.0, FAULT_OPT_IN.1)
        .current_dir(tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let lock = tmp.path().join(std::ffi::OsStr::from_bytes(b"o\xff/.memform.lock"));
    let since = std::time::Instant::now();
    let text = loop {
        let text = std::fs::read_to_string(&lock).unwrap_or_default();
        if !text.is_empty() || since.elapsed().as_secs() > 60 {
            break text;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    std::fs::write(&go, "").expect("go");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let holder: serde_json::Value = serde_json::from_str(&text).expect("the lock file is JSON");
    let command = holder["command"].as_str().expect("command");
    assert!(command.ends_with(r#"--out "o\xFF""#), "{command}");
}

/// `--out` may not be the directory holding a single-file dataset: that
/// directory is a dataset too (each `*.json` in it a conversation), and a
/// run's `run.json` there would break it.
#[test]
fn out_beside_a_single_file_dataset_is_refused_and_its_directory_stays_loadable() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = tmp.path().join("d");
    std::fs::create_dir_all(&d).expect("mkdir");
    let conversation = serde_json::json!({
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bo, I started working at Acme last week."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Congratulations! I adopted a cat named Pixel."}
            ]
        },
        "qa": [{"question": "Where does Ann work?", "answer": "Acme", "evidence": ["D1:1"], "category": 1}]
    });
    std::fs::write(d.join("conv-1.json"), conversation.to_string()).expect("write");
    memform::dataset::load(&d).expect("the directory loads as a dataset");
    for out in ["d", "./d", "d/../d"] {
        let line = refused(&["run", "--dataset", "d/conv-1.json", "--out", out], tmp.path());
        assert!(line.starts_with(&format!("error: --out {out}: is the directory holding the dataset file d/conv-1.json")), "{line}");
    }
    assert_eq!(std::fs::read_dir(&d).expect("ls").count(), 1, "nothing written beside the dataset file");
    memform::dataset::load(&d).expect("the directory still loads as a dataset");
    let (code, _, stderr) = memform(&["run", "--dataset", "d/conv-1.json", "--out", "o"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
}
