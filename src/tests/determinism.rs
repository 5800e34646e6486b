//! The summary (timings aside), facts.jsonl and the store's content are the
//! same whatever the thread count and from run to run.

use memform::pipeline::Config;
use memform::store::Store;

use crate::support::{jsonl_without_timings, run_rules, scenarios_dir, without_timings};

fn outputs(threads: usize) -> (serde_json::Value, Vec<serde_json::Value>, Vec<serde_json::Value>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    run_rules(&scenarios_dir(), dir.path(), &Config::default(), Some(threads));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).expect("summary")).expect("json");
    let facts = jsonl_without_timings(&dir.path().join("facts.jsonl"));
    let episodes = jsonl_without_timings(&dir.path().join("episodes.jsonl"));
    let dump = Store::open(&dir.path().join("store.sqlite")).expect("open").dump().expect("dump");
    (without_timings(summary), facts, episodes, dump)
}

#[test]
fn same_outputs_for_any_thread_count_and_run() {
    let one = outputs(1);
    assert!(one.0["metrics"]["stored_facts"].as_u64().unwrap_or(0) > 0, "the scenarios store facts");
    assert!(one.3.contains("## facts"));
    for threads in [4, 1, 3] {
        let other = outputs(threads);
        assert_eq!(one.0, other.0, "summary with {threads} threads");
        assert_eq!(one.1, other.1, "facts.jsonl with {threads} threads");
        assert_eq!(one.2, other.2, "episodes.jsonl with {threads} threads");
        assert_eq!(one.3, other.3, "store content with {threads} threads");
    }
}
