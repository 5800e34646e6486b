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

/// FNV-1a's offset basis and prime.
const FNV_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

impl HashedEmbedder {
    pub fn new(dims: usize) -> Self {
        HashedEmbedder { dims: dims.max(1) }
    }

    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let norm = normalize_content(text);
        let mut v = vec![0f32; self.dims];
        // Each window of three characters of " {norm} ", as its UTF-8 bytes (no copy).
        let padded = format!(" {norm} ");
        let bytes = padded.as_bytes();
        let mut starts = padded.char_indices().map(|(i, _)| i).chain(std::iter::once(padded.len()));
        let mut w = [0usize; 4];
        for slot in w.iter_mut().take(3) {
            *slot = starts.next().unwrap_or(padded.len());
        }
        for end in starts {
            w[3] = end;
            self.add(&mut v, fnv1a_from(SALT_CHAR, &bytes[w[0]..w[3]]), 1.0);
            w.copy_within(1.., 0);
        }
        for word in norm.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
            self.add(&mut v, fnv1a_from(SALT_WORD, word.as_bytes()), 2.0);
        }
        l2_normalize(&mut v);
        v
    }

    /// Adds `weight`, signed by the hash's top bit, to the bucket `h mod dims`.
    fn add(&self, v: &mut [f32], h: u64, weight: f32) {
        let idx = if self.dims.is_power_of_two() { (h & (self.dims as u64 - 1)) as usize } else { (h % self.dims as u64) as usize };
        let sign = if (h >> 63) & 1 == 1 { -1.0 } else { 1.0 };
        v[idx] += sign * weight;
    }
}

/// FNV-1a's state after the salt of a character trigram (`c`) and of a word (`w`).
const SALT_CHAR: u64 = fnv1a_from(FNV_BASIS, b"c");
const SALT_WORD: u64 = fnv1a_from(FNV_BASIS, b"w");

/// FNV-1a of `bytes`, continued from `state`.
const fn fnv1a_from(mut state: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        state ^= bytes[i] as u64;
        state = state.wrapping_mul(FNV_PRIME);
        i += 1;
    }
    state
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
        fn fnv1a(salt: &[u8], bytes: &[u8]) -> u64 {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for b in salt.iter().chain(bytes) {
                h ^= u64::from(*b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
            h
        }
        struct First(usize);
        impl First {
            fn add(&self, v: &mut [f32], salt: &[u8], bytes: &[u8], weight: f32) {
                let h = fnv1a(salt, bytes);
                let idx = (h % self.0 as u64) as usize;
                let sign = if (h >> 63) & 1 == 1 { -1.0 } else { 1.0 };
                v[idx] += sign * weight;
            }
        }
        let e = First(e.dims);
        let norm = normalize_content(text);
        let mut v = vec![0f32; e.0];
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
        for dims in [256, 384, 100, 7, 1] {
            let e = HashedEmbedder::new(dims);
            for t in ["", "a", "ab", "abc", "Alice works at Google.", "Café — naïve 🎉 ok’s", "  spaced   out  ", "x".repeat(500).as_str()]
            {
                let (got, want) = (e.embed_one(t), embed_as_first_written(&e, t));
                assert_eq!(
                    got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    want.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    "{dims} {t:?}"
                );
            }
        }
    }
}
