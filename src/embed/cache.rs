//! The recorded embedding cache: the embedding half of the recorded boundary.
//!
//! A [`CachedEmbedder`] wraps a model (or nothing, in replay) and answers
//! from vectors recorded on disk, keyed by [`cache_key`]: SHA-256 of the
//! canonical JSON `{"embedder":…,"model":…,"text":…}` where the text is the
//! normalised content ([`normalize_content`]). The model always sees that
//! normalised text, so a vector is a function of its key alone and live,
//! record and replay agree.
//!
//! Layout, one directory per dataset and embedder,
//! `datasets/<name>/embeddings/<embedder-slug>/`:
//! - `vectors.f32`: the vectors, `dims` little-endian IEEE-754 f32 values per
//!   row, rows in key order, nothing else (exact, no header);
//! - `index.json`: format, embedder id, dims, row count, the integrity
//!   record `sha256` (see [`integrity_sha256`]: every row's key followed by
//!   its vector, so an edited vector *and* a key moved to another row are
//!   refused), and one entry per row (key, row, first 80 characters of the
//!   normalised text, for people reading diffs).
//!
//! Both files are a function of the recorded set alone (sorted by key, no
//! timestamps), so recording the same texts twice gives byte-identical files.
//! Files are written to a temporary name and renamed into place.
//!
//! Modes: `replay` (the default) answers from the files only, and a missing
//! vector is [`Error::EmbeddingMissing`], naming the text's source and the
//! command that records it; `record` sends misses to the model and adds them,
//! written by [`Embedder::flush`]; `live` calls the model, with no cache.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::{CacheStats, Embedder};
use crate::error::{Error, MissingEmbedding, Result};
use crate::normalize::{normalize_content, sha256_hex};

pub const INDEX_FILE: &str = "index.json";
pub const VECTORS_FILE: &str = "vectors.f32";
const FORMAT: &str = "memform-embeddings/2";
/// The format before the integrity record covered the keys (its
/// `vectors_sha256` covered the vectors only).
const FORMAT_V1: &str = "memform-embeddings/1";
const DTYPE: &str = "f32le";
const PREVIEW_CHARS: usize = 80;

/// How the cache treats a text it has no vector for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedMode {
    /// Recorded vectors only; a miss is an error.
    #[default]
    Replay,
    /// Misses go to the model and are added to the cache.
    Record,
    /// The model answers everything; nothing is read or written.
    Live,
}

impl EmbedMode {
    pub fn as_str(self) -> &'static str {
        match self {
            EmbedMode::Replay => "replay",
            EmbedMode::Record => "record",
            EmbedMode::Live => "live",
        }
    }
}

impl std::fmt::Display for EmbedMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EmbedMode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "replay" => Ok(EmbedMode::Replay),
            "record" => Ok(EmbedMode::Record),
            "live" => Ok(EmbedMode::Live),
            other => Err(Error::Config(format!("unknown embed mode {other:?} (expected replay, record or live)"))),
        }
    }
}

/// The cache key of `normalized_text` for the embedder `embedder_id`
/// (`kind:model`, as [`Embedder::id`] gives it).
pub fn cache_key(embedder_id: &str, normalized_text: &str) -> String {
    #[derive(Serialize)]
    struct KeyInput<'a> {
        embedder: &'a str,
        model: &'a str,
        text: &'a str,
    }
    let (embedder, model) = embedder_id.split_once(':').unwrap_or((embedder_id, ""));
    let canonical = serde_json::json!(KeyInput { embedder, model, text: normalized_text });
    sha256_hex(canonical.to_string().as_bytes())
}

/// The directory name of an embedder's cache: its id lower-cased, with every
/// character outside `[a-z0-9._-]` replaced by `-`.
pub fn slug(embedder_id: &str) -> String {
    embedder_id.to_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' }).collect()
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct IndexFile {
    format: String,
    embedder: String,
    dims: usize,
    dtype: String,
    vectors: String,
    /// [`integrity_sha256`] of the rows.
    sha256: String,
    count: usize,
    entries: Vec<IndexEntry>,
}

/// `index.json` as [`rehash`] reads it: either format, no digest checked.
#[derive(Deserialize)]
struct AnyIndexFile {
    format: String,
    embedder: String,
    dims: usize,
    dtype: String,
    vectors: String,
    #[serde(default)]
    sha256: Option<String>,
    #[serde(default)]
    vectors_sha256: Option<String>,
    count: usize,
    entries: Vec<IndexEntry>,
}

/// The integrity record of a cache: SHA-256 of, for each row in order, its
/// key (64 ASCII hex digits) followed by its vector's bytes (little-endian
/// f32). It changes when a vector changes and when a key moves to another
/// row, is dropped or is added.
pub fn integrity_sha256<'a>(rows: impl Iterator<Item = (&'a str, &'a [f32])>) -> String {
    let mut bytes = Vec::new();
    for (key, vector) in rows {
        bytes.extend_from_slice(key.as_bytes());
        for x in vector {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
    }
    sha256_hex(&bytes)
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct IndexEntry {
    key: String,
    row: usize,
    text: String,
}

struct Entry {
    vector: Vec<f32>,
    preview: String,
}

#[derive(Default)]
struct State {
    entries: BTreeMap<String, Entry>,
    dirty: bool,
    /// Keys this run looked up (hits and recorded), for `memform embeddings prune`.
    used: std::collections::BTreeSet<String>,
}

pub struct CachedEmbedder {
    inner: Option<Box<dyn Embedder>>,
    mode: EmbedMode,
    id: String,
    dims: usize,
    dir: PathBuf,
    record_command: String,
    state: RwLock<State>,
    hits: AtomicU64,
    recorded: AtomicU64,
}

impl CachedEmbedder {
    /// A cache for the embedder `id` with `dims` dimensions under
    /// `root/<slug(id)>/`, loading what is recorded there. `inner` is the
    /// model: required in record and live modes, unused in replay (pass
    /// `None` so no model is loaded). `record_command` is quoted in replay
    /// misses.
    pub fn open(
        root: &Path,
        id: &str,
        dims: usize,
        mode: EmbedMode,
        inner: Option<Box<dyn Embedder>>,
        record_command: &str,
    ) -> Result<Self> {
        if let Some(model) = &inner {
            if model.id() != id || model.dims() != dims {
                return Err(Error::Config(format!(
                    "embedding cache for {id} ({dims} dimensions) given the model {} ({} dimensions)",
                    model.id(),
                    model.dims()
                )));
            }
        } else if mode != EmbedMode::Replay {
            return Err(Error::Config(format!("--embed {mode} needs the {id} model")));
        }
        let dir = root.join(slug(id));
        let entries = if mode == EmbedMode::Live { BTreeMap::new() } else { load(&dir, id, dims)? };
        Ok(CachedEmbedder {
            inner,
            mode,
            id: id.to_string(),
            dims,
            dir,
            record_command: record_command.to_string(),
            state: RwLock::new(State { entries, dirty: false, used: Default::default() }),
            hits: AtomicU64::new(0),
            recorded: AtomicU64::new(0),
        })
    }

    pub fn mode(&self) -> EmbedMode {
        self.mode
    }

    /// The directory holding this embedder's recorded vectors.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn model(&self) -> Result<&dyn Embedder> {
        self.inner.as_deref().ok_or_else(|| Error::Config(format!("--embed {} needs the {} model", self.mode, self.id)))
    }

    fn embed_with_model(&self, texts: &[&str], source: &str) -> Result<Vec<Vec<f32>>> {
        let vectors = self.model()?.embed(texts, source)?;
        if vectors.len() != texts.len() {
            return Err(Error::Embed(format!("{} returned {} vectors for {} texts", self.id, vectors.len(), texts.len())));
        }
        if let Some(bad) = vectors.iter().find(|v| v.len() != self.dims) {
            return Err(Error::Embed(format!("{} returned a vector of {} dimensions, expected {}", self.id, bad.len(), self.dims)));
        }
        Ok(vectors)
    }

    /// The integrity record the current contents would give.
    fn digest(state: &State) -> String {
        integrity_sha256(state.entries.iter().map(|(k, e)| (k.as_str(), e.vector.as_slice())))
    }

    fn read_state(&self) -> Result<std::sync::RwLockReadGuard<'_, State>> {
        self.state.read().map_err(|_| Error::Embed("embedding cache lock poisoned".to_string()))
    }

    fn write_state(&self) -> Result<std::sync::RwLockWriteGuard<'_, State>> {
        self.state.write().map_err(|_| Error::Embed("embedding cache lock poisoned".to_string()))
    }
}

impl Embedder for CachedEmbedder {
    fn id(&self) -> String {
        self.id.clone()
    }

    fn dims(&self) -> usize {
        self.dims
    }

    fn embed(&self, texts: &[&str], source: &str) -> Result<Vec<Vec<f32>>> {
        let normalized: Vec<String> = texts.iter().map(|t| normalize_content(t)).collect();
        if self.mode == EmbedMode::Live {
            let refs: Vec<&str> = normalized.iter().map(String::as_str).collect();
            return self.embed_with_model(&refs, source);
        }
        let keys: Vec<String> = normalized.iter().map(|t| cache_key(&self.id, t)).collect();
        {
            let mut state = self.write_state()?;
            state.used.extend(keys.iter().cloned());
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        let mut missing: BTreeMap<&str, usize> = BTreeMap::new();
        {
            let state = self.read_state()?;
            for (i, key) in keys.iter().enumerate() {
                match state.entries.get(key) {
                    Some(e) => out[i] = Some(e.vector.clone()),
                    None => {
                        missing.entry(key.as_str()).or_insert(i);
                    }
                }
            }
        }
        let hits = out.iter().filter(|v| v.is_some()).count();
        self.hits.fetch_add(hits as u64, Ordering::Relaxed);
        if !missing.is_empty() {
            let mut first: Vec<usize> = missing.values().copied().collect();
            first.sort_unstable();
            if self.mode == EmbedMode::Replay {
                let i = first[0];
                return Err(Error::EmbeddingMissing(Box::new(MissingEmbedding {
                    origin: source.to_string(),
                    preview: preview(&normalized[i]),
                    key: keys[i].clone(),
                    missing: first.len(),
                    texts: texts.len(),
                    dir: self.dir.clone(),
                    command: self.record_command.clone(),
                })));
            }
            let batch: Vec<&str> = first.iter().map(|&i| normalized[i].as_str()).collect();
            let vectors = self.embed_with_model(&batch, source)?;
            let mut stored: BTreeMap<&str, Vec<f32>> = BTreeMap::new();
            {
                let mut state = self.write_state()?;
                for (&i, vector) in first.iter().zip(vectors) {
                    let entry = state.entries.entry(keys[i].clone()).or_insert_with(|| {
                        self.recorded.fetch_add(1, Ordering::Relaxed);
                        Entry { vector, preview: preview(&normalized[i]) }
                    });
                    stored.insert(keys[i].as_str(), entry.vector.clone());
                }
                state.dirty = true;
            }
            for (slot, key) in out.iter_mut().zip(&keys) {
                if slot.is_none() {
                    *slot = stored.get(key.as_str()).cloned();
                }
            }
        }
        out.into_iter().map(|v| v.ok_or_else(|| Error::Embed("embedding cache left a text without a vector".to_string()))).collect()
    }

    fn flush(&self) -> Result<()> {
        if self.mode != EmbedMode::Record {
            return Ok(());
        }
        let mut state = self.write_state()?;
        if !state.dirty {
            return Ok(());
        }
        write_files(&self.dir, &self.id, self.dims, &state.entries)?;
        state.dirty = false;
        Ok(())
    }

    fn cache_stats(&self) -> Option<CacheStats> {
        if self.mode == EmbedMode::Live {
            return None;
        }
        let state = self.read_state().ok()?;
        Some(CacheStats {
            mode: self.mode,
            dir: self.dir.clone(),
            entries: state.entries.len(),
            hits: self.hits.load(Ordering::Relaxed),
            recorded: self.recorded.load(Ordering::Relaxed),
            sha256: Self::digest(&state),
            used: state.used.clone(),
        })
    }
}

fn preview(text: &str) -> String {
    text.chars().take(PREVIEW_CHARS).collect()
}

fn vector_bytes(entries: &BTreeMap<String, Entry>) -> Vec<u8> {
    let rows = entries.len();
    let dims = entries.values().next().map_or(0, |e| e.vector.len());
    let mut bytes = Vec::with_capacity(rows * dims * 4);
    for e in entries.values() {
        for x in &e.vector {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
    }
    bytes
}

/// Writes `entries` as `dir`'s `vectors.f32` and `index.json` (rows in key order).
fn write_files(dir: &Path, id: &str, dims: usize, entries: &BTreeMap<String, Entry>) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, e))?;
    let bytes = vector_bytes(entries);
    let index = IndexFile {
        format: FORMAT.to_string(),
        embedder: id.to_string(),
        dims,
        dtype: DTYPE.to_string(),
        vectors: VECTORS_FILE.to_string(),
        sha256: integrity_sha256(entries.iter().map(|(k, e)| (k.as_str(), e.vector.as_slice()))),
        count: entries.len(),
        entries: entries.iter().enumerate().map(|(row, (key, e))| IndexEntry { key: key.clone(), row, text: e.preview.clone() }).collect(),
    };
    let mut json = serde_json::to_string_pretty(&index).map_err(|e| Error::Embed(format!("serialise embedding index: {e}")))?;
    json.push('\n');
    write_atomic(&dir.join(VECTORS_FILE), &bytes)?;
    write_atomic(&dir.join(INDEX_FILE), json.as_bytes())
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).map_err(|e| Error::write(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::write(path, e))
}

/// A cache directory's rows as recorded (row order), with its index.
struct Recorded {
    index: AnyIndexFile,
    /// (key, vector, preview) per row.
    rows: Vec<(String, Vec<f32>, String)>,
}

impl Recorded {
    fn integrity(&self) -> String {
        integrity_sha256(self.rows.iter().map(|(k, v, _)| (k.as_str(), v.as_slice())))
    }

    fn entries(self) -> BTreeMap<String, Entry> {
        self.rows.into_iter().map(|(k, vector, preview)| (k, Entry { vector, preview })).collect()
    }
}

/// Reads `dir`'s index and vectors, checking their shape (count, rows,
/// size, keys given once) but no digest; `None` when nothing is recorded.
fn read_recorded(dir: &Path) -> Result<Option<Recorded>> {
    let index_path = dir.join(INDEX_FILE);
    if !index_path.exists() {
        return Ok(None);
    }
    let bad = |message: String| Error::EmbedCache { path: index_path.clone(), message };
    let text = std::fs::read_to_string(&index_path).map_err(|e| Error::io(&index_path, e))?;
    let index: AnyIndexFile = serde_json::from_str(&text).map_err(|e| bad(format!("not a valid index: {e}")))?;
    if index.format != FORMAT && index.format != FORMAT_V1 {
        return Err(bad(format!("format {:?}, expected {FORMAT:?}", index.format)));
    }
    if index.dtype != DTYPE {
        return Err(bad(format!("dtype {:?}, expected {DTYPE:?}", index.dtype)));
    }
    if index.count != index.entries.len() {
        return Err(bad(format!("count {} but {} entries", index.count, index.entries.len())));
    }
    let dims = index.dims;
    let vectors_path = dir.join(&index.vectors);
    let bytes = std::fs::read(&vectors_path).map_err(|e| Error::io(&vectors_path, e))?;
    if bytes.len() != index.count * dims * 4 {
        return Err(bad(format!("{} holds {} bytes, expected {} rows of {dims} f32", index.vectors, bytes.len(), index.count)));
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut rows = Vec::with_capacity(index.count);
    for (pos, e) in index.entries.iter().enumerate() {
        if e.row != pos {
            return Err(bad(format!("entry {pos} has row {}", e.row)));
        }
        if !seen.insert(e.key.as_str()) {
            return Err(bad(format!("key {} appears twice", e.key)));
        }
        let start = pos * dims * 4;
        let vector: Vec<f32> =
            bytes[start..start + dims * 4].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        rows.push((e.key.clone(), vector, e.text.clone()));
    }
    if index.format == FORMAT_V1 && index.vectors_sha256.as_deref() != Some(sha256_hex(&bytes).as_str()) {
        return Err(bad(format!("{} does not match its recorded SHA-256", index.vectors)));
    }
    Ok(Some(Recorded { index, rows }))
}

/// Reads `dir`'s cache and checks its integrity record.
fn read_checked(dir: &Path) -> Result<Option<Recorded>> {
    let Some(rec) = read_recorded(dir)? else { return Ok(None) };
    let index_path = dir.join(INDEX_FILE);
    let bad = |message: String| Error::EmbedCache { path: index_path.clone(), message };
    if rec.index.format == FORMAT_V1 {
        return Err(bad(format!(
            "format {FORMAT_V1:?} checks its vectors but not which key each belongs to; \
             accept it as it is with `memform embeddings rehash --cache {}`, or re-record it",
            dir.display()
        )));
    }
    match &rec.index.sha256 {
        None => return Err(bad("sha256: missing field".to_string())),
        Some(recorded) if *recorded != rec.integrity() => {
            return Err(bad(format!(
                "the cache (keys and {}) does not match its recorded SHA-256 (edited by hand? \
                 accept a deliberate edit with `memform embeddings rehash --cache {}`)",
                rec.index.vectors,
                dir.display()
            )));
        }
        Some(_) => {}
    }
    Ok(Some(rec))
}

/// The recorded vectors in `dir`, or none when nothing was recorded there.
fn load(dir: &Path, id: &str, dims: usize) -> Result<BTreeMap<String, Entry>> {
    let Some(rec) = read_checked(dir)? else { return Ok(BTreeMap::new()) };
    let index_path = dir.join(INDEX_FILE);
    let bad = |message: String| Error::EmbedCache { path: index_path.clone(), message };
    if rec.index.embedder != id {
        return Err(bad(format!("recorded for embedder {:?}, not {id:?}", rec.index.embedder)));
    }
    if rec.index.dims != dims {
        return Err(bad(format!("{} dimensions recorded, the embedder has {dims}", rec.index.dims)));
    }
    Ok(rec.entries())
}

/// What `memform embeddings list` shows of one cache directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheInfo {
    pub dir: PathBuf,
    pub embedder: String,
    pub dims: usize,
    pub vectors: usize,
    /// Bytes of `index.json` and the vectors file.
    pub bytes: u64,
    /// Seconds since the epoch `index.json` was last written.
    pub written: Option<u64>,
    /// `None` when the integrity check passes, else why it fails.
    pub problem: Option<String>,
}

/// Describes the cache in `dir` (`None` when nothing is recorded there).
pub fn cache_info(dir: &Path) -> Result<Option<CacheInfo>> {
    let index_path = dir.join(INDEX_FILE);
    let Some(rec) = read_recorded(dir)? else { return Ok(None) };
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let written = std::fs::metadata(&index_path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs());
    let problem = read_checked(dir).err().map(|e| e.to_string());
    Ok(Some(CacheInfo {
        dir: dir.to_path_buf(),
        embedder: rec.index.embedder.clone(),
        dims: rec.index.dims,
        vectors: rec.rows.len(),
        bytes: size(&index_path) + size(&dir.join(&rec.index.vectors)),
        written,
        problem,
    }))
}

/// What [`rehash`] did to a cache directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rehashed {
    pub dir: PathBuf,
    /// The format it was in.
    pub from_format: String,
    /// True when the files changed (a new integrity record or format).
    pub changed: bool,
}

/// `memform embeddings rehash`: accepts the cache in `dir` as it is (after
/// a deliberate edit, or a cache of the older format whose digest did not
/// cover the keys) by writing a new integrity record. The rows are kept,
/// each key with the vector it has now, in key order. The shape is still
/// checked; a format-1 cache whose vectors no longer match their own
/// SHA-256 is refused (re-record it).
pub fn rehash(dir: &Path) -> Result<Option<Rehashed>> {
    let Some(rec) = read_recorded(dir)? else { return Ok(None) };
    // A vector with a NaN or an infinity would be accepted, then used silently.
    for (pos, (key, vector, _)) in rec.rows.iter().enumerate() {
        if let Some(j) = vector.iter().position(|x| !x.is_finite()) {
            return Err(Error::EmbedCache {
                path: dir.join(&rec.index.vectors),
                message: format!(
                    "row {pos} (key {key}): value {} at dimension {j} is not finite; refused (re-record the vector with --embed record)",
                    vector[j]
                ),
            });
        }
    }
    let before = (std::fs::read(dir.join(INDEX_FILE)), std::fs::read(dir.join(&rec.index.vectors)));
    let from_format = rec.index.format.clone();
    let (id, dims) = (rec.index.embedder.clone(), rec.index.dims);
    write_files(dir, &id, dims, &rec.entries())?;
    let after = (std::fs::read(dir.join(INDEX_FILE)), std::fs::read(dir.join(VECTORS_FILE)));
    let changed = before.0.ok() != after.0.ok() || before.1.ok() != after.1.ok();
    Ok(Some(Rehashed { dir: dir.to_path_buf(), from_format, changed }))
}

/// `memform embeddings prune`: removes from the cache in `dir` every vector
/// whose key is not in `keep` (nothing when `dry_run`). Returns the removed
/// rows as (key, text preview), in key order. The cache must pass its
/// integrity check first.
pub fn prune(dir: &Path, keep: &std::collections::BTreeSet<String>, dry_run: bool) -> Result<Vec<(String, String)>> {
    let Some(rec) = read_checked(dir)? else { return Ok(Vec::new()) };
    let (id, dims) = (rec.index.embedder.clone(), rec.index.dims);
    let mut entries = rec.entries();
    let removed: Vec<(String, String)> =
        entries.iter().filter(|(k, _)| !keep.contains(*k)).map(|(k, e)| (k.clone(), e.preview.clone())).collect();
    if !dry_run && !removed.is_empty() {
        entries.retain(|k, _| keep.contains(k));
        write_files(dir, &id, dims, &entries)?;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Mutex};

    use rayon::iter::{IntoParallelRefIterator, ParallelIterator};

    use super::*;
    use crate::embed::l2_normalize;

    /// A model that logs what it was asked; its vector depends on the text.
    struct Fake {
        calls: Arc<AtomicUsize>,
        seen: Arc<Mutex<Vec<String>>>,
    }

    impl Embedder for Fake {
        fn id(&self) -> String {
            "fake:m1".to_string()
        }
        fn dims(&self) -> usize {
            3
        }
        fn embed(&self, texts: &[&str], _source: &str) -> Result<Vec<Vec<f32>>> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let mut seen = self.seen.lock().expect("lock");
            Ok(texts
                .iter()
                .map(|t| {
                    seen.push(t.to_string());
                    let sum: u32 = t.bytes().map(u32::from).sum();
                    let mut v = vec![t.len() as f32 + 0.5, (sum % 97) as f32, 1.25];
                    l2_normalize(&mut v);
                    v
                })
                .collect())
        }
    }

    struct Probe {
        calls: Arc<AtomicUsize>,
        seen: Arc<Mutex<Vec<String>>>,
    }

    fn fake() -> (Box<dyn Embedder>, Probe) {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        (Box::new(Fake { calls: calls.clone(), seen: seen.clone() }), Probe { calls, seen })
    }

    const CMD: &str = "memform run --dataset datasets/x --embedder fake --embed record";

    fn open(root: &Path, mode: EmbedMode, inner: Option<Box<dyn Embedder>>) -> CachedEmbedder {
        CachedEmbedder::open(root, "fake:m1", 3, mode, inner, CMD).expect("open cache")
    }

    fn files(root: &Path) -> (Vec<u8>, Vec<u8>) {
        let dir = root.join("fake-m1");
        (std::fs::read(dir.join(VECTORS_FILE)).expect("vectors"), std::fs::read(dir.join(INDEX_FILE)).expect("index"))
    }

    #[test]
    fn record_then_replay_without_a_model() {
        let root = tempfile::tempdir().expect("tempdir");
        let (model, probe) = fake();
        let rec = open(root.path(), EmbedMode::Record, Some(model));
        let recorded = rec.embed(&["Alice works at Google", "Bob likes tea"], "c1/e1").expect("record");
        assert_eq!(rec.embed(&["Bob likes tea"], "c1/e2").expect("hit"), vec![recorded[1].clone()]);
        assert_eq!(probe.calls.load(Ordering::SeqCst), 1);
        rec.flush().expect("flush");
        let stats = rec.cache_stats().expect("stats");
        assert_eq!((stats.entries, stats.hits, stats.recorded), (2, 1, 2));

        let replay = open(root.path(), EmbedMode::Replay, None);
        let replayed = replay.embed(&["Bob likes tea", "Alice works at Google"], "c1/e1").expect("replay");
        assert_eq!(replayed, vec![recorded[1].clone(), recorded[0].clone()]);
        assert_eq!(replay.cache_stats().expect("stats").sha256, stats.sha256);
        let leftovers: Vec<_> = std::fs::read_dir(root.path().join("fake-m1"))
            .expect("dir")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn the_model_sees_normalised_text_and_variants_share_a_vector() {
        let root = tempfile::tempdir().expect("tempdir");
        let (model, probe) = fake();
        let rec = open(root.path(), EmbedMode::Record, Some(model));
        let v = rec.embed(&["Alice  works at Google.", "alice works at google", "ALICE works at Google!!"], "c/e").expect("record");
        assert_eq!(v[0], v[1]);
        assert_eq!(v[1], v[2]);
        assert_eq!(*probe.seen.lock().expect("lock"), vec!["alice works at google".to_string()]);
        assert_eq!(
            cache_key("fake:m1", "alice works at google"),
            sha256_hex(br#"{"embedder":"fake","model":"m1","text":"alice works at google"}"#)
        );
    }

    #[test]
    fn recording_is_byte_identical_whatever_the_order() {
        let texts = ["one fact here", "another fact", "a third, longer fact about things", "x"];
        let a = tempfile::tempdir().expect("tempdir");
        let b = tempfile::tempdir().expect("tempdir");
        let rec_a = open(a.path(), EmbedMode::Record, Some(fake().0));
        rec_a.embed(&texts, "c/e").expect("a");
        rec_a.flush().expect("flush a");
        let rec_b = open(b.path(), EmbedMode::Record, Some(fake().0));
        for t in texts.iter().rev() {
            rec_b.embed(&[t], "c/e").expect("b");
        }
        rec_b.flush().expect("flush b");
        assert_eq!(files(a.path()), files(b.path()));

        let again = open(a.path(), EmbedMode::Record, Some(fake().0));
        again.embed(&texts, "c/e").expect("all hits");
        again.flush().expect("flush again");
        assert_eq!(files(a.path()), files(b.path()));
        let index = String::from_utf8(files(a.path()).1).expect("utf-8");
        assert!(index.contains("\"text\": \"a third, longer fact about things\""), "{index}");
        assert_eq!(files(a.path()).0.len(), texts.len() * 3 * 4);
    }

    #[test]
    fn a_replay_miss_names_source_key_and_command() {
        let root = tempfile::tempdir().expect("tempdir");
        let replay = open(root.path(), EmbedMode::Replay, None);
        let err = replay.embed(&["Carol moved to Paris.", "x y z"], "conv-3/session-2").expect_err("miss");
        let msg = err.to_string();
        let key = cache_key("fake:m1", "carol moved to paris");
        assert!(matches!(err, Error::EmbeddingMissing(_)));
        assert!(msg.contains("conv-3/session-2"), "{msg}");
        assert!(msg.contains(&key), "{msg}");
        assert!(msg.contains("\"carol moved to paris\""), "{msg}");
        assert!(msg.contains("(2 of 2 texts missing)"), "{msg}");
        assert!(msg.contains(CMD), "{msg}");
    }

    #[test]
    fn parallel_recording_keeps_one_vector_per_key() {
        let root = tempfile::tempdir().expect("tempdir");
        let (model, probe) = fake();
        let rec = open(root.path(), EmbedMode::Record, Some(model));
        let texts: Vec<String> = (0..200).map(|i| format!("fact number {}", i % 50)).collect();
        let results: Vec<Vec<Vec<f32>>> = texts.par_iter().map(|t| rec.embed(&[t.as_str()], "c/e").expect("embed")).collect();
        rec.flush().expect("flush");
        assert_eq!(rec.cache_stats().expect("stats").entries, 50);
        assert!(probe.calls.load(Ordering::SeqCst) >= 50);
        let replay = open(root.path(), EmbedMode::Replay, None);
        for (t, v) in texts.iter().zip(results) {
            assert_eq!(replay.embed(&[t.as_str()], "c/e").expect("replay"), v);
        }
    }

    #[test]
    fn live_mode_neither_reads_nor_writes() {
        let root = tempfile::tempdir().expect("tempdir");
        let (model, probe) = fake();
        let live = open(root.path(), EmbedMode::Live, Some(model));
        live.embed(&["a fact"], "c/e").expect("live");
        live.embed(&["a fact"], "c/e").expect("live");
        live.flush().expect("flush");
        assert_eq!(probe.calls.load(Ordering::SeqCst), 2);
        assert!(!root.path().join("fake-m1").exists());
    }

    #[test]
    fn damaged_or_foreign_caches_are_refused() {
        let root = tempfile::tempdir().expect("tempdir");
        let rec = open(root.path(), EmbedMode::Record, Some(fake().0));
        rec.embed(&["a fact", "b fact"], "c/e").expect("record");
        rec.flush().expect("flush");
        let dir = root.path().join("fake-m1");

        let other = CachedEmbedder::open(root.path(), "fake:m1", 4, EmbedMode::Replay, None, CMD);
        let msg = other.err().expect("dims differ").to_string();
        assert!(msg.contains("3 dimensions recorded, the embedder has 4"), "{msg}");

        let mut bytes = std::fs::read(dir.join(VECTORS_FILE)).expect("read");
        bytes[0] ^= 1;
        std::fs::write(dir.join(VECTORS_FILE), &bytes).expect("write");
        let msg = CachedEmbedder::open(root.path(), "fake:m1", 3, EmbedMode::Replay, None, CMD).err().expect("corrupt").to_string();
        assert!(msg.contains("does not match its recorded SHA-256"), "{msg}");

        std::fs::write(dir.join(INDEX_FILE), "{\"format\": 1}").expect("write");
        let msg = CachedEmbedder::open(root.path(), "fake:m1", 3, EmbedMode::Replay, None, CMD).err().expect("bad index").to_string();
        assert!(msg.contains("not a valid index"), "{msg}");
    }

    /// Reverses the keys of `index.json`'s entries, keeping their rows: each
    /// key now names another key's vector.
    fn reverse_keys(dir: &Path) {
        let path = dir.join(INDEX_FILE);
        let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
        let entries = v["entries"].as_array_mut().expect("entries");
        let mut keys: Vec<serde_json::Value> = entries.iter().map(|e| e["key"].clone()).collect();
        keys.reverse();
        for (e, k) in entries.iter_mut().zip(keys) {
            e["key"] = k;
        }
        std::fs::write(&path, serde_json::to_string_pretty(&v).expect("json")).expect("write");
    }

    #[test]
    fn moved_keys_are_refused_until_rehashed() {
        let root = tempfile::tempdir().expect("tempdir");
        let rec = open(root.path(), EmbedMode::Record, Some(fake().0));
        let recorded = rec.embed(&["a fact", "b fact", "c fact"], "c/e").expect("record");
        rec.flush().expect("flush");
        let dir = root.path().join("fake-m1");
        let index = std::fs::read_to_string(dir.join(INDEX_FILE)).expect("index");
        assert!(index.contains("\"format\": \"memform-embeddings/2\""), "{index}");

        reverse_keys(&dir);
        let msg = CachedEmbedder::open(root.path(), "fake:m1", 3, EmbedMode::Replay, None, CMD).err().expect("keys moved").to_string();
        assert!(msg.contains("index.json") && msg.contains("does not match its recorded SHA-256"), "{msg}");
        assert!(msg.contains("memform embeddings rehash --cache"), "{msg}");
        let info = cache_info(&dir).expect("info").expect("recorded");
        assert!(info.problem.is_some() && info.vectors == 3, "{info:?}");

        let r = rehash(&dir).expect("rehash").expect("recorded");
        assert!(r.changed);
        let replay = open(root.path(), EmbedMode::Replay, None);
        let got = replay.embed(&["a fact", "b fact", "c fact"], "c/e").expect("accepted");
        // Rows are in key order; reversing swaps the first and last row's keys.
        let mut by_key: Vec<(String, usize)> =
            ["a fact", "b fact", "c fact"].iter().enumerate().map(|(i, t)| (cache_key("fake:m1", &normalize_content(t)), i)).collect();
        by_key.sort();
        let (first, middle, last) = (by_key[0].1, by_key[1].1, by_key[2].1);
        assert_eq!(got[middle], recorded[middle], "the middle row kept its key");
        assert_eq!((&got[first], &got[last]), (&recorded[last], &recorded[first]), "the edit is what replays");
        assert!(!rehash(&dir).expect("again").expect("recorded").changed, "rehashing an intact cache changes nothing");
    }

    #[test]
    fn rehash_refuses_a_non_finite_vector_and_writes_nothing() {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let root = tempfile::tempdir().expect("tempdir");
            let rec = open(root.path(), EmbedMode::Record, Some(fake().0));
            rec.embed(&["a fact", "b fact"], "c/e").expect("record");
            rec.flush().expect("flush");
            let dir = root.path().join("fake-m1");
            // Row 1's second value edited in place.
            let path = dir.join(VECTORS_FILE);
            let mut bytes = std::fs::read(&path).expect("read");
            bytes[16..20].copy_from_slice(&bad.to_le_bytes());
            std::fs::write(&path, &bytes).expect("write");
            let index = std::fs::read(dir.join(INDEX_FILE)).expect("index");
            let msg = match rehash(&dir) {
                Err(e) => e.to_string(),
                Ok(_) => panic!("a non-finite vector was accepted"),
            };
            assert!(msg.contains(VECTORS_FILE) && msg.contains("row 1 (key ") && msg.contains("at dimension 1 is not finite"), "{msg}");
            assert_eq!(std::fs::read(dir.join(INDEX_FILE)).expect("index"), index, "the index is not rewritten");
            assert!(CachedEmbedder::open(root.path(), "fake:m1", 3, EmbedMode::Replay, None, CMD).is_err(), "still refused at replay");
        }
    }

    #[test]
    fn a_format_1_cache_is_refused_and_rehash_upgrades_it() {
        let root = tempfile::tempdir().expect("tempdir");
        let rec = open(root.path(), EmbedMode::Record, Some(fake().0));
        rec.embed(&["a fact", "b fact"], "c/e").expect("record");
        rec.flush().expect("flush");
        let dir = root.path().join("fake-m1");
        let (bytes, _) = files(root.path());
        let path = dir.join(INDEX_FILE);
        let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
        let m = v.as_object_mut().expect("object");
        m.remove("sha256");
        m.insert("format".into(), FORMAT_V1.into());
        m.insert("vectors_sha256".into(), sha256_hex(&bytes).into());
        std::fs::write(&path, serde_json::to_string_pretty(&v).expect("json")).expect("write");
        let msg = CachedEmbedder::open(root.path(), "fake:m1", 3, EmbedMode::Replay, None, CMD).err().expect("old format").to_string();
        assert!(msg.contains("memform-embeddings/1") && msg.contains("rehash"), "{msg}");
        let r = rehash(&dir).expect("rehash").expect("recorded");
        assert_eq!((r.from_format.as_str(), r.changed), (FORMAT_V1, true));
        assert_eq!(open(root.path(), EmbedMode::Replay, None).cache_stats().expect("stats").entries, 2);
    }

    #[test]
    fn prune_keeps_what_is_needed_and_tracks_used_keys() {
        let root = tempfile::tempdir().expect("tempdir");
        let rec = open(root.path(), EmbedMode::Record, Some(fake().0));
        rec.embed(&["keep me", "drop me"], "c/e").expect("record");
        rec.flush().expect("flush");
        let dir = root.path().join("fake-m1");
        let replay = open(root.path(), EmbedMode::Replay, None);
        replay.embed(&["Keep me."], "c/e").expect("hit");
        let used = replay.cache_stats().expect("stats").used;
        assert_eq!(used, std::collections::BTreeSet::from([cache_key("fake:m1", "keep me")]));
        let before = files(root.path());
        let dry = prune(&dir, &used, true).expect("dry run");
        assert_eq!(dry, vec![(cache_key("fake:m1", "drop me"), "drop me".to_string())]);
        assert_eq!(files(root.path()), before, "a dry run changes nothing");
        assert_eq!(prune(&dir, &used, false).expect("prune"), dry);
        let after = open(root.path(), EmbedMode::Replay, None);
        assert_eq!(after.cache_stats().expect("stats").entries, 1);
        assert!(after.embed(&["drop me"], "c/e").is_err());
        assert!(prune(&dir, &used, false).expect("again").is_empty());
    }

    #[test]
    fn record_without_a_model_or_with_the_wrong_one_is_refused() {
        let root = tempfile::tempdir().expect("tempdir");
        let none = CachedEmbedder::open(root.path(), "fake:m1", 3, EmbedMode::Record, None, CMD);
        assert!(none.err().expect("no model").to_string().contains("needs the fake:m1 model"));
        let wrong = CachedEmbedder::open(root.path(), "fake:m2", 3, EmbedMode::Record, Some(fake().0), CMD);
        assert!(wrong.err().expect("wrong model").to_string().contains("given the model fake:m1"));
        assert_eq!(slug("minilm:all-MiniLM-L6-v2"), "minilm-all-minilm-l6-v2");
        assert_eq!("record".parse::<EmbedMode>().expect("mode"), EmbedMode::Record);
        assert!("recorded".parse::<EmbedMode>().is_err());
    }
}
