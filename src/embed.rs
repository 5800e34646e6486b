//! The `Embedder` seam: every vector the pipeline compares comes through it.
//! The built-in hashed n-gram embedder needs no model; real models (MiniLM
//! in process, Ollama or OpenAI-compatible servers over HTTP) sit behind the
//! recorded cache, and [`build_embedder`] assembles the one a run asks for.

pub mod cache;
pub mod hashed;
pub mod http;
#[cfg(feature = "full")]
pub mod minilm;
/// Without the `full` feature: MiniLM's constants and a loader that says so.
#[cfg(not(feature = "full"))]
#[path = "embed/minilm_stub.rs"]
pub mod minilm;

use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::error::{Error, Result};
use cache::{CachedEmbedder, EmbedMode};
use hashed::HashedEmbedder;
use http::{HttpApi, HttpEmbedder, HttpEmbedderSettings};
use minilm::MiniLmEmbedder;

/// Turns texts into unit vectors. Implementations must be deterministic for a
/// given id, or sit behind a recorded cache that makes them so.
pub trait Embedder: Send + Sync {
    /// Names the embedder and its model (`hashed:char3+word:256`); recorded in
    /// the run manifest and part of the embedding cache key.
    fn id(&self) -> String;
    fn dims(&self) -> usize;
    /// Embeds `texts` in order. `source` says where the texts come from
    /// (conversation and episode) for error messages.
    fn embed(&self, texts: &[&str], source: &str) -> Result<Vec<Vec<f32>>>;
    /// Writes what a recording cache gathered; nothing to do elsewhere.
    /// Call once at the end of a run, outside any store transaction.
    fn flush(&self) -> Result<()> {
        Ok(())
    }
    /// What a cache answered and recorded, for the run manifest; `None` for
    /// an embedder without a cache (hashed, or any kind in live mode).
    fn cache_stats(&self) -> Option<CacheStats> {
        None
    }
}

/// A recorded cache's figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheStats {
    pub mode: EmbedMode,
    pub dir: PathBuf,
    /// Vectors held (recorded before plus recorded in this run).
    pub entries: usize,
    /// Texts answered from the cache.
    pub hits: u64,
    /// Vectors computed and added in this run.
    pub recorded: u64,
    /// The integrity record the cache's contents give (keys and vectors,
    /// see [`cache::integrity_sha256`]): run.json's `recorded.embeddings.sha256`.
    pub sha256: String,
    /// Keys looked up so far (answered or recorded).
    pub used: std::collections::BTreeSet<String>,
}

/// The embedders a run can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedderKind {
    /// Hashed character trigrams and words; no model, no cache.
    Hashed,
    /// all-MiniLM-L6-v2 in process.
    MiniLm,
    /// An Ollama server's `/api/embed`.
    Ollama,
    /// An OpenAI-compatible server's `/v1/embeddings`.
    OpenAi,
}

impl EmbedderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EmbedderKind::Hashed => "hashed",
            EmbedderKind::MiniLm => "minilm",
            EmbedderKind::Ollama => "ollama",
            EmbedderKind::OpenAi => "openai",
        }
    }
}

impl std::fmt::Display for EmbedderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EmbedderKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "hashed" => Ok(EmbedderKind::Hashed),
            "minilm" => Ok(EmbedderKind::MiniLm),
            "ollama" => Ok(EmbedderKind::Ollama),
            "openai" => Ok(EmbedderKind::OpenAi),
            other => Err(Error::Config(format!("unknown embedder {other:?} (expected hashed, minilm, ollama or openai)"))),
        }
    }
}

/// Default Ollama base URL.
pub const OLLAMA_URL: &str = "http://127.0.0.1:11434";

/// Everything [`build_embedder`] needs.
#[derive(Debug, Clone)]
pub struct EmbedderSpec {
    pub kind: EmbedderKind,
    /// MiniLM's files (default `models/all-MiniLM-L6-v2`).
    pub model_dir: PathBuf,
    /// Base URL of an HTTP embedder (Ollama defaults to [`OLLAMA_URL`]).
    pub url: Option<String>,
    /// Model name sent to an HTTP embedder.
    pub model: Option<String>,
    /// Dimensions: the hashed embedder's (default 256); required for HTTP
    /// embedders; MiniLM's are 384 and may be left unset.
    pub dims: Option<usize>,
    pub mode: EmbedMode,
    /// The dataset's embeddings directory (`datasets/<name>/embeddings`);
    /// each embedder records under its own sub-directory. Required by
    /// replay and record for every kind but hashed.
    pub cache_dir: Option<PathBuf>,
    /// The command quoted by a replay miss; by default derived from
    /// `cache_dir` (`memform run --dataset <its parent> --embedder … --embed record`).
    pub record_command: Option<String>,
    /// Seconds one HTTP call may take.
    pub timeout_secs: f64,
    /// Extra HTTP attempts after a timeout or a 5xx answer.
    pub max_retries: u32,
    /// Wait before the first HTTP retry; doubled for each further one.
    pub retry_backoff_ms: u64,
}

impl EmbedderSpec {
    pub fn new(kind: EmbedderKind) -> Self {
        EmbedderSpec {
            kind,
            model_dir: PathBuf::from(minilm::DEFAULT_MODEL_DIR),
            url: None,
            model: None,
            dims: None,
            mode: EmbedMode::Replay,
            cache_dir: None,
            record_command: None,
            timeout_secs: 60.0,
            max_retries: 2,
            retry_backoff_ms: 500,
        }
    }

    /// The id the embedder will report, known without loading a model.
    pub fn embedder_id(&self) -> Result<String> {
        Ok(match self.kind {
            EmbedderKind::Hashed => HashedEmbedder::new(self.dims.unwrap_or(256)).id(),
            EmbedderKind::MiniLm => MiniLmEmbedder::id_for(&self.model_dir),
            EmbedderKind::Ollama | EmbedderKind::OpenAi => {
                format!("{}:{}", self.kind, self.http_model()?)
            }
        })
    }

    fn http_model(&self) -> Result<&str> {
        self.model
            .as_deref()
            .filter(|m| !m.trim().is_empty())
            .ok_or_else(|| Error::Config(format!("the {} embedder needs a model name", self.kind)))
    }

    fn dims_for_kind(&self) -> Result<usize> {
        match (self.kind, self.dims) {
            (EmbedderKind::Hashed, d) => Ok(d.unwrap_or(256)),
            (EmbedderKind::MiniLm, None) => Ok(minilm::DIMS),
            (EmbedderKind::MiniLm, Some(d)) if d == minilm::DIMS => Ok(d),
            (EmbedderKind::MiniLm, Some(d)) => Err(Error::Config(format!("minilm has {} dimensions, not {d}", minilm::DIMS))),
            (_, Some(d)) if d > 0 => Ok(d),
            _ => Err(Error::Config(format!("the {} embedder needs its dimensions (--embed-dims)", self.kind))),
        }
    }

    fn load_model(&self, dims: usize) -> Result<Box<dyn Embedder>> {
        Ok(match self.kind {
            EmbedderKind::Hashed => Box::new(HashedEmbedder::new(dims)),
            EmbedderKind::MiniLm => Box::new(MiniLmEmbedder::load(&self.model_dir)?),
            EmbedderKind::Ollama | EmbedderKind::OpenAi => {
                let (api, url) = match self.kind {
                    EmbedderKind::Ollama => (HttpApi::Ollama, self.url.clone().unwrap_or_else(|| OLLAMA_URL.to_string())),
                    _ => (
                        HttpApi::OpenAi,
                        self.url.clone().ok_or_else(|| Error::Config("the openai embedder needs a base URL".to_string()))?,
                    ),
                };
                let mut settings = HttpEmbedderSettings::new(api, &url, self.http_model()?, dims);
                settings.timeout_secs = self.timeout_secs;
                settings.max_retries = self.max_retries;
                settings.retry_backoff_ms = self.retry_backoff_ms;
                Box::new(HttpEmbedder::new(settings)?)
            }
        })
    }

    fn default_record_command(&self, cache_dir: &Path) -> String {
        let dataset = match cache_dir.file_name() {
            Some(n) if n == "embeddings" => cache_dir.parent().unwrap_or(cache_dir),
            _ => cache_dir,
        };
        let mut cmd = format!("memform run --dataset {} --embedder {} --embed record", dataset.display(), self.kind);
        if self.kind == EmbedderKind::MiniLm && self.model_dir != Path::new(minilm::DEFAULT_MODEL_DIR) {
            cmd.push_str(&format!(" --model-dir {}", self.model_dir.display()));
        }
        cmd
    }
}

/// The embedder `spec` describes. The hashed embedder is deterministic and
/// bypasses the cache whatever the mode. Every other kind goes through a
/// [`CachedEmbedder`], in live mode too, so the model always sees the same
/// normalised text: replay loads no model and reaches no server, record
/// loads the model for the misses, live uses the model alone and touches
/// no cache directory.
pub fn build_embedder(spec: &EmbedderSpec) -> Result<Box<dyn Embedder>> {
    let dims = spec.dims_for_kind()?;
    if spec.kind == EmbedderKind::Hashed {
        return spec.load_model(dims);
    }
    let id = spec.embedder_id()?;
    let cache_dir = match (&spec.cache_dir, spec.mode) {
        (Some(dir), _) if dir.exists() && !dir.is_dir() => {
            return Err(Error::input(dir, "the embedding cache (--embed-cache): not a directory"));
        }
        (Some(dir), _) => dir.clone(),
        (None, EmbedMode::Live) => PathBuf::new(),
        (None, mode) => {
            return Err(Error::Config(format!("--embed {mode} with the {} embedder needs a cache directory", spec.kind)));
        }
    };
    let inner = match spec.mode {
        EmbedMode::Replay => None,
        EmbedMode::Record | EmbedMode::Live => Some(spec.load_model(dims)?),
    };
    let command = spec.record_command.clone().unwrap_or_else(|| spec.default_record_command(&cache_dir));
    Ok(Box::new(CachedEmbedder::open(&cache_dir, &id, dims, spec.mode, inner, &command)?))
}

/// Cosine of two vectors; 0 when either is zero. Vectors from an `Embedder`
/// are unit length, so this is their dot product.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let n = a.len().min(b.len());
    cosine_with_squares(&a[..n], squared_norm(&a[..n]), &b[..n], squared_norm(&b[..n]))
}

/// Eight independent f32 lanes per sum, so each loop vectorises; f32 is
/// ample for unit vectors of a few hundred dimensions (error ~1e-6). Each
/// sum is its own pass: the lanes add in the same order either way.
fn lanes(x: &[f32], y: &[f32]) -> f64 {
    let (cx, rx) = x.as_chunks::<8>();
    let (cy, ry) = y.as_chunks::<8>();
    let mut acc = [0f32; 8];
    for (x, y) in cx.iter().zip(cy) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    for (x, y) in rx.iter().zip(ry) {
        acc[0] += x * y;
    }
    acc.iter().sum::<f32>() as f64
}

/// A vector's squared norm as [`cosine`] sums it, so a search can compute
/// it once per vector ([`cosine_with_squares`]).
pub fn squared_norm(a: &[f32]) -> f64 {
    lanes(a, a)
}

/// [`cosine`] of two vectors of equal length given their [`squared_norm`]s:
/// the same value to the bit, with one pass over the vectors instead of three.
pub fn cosine_with_squares(a: &[f32], na: f64, b: &[f32], nb: f64) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    let dot = lanes(a, b);
    if na == 0.0 || nb == 0.0 { 0.0 } else { (dot / (na.sqrt() * nb.sqrt())).clamp(-1.0, 1.0) }
}

/// Scales `v` to unit length in place (a zero vector stays zero).
pub fn l2_normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
    if n > 0.0 {
        for x in v.iter_mut() {
            *x = (f64::from(*x) / n) as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: EmbedderKind, mode: EmbedMode, cache: Option<&Path>) -> EmbedderSpec {
        let mut s = EmbedderSpec::new(kind);
        s.mode = mode;
        s.cache_dir = cache.map(Path::to_path_buf);
        s
    }

    #[test]
    fn hashed_bypasses_the_cache_in_every_mode() {
        for mode in [EmbedMode::Replay, EmbedMode::Record, EmbedMode::Live] {
            let mut s = spec(EmbedderKind::Hashed, mode, None);
            s.dims = Some(64);
            let e = build_embedder(&s).expect("hashed needs nothing");
            assert_eq!(e.id(), "hashed:char3+word:64");
            assert!(e.cache_stats().is_none());
            assert_eq!(e.embed(&["a fact"], "c/e").expect("embed")[0].len(), 64);
        }
    }

    #[test]
    fn minilm_replay_loads_no_model_and_names_the_record_command() {
        let root = tempfile::tempdir().expect("tempdir");
        let cache = root.path().join("datasets/demo/embeddings");
        let mut s = spec(EmbedderKind::MiniLm, EmbedMode::Replay, Some(&cache));
        s.model_dir = root.path().join("no-such-model/all-MiniLM-L6-v2");
        let e = build_embedder(&s).expect("replay needs no model");
        assert_eq!(e.id(), "minilm:all-MiniLM-L6-v2");
        assert_eq!(e.dims(), 384);
        let msg = e.embed(&["Dana adopted a cat"], "conv-1/session-4").expect_err("empty cache").to_string();
        let expected = format!(
            "memform run --dataset {} --embedder minilm --embed record --model-dir {}",
            root.path().join("datasets/demo").display(),
            s.model_dir.display()
        );
        assert!(msg.contains(&expected), "{msg}");
        assert!(msg.contains("conv-1/session-4"), "{msg}");
        assert!(msg.contains("minilm-all-minilm-l6-v2"), "{msg}");
    }

    #[test]
    fn missing_pieces_are_config_errors() {
        let root = tempfile::tempdir().expect("tempdir");
        let no_cache = build_embedder(&spec(EmbedderKind::MiniLm, EmbedMode::Replay, None));
        assert!(no_cache.err().expect("no cache dir").to_string().contains("needs a cache directory"));

        let mut record = spec(EmbedderKind::MiniLm, EmbedMode::Record, Some(root.path()));
        record.model_dir = root.path().join("absent");
        let msg = build_embedder(&record).err().expect("no model").to_string();
        assert!(msg.contains("make models"), "{msg}");

        let mut wrong = spec(EmbedderKind::MiniLm, EmbedMode::Replay, Some(root.path()));
        wrong.dims = Some(768);
        assert!(build_embedder(&wrong).is_err());

        let mut ollama = spec(EmbedderKind::Ollama, EmbedMode::Live, None);
        ollama.model = Some("nomic-embed-text".to_string());
        let msg = build_embedder(&ollama).err().expect("no dims").to_string();
        assert!(msg.contains("needs its dimensions"), "{msg}");
        ollama.dims = Some(768);
        let live = build_embedder(&ollama).expect("ollama");
        assert_eq!(live.id(), "ollama:nomic-embed-text");
        assert!(live.cache_stats().is_none(), "live mode has no cache");

        let mut openai = spec(EmbedderKind::OpenAi, EmbedMode::Live, None);
        openai.model = Some("m".to_string());
        openai.dims = Some(8);
        assert!(build_embedder(&openai).err().expect("no url").to_string().contains("base URL"));
        assert!("bert".parse::<EmbedderKind>().is_err());
        assert_eq!("openai".parse::<EmbedderKind>().expect("kind"), EmbedderKind::OpenAi);
    }
}
