//! The dreamers behind one trait (docs/dreaming.md, section 10): a dreamer
//! runs one pass and may act only through the capability registry
//! ([`Session`], bound to the pass's conversation, mode and caps). Every
//! dreamer's operations go through the same guards, caps and apply path.
//!
//! - [`Scripted`]: given requests, sent as they are (Signet's scripted
//!   executor in its pass tests);
//! - [`Rules`]: the rules extractor's triples become operations;
//! - [`Gold`]: the dataset's gold facts become operations (the ceiling);
//! - the `llm` dreamer ([`super::llm::LlmDreamer`]): a model in an agentic
//!   loop over the registry's tools.
//!
//! In a hygiene pass the scripted dreamers (rules, gold) decline every
//! pending attention record (`decline_attention`): they have no judgement
//! to archive or merge.

use super::hygiene::Attention;
use super::pass::PassMode;
use super::registry::Session;
use crate::error::Result;
use crate::pipeline::{Config, Stages};
use crate::store::Store;
use crate::types::{Conversation, Episode, LlmUsage};

/// What a dreamer sees of the pass it runs.
pub struct PassInfo<'a> {
    pub stages: Stages<'a>,
    pub conv: &'a Conversation,
    pub pass_id: &'a str,
    pub mode: PassMode,
    /// The episodes holding backlog turns, with their index.
    pub backlog: &'a [(&'a Episode, usize)],
    pub backlog_turns: usize,
    /// The pending hygiene attention.
    pub attention: &'a [Attention],
    pub cfg: &'a Config,
    /// Read only: the scripted dreamers read the names earlier passes
    /// created; every write goes through the session.
    pub store: &'a Store,
}

/// How a dreamer's pass ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DreamerOutcome {
    /// The dreamer's own summary (the llm dreamer's final message).
    pub summary: Option<String>,
    /// Model calls and tokens (the llm dreamer).
    pub usage: LlmUsage,
    /// Model turns (the llm dreamer).
    pub model_turns: usize,
    /// Why the loop stopped: `final`, `tool_cap`, `turn_cap`, `context`
    /// (the llm dreamer); `None` for a scripted pass.
    pub stop: Option<String>,
}

/// One pass's reasoning.
pub trait Dreamer: Send + Sync {
    /// The dreamer's id (`dreaming-rules:v1`, …).
    fn id(&self) -> String;
    /// Runs one pass through `tools` only.
    fn run_pass(&self, pass: &PassInfo<'_>, tools: &mut Session<'_>) -> Result<DreamerOutcome>;
}

/// Sends each request through `apply_ontology_ops`.
fn send_all(tools: &mut Session<'_>, requests: &[String]) -> Result<DreamerOutcome> {
    for r in requests {
        tools.call("apply_ontology_ops", r)?;
    }
    Ok(DreamerOutcome::default())
}

/// Given requests, sent as they are.
pub struct Scripted(pub Vec<String>);

impl Dreamer for Scripted {
    fn id(&self) -> String {
        "dreaming-scripted:v1".into()
    }
    fn run_pass(&self, _pass: &PassInfo<'_>, tools: &mut Session<'_>) -> Result<DreamerOutcome> {
        send_all(tools, &self.0)
    }
}

/// The hygiene pass of a scripted dreamer: every pending record declined.
fn hygiene(pass: &PassInfo<'_>, tools: &mut Session<'_>) -> Result<DreamerOutcome> {
    let requests: Vec<String> =
        super::profile::hygiene_requests(pass.conv, pass.attention, pass.cfg.dreaming.max_ops_per_call).into_iter().map(|r| r.0).collect();
    send_all(tools, &requests)
}

/// The rules extractor's triples become operations.
pub struct Rules;

impl Dreamer for Rules {
    fn id(&self) -> String {
        "dreaming-rules:v1".into()
    }
    fn run_pass(&self, pass: &PassInfo<'_>, tools: &mut Session<'_>) -> Result<DreamerOutcome> {
        if pass.mode == PassMode::Hygiene {
            return hygiene(pass, tools);
        }
        let requests: Vec<String> =
            super::profile::rules_requests(pass.stages, pass.conv, pass.backlog, pass.cfg, pass.store)?.into_iter().map(|r| r.0).collect();
        send_all(tools, &requests)
    }
}

/// The dataset's gold facts become operations (the ceiling).
pub struct Gold;

impl Dreamer for Gold {
    fn id(&self) -> String {
        "dreaming-gold:v1".into()
    }
    fn run_pass(&self, pass: &PassInfo<'_>, tools: &mut Session<'_>) -> Result<DreamerOutcome> {
        if pass.mode == PassMode::Hygiene {
            return hygiene(pass, tools);
        }
        let requests: Vec<String> =
            super::profile::gold_requests(pass.conv, pass.backlog, pass.cfg, pass.store)?.into_iter().map(|r| r.0).collect();
        send_all(tools, &requests)
    }
}
