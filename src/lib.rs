//! memform: an offline evaluation harness for LLM-agent memory formation.
//! See ARCHITECTURE.md for the bird's-eye view and the code map.
//!
//! The default feature `full` brings runs, metrics, reports, compare and
//! sweeps (polars, plotters) and the in-process MiniLM embedder (candle);
//! without it (the fuzz targets' build) the importers, the config, the
//! stages and the LLM boundary remain.

#[cfg(feature = "full")]
pub mod calibrate;
#[cfg(feature = "full")]
pub mod compare;
pub mod config;
pub mod dataset;
pub mod embed;
pub mod error;
#[cfg(feature = "full")]
pub mod gate;
pub mod housekeeping;
mod http;
pub mod limits;
pub mod llm;
pub mod memory;
#[cfg(feature = "full")]
pub mod metrics;
pub mod model;
pub mod names;
pub mod normalize;
pub mod paths;
pub mod pipeline;
pub mod provenance;
#[cfg(feature = "full")]
pub mod qa;
pub mod redact;
#[cfg(feature = "full")]
pub mod regenerate;
#[cfg(feature = "full")]
pub mod report;
#[cfg(feature = "full")]
pub mod run;
pub mod rundir;
pub mod state;
pub mod store;
#[cfg(feature = "full")]
pub mod sweep;
#[cfg(feature = "full")]
pub mod tables;
pub mod types;
