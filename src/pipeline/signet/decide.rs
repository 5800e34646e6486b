//! `signet`'s decision stage: per extracted fact, ADD / UPDATE / DELETE /
//! NONE against the stored memories its candidate retrieval found. The
//! [`Decider`] seam has two implementations: [`RulesDecider`] (memform's own
//! deterministic policy, docs/pipeline.md) and the LLM decider
//! ([`super::llm::LlmDecider`], Signet v2's prompt contract).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::proposition::{Change, Reading, change};
use crate::normalize::normalize_content;
use crate::pipeline::Config;
use crate::pipeline::StageMode;
use crate::pipeline::judge::{Antonyms, Judge, JudgeContext, JudgeOutput, JudgePair, PolarityKeys, SharedWords, polarity_conflict};
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
/// conflict sharing at least `antonym_min_shared_tokens` words (content
/// words only, no stopword and no word of the subject's name, with
/// `polarity_content_words_only`); else ADD.
pub struct RulesDecider;

impl RulesDecider {
    pub const ID: &'static str = "signet-rules:v1";

    /// The policy's decision for one fact (candidates in retrieval order).
    pub fn policy<'a>(input: &DecisionInput<'a>, cfg: &Config) -> Decision {
        let fact = input.fact;
        let decision = |action, c: Option<&MemoryCandidate>, reason: String| Decision {
            action,
            target: c.map(|c| c.id.clone()),
            confidence: fact.confidence,
            reason,
        };
        let norm = normalize_content(&fact.content);
        let antonyms = Antonyms::interned(&cfg.signet.antonyms);
        // With `evidence_of_change`: the fact's reading, and each candidate's.
        let object = |predicate: &str, object: &'a str| cfg.signet.is_single_valued(predicate).then_some(object);
        let reading = cfg.signet.evidence_of_change.then(|| {
            Reading::of_fact(&fact.subject, &fact.predicate, object(&fact.predicate, &fact.object), &fact.content, antonyms.pairs())
        });
        let read = |c: &'a MemoryCandidate| {
            Reading::of_fact(&c.subject, &c.predicate, object(&c.predicate, &c.object), &c.content, antonyms.pairs())
        };
        let same_subject = |c: &&MemoryCandidate| c.subject.trim().eq_ignore_ascii_case(fact.subject.trim());
        for c in input.candidates {
            if normalize_content(&c.content) == norm {
                return decision(DecisionAction::None, Some(c), format!("same normalised content as {}", c.id));
            }
            if let Some(r) = &reading
                && same_subject(&c)
                && r.restates(&read(c))
            {
                return decision(DecisionAction::None, Some(c), format!("restates {}", c.id));
            }
            // Evidence of change is no duplicate, however near.
            if c.cosine >= cfg.signet.near_dup_threshold
                && !reading.as_ref().is_some_and(|r| same_subject(&c) && change(&read(c), r).is_some())
            {
                let reason = format!("near duplicate of {}: cosine {:.3} >= {:.3}", c.id, c.cosine, cfg.signet.near_dup_threshold);
                return decision(DecisionAction::None, Some(c), reason);
            }
        }
        if let Some(until) = &fact.valid_until
            && let Some(c) =
                input.candidates.iter().filter(same_subject).find(|c| normalize_content(&c.object) == normalize_content(&fact.object))
        {
            return decision(DecisionAction::Delete, Some(c), format!("ends {} (valid until {until})", c.id));
        }
        let predicate = fact.predicate.trim().to_lowercase();
        let single = cfg.signet.single_valued_predicates.iter().any(|p| p.trim().to_lowercase() == predicate);
        let keys = PolarityKeys::of(&fact.content, &antonyms);
        for c in input.candidates.iter().filter(same_subject) {
            if single
                && reading.is_none()
                && c.predicate.trim().eq_ignore_ascii_case(&predicate)
                && normalize_content(&c.object) != normalize_content(&fact.object)
            {
                return decision(DecisionAction::Update, Some(c), format!("replaces {}: single-valued predicate {predicate:?}", c.id));
            }
            if let Some(r) = &reading {
                // Only evidence of change replaces (docs/pipeline.md, "Evidence of change").
                if let Some(kind) = change(&read(c), r) {
                    let why = match kind {
                        Change::Slot(slot) => format!("the same {slot} with another value"),
                        Change::Ending => "an explicit ending".to_string(),
                        Change::Flip => "a polarity flip of the same proposition".to_string(),
                    };
                    return decision(DecisionAction::Update, Some(c), format!("replaces {}: {why}", c.id));
                }
                continue;
            }
            if polarity_conflict(
                &keys,
                &PolarityKeys::of(&c.content, &antonyms),
                &SharedWords::new(
                    cfg.signet.antonym_min_shared_tokens,
                    cfg.signet.polarity_content_words_only,
                    (&fact.subject, &fact.object),
                    (&c.subject, &c.object),
                ),
            ) {
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
pub fn review_needed(decision: &Decision, fact: &CandidateFact, target: Option<&MemoryCandidate>, cfg: &Config) -> bool {
    if !matches!(decision.action, DecisionAction::Update | DecisionAction::Delete) {
        return false;
    }
    let Some(target) = target else { return false };
    let antonyms = Antonyms::interned(&cfg.signet.antonyms);
    let shared = SharedWords::new(
        cfg.signet.antonym_min_shared_tokens,
        cfg.signet.polarity_content_words_only,
        (&fact.subject, &fact.object),
        (&target.subject, &target.object),
    );
    polarity_conflict(&PolarityKeys::of(&fact.content, &antonyms), &PolarityKeys::of(&target.content, &antonyms), &shared)
}

#[cfg(test)]
mod tests {
    //! The rules policy's expectations, and Signet's own decision and
    //! contradiction-detector cases where they apply to memform's rules
    //! decision stage (each names its source case; in our own words).
    use super::*;
    use crate::types::FactKind;

    fn fact(subject: &str, predicate: &str, object: &str, content: &str) -> CandidateFact {
        CandidateFact {
            subject: subject.into(),
            predicate: predicate.into(),
            object: object.into(),
            kind: FactKind::Literal,
            fact_type: FactType::Fact,
            content: content.into(),
            confidence: 0.9,
            source_turn: "t1".into(),
            source_quote: String::new(),
            valid_from: None,
            valid_until: None,
        }
    }

    fn memory(id: &str, f: &CandidateFact, cosine: f64) -> MemoryCandidate {
        MemoryCandidate {
            id: id.into(),
            fact_type: f.fact_type,
            content: f.content.clone(),
            subject: f.subject.clone(),
            predicate: f.predicate.clone(),
            object: f.object.clone(),
            score: 0.5,
            cosine,
        }
    }

    fn decide(f: &CandidateFact, candidates: &[MemoryCandidate], cfg: &Config) -> Decision {
        RulesDecider::policy(&DecisionInput { fact: f, candidates }, cfg)
    }

    #[test]
    fn same_content_or_a_near_duplicate_is_none_with_its_target() {
        let cfg = Config::default();
        let old = fact("Alice", "prefers", "dark mode", "Alice prefers dark mode in the editor");
        let same = fact("Alice", "prefers", "dark mode", "alice prefers dark mode in the editor.");
        let d = decide(&same, &[memory("m1", &old, 0.5)], &cfg);
        assert_eq!((d.action, d.target.as_deref(), d.confidence), (DecisionAction::None, Some("m1"), 0.9));
        let close = fact("Alice", "likes", "dark themes", "Alice likes dark themes");
        let d = decide(&close, &[memory("m1", &old, 0.96)], &cfg);
        assert_eq!((d.action, d.target.as_deref()), (DecisionAction::None, Some("m1")));
        assert!(d.reason.contains("cosine 0.960"), "{}", d.reason);
    }

    #[test]
    fn an_ended_relationship_is_a_delete_of_its_memory() {
        let cfg = Config::default();
        let old = fact("Alice", "works at", "Acme", "Alice works at Acme");
        let mut ended = fact("Alice", "worked at", "Acme", "Alice left Acme");
        ended.valid_until = Some("2024-03-01".into());
        let d = decide(&ended, &[memory("m1", &old, 0.4)], &cfg);
        assert_eq!((d.action, d.target.as_deref()), (DecisionAction::Delete, Some("m1")));
        // Another subject's memory is not ended.
        let other = fact("Bob", "works at", "Acme", "Bob works at Acme");
        assert_eq!(decide(&ended, &[memory("m2", &other, 0.4)], &cfg).action, DecisionAction::Add);
    }

    #[test]
    fn a_single_valued_predicate_with_another_object_updates() {
        let cfg = {
            let mut c = Config::default();
            c.signet.single_valued_predicates = vec!["lives in".into()];
            c
        };
        let old = fact("Alice", "lives in", "Boston", "Alice lives in Boston");
        let new = fact("Alice", "lives in", "Denver", "Alice lives in Denver");
        let d = decide(&new, &[memory("m1", &old, 0.6)], &cfg);
        assert_eq!((d.action, d.target.as_deref()), (DecisionAction::Update, Some("m1")));
        // A multi-valued predicate adds.
        let old = fact("Alice", "likes", "tea", "Alice likes tea");
        let new = fact("Alice", "likes", "jazz", "Alice likes jazz");
        assert_eq!(decide(&new, &[memory("m1", &old, 0.6)], &cfg).action, DecisionAction::Add);
    }

    #[test]
    fn on_evidence_of_change_only_an_update_replaces_and_a_restatement_is_none() {
        let cfg = Config::default();
        assert!(cfg.signet.evidence_of_change, "the default");
        let seed = seed();
        let d = |old: &str, new: &str, cfg: &Config| {
            let (o, n) = (fact("Ravi", "states", old, old), fact("Ravi", "states", new, new));
            decide(&n, &[memory("m1", &o, 0.5)], cfg).action
        };
        // Updates: a slot, an ending, "no longer", a polarity flip.
        assert_eq!(d("Ravi's favourite cuisine is Thai", "Ravi's favourite cuisine is now Ethiopian", &cfg), DecisionAction::Update);
        assert_eq!(d("Ravi sings in a choir", "Ravi quit the choir", &cfg), DecisionAction::Update);
        assert_eq!(d("Ravi drinks black coffee", "Ravi no longer drinks black coffee", &cfg), DecisionAction::Update);
        assert_eq!(d("Ravi enjoys opera", "Honestly, Ravi hates opera these days", &cfg), DecisionAction::Update);
        // A negation about something else, or antonyms about different objects: both stand.
        assert_eq!(d("Ravi went to a pottery class", "Ravi says to keep going no matter what", &cfg), DecisionAction::Add);
        assert_eq!(d("Ravi loves his cat", "Ravi hates the rain", &cfg), DecisionAction::Add);
        assert_eq!(d("Ravi works as a nurse", "Ravi's brother works as a pilot", &cfg), DecisionAction::Add);
        // The seed's rule as written replaces on a shared name and a negation.
        assert_eq!(d("Ravi went to a pottery class", "Ravi says to keep going no matter what", &seed), DecisionAction::Update);
        // Restatements: NONE with the rules, ADD as written.
        assert_eq!(d("Ravi works as a nurse", "Ravi is a nurse", &cfg), DecisionAction::None);
        assert_eq!(d("Ravi has three bikes", "Ravi has 3 bikes", &cfg), DecisionAction::None);
        assert_eq!(d("Ravi has three bikes", "Ravi has 3 bikes", &seed), DecisionAction::Add);
        assert_eq!(d("Ravi has three bikes", "Ravi has 4 bikes", &cfg), DecisionAction::Add);
    }

    /// The seed's rules as written (`evidence_of_change` off).
    fn seed() -> Config {
        let mut c = Config::default();
        c.signet.evidence_of_change = false;
        c
    }

    /// The seed's rules, counting content words only.
    fn strict_seed() -> Config {
        let mut c = seed();
        c.signet.polarity_content_words_only = true;
        c
    }

    #[test]
    fn a_negation_updates_when_enough_words_are_shared() {
        let cfg = seed();
        let strict = strict_seed();
        // Shares two content words ("black", "coffee") and negation differs: UPDATE either way.
        let old = fact("Alice", "drinks", "black coffee", "Alice drinks black coffee");
        let new = fact("Alice", "drinks", "black coffee", "Alice does not drink black coffee anymore");
        for cfg in [&cfg, &strict] {
            let d = decide(&new, &[memory("m1", &old, 0.7)], cfg);
            assert_eq!((d.action, d.target.as_deref()), (DecisionAction::Update, Some("m1")));
        }
        // By default the name and stopwords count as shared words (the rule as
        // written), so a negation ("no matter") replaces an unrelated memory;
        // counting content words only, it does not.
        let old = fact("Caroline", "went to", "a support group", "Caroline went to a support group");
        let new = fact("Caroline", "says", "keep going", "Caroline says to keep going no matter what");
        assert_eq!(decide(&new, &[memory("m1", &old, 0.7)], &cfg).action, DecisionAction::Update, "counting every word");
        assert_eq!(decide(&new, &[memory("m1", &old, 0.7)], &strict).action, DecisionAction::Add);
    }

    #[test]
    fn a_fact_without_a_duplicate_or_conflict_adds() {
        // decision.test.ts, "processes multiple facts independently" and "returns
        // one ADD proposal per fact when no candidates match": each fact is
        // decided on its own; unrelated candidates lead to ADD.
        let cfg = Config::default();
        let old = fact("User", "enjoys", "coffee", "User enjoys coffee in the morning");
        for f in [
            fact("User", "finds", "xylophones", "Xylophones are fascinating instruments indeed"),
            fact("Researcher", "is fascinated by", "zeppelins", "Zeppelin aeronautics fascinate the researcher"),
        ] {
            let d = decide(&f, &[memory("m1", &old, 0.1)], &cfg);
            assert_eq!((d.action, d.target, d.confidence), (DecisionAction::Add, None, f.confidence));
            assert!(!d.reason.is_empty());
        }
    }

    /// The detector on a fact and its target, both about `subject` (their
    /// objects empty: the texts alone decide).
    fn flagged(action: DecisionAction, subject: &str, a: &str, b: &str, cfg: &Config) -> bool {
        let d = Decision { action, target: Some("m1".into()), confidence: 0.9, reason: "r".into() };
        review_needed(&d, &fact(subject, "states", "", a), Some(&memory("m1", &fact(subject, "states", "", b), 0.5)), cfg)
    }

    #[test]
    fn the_detector_flags_negation_mismatch_and_antonym_conflict_with_overlap() {
        // Signet's syntactic detector (pipeline/antonyms.ts): a contradiction
        // needs at least two shared tokens, then a negation on one side only
        // or an antonym pair split between the two.
        let cfg = Config::default();
        let u = DecisionAction::Update;
        assert!(flagged(u, "User", "Dark mode is enabled in the editor", "Dark mode is disabled in the editor", &cfg));
        assert!(flagged(u, "User", "User wants dark mode in the editor", "User does not want dark mode in the editor", &cfg));
        assert!(!flagged(u, "User", "Dark mode is enabled", "Light theme is disabled", &cfg), "one word shared (\"is\")");
        assert!(!flagged(u, "User", "User likes the editor", "User likes the editor settings", &cfg), "no negation, no antonym");
        // Signet counts every token of two letters or more; memform by default
        // counts every word, and with `polarity_content_words_only` content
        // words only: then the subject and stopwords do not make overlap.
        assert!(flagged(u, "User", "User is not at home", "User is at the gym", &cfg));
        let strict = {
            let mut c = cfg.clone();
            c.signet.polarity_content_words_only = true;
            c
        };
        assert!(!flagged(u, "User", "User is not at home", "User is at the gym", &strict));
        // It only ever flags an UPDATE or a DELETE, and needs a target.
        for a in [DecisionAction::Add, DecisionAction::None] {
            assert!(!flagged(a, "User", "Dark mode is enabled in the editor", "Dark mode is disabled in the editor", &cfg));
        }
        assert!(flagged(DecisionAction::Delete, "User", "Dark mode is enabled in the editor", "Dark mode is disabled in the editor", &cfg));
        let d = Decision { action: u, target: None, confidence: 0.9, reason: "r".into() };
        assert!(!review_needed(&d, &fact("User", "states", "", "Dark mode is enabled in the editor"), None, &cfg));
    }

    #[test]
    fn counting_content_words_only_a_split_about_the_same_subject_and_object_still_conflicts() {
        let strict = strict_seed();
        let u = DecisionAction::Update;
        // One content word shared ("sushi"), but the same subject and object:
        // an UPDATE, flagged by the detector, as it is counting every word.
        let old = fact("Alice", "loves", "sushi", "Alice loves sushi");
        let new = fact("Alice", "hates", "sushi", "Alice hates sushi");
        for cfg in [&seed(), &strict] {
            let d = decide(&new, &[memory("m1", &old, 0.7)], cfg);
            assert_eq!((d.action, d.target.as_deref()), (u, Some("m1")));
            assert!(review_needed(&d, &new, Some(&memory("m1", &old, 0.7)), cfg));
        }
        // Subjects compare trimmed and case-insensitively, objects normalised.
        let spaced = fact(" alice", "hates", "Sushi.", "Alice hates sushi");
        assert_eq!(decide(&spaced, &[memory("m1", &old, 0.7)], &strict).action, u);
        // A negation counts as a split too.
        let not = fact("Alice", "does not eat", "sushi", "Alice does not eat sushi");
        assert_eq!(decide(&not, &[memory("m1", &fact("Alice", "eats", "sushi", "Alice eats sushi"), 0.7)], &strict).action, u);
        // Another object: no exception, and one content word is too few.
        let bars = fact("Alice", "hates", "sushi bars", "Alice hates sushi bars");
        assert_eq!(decide(&bars, &[memory("m1", &old, 0.7)], &strict).action, DecisionAction::Add);
        assert_eq!(decide(&bars, &[memory("m1", &old, 0.7)], &seed()).action, u, "counting every word: alice, sushi");
        let d = Decision { action: u, target: Some("m1".into()), confidence: 0.9, reason: "r".into() };
        assert!(!review_needed(&d, &bars, Some(&memory("m1", &old, 0.7)), &strict));
        // Another subject (the detector does not check it): no exception either.
        let bob = fact("Bob", "hates", "sushi", "Bob hates sushi");
        assert!(!review_needed(&d, &bob, Some(&memory("m1", &old, 0.7)), &strict));
        // Empty objects are no shared object.
        let (a, b) = (fact("Alice", "said", "", "Alice said yes"), fact("Alice", "said", "", "Alice said no"));
        assert!(!review_needed(&d, &b, Some(&memory("m1", &a, 0.7)), &strict));
        // The same subject and object without a split is no conflict.
        let likes = fact("Alice", "likes", "sushi", "Alice likes sushi");
        assert_eq!(decide(&likes, &[memory("m1", &old, 0.7)], &strict).action, DecisionAction::Add);
    }

    #[test]
    fn counting_content_words_only_a_new_pastime_does_not_replace_an_unrelated_memory() {
        // Two facts about one speaker with no object in common, which by
        // default share enough words ("tom", "has") for the negation in one
        // to make a conflict; their content words share none.
        let strict = strict_seed();
        let old = fact("Tom", "has", "no trips planned", "Tom has no trips planned");
        let new = fact("Tom", "has started", "learning to play the violin", "Tom has started learning to play the violin");
        assert_eq!(decide(&new, &[memory("m1", &old, 0.6)], &seed()).action, DecisionAction::Update);
        let d = decide(&new, &[memory("m1", &old, 0.6)], &strict);
        assert_eq!((d.action, d.target), (DecisionAction::Add, None));
    }
}
