//! Stage 4b, the rules judge: a deterministic verdict per pair.

use std::sync::Arc;

use super::{Judge, JudgeContext, JudgeOutput, JudgePair, PairFact};
use crate::error::Result;
pub use crate::model::polarity::{Antonyms, NEGATIONS, PolarityKeys, words};
use crate::model::proposition::{Change, change};
use crate::normalize::normalize_content;
use crate::pipeline::Config;
use crate::types::Verdict;

/// The rules judge: single-valued predicates replace, multi-valued coexist,
/// polarity/antonym conflicts with enough shared tokens replace and are
/// flagged for review, a validUntil on the same subject and object ends the
/// relationship; anything else stands.
pub struct RulesJudge {
    single_valued: Vec<String>,
    antonyms: Arc<Antonyms>,
    min_shared_tokens: usize,
    content_words_only: bool,
    preference_pairing: bool,
    evidence: bool,
}

impl RulesJudge {
    pub const ID: &'static str = "rules:v1";

    pub fn new(cfg: &Config) -> Self {
        RulesJudge {
            single_valued: cfg.soda.single_valued_predicates.iter().map(|p| p.to_lowercase()).collect(),
            antonyms: Antonyms::interned(&cfg.soda.antonyms),
            min_shared_tokens: cfg.soda.antonym_min_shared_tokens,
            content_words_only: cfg.soda.polarity_content_words_only,
            preference_pairing: cfg.soda.preference_polarity_pairing,
            evidence: cfg.soda.evidence_of_change,
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
        if self.evidence {
            // Only evidence of change replaces (docs/pipeline.md, "Evidence of change");
            // a single-valued predicate is a slot and a preference flip a flip there.
            if !same_subject {
                return (Verdict::Neither, false);
            }
            let read = |f: &PairFact| {
                let object = self.single_valued.contains(&f.predicate.trim().to_lowercase()).then_some(f.object.as_str());
                crate::state::read_fact(&f.subject, &f.predicate, object, &f.content, &self.antonyms)
            };
            return match change(&read(live), &read(cand)) {
                Some(Change::Flip) => (Verdict::Old, true),
                Some(_) => (Verdict::Old, false),
                None => (Verdict::Neither, false),
            };
        }
        if same_subject && same_predicate && !same_object && {
            let p = cand.predicate.to_lowercase();
            self.single_valued.contains(&p)
        } {
            return (Verdict::Old, false);
        }
        // The later statement of a preference wins (memform's addition).
        if self.preference_pairing && same_subject && same_object && opposite_preferences(&live.predicate, &cand.predicate) {
            return (Verdict::Old, false);
        }
        if same_subject && self.conflict(live, cand) {
            return (Verdict::Old, true);
        }
        (Verdict::Neither, false)
    }

    /// The polarity rule on a pair's two facts ([`polarity_conflict`]).
    fn conflict(&self, live: &PairFact, cand: &PairFact) -> bool {
        let (a, b) = (PolarityKeys::of(&cand.content, &self.antonyms), PolarityKeys::of(&live.content, &self.antonyms));
        let shared = SharedWords {
            min: self.min_shared_tokens,
            content_only: self.content_words_only,
            facts: [(&cand.subject, &cand.object), (&live.subject, &live.object)],
        };
        polarity_conflict(&a, &b, &shared)
    }

    /// Negation polarity differs, or an antonym pair splits the two texts
    /// (both about `subject`, objects unknown), and they share enough words
    /// ([`SharedWords`]).
    pub fn polarity_conflict(&self, subject: &str, a: &str, b: &str) -> bool {
        let (a, b) = (PolarityKeys::of(a, &self.antonyms), PolarityKeys::of(b, &self.antonyms));
        let shared =
            SharedWords { min: self.min_shared_tokens, content_only: self.content_words_only, facts: [(subject, ""), (subject, "")] };
        polarity_conflict(&a, &b, &shared)
    }
}

/// The shared-words half of the polarity rule: how many distinct words the
/// contents of two facts must share, and which words count.
#[derive(Debug, Clone, Copy)]
pub struct SharedWords<'a> {
    /// At least this many (`antonym_min_shared_tokens`).
    pub min: usize,
    /// Count only content words: neither a stopword ([`STOPWORDS`]: articles,
    /// pronouns, auxiliaries, prepositions, negations…) nor a word of the
    /// first fact's subject (its name, and its possessive "'s"); and two
    /// facts with the same subject and the same object need no shared word
    /// at all (`polarity_content_words_only`, memform's own; off counts
    /// every word, as the rule is written).
    pub content_only: bool,
    /// The two facts' subject and object, in the order of the texts.
    pub facts: [(&'a str, &'a str); 2],
}

impl<'a> SharedWords<'a> {
    /// The rule for two facts, each given as (subject, object): at least
    /// `min` shared words (`antonym_min_shared_tokens`), content words only
    /// when `content_only` (`polarity_content_words_only`).
    pub fn new(min: usize, content_only: bool, a: (&'a str, &'a str), b: (&'a str, &'a str)) -> SharedWords<'a> {
        SharedWords { min, content_only, facts: [a, b] }
    }

    /// Whether the two texts share enough words that count, or, counting
    /// content words only, need none (see [`Self::same_subject_and_object`]).
    fn enough(&self, a: &[Box<str>], b: &[Box<str>]) -> bool {
        shared_at_least(a, b, self) || (self.content_only && self.same_subject_and_object())
    }

    /// Both facts have the same subject (trimmed, case-insensitive) and the
    /// same non-empty object (through `normalize_content`): "loves sushi"
    /// and "hates sushi" split about one thing, although they share only
    /// one content word.
    fn same_subject_and_object(&self) -> bool {
        let [(sa, oa), (sb, ob)] = self.facts;
        let object = normalize_content(oa);
        !object.is_empty() && object == normalize_content(ob) && sa.trim().to_lowercase() == sb.trim().to_lowercase()
    }

    /// Whether a shared (lower-cased) word counts.
    fn counts(&self, w: &str) -> bool {
        if !self.content_only {
            return true;
        }
        if STOPWORDS.binary_search(&w).is_ok() {
            return false;
        }
        let bare = w.strip_suffix("'s").unwrap_or(w);
        let subject = self.facts[0].0;
        !subject.split(|c: char| !(c.is_alphanumeric() || c == '\'')).any(|s| s.chars().flat_map(char::to_lowercase).eq(bare.chars()))
    }
}

/// The polarity rule on two facts' [`PolarityKeys`] (computed against the
/// same antonym list): negation differs or an antonym pair splits them, and
/// they share enough distinct words ([`SharedWords`]; counting content
/// words only, facts with the same subject and object need none). The split
/// is a few mask operations; the shared words are counted only when it
/// holds. Every caller (the soda judge's pairing and verdict, the signet
/// decision policy and detector) goes through here.
pub fn polarity_conflict(a: &PolarityKeys, b: &PolarityKeys, shared: &SharedWords<'_>) -> bool {
    debug_assert_eq!(a.list, b.list, "polarity keys of two antonym lists");
    let splits = |(xa, ya): (u64, u64), (xb, yb): (u64, u64)| (xa & yb & !ya & !xb) | (ya & xb & !xa & !yb) != 0;
    let split = a.negated != b.negated || splits((a.x, a.y), (b.x, b.y)) || a.more.iter().zip(&b.more).any(|(&ma, &mb)| splits(ma, mb));
    split && shared.enough(&a.words, &b.words)
}

/// Whether two sorted lists of distinct words have at least `rule.min` in
/// common that count.
fn shared_at_least(a: &[Box<str>], b: &[Box<str>], rule: &SharedWords<'_>) -> bool {
    let (mut i, mut j, mut shared) = (0, 0, 0);
    while shared < rule.min && i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                if rule.counts(&a[i]) {
                    shared += 1;
                }
                i += 1;
                j += 1;
            }
        }
    }
    shared >= rule.min
}

/// Function words that say nothing of what a fact is about, sorted (byte
/// order): they never count as shared words under
/// `polarity_content_words_only`. memform's own list.
pub const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "after",
    "again",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren't",
    "as",
    "at",
    "be",
    "because",
    "been",
    "being",
    "both",
    "but",
    "by",
    "can",
    "can't",
    "cannot",
    "could",
    "did",
    "didn't",
    "do",
    "does",
    "doesn't",
    "doesnt",
    "doing",
    "don't",
    "dont",
    "down",
    "during",
    "each",
    "even",
    "ever",
    "for",
    "from",
    "get",
    "gets",
    "got",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "i'm",
    "if",
    "in",
    "into",
    "is",
    "isn't",
    "isnt",
    "it",
    "it's",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "much",
    "my",
    "myself",
    "never",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "out",
    "over",
    "really",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "that's",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "up",
    "very",
    "was",
    "wasn't",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "won't",
    "would",
    "you",
    "your",
    "yours",
];

/// Preference verbs by polarity (their word forms compare by prefix stem).
const LIKE_STEMS: &[&str] = &["love", "like", "enjoy", "prefer"];
const DISLIKE_STEMS: &[&str] = &["hate", "dislike", "avoid"];

/// A predicate's preference polarity: `Some(true)` for love/like/enjoy/prefer,
/// `Some(false)` for hate/dislike/avoid, flipped by a negation ("does not
/// like", "no longer enjoys"); `None` when no preference verb is in it.
pub fn preference_polarity(predicate: &str) -> Option<bool> {
    let lower = predicate.to_lowercase();
    let ws = words(&lower);
    let negated = ws.iter().any(|w| NEGATIONS.contains(w));
    let stem = |w: &str, stems: &[&str]| {
        stems.iter().any(|s| w == *s || w.strip_prefix(s).is_some_and(|r| ["s", "d", "ed", "es", "red", "ing"].contains(&r)))
    };
    let positive = ws.iter().find_map(|w| {
        if stem(w, DISLIKE_STEMS) {
            Some(false)
        } else if stem(w, LIKE_STEMS) {
            Some(true)
        } else {
            None
        }
    })?;
    Some(positive != negated)
}

/// Whether two predicates state preferences of opposite polarity.
pub fn opposite_preferences(a: &str, b: &str) -> bool {
    matches!((preference_polarity(a), preference_polarity(b)), (Some(x), Some(y)) if x != y)
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
