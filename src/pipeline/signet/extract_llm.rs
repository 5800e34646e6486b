//! [`SignetLlmExtractor`]: `signet`'s extraction in LLM mode. One call per
//! episode with the template `signet_extract`, whose answer is Signet's
//! contract (`{facts: [{content, type, confidence}], entities: [{source,
//! relationship, target, confidence}]}`); the request's JSON schema makes
//! `type` one of the fact types and `confidence` a number. The answer is
//! read with the contract's lenient reader and validated with its caps
//! ([`super::extract::parse_answer`]). Signet's input gate comes first: a
//! transcript shorter than `min_fact_chars` is no call, a longer one than
//! `max_input_chars` is cut (each with a warning).

use std::sync::Arc;

use serde_json::json;

use super::extract::{SignetExtraction, input_gate, parse_answer};
use crate::error::{Error, Result};
use crate::llm::prompts::{self, FACT_TYPES, Template, defuse};
use crate::llm::{CallContext, Llm, LlmRequest, LlmSettings, Sampling, Stage, complete_budgeted};
use crate::pipeline::Config;
use crate::pipeline::StageMode;
use crate::pipeline::extract::{ExtractInput, Extractor, RawExtraction};
use crate::types::{LlmUsage, Warning};

/// The fence tag of the extraction template.
pub const FENCE_TAGS: [&str; 1] = ["transcript"];

/// Most facts and entities the request's schema asks for, and the longest
/// fact: bounds that keep a small model's answer inside its token budget.
/// The contract's own caps (20 facts, 50 entities, 2,000 characters) are
/// applied to whatever comes back, as to any answer.
pub const SCHEMA_MAX_FACTS: usize = 10;
pub const SCHEMA_MAX_ENTITIES: usize = 10;
pub const SCHEMA_MAX_FACT_CHARS: usize = 300;

/// An extractor that answers in Signet's contract (rather than stage 1's graph).
pub trait ContractExtractor: Send + Sync {
    /// The episode's extraction, validated, and what its calls cost.
    fn extract_contract(&self, input: &ExtractInput<'_>, cfg: &Config) -> Result<(SignetExtraction, LlmUsage)>;
}

/// Extraction by a model behind the recorded boundary, in Signet's contract.
pub struct SignetLlmExtractor {
    llm: Arc<dyn Llm>,
    settings: LlmSettings,
    template: Template,
}

impl SignetLlmExtractor {
    pub fn new(llm: Arc<dyn Llm>, settings: &LlmSettings) -> Result<Self> {
        Ok(SignetLlmExtractor { llm, settings: settings.clone(), template: prompts::signet_extract_template()? })
    }

    /// The request for an episode (`None` when the input gate stops it),
    /// and the gate's warnings.
    pub fn request(&self, input: &ExtractInput<'_>, cfg: &Config) -> Result<(Option<LlmRequest>, Vec<Warning>)> {
        let mut warnings = Vec::new();
        let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let lines: Vec<String> = input.episode.turns.iter().map(|t| format!("[{}] {}: {}", t.id, t.speaker, flat(&t.text))).collect();
        let Some(transcript) = input_gate(&lines.join("\n"), cfg, &mut warnings) else {
            return Ok((None, warnings));
        };
        let transcript = defuse(&transcript, &FENCE_TAGS);
        let speakers = defuse(&input.speakers.join(", "), &FENCE_TAGS);
        let date = input.episode.timestamp.as_deref().map(|t| t.get(..10).unwrap_or(t)).unwrap_or("unknown");
        let messages = self.template.render(&[("session_date", date), ("speakers", &speakers), ("transcript", &transcript)])?;
        let strict = crate::pipeline::extract::llm::strict(&self.settings);
        Ok((
            Some(LlmRequest {
                stage: Stage::Extract,
                model: self.settings.model.clone(),
                template: self.template.id.clone(),
                messages,
                // The budget of stage 1's extraction: the base plus a share per turn shown.
                sampling: Sampling { max_tokens: self.settings.budget(input.episode.turns.len()), ..self.settings.sampling },
                schema: Some(schema(strict)),
                tools: None,
                context: CallContext { conversation: input.conversation_id.to_string(), episode: input.episode.id.clone() },
            }),
            warnings,
        ))
    }
}

/// The answer's JSON schema: `type` one of [`FACT_TYPES`], confidences
/// numbers. Written as text: its property order is the writing order
/// (llama.cpp's grammar keeps it; `serde_json`'s map would sort it), facts
/// before entities, each fact's content first. `strict` (OpenAI's strict
/// mode) closes every object and drops the length bounds.
pub fn schema(strict: bool) -> String {
    let (closed, max_chars, max_facts, max_entities) = if strict {
        (r#""additionalProperties": false, "#.to_string(), String::new(), String::new(), String::new())
    } else {
        (
            String::new(),
            format!(r#", "maxLength": {SCHEMA_MAX_FACT_CHARS}"#),
            format!(r#", "maxItems": {SCHEMA_MAX_FACTS}"#),
            format!(r#", "maxItems": {SCHEMA_MAX_ENTITIES}"#),
        )
    };
    let types = json!(FACT_TYPES);
    let fact = format!(
        r#"{{"type": "object", {closed}"properties": {{"content": {{"type": "string"{max_chars}}}, "type": {{"type": "string", "enum": {types}}}, "confidence": {{"type": "number"}}}}, "required": ["content", "type", "confidence"]}}"#
    );
    let entity = format!(
        r#"{{"type": "object", {closed}"properties": {{"source": {{"type": "string"}}, "relationship": {{"type": "string"}}, "target": {{"type": "string"}}, "confidence": {{"type": "number"}}}}, "required": ["source", "relationship", "target", "confidence"]}}"#
    );
    format!(
        r#"{{"type": "object", {closed}"properties": {{"facts": {{"type": "array"{max_facts}, "items": {fact}}}, "entities": {{"type": "array"{max_entities}, "items": {entity}}}}}, "required": ["facts", "entities"]}}"#
    )
}

impl ContractExtractor for SignetLlmExtractor {
    fn extract_contract(&self, input: &ExtractInput<'_>, cfg: &Config) -> Result<(SignetExtraction, LlmUsage)> {
        let (req, mut warnings) = self.request(input, cfg)?;
        let Some(req) = req else {
            return Ok((SignetExtraction { warnings, ..SignetExtraction::default() }, LlmUsage::default()));
        };
        // A truncated answer is asked again once with a larger budget (counted in the usage).
        let (resp, usage, _) = complete_budgeted(self.llm.as_ref(), &req, self.settings.max_tokens_cap)?;
        if usage.retries > 0 {
            warnings.push(crate::pipeline::extract::llm::retried(&req));
        }
        let mut x = parse_answer(&resp.text, cfg);
        warnings.append(&mut x.warnings);
        x.warnings = warnings;
        Ok((x, usage))
    }
}

impl Extractor for SignetLlmExtractor {
    fn id(&self) -> String {
        format!("llm:{}:{}-v{}", self.settings.model, self.template.id.name, self.template.id.version)
    }
    fn mode(&self) -> StageMode {
        StageMode::Llm
    }
    fn extract(&self, _input: &ExtractInput<'_>) -> Result<RawExtraction> {
        Err(Error::Other("the signet extractor answers in Signet's contract, not stage 1's graph".into()))
    }
    fn contract(&self) -> Option<&dyn ContractExtractor> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn the_schema_constrains_the_contract() {
        let s: Value = serde_json::from_str(&schema(false)).expect("json");
        let fact = &s["properties"]["facts"]["items"]["properties"];
        assert_eq!(fact["type"]["enum"], json!(FACT_TYPES));
        assert_eq!(fact["confidence"]["type"], "number");
        assert_eq!(s["properties"]["facts"]["maxItems"], SCHEMA_MAX_FACTS);
        let entity = &s["properties"]["entities"]["items"];
        assert_eq!(entity["required"], json!(["source", "relationship", "target", "confidence"]));
        let strict: Value = serde_json::from_str(&schema(true)).expect("json");
        assert_eq!(strict["properties"]["facts"]["items"]["additionalProperties"], false);
        assert!(strict["properties"]["facts"].get("maxItems").is_none());
        let text = schema(false);
        assert!(text.find("\"content\"") < text.find("\"confidence\""), "writing order kept");
        assert!(text.find("\"facts\"") < text.find("\"entities\""), "facts first");
    }
}
