//! Integration tests: one binary (faster to build) with a module per concern.

// Test and bench code may unwrap and print (the library may not).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

mod adapters;
mod calibrate;
mod ci;
mod cli;
mod compare_runs;
mod determinism;
mod dreaming;
mod gate;
mod hints;
mod judging;
mod kill_rerun;
mod layers;
mod llm_replay;
mod locomo_data;
mod mem0;
mod memorix;
mod out_dir;
mod pairs_data;
mod profiles;
mod provenance;
mod qa;
mod recorded;
mod refusals;
mod report_html;
mod reports;
mod scenarios;
mod secrets;
mod support;
mod sweep;
mod write_modes;
