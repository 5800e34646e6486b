//! Integration tests: one binary (faster to build) with a module per concern.

mod ci;
mod cli;
mod determinism;
mod gate;
mod kill_rerun;
mod llm_replay;
mod locomo_data;
mod provenance;
mod recorded;
mod reports;
mod scenarios;
mod support;
mod sweep;
