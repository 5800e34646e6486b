//! Integration tests: one binary (faster to build) with a module per concern.

mod cli;
mod determinism;
mod kill_rerun;
mod reports;
mod scenarios;
mod support;
