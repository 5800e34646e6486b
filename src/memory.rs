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
//! Two measures, neither of which changes a value (only where freed memory
//! goes):
//!
//! - [`one_arena`]: `memform run` allocates from one arena on every
//!   thread, so memory one thread frees the next allocation on any thread
//!   reuses (at 250,000 turns the peak RSS fell by about 90 MB; the
//!   threads' caches of small chunks keep most allocations off the arena's
//!   lock: on two cores user CPU stayed within the runs' spread);
//! - [`release_free`]: once the run has dropped a large structure (the
//!   candidates' records after the analysis built its frames), the whole
//!   free pages of every arena are returned to the system (`malloc_trim`).
//!
//! With another allocator or C library both do nothing.

/// Makes the threads started after it allocate from malloc's main arena
/// (glibc's `mallopt(M_ARENA_MAX, 1)`); elsewhere, nothing. Called by
/// `memform run` before anything starts a thread.
pub fn one_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        /// `M_ARENA_MAX` of glibc's `<malloc.h>`.
        const M_ARENA_MAX: std::ffi::c_int = -8;
        unsafe extern "C" {
            fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
        }
        // SAFETY: `mallopt` takes two integers and only sets the
        // allocator's parameter, under its lock; a refusal (0) leaves the
        // default, which is only a larger RSS.
        unsafe {
            mallopt(M_ARENA_MAX, 1);
        }
    }
}

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
