//! Every threshold and switch of the pipeline, with the seeds' figures as
//! defaults. Loaded from TOML, overridden with `--set key=value`, and written
//! whole into each run's manifest.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The pipeline's configuration. Field docs are the reference for each key;
/// `memform config` prints the defaults.
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

    // ---- stage 5: write ----
    /// Safety gate: facts below this confidence are not written
    /// (`low_fact_confidence`).
    pub min_fact_confidence_for_write: f64,
    /// Flag `enabled`: when false the run is in shadow mode.
    pub enabled: bool,
    /// Flag `shadowMode`: everything runs and is audited, only the audit is written.
    pub shadow_mode: bool,
    /// Flag `allowUpdateDelete`: without it invalidations are blocked (controlled mode).
    pub allow_update_delete: bool,
    /// Flag `mutationsFrozen`: like shadow mode.
    pub mutations_frozen: bool,
    /// Flag `autonomous.frozen`: like controlled mode.
    pub autonomous_frozen: bool,

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
    /// Most tokens a model may generate per call (part of the fixture key).
    /// 384 keeps recording with the bundled 135M model practical on two
    /// cores (it tends to repeat list items until the limit); a truncated
    /// answer still yields its complete items (warning `llm_truncated_json`).
    pub llm_max_tokens: u32,
    /// How an OpenAI-compatible server is asked for JSON: `json_schema`
    /// (OpenAI's `response_format.json_schema`), `json_object` (llama.cpp's
    /// `{"type":"json_object","schema":…}`) or `none`. Ollama always gets `format`.
    pub llm_response_format: String,
    /// Seconds one HTTP call may take, answer included.
    pub llm_timeout_secs: f64,
    /// Extra attempts after a timeout or a 5xx answer.
    pub llm_max_retries: u32,
    /// Wait before the first retry; doubled for each further one.
    pub llm_retry_backoff_ms: u64,
}

impl Default for Config {
    fn default() -> Self {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        Config {
            profile: crate::pipeline::profiles::DEFAULT.to_string(),
            max_facts: 20,
            max_facts_graph: 12,
            max_entities: 50,
            min_fact_chars: 10,
            max_fact_chars: 2000,
            max_object_chars: 500,
            max_quote_chars: 200,
            max_input_chars: 12_000,
            value_core_min: 0.7,
            value_contextual_min: 0.4,
            entity_merge_threshold: 0.88,
            near_dup_threshold: 0.95,
            dedup_enabled: true,
            contradiction_band_min: 0.80,
            antonym_min_shared_tokens: 2,
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
                "likes", "loves", "enjoys", "visited", "owns", "has", "has sister", "has brother",
                "has friend", "has pet", "plays", "went to", "attended", "dislikes", "hates",
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
            min_fact_confidence_for_write: 0.7,
            enabled: true,
            shadow_mode: false,
            allow_update_delete: true,
            mutations_frozen: false,
            autonomous_frozen: false,
            embedder: "hashed".to_string(),
            hashed_dims: 256,
            llm_provider: "openai".to_string(),
            llm_url: "http://127.0.0.1:8765".to_string(),
            llm_model: "SmolLM2-135M-Instruct.Q4_1".to_string(),
            llm_temperature: 0.0,
            llm_seed: 42,
            llm_max_tokens: 384,
            llm_response_format: "json_object".to_string(),
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
            other => Err(Error::Config(format!(
                "unknown write mode {other:?} (expected shadow, controlled or full)"
            ))),
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
    /// Shadow when not enabled, in shadow mode or with mutations frozen;
    /// else controlled when updates/deletes are not allowed or autonomous
    /// writes are frozen; else full.
    pub fn write_mode(&self) -> WriteMode {
        if !self.enabled || self.shadow_mode || self.mutations_frozen {
            WriteMode::Shadow
        } else if !self.allow_update_delete || self.autonomous_frozen {
            WriteMode::Controlled
        } else {
            WriteMode::Full
        }
    }

    /// Sets the flags so that [`Config::write_mode`] returns `mode`.
    pub fn set_write_mode(&mut self, mode: WriteMode) {
        self.enabled = true;
        self.mutations_frozen = false;
        self.autonomous_frozen = false;
        self.shadow_mode = mode == WriteMode::Shadow;
        self.allow_update_delete = mode == WriteMode::Full;
    }

    pub fn from_toml_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        toml::from_str(&text).map_err(|e| Error::input(path, format!("{}{}", span_line(&text, e.span()), e.message())))
    }

    /// Applies one `key=value` override; the value is parsed as TOML (so
    /// `0.9`, `true`, `"hashed"`, `["a","b"]`), falling back to a bare string.
    pub fn set(&mut self, assignment: &str) -> Result<()> {
        let (key, value) = assignment
            .split_once('=')
            .ok_or_else(|| Error::Config(format!("--set {assignment:?}: expected key=value")))?;
        let key = key.trim();
        let value = value.trim();
        let mut table = toml::Table::try_from(&*self)
            .map_err(|e| Error::Config(format!("serialise config: {e}")))?;
        let Some(old) = table.get(key) else {
            return Err(Error::Config(format!("--set {key}: unknown config key")));
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
            .map_err(|e| Error::Config(format!("--set {key}={value}: {}", e.message())))?;
        Ok(())
    }

    pub fn validate(&self) -> Result<()> {
        let unit = [
            ("value_core_min", self.value_core_min),
            ("value_contextual_min", self.value_contextual_min),
            ("entity_merge_threshold", self.entity_merge_threshold),
            ("near_dup_threshold", self.near_dup_threshold),
            ("contradiction_band_min", self.contradiction_band_min),
            ("min_trusted_confidence", self.min_trusted_confidence),
            ("min_fact_confidence_for_write", self.min_fact_confidence_for_write),
        ];
        for (k, v) in unit {
            if !(-1.0..=1.0).contains(&v) || v.is_nan() {
                return Err(Error::Config(format!("{k} = {v}: must be within [-1, 1]")));
            }
        }
        if self.contradiction_band_min > self.near_dup_threshold {
            return Err(Error::Config(format!(
                "contradiction_band_min = {} is above near_dup_threshold = {}",
                self.contradiction_band_min, self.near_dup_threshold
            )));
        }
        if let Some(p) = self.single_valued_predicates.iter().find(|p| self.multi_valued_predicates.contains(p)) {
            return Err(Error::Config(format!(
                "predicate {p:?} is in both single_valued_predicates and multi_valued_predicates"
            )));
        }
        crate::pipeline::profiles::by_name(&self.profile)?;
        if self.hashed_dims == 0 {
            return Err(Error::Config("hashed_dims must be positive".into()));
        }
        Ok(())
    }
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
}
