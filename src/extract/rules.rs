//! Rules extraction. Placeholder until written.
use super::{ExtractInput, Extractor, RawExtraction};
use crate::error::Result;
pub struct RulesExtractor;
impl Extractor for RulesExtractor {
    fn id(&self) -> String { "rules:v1".into() }
    fn extract(&self, _input: &ExtractInput<'_>) -> Result<RawExtraction> { Ok(RawExtraction::default()) }
}
