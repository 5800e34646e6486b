//! What one episode's run through the stages leaves behind: a
//! [`CandidateRecord`] per candidate fact (a row of `facts.jsonl`) and an
//! [`EpisodeRecord`] per episode (a row of `episodes.jsonl`).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::judge::FinalVerdict;
use super::resolve::EntityDecision;
use super::write::{AuditAction, Outcome, WriteResult};
pub use crate::model::outcome::CandidateOutcome;
use crate::types::{FactKind, FactType, LlmUsage, ValueTier, Verdict, Warning};

/// Milliseconds spent per stage (not deterministic; kept out of comparisons).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    pub extract_ms: f64,
    pub embed_ms: f64,
    pub resolve_ms: f64,
    pub dedupe_ms: f64,
    pub judge_ms: f64,
    pub write_ms: f64,
}

impl Timings {
    pub fn add(&mut self, o: &Timings) {
        self.extract_ms += o.extract_ms;
        self.embed_ms += o.embed_ms;
        self.resolve_ms += o.resolve_ms;
        self.dedupe_ms += o.dedupe_ms;
        self.judge_ms += o.judge_ms;
        self.write_ms += o.write_ms;
    }
}

/// Everything that happened to one candidate fact (a row of `facts.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateRecord {
    pub id: String,
    pub conversation: String,
    pub episode: String,
    pub turn: String,
    pub subject: String,
    pub predicate: String,
    pub object: String,
    pub kind: FactKind,
    pub fact_type: FactType,
    pub content: String,
    pub confidence: f64,
    pub value_score: f64,
    pub tier: ValueTier,
    pub content_hash: String,
    pub outcome: CandidateOutcome,
    pub reason: String,
    /// The fact or candidate this one duplicates or closes.
    pub related: Option<String>,
    pub subject_entity: Option<String>,
    pub object_entity: Option<String>,
    /// Its judged pairs, in pair order: every pair but the plain `neither`
    /// ones (judged and final verdict `neither`, no guard, no review), and
    /// of those the [`LISTED_NEITHER`] nearest by cosine.
    pub verdicts: Vec<FinalVerdict>,
    /// Plain `neither` pairs judged but not listed in `verdicts` (written
    /// only when not 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub neither_unlisted: usize,
    /// Those pairs themselves, in pair order: kept in memory for the run's
    /// metrics (every judged pair counts). Written only as a count per
    /// pairing reason (`neither_unlisted_by_reason`, when not empty), so
    /// that `memform report` redraws the verdict table the run drew; read
    /// back as pairs with that reason and no live fact or cosine.
    #[serde(
        rename = "neither_unlisted_by_reason",
        default,
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "unlisted_by_reason",
        deserialize_with = "unlisted_from_reasons"
    )]
    pub unlisted: Vec<FinalVerdict>,
    /// Facts this candidate invalidated or closed (applied, cascades included).
    pub ended: Vec<String>,
    pub stored: bool,
    /// The `signet` profile's decision for this fact (absent for `soda`;
    /// boxed, so that a record without one stays small).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Box<DecisionRecord>>,
    /// The memorix profile's `FormedMemory` record of this observation
    /// (absent for other profiles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formed: Option<Box<super::memorix::FormedMemory>>,
}

/// A `signet` decision as `facts.jsonl` records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecord {
    /// add, update, delete or none; absent when the decision was dropped.
    pub action: Option<String>,
    pub target: Option<String>,
    pub confidence: Option<f64>,
    pub reason: String,
    /// The contradiction detector's flag on an UPDATE or DELETE.
    pub review_needed: bool,
    /// The retrieved candidates: id and merged search score, best first.
    pub candidates: Vec<(String, f64)>,
    /// Entities the linker found named in the content.
    pub mentions: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn unlisted_by_reason<S: serde::Serializer>(unlisted: &[FinalVerdict], s: S) -> std::result::Result<S::Ok, S::Error> {
    let mut counts: std::collections::BTreeMap<&'static str, usize> = std::collections::BTreeMap::new();
    for v in unlisted {
        *counts.entry(v.reason.as_str()).or_default() += 1;
    }
    counts.serialize(s)
}

fn unlisted_from_reasons<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Vec<FinalVerdict>, D::Error> {
    let counts: std::collections::BTreeMap<String, usize> = Deserialize::deserialize(d)?;
    let mut out = Vec::new();
    for (reason, n) in counts {
        let Some(reason) = crate::model::outcome::PairReason::parse(&reason) else {
            return Err(serde::de::Error::custom(format!("unknown pairing reason `{reason}`")));
        };
        if n > 100_000 {
            return Err(serde::de::Error::custom(format!("{n} unlisted pairs for `{reason}` (at most 100000)")));
        }
        out.extend((0..n).map(|_| FinalVerdict {
            live_id: String::new(),
            reason,
            verdict: Verdict::Neither,
            judged: Verdict::Neither,
            review_needed: false,
            guard: None,
            cosine: f64::NAN,
        }));
    }
    Ok(out)
}

/// Plain `neither` pairs listed per candidate in `facts.jsonl`; the rest are
/// counted (`neither_unlisted`).
pub const LISTED_NEITHER: usize = 3;

impl CandidateRecord {
    /// Every judged pair: the listed ones, then the unlisted.
    pub fn all_verdicts(&self) -> impl Iterator<Item = &FinalVerdict> {
        self.verdicts.iter().chain(&self.unlisted)
    }

    /// Number of judged pairs, listed or not.
    pub fn pairs_judged(&self) -> usize {
        self.verdicts.len() + self.neither_unlisted
    }

    /// Moves the plain `neither` pairs beyond the [`LISTED_NEITHER`] nearest
    /// (highest cosine, ties to the earlier pair) out of `verdicts` into
    /// `unlisted`, and counts them. The listed pairs keep their order.
    pub fn list_verdicts(&mut self) {
        let plain =
            |v: &FinalVerdict| v.verdict == Verdict::Neither && v.judged == Verdict::Neither && v.guard.is_none() && !v.review_needed;
        let mut nearest: Vec<usize> = (0..self.verdicts.len()).filter(|&i| plain(&self.verdicts[i])).collect();
        if nearest.len() <= LISTED_NEITHER {
            return;
        }
        let key = |c: f64| if c.is_nan() { f64::NEG_INFINITY } else { c };
        nearest.sort_by(|&a, &b| key(self.verdicts[b].cosine).total_cmp(&key(self.verdicts[a].cosine)).then(a.cmp(&b)));
        let dropped: std::collections::BTreeSet<usize> = nearest[LISTED_NEITHER..].iter().copied().collect();
        let (mut listed, mut unlisted) = (Vec::new(), Vec::new());
        for (i, v) in std::mem::take(&mut self.verdicts).into_iter().enumerate() {
            if dropped.contains(&i) { unlisted.push(v) } else { listed.push(v) }
        }
        self.verdicts = listed;
        self.neither_unlisted += unlisted.len();
        self.unlisted.extend(unlisted);
    }
}

/// One episode's record (a row of `episodes.jsonl`) with its candidates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeRecord {
    pub conversation: String,
    pub episode: String,
    pub timestamp: Option<String>,
    pub turns: usize,
    pub candidates: usize,
    pub stored: usize,
    pub entity_decisions: Vec<EntityDecision>,
    pub warnings: Vec<Warning>,
    pub usage: LlmUsage,
    pub invalidations: usize,
    pub closures: usize,
    pub review_needed: usize,
    pub blocked: usize,
    #[serde(skip)]
    pub facts: Vec<CandidateRecord>,
    pub timings: Timings,
}

impl EpisodeRecord {
    /// The record of an episode that was not processed because the pipeline
    /// is disabled (`enabled = false`): its evidence is stored, nothing is
    /// extracted or written, and a `pipeline_disabled` warning says so.
    pub fn disabled(conversation: &str, episode: &crate::types::Episode) -> EpisodeRecord {
        EpisodeRecord {
            conversation: conversation.to_string(),
            episode: episode.id.clone(),
            timestamp: episode.timestamp.clone(),
            turns: episode.turns.len(),
            candidates: 0,
            stored: 0,
            entity_decisions: Vec::new(),
            warnings: vec![Warning::new(
                "pipeline_disabled",
                "enabled = false: the episode's evidence was stored and nothing was processed",
            )],
            usage: LlmUsage::default(),
            invalidations: 0,
            closures: 0,
            review_needed: 0,
            blocked: 0,
            facts: Vec::new(),
            timings: Timings::default(),
        }
    }
}

/// Write-stage counts of one episode.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WriteCounts {
    pub invalidations: usize,
    pub closures: usize,
    pub blocked: usize,
}

/// Folds what the write stage did into the candidates' records: the final
/// outcome of each insert (and of each closure the write mode blocked), and
/// the facts each candidate ended. `blocked` counts the candidates whose
/// outcome is `blocked`. Then, the
/// store having every judged pair as a `verdicts` row, lists each record's
/// verdicts for `facts.jsonl` ([`CandidateRecord::list_verdicts`]).
pub fn settle(records: &mut [CandidateRecord], result: &WriteResult) -> WriteCounts {
    let mut counts = WriteCounts::default();
    let index: HashMap<String, usize> = records.iter().enumerate().map(|(i, r)| (r.id.clone(), i)).collect();
    for a in &result.audit {
        match a.outcome {
            Outcome::Invalidated => counts.invalidations += 1,
            Outcome::Closed => counts.closures += 1,
            _ => {}
        }
        if matches!(a.outcome, Outcome::Invalidated | Outcome::Closed)
            && let (Some(&i), Some(t)) = (index.get(&a.candidate_id), &a.target_fact_id)
        {
            records[i].ended.push(t.clone());
        }
        // A closure the write mode blocked: the candidate's replacement is blocked whole.
        if (a.action, a.outcome) == (AuditAction::Close, Outcome::Blocked)
            && let Some(&i) = index.get(&a.candidate_id)
        {
            records[i].outcome = CandidateOutcome::Blocked;
            records[i].reason = format!("controlled mode: closure of {} blocked", a.target_fact_id.as_deref().unwrap_or("?"));
        }
    }
    for (cand, outcome, audit) in &result.inserts {
        let Some(&i) = index.get(cand) else { continue };
        let rec = &mut records[i];
        let a = &result.audit[*audit];
        (rec.outcome, rec.stored) = CandidateOutcome::of_insert(*outcome);
        rec.reason = a.reason.clone();
        if a.target_fact_id.is_some() {
            rec.related = a.target_fact_id.clone();
        }
    }
    for rec in records.iter_mut() {
        rec.list_verdicts();
    }
    counts.blocked = records.iter().filter(|r| r.outcome == CandidateOutcome::Blocked).count();
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::judge::PairReason;
    use crate::types::FactKind;

    fn verdict(live: &str, cosine: f64, verdict: Verdict, guard: Option<&str>) -> FinalVerdict {
        FinalVerdict {
            live_id: live.into(),
            reason: PairReason::SamePredicate,
            verdict,
            judged: if guard.is_some() { Verdict::Old } else { verdict },
            review_needed: false,
            guard: guard.map(str::to_string),
            cosine,
        }
    }

    fn record(verdicts: Vec<FinalVerdict>) -> CandidateRecord {
        CandidateRecord {
            formed: None,
            id: "c/e2/c0".into(),
            conversation: "c".into(),
            episode: "e2".into(),
            turn: "t2".into(),
            subject: "Alice".into(),
            predicate: "prefers".into(),
            object: "tea".into(),
            kind: FactKind::Literal,
            fact_type: FactType::Preference,
            content: "Alice prefers tea".into(),
            confidence: 0.9,
            value_score: 0.6,
            tier: ValueTier::Contextual,
            content_hash: "h".into(),
            outcome: CandidateOutcome::Created,
            reason: String::new(),
            related: None,
            subject_entity: None,
            object_entity: None,
            verdicts,
            neither_unlisted: 0,
            unlisted: Vec::new(),
            ended: Vec::new(),
            stored: true,
            decision: None,
        }
    }

    #[test]
    fn facts_jsonl_lists_the_nearest_plain_neither_pairs_and_counts_the_rest() {
        use Verdict::{Neither, Old};
        let all = vec![
            verdict("f0", 0.30, Neither, None),
            verdict("f1", 0.90, Old, None),
            verdict("f2", 0.85, Neither, None),
            verdict("f3", 0.10, Neither, Some("below_min_trusted_confidence")),
            verdict("f4", 0.85, Neither, None),
            verdict("f5", 0.20, Neither, None),
            verdict("f6", 0.95, Neither, None),
            verdict("f7", 0.85, Neither, None),
        ];
        let mut r = record(all.clone());
        r.list_verdicts();
        let listed: Vec<&str> = r.verdicts.iter().map(|v| v.live_id.as_str()).collect();
        // Non-neither and guarded pairs in full; of the six plain ones the
        // three nearest (0.95, then the earlier two of the three 0.85s), in pair order.
        assert_eq!(listed, ["f1", "f2", "f3", "f4", "f6"]);
        assert_eq!(r.neither_unlisted, 3);
        let unlisted: Vec<&str> = r.unlisted.iter().map(|v| v.live_id.as_str()).collect();
        assert_eq!(unlisted, ["f0", "f5", "f7"]);
        assert_eq!(r.pairs_judged(), all.len());
        assert_eq!(r.all_verdicts().count(), all.len());
        let row: serde_json::Value = serde_json::to_value(&r).unwrap();
        assert_eq!(row["neither_unlisted"], 3);
        assert_eq!(row["verdicts"].as_array().unwrap().len(), 5);
        assert!(row.get("unlisted").is_none() && row["verdicts"][0].get("cosine").is_none());
        // Listing again changes nothing.
        let before = r.clone();
        r.list_verdicts();
        assert_eq!(r, before);
    }

    #[test]
    fn a_record_with_few_neither_pairs_is_written_as_before() {
        let few = vec![
            verdict("f0", 0.3, Verdict::Neither, None),
            verdict("f1", 0.2, Verdict::Neither, None),
            verdict("f2", 0.1, Verdict::Neither, None),
        ];
        let mut r = record(few.clone());
        r.list_verdicts();
        assert_eq!((r.verdicts.clone(), r.neither_unlisted), (few, 0));
        let text = serde_json::to_string(&r).unwrap();
        assert!(!text.contains("neither_unlisted") && !text.contains("unlisted"), "{text}");
        let back: CandidateRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back.neither_unlisted, 0);
    }
}
