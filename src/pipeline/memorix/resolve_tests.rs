//! Memorix's own Resolve test cases (its `tests/memory/formation/resolve.test.ts`),
//! carried over as expectations of the profile.

use super::*;
use crate::pipeline::memorix::extract::{EntityMatch, ResolvedEntity};

const T: Thresholds = Thresholds { duplicate: 0.9, high: 0.75, medium: 0.5, evidence: false };

fn x(entity: &str, narrative: &str, facts: &[&str]) -> Extracted {
    Extracted {
        title: "Test observation".into(),
        title_improved: false,
        narrative: narrative.into(),
        facts: facts.iter().map(|s| s.to_string()).collect(),
        extracted_facts: vec![],
        entity: ResolvedEntity { name: entity.into(), resolved: false, existed: false, matched: EntityMatch::None },
        obs_type: "discovery".into(),
        type_corrected: false,
    }
}

fn base() -> Extracted {
    x("auth-module", "This is a test narrative about authentication.", &["Uses JWT tokens", "Port: 3000"])
}

fn hit(score: f64, narrative: &str, entity: &str, facts: &[&str]) -> Hit {
    Hit {
        id: "100".into(),
        title: "Existing observation".into(),
        narrative: narrative.into(),
        facts: facts.iter().map(|s| s.to_string()).collect(),
        entity_name: entity.into(),
        score,
    }
}

#[test]
fn no_hits_is_new() {
    assert_eq!(rules(&base(), &[], T).action, ResolveAction::New);
}

#[test]
fn a_near_duplicate_is_discarded_unless_richer_then_evolved() {
    let long = "A much longer existing narrative about auth mechanisms and JWT.";
    let r =
        rules(&x("auth-module", "Short", &["Uses JWT tokens", "Port: 3000"]), &[hit(0.95, long, "auth-module", &["Uses JWT tokens"])], T);
    assert_eq!((r.action, r.target_id.as_deref()), (ResolveAction::Discard, Some("100")));
    let rich = x(
        "auth-module",
        "A very detailed narrative about authentication that is significantly longer than the existing one and covers new ground about OAuth2 and SAML integration patterns.",
        &["Uses JWT", "Supports OAuth2", "SAML integration"],
    );
    let r = rules(&rich, &[hit(0.93, "Short existing.", "auth-module", &["Uses JWT"])], T);
    assert_eq!(r.action, ResolveAction::Evolve);
    assert!(r.merged.is_some());
}

#[test]
fn high_similarity_merges_when_richer_and_discards_when_not() {
    let rich = x(
        "auth-module",
        "A comprehensive guide to JWT authentication covering refresh tokens, expiry handling, and error recovery patterns in production.",
        &["Refresh token TTL: 7d", "Access token TTL: 15m", "Uses RS256"],
    );
    let r = rules(&rich, &[hit(0.80, "Basic JWT auth.", "auth-module", &["Uses JWT tokens"])], T);
    assert_eq!((r.action, r.target_id.as_deref()), (ResolveAction::Merge, Some("100")));
    let long = "A comprehensive guide to JWT authentication covering many topics.";
    let r = rules(
        &x("auth-module", "JWT auth.", &["Uses JWT tokens", "Port: 3000"]),
        &[hit(0.93, long, "auth-module", &["Uses JWT tokens"])],
        T,
    );
    assert_eq!(r.action, ResolveAction::Discard);
}

#[test]
fn a_contradiction_evolves() {
    let new = x("database", "We no longer use MySQL. Replaced MySQL with PostgreSQL for better JSON support.", &["Database: PostgreSQL"]);
    let r = rules(&new, &[hit(0.88, "Using MySQL as the primary database.", "database", &["Uses JWT tokens"])], T);
    assert_eq!(r.action, ResolveAction::Evolve);
    assert!(r.reason.contains("contradiction"), "{}", r.reason);
}

#[test]
fn medium_similarity_with_the_entity_and_more_facts_merges_low_is_new() {
    let more =
        x("auth-module", "This is a test narrative about authentication.", &["Uses JWT", "Supports OAuth2", "Rate limiting: 100/min"]);
    let r = rules(&more, &[hit(0.55, "Existing narrative about auth.", "auth-module", &["Uses JWT"])], T);
    assert_eq!(r.action, ResolveAction::Merge);
    let other = x("new-service", "Completely different topic about caching.", &["Uses JWT tokens", "Port: 3000"]);
    let r = rules(&other, &[hit(0.30, "Existing narrative about auth.", "auth-module", &["Uses JWT tokens"])], T);
    assert_eq!(r.action, ResolveAction::New);
}

#[test]
fn merged_facts_have_no_repeats() {
    let new = x(
        "auth-module",
        "Extended auth module with OAuth2 support and rate limiting capabilities for the API gateway.",
        &["Uses JWT", "Supports OAuth2", "Rate limit: 100/min"],
    );
    let r = rules(&new, &[hit(0.85, "Basic auth.", "auth-module", &["Uses JWT", "Port: 3000"])], T);
    let (_, facts) = r.merged.unwrap();
    assert_eq!(facts.iter().filter(|f| f.to_lowercase().contains("uses jwt")).count(), 1);
    assert_eq!(merge_facts(&["a fact".into(), "B".into()], &["A FACT".into(), " ".into()]), vec!["A FACT".to_string(), "B".into()]);
    assert_eq!(merge_narratives("old one", "new one"), "new one\n\n[Previous context]: old one");
}

/// memform's evidence-of-change contradiction (`evidence_of_change`): a
/// high-scoring hit evolves only when the new narrative shows that it
/// changed; a negation about something else is covered, not a supersession.
#[test]
fn with_evidence_of_change_only_a_change_supersedes() {
    let t = Thresholds { evidence: true, ..T };
    let ended = x("Nadia", "I quit the book club.", &[]);
    let club = hit(0.88, "I go to a book club every month.", "Nadia", &[]);
    let r = rules(&ended, std::slice::from_ref(&club), t);
    assert_eq!(r.action, ResolveAction::Evolve, "{r:?}");
    // Memorix's patterns see no contradiction in "quit".
    assert_ne!(rules(&ended, std::slice::from_ref(&club), T).action, ResolveAction::Evolve);
    // A negation of something else: not a contradiction with the rules, one with the patterns.
    let other = x("Nadia", "I go to a book club and do not like crime novels.", &[]);
    assert_ne!(rules(&other, std::slice::from_ref(&club), t).action, ResolveAction::Evolve);
    assert_eq!(rules(&other, std::slice::from_ref(&club), T).action, ResolveAction::Evolve);
}
