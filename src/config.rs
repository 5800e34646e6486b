//! The configuration's shared keys, the ones every profile reads (the top
//! level of a config file), and what every section of it is built from: a
//! numeric key's [`Bound`], the [`Section`] a profile owns, key spellings
//! with a did-you-mean. The whole configuration, these keys plus one typed
//! section per profile, is `pipeline::Config`: a section's struct belongs to
//! its profile's module, above this one (ARCHITECTURE.md, "Layers").

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The shared keys: extraction caps, write flags, the store's search, the QA
/// instant, the embedder and the LLM boundary. Field docs are the reference
/// for each key; every numeric key's allowed range is in [`BOUNDS`];
/// `memform config` prints the defaults, each numeric one with its range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Shared {
    /// The pipeline profile: which seed system's composition of stages runs
    /// (`memform profiles` lists them).
    pub profile: String,

    // ---- stage 1: extraction caps (docs/pipeline.md, stage 1) ----
    /// Most facts kept per episode (ungraph mode).
    pub max_facts: usize,
    /// Most facts kept per episode when the extractor returns a graph
    /// (entities + relationships), as LLM mode does.
    pub max_facts_graph: usize,
    /// Most entities kept per episode.
    pub max_entities: usize,
    /// Confidence of every candidate `--extract gold` makes from a gold fact.
    pub gold_confidence: f64,
    /// Facts shorter than this (characters) are rejected.
    pub min_fact_chars: usize,
    /// Facts longer than this are truncated.
    pub max_fact_chars: usize,
    /// Objects longer than this are truncated.
    pub max_object_chars: usize,
    /// Source quotes longer than this are truncated.
    pub max_quote_chars: usize,
    /// Episode transcripts longer than this are truncated before extraction.
    pub max_input_chars: usize,

    // ---- stage 5: write ----
    /// Safety gate: facts below this confidence are not written
    /// (`low_fact_confidence`).
    pub min_fact_confidence_for_write: f64,
    /// Flag `enabled`: when false nothing is processed (the run records the
    /// evidence and says so in a warning per episode).
    pub enabled: bool,
    /// Flag `shadowMode`: everything runs and is audited, only the audit is written.
    pub shadow_mode: bool,
    /// Flag `allowUpdateDelete`: without it invalidations are blocked (controlled mode).
    pub allow_update_delete: bool,
    /// Flag `mutationsFrozen`: like shadow mode.
    pub mutations_frozen: bool,
    /// Flag `autonomous.frozen`: stops Signet's maintenance schedule only;
    /// it has no effect on formation (accepted and recorded).
    pub autonomous_frozen: bool,

    // ---- the store's hybrid search (docs/search.md) ----
    /// Weight of the vector score when both legs scored a fact:
    /// `alpha·vector + (1 − alpha)·bm25` (Signet's default 0.7).
    pub search_alpha: f64,
    /// Merged scores below this are dropped (Signet's default 0.1).
    pub search_min_score: f64,
    /// Most facts a search returns (Signet's decision stage keeps 5). The QA
    /// evaluation asks for 10 whatever this is.
    pub search_top_k: usize,
    /// Each leg fetches `top_k × search_leg_factor` facts before the merge
    /// (Signet's decision stage fetches twice its 5).
    pub search_leg_factor: usize,
    /// The QA evaluation's instant (docs/metrics.md, "Retrieval (QA)"):
    /// `final` (the final store) or `question` (the facts live when each item
    /// with an `asked_at` is asked).
    pub qa_as_of: String,
    /// The QA evaluation's retriever, the same for every source
    /// (docs/search.md, "Retrievers"): `and` (Signet's hybrid, keyword leg
    /// AND), `or` (keyword leg OR) or `vector` (the vector leg alone).
    pub qa_retriever: String,

    // ---- embedder ----
    /// `hashed` (built-in, deterministic, no model) or a real embedder.
    pub embedder: String,
    /// Dimensions of the hashed n-gram embedder.
    pub hashed_dims: usize,

    // ---- LLM mode (the API key is read from MEMFORM_LLM_API_KEY only, never from here) ----
    /// `openai` (any OpenAI-compatible server, e.g. llama.cpp's) or `ollama`.
    /// Env MEMFORM_LLM_PROVIDER overrides.
    pub llm_provider: String,
    /// Base URL of the server, without the `/v1/...` or `/api/...` path.
    /// Env MEMFORM_LLM_URL overrides. Serialised (in `run.json`, the
    /// report, comparisons) without its userinfo: `http://[redacted]@host`.
    #[serde(serialize_with = "crate::redact::serialize_url")]
    pub llm_url: String,
    /// Model name sent to the server; part of every fixture key and of the
    /// fixture directory's name. Env MEMFORM_LLM_MODEL overrides.
    pub llm_model: String,
    /// Sampling temperature (part of the fixture key).
    pub llm_temperature: f64,
    /// Sampling seed (part of the fixture key).
    pub llm_seed: u64,
    /// The completion budget of a call before it scales with the episode
    /// (part of the fixture key): an extraction call may generate
    /// `llm_max_tokens + llm_tokens_per_turn × turns` tokens, a judge call
    /// `llm_max_tokens + llm_tokens_per_turn × pairs`, at most
    /// `llm_max_tokens_cap`. A truncated answer is asked again once with
    /// twice the budget (at most the cap) before its complete items are used
    /// (warning `llm_truncated_json`).
    pub llm_max_tokens: u32,
    /// Tokens added to the completion budget per turn shown (per pair judged).
    pub llm_tokens_per_turn: u32,
    /// The largest completion budget of any call, retries included.
    pub llm_max_tokens_cap: u32,
    /// How an OpenAI-compatible server is asked for JSON: `json_schema`
    /// (OpenAI's `response_format.json_schema`), `json_object` (llama.cpp's
    /// `{"type":"json_object","schema":…}`) or `none`. Ollama always gets `format`.
    pub llm_response_format: String,
    /// Ask the server not to think before answering: OpenAI-compatible
    /// servers get `chat_template_kwargs: {enable_thinking: false}` (llama.cpp's
    /// `llama-server`, vLLM, SGLang; llama-cpp-python's server ignores it),
    /// Ollama gets `think: false`. Set `false` for OpenAI's own API, which
    /// rejects the unknown field.
    pub llm_disable_thinking: bool,
    /// Seconds one HTTP call may take, answer included.
    pub llm_timeout_secs: f64,
    /// Extra attempts after a timeout or a 5xx answer.
    pub llm_max_retries: u32,
    /// Wait before the first retry; doubled for each further one.
    pub llm_retry_backoff_ms: u64,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            profile: DEFAULT_PROFILE.to_string(),
            max_facts: 20,
            max_facts_graph: 12,
            gold_confidence: 0.9,
            max_entities: 50,
            min_fact_chars: 10,
            max_fact_chars: 2000,
            max_object_chars: 500,
            max_quote_chars: 200,
            max_input_chars: 12_000,
            min_fact_confidence_for_write: 0.7,
            enabled: true,
            shadow_mode: false,
            allow_update_delete: true,
            mutations_frozen: false,
            autonomous_frozen: false,
            search_alpha: 0.7,
            search_min_score: 0.1,
            search_top_k: 5,
            search_leg_factor: 2,
            qa_as_of: "final".to_string(),
            qa_retriever: "and".to_string(),
            embedder: "hashed".to_string(),
            hashed_dims: 256,
            llm_provider: "openai".to_string(),
            llm_url: "http://127.0.0.1:8765".to_string(),
            llm_model: "SmolLM2-135M-Instruct.Q4_1".to_string(),
            llm_temperature: 0.0,
            llm_seed: 42,
            llm_max_tokens: 128,
            llm_tokens_per_turn: 32,
            llm_max_tokens_cap: 2048,
            llm_response_format: "json_object".to_string(),
            llm_disable_thinking: true,
            llm_timeout_secs: 300.0,
            llm_max_retries: 2,
            llm_retry_backoff_ms: 500,
        }
    }
}

/// The write mode derived from the five flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum WriteMode {
    /// Everything runs and is audited; nothing but the audit is written.
    Shadow,
    /// Additions only; invalidations are blocked and audited.
    Controlled,
    /// Invalidations applied; pinned facts are skipped.
    Full,
}

impl WriteMode {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "shadow" => Ok(WriteMode::Shadow),
            "controlled" => Ok(WriteMode::Controlled),
            "full" => Ok(WriteMode::Full),
            other => Err(Error::Config(format!("unknown write mode {other:?} (expected shadow, controlled or full)"))),
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            WriteMode::Shadow => "shadow",
            WriteMode::Controlled => "controlled",
            WriteMode::Full => "full",
        }
    }
}

/// The profile a config names when it names none (the registry's first).
pub const DEFAULT_PROFILE: &str = "soda";

impl Shared {
    /// Shadow in shadow mode or with mutations frozen; else controlled when
    /// updates/deletes are not allowed; else full. `enabled` = false is not
    /// a write mode (nothing runs, see [`Shared::enabled`]) and
    /// `autonomous_frozen` does not touch formation.
    pub fn write_mode(&self) -> WriteMode {
        if self.shadow_mode || self.mutations_frozen {
            WriteMode::Shadow
        } else if !self.allow_update_delete {
            WriteMode::Controlled
        } else {
            WriteMode::Full
        }
    }

    /// Sets the flags so that [`Shared::write_mode`] returns `mode`.
    /// `enabled` and `autonomous_frozen` are no part of a write mode and
    /// keep their values.
    pub fn set_write_mode(&mut self, mode: WriteMode) {
        self.mutations_frozen = false;
        self.shadow_mode = mode == WriteMode::Shadow;
        self.allow_update_delete = mode == WriteMode::Full;
    }

    /// `key`'s value within its range, when it has one.
    pub fn check_key(&self, key: &str) -> Result<()> {
        let values = table_of(self).map_err(Error::Config)?;
        match BOUNDS.iter().find(|b| b.key == key) {
            Some(b) => b.check(values.get(key)).map_err(Error::Config),
            None => Ok(()),
        }
    }

    /// Every numeric key within its range, then the relations between keys.
    pub fn check(&self) -> std::result::Result<(), (&'static str, String)> {
        if self.llm_seed > i64::MAX as u64 {
            return Err(("llm_seed", format!("llm_seed = {}: must be within 0..={}", self.llm_seed, i64::MAX)));
        }
        check_bounds(&table_of(self).map_err(|m| ("config", m))?, BOUNDS)?;
        self.check_relations().map_err(|m| ("config", m))
    }

    fn check_relations(&self) -> std::result::Result<(), String> {
        if self.llm_max_tokens > self.llm_max_tokens_cap {
            return Err(format!("llm_max_tokens = {} is above llm_max_tokens_cap = {}", self.llm_max_tokens, self.llm_max_tokens_cap));
        }
        if !["final", "question"].contains(&self.qa_as_of.as_str()) {
            return Err(format!("qa_as_of = {:?}: unknown value, expected \"final\" or \"question\"", self.qa_as_of));
        }
        if !["and", "or", "vector"].contains(&self.qa_retriever.as_str()) {
            return Err(format!("qa_retriever = {:?}: unknown value, expected \"and\", \"or\" or \"vector\"", self.qa_retriever));
        }
        if self.min_fact_chars > self.max_fact_chars {
            return Err(format!("min_fact_chars = {} is above max_fact_chars = {}", self.min_fact_chars, self.max_fact_chars));
        }
        Ok(())
    }
}

/// A profile's typed section of the config (`[soda]`, `[signet]`, …): a
/// struct its profile's module owns, with its defaults, its numeric keys'
/// ranges and the relations between them. The section is named after the
/// profile that reads it.
pub trait Section: Serialize + DeserializeOwned + Default + Clone + PartialEq {
    /// The section's (and its profile's) name.
    const NAME: &'static str;
    /// Every numeric key's range (a test checks each numeric key is here).
    const BOUNDS: &'static [Bound];
    /// Keys of the flat config that preceded sections, and the key of this
    /// section each now is (accepted, with a deprecation warning).
    const FLAT_ALIASES: &'static [(&'static str, &'static str)];
    /// The relations between the section's keys; the first one broken.
    fn check_relations(&self) -> std::result::Result<(), String> {
        Ok(())
    }
    /// Every numeric key within its range, then the relations.
    fn check(&self) -> std::result::Result<(), (&'static str, String)> {
        check_bounds(&table_of(self).map_err(|m| (Self::NAME, m))?, Self::BOUNDS)?;
        self.check_relations().map_err(|m| (Self::NAME, m))
    }
}

/// `value` as a TOML table (floats keep NaN and infinities).
pub fn table_of<T: Serialize>(value: &T) -> std::result::Result<toml::Table, String> {
    toml::Table::try_from(value).map_err(|e| format!("serialise config: {e}"))
}

/// The first key of `table` outside its range in `bounds`.
pub fn check_bounds(table: &toml::Table, bounds: &[Bound]) -> std::result::Result<(), (&'static str, String)> {
    for b in bounds {
        b.check(table.get(b.key)).map_err(|m| (b.key, m))?;
    }
    Ok(())
}

/// The candidate closest to `word` by edit distance, when it is close
/// enough to be a likely misspelling (at most a third of its length, and
/// at most 3 edits).
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).clamp(1, 3);
    candidates.into_iter().map(|c| (edit_distance(word, c), c)).filter(|(d, _)| *d <= limit).min_by_key(|(d, c)| (*d, *c)).map(|(_, c)| c)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// A numeric key's allowed values, both ends included.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Range {
    Int(u64, u64),
    Float(f64, f64),
}

impl std::fmt::Display for Range {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Range::Int(lo, hi) => write!(f, "{lo}..={hi}"),
            Range::Float(lo, hi) => write!(f, "[{lo:?}, {hi:?}]"),
        }
    }
}

/// One numeric key and its range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    pub key: &'static str,
    pub range: Range,
}

impl Bound {
    /// `Err("key = value: must be within RANGE")` unless `value` is in range.
    pub fn check(&self, value: Option<&toml::Value>) -> std::result::Result<(), String> {
        let Some(v) = value else { return Err(format!("{}: missing", self.key)) };
        let ok = match (self.range, v) {
            (Range::Int(lo, hi), toml::Value::Integer(x)) => u64::try_from(*x).is_ok_and(|x| (lo..=hi).contains(&x)),
            // NaN is in no range.
            (Range::Float(lo, hi), toml::Value::Float(x)) => (lo..=hi).contains(x),
            _ => false,
        };
        if ok {
            return Ok(());
        }
        let shown = match v {
            toml::Value::Float(f) => format!("{f:?}"),
            other => other.to_string(),
        };
        Err(format!("{} = {shown}: must be within {}", self.key, self.range))
    }
}

pub const fn int(key: &'static str, lo: u64, hi: u64) -> Bound {
    Bound { key, range: Range::Int(lo, hi) }
}

pub const fn float(key: &'static str, lo: f64, hi: f64) -> Bound {
    Bound { key, range: Range::Float(lo, hi) }
}

/// Every shared numeric key's range. Caps keep one run's memory and time bounded
/// (a hashed vector of `hashed_dims` floats per text, `llm_max_retries`
/// waits of at most a minute each); cosine thresholds and confidences are
/// in [0, 1]. A test checks that every numeric key is here.
pub const BOUNDS: &[Bound] = &[
    int("max_facts", 1, 1000),
    int("max_facts_graph", 1, 1000),
    int("max_entities", 1, 10_000),
    float("gold_confidence", 0.0, 1.0),
    int("min_fact_chars", 0, 100_000),
    int("max_fact_chars", 1, 100_000),
    int("max_object_chars", 1, 100_000),
    int("max_quote_chars", 1, 100_000),
    int("max_input_chars", 1, 1_000_000),
    float("min_fact_confidence_for_write", 0.0, 1.0),
    float("search_alpha", 0.0, 1.0),
    float("search_min_score", 0.0, 1.0),
    int("search_top_k", 1, 1000),
    int("search_leg_factor", 1, 100),
    int("hashed_dims", 1, 8192),
    float("llm_temperature", 0.0, 2.0),
    // TOML integers are signed 64-bit.
    int("llm_seed", 0, i64::MAX as u64),
    int("llm_max_tokens", 1, 131_072),
    int("llm_tokens_per_turn", 0, 4096),
    int("llm_max_tokens_cap", 1, 131_072),
    float("llm_timeout_secs", 0.1, 3600.0),
    int("llm_max_retries", 0, 10),
    int("llm_retry_backoff_ms", 0, 60_000),
];

/// `line N: ` for the TOML line that sets `key` (in `section`, when given)
/// in a TOML text; empty if none does.
pub fn key_line(text: &str, section: Option<&str>, key: &str) -> String {
    let mut current: Option<String> = None;
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if let Some(name) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            current = Some(name.trim().to_string());
            continue;
        }
        let Some((k, _)) = t.split_once('=') else { continue };
        let k = k.trim();
        let hit = match section {
            Some(s) => (current.as_deref() == Some(s) && k == key) || (current.is_none() && k == format!("{s}.{key}")),
            None => current.is_none() && k == key,
        };
        if hit {
            return format!("line {}: ", i + 1);
        }
    }
    String::new()
}

/// `line N: key: ` for the TOML line an error points at.
pub fn span_line(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    let Some(r) = span else { return String::new() };
    let start = r.start.min(text.len());
    let line_no = text[..start].matches('\n').count() + 1;
    let line = text.lines().nth(line_no - 1).unwrap_or("");
    match line.split_once('=') {
        Some((key, _)) if !key.trim().is_empty() => format!("line {line_no}: {}: ", key.trim()),
        _ => format!("line {line_no}: "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_mode_from_flags() {
        let mut c = Shared::default();
        assert_eq!(c.write_mode(), WriteMode::Full);
        c.autonomous_frozen = true;
        assert_eq!(c.write_mode(), WriteMode::Full, "autonomous.frozen only stops maintenance");
        c.enabled = false;
        assert_eq!(c.write_mode(), WriteMode::Full, "enabled = false runs nothing; it is no write mode");
        c.allow_update_delete = false;
        assert_eq!(c.write_mode(), WriteMode::Controlled);
        c.mutations_frozen = true;
        assert_eq!(c.write_mode(), WriteMode::Shadow);
        for m in [WriteMode::Shadow, WriteMode::Controlled, WriteMode::Full] {
            c.set_write_mode(m);
            assert_eq!(c.write_mode(), m);
        }
    }

    #[test]
    fn did_you_mean_finds_close_spellings_only() {
        let keys = ["near_dup_threshold", "max_facts", "embedder"];
        assert_eq!(did_you_mean("near_dup_treshold", keys), Some("near_dup_threshold"));
        assert_eq!(did_you_mean("max_fact", keys), Some("max_facts"));
        assert_eq!(did_you_mean("embeder", keys), Some("embedder"));
        assert_eq!(did_you_mean("zzz", keys), None);
        assert_eq!(did_you_mean("profile", keys), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn key_line_finds_flat_dotted_and_sectioned_keys() {
        let text = "max_facts = 5\nsoda.near_dup_threshold = 0.9\n[memorix]\nhigh_min = 0.8\n";
        assert_eq!(key_line(text, None, "max_facts"), "line 1: ");
        assert_eq!(key_line(text, Some("soda"), "near_dup_threshold"), "line 2: ");
        assert_eq!(key_line(text, Some("memorix"), "high_min"), "line 4: ");
        assert_eq!(key_line(text, None, "high_min"), "");
    }
}
