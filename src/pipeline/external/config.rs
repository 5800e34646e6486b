//! `[external]`: the adapter of an external memory system (docs/adapters.md),
//! read by the `external` profile and by the registry entries built on it
//! (`mem0`).

use serde::{Deserialize, Serialize};

use crate::config::{Bound, Section, int};

/// The adapter's command and its limits. Field docs are the reference for each key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExternalConfig {
    /// The adapter's command line (`--adapter CMD`): a program and its
    /// arguments, split at whitespace (no shell). Empty: the registry
    /// entry's own (`mem0`: `adapters/mem0/adapter.sh`); the `external`
    /// profile needs one.
    pub adapter: String,
    /// Seconds the adapter has to answer one message (its start included
    /// in the first); past it the adapter is killed and the run fails.
    pub reply_timeout_s: u64,
    /// The longest reply line the adapter may write, in bytes.
    pub max_reply_bytes: u64,
    /// Hits asked of the system's own `search` per QA question.
    pub search_k: u64,
}

impl Default for ExternalConfig {
    fn default() -> Self {
        ExternalConfig { adapter: String::new(), reply_timeout_s: 300, max_reply_bytes: 16 * 1024 * 1024, search_k: 10 }
    }
}

impl Section for ExternalConfig {
    const NAME: &'static str = "external";
    const BOUNDS: &'static [Bound] =
        &[int("reply_timeout_s", 1, 3600), int("max_reply_bytes", 1024, 256 * 1024 * 1024), int("search_k", 1, 100)];
    const FLAT_ALIASES: &'static [(&'static str, &'static str)] = &[];
    fn check_relations(&self) -> std::result::Result<(), String> {
        if self.adapter.len() > 4096 || self.adapter.contains(['\n', '\r', '\0']) {
            return Err("adapter: the command must be one line of at most 4096 bytes".into());
        }
        Ok(())
    }
}

/// Whether profile `profile` reads section `section`: its own, and
/// `[external]` for every profile built on the adapter protocol.
pub fn reads(profile: &str, section: &str) -> bool {
    profile == section || (section == ExternalConfig::NAME && super::REGISTRY.iter().any(|e| e.name == profile))
}
