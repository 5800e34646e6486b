//! Controlled mode means one thing under every profile (docs/profiles.md,
//! "Write modes"): a replacement is blocked whole. The replacing candidate
//! is not written, its outcome is `blocked`, the memory it would have
//! replaced stays live, and the record (facts.jsonl), the `blocked` metric
//! and the store's audit agree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use memform::store::Store;
use serde_json::Value;

use crate::support::{bin, root};

fn run(dataset: &Path, profile: &str, write_mode: &str, out: &Path) -> (Vec<Value>, Value, Store) {
    let o = Command::new(bin())
        .args(["run", "--dataset"])
        .arg(dataset)
        .arg("--out")
        .arg(out)
        .args(["--profile", profile, "--mode", "rules", "--write-mode", write_mode, "--no-qa"])
        .output()
        .expect("spawn memform");
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let facts = std::fs::read_to_string(out.join("facts.jsonl"))
        .expect("facts.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("row"))
        .collect();
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).expect("summary")).expect("json");
    (facts, summary["metrics"].clone(), Store::open(&out.join("store.sqlite")).expect("store"))
}

/// Runs `dataset` under `profile` in controlled mode and checks that its
/// record, metrics and audit agree; returns the number of blocked candidates.
fn check_controlled(dataset: &Path, profile: &str) -> usize {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (facts, metrics, store) = run(dataset, profile, "controlled", &tmp.path().join("o"));
    let stored: BTreeMap<String, memform::store::StoredFact> =
        store.facts().expect("facts").into_iter().map(|f| (f.id.clone(), f)).collect();
    let live: BTreeSet<&String> = stored.values().filter(|f| f.invalid_at.is_none() && f.superseded_by.is_none()).map(|f| &f.id).collect();
    let audit = store.audit().expect("audit");
    let blocked: Vec<&Value> = facts.iter().filter(|r| r["outcome"] == "blocked").collect();
    assert_eq!(metrics["blocked"], blocked.len(), "{profile}: the blocked metric counts the blocked candidates");
    for r in &blocked {
        let id = r["id"].as_str().expect("id");
        assert_eq!(r["stored"], false, "{profile}: {id} is blocked, yet recorded as stored");
        assert!(!stored.contains_key(id), "{profile}: the blocked candidate {id} was written to the store");
        let target = r["related"].as_str().unwrap_or_else(|| panic!("{profile}: {id} names no memory it would replace: {r}"));
        assert!(live.contains(&target.to_string()), "{profile}: {target}, which {id} would have replaced, is no longer live");
        assert!(
            audit.iter().any(|(_, _, a)| a.candidate_id == id && a.outcome.as_str() == "blocked"),
            "{profile}: the audit has no blocked row for {id}"
        );
    }
    // Every blocked audit row is a blocked candidate in the record.
    let by_id: BTreeMap<&str, &Value> = facts.iter().map(|r| (r["id"].as_str().expect("id"), r)).collect();
    for (_, _, a) in audit.iter().filter(|(_, _, a)| a.outcome.as_str() == "blocked") {
        let rec = by_id.get(a.candidate_id.as_str()).unwrap_or_else(|| panic!("{profile}: audit row for unknown {}", a.candidate_id));
        assert_eq!(rec["outcome"], "blocked", "{profile}: the audit blocked {}, the record says {}", a.candidate_id, rec["outcome"]);
    }
    // Nothing controlled mode wrote ended a memory.
    assert!(stored.values().all(|f| f.invalid_at.is_none() && f.superseded_by.is_none()), "{profile}: a memory was ended");
    blocked.len()
}

#[test]
fn controlled_mode_blocks_a_replacement_whole_under_every_profile() {
    let datasets = root().join("datasets");
    let soda = check_controlled(&datasets.join("scenarios"), "soda");
    let signet = check_controlled(&datasets.join("signet"), "signet");
    let memorix = check_controlled(&datasets.join("coding-agent"), "memorix");
    assert!(soda > 0 && signet > 0 && memorix > 0, "each profile has a replacement to block: {soda}, {signet}, {memorix}");
}

#[test]
fn soda_in_controlled_mode_leaves_no_contradicting_pair_live() {
    // The job change: "works at Google", then "works at Anthropic". Full mode
    // invalidates the first; controlled mode keeps it and writes neither side of the change.
    let ds = root().join("datasets/scenarios");
    let tmp = tempfile::tempdir().expect("tempdir");
    let (full, _, full_store) = run(&ds, "soda", "full", &tmp.path().join("full"));
    let (controlled, _, store) = run(&ds, "soda", "controlled", &tmp.path().join("controlled"));
    let invalidated: BTreeSet<String> =
        full_store.facts().expect("facts").into_iter().filter(|f| f.invalid_at.is_some()).map(|f| f.id).collect();
    assert!(!invalidated.is_empty(), "full mode invalidates something");
    // The first replacement of each conversation (later ones meet another
    // state in controlled mode, the first having been blocked).
    let mut replacing: BTreeMap<&str, &Value> = BTreeMap::new();
    for r in full.iter().filter(|r| r["ended"].as_array().is_some_and(|e| e.iter().any(|x| invalidated.contains(x.as_str().unwrap_or("")))))
    {
        replacing.entry(r["conversation"].as_str().expect("conversation")).or_insert(r);
    }
    assert!(!replacing.is_empty());
    let live: BTreeSet<String> = store.live_fact_ids().expect("live");
    for r in replacing.into_values() {
        let id = r["id"].as_str().expect("id");
        let c = controlled.iter().find(|c| c["id"] == id).expect("the same candidate in controlled mode");
        assert_eq!(c["outcome"], "blocked", "{id}: {c}");
        assert!(!live.contains(id), "{id}: the replacing fact is not live beside the one it replaces");
        for old in r["ended"].as_array().expect("ended") {
            assert!(live.contains(old.as_str().expect("id")), "{old} stays live");
        }
    }
}
