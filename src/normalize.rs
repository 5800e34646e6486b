//! `normalizeAndHashContent`: storage content, normalised content and the
//! SHA-256 content hash that keys exact dedup and the embedding cache.

use sha2::{Digest, Sha256};

/// The three forms of one fact's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalizedContent {
    /// CRLF → LF, outer whitespace trimmed, casing kept.
    pub storage: String,
    /// Lower-cased, whitespace collapsed, trailing `[.,!?;:]+` stripped, trimmed.
    pub normalized: String,
    /// SHA-256 hex of `normalized`, or of lower-cased `storage` when
    /// `normalized` is empty.
    pub hash: String,
}

pub fn normalize_and_hash_content(raw: &str) -> NormalizedContent {
    let storage = raw.replace("\r\n", "\n").trim().to_string();
    let normalized = normalize_content(&storage);
    let hash = if normalized.is_empty() { sha256_hex(storage.to_lowercase().as_bytes()) } else { sha256_hex(normalized.as_bytes()) };
    NormalizedContent { storage, normalized, hash }
}

/// The normalised form alone (see [`NormalizedContent::normalized`]).
pub fn normalize_content(storage: &str) -> String {
    let lower = storage.to_lowercase();
    // Words joined by single spaces (so no leading whitespace), then the
    // trailing punctuation and any whitespace it leaves behind removed.
    let mut out = String::with_capacity(lower.len());
    for word in lower.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    let keep = out.trim_end_matches(['.', ',', '!', '?', ';', ':']).trim_end().len();
    out.truncate(keep);
    out
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest.iter() {
        out.push(HEX[(b >> 4) as usize] as char);
        out.push(HEX[(b & 0x0f) as usize] as char);
    }
    out
}

/// The distinct word tokens of a text (lower-cased runs of letters and
/// digits), sorted: one lower-cased copy of the text and the tokens' byte
/// ranges in it.
pub struct TokenSet {
    text: String,
    spans: Vec<(usize, usize)>,
}

impl TokenSet {
    pub fn new(s: &str) -> TokenSet {
        let text = s.to_lowercase();
        let mut spans: Vec<(usize, usize)> = Vec::new();
        let mut start = None;
        for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
            match (c.is_alphanumeric(), start) {
                (true, None) => start = Some(i),
                (false, Some(b)) => {
                    spans.push((b, i));
                    start = None;
                }
                _ => {}
            }
        }
        spans.sort_unstable_by(|x, y| text[x.0..x.1].cmp(&text[y.0..y.1]));
        spans.dedup_by(|x, y| text[x.0..x.1] == text[y.0..y.1]);
        TokenSet { text, spans }
    }

    /// How many distinct tokens.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// No token at all.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.spans.iter().map(|(b, e)| &self.text[*b..*e])
    }

    /// How many tokens the two sets share (a merge of two sorted lists).
    pub fn shared(&self, other: &TokenSet) -> usize {
        let (mut a, mut b) = (self.iter().peekable(), other.iter().peekable());
        let mut n = 0;
        while let (Some(x), Some(y)) = (a.peek(), b.peek()) {
            match x.cmp(y) {
                std::cmp::Ordering::Less => {
                    a.next();
                }
                std::cmp::Ordering::Greater => {
                    b.next();
                }
                std::cmp::Ordering::Equal => {
                    n += 1;
                    a.next();
                    b.next();
                }
            }
        }
        n
    }
}

/// Dice coefficient of two token sets, 2·|A ∩ B| / (|A| + |B|), in [0, 1];
/// 0 when both are empty.
pub fn dice(a: &TokenSet, b: &TokenSet) -> f64 {
    let total = a.len() + b.len();
    if total == 0 { 0.0 } else { 2.0 * a.shared(b) as f64 / total as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalised_form_and_hash_match_their_definitions() {
        // The definitions, written plainly: collapse, strip, trim; hex of the digest.
        let reference = |s: &str| {
            let collapsed = s.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ");
            collapsed.trim_end_matches(['.', ',', '!', '?', ';', ':']).trim().to_string()
        };
        for s in ["", " . ", "a ...", "A  b\tC!?", "Zoë , ; ", "x. y.", "  lead", "ends with space ! "] {
            assert_eq!(normalize_content(s), reference(s), "{s:?}");
        }
        let hex: String = Sha256::digest(b"abc").iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(sha256_hex(b"abc"), hex);
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn variants_of_one_fact_share_a_hash() {
        let base = normalize_and_hash_content("Alice works at Google");
        for v in ["Alice works at Google.", "  alice WORKS at google!!  ", "Alice\r\nworks   at\tGoogle?;", "Alice works at Google ..."] {
            assert_eq!(normalize_and_hash_content(v).hash, base.hash, "{v:?}");
        }
        assert_ne!(normalize_and_hash_content("Alice works at Googles").hash, base.hash);
    }

    #[test]
    fn storage_keeps_case_and_inner_whitespace_but_converts_crlf() {
        let n = normalize_and_hash_content("  Line One\r\nLine  Two.  ");
        assert_eq!(n.storage, "Line One\nLine  Two.");
        assert_eq!(n.normalized, "line one line two");
    }

    #[test]
    fn unicode_is_lowercased_not_stripped() {
        let a = normalize_and_hash_content("Zoë lives in Zürich.");
        let b = normalize_and_hash_content("ZOË LIVES IN ZÜRICH");
        assert_eq!(a.hash, b.hash);
        assert_eq!(a.normalized, "zoë lives in zürich");
    }

    #[test]
    fn empty_normalized_hashes_lowercased_storage() {
        let n = normalize_and_hash_content(" ?!. ");
        assert_eq!(n.normalized, "");
        assert_eq!(n.storage, "?!.");
        assert_eq!(n.hash, sha256_hex(b"?!."));
        let e = normalize_and_hash_content("   ");
        assert_eq!(e.hash, sha256_hex(b""));
    }

    #[test]
    fn known_hash() {
        assert_eq!(normalize_and_hash_content("abc").hash, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
