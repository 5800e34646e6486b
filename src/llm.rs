//! LLM mode's recorded boundary: the [`Llm`] trait every model call goes
//! through, its live HTTP client ([`client`]), the fixture store that records
//! and replays answers by request key ([`fixtures`]), the versioned prompt
//! templates ([`prompts`]) and lenient answer parsing ([`parse`]). The stages
//! built on them live beside their rules counterparts:
//! `pipeline::extract::LlmExtractor` and `pipeline::judge::LlmJudge`.
//!
//! Invariants: only this module (and `embed`) knows HTTP; the API key comes
//! from the environment alone and is never part of a request value, a
//! fixture, a settings dump or an error message; a fixture is found by its
//! key, never by call order.

pub mod client;
pub mod fixtures;
pub mod parse;
pub mod prompts;
pub mod proxy;

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::Shared;
use crate::error::{Error, Result};
use crate::types::LlmUsage;

pub use client::HttpLlm;
pub use fixtures::{FixtureFile, FixtureStore, FixturesCheck, RecordedLlm, default_fixtures_dir, fixtures_check, model_slug, request_key};

/// Environment variable holding the API key (sent as a bearer token).
pub const API_KEY_ENV: &str = crate::redact::LLM_API_KEY_ENV;

/// Which pipeline stage a call serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    Extract,
    Judge,
    /// `signet`'s decision stage (one call per fact with candidates).
    Decide,
    /// `memorix`'s Resolve stage (one call per observation with search hits).
    Resolve,
    /// `memorix`'s Evaluate stage (one call per observation).
    Evaluate,
    /// A call an external system made through `memform proxy` (`llm::proxy`).
    Proxy,
    /// One model turn of the `dreaming` profile's llm dreamer (an agentic
    /// loop with tools).
    Dream,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Extract => "extract",
            Stage::Judge => "judge",
            Stage::Decide => "decide",
            Stage::Resolve => "resolve",
            Stage::Evaluate => "evaluate",
            Stage::Proxy => "proxy",
            Stage::Dream => "dream",
        }
    }
}

/// A chat message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    pub content: String,
    /// An assistant turn's tool calls (OpenAI-style `tools`); absent from
    /// (and so not changing the key of) every message without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// A `tool` message: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A plain message.
    pub fn new(role: &str, content: impl Into<String>) -> Message {
        Message { role: role.to_string(), content: content.into(), ..Message::default() }
    }
}

/// One tool call a model asked for: its id, the function and its arguments
/// (JSON text, as the model wrote them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A prompt template's identity; its version is bumped whenever its text changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateId {
    pub name: String,
    pub version: u32,
}

/// Sampling parameters (all part of the fixture key).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    pub temperature: f64,
    pub seed: u64,
    pub max_tokens: u32,
}

/// Where a call comes from; named in errors, not part of the key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallContext {
    pub conversation: String,
    pub episode: String,
}

/// One model call as the pipeline asks it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmRequest {
    pub stage: Stage,
    pub model: String,
    pub template: TemplateId,
    pub messages: Vec<Message>,
    pub sampling: Sampling,
    /// JSON schema the answer should follow, as JSON text: sent as written,
    /// so its property order (which llama.cpp's grammar follows) is kept.
    /// The key hashes its parsed, canonical form.
    pub schema: Option<String>,
    /// OpenAI-style `tools` offered to the model (`tool_choice: "auto"`);
    /// part of the key when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<serde_json::Value>,
    pub context: CallContext,
}

/// Where an answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerSource {
    Live,
    Fixture,
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmResponse {
    /// The answer text exactly as the model wrote it.
    pub text: String,
    /// One call and its token counts (as recorded, when replayed).
    pub usage: LlmUsage,
    /// The model name the server reported (may differ from the one asked for).
    pub model: String,
    pub source: AnswerSource,
    /// Wall time of the live call (zero for a fixture).
    #[serde(with = "duration_ms")]
    pub wall: Duration,
    /// Why the model stopped, as the server said (`stop`, `length`); `None` when it did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// The tool calls the model asked for (a request with `tools`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
}

impl LlmResponse {
    /// True when the answer stopped at its token budget: the server says
    /// `length`, or (a server that does not say) it used the whole budget.
    pub fn truncated(&self, max_tokens: u32) -> bool {
        match self.finish_reason.as_deref() {
            Some(r) => r == "length",
            None => self.usage.completion_tokens >= u64::from(max_tokens),
        }
    }
}

/// Asks `req`; a truncated answer is asked once more with twice the budget
/// (at most `cap`; not when the budget is the cap already). Returns the
/// answer used, the usage of every call made (`retries` counts the second),
/// and whether that answer is still truncated.
pub fn complete_budgeted(llm: &dyn Llm, req: &LlmRequest, cap: u32) -> Result<(LlmResponse, LlmUsage, bool)> {
    let first = llm.complete(req)?;
    let mut usage = first.usage;
    if !first.truncated(req.sampling.max_tokens) {
        return Ok((first, usage, false));
    }
    let larger = req.sampling.max_tokens.saturating_mul(2).min(cap);
    if larger <= req.sampling.max_tokens {
        return Ok((first, usage, true));
    }
    let mut again = req.clone();
    again.sampling.max_tokens = larger;
    let second = llm.complete(&again)?;
    usage.add(second.usage);
    usage.retries += 1;
    let truncated = second.truncated(larger);
    Ok((second, usage, truncated))
}

/// A chat model behind the recorded boundary.
pub trait Llm: Send + Sync {
    fn complete(&self, req: &LlmRequest) -> Result<LlmResponse>;
}

/// `--llm replay|record|live`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LlmMode {
    /// Answers come from fixtures only; a miss is an error.
    #[default]
    Replay,
    /// Fixtures first; misses call the live server and are written.
    Record,
    /// Always the live server; nothing read or written.
    Live,
}

impl LlmMode {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "replay" => Ok(LlmMode::Replay),
            "record" => Ok(LlmMode::Record),
            "live" => Ok(LlmMode::Live),
            other => Err(Error::Config(format!("unknown llm mode {other:?} (expected replay, record or live)"))),
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            LlmMode::Replay => "replay",
            LlmMode::Record => "record",
            LlmMode::Live => "live",
        }
    }
}

/// Wire protocol of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// `POST {url}/v1/chat/completions`.
    OpenAi,
    /// `POST {url}/api/chat`.
    Ollama,
}

impl Provider {
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "openai" => Ok(Provider::OpenAi),
            "ollama" => Ok(Provider::Ollama),
            other => Err(Error::Config(format!("unknown llm provider {other:?} (expected openai or ollama)"))),
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Ollama => "ollama",
        }
    }
}

/// How an OpenAI-compatible server is asked for schema-shaped JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseFormat {
    /// `{"type":"json_schema","json_schema":{"name":…,"schema":…}}` (OpenAI).
    JsonSchema,
    /// `{"type":"json_object","schema":…}` (llama-cpp-python's server).
    JsonObject,
    /// No constraint; the prompt alone asks for JSON.
    None,
}

impl ResponseFormat {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "json_schema" => Ok(ResponseFormat::JsonSchema),
            "json_object" => Ok(ResponseFormat::JsonObject),
            "none" => Ok(ResponseFormat::None),
            other => Err(Error::Config(format!("unknown llm_response_format {other:?} (expected json_schema, json_object or none)"))),
        }
    }
}

/// Everything needed to talk to a model, resolved from config and
/// environment. Holds no API key: safe to serialise into a manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmSettings {
    pub provider: Provider,
    /// Written without its userinfo (`http://user:key@host` → `http://[redacted]@host`).
    #[serde(serialize_with = "serialize_redacted_url")]
    pub url: String,
    pub model: String,
    pub sampling: Sampling,
    /// Completion tokens added per turn shown (per pair judged) to `sampling.max_tokens`.
    #[serde(default)]
    pub tokens_per_turn: u32,
    /// The largest completion budget of a call, retries included.
    #[serde(default)]
    pub max_tokens_cap: u32,
    pub response_format: ResponseFormat,
    /// Ask the server not to think (see `Shared::llm_disable_thinking`);
    /// like the response format, not part of the fixture key.
    #[serde(default)]
    pub disable_thinking: bool,
    pub timeout_secs: f64,
    pub max_retries: u32,
    pub retry_backoff_ms: u64,
    /// Longest transcript (characters) sent for extraction.
    pub max_input_chars: usize,
}

impl LlmSettings {
    /// Settings from the config alone.
    pub fn from_config(cfg: &Shared) -> Result<Self> {
        for key in [
            "llm_timeout_secs",
            "llm_temperature",
            "llm_max_retries",
            "llm_retry_backoff_ms",
            "llm_max_tokens",
            "llm_tokens_per_turn",
            "llm_max_tokens_cap",
        ] {
            cfg.check_key(key)?;
        }
        if cfg.llm_model.trim().is_empty() {
            return Err(Error::Config("llm_model is empty".into()));
        }
        Ok(LlmSettings {
            provider: Provider::parse(&cfg.llm_provider)?,
            url: cfg.llm_url.trim_end_matches('/').to_string(),
            model: cfg.llm_model.clone(),
            sampling: Sampling { temperature: cfg.llm_temperature, seed: cfg.llm_seed, max_tokens: cfg.llm_max_tokens },
            tokens_per_turn: cfg.llm_tokens_per_turn,
            max_tokens_cap: cfg.llm_max_tokens_cap.max(cfg.llm_max_tokens),
            response_format: ResponseFormat::parse(&cfg.llm_response_format)?,
            disable_thinking: cfg.llm_disable_thinking,
            timeout_secs: cfg.llm_timeout_secs,
            max_retries: cfg.llm_max_retries,
            retry_backoff_ms: cfg.llm_retry_backoff_ms,
            max_input_chars: cfg.max_input_chars,
        })
    }

    /// The completion budget of a call over `items` turns (or pairs):
    /// `max_tokens + tokens_per_turn × items`, at most the cap.
    pub fn budget(&self, items: usize) -> u32 {
        let per = u64::from(self.tokens_per_turn).saturating_mul(items as u64);
        let want = u64::from(self.sampling.max_tokens).saturating_add(per);
        u32::try_from(want).unwrap_or(u32::MAX).min(self.max_tokens_cap.max(self.sampling.max_tokens))
    }

    /// Settings from the config, then MEMFORM_LLM_PROVIDER, MEMFORM_LLM_URL
    /// and MEMFORM_LLM_MODEL where set and non-empty.
    pub fn from_config_and_env(cfg: &Shared) -> Result<Self> {
        Self::from_config_and_vars(cfg, |k| std::env::var(k).ok())
    }

    /// As [`LlmSettings::from_config_and_env`], reading variables through `var`.
    pub fn from_config_and_vars(cfg: &Shared, var: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let mut s = Self::from_config(cfg)?;
        let get = |k: &str| var(k).filter(|v| !v.trim().is_empty());
        if let Some(p) = get("MEMFORM_LLM_PROVIDER") {
            s.provider = Provider::parse(&p)?;
        }
        if let Some(u) = get("MEMFORM_LLM_URL") {
            s.url = u.trim().trim_end_matches('/').to_string();
        }
        if let Some(m) = get("MEMFORM_LLM_MODEL") {
            s.model = m.trim().to_string();
        }
        Ok(s)
    }
}

fn serialize_redacted_url<S: serde::Serializer>(url: &str, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&crate::redact::url(url))
}

/// One progress report, sent after every answered call (live or fixture).
/// Counters are totals since the boundary was built.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LlmProgress {
    /// The stage of the call just answered.
    pub stage: Option<Stage>,
    pub source: Option<AnswerSource>,
    pub live_calls: u64,
    pub fixture_hits: u64,
    /// Tokens of all answered calls (live and replayed).
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Wall time of the call just answered.
    pub last_wall: Duration,
    /// Wall time of all live calls.
    pub live_wall: Duration,
}

/// Called after every answered call; the CLI turns it into a progress bar.
pub type ProgressHook = Arc<dyn Fn(&LlmProgress) + Send + Sync>;

mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_overrides_config_and_blank_values_are_ignored() {
        let cfg = Shared::default();
        let s = LlmSettings::from_config_and_vars(&cfg, |k| match k {
            "MEMFORM_LLM_PROVIDER" => Some("Ollama".into()),
            "MEMFORM_LLM_URL" => Some("http://h:1/".into()),
            "MEMFORM_LLM_MODEL" => Some("  ".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(s.provider, Provider::Ollama);
        assert_eq!(s.url, "http://h:1");
        assert_eq!(s.model, cfg.llm_model);
        let err =
            LlmSettings::from_config_and_vars(&cfg, |k| (k == "MEMFORM_LLM_PROVIDER").then(|| "gpt".to_string())).unwrap_err().to_string();
        assert!(err.contains("unknown llm provider"), "{err}");
    }

    #[test]
    fn settings_reject_bad_values() {
        let cfg = Shared { llm_timeout_secs: 0.0, ..Shared::default() };
        assert!(LlmSettings::from_config(&cfg).is_err());
        let cfg = Shared { llm_response_format: "xml".into(), ..Shared::default() };
        let err = LlmSettings::from_config(&cfg).unwrap_err().to_string();
        assert!(err.contains("llm_response_format"), "{err}");
    }
}
