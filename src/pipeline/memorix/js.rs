//! JavaScript string semantics the Memorix rules depend on: lengths and
//! slices count UTF-16 code units, and the patterns' `\b`, `\w` and `\d`
//! are ASCII-only. The patterns in this module's siblings are written with
//! [`B`] and explicit ASCII classes so that they match what Memorix's do.

/// JavaScript's `\b`: a boundary between an ASCII word character and anything else.
pub const B: &str = r"(?-u:\b)";

/// `s.length` in JavaScript.
pub fn len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// `s.slice(0, n)` in JavaScript, never splitting a character (a character
/// that would be cut in half is left out).
pub fn slice(s: &str, n: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > n {
            return &s[..i];
        }
    }
    s
}

/// A pattern written in JavaScript's vocabulary: `\b` becomes [`B`], `\w`
/// `[0-9A-Za-z_]` and `\d` `[0-9]` (outside and inside classes).
pub fn pattern(js: &str) -> String {
    let mut out = String::with_capacity(js.len() + 16);
    let mut chars = js.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('b') if !in_class => out.push_str(B),
                Some('w') if in_class => out.push_str("0-9A-Za-z_"),
                Some('w') => out.push_str("[0-9A-Za-z_]"),
                Some('d') if in_class => out.push_str("0-9"),
                Some('d') => out.push_str("[0-9]"),
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            },
            '[' if !in_class => {
                in_class = true;
                out.push(c);
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Compiles a JavaScript pattern (with `(?i)` when `ignore_case`). Only
/// for this module's constant patterns, each of which a test compiles.
#[allow(clippy::expect_used)]
pub fn regex(js: &str, ignore_case: bool) -> regex::Regex {
    let src = if ignore_case { format!("(?i){}", pattern(js)) } else { pattern(js) };
    regex::Regex::new(&src).expect("a constant Memorix pattern compiles")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_slices_count_utf16_units() {
        assert_eq!(len("abc"), 3);
        assert_eq!(len("é"), 1);
        assert_eq!(len("😀"), 2);
        assert_eq!(slice("abcdef", 3), "abc");
        assert_eq!(slice("ab😀c", 3), "ab");
        assert_eq!(slice("ab", 10), "ab");
    }

    #[test]
    fn word_boundaries_and_classes_are_ascii() {
        assert_eq!(pattern(r"\bport\s*[:=]?\s*\d{2,5}\b"), format!(r"{B}port\s*[:=]?\s*[0-9]{{2,5}}{B}"));
        assert_eq!(pattern(r"[\w./-]+"), "[0-9A-Za-z_./-]+");
        // JavaScript's \b sees é as a non-word character; so does this.
        assert!(regex(r"\bfix\b", true).is_match("éfix"));
        assert!(!regex(r"\bfix\b", true).is_match("afix"));
        assert!(regex(r"\bfix\b", true).is_match("a fix."));
    }
}
