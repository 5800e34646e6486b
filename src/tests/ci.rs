//! The gate's outputs for CI systems, read by independent consumers: its
//! JUnit XML parsed by junitparser (PyPI), its GitHub annotations as a
//! snapshot, its step summary appended to `GITHUB_STEP_SUMMARY`; and
//! docs/ci.md's workflows parsed by PyYAML, naming only make targets and
//! memform flags that exist. The Python packages come from `make
//! test-py-deps` (part of `make test`) in the git-ignored `.venv/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{bin, root, scenarios_dir, snapshots_dir};

fn memform_env(args: &[&str], cwd: &Path, env: &[(&str, &Path)]) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(bin());
    cmd.args(args).current_dir(cwd).env_remove("GITHUB_STEP_SUMMARY");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("spawn memform");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn memform(args: &[&str], cwd: &Path) -> (Option<i32>, String, String) {
    memform_env(args, cwd, &[])
}

/// The test venv's Python (`make test-py-deps`).
fn python() -> PathBuf {
    let p = root().join(".venv/bin/python");
    assert!(p.exists(), "{} is missing: run `make test-py-deps` (make test does)", p.display());
    p
}

/// Runs `script` with the test venv's Python; its stdout is JSON.
fn py_json(script: &str, args: &[&Path]) -> serde_json::Value {
    let out = Command::new(python()).arg("-c").arg(script).args(args).output().expect("run python");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "python failed: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("python printed no JSON ({e}): {stderr}"))
}

/// A tmp dir with the baseline (as `baseline.json`) and two runs of the
/// scenarios: `same` (the baseline's config) and `worse` (dedup off).
fn two_runs() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::copy(root().join("reports/baseline.json"), tmp.path().join("baseline.json")).expect("copy baseline");
    let scenarios = scenarios_dir().display().to_string();
    for (out, extra) in [("same", None), ("worse", Some("dedup_enabled=false"))] {
        let mut args = vec!["run", "--dataset", &scenarios, "--mode", "rules", "--embedder", "minilm", "--out", out];
        if let Some(set) = extra {
            args.extend(["--set", set]);
        }
        let (code, _, stderr) = memform(&args, tmp.path());
        assert_eq!(code, Some(0), "{stderr}");
    }
    tmp
}

const READ_JUNIT: &str = r#"
import json, sys
from junitparser import JUnitXml, Failure
xml = JUnitXml.fromfile(sys.argv[1])
suites = []
for suite in xml:
    cases = []
    for case in suite:
        failures = [r for r in case.result if isinstance(r, Failure)]
        cases.append({"name": case.name, "classname": case.classname,
                      "failures": [{"message": f.message, "type": f.type} for f in failures]})
    props = {p.name: p.value for p in suite.properties()}
    suites.append({"name": suite.name, "tests": suite.tests, "failures": suite.failures,
                   "errors": suite.errors, "properties": props, "cases": cases})
print(json.dumps({"tests": xml.tests, "failures": xml.failures, "suites": suites}))
"#;

#[test]
fn junit_xml_parses_with_junitparser_one_suite_per_run_one_case_per_rule() {
    let tmp = two_runs();
    let (code, stdout, stderr) =
        memform(&["gate", "--baseline", "baseline.json", "--run", "same", "--run", "worse", "--junit", "gate.xml"], tmp.path());
    assert_eq!(code, Some(1), "one run regressed: {stdout}{stderr}");
    let report = py_json(READ_JUNIT, &[&tmp.path().join("gate.xml")]);
    let rules = memform::gate::Rules::default().metrics.len();
    assert_eq!(report["tests"], 2 * rules, "{report}");
    let suites = report["suites"].as_array().expect("suites");
    assert_eq!(suites.len(), 2, "{report}");
    let (same, worse) = (&suites[0], &suites[1]);
    assert_eq!(same["name"], "same (rules mode)");
    assert_eq!(worse["name"], "worse (rules mode)");
    assert_eq!(same["properties"]["mode"], "rules");
    assert_eq!(same["properties"]["dataset"], "scenarios");
    assert_eq!(same["failures"], 0);
    let rules_default = memform::gate::Rules::default();
    let want: Vec<&str> = rules_default.metrics.keys().map(String::as_str).collect();
    for s in suites {
        let names: Vec<&str> = s["cases"].as_array().expect("cases").iter().map(|c| c["name"].as_str().expect("name")).collect();
        assert_eq!(names, want, "one case per rule");
    }
    let failed: Vec<&serde_json::Value> =
        worse["cases"].as_array().expect("cases").iter().filter(|c| !c["failures"].as_array().expect("f").is_empty()).collect();
    assert_eq!(worse["failures"], failed.len());
    assert_eq!(report["failures"], failed.len());
    let dedup = failed.iter().find(|c| c["name"] == "dedup_rate").expect("dedup_rate failed");
    let msg = dedup["failures"][0]["message"].as_str().expect("message");
    // The message gives the metric, the baseline value, the run value and the tolerance.
    let baseline: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("baseline.json")).expect("read")).expect("json");
    let base = baseline["modes"]["rules"]["dedup_rate"].as_f64().expect("baseline dedup_rate");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("worse/summary.json")).expect("read")).expect("json");
    let now = summary["metrics"]["dedup_rate"].as_f64().expect("run dedup_rate");
    assert!(msg.starts_with(&format!("dedup_rate: baseline {base}, run {now} ")), "{msg}");
    assert!(msg.contains("tolerance: stable, ±0.05 (allowed change 0.05)"), "{msg}");
    assert_eq!(dedup["failures"][0]["type"], "regression");
}

#[test]
fn github_annotations_match_their_snapshot_and_the_step_summary_gets_the_table() {
    let tmp = two_runs();
    let summary = tmp.path().join("step-summary.md");
    std::fs::write(&summary, "## earlier step\n\n").expect("write");
    let (code, stdout, stderr) = memform_env(
        &["gate", "--baseline", "baseline.json", "--run", "worse", "--run", "same", "--format", "github"],
        tmp.path(),
        &[("GITHUB_STEP_SUMMARY", summary.as_path())],
    );
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    let annotations: Vec<&str> = stdout.lines().filter(|l| l.starts_with("::")).collect();
    assert!(
        annotations.iter().any(|l| l.starts_with("::error file=baseline.json,title=memform gate%3A dedup_rate regressed (rules mode)::")),
        "{stdout}"
    );
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshots_dir());
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("gate_github_annotations", annotations.join("\n")));

    let text = std::fs::read_to_string(&summary).expect("step summary");
    assert!(text.starts_with("## earlier step\n\n"), "appended, not replaced: {text}");
    assert!(text.contains("### memform gate: `worse`, rules mode: **FAILED**"), "{text}");
    assert!(text.contains("### memform gate: `same`, rules mode: passed"), "{text}");
    assert_eq!(text.matches("| metric | baseline | now | delta | rule | result |").count(), 2, "{text}");
    assert!(text.contains("| dedup_rate |") && text.contains("| FAIL |"), "{text}");
    // The stdout tables are the step summary's tables.
    let table = stdout
        .lines()
        .skip_while(|l| !l.starts_with("worse (rules mode):"))
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!table.is_empty() && text.contains(&table), "{stdout}\n---\n{text}");

    // Without the variable nothing is written anywhere; with text output no annotations.
    let (code, stdout, _) = memform(&["gate", "--baseline", "baseline.json", "--run", "same"], tmp.path());
    assert_eq!(code, Some(0));
    assert!(!stdout.contains("::"), "{stdout}");
}

const READ_YAML: &str = r#"
import json, re, sys
text = open(sys.argv[1]).read()
blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
import yaml
print(json.dumps([yaml.safe_load(b) for b in blocks], default=str))
"#;

/// Every `make …` command line in a shell snippet.
fn make_commands(script: &str) -> Vec<String> {
    script.lines().map(str::trim).filter(|l| l.starts_with("make ")).map(str::to_string).collect()
}

/// Dry-runs `make ARGS…` in the repository (the target must exist) and
/// checks every memform command it would run names flags that exist.
fn check_make_command(line: &str) {
    let args = shell_words(line);
    assert_eq!(args[0], "make");
    let out = Command::new("make")
        .arg("-n")
        .arg("-C")
        .arg(root())
        .args(&args[1..])
        .env_remove("MAKEFLAGS")
        .env_remove("MAKELEVEL")
        .env_remove("MFLAGS")
        .output()
        .expect("run make -n");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "`{line}` names a missing target: {}", String::from_utf8_lossy(&out.stderr));
    let mut memform_lines = 0;
    for l in stdout.lines() {
        let words = shell_words(l);
        let Some(at) = words.iter().position(|w| w.ends_with("/release/memform")) else { continue };
        memform_lines += 1;
        let sub = &words[at + 1];
        let help = Command::new(bin()).args([sub.as_str(), "--help"]).output().expect("memform --help");
        assert!(help.status.success(), "memform {sub} does not exist ({l})");
        let help = String::from_utf8_lossy(&help.stdout);
        for flag in words[at + 2..].iter().filter(|w| w.starts_with("--")) {
            let name = flag.split('=').next().expect("flag");
            assert!(help.contains(&format!("{name} ")) || help.contains(&format!("{name}\n")), "memform {sub} has no {name} ({l})");
        }
    }
    assert!(memform_lines > 0, "`{line}` runs no memform command: {stdout}");
}

/// Splits a shell line into words, honouring single and double quotes.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quote = None;
    let mut any = false;
    for c in line.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    words.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            (_, c) => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(cur);
    }
    words
}

#[test]
fn docs_ci_workflows_are_valid_yaml_and_name_only_what_exists() {
    let docs = root().join("docs/ci.md");
    let blocks = py_json(READ_YAML, &[&docs]);
    let blocks = blocks.as_array().expect("yaml blocks");
    assert_eq!(blocks.len(), 3, "a GitHub workflow, a GitLab job and a workflow using the action");

    let gh = &blocks[0];
    // YAML 1.1 reads the key `on` as true.
    let on = gh.get("on").or_else(|| gh.get("True")).or_else(|| gh.get("true")).expect("on:");
    assert!(on.get("pull_request").is_some(), "runs on every pull request: {on}");
    let steps = gh["jobs"]["gate"]["steps"].as_array().expect("steps");
    let runs: Vec<&str> = steps.iter().filter_map(|s| s["run"].as_str()).collect();
    let uses: Vec<&str> = steps.iter().filter_map(|s| s["uses"].as_str()).collect();
    assert!(uses.iter().any(|u| u.starts_with("actions/cache@")), "caches: {uses:?}");
    let cached = steps.iter().find(|s| s["uses"].as_str().is_some_and(|u| u.starts_with("actions/cache@"))).expect("cache step");
    let target = gh["jobs"]["gate"]["env"]["CARGO_TARGET_DIR"].as_str().expect("CARGO_TARGET_DIR");
    let target_rel = target.rsplit("}}/").next().expect("path");
    assert!(cached["with"]["path"].as_str().expect("path").contains(target_rel), "the target dir is cached");
    let commands: Vec<String> = runs.iter().flat_map(|r| make_commands(r)).collect();
    assert!(commands.iter().any(|c| c.starts_with("make gate")), "{runs:?}");
    for c in &commands {
        check_make_command(c);
    }

    let gl = &blocks[1];
    let job = gl.as_object().expect("jobs").values().next().expect("a job");
    let rules = serde_json::to_string(&job["rules"]).expect("rules");
    assert!(rules.contains("merge_request_event"), "runs on every merge request: {rules}");
    let target = job["variables"]["CARGO_TARGET_DIR"].as_str().expect("CARGO_TARGET_DIR");
    let cached: Vec<&str> = job["cache"]["paths"].as_array().expect("paths").iter().filter_map(|p| p.as_str()).collect();
    assert!(cached.iter().any(|p| target.ends_with(p)), "the target dir is cached: {target} {cached:?}");
    assert_eq!(job["artifacts"]["reports"]["junit"], "reports/gate.xml");
    let script: Vec<&str> = job["script"].as_array().expect("script").iter().filter_map(|s| s.as_str()).collect();
    let commands: Vec<String> = script.iter().flat_map(|r| make_commands(r)).collect();
    assert!(!commands.is_empty(), "{script:?}");
    for c in &commands {
        check_make_command(c);
    }

    // The action's example names only inputs action.yml declares, every required one.
    let action = py_json(READ_ACTION, &[&root().join("action.yml")]);
    let declared = action["inputs"].as_object().expect("inputs");
    let steps = blocks[2]["jobs"]["gate"]["steps"].as_array().expect("steps");
    let step = steps.iter().find(|s| s["uses"].as_str().is_some_and(|u| u.contains("/memform@"))).expect("uses the action");
    let with = step["with"].as_object().expect("with");
    for k in with.keys() {
        assert!(declared.contains_key(k), "the docs pass {k}, which action.yml does not declare");
    }
    for (k, v) in declared {
        assert!(v["required"] != true || with.contains_key(k), "the docs leave out the required input {k}");
    }
}

const READ_ACTION: &str = r#"
import json, sys, yaml
print(json.dumps(yaml.safe_load(open(sys.argv[1]).read()), default=str))
"#;

/// `${{ inputs.X }}`, `${{ github.action_path }}` and `${{ runner.temp }}`
/// as GitHub fills them in.
fn expand(text: &str, inputs: &serde_json::Map<String, serde_json::Value>, tmp: &Path) -> String {
    let mut out = text.to_string();
    for (k, v) in inputs {
        out = out.replace(&format!("${{{{ inputs.{k} }}}}"), v.as_str().unwrap_or_default());
    }
    // An input's default may name the runner's context too.
    out.replace("${{ github.action_path }}", &root().display().to_string()).replace("${{ runner.temp }}", &tmp.display().to_string())
}

/// action.yml parses, declares the inputs the docs name, and its shell
/// steps, run locally as the runner runs them, install memform (with a
/// stand-in for `cargo install` that records its arguments) and gate the
/// runs: a regression exits 1 with the annotations.
#[test]
fn the_composite_action_parses_and_its_steps_install_and_gate() {
    let action = py_json(READ_ACTION, &[&root().join("action.yml")]);
    assert_eq!(action["runs"]["using"], "composite");
    let declared = action["inputs"].as_object().expect("inputs");
    for k in ["runs", "baseline", "format", "rules", "strict", "junit", "install-root"] {
        assert!(declared.contains_key(k), "input {k}");
    }
    let tmp = two_runs();
    let cargo_log = tmp.path().join("cargo-args");
    let shim = tmp.path().join("cargo-shim.sh");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\necho \"$@\" > {}\nroot=\"\"\nwhile [ $# -gt 0 ]; do [ \"$1\" = --root ] && root=\"$2\"; shift; done\nmkdir -p \"$root/bin\" && cp {} \"$root/bin/memform\"\n",
            cargo_log.display(),
            bin()
        ),
    )
    .expect("shim");
    std::process::Command::new("chmod").arg("+x").arg(&shim).status().expect("chmod");
    let mut inputs = serde_json::Map::new();
    for (k, v) in declared {
        inputs.insert(k.clone(), v.get("default").cloned().unwrap_or_else(|| "".into()));
    }
    inputs.insert("runs".into(), "same\nworse".into());
    inputs.insert("baseline".into(), "baseline.json".into());
    inputs.insert("junit".into(), "gate.xml".into());
    let github_path = tmp.path().join("github-path");
    let mut last = None;
    for step in action["runs"]["steps"].as_array().expect("steps") {
        assert_eq!(step["shell"], "bash");
        let mut cmd = Command::new("bash");
        cmd.arg("-c").arg(step["run"].as_str().expect("run")).current_dir(tmp.path());
        cmd.env("CARGO", &shim).env("GITHUB_PATH", &github_path).env_remove("GITHUB_STEP_SUMMARY");
        for (k, v) in step["env"].as_object().into_iter().flatten() {
            cmd.env(k, expand(v.as_str().expect("env value"), &inputs, tmp.path()));
        }
        last = Some(cmd.output().expect("run step"));
    }
    let installed = tmp.path().join("memform/bin/memform");
    assert!(installed.exists(), "installed into the install root");
    let args = std::fs::read_to_string(&cargo_log).expect("cargo ran");
    assert_eq!(args.trim(), format!("install --locked --path {} --root {}", root().display(), tmp.path().join("memform").display()));
    assert_eq!(std::fs::read_to_string(&github_path).expect("GITHUB_PATH").trim(), tmp.path().join("memform/bin").display().to_string());
    let gate = last.expect("the gate step");
    let stdout = String::from_utf8_lossy(&gate.stdout);
    assert_eq!(gate.status.code(), Some(1), "{stdout}{}", String::from_utf8_lossy(&gate.stderr));
    assert!(stdout.lines().any(|l| l.starts_with("::error ") && l.contains("dedup_rate regressed")), "{stdout}");
    assert!(tmp.path().join("gate.xml").exists(), "--junit passed through");
}
