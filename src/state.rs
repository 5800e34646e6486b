//! A conversation's memory as the pipeline sees it between episodes: entities
//! and facts with their vectors. It mirrors the store and changes only from
//! what a write actually applied, so shadow runs leave it untouched.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::embed::cosine;
pub use crate::model::fact::{EntityRec, FactKeys, FactRec, KeyCache};
use crate::model::polarity::{Antonyms, PolarityKeys};
use crate::model::proposition::Reading;

pub mod trace;

/// Readings of facts' contents ([`Reading::of_fact`]) kept across the
/// formations of one conversation in a sweep: every grid point reads the
/// same candidates' contents, and a reading depends on nothing a grid
/// varies but the antonym list, whose id is part of the key (as are the
/// subject, predicate, slot object and content, compared in full on a hit).
/// A speaker's text is also kept by the text as spoken ([`read_speaker`]),
/// so that finding it again does not put it in the third person again.
#[derive(Debug, Default)]
pub struct ReadingMemo(Mutex<HashMap<u64, Vec<(ReadKey, Reading)>>>, Mutex<HashMap<u64, Vec<(SpeakerKey, Reading)>>>);

/// What a speaker's reading is computed from: the speaker and the text as spoken.
type SpeakerKey = (String, String);

/// What a reading is computed from: the antonym list's id, the subject,
/// the predicate, the slot object and the content.
type ReadKey = (usize, String, String, Option<String>, String);

thread_local! {
    static READINGS: std::cell::RefCell<Option<Arc<ReadingMemo>>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with `memo` installed on this thread for [`read_fact`] (the
/// memo installed before is put back afterwards, also when `f` unwinds).
pub fn with_readings<T>(memo: Arc<ReadingMemo>, f: impl FnOnce() -> T) -> T {
    struct PutBack(Option<Option<Arc<ReadingMemo>>>);
    impl Drop for PutBack {
        fn drop(&mut self) {
            if let Some(previous) = self.0.take() {
                READINGS.with(|r| *r.borrow_mut() = previous);
            }
        }
    }
    let _put_back = PutBack(Some(READINGS.with(|r| r.borrow_mut().replace(memo))));
    f()
}

/// Until dropped, a memo of readings installed on this thread by
/// [`readings_for_now`] (none if one was installed already).
pub struct ReadingScope(Option<Option<Arc<ReadingMemo>>>);

impl Drop for ReadingScope {
    fn drop(&mut self) {
        if let Some(previous) = self.0.take() {
            READINGS.with(|r| *r.borrow_mut() = previous);
        }
    }
}

/// Installs a new [`ReadingMemo`] on this thread for [`read_fact`] unless
/// one is installed (a sweep's), until the returned scope is dropped: an
/// episode's stages then read each content once.
pub fn readings_for_now() -> ReadingScope {
    install_unless_installed(|| Arc::new(ReadingMemo::default()))
}

/// Installs the memo `memo` makes on this thread until the returned scope
/// is dropped, unless one is installed already (then nothing is made).
fn install_unless_installed(memo: impl FnOnce() -> Arc<ReadingMemo>) -> ReadingScope {
    READINGS.with(|r| {
        let mut r = r.borrow_mut();
        if r.is_some() { ReadingScope(None) } else { ReadingScope(Some(r.replace(memo()))) }
    })
}

impl ReadingMemo {
    /// A key's hash: what the memo files it under.
    fn hash(subject: &str, predicate: &str, object: Option<&str>, content: &str, antonyms: &Antonyms) -> u64 {
        let mut h = hash64(subject) ^ antonyms.id() as u64;
        for part in [predicate, object.unwrap_or("\u{0}"), content] {
            h = h.rotate_left(17) ^ hash64(part);
        }
        h
    }

    /// Whether a stored key is this one.
    fn is(k: &ReadKey, subject: &str, predicate: &str, object: Option<&str>, content: &str, antonyms: &Antonyms) -> bool {
        k.0 == antonyms.id() && k.1 == subject && k.2 == predicate && k.3.as_deref() == object && k.4 == content
    }

    fn get(&self, subject: &str, predicate: &str, object: Option<&str>, content: &str, antonyms: &Antonyms) -> Option<Reading> {
        let h = ReadingMemo::hash(subject, predicate, object, content, antonyms);
        let memo = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let list = memo.get(&h)?;
        list.iter().find(|(k, _)| ReadingMemo::is(k, subject, predicate, object, content, antonyms)).map(|(_, r)| r.clone())
    }

    fn put(&self, subject: &str, predicate: &str, object: Option<&str>, content: &str, antonyms: &Antonyms, reading: &Reading) {
        let h = ReadingMemo::hash(subject, predicate, object, content, antonyms);
        let mut memo = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let list = memo.entry(h).or_default();
        if !list.iter().any(|(k, _)| ReadingMemo::is(k, subject, predicate, object, content, antonyms)) {
            let key = (antonyms.id(), subject.to_string(), predicate.to_string(), object.map(str::to_string), content.to_string());
            list.push((key, reading.clone()));
        }
    }

    /// A speaker key's hash: what the memo files it under.
    fn speaker_hash(speaker: &str, text: &str) -> u64 {
        hash64(speaker).rotate_left(17) ^ hash64(text)
    }

    fn get_speaker(&self, speaker: &str, text: &str) -> Option<Reading> {
        let memo = self.1.lock().unwrap_or_else(|p| p.into_inner());
        let list = memo.get(&ReadingMemo::speaker_hash(speaker, text))?;
        list.iter().find(|(k, _)| k.0 == speaker && k.1 == text).map(|(_, r)| r.clone())
    }

    fn put_speaker(&self, speaker: &str, text: &str, reading: &Reading) {
        let mut memo = self.1.lock().unwrap_or_else(|p| p.into_inner());
        let list = memo.entry(ReadingMemo::speaker_hash(speaker, text)).or_default();
        if !list.iter().any(|(k, _)| k.0 == speaker && k.1 == text) {
            list.push(((speaker.to_string(), text.to_string()), reading.clone()));
        }
    }
}

/// [`Reading::of_fact`] against `antonyms`, from the memo installed on this
/// thread ([`with_readings`]) when there is one.
pub fn read_fact(subject: &str, predicate: &str, object: Option<&str>, content: &str, antonyms: &Antonyms) -> Reading {
    let Some(memo) = READINGS.with(|r| r.borrow().clone()) else {
        return Reading::of_fact(subject, predicate, object, content, antonyms.pairs());
    };
    if let Some(r) = memo.get(subject, predicate, object, content, antonyms) {
        return r;
    }
    let r = Reading::of_fact(subject, predicate, object, content, antonyms.pairs());
    memo.put(subject, predicate, object, content, antonyms, &r);
    r
}

/// [`Reading::of_speaker`] with no antonym pairs (as the memorix resolver
/// reads a memory's narrative), from the memo installed on this thread when
/// there is one: the reading of the text put in the third person, as a fact
/// of the speaker with no predicate. It is kept under the speaker and the
/// text as spoken only.
pub fn read_speaker(speaker: &str, text: &str) -> Reading {
    let Some(memo) = READINGS.with(|r| r.borrow().clone()) else { return Reading::of_speaker(speaker, text, &[]) };
    if let Some(r) = memo.get_speaker(speaker, text) {
        return r;
    }
    let r = Reading::of_speaker(speaker, text, &[]);
    memo.put_speaker(speaker, text, &r);
    r
}

/// Puts a reading already made (a fact's, kept with it) into the memo
/// installed on this thread, if any, so that [`read_fact`] of the same
/// parts returns it instead of reading them again.
pub fn keep_reading(subject: &str, predicate: &str, object: Option<&str>, content: &str, antonyms: &Antonyms, reading: &Reading) {
    if let Some(memo) = READINGS.with(|r| r.borrow().clone()) {
        memo.put(subject, predicate, object, content, antonyms, reading);
    }
}

/// A fact's keys are computed with the content normaliser (a layer above
/// the model types).
impl FactKeys {
    pub fn of(subject: &str, predicate: &str, object: &str) -> FactKeys {
        let object = crate::normalize::normalize_content(object);
        let spo = format!("{}|{}|{}", subject.trim().to_lowercase(), predicate.trim().to_lowercase(), object);
        FactKeys { subject: subject.to_lowercase(), predicate: predicate.to_lowercase(), object, spo }
    }
}

/// FNV-1a, 64 bits: a cheap, deterministic hash for comparing keys within a
/// run (never stored).
pub fn hash64(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A vector's length, its norm, and the norms of its tails past each
/// quarter (cut at multiples of 8): with a dot product over the values
/// before a cut they bound a cosine from above (Cauchy–Schwarz), so a scan
/// for cosines at or above a threshold stops at the first quarter whose
/// bound falls below it, and computes the full cosine only where no bound
/// does ([`ConvState::cosine_at_least`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Norms {
    len: usize,
    full: f64,
    /// Where each tail starts, and its norm.
    cuts: [usize; 3],
    tails: [f64; 3],
    /// The squared norm as [`cosine`] sums it ([`crate::embed::squared_norm`]).
    sq: f64,
}

impl Norms {
    /// Vectors shorter than this are never bounded.
    const MIN_LEN: usize = 32;
    /// Slack for rounding: a pair is skipped only when its bound is this far
    /// below the threshold (the bound's and the cosine's own rounding errors
    /// are ~1e-6).
    const SLACK: f64 = 1e-3;

    pub fn of(v: &[f32]) -> Norms {
        let sq = |x: &[f32]| x.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>();
        let cuts = [1, 2, 3].map(|k| (v.len() * k / 4) / 8 * 8);
        let tails = cuts.map(|c| sq(&v[c..]).sqrt());
        Norms { len: v.len(), full: sq(v).sqrt(), cuts, tails, sq: crate::embed::squared_norm(v) }
    }

    /// [`cosine`] of `a` (with norms `self`) and `b` (with `other`): the
    /// same value to the bit, computed with the squared norms kept here.
    pub fn cosine(&self, other: &Norms, a: &[f32], b: &[f32]) -> f64 {
        if a.len() == b.len() && a.len() == self.len && b.len() == other.len {
            crate::embed::cosine_with_squares(a, self.sq, b, other.sq)
        } else {
            cosine(a, b)
        }
    }

    /// Whether the cosine of `a` (with norms `self`) and `b` (with `other`)
    /// is certainly below `threshold`: some quarter's bound says so. False
    /// when the vectors cannot be bounded (short, different lengths, zero,
    /// or not finite).
    fn below(&self, other: &Norms, a: &[f32], b: &[f32], threshold: f64) -> bool {
        if self.len != other.len || self.len < Norms::MIN_LEN || a.len() != self.len || b.len() != other.len {
            return false;
        }
        let limit = (threshold - Norms::SLACK) * self.full * other.full;
        if !limit.is_finite() || self.full * other.full <= 0.0 {
            return false;
        }
        let (mut from, mut dot) = (0, 0f64);
        for k in 0..3 {
            let to = self.cuts[k];
            dot += lanes_dot(&a[from..to], &b[from..to]);
            from = to;
            if dot + self.tails[k] * other.tails[k] < limit {
                return true;
            }
        }
        false
    }
}

/// A dot product in eight f32 lanes (vectorised); over a bound's slice its
/// error (~1e-6) is far inside [`Norms::SLACK`]. Lengths are multiples of 8.
fn lanes_dot(a: &[f32], b: &[f32]) -> f64 {
    let mut acc = [0f32; 8];
    for (x, y) in a.as_chunks::<8>().0.iter().zip(b.as_chunks::<8>().0) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    f64::from(acc.iter().sum::<f32>())
}

impl FactRec {
    /// The fact's vector, with its slot.
    pub fn vector(&self) -> Vector<'_> {
        Vector { slot: self.slot, values: &self.embedding }
    }

    /// The fact's matching keys (computed once).
    pub fn keys(&self) -> &FactKeys {
        self.keys.keys.get_or_init(|| FactKeys::of(&self.subject, &self.predicate, &self.object))
    }

    /// What the polarity rule needs of the fact's content against
    /// `antonyms`: computed once and kept with the fact, so pairing a
    /// candidate with thousands of facts does not re-tokenise them. Keys
    /// cached for another antonym list are not reused (computed afresh).
    pub fn polarity(&self, antonyms: &Antonyms) -> Cow<'_, PolarityKeys> {
        let cached = self.keys.polarity.get_or_init(|| PolarityKeys::of(&self.content, antonyms));
        if cached.is_for(antonyms) { Cow::Borrowed(cached) } else { Cow::Owned(PolarityKeys::of(&self.content, antonyms)) }
    }

    /// The content read as propositions about the subject, against
    /// `antonyms` (the evidence-of-change rules): computed once and kept
    /// with the fact, like [`FactRec::polarity`].
    /// `single_valued`: whether the fact's predicate is single-valued (its
    /// object is then a slot's value, [`Reading::of_fact`]).
    pub fn reading(&self, antonyms: &Antonyms, single_valued: bool) -> Cow<'_, Reading> {
        let read = || {
            let object = single_valued.then_some(self.object.as_str());
            read_fact(&self.subject, &self.predicate, object, &self.content, antonyms)
        };
        let cached = self.keys.reading.get_or_init(|| (antonyms.id(), single_valued, read()));
        if (cached.0, cached.1) == (antonyms.id(), single_valued) { Cow::Borrowed(&cached.2) } else { Cow::Owned(read()) }
    }

    /// Not invalidated: the row the partial unique index covers.
    pub fn is_live(&self) -> bool {
        self.invalid_at.is_none() && self.superseded_by.is_none()
    }

    /// Live and not expired at `now` (a `YYYY-MM-DD…` string): what dedupe
    /// and judge compare against.
    pub fn is_current(&self, now: Option<&str>) -> bool {
        self.is_live() && !is_past(self.valid_until.as_deref(), now)
    }

    /// Live but its validUntil has passed, and nothing superseded it.
    pub fn is_expired(&self, now: Option<&str>) -> bool {
        self.is_live() && is_past(self.valid_until.as_deref(), now)
    }

    /// `subject|predicate|object`, lower-cased, for exact matching.
    pub fn spo_key(&self) -> &str {
        &self.keys().spo
    }
}

/// True when `date` (YYYY-MM-DD) is at or before the date of `now`.
pub fn is_past(date: Option<&str>, now: Option<&str>) -> bool {
    match (date, now) {
        (Some(d), Some(n)) => {
            let n = n.get(..10).unwrap_or(n);
            d <= n
        }
        _ => false,
    }
}

/// A conversation's candidate vectors and a memo of their cosines, shared by
/// all the grid points of a sweep (a candidate's slot is its position over
/// the conversation's episodes). Each entry, computed the first time any
/// point asks for it, is [`cosine`] of the two vectors, so lookups change
/// no result.
#[derive(Debug)]
pub struct SimTable {
    vectors: Vec<Vec<f32>>,
    /// `f64` bits per unordered pair (a, b); [`UNSET`] until computed.
    memo: Vec<AtomicU64>,
}

/// A NaN payload no cosine produces (`cosine` clamps to [-1, 1]).
const UNSET: u64 = 0x7ff8_dead_beef_0001;

impl SimTable {
    pub fn new(vectors: Vec<Vec<f32>>) -> SimTable {
        let n = vectors.len();
        SimTable { vectors, memo: (0..n * (n + 1) / 2).map(|_| AtomicU64::new(UNSET)).collect() }
    }

    /// The cosine of slots `a` and `b`, when both are in the table. A slot
    /// names the vector the sweep put there (`values` must be that vector).
    fn get(&self, a: Vector<'_>, b: Vector<'_>) -> Option<f64> {
        let (i, j) = (a.slot? as usize, b.slot? as usize);
        let n = self.vectors.len();
        if i >= n || j >= n {
            return None;
        }
        debug_assert!(self.vectors[i] == a.values && self.vectors[j] == b.values, "slot {i} or {j} holds another vector");
        // One cell per unordered pair: `cosine` is symmetric to the bit.
        let (lo, hi) = if i <= j { (i, j) } else { (j, i) };
        let cell = &self.memo[hi * (hi + 1) / 2 + lo];
        let bits = cell.load(Ordering::Relaxed);
        if bits != UNSET {
            return Some(f64::from_bits(bits));
        }
        let c = cosine(a.values, b.values);
        cell.store(c.to_bits(), Ordering::Relaxed);
        Some(c)
    }
}

/// A vector and, when a [`SimTable`] holds it, its slot.
#[derive(Debug, Clone, Copy)]
pub struct Vector<'a> {
    pub slot: Option<u32>,
    pub values: &'a [f32],
}

/// What the scans of stages 3 and 4 read of every fact, kept contiguous so
/// that a pass over thousands of facts streams through memory instead of
/// visiting each fact's own allocations: per fact its keys (the hashes of
/// its content hash and s|p|o, and its subject, predicate and object as
/// interned ids), its vector's [`Norms`] and a copy of the vector. Facts
/// are only ever appended to a conversation, and a fact's vector never
/// changes in the profiles that search here (soda, signet), so the index
/// follows them by appending ([`ConvState::scan`]); what changes about a
/// fact (its validity) is read from the fact itself.
#[derive(Debug, Clone, Default)]
pub struct ScanIndex {
    /// Rows indexed: `ConvState::facts[..rows.len()]`, the last of them `last_id`.
    rows: Vec<ScanRow>,
    last_id: String,
    /// The facts' vectors, one after another (row `i`'s at `rows[i].vec`).
    vecs: Vec<f32>,
    /// The same vectors in 8 bits ([`Quantised`]), at the same offsets,
    /// and their bounds' terms by row.
    qvecs: Vec<i8>,
    bounds: Vec<Bound8>,
    /// Probes' bounds against every row ([`ScanIndex::cosine_bounds_8_all`]),
    /// until a row is added: within an episode the facts do not change, and
    /// dedupe's near search and the judge's pairing bound the same
    /// candidates against them.
    bound_memo: std::cell::RefCell<Vec<(Probe8, std::sync::Arc<Vec<f64>>)>>,
    /// Lower-cased subjects and predicates and normalised objects ([`FactKeys`]), interned.
    ids: HashMap<String, u32>,
    /// Positions of the indexed facts (ascending) by the [`hash64`] of their
    /// content hash, of their s|p|o key, and by their interned subject.
    by_hash: HashMap<u64, Vec<u32>>,
    by_spo: HashMap<u64, Vec<u32>>,
    by_subject: HashMap<u32, Vec<u32>>,
    by_subject_object: HashMap<(u32, u32), Vec<u32>>,
    by_subject_predicate: HashMap<(u32, u32), Vec<u32>>,
    /// Per interned subject, the interned predicates its facts have, in the
    /// order first seen.
    predicates: HashMap<u32, Vec<u32>>,
    /// The facts' readings' keys, per way of reading them ([`ReadingIndex`]).
    readings: Vec<ReadingIndex>,
}

/// Positions of facts (ascending) by the [`hash64`] of their reading's
/// keys: the restatement key, the proposition key and the keys
/// [`change`](crate::model::proposition::change) can answer on
/// ([`Reading::change_keys`]). Readings depend on the antonym list and on
/// which predicates are single-valued, so an index is kept per `sig` (the
/// caller's name for how it reads a fact).
#[derive(Debug, Clone, Default)]
pub struct ReadingIndex {
    sig: (u64, usize),
    /// Facts indexed: `ConvState::facts[..upto]`.
    upto: usize,
    restatement: HashMap<u64, Vec<u32>>,
    proposition: HashMap<u64, Vec<u32>>,
    change: HashMap<u64, Vec<u32>>,
}

/// An empty list, for keys no fact has.
const NONE: &[u32] = &[];

impl ReadingIndex {
    /// Facts whose restatement key is `key` (a superset: hashes may collide).
    pub fn restatement(&self, key: &str) -> &[u32] {
        self.restatement.get(&hash64(key)).map_or(NONE, Vec::as_slice)
    }
    /// Facts whose proposition key is `key` (a superset).
    pub fn proposition(&self, key: &str) -> &[u32] {
        self.proposition.get(&hash64(key)).map_or(NONE, Vec::as_slice)
    }
    /// Facts with a [`Reading::change_keys`] key equal to `key` (a superset).
    pub fn change(&self, key: &str) -> &[u32] {
        self.change.get(&hash64(key)).map_or(NONE, Vec::as_slice)
    }
}

/// One fact's row of the [`ScanIndex`].
#[derive(Debug, Clone, Copy)]
pub struct ScanRow {
    /// [`hash64`] of the content hash and of [`FactKeys::spo`].
    pub hash: u64,
    pub spo: u64,
    /// Interned [`FactKeys`] subject, predicate and object ([`ScanIndex::id`]).
    pub subject: u32,
    pub predicate: u32,
    pub object: u32,
    pub norms: Norms,
    /// Where the fact's vector starts in [`ScanIndex`]'s copies.
    vec: usize,
}

/// A vector `b` kept in 8 bits for a first, cheaper bound: `b = s · q + e`
/// with `q` whole numbers in -127..=127 and `|e| <= err` (computed in f64
/// and rounded up). The step `s` is the grid `b` lies on when it lies on
/// one ([`Quantised::grid`]: the hashed embedder's vectors are whole counts
/// over their norm, kept exactly), else `max |b_k| / 127`. For a probe `a
/// = sa · qa + ea` and a fact's `b = sb · qb + eb`, `a · b = sb · (a · qb)
/// + a · eb` and `a · qb = sa · (qa · qb) + ea · qb`, so (Cauchy–Schwarz)
///
/// `a · b <= sa · sb · (qa · qb) + |ea| · sb · |qb| + |a| · |eb|`,
///
/// where `qa · qb` is a sum of products of small whole numbers, computed
/// exactly ([`dot_i8_lanes`]). Over both norms it bounds the cosine from
/// above while reading a quarter of the bytes of `b`. A long conversation's
/// scans bound every fact of a subject per candidate (17,000 at 100,000
/// turns, 17 MB of f32 vectors per scan), so the bytes read and the
/// arithmetic per fact were what the scans waited on (docs/speed.md, "One
/// long conversation: an 8-bit first bound").
#[derive(Debug, Clone, Copy, PartialEq)]
struct Quantised {
    step: f64,
    err: f64,
    /// `step · |q|`, rounded up.
    qnorm: f64,
    /// `sum q_k`.
    sum: i32,
}

impl Quantised {
    /// Appends `b` in 8 bits to `out`, or zeros and `None` when `b` is not
    /// finite or is too long to sum exactly in 32 bits (2^16 values or more).
    fn push(b: &[f32], out: &mut Vec<i8>) -> Option<Quantised> {
        let max = b.iter().fold(0f32, |m, x| m.max(x.abs()));
        if !max.is_finite() || b.iter().any(|x| !x.is_finite()) || b.len() >= 1 << 16 {
            out.resize(out.len() + b.len(), 0);
            return None;
        }
        let step = Quantised::grid(b, max).unwrap_or(if max > 0.0 { max / 127.0 } else { 1.0 });
        let inv = 1.0 / step;
        let (mut err, mut qq, mut sum) = (0f64, 0f64, 0i32);
        for x in b {
            // Half away from zero without a call; any whole number would
            // do, as the error is measured from the one chosen.
            let v = x * inv;
            let q = (v + 0.5f32.copysign(v)).clamp(-127.0, 127.0) as i8;
            let e = f64::from(*x) - f64::from(step) * f64::from(q);
            err += e * e;
            qq += f64::from(q) * f64::from(q);
            sum += i32::from(q);
            out.push(q);
        }
        // Rounded up: the bound must stay a bound.
        let up = |x: f64| x * (1.0 + 1e-9) + 1e-12;
        Some(Quantised { step: f64::from(step), err: up(err.sqrt()), qnorm: up(f64::from(step) * qq.sqrt()), sum })
    }

    /// The step of the grid `b` lies on, when it lies on one of at most 127
    /// steps each way: the smallest magnitude in `b` when every value is a
    /// whole multiple of it (within 1e-4 of a step). Only a choice of step:
    /// the error is measured either way.
    fn grid(b: &[f32], max: f32) -> Option<f32> {
        let step = b.iter().map(|x| x.abs()).filter(|x| *x > 0.0).fold(f32::INFINITY, f32::min);
        if !step.is_finite() || max / step > 127.4 {
            return None;
        }
        let inv = 1.0 / step;
        b.iter()
            .all(|x| {
                let v = x * inv;
                (v - (v + 0.5f32.copysign(v)) as i32 as f32).abs() < 1e-4
            })
            .then_some(step)
    }
}

/// The number of facts from which a [`ScanIndex`] keeps 8-bit copies of
/// their vectors ([`Quantised`]): below it the f32 copies (1 KiB a fact at
/// 256 dimensions) fit a core's 1 MiB second-level cache, the scans do not
/// wait on memory, and making the copies would cost more than it saves (a
/// LoCoMo conversation holds at most about 300 facts, a 250,000-turn set's
/// conversations about 140). Outputs do not depend on it: a bound only
/// skips what cannot reach.
pub(crate) const QUANTISE_FROM: usize = 1024;

/// The most probes whose bounds a [`ScanIndex`] keeps at once (the oldest
/// goes first): at 100,000 facts, 800 KB each.
const BOUND_MEMO_PROBES: usize = 16;

/// A fact's terms of [`Quantised`]'s bound, divided by its norm `|b|`: the
/// bound on the cosine with a probe is `pa.step · step · (qa · qb) +
/// pa.err · qnorm + err` (the probe's terms divided by `|a|`). `err` is
/// `f64::INFINITY` where the bound cannot tell (a vector shorter than
/// [`Norms::MIN_LEN`], zero or not finite).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bound8 {
    step: f64,
    qnorm: f64,
    err: f64,
    sum: i32,
}

impl Bound8 {
    fn of(q: Option<Quantised>, len: usize, norm: f64) -> Bound8 {
        match q {
            Some(q) if len >= Norms::MIN_LEN && norm > 0.0 && norm.is_finite() => {
                Bound8 { step: q.step / norm, qnorm: q.qnorm / norm, err: q.err / norm, sum: q.sum }
            }
            // The sum stays right for the bytes kept (zeros when `q` is `None`).
            _ => Bound8 { step: 0.0, qnorm: 0.0, err: f64::INFINITY, sum: q.map_or(0, |q| q.sum) },
        }
    }
}

/// A probe vector `a` in 8 bits ([`Quantised`]), for
/// [`ScanIndex::cosine_bounds_8`]; also `q + 128` as unsigned bytes, for
/// the processors' unsigned-by-signed byte products.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe8 {
    q: Vec<i8>,
    biased: Vec<u8>,
    bound: Bound8,
}

impl Probe8 {
    /// `a` in 8 bits; `an` are its norms.
    pub fn of(a: &[f32], an: &Norms) -> Probe8 {
        let mut q = Vec::with_capacity(a.len());
        let bound = Bound8::of(Quantised::push(a, &mut q), a.len(), an.full);
        let biased = q.iter().map(|&x| x.cast_unsigned() ^ 0x80).collect();
        Probe8 { q, biased, bound }
    }
}

/// [`Quantised`]'s upper bound on the cosine of a probe and a fact, from
/// `dot = qa · qb` (`f64::INFINITY` when either cannot be bounded).
#[inline]
fn cosine_bound_8(a: &Bound8, b: &Bound8, dot: i32) -> f64 {
    if a.err.is_infinite() || b.err.is_infinite() {
        return f64::INFINITY;
    }
    a.step * b.step * f64::from(dot) + a.err * b.qnorm + b.err
}

/// The exact `a · b` in sixteen 32-bit lanes, so the loop vectorises
/// (each lane sums under 2^12 products of at most 2^14).
fn dot_i8_lanes(a: &[i8], b: &[i8]) -> i32 {
    let mut acc = [0i32; 16];
    let (ac, ar) = a.as_chunks::<16>();
    let (bc, br) = b.as_chunks::<16>();
    for (x, y) in ac.iter().zip(bc) {
        for i in 0..16 {
            acc[i] += i32::from(x[i]) * i32::from(y[i]);
        }
    }
    let mut total: i32 = acc.iter().sum();
    for (x, y) in ar.iter().zip(br) {
        total += i32::from(*x) * i32::from(*y);
    }
    total
}

/// [`dot_i8_lanes`] with AVX2: thirty-two products a step. The bytes are
/// in -127..=127 ([`Quantised::push`] clamps them), so `|x| · (y · sign x)`
/// is `x · y`, and two such products (at most 2 · 127 · 127) fit the
/// sixteen bits `maddubs` sums them in without saturating.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi32, _mm256_loadu_si256, _mm256_madd_epi16, _mm256_maddubs_epi16, _mm256_set1_epi16, _mm256_setzero_si256,
        _mm256_sign_epi8,
    };
    let n = a.len().min(b.len());
    let (mut acc, mut i) = (_mm256_setzero_si256(), 0);
    while i + 32 <= n {
        // SAFETY: `i + 32 <= n`, so the 32 bytes at `a[i..]` and `b[i..]`
        // are in bounds; the loads are unaligned ones.
        let (x, y) =
            unsafe { (_mm256_loadu_si256(a.as_ptr().add(i).cast::<__m256i>()), _mm256_loadu_si256(b.as_ptr().add(i).cast::<__m256i>())) };
        let pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
        i += 32;
    }
    sum_lanes(acc) + dot_i8_lanes(&a[i..n], &b[i..n])
}

/// [`dot_i8_lanes`] with the VNNI byte products: `biased` is `a + 128`
/// (unsigned), and `vpdpbusd` sums four of its products with `b` into each
/// 32-bit lane without saturating, so `a · b = biased · b - 128 · sum b`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512vnni,avx512vl")]
#[inline]
fn dot_i8_vnni(a: &[i8], biased: &[u8], b: &[i8], sum_b: i32) -> i32 {
    use std::arch::x86_64::{__m256i, _mm256_add_epi32, _mm256_dpbusd_epi32, _mm256_loadu_si256, _mm256_setzero_si256};
    let n = biased.len().min(b.len());
    // `biased · b` over 32 bytes at `at`, added to `acc`.
    macro_rules! step {
        ($acc:expr, $at:expr) => {{
            let at: usize = $at;
            debug_assert!(at + 32 <= n);
            // SAFETY: every use below has `at + 32 <= n`, so the 32 bytes at
            // `biased[at..]` and `b[at..]` are in bounds; the loads are
            // unaligned ones.
            let (x, y) = unsafe {
                (_mm256_loadu_si256(biased.as_ptr().add(at).cast::<__m256i>()), _mm256_loadu_si256(b.as_ptr().add(at).cast::<__m256i>()))
            };
            _mm256_dpbusd_epi32($acc, x, y)
        }};
    }
    // Four sums side by side, so no step waits on the one before.
    let mut acc = [_mm256_setzero_si256(); 4];
    let mut i = 0;
    while i + 128 <= n {
        acc[0] = step!(acc[0], i);
        acc[1] = step!(acc[1], i + 32);
        acc[2] = step!(acc[2], i + 64);
        acc[3] = step!(acc[3], i + 96);
        i += 128;
    }
    let mut acc = _mm256_add_epi32(_mm256_add_epi32(acc[0], acc[1]), _mm256_add_epi32(acc[2], acc[3]));
    while i + 32 <= n {
        acc = step!(acc, i);
        i += 32;
    }
    let tail_sum: i32 = b[i..n].iter().map(|&y| i32::from(y)).sum();
    // The lanes hold `biased · b` over the whole steps; the tail is summed apart.
    sum_lanes(acc) - 128 * (sum_b - tail_sum) + dot_i8_lanes(&a[i..n], &b[i..n])
}

/// The sum of eight 32-bit lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn sum_lanes(v: std::arch::x86_64::__m256i) -> i32 {
    use std::arch::x86_64::{_mm_add_epi32, _mm_cvtsi128_si32, _mm_shuffle_epi32, _mm256_castsi256_si128, _mm256_extracti128_si256};
    let x = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let x = _mm_add_epi32(x, _mm_shuffle_epi32::<0b01_00_11_10>(x));
    let x = _mm_add_epi32(x, _mm_shuffle_epi32::<0b10_11_00_01>(x));
    _mm_cvtsi128_si32(x)
}

impl ScanIndex {
    /// Brings the index up to `facts`: appends the new ones, or starts over
    /// if `facts` is not an extension of what was indexed.
    fn sync(&mut self, facts: &[FactRec]) {
        let n = self.rows.len();
        if n > facts.len() || (n > 0 && facts[n - 1].id != self.last_id) {
            *self = ScanIndex::default();
        }
        if facts.len() > self.rows.len() {
            self.bound_memo.get_mut().clear();
        }
        for f in &facts[self.rows.len()..] {
            let norms = Norms::of(&f.embedding);
            let at = self.vecs.len();
            self.vecs.extend_from_slice(&f.embedding);
            let k = f.keys();
            let mut intern = |s: &str| {
                let next = self.ids.len() as u32;
                *self.ids.entry(s.to_string()).or_insert(next)
            };
            let (subject, predicate, object) = (intern(&k.subject), intern(&k.predicate), intern(&k.object));
            let pos = self.rows.len() as u32;
            let (hash, spo) = (hash64(&f.hash), hash64(&k.spo));
            self.by_hash.entry(hash).or_default().push(pos);
            self.by_spo.entry(spo).or_default().push(pos);
            self.by_subject.entry(subject).or_default().push(pos);
            self.by_subject_object.entry((subject, object)).or_default().push(pos);
            let same = self.by_subject_predicate.entry((subject, predicate)).or_default();
            if same.is_empty() {
                self.predicates.entry(subject).or_default().push(predicate);
            }
            same.push(pos);
            self.rows.push(ScanRow { hash, spo, subject, predicate, object, norms, vec: at });
        }
        // The 8-bit copies, once the conversation is long enough for them.
        if self.rows.len() >= QUANTISE_FROM {
            for row in &self.rows[self.bounds.len()..] {
                let b = &self.vecs[row.vec..row.vec + row.norms.len];
                self.bounds.push(Bound8::of(Quantised::push(b, &mut self.qvecs), b.len(), row.norms.full));
            }
        }
        if let Some(f) = facts.last() {
            self.last_id.clone_from(&f.id);
        }
    }

    /// The row of fact `i` (its position in `ConvState::facts`).
    pub fn row(&self, i: usize) -> &ScanRow {
        &self.rows[i]
    }

    /// Positions of the facts (ascending) whose content hash has the
    /// [`hash64`] `h` (a superset of those with an equal hash).
    pub fn with_hash(&self, h: u64) -> &[u32] {
        self.by_hash.get(&h).map_or(NONE, Vec::as_slice)
    }

    /// Positions of the facts (ascending) whose s|p|o key has the [`hash64`] `h`.
    pub fn with_spo(&self, h: u64) -> &[u32] {
        self.by_spo.get(&h).map_or(NONE, Vec::as_slice)
    }

    /// Positions of the facts (ascending) whose subject key has the interned id `subject`.
    pub fn with_subject(&self, subject: u32) -> &[u32] {
        self.by_subject.get(&subject).map_or(NONE, Vec::as_slice)
    }

    /// Positions of the facts (ascending) with the interned subject and object ids.
    pub fn with_subject_object(&self, subject: u32, object: u32) -> &[u32] {
        self.by_subject_object.get(&(subject, object)).map_or(NONE, Vec::as_slice)
    }

    /// Positions of the facts (ascending) with the interned subject and predicate ids.
    pub fn with_subject_predicate(&self, subject: u32, predicate: u32) -> &[u32] {
        self.by_subject_predicate.get(&(subject, predicate)).map_or(NONE, Vec::as_slice)
    }

    /// The interned predicates of the facts with the interned subject `subject`.
    pub fn predicates_of(&self, subject: u32) -> &[u32] {
        self.predicates.get(&subject).map_or(NONE, Vec::as_slice)
    }

    /// Fact `i`'s vector, as indexed.
    fn vector_of(&self, i: usize) -> &[f32] {
        let row = &self.rows[i];
        &self.vecs[row.vec..row.vec + row.norms.len]
    }

    /// Whether the cosine of `a` (with norms `an`) and fact `i`'s vector may
    /// reach `floor`: false only when their [`Norms`] bound shows it lies
    /// below (computes no cosine, compares against no threshold).
    pub fn may_reach(&self, a: &[f32], an: &Norms, i: usize, floor: f64) -> bool {
        !an.below(&self.rows[i].norms, a, self.vector_of(i), floor)
    }

    /// Upper bounds on the cosine of `probe` and each fact at
    /// `positions`, in order, into `out`: [`Quantised`]'s bound over both
    /// norms, `f64::INFINITY` where it cannot tell (other lengths, short,
    /// zero or not finite vectors, or no 8-bit copies kept: fewer than
    /// [`QUANTISE_FROM`] rows). For [`ScanIndex::may_reach_under`]; one
    /// call for a whole list, with the processor's widest byte products.
    /// The sums are exact, so every processor gets the same bounds.
    pub fn cosine_bounds_8(&self, probe: &Probe8, positions: &[u32], out: &mut Vec<f64>) {
        out.clear();
        if !self.keeps_8_bits() {
            out.resize(positions.len(), f64::INFINITY);
            return;
        }
        if let Some((_, all)) = self.bound_memo.borrow().iter().find(|(p, _)| p == probe) {
            out.extend(positions.iter().map(|&p| all[p as usize]));
            return;
        }
        self.compute_bounds_8(probe, positions, out);
    }

    /// [`ScanIndex::cosine_bounds_8`] against every row, kept for the
    /// probe's later calls until a row is added; `None` when the index
    /// keeps no 8-bit copies ([`QUANTISE_FROM`]).
    pub fn cosine_bounds_8_all(&self, probe: &Probe8) -> Option<std::sync::Arc<Vec<f64>>> {
        if !self.keeps_8_bits() {
            return None;
        }
        if let Some((_, all)) = self.bound_memo.borrow().iter().find(|(p, _)| p == probe) {
            return Some(all.clone());
        }
        let positions: Vec<u32> = (0..self.rows.len() as u32).collect();
        let mut out = Vec::with_capacity(positions.len());
        self.compute_bounds_8(probe, &positions, &mut out);
        let all = std::sync::Arc::new(out);
        let mut memo = self.bound_memo.borrow_mut();
        // A few episodes' worth: an episode that adds no fact keeps them.
        if memo.len() >= BOUND_MEMO_PROBES {
            memo.remove(0);
        }
        memo.push((probe.clone(), all.clone()));
        Some(all)
    }

    /// `a` (with norms `an`) as a [`Probe8`], when the index keeps 8-bit
    /// copies to bound it against ([`QUANTISE_FROM`]).
    pub fn probe8(&self, a: &[f32], an: &Norms) -> Option<Probe8> {
        self.keeps_8_bits().then(|| Probe8::of(a, an))
    }

    /// Whether the index keeps 8-bit copies (of every row, from
    /// [`QUANTISE_FROM`] rows on: [`ScanIndex::sync`] makes them all at once).
    fn keeps_8_bits(&self) -> bool {
        self.rows.len() >= QUANTISE_FROM
    }

    fn compute_bounds_8(&self, probe: &Probe8, positions: &[u32], out: &mut Vec<f64>) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("avx512vnni") && has!("avx512vl") {
                // SAFETY: the processor has these (checked just above).
                unsafe { self.cosine_bounds_8_vnni(probe, positions, out) };
                return;
            }
            if has!("avx2") {
                // SAFETY: the processor has AVX2 (checked just above).
                unsafe { self.cosine_bounds_8_avx2(probe, positions, out) };
                return;
            }
        }
        self.cosine_bounds_8_with(probe, positions, out, |b, _| dot_i8_lanes(&probe.q, b));
    }

    /// [`ScanIndex::cosine_bounds_8_with`] compiled with VNNI, and
    /// [`dot_i8_vnni`] (the closure is compiled with the same features).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,avx512vnni,avx512vl")]
    fn cosine_bounds_8_vnni(&self, probe: &Probe8, positions: &[u32], out: &mut Vec<f64>) {
        self.cosine_bounds_8_with(probe, positions, out, |q, b| dot_i8_vnni(&probe.q, &probe.biased, q, b.sum));
    }

    /// [`ScanIndex::cosine_bounds_8_with`] compiled with AVX2, and [`dot_i8_avx2`].
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn cosine_bounds_8_avx2(&self, probe: &Probe8, positions: &[u32], out: &mut Vec<f64>) {
        self.cosine_bounds_8_with(probe, positions, out, |q, _| dot_i8_avx2(&probe.q, q));
    }

    /// The bounds of the facts at `positions` in order, with `dot` for
    /// `qa · qb` (given a fact's bytes and terms); inlined into each of the
    /// above, so each loop is compiled with its instructions.
    #[inline]
    fn cosine_bounds_8_with(&self, probe: &Probe8, positions: &[u32], out: &mut Vec<f64>, dot: impl Fn(&[i8], &Bound8) -> i32) {
        for &p in positions {
            let (row, b) = (&self.rows[p as usize], &self.bounds[p as usize]);
            out.push(if row.norms.len == probe.q.len() { cosine_bound_8(&probe.bound, b, dot(self.qvec(row), b)) } else { f64::INFINITY });
        }
    }

    /// Row `row`'s vector in 8 bits.
    #[inline]
    fn qvec(&self, row: &ScanRow) -> &[i8] {
        &self.qvecs[row.vec..row.vec + row.norms.len]
    }

    /// [`ScanIndex::may_reach`] given `bound`, an upper bound on the cosine
    /// from [`ScanIndex::cosine_bounds_8`]: false when it lies below `floor`
    /// by [`Norms::SLACK`], else as [`Norms::below`] says.
    pub fn may_reach_under(&self, bound: f64, a: &[f32], an: &Norms, i: usize, floor: f64) -> bool {
        if bound < floor - Norms::SLACK {
            return false;
        }
        !an.below(&self.rows[i].norms, a, self.vector_of(i), floor)
    }

    /// [`ConvState::cosine`] of `a` (with norms `an`) and fact `i`'s vector
    /// `b`: the same value to the bit, with the squared norms kept.
    pub fn cosine(&self, state: &ConvState, a: Vector<'_>, an: &Norms, i: usize, b: Vector<'_>) -> f64 {
        if let Some(c) = state.sims.as_ref().and_then(|t| t.get(a, b)) {
            return c;
        }
        an.cosine(&self.rows[i].norms, a.values, b.values)
    }

    /// Brings the [`ReadingIndex`] named `sig` up to `facts` (the facts this
    /// index follows), reading each new fact with `read`. A caller passes
    /// the same `read` for the same `sig`.
    pub fn sync_readings<'f>(&mut self, sig: (u64, usize), facts: &'f [FactRec], read: impl Fn(&'f FactRec) -> Cow<'f, Reading>) {
        let at = match self.readings.iter().position(|r| r.sig == sig) {
            Some(at) => at,
            None => {
                // A few ways of reading at most (a run has one config).
                if self.readings.len() >= 4 {
                    self.readings.remove(0);
                }
                self.readings.push(ReadingIndex { sig, ..ReadingIndex::default() });
                self.readings.len() - 1
            }
        };
        let index = &mut self.readings[at];
        let upto = self.rows.len().min(facts.len());
        if index.upto > upto {
            *index = ReadingIndex { sig, ..ReadingIndex::default() };
        }
        for (pos, f) in facts.iter().enumerate().take(upto).skip(index.upto) {
            let r = read(f);
            let pos = pos as u32;
            index.restatement.entry(hash64(r.restatement())).or_default().push(pos);
            if let Some(p) = r.proposition() {
                index.proposition.entry(hash64(p)).or_default().push(pos);
            }
            let mut keys: Vec<u64> = r.change_keys().iter().map(|k| hash64(k)).collect();
            keys.sort_unstable();
            keys.dedup();
            for k in keys {
                index.change.entry(k).or_default().push(pos);
            }
        }
        index.upto = upto;
    }

    /// The [`ReadingIndex`] named `sig`, if [`ScanIndex::sync_readings`] made one.
    pub fn readings(&self, sig: (u64, usize)) -> Option<&ReadingIndex> {
        self.readings.iter().find(|r| r.sig == sig)
    }

    /// The interned id of a subject, predicate or object key, if any
    /// indexed fact has it (two keys have one id exactly when they are equal).
    pub fn id(&self, key: &str) -> Option<u32> {
        self.ids.get(key).copied()
    }

    /// The cosine of `a` and fact `i`'s vector `b` when it is at or above
    /// `threshold`, else `None`: [`ConvState::cosine_at_least`] reading the
    /// fact's norms and first half from the index.
    pub fn cosine_at_least(&self, state: &ConvState, a: Vector<'_>, an: &Norms, i: usize, b: Vector<'_>, threshold: f64) -> Option<f64> {
        let row = &self.rows[i];
        if let Some(c) = state.sims.as_ref().and_then(|t| t.get(a, b)) {
            return trace::at_least(c, threshold).then_some(c);
        }
        if !trace::active() && !self.may_reach(a.values, an, i, threshold) {
            return None;
        }
        let c = an.cosine(&row.norms, a.values, b.values);
        trace::at_least(c, threshold).then_some(c)
    }

    /// The cosine of `a` and fact `i`'s vector `b`, or `None` when its
    /// [`Norms`] bound shows it lies below `floor` (`f64::NEG_INFINITY`:
    /// always computed). Compares against no threshold, so records nothing
    /// ([`crate::state::trace`]): for a search that takes the best cosine
    /// first and compares only that one against its threshold.
    pub fn cosine_unless_below(&self, state: &ConvState, a: Vector<'_>, an: &Norms, i: usize, b: Vector<'_>, floor: f64) -> Option<f64> {
        if let Some(c) = state.sims.as_ref().and_then(|t| t.get(a, b)) {
            return Some(c);
        }
        if !self.may_reach(a.values, an, i, floor) {
            return None;
        }
        Some(an.cosine(&self.rows[i].norms, a.values, b.values))
    }
}

/// A [`ScanIndex`] behind a lock, so stages holding `&ConvState` can bring
/// it up to date. It is derived data: cloning a state clones it, and it
/// never makes two states differ.
#[derive(Debug, Default)]
pub struct ScanCache(Mutex<ScanIndex>);

impl Clone for ScanCache {
    fn clone(&self) -> ScanCache {
        ScanCache(Mutex::new(self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()))
    }
}

/// What entity resolution looks up among a conversation's entities, kept
/// up to date as entities are appended and aliases added
/// ([`ConvState::entity_index`]): positions in `ConvState::entities`
/// (ascending) by lower-cased name or alias, and by type, with each
/// entity's vector [`Norms`]. Derived data, like [`ScanIndex`].
#[derive(Debug, Clone, Default)]
pub struct EntityIndex {
    /// Per indexed entity: its id and how many of its aliases are indexed.
    seen: Vec<(String, usize)>,
    names: HashMap<String, Vec<u32>>,
    by_type: HashMap<crate::types::EntityType, Vec<u32>>,
    norms: Vec<Norms>,
}

impl EntityIndex {
    fn sync(&mut self, entities: &[EntityRec]) {
        // Entities are only appended and aliases only added (the write's
        // mirror): anything else (fewer entities, another last entity, fewer
        // aliases) starts over. Integer checks only: this runs per lookup.
        let last = self.seen.len().checked_sub(1);
        if self.seen.len() > entities.len()
            || last.is_some_and(|l| self.seen[l].0 != entities[l].id)
            || self.seen.iter().zip(entities).any(|((_, n), e)| *n > e.aliases.len())
        {
            *self = EntityIndex::default();
        }
        let add = |names: &mut HashMap<String, Vec<u32>>, name: &str, pos: u32| {
            let list = names.entry(name.to_lowercase()).or_default();
            // Positions stay ascending: an older entity's new alias goes in its place.
            if let Err(at) = list.binary_search(&pos) {
                list.insert(at, pos);
            }
        };
        for (pos, ((_, n), e)) in self.seen.iter_mut().zip(entities).enumerate() {
            for alias in &e.aliases[*n..] {
                add(&mut self.names, alias, pos as u32);
            }
            *n = e.aliases.len();
        }
        for (pos, e) in entities.iter().enumerate().skip(self.seen.len()) {
            let pos = pos as u32;
            add(&mut self.names, &e.name, pos);
            for alias in &e.aliases {
                add(&mut self.names, alias, pos);
            }
            self.by_type.entry(e.entity_type).or_default().push(pos);
            self.norms.push(Norms::of(&e.embedding));
            self.seen.push((e.id.clone(), e.aliases.len()));
        }
    }

    /// Positions of the entities whose lower-cased name or an alias is `key`.
    pub fn named(&self, key: &str) -> &[u32] {
        self.names.get(key).map_or(NONE, Vec::as_slice)
    }

    /// Positions of the entities of type `t`.
    pub fn of_type(&self, t: crate::types::EntityType) -> &[u32] {
        self.by_type.get(&t).map_or(NONE, Vec::as_slice)
    }

    /// The vector norms of the entity at `pos`.
    pub fn norms(&self, pos: usize) -> &Norms {
        &self.norms[pos]
    }
}

/// An [`EntityIndex`] behind a lock, like [`ScanCache`].
#[derive(Debug, Default)]
pub struct EntityCache(Mutex<EntityIndex>);

impl Clone for EntityCache {
    fn clone(&self) -> EntityCache {
        EntityCache(Mutex::new(self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()))
    }
}

/// One conversation's entities and facts, in creation order.
#[derive(Debug, Clone, Default)]
pub struct ConvState {
    pub entities: Vec<EntityRec>,
    pub facts: Vec<FactRec>,
    /// Precomputed cosines of the conversation's candidate vectors (sweeps).
    pub sims: Option<Arc<SimTable>>,
    /// The facts' [`ScanIndex`], brought up to date by [`ConvState::scan`].
    pub scan: ScanCache,
    /// The entities' [`EntityIndex`], brought up to date by [`ConvState::entity_index`].
    pub entity_cache: EntityCache,
    /// What a profile keeps for the conversation between its episodes
    /// beside the memory (the external profile's adapter process).
    pub companion: Companion,
    /// Readings a profile keeps for the whole conversation (memorix: each
    /// memory's narrative, read again whenever a later observation finds
    /// it); installed by [`ConvState::keep_readings`].
    pub readings: Arc<ReadingMemo>,
}

/// A profile's per-conversation companion, shared by a state's clones and
/// dropped with the last of them (an adapter process is then stopped).
#[derive(Clone, Default)]
pub struct Companion(pub Option<Arc<Mutex<Box<dyn std::any::Any + Send>>>>);

impl std::fmt::Debug for Companion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Companion(..)" } else { "Companion(None)" })
    }
}

impl ConvState {
    /// Installs the conversation's [`ConvState::readings`] on this thread
    /// for [`read_fact`] and [`read_speaker`] until the scope is dropped,
    /// unless a memo is installed already (a sweep's, kept across its
    /// points). A reading depends only on what its key holds, so a memo
    /// changes no outcome, only how often a text is read.
    pub fn keep_readings(&self) -> ReadingScope {
        install_unless_installed(|| self.readings.clone())
    }

    /// Cosine of two vectors: from the table when both have a slot in it,
    /// otherwise computed.
    pub fn cosine(&self, a: Vector<'_>, b: Vector<'_>) -> f64 {
        if let Some(c) = self.sims.as_ref().and_then(|t| t.get(a, b)) {
            return c;
        }
        cosine(a.values, b.values)
    }

    /// The facts' [`ScanIndex`], up to date with `facts`.
    pub fn scan(&self) -> MutexGuard<'_, ScanIndex> {
        let mut index = self.scan.0.lock().unwrap_or_else(|p| p.into_inner());
        index.sync(&self.facts);
        index
    }

    /// The entities' [`EntityIndex`], up to date with `entities`.
    pub fn entity_index(&self) -> MutexGuard<'_, EntityIndex> {
        let mut index = self.entity_cache.0.lock().unwrap_or_else(|p| p.into_inner());
        index.sync(&self.entities);
        index
    }

    /// The cosine of `a` and `b` when it is at or above `threshold`, else
    /// `None`; equal to [`ConvState::cosine`] wherever it answers. Outside a
    /// sweep's table, a pair whose [`Norms`] bound lies below the threshold
    /// is skipped without computing the cosine.
    pub fn cosine_at_least(&self, a: Vector<'_>, an: &Norms, b: Vector<'_>, bn: &Norms, threshold: f64) -> Option<f64> {
        if let Some(c) = self.sims.as_ref().and_then(|t| t.get(a, b)) {
            return trace::at_least(c, threshold).then_some(c);
        }
        if !trace::active() && an.below(bn, a.values, b.values, threshold) {
            return None;
        }
        let c = an.cosine(bn, a.values, b.values);
        trace::at_least(c, threshold).then_some(c)
    }

    /// The cosine of `a` and `b`, or `None` when their [`Norms`] bound
    /// shows it lies below `floor` (`f64::NEG_INFINITY`: always computed);
    /// equal to [`ConvState::cosine`] wherever it answers. Compares against
    /// no threshold, so records nothing ([`crate::state::trace`]).
    pub fn cosine_unless_below(&self, a: Vector<'_>, an: &Norms, b: Vector<'_>, bn: &Norms, floor: f64) -> Option<f64> {
        if let Some(c) = self.sims.as_ref().and_then(|t| t.get(a, b)) {
            return Some(c);
        }
        if an.below(bn, a.values, b.values, floor) {
            return None;
        }
        Some(an.cosine(bn, a.values, b.values))
    }

    pub fn entity(&self, id: &str) -> Option<&EntityRec> {
        self.entities.iter().find(|e| e.id == id)
    }
    pub fn fact_mut(&mut self, id: &str) -> Option<&mut FactRec> {
        self.facts.iter_mut().find(|f| f.id == id)
    }
    pub fn fact(&self, id: &str) -> Option<&FactRec> {
        self.facts.iter().find(|f| f.id == id)
    }
    /// Canonical names of all entities, in creation order.
    pub fn entity_names(&self) -> Vec<String> {
        self.entities.iter().map(|e| e.name.clone()).collect()
    }
    /// The entity whose name or alias is `name` (case-insensitive), any type.
    pub fn entity_by_name(&self, name: &str) -> Option<&EntityRec> {
        let n = name.trim().to_lowercase();
        self.entities.iter().find(|e| e.name.to_lowercase() == n || e.aliases.iter().any(|a| a.to_lowercase() == n))
    }
}

#[cfg(test)]
impl FactRec {
    /// A live literal fact `s p o` from episode `e1`, turn `t1`, with
    /// confidence 0.9 and no vector: tests override what they need.
    pub(crate) fn for_test(id: &str, s: &str, p: &str, o: &str) -> FactRec {
        FactRec {
            id: id.into(),
            fact: crate::types::CandidateFact {
                subject: s.into(),
                predicate: p.into(),
                object: o.into(),
                kind: crate::types::FactKind::Literal,
                fact_type: crate::types::FactType::Fact,
                content: format!("{s} {p} {o}"),
                confidence: 0.9,
                source_turn: "t1".into(),
                source_quote: String::new(),
                valid_from: None,
                valid_until: None,
            },
            normalized: String::new(),
            hash: id.into(),
            invalid_at: None,
            superseded_by: None,
            source_episode: "e1".into(),
            pinned: false,
            subject_entity: None,
            object_entity: None,
            embedding: Vec::new(),
            slot: None,
            keys: KeyCache::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_speakers_reading_is_the_same_read_or_remembered() {
        let said = [
            ("Caroline", "I'm a counsellor now and my dog is called Max"),
            ("Caroline", "I am not into hiking anymore"),
            (" Mel ", "We got married last year; I've moved to Lyon"),
            ("Mel", "Mel lives in Paris"),
        ];
        let fresh: Vec<Reading> = said.iter().map(|(who, text)| Reading::of_speaker(who, text, &[])).collect();
        // Without a memo, then twice with one (the second time from the memo).
        assert_eq!(said.iter().map(|(who, text)| read_speaker(who, text)).collect::<Vec<_>>(), fresh);
        let _scope = readings_for_now();
        for _ in 0..2 {
            assert_eq!(said.iter().map(|(who, text)| read_speaker(who, text)).collect::<Vec<_>>(), fresh);
        }
        // A fact's reading of the same words is another key: "I" is not the subject.
        let as_fact = read_fact("Caroline", "", None, "I'm a counsellor now and my dog is called Max", &Antonyms::interned(&[]));
        assert_ne!(as_fact, fresh[0]);
    }

    /// Deterministic pseudo-random unit vectors (xorshift), and vectors close to them.
    fn vectors(n: usize, dims: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut s = seed | 1;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let mut out: Vec<Vec<f32>> = Vec::new();
        for i in 0..n {
            let mut v: Vec<f32> = if i % 3 == 2 {
                // A perturbed copy of the previous vector: cosines near 1.
                out[i - 1].iter().map(|x| x + 0.02 * next()).collect()
            } else {
                (0..dims).map(|_| next()).collect()
            };
            if i % 7 == 0 {
                v.iter_mut().take(dims / 3).for_each(|x| *x *= 4.0);
            }
            crate::embed::l2_normalize(&mut v);
            out.push(v);
        }
        out
    }

    #[test]
    fn cosine_at_least_answers_as_cosine_does() {
        let st = ConvState::default();
        let mut skipped = 0;
        for dims in [8, 31, 64, 256, 384] {
            let vs = vectors(60, dims, dims as u64);
            let norms: Vec<Norms> = vs.iter().map(|v| Norms::of(v)).collect();
            for t in [-1.0, 0.0, 0.5, 0.8, 0.95, 0.99, 1.0] {
                for (a, an) in vs.iter().zip(&norms) {
                    for (b, bn) in vs.iter().zip(&norms) {
                        let c = cosine(a, b);
                        let got = st.cosine_at_least(Vector { slot: None, values: a }, an, Vector { slot: None, values: b }, bn, t);
                        assert_eq!(got.map(f64::to_bits), (c >= t).then_some(c.to_bits()), "dims {dims}, t {t}, cosine {c}");
                        skipped += usize::from(an.below(bn, a, b, t));
                    }
                }
            }
        }
        assert!(skipped > 0, "the bound skips some pairs");
        // Zero and mismatched vectors are never bounded.
        let z = vec![0f32; 64];
        let one: Vec<f32> = (0..64).map(|i| if i == 0 { 1.0 } else { 0.0 }).collect();
        assert!(!Norms::of(&z).below(&Norms::of(&one), &z, &one, 0.5));
        assert!(!Norms::of(&one[..40]).below(&Norms::of(&one), &one[..40], &one, 0.5));
    }

    #[test]
    fn the_8_bit_bound_is_a_bound_and_the_index_answers_as_cosine_does() {
        let (mut pruned, mut on_grid) = (0, 0);
        for dims in [8, 31, 33, 64, 256, 384] {
            let mut vs = vectors(45, dims, 11 + dims as u64);
            // Hashed-embedder-like vectors: a few small whole numbers, normalised.
            vs.extend((0..15).map(|k| {
                let mut v: Vec<f32> =
                    (0..dims).map(|i| ((i * 7 + k * 13) % 11) as f32 - 5.0).map(|x| if x.abs() <= 3.0 { x } else { 0.0 }).collect();
                crate::embed::l2_normalize(&mut v);
                v
            }));
            // Enough facts for the index to keep 8-bit copies.
            let facts: Vec<FactRec> = vs
                .iter()
                .cycle()
                .take(QUANTISE_FROM)
                .enumerate()
                .map(|(i, v)| FactRec { embedding: v.clone(), ..FactRec::for_test(&format!("f{i}"), "A", "p", &format!("o{i}")) })
                .collect();
            let mut st = ConvState { facts, ..ConvState::default() };
            let last = st.facts.pop().unwrap();
            assert!(st.scan().probe8(&vs[0], &Norms::of(&vs[0])).is_none(), "no 8-bit copies below {QUANTISE_FROM} facts");
            let mut bounds = Vec::new();
            st.scan().cosine_bounds_8(&Probe8::of(&vs[0], &Norms::of(&vs[0])), &[0, 1], &mut bounds);
            assert_eq!(bounds, [f64::INFINITY; 2]);
            st.facts.push(last);
            let scan = st.scan();
            let all: Vec<u32> = (0..st.facts.len() as u32).collect();
            for (a, an) in vs.iter().map(|v| (v, Norms::of(v))) {
                let probe = scan.probe8(a, &an).unwrap();
                assert_eq!(probe, Probe8::of(a, &an));
                scan.cosine_bounds_8(&probe, &all, &mut bounds);
                assert_eq!(bounds.len(), all.len());
                // Kept for the probe until a fact is added, and the same.
                assert_eq!(scan.cosine_bounds_8_all(&probe).as_deref(), Some(&bounds));
                let mut again = Vec::new();
                scan.cosine_bounds_8(&probe, &all[5..9], &mut again);
                assert_eq!(again, bounds[5..9]);
                assert!(scan.bound_memo.borrow().len() <= BOUND_MEMO_PROBES);
                for (i, f) in st.facts.iter().enumerate() {
                    let (b, row) = (&f.embedding, scan.row(i));
                    let q = scan.qvec(row);
                    // The sums are exact on every path.
                    let exact: i32 = probe.q.iter().zip(q).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum();
                    assert_eq!(dot_i8_lanes(&probe.q, q), exact);
                    #[cfg(target_arch = "x86_64")]
                    {
                        use std::arch::is_x86_feature_detected as has;
                        if has!("avx2") {
                            // SAFETY: the processor has AVX2 (checked just above).
                            assert_eq!(unsafe { dot_i8_avx2(&probe.q, q) }, exact);
                        }
                        if has!("avx2") && has!("avx512vnni") && has!("avx512vl") {
                            // SAFETY: the processor has these (checked just above).
                            assert_eq!(unsafe { dot_i8_vnni(&probe.q, &probe.biased, q, scan.bounds[i].sum) }, exact);
                        }
                    }
                    let expected = cosine_bound_8(&probe.bound, &scan.bounds[i], exact);
                    assert_eq!(bounds[i].to_bits(), expected.to_bits(), "dims {dims}");
                    let c = cosine(a, b);
                    assert!(bounds[i] >= c - 1e-5, "dims {dims}: bound {} below the cosine {c}", bounds[i]);
                    assert_eq!(bounds[i] == f64::INFINITY, dims < Norms::MIN_LEN, "dims {dims}");
                    on_grid += usize::from(scan.bounds[i].err < 1e-6);
                    for t in [-1.0, 0.0, 0.5, 0.8, 0.95, 1.0] {
                        let got = scan.cosine_at_least(&st, Vector { slot: None, values: a }, &an, i, f.vector(), t);
                        assert_eq!(got.map(f64::to_bits), (c >= t).then_some(c.to_bits()), "dims {dims}, t {t}, cosine {c}");
                        pruned += usize::from(bounds[i] < t - Norms::SLACK);
                        if c >= t {
                            assert!(
                                scan.may_reach_under(bounds[i], a, &an, i, t),
                                "dims {dims}, t {t}: a cosine {c} at the floor was pruned"
                            );
                        }
                    }
                }
            }
        }
        assert!(pruned > 0, "the 8-bit bound prunes some pairs");
        assert!(on_grid > 0, "whole numbers over their norm are kept on their grid, with no error");
        // A vector that is not finite, or zero, is never bounded.
        let mut bad = vec![0.1f32; 64];
        bad[3] = f32::NAN;
        let zero = vec![0f32; 64];
        let one: Vec<f32> = (0..64).map(|i| if i == 0 { 1.0 } else { 0.0 }).collect();
        let facts = [&bad, &zero]
            .iter()
            .chain(std::iter::repeat_n(&&one, QUANTISE_FROM))
            .enumerate()
            .map(|(i, v)| FactRec { embedding: v.to_vec(), ..FactRec::for_test(&format!("n{i}"), "A", "p", "o") })
            .collect();
        let st = ConvState { facts, ..ConvState::default() };
        let scan = st.scan();
        let mut bounds = Vec::new();
        for probe in [&one, &bad, &zero] {
            scan.cosine_bounds_8(&Probe8::of(probe, &Norms::of(probe)), &[0, 1], &mut bounds);
            assert_eq!(bounds, [f64::INFINITY, f64::INFINITY]);
        }
        scan.cosine_bounds_8(&Probe8::of(&one, &Norms::of(&one)), &[2], &mut bounds);
        assert!((bounds[0] - 1.0).abs() < 1e-6, "{bounds:?}");
    }

    #[test]
    fn the_scan_index_follows_appended_facts_and_starts_over_on_others() {
        let vs = vectors(6, 64, 7);
        let fact = |i: usize| FactRec { embedding: vs[i].clone(), ..FactRec::for_test(&format!("f{i}"), "A", "p", &format!("o{i}")) };
        let mut st = ConvState::default();
        st.facts.extend((0..3).map(fact));
        let probe = Vector { slot: None, values: &vs[5] };
        let pn = Norms::of(&vs[5]);
        let check = |st: &ConvState| {
            let scan = st.scan();
            assert_eq!(scan.rows.len(), st.facts.len());
            for (i, f) in st.facts.iter().enumerate() {
                let (row, k) = (scan.row(i), f.keys());
                assert_eq!((row.hash, row.spo), (hash64(&f.hash), hash64(&k.spo)));
                assert_eq!(
                    [Some(row.subject), Some(row.predicate), Some(row.object)],
                    [scan.id(&k.subject), scan.id(&k.predicate), scan.id(&k.object)]
                );
                for t in [-1.0, 0.0, 0.3] {
                    assert_eq!(
                        scan.cosine_at_least(st, probe, &pn, i, f.vector(), t),
                        st.cosine_at_least(probe, &pn, f.vector(), &Norms::of(&f.embedding), t)
                    );
                }
            }
        };
        check(&st);
        st.facts.extend((3..5).map(fact));
        check(&st);
        let copy = st.clone();
        check(&copy);
        // Not an extension of what was indexed: rebuilt.
        st.facts = vec![fact(4), fact(0)];
        check(&st);
        st.facts.clear();
        check(&st);
    }
}

/// Random conversations' facts for the tests that check an indexed search
/// against a scan of every fact: sentences of the kinds the evidence rules
/// read (slots, endings, negations, preferences, plans, restatements),
/// about a few subjects spelt several ways.
#[cfg(test)]
pub(crate) mod random {
    use super::FactRec;

    /// xorshift64*: deterministic.
    pub(crate) struct Rng(pub u64);

    impl Rng {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        pub(crate) fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        pub(crate) fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
            xs[self.below(xs.len())]
        }
        pub(crate) fn chance(&mut self, percent: u64) -> bool {
            self.next() % 100 < percent
        }
    }

    const SUBJECTS: &[&str] = &["Lena", "lena", " Lena ", "LENA", "Omar", "User", "Lena's sister"];
    const NAMES: &[&str] = &["Felix", "Priya", "Olivia Kowalski", "Bruno", "Mei Tanaka"];
    const PLACES: &[&str] = &["Oslo", "Berlin", "Google", "Acme", "the choir", "the band"];
    const THINGS: &[&str] = &["camping", "jazz", "the cello", "two dogs", "2 dogs", "three dogs", "coffee", "running"];

    /// A fact (subject, predicate, object, content).
    pub(crate) fn fact(r: &mut Rng) -> (String, String, String, String) {
        let s = r.pick(SUBJECTS).to_string();
        let (n, p, t) = (r.pick(NAMES), r.pick(PLACES), r.pick(THINGS));
        let (pred, obj, content) = match r.below(16) {
            0 => ("works at", p.to_string(), format!("{s} works at {p}")),
            1 => ("lives in", p.to_string(), format!("{s} lives in {p}")),
            2 => ("states", t.to_string(), format!("{s} quit {t}")),
            3 => ("states", t.to_string(), format!("{s} no longer likes {t}")),
            4 => ("likes", t.to_string(), format!("{s} loves {t}")),
            5 => ("dislikes", t.to_string(), format!("{s} hates {t}")),
            6 => ("states", t.to_string(), format!("{s} doesn't enjoy {t} anymore")),
            7 => ("has manager", n.to_string(), format!("{s}'s manager is {n}")),
            8 => ("has", t.to_string(), format!("{s} has {t}")),
            9 => ("states", p.to_string(), format!("{s} is planning to move to {p}")),
            10 => ("is married to", n.to_string(), format!("{s} is married to {n}")),
            11 => ("met", n.to_string(), format!("{s} met {n}")),
            12 => ("has friend", n.to_string(), format!("{s}'s friend is {n}")),
            13 => ("has neighbour", n.to_string(), format!("{s}'s neighbour is {n}")),
            14 => ("states", p.to_string(), format!("{s} left {p}")),
            _ => ("states", t.to_string(), format!("{s} plays {t}")),
        };
        (s, pred.to_string(), obj, content)
    }

    /// A live fact `f{i}` of [`fact`], embedded with the hashed embedder
    /// (`dims`), with a content hash shared by equal contents; some expire
    /// on a date, some are invalidated.
    /// How many facts a random conversation holds: in every fourth round
    /// enough for the [`ScanIndex`] to keep 8-bit copies
    /// ([`super::QUANTISE_FROM`]).
    pub(crate) fn fact_count(r: &mut Rng, round: usize) -> usize {
        r.below(80) + if round % 4 == 3 { super::QUANTISE_FROM } else { 1 }
    }

    /// A random fact; from 200 facts on, every other one's vector is moved
    /// off the hashed embedder's grid (each value by under half a percent),
    /// so both kinds of 8-bit copies are searched.
    pub(crate) fn fact_rec(r: &mut Rng, i: usize, dims: usize) -> FactRec {
        let (s, p, o, content) = fact(r);
        let mut f = FactRec::for_test(&format!("f{i}"), &s, &p, &o);
        f.hash = content.to_lowercase();
        f.embedding = crate::embed::hashed::HashedEmbedder::new(dims).embed_one(&content);
        if i >= 200 && i % 2 == 1 {
            f.embedding.iter_mut().for_each(|x| *x *= 1.0 + (r.below(1001) as f32 / 1000.0 - 0.5) * 0.01);
        }
        f.content = content;
        if r.chance(10) {
            f.valid_until = Some(if r.chance(50) { "2024-01-01" } else { "2025-01-01" }.into());
        }
        if r.chance(10) {
            f.invalid_at = Some("2024-02-01".into());
        }
        if r.chance(30) {
            f.kind = crate::types::FactKind::Relationship;
        }
        f
    }
}
