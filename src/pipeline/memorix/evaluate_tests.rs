//! Memorix's own Evaluate test cases (its `tests/memory/formation/evaluate.test.ts`),
//! carried over as expectations of the profile.

use super::*;
use crate::pipeline::memorix::extract::{EntityMatch, ResolvedEntity};

const CUTS: (f64, f64) = (0.6, 0.35);

fn x(obs_type: &str, title: &str, narrative: &str, facts: &[&str], extracted: &[&str]) -> Extracted {
    Extracted {
        title: title.into(),
        title_improved: false,
        narrative: narrative.into(),
        facts: facts.iter().map(|s| s.to_string()).collect(),
        extracted_facts: extracted.iter().map(|s| s.to_string()).collect(),
        entity: ResolvedEntity { name: "test-module".into(), resolved: false, existed: false, matched: EntityMatch::None },
        obs_type: obs_type.into(),
        type_corrected: false,
    }
}

fn score(obs_type: &str, title: &str, narrative: &str, facts: &[&str]) -> f64 {
    rules(&x(obs_type, title, narrative, facts, &[]), CUTS).score
}

#[test]
fn every_pattern_compiles() {
    assert_eq!((SPECIFICITY.len(), CAUSAL.len(), NOISE_TITLES.len(), TOOL_OUTPUT.len()), (7, 3, 8, 5));
}

#[test]
fn types_weigh_and_decisions_score_high() {
    let n = "Important pitfall with auth tokens.";
    assert!(score("gotcha", "Test observation", n, &[]) > score("what-changed", "Test observation", n, &[]));
    let d = "Chose PostgreSQL over MySQL because of better JSON support and JSONB indexing.";
    assert!(score("decision", "Test observation", d, &["Database: PostgreSQL", "Reason: JSONB indexing"]) >= 0.5);
}

#[test]
fn density_specificity_and_causal_language_raise_the_score() {
    let facts = ["JWT TTL: 15m", "Refresh TTL: 7d", "Algorithm: RS256", "Issuer: auth.example.com"];
    assert!(score("discovery", "t", "Auth configuration details.", &facts) > score("discovery", "t", "Auth configuration details.", &[]));
    let specific = "Fixed ECONNREFUSED on port 5432 after upgrading to v2.1.0. Timeout was 30s.";
    let vague = "Fixed a connection issue after upgrading. Timeout was too long.";
    assert!(score("discovery", "t", specific, &["Error: ECONNREFUSED", "Port: 5432"]) > score("discovery", "t", vague, &[]));
    let causal = "The crash was caused by a race condition because the mutex was not acquired before writing.";
    assert!(score("discovery", "t", causal, &[]) > score("discovery", "t", "The application crashed. The mutex was missing.", &[]));
}

#[test]
fn generic_titles_and_tool_output_are_noise() {
    let noisy = score("discovery", "Updated config.ts", "File written successfully.", &[]);
    let clean = score(
        "discovery",
        "JWT refresh causes silent auth failure",
        "The refresh token mechanism silently fails after 24 hours due to missing auto-renewal.",
        &[],
    );
    assert!(noisy < clean);
    let tool = "File created successfully.\nnpm WARN deprecated package\nSuccessfully installed 3 packages";
    assert!(score("discovery", "Test observation", tool, &[]) < 0.5);
}

#[test]
fn categories_and_reason() {
    let core = x(
        "gotcha",
        "Test observation",
        "Critical: the Docker container crashes because of OOM when processing files larger than 2GB. Fixed by setting --memory=4g.",
        &["Memory limit: 4GB", "File size threshold: 2GB"],
        &["Memory limit: 4GB"],
    );
    assert_eq!(rules(&core, CUTS).category, Category::Core);
    let low = x("what-changed", "Updated readme.md", "Minor typo fix.", &[], &[]);
    assert_eq!(rules(&low, CUTS).category, Category::Ephemeral);
    let plain = x("discovery", "Test observation", "This is a test narrative.", &[], &[]);
    let with = x("discovery", "Test observation", "This is a test narrative.", &[], &["Port: 3000", "Timeout: 60s"]);
    assert!(rules(&with, CUTS).score >= rules(&plain, CUTS).score);
    let v = rules(&plain, CUTS);
    assert!(v.reason.contains(v.category.as_str()), "{}", v.reason);
    assert_eq!(categorize(0.6, 0.6, 0.35), Category::Core);
    assert_eq!(categorize(0.5999, 0.6, 0.35), Category::Contextual);
    assert_eq!(categorize(0.3499, 0.6, 0.35), Category::Ephemeral);
}
