//! Bounds of the command line's numeric knobs, checked before anything is
//! allocated or spawned (the config keys' ranges are `config::BOUNDS`).
//! The CLI checks them as it parses; the library checks them again where
//! it would allocate.

use std::ops::RangeInclusive;

use crate::error::{Error, Result};

/// `--threads`: worker threads of a run, sweep or comparison.
pub const THREADS: RangeInclusive<u64> = 1..=1024;
/// `--limit N` conversations.
pub const CONVERSATION_LIMIT: RangeInclusive<u64> = 1..=1_000_000;
/// `--resamples`: bootstrap resamples of a comparison (0: no intervals).
pub const RESAMPLES: RangeInclusive<u64> = 0..=100_000;
/// `--resamples`'s default.
pub const DEFAULT_RESAMPLES: usize = 1000;
/// `--seed`'s default (the bootstrap's).
pub const DEFAULT_SEED: u64 = 42;
/// Most bootstrap draws (episodes × resamples) one comparison makes: each
/// draw is a row of every metric component, so this bounds its memory.
pub const MAX_BOOTSTRAP_DRAWS: usize = 20_000_000;
/// `--max-points`: the largest grid a sweep accepts.
pub const MAX_POINTS: RangeInclusive<u64> = 1..=1_000_000;
/// `--max-points`'s default.
pub const DEFAULT_MAX_POINTS: usize = 10_000;
/// `--embed-dims`: dimensions of an HTTP embedder's vectors.
pub const EMBED_DIMS: RangeInclusive<u64> = 1..=65_536;

/// `Err` naming `flag` and its range unless `value` is in `range`.
pub fn check(flag: &str, value: u64, range: &RangeInclusive<u64>) -> Result<()> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(Error::Config(format!("{flag} {value}: must be within {}..={}", range.start(), range.end())))
    }
}

/// [`check`] for `--threads`.
pub fn check_threads(threads: usize) -> Result<()> {
    check("--threads", threads as u64, &THREADS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_names_flag_and_range() {
        assert!(check_threads(1).is_ok() && check_threads(1024).is_ok());
        assert_eq!(check_threads(0).unwrap_err().to_string(), "config: --threads 0: must be within 1..=1024");
        assert!(check_threads(100_000).unwrap_err().to_string().contains("--threads 100000"));
        assert!(check("--resamples", 1_000_000_000, &RESAMPLES).is_err());
    }
}
