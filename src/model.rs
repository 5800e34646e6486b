//! The vocabulary the pipeline and the store share, below both: a written
//! fact and entity ([`fact`]), the polarity keys cached with a fact
//! ([`polarity`]), the fixed outcome names ([`outcome`]), an extractor's
//! raw answer ([`raw`]) and an episode's
//! write plan with the [`write::WriteTx`] seam the store implements
//! ([`write`]), and the `dreaming` profile's ontology plan and read
//! snapshot ([`ontology`]). Nothing here decides; the pipeline decides with these types
//! and the store executes them.

pub mod fact;
pub mod ontology;
pub mod outcome;
pub mod polarity;
pub mod proposition;
pub mod raw;
pub mod write;
