//! One observation through Extract → Resolve → Evaluate: the formation
//! itself, with no store and no state, so the differential test and the
//! episode driver run the same code.

use super::evaluate::{self, Value};
use super::extract::{self, Extracted};
use super::formed::{FormedMemory, PipelineInfo, StageRan, StagesRan};
use super::llm::{Calls, MemorixLlm};
use super::observe::Input;
use super::resolve::{self, Hit, Resolution, Thresholds};
use super::search::MemorySearch;
use crate::error::Result;
use crate::pipeline::Config;
use crate::pipeline::StageMode;
use crate::pipeline::judge::JudgeContext;

/// The figures formation reads from the config.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    pub thresholds: Thresholds,
    /// (core, contextual) minimum value scores.
    pub cuts: (f64, f64),
}

impl Figures {
    pub fn of(cfg: &Config) -> Figures {
        Figures {
            thresholds: Thresholds {
                duplicate: cfg.memorix.duplicate_min,
                high: cfg.memorix.high_min,
                medium: cfg.memorix.medium_min,
                evidence: cfg.memorix.evidence_of_change,
            },
            cuts: (cfg.memorix.core_min, cfg.memorix.contextual_min),
        }
    }
}

/// What formation made of one observation.
#[derive(Debug, Clone, PartialEq)]
pub struct Formation {
    pub extracted: Extracted,
    pub hits: Vec<Hit>,
    pub resolution: Resolution,
    pub value: Value,
    /// LLM mode: what decided each stage.
    pub stages: Option<StagesRan>,
}

impl Formation {
    /// The `FormedMemory` record.
    pub fn record(&self, input: &Input, mode: StageMode) -> FormedMemory {
        let x = &self.extracted;
        FormedMemory {
            obs_type: x.obs_type.clone(),
            title: x.title.clone(),
            caller_facts: input.facts.clone(),
            extracted_facts: x.extracted_facts.clone(),
            resolved_entity: x.entity.clone(),
            title_improved: x.title_improved,
            type_corrected: x.type_corrected,
            resolution: self.resolution.clone(),
            value: self.value.clone(),
            pipeline: PipelineInfo { mode, stages_completed: 3, stages: self.stages },
            hits: self.hits.iter().map(|h| (h.id.clone(), h.score)).collect(),
        }
    }
}

/// Rules-mode formation of `input` against the existing entity names and memories.
pub fn rules(input: &Input, entities: &[String], search: &dyn MemorySearch, f: Figures) -> Result<Formation> {
    let extracted = extract::rules(&input.title, &input.narrative, &input.facts, &input.entity_name, &input.obs_type, entities);
    let hits = search.search(&resolve::query(&extracted), resolve::SEARCH_LIMIT)?;
    let resolution = resolve::rules(&extracted, &hits, f.thresholds);
    let value = evaluate::rules(&extracted, f.cuts);
    Ok(Formation { extracted, hits, resolution, value, stages: None })
}

/// LLM-mode formation: each stage's rules, then the model's one call for
/// the stage (Resolve only when the search found memories), whose usable
/// answer replaces the rules' (docs/profiles.md, "memorix: LLM mode").
/// `extract_llm` false keeps Extract in rules mode (`--extract rules`).
#[allow(clippy::too_many_arguments)]
pub fn llm(
    input: &Input,
    entities: &[String],
    search: &dyn MemorySearch,
    f: Figures,
    model: &MemorixLlm,
    ctx: &JudgeContext<'_>,
    extract_llm: bool,
    calls: &mut Calls,
) -> Result<Formation> {
    let rules_x = extract::rules(&input.title, &input.narrative, &input.facts, &input.entity_name, &input.obs_type, entities);
    let (extracted, extract) = if extract_llm {
        let (x, used) = model.extract(ctx, input, entities, rules_x, calls)?;
        (x, if used { StageRan::Llm } else { StageRan::Fallback })
    } else {
        (rules_x, StageRan::Rules)
    };
    let hits = search.search(&resolve::query(&extracted), resolve::SEARCH_LIMIT)?;
    let (resolution, resolve) = if hits.is_empty() {
        (resolve::rules(&extracted, &hits, f.thresholds), StageRan::NoCall)
    } else {
        match model.resolve(ctx, &extracted, &hits, calls)? {
            Some(r) => (r, StageRan::Llm),
            None => (resolve::rules(&extracted, &hits, f.thresholds), StageRan::Fallback),
        }
    };
    let (value, evaluate) = match model.evaluate(ctx, &extracted, f.cuts, calls)? {
        Some(v) => (v, StageRan::Llm),
        None => (evaluate::rules(&extracted, f.cuts), StageRan::Fallback),
    };
    Ok(Formation { extracted, hits, resolution, value, stages: Some(StagesRan { extract, resolve, evaluate }) })
}
