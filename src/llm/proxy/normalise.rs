//! Key normalisation for the proxy: named rule sets, one per external
//! system, that rewrite the parts of a prompt that change from one run to
//! the next without changing what is asked (today's date, above all)
//! before the request is keyed. Only the key material is rewritten: the
//! request forwarded upstream is the client's, as sent. Every replacement
//! is counted under its rule's name, so a run reports what was normalised.
//!
//! The rule sets (docs/adapters.md, "The proxy", lists them):
//! - `none`: nothing is rewritten.
//! - `mem0`: `Today's date is YYYY-MM-DD` (mem0's fact-extraction prompts
//!   write today's date there) becomes `Today's date is <DATE>`.
//! - `dates`: every ISO-8601 date-time and date anywhere in a message becomes
//!   `<DATETIME>` / `<DATE>`. Lossy: dates inside the conversation are
//!   replaced too, so two requests that differ only by such a date share a
//!   key; for systems whose stamps have no fixed wording.

use std::collections::BTreeMap;

use regex::Regex;

use crate::error::{Error, Result};

/// The rule sets' names, as `--normalise` takes them.
pub const RULE_SETS: &[&str] = &["none", "mem0", "dates"];

/// One rewrite: every match of `pattern` becomes `replacement`.
#[derive(Debug, Clone)]
struct Rule {
    name: &'static str,
    pattern: Regex,
    replacement: &'static str,
}

/// A named rule set. Its name and version are part of every key it makes
/// (the fixture's template), so a changed rule set never replays answers
/// keyed by the old one.
#[derive(Debug, Clone)]
pub struct Normalise {
    name: &'static str,
    version: u32,
    rules: Vec<Rule>,
}

/// (set, version, [(rule, pattern, replacement)]).
type Spec = (&'static str, u32, &'static [(&'static str, &'static str, &'static str)]);

const SPECS: &[Spec] = &[
    ("none", 1, &[]),
    ("mem0", 1, &[("mem0.today", r"(Today's date is )\d{4}-\d{2}-\d{2}", "${1}<DATE>")]),
    (
        "dates",
        1,
        &[
            ("dates.datetime", r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?", "<DATETIME>"),
            ("dates.date", r"\b\d{4}-\d{2}-\d{2}\b", "<DATE>"),
        ],
    ),
];

impl Normalise {
    /// The rule set `name` (one of [`RULE_SETS`]).
    pub fn named(name: &str) -> Result<Self> {
        let Some((set, version, rules)) = SPECS.iter().find(|(n, _, _)| *n == name) else {
            return Err(Error::Config(format!("unknown normalisation rule set {name:?} (expected one of {})", RULE_SETS.join(", "))));
        };
        let rules = rules
            .iter()
            .map(|(rule, pattern, replacement)| {
                Regex::new(pattern)
                    .map(|pattern| Rule { name: rule, pattern, replacement })
                    .map_err(|e| Error::Other(format!("normalisation rule {rule}: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Normalise { name: set, version: *version, rules })
    }

    /// The set that rewrites nothing.
    pub fn none() -> Self {
        Normalise { name: "none", version: 1, rules: Vec::new() }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn version(&self) -> u32 {
        self.version
    }

    /// `text` with every rule applied in order; each replacement counted
    /// in `counts` under its rule's name.
    pub fn apply(&self, text: &str, counts: &mut BTreeMap<String, u64>) -> String {
        let mut out = text.to_string();
        for rule in &self.rules {
            let n = rule.pattern.find_iter(&out).count();
            if n > 0 {
                out = rule.pattern.replace_all(&out, rule.replacement).into_owned();
                *counts.entry(rule.name.to_string()).or_default() += n as u64;
            }
        }
        out
    }
}

impl Default for Normalise {
    fn default() -> Self {
        Self::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_set_compiles() {
        for name in RULE_SETS {
            assert_eq!(Normalise::named(name).unwrap().name(), *name);
        }
        assert!(Normalise::named("zep").unwrap_err().to_string().contains("mem0"));
    }

    #[test]
    fn mem0_replaces_only_todays_date() {
        let n = Normalise::named("mem0").unwrap();
        let mut counts = BTreeMap::new();
        let out = n.apply("Today's date is 2026-12-01.\nOn 2023-05-08 Ann moved.", &mut counts);
        assert_eq!(out, "Today's date is <DATE>.\nOn 2023-05-08 Ann moved.");
        assert_eq!(counts.get("mem0.today"), Some(&1));
    }

    #[test]
    fn dates_replaces_date_times_before_dates() {
        let n = Normalise::named("dates").unwrap();
        let mut counts = BTreeMap::new();
        let out = n.apply("at 2026-12-01T10:20:30.5+01:00 and 2026-12-02 10:20, on 2023-05-08", &mut counts);
        assert_eq!(out, "at <DATETIME> and <DATETIME>, on <DATE>");
        assert_eq!(counts.get("dates.datetime"), Some(&2));
        assert_eq!(counts.get("dates.date"), Some(&1));
    }

    #[test]
    fn none_rewrites_nothing() {
        let mut counts = BTreeMap::new();
        assert_eq!(Normalise::none().apply("Today's date is 2026-12-01.", &mut counts), "Today's date is 2026-12-01.");
        assert!(counts.is_empty());
    }
}
