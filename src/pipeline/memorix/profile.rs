//! The `memorix` [`Profile`]: formation of observations, not memform's five
//! stages, so it replaces the whole episode ([`Profile::episode`]).

use crate::config::Config;
use crate::error::{Error, Result};
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
        _judge: &dyn Judge,
        store: &Store,
    ) -> Result<EpisodeRecord> {
        super::episode::back(conv, episode, state, cfg, store)
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
        if stages.extractor.mode() == StageMode::Llm {
            return Err(Error::Config("profile = \"memorix\": LLM mode is not implemented for this profile yet; use --mode rules".into()));
        }
        super::episode::back(conv, episode, state, cfg, store)
    }
}
