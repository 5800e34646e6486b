//! [`LlmDecider`]: `signet`'s decision stage in LLM mode. One call per fact
//! that has candidates (Signet v2), template `signet_decision`; the answer's
//! schema constrains `action` to the four actions and `targetId` to the
//! candidates' ids (or empty). The answer is validated as Signet does: an
//! unknown action, an UPDATE or DELETE without a target or naming a
//! non-candidate (a hallucinated target), and an empty reason are each
//! dropped with a warning; confidence is clamped to [0, 1] (0.5 when missing).

use std::sync::Arc;

use serde_json::{Value, json};

use super::decide::{Decider, Decision, DecisionAction, DecisionAnswer, DecisionInput};
use crate::error::{Error, Result};
use crate::llm::parse::{clean_answer, find_json_object};
use crate::llm::prompts::{self, SIGNET_FENCE_TAGS, Template, defuse};
use crate::llm::{CallContext, Llm, LlmRequest, LlmSettings, Stage, complete_budgeted};
use crate::pipeline::Config;
use crate::pipeline::StageMode;
use crate::pipeline::judge::{Judge, JudgeContext, JudgeOutput, JudgePair};
use crate::types::Warning;

/// Decisions by a model behind the recorded boundary.
pub struct LlmDecider {
    llm: Arc<dyn Llm>,
    settings: LlmSettings,
    template: Template,
}

impl LlmDecider {
    pub fn new(llm: Arc<dyn Llm>, settings: &LlmSettings) -> Result<Self> {
        Ok(LlmDecider { llm, settings: settings.clone(), template: prompts::signet_decision_template()? })
    }

    /// The request for one fact and its numbered candidates.
    pub fn request(&self, ctx: &JudgeContext<'_>, input: &DecisionInput<'_>) -> Result<LlmRequest> {
        let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let memories: Vec<String> = input
            .candidates
            .iter()
            .enumerate()
            .map(|(i, c)| format!("[{}] ID: {}\n    Type: {}\n    Content: {}", i + 1, c.id, c.fact_type.as_str(), flat(&c.content)))
            .collect();
        let fact = defuse(&flat(&input.fact.content), &SIGNET_FENCE_TAGS);
        let memories = defuse(&memories.join("\n\n"), &SIGNET_FENCE_TAGS);
        let confidence = format!("{:.2}", input.fact.confidence);
        let messages = self.template.render(&[
            ("fact_type", input.fact.fact_type.as_str()),
            ("confidence", &confidence),
            ("fact", &fact),
            ("memories", &memories),
        ])?;
        let ids: Vec<&str> = input.candidates.iter().map(|c| c.id.as_str()).chain([""]).collect();
        Ok(LlmRequest {
            stage: Stage::Decide,
            model: self.settings.model.clone(),
            template: self.template.id.clone(),
            messages,
            // The contract's budget: the base plus a share per candidate shown.
            sampling: crate::llm::Sampling { max_tokens: self.settings.budget(input.candidates.len()), ..self.settings.sampling },
            schema: Some(schema(&ids)),
            tools: None,
            context: CallContext { conversation: ctx.conversation_id.to_string(), episode: ctx.episode_id.to_string() },
        })
    }
}

/// The answer's JSON schema: `action` one of the four, `targetId` one of
/// `ids` (the candidates' and the empty string).
pub fn schema(ids: &[&str]) -> String {
    json!({
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["add", "update", "delete", "none"]},
            "targetId": {"type": "string", "enum": ids},
            "confidence": {"type": "number"},
            "reason": {"type": "string"}
        },
        "required": ["action", "targetId", "confidence", "reason"]
    })
    .to_string()
}

/// Reads and validates one answer against the candidates' ids. `None`
/// (with a warning) when Signet's validation drops it.
pub fn parse_decision(text: &str, candidate_ids: &[&str], warnings: &mut Vec<Warning>) -> Option<Decision> {
    let cleaned = clean_answer(text, warnings);
    let excerpt: String = cleaned.chars().take(120).collect();
    let Some(obj) = find_json_object(&cleaned, warnings) else {
        warnings.push(Warning::new("decision_unreadable", format!("no JSON object in the decision answer: {excerpt:?}")));
        return None;
    };
    let action = obj.get("action").and_then(Value::as_str).unwrap_or("");
    let Some(action) = DecisionAction::parse(action) else {
        warnings.push(Warning::new("decision_invalid_action", format!("invalid action {action:?}")));
        return None;
    };
    let target = obj.get("targetId").and_then(Value::as_str).map(str::trim).filter(|t| !t.is_empty()).map(str::to_string);
    if matches!(action, DecisionAction::Update | DecisionAction::Delete) {
        let Some(t) = &target else {
            warnings.push(Warning::new("decision_missing_target", format!("{} decision without a targetId", action.as_str())));
            return None;
        };
        if !candidate_ids.contains(&t.as_str()) {
            warnings.push(Warning::new("decision_unknown_target", format!("{} decision names a non-candidate id {t:?}", action.as_str())));
            return None;
        }
    }
    let reason = obj.get("reason").and_then(Value::as_str).map(str::trim).unwrap_or("");
    if reason.is_empty() {
        warnings.push(Warning::new("decision_missing_reason", format!("{} decision without a reason", action.as_str())));
        return None;
    }
    let confidence = obj.get("confidence").and_then(Value::as_f64).filter(|c| !c.is_nan()).unwrap_or(0.5).clamp(0.0, 1.0);
    // A NONE or ADD may name a target; only a candidate's id is kept.
    let target = target.filter(|t| candidate_ids.contains(&t.as_str()));
    Some(Decision { action, target, confidence, reason: reason.to_string() })
}

impl Decider for LlmDecider {
    fn id(&self) -> String {
        format!("llm:{}:{}-v{}", self.settings.model, self.template.id.name, self.template.id.version)
    }
    fn mode(&self) -> StageMode {
        StageMode::Llm
    }
    fn decide(&self, ctx: &JudgeContext<'_>, input: &DecisionInput<'_>, _cfg: &Config) -> Result<DecisionAnswer> {
        let req = self.request(ctx, input)?;
        // A truncated answer is asked again once with a larger budget (counted in the usage).
        let (resp, usage, _) = complete_budgeted(self.llm.as_ref(), &req, self.settings.max_tokens_cap)?;
        let ids: Vec<&str> = input.candidates.iter().map(|c| c.id.as_str()).collect();
        let mut warnings = Vec::new();
        if usage.retries > 0 {
            warnings.push(crate::pipeline::extract::llm::retried(&req));
        }
        let decision = parse_decision(&resp.text, &ids, &mut warnings);
        Ok(DecisionAnswer { decision, warnings, usage })
    }
}

impl Judge for LlmDecider {
    fn mode(&self) -> StageMode {
        StageMode::Llm
    }
    fn id(&self) -> String {
        Decider::id(self)
    }
    fn judge(&self, _ctx: &JudgeContext<'_>, _pairs: &[JudgePair]) -> Result<JudgeOutput> {
        Err(Error::Other("the signet decision stage decides per fact; it judges no pairs".into()))
    }
    fn decider(&self) -> Option<&dyn Decider> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    //! Signet v2's `decision.test.ts` cases on answer validation, carried
    //! over as expectations of memform's parser (each test names its case).
    use super::*;

    fn parse(text: &str) -> (Option<Decision>, Vec<String>) {
        let mut w = Vec::new();
        let d = parse_decision(text, &["mem-001"], &mut w);
        (d, w.into_iter().map(|w| w.kind).collect())
    }

    #[test]
    fn parses_a_valid_update_decision() {
        // decision.test.ts: "parses a valid UPDATE decision JSON response"
        let (d, w) = parse(r#"{"action":"update","targetId":"mem-001","confidence":0.85,"reason":"more specific"}"#);
        let d = d.expect("kept");
        assert_eq!((d.action, d.target.as_deref(), d.confidence), (DecisionAction::Update, Some("mem-001"), 0.85));
        assert!(w.is_empty());
    }

    #[test]
    fn rejects_an_invalid_action_with_a_warning() {
        // decision.test.ts: "rejects an invalid action with a warning"
        assert_eq!(
            parse(r#"{"action":"explode","confidence":0.8,"reason":"no such action"}"#),
            (None, vec!["decision_invalid_action".into()])
        );
    }

    #[test]
    fn rejects_update_referencing_a_non_candidate_id() {
        // decision.test.ts: "rejects UPDATE referencing a non-candidate ID"
        let text = r#"{"action":"update","targetId":"mem-does-not-exist","confidence":0.8,"reason":"x"}"#;
        assert_eq!(parse(text), (None, vec!["decision_unknown_target".into()]));
    }

    #[test]
    fn rejects_a_decision_missing_a_reason() {
        // decision.test.ts: "rejects a decision missing a reason"
        assert_eq!(parse(r#"{"action":"none","confidence":0.7,"reason":""}"#), (None, vec!["decision_missing_reason".into()]));
    }

    #[test]
    fn clamps_confidence_to_the_unit_interval() {
        // decision.test.ts: "clamps confidence on decisions to [0, 1]" and "clamps negative confidence to 0"
        assert_eq!(parse(r#"{"action":"none","confidence":3.5,"reason":"covered"}"#).0.map(|d| d.confidence), Some(1.0));
        assert_eq!(parse(r#"{"action":"none","confidence":-0.5,"reason":"covered"}"#).0.map(|d| d.confidence), Some(0.0));
    }

    #[test]
    fn invalid_json_is_a_warning() {
        // decision.test.ts: "handles invalid decision JSON with a warning"
        assert_eq!(parse("this is not json"), (None, vec!["decision_unreadable".into()]));
    }

    #[test]
    fn accepts_delete_naming_a_candidate_and_none_without_a_target() {
        // decision.test.ts: "accepts 'delete' action referencing a valid candidate", "accepts 'none' action without a targetId"
        let d = parse(r#"{"action":"delete","targetId":"mem-001","confidence":0.8,"reason":"outdated"}"#).0.expect("kept");
        assert_eq!((d.action, d.target.as_deref()), (DecisionAction::Delete, Some("mem-001")));
        let d = parse(r#"{"action":"none","confidence":0.9,"reason":"covered"}"#).0.expect("kept");
        assert_eq!((d.action, d.target), (DecisionAction::None, None));
    }

    #[test]
    fn rejects_update_or_delete_without_a_target() {
        // decision.test.ts: "rejects 'update' without targetId", "rejects 'delete' without targetId"
        for a in ["update", "delete"] {
            let text = format!(r#"{{"action":"{a}","confidence":0.8,"reason":"no target"}}"#);
            assert_eq!(parse(&text), (None, vec!["decision_missing_target".to_string()]));
        }
        // The schema's empty targetId is no target either.
        assert_eq!(
            parse(r#"{"action":"update","targetId":"","confidence":0.8,"reason":"x"}"#).1,
            vec!["decision_missing_target".to_string()]
        );
    }

    #[test]
    fn think_blocks_and_fences_are_stripped() {
        let (d, _) =
            parse("<think>hmm</think>\n```json\n{\"action\":\"add\",\"targetId\":\"\",\"confidence\":0.6,\"reason\":\"new\"}\n```");
        assert_eq!(d.map(|d| d.action), Some(DecisionAction::Add));
    }

    #[test]
    fn the_schema_constrains_action_and_target() {
        let s: Value = serde_json::from_str(&schema(&["a/e1/c0", ""])).expect("json");
        assert_eq!(s["properties"]["targetId"]["enum"], json!(["a/e1/c0", ""]));
        assert_eq!(s["properties"]["action"]["enum"], json!(["add", "update", "delete", "none"]));
    }
}
