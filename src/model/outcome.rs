//! The fixed vocabularies the pipeline records and the store reads back:
//! what became of a candidate ([`CandidateOutcome`]) and why a pair was
//! judged ([`PairReason`]).

use super::write::InsertOutcome;
use crate::types::string_enum;

string_enum! {
    /// Why a candidate was paired with a live fact (the three pairing conditions).
    pub enum PairReason {
        /// Same subject and predicate, different object.
        SamePredicate => "same_predicate",
        /// Same subject and object, and the candidate carries validUntil.
        EndsRelationship => "ends_relationship",
        /// Cosine in [contradiction_band_min, near_dup_threshold), same subject,
        /// different object.
        SimilarContent => "similar_content",
        /// Same subject and object, predicates of opposite preference
        /// polarity (`preference_polarity_pairing`, memform's addition).
        OppositePreference => "opposite_preference",
        /// Same subject, and the candidate shows evidence that the live
        /// fact changed (`evidence_of_change`: the same slot with another
        /// value, an explicit ending, a polarity flip).
        EvidenceOfChange => "evidence_of_change",
    }
}

string_enum! {
    /// What became of a candidate fact, as `facts.jsonl` names it.
    pub enum CandidateOutcome {
        /// Its value score fell in the ephemeral tier.
        NoiseRejected => "noise_rejected",
        ExactDuplicate => "exact_duplicate",
        NearDuplicate => "near_duplicate",
        /// It closed the fact it matches (set its validUntil).
        Closure => "closure",
        /// The judge found it wrong or adding nothing against a live fact.
        JudgedNew => "judged_new",
        /// Planned for insert; the write stage replaces it with one of the below.
        Insert => "insert",
        Created => "created",
        /// Shadow mode: it would have been created.
        ShadowCreated => "shadow_created",
        /// The write stage's race re-check found its content hash live.
        Deduped => "deduped",
        LowFactConfidence => "low_fact_confidence",
        EmptyFactContent => "empty_fact_content",
        Conflict => "conflict",
        /// `signet`: an UPDATE applied (the target now holds this content).
        Updated => "updated",
        /// `signet`: a DELETE applied (the target soft-deleted; this fact not written).
        Deleted => "deleted",
        /// `signet`: a NONE decision (a stored memory already says it).
        NoneDecided => "none",
        /// Controlled mode, every profile: a replacement blocked whole (an
        /// UPDATE or DELETE, an invalidation, closure or renewal, a merge or
        /// an evolve); neither side written.
        Blocked => "blocked",
        /// `signet`, shadow mode: an UPDATE or DELETE recorded, nothing written.
        ShadowRecorded => "shadow_recorded",
        /// `signet`: the decision was dropped by validation (or its call failed).
        DecisionDropped => "decision_dropped",
        /// `signet`: an UPDATE or DELETE whose target is pinned or no longer live.
        TargetSkipped => "target_skipped",
        /// memorix: merged into an existing memory, rewritten in place.
        Merged => "merged",
        /// memorix: stored as a rewrite that supersedes an existing memory.
        Evolved => "evolved",
        /// memorix: not stored, an existing memory already says it.
        Discarded => "discarded",
    }
}

impl CandidateOutcome {
    /// Dropped as a duplicate before writing (audited as `deduped`).
    pub fn is_duplicate(self) -> bool {
        matches!(self, CandidateOutcome::ExactDuplicate | CandidateOutcome::NearDuplicate)
    }

    /// The outcome an `Insert` proposal ends with, and whether it was stored.
    pub fn of_insert(o: InsertOutcome) -> (CandidateOutcome, bool) {
        match o {
            InsertOutcome::Created => (CandidateOutcome::Created, true),
            InsertOutcome::Recorded => (CandidateOutcome::ShadowCreated, false),
            InsertOutcome::Deduped => (CandidateOutcome::Deduped, false),
            InsertOutcome::LowFactConfidence => (CandidateOutcome::LowFactConfidence, false),
            InsertOutcome::EmptyFactContent => (CandidateOutcome::EmptyFactContent, false),
            InsertOutcome::Conflict => (CandidateOutcome::Conflict, false),
            InsertOutcome::Blocked => (CandidateOutcome::Blocked, false),
        }
    }
}
