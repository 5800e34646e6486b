//! The adapter protocol (docs/adapters.md): the minimal adapter end to end
//! (a raw baseline through `--profile external`), its messages against
//! docs/adapter.schema.json, and an adapter's faults (a crash, a hang, output
//! that is not JSON, an unknown op, an over-long line): each a one-line
//! error naming the conversation and the episode, exit 2, the previous run
//! in the output directory left as it was.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{bin, root, snapshots_dir};

fn memform(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(bin());
    cmd.args(args).current_dir(root());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("spawn memform");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

const MINIMAL: &str = "python3 adapters/minimal/adapter.py";

/// A native dataset of one conversation, `c1`, with two episodes.
fn dataset(dir: &Path) {
    let conv = dir.join("conversations");
    std::fs::create_dir_all(&conv).unwrap();
    let body = json!({
        "format": "memform-conversation/1", "id": "c1", "speakers": ["Ann", "Bob"],
        "episodes": [
            {"id": "e1", "timestamp": "2024-01-01T10:00:00",
             "turns": [{"id": "t1", "speaker": "Ann", "text": "I work at Google."}, {"id": "t2", "speaker": "Bob", "text": "Nice."}]},
            {"id": "e2", "timestamp": "2024-03-01T10:00:00",
             "turns": [{"id": "t3", "speaker": "Ann", "text": "I moved to Apple last week."}]}
        ],
        "gold": {"facts": [{"id": "g1", "episode": "e1", "text": "Ann works at Google", "evidence": ["t1"]}],
                 "qa": [{"question": "Where does Ann work?", "answer": "Apple", "evidence": ["t3"]}]}
    });
    std::fs::write(conv.join("c1.json"), body.to_string()).unwrap();
}

/// A fake adapter: answers like the minimal one until the second
/// `add_episode`, where it does `fault` (Python statements; `msg` is the request).
fn fake(dir: &Path, fault: &str) -> String {
    let script = format!(
        r#"import json, sys, time
n = 0
for line in sys.stdin:
    msg = json.loads(line)
    op = msg["op"]
    if op == "add_episode":
        n += 1
        if n == 2:
{fault}
        print(json.dumps({{"ok": True, "memories": [{{"id": "m1", "content": "Ann works at Google"}}]}}), flush=True)
    elif op == "search":
        print(json.dumps({{"ok": True, "hits": []}}), flush=True)
    else:
        print(json.dumps({{"ok": True}}), flush=True)
    if op == "end":
        break
"#,
        fault = fault.lines().map(|l| format!("            {l}\n")).collect::<String>()
    );
    let path = dir.join("fake.py");
    std::fs::write(&path, script).unwrap();
    format!("python3 {}", path.display())
}

/// Runs the fake adapter `fault` after a good run into the same directory:
/// exit 2, one error line naming c1 and e2 and containing `expect`, the
/// good run's files untouched and no build directory left.
fn refused(fault: &str, extra: &[&str], expect: &str) -> Duration {
    let tmp = tempfile::tempdir().unwrap();
    let (ds, out) = (tmp.path().join("ds"), tmp.path().join("out"));
    dataset(&ds);
    let (ds, out_s) = (ds.to_str().unwrap(), out.to_str().unwrap());
    let (code, _, err) = memform(&["run", "--dataset", ds, "--profile", "external", "--adapter", MINIMAL, "--out", out_s], &[]);
    assert_eq!(code, Some(0), "{err}");
    let before = std::fs::read(out.join("run.json")).unwrap();
    let facts_before = std::fs::read(out.join("facts.jsonl")).unwrap();
    let cmd = fake(tmp.path(), fault);
    let mut args = vec!["run", "--dataset", ds, "--profile", "external", "--adapter", cmd.as_str(), "--out", out_s];
    args.extend_from_slice(extra);
    let started = Instant::now();
    let (code, _, err) = memform(&args, &[]);
    let took = started.elapsed();
    assert_eq!(code, Some(2), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(lines[0].starts_with("error: conversation c1: episode e2: "), "{err}");
    assert!(lines[0].contains(expect), "{expect:?} in {err}");
    assert_eq!(std::fs::read(out.join("run.json")).unwrap(), before, "the previous run's manifest is untouched");
    assert_eq!(std::fs::read(out.join("facts.jsonl")).unwrap(), facts_before, "the previous run's facts are untouched");
    let builds: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".memform-build"))
        .collect();
    assert!(builds.is_empty(), "no build directory left: {builds:?}");
    took
}

#[test]
fn a_crashing_adapter_stops_the_run_naming_the_episode() {
    refused(
        "sys.stderr.write('boom: out of memory\\n')\nsys.exit(3)",
        &[],
        "exited (exit status: 3) without replying to add_episode; its stderr ends: boom: out of memory",
    );
}

#[test]
fn a_hanging_adapter_is_killed_after_the_time_limit() {
    let took = refused(
        "time.sleep(600)",
        &["--set", "external.reply_timeout_s=8"],
        "did not reply to add_episode within external.reply_timeout_s = 8 s",
    );
    assert!(took < Duration::from_secs(120), "bounded: {took:?}");
}

#[test]
fn output_that_is_not_json_stops_the_run() {
    refused("print('hello there', flush=True)\ncontinue", &[], "malformed reply to add_episode");
}

#[test]
fn an_unknown_op_answer_stops_the_run() {
    refused(
        "print(json.dumps({'ok': False, 'error': 'unknown op: ' + op}), flush=True)\ncontinue",
        &[],
        "the adapter answered add_episode with an error: unknown op: add_episode",
    );
}

#[test]
fn an_over_long_reply_line_stops_the_run() {
    refused(
        "print('x' * 5000, flush=True)\ncontinue",
        &["--set", "external.max_reply_bytes=1024"],
        "longer than external.max_reply_bytes = 1024",
    );
}

#[test]
fn adapter_limits_are_bounded_and_the_external_profile_needs_a_command() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = tmp.path().join("ds");
    dataset(&ds);
    let out = tmp.path().join("out");
    let (ds, out) = (ds.to_str().unwrap(), out.to_str().unwrap());
    for (set, expect) in [
        ("external.reply_timeout_s=0", "external.reply_timeout_s = 0: must be within 1..=3600"),
        ("external.max_reply_bytes=10", "external.max_reply_bytes = 10: must be within"),
        ("external.search_k=1000", "external.search_k = 1000: must be within 1..=100"),
    ] {
        let (code, _, err) =
            memform(&["run", "--dataset", ds, "--profile", "external", "--adapter", MINIMAL, "--set", set, "--out", out], &[]);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(expect), "{expect:?} in {err}");
    }
    let (code, _, err) = memform(&["run", "--dataset", ds, "--profile", "external", "--out", out], &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no adapter command: give --adapter CMD"), "{err}");
    let (code, _, err) = memform(&["run", "--dataset", ds, "--profile", "external", "--adapter", "./no/such/adapter", "--out", out], &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("start adapter `./no/such/adapter`"), "{err}");
}

#[test]
fn the_minimal_adapter_runs_the_scenarios_as_a_raw_baseline() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let (code, _, err) = memform(
        &["run", "--dataset", "datasets/scenarios", "--profile", "external", "--adapter", MINIMAL, "--out", out.to_str().unwrap()],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let m = &summary["metrics"];
    // Every turn is a memory: the facts carry their turn and the ADD decision.
    let facts: Vec<Value> =
        std::fs::read_to_string(out.join("facts.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(facts.iter().all(|f| f["decision"]["action"] == "add" && !f["turn"].as_str().unwrap_or("").is_empty()));
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(manifest["profile"], "external");
    let keys = [
        "stored_facts",
        "content_precision",
        "content_recall",
        "turn_recall",
        "invalidations",
        "qa_recall_any_at_5",
        "qa_raw_turns_recall_any_at_5",
        "qa_system_recall_any_at_5",
        "qa_system_items_scored",
    ];
    let figures: serde_json::Map<String, Value> = keys.iter().map(|k| (k.to_string(), m[*k].clone())).collect();
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshots_dir());
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_json_snapshot!("adapter_minimal_scenarios", figures));
}

// ---- The schema ----

/// A validator for the part of JSON Schema docs/adapter.schema.json uses:
/// `$ref` (local), `oneOf`, `anyOf`, `not`, `type`, `const`, `enum`,
/// `required`, `properties`, `additionalProperties: false`, `items`,
/// `minimum`, `maximum`, `minLength`. An unknown keyword is an error, so the
/// schema cannot outgrow the check silently.
fn valid(schema: &Value, root: &Value, v: &Value) -> Result<(), String> {
    let Value::Object(s) = schema else { return Err("schema is not an object".into()) };
    for (k, rule) in s {
        match k.as_str() {
            "description" | "title" | "$schema" | "$id" | "$defs" => {}
            "$ref" => {
                let name = rule.as_str().and_then(|r| r.strip_prefix("#/$defs/")).ok_or("bad $ref")?;
                valid(&root["$defs"][name], root, v).map_err(|e| format!("{name}: {e}"))?;
            }
            "oneOf" => {
                let n = rule.as_array().ok_or("oneOf")?.iter().filter(|s| valid(s, root, v).is_ok()).count();
                if n != 1 {
                    return Err(format!("{n} of oneOf match {v}"));
                }
            }
            "anyOf" => {
                if !rule.as_array().ok_or("anyOf")?.iter().any(|s| valid(s, root, v).is_ok()) {
                    return Err(format!("no anyOf matches {v}"));
                }
            }
            "not" => {
                if valid(rule, root, v).is_ok() {
                    return Err(format!("`not` matches {v}"));
                }
            }
            "type" => {
                let types: Vec<&str> = match rule {
                    Value::String(t) => vec![t.as_str()],
                    Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                    _ => return Err("type".into()),
                };
                let ok = types.iter().any(|t| match *t {
                    "string" => v.is_string(),
                    "integer" => v.is_i64() || v.is_u64(),
                    "number" => v.is_number(),
                    "boolean" => v.is_boolean(),
                    "array" => v.is_array(),
                    "object" => v.is_object(),
                    "null" => v.is_null(),
                    _ => false,
                });
                if !ok {
                    return Err(format!("{v} is not {types:?}"));
                }
            }
            "const" if v != rule => return Err(format!("{v} is not {rule}")),
            "const" => {}
            "enum" if !rule.as_array().is_some_and(|a| a.contains(v)) => return Err(format!("{v} not in {rule}")),
            "enum" => {}
            "required" => {
                for r in rule.as_array().ok_or("required")?.iter().filter_map(Value::as_str) {
                    if v.get(r).is_none() {
                        return Err(format!("{r} is missing in {v}"));
                    }
                }
            }
            "properties" => {
                if let (Some(props), Some(obj)) = (rule.as_object(), v.as_object()) {
                    for (name, sub) in props {
                        if let Some(x) = obj.get(name) {
                            valid(sub, root, x).map_err(|e| format!("{name}: {e}"))?;
                        }
                    }
                }
            }
            "additionalProperties" => {
                if rule == &Value::Bool(false)
                    && let (Some(props), Some(obj)) = (s.get("properties").and_then(Value::as_object), v.as_object())
                    && let Some(extra) = obj.keys().find(|k| !props.contains_key(*k))
                {
                    return Err(format!("unexpected {extra}"));
                }
            }
            "items" => {
                for x in v.as_array().into_iter().flatten() {
                    valid(rule, root, x)?;
                }
            }
            "minimum" if v.as_f64().zip(rule.as_f64()).is_some_and(|(x, m)| x < m) => return Err(format!("{v} < {rule}")),
            "maximum" if v.as_f64().zip(rule.as_f64()).is_some_and(|(x, m)| x > m) => return Err(format!("{v} > {rule}")),
            "minLength" if v.as_str().is_some_and(|x| (x.chars().count() as u64) < rule.as_u64().unwrap_or(0)) => {
                return Err(format!("{v} is too short"));
            }
            "minimum" | "maximum" | "minLength" => {}
            other => return Err(format!("the check does not know keyword {other}")),
        }
    }
    Ok(())
}

fn schema() -> Value {
    serde_json::from_str(&std::fs::read_to_string(root().join("docs/adapter.schema.json")).unwrap()).unwrap()
}

fn check(kind: &str, v: &Value) -> Result<(), String> {
    let s = schema();
    valid(&s["$defs"][kind], &s, v)
}

/// A logging adapter: the minimal adapter's answers, every line it reads
/// and writes appended to `log` (`>` and `<` prefixed).
fn logging_adapter(dir: &Path, log: &Path) -> String {
    let script = format!(
        r#"import subprocess, sys
child = subprocess.Popen([sys.executable, "{minimal}"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
with open("{log}", "a") as log:
    for line in sys.stdin:
        log.write("> " + line)
        child.stdin.write(line)
        child.stdin.flush()
        answer = child.stdout.readline()
        log.write("< " + answer)
        log.flush()
        sys.stdout.write(answer)
        sys.stdout.flush()
"#,
        minimal = root().join("adapters/minimal/adapter.py").display(),
        log = log.display()
    );
    let path = dir.join("logging.py");
    std::fs::write(&path, script).unwrap();
    format!("python3 {}", path.display())
}

#[test]
fn the_messages_of_a_run_validate_against_the_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("lines.log");
    let cmd = logging_adapter(tmp.path(), &log);
    let out = tmp.path().join("out");
    let (code, _, err) = memform(
        &["run", "--dataset", "datasets/scenarios", "--profile", "external", "--adapter", &cmd, "--out", out.to_str().unwrap()],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    let text = std::fs::read_to_string(&log).unwrap();
    let mut ops = std::collections::BTreeSet::new();
    for line in text.lines() {
        let (dir, body) = line.split_at(2);
        let v: Value = serde_json::from_str(body).unwrap();
        if dir == "> " {
            ops.insert(v["op"].as_str().unwrap_or("").to_string());
            check("request", &v).unwrap_or_else(|e| panic!("request {body}: {e}"));
        } else {
            check("reply", &v).unwrap_or_else(|e| panic!("reply {body}: {e}"));
        }
    }
    assert_eq!(ops.into_iter().collect::<Vec<_>>(), vec!["add_episode", "begin_conversation", "end", "search"], "every op was sent");
    // The check itself refuses what the schema forbids.
    assert!(check("request", &json!({"op": "add_episode", "conversation": "c", "episode": "e", "timestamp": null})).is_err());
    assert!(check("request", &json!({"op": "forget", "conversation": "c"})).is_err());
    assert!(check("reply", &json!({"ok": true, "memories": [{"id": "m"}]})).is_err());
    assert!(check("add_episode_reply", &json!({"ok": true, "memories": [], "decisions": [{"event": "MERGE"}]})).is_err());
}

#[test]
fn the_minimal_adapter_answers_an_unknown_op_with_an_error_reply() {
    let mut child = Command::new("python3")
        .arg(root().join("adapters/minimal/adapter.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |v: Value| -> Value {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    };
    let answer = ask(json!({"op": "forget", "conversation": "c"}));
    assert_eq!(answer, json!({"ok": false, "error": "unknown op: forget"}));
    check("reply", &answer).unwrap();
    check("error_reply", &answer).unwrap();
    assert_eq!(ask(json!({"op": "end", "conversation": "c"})), json!({"ok": true}));
    assert!(child.wait().unwrap().success());
}
