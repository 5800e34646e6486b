//! Post-processing guards. Placeholder until written.
use super::{ExtractInput, Extraction, RawExtraction};
use crate::config::Config;
pub fn postprocess(_raw: RawExtraction, _input: &ExtractInput<'_>, _cfg: &Config) -> Extraction { Extraction::default() }
