//! The live [`Llm`]: one blocking HTTP call per request with ureq, to an
//! OpenAI-compatible server (`POST /v1/chat/completions`) or to Ollama
//! (`POST /api/chat`). Temperature, seed and token limit come from the
//! request; a JSON schema, when given, constrains the answer (OpenAI
//! `response_format`, Ollama `format`). Timeouts and 5xx answers are retried
//! with doubling backoff, a bounded number of times; 4xx answers, refused
//! connections and unparseable bodies fail at once.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::http::{Exchange, excerpt, post_json};
use crate::llm::{API_KEY_ENV, AnswerSource, Llm, LlmRequest, LlmResponse, LlmSettings, Provider, ResponseFormat};
use crate::types::LlmUsage;

/// Most characters of an error body quoted in an error.
const BODY_EXCERPT: usize = 300;
/// Most bytes of an answer read.
const BODY_LIMIT: u64 = 64 << 20;

/// `secs` as a timeout; a value no `Duration` holds (negative, NaN, huge:
/// settings built without `Config::validate`) becomes an hour, the
/// configurable maximum, instead of a panic.
fn timeout(secs: f64) -> Duration {
    Duration::try_from_secs_f64(secs).ok().filter(|d| !d.is_zero()).unwrap_or(Duration::from_secs(3600)).min(Duration::from_secs(3600))
}

/// The live HTTP client.
pub struct HttpLlm {
    settings: LlmSettings,
    api_key: Option<String>,
    agent: ureq::Agent,
}

impl std::fmt::Debug for HttpLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpLlm").field("settings", &self.settings).field("api_key", &self.api_key.as_ref().map(|_| "<set>")).finish()
    }
}

/// What one attempt came to.
enum Attempt {
    Done(LlmResponse),
    /// Worth another try (timeout, 5xx).
    Retry(Error),
    Fail(Error),
}

impl HttpLlm {
    /// A client for `settings`, with the API key from MEMFORM_LLM_API_KEY if set.
    pub fn new(settings: LlmSettings) -> Self {
        let key = std::env::var(API_KEY_ENV).ok().filter(|k| !k.trim().is_empty());
        Self::with_api_key(settings, key)
    }

    /// A client with an explicit API key (tests, embedding applications).
    pub fn with_api_key(settings: LlmSettings, api_key: Option<String>) -> Self {
        let agent: ureq::Agent =
            ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(timeout(settings.timeout_secs))).build().into();
        HttpLlm { settings, api_key, agent }
    }

    pub fn settings(&self) -> &LlmSettings {
        &self.settings
    }

    fn endpoint(&self) -> String {
        match self.settings.provider {
            Provider::OpenAi => format!("{}/v1/chat/completions", self.settings.url),
            Provider::Ollama => format!("{}/api/chat", self.settings.url),
        }
    }

    /// The request body sent for `req` (no credentials in it). The schema
    /// text is spliced in as written, keeping its property order.
    pub fn body(&self, req: &LlmRequest) -> Result<String> {
        let ollama = self.settings.provider == Provider::Ollama;
        let messages: Vec<Value> = req.messages.iter().map(|m| message_json(m, ollama)).collect();
        let s = &req.sampling;
        let base = match self.settings.provider {
            Provider::OpenAi => json!({
                "model": req.model,
                "messages": messages,
                "temperature": s.temperature,
                "seed": s.seed,
                "max_tokens": s.max_tokens,
                "stream": false,
            }),
            Provider::Ollama => json!({
                "model": req.model,
                "messages": messages,
                "stream": false,
                "options": {"temperature": s.temperature, "seed": s.seed, "num_predict": s.max_tokens},
            }),
        };
        let mut base = base;
        if self.settings.disable_thinking {
            // The switch each server family reads; a server without thinking ignores it.
            match self.settings.provider {
                Provider::OpenAi => base["chat_template_kwargs"] = json!({"enable_thinking": false}),
                Provider::Ollama => base["think"] = json!(false),
            }
        }
        if let Some(tools) = &req.tools {
            base["tools"] = tools.clone();
            if !ollama {
                base["tool_choice"] = json!("auto");
            }
        }
        let mut body = base.to_string();
        let Some(schema) = &req.schema else { return Ok(body) };
        serde_json::from_str::<Value>(schema)
            .map_err(|e| Error::Other(format!("read the response schema of the {} template: {e}", req.template.name)))?;
        let extra = match (self.settings.provider, self.settings.response_format) {
            (Provider::Ollama, _) => format!(",\"format\":{schema}}}"),
            (Provider::OpenAi, ResponseFormat::JsonObject) => {
                format!(",\"response_format\":{{\"type\":\"json_object\",\"schema\":{schema}}}}}")
            }
            (Provider::OpenAi, ResponseFormat::JsonSchema) => format!(
                ",\"response_format\":{{\"type\":\"json_schema\",\"json_schema\":{{\"name\":\"{}\",\"strict\":true,\"schema\":{schema}}}}}}}",
                req.stage.as_str()
            ),
            (Provider::OpenAi, ResponseFormat::None) => return Ok(body),
        };
        body.pop();
        body.push_str(&extra);
        Ok(body)
    }

    /// `text` without the API key, the URL's userinfo or bearer tokens:
    /// servers echo requests in error bodies.
    fn scrub(&self, text: &str) -> String {
        let mut secrets: Vec<&str> = self.api_key.as_deref().into_iter().collect();
        secrets.extend(crate::redact::userinfo(&self.settings.url));
        crate::redact::text(text, &secrets)
    }

    fn attempt(&self, url: &str, payload: &str, attempts: u32) -> Attempt {
        let started = Instant::now();
        let shown = crate::redact::url(url);
        let (status, text) = match post_json(&self.agent, url, payload, self.api_key.as_deref(), BODY_LIMIT) {
            Exchange::Answered { status, body } => (status, body),
            Exchange::TimedOut => {
                return Attempt::Retry(Error::LlmTimeout { url: shown, timeout_secs: self.settings.timeout_secs, attempts });
            }
            Exchange::Unreachable(message) => {
                return Attempt::Fail(Error::LlmConnect { url: shown, message: self.scrub(&message) });
            }
            Exchange::Failed(message) => return Attempt::Fail(Error::LlmBody { url: shown, message: self.scrub(&message) }),
        };
        if status >= 300 {
            let error = Error::LlmStatus { url: shown, status, attempts, body: excerpt(&self.scrub(&text), BODY_EXCERPT) };
            return if status >= 500 { Attempt::Retry(error) } else { Attempt::Fail(error) };
        }
        match self.read_answer(&text) {
            Ok((answer, usage, model)) => {
                let finish_reason = finish_reason(self.settings.provider, &text);
                let tool_calls = tool_calls(self.settings.provider, &text);
                Attempt::Done(LlmResponse {
                    text: answer,
                    usage,
                    model,
                    source: AnswerSource::Live,
                    wall: started.elapsed(),
                    finish_reason,
                    tool_calls,
                })
            }
            Err(message) => Attempt::Fail(Error::LlmBody {
                url: shown,
                message: format!("{} in {:?}", self.scrub(&message), excerpt(&self.scrub(&text), BODY_EXCERPT)),
            }),
        }
    }

    /// The answer text, usage and reported model of a 2xx body.
    fn read_answer(&self, body: &str) -> std::result::Result<(String, LlmUsage, String), String> {
        let v: Value = serde_json::from_str(body).map_err(|e| format!("body is not JSON ({e})"))?;
        let count = |p: &str| v.pointer(p).and_then(Value::as_u64).unwrap_or(0);
        let model = v.get("model").and_then(Value::as_str).unwrap_or_default().to_string();
        match self.settings.provider {
            Provider::OpenAi => {
                if let Some(err) = v.get("error") {
                    return Err(format!("server error {err}"));
                }
                let text = match v.pointer("/choices/0/message/content") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Null) => String::new(),
                    _ => return Err("no choices[0].message.content".into()),
                };
                let usage = LlmUsage {
                    calls: 1,
                    prompt_tokens: count("/usage/prompt_tokens"),
                    completion_tokens: count("/usage/completion_tokens"),
                    retries: 0,
                };
                Ok((text, usage, model))
            }
            Provider::Ollama => {
                if let Some(err) = v.get("error") {
                    return Err(format!("server error {err}"));
                }
                let Some(text) = v.pointer("/message/content").and_then(Value::as_str) else {
                    return Err("no message.content".into());
                };
                let usage = LlmUsage {
                    calls: 1,
                    prompt_tokens: count("/prompt_eval_count"),
                    completion_tokens: count("/eval_count"),
                    ..LlmUsage::default()
                };
                Ok((text.to_string(), usage, model))
            }
        }
    }
}

/// A message as the wire carries it: an assistant turn's tool calls
/// (OpenAI: arguments as JSON text; Ollama: as an object) and a tool
/// answer's call id.
fn message_json(m: &crate::llm::Message, ollama: bool) -> Value {
    let mut v = json!({"role": m.role, "content": m.content});
    if let Some(calls) = &m.tool_calls {
        v["tool_calls"] = Value::Array(
            calls
                .iter()
                .map(|c| {
                    if ollama {
                        let args: Value = serde_json::from_str(&c.arguments).unwrap_or(Value::Object(Default::default()));
                        json!({"function": {"name": c.name, "arguments": args}})
                    } else {
                        json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}})
                    }
                })
                .collect(),
        );
    }
    if let Some(id) = &m.tool_call_id {
        v["tool_call_id"] = json!(id);
    }
    v
}

/// The tool calls of an answer: OpenAI's `choices[0].message.tool_calls`
/// (arguments as text), Ollama's `message.tool_calls` (arguments as an
/// object, no ids: `call_<n>`).
fn tool_calls(provider: Provider, body: &str) -> Vec<crate::llm::ToolCall> {
    let Ok(v) = serde_json::from_str::<Value>(body) else { return Vec::new() };
    let at = match provider {
        Provider::OpenAi => "/choices/0/message/tool_calls",
        Provider::Ollama => "/message/tool_calls",
    };
    let Some(calls) = v.pointer(at).and_then(Value::as_array) else { return Vec::new() };
    calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let arguments = match c.pointer("/function/arguments") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            crate::llm::ToolCall {
                id: c.get("id").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| format!("call_{}", i + 1)),
                name: c.pointer("/function/name").and_then(Value::as_str).unwrap_or_default().to_string(),
                arguments,
            }
        })
        .collect()
}

/// Why the model stopped: OpenAI's `choices[0].finish_reason`, Ollama's `done_reason`.
fn finish_reason(provider: Provider, body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    let at = match provider {
        Provider::OpenAi => "/choices/0/finish_reason",
        Provider::Ollama => "/done_reason",
    };
    v.pointer(at).and_then(Value::as_str).map(str::to_string)
}

impl Llm for HttpLlm {
    fn complete(&self, req: &LlmRequest) -> Result<LlmResponse> {
        let url = self.endpoint();
        let payload = self.body(req)?;
        let mut backoff = Duration::from_millis(self.settings.retry_backoff_ms);
        let mut attempts = 0;
        loop {
            attempts += 1;
            match self.attempt(&url, &payload, attempts) {
                Attempt::Done(r) => return Ok(r),
                Attempt::Fail(e) => return Err(e),
                Attempt::Retry(e) if attempts > self.settings.max_retries => return Err(e),
                Attempt::Retry(_) => {
                    std::thread::sleep(backoff);
                    backoff = backoff.saturating_mul(2).min(crate::http::MAX_BACKOFF);
                }
            }
        }
    }
}
