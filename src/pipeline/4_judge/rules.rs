//! Stage 4b, the rules judge: a deterministic verdict per pair.

use super::{Judge, JudgeContext, JudgeOutput, JudgePair};
use crate::config::Config;
use crate::error::Result;
use crate::normalize::normalize_content;
use crate::types::Verdict;

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
            (has(&ta, x) && has(&tb, y) && !has(&ta, y) && !has(&tb, x)) || (has(&ta, y) && has(&tb, x) && !has(&ta, x) && !has(&tb, y))
        })
    }
}

const NEGATIONS: &[&str] = &[
    "not", "no", "never", "don't", "doesn't", "didn't", "isn't", "aren't", "wasn't", "won't", "can't", "cannot", "dont", "doesnt", "isnt",
    "longer",
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
