//! Stage 4, judge contradictions: pair each surviving candidate with the live
//! facts it may contradict, ask a [`Judge`] for verdicts, then apply the
//! guards. Rules and LLM judges differ only in how they answer.

use serde::{Deserialize, Serialize};

use super::dedupe::Deduped;
use super::{Batch, StageMode};
use crate::error::{Error, Result};
use crate::pipeline::Config;
use crate::state::ConvState;
use crate::types::{CandidateFact, LlmUsage, Verdict, Warning};

mod guards;
pub mod llm;
mod pairs;
mod rules;

pub use guards::{FinalVerdict, GuardInput, apply_guards};
pub use llm::LlmJudge;
pub use pairs::{FoundPair, PairInput, PairReason, PairRules, find_pairs};
pub use rules::{Antonyms, PolarityKeys, RulesJudge, SharedWords, opposite_preferences, polarity_conflict, preference_polarity};

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
    /// The per-fact decision stage this judge is, for profiles that decide
    /// per fact (`signet`) rather than judge pairs.
    fn decider(&self) -> Option<&dyn crate::pipeline::signet::Decider> {
        None
    }
    /// The `memorix` profile's model calls this judge is (LLM mode).
    fn memorix(&self) -> Option<&crate::pipeline::memorix::llm::MemorixLlm> {
        None
    }
    /// The `dreaming` profile's model (LLM mode: the llm dreamer).
    fn dreaming(&self) -> Option<&crate::pipeline::dreaming::llm::DreamLlm> {
        None
    }
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
///
/// Two kinds of survivor skip judging (memory-soda): one below
/// `min_trusted_confidence` is paired with nothing (it is stored and can
/// never end a fact), and a historical one (`valid_until` past) is paired
/// only with the relationship it ends (or, with `evidence_of_change`, the
/// state it shows evidence of ending), which it ends without asking the
/// judge (guard `historical_skips_judging`).
pub fn stage(
    batch: &Batch<'_>,
    deduped: &Deduped,
    state: &ConvState,
    ctx: JudgeContext<'_>,
    now: Option<&str>,
    cfg: &Config,
    judge: &dyn Judge,
) -> Result<Judged> {
    let survivors: Vec<usize> =
        deduped.survivors().filter(|&i| batch.facts[i].fact.confidence >= cfg.soda.min_trusted_confidence).collect();
    let inputs: Vec<PairInput<'_>> = survivors
        .iter()
        .map(|&i| PairInput { fact: PairFact::of(&batch.facts[i].fact), embedding: batch.vector(i), keys: &batch.keys[i] })
        .collect();
    let historical = |p: &FoundPair| crate::state::is_past(batch.facts[survivors[p.candidate]].fact.valid_until.as_deref(), now);
    let rules = PairRules::new(cfg);
    let (ended, mut pairs): (Vec<FoundPair>, Vec<FoundPair>) =
        find_pairs(&inputs, state, now, &rules).into_iter().partition(|p| historical(p));
    // The rules judge reads each pair's facts: the live facts' readings,
    // kept with the facts, go into the episode's memo (none is made again).
    if judge.mode() == StageMode::Rules {
        let mut seen: Vec<usize> = pairs.iter().map(|p| p.live_pos).collect();
        seen.sort_unstable();
        seen.dedup();
        for pos in seen {
            rules.keep_reading(&state.facts[pos]);
        }
    }
    // The judge answers by index: the pairs it sees are numbered from 0.
    for (k, p) in pairs.iter_mut().enumerate() {
        p.pair.index = k;
    }
    let mut out = Judged { verdicts: vec![Vec::new(); batch.len()], ..Judged::default() };
    // What a historical candidate ends: the relationship it names, or (with
    // `evidence_of_change`) a state it shows evidence of ending ("sold the
    // truck", stored as ended).
    for p in ended.iter().filter(|p| matches!(p.reason, PairReason::EndsRelationship | PairReason::EvidenceOfChange)) {
        out.verdicts[survivors[p.candidate]].push(FinalVerdict {
            live_id: p.live_id.clone(),
            reason: p.reason,
            verdict: Verdict::Old,
            judged: Verdict::Old,
            review_needed: false,
            guard: Some("historical_skips_judging".into()),
            cosine: p.pair.cosine,
        });
    }
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
    for (p, v) in pairs.iter().zip(apply_guards(&pairs, &answer, &guard_inputs, now, cfg.soda.min_trusted_confidence)) {
        out.verdicts[survivors[p.candidate]].push(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::state::{FactKeys, FactRec, Vector};

    /// A candidate for pairing; its keys are leaked (tests only).
    fn pin(fact: PairFact, embedding: Vector<'_>) -> PairInput<'_> {
        let keys: &'static FactKeys = Box::leak(Box::new(FactKeys::of(&fact.subject, &fact.predicate, &fact.object)));
        PairInput { fact, embedding, keys }
    }

    /// The seeds' rules as written (`evidence_of_change` off).
    fn seed() -> Config {
        let mut c = Config::default();
        c.soda.evidence_of_change = false;
        c.signet.evidence_of_change = false;
        c.memorix.evidence_of_change = false;
        c
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
    fn on_evidence_of_change_only_a_change_is_old() {
        let j = RulesJudge::new(&Config::default());
        let seed = RulesJudge::new(&seed());
        let v = |j: &RulesJudge, old: &str, new: &str| {
            j.verdict(&pair(pf("Lena", "states", old, old, None), pf("Lena", "states", new, new, None)))
        };
        // Each kind of evidence replaces; a flip is flagged for review as the seed flags polarity conflicts.
        assert_eq!(v(&j, "Lena's manager is Omar", "Lena's new manager is Priya"), (Verdict::Old, false));
        assert_eq!(v(&j, "Lena is engaged to Felix", "Lena broke up with Felix"), (Verdict::Old, false));
        assert_eq!(v(&j, "Lena plays the cello", "Lena doesn't play the cello anymore"), (Verdict::Old, false));
        assert_eq!(v(&j, "Lena loves camping", "Lena really hates camping now"), (Verdict::Old, true));
        // A negation elsewhere with a shared name and function words: the seed replaced, the rules do not.
        let (old, new) = ("Lena thinks Felix has talent", "Lena tells Felix not to let anything stop him");
        assert_eq!(v(&j, old, new), (Verdict::Neither, false));
        assert_eq!(v(&seed, old, new), (Verdict::Old, true));
        // Antonyms about different objects; another holder.
        assert_eq!(v(&j, "Lena loves the beach", "Lena hates crowded trains"), (Verdict::Neither, false));
        assert_eq!(v(&j, "Lena is single", "Lena's brother is married"), (Verdict::Neither, false));
        // Another subject is never evidence.
        let other = pair(
            pf("Lena", "states", "Lena plays the cello", "Lena plays the cello", None),
            pf("Omar", "states", "Omar quit the cello", "Omar quit the cello", None),
        );
        assert_eq!(j.verdict(&other), (Verdict::Neither, false));
    }

    #[test]
    fn on_evidence_of_change_an_ending_is_paired_whatever_the_predicates() {
        let mut st = ConvState::default();
        let e = vec![1.0f32, 0.0];
        let mut choir = live_rec("f1", "Lena", "states", "Lena sings in a choir", e.clone());
        choir.content = "Lena sings in a choir".into();
        let mut jazz = live_rec("f2", "Lena", "likes", "jazz", e);
        jazz.content = "Lena likes jazz".into();
        st.facts.extend([choir, jazz]);
        let c = [0.0f32, 1.0];
        let cand = pin(pf("Lena", "states", "Lena quit the choir", "Lena quit the choir", None), Vector { slot: None, values: &c });
        let found = find_pairs(std::slice::from_ref(&cand), &st, None, &PairRules::new(&Config::default()));
        assert_eq!(pairs_of(&found), vec![(0, "f1", PairReason::EvidenceOfChange)]);
        // The seed's pairing finds nothing: multi-valued, no shared polarity words.
        let seed = find_pairs(&[cand], &st, None, &PairRules::new(&seed()));
        assert!(seed.is_empty(), "{seed:?}");
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
        // By default every word counts, the subject's name among them (the rule as written).
        assert!(j.polarity_conflict("Alice", "Alice loves sushi", "Alice hates sushi"));
        assert!(j.polarity_conflict("Alice", "Alice drinks coffee", "Alice does not drink coffee"));
        assert!(!j.polarity_conflict("Alice", "I love it", "they hate rain"), "fewer than 2 shared tokens");
        let cfg = {
            let mut c = Config::default();
            c.soda.antonym_min_shared_tokens = 5;
            c
        };
        assert!(!RulesJudge::new(&cfg).polarity_conflict("Alice", "Alice loves sushi", "Alice hates sushi"));
    }

    #[test]
    fn only_content_words_count_as_shared_when_switched_on() {
        let strict = RulesJudge::new(&{
            let mut c = Config::default();
            c.soda.polarity_content_words_only = true;
            c
        });
        let loose = RulesJudge::new(&Config::default());
        // Two content words shared: a conflict either way.
        assert!(strict.polarity_conflict("Alice", "Alice loves sushi at Kenji's", "Alice hates sushi at Kenji's"));
        assert!(strict.polarity_conflict("Alice", "Alice drinks black coffee", "Alice does not drink black coffee"));
        // The subject's name and stopwords are all these share: no conflict when switched on.
        let (a, b) = ("Caroline is going to the park", "Caroline said no matter what she is proud");
        assert!(!strict.polarity_conflict("Caroline", a, b));
        assert!(loose.polarity_conflict("Caroline", a, b), "counting every word: caroline, is");
        // Possessives of the subject and a multi-word name do not count either.
        let (a, b) = ("Mary Ann's sister lives here", "Mary Ann's sister does not visit");
        assert!(!strict.polarity_conflict("Mary Ann", a, b), "only \"sister\" counts");
        assert!(strict.polarity_conflict("Mary Ann", "Mary Ann's sister likes the red car", "Mary Ann's sister does not like the red car"));
        // A word of another person's name is a content word.
        assert!(strict.polarity_conflict("Alice", "Alice met Bob Smith", "Alice never met Bob Smith"));
        // Case and accents of the subject are matched as the text's words are.
        assert!(!strict.polarity_conflict("ÉLODIE", "Élodie garden party", "Élodie has no garden"));
        assert!(loose.polarity_conflict("ÉLODIE", "Élodie garden party", "Élodie has no garden"));
    }

    #[test]
    fn counting_content_words_only_the_same_subject_and_object_need_no_shared_word() {
        // The preference rule answers first for opposite preferences; without it
        // the polarity rule decides.
        let strict = RulesJudge::new(&{
            let mut c = seed();
            c.soda.polarity_content_words_only = true;
            c.soda.preference_polarity_pairing = false;
            c
        });
        let loves = pf("Alice", "loves", "sushi", "Alice loves sushi", None);
        // One content word shared ("sushi"), the same subject and object: a conflict, flagged.
        assert_eq!(strict.verdict(&pair(loves.clone(), pf("alice", "hates", "Sushi", "Alice hates sushi", None))), (Verdict::Old, true));
        // Another object: one content word is too few.
        let bars = pf("Alice", "hates", "sushi bars", "Alice hates sushi bars", None);
        assert_eq!(strict.verdict(&pair(loves.clone(), bars.clone())), (Verdict::Neither, false));
        let loose = RulesJudge::new(&{
            let mut c = seed();
            c.soda.preference_polarity_pairing = false;
            c
        });
        assert_eq!(loose.verdict(&pair(loves.clone(), bars)), (Verdict::Old, true), "counting every word: alice, sushi");
        // Another subject is no conflict at all.
        assert_eq!(strict.verdict(&pair(loves, pf("Bob", "hates", "sushi", "Bob hates sushi", None))), (Verdict::Neither, false));
        // Without objects (texts alone) there is no exception.
        assert!(!strict.polarity_conflict("Alice", "Alice loves sushi", "Alice hates sushi"));
    }

    #[test]
    fn counting_content_words_only_a_new_pastime_does_not_conflict_with_an_unrelated_fact() {
        let strict = RulesJudge::new(&{
            let mut c = Config::default();
            c.soda.polarity_content_words_only = true;
            c
        });
        let loose = RulesJudge::new(&Config::default());
        let (old, new) = ("Tom has no trips planned", "Tom has started learning to play the violin");
        assert!(loose.polarity_conflict("Tom", old, new), "tom and has shared, and a negation on one side");
        assert!(!strict.polarity_conflict("Tom", old, new), "no content word shared");
    }

    #[test]
    fn the_stopword_list_is_sorted_and_lower_case() {
        assert!(rules::STOPWORDS.windows(2).all(|w| w[0] < w[1]), "sorted, no duplicates");
        assert!(rules::STOPWORDS.iter().all(|w| w.to_lowercase() == *w));
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
        let found = find_pairs(&cands, &st, None, &PairRules::new(&Config::default()));
        let got: Vec<_> = found.iter().map(|p| (p.candidate, p.live_id.as_str(), p.reason)).collect();
        assert_eq!(
            got,
            vec![(0, "f1", PairReason::SamePredicate), (1, "f1", PairReason::EndsRelationship), (2, "f1", PairReason::SimilarContent),]
        );
        assert!(found.iter().enumerate().all(|(i, p)| p.pair.index == i));
    }

    fn live_content(id: &str, s: &str, p: &str, o: &str, content: &str, emb: Vec<f32>) -> FactRec {
        let mut f = live_rec(id, s, p, o, emb);
        f.content = content.into();
        f
    }

    fn pairs_of(found: &[FoundPair]) -> Vec<(usize, &str, PairReason)> {
        found.iter().map(|p| (p.candidate, p.live_id.as_str(), p.reason)).collect()
    }

    #[test]
    fn multi_valued_predicates_pair_only_to_end_or_on_polarity_conflict() {
        let mut st = ConvState::default();
        let e = vec![1.0f32, 0.0];
        st.facts.push(live_content("f1", "Alice", "likes", "tea", "Alice likes tea", e.clone()));
        st.facts.push(live_content("f2", "Alice", "likes", "coffee", "Alice likes coffee", e.clone()));
        st.facts.push(live_content("f3", "Alice", "enjoys", "chess", "Alice enjoys chess", e.clone()));
        // Cosine 0.85 with every fact: in the similar-content band.
        let band = [0.85f32, (1.0f32 - 0.85 * 0.85).sqrt()];
        let v = |values| Vector { slot: None, values };
        let cands = [
            // Another like: same predicate, different object; both stand.
            pin(pf("Alice", "likes", "sushi", "Alice likes sushi", None), v(&band)),
            // Ends the tea relationship.
            pin(pf("Alice", "likes", "tea", "Alice likes tea", Some("2024-01-01")), v(&band)),
            // A negation: a polarity conflict with both likes ("alice", "likes" shared), not with chess.
            pin(pf("Alice", "likes", "green tea", "Alice likes green tea but never coffee", None), v(&band)),
            // An antonym split with the tea fact: likes / dislikes, 2 shared words.
            pin(pf("Alice", "hates", "tea bags", "Alice dislikes tea bags", None), v(&band)),
        ];
        let cfg = seed();
        let found = find_pairs(&cands, &st, None, &PairRules::new(&cfg));
        assert_eq!(
            pairs_of(&found),
            vec![
                (1, "f1", PairReason::EndsRelationship),
                (2, "f1", PairReason::SamePredicate),
                (2, "f2", PairReason::SamePredicate),
                (3, "f1", PairReason::SimilarContent),
            ]
        );
        // Counting content words only, the antonym split shares one word with the tea
        // fact ("tea"; the subject's name does not count) and does not pair; the
        // negation still shares two with each like ("likes", and "tea" or "coffee").
        let strict = {
            let mut c = cfg.clone();
            c.soda.polarity_content_words_only = true;
            c
        };
        assert_eq!(
            pairs_of(&find_pairs(&cands, &st, None, &PairRules::new(&strict))),
            vec![(1, "f1", PairReason::EndsRelationship), (2, "f1", PairReason::SamePredicate), (2, "f2", PairReason::SamePredicate)]
        );
        // The same candidates with no multi-valued predicate: the three conditions alone.
        let mut open = cfg.clone();
        open.soda.multi_valued_predicates.clear();
        let found = find_pairs(&cands, &st, None, &PairRules::new(&open));
        let got = pairs_of(&found);
        assert!(got.contains(&(0, "f1", PairReason::SamePredicate)) && got.contains(&(0, "f2", PairReason::SamePredicate)), "{got:?}");
        assert!(got.contains(&(0, "f3", PairReason::SimilarContent)), "{got:?}");
        assert_eq!(got.len(), 12, "every candidate with every fact: {got:?}");
    }

    #[test]
    fn the_cap_keeps_the_nearest_pairs_in_live_order_ties_to_the_earlier_fact() {
        // Cosines with the candidate's vector [1, 0]: f0 0.2, f1 0.9, f2 0.5, f3 0.9, f4 0.7, f5 0.9.
        let at = |c: f32| vec![c, (1.0 - c * c).sqrt()];
        let mut st = ConvState::default();
        for (i, c) in [0.2f32, 0.9, 0.5, 0.9, 0.7, 0.9].into_iter().enumerate() {
            st.facts.push(live_rec(&format!("f{i}"), "Alice", "prefers", &format!("thing {i}"), at(c)));
        }
        let one = [1.0f32, 0.0];
        let cands = [pin(pf("Alice", "prefers", "tea", "Alice prefers tea", None), Vector { slot: None, values: &one })];
        let mut cfg = Config::default();
        let ids =
            |cfg: &Config| -> Vec<String> { find_pairs(&cands, &st, None, &PairRules::new(cfg)).into_iter().map(|p| p.live_id).collect() };
        assert_eq!(ids(&cfg), ["f0", "f1", "f2", "f3", "f4", "f5"], "under the cap every pair stays");
        cfg.soda.max_pairs_per_candidate = 4;
        assert_eq!(ids(&cfg), ["f1", "f3", "f4", "f5"]);
        cfg.soda.max_pairs_per_candidate = 2;
        assert_eq!(ids(&cfg), ["f1", "f3"], "equal cosines: the earlier facts");
        assert_eq!(ids(&cfg), ids(&cfg));
        cfg.soda.max_pairs_per_candidate = 1;
        let found = find_pairs(&cands, &st, None, &PairRules::new(&cfg));
        assert_eq!((found.len(), found[0].live_id.as_str(), found[0].pair.index), (1, "f1", 0));
    }

    /// The polarity rule as it was written before its keys were precomputed.
    fn polarity_reference(antonyms: &[[String; 2]], min_shared: usize, a: &str, b: &str) -> bool {
        let words = |s: &str| -> Vec<String> {
            s.to_lowercase().split(|c: char| !(c.is_alphanumeric() || c == '\'')).filter(|w| !w.is_empty()).map(str::to_string).collect()
        };
        let (ta, tb) = (words(a), words(b));
        let mut distinct = ta.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.iter().filter(|t| tb.contains(t)).count() < min_shared {
            return false;
        }
        let neg = [
            "not", "no", "never", "don't", "doesn't", "didn't", "isn't", "aren't", "wasn't", "won't", "can't", "cannot", "dont", "doesnt",
            "isnt", "longer",
        ];
        let negated = |t: &[String]| t.iter().any(|w| neg.contains(&w.as_str()));
        if negated(&ta) != negated(&tb) {
            return true;
        }
        let has = |t: &[String], w: &str| t.iter().any(|x| x == w);
        antonyms.iter().any(|[x, y]| {
            let (x, y) = (x.to_lowercase(), y.to_lowercase());
            (has(&ta, &x) && has(&tb, &y) && !has(&ta, &y) && !has(&tb, &x))
                || (has(&ta, &y) && has(&tb, &x) && !has(&ta, &x) && !has(&tb, &y))
        })
    }

    #[test]
    fn precomputed_polarity_keys_answer_as_the_rule_on_text_did() {
        let texts = [
            "Alice loves sushi",
            "Alice hates sushi",
            "Alice does not drink coffee",
            "Alice drinks coffee",
            "Dark mode: enabled",
            "dark mode: DISABLED",
            "I love it",
            "they hate rain",
            "Alice likes tea, not coffee",
            "Alice likes coffee",
            "Alice no longer works at Google",
            "Alice works at Google",
            "Allow all, deny none",
            "always on",
            "never off",
            "yes yes",
            "no",
            "",
            "Alice's car isn't red",
            "Alice's car is red",
        ];
        let mut many = Config::default().soda.antonyms;
        for i in 0..70 {
            many.push([format!("w{i}a"), format!("w{i}b")]);
        }
        many.push(["Enabled".into(), "Disabled".into()]);
        for antonyms in [Config::default().soda.antonyms, many] {
            let list = Antonyms::interned(&antonyms);
            for min in [0, 1, 2, 3] {
                for a in texts {
                    for b in texts {
                        let keys = (PolarityKeys::of(a, &list), PolarityKeys::of(b, &list));
                        assert_eq!(
                            polarity_conflict(&keys.0, &keys.1, &SharedWords { min, content_only: false, facts: [("", ""); 2] }),
                            polarity_reference(&antonyms, min, a, b),
                            "{a:?} / {b:?}, {min}"
                        );
                    }
                }
            }
        }
        assert!(Arc::ptr_eq(&Antonyms::interned(&Config::default().soda.antonyms), &Antonyms::interned(&Config::default().soda.antonyms)));
    }

    #[test]
    fn a_facts_cached_polarity_keys_serve_only_their_antonym_list() {
        let f = live_content("f1", "Alice", "likes", "tea", "Alice likes tea", vec![]);
        let default = Antonyms::interned(&Config::default().soda.antonyms);
        let other = Antonyms::interned(&[["tea".to_string(), "coffee".to_string()]]);
        assert!(f.polarity(&default).is_for(&default));
        assert!(f.polarity(&other).is_for(&other), "computed afresh for another list");
        assert_eq!(*f.polarity(&default), PolarityKeys::of("Alice likes tea", &default));
    }

    fn found(reason: PairReason) -> FoundPair {
        FoundPair {
            candidate: 0,
            live_id: "f1".into(),
            live_pos: 0,
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

    #[test]
    fn preference_polarity_of_predicates() {
        for (p, want) in [
            ("loves", Some(true)),
            ("likes", Some(true)),
            ("enjoys", Some(true)),
            ("prefers", Some(true)),
            ("hates", Some(false)),
            ("dislikes", Some(false)),
            ("avoids", Some(false)),
            ("does not like", Some(false)),
            ("no longer enjoys", Some(false)),
            ("doesn't hate", Some(true)),
            ("works at", None),
            ("lives in", None),
        ] {
            assert_eq!(preference_polarity(p), want, "{p}");
        }
        assert!(opposite_preferences("loves", "hates") && opposite_preferences("likes", "does not like"));
        assert!(!opposite_preferences("loves", "likes") && !opposite_preferences("loves", "works at"));
    }

    #[test]
    fn opposite_preferences_on_the_same_object_pair_and_the_later_wins() {
        let mut st = ConvState::default();
        // Orthogonal vectors: no cosine band could pair them.
        st.facts.push(live_content("f1", "Mia", "loves", "Chinese food", "Mia loves Chinese food", vec![1.0, 0.0]));
        let e = [0.0f32, 1.0];
        let cand = [pin(pf("Mia", "hates", "Chinese food", "Mia hates Chinese food", None), Vector { slot: None, values: &e })];
        let found = find_pairs(&cand, &st, None, &PairRules::new(&seed()));
        assert_eq!(pairs_of(&found), vec![(0, "f1", PairReason::OppositePreference)]);
        assert_eq!(RulesJudge::new(&seed()).verdict(&found[0].pair), (Verdict::Old, false));
        let off = {
            let mut c = seed();
            c.soda.preference_polarity_pairing = false;
            c
        };
        assert!(find_pairs(&cand, &st, None, &PairRules::new(&off)).is_empty(), "switched off: not paired");
    }
}
