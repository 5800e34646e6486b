//! The seed profiles end to end through the CLI.
//!
//! - `signet` over `datasets/signet/` (human-written reference scenarios):
//!   one snapshot per scenario with its store (live, updated and
//!   soft-deleted facts), history rows, mentions and audit with
//!   provenance, in rules mode under each write mode (and with the write
//!   gate raised), and with the decision stage by the bundled model
//!   (`--extract rules --judge llm`), and with both extraction (Signet's
//!   contract, template `signet_extract`) and decisions by it (`--mode
//!   llm`), replaying the answers recorded against it.
//! - Rules extraction reaches the decision stage in Signet's contract.
//! - `soda`'s preference polarity pairing: "love, then hate Chinese food"
//!   ends with exactly one live preference, and not without the pairing.
//! - A config key the profile does not read is a one-line warning.
//! - README's "What happened to fact X, and why?" query, read from
//!   README.md and run as written against the stores these runs produce.

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
    ("llm (recorded SmolLM2-135M answers), full", &["--mode", "llm", "--llm", "replay"]),
];

struct Ran {
    dir: tempfile::TempDir,
    runs: Vec<(Vec<serde_json::Value>, Store)>,
}

impl Ran {
    /// The store file of run `i` of [`RUNS`].
    fn store_path(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("r{i}/store.sqlite"))
    }
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
        Ran { dir, runs }
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
    // The seed's rules: without the pairing both stand (the probe's failure); on evidence of change a flip replaces whatever the pairing.
    let (live, _) = live_contents("soda", &["--set", "soda.preference_polarity_pairing=false", "--set", "soda.evidence_of_change=false"]);
    assert_eq!(live, ["Mia loves Chinese food", "Mia hates Chinese food"], "without the pairing both stand (the probe's failure)");
    assert_eq!(live_contents("soda", &["--set", "preference_polarity_pairing=false"]).0, ["Mia hates Chinese food"]);
    assert_eq!(live_contents("signet", &[]).0, ["Mia hates Chinese food"], "signet: an UPDATE in place");
}

#[test]
fn a_config_key_the_profile_does_not_read_is_a_one_line_warning_under_every_profile() {
    let ignored = |stderr: &str| stderr.lines().filter(|l| l.contains("is ignored")).map(str::to_string).collect::<Vec<_>>();
    let (_, stderr) = live_contents("signet", &["--set", "soda.preference_polarity_pairing=false"]);
    assert_eq!(
        ignored(&stderr),
        ["warning: config key soda.preference_polarity_pairing is read by profile soda, not signet: it is ignored"]
    );
    let (_, stderr) = live_contents("soda", &["--set", "soda.preference_polarity_pairing=false"]);
    assert!(ignored(&stderr).is_empty(), "soda reads it: {stderr}");
    let (_, stderr) = live_contents("soda", &["--set", "memorix.high_min=0.8"]);
    assert_eq!(ignored(&stderr), ["warning: config key memorix.high_min is read by profile memorix, not soda: it is ignored"]);
    let (_, stderr) = live_contents("memorix", &["--set", "signet.near_dup_threshold=0.9"]);
    assert_eq!(ignored(&stderr), ["warning: config key signet.near_dup_threshold is read by profile signet, not memorix: it is ignored"]);
}

/// Counting content words only (`polarity_content_words_only`), the signet
/// scenarios decide as by default: "Alice hates sushi" shares one content
/// word with "Alice loves sushi", but the same subject and object, so it is
/// still the UPDATE the scenario intends, flagged for review.
#[test]
fn counting_content_words_only_the_signet_scenarios_decide_as_by_default() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("strict");
    run_cli(&signet_dir(), &out, &["--mode", "rules", "--set", "polarity_content_words_only=true"]);
    let facts = jsonl_without_timings(&out.join("facts.jsonl"));
    let sushi = facts.iter().find(|f| f["id"] == "update-delete/e2/c1").expect("the sushi fact");
    assert_eq!(s(&sushi["content"]), "Alice hates sushi");
    let d = &sushi["decision"];
    assert_eq!((s(&d["action"]), s(&d["target"]), &d["review_needed"]), ("update".into(), "update-delete/e1/c1".into(), &true.into()));
    assert_eq!(RUNS[0].0, "rules, full");
    assert!(facts == ran().runs[0].0, "the same facts and decisions as the default rules run");
    assert_eq!(live_contents("signet", &["--set", "polarity_content_words_only=true"]).0, ["Mia hates Chinese food"]);
}

#[test]
fn enabled_false_processes_nothing_and_says_so() {
    let (live, _) = live_contents("soda", &["--set", "enabled=false"]);
    assert!(live.is_empty());
}

/// Human-written: two relationships and a preference in one episode.
const CONTRACT: &str = r#"{"format": "memform-conversation/1", "id": "contract", "speakers": ["Alice", "Assistant"],
 "episodes": [
  {"id": "e1", "timestamp": "2024-01-10T12:00:00", "turns": [
    {"id": "t1", "speaker": "Alice", "text": "I work at Google."},
    {"id": "t2", "speaker": "Alice", "text": "I play chess with Eli."},
    {"id": "t3", "speaker": "Alice", "text": "I love sushi."}
  ]}
 ]}"#;

#[test]
fn rules_extraction_reaches_the_signet_decisions_in_signets_contract() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ds = dir.path().join("ds");
    std::fs::create_dir_all(ds.join("conversations")).expect("mkdir");
    std::fs::write(ds.join("conversations/contract.json"), CONTRACT).expect("write");
    let out = dir.path().join("out");
    run_cli(&ds, &out, &["--mode", "rules"]);
    let facts = jsonl_without_timings(&out.join("facts.jsonl"));
    // The contract's facts keep the structure and turn of the rules facts they came from.
    let rows: Vec<(String, String, String)> = facts.iter().map(|f| (s(&f["content"]), s(&f["turn"]), s(&f["subject"]))).collect();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(rows.iter().all(|(_, turn, subject)| turn.starts_with('t') && subject == "Alice"), "{rows:?}");
    // The provenance counts the contract's facts and its entity triples: one per relationship fact.
    let relationships = facts.iter().filter(|f| f["kind"] == "relationship").count();
    assert!(relationships > 0, "the scenario has relationship facts: {facts:?}");
    let store = Store::open(&out.join("store.sqlite")).expect("store");
    let prov = store.provenance().expect("provenance");
    assert_eq!(prov.len(), 3);
    for (_, _, _, p) in &prov {
        assert_eq!((p.fact_count, p.entity_count, p.extractor.as_str()), (3, relationships, "rules:v1"), "{p:?}");
        assert!(p.source.starts_with("e1/t"), "{p:?}");
    }
}

/// The SQL block after `heading` in README.md, exactly as written there.
fn readme_sql(heading: &str) -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("read README.md");
    let after = &readme[readme.find(heading).unwrap_or_else(|| panic!("README.md has no {heading:?}"))..];
    let start = after.find("```sql\n").expect("an ```sql block after the heading") + "```sql\n".len();
    let len = after[start..].find("```").expect("the block is closed");
    after[start..start + len].to_string()
}

/// README's "What happened" query run with `:id` bound, every column as text (NULL as "-").
fn what_happened(store: &Path, id: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    query(store, &readme_sql("**What happened to fact X, and why?**"), id)
}

fn query(store: &Path, sql: &str, id: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let conn = rusqlite::Connection::open_with_flags(store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open store");
    let mut st = conn.prepare(sql).unwrap_or_else(|e| panic!("README's query does not prepare: {e}\n{sql}"));
    let names: Vec<String> = st.column_names().map(str::to_string).collect();
    let params: &[(&str, &dyn rusqlite::ToSql)] = if sql.contains(":id") { &[(":id", &id)] } else { &[] };
    let rows = st
        .query_map(params, |r| {
            let mut row = std::collections::BTreeMap::new();
            for (i, n) in names.iter().enumerate() {
                let v: rusqlite::types::Value = r.get(i)?;
                let text = match v {
                    rusqlite::types::Value::Null => "-".to_string(),
                    rusqlite::types::Value::Integer(n) => n.to_string(),
                    rusqlite::types::Value::Real(x) => x.to_string(),
                    rusqlite::types::Value::Text(t) => t,
                    rusqlite::types::Value::Blob(_) => "<blob>".to_string(),
                };
                row.insert(n.clone(), text);
            }
            Ok(row)
        })
        .expect("run README's query");
    rows.collect::<Result<_, _>>().expect("read rows")
}

#[test]
fn readme_what_happened_query_explains_a_signet_fact_as_the_readme_says() {
    // The signet run "rules, full" (RUNS[0]): what README.md describes for update-delete/e1/c0.
    let rows = what_happened(&ran().store_path(0), "update-delete/e1/c0");
    let col = |k: &str| rows.iter().map(|r| r[k].as_str()).collect::<Vec<_>>();
    assert_eq!(col("episode_id"), ["e1", "e2", "e3"]);
    assert_eq!(col("action"), ["insert", "update", "delete"]);
    assert_eq!(col("outcome"), ["created", "updated", "deleted"]);
    assert_eq!(col("candidate_id"), ["update-delete/e1/c0", "update-delete/e2/c0", "update-delete/e3/c0"]);
    assert_eq!(rows[0]["reason"], "no existing memories match this fact");
    assert_eq!(col("content_before"), ["-", "Alice works at Google", "Alice works at Anthropic"]);
    assert_eq!(col("review_needed"), ["0", "0", "1"]);
    assert!(rows.iter().all(|r| r["decider"] == "signet-rules:v1" && r["extractor"] == "rules:v1"), "{rows:?}");
}

#[test]
fn readme_what_happened_query_explains_a_soda_invalidation_with_its_verdict() {
    // A soda run of the bundled scenarios: the judged pair behind an invalidation.
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let o = Command::new(bin())
        .args(["run", "--mode", "rules", "--dataset"])
        .arg(crate::support::scenarios_dir())
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = what_happened(&out.join("store.sqlite"), "job-change/e1/c0");
    let ended: Vec<_> = rows.iter().filter(|r| r["outcome"] == "invalidated").collect();
    assert_eq!(ended.len(), 1, "{rows:#?}");
    assert_eq!((ended[0]["verdict"].as_str(), ended[0]["judged"].as_str()), ("old", "old"), "{rows:#?}");
    assert_ne!(ended[0]["pair_reason"], "-");
    assert_eq!(rows[0]["outcome"], "created", "the fact's own insert comes first: {rows:#?}");
    // README's "Why was this fact invalidated?" names the same fact in its WHERE clause.
    let why = query(&out.join("store.sqlite"), &readme_sql("**Why was this fact invalidated?**"), "");
    assert_eq!(why.len(), 1, "{why:#?}");
    assert_eq!((why[0]["id"].as_str(), why[0]["verdict"].as_str()), ("job-change/e1/c0", "old"));
    assert_eq!(why[0]["replaced_by"], "Maya works at Anthropic");
}
