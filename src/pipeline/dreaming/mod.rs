//! The `dreaming` profile's first step: Signet's Dreaming operation
//! contract and the pure checks of `validate_proposal` (docs/dreaming.md,
//! sections 3, 4 and 14).
//!
//! **Not yet a profile.** Nothing here is registered in
//! [`super::profiles::PROFILES`] and no run calls it: the ontology store,
//! the apply path, the capability registry, passes and dreamers are designed
//! in docs/dreaming.md and not written yet.
//!
//! - [`contract`]: the 20 operations, their payloads and the request
//!   envelope; [`contract::parse_apply_request`] reads a request, rejecting
//!   unknown fields and operations;
//! - [`validate`]: the store-free guards — scope, required texts, attention
//!   provenance within a request, and exact quotes in the cited turn;
//! - [`quality`]: the entity-label gate and the contradiction detector;
//! - [`pass`]: the store-free pass rules — mode selection, early exit, the
//!   watermark rule, the triggers (no pass records yet).

pub mod config;
pub mod contract;
pub mod hygiene;
pub mod metrics;
pub mod pass;
pub mod plan;
pub mod profile;
pub mod quality;
pub mod validate;
