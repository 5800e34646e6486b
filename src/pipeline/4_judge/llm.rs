//! [`LlmJudge`]: stage 4 in LLM mode. All pairs of an episode go in one
//! call; the answer gives one verdict per pair index. An answer that cannot
//! be read gives no verdict (so every pair is `neither`) and a warning; only
//! a failed call (transport error, fixture miss) is an `Err`.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::error::Result;
use crate::llm::parse::parse_verdicts;
use crate::llm::prompts::{self, FENCE_TAGS, Template, defuse};
use crate::llm::{CallContext, Llm, LlmRequest, LlmSettings, Stage, complete_budgeted};
use crate::pipeline::StageMode;
use crate::pipeline::extract::llm::{retried, strict};
use crate::pipeline::judge::{Judge, JudgeContext, JudgeOutput, JudgePair, PairFact};

/// Contradiction verdicts by a model behind the recorded boundary.
pub struct LlmJudge {
    llm: Arc<dyn Llm>,
    settings: LlmSettings,
    template: Template,
}

impl LlmJudge {
    pub fn new(llm: Arc<dyn Llm>, settings: &LlmSettings) -> Result<Self> {
        Ok(LlmJudge { llm, settings: settings.clone(), template: prompts::judge_template()? })
    }

    /// The request for one episode's pairs.
    pub fn request(&self, ctx: &JudgeContext<'_>, pairs: &[JudgePair]) -> Result<LlmRequest> {
        let text: Vec<String> = pairs
            .iter()
            .map(|p| format!("Pair {}:\n  stored: {}\n  new: {}", p.index, describe(&p.live), describe(&p.candidate)))
            .collect();
        let pairs_text = defuse(&text.join("\n"), &FENCE_TAGS);
        Ok(LlmRequest {
            stage: Stage::Judge,
            model: self.settings.model.clone(),
            template: self.template.id.clone(),
            messages: self.template.render(&[("pairs", &pairs_text)])?,
            sampling: crate::llm::Sampling { max_tokens: self.settings.budget(pairs.len()), ..self.settings.sampling },
            schema: Some(prompts::judge_schema(&pairs.iter().map(|p| p.index).collect::<Vec<_>>(), strict(&self.settings))?),
            tools: None,
            context: CallContext { conversation: ctx.conversation_id.to_string(), episode: ctx.episode_id.to_string() },
        })
    }
}

fn describe(f: &PairFact) -> String {
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut s = format!("{} ({} | {} | {})", flat(&f.content), flat(&f.subject), flat(&f.predicate), flat(&f.object));
    if let Some(until) = &f.valid_until {
        s.push_str(&format!(" [ended {}]", flat(until)));
    }
    s
}

impl Judge for LlmJudge {
    fn mode(&self) -> StageMode {
        StageMode::Llm
    }
    fn id(&self) -> String {
        format!("llm:{}:{}-v{}", self.settings.model, self.template.id.name, self.template.id.version)
    }

    fn judge(&self, ctx: &JudgeContext<'_>, pairs: &[JudgePair]) -> Result<JudgeOutput> {
        if pairs.is_empty() {
            return Ok(JudgeOutput::default());
        }
        let req = self.request(ctx, pairs)?;
        let (resp, usage, _) = complete_budgeted(self.llm.as_ref(), &req, self.settings.max_tokens_cap)?;
        let known: BTreeSet<usize> = pairs.iter().map(|p| p.index).collect();
        let mut parsed = parse_verdicts(&resp.text, &known);
        if usage.retries > 0 {
            parsed.warnings.insert(0, retried(&req));
        }
        Ok(JudgeOutput { verdicts: parsed.verdicts, review_needed: Vec::new(), warnings: parsed.warnings, usage })
    }
}
