//! Two deterministic checks `validate_proposal` runs (docs/dreaming.md,
//! section 4.3): the **entity-label gate** (Signet's `classifyEntityQuality`)
//! and the **prospective contradiction detector** (Signet's
//! `detectProspectiveContradictionRisk`). Both are pure: no store, no model.

use serde::{Deserialize, Serialize};

use crate::types::string_enum;

string_enum! {
    /// Why the label gate rejects an entity name.
    pub enum LabelReason {
        TooShort => "too_short",
        PunctuationOnly => "punctuation_only",
        NumericOnly => "numeric_only",
        GenericName => "generic_or_scaffolding_name",
        MetadataRole => "metadata_role",
        DiscourseFragment => "discourse_fragment",
        RolePrefixed => "role_prefixed_scaffolding",
        NonConcreteType => "non_concrete_entity_type",
        UnknownType => "unknown_entity_type",
        EventWithoutSignal => "event_without_time_or_event_signal",
    }
}

/// Types the gate counts as concrete (a short name is allowed with one).
pub const CONCRETE_TYPES: &[&str] =
    &["person", "organization", "project", "product", "system", "tool", "artifact", "document", "source", "place", "event"];

/// Known abstract or operational types: a name typed so is rejected.
pub const ABSTRACT_TYPES: &[&str] = &[
    "concept",
    "task",
    "skill",
    "agent",
    "policy",
    "action",
    "workflow",
    "object_type",
    "interface",
    "observation",
    "claim_slot",
    "claim_value",
    "chunk_group",
];

/// Canonical names that are words or scaffolding, not entities.
pub const GENERIC_NAMES: &[&str] = &[
    "a",
    "an",
    "and",
    "are",
    "author",
    "because",
    "being",
    "but",
    "can",
    "current",
    "current work",
    "did",
    "do",
    "does",
    "for",
    "from",
    "had",
    "has",
    "have",
    "he",
    "her",
    "him",
    "his",
    "i",
    "in",
    "intent",
    "is",
    "it",
    "its",
    "let",
    "of",
    "on",
    "or",
    "pending tasks",
    "primary request",
    "read",
    "recipient",
    "result",
    "sender",
    "she",
    "someone",
    "status",
    "summary",
    "that",
    "the",
    "their",
    "them",
    "they",
    "this",
    "to",
    "understand",
    "update",
    "want",
    "was",
    "we",
    "we're",
    "were",
    "with",
    "write",
    "you",
    "your",
];

/// Labels of transcript metadata (a speaker role, a section).
pub const METADATA_LABELS: &[&str] =
    &["assistant", "author", "current work", "intent", "pending tasks", "primary request", "recipient", "sender", "system", "user"];

/// Discourse words a fragment of prose leaves behind.
pub const DISCOURSE_WORDS: &[&str] = &["because", "despite", "however", "let", "once", "read", "summary", "understand", "want", "write"];

/// Role words that, followed by `:`, a space or `-`, start transcript scaffolding.
const ROLE_PREFIXES: &[&str] = &["user", "assistant", "system", "sender", "recipient", "author"];

/// Words that make a name an event.
const EVENT_WORDS: &[&str] = &[
    "announce",
    "announced",
    "announcement",
    "created",
    "decided",
    "deployed",
    "digest",
    "installed",
    "launched",
    "meeting",
    "merged",
    "published",
    "released",
    "started",
    "stopped",
    "updated",
];

/// Month names and day words that date a name.
const DATE_WORDS: &[&str] = &[
    "jan",
    "january",
    "feb",
    "february",
    "mar",
    "march",
    "apr",
    "april",
    "may",
    "jun",
    "june",
    "jul",
    "july",
    "aug",
    "august",
    "sep",
    "sept",
    "september",
    "oct",
    "october",
    "nov",
    "november",
    "dec",
    "december",
    "today",
    "yesterday",
];

/// The words that may follow `last` to date a name.
const LAST_WORDS: &[&str] = &["night", "week", "month", "year", "daily"];

/// An entity name as the gate compares it: trimmed, curly quotes
/// straightened, every leading and trailing character that is not a letter
/// or digit removed (`**Status:**` → `status`), lower-cased, whitespace
/// collapsed.
pub fn normalize_entity_name(name: &str) -> String {
    let straight = name.trim().replace(['\u{201c}', '\u{201d}'], "\"").replace(['\u{2018}', '\u{2019}'], "'");
    let core = straight.trim_matches(|c: char| !c.is_alphanumeric());
    core.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An entity type as the gate compares it: trimmed, lower-cased, spaces and
/// dashes as underscores; blank is no type.
pub fn normalize_entity_type(value: Option<&str>) -> Option<String> {
    value.map(str::trim).filter(|v| !v.is_empty()).map(|v| v.to_lowercase().replace([' ', '-'], "_"))
}

/// Whether `ty` (normalised) is one of [`CONCRETE_TYPES`].
pub fn is_concrete_type(ty: &str) -> bool {
    CONCRETE_TYPES.contains(&ty)
}

/// The label gate: `Ok` when `name` (with its optional `entity_type`) may
/// name an entity, else the first rule that rejects it (docs/dreaming.md,
/// "The label gate"). Signet's apply path calls it with the name only;
/// `validate_proposal` also passes the type.
pub fn classify_entity_quality(name: &str, entity_type: Option<&str>) -> Result<(), LabelReason> {
    let canonical = normalize_entity_name(name);
    let ty = normalize_entity_type(entity_type);
    let concrete = ty.as_deref().is_some_and(is_concrete_type);
    if canonical.is_empty() {
        return Err(if name.trim().is_empty() { LabelReason::TooShort } else { LabelReason::PunctuationOnly });
    }
    if canonical.chars().all(|c| c.is_ascii_digit()) {
        return Err(LabelReason::NumericOnly);
    }
    if GENERIC_NAMES.contains(&canonical.as_str()) {
        return Err(LabelReason::GenericName);
    }
    // An unnamed user is allowed as a person (Signet's test "allows an
    // unnamed user only as a person").
    let user_person = canonical == "user" && ty.as_deref() == Some("person");
    if METADATA_LABELS.contains(&canonical.as_str()) && !user_person {
        return Err(LabelReason::MetadataRole);
    }
    if DISCOURSE_WORDS.contains(&canonical.as_str()) {
        return Err(LabelReason::DiscourseFragment);
    }
    let trimmed = name.trim();
    for prefix in ROLE_PREFIXES {
        let rest = trimmed.get(prefix.len()..);
        let head = trimmed.get(..prefix.len());
        if head.is_some_and(|h| h.eq_ignore_ascii_case(prefix)) && rest.is_some_and(|r| r.starts_with([':', ' ', '-'])) {
            return Err(LabelReason::RolePrefixed);
        }
    }
    if canonical.chars().count() < 4 && !concrete {
        return Err(LabelReason::TooShort);
    }
    if let Some(ty) = ty.as_deref() {
        if ty != "extracted" && ty != "unknown" && !is_concrete_type(ty) {
            return Err(if ABSTRACT_TYPES.contains(&ty) { LabelReason::NonConcreteType } else { LabelReason::UnknownType });
        }
        if ty == "event" && !has_date_or_time(&canonical) && !EVENT_WORDS.iter().any(|w| has_word(&canonical, w)) {
            return Err(LabelReason::EventWithoutSignal);
        }
    }
    Ok(())
}

/// A character of a JavaScript `\w`: ASCII letter, digit or `_`.
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `word` occurs in `value` as a whole word (`\bword\b`, ASCII word characters).
fn has_word(value: &str, word: &str) -> bool {
    let bytes = value.as_bytes();
    value.match_indices(word).any(|(start, _)| {
        let end = start + word.len();
        let before = start > 0 && is_word_byte(bytes[start - 1]);
        let after = end < bytes.len() && is_word_byte(bytes[end]);
        !before && !after
    })
}

/// A date or time: a month name, today, yesterday, `last` and a unit, an ISO
/// date `YYYY-MM-DD`, or a time `H:MM` / `HH:MM`, each a whole word.
fn has_date_or_time(value: &str) -> bool {
    if DATE_WORDS.iter().any(|w| has_word(value, w)) {
        return true;
    }
    let words: Vec<&str> = value.split_whitespace().collect();
    if words.windows(2).any(|w| w[0].ends_with("last") && has_word(w[0], "last") && LAST_WORDS.iter().any(|u| starts_word(w[1], u))) {
        return true;
    }
    let bytes = value.as_bytes();
    let digit = |i: usize| i < bytes.len() && bytes[i].is_ascii_digit();
    (0..bytes.len()).any(|start| {
        if start > 0 && is_word_byte(bytes[start - 1]) {
            return false;
        }
        let iso = start + 10 <= bytes.len()
            && (0..4).all(|k| digit(start + k))
            && bytes[start + 4] == b'-'
            && digit(start + 5)
            && digit(start + 6)
            && bytes[start + 7] == b'-'
            && digit(start + 8)
            && digit(start + 9);
        let short_time = start + 4 <= bytes.len() && digit(start) && bytes[start + 1] == b':' && digit(start + 2) && digit(start + 3);
        let long_time = start + 5 <= bytes.len()
            && digit(start)
            && digit(start + 1)
            && bytes[start + 2] == b':'
            && digit(start + 3)
            && digit(start + 4);
        let end = if iso {
            start + 10
        } else if short_time {
            start + 4
        } else if long_time {
            start + 5
        } else {
            return false;
        };
        end == bytes.len() || !is_word_byte(bytes[end])
    })
}

/// `token` starts with the whole word `word` (`week` in `week.` or `week`, not `weekend`).
fn starts_word(token: &str, word: &str) -> bool {
    token.strip_prefix(word).is_some_and(|rest| rest.bytes().next().is_none_or(|b| !is_word_byte(b)))
}

string_enum! {
    /// Why the detector sees a contradiction risk.
    pub enum ContradictionReason {
        NegationMismatch => "negation_mismatch",
        AntonymConflict => "antonym_conflict",
    }
}

/// The detector's answer for one (candidate, existing) pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContradictionRisk {
    pub detected: bool,
    pub lexical_overlap: usize,
    pub reason: Option<ContradictionReason>,
}

/// Negation tokens (after [`contradiction_tokens`]: apostrophes are gone).
const NEGATIONS: &[&str] = &["not", "no", "never", "cannot", "cant", "doesnt", "dont", "isnt", "wasnt", "wont", "without"];

/// The toggle pairs the prospective detector knows.
const PROSPECTIVE_ANTONYMS: &[(&str, &str)] =
    &[("enabled", "disabled"), ("allow", "deny"), ("accept", "reject"), ("always", "never"), ("on", "off"), ("true", "false")];

/// Shared tokens needed before the detector judges a pair.
pub const MIN_LEXICAL_OVERLAP: usize = 2;

/// The detector's tokens: lower-cased, every character other than an ASCII
/// letter, digit or whitespace a space, split on whitespace, tokens of at
/// least 2 characters.
pub fn contradiction_tokens(text: &str) -> Vec<String> {
    let cleaned: String = text
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_lowercase() || c.is_ascii_digit() || c.is_whitespace() { c } else { ' ' })
        .collect();
    cleaned.split_whitespace().filter(|t| t.chars().count() >= 2).map(str::to_string).collect()
}

/// Signet's conservative lexical check of a proposed claim value against an
/// existing one: with at least [`MIN_LEXICAL_OVERLAP`] shared tokens
/// (counted over the candidate's tokens, repeats included), a negation on
/// one side only, else a toggle pair split across the two.
pub fn prospective_contradiction(candidate: &str, existing: &str) -> ContradictionRisk {
    let left = contradiction_tokens(candidate);
    let right = contradiction_tokens(existing);
    let right_set: std::collections::HashSet<&str> = right.iter().map(String::as_str).collect();
    let overlap = left.iter().filter(|t| right_set.contains(t.as_str())).count();
    let none = ContradictionRisk { detected: false, lexical_overlap: overlap, reason: None };
    if left.is_empty() || right.is_empty() || overlap < MIN_LEXICAL_OVERLAP {
        return none;
    }
    let negated = |tokens: &[String]| tokens.iter().any(|t| NEGATIONS.contains(&t.as_str()));
    if negated(&left) != negated(&right) {
        return ContradictionRisk { reason: Some(ContradictionReason::NegationMismatch), detected: true, ..none };
    }
    let left_set: std::collections::HashSet<&str> = left.iter().map(String::as_str).collect();
    let split = PROSPECTIVE_ANTONYMS.iter().any(|(a, b)| {
        let (la, lb, ra, rb) = (left_set.contains(a), left_set.contains(b), right_set.contains(a), right_set.contains(b));
        la != lb && ra != rb && ((la && rb) || (lb && ra))
    });
    if split {
        return ContradictionRisk { reason: Some(ContradictionReason::AntonymConflict), detected: true, ..none };
    }
    none
}

#[cfg(test)]
mod tests {
    use super::*;

    // Signet's `platform/daemon/src/entity-quality.test.ts`, case by case.

    #[test]
    fn rejects_standalone_structural_labels_after_markdown_normalization() {
        for name in ["Current", "**Status:**", "Status:**", "## Summary", "Result", "Update", "!!!"] {
            assert!(classify_entity_quality(name, None).is_err(), "{name:?} should be rejected");
        }
        assert_eq!(classify_entity_quality("!!!", None), Err(LabelReason::PunctuationOnly));
        assert_eq!(classify_entity_quality("**Status:**", None), Err(LabelReason::GenericName));
    }

    #[test]
    fn preserves_specific_entity_names_containing_structural_words() {
        for name in ["Status Page", "Current Project", "Summary Report"] {
            assert_eq!(classify_entity_quality(name, None), Ok(()), "{name:?}");
        }
    }

    #[test]
    fn allows_an_unnamed_user_only_as_a_person() {
        assert_eq!(classify_entity_quality("User", Some("person")), Ok(()));
        assert_eq!(classify_entity_quality("User", None), Err(LabelReason::MetadataRole));
        assert_eq!(classify_entity_quality("Assistant", Some("person")), Err(LabelReason::MetadataRole));
        assert_eq!(classify_entity_quality("User: hello", Some("person")), Err(LabelReason::RolePrefixed));
    }

    #[test]
    fn allows_short_concrete_tools_and_systems_when_the_type_is_concrete() {
        for (name, ty) in
            [("Bun", "tool"), ("npm", "tool"), ("Git", "tool"), ("AWS", "system"), ("Go", "tool"), ("CI", "system"), ("AI", "product")]
        {
            assert_eq!(classify_entity_quality(name, Some(ty)), Ok(()), "{name:?} as {ty}");
        }
    }

    #[test]
    fn still_rejects_short_untyped_fragments_and_generic_scaffolding() {
        assert_eq!(classify_entity_quality("50", None), Err(LabelReason::NumericOnly));
        assert_eq!(classify_entity_quality("cli", None), Err(LabelReason::TooShort));
        assert_eq!(classify_entity_quality("You", Some("person")), Err(LabelReason::GenericName));
        assert_eq!(classify_entity_quality("Sender", Some("person")), Err(LabelReason::GenericName));
    }

    #[test]
    fn keeps_event_time_and_word_signals_behaviorally_narrow() {
        for (name, expected) in [
            ("Maybelline", false),
            ("last banana", false),
            ("Alpha 202X", false),
            ("17:00", true),
            ("1:00", true),
            ("123:45", false),
            ("2026-07-10", true),
            ("last week", true),
        ] {
            assert_eq!(classify_entity_quality(name, Some("event")).is_ok(), expected, "{name:?}");
        }
    }

    // The Rust port's tests that add cases beyond the TypeScript ones
    // (`platform/daemon-rs/crates/signet-core/src/entity_quality.rs`).

    #[test]
    fn role_prefixes_abstract_types_and_concrete_names() {
        for name in ["User: input", "sender-noreply", "Assistant response"] {
            assert_eq!(classify_entity_quality(name, None), Err(LabelReason::RolePrefixed), "{name:?}");
        }
        for name in ["current work", "pending tasks", "primary request"] {
            assert!(classify_entity_quality(name, None).is_err(), "{name:?}");
        }
        assert_eq!(classify_entity_quality("dark mode", Some("concept")), Err(LabelReason::NonConcreteType));
        assert_eq!(classify_entity_quality("deploy", Some("task")), Err(LabelReason::NonConcreteType));
        assert_eq!(classify_entity_quality("Mystery Box", Some("gadget")), Err(LabelReason::UnknownType));
        for (name, ty) in [("Signet Daemon", "system"), ("Nicholai", "person"), ("PostgreSQL", "tool")] {
            assert_eq!(classify_entity_quality(name, Some(ty)), Ok(()), "{name:?}");
        }
        // `unknown` and `extracted` are not judged.
        assert_eq!(classify_entity_quality("Salsa Workshop", Some("unknown")), Ok(()));
    }

    #[test]
    fn normalizes_names_and_types() {
        assert_eq!(normalize_entity_name("\u{201c}Hello\u{201d}"), "hello");
        assert_eq!(normalize_entity_name("  Foo   Bar  "), "foo bar");
        assert_eq!(normalize_entity_type(Some(" Object Type ")), Some("object_type".to_string()));
        assert_eq!(normalize_entity_type(Some("  ")), None);
    }

    #[test]
    fn an_event_needs_a_whole_word_signal() {
        assert_eq!(classify_entity_quality("Team meeting", Some("event")), Ok(()));
        assert_eq!(classify_entity_quality("Meetings Hub", Some("event")), Err(LabelReason::EventWithoutSignal));
        assert_eq!(classify_entity_quality("Trip in May", Some("event")), Ok(()));
        assert_eq!(classify_entity_quality("the lasting week", Some("event")), Err(LabelReason::EventWithoutSignal));
    }

    // Signet's detector (`antonyms.ts`), as `validate_proposal` uses it in
    // the test "validate_proposal runs the label gate, duplicate check, and
    // contradiction guard" of `dreaming-agent-tools.test.ts`.

    #[test]
    fn validate_proposal_contradiction_guard_case() {
        let risk = prospective_contradiction("Feature is disabled by default.", "Feature is enabled by default.");
        assert!(risk.detected);
        assert_eq!(risk.reason, Some(ContradictionReason::AntonymConflict));
        assert_eq!(risk.lexical_overlap, 4);
    }

    #[test]
    fn negation_on_one_side_is_a_risk() {
        let risk = prospective_contradiction("The deployment does not use the edge runtime", "The deployment uses the edge runtime");
        assert_eq!(risk.reason, Some(ContradictionReason::NegationMismatch));
    }

    #[test]
    fn too_little_overlap_or_agreement_is_no_risk() {
        // One shared token is below the overlap floor.
        assert_eq!(prospective_contradiction("Lights off", "Lights are on tonight").lexical_overlap, 1);
        assert!(!prospective_contradiction("Lights off", "Lights are on tonight").detected);
        // Both sides negated and no split toggle: no risk.
        assert!(!prospective_contradiction("The cat is not here today", "The cat is not there today").detected);
        // A toggle on both sides (not exclusive) is no conflict.
        assert!(!prospective_contradiction("switch on and off daily", "switch on and off weekly").detected);
        assert!(!prospective_contradiction("", "anything at all").detected);
    }
}
