//! Memorix's Evaluate stage in rules mode: an observation's value score from
//! its type, fact density, specificity, causal language and noise, and its
//! category. Rules and figures in docs/profiles.md ("memorix: Evaluate").

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::extract::Extracted;
use super::js;
use crate::types::string_enum;

string_enum! {
    /// An observation's value category.
    pub enum Category {
        Core => "core",
        Contextual => "contextual",
        Ephemeral => "ephemeral",
    }
}

/// The base weight of each observation type; any other type weighs [`DEFAULT_TYPE_WEIGHT`].
pub const TYPE_WEIGHTS: [(&str, f64); 10] = [
    ("gotcha", 0.85),
    ("decision", 0.8),
    ("problem-solution", 0.75),
    ("trade-off", 0.7),
    ("reasoning", 0.7),
    ("why-it-exists", 0.65),
    ("how-it-works", 0.6),
    ("discovery", 0.55),
    ("what-changed", 0.45),
    ("session-request", 0.4),
];
pub const DEFAULT_TYPE_WEIGHT: f64 = 0.5;

/// The score's weights: type, density, specificity, causal (each ×), noise (−).
pub const W_TYPE: f64 = 0.5;
pub const W_DENSITY: f64 = 0.12;
pub const W_SPECIFIC: f64 = 0.12;
pub const W_CAUSAL: f64 = 0.12;
pub const W_NOISE: f64 = 0.14;
/// Bonuses and penalty from Extract: facts extracted, title improved, type corrected.
pub const EXTRACTION_BONUS: f64 = 0.05;
pub const TITLE_PENALTY: f64 = 0.03;
pub const CORRECTION_BONUS: f64 = 0.03;

static SPECIFICITY: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    vec![
        js::regex(r"\b\d+\.\d+\.\d+\b", false),
        js::regex(r"\b(ERR_|ENOENT|ECONNREFUSED|E[A-Z]{3,})\b", false),
        js::regex(r"\b(port|PORT)\s*[:=]?\s*\d{2,5}\b", true),
        js::regex(r"\bhttps?://\S+", false),
        js::regex(r"`[^`]{3,60}`", false),
        js::regex(r"\b[A-Z][A-Z0-9_]{3,}\b", false),
        js::regex(r"\b\d+\s*(ms|s|sec|min|MB|GB|KB)\b", true),
    ]
});

static CAUSAL: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    vec![
        js::regex(r"\b(because|therefore|due to|caused by|as a result|fixed by|resolved by)\b", true),
        js::regex(r"\b(so that|in order to|leads to|results in|prevents)\b", true),
        js::regex(r"(?:因为|所以|由于|导致|造成|因此|为了|解决)", false),
    ]
});

static NOISE_TITLES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"^Session activity",
        r"^Updated \S+\.\w+$",
        r"^Created \S+\.\w+$",
        r"^Deleted \S+\.\w+$",
        r"^File written successfully",
        r"^Command executed",
        r"^Tool: (read_file|list_dir|find_by_name)",
        r"^\s*$",
    ]
    .iter()
    .map(|p| js::regex(p, true))
    .collect()
});

static TOOL_OUTPUT: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    vec![
        js::regex(r"^(file|directory|folder)\s+(created|deleted|moved|copied)", true),
        js::regex(r"^Successfully\s+(installed|updated|removed)", true),
        js::regex(r"^\d+ files? changed", true),
        js::regex(r"^npm (WARN|notice)", true),
        js::regex(r"^\s*at\s+\S+\s+\(", false),
    ]
});

/// Characters of facts per character of narrative (at least 100), at most 1.
pub fn fact_density(facts: &[String], narrative_len: usize) -> f64 {
    if narrative_len == 0 {
        return 0.0;
    }
    let chars: usize = facts.iter().map(|f| js::len(f)).sum();
    (chars as f64 / narrative_len.max(100) as f64).min(1.0)
}

fn share(patterns: &[Regex], content: &str, full: f64) -> f64 {
    (patterns.iter().filter(|p| p.is_match(content)).count() as f64 / full).min(1.0)
}

/// Noise: a noise title +0.3; tool-output lines × 0.5 of the non-blank
/// lines; a narrative under 50 units +0.2; at most 1.
pub fn noise(title: &str, narrative: &str) -> f64 {
    let mut n = if NOISE_TITLES.iter().any(|p| p.is_match(title)) { 0.3 } else { 0.0 };
    let lines: Vec<&str> = narrative.split('\n').filter(|l| !l.trim().is_empty()).collect();
    let tool = lines.iter().filter(|l| TOOL_OUTPUT.iter().any(|p| p.is_match(l))).count();
    if !lines.is_empty() {
        n += tool as f64 / lines.len() as f64 * 0.5;
    }
    if js::len(narrative) < 50 {
        n += 0.2;
    }
    n.min(1.0)
}

/// The category of a score: core ≥ `core_min`, contextual ≥ `contextual_min`, else ephemeral.
pub fn categorize(score: f64, core_min: f64, contextual_min: f64) -> Category {
    if score >= core_min {
        Category::Core
    } else if score >= contextual_min {
        Category::Contextual
    } else {
        Category::Ephemeral
    }
}

/// An observation's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Value {
    pub score: f64,
    pub category: Category,
    pub reason: String,
}

/// The value of an extracted observation; `(core_min, contextual_min)` cut the categories.
pub fn rules(x: &Extracted, cuts: (f64, f64)) -> Value {
    let content = format!("{} {} {}", x.title, x.narrative, x.facts.join(" "));
    let type_weight = TYPE_WEIGHTS.iter().find(|(t, _)| *t == x.obs_type).map_or(DEFAULT_TYPE_WEIGHT, |(_, w)| *w);
    let density = fact_density(&x.facts, js::len(&x.narrative));
    let specificity = share(&SPECIFICITY, &content, 3.0);
    let causal = share(&CAUSAL, &content, 2.0);
    let noise = noise(&x.title, &x.narrative);
    let raw = type_weight * W_TYPE + density * W_DENSITY + specificity * W_SPECIFIC + causal * W_CAUSAL - noise * W_NOISE;
    let extraction = if x.extracted_facts.is_empty() { 0.0 } else { EXTRACTION_BONUS };
    let title = if x.title_improved { -TITLE_PENALTY } else { 0.0 };
    let correction = if x.type_corrected { CORRECTION_BONUS } else { 0.0 };
    let score = (raw + extraction + title + correction).clamp(0.0, 1.0);
    let category = categorize(score, cuts.0, cuts.1);
    let mut parts = Vec::new();
    if type_weight >= 0.7 {
        parts.push("high-value type");
    } else if type_weight <= 0.45 {
        parts.push("low-value type");
    }
    for (v, label) in
        [(density, "fact-dense"), (specificity, "specific (versions/codes/paths)"), (causal, "causal reasoning"), (noise, "noisy content")]
    {
        if v > 0.3 {
            parts.push(label);
        }
    }
    let detail = if parts.is_empty() { "average content".to_string() } else { parts.join(", ") };
    Value { score, category, reason: format!("{category}: {detail}") }
}

#[cfg(test)]
#[path = "evaluate_tests.rs"]
mod tests;
