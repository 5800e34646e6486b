//! memform: an offline evaluation harness for LLM-agent memory formation.
//! See ARCHITECTURE.md for the bird's-eye view and the code map.

pub mod compare;
pub mod config;
pub mod dataset;
pub mod dedupe;
pub mod embed;
pub mod error;
pub mod extract;
pub mod gate;
pub mod housekeeping;
mod http;
pub mod judge;
pub mod llm;
pub mod metrics;
pub mod normalize;
pub mod pipeline;
pub mod provenance;
pub mod regenerate;
pub mod report;
pub mod resolve;
pub mod run;
pub mod state;
pub mod store;
pub mod sweep;
pub mod types;
pub mod write;
