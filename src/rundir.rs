//! A run directory: the name of every artefact a run writes, its typed
//! manifest (`run.json`), and the reading and writing of both. Everything
//! that opens a run's files (run, report, compare, gate) goes through here.
//!
//! One run at a time: a run holds the directory's lock ([`DirLock`],
//! `.memform.lock`) from start to end, and a second one fails at once
//! naming the holder. A run is built in a hidden directory inside the out
//! directory ([`Build`], `.memform-build-<run id>/`) and its files are
//! moved into place when it is complete, `run.json` last with
//! `"complete": true` and the list of its files; readers
//! ([`RunDir::read_complete`]) accept nothing else. Only files a previous
//! run's `run.json` lists are replaced or removed: other files in the
//! directory are never touched, and a file named like an artefact that no
//! `run.json` lists stops the run.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::llm::LlmSettings;
use crate::pipeline::Config;
use crate::pipeline::{EpisodeRecord, Stages};
use crate::types::{Dataset, DatasetFormat};

/// The manifest: what produced a run, written as `run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub memform_version: String,
    /// The build: memform's git revision and whether the checkout was dirty.
    pub build: Value,
    pub dataset: DatasetInfo,
    /// Where the dataset was read from, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_path: Option<String>,
    /// The pipeline profile (also in `config`).
    pub profile: String,
    /// `rules` or `llm` when both model stages run that way, else
    /// `EXTRACT/JUDGE` (`gold/rules`, `rules/llm`): [`crate::pipeline::Modes::name`].
    pub mode: String,
    /// How stage 1 extracted: `rules`, `llm` or `gold` (the dataset's gold facts).
    #[serde(default)]
    pub extract_mode: String,
    /// How stage 4 judged: `rules` or `llm`.
    #[serde(default)]
    pub judge_mode: String,
    pub write_mode: String,
    pub extractor: String,
    pub embedder: String,
    pub judge: String,
    #[serde(flatten)]
    pub recorded: Recorded,
    /// Digests of the fixture set and the vector cache the run read
    /// (`fixtures`, `embeddings`; null when unused).
    #[serde(rename = "recorded", default)]
    pub digests: Value,
    /// The user's labels (`--tag key=value`).
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    pub config: Config,
    /// Which run wrote the directory: set by the run (`run::run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunStamp>,
    /// Every file of the run (`run.json` included), set when it completes.
    #[serde(default)]
    pub files: Vec<String>,
    /// True once every file in `files` is in place (`run.json` moves in last).
    #[serde(default)]
    pub complete: bool,
}

/// One run: an id no other run has, and when it started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStamp {
    pub id: String,
    /// `YYYY-MM-DDTHH:MM:SSZ`.
    pub started: String,
}

impl RunStamp {
    /// A stamp for a run starting now: the id is the process id, the time
    /// in nanoseconds and a counter, so it is unique across processes and runs.
    pub fn now() -> RunStamp {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        RunStamp { id: format!("{}-{nanos:x}-{n}", std::process::id()), started: crate::llm::fixtures::utc_now() }
    }
}

/// The dataset a run read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetInfo {
    pub name: String,
    pub format: DatasetFormat,
    /// SHA-256 over the dataset's input files.
    pub digest: String,
    pub conversations: usize,
}

/// The recorded boundary a run went through (embedding cache, LLM fixtures).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    /// `replay`, `record` or `live` for the embedding cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embed_mode: Option<String>,
    /// `replay`, `record` or `live` for LLM answers (LLM mode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixtures_dir: Option<String>,
    /// `name vN` of every prompt template (LLM mode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_templates: Option<Vec<String>>,
}

impl Manifest {
    /// The manifest of a run of `dataset` with `cfg` through `stages`.
    pub fn new(dataset: &Dataset, cfg: &Config, stages: Stages<'_>, recorded: &Recorded, dataset_path: Option<&Path>) -> Manifest {
        Manifest::with(dataset, cfg, stages, recorded, dataset_path, Value::Null, BTreeMap::new())
    }

    /// [`Manifest::new`] with the recorded digests and the user's tags.
    pub fn with(
        dataset: &Dataset,
        cfg: &Config,
        stages: Stages<'_>,
        recorded: &Recorded,
        dataset_path: Option<&Path>,
        digests: Value,
        tags: BTreeMap<String, String>,
    ) -> Manifest {
        let modes = crate::pipeline::Modes { extract: stages.extractor.mode(), judge: stages.judge.mode() };
        Manifest {
            memform_version: env!("CARGO_PKG_VERSION").to_string(),
            build: crate::provenance::build_info(),
            dataset: DatasetInfo {
                name: dataset.name.clone(),
                format: dataset.format,
                digest: dataset.digest.clone(),
                conversations: dataset.conversations.len(),
            },
            dataset_path: dataset_path.map(|p| p.display().to_string()),
            profile: cfg.profile.clone(),
            mode: modes.name(),
            extract_mode: modes.extract.as_str().to_string(),
            judge_mode: modes.judge.as_str().to_string(),
            write_mode: cfg.write_mode().as_str().to_string(),
            extractor: stages.extractor.id(),
            embedder: stages.embedder.id(),
            judge: stages.judge.id(),
            recorded: recorded.clone(),
            digests,
            tags,
            config: cfg.clone(),
            run: None,
            files: Vec::new(),
            complete: false,
        }
    }

    /// Keys of `run.json` that differ from run to run of the same inputs.
    pub const PER_RUN_KEYS: &'static [&'static str] = &["run", "files", "complete"];

    /// The manifest as JSON, as `run.json` holds it.
    pub fn to_value(&self) -> Result<Value> {
        serde_json::to_value(self).map_err(|e| Error::Other(format!("serialise run.json: {e}")))
    }
}

/// A run's output directory and the names of its artefacts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDir {
    path: PathBuf,
}

impl RunDir {
    pub const MANIFEST: &'static str = "run.json";
    pub const SUMMARY: &'static str = "summary.json";
    pub const FACTS: &'static str = "facts.jsonl";
    pub const EPISODES: &'static str = "episodes.jsonl";
    pub const STORE: &'static str = "store.sqlite";
    /// Files the run itself writes (the reports add [`REPORT_FILES`]).
    pub const RUN_FILES: &'static [&'static str] = &[Self::MANIFEST, Self::SUMMARY, Self::FACTS, Self::EPISODES, Self::STORE];
    /// SQLite's files beside the store: they belong to it and go with it.
    pub const STORE_COMPANIONS: &'static [&'static str] = &["store.sqlite-wal", "store.sqlite-shm", "store.sqlite-journal"];

    pub fn new(path: impl Into<PathBuf>) -> RunDir {
        RunDir { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of one artefact.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Every name a run may write here (a file named so that no `run.json`
    /// lists stops a run).
    fn artefact_names() -> impl Iterator<Item = &'static str> {
        Self::RUN_FILES.iter().chain(REPORT_FILES).chain(QA_FILES).copied()
    }

    /// Whether `name` is one memform writes into a run directory: a run's
    /// artefact, or a calibration's (`memform calibrate` builds its
    /// directory the same way, so it can write over its own earlier one).
    fn is_artefact(name: &str) -> bool {
        Self::artefact_names().any(|a| a == name) || crate::names::CALIBRATE_FILES.contains(&name) || crate::names::is_curve_chart(name)
    }

    /// Starts building a run into this directory under `lock` (this
    /// directory's lock). Fails, before anything is written, when a file
    /// here is named like an artefact but no `run.json` here lists it (the
    /// user's, not memform's); removes the build directories of killed runs;
    /// creates this run's build directory.
    pub fn begin(&self, lock: Arc<DirLock>, stamp: &RunStamp) -> Result<Build> {
        lock.check_holds(&self.path)?;
        check_kind(&self.path, Self::MANIFEST)?;
        let previous = self.previous_files()?;
        for name in Self::artefact_names().chain(Self::STORE_COMPANIONS.iter().copied()) {
            let p = self.file(name);
            refuse_symlink(&p)?;
            if p.symlink_metadata().is_ok() && !previous.contains(name) && !Self::STORE_COMPANIONS.contains(&name) {
                return Err(not_ours(&p));
            }
        }
        let entries = std::fs::read_dir(&self.path).map_err(|e| Error::io(&self.path, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(&self.path, e))?;
            let p = entry.path();
            if is_our_build_dir(&p) {
                std::fs::remove_dir_all(&p).map_err(|e| Error::write(&p, e))?;
            }
        }
        let dir = RunDir::new(self.file(&format!("{BUILD_PREFIX}{}", stamp.id)));
        std::fs::create_dir(dir.path()).map_err(|e| Error::write(dir.path(), e))?;
        let build = Build { out: self.clone(), dir, _lock: lock, committed: false };
        write_bytes(&build.dir.file(BUILD_MARKER), stamp.id.as_bytes())?;
        Ok(build)
    }

    /// The files the `run.json` here says memform wrote (with `run.json`
    /// itself): the only ones a new run may replace or remove; a listed name
    /// that is not one of memform's artefact names is ignored. A `run.json`
    /// without the list (an older memform's) owns every artefact name. None
    /// when there is no `run.json`; an error when it is not memform's.
    pub(crate) fn previous_files(&self) -> Result<BTreeSet<String>> {
        let path = self.file(Self::MANIFEST);
        if path.symlink_metadata().is_err() {
            return Ok(BTreeSet::new());
        }
        let not_a_manifest = || Error::input(&path, "not a memform run's manifest; move it away or choose another --out");
        let manifest = read_json(&path).map_err(|_| not_a_manifest())?;
        if manifest.get("memform_version").is_none() {
            return Err(not_a_manifest());
        }
        // Only memform's own artefact names, whatever the list says: a
        // forged `run.json` cannot make a run delete a user's file.
        let mut files: BTreeSet<String> = match manifest.get("files") {
            Some(list) => listed_files(&path, list)?.into_iter().filter(|name| Self::is_artefact(name)).map(str::to_string).collect(),
            None => Self::artefact_names().map(str::to_string).collect(),
        };
        files.insert(Self::MANIFEST.to_string());
        Ok(files)
    }

    pub fn write_manifest(&self, m: &Manifest) -> Result<()> {
        write_json(&self.file(Self::MANIFEST), m)
    }

    /// `run.json` as JSON (a run by an older memform may lack fields); it may
    /// be an incomplete run's: readers of a run use [`RunDir::read_complete`].
    pub fn read_manifest(&self) -> Result<Value> {
        read_json(&self.file(Self::MANIFEST))
    }

    pub fn read_summary(&self) -> Result<Value> {
        read_json(&self.file(Self::SUMMARY))
    }

    /// Reads a finished run: `read` gets the manifest once `run.json` says
    /// the run is complete and every file it lists is here. `run.json` is
    /// read again afterwards, and a change (a run moving its files in
    /// meanwhile) is an error, so `read` saw the files of one complete run.
    pub fn read_complete<T>(&self, read: impl FnOnce(&Value) -> Result<T>) -> Result<T> {
        self.read_complete_but(&[], read)
    }

    /// [`RunDir::read_complete`], except that the files `redrawn` (what
    /// `memform report` draws again) may be missing.
    pub fn read_complete_but<T>(&self, redrawn: &[&str], read: impl FnOnce(&Value) -> Result<T>) -> Result<T> {
        let path = self.file(Self::MANIFEST);
        let before = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        let manifest = parse_json(&path, &before)?;
        if manifest.get("complete") != Some(&Value::Bool(true)) {
            return Err(Error::input(
                &path,
                "incomplete run: no \"complete\": true (killed, still moving into place, or written by an older memform); run it again",
            ));
        }
        let files = manifest.get("files").ok_or_else(|| Error::input(&path, "files: missing field"))?;
        for name in listed_files(&path, files)? {
            let p = self.file(name);
            if !p.is_file() && !redrawn.contains(&name) {
                return Err(Error::input(&p, "listed in run.json but missing: incomplete run; run it again"));
            }
        }
        let result = read(&manifest);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(before.as_str()) {
            return Err(Error::input(&path, "replaced by another run while it was read; read it again"));
        }
        result
    }

    /// `summary.json`, `facts.jsonl` and `episodes.jsonl`.
    pub fn write_records<S: Serialize>(&self, summary: &S, episodes: &[EpisodeRecord]) -> Result<()> {
        self.write_facts(episodes)?;
        self.write_summary_episodes(summary, episodes)
    }

    /// `facts.jsonl`: the candidates of `episodes`, in order.
    pub fn write_facts(&self, episodes: &[EpisodeRecord]) -> Result<()> {
        write_jsonl(&self.file(Self::FACTS), episodes.iter().flat_map(|e| &e.facts))
    }

    /// `summary.json` and `episodes.jsonl` (which holds no candidate: a run
    /// writes [`RunDir::write_facts`] first and may drop them after).
    pub fn write_summary_episodes<S: Serialize>(&self, summary: &S, episodes: &[EpisodeRecord]) -> Result<()> {
        write_json(&self.file(Self::SUMMARY), summary)?;
        write_jsonl(&self.file(Self::EPISODES), episodes.iter())
    }
}

pub use crate::names::{
    PLOT_OUTCOMES, PLOT_QA, PLOT_SCORES, PLOT_STORED, PLOT_VERDICTS, PLOT_WARNINGS, QA_FILES, REPORT_FILES, REPORT_PLOTS,
};

/// Where a run is built, inside its out directory: `.memform-build-<run id>`.
const BUILD_PREFIX: &str = ".memform-build-";
/// The file in a build directory that says memform made it: it holds the
/// run id the directory is named after. Only a directory carrying it is
/// ever removed as a killed run's build.
const BUILD_MARKER: &str = ".memform-build";

/// Whether `path` is a build directory memform made (named
/// `.memform-build-<id>`, a directory, not a symlink, holding
/// [`BUILD_MARKER`] with that id): a user's directory of that name is kept.
fn is_our_build_dir(path: &Path) -> bool {
    let Some(id) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_prefix(BUILD_PREFIX)) else { return false };
    let is_dir = path.symlink_metadata().is_ok_and(|m| m.is_dir());
    let marker = path.join(BUILD_MARKER);
    is_dir && marker.symlink_metadata().is_ok_and(|m| m.is_file()) && std::fs::read(&marker).is_ok_and(|b| b == id.as_bytes())
}

/// The file each kind of output directory is recognised by: a run's, a
/// sweep's, a comparison's. One directory holds one kind.
pub const KIND_FILES: &[(&str, &str)] = &[(RunDir::MANIFEST, "a run"), ("sweep.json", "a sweep"), ("compare.json", "a comparison")];

/// An error when `dir` holds the output of another kind than the one
/// recognised by `own` (one of [`KIND_FILES`]): a run, a sweep and a
/// comparison each need their own directory.
pub fn check_kind(dir: &Path, own: &str) -> Result<()> {
    let mine = KIND_FILES.iter().find(|(f, _)| *f == own).map_or("this command's output", |(_, what)| *what);
    for (file, what) in KIND_FILES {
        let p = dir.join(file);
        if *file != own && p.symlink_metadata().is_ok() {
            return Err(Error::input(
                &p,
                format!("this directory holds {what}'s output; {mine} needs a directory of its own: choose another --out"),
            ));
        }
    }
    Ok(())
}

/// An error naming `path` when it is a symbolic link: memform never writes
/// through one planted in a directory it writes.
pub fn refuse_symlink(path: &Path) -> Result<()> {
    match path.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => {
            Err(Error::input(path, "is a symbolic link; memform does not write through one: remove it or choose another output directory"))
        }
        _ => Ok(()),
    }
}

/// An error unless each of `names` in `dir` is absent or memform's: the
/// directory's `manifest` (`sweep.json`, `compare.json`) exists and
/// `ours` accepts its content. A symbolic link is refused by name.
pub fn check_owned(dir: &Path, manifest: &str, ours: impl Fn(&Value) -> bool, names: &[&str]) -> Result<()> {
    let manifest_path = dir.join(manifest);
    refuse_symlink(&manifest_path)?;
    let owned = || manifest_path.symlink_metadata().is_ok() && read_json(&manifest_path).is_ok_and(|v| ours(&v));
    for name in names.iter().copied().chain(std::iter::once(manifest)) {
        let p = dir.join(name);
        refuse_symlink(&p)?;
        if p.symlink_metadata().is_ok() && !owned() {
            return Err(Error::input(
                &p,
                format!("not written by memform (no memform {manifest} here); move it away or choose another --out"),
            ));
        }
    }
    Ok(())
}

fn not_ours(path: &Path) -> Error {
    Error::input(path, "not written by memform (no run.json here lists it); move it away or choose another --out")
}

/// The names in `run.json`'s `files`: plain file names in the directory,
/// never a path that leads out of it.
fn listed_files<'a>(manifest: &Path, list: &'a Value) -> Result<Vec<&'a str>> {
    let bad = |what: String| Error::input(manifest, format!("files: {what}"));
    let list = list.as_array().ok_or_else(|| bad("expected a list of file names".into()))?;
    list.iter()
        .map(|v| {
            let name = v.as_str().ok_or_else(|| bad(format!("{v} is not a file name")))?;
            let plain = !name.starts_with('.') && Path::new(name).file_name().is_some_and(|f| f == name);
            if plain { Ok(name) } else { Err(bad(format!("{name:?} is not a file name in this directory"))) }
        })
        .collect()
}

/// A run being built: its build directory inside the out directory, and the
/// out directory's lock, held until the build is committed or dropped.
/// Dropped without [`Build::commit`] (the run failed), the build directory
/// is removed; a killed run's stays until the next run here removes it.
pub struct Build {
    out: RunDir,
    dir: RunDir,
    _lock: Arc<DirLock>,
    committed: bool,
}

impl Build {
    /// Where the run writes its files.
    pub fn dir(&self) -> &RunDir {
        &self.dir
    }

    /// Marks the run complete and moves its files into the out directory.
    /// The out directory's `run.json` first becomes an incomplete one
    /// listing the previous run's files and this run's (so a reader refuses
    /// the directory meanwhile, and the next run knows what is memform's
    /// if this one dies here); then the files move in, the previous run's
    /// files this run did not write are removed, and `run.json` moves in
    /// last. Every file written (the store closed first) must be in the
    /// build directory.
    pub fn commit(mut self, manifest: &mut Manifest) -> Result<()> {
        let mut files = plain_files(self.dir.path())?;
        files.remove(BUILD_MARKER);
        files.insert(RunDir::MANIFEST.to_string());
        manifest.files = files.iter().cloned().collect();
        manifest.complete = true;
        self.dir.write_manifest(manifest)?;

        let previous = self.out.previous_files()?;
        for name in previous.union(&files) {
            refuse_symlink(&self.out.file(name))?;
        }
        if let Some(name) = files.iter().find(|f| !previous.contains(*f) && self.out.file(f).symlink_metadata().is_ok()) {
            return Err(not_ours(&self.out.file(name)));
        }
        let mut marker = manifest.clone();
        marker.complete = false;
        marker.files = previous.union(&files).cloned().collect();
        let swap = self.dir.file(".run.json.swap");
        write_json(&swap, &marker)?;
        move_file(&swap, &self.out.file(RunDir::MANIFEST))?;
        for name in files.iter().filter(|f| *f != RunDir::MANIFEST) {
            if name == RunDir::STORE {
                self.remove_from_out(RunDir::STORE_COMPANIONS.iter().copied())?;
            }
            move_file(&self.dir.file(name), &self.out.file(name))?;
        }
        for name in previous.difference(&files) {
            self.remove_from_out(std::iter::once(name.as_str()))?;
            if name == RunDir::STORE {
                self.remove_from_out(RunDir::STORE_COMPANIONS.iter().copied())?;
            }
        }
        move_file(&self.dir.file(RunDir::MANIFEST), &self.out.file(RunDir::MANIFEST))?;
        self.committed = true;
        // Empty now; a leftover is removed by the next run.
        let _ = std::fs::remove_dir_all(self.dir.path());
        Ok(())
    }

    fn remove_from_out<'a>(&self, names: impl Iterator<Item = &'a str>) -> Result<()> {
        for name in names {
            let p = self.out.file(name);
            match std::fs::remove_file(&p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::write(&p, e)),
                _ => {}
            }
        }
        Ok(())
    }
}

impl Drop for Build {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(self.dir.path());
        }
    }
}

/// Names of the regular files in `dir` (the build's marker among them).
fn plain_files(dir: &Path) -> Result<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if entry.file_type().map_err(|e| Error::io(entry.path(), e))?.is_file() {
            names.insert(entry.file_name().to_string_lossy().into_owned());
        }
    }
    Ok(names)
}

fn move_file(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).map_err(|e| Error::Other(format!("move {} to {}: {e}", from.display(), to.display())))
}

/// The exclusive lock of a directory memform writes (a run's, a sweep's, a
/// comparison's, a report's): an advisory lock on `.memform.lock` in it,
/// held while this value lives. The file (owner-only, mode 0600) records
/// the holder (process id, start time, command line) for the error of the
/// process that finds it taken. A symbolic link (or anything but a regular
/// file) of that name is refused, never followed. Directories the lock
/// created are removed again when it is released and they hold nothing but
/// the lock file (a run that failed before writing anything); a directory
/// that was empty when the lock was taken keeps no lock file either.
#[derive(Debug)]
pub struct DirLock {
    file: File,
    dir: PathBuf,
    path: PathBuf,
    /// The directories `acquire` created, outermost first.
    created: Vec<PathBuf>,
    /// `dir` existed and held nothing when the lock was taken.
    was_empty: bool,
}

/// Who holds a [`DirLock`]: the lock file's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Holder {
    pid: u32,
    started: String,
    command: String,
}

impl DirLock {
    pub const FILE: &'static str = ".memform.lock";

    /// Creates `dir` if needed and takes its lock; fails at once with
    /// [`Error::Busy`] naming the holder when another process has it.
    pub fn acquire(dir: &Path) -> Result<DirLock> {
        let was_empty = std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none());
        let created = create_dirs(dir)?;
        let path = dir.join(Self::FILE);
        match Self::take(dir, &path) {
            Ok(file) => {
                let dir = std::fs::canonicalize(dir).map_err(|e| Error::io(dir, e))?;
                Ok(DirLock { file, dir, path, created, was_empty })
            }
            Err(e) => {
                remove_created(&created);
                Err(e)
            }
        }
    }

    /// Opens, locks and fills the lock file. A file replaced or removed
    /// between opening and locking (a holder that cleaned up its directory
    /// on release) is opened again.
    fn take(dir: &Path, path: &Path) -> Result<File> {
        for _ in 0..50 {
            let Some(mut file) = open_lock_file(path)? else { continue };
            match file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => match locked_once_free(&mut file) {
                    Ok(None) => {}
                    Ok(Some(holder)) => return Err(Error::Busy { path: dir.to_path_buf(), holder }),
                    Err(e) => return Err(Error::write(path, e)),
                },
                Err(std::fs::TryLockError::Error(e)) => return Err(Error::write(path, e)),
            }
            if !same_file(&file, path) {
                continue;
            }
            set_owner_only(&file, path)?;
            let me = Holder {
                pid: std::process::id(),
                started: crate::llm::fixtures::utc_now(),
                command: crate::redact::urls_in(&command_line(std::env::args_os())),
            };
            let text = serde_json::to_string(&me).map_err(|e| Error::Other(format!("serialise {}: {e}", path.display())))?;
            file.set_len(0)
                .and_then(|()| file.write_all(text.as_bytes()))
                .and_then(|()| file.flush())
                .map_err(|e| Error::write(path, e))?;
            return Ok(file);
        }
        Err(Error::Other(format!("{}: replaced again and again while it was locked; try again", path.display())))
    }

    /// An error unless this is the lock of `dir`.
    pub fn check_holds(&self, dir: &Path) -> Result<()> {
        match std::fs::canonicalize(dir) {
            Ok(d) if d == self.dir => Ok(()),
            _ => Err(Error::Other(format!("{}: the run holds the lock of {} instead", dir.display(), self.dir.display()))),
        }
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // The lock goes with the file; the file stays (removing it would let two
        // processes lock two different files of the same name), unless the
        // directory is one this lock created (or found empty) and holds
        // nothing else: a failed run leaves the directory as it found it.
        let _ = self.file.set_len(0);
        let only_the_lock = |dir: &Path| {
            std::fs::read_dir(dir).is_ok_and(|entries| entries.flatten().all(|e| e.file_name() == std::ffi::OsStr::new(Self::FILE)))
        };
        if (self.was_empty || !self.created.is_empty()) && only_the_lock(&self.dir) {
            let _ = std::fs::remove_file(&self.path);
            remove_created(&self.created);
        }
    }
}

/// Creates `dir` and its missing parents; the ones it created, outermost first.
fn create_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut missing = Vec::new();
    let mut cur = Some(dir);
    while let Some(d) = cur.filter(|d| !d.as_os_str().is_empty() && d.symlink_metadata().is_err()) {
        missing.push(d.to_path_buf());
        cur = d.parent();
    }
    missing.reverse();
    let mut created = Vec::new();
    for d in missing {
        match std::fs::create_dir(&d) {
            Ok(()) => created.push(d),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && d.is_dir() => {}
            Err(e) => {
                remove_created(&created);
                return Err(Error::write(&d, e));
            }
        }
    }
    Ok(created)
}

/// Removes the directories `created` (outermost first) that are empty.
fn remove_created(created: &[PathBuf]) {
    for d in created.iter().rev() {
        let _ = std::fs::remove_dir(d);
    }
}

/// Opens the lock file, creating it owner-only; never through a symbolic
/// link or into a non-regular file. None when it changed under us (open again).
fn open_lock_file(path: &Path) -> Result<Option<File>> {
    let mut create = OpenOptions::new();
    create.read(true).write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut create, 0o600);
    match create.open(path) {
        Ok(f) => return Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Error::write(path, e)),
    }
    match path.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => return Err(refuse_symlink(path).err().unwrap_or_else(|| not_a_lock_file(path))),
        Ok(m) if !m.is_file() => return Err(not_a_lock_file(path)),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    }
    match OpenOptions::new().read(true).write(true).open(path) {
        // Checked again once opened: the same file the path names, not a link swapped in.
        Ok(f) if same_file(&f, path) => Ok(Some(f)),
        Ok(_) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::write(path, e)),
    }
}

fn not_a_lock_file(path: &Path) -> Error {
    Error::input(path, "not a regular file: memform's lock file has this name; remove it or choose another output directory")
}

/// Whether `file` is the regular file `path` names (not through a symlink).
fn same_file(file: &File, path: &Path) -> bool {
    let (Ok(a), Ok(b)) = (file.metadata(), path.symlink_metadata()) else { return false };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        b.file_type().is_file() && a.dev() == b.dev() && a.ino() == b.ino()
    }
    #[cfg(not(unix))]
    {
        b.file_type().is_file() && a.len() == b.len()
    }
}

/// Makes the lock file owner-only (one made by an older memform may not be).
fn set_owner_only(file: &File, path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600)).map_err(|e| Error::write(path, e))?;
    }
    #[cfg(not(unix))]
    let _ = (file, path);
    Ok(())
}

/// A command line as the lock file records it: each argument as given,
/// quoted when it holds whitespace; an argument that is not UTF-8 (paths
/// are bytes on Unix) is quoted with its bytes escaped (`"out/bad\xFFname"`).
pub fn command_line(args: impl IntoIterator<Item = std::ffi::OsString>) -> String {
    args.into_iter()
        .map(|a| match a.to_str() {
            Some(s) if s.contains(char::is_whitespace) || s.chars().any(char::is_control) => format!("{s:?}"),
            Some(s) => s.to_string(),
            None => format!("{a:?}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A lock file another holds: `Some` of the holder recorded in it, or
/// `None` once this process has taken the lock after all. A holder writes
/// itself into the file just after taking the lock and empties the file
/// just before releasing it, and a process started while the lock was
/// held can hold it a moment longer (until its program starts, the child
/// shares the parent's open files): so while the file says no holder,
/// it is read again, and the lock tried again, for a moment.
fn locked_once_free(file: &mut File) -> std::io::Result<Option<String>> {
    for _ in 0..20 {
        let mut text = String::new();
        let read = std::io::Seek::rewind(file).and_then(|()| file.read_to_string(&mut text));
        if read.is_ok()
            && let Ok(h) = serde_json::from_str::<Holder>(&text)
        {
            // A lock file written by an older memform may hold a URL's password.
            return Ok(Some(format!("pid {}, started {}: {}", h.pid, h.started, crate::redact::urls_in(&h.command))));
        }
        std::thread::sleep(Duration::from_millis(10));
        match file.try_lock() {
            Ok(()) => return Ok(None),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
    Ok(Some("its lock file does not say which".to_string()))
}

/// Writes `value` as pretty JSON with a trailing newline ([`write_with`]).
pub fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| Error::Other(format!("serialise {}: {e}", path.display())))?;
    text.push('\n');
    write_bytes(path, text.as_bytes())
}

/// Writes `bytes` as the file `path` ([`write_with`]).
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, |w| w.write_all(bytes).map_err(|e| Error::write(path, e)))
}

/// Writes the file `path` by a temporary file beside it (created new, so
/// never through a link) that `fill` writes, then a rename over `path`:
/// a reader sees the old file or the new one, never a part, and a
/// symbolic link planted at `path` is refused by name, not written through.
pub fn write_with(path: &Path, fill: impl FnOnce(&mut std::io::BufWriter<File>) -> Result<()>) -> Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    refuse_symlink(path)?;
    let name = path.file_name().map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_file_name(format!(".{name}.{}-{n}.tmp", std::process::id()));
    let file = OpenOptions::new().write(true).create_new(true).open(&tmp).map_err(|e| Error::write(&tmp, e))?;
    let mut w = std::io::BufWriter::new(file);
    let written = fill(&mut w).and_then(|()| w.flush().map_err(|e| Error::write(path, e)));
    drop(w);
    let moved = written.and_then(|()| std::fs::rename(&tmp, path).map_err(|e| Error::write(path, e)));
    if moved.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    moved
}

/// Reads a JSON file; a parse error names the file, line and column.
pub fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    crate::error::reject_bom(path, text.as_bytes())?;
    parse_json(path, &text)
}

fn parse_json(path: &Path, text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| Error::input(path, format!("line {} column {}: {e}", e.line(), e.column())))
}

fn write_jsonl<'a, T: Serialize + 'a>(path: &Path, rows: impl Iterator<Item = &'a T>) -> Result<()> {
    write_with(path, |w| {
        for row in rows {
            serde_json::to_writer(&mut *w, row).map_err(|e| Error::Other(format!("serialise {}: {e}", path.display())))?;
            w.write_all(b"\n").map_err(|e| Error::write(path, e))?;
        }
        Ok(())
    })
}

/// Rewrites `recorded` in `dir/run.json` (a run that recorded answers or
/// vectors ends with more than it started with). True when it changed.
pub fn update_recorded(dir: &Path, recorded: &Value) -> Result<bool> {
    let path = dir.join("run.json");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let mut manifest: Value = serde_json::from_str(&text).map_err(|e| Error::input(&path, e.to_string()))?;
    let Some(m) = manifest.as_object_mut() else {
        return Err(Error::input(&path, "expected a JSON object"));
    };
    if m.get("recorded") == Some(recorded) {
        return Ok(false);
    }
    m.insert("recorded".into(), recorded.clone());
    write_json(&path, &manifest)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn manifest(files: &[&str], complete: bool) -> Value {
        json!({"memform_version": "0.1.0", "mode": "rules", "files": files, "complete": complete})
    }

    #[test]
    fn a_taken_lock_names_its_holder() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("o");
        let held = DirLock::acquire(&dir).expect("first");
        let err = DirLock::acquire(&dir).expect_err("second").to_string();
        let prefix = format!("{} is in use by another memform process (pid {}, started ", dir.display(), std::process::id());
        assert!(err.starts_with(&prefix), "{err}");
        assert!(err.ends_with("; wait for it to finish or choose another --out"), "{err}");
        drop(held);
        let again = DirLock::acquire(&dir).expect("free once dropped");
        assert!(again.check_holds(&dir).is_ok());
        assert!(again.check_holds(tmp.path()).is_err(), "the lock of another directory");
    }

    /// A lock held a moment longer with an empty lock file (a holder that
    /// has emptied it on release, while a child process it started still
    /// shares the open file) is taken once it is free; one held on with
    /// an empty file is busy, its holder unknown.
    #[test]
    fn an_empty_lock_file_released_a_moment_later_is_taken() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("o");
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::write(dir.join("keep"), "").expect("write");
        let path = dir.join(DirLock::FILE);
        let other = File::options().read(true).write(true).create(true).truncate(true).open(&path).expect("open");
        other.try_lock().expect("held by another open file");
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(60));
            drop(other);
        });
        let taken = DirLock::acquire(&dir).expect("taken once released");
        release.join().expect("join");
        assert!(taken.check_holds(&dir).is_ok());
        assert!(std::fs::read_to_string(&path).expect("read").contains(&format!("\"pid\":{}", std::process::id())));
        drop(taken);
        let held = File::options().read(true).write(true).open(&path).expect("open");
        held.try_lock().expect("held");
        let err = DirLock::acquire(&dir).expect_err("busy").to_string();
        assert!(err.contains("its lock file does not say which"), "{err}");
    }

    #[test]
    fn listed_files_stay_inside_the_directory() {
        let p = Path::new("o/run.json");
        assert_eq!(listed_files(p, &json!(["run.json", "report.md"])).expect("plain"), vec!["run.json", "report.md"]);
        for bad in
            [json!(["../x"]), json!(["/etc/passwd"]), json!(["a/b"]), json!([".memform.lock"]), json!([".."]), json!([1]), json!("x")]
        {
            let err = listed_files(p, &bad).expect_err("refused").to_string();
            assert!(err.starts_with("o/run.json: files: "), "{bad}: {err}");
        }
    }

    #[test]
    fn what_a_previous_run_owns() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = RunDir::new(tmp.path());
        assert!(dir.previous_files().expect("none").is_empty());
        write_json(&dir.file("run.json"), &manifest(&["summary.json"], true)).expect("write");
        let owned: Vec<String> = dir.previous_files().expect("listed").into_iter().collect();
        assert_eq!(owned, vec!["run.json", "summary.json"]);
        // An older memform's run.json lists nothing: it owns every artefact name.
        write_json(&dir.file("run.json"), &json!({"memform_version": "0.0.9"})).expect("write");
        let owned = dir.previous_files().expect("legacy");
        assert!(owned.contains("report.md") && owned.contains("store.sqlite") && !owned.contains("notes.md"), "{owned:?}");
        std::fs::write(dir.file("run.json"), "{\"mine\": 1}").expect("write");
        let err = dir.previous_files().expect_err("not memform's").to_string();
        assert!(err.ends_with("run.json: not a memform run's manifest; move it away or choose another --out"), "{err}");
    }

    #[test]
    fn begin_refuses_a_users_file_and_removes_stale_builds() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = RunDir::new(tmp.path());
        let lock = Arc::new(DirLock::acquire(dir.path()).expect("lock"));
        std::fs::write(dir.file("report.md"), "mine").expect("write");
        std::fs::create_dir_all(dir.file(".memform-build-9-dead")).expect("stale");
        std::fs::write(dir.file(".memform-build-9-dead/.memform-build"), "9-dead").expect("marker");
        // Named like a build directory, but without memform's marker (or with another run's id in it).
        std::fs::create_dir_all(dir.file(".memform-build-mine")).expect("user's");
        std::fs::create_dir_all(dir.file(".memform-build-7-x")).expect("user's");
        std::fs::write(dir.file(".memform-build-7-x/.memform-build"), "8-y").expect("marker");
        let err = dir.begin(lock.clone(), &RunStamp::now()).err().expect("a user's report.md").to_string();
        assert!(err.contains("report.md: not written by memform"), "{err}");
        assert!(dir.file(".memform-build-9-dead").exists(), "nothing done before the check");
        write_json(&dir.file("run.json"), &manifest(&["report.md", "run.json"], true)).expect("write");
        let stamp = RunStamp::now();
        let build = dir.begin(lock, &stamp).expect("report.md is memform's now");
        assert!(!dir.file(".memform-build-9-dead").exists());
        assert!(dir.file(".memform-build-mine").is_dir() && dir.file(".memform-build-7-x").is_dir(), "not memform's: kept");
        assert_eq!(build.dir().path(), dir.file(&format!(".memform-build-{}", stamp.id)));
        assert!(is_our_build_dir(build.dir().path()));
        let path = build.dir().path().to_path_buf();
        drop(build);
        assert!(!path.exists(), "an uncommitted build is removed");
    }

    #[test]
    fn read_complete_refuses_incomplete_and_replaced_runs() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = RunDir::new(tmp.path());
        let err = dir.read_complete(|_| Ok(())).expect_err("no run.json").to_string();
        assert!(err.starts_with("read ") && err.ends_with("run.json"), "{err}");
        write_json(&dir.file("run.json"), &manifest(&["run.json"], false)).expect("write");
        let err = dir.read_complete(|_| Ok(())).expect_err("incomplete").to_string();
        assert!(err.contains("run.json: incomplete run: no \"complete\": true"), "{err}");
        write_json(&dir.file("run.json"), &manifest(&["run.json", "summary.json"], true)).expect("write");
        let err = dir.read_complete(|_| Ok(())).expect_err("missing file").to_string();
        assert!(err.ends_with("summary.json: listed in run.json but missing: incomplete run; run it again"), "{err}");
        std::fs::write(dir.file("summary.json"), "{}").expect("write");
        assert_eq!(dir.read_complete(|m| Ok(m["mode"].clone())).expect("complete"), json!("rules"));
        // Another run moved in while this one was read.
        let err =
            dir.read_complete(|_| write_json(&dir.file("run.json"), &manifest(&["run.json"], true))).expect_err("replaced").to_string();
        assert!(err.ends_with("run.json: replaced by another run while it was read; read it again"), "{err}");
    }

    #[test]
    fn a_forged_list_owns_only_memforms_artefact_names() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = RunDir::new(tmp.path());
        write_json(&dir.file("run.json"), &manifest(&["summary.json", "notes.md", "plot_old.svg"], true)).expect("write");
        let owned: Vec<String> = dir.previous_files().expect("listed").into_iter().collect();
        assert_eq!(owned, vec!["run.json", "summary.json"]);
    }

    #[cfg(unix)]
    #[test]
    fn writes_replace_files_and_refuse_symlinks() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "precious").expect("write");
        let link = tmp.path().join("report.md");
        std::os::unix::fs::symlink(&victim, &link).expect("symlink");
        let err = write_bytes(&link, b"x").expect_err("a symlink").to_string();
        assert!(
            err.ends_with(
                "report.md: is a symbolic link; memform does not write through one: remove it or choose another output directory"
            ),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "precious");
        let plain = tmp.path().join("a.json");
        write_json(&plain, &json!({"a": 1})).expect("write");
        write_json(&plain, &json!({"a": 2})).expect("rewrite");
        assert_eq!(read_json(&plain).expect("read"), json!({"a": 2}));
        let mut names: Vec<String> =
            std::fs::read_dir(tmp.path()).expect("ls").map(|e| e.expect("e").file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        assert_eq!(names, ["a.json", "report.md", "victim"], "no temporary file left");
    }

    #[cfg(unix)]
    #[test]
    fn the_lock_file_is_owner_only_and_never_a_symlink() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().expect("tempdir");
        let lock = DirLock::acquire(&tmp.path().join("o")).expect("lock");
        let mode = std::fs::metadata(tmp.path().join("o/.memform.lock")).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        drop(lock);
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "precious").expect("write");
        std::fs::create_dir_all(tmp.path().join("l")).expect("mkdir");
        std::os::unix::fs::symlink(&victim, tmp.path().join("l/.memform.lock")).expect("symlink");
        let err = DirLock::acquire(&tmp.path().join("l")).expect_err("a symlink").to_string();
        assert!(err.contains("l/.memform.lock: is a symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "precious");
    }

    #[test]
    fn a_lock_on_a_directory_it_created_removes_it_when_nothing_else_is_there() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("a/b");
        drop(DirLock::acquire(&dir).expect("lock"));
        assert!(!tmp.path().join("a").exists(), "created and left empty: removed");
        let lock = DirLock::acquire(&dir).expect("lock");
        std::fs::write(dir.join("x"), "").expect("write");
        drop(lock);
        assert!(dir.join("x").is_file() && dir.join(DirLock::FILE).is_file(), "something written: kept");
        drop(DirLock::acquire(&dir).expect("lock"));
        assert!(dir.join(DirLock::FILE).is_file(), "not created by this lock: kept");
    }

    #[cfg(unix)]
    #[test]
    fn command_lines_escape_what_is_not_utf8() {
        use std::os::unix::ffi::OsStringExt;
        let args = ["memform", "run", "--out", "a b"]
            .map(std::ffi::OsString::from)
            .into_iter()
            .chain([std::ffi::OsString::from_vec(b"o/bad\xffname".to_vec())]);
        assert_eq!(command_line(args), r#"memform run --out "a b" "o/bad\xFFname""#);
    }

    #[test]
    fn run_stamps_differ() {
        let (a, b) = (RunStamp::now(), RunStamp::now());
        assert_ne!(a.id, b.id);
        assert!(a.id.starts_with(&format!("{}-", std::process::id())));
        assert_eq!(a.started.len(), "2024-01-01T00:00:00Z".len());
    }
}
