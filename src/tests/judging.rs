//! Judging at scale (issue 11): one speaker stating many facts with one
//! predicate. A multi-valued predicate (`likes`) pairs nothing; another
//! (`prefers`) pairs each candidate with at most `max_pairs_per_candidate`
//! earlier facts, every judged pair is a `verdicts` row and counted by the
//! metrics, and `facts.jsonl` lists three plain `neither` pairs per
//! candidate and counts the rest.

use std::path::Path;

use memform::pipeline::Config;
use memform::store::Store;

use crate::support::run_rules;

/// `n` distinct made-up two-word objects (as benches/gen_likes.py makes them).
fn objects(n: usize) -> Vec<String> {
    const SYL: [&str; 16] = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "po", "da", "fi", "gu", "ha", "je", "bo"];
    let word = |mut k: usize| {
        (0..3)
            .map(|_| {
                let s = SYL[k % 16];
                k /= 16;
                s
            })
            .collect::<String>()
    };
    let side = (1..).find(|s| s * s >= n).unwrap_or(1);
    (0..n).map(|i| format!("{} {}", word(i % side), word(7 * side + 11 + (i / side + i) % side))).collect()
}

/// A native dataset: one conversation, one speaker saying `I <verb> <object>.`
/// for `n` objects, ten turns a session.
fn write_dataset(dir: &Path, verb: &str, n: usize) {
    let turns: Vec<serde_json::Value> = objects(n)
        .iter()
        .enumerate()
        .map(|(i, o)| serde_json::json!({"id": format!("t{}", i + 1), "speaker": "Alice", "text": format!("I {verb} {o}.")}))
        .collect();
    let episodes: Vec<serde_json::Value> = turns
        .chunks(10)
        .enumerate()
        .map(|(s, t)| serde_json::json!({"id": format!("s{}", s + 1), "timestamp": format!("2024-01-{:02}T10:00:00", s + 1), "turns": t}))
        .collect();
    let conv = serde_json::json!({"format": "memform-conversation/1", "id": verb, "speakers": ["Alice"], "episodes": episodes});
    std::fs::create_dir_all(dir.join("conversations")).unwrap();
    std::fs::write(dir.join(format!("conversations/{verb}.json")), conv.to_string()).unwrap();
}

fn facts(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("facts.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn many_likes_are_not_paired_with_each_other() {
    let (data, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_dataset(data.path(), "like", 200);
    let run = run_rules(data.path(), out.path(), &Config::default(), Some(1));
    let m = &run.summary.metrics;
    assert_eq!((m["candidates"].as_u64(), m["stored_facts"].as_u64()), (Some(200), Some(200)));
    assert_eq!(m["contradictions_judged"].as_u64(), Some(0));
    assert!(facts(out.path()).iter().all(|f| f["verdicts"] == serde_json::json!([]) && f.get("neither_unlisted").is_none()));
}

#[test]
fn pairs_are_capped_counted_stored_and_listed() {
    let (data, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let n = 40;
    write_dataset(data.path(), "prefer", n);
    let mut cfg = Config::default();
    let run = run_rules(data.path(), out.path(), &cfg, Some(1));
    let rows = facts(out.path());
    assert_eq!(rows.len(), n);
    let cap = cfg.soda.max_pairs_per_candidate;
    let mut expected_total = 0;
    for (k, f) in rows.iter().enumerate() {
        assert_eq!(f["outcome"], "created", "{f}");
        // Candidate k meets the facts of the sessions before its own (ten
        // each), all `prefers` with another object.
        let judged = (k / 10 * 10).min(cap);
        expected_total += judged;
        let listed = f["verdicts"].as_array().unwrap();
        assert!(listed.iter().all(|v| v["verdict"] == "neither" && v["reason"] == "same_predicate"));
        assert_eq!(listed.len(), judged.min(3), "{f}");
        assert_eq!(f.get("neither_unlisted").and_then(|c| c.as_u64()).unwrap_or(0) as usize, judged.saturating_sub(3), "{f}");
    }
    let m = &run.summary.metrics;
    assert_eq!(m["contradictions_judged"].as_u64(), Some(expected_total as u64));
    assert_eq!(m["verdict_neither"].as_u64(), Some(expected_total as u64));
    let store = Store::open(&out.path().join("store.sqlite")).unwrap();
    assert_eq!(store.verdicts().unwrap().len(), expected_total, "a verdicts row per judged pair");

    // The cap is an ordinary numeric key: a sweep axis takes it.
    let axis = memform::sweep::parse_axis("max_pairs_per_candidate=2:6:2").unwrap();
    assert_eq!(axis.values, ["2", "4", "6"]);
    cfg.set("max_pairs_per_candidate=2").unwrap();
    let out2 = tempfile::tempdir().unwrap();
    let run = run_rules(data.path(), out2.path(), &cfg, Some(1));
    assert_eq!(run.summary.metrics["contradictions_judged"].as_u64(), Some((0..n).map(|k| (k / 10 * 10).min(2) as u64).sum()));
}

/// `memform report` redraws the verdict table the run drew: the plain
/// `neither` pairs `facts.jsonl` does not list are counted per pairing
/// reason, so the table still adds up to every judged pair.
#[test]
fn the_redrawn_verdict_table_counts_the_unlisted_pairs() {
    let (data, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_dataset(data.path(), "prefer", 40);
    let run = run_rules(data.path(), out.path(), &Config::default(), Some(1));
    let judged = run.summary.metrics["contradictions_judged"].as_u64().unwrap();
    let table_row = |report: &str| -> String {
        report.lines().find(|l| l.starts_with("| `neither` | same_predicate |")).unwrap_or_default().to_string()
    };
    let before = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(table_row(&before).starts_with(&format!("| `neither` | same_predicate | {judged} |")), "{}", table_row(&before));
    memform::regenerate::regenerate(out.path()).unwrap();
    let after = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert_eq!(table_row(&after), table_row(&before));
    assert_eq!(after, before);
    let rows = facts(out.path());
    assert!(rows.iter().any(|f| f.get("neither_unlisted_by_reason").is_some()), "some pairs go unlisted");
}
