//! The `memorix` profile in LLM mode: at most one model call per stage per
//! observation, behind the recorded boundary (contract v2: a JSON schema per
//! request with enums, a completion budget, one retry of a truncated
//! answer). Each answer is validated; an answer that is unreadable or
//! invalid falls back to the stage's rules, with a warning (kinds and
//! fallbacks in docs/profiles.md, "memorix: LLM mode").
//!
//! - Extract (`memorix_extract`): up to five facts, the entity (one of the
//!   existing names or the caller's) and the type (one of Memorix's ten).
//!   The model's facts join the caller's unless they overlap one of them
//!   (or an earlier kept one) by word-set Dice ≥ [`FACT_OVERLAP`].
//! - Resolve (`memorix_resolve`), only when the search found memories:
//!   add / update / delete / noop against the hits (Memorix's four
//!   operations), mapped to new / merge / evolve / discard.
//! - Evaluate (`memorix_evaluate`): score, category and reason; the
//!   category stands only when it is the score's under the thresholds.

use std::sync::Arc;

use serde_json::{Value as Json, json};

use super::evaluate::{Category, Value, categorize};
use super::extract::{EntityMatch, Extracted, MAX_EXTRACTED_FACTS, ResolvedEntity, TYPES};
use super::js;
use super::resolve::{Hit, Resolution, ResolveAction, merge_facts, merge_narratives};
use super::search::{dice, tokens};
use crate::error::{Error, Result};
use crate::llm::parse::{clean_answer, find_json_object};
use crate::llm::prompts::{self, MAX_KNOWN_ENTITIES, MEMORIX_FENCE_TAGS, Template, defuse};
use crate::llm::{CallContext, Llm, LlmRequest, LlmSettings, Sampling, Stage, complete_budgeted};
use crate::pipeline::StageMode;
use crate::pipeline::judge::{Judge, JudgeContext, JudgeOutput, JudgePair};
use crate::types::{LlmUsage, Warning};

/// Most facts the Extract call is asked for (the prompt asks for 3–5).
pub const LLM_MAX_FACTS: usize = 5;
/// A model fact is dropped when its word-set Dice with a caller fact (or an
/// earlier kept fact) is at least this.
pub const FACT_OVERLAP: f64 = 0.6;
/// Characters of a narrative shown (Memorix shows 500 to its Resolve call).
pub const NARRATIVE_CHARS: usize = 1000;
/// Characters of a stored memory's narrative shown to Resolve (Memorix: 300).
pub const HIT_NARRATIVE_CHARS: usize = 300;
/// Longest reason and fact the schemas allow (bounds the answer's tokens).
pub const REASON_MAX: usize = 160;
pub const FACT_MAX: usize = 120;

/// The three calls behind the recorded boundary.
pub struct MemorixLlm {
    llm: Arc<dyn Llm>,
    settings: LlmSettings,
    extract: Template,
    resolve: Template,
    evaluate: Template,
}

/// What the calls of one observation cost and said.
#[derive(Debug, Default)]
pub struct Calls {
    pub usage: LlmUsage,
    pub warnings: Vec<Warning>,
}

/// The model's Extract answer, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractAnswer {
    pub facts: Vec<String>,
    pub entity: String,
    pub obs_type: String,
}

fn flat(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn text(s: &str, chars: usize) -> String {
    defuse(js::slice(s, chars).trim(), &MEMORIX_FENCE_TAGS)
}

fn listed(facts: &[String]) -> String {
    if facts.is_empty() {
        "(none)".into()
    } else {
        defuse(&facts.iter().map(|f| format!("- {}", flat(f))).collect::<Vec<_>>().join("\n"), &MEMORIX_FENCE_TAGS)
    }
}

/// The entity names the Extract answer may give: the existing ones (at most
/// [`MAX_KNOWN_ENTITIES`], the latest kept) and the caller's, without repeats.
pub fn entity_choices(existing: &[String], caller: &str) -> Vec<String> {
    let start = existing.len().saturating_sub(MAX_KNOWN_ENTITIES);
    let mut seen = std::collections::HashSet::new();
    existing[start..]
        .iter()
        .map(String::as_str)
        .chain([caller])
        .filter(|n| !n.trim().is_empty() && seen.insert(*n))
        .map(str::to_string)
        .collect()
}

/// The Extract answer's schema.
pub fn extract_schema(entities: &[String]) -> String {
    let entity = if entities.is_empty() { json!({"type": "string"}) } else { json!({"type": "string", "enum": entities}) };
    // Property order is writing order (llama.cpp's grammar keeps it): the
    // short choices first, the facts last.
    format!(
        r#"{{"type": "object", "properties": {{"type": {}, "entity": {}, "facts": {}}}, "required": ["type", "entity", "facts"]}}"#,
        json!({"type": "string", "enum": TYPES}),
        entity,
        json!({"type": "array", "maxItems": LLM_MAX_FACTS, "items": {"type": "string", "maxLength": FACT_MAX}}),
    )
}

/// The Resolve answer's schema: `targetId` one of the hits' ids or empty.
pub fn resolve_schema(ids: &[&str]) -> String {
    format!(
        r#"{{"type": "object", "properties": {{"action": {}, "targetId": {}, "reason": {}}}, "required": ["action", "targetId", "reason"]}}"#,
        json!({"type": "string", "enum": ["add", "update", "delete", "noop"]}),
        json!({"type": "string", "enum": ids}),
        json!({"type": "string", "maxLength": REASON_MAX}),
    )
}

/// The Evaluate answer's schema.
pub fn evaluate_schema() -> String {
    format!(
        r#"{{"type": "object", "properties": {{"score": {}, "category": {}, "reason": {}}}, "required": ["score", "category", "reason"]}}"#,
        json!({"type": "number"}),
        json!({"type": "string", "enum": ["core", "contextual", "ephemeral"]}),
        json!({"type": "string", "maxLength": REASON_MAX}),
    )
}

fn answer(kind: &str, stage: &str, text: &str, warnings: &mut Vec<Warning>) -> Option<serde_json::Map<String, Json>> {
    let cleaned = clean_answer(text, warnings);
    let obj = find_json_object(&cleaned, warnings);
    if obj.is_none() {
        let excerpt: String = cleaned.chars().take(120).collect();
        warnings.push(Warning::new(kind, format!("no JSON object in the memorix {stage} answer: {excerpt:?}; the rules decide")));
    }
    obj
}

/// Reads the Extract answer. `None` (with a `memorix_llm_extract_invalid`
/// warning) when it is unreadable or its type or entity is not one offered.
pub fn parse_extract(text: &str, entities: &[String], caller_facts: &[String], warnings: &mut Vec<Warning>) -> Option<ExtractAnswer> {
    const KIND: &str = "memorix_llm_extract_invalid";
    let obj = answer(KIND, "extract", text, warnings)?;
    let obs_type = obj.get("type").and_then(Json::as_str).unwrap_or("").trim().to_string();
    if !TYPES.contains(&obs_type.as_str()) {
        warnings.push(Warning::new(KIND, format!("memorix extract answer: unknown type {obs_type:?}; the rules decide")));
        return None;
    }
    let entity = obj.get("entity").and_then(Json::as_str).unwrap_or("").trim().to_string();
    if !entities.contains(&entity) {
        warnings.push(Warning::new(KIND, format!("memorix extract answer: entity {entity:?} is not one offered; the rules decide")));
        return None;
    }
    let Some(list) = obj.get("facts").and_then(Json::as_array) else {
        warnings.push(Warning::new(KIND, "memorix extract answer: no facts list; the rules decide"));
        return None;
    };
    Some(ExtractAnswer { facts: merge_model_facts(list.iter().filter_map(Json::as_str), caller_facts), entity, obs_type })
}

/// The model's facts that join the caller's: trimmed, of a kept length
/// (5–120), not overlapping a caller fact or an earlier kept one (word-set
/// Dice ≥ [`FACT_OVERLAP`]), at most [`LLM_MAX_FACTS`].
pub fn merge_model_facts<'a>(model: impl Iterator<Item = &'a str>, caller: &[String]) -> Vec<String> {
    let mut known: Vec<_> = caller.iter().map(|f| tokens(f)).collect();
    let mut out = Vec::new();
    for f in model {
        let f = flat(f);
        if !super::extract::FACT_LEN.contains(&js::len(&f)) {
            continue;
        }
        let t = tokens(&f);
        if known.iter().any(|k| dice(k, &t) >= FACT_OVERLAP) {
            continue;
        }
        known.push(t);
        out.push(f);
        if out.len() == LLM_MAX_FACTS.min(MAX_EXTRACTED_FACTS) {
            break;
        }
    }
    out
}

/// Applies a valid Extract answer over the rules' extraction (title
/// normalisation stays the rules'): the model's facts replace the patterns'
/// when it gave any (else the patterns' stay, with a
/// `memorix_llm_extract_no_facts` warning); an existing name it names
/// becomes the entity (`match` = `llm`); its type, when it differs from the
/// rules' one, replaces it (`typeCorrected` when it differs from the
/// declared type).
pub fn apply_extract(mut x: Extracted, a: ExtractAnswer, caller_entity: &str, declared: &str, warnings: &mut Vec<Warning>) -> Extracted {
    if a.facts.is_empty() {
        warnings
            .push(Warning::new("memorix_llm_extract_no_facts", "the memorix extract answer gave no new fact; the patterns' facts stand"));
    } else {
        let caller = x.facts.len() - x.extracted_facts.len();
        x.facts.truncate(caller);
        x.facts.extend(a.facts.iter().cloned());
        x.extracted_facts = a.facts;
    }
    if a.entity != caller_entity && a.entity != x.entity.name {
        x.entity = ResolvedEntity { name: a.entity, resolved: true, existed: true, matched: EntityMatch::Llm };
    }
    if a.obs_type != x.obs_type {
        x.type_corrected = a.obs_type != declared;
        x.obs_type = a.obs_type;
    }
    x
}

/// Reads the Resolve answer against the hits. `None` (with a
/// `memorix_llm_resolve_invalid` warning) when it is unreadable, or an
/// update or delete names no hit.
pub fn parse_resolve(text: &str, x: &Extracted, hits: &[Hit], warnings: &mut Vec<Warning>) -> Option<Resolution> {
    const KIND: &str = "memorix_llm_resolve_invalid";
    let obj = answer(KIND, "resolve", text, warnings)?;
    let action = obj.get("action").and_then(Json::as_str).unwrap_or("").trim().to_lowercase();
    let target = obj.get("targetId").and_then(Json::as_str).map(str::trim).unwrap_or("");
    let hit = hits.iter().find(|h| h.id == target);
    let reason = obj.get("reason").and_then(Json::as_str).map(flat).filter(|r| !r.is_empty()).unwrap_or_else(|| "LLM decision".into());
    let reason = format!("LLM: {reason}");
    match (action.as_str(), hit) {
        ("add", _) => Some(Resolution { action: ResolveAction::New, target_id: None, reason, merged: None }),
        ("noop", h) => Some(Resolution { action: ResolveAction::Discard, target_id: h.map(|h| h.id.clone()), reason, merged: None }),
        ("update", Some(h)) => Some(Resolution {
            action: ResolveAction::Merge,
            target_id: Some(h.id.clone()),
            reason,
            merged: Some((merge_narratives(&h.narrative, &x.narrative), merge_facts(&h.facts, &x.facts))),
        }),
        ("delete", Some(h)) => Some(Resolution {
            action: ResolveAction::Evolve,
            target_id: Some(h.id.clone()),
            reason,
            merged: Some((x.narrative.clone(), merge_facts(&h.facts, &x.facts))),
        }),
        ("update" | "delete", None) => {
            warnings
                .push(Warning::new(KIND, format!("memorix resolve answer: {action} names no search hit ({target:?}); the rules decide")));
            None
        }
        _ => {
            warnings.push(Warning::new(KIND, format!("memorix resolve answer: unknown action {action:?}; the rules decide")));
            None
        }
    }
}

/// Reads the Evaluate answer. `None` (with a `memorix_llm_evaluate_invalid`
/// warning) when it is unreadable or has no finite score or no known
/// category; a score outside [0, 1] is clamped (`memorix_llm_score_clamped`).
/// The category is the score's under the thresholds `cuts` (core, contextual),
/// as in rules mode; a model category that disagrees with its own score is
/// overruled (`memorix_llm_category_mismatch`).
pub fn parse_evaluate(text: &str, cuts: (f64, f64), warnings: &mut Vec<Warning>) -> Option<Value> {
    const KIND: &str = "memorix_llm_evaluate_invalid";
    let obj = answer(KIND, "evaluate", text, warnings)?;
    let Some(score) = obj.get("score").and_then(Json::as_f64).filter(|s| s.is_finite()) else {
        warnings.push(Warning::new(KIND, "memorix evaluate answer: no finite score; the rules decide"));
        return None;
    };
    let cat = obj.get("category").and_then(Json::as_str).unwrap_or("");
    let Some(said) = Category::parse(cat.trim()) else {
        warnings.push(Warning::new(KIND, format!("memorix evaluate answer: unknown category {cat:?}; the rules decide")));
        return None;
    };
    if !(0.0..=1.0).contains(&score) {
        warnings.push(Warning::new("memorix_llm_score_clamped", format!("memorix evaluate answer: score {score} clamped to [0, 1]")));
    }
    let score = score.clamp(0.0, 1.0);
    let category = categorize(score, cuts.0, cuts.1);
    if category != said {
        warnings.push(Warning::new(
            "memorix_llm_category_mismatch",
            format!("memorix evaluate answer: category {said} for score {score}; the score's category {category} stands"),
        ));
    }
    let reason = obj.get("reason").and_then(Json::as_str).map(flat).filter(|r| !r.is_empty()).unwrap_or_else(|| "LLM decision".into());
    Some(Value { score, category, reason: format!("{category}: LLM: {reason}") })
}

impl MemorixLlm {
    pub fn new(llm: Arc<dyn Llm>, settings: &LlmSettings) -> Result<Self> {
        Ok(MemorixLlm {
            llm,
            settings: settings.clone(),
            extract: prompts::memorix_extract_template()?,
            resolve: prompts::memorix_resolve_template()?,
            evaluate: prompts::memorix_evaluate_template()?,
        })
    }

    fn request(
        &self,
        stage: Stage,
        t: &Template,
        vars: &[(&str, &str)],
        schema: String,
        items: usize,
        ctx: &JudgeContext<'_>,
    ) -> Result<LlmRequest> {
        Ok(LlmRequest {
            stage,
            model: self.settings.model.clone(),
            template: t.id.clone(),
            messages: t.render(vars)?,
            sampling: Sampling { max_tokens: self.settings.budget(items), ..self.settings.sampling },
            schema: Some(schema),
            tools: None,
            context: CallContext { conversation: ctx.conversation_id.to_string(), episode: ctx.episode_id.to_string() },
        })
    }

    fn ask(&self, req: &LlmRequest, calls: &mut Calls) -> Result<String> {
        let (resp, usage, _) = complete_budgeted(self.llm.as_ref(), req, self.settings.max_tokens_cap)?;
        if usage.retries > 0 {
            calls.warnings.push(crate::pipeline::extract::llm::retried(req));
        }
        calls.usage.add(usage);
        Ok(resp.text)
    }

    /// The Extract request for an observation (its title, narrative and
    /// facts as given) against the entity names it may choose from.
    pub fn extract_request(&self, ctx: &JudgeContext<'_>, input: &super::observe::Input, entities: &[String]) -> Result<LlmRequest> {
        let names = defuse(&entities.join(", "), &MEMORIX_FENCE_TAGS);
        let vars = [
            ("types", &TYPES.join(", ") as &str),
            ("names", &names),
            ("title", &text(&flat(&input.title), 200)),
            ("type", &input.obs_type),
            ("entity", &text(&flat(&input.entity_name), 200)),
            ("narrative", &text(&input.narrative, NARRATIVE_CHARS)),
            ("facts", &listed(&input.facts)),
        ];
        // The budget: the base and a share per fact asked for.
        self.request(Stage::Extract, &self.extract, &vars, extract_schema(entities), LLM_MAX_FACTS, ctx)
    }

    /// Extract: the rules' extraction `x` with the model's answer applied,
    /// or `x` unchanged (with a warning) when the answer is not usable.
    /// Returns whether the model's answer was used.
    pub fn extract(
        &self,
        ctx: &JudgeContext<'_>,
        input: &super::observe::Input,
        existing: &[String],
        x: Extracted,
        calls: &mut Calls,
    ) -> Result<(Extracted, bool)> {
        let entities = entity_choices(existing, &input.entity_name);
        let req = self.extract_request(ctx, input, &entities)?;
        let answer = self.ask(&req, calls)?;
        match parse_extract(&answer, &entities, &input.facts, &mut calls.warnings) {
            Some(a) => Ok((apply_extract(x, a, &input.entity_name, &input.obs_type, &mut calls.warnings), true)),
            None => Ok((x, false)),
        }
    }

    /// The Resolve request for an extracted observation and its hits (at least one).
    pub fn resolve_request(&self, ctx: &JudgeContext<'_>, x: &Extracted, hits: &[Hit]) -> Result<LlmRequest> {
        let stored: Vec<String> = hits
            .iter()
            .map(|h| {
                format!(
                    "[{}] {} | {} | Facts: {}",
                    h.id,
                    flat(&h.title),
                    flat(js::slice(&h.narrative, HIT_NARRATIVE_CHARS)),
                    flat(js::slice(&h.facts.join("; "), 200))
                )
            })
            .collect();
        let stored = defuse(&stored.join("\n"), &MEMORIX_FENCE_TAGS);
        let facts = defuse(&flat(&x.facts.join("; ")), &MEMORIX_FENCE_TAGS);
        let vars = [
            ("title", &text(&flat(&x.title), 200) as &str),
            ("narrative", &text(&x.narrative, NARRATIVE_CHARS)),
            ("facts", &facts),
            ("stored", &stored),
        ];
        let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).chain([""]).collect();
        self.request(Stage::Resolve, &self.resolve, &vars, resolve_schema(&ids), hits.len(), ctx)
    }

    /// Resolve against the hits: the model's decision, or `None` (with a
    /// warning) when it is not usable.
    pub fn resolve(&self, ctx: &JudgeContext<'_>, x: &Extracted, hits: &[Hit], calls: &mut Calls) -> Result<Option<Resolution>> {
        let req = self.resolve_request(ctx, x, hits)?;
        let answer = self.ask(&req, calls)?;
        Ok(parse_resolve(&answer, x, hits, &mut calls.warnings))
    }

    /// The Evaluate request for an extracted observation.
    pub fn evaluate_request(&self, ctx: &JudgeContext<'_>, x: &Extracted) -> Result<LlmRequest> {
        let vars = [
            ("type", &x.obs_type as &str),
            ("title", &text(&flat(&x.title), 200)),
            ("narrative", &text(&x.narrative, NARRATIVE_CHARS)),
            ("facts", &defuse(&flat(&x.facts.join("; ")), &MEMORIX_FENCE_TAGS)),
        ];
        self.request(Stage::Evaluate, &self.evaluate, &vars, evaluate_schema(), 0, ctx)
    }

    /// Evaluate: the model's value, or `None` (with a warning) when it is not usable.
    pub fn evaluate(&self, ctx: &JudgeContext<'_>, x: &Extracted, cuts: (f64, f64), calls: &mut Calls) -> Result<Option<Value>> {
        let req = self.evaluate_request(ctx, x)?;
        let answer = self.ask(&req, calls)?;
        Ok(parse_evaluate(&answer, cuts, &mut calls.warnings))
    }

    pub fn id(&self) -> String {
        format!("llm:{}:memorix-v{}", self.settings.model, self.extract.id.version)
    }
}

impl Judge for MemorixLlm {
    fn mode(&self) -> StageMode {
        StageMode::Llm
    }
    fn id(&self) -> String {
        MemorixLlm::id(self)
    }
    fn judge(&self, _ctx: &JudgeContext<'_>, _pairs: &[JudgePair]) -> Result<JudgeOutput> {
        Err(Error::Other("the memorix profile forms observations; it judges no pairs".into()))
    }
    fn memorix(&self) -> Option<&MemorixLlm> {
        Some(self)
    }
}

#[cfg(test)]
#[path = "llm_tests.rs"]
mod tests;
