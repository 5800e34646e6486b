//! Embedders behind an HTTP endpoint, called with ureq: Ollama
//! (`POST /api/embed`, `{model, input}` → `{embeddings}`) and any
//! OpenAI-compatible server (`POST /v1/embeddings`, `{model, input}` →
//! `{data: [{index, embedding}]}`).
//!
//! The rules are the LLM client's: a per-call timeout; timeouts and 5xx
//! answers retried with doubling backoff a bounded number of times; 4xx
//! answers, refused connections and unparseable bodies fail at once. The API
//! key (env `MEMFORM_EMBED_API_KEY`) is sent as a bearer token and never
//! appears in errors or `Debug` output. Every vector is checked against the
//! configured dimensions and L2-normalised.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Embedder, l2_normalize};
use crate::error::{Error, Result};
use crate::http::{Exchange, excerpt, post_json};

/// Environment variable holding the API key of the embeddings server.
pub const API_KEY_ENV: &str = "MEMFORM_EMBED_API_KEY";
/// Most characters of an error body quoted in an error.
const BODY_EXCERPT: usize = 300;
/// Largest response body read.
const BODY_LIMIT: u64 = 256 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpApi {
    /// Ollama's `POST /api/embed`.
    Ollama,
    /// OpenAI-compatible `POST /v1/embeddings`.
    OpenAi,
}

impl HttpApi {
    pub fn as_str(self) -> &'static str {
        match self {
            HttpApi::Ollama => "ollama",
            HttpApi::OpenAi => "openai",
        }
    }
}

#[derive(Clone)]
pub struct HttpEmbedderSettings {
    pub api: HttpApi,
    /// Base URL without the `/api/...` or `/v1/...` path.
    pub url: String,
    pub model: String,
    /// Dimensions every returned vector must have.
    pub dims: usize,
    pub api_key: Option<String>,
    /// Seconds one HTTP call may take, answer included.
    pub timeout_secs: f64,
    /// Extra attempts after a timeout or a 5xx answer.
    pub max_retries: u32,
    /// Wait before the first retry; doubled for each further one.
    pub retry_backoff_ms: u64,
    /// Most texts sent in one request.
    pub batch: usize,
}

impl std::fmt::Debug for HttpEmbedderSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpEmbedderSettings")
            .field("api", &self.api)
            .field("url", &self.url)
            .field("model", &self.model)
            .field("dims", &self.dims)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("timeout_secs", &self.timeout_secs)
            .field("max_retries", &self.max_retries)
            .field("retry_backoff_ms", &self.retry_backoff_ms)
            .field("batch", &self.batch)
            .finish()
    }
}

impl HttpEmbedderSettings {
    /// Settings with the defaults for timeouts, retries and batching, and the
    /// API key from `MEMFORM_EMBED_API_KEY` when it is set.
    pub fn new(api: HttpApi, url: &str, model: &str, dims: usize) -> Self {
        HttpEmbedderSettings {
            api,
            url: url.trim_end_matches('/').to_string(),
            model: model.to_string(),
            dims,
            api_key: std::env::var(API_KEY_ENV).ok().filter(|k| !k.trim().is_empty()),
            timeout_secs: 60.0,
            max_retries: 2,
            retry_backoff_ms: 500,
            batch: 64,
        }
    }
}

#[derive(Debug)]
pub struct HttpEmbedder {
    settings: HttpEmbedderSettings,
    agent: ureq::Agent,
}

enum Attempt {
    Done(Vec<Vec<f32>>),
    /// Worth another try (timeout, 5xx).
    Retry(String),
    Fail(String),
}

impl HttpEmbedder {
    pub fn new(settings: HttpEmbedderSettings) -> Result<Self> {
        if settings.dims == 0 {
            return Err(Error::Config(format!("the {} embedder needs its dimensions (--embed-dims)", settings.api.as_str())));
        }
        if settings.model.trim().is_empty() {
            return Err(Error::Config(format!("the {} embedder needs a model name", settings.api.as_str())));
        }
        let timeout = Duration::try_from_secs_f64(settings.timeout_secs)
            .map_err(|_| Error::Config(format!("bad embed timeout {}", settings.timeout_secs)))?;
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(timeout)).build().into();
        Ok(HttpEmbedder { settings, agent })
    }

    pub fn settings(&self) -> &HttpEmbedderSettings {
        &self.settings
    }

    fn endpoint(&self) -> String {
        match self.settings.api {
            HttpApi::Ollama => format!("{}/api/embed", self.settings.url),
            HttpApi::OpenAi => format!("{}/v1/embeddings", self.settings.url),
        }
    }

    fn call(&self, url: &str, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let payload = json!({"model": self.settings.model, "input": texts}).to_string();
        let mut backoff = Duration::from_millis(self.settings.retry_backoff_ms);
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let message = match self.attempt(url, &payload, texts.len()) {
                Attempt::Done(v) => return Ok(v),
                Attempt::Fail(m) => m,
                Attempt::Retry(m) if attempts > self.settings.max_retries => m,
                Attempt::Retry(_) => {
                    std::thread::sleep(backoff);
                    backoff = backoff.saturating_mul(2).min(crate::http::MAX_BACKOFF);
                    continue;
                }
            };
            let plural = if attempts == 1 { "" } else { "s" };
            return Err(Error::EmbedHttp {
                url: crate::redact::url(url),
                message: self.scrub(&format!("{message} ({attempts} attempt{plural})")),
            });
        }
    }

    /// `text` without the API key, the URL's userinfo or bearer tokens.
    fn scrub(&self, text: &str) -> String {
        let mut secrets: Vec<&str> = self.settings.api_key.as_deref().into_iter().collect();
        secrets.extend(crate::redact::userinfo(&self.settings.url));
        crate::redact::text(text, &secrets)
    }

    fn attempt(&self, url: &str, payload: &str, expected: usize) -> Attempt {
        let (status, text) = match post_json(&self.agent, url, payload, self.settings.api_key.as_deref(), BODY_LIMIT) {
            Exchange::Answered { status, body } if status >= 300 => (status, self.scrub(&body)),
            Exchange::Answered { status, body } => (status, body),
            Exchange::TimedOut => return Attempt::Retry(format!("no answer within {}s", self.settings.timeout_secs)),
            Exchange::Unreachable(m) => return Attempt::Fail(format!("cannot connect ({m}); is the server running?")),
            Exchange::Failed(m) => return Attempt::Fail(m),
        };
        if status >= 500 {
            return Attempt::Retry(format!("http status {status}: {}", excerpt(&text, BODY_EXCERPT)));
        }
        if status >= 300 {
            return Attempt::Fail(format!("http status {status}: {}", excerpt(&text, BODY_EXCERPT)));
        }
        match self.read_vectors(&text, expected) {
            Ok(v) => Attempt::Done(v),
            Err(m) => Attempt::Fail(format!("{m} in {:?}", excerpt(&text, BODY_EXCERPT))),
        }
    }

    /// The vectors of a 2xx body, in input order, checked and normalised.
    fn read_vectors(&self, body: &str, expected: usize) -> std::result::Result<Vec<Vec<f32>>, String> {
        let v: Value = serde_json::from_str(body).map_err(|e| format!("body is not JSON ({e})"))?;
        if let Some(err) = v.get("error") {
            return Err(format!("server error {err}"));
        }
        let rows: Vec<&Value> = match self.settings.api {
            HttpApi::Ollama => v.get("embeddings").and_then(Value::as_array).ok_or("no `embeddings` array")?.iter().collect(),
            HttpApi::OpenAi => {
                let data = v.get("data").and_then(Value::as_array).ok_or("no `data` array")?;
                let mut slots: Vec<Option<&Value>> = vec![None; data.len()];
                for (pos, item) in data.iter().enumerate() {
                    let index = item
                        .get("index")
                        .and_then(Value::as_u64)
                        .and_then(|i| usize::try_from(i).ok())
                        .ok_or_else(|| format!("data[{pos}] has no integer `index`"))?;
                    let slot = slots.get_mut(index).ok_or_else(|| format!("data[{pos}].index {index} out of range"))?;
                    if slot.is_some() {
                        return Err(format!("data index {index} given twice"));
                    }
                    *slot = Some(item.get("embedding").ok_or_else(|| format!("data[{pos}] has no `embedding`"))?);
                }
                slots.into_iter().flatten().collect()
            }
        };
        if rows.len() != expected {
            return Err(format!("{} vectors for {expected} texts", rows.len()));
        }
        rows.iter().enumerate().map(|(i, row)| self.read_vector(i, row)).collect()
    }

    fn read_vector(&self, i: usize, row: &Value) -> std::result::Result<Vec<f32>, String> {
        let items = row.as_array().ok_or_else(|| format!("vector {i} is not an array"))?;
        if items.len() != self.settings.dims {
            return Err(format!(
                "vector {i} has {} dimensions, expected {} (check --embed-dims and the model)",
                items.len(),
                self.settings.dims
            ));
        }
        let mut out = Vec::with_capacity(items.len());
        for x in items {
            let f = x.as_f64().ok_or_else(|| format!("vector {i} holds a non-number {x}"))?;
            out.push(f as f32);
        }
        if out.iter().any(|x| !x.is_finite()) {
            return Err(format!("vector {i} holds a non-finite number"));
        }
        l2_normalize(&mut out);
        Ok(out)
    }
}

impl Embedder for HttpEmbedder {
    fn id(&self) -> String {
        format!("{}:{}", self.settings.api.as_str(), self.settings.model)
    }

    fn dims(&self) -> usize {
        self.settings.dims
    }

    fn embed(&self, texts: &[&str], _source: &str) -> Result<Vec<Vec<f32>>> {
        let url = self.endpoint();
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.settings.batch.max(1)) {
            out.extend(self.call(&url, chunk)?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::mpsc;
    use std::thread::JoinHandle;

    use super::*;

    /// One scripted answer: status line code and body.
    struct Scripted {
        status: u16,
        body: String,
    }

    /// A request the test server received.
    struct Seen {
        line: String,
        authorization: Option<String>,
        body: String,
    }

    /// Serves `script` in order, one connection per answer, on 127.0.0.1, and
    /// stops after the last one.
    fn serve(script: Vec<Scripted>) -> (String, JoinHandle<()>, mpsc::Receiver<Seen>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = mpsc::channel();
        let handle = std::thread::spawn(move || {
            for answer in script {
                let Ok((stream, _)) = listener.accept() else { return };
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut line = String::new();
                reader.read_line(&mut line).expect("request line");
                let mut length = 0usize;
                let mut authorization = None;
                loop {
                    let mut header = String::new();
                    reader.read_line(&mut header).expect("header");
                    let header = header.trim_end();
                    if header.is_empty() {
                        break;
                    }
                    let (name, value) = header.split_once(':').expect("header colon");
                    match name.to_ascii_lowercase().as_str() {
                        "content-length" => length = value.trim().parse().expect("length"),
                        "authorization" => authorization = Some(value.trim().to_string()),
                        _ => {}
                    }
                }
                let mut body = vec![0u8; length];
                reader.read_exact(&mut body).expect("body");
                let _ =
                    tx.send(Seen { line: line.trim_end().to_string(), authorization, body: String::from_utf8(body).expect("utf-8 body") });
                let mut stream = stream;
                let reply = format!(
                    "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                    answer.status,
                    answer.body.len(),
                    answer.body
                );
                stream.write_all(reply.as_bytes()).expect("reply");
            }
        });
        (format!("http://{addr}"), handle, rx)
    }

    fn settings(api: HttpApi, url: &str, dims: usize) -> HttpEmbedderSettings {
        HttpEmbedderSettings {
            api,
            url: url.to_string(),
            model: "m".to_string(),
            dims,
            api_key: None,
            timeout_secs: 5.0,
            max_retries: 2,
            retry_backoff_ms: 1,
            batch: 64,
        }
    }

    fn ok(status: u16, body: &str) -> Scripted {
        Scripted { status, body: body.to_string() }
    }

    #[test]
    fn ollama_retries_a_5xx_then_reads_vectors_in_order() {
        let (url, server, seen) = serve(vec![ok(500, "overloaded"), ok(200, r#"{"embeddings": [[3.0, 4.0], [0.0, 2.0]]}"#)]);
        let e = HttpEmbedder::new(settings(HttpApi::Ollama, &url, 2)).expect("embedder");
        let v = e.embed(&["a", "b"], "c/e").expect("embed");
        server.join().expect("server");
        assert_eq!(v, vec![vec![0.6, 0.8], vec![0.0, 1.0]]);
        let requests: Vec<Seen> = seen.try_iter().collect();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[1].line, "POST /api/embed HTTP/1.1");
        let body: Value = serde_json::from_str(&requests[1].body).expect("json body");
        assert_eq!(body, json!({"model": "m", "input": ["a", "b"]}));
        assert_eq!(requests[1].authorization, None);
        assert_eq!(e.id(), "ollama:m");
    }

    #[test]
    fn openai_orders_by_index_and_sends_the_key() {
        let (url, server, seen) =
            serve(vec![ok(200, r#"{"data": [{"index": 1, "embedding": [0, 1]}, {"index": 0, "embedding": [1, 0]}]}"#)]);
        let mut s = settings(HttpApi::OpenAi, &url, 2);
        s.api_key = Some("sk-test-secret".to_string());
        assert!(!format!("{s:?}").contains("sk-test-secret"));
        let e = HttpEmbedder::new(s).expect("embedder");
        let v = e.embed(&["first", "second"], "c/e").expect("embed");
        server.join().expect("server");
        assert_eq!(v, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        let req = seen.recv().expect("one request");
        assert_eq!(req.line, "POST /v1/embeddings HTTP/1.1");
        assert_eq!(req.authorization.as_deref(), Some("Bearer sk-test-secret"));
    }

    #[test]
    fn a_4xx_fails_at_once_with_the_body() {
        let (url, server, seen) = serve(vec![ok(400, r#"{"error": "model not found"}"#)]);
        let e = HttpEmbedder::new(settings(HttpApi::Ollama, &url, 2)).expect("embedder");
        let err = e.embed(&["a"], "c/e").expect_err("400 must fail").to_string();
        server.join().expect("server");
        assert!(err.contains("http status 400"), "{err}");
        assert!(err.contains("model not found"), "{err}");
        assert!(err.contains("(1 attempt)"), "{err}");
        assert_eq!(seen.try_iter().count(), 1);
    }

    #[test]
    fn server_errors_are_retried_a_bounded_number_of_times() {
        let (url, server, seen) = serve(vec![ok(502, "a"), ok(503, "b"), ok(500, "c")]);
        let e = HttpEmbedder::new(settings(HttpApi::Ollama, &url, 2)).expect("embedder");
        let err = e.embed(&["a"], "c/e").expect_err("must give up").to_string();
        server.join().expect("server");
        assert!(err.contains("http status 500"), "{err}");
        assert!(err.contains("(3 attempts)"), "{err}");
        assert_eq!(seen.try_iter().count(), 3);
    }

    #[test]
    fn garbage_body_and_wrong_dims_are_clear_errors() {
        let (url, server, _seen) = serve(vec![
            ok(200, "<html>not json</html>"),
            ok(200, r#"{"embeddings": [[1.0, 0.0, 0.0]]}"#),
            ok(200, r#"{"embeddings": [[1.0, 0.0], [0.0, 1.0]]}"#),
        ]);
        let e = HttpEmbedder::new(settings(HttpApi::Ollama, &url, 2)).expect("embedder");
        let garbage = e.embed(&["a"], "c/e").expect_err("garbage").to_string();
        assert!(garbage.contains("body is not JSON"), "{garbage}");
        assert!(garbage.contains("not json</html>"), "{garbage}");
        let dims = e.embed(&["a"], "c/e").expect_err("dims").to_string();
        assert!(dims.contains("vector 0 has 3 dimensions, expected 2"), "{dims}");
        let count = e.embed(&["a"], "c/e").expect_err("count").to_string();
        assert!(count.contains("2 vectors for 1 texts"), "{count}");
        server.join().expect("server");
    }

    #[test]
    fn refused_connection_is_not_retried() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        let mut s = settings(HttpApi::OpenAi, &format!("http://{addr}"), 2);
        s.retry_backoff_ms = 10_000;
        let e = HttpEmbedder::new(s).expect("embedder");
        let started = std::time::Instant::now();
        let err = e.embed(&["a"], "c/e").expect_err("refused").to_string();
        assert!(err.contains("cannot connect"), "{err}");
        assert!(err.contains("(1 attempt)"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_timeout_is_retried_then_reported() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let server = std::thread::spawn(move || {
            let mut held = Vec::new();
            for _ in 0..2 {
                if let Ok((stream, _)) = listener.accept() {
                    held.push(stream);
                }
            }
            let _ = done_rx.recv_timeout(Duration::from_secs(10));
            held.len()
        });
        let mut s = settings(HttpApi::Ollama, &format!("http://{addr}"), 2);
        s.timeout_secs = 0.2;
        s.max_retries = 1;
        let e = HttpEmbedder::new(s).expect("embedder");
        let err = e.embed(&["a"], "c/e").expect_err("timeout").to_string();
        assert!(err.contains("no answer within 0.2s"), "{err}");
        assert!(err.contains("(2 attempts)"), "{err}");
        done_tx.send(()).expect("server waits");
        assert_eq!(server.join().expect("server"), 2);
    }

    #[test]
    fn empty_input_makes_no_call_and_settings_are_checked() {
        let e = HttpEmbedder::new(settings(HttpApi::Ollama, "http://127.0.0.1:9", 2)).expect("e");
        assert!(e.embed(&[], "c/e").expect("no call").is_empty());
        assert!(HttpEmbedder::new(settings(HttpApi::Ollama, "http://x", 0)).is_err());
    }
}
