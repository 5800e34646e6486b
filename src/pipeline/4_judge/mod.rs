//! Stage 4, judge contradictions: pair each surviving candidate with the live
//! facts it may contradict, ask a [`Judge`] for verdicts, then apply the
//! guards. Rules and LLM judges differ only in how they answer.

use serde::{Deserialize, Serialize};

use super::dedupe::Deduped;
use super::{Batch, StageMode};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::state::ConvState;
use crate::types::{CandidateFact, LlmUsage, Verdict, Warning};

mod guards;
pub mod llm;
mod pairs;
mod rules;

pub use guards::{FinalVerdict, GuardInput, apply_guards};
pub use llm::LlmJudge;
pub use pairs::{FoundPair, PairInput, PairReason, find_pairs};
pub use rules::RulesJudge;

/// One side of a pair, as a judge sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairFact {
    pub subject: String,
    pub predicate: String,
    pub object: String,
    pub content: String,
    pub valid_until: Option<String>,
}

impl PairFact {
    pub fn of(f: &CandidateFact) -> PairFact {
        PairFact {
            subject: f.subject.clone(),
            predicate: f.predicate.clone(),
            object: f.object.clone(),
            content: f.content.clone(),
            valid_until: f.valid_until.clone(),
        }
    }
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
    /// Whether a model answers (LLM mode) or rules do.
    fn mode(&self) -> StageMode {
        StageMode::Rules
    }
    fn judge(&self, ctx: &JudgeContext<'_>, pairs: &[JudgePair]) -> Result<JudgeOutput>;
}

/// Stage 4's answer for one episode.
#[derive(Debug, Clone, Default)]
pub struct Judged {
    /// Per candidate of the batch: the final verdicts of its pairs (empty
    /// for candidates that did not survive stage 3).
    pub verdicts: Vec<Vec<FinalVerdict>>,
    pub warnings: Vec<Warning>,
    pub usage: LlmUsage,
}

/// Stage 4 for one episode: pairs the survivors with the live facts they may
/// contradict, asks `judge` once for all pairs, and applies the guards. A
/// judge failure makes every verdict `neither` with a warning; a fixture
/// miss (a hole in the recording) stops the run.
pub fn stage(
    batch: &Batch<'_>,
    deduped: &Deduped,
    state: &ConvState,
    ctx: JudgeContext<'_>,
    now: Option<&str>,
    cfg: &Config,
    judge: &dyn Judge,
) -> Result<Judged> {
    let survivors: Vec<usize> = deduped.survivors().collect();
    let inputs: Vec<PairInput<'_>> = survivors
        .iter()
        .map(|&i| PairInput { fact: PairFact::of(&batch.facts[i].fact), embedding: batch.vector(i), keys: &batch.keys[i] })
        .collect();
    let pairs = find_pairs(&inputs, state, now, cfg.contradiction_band_min, cfg.near_dup_threshold);
    let mut out = Judged { verdicts: vec![Vec::new(); batch.len()], ..Judged::default() };
    let answer = if pairs.is_empty() {
        Ok(JudgeOutput::default())
    } else {
        let judge_pairs: Vec<JudgePair> = pairs.iter().map(|p| p.pair.clone()).collect();
        match judge.judge(&ctx, &judge_pairs) {
            Ok(o) => Ok(o),
            Err(e @ Error::FixtureMiss(_)) => return Err(e),
            Err(e) => Err(crate::error::chain(&e)),
        }
    };
    match &answer {
        Ok(o) => {
            out.warnings.extend(o.warnings.iter().cloned());
            out.usage.add(o.usage);
        }
        Err(e) => out.warnings.push(Warning::new("judge_failed", e.clone())),
    }
    let guard_inputs: Vec<GuardInput<'_>> = survivors
        .iter()
        .map(|&i| GuardInput { confidence: batch.facts[i].fact.confidence, valid_until: batch.facts[i].fact.valid_until.as_deref() })
        .collect();
    for (p, v) in pairs.iter().zip(apply_guards(&pairs, &answer, &guard_inputs, now, cfg.min_trusted_confidence)) {
        out.verdicts[survivors[p.candidate]].push(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{FactKeys, FactRec, Vector};

    /// A candidate for pairing; its keys are leaked (tests only).
    fn pin(fact: PairFact, embedding: Vector<'_>) -> PairInput<'_> {
        let keys: &'static FactKeys = Box::leak(Box::new(FactKeys::of(&fact.subject, &fact.predicate, &fact.object)));
        PairInput { fact, embedding, keys }
    }

    fn pf(s: &str, p: &str, o: &str, content: &str, until: Option<&str>) -> PairFact {
        PairFact {
            subject: s.into(),
            predicate: p.into(),
            object: o.into(),
            content: content.into(),
            valid_until: until.map(str::to_string),
        }
    }

    fn pair(live: PairFact, cand: PairFact) -> JudgePair {
        JudgePair { index: 0, live, candidate: cand, cosine: 0.5 }
    }

    fn live_rec(id: &str, s: &str, p: &str, o: &str, emb: Vec<f32>) -> FactRec {
        FactRec { embedding: emb, ..FactRec::for_test(id, s, p, o) }
    }

    #[test]
    fn single_valued_replaces_multi_valued_coexists() {
        let j = RulesJudge::new(&Config::default());
        let works = pair(
            pf("Alice", "works at", "Google", "Alice works at Google", None),
            pf("Alice", "works at", "Anthropic", "Alice works at Anthropic", None),
        );
        assert_eq!(j.verdict(&works), (Verdict::Old, false));
        let likes =
            pair(pf("Alice", "likes", "pizza", "Alice likes pizza", None), pf("Alice", "likes", "sushi", "Alice likes sushi", None));
        assert_eq!(j.verdict(&likes), (Verdict::Neither, false));
        let budget = pair(
            pf("Alice", "has car budget of", "$30,000", "Alice has a car budget of $30,000", None),
            pf("Alice", "has tv budget of", "$800", "Alice has a TV budget of $800", None),
        );
        assert_eq!(j.verdict(&budget).0, Verdict::Neither);
    }

    #[test]
    fn antonym_and_negation_conflicts_need_shared_tokens_and_flag_review() {
        let j = RulesJudge::new(&Config::default());
        let p = pair(
            pf("Alice", "dark mode", "enabled", "Alice dark mode: enabled", None),
            pf("Alice", "dark mode", "disabled", "Alice dark mode: disabled", None),
        );
        assert_eq!(j.verdict(&p), (Verdict::Old, true));
        assert!(j.polarity_conflict("Alice loves sushi", "Alice hates sushi"));
        assert!(j.polarity_conflict("Alice drinks coffee", "Alice does not drink coffee"));
        assert!(!j.polarity_conflict("I love it", "they hate rain"), "fewer than 2 shared tokens");
        let cfg = Config { antonym_min_shared_tokens: 5, ..Config::default() };
        assert!(!RulesJudge::new(&cfg).polarity_conflict("Alice loves sushi", "Alice hates sushi"));
    }

    #[test]
    fn valid_until_on_same_subject_and_object_ends_relationship() {
        let j = RulesJudge::new(&Config::default());
        let p = pair(
            pf("Alice", "works at", "Google", "Alice works at Google", None),
            pf("Alice", "left", "Google", "Alice left Google", Some("2024-02-01")),
        );
        assert_eq!(j.verdict(&p), (Verdict::Old, false));
    }

    #[test]
    fn pairing_uses_the_three_conditions() {
        let mut st = ConvState::default();
        st.facts.push(live_rec("f1", "Alice", "works at", "Google", vec![1.0, 0.0]));
        st.facts.push(live_rec("f2", "Alice", "likes", "tea", vec![0.0, 1.0]));
        st.facts.push(live_rec("f3", "Bob", "works at", "Meta", vec![1.0, 0.0]));
        let band = [0.85f32, (1.0f32 - 0.85 * 0.85).sqrt()];
        let e0 = [0.0f32, 0.0];
        let cands = [
            pin(pf("Alice", "works at", "Anthropic", "", None), Vector { slot: None, values: &e0 }),
            pin(pf("Alice", "quit", "Google", "", Some("2024-01-01")), Vector { slot: None, values: &e0 }),
            pin(pf("Alice", "is employed by", "Meta", "", None), Vector { slot: None, values: &band }),
            pin(pf("Alice", "likes", "tea", "", None), Vector { slot: None, values: &e0 }),
        ];
        let found = find_pairs(&cands, &st, None, 0.80, 0.95);
        let got: Vec<_> = found.iter().map(|p| (p.candidate, p.live_id.as_str(), p.reason)).collect();
        assert_eq!(
            got,
            vec![(0, "f1", PairReason::SamePredicate), (1, "f1", PairReason::EndsRelationship), (2, "f1", PairReason::SimilarContent),]
        );
        assert!(found.iter().enumerate().all(|(i, p)| p.pair.index == i));
    }

    fn found(reason: PairReason) -> FoundPair {
        FoundPair { candidate: 0, live_id: "f1".into(), reason, pair: pair(pf("A", "p", "x", "", None), pf("A", "p", "y", "", None)) }
    }

    fn old_answer() -> std::result::Result<JudgeOutput, String> {
        Ok(JudgeOutput { verdicts: vec![(0, Verdict::Old)], ..Default::default() })
    }

    #[test]
    fn guard_failure_makes_everything_neither() {
        let g = apply_guards(
            &[found(PairReason::SamePredicate)],
            &Err("timeout".into()),
            &[GuardInput { confidence: 0.9, valid_until: None }],
            None,
            0.8,
        );
        assert_eq!(g[0].verdict, Verdict::Neither);
        assert!(g[0].guard.as_deref().unwrap().starts_with("judge_failed"));
    }

    #[test]
    fn guard_historical_supersedes_only_the_relationship_it_ends() {
        let hist = [GuardInput { confidence: 0.9, valid_until: Some("2018-12-31") }];
        let now = Some("2024-01-01");
        let g = apply_guards(&[found(PairReason::SamePredicate)], &old_answer(), &hist, now, 0.8);
        assert_eq!((g[0].verdict, g[0].judged), (Verdict::Neither, Verdict::Old));
        assert_eq!(g[0].guard.as_deref(), Some("historical_cannot_supersede"));
        let g = apply_guards(&[found(PairReason::EndsRelationship)], &old_answer(), &hist, now, 0.8);
        assert_eq!(g[0].verdict, Verdict::Old);
        let future = [GuardInput { confidence: 0.9, valid_until: Some("2030-01-01") }];
        let g = apply_guards(&[found(PairReason::SamePredicate)], &old_answer(), &future, now, 0.8);
        assert_eq!(g[0].verdict, Verdict::Old);
    }

    #[test]
    fn guard_low_confidence_never_destroys() {
        let low = [GuardInput { confidence: 0.75, valid_until: None }];
        let g = apply_guards(&[found(PairReason::SamePredicate)], &old_answer(), &low, None, 0.8);
        assert_eq!(g[0].verdict, Verdict::Neither);
        assert_eq!(g[0].guard.as_deref(), Some("below_min_trusted_confidence"));
        let ok = [GuardInput { confidence: 0.8, valid_until: None }];
        let g = apply_guards(&[found(PairReason::SamePredicate)], &old_answer(), &ok, None, 0.8);
        assert_eq!(g[0].verdict, Verdict::Old);
    }
}
