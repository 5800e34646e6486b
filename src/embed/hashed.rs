//! A deterministic built-in embedder: character trigrams and words of the
//! normalised text, hashed (FNV-1a) into a fixed number of signed buckets,
//! L2-normalised. Zero set-up, no model; similar strings get similar vectors,
//! but it knows nothing of meaning ("car" and "vehicle" are unrelated).

use super::{Embedder, l2_normalize};
use crate::error::Result;
use crate::normalize::normalize_content;

pub struct HashedEmbedder {
    dims: usize,
}

impl HashedEmbedder {
    pub fn new(dims: usize) -> Self {
        HashedEmbedder { dims: dims.max(1) }
    }

    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let norm = normalize_content(text);
        let mut v = vec![0f32; self.dims];
        // Each window of three characters, as its UTF-8 bytes (no copy).
        let padded = format!(" {norm} ");
        let starts: Vec<usize> = padded.char_indices().map(|(i, _)| i).chain(std::iter::once(padded.len())).collect();
        for w in starts.windows(4) {
            self.add(&mut v, b"c", &padded.as_bytes()[w[0]..w[3]], 1.0);
        }
        for word in norm.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
            self.add(&mut v, b"w", word.as_bytes(), 2.0);
        }
        l2_normalize(&mut v);
        v
    }

    fn add(&self, v: &mut [f32], salt: &[u8], bytes: &[u8], weight: f32) {
        let h = fnv1a(salt, bytes);
        let idx = (h % self.dims as u64) as usize;
        let sign = if (h >> 63) & 1 == 1 { -1.0 } else { 1.0 };
        v[idx] += sign * weight;
    }
}

fn fnv1a(salt: &[u8], bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in salt.iter().chain(bytes) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Embedder for HashedEmbedder {
    fn id(&self) -> String {
        format!("hashed:char3+word:{}", self.dims)
    }
    fn dims(&self) -> usize {
        self.dims
    }
    fn embed(&self, texts: &[&str], _source: &str) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::cosine;

    #[test]
    fn deterministic_unit_and_similarity_ordered() {
        let e = HashedEmbedder::new(256);
        let a = e.embed_one("Alice works at Google");
        assert_eq!(a, e.embed_one("alice works at google."));
        let n: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum();
        assert!((n - 1.0).abs() < 1e-5);
        let close = cosine(&a, &e.embed_one("Alice works at Google Inc"));
        let far = cosine(&a, &e.embed_one("Bob hates sushi on Mondays"));
        assert!(close > far, "{close} vs {far}");
        assert!(e.embed_one("").iter().all(|x| *x == 0.0), "empty text embeds to zero");
    }

    /// The trigrams as first written (a `String` collected per window): the
    /// vectors must not change, or every recorded cache keyed by this
    /// embedder's id would silently disagree with a fresh run.
    fn embed_as_first_written(e: &HashedEmbedder, text: &str) -> Vec<f32> {
        let norm = normalize_content(text);
        let mut v = vec![0f32; e.dims];
        let padded: Vec<char> = format!(" {norm} ").chars().collect();
        for w in padded.windows(3) {
            let s: String = w.iter().collect();
            e.add(&mut v, b"c", s.as_bytes(), 1.0);
        }
        for word in norm.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
            e.add(&mut v, b"w", word.as_bytes(), 2.0);
        }
        l2_normalize(&mut v);
        v
    }

    #[test]
    fn trigrams_are_hashed_as_first_written() {
        let e = HashedEmbedder::new(256);
        for t in ["", "a", "ab", "Alice works at Google.", "Café — naïve 🎉 ok’s", "  spaced   out  ", "x".repeat(500).as_str()] {
            assert_eq!(e.embed_one(t), embed_as_first_written(&e, t), "{t:?}");
        }
    }
}
