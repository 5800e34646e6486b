//! Every threshold and switch of the pipeline, with the seeds' figures as
//! defaults. Loaded from TOML, overridden with `--set key=value`, and written
//! whole into each run's manifest.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The pipeline's configuration. Field docs are the reference for each key;
/// every numeric key's allowed range is in [`BOUNDS`]; `memform config`
/// prints the defaults, each numeric one with its range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
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

    // ---- stage 1: value score (noise filter) ----
    /// Value score at or above which a fact is `core`.
    pub value_core_min: f64,
    /// Value score at or above which a fact is `contextual`; below it the
    /// fact is `ephemeral`, dropped and counted as noise rejected.
    pub value_contextual_min: f64,

    // ---- stage 2: entity resolution ----
    /// Cosine at or above which an extracted entity merges into the nearest
    /// existing entity of the same type. Depends on the embedder.
    pub entity_merge_threshold: f64,

    // ---- stage 3: dedupe ----
    /// Cosine at or above which a candidate is a near duplicate of a live
    /// fact or an earlier candidate of the batch. Depends on the embedder.
    pub near_dup_threshold: f64,
    /// `false` turns all of stage 3 off, exact and near duplicates and
    /// closures alike: every candidate past the noise filter survives it
    /// (for experiments; the seeds always dedupe).
    pub dedup_enabled: bool,

    // ---- stage 4: judge ----
    /// Lower end of the cosine band [min, near_dup_threshold) in which a
    /// candidate with the same subject and a different object is paired with
    /// a live fact. Depends on the embedder.
    pub contradiction_band_min: f64,
    /// Shared tokens needed for a negation/antonym conflict verdict.
    pub antonym_min_shared_tokens: usize,
    /// Count only content words towards `antonym_min_shared_tokens`: no
    /// stopword, no word of the subject both facts share; two facts with
    /// the same subject and object then need no shared word (memform's
    /// own, opt-in; the default `false` counts every word, as Signet's
    /// detector does).
    pub polarity_content_words_only: bool,
    /// The rules stand-ins decide on evidence of change (memform's own,
    /// docs/pipeline.md "Evidence of change"): a fact is replaced only by
    /// the same slot with another value, an explicit ending or a polarity
    /// flip of the same proposition, and restatements merge (stage 3, the
    /// signet NONE, the memorix contradiction). `false` restores the seeds'
    /// rules as written: any negation or antonym with enough shared words
    /// replaces, and only exact content, s|p|o or the cosine merge.
    pub evidence_of_change: bool,
    /// Most live facts a candidate is paired with (the nearest by cosine,
    /// ties to the earlier fact); the rest are not judged.
    pub max_pairs_per_candidate: usize,
    /// Facts below this confidence are stored but never destroy a fact.
    /// (Not given a figure by the seeds; memform's choice.)
    pub min_trusted_confidence: f64,
    /// Predicates that hold one object at a time: a different object replaces
    /// the old one (verdict `old`).
    pub single_valued_predicates: Vec<String>,
    /// Predicates that hold many objects at once: a candidate with one is
    /// paired with a live fact only to end a relationship or on a polarity
    /// conflict. (The rules judge treats every predicate not in
    /// `single_valued_predicates` as multi-valued.) A predicate may not be
    /// in both lists.
    pub multi_valued_predicates: Vec<String>,
    /// Antonym pairs for the polarity conflict rule.
    pub antonyms: Vec<[String; 2]>,
    /// Preference polarity pairing (memform's addition, `soda` profile): a
    /// candidate with the same subject and object as a current fact and a
    /// predicate of opposite polarity (love/like/enjoy/prefer against
    /// hate/dislike/avoid, or negated against plain) is paired with it, and
    /// the rules judge lets the later statement win.
    pub preference_polarity_pairing: bool,

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

    // ---- the memorix profile (docs/profiles.md) ----
    /// Resolve: the best hit's own search score at or above which the
    /// observation is a near duplicate (evolve when richer, else discard).
    pub memorix_duplicate_min: f64,
    /// Resolve: the combined score at or above which the topic is the same
    /// (evolve on a contradiction, merge when richer, else discard).
    pub memorix_high_min: f64,
    /// Resolve: the combined score at or above which, with an entity match,
    /// an observation with more facts merges.
    pub memorix_medium_min: f64,
    /// Evaluate: value score at or above which an observation is core.
    pub memorix_core_min: f64,
    /// Evaluate: value score at or above which it is contextual (else ephemeral).
    pub memorix_contextual_min: f64,
    /// The lexical search: the least score (Dice of word sets) of a hit.
    pub memorix_search_min: f64,
    /// What Resolve searches with: `lexical` (Dice of word sets over the
    /// conversation's memories, the default) or `store` (the store's hybrid
    /// search, `Store::search`). See docs/profiles.md.
    pub memorix_search: String,
    /// What becomes of an ephemeral observation: `discard` (not stored) or
    /// `decay` (stored with the decay flag, as Memorix's own store keeps it
    /// with a halved retention).
    pub ephemeral_policy: String,

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
    /// Env MEMFORM_LLM_URL overrides.
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

impl Config {
    /// Whether `predicate` (trimmed, case-insensitive) is in `single_valued_predicates`.
    pub fn is_single_valued(&self, predicate: &str) -> bool {
        let p = predicate.trim();
        self.single_valued_predicates.iter().any(|s| s.trim().eq_ignore_ascii_case(p))
    }
}

impl Default for Config {
    fn default() -> Self {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        Config {
            profile: crate::pipeline::profiles::DEFAULT.to_string(),
            max_facts: 20,
            max_facts_graph: 12,
            gold_confidence: 0.9,
            max_entities: 50,
            min_fact_chars: 10,
            max_fact_chars: 2000,
            max_object_chars: 500,
            max_quote_chars: 200,
            max_input_chars: 12_000,
            value_core_min: 0.7,
            value_contextual_min: 0.4,
            memorix_duplicate_min: 0.9,
            memorix_high_min: 0.75,
            memorix_medium_min: 0.5,
            memorix_core_min: 0.6,
            memorix_contextual_min: 0.35,
            memorix_search_min: 0.1,
            memorix_search: "lexical".into(),
            ephemeral_policy: "discard".into(),
            entity_merge_threshold: 0.88,
            near_dup_threshold: 0.95,
            dedup_enabled: true,
            contradiction_band_min: 0.80,
            antonym_min_shared_tokens: 2,
            polarity_content_words_only: false,
            evidence_of_change: true,
            max_pairs_per_candidate: 16,
            min_trusted_confidence: 0.8,
            single_valued_predicates: s(&[
                "works at",
                "works as",
                "lives in",
                "is married to",
                "is engaged to",
                "is dating",
                "has car budget of",
                "has tv budget of",
                "has budget of",
                "is named",
                "is aged",
                "drives",
                "uses version",
                "has role",
                "studies at",
                "has birthday",
            ]),
            multi_valued_predicates: s(&[
                "likes",
                "loves",
                "enjoys",
                "visited",
                "owns",
                "has",
                "has sister",
                "has brother",
                "has friend",
                "has pet",
                "plays",
                "went to",
                "attended",
                "dislikes",
                "hates",
                "states",
            ]),
            antonyms: [
                ("enabled", "disabled"),
                ("enable", "disable"),
                ("allow", "deny"),
                ("allowed", "denied"),
                ("love", "hate"),
                ("loves", "hates"),
                ("like", "dislike"),
                ("likes", "dislikes"),
                ("on", "off"),
                ("true", "false"),
                ("yes", "no"),
                ("always", "never"),
                ("accept", "reject"),
                ("include", "exclude"),
            ]
            .iter()
            .map(|(a, b)| [a.to_string(), b.to_string()])
            .collect(),
            preference_polarity_pairing: true,
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

impl Config {
    /// Shadow in shadow mode or with mutations frozen; else controlled when
    /// updates/deletes are not allowed; else full. `enabled` = false is not
    /// a write mode (nothing runs, see [`Config::enabled`]) and
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

    /// Sets the flags so that [`Config::write_mode`] returns `mode`.
    /// `enabled` and `autonomous_frozen` are no part of a write mode and
    /// keep their values.
    pub fn set_write_mode(&mut self, mode: WriteMode) {
        self.mutations_frozen = false;
        self.shadow_mode = mode == WriteMode::Shadow;
        self.allow_update_delete = mode == WriteMode::Full;
    }

    /// Reads a TOML file of overrides. A key outside its range is an error
    /// naming the file, the line and the range (relations between keys are
    /// checked by [`Config::validate`], once every override is in).
    pub fn from_toml_file(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        crate::error::reject_bom(path, &bytes)?;
        let text = String::from_utf8(bytes)
            .map_err(|e| Error::input(path, format!("not UTF-8 (invalid byte at offset {})", e.utf8_error().valid_up_to())))?;
        Self::from_toml_str(path, &text)
    }

    /// [`Config::from_toml_file`] on text already read; `path` names it in errors.
    pub fn from_toml_str(path: &Path, text: &str) -> Result<Self> {
        let cfg: Config = toml::from_str(text).map_err(|e| Error::input(path, format!("{}{}", span_line(text, e.span()), e.message())))?;
        if let Err((key, message)) = cfg.check_ranges() {
            return Err(Error::input(path, format!("{}{message}", key_line(text, key))));
        }
        Ok(cfg)
    }

    /// Applies one `key=value` override; the value is parsed as TOML (so
    /// `0.9`, `true`, `"hashed"`, `["a","b"]`), falling back to a bare string.
    pub fn set(&mut self, assignment: &str) -> Result<()> {
        self.set_from("--set", assignment)
    }

    /// [`Config::set`] for an override given by `flag` (`--set`, `--grid`,
    /// `--set-a`…), which errors name.
    pub fn set_from(&mut self, flag: &str, assignment: &str) -> Result<()> {
        let (key, value) = assignment.split_once('=').ok_or_else(|| Error::Config(format!("{flag} {assignment:?}: expected key=value")))?;
        let key = key.trim();
        let value = value.trim();
        let mut table = toml::Table::try_from(&*self).map_err(|e| Error::Config(format!("serialise config: {e}")))?;
        let Some(old) = table.get(key) else {
            return Err(Error::Config(crate::error::one_line(&format!("{flag} {key}: unknown config key"))));
        };
        let parsed: toml::Value = toml::from_str::<toml::Table>(&format!("v = {value}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(value.to_string()));
        let parsed = match (old, parsed) {
            (toml::Value::Float(_), toml::Value::Integer(i)) => toml::Value::Float(i as f64),
            (_, p) => p,
        };
        table.insert(key.to_string(), parsed);
        *self = Config::deserialize(toml::Value::Table(table))
            .map_err(|e| Error::Config(crate::error::one_line(&format!("{flag} {key}={value}: {}", e.message()))))?;
        Ok(())
    }

    /// Every numeric key within its range ([`BOUNDS`]), then the relations
    /// between keys. The first violation is the error.
    pub fn validate(&self) -> Result<()> {
        self.check_ranges().map_err(|(_, message)| Error::Config(message))?;
        self.check_relations().map_err(Error::Config)
    }

    /// `key`'s value within its range, when it has one.
    pub fn check_key(&self, key: &str) -> Result<()> {
        let values = self.numeric_values().map_err(|(_, m)| Error::Config(m))?;
        match BOUNDS.iter().find(|b| b.key == key) {
            Some(b) => b.check(values.get(key)).map_err(Error::Config),
            None => Ok(()),
        }
    }

    /// The first key outside its range: the key and the message.
    fn check_ranges(&self) -> std::result::Result<(), (&'static str, String)> {
        let values = self.numeric_values()?;
        for b in BOUNDS {
            b.check(values.get(b.key)).map_err(|m| (b.key, m))?;
        }
        Ok(())
    }

    /// The config as a TOML table (floats keep NaN and infinities).
    fn numeric_values(&self) -> std::result::Result<toml::Table, (&'static str, String)> {
        if self.llm_seed > i64::MAX as u64 {
            return Err(("llm_seed", format!("llm_seed = {}: must be within 0..={}", self.llm_seed, i64::MAX)));
        }
        toml::Table::try_from(self).map_err(|e| ("config", format!("serialise config: {e}")))
    }

    fn check_relations(&self) -> std::result::Result<(), String> {
        if self.value_contextual_min > self.value_core_min {
            return Err(format!(
                "value_contextual_min = {:?} is above value_core_min = {:?} (the tiers are core >= contextual)",
                self.value_contextual_min, self.value_core_min
            ));
        }
        if self.llm_max_tokens > self.llm_max_tokens_cap {
            return Err(format!("llm_max_tokens = {} is above llm_max_tokens_cap = {}", self.llm_max_tokens, self.llm_max_tokens_cap));
        }
        if self.memorix_contextual_min > self.memorix_core_min {
            return Err(format!(
                "memorix_contextual_min = {:?} is above memorix_core_min = {:?} (the categories are core >= contextual)",
                self.memorix_contextual_min, self.memorix_core_min
            ));
        }
        if self.memorix_medium_min > self.memorix_high_min {
            return Err(format!(
                "memorix_medium_min = {:?} is above memorix_high_min = {:?}",
                self.memorix_medium_min, self.memorix_high_min
            ));
        }
        if !["lexical", "store"].contains(&self.memorix_search.as_str()) {
            return Err(format!("memorix_search = {:?}: unknown search, expected \"lexical\" or \"store\"", self.memorix_search));
        }
        if !["discard", "decay"].contains(&self.ephemeral_policy.as_str()) {
            return Err(format!("ephemeral_policy = {:?}: unknown policy, expected \"discard\" or \"decay\"", self.ephemeral_policy));
        }
        if !["final", "question"].contains(&self.qa_as_of.as_str()) {
            return Err(format!("qa_as_of = {:?}: unknown value, expected \"final\" or \"question\"", self.qa_as_of));
        }
        if self.min_fact_chars > self.max_fact_chars {
            return Err(format!("min_fact_chars = {} is above max_fact_chars = {}", self.min_fact_chars, self.max_fact_chars));
        }
        if self.contradiction_band_min > self.near_dup_threshold {
            return Err(format!(
                "contradiction_band_min = {:?} is above near_dup_threshold = {:?}",
                self.contradiction_band_min, self.near_dup_threshold
            ));
        }
        let norm = |p: &String| p.trim().to_lowercase();
        let multi: std::collections::BTreeSet<String> = self.multi_valued_predicates.iter().map(norm).collect();
        if let Some(p) = self.single_valued_predicates.iter().find(|p| multi.contains(&norm(p))) {
            return Err(format!("predicate {:?} is in both single_valued_predicates and multi_valued_predicates", p.trim()));
        }
        crate::pipeline::profiles::by_name(&self.profile).map(drop).map_err(|e| match e {
            Error::Config(m) => m,
            other => other.to_string(),
        })
    }
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
    fn check(&self, value: Option<&toml::Value>) -> std::result::Result<(), String> {
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

const fn int(key: &'static str, lo: u64, hi: u64) -> Bound {
    Bound { key, range: Range::Int(lo, hi) }
}

const fn float(key: &'static str, lo: f64, hi: f64) -> Bound {
    Bound { key, range: Range::Float(lo, hi) }
}

/// Every numeric key's range. Caps keep one run's memory and time bounded
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
    float("value_core_min", 0.0, 1.0),
    float("value_contextual_min", 0.0, 1.0),
    float("memorix_duplicate_min", 0.0, 1.0),
    float("memorix_high_min", 0.0, 1.0),
    float("memorix_medium_min", 0.0, 1.0),
    float("memorix_core_min", 0.0, 1.0),
    float("memorix_contextual_min", 0.0, 1.0),
    float("memorix_search_min", 0.0, 1.0),
    float("entity_merge_threshold", 0.0, 1.0),
    float("near_dup_threshold", 0.0, 1.0),
    float("contradiction_band_min", 0.0, 1.0),
    int("antonym_min_shared_tokens", 0, 100),
    float("min_trusted_confidence", 0.0, 1.0),
    int("max_pairs_per_candidate", 1, 1000),
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

/// The default configuration as TOML, each numeric key followed by its
/// range as a comment (what `memform config` prints).
pub fn documented_defaults() -> Result<String> {
    let text = toml::to_string_pretty(&Config::default()).map_err(|e| Error::Config(format!("serialise config: {e}")))?;
    let mut out = String::from("# memform config: every key with its default; numeric keys with their allowed range.\n");
    for line in text.lines() {
        out.push_str(line);
        let key = line.split_once(" = ").map(|(k, _)| k.trim());
        if let Some(b) = key.and_then(|k| BOUNDS.iter().find(|b| b.key == k)) {
            out.push_str(&format!("  # {}", b.range));
        }
        out.push('\n');
    }
    Ok(out)
}

/// `line N: ` for the line that sets `key` in a TOML text (empty if none does).
fn key_line(text: &str, key: &str) -> String {
    text.lines()
        .position(|l| l.split_once('=').is_some_and(|(k, _)| k.trim() == key))
        .map(|i| format!("line {}: ", i + 1))
        .unwrap_or_default()
}

/// `line N: key: ` for the TOML line an error points at.
fn span_line(text: &str, span: Option<std::ops::Range<usize>>) -> String {
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
    fn set_overrides_numbers_and_rejects_unknown_keys() {
        let mut c = Config::default();
        c.set("near_dup_threshold=0.9").unwrap();
        assert_eq!(c.near_dup_threshold, 0.9);
        c.set("entity_merge_threshold=1").unwrap();
        assert_eq!(c.entity_merge_threshold, 1.0);
        c.set("embedder=hashed").unwrap();
        let err = c.set("no_such_key=1").unwrap_err().to_string();
        assert!(err.contains("unknown config key"), "{err}");
        let err = c.set("max_facts=lots").unwrap_err().to_string();
        assert!(err.contains("max_facts"), "{err}");
    }

    #[test]
    fn write_mode_from_flags() {
        let mut c = Config::default();
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
    fn toml_unknown_key_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(&p, "near_dup_threshold = 0.9\nbogus = 1\n").unwrap();
        let err = Config::from_toml_file(&p).unwrap_err().to_string();
        assert!(err.contains("c.toml: line 2: bogus: unknown field"), "{err}");
    }

    #[test]
    fn every_numeric_key_has_a_range_and_the_defaults_are_in_it() {
        let table = toml::Table::try_from(Config::default()).unwrap();
        for (k, v) in &table {
            let numeric = matches!(v, toml::Value::Integer(_) | toml::Value::Float(_));
            assert_eq!(numeric, BOUNDS.iter().any(|b| b.key == k), "{k}: numeric keys and BOUNDS must agree");
        }
        assert_eq!(BOUNDS.len(), table.values().filter(|v| matches!(v, toml::Value::Integer(_) | toml::Value::Float(_))).count());
        Config::default().validate().unwrap();
        let printed = documented_defaults().unwrap();
        assert!(printed.contains("hashed_dims = 256  # 1..=8192"), "{printed}");
        assert!(printed.contains("entity_merge_threshold = 0.88  # [0.0, 1.0]"), "{printed}");
        assert!(printed.contains("max_pairs_per_candidate = 16  # 1..=1000"), "{printed}");
        let reread: Config = toml::from_str(&printed).unwrap();
        assert_eq!(reread, Config::default());
    }

    fn refused(set: &str) -> String {
        let mut c = Config::default();
        match c.set(set) {
            Err(e) => e.to_string(),
            Ok(()) => c.validate().expect_err(set).to_string(),
        }
    }

    #[test]
    fn out_of_range_values_name_the_key_and_range() {
        for (set, want) in [
            ("hashed_dims=4000000000", "hashed_dims = 4000000000: must be within 1..=8192"),
            ("hashed_dims=0", "hashed_dims = 0: must be within 1..=8192"),
            ("llm_timeout_secs=1e300", "llm_timeout_secs = 1e300: must be within [0.1, 3600.0]"),
            ("llm_timeout_secs=nan", "llm_timeout_secs = NaN: must be within [0.1, 3600.0]"),
            ("llm_timeout_secs=inf", "llm_timeout_secs = inf: must be within"),
            ("llm_max_retries=200", "llm_max_retries = 200: must be within 0..=10"),
            ("entity_merge_threshold=-0.1", "entity_merge_threshold = -0.1: must be within [0.0, 1.0]"),
            ("max_pairs_per_candidate=0", "max_pairs_per_candidate = 0: must be within 1..=1000"),
            ("llm_temperature=3", "llm_temperature = 3.0: must be within [0.0, 2.0]"),
        ] {
            let err = refused(set);
            assert!(err.contains(want), "{set}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn relations_between_keys_are_checked() {
        assert!(refused("value_contextual_min=0.9").contains("value_contextual_min = 0.9 is above value_core_min = 0.7"));
        assert!(refused("min_fact_chars=3000").contains("min_fact_chars = 3000 is above max_fact_chars = 2000"));
        assert!(refused("contradiction_band_min=0.99").contains("contradiction_band_min = 0.99 is above near_dup_threshold"));
        let err = refused(r#"multi_valued_predicates=["likes", "Works At "]"#);
        assert!(err.contains(r#"predicate "works at" is in both single_valued_predicates and multi_valued_predicates"#), "{err}");
        let mut c = Config::default();
        c.set("value_contextual_min=0.7").unwrap();
        c.validate().unwrap();
    }

    #[test]
    fn a_file_value_out_of_range_names_the_file_line_and_range() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(&p, "max_facts = 5\nnear_dup_threshold = nan\n").unwrap();
        let err = Config::from_toml_file(&p).unwrap_err().to_string();
        assert!(err.contains("c.toml: line 2: near_dup_threshold = NaN: must be within [0.0, 1.0]"), "{err}");
        std::fs::write(&p, b"\xEF\xBB\xBFmax_facts = 5\n").unwrap();
        let err = Config::from_toml_file(&p).unwrap_err().to_string();
        assert!(err.contains("c.toml: line 1 column 1: starts with a UTF-8 byte-order mark"), "{err}");
    }

    #[test]
    fn set_from_names_its_flag() {
        let mut c = Config::default();
        let err = c.set_from("--grid", "bogus=1").unwrap_err().to_string();
        assert!(err.contains("--grid bogus: unknown config key") && !err.contains("--set"), "{err}");
        let err = c.set_from("--grid", "max_facts=x").unwrap_err().to_string();
        assert!(err.contains("--grid max_facts=x"), "{err}");
        c.set_from("--grid", "hashed_dims=9000").unwrap();
        assert!(c.check_key("hashed_dims").unwrap_err().to_string().contains("1..=8192"));
        assert!(c.check_key("embedder").is_ok());
    }
}
