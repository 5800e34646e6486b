//! `signet`'s decision stage: per extracted fact, ADD / UPDATE / DELETE /
//! NONE against the stored memories its candidate retrieval found. The
//! [`Decider`] seam has two implementations: [`RulesDecider`] (memform's own
//! deterministic policy, docs/pipeline.md) and the LLM decider
//! ([`super::llm::LlmDecider`], Signet v2's prompt contract).

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::normalize::normalize_content;
use crate::pipeline::StageMode;
use crate::pipeline::judge::{Antonyms, Judge, JudgeContext, JudgeOutput, JudgePair, PolarityKeys, polarity_conflict};
use crate::types::{CandidateFact, FactType, LlmUsage, Warning, string_enum};

string_enum! {
    /// What a decision does with its fact.
    pub enum DecisionAction {
        Add => "add",
        Update => "update",
        Delete => "delete",
        None => "none",
    }
}

/// The reason of an ADD decided without candidates (and without a model call).
pub const NO_CANDIDATES_REASON: &str = "no existing memories match this fact";

/// A stored memory the retrieval returned for a fact, as a decider sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryCandidate {
    pub id: String,
    pub fact_type: FactType,
    pub content: String,
    pub subject: String,
    pub predicate: String,
    pub object: String,
    /// The hybrid search's merged score.
    pub score: f64,
    /// Cosine of the fact's and the memory's vectors.
    pub cosine: f64,
}

/// One fact and its candidates.
#[derive(Debug, Clone, Copy)]
pub struct DecisionInput<'a> {
    pub fact: &'a CandidateFact,
    pub candidates: &'a [MemoryCandidate],
}

/// A decision that passed validation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub action: DecisionAction,
    /// The candidate an UPDATE, DELETE (or NONE) names.
    pub target: Option<String>,
    pub confidence: f64,
    pub reason: String,
}

/// A decider's answer for one fact: a decision, or none (dropped with a warning).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DecisionAnswer {
    pub decision: Option<Decision>,
    pub warnings: Vec<Warning>,
    pub usage: LlmUsage,
}

/// Decides one fact at a time against its candidates (never called
/// without candidates: that is an ADD without a decider).
pub trait Decider: Send + Sync {
    fn id(&self) -> String;
    fn mode(&self) -> StageMode;
    fn decide(&self, ctx: &JudgeContext<'_>, input: &DecisionInput<'_>, cfg: &Config) -> Result<DecisionAnswer>;
}

/// memform's deterministic decision policy for `signet` in rules mode,
/// first rule that applies (docs/pipeline.md, "The signet profile"):
/// NONE for a candidate with the same normalised content or a cosine at or
/// above `near_dup_threshold`; DELETE for a candidate with the same subject
/// and object when the fact carries `valid_until` (it ends that
/// relationship); UPDATE for a candidate with the same subject and either a
/// single-valued predicate with another object, or a negation/antonym
/// conflict sharing at least `antonym_min_shared_tokens` words; else ADD.
pub struct RulesDecider;

impl RulesDecider {
    pub const ID: &'static str = "signet-rules:v1";

    /// The policy's decision for one fact (candidates in retrieval order).
    pub fn policy(input: &DecisionInput<'_>, cfg: &Config) -> Decision {
        let fact = input.fact;
        let decision = |action, c: Option<&MemoryCandidate>, reason: String| Decision {
            action,
            target: c.map(|c| c.id.clone()),
            confidence: fact.confidence,
            reason,
        };
        let norm = normalize_content(&fact.content);
        for c in input.candidates {
            if normalize_content(&c.content) == norm {
                return decision(DecisionAction::None, Some(c), format!("same normalised content as {}", c.id));
            }
            if c.cosine >= cfg.near_dup_threshold {
                let reason = format!("near duplicate of {}: cosine {:.3} >= {:.3}", c.id, c.cosine, cfg.near_dup_threshold);
                return decision(DecisionAction::None, Some(c), reason);
            }
        }
        let same_subject = |c: &&MemoryCandidate| c.subject.trim().eq_ignore_ascii_case(fact.subject.trim());
        if let Some(until) = &fact.valid_until
            && let Some(c) =
                input.candidates.iter().filter(same_subject).find(|c| normalize_content(&c.object) == normalize_content(&fact.object))
        {
            return decision(DecisionAction::Delete, Some(c), format!("ends {} (valid until {until})", c.id));
        }
        let predicate = fact.predicate.trim().to_lowercase();
        let single = cfg.single_valued_predicates.iter().any(|p| p.trim().to_lowercase() == predicate);
        let antonyms = Antonyms::interned(&cfg.antonyms);
        let keys = PolarityKeys::of(&fact.content, &antonyms);
        for c in input.candidates.iter().filter(same_subject) {
            if single
                && c.predicate.trim().eq_ignore_ascii_case(&predicate)
                && normalize_content(&c.object) != normalize_content(&fact.object)
            {
                return decision(DecisionAction::Update, Some(c), format!("replaces {}: single-valued predicate {predicate:?}", c.id));
            }
            if polarity_conflict(&keys, &PolarityKeys::of(&c.content, &antonyms), cfg.antonym_min_shared_tokens) {
                return decision(DecisionAction::Update, Some(c), format!("replaces {}: negation or antonym conflict", c.id));
            }
        }
        decision(DecisionAction::Add, None, "no candidate is a duplicate or a conflict".into())
    }
}

impl Decider for RulesDecider {
    fn id(&self) -> String {
        Self::ID.to_string()
    }
    fn mode(&self) -> StageMode {
        StageMode::Rules
    }
    fn decide(&self, _ctx: &JudgeContext<'_>, input: &DecisionInput<'_>, cfg: &Config) -> Result<DecisionAnswer> {
        Ok(DecisionAnswer { decision: Some(Self::policy(input, cfg)), ..DecisionAnswer::default() })
    }
}

/// A decider is what `signet` gets where `soda` gets a judge.
impl Judge for RulesDecider {
    fn id(&self) -> String {
        Self::ID.to_string()
    }
    fn judge(&self, _ctx: &JudgeContext<'_>, _pairs: &[JudgePair]) -> Result<JudgeOutput> {
        Err(Error::Other("the signet decision stage decides per fact; it judges no pairs".into()))
    }
    fn decider(&self) -> Option<&dyn Decider> {
        Some(self)
    }
}

/// The contradiction detector on an UPDATE or DELETE: negation or antonym
/// conflict between the fact and its target sharing enough words. It only
/// flags `review_needed`; it never changes a decision.
pub fn review_needed(decision: &Decision, fact: &str, target: Option<&str>, cfg: &Config) -> bool {
    if !matches!(decision.action, DecisionAction::Update | DecisionAction::Delete) {
        return false;
    }
    let Some(target) = target else { return false };
    let antonyms = Antonyms::interned(&cfg.antonyms);
    polarity_conflict(&PolarityKeys::of(fact, &antonyms), &PolarityKeys::of(target, &antonyms), cfg.antonym_min_shared_tokens)
}
