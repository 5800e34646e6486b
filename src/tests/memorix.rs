//! The memorix profile against the real Memorix: the bundled coding-agent
//! observations go through memform's profile (recording, per observation,
//! the entity names and search hits it was formed against) and through
//! Memorix's own `runFormation` from the installed `memorix@1.0.7` (`make
//! memorix`; `tools/memorix/differential.mjs`) given the same names and
//! hits. Per observation they must agree on the resolution action and the
//! value category for at least 95% of the observations, and every
//! difference in any compared field must be listed in docs/profiles.md.

use std::collections::BTreeSet;
use std::process::Command;

use memform::embed::hashed::HashedEmbedder;
use memform::pipeline::Config;
use memform::pipeline::memorix::episode::{Deps, Traced, back_traced};
use memform::pipeline::speaker_entities;
use memform::pipeline::write::EntityRow;
use memform::state::ConvState;
use memform::store::Store;
use serde_json::{Value, json};

use crate::support::root;

/// `MEMFORM_MEMORIX_DIFF_DATASET` (to run the comparison on another dataset,
/// such as LoCoMo; its differences are then reported, not checked against
/// the docs), else the bundled coding-agent dataset.
fn dataset_path() -> (std::path::PathBuf, bool) {
    match std::env::var_os("MEMFORM_MEMORIX_DIFF_DATASET") {
        Some(p) => (p.into(), false),
        None => (root().join("datasets/coding-agent"), true),
    }
}

/// Every observation of the dataset, formed by memform with Resolve's
/// `search` (`memorix_search`).
fn traces(search: &str) -> Vec<Traced> {
    let dataset = memform::dataset::load(&dataset_path().0).unwrap();
    // Memorix's own contradiction patterns, as the real Memorix judges (`evidence_of_change` off).
    let cfg = {
        let mut c = Config::default();
        c.profile = "memorix".into();
        c.memorix.search = search.into();
        c.memorix.evidence_of_change = false;
        c
    };
    let embedder = HashedEmbedder::new(cfg.hashed_dims);
    let mut out = Vec::new();
    for conv in &dataset.conversations {
        let store = Store::in_memory().unwrap();
        let mut state = ConvState::default();
        let speakers = speaker_entities(conv, &embedder).unwrap();
        store.write_conversation(&conv.id, &conv.speakers, &speakers.iter().map(EntityRow::of).collect::<Vec<_>>()).unwrap();
        state.entities = speakers;
        for (seq, episode) in conv.episodes.iter().enumerate() {
            store.write_evidence(&conv.id, seq, episode).unwrap();
            back_traced(conv, episode, &mut state, &cfg, &store, Deps { llm: None, embedder: Some(&embedder) }, Some(&mut out)).unwrap();
        }
    }
    out
}

fn case(t: &Traced) -> Value {
    json!({
        "id": t.input.id,
        "input": {"title": t.input.title, "narrative": t.input.narrative, "facts": t.input.facts,
                  "entityName": t.input.entity_name, "type": t.input.obs_type},
        "entityNames": t.entity_names,
        "hits": t.formation.hits,
    })
}

/// memform's answer in the shape the harness gives Memorix's.
fn ours(t: &Traced) -> Value {
    let (x, r, v) = (&t.formation.extracted, &t.formation.resolution, &t.formation.value);
    json!({"title": x.title, "titleImproved": x.title_improved, "type": x.obs_type, "typeCorrected": x.type_corrected,
           "entityName": x.entity.name, "extractedFacts": x.extracted_facts, "action": r.action.as_str(),
           "targetId": r.target_id, "score": v.score, "category": v.category.as_str()})
}

const FIELDS: [&str; 10] =
    ["title", "titleImproved", "type", "typeCorrected", "entityName", "extractedFacts", "action", "targetId", "score", "category"];

fn same(field: &str, a: &Value, b: &Value) -> bool {
    match field {
        "score" => (a.as_f64().unwrap() - b.as_f64().unwrap()).abs() < 1e-9,
        _ => a == b,
    }
}

/// The `| search | observation | field |` rows of docs/profiles.md's list of differences.
fn listed_differences() -> BTreeSet<(String, String, String)> {
    let doc = std::fs::read_to_string(root().join("docs/profiles.md")).unwrap();
    let section = doc.split("### Differences from the real Memorix").nth(1).expect("docs/profiles.md lists the differences");
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells.len() > 4 && cells[1].starts_with('`')).then(|| {
                let c = |i: usize| cells[i].trim_matches('`').to_string();
                (c(1), c(2), c(3))
            })
        })
        .collect()
}

#[test]
fn the_profile_agrees_with_the_real_memorix_on_the_bundled_observations_lexical_search() {
    differential("lexical");
}

#[test]
fn the_profile_agrees_with_the_real_memorix_on_the_bundled_observations_store_search() {
    differential("store");
}

fn differential(search: &str) {
    let traces = traces(search);
    let bundled = dataset_path().1;
    assert!(!bundled || traces.len() >= 30, "{} observations", traces.len());
    let dir = tempfile::tempdir().unwrap();
    let (cases, answers) = (dir.path().join("cases.json"), dir.path().join("memorix.json"));
    std::fs::write(&cases, serde_json::to_vec(&traces.iter().map(case).collect::<Vec<_>>()).unwrap()).unwrap();
    let script = root().join("tools/memorix/differential.mjs");
    let out =
        Command::new("node").arg(&script).arg(&cases).arg(&answers).output().expect("node runs (Node 20; `make memorix` installs memorix)");
    assert!(out.status.success(), "{} failed (run `make memorix`): {}", script.display(), String::from_utf8_lossy(&out.stderr));
    let theirs: Vec<Value> = serde_json::from_slice(&std::fs::read(&answers).unwrap()).unwrap();
    assert_eq!(theirs.len(), traces.len());

    let mut agree = 0;
    let mut differences = BTreeSet::new();
    for (t, m) in traces.iter().zip(&theirs) {
        assert_eq!(m["id"], json!(t.input.id));
        let o = ours(t);
        if o["action"] == m["action"] && o["category"] == m["category"] {
            agree += 1;
        }
        for f in FIELDS {
            if !same(f, &o[f], &m[f]) {
                eprintln!("{search}: {} {f}: memform {} / memorix {}", t.input.id, o[f], m[f]);
                differences.insert((search.to_string(), t.input.id.clone(), f.to_string()));
            }
        }
    }
    let rate = agree as f64 / traces.len() as f64;
    eprintln!(
        "memorix differential ({search} search): {agree}/{} agree on action and category ({rate:.3}); {} field differences",
        traces.len(),
        differences.len()
    );
    assert!(rate >= 0.95, "agreement on action and category {rate:.3} < 0.95");
    if !bundled {
        return;
    }
    let listed: BTreeSet<_> = listed_differences().into_iter().filter(|d| d.0 == search).collect();
    let unlisted: Vec<_> = differences.difference(&listed).collect();
    let stale: Vec<_> = listed.difference(&differences).collect();
    assert!(unlisted.is_empty(), "differences not listed in docs/profiles.md: {unlisted:?}");
    assert!(stale.is_empty(), "docs/profiles.md lists differences that no longer occur: {stale:?}");
}

fn memform_in(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(crate::support::bin()).args(args).current_dir(dir).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn observation_dataset(dir: &std::path::Path, observation: &str) {
    let conv = dir.join("ds/conversations");
    std::fs::create_dir_all(&conv).unwrap();
    let body = format!(
        r#"{{"format": "memform-conversation/1", "id": "a", "speakers": ["Agent"],
 "episodes": [{{"id": "e1", "timestamp": "2025-01-01T10:00:00", "turns": [], "observations": [{observation}]}}]}}"#
    );
    std::fs::write(conv.join("a.json"), body).unwrap();
}

#[test]
fn bad_observations_warn_and_fall_back_or_exit_2_naming_the_file_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    // Invalid JSON for a field: exit 2, one line naming the file and the field.
    observation_dataset(d, r#"{"id": "o1", "title": "t", "facts": "Port: 1", "entity_name": "x", "type": "gotcha"}"#);
    let (code, stderr) = memform_in(d, &["run", "--dataset", "ds", "--profile", "memorix", "--out", "o"]);
    assert_eq!(code, Some(2), "{stderr}");
    let line = stderr.lines().find(|l| l.contains("a.json")).unwrap_or_default().to_string();
    assert!(line.contains("episodes[0].observations[0].facts") && line.contains("expected a sequence"), "{stderr}");

    // A missing narrative and an unknown type: warnings and the documented fallbacks.
    observation_dataset(d, r#"{"id": "o1", "title": "Gotcha: the lock file is never removed", "entity_name": "lock", "type": "insight"}"#);
    let (code, stderr) = memform_in(d, &["run", "--dataset", "ds", "--profile", "memorix", "--out", "o"]);
    assert_eq!(code, Some(0), "{stderr}");
    let summary: Value = serde_json::from_slice(&std::fs::read(d.join("o/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["metrics"]["warnings_by_kind"], json!({"observation_missing_narrative": 1, "observation_unknown_type": 1}));
    let row: Value = serde_json::from_str(std::fs::read_to_string(d.join("o/facts.jsonl")).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(row["content"], json!("Gotcha: the lock file is never removed"));
    assert_eq!(row["formed"]["type"], json!("gotcha"), "the title's signal corrects the fallback type: {row}");

    // LLM extraction with the rules judge: no model for Resolve and Evaluate, a config error, exit 2.
    let (code, stderr) = memform_in(
        d,
        &["run", "--dataset", "ds", "--profile", "memorix", "--extract", "llm", "--judge", "rules", "--llm", "replay", "--out", "o2"],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("LLM extraction needs the judge in LLM mode too"), "{stderr}");
    let (code, stderr) =
        memform_in(d, &["run", "--dataset", "ds", "--profile", "memorix", "--set", "memorix_search=\"orama\"", "--out", "o4"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("memorix.search = \"orama\""), "{stderr}");
    let (code, stderr) =
        memform_in(d, &["run", "--dataset", "ds", "--profile", "memorix", "--set", "ephemeral_policy=\"keep\"", "--out", "o3"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("ephemeral_policy = \"keep\""), "{stderr}");
}

#[test]
fn the_profile_runs_the_bundled_dataset_and_writes_formed_memories() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, stderr) = memform_in(
        tmp.path(),
        &["run", "--dataset", root().join("datasets/coding-agent").to_str().unwrap(), "--profile", "memorix", "--out", "o"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let summary: Value = serde_json::from_slice(&std::fs::read(tmp.path().join("o/summary.json")).unwrap()).unwrap();
    let m = &summary["metrics"];
    assert_eq!(m["observations"], json!(31));
    let counts: i64 =
        ["resolution_new", "resolution_merge", "resolution_evolve", "resolution_discard"].iter().map(|k| m[k].as_i64().unwrap()).sum();
    assert_eq!(counts, 31);
    for k in ["resolution_merge", "resolution_evolve", "resolution_discard"] {
        assert!(m[k].as_i64().unwrap() >= 1, "{k} is exercised: {m}");
    }
    let rows: Vec<Value> =
        std::fs::read_to_string(tmp.path().join("o/facts.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(rows.iter().all(|r| r["formed"]["pipeline"] == json!({"mode": "rules", "stagesCompleted": 3})));
    // The store keeps the superseded memory as history and the merged one in place.
    let store = Store::open(&tmp.path().join("o/store.sqlite")).unwrap();
    let facts = store.facts().unwrap();
    let evolved = rows.iter().find(|r| r["outcome"] == json!("evolved")).unwrap();
    let target = evolved["related"].as_str().unwrap();
    let old = facts.iter().find(|f| f.id == target).unwrap();
    assert_eq!(old.superseded_by.as_deref(), evolved["id"].as_str());
    // Provenance: the rewrite lists its target's turns beside its own.
    let turns = |f: &memform::store::StoredFact| serde_json::from_str::<Vec<String>>(&f.source_turns).unwrap();
    let rewrite = facts.iter().find(|f| Some(f.id.as_str()) == evolved["id"].as_str()).unwrap();
    let evolved_turn = evolved["turn"].as_str().unwrap().to_string();
    assert_eq!(turns(rewrite)[0], evolved_turn, "its own turn first");
    for t in turns(old) {
        assert!(turns(rewrite).contains(&t), "{t} of the target kept: {:?}", rewrite.source_turns);
    }
    let merged = rows.iter().find(|r| r["outcome"] == json!("merged")).unwrap();
    let kept = facts.iter().find(|f| Some(f.id.as_str()) == merged["related"].as_str()).unwrap();
    assert!(kept.superseded_by.is_none() && kept.invalid_at.is_none());
    // The merged observation's turn joins the memory's source turns.
    let merged_turn = merged["turn"].as_str().unwrap().to_string();
    assert!(turns(kept).contains(&merged_turn) && turns(kept).len() >= 2, "{:?}", kept.source_turns);
    // Merged in place: same id, the new narrative in front of the old one.
    assert!(
        kept.content.starts_with(merged["content"].as_str().unwrap()) && kept.content.contains("[Previous context]: "),
        "{}",
        kept.content
    );
}

/// One line per observation of a run's `facts.jsonl`: what each stage made
/// of it and where it went.
fn render_formed(out: &mut String, dir: &std::path::Path) {
    use std::fmt::Write;
    let summary: Value = serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    let m = &summary["metrics"];
    for k in [
        "observations",
        "resolution_new",
        "resolution_merge",
        "resolution_evolve",
        "resolution_discard",
        "entity_coherence",
        "entity_resolution_rate",
        "growth_rate",
        "fact_density_before",
        "fact_density_after",
        "title_quality",
        "noise_rejection_rate",
        "warnings_by_kind",
    ] {
        let _ = writeln!(out, "{k}: {}", m[k]);
    }
    for line in std::fs::read_to_string(dir.join("facts.jsonl")).unwrap().lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        let f = &r["formed"];
        let _ = writeln!(
            out,
            "{} [{}] «{}» entity={} ({}) type={}{} +facts={} -> {} {} ({}) value={:.3} {} ({}) outcome={} pipeline={}",
            r["turn"].as_str().unwrap_or("-"),
            f["pipeline"]["mode"].as_str().unwrap_or("-"),
            f["title"].as_str().unwrap_or("-"),
            f["resolvedEntity"]["name"].as_str().unwrap_or("-"),
            f["resolvedEntity"]["match"].as_str().unwrap_or("-"),
            f["type"].as_str().unwrap_or("-"),
            if f["typeCorrected"] == json!(true) { " (corrected)" } else { "" },
            f["extractedFacts"],
            f["resolution"]["action"].as_str().unwrap_or("-"),
            f["resolution"]["targetId"].as_str().unwrap_or("-"),
            f["resolution"]["reason"].as_str().unwrap_or("-"),
            f["value"]["score"].as_f64().unwrap_or(f64::NAN),
            f["value"]["category"].as_str().unwrap_or("-"),
            f["value"]["reason"].as_str().unwrap_or("-"),
            r["outcome"].as_str().unwrap_or("-"),
            f["pipeline"],
        );
    }
}

/// The bundled observations in rules mode (both searches) and in LLM mode
/// (replaying the answers recorded against the bundled SmolLM2-135M
/// server, offline), one snapshot.
#[test]
fn coding_agent_formed_memories_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let dataset = root().join("datasets/coding-agent");
    let runs: [(&str, &[&str]); 3] = [
        ("rules, lexical search (default)", &["--mode", "rules"]),
        ("rules, store search", &["--mode", "rules", "--set", "memorix_search=\"store\""]),
        ("llm (recorded SmolLM2-135M answers, replayed)", &["--mode", "llm", "--llm", "replay"]),
    ];
    let mut out = String::new();
    for (i, (title, args)) in runs.iter().enumerate() {
        let dir = tmp.path().join(format!("r{i}"));
        let mut a = vec!["run", "--dataset", dataset.to_str().unwrap(), "--profile", "memorix", "--out", dir.to_str().unwrap()];
        a.extend_from_slice(args);
        let (code, stderr) = memform_in(tmp.path(), &a);
        assert_eq!(code, Some(0), "{title}: {stderr}");
        out.push_str(&format!("# {title}\n"));
        render_formed(&mut out, &dir);
        out.push('\n');
    }
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(crate::support::snapshots_dir());
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("memorix__coding-agent", out));
}

/// Every memory a memorix run writes (the default lexical search, which
/// embeds no query) carries its vector, the run's embedder on its query text
/// as stored (a merged memory's refreshed with its rewritten text); the
/// store's search then finds a memory by that vector when its BM25 leg (an
/// AND of every query term) finds nothing.
#[test]
fn every_memory_is_written_with_the_vector_of_its_text_and_the_search_finds_it_by_it() {
    use memform::embed::Embedder;
    use memform::pipeline::memorix::resolve::Hit;
    use memform::pipeline::memorix::search::query_text;
    use memform::store::SearchParams;

    let tmp = tempfile::tempdir().unwrap();
    let (code, stderr) = memform_in(
        tmp.path(),
        &["run", "--dataset", root().join("datasets/coding-agent").to_str().unwrap(), "--profile", "memorix", "--out", "o"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let path = tmp.path().join("o/store.sqlite");
    let vectors: std::collections::BTreeMap<String, Vec<f32>> = {
        let conn = rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let mut st = conn.prepare("SELECT fact_id, vector FROM embeddings").unwrap();
        st.query_map([], |r| Ok((r.get::<_, String>(0)?, memform::store::blob_to_vector(&r.get::<_, Vec<u8>>(1)?))))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    };
    let store = Store::open(&path).unwrap();
    let facts = store.facts().unwrap();
    let ids: BTreeSet<&str> = facts.iter().map(|f| f.id.as_str()).collect();
    assert!(facts.len() >= 10, "{} memories", facts.len());
    assert_eq!(vectors.keys().map(String::as_str).collect::<BTreeSet<_>>(), ids, "one vector per memory written");

    let rows: Vec<Value> =
        std::fs::read_to_string(tmp.path().join("o/facts.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let merged: BTreeSet<&str> = rows.iter().filter(|r| r["outcome"] == json!("merged")).filter_map(|r| r["related"].as_str()).collect();
    assert!(!merged.is_empty(), "the run merges a memory in place");

    let cfg = Config::default();
    let embedder = HashedEmbedder::new(cfg.hashed_dims);
    let params = SearchParams::from_config(&cfg);
    let live = store.live_fact_ids().unwrap();
    for f in &facts {
        let hit = Hit {
            id: f.id.clone(),
            title: f.object.clone(),
            narrative: f.content.clone(),
            facts: vec![],
            entity_name: f.subject.clone(),
            score: 0.0,
        };
        let text = query_text(&hit);
        let expected = embedder.embed(&[&text], "test").unwrap().pop().unwrap();
        // A merged memory's vector is its rewritten text's, not its first one's.
        assert_eq!(vectors[&f.id], expected, "{} (merged: {})", f.id, merged.contains(f.id.as_str()));
        if !live.contains(&f.id) {
            continue;
        }
        // No memory holds the made-up term, so the BM25 leg matches nothing.
        let hits = store.search(&f.conversation_id, &format!("{text} qqzxvj"), &expected, &params).unwrap();
        let top = hits.first().unwrap_or_else(|| panic!("{}: no hit", f.id));
        assert_eq!((top.fact_id.as_str(), top.bm25), (f.id.as_str(), None), "{hits:?}");
        assert!(top.vector.unwrap() > 0.999, "{hits:?}");
    }
}

/// The QA evaluation of a memorix run retrieves memories: the bundled
/// scenarios' questions against the memories formed from their turns.
#[test]
fn a_memorix_run_answers_qa_questions_from_its_memories() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, stderr) = memform_in(
        tmp.path(),
        &["run", "--dataset", root().join("datasets/scenarios").to_str().unwrap(), "--profile", "memorix", "--out", "o"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let summary: Value = serde_json::from_slice(&std::fs::read(tmp.path().join("o/summary.json")).unwrap()).unwrap();
    let m = &summary["metrics"];
    assert!(m["qa_items_indexed"].as_i64().unwrap() >= 1, "{m}");
    assert!(m["qa_recall_any_at_10"].as_f64().unwrap() > 0.0, "qa_recall_any_at_10 {}", m["qa_recall_any_at_10"]);
}

/// A sweep hands the profile the run's stages too: each point's memorix
/// memories carry their vectors, so its QA figures are a run's, not 0.
#[test]
fn a_memorix_sweep_point_answers_qa_questions_as_a_run_does() {
    let tmp = tempfile::tempdir().unwrap();
    let scenarios = root().join("datasets/scenarios");
    let args = ["--dataset", scenarios.to_str().unwrap(), "--set", "profile=\"memorix\""];
    let (code, stderr) = memform_in(tmp.path(), &[&["sweep"], &args[..], &["--grid", "memorix_core_min=0.6", "--out", "s"]].concat());
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stderr) = memform_in(tmp.path(), &[&["run"], &args[..], &["--out", "r"]].concat());
    assert_eq!(code, Some(0), "{stderr}");
    let summary: Value = serde_json::from_slice(&std::fs::read(tmp.path().join("r/summary.json")).unwrap()).unwrap();
    let csv = std::fs::read_to_string(tmp.path().join("s/sweep.csv")).unwrap();
    let mut lines = csv.lines().map(|l| l.split(',').collect::<Vec<_>>());
    let header = lines.next().unwrap();
    let row = lines.next().unwrap();
    for key in ["qa_recall_any_at_10", "qa_mrr"] {
        let i = header.iter().position(|h| *h == key).unwrap_or_else(|| panic!("{key} in {header:?}"));
        let point: f64 = row[i].parse().unwrap();
        let run = summary["metrics"][key].as_f64().unwrap();
        assert!(run > 0.0, "{key} {run}");
        assert!((point - run).abs() < 1e-6, "{key}: sweep point {point}, run {run}");
    }
}
