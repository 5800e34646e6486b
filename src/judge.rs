//! Stage 4, judge contradictions: pair each surviving candidate with the live
//! facts it may contradict, ask a [`Judge`] for verdicts, then apply the
//! guards. Rules and LLM judges differ only in how they answer.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::types::{LlmUsage, Verdict, Warning};

/// One side of a pair, as a judge sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairFact {
    pub subject: String,
    pub predicate: String,
    pub object: String,
    pub content: String,
    pub valid_until: Option<String>,
}

/// A (live fact, candidate) pair to judge; `index` is what a model answers by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgePair {
    pub index: usize,
    pub live: PairFact,
    pub candidate: PairFact,
    /// Cosine of the two contents.
    pub cosine: f64,
}

/// Where the pairs come from, for prompts and error messages.
#[derive(Debug, Clone, Copy)]
pub struct JudgeContext<'a> {
    pub conversation_id: &'a str,
    pub episode_id: &'a str,
}

/// A judge's answer: one verdict per pair index it answered. Pairs it did
/// not answer are `neither`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgeOutput {
    pub verdicts: Vec<(usize, Verdict)>,
    /// Indices flagged for human review (rules: polarity/antonym conflicts).
    pub review_needed: Vec<usize>,
    pub warnings: Vec<Warning>,
    pub usage: LlmUsage,
}

/// Answers all pairs of one episode at once (one model call at most).
/// An `Err` makes every verdict of the episode `neither`.
pub trait Judge: Send + Sync {
    fn id(&self) -> String;
    fn judge(&self, ctx: &JudgeContext<'_>, pairs: &[JudgePair]) -> Result<JudgeOutput>;
}
