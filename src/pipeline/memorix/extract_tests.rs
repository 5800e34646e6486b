//! Memorix's own Extract test cases (its `tests/memory/formation/extract.test.ts`),
//! carried over as expectations of the profile, and the patterns compiling.

use super::*;

fn obs(narrative: &str) -> Extracted {
    rules("Test observation", narrative, &[], "test-module", "discovery", &[])
}

#[test]
fn every_pattern_compiles() {
    assert_eq!(FACT_PATTERNS.len(), 7);
    assert_eq!(GENERIC_TITLES.len(), 9);
    assert_eq!(TYPE_SIGNALS.len(), 6);
    assert!(CODE_BLOCK.is_match("```x```") && SENTENCE_END.is_match("."));
}

#[test]
fn key_values_versions_errors_and_packages_are_extracted() {
    let r = obs("The server runs on Port: 3000 with Timeout: 60s");
    assert!(r.extracted_facts.iter().any(|f| f.contains("3000")), "{:?}", r.extracted_facts);
    let r = obs("Upgraded from v1.2.3 to version 2.0.0");
    assert!(r.extracted_facts.iter().any(|f| f.contains("1.2.3") || f.contains("2.0.0")), "{:?}", r.extracted_facts);
    let r = obs("Got Error: ECONNREFUSED when connecting to database");
    assert!(r.extracted_facts.iter().any(|f| f.contains("ECONNREFUSED")), "{:?}", r.extracted_facts);
    let r = obs("Installed react@18.2.0 and typescript@5.3.2");
    assert!(r.extracted_facts.iter().any(|f| f.contains("react@18.2.0")), "{:?}", r.extracted_facts);
}

#[test]
fn caller_facts_are_not_repeated_and_at_most_ten_are_extracted() {
    let r = rules("t", "Port: 3000 is the default", &["Port: 3000".into()], "m", "discovery", &[]);
    assert!(r.extracted_facts.iter().all(|f| f != "Port: 3000"), "{:?}", r.extracted_facts);
    assert!(r.facts.iter().any(|f| f == "Port: 3000"));
    // Memorix's case: its key pattern takes letters only, so these yield nothing (at most 10 holds).
    let narrative: Vec<String> = (0..20).map(|i| format!("Config_{i}: value_{i}")).collect();
    assert!(obs(&narrative.join("\n")).extracted_facts.len() <= MAX_EXTRACTED_FACTS);
    let narrative: Vec<String> = (0..20u8).map(|i| format!("Setting{}: value_{i}", char::from(b'a' + i))).collect();
    let r = obs(&narrative.join("\n"));
    assert_eq!(r.extracted_facts.len(), MAX_EXTRACTED_FACTS);
    assert_eq!(r.extracted_facts[0], "Settinga: value_0");
}

#[test]
fn generic_titles_are_improved_and_good_ones_kept() {
    let narrative = "Changed the database connection string to use PostgreSQL instead of MySQL for better performance.";
    let r = rules("Updated config.ts", narrative, &[], "m", "discovery", &[]);
    assert!(r.title_improved);
    assert_ne!(r.title, "Updated config.ts");
    assert!(r.title.len() > 10);
    assert_eq!(r.title, "Changed the database connection string to use PostgreSQL ins");
    let good = "JWT refresh token causes silent auth failure after 24h";
    let r = rules(good, "This is a test narrative.", &[], "m", "discovery", &[]);
    assert!(!r.title_improved);
    assert_eq!(r.title, good);
    let r = rules(
        "Session activity",
        "Refactored the authentication middleware to support OAuth2 in addition to JWT.",
        &[],
        "m",
        "discovery",
        &[],
    );
    assert!(r.title_improved);
}

#[test]
fn entities_resolve_exactly_then_by_substring_to_the_longer_name() {
    let existing = ["auth-module".to_string(), "database".into(), "server".into()];
    let r = resolve_entity("Auth-Module", &existing);
    assert_eq!((r.name.as_str(), r.resolved, r.matched), ("auth-module", true, EntityMatch::Exact));
    let r = resolve_entity("auth", &existing[..2]);
    assert_eq!((r.name.as_str(), r.resolved, r.matched), ("auth-module", true, EntityMatch::Substring));
    let r = resolve_entity("new-service", &existing[..2]);
    assert_eq!((r.name.as_str(), r.resolved, r.existed), ("new-service", false, false));
    assert!(!resolve_entity("test", &[]).resolved);
    // A short name and a file path: `file-lock` is filed under the path.
    let r = resolve_entity("file-lock", &["src/lock/file-lock.ts".to_string()]);
    assert_eq!((r.name.as_str(), r.resolved, r.existed), ("src/lock/file-lock.ts", true, true));
}

#[test]
fn types_are_corrected_only_on_strong_signals() {
    let fixed = "Fixed the bug where the crash was caused by a broken error handler. The issue was resolved by patching the middleware.";
    let r = rules("Test observation", fixed, &[], "m", "discovery", &[]);
    assert_eq!((r.obs_type.as_str(), r.type_corrected), ("problem-solution", true));
    let decided = "Decided to use PostgreSQL. We evaluated MongoDB but chose SQL for ACID compliance.";
    let r = rules("Test observation", decided, &[], "m", "decision", &[]);
    assert_eq!((r.obs_type.as_str(), r.type_corrected), ("decision", false));
    let r = obs("Found that the API returns JSON by default.");
    assert!(!r.type_corrected);
}

#[test]
fn remembered_signal_counts_are_the_content_s_own() {
    let fresh = |c: &str| -> Vec<usize> { TYPE_SIGNALS.iter().map(|(_, ps)| ps.iter().map(|p| p.find_iter(c).count()).sum()).collect() };
    let contents = ["t We fixed the bug and decided on a workaround", "t We migrated and upgraded it", "", "t nothing here"];
    // Each content after itself (remembered) and after another (counted again).
    for a in contents {
        for b in contents {
            assert_eq!(signal_counts(a), fresh(a), "{a:?}");
            assert_eq!(signal_counts(a), fresh(a), "{a:?} again");
            assert_eq!(signal_counts(b), fresh(b), "{b:?} after {a:?}");
        }
    }
    assert_eq!(fresh(contents[0])[0], 3, "fix, bug and workaround are problem-solution signals");
    assert_eq!(verify_type("discovery", "We fixed the bug, an issue with a crash", "t"), ("problem-solution".to_string(), true));
}
