//! The fixture store: recorded model answers, one pretty JSON file per
//! request, named by the request's key. The key is the SHA-256 of the
//! canonical JSON (keys sorted, no whitespace) of everything that shapes the
//! answer: stage, model, template name and version, messages, sampling
//! parameters and response schema. Never the call order, so parallel and
//! reordered runs replay; never the conversation or the API key.
//!
//! [`RecordedLlm`] puts the store in front of a live [`Llm`] in one of the
//! three modes (replay, record, live), tracks which keys a run used (for
//! `memform fixtures check`) and reports progress through a hook.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, FixtureMiss, Result};
use crate::llm::{
    AnswerSource, CallContext, HttpLlm, Llm, LlmMode, LlmProgress, LlmRequest, LlmResponse, LlmSettings, Message, ProgressHook, Sampling,
    Stage, TemplateId,
};
use crate::normalize::sha256_hex;
use crate::types::LlmUsage;

/// The `format` field of every fixture file.
pub const FIXTURE_FORMAT: &str = "memform-llm-fixture/2";
/// The format before fixtures carried `answer_sha256`.
pub const FIXTURE_FORMAT_V1: &str = "memform-llm-fixture/1";

/// The part of a request that is hashed into its key (and stored, so a
/// fixture can be checked against its name and diffed against a miss).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyMaterial {
    pub stage: Stage,
    pub model: String,
    pub template: TemplateId,
    pub messages: Vec<Message>,
    pub sampling: Sampling,
    pub schema: Option<Value>,
    /// The tools offered (the llm dreamer's requests only; absent from, and
    /// so not changing the key of, every other request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Value>,
    /// The proxy's requests only (`llm::proxy`): every field of the
    /// client's request but `model` and `messages`, as sent. Absent from
    /// (and so not changing the key of) every pipeline request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl KeyMaterial {
    pub fn of(req: &LlmRequest) -> Result<Self> {
        let schema = match &req.schema {
            Some(text) => Some(
                serde_json::from_str(text)
                    .map_err(|e| Error::Other(format!("read the response schema of the {} template: {e}", req.template.name)))?,
            ),
            None => None,
        };
        Ok(KeyMaterial {
            stage: req.stage,
            model: req.model.clone(),
            template: req.template.clone(),
            messages: req.messages.clone(),
            sampling: req.sampling,
            schema,
            tools: req.tools.clone(),
            params: None,
        })
    }

    pub fn key(&self) -> Result<String> {
        let value = serde_json::to_value(self).map_err(|e| Error::Other(format!("serialise fixture key material: {e}")))?;
        let mut out = String::new();
        canonical_json(&value, &mut out);
        Ok(sha256_hex(out.as_bytes()))
    }
}

/// The fixture key of a request.
pub fn request_key(req: &LlmRequest) -> Result<String> {
    KeyMaterial::of(req)?.key()
}

/// Compact JSON with object keys sorted, whatever the map type keeps.
fn canonical_json(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(child) = map.get(k) {
                    canonical_json(child, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// A recorded answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedAnswer {
    /// The answer text exactly as the model wrote it.
    pub text: String,
    pub usage: LlmUsage,
    /// The model name the server reported.
    pub model: String,
    /// Why the model stopped, when the server said (`length`: truncated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// The tool calls the model asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<crate::llm::ToolCall>,
}

/// One fixture file, `<key>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureFile {
    pub format: String,
    pub key: String,
    /// Where the request was first recorded from (not part of the key).
    pub context: CallContext,
    pub request: KeyMaterial,
    pub response: RecordedAnswer,
    /// [`answer_sha256`] of `response`: replay refuses a file whose answer
    /// was edited without `memform fixtures rehash`. Absent in format 1.
    #[serde(default)]
    pub answer_sha256: String,
    /// UTC, `YYYY-MM-DDTHH:MM:SSZ`.
    pub recorded_at: String,
    /// Wall time of the live call.
    pub wall_ms: u64,
}

/// A directory of fixture files.
#[derive(Debug, Clone)]
pub struct FixtureStore {
    dir: PathBuf,
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl FixtureStore {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        FixtureStore { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path_of(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// The fixture stored under `key`, if any. A file that does not parse,
    /// or whose request does not hash to its name, is an error.
    pub fn get(&self, key: &str) -> Result<Option<FixtureFile>> {
        let path = self.path_of(key);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        };
        let file = read_fixture(&path, &text)?;
        if file.key != key {
            return Err(Error::Fixture { path, message: format!("its key field is {}, not the file name", file.key) });
        }
        Ok(Some(file))
    }

    /// Writes the answer to `req` (atomically: temp file, then rename).
    pub fn put(&self, req: &LlmRequest, resp: &LlmResponse) -> Result<PathBuf> {
        self.put_material(KeyMaterial::of(req)?, req.context.clone(), resp)
    }

    /// Writes the answer to the request `request` describes (the proxy's
    /// requests, which no [`LlmRequest`] holds), recorded from `context`.
    pub fn put_material(&self, request: KeyMaterial, context: CallContext, resp: &LlmResponse) -> Result<PathBuf> {
        let key = request.key()?;
        let response = RecordedAnswer {
            text: resp.text.clone(),
            usage: resp.usage,
            model: resp.model.clone(),
            finish_reason: resp.finish_reason.clone(),
            tool_calls: resp.tool_calls.clone(),
        };
        let file = FixtureFile {
            format: FIXTURE_FORMAT.to_string(),
            key: key.clone(),
            context,
            request,
            answer_sha256: answer_sha256(&response)?,
            response,
            recorded_at: utc_now(),
            wall_ms: u64::try_from(resp.wall.as_millis()).unwrap_or(u64::MAX),
        };
        let path = self.path_of(&key);
        self.write_file(&file)?;
        Ok(path)
    }

    /// Writes `file` as `<key>.json` (atomically: temp file, then rename).
    fn write_file(&self, file: &FixtureFile) -> Result<()> {
        let key = &file.key;
        let text = serde_json::to_string_pretty(file).map_err(|e| Error::Other(format!("serialise fixture {key}: {e}")))?;
        std::fs::create_dir_all(&self.dir).map_err(|e| Error::write(&self.dir, e))?;
        let path = self.path_of(key);
        let tmp = self.dir.join(format!(".{key}.{}.{}.tmp", std::process::id(), TMP_COUNTER.fetch_add(1, Ordering::Relaxed)));
        std::fs::write(&tmp, text + "\n").map_err(|e| Error::write(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| Error::write(&path, e))?;
        Ok(())
    }

    /// Every `*.json` file of the directory, parsed (or why it does not parse),
    /// in file-name order. A missing directory has none.
    pub fn scan(&self) -> Result<Vec<(PathBuf, std::result::Result<FixtureFile, String>)>> {
        Ok(self
            .json_paths()?
            .into_iter()
            .map(|p| {
                let parsed =
                    std::fs::read_to_string(&p).map_err(|e| e.to_string()).and_then(|t| read_fixture(&p, &t).map_err(|e| e.to_string()));
                (p, parsed)
            })
            .collect())
    }

    /// Every `*.json` file of the directory, in name order (none when the
    /// directory does not exist).
    pub fn json_paths(&self) -> Result<Vec<PathBuf>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(&self.dir, e)),
        };
        let mut paths = Vec::new();
        for entry in entries {
            let path = entry.map_err(|e| Error::io(&self.dir, e))?.path();
            if path.extension().is_some_and(|x| x == "json") {
                paths.push(path);
            }
        }
        paths.sort();
        Ok(paths)
    }

    /// Describes the recorded request of `req`'s stage closest to it, and
    /// what differs, for a miss message.
    pub fn closest(&self, req: &LlmRequest) -> String {
        match KeyMaterial::of(req) {
            Ok(want) => self.closest_to(&want),
            Err(e) => format!("cannot compare requests ({e})"),
        }
    }

    /// [`FixtureStore::closest`] for a request's key material.
    pub fn closest_to(&self, want: &KeyMaterial) -> String {
        if !self.dir.is_dir() {
            return "the fixture directory does not exist".to_string();
        }
        let files = match self.scan() {
            Ok(f) => f,
            Err(e) => return format!("cannot list recorded requests ({e})"),
        };
        let best = files
            .into_iter()
            .filter_map(|(_, f)| f.ok())
            .filter(|f| f.request.stage == want.stage)
            .map(|f| {
                let d = diff(&f.request, want);
                (d.fields.len(), d.distance, f.key.clone(), f, d)
            })
            .min_by(|a, b| (a.0, a.1, &a.2).cmp(&(b.0, b.1, &b.2)));
        match best {
            None => format!("no {} request is recorded there", want.stage.as_str()),
            Some((_, _, key, f, d)) => format!(
                "closest recorded {} request is {key}.json (conversation {}, episode {}): {}",
                want.stage.as_str(),
                f.context.conversation,
                f.context.episode,
                if d.fields.is_empty() {
                    "identical request (the file name does not match its key?)".to_string()
                } else {
                    d.fields.join("; ")
                }
            ),
        }
    }
}

/// The SHA-256 of a recorded answer: of the canonical JSON (keys sorted, no
/// whitespace) of `{"model", "text", "usage"}`, so an edit of the text or of
/// the token counts is caught.
pub fn answer_sha256(answer: &RecordedAnswer) -> Result<String> {
    let value = serde_json::to_value(answer).map_err(|e| Error::Other(format!("serialise a recorded answer: {e}")))?;
    let mut out = String::new();
    canonical_json(&value, &mut out);
    Ok(sha256_hex(out.as_bytes()))
}

/// Parses a fixture file of either format and checks that its request
/// hashes to its key; not its answer.
fn read_fixture_unchecked(path: &Path, text: &str) -> Result<FixtureFile> {
    let bad = |message: String| Error::Fixture { path: path.to_path_buf(), message };
    let file: FixtureFile = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    if file.format != FIXTURE_FORMAT && file.format != FIXTURE_FORMAT_V1 {
        return Err(bad(format!("format {:?}, expected {FIXTURE_FORMAT:?}", file.format)));
    }
    let actual = file.request.key()?;
    if actual != file.key {
        return Err(bad(format!("its request hashes to {actual}, not its key {} (edited by hand?)", file.key)));
    }
    Ok(file)
}

fn read_fixture(path: &Path, text: &str) -> Result<FixtureFile> {
    let file = read_fixture_unchecked(path, text)?;
    let bad = |message: String| Error::Fixture { path: path.to_path_buf(), message };
    let dir = path.parent().unwrap_or(Path::new(".")).display().to_string();
    if file.format == FIXTURE_FORMAT_V1 {
        return Err(bad(format!(
            "format {FIXTURE_FORMAT_V1:?} has no answer_sha256; check the answers and accept them with \
             `memform fixtures rehash --fixtures {dir}`"
        )));
    }
    let actual = answer_sha256(&file.response)?;
    if actual != file.answer_sha256 {
        return Err(bad(format!(
            "its answer hashes to {actual}, not its answer_sha256 {:?} (edited by hand? accept a deliberate \
             edit with `memform fixtures rehash --fixtures {dir}`)",
            file.answer_sha256
        )));
    }
    Ok(file)
}

/// What `memform fixtures rehash` did to one directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rehashed {
    /// Files given a new `answer_sha256` (an edited answer, or format 1).
    pub rewritten: Vec<PathBuf>,
    /// Files already in order.
    pub unchanged: usize,
    /// Files that cannot be rehashed: unparseable, or a request that does
    /// not hash to the key (a changed request is a new fixture: re-record).
    pub refused: Vec<(PathBuf, String)>,
}

/// `memform fixtures rehash`: accepts every fixture's answer in `dir` as it
/// is now, writing its `answer_sha256` (and the current format).
pub fn rehash(dir: &Path) -> Result<Rehashed> {
    let store = FixtureStore::new(dir);
    let mut out = Rehashed::default();
    for path in store.json_paths()? {
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        let mut file = match read_fixture_unchecked(&path, &text) {
            Ok(f) => f,
            Err(e) => {
                out.refused.push((path, crate::error::chain(&e)));
                continue;
            }
        };
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        if file.key != stem {
            out.refused.push((path, format!("its key field is {}, not the file name", file.key)));
            continue;
        }
        let hash = answer_sha256(&file.response)?;
        if file.format == FIXTURE_FORMAT && file.answer_sha256 == hash {
            out.unchanged += 1;
            continue;
        }
        file.format = FIXTURE_FORMAT.to_string();
        file.answer_sha256 = hash;
        store.write_file(&file)?;
        out.rewritten.push(path);
    }
    Ok(out)
}

/// What differs between a recorded request and a wanted one.
struct Diff {
    fields: Vec<String>,
    /// Characters of messages that differ (to rank candidates).
    distance: usize,
}

fn diff(recorded: &KeyMaterial, want: &KeyMaterial) -> Diff {
    let mut fields = Vec::new();
    if recorded.model != want.model {
        fields.push(format!("model {:?} vs {:?}", recorded.model, want.model));
    }
    if recorded.template != want.template {
        fields.push(format!(
            "template {} v{} vs {} v{}",
            recorded.template.name, recorded.template.version, want.template.name, want.template.version
        ));
    }
    let (rs, ws) = (recorded.sampling, want.sampling);
    if rs.temperature != ws.temperature {
        fields.push(format!("temperature {} vs {}", rs.temperature, ws.temperature));
    }
    if rs.seed != ws.seed {
        fields.push(format!("seed {} vs {}", rs.seed, ws.seed));
    }
    if rs.max_tokens != ws.max_tokens {
        fields.push(format!("max_tokens {} vs {}", rs.max_tokens, ws.max_tokens));
    }
    if recorded.schema != want.schema {
        fields.push("response schema differs".to_string());
    }
    if recorded.params != want.params {
        fields.push("request parameters differ".to_string());
    }
    let mut distance = 0;
    if recorded.messages.len() != want.messages.len() {
        fields.push(format!("{} messages vs {}", recorded.messages.len(), want.messages.len()));
    }
    for (i, (r, w)) in recorded.messages.iter().zip(&want.messages).enumerate() {
        if r.role != w.role {
            fields.push(format!("messages[{i}] role {:?} vs {:?}", r.role, w.role));
        }
        if r.content != w.content {
            let (at, d) = first_difference(&r.content, &w.content);
            distance += d;
            fields.push(format!(
                "messages[{i}] differs at char {at} (recorded {:?}, now {:?})",
                window(&r.content, at),
                window(&w.content, at)
            ));
        }
    }
    let common = recorded.messages.len().min(want.messages.len());
    for extra in recorded.messages[common..].iter().chain(&want.messages[common..]) {
        distance += extra.content.chars().count();
    }
    Diff { fields, distance }
}

/// The char index of the first difference, and how many chars differ
/// between the common prefix and the common suffix.
fn first_difference(a: &str, b: &str) -> (usize, usize) {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let max_suffix = a.len().min(b.len()) - prefix;
    let suffix = a.iter().rev().zip(b.iter().rev()).take(max_suffix).take_while(|(x, y)| x == y).count();
    (prefix, a.len().max(b.len()) - prefix - suffix)
}

/// Up to 30 chars of `s` from char `at`.
fn window(s: &str, at: usize) -> String {
    let w: String = s.chars().skip(at).take(30).collect();
    if s.chars().count() > at + 30 { format!("{w}…") } else { w }
}

/// `datasets/<name>/fixtures/<model-slug>/` for a dataset directory.
pub fn default_fixtures_dir(dataset_dir: &Path, model: &str) -> PathBuf {
    dataset_dir.join("fixtures").join(model_slug(model))
}

/// A model name as a directory name: lower case; letters, digits, `.`, `_`
/// and `-` kept, runs of anything else become one `-`.
pub fn model_slug(model: &str) -> String {
    let mut out = String::new();
    for c in model.trim().chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches(|c| c == '-' || c == '.').to_string();
    if out.is_empty() { "model".to_string() } else { out }
}

/// `memform fixtures check`: which needed keys have no file, which valid
/// files no run needed, and which files cannot be used.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FixturesCheck {
    pub missing: Vec<String>,
    pub unused: Vec<String>,
    /// Files that do not parse or whose content does not match their name.
    pub invalid: Vec<(PathBuf, String)>,
}

impl FixturesCheck {
    pub fn is_clean(&self) -> bool {
        self.missing.is_empty() && self.unused.is_empty() && self.invalid.is_empty()
    }
}

/// Compares a fixture directory with the keys a run needed (see
/// [`RecordedLlm::used_keys`] and [`RecordedLlm::missed_keys`]).
pub fn fixtures_check(dir: &Path, needed: &BTreeSet<String>) -> Result<FixturesCheck> {
    let mut check = FixturesCheck::default();
    let mut present = BTreeSet::new();
    for (path, parsed) in FixtureStore::new(dir).scan()? {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        match parsed {
            Ok(f) if f.key == stem => {
                present.insert(stem);
            }
            Ok(f) => check.invalid.push((path, format!("its key field is {}, not the file name", f.key))),
            Err(e) => check.invalid.push((path, e)),
        }
    }
    check.missing = needed.difference(&present).cloned().collect();
    check.unused = present.difference(needed).cloned().collect();
    Ok(check)
}

/// Of `keys` (fixtures in `dir`), those recorded from a conversation that
/// is not one of `conversations`, each with that conversation: another
/// dataset's recordings when several datasets share one `--fixtures`
/// directory, which `fixtures prune` of this dataset must not remove.
pub fn recorded_elsewhere(dir: &Path, keys: &[String], conversations: &BTreeSet<String>) -> Result<Vec<(String, String)>> {
    let store = FixtureStore::new(dir);
    let mut out = Vec::new();
    for key in keys {
        if let Some(f) = store.get(key)?
            && !conversations.contains(&f.context.conversation)
        {
            out.push((key.clone(), f.context.conversation));
        }
    }
    Ok(out)
}

/// The recorded boundary: a fixture store in front of a live model.
pub struct RecordedLlm {
    mode: LlmMode,
    store: Option<FixtureStore>,
    live: Option<Arc<dyn Llm>>,
    collect_misses: bool,
    used: Mutex<BTreeSet<String>>,
    missed: Mutex<BTreeSet<String>>,
    totals: Mutex<LlmProgress>,
    progress: Option<ProgressHook>,
}

impl std::fmt::Debug for RecordedLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordedLlm")
            .field("mode", &self.mode)
            .field("store", &self.store)
            .field("collect_misses", &self.collect_misses)
            .finish()
    }
}

impl RecordedLlm {
    /// Answers from `store` only; a miss is [`Error::FixtureMiss`].
    pub fn replay(store: FixtureStore) -> Self {
        Self::build(LlmMode::Replay, Some(store), None)
    }

    /// Answers from `store`, calling `live` for misses and recording its answers.
    pub fn record(store: FixtureStore, live: Arc<dyn Llm>) -> Self {
        Self::build(LlmMode::Record, Some(store), Some(live))
    }

    /// Always calls `live`; no fixtures.
    pub fn live(live: Arc<dyn Llm>) -> Self {
        Self::build(LlmMode::Live, None, Some(live))
    }

    /// The boundary for a run: replay and record need `fixtures_dir`; record
    /// and live build an [`HttpLlm`] from `settings` (API key from the
    /// environment). Replay never touches the network.
    pub fn from_settings(settings: &LlmSettings, mode: LlmMode, fixtures_dir: Option<PathBuf>) -> Result<Self> {
        let store = || {
            fixtures_dir
                .clone()
                .map(FixtureStore::new)
                .ok_or_else(|| Error::Config(format!("--llm {} needs a fixture directory", mode.as_str())))
        };
        let live = || -> Arc<dyn Llm> { Arc::new(HttpLlm::new(settings.clone())) };
        Ok(match mode {
            LlmMode::Replay => Self::replay(store()?),
            LlmMode::Record => Self::record(store()?, live()),
            LlmMode::Live => Self::live(live()),
        })
    }

    fn build(mode: LlmMode, store: Option<FixtureStore>, live: Option<Arc<dyn Llm>>) -> Self {
        RecordedLlm {
            mode,
            store,
            live,
            collect_misses: false,
            used: Mutex::new(BTreeSet::new()),
            missed: Mutex::new(BTreeSet::new()),
            totals: Mutex::new(LlmProgress::default()),
            progress: None,
        }
    }

    /// Calls `hook` after every answered call.
    pub fn with_progress(mut self, hook: ProgressHook) -> Self {
        self.progress = Some(hook);
        self
    }

    /// For `memform fixtures check`: in replay, a miss answers with empty
    /// text (the stage then warns `llm_empty_answer`) and is listed in
    /// [`RecordedLlm::missed_keys`] instead of failing the run.
    pub fn collecting_misses(mut self) -> Self {
        self.collect_misses = true;
        self
    }

    pub fn mode(&self) -> LlmMode {
        self.mode
    }

    pub fn store(&self) -> Option<&FixtureStore> {
        self.store.as_ref()
    }

    /// Keys answered from or written to the store in this run.
    pub fn used_keys(&self) -> BTreeSet<String> {
        self.used.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Keys that missed (only with [`RecordedLlm::collecting_misses`]).
    pub fn missed_keys(&self) -> BTreeSet<String> {
        self.missed.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Totals so far (the same counters the progress hook sees).
    pub fn totals(&self) -> LlmProgress {
        *self.totals.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn answered(&self, stage: Stage, resp: &LlmResponse) {
        let snapshot = {
            let mut t = self.totals.lock().unwrap_or_else(PoisonError::into_inner);
            t.stage = Some(stage);
            t.source = Some(resp.source);
            match resp.source {
                AnswerSource::Live => {
                    t.live_calls += 1;
                    t.live_wall += resp.wall;
                }
                AnswerSource::Fixture => t.fixture_hits += 1,
            }
            t.prompt_tokens += resp.usage.prompt_tokens;
            t.completion_tokens += resp.usage.completion_tokens;
            t.last_wall = resp.wall;
            *t
        };
        if let Some(hook) = &self.progress {
            hook(&snapshot);
        }
    }

    fn mark_used(&self, key: &str) {
        self.used.lock().unwrap_or_else(PoisonError::into_inner).insert(key.to_string());
    }

    fn call_live(&self, req: &LlmRequest) -> Result<LlmResponse> {
        match &self.live {
            Some(live) => live.complete(req),
            None => Err(Error::Other(format!("call the live model in {} mode: no live client", self.mode.as_str()))),
        }
    }
}

impl Llm for RecordedLlm {
    fn complete(&self, req: &LlmRequest) -> Result<LlmResponse> {
        let store = match (&self.store, self.mode) {
            (Some(s), LlmMode::Replay | LlmMode::Record) => s,
            _ => {
                let resp = self.call_live(req)?;
                self.answered(req.stage, &resp);
                return Ok(resp);
            }
        };
        let key = request_key(req)?;
        if let Some(f) = store.get(&key)? {
            self.mark_used(&key);
            let resp = LlmResponse {
                text: f.response.text,
                usage: f.response.usage,
                model: f.response.model,
                source: AnswerSource::Fixture,
                wall: Duration::ZERO,
                finish_reason: f.response.finish_reason,
                tool_calls: f.response.tool_calls,
            };
            self.answered(req.stage, &resp);
            return Ok(resp);
        }
        if self.mode == LlmMode::Record {
            let resp = self.call_live(req)?;
            store.put(req, &resp)?;
            self.mark_used(&key);
            self.answered(req.stage, &resp);
            return Ok(resp);
        }
        if self.collect_misses {
            self.missed.lock().unwrap_or_else(PoisonError::into_inner).insert(key);
            return Ok(LlmResponse {
                text: String::new(),
                usage: LlmUsage::default(),
                model: String::new(),
                source: AnswerSource::Fixture,
                wall: Duration::ZERO,
                finish_reason: None,
                tool_calls: Vec::new(),
            });
        }
        Err(Error::FixtureMiss(Box::new(FixtureMiss {
            stage: req.stage.as_str().to_string(),
            conversation: req.context.conversation.clone(),
            episode: req.context.episode.clone(),
            key,
            dir: store.dir().to_path_buf(),
            closest: store.closest(req),
        })))
    }
}

/// Now as `YYYY-MM-DDTHH:MM:SSZ`.
pub(crate) fn utc_now() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    utc_from_unix(secs)
}

/// `secs` since the epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_from_unix(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc_from_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_from_unix(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_from_unix(1_709_251_199), "2024-02-29T23:59:59Z");
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let v: Value = serde_json::from_str(r#"{"b":1,"a":{"d":[{"z":1,"y":2}],"c":"x"}}"#).unwrap();
        let mut s = String::new();
        canonical_json(&v, &mut s);
        assert_eq!(s, r#"{"a":{"c":"x","d":[{"y":2,"z":1}]},"b":1}"#);
    }

    #[test]
    fn slugs() {
        assert_eq!(model_slug("SmolLM2-135M-Instruct.Q4_1"), "smollm2-135m-instruct.q4_1");
        assert_eq!(model_slug("qwen2.5:7b-instruct"), "qwen2.5-7b-instruct");
        assert_eq!(model_slug("/models/x y.gguf"), "models-x-y.gguf");
        assert_eq!(model_slug("::"), "model");
    }

    #[test]
    fn first_difference_positions() {
        assert_eq!(first_difference("abcdef", "abXdef"), (2, 1));
        assert_eq!(first_difference("abc", "abcd"), (3, 1));
        assert_eq!(first_difference("ééa", "ééb"), (2, 1));
    }
}
