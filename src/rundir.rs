//! A run directory: the name of every artefact a run writes, its typed
//! manifest (`run.json`), and the reading and writing of both. Everything
//! that opens a run's files (run, report, compare, gate) goes through here.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::llm::LlmSettings;
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
    /// `rules` or `llm` when both model stages run that way, else `mixed`.
    pub mode: String,
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
        let (extract, judge) = (stages.extractor.mode(), stages.judge.mode());
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
            mode: if extract == judge { extract.as_str().to_string() } else { "mixed".to_string() },
            write_mode: cfg.write_mode().as_str().to_string(),
            extractor: stages.extractor.id(),
            embedder: stages.embedder.id(),
            judge: stages.judge.id(),
            recorded: recorded.clone(),
            digests,
            tags,
            config: cfg.clone(),
        }
    }

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
    pub const RUN_FILES: &'static [&'static str] =
        &[Self::MANIFEST, Self::SUMMARY, Self::FACTS, Self::EPISODES, Self::STORE, "store.sqlite-wal", "store.sqlite-shm"];

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

    /// Creates the directory and removes a previous run's files from it, so
    /// a re-run starts clean.
    pub fn prepare(&self) -> Result<()> {
        std::fs::create_dir_all(&self.path).map_err(|e| Error::write(&self.path, e))?;
        for f in Self::RUN_FILES.iter().chain(REPORT_FILES) {
            let p = self.file(f);
            if p.exists() {
                std::fs::remove_file(&p).map_err(|e| Error::write(&p, e))?;
            }
        }
        Ok(())
    }

    pub fn write_manifest(&self, m: &Manifest) -> Result<()> {
        write_json(&self.file(Self::MANIFEST), m)
    }

    /// `run.json` as JSON (a run by an older memform may lack fields).
    pub fn read_manifest(&self) -> Result<Value> {
        read_json(&self.file(Self::MANIFEST))
    }

    pub fn read_summary(&self) -> Result<Value> {
        read_json(&self.file(Self::SUMMARY))
    }

    /// `summary.json`, `facts.jsonl` and `episodes.jsonl`.
    pub fn write_records<S: Serialize>(&self, summary: &S, episodes: &[EpisodeRecord]) -> Result<()> {
        write_json(&self.file(Self::SUMMARY), summary)?;
        write_jsonl(&self.file(Self::FACTS), episodes.iter().flat_map(|e| &e.facts))?;
        write_jsonl(&self.file(Self::EPISODES), episodes.iter())
    }
}

/// Files the reports add to a run directory (removed before a re-run).
pub const REPORT_FILES: &[&str] = &[
    "facts.parquet",
    "facts.csv",
    "episodes.parquet",
    "episodes.csv",
    "per_conversation.csv",
    "report.md",
    PLOT_STORED,
    PLOT_OUTCOMES,
    PLOT_VERDICTS,
    PLOT_WARNINGS,
    PLOT_SCORES,
];

pub const PLOT_STORED: &str = "plot_stored_facts.svg";
pub const PLOT_OUTCOMES: &str = "plot_outcomes.svg";
pub const PLOT_VERDICTS: &str = "plot_verdicts.svg";
pub const PLOT_WARNINGS: &str = "plot_warnings.svg";
pub const PLOT_SCORES: &str = "plot_precision_recall.svg";

/// Writes `value` as pretty JSON with a trailing newline.
pub fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| Error::Other(format!("serialise {}: {e}", path.display())))?;
    text.push('\n');
    std::fs::write(path, text).map_err(|e| Error::write(path, e))
}

/// Reads a JSON file; a parse error names the file, line and column.
pub fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    crate::error::reject_bom(path, text.as_bytes())?;
    serde_json::from_str(&text).map_err(|e| Error::input(path, format!("line {} column {}: {e}", e.line(), e.column())))
}

fn write_jsonl<'a, T: Serialize + 'a>(path: &Path, rows: impl Iterator<Item = &'a T>) -> Result<()> {
    let file = std::fs::File::create(path).map_err(|e| Error::write(path, e))?;
    let mut w = std::io::BufWriter::new(file);
    for row in rows {
        serde_json::to_writer(&mut w, row).map_err(|e| Error::Other(format!("serialise {}: {e}", path.display())))?;
        w.write_all(b"\n").map_err(|e| Error::write(path, e))?;
    }
    w.flush().map_err(|e| Error::write(path, e))
}
