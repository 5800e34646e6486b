//! Memorix's Resolve stage in rules mode: the existing memories a search
//! returns are scored against the new observation, and the best decides
//! `new`, `merge`, `evolve` or `discard`. Rules and figures in
//! docs/profiles.md ("memorix: Resolve").

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::extract::{Extracted, entities_match};
use super::js;
use crate::model::proposition::{Reading, change};
use crate::types::string_enum;

string_enum! {
    /// What Resolve decides for an observation.
    pub enum ResolveAction {
        /// Stored as a new memory.
        New => "new",
        /// The target is updated in place with the merged facts and narrative.
        Merge => "merge",
        /// The target is superseded by a rewrite; the old state stays as history.
        Evolve => "evolve",
        /// Not stored: the target already says it.
        Discard => "discard",
    }
}

/// Hits the search is asked for.
pub const SEARCH_LIMIT: usize = 5;
/// Characters of the narrative in the search query.
pub const QUERY_NARRATIVE_CHARS: usize = 200;
/// The combined score: search score ×, entity match +, word overlap ×.
pub const W_SEARCH: f64 = 0.6;
pub const W_ENTITY: f64 = 0.2;
pub const W_OVERLAP: f64 = 0.2;
/// New content is richer when longer than the old by this factor.
pub const RICHER: f64 = 1.15;
/// A narrative this many times longer than the other replaces it in a merge.
pub const NARRATIVE_REPLACE: f64 = 1.5;

/// The thresholds, from the config (`memorix_*`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// The best hit's own search score at or above which it is a near duplicate.
    pub duplicate: f64,
    /// The combined score at or above which the topic is the same.
    pub high: f64,
    /// The combined score at or above which (with an entity match) more facts merge.
    pub medium: f64,
    /// `evidence_of_change`: a contradiction is evidence that the hit
    /// changed ([`evidence_against`]), not any negation in the new narrative.
    pub evidence: bool,
}

/// An existing memory a search returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    pub id: String,
    pub title: String,
    pub narrative: String,
    pub facts: Vec<String>,
    pub entity_name: String,
    /// The search's score.
    pub score: f64,
}

/// Resolve's decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolution {
    pub action: ResolveAction,
    #[serde(rename = "targetId")]
    pub target_id: Option<String>,
    pub reason: String,
    /// The narrative and facts a merge or evolve writes.
    #[serde(skip)]
    pub merged: Option<(String, Vec<String>)>,
}

impl Resolution {
    fn new(reason: String) -> Resolution {
        Resolution { action: ResolveAction::New, target_id: None, reason, merged: None }
    }
}

/// The search query for an observation: its title and the start of its narrative.
pub fn query(x: &Extracted) -> String {
    format!("{} {}", x.title, js::slice(&x.narrative, QUERY_NARRATIVE_CHARS))
}

fn words(s: &str) -> std::collections::HashSet<String> {
    s.to_lowercase().split_whitespace().filter(|w| js::len(w) > 2).map(str::to_string).collect()
}

/// Shared words (longer than 2) over the larger word set, of the words
/// `own` ([`words`]) and `text`'s, those counted in place (sorted and
/// deduplicated) instead of collected as a set of copies.
fn overlap_with(own: &std::collections::HashSet<String>, text: &str) -> f64 {
    let lower = text.to_lowercase();
    let mut other: Vec<&str> = lower.split_whitespace().filter(|w| js::len(w) > 2).collect();
    other.sort_unstable();
    other.dedup();
    if own.is_empty() || other.is_empty() {
        return 0.0;
    }
    other.iter().filter(|w| own.contains(**w)).count() as f64 / own.len().max(other.len()) as f64
}

static CONTRADICTION: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    let ci = [
        r"\bnot\s+(\w+)",
        r"\bno longer\b",
        r"\binstead of\b",
        r"\breplaced\b.*\bwith\b",
        r"\bremoved\b",
        r"\bdeprecated\b",
        r"\bobsolete\b",
    ];
    let mut v: Vec<Regex> = ci.iter().map(|p| js::regex(p, true)).collect();
    v.extend(["不再", "已弃用", "替换为", "改为"].iter().map(|p| js::regex(p, false)));
    v
});

/// Whether the new narrative says something stopped holding (negation,
/// replacement, removal, deprecation).
pub fn has_contradiction(new_text: &str) -> bool {
    CONTRADICTION.iter().any(|p| p.is_match(new_text))
}

/// The longer narrative when one is 1.5 times the other, else both.
pub fn merge_narratives(old: &str, new: &str) -> String {
    let (lo, ln) = (js::len(old) as f64, js::len(new) as f64);
    if ln > lo * NARRATIVE_REPLACE {
        return new.to_string();
    }
    if lo > ln * NARRATIVE_REPLACE {
        return old.to_string();
    }
    format!("{new}\n\n[Previous context]: {old}")
}

/// The new facts then the old, without repeats (case-insensitive) or blanks.
pub fn merge_facts(old: &[String], new: &[String]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    new.iter().chain(old).filter(|f| !f.trim().is_empty() && seen.insert(f.to_lowercase().trim().to_string())).cloned().collect()
}

struct Scored<'h> {
    hit: &'h Hit,
    score: f64,
    entity_match: bool,
    richer: bool,
    contradiction: bool,
}

fn score<'h>(x: &Extracted, own_words: &std::collections::HashSet<String>, contradiction: bool, hit: &'h Hit) -> Scored<'h> {
    let entity_match = entities_match(&x.entity.name, &hit.entity_name);
    let overlap = overlap_with(own_words, &format!("{} {}", hit.title, hit.narrative));
    let score = hit.score * W_SEARCH + if entity_match { W_ENTITY } else { 0.0 } + overlap * W_OVERLAP;
    let new_len = js::len(&x.narrative) + js::len(&x.facts.join(" "));
    let old_len = js::len(&hit.narrative) + js::len(&hit.facts.join("\n"));
    let richer = new_len as f64 > old_len as f64 * RICHER;
    Scored { hit, score, entity_match, richer, contradiction }
}

/// Whether the new observation shows evidence that `hit` changed
/// (`evidence_of_change`, docs/pipeline.md "Evidence of change"): both
/// narratives read as statements about their entities (first-person words
/// as the entity), the same slot with another value, an explicit ending or
/// a polarity flip of the same proposition.
pub fn evidence_against(new: &Reading, hit: &Hit) -> bool {
    let old = crate::state::read_speaker(&hit.entity_name, &hit.narrative);
    change(&old, new).is_some()
}

/// Decides an observation's fate from the search's hits (best first or not).
pub fn rules(x: &Extracted, hits: &[Hit], t: Thresholds) -> Resolution {
    let own = if hits.is_empty() { Default::default() } else { words(&format!("{} {}", x.title, x.narrative)) };
    // What depends on the observation alone is computed once, not per hit.
    let contradiction = !hits.is_empty() && !t.evidence && has_contradiction(&x.narrative);
    // `Reading::of_speaker` with no antonyms, remembered when a memo is installed.
    let reading = (t.evidence && !hits.is_empty()).then(|| crate::state::read_speaker(&x.entity.name, &x.narrative));
    let mut scored: Vec<Scored<'_>> =
        hits.iter().map(|h| score(x, &own, contradiction || reading.as_ref().is_some_and(|r| evidence_against(r, h)), h)).collect();
    // Stable, as JavaScript's sort: ties keep the search's order.
    scored.sort_by(|a, b| b.score.partial_cmp(&a.score).unwrap_or(std::cmp::Ordering::Equal));
    let Some(best) = scored.first() else { return Resolution::new("No similar existing memories found".into()) };
    let (id, s) = (&best.hit.id, best.score);
    let decide = |action: ResolveAction, reason: String, narrative: Option<String>| Resolution {
        action,
        target_id: Some(id.clone()),
        reason,
        merged: narrative.map(|n| (n, merge_facts(&best.hit.facts, &x.facts))),
    };
    if best.hit.score >= t.duplicate {
        if best.richer {
            let reason = format!("Near-duplicate of #{id} but richer content (score: {s:.2})");
            return decide(ResolveAction::Evolve, reason, Some(merge_narratives(&best.hit.narrative, &x.narrative)));
        }
        return decide(ResolveAction::Discard, format!("Duplicate of #{id} (score: {s:.2})"), None);
    }
    if s >= t.high {
        if best.contradiction {
            let reason = format!("Supersedes #{id}: contradiction detected (score: {s:.2})");
            return decide(ResolveAction::Evolve, reason, Some(x.narrative.clone()));
        }
        if best.richer {
            let reason = format!("Merging with #{id}: same topic, new content is richer (score: {s:.2})");
            return decide(ResolveAction::Merge, reason, Some(merge_narratives(&best.hit.narrative, &x.narrative)));
        }
        return decide(ResolveAction::Discard, format!("Already covered by #{id} (score: {s:.2})"), None);
    }
    if s >= t.medium && best.entity_match && x.facts.len() > best.hit.facts.len() {
        let (n, o) = (x.facts.len(), best.hit.facts.len());
        let reason = format!("Same entity \"{}\", new memory has more facts ({n} > {o})", x.entity.name);
        return decide(ResolveAction::Merge, reason, Some(merge_narratives(&best.hit.narrative, &x.narrative)));
    }
    Resolution::new(format!("Different from existing memories (best score: {s:.2})"))
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
