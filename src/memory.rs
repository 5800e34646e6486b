//! A run's resident memory: malloc's arenas.
//!
//! glibc's malloc gives each thread that allocates while another holds the
//! lock an arena of its own (up to eight per core), and keeps what a
//! thread frees in that thread's arena, for that arena's later allocations;
//! its free pages stay resident until trimmed. A run forms its
//! conversations on its worker threads, computes its frames on polars'
//! threads and draws its report on the main thread, so what formation and
//! the analysis freed was not reused by the report: at 250,000 turns the
//! peak RSS was about 210 MB above the live heap's peak (docs/speed.md).
//! One measure, which changes no value (only where freed memory goes):
//! once the run has dropped a large structure (the candidates' records
//! after the analysis built its frames, the analysis's intermediate
//! frames), [`release_free`] returns the whole free pages of every arena to
//! the system (`malloc_trim`).
//!
//! Not done: making every thread allocate from one arena
//! (`mallopt(M_ARENA_MAX, 1)`). It took the 250,000-turn run's peak from
//! about 520 MB to about 410 MB, but on a quiet machine it made that run
//! about 1.5 times slower and a LoCoMo dev run with QA about 1.4 times
//! slower (the threads contend for the one arena; docs/speed.md).
//!
//! The command line's Rust heap is mimalloc's (src/main.rs). It returns
//! freed pages itself, but only a second after they were freed (its
//! `purge_delay`) and only for pages its threads have handed back: the
//! 250,000-turn run's peak RSS (about 470 MB, for about 270 MB of live
//! heap) was reached while the report wrote its tables and built its rows,
//! less than a second after the analysis had freed its frames. So
//! [`release_free`] also asks mimalloc to collect now: each thread of the
//! run's pools (rayon's and polars') when it next is idle, and the calling
//! thread at once, which also purges every free page already handed back
//! (`mi_collect(true)`). The report calls it between its tables and after
//! building its rows too (docs/speed.md, "250,000 turns: memory, fourth
//! pass"). It does so only once the process has held
//! [`COLLECT_ABOVE`] committed at some point: on a small run the purges,
//! and the faults when the memory is taken again, cost time and save
//! nothing that matters. Setting mimalloc's delay to zero after formation
//! did as well for the peak, but made a LoCoMo run with QA take about 15%
//! more CPU: every large buffer freed was given back and faulted in again.
//!
//! `malloc_trim` still returns what the C libraries (SQLite, zstd) freed
//! through glibc's malloc. With another C library it does nothing.

/// Returns the whole free pages of every malloc arena to the operating
/// system (glibc's `malloc_trim(0)`), and asks mimalloc to collect on this
/// thread now and on each pool thread when it next is idle (without
/// waiting for them) once mimalloc's peak commit has reached
/// [`COLLECT_ABOVE`]; without glibc or mimalloc, the part that is missing
/// does nothing.
pub fn release_free() {
    #[cfg(feature = "full")]
    if mimalloc_peak_commit() >= COLLECT_ABOVE {
        // SAFETY: `mi_collect` takes no pointer: it frees the calling
        // thread's empty pages and, forced, purges the free pages every
        // thread has handed back to mimalloc's arenas (thread-safe; a
        // thread whose heap mimalloc does not manage has nothing to free).
        let collect = |_: rayon::BroadcastContext<'_>| unsafe { mi_collect(true) };
        rayon::spawn_broadcast(collect);
        polars_core::runtime::THREAD_POOL.spawn_broadcast(collect);
        unsafe { mi_collect(true) };
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: `malloc_trim` takes no pointer and touches only the
        // allocator's own free chunks, under each arena's lock (it is
        // thread-safe); it returns whether memory was released, which
        // changes nothing here.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// The peak of the memory mimalloc held committed from which on
/// [`release_free`] asks it to collect. A run that never reached it is far
/// from any memory limit (a LoCoMo dev run with QA peaks at about 170 MiB
/// committed, 125 MB of RSS), and there a collect's purges, and the faults
/// when the memory is taken again, only cost time: collecting on every
/// call took about 9 ms more of a LoCoMo run's 160 ms of CPU `--no-qa`
/// (docs/speed.md, "250,000 turns: memory, fourth pass").
#[cfg(feature = "full")]
const COLLECT_ABOVE: usize = 256 << 20;

// The mimalloc crate links mimalloc's C library, whose functions are
// declared below, into every binary of this library, whichever allocator
// that binary uses.
#[cfg(feature = "full")]
extern crate mimalloc;

#[cfg(feature = "full")]
unsafe extern "C" {
    fn mi_collect(force: bool);
    fn mi_process_info(
        elapsed_msecs: *mut usize,
        user_msecs: *mut usize,
        system_msecs: *mut usize,
        current_rss: *mut usize,
        peak_rss: *mut usize,
        current_commit: *mut usize,
        peak_commit: *mut usize,
        page_faults: *mut usize,
    );
}

/// The most bytes mimalloc has held committed so far (its `peak_commit`).
#[cfg(feature = "full")]
fn mimalloc_peak_commit() -> usize {
    let mut v = [0usize; 8];
    let [a, b, c, d, e, f, g, h] = &mut v;
    // SAFETY: each pointer is to a distinct `usize` of `v`, alive for the
    // call; mimalloc writes one value through each and keeps none.
    unsafe { mi_process_info(a, b, c, d, e, f, g, h) };
    v[6]
}

#[cfg(all(test, feature = "full"))]
mod tests {
    use super::*;

    #[test]
    fn peak_commit_is_read_in_bytes() {
        // This test binary's heap is the system's, so mimalloc's own
        // allocation is what moves its count.
        use std::alloc::{GlobalAlloc, Layout};
        let layout = Layout::from_size_align(64 << 20, 8).unwrap();
        let before = mimalloc_peak_commit();
        // SAFETY: a non-zero size; the block is written within its length
        // and freed once, with the layout it was allocated with.
        let big = unsafe { mimalloc::MiMalloc.alloc(layout) };
        assert!(!big.is_null());
        // Touch it so it is committed whatever mimalloc's commit policy.
        unsafe { std::ptr::write_bytes(big, 1, 64 << 20) };
        let during = mimalloc_peak_commit();
        unsafe { mimalloc::MiMalloc.dealloc(big, layout) };
        assert!(during >= before + (64 << 20), "{before} -> {during}");
        // A peak: freeing and collecting do not lower it.
        release_free();
        assert!(mimalloc_peak_commit() >= during);
    }
}
