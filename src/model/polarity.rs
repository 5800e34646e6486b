//! What the polarity rule needs of a text, computed once per fact and kept
//! with it ([`super::fact::KeyCache`]): the antonym list it was computed
//! against ([`Antonyms`]) and the text's words, negation and antonym bits
//! ([`PolarityKeys`]). The rule itself is the judge's.

use std::sync::{Arc, Mutex};

/// A config's antonym pairs, lower-cased and interned: each distinct list
/// gets one id for the life of the process, so a fact's [`PolarityKeys`],
/// computed once and cached with the fact, are reused only for the list
/// they were computed against.
#[derive(Debug, PartialEq, Eq)]
pub struct Antonyms {
    pub(crate) id: usize,
    pub(crate) pairs: Vec<[String; 2]>,
}

impl Antonyms {
    /// The list's id for the life of the process.
    pub fn id(&self) -> usize {
        self.id
    }

    /// The pairs, lower-cased.
    pub fn pairs(&self) -> &[[String; 2]] {
        &self.pairs
    }

    /// The interned list equal to `pairs` (lower-cased).
    pub fn interned(pairs: &[[String; 2]]) -> Arc<Antonyms> {
        static LISTS: Mutex<Vec<Arc<Antonyms>>> = Mutex::new(Vec::new());
        let pairs: Vec<[String; 2]> = pairs.iter().map(|[a, b]| [a.to_lowercase(), b.to_lowercase()]).collect();
        let mut lists = LISTS.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = lists.iter().find(|l| l.pairs == pairs) {
            return l.clone();
        }
        let l = Arc::new(Antonyms { id: lists.len(), pairs });
        lists.push(l.clone());
        l
    }
}

/// What the polarity rule needs of one text, computed once per fact (cached
/// with it, see `FactRec::polarity` in the pipeline's state) and once per candidate:
/// its distinct words, sorted; whether a negation is among them; and which
/// words of the antonym list it holds (bit `k` of `x` / `y`: the first /
/// second word of pair `k`; pairs past the 64th in `more`, 64 per block).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolarityKeys {
    pub(crate) list: usize,
    pub(crate) words: Vec<Box<str>>,
    pub(crate) negated: bool,
    pub(crate) x: u64,
    pub(crate) y: u64,
    pub(crate) more: Vec<(u64, u64)>,
}

impl PolarityKeys {
    pub fn of(text: &str, antonyms: &Antonyms) -> PolarityKeys {
        let lower = text.to_lowercase();
        let mut words: Vec<Box<str>> = words(&lower).into_iter().map(Box::from).collect();
        words.sort_unstable();
        words.dedup();
        let has = |w: &str| words.binary_search_by(|x| (**x).cmp(w)).is_ok();
        let negated = NEGATIONS.iter().any(|n| has(n));
        let mut blocks = vec![(0u64, 0u64); antonyms.pairs.len().div_ceil(64).max(1)];
        for (k, [a, b]) in antonyms.pairs.iter().enumerate() {
            blocks[k / 64].0 |= u64::from(has(a)) << (k % 64);
            blocks[k / 64].1 |= u64::from(has(b)) << (k % 64);
        }
        let (x, y) = blocks[0];
        PolarityKeys { list: antonyms.id, words, negated, x, y, more: blocks.split_off(1) }
    }

    /// Whether these keys were computed against `antonyms`.
    pub fn is_for(&self, antonyms: &Antonyms) -> bool {
        self.list == antonyms.id
    }
}

pub const NEGATIONS: &[&str] = &[
    "not", "no", "never", "don't", "doesn't", "didn't", "isn't", "aren't", "wasn't", "won't", "can't", "cannot", "dont", "doesnt", "isnt",
    "longer",
];

/// The words of an already lower-cased text: runs of letters, digits and `'`.
pub fn words(lower: &str) -> Vec<&str> {
    lower.split(|c: char| !(c.is_alphanumeric() || c == '\'')).filter(|w| !w.is_empty()).collect()
}
