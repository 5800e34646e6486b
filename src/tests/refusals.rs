//! Bad input refused up front, in one line naming the file or flag and
//! the field, exit 2: an `--llm` mode that does not exist (in rules mode
//! too), an `--embed-cache` that is a file, a directory of LongMemEval
//! files, a memorix observation without an entity, and memorix's refused
//! pair of stage modes (once, before the run starts), and memorix with
//! the gold extractor.

use std::path::Path;
use std::process::Command;

use crate::support::{bin, root};

fn memform(args: &[&str], cwd: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(bin()).args(args).current_dir(cwd).output().expect("spawn memform");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn conversation(dir: &Path, id: &str, observation: Option<&str>) {
    let conv = dir.join("conversations");
    std::fs::create_dir_all(&conv).expect("mkdir");
    let observations = observation.map(|o| format!(r#", "observations": [{o}]"#)).unwrap_or_default();
    let body = format!(
        r#"{{"format": "memform-conversation/1", "id": "{id}", "speakers": ["Ann"],
 "episodes": [{{"id": "e1", "timestamp": "2024-01-01T10:00:00",
   "turns": [{{"id": "t1", "speaker": "Ann", "text": "I work at Google."}}]{observations}}}]}}"#
    );
    std::fs::write(conv.join(format!("{id}.json")), body).expect("write");
}

#[test]
fn an_unknown_llm_mode_is_refused_in_rules_mode_too() {
    let tmp = tempfile::tempdir().expect("tempdir");
    conversation(&tmp.path().join("ds"), "a", None);
    for args in
        [&["run", "--dataset", "ds", "--llm", "bogus", "--out", "o"][..], &["run", "--dataset", "ds", "--embed", "bogus", "--out", "o"]]
    {
        let (code, stdout, stderr) = memform(args, tmp.path());
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stdout.is_empty());
        assert!(stderr.starts_with("error: invalid value 'bogus' for '--"), "{stderr}");
        assert!(!tmp.path().join("o/run.json").exists(), "nothing ran");
    }
}

#[test]
fn an_embed_cache_that_is_a_file_is_named_as_not_a_directory() {
    let tmp = tempfile::tempdir().expect("tempdir");
    conversation(&tmp.path().join("ds"), "a", None);
    std::fs::write(tmp.path().join("cache.bin"), "x").expect("write");
    let (code, _, stderr) =
        memform(&["run", "--dataset", "ds", "--embedder", "minilm", "--embed-cache", "cache.bin", "--out", "o"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("cache.bin: the embedding cache (--embed-cache): not a directory"), "{stderr}");
    assert!(!stderr.contains("--dataset cache.bin"), "the cache is not the dataset: {stderr}");

    // An empty cache directory: the miss names the dataset and the cache.
    std::fs::create_dir(tmp.path().join("cache")).expect("mkdir");
    let (code, _, stderr) =
        memform(&["run", "--dataset", "ds", "--embedder", "minilm", "--embed-cache", "cache", "--out", "o"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("memform run --dataset ds --embedder minilm --embed-cache cache --embed record"), "{stderr}");
}

#[test]
fn a_directory_of_longmemeval_files_gets_the_hint_to_pass_the_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("lme");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::copy(root().join("datasets/longmemeval-sample/longmemeval_sample.json"), dir.join("lme.json")).expect("copy");
    let (code, _, stderr) = memform(&["run", "--dataset", "lme", "--out", "o"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let file = Path::new("lme").join("lme.json").display().to_string();
    assert!(stderr.contains(&format!("{file} is a LongMemEval file: pass the file itself (--dataset {file})")), "{stderr}");
    // The file itself runs.
    let (code, _, stderr) = memform(&["run", "--dataset", &file, "--out", "o", "--no-qa"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn a_memorix_observation_with_an_empty_entity_name_is_refused_at_load() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for name in ["", "  "] {
        let ds = tmp.path().join(format!("ds{}", name.len()));
        let obs = format!(r#"{{"id": "o1", "title": "Gotcha: the lock", "narrative": "n", "entity_name": "{name}", "type": "gotcha"}}"#);
        conversation(&ds, "a", Some(&obs));
        let (code, _, stderr) =
            memform(&["run", "--dataset", ds.to_str().expect("utf-8"), "--profile", "memorix", "--out", "o"], tmp.path());
        assert_eq!(code, Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("a.json") && stderr.contains("episodes[0].observations[0].entity_name: empty"), "{stderr}");
    }
}

#[test]
fn memorix_refuses_llm_extraction_with_the_rules_judge_once_before_the_run() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for id in ["a", "b", "c"] {
        conversation(&tmp.path().join("ds"), id, None);
    }
    for keep_going in [false, true] {
        let mut args =
            vec!["run", "--dataset", "ds", "--profile", "memorix", "--extract", "llm", "--judge", "rules", "--llm", "replay", "--out", "o"];
        if keep_going {
            args.push("--keep-going");
        }
        let (code, stdout, stderr) = memform(&args, tmp.path());
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stdout.is_empty(), "no summary: {stdout}");
        assert_eq!(stderr.matches("LLM extraction needs the judge in LLM mode too").count(), 1, "once: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(!tmp.path().join("o/run.json").exists(), "the run did not start");
    }
}

#[test]
fn memorix_refuses_gold_extraction_before_the_run() {
    // The profile extracts its own observations: a run with the gold
    // extractor would form without it while run.json said `gold`.
    let tmp = tempfile::tempdir().expect("tempdir");
    let conv = tmp.path().join("ds/conversations");
    std::fs::create_dir_all(&conv).expect("mkdir");
    let body = r#"{"format": "memform-conversation/1", "id": "a", "speakers": ["Ann"],
 "episodes": [{"id": "e1", "timestamp": "2024-01-01T10:00:00",
   "turns": [{"id": "t1", "speaker": "Ann", "text": "I work at Google."}]}],
 "gold": {"facts": [{"id": "g1", "episode": "e1", "text": "Ann works at Google", "evidence": ["t1"]}]}}"#;
    std::fs::write(conv.join("a.json"), body).expect("write");
    let args = ["run", "--dataset", "ds", "--profile", "memorix", "--extract", "gold", "--no-qa", "--out", "o"];
    let (code, stdout, stderr) = memform(&args, tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stdout.is_empty(), "no summary: {stdout}");
    assert!(stderr.contains("--extract gold is not available"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!tmp.path().join("o/run.json").exists(), "the run did not start");
    // soda takes the same gold extraction.
    let (code, _, stderr) = memform(&["run", "--dataset", "ds", "--extract", "gold", "--no-qa", "--out", "p"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
}
