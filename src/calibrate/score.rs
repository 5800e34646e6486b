//! What became of a pair ([`Outcome`], from what the stages left:
//! [`Observed`]), the rates over a set of pairs ([`Rates`]), and the
//! recommended operating point of a threshold ([`recommend`]). Pure
//! functions of their inputs; definitions in docs/metrics.md,
//! "Decision quality (calibration)".

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::input::{Label, Source};
use crate::pipeline::CandidateOutcome;
use crate::types::string_enum;

string_enum! {
    /// What the pipeline did with a pair.
    pub enum Outcome {
        /// The second did not become a separate live fact (a duplicate,
        /// NONE, discarded, merged into the first) and the first is live.
        Merged => "merged",
        /// A fact from the first session is no longer live (or no longer
        /// holds its text, or was closed) because of a second-session candidate.
        Replaced => "replaced",
        /// Both sides are live facts.
        BothKept => "both_kept",
        /// Nothing was stored from the first session, or no candidate of the
        /// second reached a decision: counted apart, outside every rate.
        NotFormed => "not_formed",
    }
}

impl PartialOrd for Outcome {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// In declaration order (the matrix's columns).
impl Ord for Outcome {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (*self as u8).cmp(&(*other as u8))
    }
}

/// A first-session fact that a second-session candidate ended or rewrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replacement {
    /// The first-session fact's content as it was written.
    pub old: String,
    /// The candidate that ended it (for an UPDATE, the text that replaced it).
    pub new: String,
    /// How: the candidate's outcome (`created` for a judge's invalidation,
    /// `updated`, `deleted`, `evolved`, `closure`, …).
    pub how: String,
}

/// A second-session candidate and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub content: String,
    pub outcome: CandidateOutcome,
}

/// What the stages left of one pair.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Observed {
    /// Facts written in the first session and live after it (their content).
    pub first: Vec<String>,
    /// Every candidate of the second session, in order.
    pub second: Vec<Candidate>,
    /// Facts written in the second session and live at the end.
    pub second_live: Vec<String>,
    /// First-session facts the second session ended or rewrote.
    pub replaced: Vec<Replacement>,
}

/// Outcomes that mean a candidate never reached a decision about the
/// stored facts (the noise filter, the write gate, a dropped decision).
pub fn reached_decision(o: CandidateOutcome) -> bool {
    !matches!(
        o,
        CandidateOutcome::NoiseRejected
            | CandidateOutcome::LowFactConfidence
            | CandidateOutcome::EmptyFactContent
            | CandidateOutcome::DecisionDropped
    )
}

/// The pair's outcome: `not_formed` when nothing of the first session is
/// live after it or no second-session candidate reached a decision; else
/// `replaced` when a first-session fact was ended or rewritten; else
/// `merged` when no second-session fact is live; else `both_kept`.
pub fn classify(o: &Observed) -> Outcome {
    if o.first.is_empty() || !o.second.iter().any(|c| reached_decision(c.outcome)) {
        Outcome::NotFormed
    } else if !o.replaced.is_empty() {
        Outcome::Replaced
    } else if o.second_live.is_empty() {
        Outcome::Merged
    } else {
        Outcome::BothKept
    }
}

/// Labels whose pairs should end with the first replaced.
pub fn should_replace(l: Label) -> bool {
    matches!(l, Label::Update | Label::Contradiction)
}
/// Labels whose pairs must keep the first (a replacement is a false invalidation).
pub fn must_not_replace(l: Label) -> bool {
    matches!(l, Label::Coexist | Label::Entailment | Label::Neutral)
}
/// Labels whose pairs should end merged.
pub fn should_merge(l: Label) -> bool {
    matches!(l, Label::Duplicate | Label::Paraphrase)
}
/// Labels whose pairs must not merge (a merge is a false merge). SICK's
/// entailments are neither: one may restate the other.
pub fn must_not_merge(l: Label) -> bool {
    matches!(l, Label::Update | Label::Coexist | Label::NotParaphrase | Label::Contradiction | Label::Neutral)
}

/// A count over a count; undefined (None) over none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ratio {
    pub num: usize,
    pub den: usize,
}

impl Ratio {
    pub fn value(self) -> Option<f64> {
        (self.den > 0).then(|| self.num as f64 / self.den as f64)
    }
    fn add(&mut self, hit: bool) {
        self.den += 1;
        self.num += usize::from(hit);
    }
}

/// The rates over a set of (label, outcome), formed pairs only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// Should-replace pairs replaced / should-replace pairs formed.
    pub update_recall: Ratio,
    /// Must-not-replace pairs replaced / must-not-replace pairs formed.
    pub false_invalidation: Ratio,
    /// Should-merge pairs merged / should-merge pairs formed.
    pub duplicate_recall: Ratio,
    /// Must-not-merge pairs merged / must-not-merge pairs formed.
    pub false_merge: Ratio,
    /// Should-merge pairs merged / pairs merged (of the labels that say either way).
    pub merge_precision: Ratio,
    pub formed: usize,
    pub not_formed: usize,
}

impl Rates {
    pub fn of(items: impl IntoIterator<Item = (Label, Outcome)>) -> Rates {
        let mut r = Rates::default();
        for (label, outcome) in items {
            if outcome == Outcome::NotFormed {
                r.not_formed += 1;
                continue;
            }
            r.formed += 1;
            let (replaced, merged) = (outcome == Outcome::Replaced, outcome == Outcome::Merged);
            if should_replace(label) {
                r.update_recall.add(replaced);
            }
            if must_not_replace(label) {
                r.false_invalidation.add(replaced);
            }
            if should_merge(label) {
                r.duplicate_recall.add(merged);
            }
            if must_not_merge(label) {
                r.false_merge.add(merged);
            }
            if merged && (should_merge(label) || must_not_merge(label)) {
                r.merge_precision.add(should_merge(label));
            }
        }
        r
    }

    /// What the recommendation maximises: update recall + duplicate recall
    /// (an undefined one counts 0).
    pub fn objective(&self) -> f64 {
        self.update_recall.value().unwrap_or(0.0) + self.duplicate_recall.value().unwrap_or(0.0)
    }

    /// Within both limits (an undefined rate is within).
    pub fn meets(&self, limits: Limits) -> bool {
        self.false_merge.value().is_none_or(|v| v <= limits.max_false_merge + 1e-12)
            && self.false_invalidation.value().is_none_or(|v| v <= limits.max_false_invalidation + 1e-12)
    }

    /// The rates as `summary.json` names them for `source` (undefined ones left out).
    pub fn metrics(&self, source: Source) -> BTreeMap<String, f64> {
        let names: &[(&str, Ratio)] = match source {
            Source::Pairs => &[
                ("update_recall", self.update_recall),
                ("false_invalidation_rate", self.false_invalidation),
                ("duplicate_recall", self.duplicate_recall),
                ("false_merge_rate", self.false_merge),
                ("merge_precision", self.merge_precision),
            ],
            Source::Sick => &[
                ("conflict_recall", self.update_recall),
                ("false_conflict_rate", self.false_invalidation),
                ("false_merge_rate", self.false_merge),
            ],
            Source::Msrp => &[
                ("merge_precision", self.merge_precision),
                ("merge_recall", self.duplicate_recall),
                ("false_merge_rate", self.false_merge),
            ],
        };
        let mut out: BTreeMap<String, f64> =
            names.iter().filter_map(|(n, r)| Some((format!("{}_{n}", source.as_str()), r.value()?))).collect();
        if source == Source::Msrp
            && let (Some(p), Some(r)) = (self.merge_precision.value(), self.duplicate_recall.value())
        {
            out.insert("msrp_merge_f1".into(), if p + r > 0.0 { 2.0 * p * r / (p + r) } else { 0.0 });
        }
        out.insert(format!("{}_formed", source.as_str()), self.formed as f64);
        out.insert(format!("{}_not_formed", source.as_str()), self.not_formed as f64);
        out
    }
}

/// Whether a calibration metric is better higher (`Some(true)`), lower
/// (`Some(false)`) or neither (counts): recalls, precisions and F1 up,
/// rates down.
pub fn higher_is_better(key: &str) -> Option<bool> {
    if key.ends_with("_formed") || key.ends_with("_not_formed") {
        None
    } else if key.ends_with("_rate") {
        Some(false)
    } else if key.ends_with("_recall") || key.ends_with("_precision") || key.ends_with("_f1") {
        Some(true)
    } else {
        None
    }
}

/// The constraints of the recommendation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub max_false_merge: f64,
    pub max_false_invalidation: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_false_merge: 0.05, max_false_invalidation: 0.02 }
    }
}

/// One value of a threshold's curve and the rates it gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub value: f64,
    pub rates: Rates,
}

/// The recommended value of a threshold: among the values within the
/// limits, the one with the highest [`Rates::objective`]; a tie goes to
/// `default` when it is among them, else to the value nearest it (the
/// lower on an equal distance). `None`: no value meets the limits.
pub fn recommend(curve: &[CurvePoint], default: f64, limits: Limits) -> Option<f64> {
    let ok: Vec<&CurvePoint> = curve.iter().filter(|p| p.rates.meets(limits)).collect();
    let best = ok.iter().map(|p| p.rates.objective()).fold(f64::NEG_INFINITY, f64::max);
    let tied: Vec<f64> = ok.iter().filter(|p| (p.rates.objective() - best).abs() < 1e-12).map(|p| p.value).collect();
    if tied.iter().any(|v| (v - default).abs() < 1e-9) {
        return Some(default);
    }
    tied.into_iter().min_by(|a, b| (a - default).abs().total_cmp(&(b - default).abs()).then(a.total_cmp(b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use CandidateOutcome as C;

    fn cand(content: &str, outcome: CandidateOutcome) -> Candidate {
        Candidate { content: content.into(), outcome }
    }

    fn observed(first: &[&str], second: Vec<Candidate>, second_live: &[&str], replaced: bool) -> Observed {
        Observed {
            first: first.iter().map(|s| s.to_string()).collect(),
            second,
            second_live: second_live.iter().map(|s| s.to_string()).collect(),
            replaced: if replaced {
                vec![Replacement { old: "Maya works at a bakery.".into(), new: "Maya works at a bank.".into(), how: "created".into() }]
            } else {
                vec![]
            },
        }
    }

    #[test]
    fn each_outcome_from_what_the_stages_left() {
        let first = ["Maya works at a bakery."];
        // A near duplicate: nothing of the second is live, the first is.
        assert_eq!(classify(&observed(&first, vec![cand("Maya works at the bakery.", C::NearDuplicate)], &[], false)), Outcome::Merged);
        // signet's NONE and memorix's merge are merges too.
        assert_eq!(classify(&observed(&first, vec![cand("x", C::NoneDecided)], &[], false)), Outcome::Merged);
        assert_eq!(classify(&observed(&first, vec![cand("x", C::Merged)], &[], false)), Outcome::Merged);
        // An invalidation (or an UPDATE in place) is a replacement, whether or not the second is live.
        assert_eq!(classify(&observed(&first, vec![cand("x", C::Created)], &["x"], true)), Outcome::Replaced);
        assert_eq!(classify(&observed(&first, vec![cand("x", C::Updated)], &[], true)), Outcome::Replaced);
        // Both live.
        assert_eq!(classify(&observed(&first, vec![cand("x", C::Created)], &["x"], false)), Outcome::BothKept);
        // Nothing stored from the first session; or no second candidate reached a decision.
        assert_eq!(classify(&observed(&[], vec![cand("x", C::Created)], &["x"], false)), Outcome::NotFormed);
        assert_eq!(classify(&observed(&first, vec![], &[], false)), Outcome::NotFormed);
        assert_eq!(
            classify(&observed(&first, vec![cand("x", C::NoiseRejected), cand("y", C::LowFactConfidence)], &[], false)),
            Outcome::NotFormed
        );
        // One candidate that reached a decision is enough.
        assert_eq!(
            classify(&observed(&first, vec![cand("x", C::NoiseRejected), cand("y", C::ExactDuplicate)], &[], false)),
            Outcome::Merged
        );
    }

    #[test]
    fn rates_by_hand() {
        use Label::*;
        use Outcome::*;
        // Test input: 4 updates (2 replaced, 1 both kept, 1 not formed), 5 coexists (1 replaced,
        // 1 merged, 3 both kept), 3 duplicates (2 merged, 1 both kept).
        let items = vec![
            (Update, Replaced),
            (Update, Replaced),
            (Update, BothKept),
            (Update, NotFormed),
            (Coexist, Replaced),
            (Coexist, Merged),
            (Coexist, BothKept),
            (Coexist, BothKept),
            (Coexist, BothKept),
            (Duplicate, Merged),
            (Duplicate, Merged),
            (Duplicate, BothKept),
        ];
        let r = Rates::of(items);
        assert_eq!((r.formed, r.not_formed), (11, 1));
        assert_eq!(r.update_recall, Ratio { num: 2, den: 3 });
        assert_eq!(r.false_invalidation, Ratio { num: 1, den: 5 });
        assert_eq!(r.duplicate_recall, Ratio { num: 2, den: 3 });
        // Non-duplicates formed: 3 updates + 5 coexists; merged: the one coexist.
        assert_eq!(r.false_merge, Ratio { num: 1, den: 8 });
        assert_eq!(r.merge_precision, Ratio { num: 2, den: 3 });
        let m = r.metrics(Source::Pairs);
        assert_eq!(m["pairs_update_recall"], 2.0 / 3.0);
        assert_eq!(m["pairs_false_invalidation_rate"], 0.2);
        assert_eq!(m["pairs_duplicate_recall"], 2.0 / 3.0);
        assert_eq!(m["pairs_false_merge_rate"], 0.125);
        assert_eq!((m["pairs_formed"], m["pairs_not_formed"]), (11.0, 1.0));
        assert!((r.objective() - 4.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn sick_and_msrp_rates_by_hand() {
        use Label::*;
        use Outcome::*;
        // SICK test input: 2 contradictions (1 replaced), 3 non-contradictions (1 replaced).
        let sick = Rates::of(vec![
            (Contradiction, Replaced),
            (Contradiction, BothKept),
            (Entailment, Replaced),
            (Entailment, Merged),
            (Neutral, BothKept),
        ]);
        let m = sick.metrics(Source::Sick);
        assert_eq!(m["sick_conflict_recall"], 0.5);
        assert_eq!(m["sick_false_conflict_rate"], 1.0 / 3.0);
        // Merges among contradictions and neutrals: none of 3.
        assert_eq!(m["sick_false_merge_rate"], 0.0);
        assert!(!m.contains_key("sick_update_recall"));
        // MSRP test input: 3 paraphrases (2 merged), 2 non-paraphrases (1 merged).
        let msrp = Rates::of(vec![
            (Paraphrase, Merged),
            (Paraphrase, Merged),
            (Paraphrase, BothKept),
            (NotParaphrase, Merged),
            (NotParaphrase, BothKept),
        ]);
        let m = msrp.metrics(Source::Msrp);
        assert_eq!(m["msrp_merge_precision"], 2.0 / 3.0);
        assert_eq!(m["msrp_merge_recall"], 2.0 / 3.0);
        assert!((m["msrp_merge_f1"] - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(m["msrp_false_merge_rate"], 0.5);
        // No must-not-replace label in MSRP: the rate is undefined and left out.
        assert_eq!(msrp.false_invalidation.value(), None);
    }

    #[test]
    fn undefined_rates_are_left_out_and_directions_follow_the_name() {
        let r = Rates::of(vec![(Label::Duplicate, Outcome::Merged)]);
        let m = r.metrics(Source::Pairs);
        assert!(!m.contains_key("pairs_update_recall") && !m.contains_key("pairs_false_merge_rate"));
        assert_eq!(m["pairs_duplicate_recall"], 1.0);
        assert_eq!(higher_is_better("pairs_update_recall"), Some(true));
        assert_eq!(higher_is_better("pairs_false_invalidation_rate"), Some(false));
        assert_eq!(higher_is_better("sick_false_conflict_rate"), Some(false));
        assert_eq!(higher_is_better("msrp_merge_f1"), Some(true));
        assert_eq!(higher_is_better("pairs_formed"), None);
    }

    fn point(value: f64, upd: (usize, usize), dup: (usize, usize), fm: (usize, usize), fi: (usize, usize)) -> CurvePoint {
        CurvePoint {
            value,
            rates: Rates {
                update_recall: Ratio { num: upd.0, den: upd.1 },
                duplicate_recall: Ratio { num: dup.0, den: dup.1 },
                false_merge: Ratio { num: fm.0, den: fm.1 },
                false_invalidation: Ratio { num: fi.0, den: fi.1 },
                ..Rates::default()
            },
        }
    }

    #[test]
    fn the_recommendation_maximises_recall_within_the_limits() {
        let limits = Limits::default();
        // 0.80 has the best objective but merges 10% of non-duplicates: out.
        // 0.85 and 0.90 tie within the limits; the default 0.95 is worse.
        let curve = vec![
            point(0.80, (9, 10), (10, 10), (10, 100), (0, 100)),
            point(0.85, (8, 10), (9, 10), (5, 100), (2, 100)),
            point(0.90, (9, 10), (8, 10), (1, 100), (1, 100)),
            point(0.95, (5, 10), (5, 10), (0, 100), (0, 100)),
        ];
        assert_eq!(recommend(&curve, 0.95, limits), Some(0.90));
        // A tie including the default goes to the default.
        let tie = vec![point(0.85, (8, 10), (9, 10), (0, 1), (0, 1)), point(0.95, (9, 10), (8, 10), (0, 1), (0, 1))];
        assert_eq!(recommend(&tie, 0.95, limits), Some(0.95));
        // Else to the value nearest the default, the lower one on an equal distance.
        let around = vec![
            point(0.80, (1, 1), (1, 1), (0, 1), (0, 1)),
            point(0.90, (1, 1), (1, 1), (0, 1), (0, 1)),
            point(0.95, (0, 1), (0, 1), (0, 1), (0, 1)),
            point(1.00, (1, 1), (1, 1), (0, 1), (0, 1)),
        ];
        assert_eq!(recommend(&around, 0.95, limits), Some(0.90));
        // False invalidation above its limit disqualifies too; none left: None.
        let none = vec![point(0.80, (1, 1), (1, 1), (0, 10), (1, 10)), point(0.9, (1, 1), (1, 1), (1, 10), (0, 10))];
        assert_eq!(recommend(&none, 0.9, limits), None);
        // Looser limits admit them.
        assert_eq!(recommend(&none, 0.9, Limits { max_false_merge: 0.1, max_false_invalidation: 0.1 }), Some(0.9));
    }
}
