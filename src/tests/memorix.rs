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

use memform::config::Config;
use memform::embed::hashed::HashedEmbedder;
use memform::pipeline::memorix::episode::{Traced, back_traced};
use memform::pipeline::speaker_entities;
use memform::pipeline::write::EntityRow;
use memform::state::ConvState;
use memform::store::Store;
use serde_json::{Value, json};

use crate::support::root;

/// Every observation of the coding-agent dataset, formed by memform.
fn traces() -> Vec<Traced> {
    let dataset = memform::dataset::load(&root().join("datasets/coding-agent")).unwrap();
    let cfg = Config { profile: "memorix".into(), ..Config::default() };
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
            back_traced(conv, episode, &mut state, &cfg, &store, Some(&mut out)).unwrap();
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

/// The `| observation | field |` rows of docs/profiles.md's list of differences.
fn listed_differences() -> BTreeSet<(String, String)> {
    let doc = std::fs::read_to_string(root().join("docs/profiles.md")).unwrap();
    let section = doc.split("### Differences from the real Memorix").nth(1).expect("docs/profiles.md lists the differences");
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells.len() > 3 && cells[1].starts_with('`'))
                .then(|| (cells[1].trim_matches('`').to_string(), cells[2].trim_matches('`').to_string()))
        })
        .collect()
}

#[test]
fn the_profile_agrees_with_the_real_memorix_on_the_bundled_observations() {
    let traces = traces();
    assert!(traces.len() >= 30, "{} observations", traces.len());
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
                eprintln!("{} {f}: memform {} / memorix {}", t.input.id, o[f], m[f]);
                differences.insert((t.input.id.clone(), f.to_string()));
            }
        }
    }
    let rate = agree as f64 / traces.len() as f64;
    eprintln!(
        "memorix differential: {agree}/{} agree on action and category ({rate:.3}); {} field differences",
        traces.len(),
        differences.len()
    );
    assert!(rate >= 0.95, "agreement on action and category {rate:.3} < 0.95");
    let listed = listed_differences();
    let unlisted: Vec<_> = differences.difference(&listed).collect();
    let stale: Vec<_> = listed.difference(&differences).collect();
    assert!(unlisted.is_empty(), "differences not listed in docs/profiles.md: {unlisted:?}");
    assert!(stale.is_empty(), "docs/profiles.md lists differences that no longer occur: {stale:?}");
}
