//! The `memorix` [`Profile`]: formation of observations, not memform's five
//! stages, so it replaces the whole episode ([`Profile::episode`]).

use std::sync::Arc;

use super::episode::{Deps, LlmStages};
use crate::error::{Error, Result};
use crate::llm::{Llm, LlmSettings};
use crate::pipeline::Config;
use crate::pipeline::judge::Judge;
use crate::pipeline::profiles::Profile;
use crate::pipeline::{EpisodeFront, EpisodeRecord, StageMode, Stages};
use crate::state::ConvState;
use crate::store::Store;
use crate::types::{Conversation, Episode};

/// Memorix's Extract → Resolve → Evaluate (docs/profiles.md).
pub struct Memorix;

impl Profile for Memorix {
    fn name(&self) -> &'static str {
        "memorix"
    }
    fn summary(&self) -> &'static str {
        "Memorix's observation formation: Extract (facts, title, entity, type), Resolve (new/merge/evolve/discard), Evaluate (value category)"
    }
    fn back(
        &self,
        _front: &EpisodeFront,
        conv: &Conversation,
        episode: &Episode,
        state: &mut ConvState,
        cfg: &Config,
        stages: Stages<'_>,
        store: &Store,
    ) -> Result<EpisodeRecord> {
        super::episode::back(conv, episode, state, cfg, store, deps(stages)?)
    }
    fn llm_judge(&self, llm: Arc<dyn Llm>, settings: &LlmSettings) -> Result<Box<dyn Judge>> {
        Ok(Box::new(super::llm::MemorixLlm::new(llm, settings)?))
    }
    fn check_stages(&self, stages: Stages<'_>) -> Result<()> {
        // The profile extracts observations itself: the dataset's gold facts
        // cannot stand in for them, and a run saying `gold` would be false.
        if stages.extractor.mode() == StageMode::Gold {
            return Err(Error::Config(
            "profile = \"memorix\": --extract gold is not available (the profile extracts its own observations); use --extract rules or llm"
                .into(),
        ));
        }
        deps(stages).map(|_| ())
    }
    fn episode(
        &self,
        stages: Stages<'_>,
        conv: &Conversation,
        episode: &Episode,
        state: &mut ConvState,
        cfg: &Config,
        store: &Store,
    ) -> Result<EpisodeRecord> {
        super::episode::back(conv, episode, state, cfg, store, deps(stages)?)
    }
}

/// What the run's stages give an episode's formation: the model when the
/// judge is in LLM mode (the judge's mode is Resolve's and Evaluate's, the
/// extractor's Extract's) and the embedder.
fn deps(stages: Stages<'_>) -> Result<Deps<'_>> {
    let extract = stages.extractor.mode() == StageMode::Llm;
    let llm = match stages.judge.memorix() {
        Some(model) => Some(LlmStages { model, extract }),
        None if extract => {
            return Err(Error::Config(
                "profile = \"memorix\": LLM extraction needs the judge in LLM mode too (--mode llm, or --extract rules --judge llm)".into(),
            ));
        }
        None => None,
    };
    Ok(Deps { llm, embedder: Some(stages.embedder) })
}
