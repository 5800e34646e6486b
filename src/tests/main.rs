//! Integration tests: one binary (faster to build) with a module per concern.

mod cli;
mod determinism;
mod gate;
mod judging;
mod kill_rerun;
mod llm_replay;
mod reports;
mod scenarios;
mod support;
mod sweep;
