//! Stage 4, judge contradictions: pair each surviving candidate with the live
//! facts it may contradict, ask a [`Judge`] for verdicts, then apply the
//! guards. Rules and LLM judges differ only in how they answer.

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::error::Result;
use crate::normalize::normalize_content;
use crate::state::{ConvState, FactKeys, Vector};
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

/// Why a candidate was paired with a live fact (DESIGN stage 4's three conditions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PairReason {
    /// Same subject and predicate, different object.
    SamePredicate,
    /// Same subject and object, and the candidate carries validUntil.
    EndsRelationship,
    /// Cosine in [contradiction_band_min, near_dup_threshold), same subject,
    /// different object.
    SimilarContent,
}

/// A candidate's view for pairing.
#[derive(Debug, Clone)]
pub struct PairInput<'a> {
    pub fact: PairFact,
    pub embedding: Vector<'a>,
    /// The fact's lower-cased and normalised parts.
    pub keys: &'a FactKeys,
}

/// A pair found by [`find_pairs`]: candidate index (into the inputs), live
/// fact id, and the pair as the judge sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundPair {
    pub candidate: usize,
    pub live_id: String,
    pub reason: PairReason,
    pub pair: JudgePair,
}

/// Pairs each candidate with the current live facts it may contradict.
pub fn find_pairs(
    candidates: &[PairInput<'_>],
    state: &ConvState,
    now: Option<&str>,
    band_min: f64,
    band_max: f64,
) -> Vec<FoundPair> {
    let mut out = Vec::new();
    let current: Vec<_> = state.facts.iter().filter(|f| f.is_current(now)).collect();
    for (ci, c) in candidates.iter().enumerate() {
        let (cs, cp, co) = (&c.keys.subject, &c.keys.predicate, &c.keys.object);
        for live in &current {
            let k = live.keys();
            if k.subject != *cs {
                continue;
            }
            let same_object = k.object == *co;
            let cos = state.cosine(c.embedding, live.vector());
            let reason = if k.predicate == *cp && !same_object {
                PairReason::SamePredicate
            } else if same_object && c.fact.valid_until.is_some() {
                PairReason::EndsRelationship
            } else if !same_object && cos >= band_min && cos < band_max {
                PairReason::SimilarContent
            } else {
                continue;
            };
            let index = out.len();
            out.push(FoundPair {
                candidate: ci,
                live_id: live.id.clone(),
                reason,
                pair: JudgePair {
                    index,
                    live: PairFact {
                        subject: live.subject.clone(),
                        predicate: live.predicate.clone(),
                        object: live.object.clone(),
                        content: live.content.clone(),
                        valid_until: live.valid_until.clone(),
                    },
                    candidate: c.fact.clone(),
                    cosine: cos,
                },
            });
        }
    }
    out
}

/// The rules judge: single-valued predicates replace, multi-valued coexist,
/// polarity/antonym conflicts with enough shared tokens replace and are
/// flagged for review, a validUntil on the same subject and object ends the
/// relationship; anything else stands.
pub struct RulesJudge {
    single_valued: Vec<String>,
    antonyms: Vec<[String; 2]>,
    min_shared_tokens: usize,
}

impl RulesJudge {
    pub const ID: &'static str = "rules:v1";

    pub fn new(cfg: &Config) -> Self {
        RulesJudge {
            single_valued: cfg.single_valued_predicates.iter().map(|p| p.to_lowercase()).collect(),
            antonyms: cfg.antonyms.iter().map(|[a, b]| [a.to_lowercase(), b.to_lowercase()]).collect(),
            min_shared_tokens: cfg.antonym_min_shared_tokens,
        }
    }

    /// The verdict for one pair and whether it needs review.
    pub fn verdict(&self, pair: &JudgePair) -> (Verdict, bool) {
        let (live, cand) = (&pair.live, &pair.candidate);
        let same_subject = live.subject.eq_ignore_ascii_case(&cand.subject);
        let same_object = normalize_content(&live.object) == normalize_content(&cand.object);
        let same_predicate = live.predicate.eq_ignore_ascii_case(&cand.predicate);
        if same_subject && same_object && cand.valid_until.is_some() {
            return (Verdict::Old, false);
        }
        if same_subject && same_predicate && !same_object && {
            let p = cand.predicate.to_lowercase();
            self.single_valued.contains(&p)
        } {
            return (Verdict::Old, false);
        }
        if same_subject && self.polarity_conflict(&live.content, &cand.content) {
            return (Verdict::Old, true);
        }
        (Verdict::Neither, false)
    }

    /// Negation polarity differs, or an antonym pair splits the two texts,
    /// and they share at least `min_shared_tokens` tokens.
    pub fn polarity_conflict(&self, a: &str, b: &str) -> bool {
        let (la, lb) = (a.to_lowercase(), b.to_lowercase());
        let (ta, tb) = (words(&la), words(&lb));
        let mut distinct_a = ta.clone();
        distinct_a.sort_unstable();
        distinct_a.dedup();
        let shared = distinct_a.iter().filter(|t| tb.contains(t)).count();
        if shared < self.min_shared_tokens {
            return false;
        }
        let negated = |t: &[&str]| t.iter().any(|w| NEGATIONS.contains(w));
        if negated(&ta) != negated(&tb) {
            return true;
        }
        let has = |t: &[&str], w: &str| t.contains(&w);
        self.antonyms.iter().any(|[x, y]| {
            (has(&ta, x) && has(&tb, y) && !has(&ta, y) && !has(&tb, x))
                || (has(&ta, y) && has(&tb, x) && !has(&ta, x) && !has(&tb, y))
        })
    }
}

const NEGATIONS: &[&str] = &[
    "not", "no", "never", "don't", "doesn't", "didn't", "isn't", "aren't", "wasn't", "won't", "can't",
    "cannot", "dont", "doesnt", "isnt", "longer",
];

/// The words of an already lower-cased text: runs of letters, digits and `'`.
fn words(lower: &str) -> Vec<&str> {
    lower.split(|c: char| !(c.is_alphanumeric() || c == '\'')).filter(|w| !w.is_empty()).collect()
}

impl Judge for RulesJudge {
    fn id(&self) -> String {
        RulesJudge::ID.to_string()
    }
    fn judge(&self, _ctx: &JudgeContext<'_>, pairs: &[JudgePair]) -> Result<JudgeOutput> {
        let mut out = JudgeOutput::default();
        for p in pairs {
            let (v, review) = self.verdict(p);
            out.verdicts.push((p.index, v));
            if review {
                out.review_needed.push(p.index);
            }
        }
        Ok(out)
    }
}

/// A pair's final verdict after the guards, and why it changed if it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinalVerdict {
    pub live_id: String,
    pub reason: PairReason,
    pub verdict: Verdict,
    /// The judge's own answer before the guards.
    pub judged: Verdict,
    pub review_needed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guard: Option<String>,
}

/// What the guards need of each candidate.
#[derive(Debug, Clone, Copy)]
pub struct GuardInput<'a> {
    pub confidence: f64,
    pub valid_until: Option<&'a str>,
}

/// Applies DESIGN stage 4's guards to a judge's answer (or failure): a failed
/// call makes every verdict `neither`; historical candidates supersede only
/// the relationship they end; candidates below `min_trusted_confidence` never
/// destroy a fact. Returns the final verdicts per pair, in pair order.
pub fn apply_guards(
    pairs: &[FoundPair],
    answer: &std::result::Result<JudgeOutput, String>,
    candidates: &[GuardInput<'_>],
    now: Option<&str>,
    min_trusted_confidence: f64,
) -> Vec<FinalVerdict> {
    pairs
        .iter()
        .map(|p| {
            let (judged, review) = match answer {
                Ok(o) => (
                    o.verdicts.iter().find(|(i, _)| *i == p.pair.index).map_or(Verdict::Neither, |(_, v)| *v),
                    o.review_needed.contains(&p.pair.index),
                ),
                Err(_) => (Verdict::Neither, false),
            };
            let c = candidates[p.candidate];
            let mut guard = answer.as_ref().err().map(|e| format!("judge_failed: {e}"));
            let mut verdict = judged;
            if verdict == Verdict::Old {
                if crate::state::is_past(c.valid_until, now) && p.reason != PairReason::EndsRelationship {
                    verdict = Verdict::Neither;
                    guard = Some("historical_cannot_supersede".into());
                } else if c.confidence < min_trusted_confidence {
                    verdict = Verdict::Neither;
                    guard = Some("below_min_trusted_confidence".into());
                }
            }
            FinalVerdict { live_id: p.live_id.clone(), reason: p.reason, verdict, judged, review_needed: review, guard }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::FactRec;

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
        let likes = pair(
            pf("Alice", "likes", "pizza", "Alice likes pizza", None),
            pf("Alice", "likes", "sushi", "Alice likes sushi", None),
        );
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
        let mut cfg = Config::default();
        cfg.antonym_min_shared_tokens = 5;
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
            vec![
                (0, "f1", PairReason::SamePredicate),
                (1, "f1", PairReason::EndsRelationship),
                (2, "f1", PairReason::SimilarContent),
            ]
        );
        assert!(found.iter().enumerate().all(|(i, p)| p.pair.index == i));
    }

    fn found(reason: PairReason) -> FoundPair {
        FoundPair {
            candidate: 0,
            live_id: "f1".into(),
            reason,
            pair: pair(pf("A", "p", "x", "", None), pf("A", "p", "y", "", None)),
        }
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
