//! The seed profiles end to end through the CLI.
//!
//! - `signet` over `datasets/signet/` (human-written reference scenarios):
//!   one snapshot per scenario with its store (live, updated and
//!   soft-deleted facts), history rows, mentions and audit with
//!   provenance, in rules mode under each write mode (and with the write
//!   gate raised), and with the decision stage by the bundled model
//!   (`--extract rules --judge llm`, replaying the answers recorded against it).
//! - `soda`'s preference polarity pairing: "love, then hate Chinese food"
//!   ends with exactly one live preference, and not without the pairing.
//! - A config key the profile does not read is a one-line warning.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use memform::store::Store;

use crate::support::{bin, jsonl_without_timings, root, snapshots_dir};

fn signet_dir() -> PathBuf {
    root().join("datasets/signet")
}

/// The runs every snapshot reads: (section title, extra CLI arguments).
const RUNS: &[(&str, &[&str])] = &[
    ("rules, full", &["--mode", "rules", "--write-mode", "full"]),
    ("rules, controlled", &["--mode", "rules", "--write-mode", "controlled"]),
    ("rules, shadow", &["--mode", "rules", "--write-mode", "shadow"]),
    ("rules, full, min_fact_confidence_for_write = 0.8", &["--mode", "rules", "--set", "min_fact_confidence_for_write=0.8"]),
    ("rules/llm (recorded SmolLM2-135M answers), full", &["--extract", "rules", "--judge", "llm", "--llm", "replay"]),
];

struct Ran {
    _dir: tempfile::TempDir,
    runs: Vec<(Vec<serde_json::Value>, Store)>,
}

fn run_cli(dataset: &Path, out: &Path, args: &[&str]) -> String {
    let o = Command::new(bin())
        .args(["run", "--dataset"])
        .arg(dataset)
        .arg("--out")
        .arg(out)
        .args(["--profile", "signet"])
        .args(args)
        .output()
        .expect("run memform");
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "memform run {args:?} failed: {stderr}");
    stderr
}

fn ran() -> &'static Ran {
    static RAN: OnceLock<Ran> = OnceLock::new();
    RAN.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let runs = RUNS
            .iter()
            .enumerate()
            .map(|(i, (_, args))| {
                let out = dir.path().join(format!("r{i}"));
                run_cli(&signet_dir(), &out, args);
                let facts = jsonl_without_timings(&out.join("facts.jsonl"));
                (facts, Store::open(&out.join("store.sqlite")).expect("open store"))
            })
            .collect();
        Ran { _dir: dir, runs }
    })
}

fn s(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "-".into(),
        other => other.to_string(),
    }
}

fn render_run(out: &mut String, conversation: &str, facts: &[serde_json::Value], store: &Store) {
    let _ = writeln!(out, "## store facts");
    for f in store.facts().expect("facts").iter().filter(|f| f.conversation_id == conversation) {
        let state = match &f.invalid_at {
            Some(at) => format!("deleted {at}"),
            None => "live".into(),
        };
        let _ = writeln!(out, "{} [{state}] «{}» (from {})", f.id, f.content, f.source_episode);
    }
    let _ = writeln!(out, "## history");
    for h in store.history().expect("history").iter().filter(|h| h.conversation_id == conversation) {
        let _ = writeln!(out, "{} {} {} by {}: was «{}» ({})", h.episode_id, h.fact_id, h.event, h.by_candidate, h.content, h.reason);
    }
    let _ = writeln!(out, "## mentions");
    for (conv, fact, entity, text) in store.mentions().expect("mentions") {
        if conv == conversation {
            let _ = writeln!(out, "{fact} -> {entity} ({text})");
        }
    }
    let _ = writeln!(out, "## entities");
    for (conv, id, name, ty, _) in store.entities().expect("entities") {
        if conv == conversation {
            let _ = writeln!(out, "{id} {name} {ty}");
        }
    }
    let _ = writeln!(out, "## decisions");
    for f in facts.iter().filter(|f| f["conversation"] == conversation) {
        let d = &f["decision"];
        let candidates: Vec<String> = d["candidates"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| format!("{} {:.3}", s(&c[0]), c[1].as_f64().unwrap_or(f64::NAN)))
            .collect();
        let _ = writeln!(
            out,
            "{} «{}» conf={} -> {} {} target={} outcome={}{} ({}) candidates=[{}]",
            s(&f["id"]),
            s(&f["content"]),
            s(&f["confidence"]),
            s(&d["action"]),
            s(&d["confidence"]),
            s(&d["target"]),
            s(&f["outcome"]),
            if d["review_needed"] == true { " review-needed" } else { "" },
            s(&d["reason"]),
            candidates.join(", ")
        );
    }
    let _ = writeln!(out, "## audit (with provenance)");
    let prov = store.provenance().expect("provenance");
    let mut seq = std::collections::BTreeMap::new();
    for (conv, episode, a) in store.audit().expect("audit") {
        let n = seq.entry((conv.clone(), episode.clone())).or_insert(0usize);
        let p = prov.iter().find(|(c, e, i, _)| *c == conv && *e == episode && i == n).map(|(_, _, _, p)| p);
        *n += 1;
        if conv != conversation {
            continue;
        }
        let p = p.map_or("NO PROVENANCE".to_string(), |p| {
            format!(
                "[{} «{}» {} {} {} {} facts={} entities={}{}]",
                p.action,
                p.content,
                p.confidence,
                p.source,
                p.extractor,
                p.decider,
                p.fact_count,
                p.entity_count,
                if p.review_needed { " review-needed" } else { "" }
            )
        });
        let _ = writeln!(
            out,
            "{episode} {} {} {}{} ({}) {p}",
            a.candidate_id.rsplit('/').next().unwrap_or(""),
            a.action,
            a.outcome.as_str(),
            a.target_fact_id.map(|t| format!(" target={t}")).unwrap_or_default(),
            a.reason
        );
    }
}

fn render(conversation: &str) -> String {
    let mut out = String::new();
    for ((title, _), (facts, store)) in RUNS.iter().zip(&ran().runs) {
        let _ = writeln!(out, "# {title}");
        render_run(&mut out, conversation, facts, store);
        out.push('\n');
    }
    out
}

fn check(id: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshots_dir());
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(format!("signet__{id}"), render(id)));
}

#[test]
fn signet_update_delete() {
    check("update-delete");
}

#[test]
fn signet_duplicates() {
    check("duplicates");
}

#[test]
fn signet_linker_gates() {
    check("linker-gates");
}

#[test]
fn every_signet_scenario_has_its_own_test() {
    let dataset = memform::dataset::load(&signet_dir()).expect("load");
    let ids: Vec<&str> = dataset.conversations.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["duplicates", "linker-gates", "update-delete"], "add a test for each scenario file");
}

/// Human-written: one speaker loves, then hates, Chinese food.
const CHINESE_FOOD: &str = r#"{"format": "memform-conversation/1", "id": "food", "speakers": ["Mia", "Assistant"],
 "episodes": [
  {"id": "e1", "timestamp": "2024-01-10T12:00:00", "turns": [{"id": "t1", "speaker": "Mia", "text": "I love Chinese food."}]},
  {"id": "e2", "timestamp": "2024-02-10T12:00:00", "turns": [{"id": "t2", "speaker": "Mia", "text": "I hate Chinese food."}]}
 ]}"#;

fn live_contents(profile: &str, extra: &[&str]) -> (Vec<String>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ds = dir.path().join("ds");
    std::fs::create_dir_all(ds.join("conversations")).expect("mkdir");
    std::fs::write(ds.join("conversations/food.json"), CHINESE_FOOD).expect("write");
    let out = dir.path().join("out");
    let o = Command::new(bin())
        .args(["run", "--mode", "rules", "--profile", profile, "--dataset"])
        .arg(&ds)
        .arg("--out")
        .arg(&out)
        .args(extra)
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{stderr}");
    let store = Store::open(&out.join("store.sqlite")).expect("store");
    let live = store
        .facts()
        .expect("facts")
        .into_iter()
        .filter(|f| f.invalid_at.is_none() && f.superseded_by.is_none())
        .map(|f| f.content)
        .collect();
    (live, stderr)
}

#[test]
fn love_then_hate_chinese_food_ends_with_one_live_preference() {
    assert_eq!(live_contents("soda", &[]).0, ["Mia hates Chinese food"], "soda: the later statement wins");
    let (live, _) = live_contents("soda", &["--set", "preference_polarity_pairing=false"]);
    assert_eq!(live, ["Mia loves Chinese food", "Mia hates Chinese food"], "without the pairing both stand (the probe's failure)");
    assert_eq!(live_contents("signet", &[]).0, ["Mia hates Chinese food"], "signet: an UPDATE in place");
}

#[test]
fn a_config_key_the_profile_does_not_read_is_a_one_line_warning() {
    let (_, stderr) = live_contents("signet", &["--set", "preference_polarity_pairing=false"]);
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("does not apply")).collect();
    assert_eq!(lines, ["warning: config key preference_polarity_pairing does not apply to profile signet: it is ignored"]);
    let (_, stderr) = live_contents("soda", &["--set", "preference_polarity_pairing=false"]);
    assert!(!stderr.contains("does not apply"), "soda reads it: {stderr}");
}

#[test]
fn enabled_false_processes_nothing_and_says_so() {
    let (live, _) = live_contents("soda", &["--set", "enabled=false"]);
    assert!(live.is_empty());
}
