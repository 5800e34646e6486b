//! Memorix's Extract stage in rules mode: facts from the narrative by
//! pattern, title normalisation, entity resolution against the existing
//! entity names, and type verification. Each rule and its figure is in
//! docs/profiles.md ("memorix: Extract").

use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde::{Deserialize, Serialize};

use super::js;

/// Most facts the patterns add to an observation.
pub const MAX_EXTRACTED_FACTS: usize = 10;
/// A pattern's fact is kept when its length (UTF-16 units) is in this range.
pub const FACT_LEN: std::ops::RangeInclusive<usize> = 5..=120;
/// A narrative sentence can replace a generic title when at least this long.
pub const TITLE_SENTENCE_MIN: usize = 15;
/// An improved title is cut to this length.
pub const TITLE_MAX: usize = 60;
/// Substring matching of entity names needs both names at least this long.
pub const ENTITY_SUBSTRING_MIN: usize = 3;
/// A type is corrected when another type has at least this many signal matches and the declared one none.
pub const TYPE_CORRECTION_MIN: usize = 2;

/// Memorix's observation types, in its order.
pub const TYPES: [&str; 10] = [
    "session-request",
    "gotcha",
    "problem-solution",
    "how-it-works",
    "what-changed",
    "discovery",
    "why-it-exists",
    "decision",
    "trade-off",
    "reasoning",
];

type Format = fn(&Captures<'_>) -> String;

fn cap<'a>(c: &'a Captures<'_>, i: usize) -> &'a str {
    c.get(i).map_or("", |m| m.as_str())
}

static FACT_PATTERNS: LazyLock<Vec<(Regex, Format)>> = LazyLock::new(|| {
    vec![
        (js::regex(r"\b([A-Z][a-zA-Z_-]{2,30})\s*[:=]\s*([^\n,;]{2,60})", false), |c| format!("{}: {}", cap(c, 1), cap(c, 2).trim())),
        (js::regex(r"\b(\S{2,30})\s*[→➜\->]+\s*(\S{2,30})", false), |c| format!("{} \u{2192} {}", cap(c, 1), cap(c, 2))),
        (js::regex(r"\b(?:v(?:ersion)?\s*)(\d+\.\d+(?:\.\d+)?(?:-[\w.]+)?)\b", true), |c| format!("Version: {}", cap(c, 1))),
        (js::regex(r"\b(?:Error|ERR|ENOENT|ECONNREFUSED|TypeError|RangeError|SyntaxError|ReferenceError)[:\s]+([^\n]{5,80})", true), |c| {
            format!("Error: {}", cap(c, 1).trim())
        }),
        (js::regex(r"\b(?:port|PORT)\s*[:=]?\s*(\d{2,5})\b", true), |c| format!("Port: {}", cap(c, 1))),
        (js::regex(r"\b([A-Z][A-Z0-9_]{3,30})\s*=\s*(\S{1,60})", false), |c| format!("{}={}", cap(c, 1), cap(c, 2))),
        (js::regex(r"\b([@a-z][\w./-]+)@(\d+\.\d+\.\d+(?:-[\w.]+)?)\b", false), |c| format!("{}@{}", cap(c, 1), cap(c, 2))),
    ]
});

/// Titles a tool hook writes, which say nothing (also the value score's noise titles).
static GENERIC_TITLES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"^Updated \S+\.\w+$",
        r"^Created \S+\.\w+$",
        r"^Deleted \S+\.\w+$",
        r"^Modified \S+\.\w+$",
        r"^Changed \S+\.\w+$",
        r"^Session activity",
        r"^Activity \(",
        r"^Used \w+$",
        r"^Ran: ",
    ]
    .iter()
    .map(|p| js::regex(p, true))
    .collect()
});

static CODE_BLOCK: LazyLock<Regex> = LazyLock::new(|| js::regex(r"(?s)```.*?```", false));
static SENTENCE_END: LazyLock<Regex> = LazyLock::new(|| js::regex(r"[.。!！?\n]", false));

/// Signals of each type, counted over `title narrative`.
static TYPE_SIGNALS: LazyLock<Vec<(&'static str, Vec<Regex>)>> = LazyLock::new(|| {
    let signals: [(&str, &str, &str); 6] = [
        (
            "problem-solution",
            r"\b(fix|fixed|bug|error|issue|crash|broken|resolved|workaround|patch)\b",
            r"\b(修复|修正|解决|报错|崩溃|异常)\b",
        ),
        ("gotcha", r"\b(gotcha|pitfall|trap|careful|warning|caveat|footgun|unexpected|beware)\b", r"\b(坑|陷阱|注意|小心|踩坑)\b"),
        ("decision", r"\b(decided|chose|chosen|selected|adopted|rejected|evaluated|compared)\b", r"\b(决定|选择|采用|弃用|对比|评估)\b"),
        (
            "what-changed",
            r"\b(changed|migrated|upgraded|refactored|replaced|renamed|moved|removed|added)\b",
            r"\b(改|迁移|升级|重构|替换|重命名|删除|新增)\b",
        ),
        (
            "how-it-works",
            r"\b(works by|architecture|mechanism|pipeline|flow|under the hood|internally)\b",
            r"\b(原理|机制|流程|架构|内部)\b",
        ),
        ("trade-off", r"\b(trade.?off|compromise|downside|cost|benefit|pro|con|versus|vs)\b", r"\b(权衡|折中|代价|收益|优缺点)\b"),
    ];
    signals.iter().map(|(t, en, zh)| (*t, vec![js::regex(en, true), js::regex(zh, false)])).collect()
});

/// Facts the patterns find in `narrative` that the caller did not state,
/// in pattern order, at most [`MAX_EXTRACTED_FACTS`].
pub fn extract_facts(narrative: &str, caller: &[String]) -> Vec<String> {
    let known: std::collections::HashSet<String> = caller.iter().map(|f| f.to_lowercase().trim().to_string()).collect();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (re, format) in FACT_PATTERNS.iter() {
        for c in re.captures_iter(narrative) {
            let fact = format(&c);
            let norm = fact.to_lowercase().trim().to_string();
            if known.contains(&norm) || seen.contains(&norm) || !FACT_LEN.contains(&js::len(&fact)) {
                continue;
            }
            seen.insert(norm);
            out.push(fact);
        }
    }
    out.truncate(MAX_EXTRACTED_FACTS);
    out
}

/// Whether a title is one a tool hook writes.
pub fn is_generic_title(title: &str) -> bool {
    GENERIC_TITLES.iter().any(|p| p.is_match(title))
}

/// A generic title is replaced by the narrative's first sentence of at
/// least [`TITLE_SENTENCE_MIN`] units (code blocks removed), cut to
/// [`TITLE_MAX`]; `(title, improved)`.
pub fn improve_title(title: &str, narrative: &str) -> (String, bool) {
    if !is_generic_title(title) {
        return (title.to_string(), false);
    }
    let text = CODE_BLOCK.replace_all(narrative, "");
    match SENTENCE_END.split(&text).map(str::trim).find(|s| js::len(s) >= TITLE_SENTENCE_MIN) {
        Some(s) => (js::slice(s, TITLE_MAX).to_string(), true),
        None => (title.to_string(), false),
    }
}

/// How an entity name was resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntityMatch {
    /// Equal to an existing name, ignoring case, `-` and `_`.
    Exact,
    /// One name contains the other (so `file-lock` and `src/lock/file-lock.ts`).
    Substring,
    /// No existing name matches.
    None,
    /// LLM mode: the model named an existing entity (docs/profiles.md).
    Llm,
}

/// The entity an observation is filed under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedEntity {
    pub name: String,
    /// The name changed to an existing one (Memorix's `entityResolved`).
    pub resolved: bool,
    /// The name it ends with already existed (linked to an existing entity).
    pub existed: bool,
    #[serde(rename = "match")]
    pub matched: EntityMatch,
}

fn entity_key(name: &str) -> String {
    name.to_lowercase().replace(['-', '_'], "")
}

/// Whether two entity names match: equal or, both at least
/// [`ENTITY_SUBSTRING_MIN`] long, one containing the other (case, `-` and `_` ignored).
pub fn entities_match(a: &str, b: &str) -> bool {
    let (a, b) = (entity_key(a), entity_key(b));
    a == b || (js::len(&a) >= ENTITY_SUBSTRING_MIN && js::len(&b) >= ENTITY_SUBSTRING_MIN && (a.contains(&b) || b.contains(&a)))
}

/// Resolves `name` against the existing names, first match in their order:
/// an exact match takes the existing spelling; a substring match takes the
/// longer of the two names.
pub fn resolve_entity(name: &str, existing: &[String]) -> ResolvedEntity {
    let key = entity_key(name);
    for e in existing {
        let ek = entity_key(e);
        if key == ek {
            return ResolvedEntity { name: e.clone(), resolved: e != name, existed: true, matched: EntityMatch::Exact };
        }
        if js::len(&key) >= ENTITY_SUBSTRING_MIN && js::len(&ek) >= ENTITY_SUBSTRING_MIN && (ek.contains(&key) || key.contains(&ek)) {
            let canonical = if js::len(e) >= js::len(name) { e.clone() } else { name.to_string() };
            let resolved = canonical != name;
            return ResolvedEntity { name: canonical, resolved, existed: resolved, matched: EntityMatch::Substring };
        }
    }
    ResolvedEntity { name: name.to_string(), resolved: false, existed: false, matched: EntityMatch::None }
}

/// The type `title narrative` signals most (ties to the earlier type), if any signal matches.
pub fn signalled_type(narrative: &str, title: &str) -> Option<&'static str> {
    let counts = signal_counts(&format!("{title} {narrative}"));
    let mut best: Option<(&'static str, usize)> = None;
    for ((t, _), &n) in TYPE_SIGNALS.iter().zip(counts.iter()) {
        if n > 0 && best.is_none_or(|(_, b)| n > b) {
            best = Some((t, n));
        }
    }
    best.map(|(t, _)| t)
}

/// How many times each type's signals match `content`, in [`TYPE_SIGNALS`]'
/// order. The last content counted on this thread is remembered: a turn's
/// observation is counted by [`signalled_type`] and then, with the same
/// title and narrative, by [`verify_type`].
fn signal_counts(content: &str) -> Vec<usize> {
    thread_local! {
        static LAST: std::cell::RefCell<(String, Vec<usize>)> = const { std::cell::RefCell::new((String::new(), Vec::new())) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if last.0 != content || last.1.is_empty() {
            let counts = TYPE_SIGNALS.iter().map(|(_, ps)| ps.iter().map(|p| p.find_iter(content).count()).sum()).collect();
            *last = (content.to_string(), counts);
        }
        last.1.clone()
    })
}

/// The declared type, or the type the content signals when that type has
/// at least [`TYPE_CORRECTION_MIN`] matches, the most, and the declared
/// type none; `(type, corrected)`.
pub fn verify_type(declared: &str, narrative: &str, title: &str) -> (String, bool) {
    let counts = signal_counts(&format!("{title} {narrative}"));
    let mut scores: Vec<(&str, usize)> =
        TYPE_SIGNALS.iter().zip(counts.iter()).map(|((t, _), &n)| (*t, n)).filter(|(_, n)| *n > 0).collect();
    // A stable sort, as JavaScript's: ties keep the signal order.
    scores.sort_by_key(|s| std::cmp::Reverse(s.1));
    let Some(&(best, score)) = scores.first() else { return (declared.to_string(), false) };
    let declared_score = scores.iter().find(|(t, _)| *t == declared).map_or(0, |(_, n)| *n);
    if best != declared && score >= TYPE_CORRECTION_MIN && declared_score == 0 {
        return (best.to_string(), true);
    }
    (declared.to_string(), false)
}

/// What Extract gives Resolve and Evaluate.
#[derive(Debug, Clone, PartialEq)]
pub struct Extracted {
    pub title: String,
    pub title_improved: bool,
    pub narrative: String,
    /// The caller's facts, then the extracted ones.
    pub facts: Vec<String>,
    pub extracted_facts: Vec<String>,
    pub entity: ResolvedEntity,
    pub obs_type: String,
    pub type_corrected: bool,
}

/// Extract in rules mode for one observation (already given its fallbacks).
pub fn rules(title: &str, narrative: &str, caller_facts: &[String], entity_name: &str, obs_type: &str, existing: &[String]) -> Extracted {
    let extracted_facts = extract_facts(narrative, caller_facts);
    let mut facts = caller_facts.to_vec();
    facts.extend(extracted_facts.iter().cloned());
    let (new_title, title_improved) = improve_title(title, narrative);
    let entity = resolve_entity(entity_name, existing);
    let (obs_type, type_corrected) = verify_type(obs_type, narrative, title);
    Extracted {
        title: new_title,
        title_improved,
        narrative: narrative.to_string(),
        facts,
        extracted_facts,
        entity,
        obs_type,
        type_corrected,
    }
}

#[cfg(test)]
#[path = "extract_tests.rs"]
mod tests;
