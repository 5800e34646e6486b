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
//! The command line's Rust heap is mimalloc's (src/main.rs), which returns
//! freed pages itself after a short delay; `malloc_trim` still returns what
//! the C libraries (SQLite, zstd) freed through glibc's malloc. With
//! another C library it does nothing.

/// Returns the whole free pages of every malloc arena to the operating
/// system (glibc's `malloc_trim(0)`); elsewhere, nothing.
pub fn release_free() {
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
