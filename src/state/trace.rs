//! Decision traces for sweeps: the range of each swept threshold's values
//! that makes every comparison a conversation's formation made come out the
//! same way.
//!
//! The pipeline is deterministic, and a swept threshold reaches a
//! conversation's decisions only through comparisons of computed values
//! (cosines) against it. While a [`Recorder`] is installed on the thread,
//! each comparison site ([`at_least`], [`below`]) narrows the interval of
//! the threshold it compared against (found by its value: a comparison
//! against a value two swept keys share narrows both, which only makes the
//! intervals smaller). Another grid point whose values lie inside every
//! interval makes the same comparisons with the same outcomes, so it forms
//! the same conversation: a sweep reuses the result instead of running it
//! again. Without a recorder the sites are plain comparisons.
//!
//! An interval is only as wide as the comparisons made allow, so a site
//! should compare what decides its outcome and nothing more: a search for
//! the nearest match at or above a threshold (dedupe's near duplicates)
//! finds the nearest first and compares only that cosine, and a comparison
//! against a key no sweep traces (`entity_merge_threshold`) is made
//! unrecorded, since the recorder knows a threshold only by its value.

use std::cell::RefCell;

/// One end of an interval: a value and whether the end is included.
#[derive(Debug, Clone, Copy, PartialEq)]
struct End {
    value: f64,
    inclusive: bool,
}

/// The values of one threshold consistent with every comparison recorded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    lo: End,
    hi: End,
}

impl Default for Interval {
    fn default() -> Interval {
        Interval { lo: End { value: f64::NEG_INFINITY, inclusive: true }, hi: End { value: f64::INFINITY, inclusive: true } }
    }
}

impl Interval {
    /// Whether `t` lies inside.
    pub fn contains(&self, t: f64) -> bool {
        let above = t > self.lo.value || (self.lo.inclusive && t == self.lo.value);
        let under = t < self.hi.value || (self.hi.inclusive && t == self.hi.value);
        above && under
    }

    /// Only thresholds above `x` (`inclusive`: or equal to it).
    fn above(&mut self, x: f64, inclusive: bool) {
        if x > self.lo.value || (x == self.lo.value && !inclusive) {
            self.lo = End { value: x, inclusive };
        }
    }

    /// Only thresholds below `x` (`inclusive`: or equal to it).
    fn below(&mut self, x: f64, inclusive: bool) {
        if x < self.hi.value || (x == self.hi.value && !inclusive) {
            self.hi = End { value: x, inclusive };
        }
    }
}

/// The thresholds being traced (their values at the point being run) and
/// the interval of each that is consistent with the comparisons so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorder {
    values: Vec<f64>,
    intervals: Vec<Interval>,
}

impl Recorder {
    /// A recorder for thresholds at `values` (each compared by its bits).
    pub fn new(values: Vec<f64>) -> Recorder {
        let intervals = vec![Interval::default(); values.len()];
        Recorder { values, intervals }
    }

    /// Each threshold's interval, in the order of [`Recorder::new`]'s values.
    pub fn intervals(&self) -> &[Interval] {
        &self.intervals
    }

    fn narrow(&mut self, t: f64, f: impl Fn(&mut Interval)) {
        for (v, i) in self.values.iter().zip(&mut self.intervals) {
            if v.to_bits() == t.to_bits() {
                f(i);
            }
        }
    }
}

thread_local! {
    static RECORDER: RefCell<Option<Recorder>> = const { RefCell::new(None) };
}

/// Runs `f` with `recorder` installed on this thread and returns what `f`
/// returned with the recorder as `f` left it (`None` if `f` removed it).
/// `f` must not hand work to other threads: comparisons there are not
/// recorded. A recorder already installed is put back afterwards, also
/// when `f` unwinds.
pub fn recording<T>(recorder: Recorder, f: impl FnOnce() -> T) -> (T, Option<Recorder>) {
    struct PutBack(Option<Option<Recorder>>);
    impl Drop for PutBack {
        fn drop(&mut self) {
            if let Some(previous) = self.0.take() {
                RECORDER.with(|r| *r.borrow_mut() = previous);
            }
        }
    }
    let mut put_back = PutBack(Some(RECORDER.with(|r| r.borrow_mut().replace(recorder))));
    let out = f();
    let previous = put_back.0.take().flatten();
    let recorded = RECORDER.with(|r| std::mem::replace(&mut *r.borrow_mut(), previous));
    (out, recorded)
}

/// Whether a recorder is installed on this thread (a site may then skip a
/// shortcut that decides without computing the compared value).
pub fn active() -> bool {
    RECORDER.with(|r| r.borrow().is_some())
}

/// `x >= threshold`, recorded.
pub fn at_least(x: f64, threshold: f64) -> bool {
    let out = x >= threshold;
    if !x.is_nan() {
        RECORDER.with(|r| {
            if let Some(rec) = r.borrow_mut().as_mut() {
                // True: threshold <= x; false: threshold > x.
                rec.narrow(threshold, |i| if out { i.below(x, true) } else { i.above(x, false) });
            }
        });
    }
    out
}

/// `x < threshold`, recorded.
pub fn below(x: f64, threshold: f64) -> bool {
    let out = x < threshold;
    if !x.is_nan() {
        RECORDER.with(|r| {
            if let Some(rec) = r.borrow_mut().as_mut() {
                // True: threshold > x; false: threshold <= x.
                rec.narrow(threshold, |i| if out { i.above(x, false) } else { i.below(x, true) });
            }
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_comparison_narrows_the_interval_of_the_threshold_it_read() {
        let rec = Recorder::new(vec![0.9, 0.5, 0.9]);
        let (outs, rec) = recording(rec, || {
            // 0.95 >= 0.9: any threshold up to 0.95 gives the same outcome.
            let a = at_least(0.95, 0.9);
            // 0.85 >= 0.9 is false: the threshold stays above 0.85.
            let b = at_least(0.85, 0.9);
            // 0.6 < 0.5 is false: the threshold stays at or below 0.6.
            let c = below(0.6, 0.5);
            // Not a traced value: nothing recorded.
            let d = at_least(0.1, 0.3);
            // NaN compares false against any threshold: nothing to record.
            let e = at_least(f64::NAN, 0.5);
            [a, b, c, d, e]
        });
        assert_eq!(outs, [true, false, false, false, false]);
        let rec = rec.expect("recorder");
        let [near, band, twin] = rec.intervals() else { panic!("three intervals") };
        assert_eq!(near, twin, "a value two keys share narrows both");
        for (t, inside) in [(0.85, false), (0.851, true), (0.9, true), (0.95, true), (0.951, false)] {
            assert_eq!(near.contains(t), inside, "near {t}");
        }
        for (t, inside) in [(f64::NEG_INFINITY, true), (0.6, true), (0.6001, false)] {
            assert_eq!(band.contains(t), inside, "band {t}");
        }
        // Every threshold inside gives each recorded comparison the same outcome.
        for t in [0.851, 0.9, 0.95] {
            assert!(at_least(0.95, t) && !at_least(0.85, t));
        }
        assert!(!active(), "the recorder is gone afterwards");
    }

    #[test]
    fn without_a_recorder_the_sites_only_compare_and_a_nested_one_is_put_back() {
        assert!(at_least(1.0, 1.0) && !below(1.0, 1.0) && below(0.5, 1.0));
        let (_, outer) = recording(Recorder::new(vec![0.5]), || {
            let (_, inner) = recording(Recorder::new(vec![0.5]), || at_least(0.7, 0.5));
            assert!(inner.expect("inner").intervals()[0].contains(0.7));
            assert!(active());
            at_least(0.4, 0.5)
        });
        let outer = outer.expect("outer");
        assert!(!outer.intervals()[0].contains(0.4) && outer.intervals()[0].contains(1.0), "the inner comparison is not the outer's");
        assert!(!active());
    }
}
