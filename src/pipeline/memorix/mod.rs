//! The `memorix` profile: Memorix's observation formation, Extract →
//! Resolve → Evaluate, over each observation of an episode (an agent's
//! observations, or a transcript's turns mapped to observations). Every
//! rule, its figure and where memform departs from Memorix are in
//! docs/profiles.md.
//!
//! - [`observe`]: an episode's observations, their fallbacks, the
//!   transcript mapping;
//! - [`extract`], [`resolve`], [`evaluate`]: the three stages in rules mode;
//! - [`llm`]: the three stages' model calls in LLM mode and their fallbacks;
//! - [`search`]: the memories Resolve searches;
//! - [`form`]: one observation through the three stages;
//! - [`formed`]: the `FormedMemory` record;
//! - [`episode`], [`write`]: one episode's plan, its transaction and the mirror;
//! - [`profile`]: the [`Profile`](crate::pipeline::profiles::Profile);
//! - [`js`]: the JavaScript string semantics the rules need.

pub mod config;
pub mod episode;
pub mod evaluate;
pub mod extract;
pub mod form;
pub mod formed;
pub mod js;
pub mod llm;
pub mod observe;
pub mod profile;
pub mod resolve;
pub mod search;
pub mod write;

pub use formed::FormedMemory;
pub use profile::Memorix;
