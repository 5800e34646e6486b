//! The recorded boundary's integrity and housekeeping, through the CLI on a
//! copy of the bundled scenarios: an edited fixture answer or a moved
//! embedding key is loud (exit 2 naming the file) until rehashed; `compare`
//! does not reuse a run made with other fixtures or vectors; `fixtures
//! prune --dry-run` after a prompt-version bump lists exactly the old
//! version's fixtures; `embeddings prune` drops exactly an unneeded vector.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{bin, scenarios_dir};

fn memform(args: &[&str], cwd: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(bin()).args(args).current_dir(cwd).output().expect("spawn memform");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// A copy of the scenarios in a temporary directory, as `<tmp>/scenarios`.
fn scenarios_copy() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    copy_dir(&scenarios_dir(), &tmp.path().join("scenarios"));
    tmp
}

fn fixtures_dir(ds: &Path) -> PathBuf {
    std::fs::read_dir(ds.join("fixtures")).expect("fixtures").next().expect("model dir").expect("entry").path()
}

fn cache_dir(ds: &Path) -> PathBuf {
    std::fs::read_dir(ds.join("embeddings")).expect("embeddings").next().expect("cache dir").expect("entry").path()
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))).expect("json")
}

fn write_json(p: &Path, v: &serde_json::Value) {
    std::fs::write(p, serde_json::to_string_pretty(v).expect("json") + "\n").expect("write");
}

/// The extraction fixture of job-change's first episode.
fn job_change_e1(ds: &Path) -> PathBuf {
    std::fs::read_dir(fixtures_dir(ds))
        .expect("read")
        .map(|e| e.expect("entry").path())
        .find(|p| {
            let v = read_json(p);
            v["request"]["stage"] == "extract" && v["context"]["conversation"] == "job-change" && v["context"]["episode"] == "e1"
        })
        .expect("the job-change e1 extraction fixture")
}

fn run_llm(tmp: &Path, out: &str) -> (Option<i32>, String, String) {
    memform(
        &["run", "--dataset", "scenarios", "--mode", "llm", "--embedder", "minilm", "--set", "llm_url=http://127.0.0.1:9", "--out", out],
        tmp,
    )
}

#[test]
fn an_edited_fixture_answer_is_loud_until_rehashed() {
    let tmp = scenarios_copy();
    let ds = tmp.path().join("scenarios");
    let (code, before, stderr) = run_llm(tmp.path(), "before");
    assert_eq!(code, Some(0), "{stderr}");

    let victim = job_change_e1(&ds);
    let mut v = read_json(&victim);
    let text = v["response"]["text"].as_str().expect("text").to_string();
    v["response"]["text"] = format!("{text} ").into();
    write_json(&victim, &v);
    let (code, _, stderr) = run_llm(tmp.path(), "edited");
    assert_eq!(code, Some(2), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    let relative = victim.strip_prefix(tmp.path()).expect("inside tmp").display().to_string();
    assert!(errors[0].contains(&format!("fixture {relative}: ")) && errors[0].contains("answer_sha256"), "names the file: {}", errors[0]);
    assert!(errors[0].contains("memform fixtures rehash"), "{}", errors[0]);

    let (code, listed, stderr) = memform(&["fixtures", "rehash", "--dataset", "scenarios"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(listed.trim(), format!("rehashed {relative}"));
    assert!(stderr.contains("1 rewritten"), "{stderr}");
    let (code, after, stderr) = run_llm(tmp.path(), "after");
    assert_eq!(code, Some(0), "a deliberate edit is accepted: {stderr}");
    let m = |s: &str| serde_json::from_str::<serde_json::Value>(s).expect("summary")["metrics"].clone();
    assert_eq!(m(&before)["candidates"], m(&after)["candidates"], "a trailing space changes no fact");
    let (code, _, _) = memform(&["fixtures", "rehash", "--dataset", "scenarios"], tmp.path());
    assert_eq!(code, Some(0));
}

#[test]
fn the_committed_fixtures_and_cache_pass_their_own_checks() {
    let ds = scenarios_dir();
    let r = memform::llm::fixtures::rehash(&fixtures_dir(&ds).join("does-not-exist")).expect("no dir");
    assert!(r.rewritten.is_empty());
    for p in std::fs::read_dir(fixtures_dir(&ds)).expect("read").map(|e| e.expect("entry").path()) {
        let store = memform::llm::FixtureStore::new(p.parent().expect("dir"));
        let key = p.file_stem().expect("stem").to_string_lossy().into_owned();
        store.get(&key).unwrap_or_else(|e| panic!("{}: {e}", p.display())).expect("present");
    }
    let info = memform::embed::cache::cache_info(&cache_dir(&ds)).expect("info").expect("recorded");
    assert_eq!(info.problem, None);
}

/// Reverses the keys of the cache's `index.json`, rows kept.
fn reverse_keys(dir: &Path) {
    let path = dir.join("index.json");
    let mut v = read_json(&path);
    let entries = v["entries"].as_array_mut().expect("entries");
    let mut keys: Vec<serde_json::Value> = entries.iter().map(|e| e["key"].clone()).collect();
    keys.reverse();
    for (e, k) in entries.iter_mut().zip(keys) {
        e["key"] = k;
    }
    write_json(&path, &v);
}

#[test]
fn moved_embedding_keys_are_loud_until_rehashed() {
    let tmp = scenarios_copy();
    let ds = tmp.path().join("scenarios");
    let run = |out: &str| memform(&["run", "--dataset", "scenarios", "--embedder", "minilm", "--out", out], tmp.path());
    let (code, before, stderr) = run("before");
    assert_eq!(code, Some(0), "{stderr}");
    reverse_keys(&cache_dir(&ds));
    let (code, _, stderr) = run("moved");
    assert_eq!(code, Some(2), "{stderr}");
    let error = stderr.lines().find(|l| l.starts_with("error:")).expect("an error line");
    let index = cache_dir(&ds).join("index.json");
    assert!(error.contains(&index.strip_prefix(tmp.path()).expect("inside tmp").display().to_string()), "names the file: {error}");
    assert!(error.contains("does not match its recorded SHA-256"), "{error}");
    let (code, listed, _) = memform(&["embeddings", "list", "--dataset", "scenarios"], tmp.path());
    assert_eq!(code, Some(0));
    assert!(listed.contains("FAILED"), "{listed}");

    let (code, stdout, stderr) = memform(&["embeddings", "rehash", "--dataset", "scenarios"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.starts_with("rehashed "), "{stdout}");
    let (code, after, stderr) = run("after");
    assert_eq!(code, Some(0), "the deliberate edit is accepted: {stderr}");
    let m = |s: &str| serde_json::from_str::<serde_json::Value>(s).expect("summary")["metrics"].clone();
    assert_ne!(m(&before), m(&after), "moved vectors change the metrics, now visibly");
}

/// Runs `compare --modes rules,llm` (MiniLM) in `tmp` and returns stderr.
fn compare(tmp: &Path) -> String {
    let (code, _, stderr) = memform(
        &[
            "compare",
            "--dataset",
            "scenarios",
            "--modes",
            "rules,llm",
            "--embedder",
            "minilm",
            "--set",
            "llm_url=http://127.0.0.1:9",
            "--runs-dir",
            "runs",
            "--out",
            "cmp",
        ],
        tmp,
    );
    assert_eq!(code, Some(0), "{stderr}");
    stderr
}

#[test]
fn compare_reruns_when_fixtures_or_vectors_changed() {
    let tmp = scenarios_copy();
    let ds = tmp.path().join("scenarios");
    assert_eq!(compare(tmp.path()).matches("running ").count(), 2);
    assert_eq!(compare(tmp.path()).matches("reusing ").count(), 2, "nothing changed");

    // An edited, rehashed answer: the LLM run is stale, the rules run is not.
    let victim = job_change_e1(&ds);
    let mut v = read_json(&victim);
    v["response"]["text"] = format!("{} ", v["response"]["text"].as_str().expect("text")).into();
    write_json(&victim, &v);
    let (code, _, stderr) = memform(&["fixtures", "rehash", "--dataset", "scenarios"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let stderr = compare(tmp.path());
    assert!(stderr.contains("reusing runs/scenarios-soda-rules-minilm+llm_url=http___127.0.0.1_9"), "{stderr}");
    assert!(stderr.contains("running llm+embedder=minilm"), "{stderr}");
    let manifest = read_json(&tmp.path().join("runs/scenarios-soda-llm-minilm+llm_url=http___127.0.0.1_9/run.json"));
    let digest = memform::provenance::fixture_set_digest(&fixtures_dir(Path::new(&ds))).expect("digest");
    assert_eq!(manifest["recorded"]["fixtures"]["sha256"], digest["sha256"]);
    assert_eq!(manifest["recorded"]["fixtures"]["files"], digest["files"]);

    // A changed vector cache: both runs read it.
    reverse_keys(&cache_dir(&ds));
    let (code, _, stderr) = memform(&["embeddings", "rehash", "--dataset", "scenarios"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(compare(tmp.path()).matches("running ").count(), 2);
}

#[test]
fn fixtures_prune_after_a_prompt_version_bump_lists_exactly_the_old_version() {
    let tmp = scenarios_copy();
    let ds = tmp.path().join("scenarios");
    let dir = fixtures_dir(&ds);
    let prune = |extra: &[&str]| {
        let mut args = vec!["fixtures", "prune", "--dataset", "scenarios", "--embedder", "minilm"];
        args.extend_from_slice(extra);
        memform(&args, tmp.path())
    };
    let (code, stdout, stderr) = prune(&["--dry-run"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.is_empty(), "every committed fixture is needed: {stdout}");

    // The state right after a bump and a re-record: the current fixtures
    // (as recorded) and, beside them, the same requests at the previous version.
    let mut old = BTreeSet::new();
    for p in std::fs::read_dir(&dir).expect("read").map(|e| e.expect("entry").path()).collect::<Vec<_>>() {
        let mut v = read_json(&p);
        let version = v["request"]["template"]["version"].as_u64().expect("version");
        v["request"]["template"]["version"] = (version - 1).into();
        let material: memform::llm::fixtures::KeyMaterial = serde_json::from_value(v["request"].clone()).expect("key material");
        let key = material.key().expect("key");
        v["key"] = key.clone().into();
        let path = dir.join(format!("{key}.json"));
        write_json(&path, &v);
        old.insert(
            Path::new("scenarios").join("fixtures").join(dir.file_name().expect("name")).join(format!("{key}.json")).display().to_string(),
        );
    }
    let total = std::fs::read_dir(&dir).expect("read").count();
    let (code, stdout, stderr) = prune(&["--dry-run"]);
    assert_eq!(code, Some(0), "{stderr}");
    let listed: BTreeSet<String> = stdout
        .lines()
        .map(|l| l.strip_prefix("would remove ").unwrap_or_else(|| panic!("{l}")).split(" (").next().expect("path").to_string())
        .collect();
    assert_eq!(listed, old, "exactly the old version's fixtures");
    assert!(stdout.lines().all(|l| l.contains(" v")), "{stdout}");
    assert_eq!(std::fs::read_dir(&dir).expect("read").count(), total, "a dry run removes nothing");

    let (code, stdout, stderr) = prune(&[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout.lines().filter(|l| l.starts_with("removed ")).count(), old.len());
    assert_eq!(std::fs::read_dir(&dir).expect("read").count(), total - old.len());
    let (code, _, stderr) = memform(&["fixtures", "check", "--dataset", "scenarios", "--embedder", "minilm"], tmp.path());
    assert_eq!(code, Some(0), "what is left is exactly what is needed: {stderr}");

    // With another sampling seed the replay asks for requests nobody recorded: prune refuses.
    let (code, _, stderr) =
        memform(&["fixtures", "prune", "--dataset", "scenarios", "--embedder", "minilm", "--set", "llm_seed=7"], tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.starts_with("error: fixtures prune: ") && stderr.contains("nothing removed"), "{stderr}");
    assert!(!stderr.contains("   "), "the message has no run of spaces: {stderr}");
    assert_eq!(std::fs::read_dir(&dir).expect("read").count(), total - old.len());
}

#[test]
fn fixtures_prune_of_a_directory_shared_with_another_dataset_removes_nothing() {
    let tmp = scenarios_copy();
    let ds = tmp.path().join("scenarios");
    // One fixture directory serving two datasets: the scenarios' recordings and signet's.
    let shared = tmp.path().join("shared");
    copy_dir(&fixtures_dir(&ds), &shared);
    let signet = crate::support::root().join("datasets/signet/fixtures");
    let signet_files =
        std::fs::read_dir(std::fs::read_dir(&signet).expect("signet").next().expect("model").expect("entry").path()).expect("read").count();
    copy_dir(&std::fs::read_dir(&signet).expect("signet").next().expect("model").expect("entry").path(), &shared);
    let total = std::fs::read_dir(&shared).expect("read").count();
    assert!(signet_files > 0 && total > signet_files);
    for dry in [true, false] {
        let mut args = vec!["fixtures", "prune", "--dataset", "scenarios", "--embedder", "minilm", "--fixtures", "shared"];
        if dry {
            args.push("--dry-run");
        }
        let (code, stdout, stderr) = memform(&args, tmp.path());
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stdout.is_empty(), "nothing listed as removed: {stdout}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with(&format!("error: fixtures prune: {signet_files} of the {signet_files} fixtures in shared"))
                && stderr.contains("from conversation \"")
                && stderr.contains("another dataset's recordings")
                && stderr.contains("nothing removed"),
            "{stderr}"
        );
        assert!(!stderr.contains("   "), "no run of spaces: {stderr}");
        assert_eq!(std::fs::read_dir(&shared).expect("read").count(), total, "signet's recordings are kept");
    }
}

#[test]
fn embeddings_prune_drops_exactly_an_unneeded_vector() {
    let tmp = scenarios_copy();
    let ds = tmp.path().join("scenarios");
    let cache = cache_dir(&ds);
    let (code, stdout, stderr) =
        memform(&["embeddings", "prune", "--dataset", "scenarios", "--embedder", "minilm", "--dry-run"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.is_empty(), "every committed vector is needed by rules or llm mode: {stdout}");

    // Add a vector nobody asks for (a copy of row 0 under a new key), accepted by rehash.
    let index_path = cache.join("index.json");
    let mut index = read_json(&index_path);
    let dims = index["dims"].as_u64().expect("dims") as usize;
    let extra_key = memform::embed::cache::cache_key(index["embedder"].as_str().expect("id"), "nobody says this");
    let n = index["count"].as_u64().expect("count") as usize;
    index["entries"].as_array_mut().expect("entries").push(serde_json::json!({"key": extra_key, "row": n, "text": "nobody says this"}));
    index["count"] = (n + 1).into();
    write_json(&index_path, &index);
    let mut vectors = std::fs::read(cache.join("vectors.f32")).expect("vectors");
    let row0 = vectors[..dims * 4].to_vec();
    vectors.extend(row0);
    std::fs::write(cache.join("vectors.f32"), vectors).expect("write");
    let (code, _, stderr) = memform(&["embeddings", "rehash", "--dataset", "scenarios"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");

    let (code, stdout, stderr) =
        memform(&["embeddings", "prune", "--dataset", "scenarios", "--embedder", "minilm", "--dry-run"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout.trim(), format!("would remove {extra_key} \"nobody says this\""));
    assert_eq!(read_json(&index_path)["count"], n + 1, "a dry run removes nothing");
    let (code, stdout, stderr) = memform(&["embeddings", "prune", "--dataset", "scenarios", "--embedder", "minilm"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout.trim(), format!("removed {extra_key} \"nobody says this\""));
    assert_eq!(read_json(&index_path)["count"], n);
    assert_eq!(
        std::fs::read(cache.join("vectors.f32")).expect("read"),
        std::fs::read(cache_dir(&scenarios_dir()).join("vectors.f32")).expect("read"),
        "back to the committed vectors"
    );

    let (code, _, stderr) = memform(&["embeddings", "prune", "--dataset", "scenarios"], tmp.path());
    assert_eq!(code, Some(2), "the hashed embedder has no cache: {stderr}");
    assert!(stderr.contains("has no recorded cache"), "{stderr}");
}

#[test]
fn lists_show_models_stages_and_caches() {
    let tmp = scenarios_copy();
    let (code, stdout, stderr) = memform(&["fixtures", "list", "--dataset", "scenarios"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    let rows: Vec<&str> = stdout.lines().skip(2).collect();
    // SmolLM2-135M stores no fact that pairs with another on the scenarios, so nothing was
    // judged; each of the 26 extraction answers was truncated and asked again once (52 calls).
    assert_eq!(rows.len(), 1, "{stdout}");
    assert!(
        rows[0].starts_with("| scenarios/fixtures/smollm2-135m-instruct.q4_1 | SmolLM2-135M-Instruct.Q4_1 | extract | 52 | "),
        "{stdout}"
    );
    // Without --dataset: every dataset under datasets/ (here, the copy moved there).
    std::fs::create_dir_all(tmp.path().join("datasets")).expect("mkdir");
    std::fs::rename(tmp.path().join("scenarios"), tmp.path().join("datasets/scenarios")).expect("move");
    let (code, all, _) = memform(&["fixtures", "list"], tmp.path());
    assert_eq!(code, Some(0));
    assert!(all.contains("| datasets/scenarios/fixtures/smollm2-135m-instruct.q4_1 | "), "{all}");
    std::fs::rename(tmp.path().join("datasets/scenarios"), tmp.path().join("scenarios")).expect("move back");
    let (code, stdout, stderr) = memform(&["embeddings", "list", "--dataset", "scenarios"], tmp.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("| minilm:all-MiniLM-L6-v2 | 384 |") && stdout.contains("| ok |"), "{stdout}");
    for args in [["fixtures", "rehash", "--fixtures", "nope"], ["embeddings", "list", "--cache", "nope"]] {
        let (code, _, stderr) = memform(&args, tmp.path());
        assert_eq!((code, stderr.trim()), (Some(2), "error: nope: not a directory"), "{args:?}");
    }
}
