//! Profiles: a seed system's formation behaviour as a named composition of
//! stage implementations, with its config defaults. A profile is one module
//! (or one type here) plus one entry in [`PROFILES`]; the driver never
//! changes for it. Chosen with `--profile NAME` or `profile = "NAME"`.

use std::sync::Arc;

use super::extract::{Extractor, LlmExtractor, RulesExtractor};
use super::judge::{Judge, LlmJudge, RulesJudge};
use super::{EpisodeFront, EpisodeRecord, Stages, front};
use crate::error::{Error, Result};
use crate::llm::{Llm, LlmSettings};
use crate::pipeline::Config;
use crate::state::ConvState;
use crate::store::Store;
use crate::types::{Conversation, Episode};

/// A seed system's pipeline.
pub trait Profile: Send + Sync {
    /// The name `--profile` takes.
    fn name(&self) -> &'static str;
    /// One line for `memform profiles`.
    fn summary(&self) -> &'static str;
    /// Whether forming reads the store's search tables (FTS5 and vectors).
    /// A profile that never does lets a run fill the FTS5 index in bulk,
    /// once each conversation is formed ([`Store::defer_search_index`]).
    fn searches_while_forming(&self) -> bool {
        true
    }
    /// When the profile's model calls are an external system's, made
    /// through memform's OpenAI-compatible proxy (started by the command in
    /// LLM mode) rather than the recorded boundary's stages: the proxy's
    /// key normalisation rule set.
    fn model_proxy(&self) -> Option<&'static str> {
        None
    }
    /// The extractor rules mode uses.
    fn rules_extractor(&self, cfg: &Config) -> Box<dyn Extractor> {
        Box::new(RulesExtractor::new(cfg.max_input_chars))
    }
    /// The extractor LLM mode uses, behind the recorded boundary `llm`.
    fn llm_extractor(&self, llm: Arc<dyn Llm>, settings: &LlmSettings) -> Result<Box<dyn Extractor>> {
        Ok(Box::new(LlmExtractor::new(llm, settings)?))
    }
    /// The judge rules mode uses.
    fn rules_judge(&self, cfg: &Config) -> Box<dyn Judge> {
        Box::new(RulesJudge::new(cfg))
    }
    /// The judge LLM mode uses, behind the recorded boundary `llm`.
    fn llm_judge(&self, llm: Arc<dyn Llm>, settings: &LlmSettings) -> Result<Box<dyn Judge>> {
        Ok(Box::new(LlmJudge::new(llm, settings)?))
    }
    /// An error when the profile cannot run with these stages (checked once,
    /// before a run or sweep starts).
    fn check_stages(&self, _stages: Stages<'_>) -> Result<()> {
        Ok(())
    }
    /// Stage 1 and its vectors for one episode ([`front`]; a sweep computes
    /// it once and reuses it for every grid point).
    fn front(&self, stages: Stages<'_>, conv: &Conversation, episode: &Episode, state: &ConvState, cfg: &Config) -> Result<EpisodeFront> {
        front(stages, conv, episode, state, cfg)
    }
    /// Stages 2–5 of one episode whose front (stage 1 and its vectors) is
    /// done, with the run's stages (a sweep point's judge among them).
    #[allow(clippy::too_many_arguments)]
    fn back(
        &self,
        front: &EpisodeFront,
        conv: &Conversation,
        episode: &Episode,
        state: &mut ConvState,
        cfg: &Config,
        stages: Stages<'_>,
        store: &Store,
    ) -> Result<EpisodeRecord>;
    /// One whole episode: [`Profile::front`] then [`Profile::back`]. A
    /// profile whose formation is not stage 1's extraction overrides it.
    fn episode(
        &self,
        stages: Stages<'_>,
        conv: &Conversation,
        episode: &Episode,
        state: &mut ConvState,
        cfg: &Config,
        store: &Store,
    ) -> Result<EpisodeRecord> {
        let f = self.front(stages, conv, episode, state, cfg)?;
        self.back(&f, conv, episode, state, cfg, stages, store)
    }
}

/// Signet Pipeline v2: extraction in Signet's contract (rules mode's put
/// in it, or its own LLM call), candidate retrieval, per-fact
/// ADD/UPDATE/DELETE/NONE, the inline entity linker and Signet's write
/// semantics (docs/pipeline.md, "The signet profile").
pub struct Signet;

impl Profile for Signet {
    fn name(&self) -> &'static str {
        "signet"
    }
    fn summary(&self) -> &'static str {
        "Signet v2's extraction contract and caps, candidate retrieval, ADD/UPDATE/DELETE/NONE decisions, inline entity linker and write modes"
    }
    fn llm_extractor(&self, llm: Arc<dyn Llm>, settings: &LlmSettings) -> Result<Box<dyn Extractor>> {
        Ok(Box::new(super::signet::extract_llm::SignetLlmExtractor::new(llm, settings)?))
    }
    fn front(&self, stages: Stages<'_>, conv: &Conversation, episode: &Episode, state: &ConvState, cfg: &Config) -> Result<EpisodeFront> {
        super::signet::front::front(stages, conv, episode, state, cfg)
    }
    fn rules_judge(&self, _cfg: &Config) -> Box<dyn Judge> {
        Box::new(super::signet::RulesDecider)
    }
    fn llm_judge(&self, llm: Arc<dyn Llm>, settings: &LlmSettings) -> Result<Box<dyn Judge>> {
        Ok(Box::new(super::signet::llm::LlmDecider::new(llm, settings)?))
    }
    fn back(
        &self,
        front: &EpisodeFront,
        conv: &Conversation,
        episode: &Episode,
        state: &mut ConvState,
        cfg: &Config,
        stages: Stages<'_>,
        store: &Store,
    ) -> Result<EpisodeRecord> {
        super::signet::back(front, conv, episode, state, cfg, stages.judge, store)
    }
}

/// Every profile, the default first.
pub const PROFILES: &[&dyn Profile] = &[
    &super::soda::Soda,
    &Signet,
    &super::memorix::Memorix,
    &super::dreaming::profile::Dreaming,
    &super::external::EXTERNAL,
    &super::external::MEM0,
];

/// One line per config key set away from its default in a section that
/// `cfg`'s profile does not read: such a key is ignored, and the run says so
/// (generated from the sections, [`Config::ignored_by`]).
pub fn inapplicable(cfg: &Config) -> Result<Vec<String>> {
    let profile = by_name(&cfg.profile)?;
    cfg.ignored_by(profile.name())
}

/// The default profile's name.
pub const DEFAULT: &str = crate::config::DEFAULT_PROFILE;

/// The profile named `name`; an unknown name is a config error listing them.
pub fn by_name(name: &str) -> Result<&'static dyn Profile> {
    PROFILES.iter().copied().find(|p| p.name() == name).ok_or_else(|| {
        let names: Vec<&str> = PROFILES.iter().map(|p| p.name()).collect();
        let hint = crate::config::did_you_mean(name, names.iter().copied()).map(|c| format!(" (did you mean `{c}`?)")).unwrap_or_default();
        Error::Config(format!("profile = {name:?}: unknown profile{hint}; the profiles are {}", names.join(", ")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mistyped_profile_gets_a_suggestion() {
        let err = by_name("signt").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("unknown profile (did you mean `signet`?)"), "{err}");
    }

    #[test]
    fn the_default_profile_is_registered_and_unknown_names_list_the_profiles() {
        assert_eq!(by_name(DEFAULT).map(|p| p.name()).ok(), Some("soda"));
        let err = by_name("nope").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("unknown profile") && err.contains("soda"), "{err}");
        let mut names: Vec<&str> = PROFILES.iter().map(|p| p.name()).collect();
        names.dedup();
        assert_eq!(names.len(), PROFILES.len(), "profile names are unique");
    }
}
