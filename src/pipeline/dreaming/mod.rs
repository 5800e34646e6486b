//! The `dreaming` profile (docs/dreaming.md): Signet's Dreaming operation
//! contract, the checks of `validate_proposal`, the planner of
//! `apply_ontology_ops`, passes and the scripted dreamers.
//!
//! - [`contract`]: the 20 operations, their payloads and the request
//!   envelope; [`contract::parse_apply_request`] reads a request, rejecting
//!   unknown fields and operations;
//! - [`validate`]: the store-free guards — scope, required texts, attention
//!   provenance within a request, and exact quotes in the cited turn;
//! - [`quality`]: the entity-label gate and the contradiction detector;
//! - [`plan`]: the graph-state guards and the whole path of one call;
//! - [`hygiene`]: Signet's hygiene detectors → pending attention;
//! - [`content`]: contradictions and content attention, derived from the
//!   graph and the operation log;
//! - [`pass`]: the store-free pass rules — mode selection, early exit, the
//!   watermark rule, the triggers;
//! - [`profile`]: the pass runner, the rules and gold dreamers, the claims'
//!   projection into the run's memory; [`metrics`]: the ontology's figures.

pub mod config;
pub mod content;
pub mod contract;
pub mod dreamer;
mod graph_ops;
pub mod hygiene;
pub mod llm;
pub mod metrics;
pub mod ontology_extract;
pub mod pass;
pub mod plan;
pub mod profile;
pub mod quality;
pub mod registry;
pub mod validate;
