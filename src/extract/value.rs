//! Value score (noise filter). Placeholder until written.
use crate::types::ValueTier;
pub fn value_score(_f: &crate::types::CandidateFact) -> f64 { 0.0 }
pub fn value_tier(score: f64, core_min: f64, contextual_min: f64) -> ValueTier {
    if score >= core_min { ValueTier::Core } else if score >= contextual_min { ValueTier::Contextual } else { ValueTier::Ephemeral }
}
