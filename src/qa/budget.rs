//! The QA figures at equal reading cost and with answer-bearing credit
//! (docs/metrics.md, "Retrieval (QA)"): what a reader of a fixed number of
//! words takes from a ranking, whether it holds an evidence turn or the
//! gold answer's words, the ranking mapped to sessions as LongMemEval does,
//! and the recall a random ranking would reach.
//!
//! Words are whitespace-separated runs of the indexed text: the same unit
//! for a fact, a turn and a session, independent of any model's tokenizer.
//!
//! Turns and sessions are named by their positions in the conversation
//! (a turn's index among all its turns, an episode's among its episodes),
//! which name them one to one: comparing positions is comparing ids.

use std::collections::BTreeSet;

/// The reading budgets of `recall_any_at_{B}w`, in words.
pub const BUDGETS: [usize; 4] = [100, 200, 500, 1000];
/// The reading budgets of `answer_in_{B}w`, in words.
pub const ANSWER_BUDGETS: [usize; 3] = [100, 200, 500];
/// The ks of session-level recall.
pub const SESSION_KS: [usize; 2] = [5, 10];
/// The ks of the words read per retrieved set.
pub const READ_KS: [usize; 2] = [5, 10];

/// One indexed document as a reader sees it: its words, the turns it
/// comes from, and where each turn's words lie in it (turns and sessions
/// by their positions in the conversation).
///
/// The words are held in one buffer (`chars`, word `i` ending at
/// `ends[i]`) and their normalised tokens in another, so a document costs
/// a few allocations, not two per word.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Text {
    /// The words, back to back.
    chars: String,
    /// Where each word ends in `chars` (it starts where the previous one ends).
    ends: Vec<u32>,
    /// `(turn, start, end)`: the turn's words are words `start..end`.
    /// Empty when the text does not follow its turns (a formed fact): then
    /// its turns count as read only when the whole text is.
    pub spans: Vec<(u32, usize, usize)>,
    /// The document's turns (every turn it comes from).
    pub turns: Vec<u32>,
    /// The sessions of its turns, in order of first appearance.
    pub sessions: Vec<u32>,
    /// The words' normalised [`tokens`], in order (computed once: answer
    /// containment looks in them for every item).
    pub norm: Vec<Token>,
    /// The tokens' texts, back to back (a [`Token`]'s `start..end`).
    norm_chars: String,
    /// A one-word Bloom filter of `norm`'s hashes: bit `hash >> 58` of each
    /// token is set, so a token whose bit is clear is not in the text
    /// ([`Text::first_word_of`] skips the scan; a short text sets few bits).
    mask: u64,
}

/// One normalised token of a [`Text`]: the word it is in, a hash of its
/// text (compared first; the texts decide) and where its text lies in
/// the text's token buffer ([`Text::token`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub hash: u64,
    pub word: usize,
    start: u32,
    end: u32,
}

/// The hash of a [`Token`]'s text.
pub fn token_hash(t: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(t)
}

/// A token hash's bit in a [`Text`]'s mask (its top six bits: FxHash
/// mixes into the high bits).
fn mask_bit(hash: u64) -> u64 {
    1 << (hash >> 58)
}

/// A position in a [`Text`]'s buffers (documents are far below 4 GiB).
fn at(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl Text {
    /// A document whose text does not follow its turns (a formed fact).
    pub fn whole(text: &str, turns: Vec<u32>, sessions: Vec<u32>) -> Text {
        let mut t = Text { turns, sessions, ..Text::default() };
        t.push_words(text);
        t.normalise();
        t
    }

    /// A document made of `parts` in order, each a turn's text (`Some`) or
    /// text of no turn (a header: `None`); the parts' words joined.
    pub fn of_parts(parts: &[(Option<u32>, &str)], sessions: Vec<u32>) -> Text {
        let mut t = Text { sessions, ..Text::default() };
        t.chars.reserve(parts.iter().map(|p| p.1.len()).sum());
        for (turn, text) in parts {
            let start = t.len();
            t.push_words(text);
            if let Some(id) = turn {
                t.spans.push((*id, start, t.len()));
                t.turns.push(*id);
            }
        }
        t.normalise();
        t
    }

    /// [`Text::of_parts`] of `header` (text of no turn) and then each of
    /// `turns`' turn, when each of `turns` is [`Text::of_parts`] of that
    /// header and one turn's text (a session from its turns' texts): its
    /// words and their tokens are copied, not cut and normalised again
    /// (a word's tokens are its own). `None` when a text of `turns` is
    /// not of that shape.
    pub fn joined(header: &str, turns: &[&Text], sessions: Vec<u32>) -> Option<Text> {
        let mut t = Text { sessions, ..Text::default() };
        t.push_words(header);
        t.normalise();
        let h = t.len();
        for u in turns {
            let [(turn, start, end)] = u.spans[..] else { return None };
            if start != h || end != u.len() || (0..h).any(|i| u.word(i) != t.word(i)) {
                return None;
            }
            let (word0, chars0) = (t.len(), t.chars.len());
            let from = if start == 0 { 0 } else { u.ends[start - 1] as usize };
            t.chars.push_str(&u.chars[from..]);
            t.ends.extend(u.ends[start..].iter().map(|&e| at(e as usize - from + chars0)));
            let first = u.norm.partition_point(|k| k.word < start);
            let (norm_from, norm0) = (u.norm.get(first).map_or(u.norm_chars.len(), |k| k.start as usize), t.norm_chars.len());
            t.norm_chars.push_str(&u.norm_chars[norm_from..]);
            let shift = |x: u32| at(x as usize - norm_from + norm0);
            t.norm.extend(u.norm[first..].iter().map(|k| Token {
                hash: k.hash,
                word: k.word - start + word0,
                start: shift(k.start),
                end: shift(k.end),
            }));
            t.spans.push((turn, word0, t.len()));
            t.turns.push(turn);
        }
        t.index_mask();
        Some(t)
    }

    /// Appends `text`'s whitespace-separated words.
    fn push_words(&mut self, text: &str) {
        for w in text.split_whitespace() {
            self.chars.push_str(w);
            self.ends.push(at(self.chars.len()));
        }
    }

    /// Computes `norm` from the words.
    fn normalise(&mut self) {
        let mut norm = Vec::with_capacity(self.ends.len());
        let mut norm_chars = String::with_capacity(self.chars.len());
        for word in 0..self.len() {
            let w = self.word(word);
            let mut each = |tok: &str| {
                let start = at(norm_chars.len());
                norm_chars.push_str(tok);
                norm.push(Token { hash: token_hash(tok), word, start, end: at(norm_chars.len()) });
            };
            for_each_token(w, &mut each);
        }
        (self.norm, self.norm_chars) = (norm, norm_chars);
        self.index_mask();
    }

    /// Computes `mask` from `norm`.
    fn index_mask(&mut self) {
        self.mask = self.norm.iter().fold(0, |m, t| m | mask_bit(t.hash));
    }

    /// The word of the first token of `norm` whose text is `token` (its
    /// [`token_hash`] `hash`) among the words before `limit`; `None` when
    /// there is none: the tokens scanned in order, unless the mask says
    /// that no token has that hash.
    pub fn first_word_of(&self, token: &str, hash: u64, limit: usize) -> Option<usize> {
        if self.mask & mask_bit(hash) == 0 {
            return None;
        }
        self.norm.iter().take_while(|t| t.word < limit).find(|t| t.hash == hash && self.token(t) == token).map(|t| t.word)
    }

    /// How many words it holds.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Word `i`.
    pub fn word(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.chars[start..self.ends[i] as usize]
    }

    /// The first `n` words, in order.
    pub fn words(&self, n: usize) -> impl Iterator<Item = &str> {
        (0..n.min(self.len())).map(|i| self.word(i))
    }

    /// The text of `token` (one of `norm`).
    pub fn token(&self, token: &Token) -> &str {
        &self.norm_chars[token.start as usize..token.end as usize]
    }
}

/// What a reader of `budget` words takes from `ranked`, in rank order:
/// whole documents while they fit, then the prefix of the next one up to
/// the budget. Returns the turns read (a turn counts when all its words
/// are inside the words read; a document without spans when all of it
/// is) and the words read.
pub fn read<'a>(ranked: &[&'a Text], budget: usize) -> (BTreeSet<u32>, Vec<&'a str>) {
    let taken = taken(ranked, budget);
    let words = taken.iter().flat_map(|(d, n)| d.words(*n)).collect();
    (turns_read(&taken), words)
}

/// The documents a reader of `budget` words takes, in rank order, each
/// with how many of its words (all but maybe the last's).
pub fn taken<'a>(ranked: &[&'a Text], budget: usize) -> Vec<(&'a Text, usize)> {
    let mut out = Vec::new();
    let mut used = 0;
    for doc in ranked {
        let left = budget - used;
        if left == 0 {
            break;
        }
        let n = doc.len().min(left);
        used += n;
        out.push((*doc, n));
    }
    out
}

/// The turns [`taken`] documents hold: all of a whole document's, the
/// turns a cut one holds whole.
fn turns_read(taken: &[(&Text, usize)]) -> BTreeSet<u32> {
    let mut turns = BTreeSet::new();
    for (doc, n) in taken {
        if *n == doc.len() {
            turns.extend(doc.turns.iter().copied());
        } else {
            turns.extend(doc.spans.iter().filter(|(_, _, end)| end <= n).map(|(t, _, _)| *t));
        }
    }
    turns
}

/// [`holds`] over the words [`taken`], with their precomputed tokens.
fn holds_taken(answer: &[String], taken: &[(&Text, usize)]) -> bool {
    answer.iter().all(|a| {
        let h = token_hash(a);
        taken.iter().any(|(d, n)| d.norm.iter().take_while(|t| t.word < *n).any(|t| t.hash == h && d.token(t) == a))
    })
}

/// The normalised tokens of an answer or a text: lower-cased, every
/// character that is not a letter or digit a separator, the articles
/// `a`, `an`, `the` dropped (SQuAD's normalisation).
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(t.to_string()));
    out
}

/// Calls `each` on every normalised token of `text`, in order ([`tokens`]
/// without a string per token; a text already of lower-case ASCII letters
/// and digits is its own one token, read without lower-casing it).
fn for_each_token(text: &str, mut each: impl FnMut(&str)) {
    let article = |w: &str| matches!(w, "a" | "an" | "the");
    if text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
        if !text.is_empty() && !article(text) {
            each(text);
        }
        return;
    }
    for w in text.to_lowercase().split(|c: char| !c.is_alphanumeric()) {
        if !w.is_empty() && !article(w) {
            each(w);
        }
    }
}

/// Whether every token of `answer` (normalised, non-empty) is among the
/// normalised tokens of `words`.
pub fn holds(answer: &[String], words: &[&str]) -> bool {
    let have: BTreeSet<String> = words.iter().flat_map(|w| tokens(w)).collect();
    answer.iter().all(|t| have.contains(t))
}

/// The chance that `k` documents drawn at random (without replacement)
/// from `n`, of which `relevant` hold an evidence turn, include one:
/// `1 − C(n − r, k) / C(n, k)`.
pub fn chance_any(n: usize, relevant: usize, k: usize) -> f64 {
    if relevant == 0 || n == 0 {
        return 0.0;
    }
    let mut miss = 1.0;
    for i in 0..k.min(n) {
        let (bad, all) = ((n - relevant.min(n)) as f64 - i as f64, (n - i) as f64);
        miss *= (bad / all).max(0.0);
    }
    1.0 - miss
}

/// LongMemEval's turn→session conversion: each document's sessions in rank
/// order, each session kept at its first appearance.
pub fn sessions_of(ranked: &[&Text]) -> Vec<u32> {
    let mut seen = BTreeSet::new();
    ranked.iter().flat_map(|d| d.sessions.iter().copied()).filter(|s| seen.insert(*s)).collect()
}

/// The budgeted and answer-bearing figures of one ranking of one item.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Budgeted {
    /// Per [`BUDGETS`]: 1 when the words read hold an evidence turn.
    pub recall_any_w: [f64; 4],
    /// Per [`ANSWER_BUDGETS`]: 1 when the words read hold every answer
    /// token; `None` when the item has no answer with a token.
    pub answer_in_w: [Option<f64>; 3],
    /// Whether the first document in the top 10 holding an evidence turn
    /// holds every answer token; `None` without such a hit or an answer.
    pub hit_holds_answer: Option<f64>,
    /// Per [`SESSION_KS`]: 1 when the first k sessions of the ranking
    /// (converted) include an evidence turn's session.
    pub session_recall_any: [f64; 2],
    /// Per [`super::KS`]: the recall_any@k of a random ranking of the
    /// documents searchable for the item.
    pub chance_recall_any: [f64; 3],
    /// Per [`READ_KS`]: the words of the first k documents retrieved.
    pub words_read: [f64; 2],
    /// Documents searchable for the item that hold an evidence turn.
    pub relevant: usize,
    /// The rank (from 1) of the first document holding an evidence turn
    /// in the whole ranking retrieved; `None` when it holds none.
    pub deep_hit_rank: Option<usize>,
}

/// What [`score_budgeted`] needs of an item.
pub struct Item<'a> {
    /// The evidence turns' positions.
    pub evidence: &'a BTreeSet<u32>,
    /// The positions of the sessions of the evidence turns.
    pub evidence_sessions: &'a BTreeSet<u32>,
    /// The answer's [`tokens`] (empty: no answer credit).
    pub answer: &'a [String],
    /// Documents a search can return for the item, and how many of them
    /// hold an evidence turn.
    pub searchable: usize,
    pub relevant: usize,
}

/// Scores one deep ranking (`ranked`, every document the search returned).
///
/// One pass over the ranking, in rank order: the words of the ranking
/// taken in order are what every budget reads a prefix of ([`taken`]), so
/// each budget's figure follows from where, in that order, an evidence turn
/// is first read whole and each answer token first appears
/// ([`score_budgeted_by_budget`] computes the same budget by budget; a test
/// checks that both agree).
pub fn score_budgeted(ranked: &[&Text], item: &Item<'_>) -> Budgeted {
    let mut out = Budgeted::default();
    let widest = BUDGETS.iter().chain(&ANSWER_BUDGETS).copied().max().unwrap_or(0);
    let answer_widest = ANSWER_BUDGETS.iter().copied().max().unwrap_or(0);
    // Each budget `b` reads an evidence turn when some (words before its
    // document, words of the document up to the turn's end) has
    // `before < b` and `before + end <= b` (the document read whole, or
    // cut after the turn).
    let mut reads: Vec<(usize, usize)> = Vec::new();
    // Per answer token, the position (in the words taken in rank order) of the first word holding it.
    let mut first_at: Vec<Option<usize>> = vec![None; item.answer.len()];
    let answer_hashes: Vec<u64> = item.answer.iter().map(|a| token_hash(a)).collect();
    let mut found = 0;
    let mut before = 0usize;
    let mut first_hit: Option<&Text> = None;
    let mut sessions: Vec<u32> = Vec::new();
    let most_sessions = SESSION_KS.iter().copied().max().unwrap_or(0);
    for (rank, doc) in ranked.iter().enumerate() {
        let holds_evidence = doc.turns.iter().any(|t| item.evidence.contains(t));
        if holds_evidence {
            if out.deep_hit_rank.is_none() {
                out.deep_hit_rank = Some(rank + 1);
            }
            if first_hit.is_none() && rank < super::MAX_K {
                first_hit = Some(doc);
            }
            if before < widest {
                reads.push((before, doc.len()));
                reads.extend(doc.spans.iter().filter(|(t, _, _)| item.evidence.contains(t)).map(|(_, _, end)| (before, *end)));
            }
        }
        if before < answer_widest && found < first_at.len() {
            let limit = answer_widest - before;
            for ((a, h), at) in item.answer.iter().zip(&answer_hashes).zip(first_at.iter_mut()) {
                if at.is_none()
                    && let Some(word) = doc.first_word_of(a, *h, limit)
                {
                    *at = Some(before + word);
                    found += 1;
                }
            }
        }
        if sessions.len() < most_sessions {
            for s in &doc.sessions {
                if sessions.len() < most_sessions && !sessions.contains(s) {
                    sessions.push(*s);
                }
            }
        }
        before = before.saturating_add(doc.len());
        let done_reading = before >= widest;
        if done_reading && out.deep_hit_rank.is_some() && sessions.len() >= most_sessions {
            break;
        }
    }
    for (j, &b) in BUDGETS.iter().enumerate() {
        out.recall_any_w[j] = f64::from(u8::from(reads.iter().any(|&(pre, end)| pre < b && pre + end <= b)));
    }
    if !item.answer.is_empty() {
        for (j, &b) in ANSWER_BUDGETS.iter().enumerate() {
            out.answer_in_w[j] = Some(f64::from(u8::from(first_at.iter().all(|at| at.is_some_and(|p| p < b)))));
        }
        out.hit_holds_answer = first_hit
            .map(|d| f64::from(u8::from(item.answer.iter().zip(&answer_hashes).all(|(a, h)| d.first_word_of(a, *h, d.len()).is_some()))));
    }
    for (j, &k) in SESSION_KS.iter().enumerate() {
        out.session_recall_any[j] = f64::from(u8::from(sessions.iter().take(k).any(|s| item.evidence_sessions.contains(s))));
    }
    for (j, &k) in super::KS.iter().enumerate() {
        out.chance_recall_any[j] = chance_any(item.searchable, item.relevant, k);
    }
    for (j, &k) in READ_KS.iter().enumerate() {
        out.words_read[j] = ranked.iter().take(k).map(|d| d.len()).sum::<usize>() as f64;
    }
    out.relevant = item.relevant;
    out
}

/// [`score_budgeted`] computed budget by budget, each budget's words
/// [`taken`] afresh (the definition; the oracle the one pass is checked against).
pub fn score_budgeted_by_budget(ranked: &[&Text], item: &Item<'_>) -> Budgeted {
    let mut out = Budgeted::default();
    for (j, &b) in BUDGETS.iter().enumerate() {
        let turns = turns_read(&taken(ranked, b));
        out.recall_any_w[j] = f64::from(u8::from(turns.iter().any(|t| item.evidence.contains(t))));
    }
    if !item.answer.is_empty() {
        for (j, &b) in ANSWER_BUDGETS.iter().enumerate() {
            out.answer_in_w[j] = Some(f64::from(u8::from(holds_taken(item.answer, &taken(ranked, b)))));
        }
        let first_hit = ranked.iter().take(super::MAX_K).find(|d| d.turns.iter().any(|t| item.evidence.contains(t)));
        out.hit_holds_answer = first_hit.map(|d| f64::from(u8::from(holds_taken(item.answer, &[(*d, d.len())]))));
    }
    let sessions = sessions_of(ranked);
    for (j, &k) in SESSION_KS.iter().enumerate() {
        out.session_recall_any[j] = f64::from(u8::from(sessions.iter().take(k).any(|s| item.evidence_sessions.contains(s))));
    }
    for (j, &k) in super::KS.iter().enumerate() {
        out.chance_recall_any[j] = chance_any(item.searchable, item.relevant, k);
    }
    for (j, &k) in READ_KS.iter().enumerate() {
        out.words_read[j] = ranked.iter().take(k).map(|d| d.len()).sum::<usize>() as f64;
    }
    out.relevant = item.relevant;
    out.deep_hit_rank = ranked.iter().position(|d| d.turns.iter().any(|t| item.evidence.contains(t))).map(|i| i + 1);
    out
}

/// Why a source misses at k = 5: over its items with no hit in the first
/// five, `(misses, share with no searchable document from any evidence
/// turn, median rank of the first evidence document where one was
/// retrieved)`.
pub fn attribution(rows: &[(&Budgeted, f64)]) -> (usize, Option<f64>, Option<f64>) {
    let misses: Vec<&Budgeted> = rows.iter().filter(|(_, r5)| *r5 == 0.0).map(|(b, _)| *b).collect();
    if misses.is_empty() {
        return (0, None, None);
    }
    let none = misses.iter().filter(|b| b.relevant == 0).count() as f64 / misses.len() as f64;
    let mut ranks: Vec<usize> = misses.iter().filter_map(|b| b.deep_hit_rank).collect();
    ranks.sort_unstable();
    let median = match ranks.len() {
        0 => None,
        n if n % 2 == 1 => Some(ranks[n / 2] as f64),
        n => Some((ranks[n / 2 - 1] + ranks[n / 2]) as f64 / 2.0),
    };
    (misses.len(), Some(none), median)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session's text joined from its turns' texts is the one read from
    /// its parts: the same words, tokens and spans; a turn's text of
    /// another shape (another header, two turns, none) is refused.
    #[test]
    fn a_text_joined_from_its_turns_texts_is_the_one_of_its_parts() {
        let lines =
            ["Alice: I moved to Porto. Really!", "Bob:   ΟΔΟΣ\tnaïve-ÉCOLE don’t 42x", "Alice: 🎉 — ’", "Bob: snake_case? İstanbul"];
        for header in ["[8 May 2023]", ""] {
            let turn = |i: usize| {
                let mut parts: Vec<(Option<u32>, &str)> = if header.is_empty() { vec![] } else { vec![(None, header)] };
                parts.push((Some(10 + i as u32), lines[i]));
                Text::of_parts(&parts, vec![3])
            };
            let turns: Vec<Text> = (0..lines.len()).map(turn).collect();
            let mut parts: Vec<(Option<u32>, &str)> = if header.is_empty() { vec![] } else { vec![(None, header)] };
            parts.extend(lines.iter().enumerate().map(|(i, l)| (Some(10 + i as u32), *l)));
            let want = Text::of_parts(&parts, vec![3]);
            assert_eq!(Text::joined(header, &turns.iter().collect::<Vec<_>>(), vec![3]), Some(want));
            assert_eq!(Text::joined(header, &[], vec![3]), Some(Text::of_parts(&parts[..usize::from(!header.is_empty())], vec![3])));
        }
        let dated = Text::of_parts(&[(None, "[8 May 2023]"), (Some(1), "Alice: hi")], vec![0]);
        assert_eq!(Text::joined("[9 May 2023]", &[&dated], vec![0]), None);
        assert_eq!(Text::joined("", &[&dated], vec![0]), None);
        let two = Text::of_parts(&[(Some(1), "Alice: hi"), (Some(2), "Bob: yo")], vec![0]);
        assert_eq!(Text::joined("", &[&two], vec![0]), None);
        assert_eq!(Text::joined("", &[&Text::whole("Alice: hi", vec![1], vec![0])], vec![0]), None);
    }

    fn ev(v: &[u32]) -> BTreeSet<u32> {
        v.iter().copied().collect()
    }

    /// A session of three turns, 2 + 5 + 3 words after a 2-word header.
    fn session() -> Text {
        Text::of_parts(
            &[(None, "[2023-05-08] session_1"), (Some(1), "Ann: hello"), (Some(2), "Bo: I moved to Porto"), (Some(3), "Ann: since May?")],
            vec![1],
        )
    }

    #[test]
    fn a_budget_boundary_in_the_middle_of_a_document_cuts_it_by_prefix() {
        let s = session();
        assert_eq!(s.len(), 12);
        assert_eq!(s.spans, vec![(1, 2, 4), (2, 4, 9), (3, 9, 12)]);
        // 7 words: the header, t1 and 3 of t2's 5 words: t2 is not read.
        let (turns, words) = read(&[&s], 7);
        assert_eq!(turns, [1].into_iter().collect());
        assert_eq!(words, ["[2023-05-08]", "session_1", "Ann:", "hello", "Bo:", "I", "moved"]);
        // 9 words: t2 whole; 8: not yet.
        assert_eq!(read(&[&s], 9).0, [1, 2].into_iter().collect());
        assert_eq!(read(&[&s], 8).0, [1].into_iter().collect());
        // A fact (no spans) cut by the budget credits none of its turns.
        let fact = Text::whole("Bo moved to Porto in May", vec![2], vec![1]);
        let (turns, words) = read(&[&fact], 5);
        assert!(turns.is_empty());
        assert_eq!(words.len(), 5);
        // Whole documents first, then the next one's prefix.
        let (turns, words) = read(&[&fact, &s], 10);
        assert_eq!(turns, [1, 2].into_iter().collect(), "the fact whole (t2), then 4 words of the session: its header and t1");
        assert_eq!(words.len(), 10);
    }

    #[test]
    fn budgeted_recall_and_answer_containment_on_a_hand_computed_ranking() {
        // Ranked: a 60-word distractor twice, the session (12 words), a fact (6).
        let filler = Text::whole(&vec!["blah"; 60].join(" "), vec![9], vec![2]);
        let s = session();
        let fact = Text::whole("Bo moved to Porto in May", vec![2], vec![1]);
        let ranked = [&filler, &filler, &s, &fact];
        let evidence = ev(&[2]);
        let answer = tokens("Porto");
        let item = Item { evidence: &evidence, evidence_sessions: &ev(&[1]), answer: &answer, searchable: 20, relevant: 2 };
        let b = score_budgeted(&ranked, &item);
        // 100 words: 60 + 40 of the second filler; 200: both fillers (120), the session (132), the fact (138).
        assert_eq!(b.recall_any_w, [0.0, 1.0, 1.0, 1.0]);
        assert_eq!(b.answer_in_w, [Some(0.0), Some(1.0), Some(1.0)]);
        // The first hit in the top 10 is the session: it holds "porto".
        assert_eq!(b.hit_holds_answer, Some(1.0));
        // Sessions in rank order: session_2, session_1.
        assert_eq!(b.session_recall_any, [1.0, 1.0]);
        assert_eq!(sessions_of(&ranked), [2, 1]);
        // Chance: 1 − (18/20) at k = 1; 1 − (18·17·16·15·14)/(20·19·18·17·16) at k = 5.
        assert!((b.chance_recall_any[0] - 0.1).abs() < 1e-12);
        assert!((b.chance_recall_any[1] - (1.0 - (15.0 * 14.0) / (20.0 * 19.0))).abs() < 1e-12, "{:?}", b.chance_recall_any);
        assert_eq!(b.words_read, [138.0, 138.0]);
        assert_eq!((b.relevant, b.deep_hit_rank), (2, Some(3)));
        // No answer: no answer credit.
        let none = Item { answer: &[], ..item };
        let b = score_budgeted(&ranked, &none);
        assert_eq!((b.answer_in_w, b.hit_holds_answer), ([None; 3], None));
    }

    #[test]
    fn the_one_pass_agrees_with_the_budget_by_budget_definition() {
        // Random rankings of facts (no spans) and sessions (spans, a header)
        // of random lengths around the budgets' boundaries, random evidence
        // and answers: every figure of the one pass equals the definition's.
        let mut rng = crate::qa::interval::SplitMix64::new(26);
        let vocab = ["porto", "may", "7", "ann", "bo", "moved", "cat", "2023", "blah", "sunday"];
        let word = |rng: &mut crate::qa::interval::SplitMix64| vocab[rng.below(vocab.len() as u64) as usize].to_string();
        for case in 0..400 {
            let mut docs = Vec::new();
            for d in 0..(1 + rng.below(40)) {
                let session = rng.below(14) as u32;
                if rng.below(2) == 0 {
                    let n = rng.below(if case % 3 == 0 { 300 } else { 40 }) as usize;
                    let text: Vec<String> = (0..n).map(|_| word(&mut rng)).collect();
                    let turns = (0..1 + rng.below(3)).map(|_| rng.below(60) as u32).collect();
                    docs.push(Text::whole(&text.join(" "), turns, vec![session]));
                } else {
                    let header = if rng.below(2) == 0 { "[8 May 2023]".to_string() } else { String::new() };
                    let turns: Vec<(u32, String)> = (0..1 + rng.below(8))
                        .map(|i| {
                            let n = rng.below(60) as usize;
                            (((d * 7 + i) % 60) as u32, (0..n).map(|_| word(&mut rng)).collect::<Vec<_>>().join(" "))
                        })
                        .collect();
                    let mut parts: Vec<(Option<u32>, &str)> = vec![(None, header.as_str())];
                    parts.extend(turns.iter().map(|(t, x)| (Some(*t), x.as_str())));
                    docs.push(Text::of_parts(&parts, vec![session]));
                }
            }
            let ranked: Vec<&Text> = docs.iter().collect();
            let evidence: BTreeSet<u32> = (0..1 + rng.below(3)).map(|_| rng.below(60) as u32).collect();
            let sessions: BTreeSet<u32> = (0..1 + rng.below(2)).map(|_| rng.below(14) as u32).collect();
            let answer: Vec<String> = (0..rng.below(4)).map(|_| word(&mut rng)).collect();
            let item = Item { evidence: &evidence, evidence_sessions: &sessions, answer: &answer, searchable: 50, relevant: 3 };
            assert_eq!(score_budgeted(&ranked, &item), score_budgeted_by_budget(&ranked, &item), "case {case}");
        }
    }

    /// A token's first word found through the mask is the first found by
    /// scanning all the tokens in order, under every limit: on random texts
    /// (repeated words, articles, capitals, punctuation), and where another
    /// text shares its hash and comes first (the scan goes on past it).
    #[test]
    fn a_tokens_first_word_looked_up_is_the_one_a_scan_finds() {
        let scan = |d: &Text, a: &str, limit: usize| {
            let h = token_hash(a);
            d.norm.iter().take_while(|t| t.word < limit).find(|t| t.hash == h && d.token(t) == a).map(|t| t.word)
        };
        let mut rng = crate::qa::interval::SplitMix64::new(28);
        let vocab = ["Porto,", "may", "MAY", "the", "a-b", "7", "bo's", "", "naïve", "x"];
        for _ in 0..300 {
            let n = rng.below(50) as usize;
            let words: Vec<&str> = (0..n).map(|_| vocab[rng.below(vocab.len() as u64) as usize]).collect();
            let d = Text::whole(&words.join(" "), vec![1], vec![0]);
            for a in ["porto", "may", "a", "b", "7", "bo", "s", "naïve", "x", "absent"] {
                for limit in 0..=n + 1 {
                    assert_eq!(d.first_word_of(a, token_hash(a), limit), scan(&d, a, limit), "{words:?} {a} {limit}");
                }
            }
        }
        // "cat" made to share "dog"'s hash, and to come first.
        let mut d = Text::whole("cat bird dog cat dog", vec![1], vec![0]);
        let dog = token_hash("dog");
        d.norm[0].hash = dog;
        d.norm[3].hash = dog;
        d.index_mask();
        assert_eq!(d.first_word_of("dog", dog, 5), Some(2));
        assert_eq!(d.first_word_of("dog", dog, 2), None);
        assert_eq!(d.first_word_of("cat", dog, 5), Some(0));
    }

    #[test]
    fn attribution_splits_the_misses_at_five() {
        let b = |relevant: usize, rank: Option<usize>| Budgeted { relevant, deep_hit_rank: rank, ..Budgeted::default() };
        let (hit, none1, none2, r8, r40, r12) = (b(1, Some(1)), b(0, None), b(0, None), b(2, Some(8)), b(1, Some(40)), b(1, Some(12)));
        let rows = [(&hit, 1.0), (&none1, 0.0), (&none2, 0.0), (&r8, 0.0), (&r40, 0.0), (&r12, 0.0)];
        // Five misses, two with no evidence document; ranks 8, 12, 40.
        assert_eq!(attribution(&rows), (5, Some(0.4), Some(12.0)));
        assert_eq!(attribution(&rows[..1]), (0, None, None));
    }

    #[test]
    fn answer_tokens_are_normalised_as_squad_does() {
        assert_eq!(tokens("The 7 May, 2023!"), ["7", "may", "2023"]);
        assert!(holds(&tokens("an apple pie"), &["Pie:", "APPLE."]));
        assert!(!holds(&tokens("apple pie"), &["apple"]));
        assert_eq!(chance_any(10, 0, 5), 0.0);
        assert_eq!(chance_any(3, 1, 5), 1.0, "k beyond the corpus reads it all");
    }
}
