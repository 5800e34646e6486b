//! One observation through Extract → Resolve → Evaluate: the formation
//! itself, with no store and no state, so the differential test and the
//! episode driver run the same code.

use super::evaluate::{self, Value};
use super::extract::{self, Extracted};
use super::formed::{FormedMemory, PipelineInfo};
use super::observe::Input;
use super::resolve::{self, Hit, Resolution, Thresholds};
use super::search::MemorySearch;
use crate::config::Config;
use crate::pipeline::StageMode;

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
            thresholds: Thresholds { duplicate: cfg.memorix_duplicate_min, high: cfg.memorix_high_min, medium: cfg.memorix_medium_min },
            cuts: (cfg.memorix_core_min, cfg.memorix_contextual_min),
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
            pipeline: PipelineInfo { mode, stages_completed: 3 },
            hits: self.hits.iter().map(|h| (h.id.clone(), h.score)).collect(),
        }
    }
}

/// Rules-mode formation of `input` against the existing entity names and memories.
pub fn rules(input: &Input, entities: &[String], search: &dyn MemorySearch, f: Figures) -> Formation {
    let extracted = extract::rules(&input.title, &input.narrative, &input.facts, &input.entity_name, &input.obs_type, entities);
    let hits = search.search(&resolve::query(&extracted), resolve::SEARCH_LIMIT);
    let resolution = resolve::rules(&extracted, &hits, f.thresholds);
    let value = evaluate::rules(&extracted, f.cuts);
    Formation { extracted, hits, resolution, value }
}
