//! `memform proxy`: an OpenAI-compatible server on the loopback that an
//! external memory system (mem0, …) is pointed at, so that its model calls
//! go through memform's recorded boundary.
//!
//! - `POST /v1/chat/completions`: keyed like every memform call (the
//!   fixture format of [`super::fixtures`], stage `proxy`), after the
//!   rule set's [`Normalise`] rewrites; answered from the fixture, or in
//!   record mode forwarded upstream and written as one.
//! - `POST /v1/embeddings`: answered by memform's own embedder (hashed, or
//!   MiniLM through its recorded cache); nothing goes upstream.
//! - `GET /v1/models`: the embedder and the models of the recorded fixtures.
//!
//! A replay miss answers 500 with the missing key and is counted; the
//! command (or a run using the proxy) then fails with exit 2. Every knob is
//! bounded ([`ProxyLimits`]). docs/adapters.md, "The proxy", is the user's
//! description; the HTTP itself is [`wire`]'s, on `std::net`.

pub mod normalise;
mod wire;

use std::collections::{BTreeMap, BTreeSet};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::embed::Embedder;
use crate::embed::hashed::HashedEmbedder;
use crate::error::{Error, Result};
use crate::http::{Exchange, excerpt, post_json};
use crate::limits::check;
use crate::llm::fixtures::{FixtureStore, KeyMaterial, RecordedAnswer};
use crate::llm::{API_KEY_ENV, AnswerSource, CallContext, LlmResponse, Message, Sampling, Stage, TemplateId};
use crate::types::LlmUsage;

pub use normalise::{Normalise, RULE_SETS};
use wire::{ReadError, Request};

/// Header naming the conversation a call serves (fixture context only, not keyed).
pub const CONVERSATION_HEADER: &str = "X-Memform-Conversation";
/// Header naming the episode a call serves (fixture context only, not keyed).
pub const EPISODE_HEADER: &str = "X-Memform-Episode";

/// Most bytes of an upstream answer read.
const UPSTREAM_BODY_LIMIT: u64 = 64 << 20;
/// Most characters of an upstream error body quoted.
const BODY_EXCERPT: usize = 300;

/// Record or replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProxyMode {
    /// Answer from fixtures; forward a miss to `upstream` (a base URL, as
    /// `llm_url`: `{upstream}/v1/chat/completions` is called) and record it.
    Record { upstream: String },
    /// Answer from fixtures only; a miss is HTTP 500 naming the key.
    Replay,
}

impl ProxyMode {
    pub fn as_str(&self) -> &'static str {
        match self {
            ProxyMode::Record { .. } => "record",
            ProxyMode::Replay => "replay",
        }
    }
}

/// The proxy's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyLimits {
    /// Largest request body accepted (413 above it).
    pub max_request_bytes: u64,
    /// Requests served at once; further connections wait in the listen queue.
    pub max_concurrency: usize,
    /// Seconds a client has to send a whole request (408 after it).
    pub read_timeout_secs: u64,
    /// Seconds one upstream call may take in record mode (504 after it).
    pub upstream_timeout_secs: u64,
    /// Most texts in one embeddings request.
    pub max_embed_inputs: usize,
}

/// The limits' ranges (each named by its command-line flag in errors).
pub mod bounds {
    use super::RangeInclusive;
    /// `--max-request-bytes`: 1 KiB to 64 MiB.
    pub const MAX_REQUEST_BYTES: RangeInclusive<u64> = 1024..=64 << 20;
    /// `--max-concurrency`.
    pub const MAX_CONCURRENCY: RangeInclusive<u64> = 1..=256;
    /// `--read-timeout-secs`.
    pub const READ_TIMEOUT_SECS: RangeInclusive<u64> = 1..=600;
    /// `--upstream-timeout-secs`.
    pub const UPSTREAM_TIMEOUT_SECS: RangeInclusive<u64> = 1..=3600;
    /// `--max-embed-inputs`.
    pub const MAX_EMBED_INPUTS: RangeInclusive<u64> = 1..=65_536;
}

impl Default for ProxyLimits {
    fn default() -> Self {
        ProxyLimits {
            max_request_bytes: 4 << 20,
            max_concurrency: 8,
            read_timeout_secs: 30,
            upstream_timeout_secs: 600,
            max_embed_inputs: 2048,
        }
    }
}

impl ProxyLimits {
    /// `Err` naming the first limit outside its range.
    pub fn check(&self) -> Result<()> {
        check("--max-request-bytes", self.max_request_bytes, &bounds::MAX_REQUEST_BYTES)?;
        check("--max-concurrency", self.max_concurrency as u64, &bounds::MAX_CONCURRENCY)?;
        check("--read-timeout-secs", self.read_timeout_secs, &bounds::READ_TIMEOUT_SECS)?;
        check("--upstream-timeout-secs", self.upstream_timeout_secs, &bounds::UPSTREAM_TIMEOUT_SECS)?;
        check("--max-embed-inputs", self.max_embed_inputs as u64, &bounds::MAX_EMBED_INPUTS)
    }
}

/// Everything a proxy needs.
#[derive(Clone)]
pub struct ProxyConfig {
    pub mode: ProxyMode,
    /// The fixture directory (read in both modes, written in record).
    pub fixtures: PathBuf,
    /// Where to listen: a loopback address (default `127.0.0.1:0`, any free port).
    pub listen: SocketAddr,
    /// Answers `/v1/embeddings`: the run's embedder (`--embedder`). The
    /// proxy never flushes it; its owner does, after [`ProxyServer::shutdown`].
    pub embedder: Arc<dyn Embedder>,
    /// The key normalisation rule set (`--normalise`).
    pub normalise: Normalise,
    pub limits: ProxyLimits,
}

impl std::fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyConfig")
            .field("mode", &self.mode)
            .field("fixtures", &self.fixtures)
            .field("listen", &self.listen)
            .field("embedder", &self.embedder.id())
            .field("normalise", &self.normalise.name())
            .field("limits", &self.limits)
            .finish()
    }
}

impl ProxyConfig {
    /// `mode` over `fixtures`, listening on `127.0.0.1:0`, the hashed
    /// embedder (256 dimensions), no normalisation, the default limits.
    pub fn new(mode: ProxyMode, fixtures: impl Into<PathBuf>) -> Self {
        ProxyConfig {
            mode,
            fixtures: fixtures.into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            embedder: Arc::new(HashedEmbedder::new(256)),
            normalise: Normalise::none(),
            limits: ProxyLimits::default(),
        }
    }
}

/// What a proxy did, for `run.json` and the command's last line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyStats {
    /// `record` or `replay`.
    pub mode: String,
    /// The normalisation rule set.
    pub rules: String,
    /// The embedder's id.
    pub embedder: String,
    /// Requests read (whatever their answer).
    pub requests: u64,
    /// Chat completion requests.
    pub chat: u64,
    /// Embeddings requests.
    pub embeddings: u64,
    /// Chat answers from a fixture.
    pub hits: u64,
    /// Chat answers forwarded upstream and written as fixtures.
    pub recorded: u64,
    /// Keys asked in replay with no fixture, each once, sorted.
    pub misses: Vec<String>,
    /// Answers of 500 for a miss (a client that retries asks a key again).
    pub miss_answers: u64,
    /// Other answers of status 400 or above.
    pub errors: u64,
    /// Those errors by status.
    pub errors_by_status: BTreeMap<String, u64>,
    /// Replacements made by each normalisation rule.
    pub normalisations: BTreeMap<String, u64>,
}

impl ProxyStats {
    /// No miss and no error: the run that used the proxy may succeed.
    pub fn clean(&self) -> bool {
        self.misses.is_empty() && self.miss_answers == 0 && self.errors == 0
    }
}

/// The HTTP client of record mode.
struct Upstream {
    agent: ureq::Agent,
    endpoint: String,
    shown: String,
    api_key: Option<String>,
}

struct Inner {
    mode: ProxyMode,
    store: FixtureStore,
    embedder: Arc<dyn Embedder>,
    normalise: Normalise,
    limits: ProxyLimits,
    upstream: Option<Upstream>,
    stats: Mutex<(ProxyStats, BTreeSet<String>)>,
    /// Keys answered from a fixture or recorded (for `memform fixtures`' checks).
    used: Mutex<BTreeSet<String>>,
    stop: AtomicBool,
    active: Mutex<usize>,
    changed: Condvar,
}

/// A running proxy. Dropping it stops it (without waiting for requests in
/// flight); [`ProxyServer::shutdown`] stops it and waits for them.
pub struct ProxyServer {
    addr: SocketAddr,
    inner: Arc<Inner>,
    accept: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ProxyServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyServer").field("addr", &self.addr).field("mode", &self.inner.mode).finish()
    }
}

/// `{upstream}/v1/chat/completions` (or `/chat/completions` after a URL that ends in `/v1`).
fn endpoint(upstream: &str) -> String {
    let base = upstream.trim().trim_end_matches('/');
    if base.ends_with("/v1") { format!("{base}/chat/completions") } else { format!("{base}/v1/chat/completions") }
}

impl ProxyServer {
    /// Checks `cfg`, binds its address and starts serving.
    pub fn start(cfg: ProxyConfig) -> Result<ProxyServer> {
        cfg.limits.check()?;
        if !cfg.listen.ip().is_loopback() {
            return Err(Error::Config(format!(
                "--listen {}: the proxy listens on a loopback address only (it has no authentication)",
                cfg.listen
            )));
        }
        if cfg.fixtures.exists() && !cfg.fixtures.is_dir() {
            return Err(Error::input(&cfg.fixtures, "the fixture directory (--fixtures): not a directory"));
        }
        let upstream = match &cfg.mode {
            ProxyMode::Replay => None,
            ProxyMode::Record { upstream } => {
                let url = upstream.trim();
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(Error::Config(format!("--upstream {:?}: not an http:// or https:// URL", crate::redact::url(url))));
                }
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .timeout_global(Some(Duration::from_secs(cfg.limits.upstream_timeout_secs)))
                    .build()
                    .into();
                let endpoint = endpoint(url);
                let api_key = std::env::var(API_KEY_ENV).ok().filter(|k| !k.trim().is_empty());
                Some(Upstream { agent, shown: crate::redact::url(&endpoint), endpoint, api_key })
            }
        };
        let listener =
            TcpListener::bind(cfg.listen).map_err(|e| Error::Config(format!("--listen {}: cannot listen there ({e})", cfg.listen)))?;
        let addr = listener.local_addr().map_err(|e| Error::Other(format!("the proxy's address: {e}")))?;
        let stats = ProxyStats {
            mode: cfg.mode.as_str().to_string(),
            rules: cfg.normalise.name().to_string(),
            embedder: cfg.embedder.id(),
            ..ProxyStats::default()
        };
        let inner = Arc::new(Inner {
            mode: cfg.mode,
            store: FixtureStore::new(cfg.fixtures),
            embedder: cfg.embedder,
            normalise: cfg.normalise,
            limits: cfg.limits,
            upstream,
            stats: Mutex::new((stats, BTreeSet::new())),
            used: Mutex::new(BTreeSet::new()),
            stop: AtomicBool::new(false),
            active: Mutex::new(0),
            changed: Condvar::new(),
        });
        let accept_inner = inner.clone();
        let accept = std::thread::Builder::new()
            .name("memform-proxy".into())
            .spawn(move || accept_loop(&listener, &accept_inner))
            .map_err(|e| Error::Other(format!("start the proxy's thread: {e}")))?;
        Ok(ProxyServer { addr, inner, accept: Some(accept) })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The OpenAI base URL to give a client: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// What it did so far.
    pub fn stats(&self) -> ProxyStats {
        self.inner.snapshot()
    }

    /// The chat keys answered from a fixture or recorded so far: what a
    /// run through the proxy needed of the fixture directory (so that
    /// `fixtures check`/`prune` can tell the used files from the unused).
    pub fn used_keys(&self) -> BTreeSet<String> {
        self.inner.used.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Stops accepting, waits for the requests in flight (each bounded by
    /// the read and upstream timeouts) and returns what it did.
    pub fn shutdown(mut self) -> ProxyStats {
        self.stop();
        let limit = Duration::from_secs(self.inner.limits.read_timeout_secs + self.inner.limits.upstream_timeout_secs + 5);
        let deadline = Instant::now() + limit;
        let mut active = self.inner.active.lock().unwrap_or_else(PoisonError::into_inner);
        while *active > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            active = self.inner.changed.wait_timeout(active, left).unwrap_or_else(PoisonError::into_inner).0;
        }
        drop(active);
        self.inner.snapshot()
    }

    fn stop(&mut self) {
        let Some(accept) = self.accept.take() else { return };
        self.inner.stop.store(true, Ordering::SeqCst);
        self.inner.changed.notify_all();
        // Wakes the accept loop's blocking accept; it sees the flag and ends.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        let _ = accept.join();
    }
}

impl Drop for ProxyServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Decrements the count of requests in flight when a connection's thread ends.
struct Slot(Arc<Inner>);

impl Drop for Slot {
    fn drop(&mut self) {
        *self.0.active.lock().unwrap_or_else(PoisonError::into_inner) -= 1;
        self.0.changed.notify_all();
    }
}

fn accept_loop(listener: &TcpListener, inner: &Arc<Inner>) {
    loop {
        {
            let mut active = inner.active.lock().unwrap_or_else(PoisonError::into_inner);
            while *active >= inner.limits.max_concurrency && !inner.stop.load(Ordering::SeqCst) {
                active = inner.changed.wait(active).unwrap_or_else(PoisonError::into_inner);
            }
        }
        if inner.stop.load(Ordering::SeqCst) {
            return;
        }
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(_) => {
                // Out of descriptors or an aborted handshake: try again shortly.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if inner.stop.load(Ordering::SeqCst) {
            return;
        }
        *inner.active.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        let slot = Slot(inner.clone());
        let spawned = std::thread::Builder::new().name("memform-proxy-conn".into()).spawn(move || {
            let slot = slot;
            slot.0.serve(&stream);
        });
        // A thread that cannot start drops its closure, and so its slot and stream.
        drop(spawned);
    }
}

/// One answer.
struct Reply {
    status: u16,
    body: String,
    /// The key of a replay miss.
    miss: Option<String>,
}

impl Reply {
    fn ok(body: Value) -> Self {
        Reply { status: 200, body: body.to_string(), miss: None }
    }
    fn error(status: u16, kind: &str, message: impl Into<String>) -> Self {
        let body = json!({"error": {"message": message.into(), "type": kind, "code": kind}});
        Reply { status, body: body.to_string(), miss: None }
    }
    fn bad(message: impl Into<String>) -> Self {
        Self::error(400, "invalid_request_error", message)
    }
}

impl Inner {
    fn snapshot(&self) -> ProxyStats {
        let guard = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        let mut s = guard.0.clone();
        s.misses = guard.1.iter().cloned().collect();
        s
    }

    fn mark_used(&self, key: &str) {
        self.used.lock().unwrap_or_else(PoisonError::into_inner).insert(key.to_string());
    }

    fn count(&self, f: impl FnOnce(&mut ProxyStats)) {
        f(&mut self.stats.lock().unwrap_or_else(PoisonError::into_inner).0);
    }

    fn serve(&self, stream: &TcpStream) {
        let timeout = Duration::from_secs(self.limits.read_timeout_secs);
        let _ = stream.set_write_timeout(Some(timeout));
        let reply = match wire::read_request(stream, self.limits.max_request_bytes, timeout) {
            Err(ReadError::Closed) => return,
            Err(ReadError::TooLarge(declared)) => {
                let reply = Reply::error(
                    413,
                    "request_too_large",
                    format!(
                        "the body is {declared} bytes, more than the proxy's limit of {} (--max-request-bytes)",
                        self.limits.max_request_bytes
                    ),
                );
                self.settle(&reply);
                wire::write_response(stream, reply.status, &reply.body);
                wire::drain(stream, declared);
                return;
            }
            Err(ReadError::LengthRequired) => {
                Reply::error(411, "invalid_request_error", "a request body needs Content-Length (no chunked uploads)")
            }
            Err(ReadError::TimedOut) => Reply::error(
                408,
                "timeout",
                format!("the request did not arrive within {} s (--read-timeout-secs)", self.limits.read_timeout_secs),
            ),
            Err(ReadError::Bad(message)) => Reply::bad(message),
            Ok(req) => self.route(&req),
        };
        self.settle(&reply);
        wire::write_response(stream, reply.status, &reply.body);
    }

    /// Counts a request and its answer.
    fn settle(&self, reply: &Reply) {
        let mut guard = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        let (stats, misses) = &mut *guard;
        stats.requests += 1;
        if let Some(key) = &reply.miss {
            stats.miss_answers += 1;
            misses.insert(key.clone());
        } else if reply.status >= 400 {
            stats.errors += 1;
            *stats.errors_by_status.entry(reply.status.to_string()).or_default() += 1;
        }
    }

    fn route(&self, req: &Request) -> Reply {
        let path = req.path.trim_end_matches('/');
        let (want, handler): (&str, fn(&Self, &Request) -> Reply) = match path {
            "/v1/chat/completions" => ("POST", Self::chat),
            "/v1/embeddings" => ("POST", Self::embeddings),
            "/v1/models" => ("GET", Self::models),
            _ => {
                return Reply::error(
                    404,
                    "not_found",
                    format!("no route {} (the proxy serves /v1/chat/completions, /v1/embeddings and /v1/models)", excerpt(&req.path, 80)),
                );
            }
        };
        if req.method != want {
            return Reply::error(405, "invalid_request_error", format!("{path} takes {want}, not {}", excerpt(&req.method, 20)));
        }
        handler(self, req)
    }

    fn models(&self, _req: &Request) -> Reply {
        let mut ids = BTreeSet::new();
        if let Ok(files) = self.store.scan() {
            ids.extend(files.into_iter().filter_map(|(_, f)| f.ok()).filter(|f| f.request.stage == Stage::Proxy).map(|f| f.request.model));
        }
        let mut data = vec![json!({"id": self.embedder.id(), "object": "model", "created": 0, "owned_by": "memform"})];
        data.extend(ids.into_iter().map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "memform"})));
        Reply::ok(json!({"object": "list", "data": data}))
    }

    fn chat(&self, req: &Request) -> Reply {
        self.count(|s| s.chat += 1);
        let (material, context) = match self.key_material(req) {
            Ok(m) => m,
            Err(reply) => return reply,
        };
        let key = match material.key() {
            Ok(k) => k,
            Err(e) => return Reply::error(500, "internal_error", format!("key the request: {e}")),
        };
        match self.store.get(&key) {
            Err(e) => Reply::error(500, "fixture_unreadable", crate::error::chain(&e)),
            Ok(Some(f)) => {
                self.count(|s| s.hits += 1);
                self.mark_used(&key);
                Reply::ok(completion(&key, &material.model, &f.response))
            }
            Ok(None) => match &self.upstream {
                None => {
                    let message = format!(
                        "memform proxy: no fixture for key {key} in {} ({}); record it with `memform proxy --record --upstream URL --fixtures {}`",
                        self.store.dir().display(),
                        self.store.closest_to(&material),
                        self.store.dir().display()
                    );
                    let body = json!({"error": {"message": message, "type": "fixture_miss", "code": "fixture_miss", "key": key}});
                    Reply { status: 500, body: body.to_string(), miss: Some(key) }
                }
                Some(up) => self.record(up, req, material, context, &key),
            },
        }
    }

    /// The request's key material (after normalisation) and its context, or a 400.
    fn key_material(&self, req: &Request) -> std::result::Result<(KeyMaterial, CallContext), Reply> {
        let value: Value = serde_json::from_slice(&req.body).map_err(|e| Reply::bad(format!("the body is not JSON ({e})")))?;
        let Value::Object(mut obj) = value else { return Err(Reply::bad("the body is not a JSON object")) };
        let model = match obj.remove("model") {
            Some(Value::String(m)) if !m.trim().is_empty() => m,
            _ => return Err(Reply::bad("model: missing, empty or not a string")),
        };
        let raw = match obj.remove("messages") {
            Some(Value::Array(m)) if !m.is_empty() => m,
            _ => return Err(Reply::bad("messages: missing, empty or not an array")),
        };
        if obj.get("stream").is_some_and(|s| s != &Value::Bool(false)) {
            return Err(Reply::bad("stream: streamed answers are not supported by the proxy"));
        }
        if obj.get("n").is_some_and(|n| n.as_u64() != Some(1)) {
            return Err(Reply::bad("n: the proxy answers one choice per request"));
        }
        let mut counts = BTreeMap::new();
        let mut messages = Vec::with_capacity(raw.len());
        for (i, m) in raw.into_iter().enumerate() {
            let Value::Object(m) = m else { return Err(Reply::bad(format!("messages[{i}]: not an object"))) };
            if let Some(other) = m.keys().find(|k| !matches!(k.as_str(), "role" | "content")) {
                return Err(Reply::bad(format!("messages[{i}].{other}: not supported by the proxy (only role and content)")));
            }
            let Some(Value::String(role)) = m.get("role") else {
                return Err(Reply::bad(format!("messages[{i}].role: missing or not a string")));
            };
            let Some(Value::String(content)) = m.get("content") else {
                return Err(Reply::bad(format!("messages[{i}].content: missing or not a string (content parts are not supported)")));
            };
            messages.push(Message::new(role, self.normalise.apply(content, &mut counts)));
        }
        let number = |name: &str| -> std::result::Result<Option<&Value>, Reply> {
            match obj.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(v) if v.is_number() => Ok(Some(v)),
                Some(_) => Err(Reply::bad(format!("{name}: not a number"))),
            }
        };
        let temperature = number("temperature")?.and_then(Value::as_f64).unwrap_or(0.0);
        let seed = match number("seed")? {
            None => 0,
            Some(v) => v.as_u64().ok_or_else(|| Reply::bad("seed: not a whole number from 0 to 2^64-1"))?,
        };
        let max_tokens = match number("max_tokens")?.or(number("max_completion_tokens")?) {
            None => 0,
            Some(v) => v
                .as_u64()
                .and_then(|t| u32::try_from(t).ok())
                .ok_or_else(|| Reply::bad("max_tokens: not a whole number from 0 to 2^32-1"))?,
        };
        if !counts.is_empty() {
            self.count(|s| {
                for (rule, n) in &counts {
                    *s.normalisations.entry(rule.clone()).or_default() += n;
                }
            });
        }
        let context = CallContext {
            conversation: req.header(CONVERSATION_HEADER).map(|c| excerpt(c, 200)).unwrap_or_else(|| "proxy".to_string()),
            episode: req.header(EPISODE_HEADER).map(|e| excerpt(e, 200)).unwrap_or_default(),
        };
        let material = KeyMaterial {
            stage: Stage::Proxy,
            model,
            template: TemplateId { name: format!("proxy/{}", self.normalise.name()), version: self.normalise.version() },
            messages,
            sampling: Sampling { temperature, seed, max_tokens },
            schema: None,
            tools: None,
            params: Some(Value::Object(obj)),
        };
        Ok((material, context))
    }

    /// Forwards the request as the client sent it, writes the answer as a
    /// fixture and answers with it; an upstream failure writes nothing.
    fn record(&self, up: &Upstream, req: &Request, material: KeyMaterial, context: CallContext, key: &str) -> Reply {
        let started = Instant::now();
        // The body parsed as JSON, so it is UTF-8.
        let payload = String::from_utf8_lossy(&req.body);
        let secrets: Vec<&str> = up.api_key.as_deref().into_iter().chain(crate::redact::userinfo(&up.endpoint)).collect();
        let scrub = |t: &str| excerpt(&crate::redact::text(t, &secrets), BODY_EXCERPT);
        let body = match post_json(&up.agent, &up.endpoint, &payload, up.api_key.as_deref(), UPSTREAM_BODY_LIMIT) {
            Exchange::Answered { status, body } if (200..300).contains(&status) => body,
            Exchange::Answered { status, body } => {
                return Reply::error(
                    502,
                    "upstream_error",
                    format!("upstream {} answered {status}: {}; nothing recorded", up.shown, scrub(&body)),
                );
            }
            Exchange::TimedOut => {
                return Reply::error(
                    504,
                    "upstream_timeout",
                    format!(
                        "upstream {} did not answer within {} s (--upstream-timeout-secs); nothing recorded",
                        up.shown, self.limits.upstream_timeout_secs
                    ),
                );
            }
            Exchange::Unreachable(m) | Exchange::Failed(m) => {
                return Reply::error(502, "upstream_error", format!("upstream {}: {}; nothing recorded", up.shown, scrub(&m)));
            }
        };
        let answer = match read_answer(&body) {
            Ok(a) => a,
            Err(m) => {
                return Reply::error(
                    502,
                    "upstream_error",
                    format!("upstream {} answered {m}: {}; nothing recorded", up.shown, scrub(&body)),
                );
            }
        };
        let response = LlmResponse {
            text: answer.text.clone(),
            usage: answer.usage,
            model: answer.model.clone(),
            source: AnswerSource::Live,
            wall: started.elapsed(),
            finish_reason: answer.finish_reason.clone(),
            tool_calls: Vec::new(),
        };
        let model = material.model.clone();
        if let Err(e) = self.store.put_material(material, context, &response) {
            return Reply::error(500, "fixture_unwritable", crate::error::chain(&e));
        }
        self.count(|s| s.recorded += 1);
        self.mark_used(key);
        Reply::ok(completion(key, &model, &answer))
    }

    fn embeddings(&self, req: &Request) -> Reply {
        self.count(|s| s.embeddings += 1);
        let value: Value = match serde_json::from_slice(&req.body) {
            Ok(v) => v,
            Err(e) => return Reply::bad(format!("the body is not JSON ({e})")),
        };
        let Value::Object(obj) = value else { return Reply::bad("the body is not a JSON object") };
        let texts: Vec<&str> = match obj.get("input") {
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(items)) if !items.is_empty() => {
                let mut texts = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) => texts.push(s.as_str()),
                        _ => return Reply::bad(format!("input[{i}]: not a string (token arrays are not supported)")),
                    }
                }
                texts
            }
            _ => return Reply::bad("input: missing, empty, or neither a string nor an array of strings"),
        };
        if texts.len() > self.limits.max_embed_inputs {
            return Reply::bad(format!(
                "input: {} texts, more than the proxy's limit of {} (--max-embed-inputs)",
                texts.len(),
                self.limits.max_embed_inputs
            ));
        }
        let dims = self.embedder.dims();
        match obj.get("dimensions") {
            None | Some(Value::Null) => {}
            Some(d) if d.as_u64() == Some(dims as u64) => {}
            Some(d) => return Reply::bad(format!("dimensions: {d}, but the embedder {} gives {dims}", self.embedder.id())),
        }
        let base64 = match obj.get("encoding_format") {
            None | Some(Value::Null) => false,
            Some(Value::String(f)) if f == "float" => false,
            Some(Value::String(f)) if f == "base64" => true,
            Some(_) => return Reply::bad("encoding_format: neither \"float\" nor \"base64\""),
        };
        let vectors = match self.embedder.embed(&texts, "proxy") {
            Ok(v) => v,
            Err(e) => return Reply::error(500, "embed_failed", crate::error::chain(&e)),
        };
        let data: Vec<Value> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let embedding = if base64 { Value::String(base64_f32(v)) } else { json!(v) };
                json!({"object": "embedding", "index": i, "embedding": embedding})
            })
            .collect();
        Reply::ok(json!({"object": "list", "data": data, "model": self.embedder.id(), "usage": {"prompt_tokens": 0, "total_tokens": 0}}))
    }
}

/// The answer a client gets, the same whether it was recorded now or replayed.
fn completion(key: &str, asked: &str, answer: &RecordedAnswer) -> Value {
    let model = if answer.model.is_empty() { asked } else { answer.model.as_str() };
    let u = answer.usage;
    json!({
        "id": format!("chatcmpl-memform-{}", &key[..key.len().min(24)]),
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": answer.text},
            "finish_reason": answer.finish_reason.as_deref().unwrap_or("stop"),
        }],
        "usage": {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens, "total_tokens": u.prompt_tokens + u.completion_tokens},
    })
}

/// The recordable part of an upstream chat completion, or why it has none.
fn read_answer(body: &str) -> std::result::Result<RecordedAnswer, String> {
    let v: Value = serde_json::from_str(body).map_err(|e| format!("with a body that is not JSON ({e})"))?;
    if let Some(err) = v.get("error") {
        return Err(format!("with an error {}", excerpt(&err.to_string(), BODY_EXCERPT)));
    }
    let message = v.pointer("/choices/0/message").ok_or("without choices[0].message")?;
    if message.get("tool_calls").is_some_and(|t| !t.is_null()) {
        return Err("with tool calls, which a fixture cannot hold".to_string());
    }
    let text = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(_) => return Err("with a choices[0].message.content that is not a string".to_string()),
    };
    let count = |p: &str| v.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    Ok(RecordedAnswer {
        text,
        usage: LlmUsage {
            calls: 1,
            prompt_tokens: count("/usage/prompt_tokens"),
            completion_tokens: count("/usage/completion_tokens"),
            retries: 0,
        },
        model: v.get("model").and_then(Value::as_str).unwrap_or_default().to_string(),
        finish_reason: v.pointer("/choices/0/finish_reason").and_then(Value::as_str).map(str::to_string),
        tool_calls: Vec::new(),
    })
}

/// A vector as OpenAI's `encoding_format: "base64"` sends it: little-endian
/// f32 bytes, standard base64 with padding.
fn base64_f32(v: &[f32]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard_encoding() {
        // 1.0f32 = 00 00 80 3f; 2.0f32 = 00 00 00 40.
        assert_eq!(base64_f32(&[1.0]), "AACAPw==");
        assert_eq!(base64_f32(&[1.0, 2.0]), "AACAPwAAAEA=");
        assert_eq!(base64_f32(&[]), "");
    }

    #[test]
    fn endpoints() {
        assert_eq!(endpoint("http://127.0.0.1:8080"), "http://127.0.0.1:8080/v1/chat/completions");
        assert_eq!(endpoint("http://127.0.0.1:8080/v1/"), "http://127.0.0.1:8080/v1/chat/completions");
    }

    #[test]
    fn limits_are_bounded() {
        assert!(ProxyLimits::default().check().is_ok());
        let e = ProxyLimits { max_concurrency: 0, ..ProxyLimits::default() }.check().unwrap_err().to_string();
        assert!(e.contains("--max-concurrency"), "{e}");
        let e = ProxyLimits { max_request_bytes: 1 << 40, ..ProxyLimits::default() }.check().unwrap_err().to_string();
        assert!(e.contains("--max-request-bytes"), "{e}");
    }

    #[test]
    fn an_answer_with_tool_calls_is_not_recordable() {
        let body = r#"{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"x"}]}}]}"#;
        assert!(read_answer(body).unwrap_err().contains("tool calls"));
    }
}
