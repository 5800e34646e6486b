//! External memory systems behind the adapter protocol (docs/adapters.md):
//! an adapter is a subprocess speaking JSON lines on stdin/stdout, started
//! once per conversation. The `external` profile runs the adapter
//! `--adapter CMD` names; a registry entry (`mem0`) is the same profile with
//! its own adapter command.
//!
//! - [`protocol`]: the messages and the checks on a reply;
//! - [`adapter`]: the process, its time and size limits;
//! - [`episode`]: the memories held, mapped onto memform's facts and written;
//! - [`config`]: the `[external]` section.

pub mod adapter;
pub mod config;
pub mod episode;
pub mod protocol;

use std::any::Any;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use self::adapter::{Adapter, Spawn};
use self::episode::IdMap;
use self::protocol::{Held, PROTOCOL, Request};
use crate::error::{Error, Result};
use crate::pipeline::profiles::Profile;
use crate::pipeline::{Config, EpisodeFront, EpisodeRecord, StageMode, Stages, ms};
use crate::state::ConvState;
use crate::store::{Store, SystemHit};
use crate::types::{Conversation, Episode};

/// A system memform reaches through an adapter.
#[derive(Debug, Clone, Copy)]
pub struct External {
    /// The profile's name.
    pub name: &'static str,
    pub summary: &'static str,
    /// The adapter command when `external.adapter` is empty.
    pub adapter: Option<&'static str>,
    /// Whether the system calls a model (through memform's proxy; it then
    /// runs only in LLM mode).
    pub uses_model: bool,
    /// The proxy's key normalisation rule set for its model calls.
    pub normalise: &'static str,
}

/// Any adapter, named by `--adapter CMD`.
pub const EXTERNAL: External = External {
    name: "external",
    summary: "an external memory system behind the adapter protocol (--adapter CMD; docs/adapters.md)",
    adapter: None,
    uses_model: false,
    normalise: "none",
};

/// mem0 (`mem0ai` from PyPI, `make mem0`) through `adapters/mem0/`.
pub const MEM0: External = External {
    name: "mem0",
    summary: "mem0 (mem0ai, pinned; `make mem0`) through adapters/mem0/: its LLM and embedder behind memform's proxy",
    adapter: Some("adapters/mem0/adapter.sh"),
    uses_model: true,
    normalise: "mem0",
};

/// What a run gives its adapters beside the config: their environment
/// (the proxy's URL) and a check made after each reply (the proxy's
/// missing fixtures: a replay miss fails the episode, naming the key).
#[derive(Clone, Default)]
pub struct Runtime {
    pub env: Vec<(String, String)>,
    pub check: Option<Arc<dyn Fn() -> Option<String> + Send + Sync>>,
    /// Held around each episode's exchange while `check` is set: one
    /// conversation at a time talks to the proxy, so a miss is the
    /// episode's that caused it.
    pub serial: Arc<Mutex<()>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("env", &self.env).field("check", &self.check.is_some()).finish()
    }
}

/// The profiles built on the adapter protocol.
pub const REGISTRY: &[External] = &[EXTERNAL, MEM0];

/// One conversation's adapter and the ids it reported.
struct Session {
    adapter: Option<Adapter>,
    ids: IdMap,
}

impl External {
    /// The adapter command a run uses.
    pub fn command<'c>(&self, cfg: &'c Config) -> Result<&'c str> {
        if !cfg.external.adapter.trim().is_empty() {
            return Ok(cfg.external.adapter.trim());
        }
        self.adapter.ok_or_else(|| {
            Error::Config(format!("profile = {:?}: no adapter command: give --adapter CMD (or external.adapter)", self.name))
        })
    }

    fn start(&self, conv: &Conversation, cfg: &Config, store: &Store) -> Result<Session> {
        let command = self.command(cfg)?;
        let build = store.path().parent().map(std::path::Path::to_path_buf).unwrap_or_default();
        let safe: String = conv.id.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
        let data_dir = build.join("adapter").join(safe);
        std::fs::create_dir_all(&data_dir).map_err(|e| Error::write(&data_dir, e))?;
        let mut env = cfg.external_runtime.env.clone();
        env.push(("MEMFORM_ADAPTER_PROTOCOL".into(), PROTOCOL.to_string()));
        env.push(("MEMFORM_DATA_DIR".into(), data_dir.display().to_string()));
        let spawn = Spawn {
            command,
            env: &env,
            timeout: Duration::from_secs(cfg.external.reply_timeout_s),
            max_bytes: cfg.external.max_reply_bytes,
            cwd: None,
        };
        let mut adapter = Adapter::start(&spawn).map_err(Error::Other)?;
        let begin = Request::BeginConversation {
            protocol: PROTOCOL,
            conversation: &conv.id,
            speakers: &conv.speakers,
            data_dir: data_dir.display().to_string(),
        };
        adapter.call(&begin).map_err(|e| Error::Other(format!("begin_conversation: {e}")))?;
        Ok(Session { adapter: Some(adapter), ids: IdMap::default() })
    }
}

fn session(m: &mut Box<dyn Any + Send>) -> Result<&mut Session> {
    m.downcast_mut::<Session>().ok_or_else(|| Error::Other("the conversation's companion is not an adapter session".into()))
}

impl Profile for External {
    fn name(&self) -> &'static str {
        self.name
    }
    fn summary(&self) -> &'static str {
        self.summary
    }
    fn searches_while_forming(&self) -> bool {
        false
    }
    fn model_proxy(&self) -> Option<&'static str> {
        Some(self.normalise)
    }
    fn check_stages(&self, stages: Stages<'_>) -> Result<()> {
        if stages.extractor.mode() == StageMode::Gold {
            return Err(Error::Config(format!(
                "profile = {:?}: --extract gold is not available (the system forms its own memories)",
                self.name
            )));
        }
        if self.uses_model && (stages.extractor.mode() != StageMode::Llm || stages.judge.mode() != StageMode::Llm) {
            return Err(Error::Config(format!(
                "profile = {:?}: the system calls a model: run it with --mode llm (its calls go through memform's proxy)",
                self.name
            )));
        }
        Ok(())
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
        self.episode(stages, conv, episode, state, cfg, store)
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
        let in_episode = |e: Error| Error::Other(format!("episode {}: {}", episode.id, crate::error::chain(&e)));
        let t = Instant::now();
        let companion = match &state.companion.0 {
            Some(c) => c.clone(),
            None => {
                let s = self.start(conv, cfg, store).map_err(in_episode)?;
                let c = Arc::new(Mutex::new(Box::new(s) as Box<dyn Any + Send>));
                state.companion.0 = Some(c.clone());
                c
            }
        };
        let mut guard = companion.lock().unwrap_or_else(|p| p.into_inner());
        let s = session(&mut guard)?;
        let adapter = s.adapter.as_mut().ok_or_else(|| in_episode(Error::Other("the adapter has ended".into())))?;
        let serial = cfg.external_runtime.check.as_ref().map(|_| cfg.external_runtime.serial.lock().unwrap_or_else(|p| p.into_inner()));
        let reply = adapter.call(&Request::add_episode(&conv.id, episode));
        // A model call the proxy could not answer fails the episode, whatever the adapter made of it.
        if let Some(problem) = cfg.external_runtime.check.as_ref().and_then(|c| c()) {
            let adapter_said = reply.as_ref().err().map(|e| format!("; {e}")).unwrap_or_default();
            return Err(in_episode(Error::Other(format!("{problem}{adapter_said}"))));
        }
        drop(serial);
        let reply = reply.map_err(|e| in_episode(Error::Other(e)))?;
        let held = Held { memories: reply.memories.unwrap_or_default(), decisions: reply.decisions.unwrap_or_default() };
        let form_ms = ms(t);
        let rec = episode::write(conv, episode, held, &mut s.ids, state, cfg, stages.embedder, store, form_ms).map_err(in_episode)?;
        if conv.episodes.last().is_some_and(|e| e.id == episode.id) {
            if let Some(mut adapter) = s.adapter.take() {
                // The system's own search, once formed: each QA question's hits.
                let mut hits = Vec::new();
                for (item, qa) in conv.gold.qa.iter().enumerate().filter(|(_, q)| !q.question.trim().is_empty()) {
                    let search = Request::Search { conversation: &conv.id, query: &qa.question, k: cfg.external.search_k };
                    let reply = adapter.call(&search).map_err(|e| in_episode(Error::Other(format!("QA item {item}: {e}"))))?;
                    for (rank, h) in reply.hits.unwrap_or_default().into_iter().take(cfg.external.search_k as usize).enumerate() {
                        let fact_id = s.ids.facts.get(&h.id).cloned();
                        hits.push(SystemHit { item, rank, fact_id, system_id: h.id, content: h.content, score: h.score });
                    }
                }
                store.write_system_search(&conv.id, &hits).map_err(in_episode)?;
                adapter.call(&Request::End { conversation: &conv.id }).map_err(|e| in_episode(Error::Other(e)))?;
                adapter.finish().map_err(|e| in_episode(Error::Other(e)))?;
            }
            drop(guard);
            state.companion.0 = None;
        }
        Ok(rec)
    }
}

/// The stages of a run whose memories an external system forms: they only
/// name the mode (`llm` when the system's model calls go through the
/// proxy), and are never called.
pub struct SystemStage {
    pub mode: StageMode,
    pub profile: &'static str,
}

impl SystemStage {
    fn refused(&self) -> Error {
        Error::Other(format!("profile {}: the external system forms its memories; memform's stages are not called", self.profile))
    }
}

impl crate::pipeline::extract::Extractor for SystemStage {
    fn id(&self) -> String {
        format!("{}-adapter", self.profile)
    }
    fn mode(&self) -> StageMode {
        self.mode
    }
    fn extract(&self, _input: &crate::pipeline::extract::ExtractInput<'_>) -> Result<crate::pipeline::extract::RawExtraction> {
        Err(self.refused())
    }
}

impl crate::pipeline::judge::Judge for SystemStage {
    fn id(&self) -> String {
        format!("{}-adapter", self.profile)
    }
    fn mode(&self) -> StageMode {
        self.mode
    }
    fn judge(
        &self,
        _ctx: &crate::pipeline::judge::JudgeContext<'_>,
        _pairs: &[crate::pipeline::judge::JudgePair],
    ) -> Result<crate::pipeline::judge::JudgeOutput> {
        Err(self.refused())
    }
}
