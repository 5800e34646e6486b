//! The `llm` dreamer (`dreaming-llm:v1`, docs/dreaming.md section 10): an
//! agentic loop. Each model turn is one request (stage `dream`, template
//! `dreaming_agent` v1): the mode's system prompt, a user message naming the
//! conversation, the pass and its mode, every assistant turn and tool answer
//! so far, and the registry's manifest as OpenAI-style `tools`. The model
//! answers tool calls, each run through the registry and answered by one
//! `tool` message, or a final message (the pass's summary).
//!
//! Recorded multi-turn transcripts: a request's fixture key hashes all of it
//! (the tool answers included), so a replay reproduces the whole loop and a
//! changed tool answer changes the next key; a miss stops the run (exit 2).
//!
//! The loop stops at the final message, at the pass's tool-call cap
//! (`max_tool_calls`), at `max_model_turns`, or before a request whose
//! messages would exceed `max_input_chars` (`context`: no call is made).
//! A model whose server does not return `tool_calls` may write its calls as
//! text; `<tool_call>…</tool_call>` blocks and a bare `{"name", "arguments"}`
//! object are read as calls (SmolLM2's format).

use std::sync::Arc;

use serde_json::{Value, json};

use super::dreamer::{Dreamer, DreamerOutcome, PassInfo};
use super::pass::PassMode;
use super::registry::{Session, openai_tools};
use crate::error::{Error, Result};
use crate::llm::{CallContext, Llm, LlmRequest, LlmSettings, Message, Stage, TemplateId, ToolCall};
use crate::pipeline::StageMode;
use crate::pipeline::judge::{Judge, JudgeContext, JudgeOutput, JudgePair};
use crate::types::LlmUsage;

/// The template's identity: bump the version whenever a prompt below changes.
pub const TEMPLATE: &str = "dreaming_agent";
pub const TEMPLATE_VERSION: u32 = 1;

/// Completion tokens of one model turn (at most `llm_max_tokens_cap`, at
/// least `llm_max_tokens`): a turn is a few tool calls or a summary.
pub const MAX_TURN_TOKENS: u32 = 512;

/// Characters of one tool answer shown to the model (the registry's own
/// answers may be longer; the rest is cut with a note).
pub const MAX_TOOL_ANSWER_CHARS: usize = 3_000;

const CONTENT_PROMPT: &str = "You are the Dreaming pass of a memory system. You turn a conversation's evidence into an ontology: entities, their aspects, claims (facts) and links.
Process: 1. call search_evidence with only agentId to list the new turns. 2. For each durable fact, check search_entities, then call apply_ontology_ops with create_entity, create_aspect, add_claim_value (or set_claim_value to replace a single value) and create_link operations. 3. Call runbook_write with a summary; list turns with no durable fact in reviewedExcludedEvidence. 4. Answer with a one-line summary and no tool call.
Tools: search_evidence, search_entities, get_entity, list_aspect_claims, get_evidence, walk_links, attention_list, list_contradictions, validate_proposal, runbook_read, runbook_write, apply_ontology_ops. To call one, answer only: <tool_call>{\"name\": \"search_evidence\", \"arguments\": {}}</tool_call>
Rules: every content operation cites evidence [{\"source_ref\": \"turn:<id>\", \"quote\": \"<exact words of that turn>\"}]. Never invent facts, never quote text that is not in the turn, never store small talk. Use ids returned by earlier calls.
Example: {\"agentId\": \"<conversation>\", \"operations\": [{\"operation\": \"create_entity\", \"payload\": {\"name\": \"Ann\", \"type\": \"person\"}, \"evidence\": [{\"source_ref\": \"turn:t1\", \"quote\": \"I am Ann\"}]}, {\"operation\": \"add_claim_value\", \"payload\": {\"entityId\": \"Ann\", \"aspectId\": \"lives in\", \"claimKey\": \"lives in\", \"value\": \"Ann lives in Oslo\"}, \"evidence\": [{\"source_ref\": \"turn:t2\", \"quote\": \"I live in Oslo\"}]}]}";

const HYGIENE_PROMPT: &str = "You are the hygiene pass of a memory system's ontology. To call a tool, answer only: <tool_call>{\"name\": \"attention_list\", \"arguments\": {}}</tool_call>. Process: 1. call attention_list. 2. For each record, inspect it (get_entity, list_aspect_claims) and either fix it with apply_ontology_ops or resolve it with a decline_attention operation: {\"operation\": \"decline_attention\", \"payload\": {\"attentionId\": \"<subjectRef>\"}, \"reason\": \"...\"}. 3. Answer with a one-line summary and no tool call. Never create new facts in this pass.";

/// The model behind the `dreaming` profile's judge seam (LLM mode): the
/// run's recorded boundary and its settings.
pub struct DreamLlm {
    llm: Arc<dyn Llm>,
    settings: LlmSettings,
}

impl DreamLlm {
    pub fn new(llm: Arc<dyn Llm>, settings: &LlmSettings) -> DreamLlm {
        DreamLlm { llm, settings: settings.clone() }
    }
}

impl Judge for DreamLlm {
    fn id(&self) -> String {
        format!("dreaming-llm:v1:{}", self.settings.model)
    }
    fn mode(&self) -> StageMode {
        StageMode::Llm
    }
    fn judge(&self, _ctx: &JudgeContext<'_>, _pairs: &[JudgePair]) -> Result<JudgeOutput> {
        Err(Error::Other("the dreaming profile judges no pairs".into()))
    }
    fn dreaming(&self) -> Option<&DreamLlm> {
        Some(self)
    }
}

/// The `llm` dreamer over a [`DreamLlm`].
pub struct LlmDreamer<'a>(pub &'a DreamLlm);

fn user_message(pass: &PassInfo<'_>) -> String {
    format!(
        "Conversation (agentId): {}. Pass {} in {} mode. Speakers: {}. Pending evidence turns: {}. Pending attention records: {}. Start with a tool call.",
        pass.conv.id,
        pass.pass_id,
        pass.mode.as_str(),
        pass.conv.speakers.join(", "),
        pass.backlog_turns,
        pass.attention.len()
    )
}

/// The calls an answer holds: the server's `tool_calls`, else the calls the
/// model wrote as text.
pub fn calls_of(text: &str, native: &[ToolCall], turn: usize) -> Vec<ToolCall> {
    if !native.is_empty() {
        return native.to_vec();
    }
    let mut blocks: Vec<&str> = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("<tool_call>") {
        let after = &rest[start + "<tool_call>".len()..];
        let end = after.find("</tool_call>").unwrap_or(after.len());
        blocks.push(&after[..end]);
        rest = &after[end..];
    }
    if blocks.is_empty() {
        blocks.push(text);
    }
    let mut out = Vec::new();
    for b in blocks {
        let Ok(v) = serde_json::from_str::<Value>(b.trim()) else { continue };
        let items = match v {
            Value::Array(a) => a,
            other => vec![other],
        };
        for item in items {
            let Some(name) = item.get("name").and_then(Value::as_str) else { continue };
            let arguments = match item.get("arguments").or_else(|| item.get("parameters")) {
                Some(Value::String(s)) => s.clone(),
                Some(a) => a.to_string(),
                None => "{}".into(),
            };
            out.push(ToolCall { id: format!("call_{turn}_{}", out.len() + 1), name: name.to_string(), arguments });
        }
    }
    out
}

/// The arguments a call is run with: the session's scope filled in when
/// the model left `agentId` out (Signet's tools default to the session's
/// agent); arguments that are not a JSON object are passed as written, for
/// the registry to refuse.
fn with_scope(arguments: &str, conv: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(mut m)) => {
            if !m.contains_key("agentId") {
                m.insert("agentId".into(), json!(conv));
            }
            Value::Object(m).to_string()
        }
        _ => arguments.to_string(),
    }
}

fn cut_answer(answer: &Value) -> String {
    let s = answer.to_string();
    if s.chars().count() <= MAX_TOOL_ANSWER_CHARS {
        return s;
    }
    let head: String = s.chars().take(MAX_TOOL_ANSWER_CHARS).collect();
    format!("{head}… [answer cut at {MAX_TOOL_ANSWER_CHARS} characters; page with limit/offset]")
}

impl Dreamer for LlmDreamer<'_> {
    fn id(&self) -> String {
        Judge::id(self.0)
    }
    fn run_pass(&self, pass: &PassInfo<'_>, tools: &mut Session<'_>) -> Result<DreamerOutcome> {
        let model = self.0;
        let dcfg = &pass.cfg.dreaming;
        let system = if pass.mode == PassMode::Hygiene { HYGIENE_PROMPT } else { CONTENT_PROMPT };
        let mut messages = vec![Message::new("system", system), Message::new("user", user_message(pass))];
        let tools_json = openai_tools();
        let tools_chars = tools_json.to_string().chars().count();
        let mut sampling = model.settings.sampling;
        sampling.max_tokens = MAX_TURN_TOKENS.min(model.settings.max_tokens_cap).max(sampling.max_tokens);
        let mut out = DreamerOutcome { usage: LlmUsage::default(), ..DreamerOutcome::default() };
        for turn in 1..=dcfg.max_model_turns {
            if tools.capped() {
                out.stop = Some("tool_cap".into());
                return Ok(out);
            }
            let chars: usize = tools_chars + messages.iter().map(|m| m.content.chars().count()).sum::<usize>();
            if chars > model.settings.max_input_chars {
                out.stop = Some("context".into());
                return Ok(out);
            }
            let req = LlmRequest {
                stage: Stage::Dream,
                model: model.settings.model.clone(),
                template: TemplateId { name: TEMPLATE.into(), version: TEMPLATE_VERSION },
                messages: messages.clone(),
                sampling,
                schema: None,
                tools: Some(tools_json.clone()),
                context: CallContext { conversation: pass.conv.id.clone(), episode: format!("{} turn {turn}", pass.pass_id) },
            };
            let resp = model.llm.complete(&req)?;
            out.usage.add(resp.usage);
            out.model_turns = turn;
            let calls = calls_of(&resp.text, &resp.tool_calls, turn);
            if calls.is_empty() {
                let summary = resp.text.trim();
                out.summary = (!summary.is_empty()).then(|| summary.chars().take(2_000).collect());
                out.stop = Some("final".into());
                return Ok(out);
            }
            messages.push(Message {
                role: "assistant".into(),
                content: resp.text.clone(),
                tool_calls: Some(calls.clone()),
                tool_call_id: None,
            });
            for c in &calls {
                let answer = tools.call(&c.name, &with_scope(&c.arguments, &pass.conv.id))?;
                messages.push(Message {
                    role: "tool".into(),
                    content: cut_answer(&answer),
                    tool_calls: None,
                    tool_call_id: Some(c.id.clone()),
                });
            }
        }
        out.stop = Some(if tools.capped() { "tool_cap" } else { "turn_cap" }.into());
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_written_as_text_are_read() {
        let t = r#"<tool_call>[{"name": "search_evidence", "arguments": {"agentId": "c"}}]</tool_call>"#;
        let calls = calls_of(t, &[], 2);
        assert_eq!(calls, vec![ToolCall { id: "call_2_1".into(), name: "search_evidence".into(), arguments: r#"{"agentId":"c"}"#.into() }]);
        assert_eq!(calls_of(r#"{"name": "runbook_read", "arguments": "{}"}"#, &[], 1).len(), 1);
        assert!(calls_of("All done: nothing durable.", &[], 1).is_empty());
        let native = vec![ToolCall { id: "x".into(), name: "get_entity".into(), arguments: "{}".into() }];
        assert_eq!(calls_of("ignored <tool_call>{\"name\": \"a\"}</tool_call>", &native, 1), native);
    }

    /// A model that never stops calling tools.
    struct Runaway;

    impl Llm for Runaway {
        fn complete(&self, _req: &LlmRequest) -> Result<crate::llm::LlmResponse> {
            Ok(crate::llm::LlmResponse {
                text: String::new(),
                usage: LlmUsage { calls: 1, ..LlmUsage::default() },
                model: "runaway".into(),
                source: crate::llm::AnswerSource::Live,
                wall: std::time::Duration::ZERO,
                finish_reason: None,
                tool_calls: vec![ToolCall { id: "c".into(), name: "search_entities".into(), arguments: "{}".into() }],
            })
        }
    }

    #[test]
    fn the_tool_call_cap_stops_a_runaway_loop() {
        use crate::embed::hashed::HashedEmbedder;
        use crate::pipeline::extract::RulesExtractor;
        use crate::pipeline::{Config, Stages};
        use crate::store::Store;
        use crate::types::{Conversation, Episode, Turn};

        let conv = Conversation {
            id: "c1".into(),
            speakers: vec!["Ann".into()],
            episodes: vec![Episode {
                id: "e1".into(),
                timestamp: None,
                turns: vec![Turn { id: "t1".into(), speaker: "Ann".into(), text: "I live in Porto.".into() }],
                observations: Vec::new(),
            }],
            gold: Default::default(),
        };
        let mut cfg = Config::default();
        cfg.profile = "dreaming".into();
        cfg.dreaming.dreamer = "llm".into();
        cfg.dreaming.max_tool_calls = 5;
        cfg.dreaming.max_model_turns = 1_000;
        let store = Store::in_memory().unwrap();
        store.write_conversation(&conv.id, &conv.speakers, &[]).unwrap();
        store.write_evidence_from(&conv.id, 0, &conv.episodes).unwrap();
        let settings = LlmSettings::from_config(&cfg.shared).unwrap();
        let judge = DreamLlm::new(Arc::new(Runaway), &settings);
        let extractor = RulesExtractor::new(cfg.max_input_chars);
        let embedder = HashedEmbedder::new(cfg.hashed_dims);
        let stages = Stages { extractor: &extractor, embedder: &embedder, judge: &judge };
        let pass = super::super::profile::run_pass_in_mode(
            stages,
            &conv,
            0,
            PassMode::Content,
            super::super::pass::TriggerReason::EndOfConversation,
            1,
            &cfg,
            &store,
            None,
        )
        .unwrap();
        assert_eq!(pass.tool_calls, 5, "{pass:?}");
        assert!(pass.summary.contains("stopped: tool_cap after 5 model turns"), "{}", pass.summary);
        assert_eq!(store.tool_calls_of(&pass.id).unwrap().len(), 5);
        // Nothing was delivered by a scan: nothing is consumed.
        assert_eq!(pass.evidence_consumed, 0);
    }

    #[test]
    fn the_scope_is_filled_in_only_when_missing() {
        assert_eq!(with_scope("{}", "c1"), r#"{"agentId":"c1"}"#);
        assert_eq!(with_scope(r#"{"agentId":"other"}"#, "c1"), r#"{"agentId":"other"}"#);
        assert_eq!(with_scope("[1]", "c1"), "[1]");
    }
}
