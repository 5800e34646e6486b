//! Value score, the noise filter of stage 1: how much a candidate fact is
//! worth keeping. The score adds a base weight for the fact type, the
//! fact's density (informative words), its specificity (paths, versions,
//! error codes, numbers, proper names, a structured edge, dates) and causal
//! words, then subtracts for generic-title and low-quality patterns and for
//! tool-output noise (log lines, HTTP status lines, bare timestamps, thanks
//! and greetings). [`value_tier`] cuts the score into tiers; the cut-off is
//! applied downstream so that a sweep can vary it.

use crate::types::{CandidateFact, FactKind, FactType, ValueTier};

const DENSITY_MAX: f64 = 0.15;
const DENSITY_FULL_WORDS: f64 = 8.0;
const SPECIFICITY_MAX: f64 = 0.3;
const CAUSAL_BONUS: f64 = 0.05;
const GENERIC_TITLE_PENALTY: f64 = 0.3;
const LOW_QUALITY_PENALTY: f64 = 0.2;
const NOISE_PENALTY: f64 = 0.4;

/// Words that carry no information on their own: function words, fillers,
/// vague nouns and stock emotions. Shared with the rules extractor.
pub(crate) const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "absolutely",
    "actually",
    "again",
    "all",
    "already",
    "also",
    "always",
    "am",
    "amazing",
    "an",
    "and",
    "any",
    "anything",
    "are",
    "as",
    "at",
    "awesome",
    "be",
    "been",
    "being",
    "big",
    "bit",
    "blessed",
    "but",
    "by",
    "can",
    "cool",
    "could",
    "day",
    "definitely",
    "did",
    "do",
    "does",
    "doing",
    "even",
    "ever",
    "every",
    "everything",
    "excited",
    "feel",
    "feeling",
    "felt",
    "for",
    "from",
    "fun",
    "get",
    "getting",
    "glad",
    "go",
    "going",
    "gonna",
    "good",
    "got",
    "grateful",
    "great",
    "had",
    "happy",
    "has",
    "have",
    "having",
    "her",
    "here",
    "him",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "just",
    "keep",
    "kept",
    "kind",
    "knew",
    "know",
    "lately",
    "like",
    "liked",
    "little",
    "lot",
    "lots",
    "love",
    "loved",
    "lucky",
    "made",
    "make",
    "many",
    "me",
    "more",
    "most",
    "much",
    "my",
    "myself",
    "never",
    "nice",
    "no",
    "not",
    "now",
    "of",
    "off",
    "on",
    "one",
    "ones",
    "or",
    "our",
    "out",
    "over",
    "pretty",
    "proud",
    "quite",
    "really",
    "recently",
    "see",
    "seem",
    "seems",
    "she",
    "so",
    "some",
    "something",
    "sort",
    "still",
    "stoked",
    "stuff",
    "such",
    "super",
    "sure",
    "than",
    "thankful",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "things",
    "think",
    "this",
    "those",
    "thought",
    "thrilled",
    "time",
    "times",
    "to",
    "today",
    "too",
    "totally",
    "truly",
    "up",
    "us",
    "very",
    "want",
    "wanted",
    "was",
    "way",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "why",
    "will",
    "with",
    "would",
    "yeah",
    "yes",
    "you",
    "your",
];

/// Whether `word` (any case) is in [`STOPWORDS`].
pub(crate) fn is_stopword(word: &str) -> bool {
    let w = word.to_lowercase();
    STOPWORDS.binary_search(&w.as_str()).is_ok()
}

/// Strips leading and trailing punctuation (keeps inner `.`, `/`, `-`, …).
pub(crate) fn trim_punct(word: &str) -> &str {
    word.trim_matches(|c: char| !c.is_alphanumeric() && !matches!(c, '$' | '€' | '£' | '/' | '~')).trim_end_matches(['/', '.'])
}

/// Informative words: not stopwords, at least three characters or a number.
pub(crate) fn informative_words(text: &str) -> usize {
    text.split_whitespace()
        .map(trim_punct)
        .filter(|w| {
            let core = w.strip_suffix("'s").unwrap_or(w);
            !core.is_empty() && (core.chars().any(|c| c.is_ascii_digit()) || (core.chars().count() >= 3 && !is_stopword(core)))
        })
        .count()
}

/// A filesystem path: `/etc/x`, `~/x`, `./x`, `C:\x`, or `dir/file.ext`.
pub(crate) fn is_path(token: &str) -> bool {
    let t = token.trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | '(' | ')' | ',' | ';'));
    let t = t.strip_suffix('.').unwrap_or(t);
    if t.contains("://") || t.len() < 3 {
        return false;
    }
    let path_chars = |s: &str| s.chars().all(|c| c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '~' | '\\'));
    let b = t.as_bytes();
    if b.len() > 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && matches!(b[2], b'\\' | b'/') {
        return path_chars(&t[2..]);
    }
    if !path_chars(t) {
        return false;
    }
    if let Some(rest) = t.strip_prefix("~/").or_else(|| t.strip_prefix("./")).or_else(|| t.strip_prefix("../")) {
        return !rest.is_empty();
    }
    if let Some(rest) = t.strip_prefix('/') {
        return rest.chars().any(|c| c.is_alphanumeric()) && (rest.contains('/') || rest.contains('.') || rest.len() >= 3);
    }
    let segments: Vec<&str> = t.split('/').collect();
    segments.len() >= 2
        && segments.iter().all(|s| !s.is_empty())
        && segments.last().is_some_and(|s| {
            s.split_once('.')
                .is_some_and(|(stem, ext)| !stem.is_empty() && !ext.is_empty() && ext.chars().all(|c| c.is_ascii_alphanumeric()))
        })
}

/// A URL with a scheme.
pub(crate) fn is_url(token: &str) -> bool {
    let t = token.trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | '(' | ')' | '<' | '>'));
    ["http://", "https://", "ftp://", "file://"].iter().any(|p| t.len() > p.len() && t.to_ascii_lowercase().starts_with(p))
}

/// A version string: `v2`, `v1.2.3`, `1.2.3`, `1.2.3-beta.1`.
pub(crate) fn is_version(token: &str) -> bool {
    let t = trim_punct(token);
    let (prefixed, body) = match t.strip_prefix(['v', 'V']) {
        Some(b) => (true, b),
        None => (false, t),
    };
    let core = body.split(['-', '+']).next().unwrap_or("");
    if core.is_empty() || !core.starts_with(|c: char| c.is_ascii_digit()) {
        return false;
    }
    let parts: Vec<&str> = core.split('.').collect();
    if !parts.iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit())) {
        return false;
    }
    prefixed || parts.len() >= 3
}

/// An error code such as `E1234`, `ENOENT`, `ERR_X`, `TS2345`, `0x80070005`.
pub(crate) fn is_error_code(token: &str) -> bool {
    let t = trim_punct(token);
    if t.starts_with("0x") && t.len() > 4 && t[2..].chars().all(|c| c.is_ascii_hexdigit()) {
        return true;
    }
    if let Some(rest) = t.strip_prefix("ERR_") {
        return !rest.is_empty();
    }
    if t.len() >= 4 && t.starts_with('E') && t[1..].chars().all(|c| c.is_ascii_uppercase()) {
        return matches!(
            t,
            "ENOENT" | "EACCES" | "EPERM" | "EEXIST" | "ECONNREFUSED" | "ECONNRESET" | "ETIMEDOUT" | "EADDRINUSE" | "ENOTFOUND" | "EPIPE"
        );
    }
    let letters = t.chars().take_while(|c| c.is_ascii_uppercase()).count();
    let digits = t[letters..].chars().take_while(|c| c.is_ascii_digit()).count();
    (1..=4).contains(&letters) && digits >= 3 && letters + digits == t.len()
}

fn has_number(text: &str) -> bool {
    text.split_whitespace().any(|w| trim_punct(w).chars().any(|c| c.is_ascii_digit()))
}

/// Capitalised words after the first word that are not `I`: names.
fn has_proper_name(text: &str) -> bool {
    text.split_whitespace().skip(1).map(trim_punct).any(|w| {
        let mut cs = w.chars();
        matches!(cs.next(), Some(c) if c.is_uppercase()) && w != "I" && !w.starts_with("I'")
    })
}

const CAUSAL: &[&str] = &[
    " because ",
    " so that ",
    " since ",
    " due to ",
    " in order to ",
    " therefore ",
    " which is why ",
    " as a result",
    " thanks to ",
    " so we ",
    " so i ",
    " that's why ",
];

/// [`CAUSAL`], matched in one pass ([`super::phrase_matcher`]).
static CAUSAL_MATCHER: std::sync::LazyLock<aho_corasick::AhoCorasick> = std::sync::LazyLock::new(|| super::phrase_matcher(CAUSAL));

const GENERIC_TITLES: &[&str] = &[
    "untitled",
    "new chat",
    "new conversation",
    "conversation about",
    "conversation with",
    "discussion about",
    "discussion of",
    "chat about",
    "chat with",
    "summary of",
    "overview of",
    "general discussion",
    "question about",
    "questions about",
    "misc",
    "miscellaneous",
    "notes",
    "various topics",
];

const LOW_QUALITY: &[&str] = &[
    " asked about ",
    " asked a question",
    " talked about ",
    " discussed ",
    " said hello",
    " said hi",
    " greeted ",
    " mentioned something",
    " said something",
    " is chatting",
    " was chatting",
    " responded",
    " replied",
];

/// [`LOW_QUALITY`], every occurrence found in one pass (overlapping, so
/// none is hidden by another phrase's).
static LOW_QUALITY_MATCHER: std::sync::LazyLock<aho_corasick::AhoCorasick> =
    std::sync::LazyLock::new(|| super::phrase_matcher(LOW_QUALITY));

const PHATIC: &[&str] = &[
    "ok",
    "okay",
    "ok thanks",
    "okay thanks",
    "ok thank you",
    "thanks",
    "thank you",
    "thx",
    "ty",
    "hi",
    "hello",
    "hey",
    "hey there",
    "bye",
    "goodbye",
    "good morning",
    "good night",
    "good evening",
    "good afternoon",
    "see you",
    "see ya",
    "sounds good",
    "no problem",
    "you're welcome",
    "welcome",
    "cool",
    "great",
    "nice",
    "sure",
    "got it",
    "yes",
    "no",
    "yep",
    "nope",
    "lol",
    "haha",
    "k",
    "done",
    "noted",
    "cheers",
];

const LOG_LEVELS: &[&str] = &["TRACE", "DEBUG", "INFO", "WARN", "WARNING", "NOTICE"];
const HTTP_METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

fn is_timestamp_token(w: &str) -> bool {
    let t = w.trim_matches(|c: char| matches!(c, '[' | ']' | '(' | ')' | ',' | 'Z'));
    let digits = t.chars().filter(|c| c.is_ascii_digit()).count();
    !t.is_empty()
        && digits >= 2
        && t.chars().all(|c| c.is_ascii_digit() || matches!(c, '-' | ':' | '.' | 'T' | '/' | '+'))
        && (t.contains(':') || t.matches('-').count() == 2 || t.matches('/').count() == 2)
}

/// Log lines, HTTP status lines, bare timestamps, thanks and greetings.
pub(crate) fn is_tool_noise(text: &str) -> bool {
    let trimmed = text.trim();
    let words: Vec<&str> = trimmed.split_whitespace().collect();
    if words.is_empty() {
        return false;
    }
    let stripped: String = trimmed.to_lowercase().chars().filter(|c| c.is_alphanumeric() || c.is_whitespace() || *c == '\'').collect();
    let stripped = stripped.split_whitespace().collect::<Vec<_>>().join(" ");
    if PHATIC.contains(&stripped.as_str()) {
        return true;
    }
    if words.iter().all(|w| is_timestamp_token(w) || matches!(w.to_ascii_lowercase().as_str(), "am" | "pm" | "utc")) {
        return true;
    }
    let head: Vec<String> =
        words.iter().take(4).map(|w| w.trim_matches(|c: char| matches!(c, '[' | ']' | ':' | '(' | ')')).to_string()).collect();
    let starts_with_time = words.first().is_some_and(|w| is_timestamp_token(w));
    let level = |w: &String| LOG_LEVELS.contains(&w.as_str());
    if head.first().is_some_and(level) || (starts_with_time && head.iter().skip(1).any(level)) {
        return true;
    }
    if words[0].starts_with("HTTP/") {
        return true;
    }
    if HTTP_METHODS.contains(&words[0]) && words.get(1).is_some_and(|w| w.starts_with('/') || is_url(w)) {
        return true;
    }
    let status = |w: &str| w.len() == 3 && w.starts_with(['1', '2', '3', '4', '5']) && w.chars().all(|c| c.is_ascii_digit());
    if words.len() <= 4 && status(words[0]) && words.len() > 1 {
        return true;
    }
    starts_with_time && words.len() >= 2 && words.iter().skip(1).take(2).any(|w| is_timestamp_token(w))
}

/// The value of a fact, in [0, 1]. Deterministic; reads the content, the
/// object, the quote, the kind, the type and the dates.
pub fn value_score(f: &CandidateFact) -> f64 {
    let content = f.content.trim();
    let padded = format!(" {} ", content.to_lowercase());
    let base = match f.fact_type {
        FactType::Decision | FactType::Procedural => 0.55,
        FactType::Fact | FactType::Preference | FactType::Semantic => 0.5,
    };
    let density = (informative_words(content) as f64 / DENSITY_FULL_WORDS).min(1.0) * DENSITY_MAX;

    let tokens: Vec<&str> = content.split_whitespace().collect();
    let noise = is_tool_noise(&f.object) || is_tool_noise(&f.source_quote);
    let mut specificity: f64 = 0.0;
    if tokens.iter().any(|t| is_path(t) || is_url(t)) {
        specificity += 0.15;
    }
    if tokens.iter().any(|t| is_version(t)) {
        specificity += 0.15;
    }
    if tokens.iter().any(|t| is_error_code(t)) {
        specificity += 0.15;
    }
    if has_number(&f.object) || has_number(content) {
        specificity += 0.05;
    }
    if has_proper_name(&format!("x {}", f.object)) {
        specificity += 0.1;
    }
    if f.kind == FactKind::Relationship {
        specificity += 0.1;
    }
    if f.valid_from.is_some() || f.valid_until.is_some() {
        specificity += 0.05;
    }
    // The numbers, names and paths of a log line are the noise's, not specifics.
    let specificity: f64 = if noise { 0.0 } else { specificity.min(SPECIFICITY_MAX) };
    let causal = if CAUSAL_MATCHER.is_match(&padded) { CAUSAL_BONUS } else { 0.0 };

    let mut penalty = 0.0;
    let lower = content.to_lowercase();
    let object_lower = f.object.trim().to_lowercase();
    if GENERIC_TITLES.iter().any(|g| lower.starts_with(g) || object_lower == *g) {
        penalty += GENERIC_TITLE_PENALTY;
    }
    let vague_object = matches!(
        object_lower.as_str(),
        "it" | "that" | "this" | "something" | "stuff" | "things" | "them" | "one" | "everything" | "anything"
    );
    // A meta description ("Alice asked about …") says so right after its
    // subject; the same verb later in a fact ("… and one replied") is content.
    let head_end = padded.match_indices(' ').nth(3).map_or(padded.len(), |(i, _)| i + 1);
    // Some phrase's first occurrence starts in the head: some occurrence does.
    let meta = LOW_QUALITY_MATCHER.find_overlapping_iter(&padded).any(|m| m.start() + 1 < head_end);
    if tokens.len() < 3 || content.is_empty() || vague_object || meta {
        penalty += LOW_QUALITY_PENALTY;
    }
    if noise {
        penalty += NOISE_PENALTY;
    }

    let score = base + density + specificity + causal - penalty;
    if score.is_nan() { 0.0 } else { score.clamp(0.0, 1.0) }
}

/// Core at or above `core_min`, contextual at or above `contextual_min`,
/// else ephemeral.
pub fn value_tier(score: f64, core_min: f64, contextual_min: f64) -> ValueTier {
    if score >= core_min {
        ValueTier::Core
    } else if score >= contextual_min {
        ValueTier::Contextual
    } else {
        ValueTier::Ephemeral
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_phrase_matchers_answer_as_contains_and_find_do() {
        let (mut hits, mut misses, mut late) = (0, 0, 0);
        for text in crate::pipeline::extract::phrase_soup(CAUSAL, 7, 3000) {
            let expected = CAUSAL.iter().any(|c| text.contains(c));
            assert_eq!(CAUSAL_MATCHER.is_match(&text), expected, "{text:?}");
            if expected { hits += 1 } else { misses += 1 }
        }
        for (k, text) in crate::pipeline::extract::phrase_soup(LOW_QUALITY, 11, 3000).into_iter().enumerate() {
            // Every head length, from none to past the end.
            let head_end = k % (text.len() + 2);
            let expected = LOW_QUALITY.iter().any(|p| text.find(p).is_some_and(|at| at + 1 < head_end));
            let found = LOW_QUALITY_MATCHER.find_overlapping_iter(&text).any(|m| m.start() + 1 < head_end);
            assert_eq!(found, expected, "{text:?} {head_end}");
            if expected {
                hits += 1
            } else if LOW_QUALITY.iter().any(|p| text.contains(p)) {
                late += 1
            } else {
                misses += 1
            }
        }
        // Matches, non-matches and matches only past the head are all exercised.
        assert!(hits > 500 && misses > 500 && late > 200, "{hits} {misses} {late}");
    }

    fn fact(content: &str, object: &str, kind: FactKind, fact_type: FactType, quote: &str) -> CandidateFact {
        CandidateFact {
            subject: "Alice".into(),
            predicate: "p".into(),
            object: object.into(),
            kind,
            fact_type,
            content: content.into(),
            confidence: 0.9,
            source_turn: "t1".into(),
            source_quote: quote.into(),
            valid_from: None,
            valid_until: None,
        }
    }

    fn lit(content: &str, object: &str) -> CandidateFact {
        fact(content, object, FactKind::Literal, FactType::Fact, content)
    }

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        let mut sorted = STOPWORDS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, STOPWORDS);
        assert!(is_stopword("Really"));
        assert!(!is_stopword("woodworking"));
    }

    #[test]
    fn named_edge_is_core_and_plain_statement_contextual() {
        let edge = fact("Alice works at Google", "Google", FactKind::Relationship, FactType::Fact, "I work at Google");
        assert_eq!(value_tier(value_score(&edge), 0.7, 0.4), ValueTier::Core);
        let plain = lit("Alice went to a woodworking class with her nephew", "a woodworking class");
        assert_eq!(value_tier(value_score(&plain), 0.7, 0.4), ValueTier::Contextual);
    }

    #[test]
    fn greetings_and_thanks_are_ephemeral() {
        for (content, object) in
            [("Alice said ok thanks", "ok thanks"), ("Alice said hello", "hello"), ("Alice said thank you!", "Thank you!")]
        {
            let s = value_score(&lit(content, object));
            assert_eq!(value_tier(s, 0.7, 0.4), ValueTier::Ephemeral, "{content}: {s}");
        }
    }

    #[test]
    fn tool_output_noise_is_penalised() {
        let clean = lit("Alice noted the deploy finished cleanly", "deploy finished cleanly");
        for noisy in [
            "2024-03-01 12:00:01 INFO worker started",
            "[DEBUG] cache warmed",
            "HTTP/1.1 200 OK",
            "GET /api/v1/users 200",
            "404 Not Found",
            "2024-03-01T12:00:01Z",
            "12:30:45",
        ] {
            let f = fact(&format!("Alice noted {noisy}"), noisy, FactKind::Literal, FactType::Fact, noisy);
            assert!(value_score(&f) < value_score(&clean) - 0.3, "{noisy}");
            assert!(is_tool_noise(noisy), "{noisy}");
        }
        assert!(!is_tool_noise("The deploy finished cleanly"));
        assert!(!is_tool_noise("ERROR E1234 connection refused by db"));
    }

    #[test]
    fn specificity_raises_the_score() {
        let vague = lit("Alice upgraded the database server", "the database server");
        let versioned = lit("Alice upgraded the database server to v15.2.1", "v15.2.1");
        let path = lit("Alice keeps the config at /etc/app/config.toml", "/etc/app/config.toml");
        let error = lit("Alice hit error E4021 during the migration", "E4021");
        let number = lit("Alice has a car budget of $30,000", "$30,000");
        let base = value_score(&vague);
        for f in [&versioned, &path, &error, &number] {
            assert!(value_score(f) > base, "{}", f.content);
        }
        let mut dated = vague.clone();
        dated.valid_until = Some("2020-12-31".into());
        assert!(value_score(&dated) > base);
    }

    #[test]
    fn causal_words_raise_and_density_counts() {
        let flat = lit("Alice chose the blue laptop model", "the blue laptop model");
        let causal = lit("Alice chose the blue laptop model because it is lighter", "the blue laptop model");
        assert!(value_score(&causal) > value_score(&flat));
        let thin = lit("Alice likes it a lot", "it");
        assert!(value_score(&thin) < value_score(&flat));
    }

    #[test]
    fn generic_titles_and_low_quality_are_penalised() {
        let good = lit("Alice plans a trip to Lisbon in June", "a trip to Lisbon");
        let title = lit("Discussion about travel plans", "travel plans");
        let meta = lit("Alice asked about the weather forecast", "the weather forecast");
        assert!(value_score(&title) < value_score(&good) - 0.25);
        assert!(value_score(&meta) < value_score(&good) - 0.15);
        let two_word_subject = lit("Mary Jane talked about the weather forecast", "the weather forecast");
        assert!(value_score(&two_word_subject) < value_score(&good) - 0.15);
        let story = lit("Alice wrote to three landlords and one replied with a viewing date", "three landlords");
        let plain = lit("Alice wrote to three landlords and one answered with a viewing date", "three landlords");
        assert_eq!(value_score(&story), value_score(&plain));
    }

    #[test]
    fn decision_outweighs_plain_fact_and_score_stays_in_unit_range() {
        let d = fact("Alice decided to move to Berlin next year", "move to Berlin", FactKind::Literal, FactType::Decision, "q");
        let f = fact("Alice decided to move to Berlin next year", "move to Berlin", FactKind::Literal, FactType::Fact, "q");
        assert!(value_score(&d) > value_score(&f));
        let rich = fact(
            "Alice keeps /srv/app at v1.2.3 after E1234 in 2019 because Bob said so",
            "/srv/app v1.2.3 E1234 Bob",
            FactKind::Relationship,
            FactType::Decision,
            "q",
        );
        let s = value_score(&rich);
        assert!((0.0..=1.0).contains(&s) && s > 0.9, "{s}");
        let empty = value_score(&lit("", ""));
        assert!((0.0..0.4).contains(&empty), "{empty}");
    }

    #[test]
    fn token_classifiers() {
        for p in ["/etc/app.toml", "~/notes", "./run.sh", "src/main.rs", "C:\\Users\\a", "D:/data/x.csv", "/var/log/syslog"] {
            assert!(is_path(p), "{p}");
        }
        for p in ["and/or", "/", "https://x.org/a", "24/7", "1/2", "C:\\", "C:\\a b", "12:30/x"] {
            assert!(!is_path(p), "{p}");
        }
        for v in ["v1.2.3", "1.2.3", "v2", "2.0.0-beta.1", "v1.2.3,"] {
            assert!(is_version(v), "{v}");
        }
        for v in ["3.5", "2023", "v", "1.2.x", "video"] {
            assert!(!is_version(v), "{v}");
        }
        for e in ["E1234", "ENOENT", "ERR_SSL", "TS2345", "0x80070005"] {
            assert!(is_error_code(e), "{e}");
        }
        for e in ["E", "EPIC", "COVID19", "Error", "A1"] {
            assert!(!is_error_code(e), "{e}");
        }
        assert!(is_url("https://example.org/x"));
        assert!(!is_url("https://"));
        assert_eq!(informative_words("I went to the woodworking class with 3 friends"), 5);
    }

    #[test]
    fn tiers_follow_cutoffs() {
        assert_eq!(value_tier(0.7, 0.7, 0.4), ValueTier::Core);
        assert_eq!(value_tier(0.69, 0.7, 0.4), ValueTier::Contextual);
        assert_eq!(value_tier(0.4, 0.7, 0.4), ValueTier::Contextual);
        assert_eq!(value_tier(0.39, 0.7, 0.4), ValueTier::Ephemeral);
        assert_eq!(value_tier(0.5, 0.3, 0.1), ValueTier::Core);
    }
}
