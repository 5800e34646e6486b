//! The lenient LLM answer parser on arbitrary text: never a panic; every
//! fact it keeps cites a turn of the episode; verdicts name known pairs,
//! each at most once.
#![no_main]

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;
use memform::llm::parse::{clean_answer, find_json_object, parse_extraction, parse_verdicts};
use memform::types::Turn;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let turns: Vec<Turn> = ["t1", "t2", "D1:3"]
        .iter()
        .map(|id| Turn { id: id.to_string(), speaker: "Ann".into(), text: "I work at Acme and live in Oslo.".into() })
        .collect();
    let mut warnings = Vec::new();
    let _ = clean_answer(&text, &mut warnings);
    let _ = find_json_object(&text, &mut warnings);
    let extraction = parse_extraction(&text, &turns);
    for f in extraction.relationships.iter().chain(&extraction.literal_facts) {
        assert!(turns.iter().any(|t| t.id == f.source_turn), "a fact cites no turn of the episode: {f:?}");
    }
    let known: BTreeSet<usize> = [0, 1, 2].into_iter().collect();
    let verdicts = parse_verdicts(&text, &known);
    let mut seen = BTreeSet::new();
    for (i, _) in &verdicts.verdicts {
        assert!(known.contains(i), "a verdict for an unknown pair {i}");
        assert!(seen.insert(*i), "two verdicts for pair {i}");
    }
});
