//! FTS5's own `unicode61` tokenizer, called in memory through FTS5's C API
//! (`fts5_api.xFindTokenizer`, the documented way for an application to use
//! a tokenizer FTS5 has registered), so the search's statistics are counted
//! on exactly the tokens the `facts_fts` table indexes: the same library,
//! the same tokenizer, its default options (the table is created with
//! `tokenize='unicode61'` and no options), with no table written or read.
//!
//! Tokens are interned: each distinct token gets a small number, and a text
//! becomes the sequence of its tokens' numbers. A text's sequence is kept
//! (keyed by the text), so a fact's content is tokenised once however often
//! the live set it belongs to is rebuilt.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::ptr::null_mut;
use std::sync::Arc;

use rusqlite::{Connection, ffi};
use rustc_hash::FxHashMap;

/// A token's number in a [`Tokens`] interner.
pub(super) type TermId = u32;

/// Past this many texts kept, the kept sequences are dropped (the interner
/// stays, so numbers never change) and refill as texts are asked for.
const KEPT_TEXTS: usize = 200_000;

/// The tokenizer, its interner and the sequences of the texts seen.
pub(super) struct Tokens {
    tokenizer: Unicode61,
    ids: FxHashMap<Box<str>, TermId>,
    kept: HashMap<Box<str>, Arc<[TermId]>>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens").field("terms", &self.ids.len()).field("kept", &self.kept.len()).finish()
    }
}

impl Tokens {
    pub(super) fn new() -> rusqlite::Result<Tokens> {
        Ok(Tokens { tokenizer: Unicode61::new()?, ids: FxHashMap::default(), kept: HashMap::new() })
    }

    /// `text`'s tokens as a document, in order, each interned (and kept).
    pub(super) fn document(&mut self, text: &str) -> rusqlite::Result<Arc<[TermId]>> {
        if let Some(seq) = self.kept.get(text) {
            return Ok(Arc::clone(seq));
        }
        let seq = self.document_once(text)?;
        if self.kept.len() >= KEPT_TEXTS {
            self.kept.clear();
        }
        self.kept.insert(text.into(), Arc::clone(&seq));
        Ok(seq)
    }

    /// [`Tokens::document`] of a text not asked for again: not kept.
    pub(super) fn document_once(&mut self, text: &str) -> rusqlite::Result<Arc<[TermId]>> {
        // About one token per five bytes of English text: few regrowths.
        let mut seq = Vec::with_capacity(text.len() / 5 + 1);
        let ids = &mut self.ids;
        self.tokenizer.tokenize(text, ffi::FTS5_TOKENIZE_DOCUMENT, &mut |t| {
            let next = TermId::try_from(ids.len()).unwrap_or(TermId::MAX);
            let id = match ids.get(t) {
                Some(&id) => id,
                None => {
                    ids.insert(t.into(), next);
                    next
                }
            };
            seq.push(id);
        })?;
        Ok(seq.into())
    }

    /// Each interned token's text by its number.
    #[cfg(test)]
    pub(super) fn names(&self) -> HashMap<TermId, &str> {
        self.ids.iter().map(|(k, v)| (*v, &**k)).collect()
    }

    /// A query phrase's tokens (`None` for a token no document has held:
    /// the phrase can match nothing). Nothing is interned.
    pub(super) fn phrase(&mut self, text: &str) -> rusqlite::Result<Option<Vec<TermId>>> {
        let mut out = Some(Vec::new());
        let ids = &self.ids;
        self.tokenizer.tokenize(text, ffi::FTS5_TOKENIZE_QUERY, &mut |t| match (ids.get(t), out.as_mut()) {
            (Some(&id), Some(v)) => v.push(id),
            _ => out = None,
        })?;
        Ok(out)
    }
}

/// One instance of FTS5's `unicode61` tokenizer, with the in-memory
/// connection whose FTS5 module it was found in (FTS5's registry of
/// tokenizers lives as long as that connection, so it is kept open).
struct Unicode61 {
    module: ffi::fts5_tokenizer,
    instance: *mut ffi::Fts5Tokenizer,
    _conn: Connection,
}

// SAFETY: the instance is plain memory of FTS5's tokenizer (its options and
// buffers), used by one thread at a time (`&mut self`), and freed on drop.
unsafe impl Send for Unicode61 {}

fn failure(rc: c_int, what: &str) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(ffi::Error::new(rc), Some(format!("FTS5 tokenizer: {what}")))
}

impl Unicode61 {
    fn new() -> rusqlite::Result<Unicode61> {
        let conn = Connection::open_in_memory()?;
        // SAFETY: FTS5's documented way to obtain its API: `SELECT fts5(?1)`
        // with a pointer bound as "fts5_api_ptr" receives `fts5_api *`, valid
        // while the connection is open.
        let api = unsafe {
            let db = conn.handle();
            let mut stmt: *mut ffi::sqlite3_stmt = null_mut();
            let rc = ffi::sqlite3_prepare_v2(db, c"SELECT fts5(?1)".as_ptr(), -1, &mut stmt, null_mut());
            if rc != ffi::SQLITE_OK {
                return Err(failure(rc, "SELECT fts5(?1) did not prepare"));
            }
            let mut api: *mut ffi::fts5_api = null_mut();
            ffi::sqlite3_bind_pointer(stmt, 1, (&raw mut api).cast::<c_void>(), c"fts5_api_ptr".as_ptr(), None);
            ffi::sqlite3_step(stmt);
            ffi::sqlite3_finalize(stmt);
            api
        };
        if api.is_null() {
            return Err(failure(ffi::SQLITE_ERROR, "FTS5's API is not available"));
        }
        // SAFETY: `api` is valid (above); `xFindTokenizer` fills `module` with
        // the tokenizer's function table and `user` with its context, and
        // `xCreate` with no options makes an instance as `tokenize='unicode61'` does.
        unsafe {
            let find = (*api).xFindTokenizer.ok_or_else(|| failure(ffi::SQLITE_ERROR, "no xFindTokenizer"))?;
            let mut user: *mut c_void = null_mut();
            let mut module: ffi::fts5_tokenizer = std::mem::zeroed();
            let rc = find(api, c"unicode61".as_ptr(), &mut user, &mut module);
            if rc != ffi::SQLITE_OK {
                return Err(failure(rc, "unicode61 is not registered"));
            }
            let create = module.xCreate.ok_or_else(|| failure(ffi::SQLITE_ERROR, "no xCreate"))?;
            let mut instance: *mut ffi::Fts5Tokenizer = null_mut();
            let rc = create(user, null_mut(), 0, &mut instance);
            if rc != ffi::SQLITE_OK || instance.is_null() {
                return Err(failure(rc, "unicode61 did not start"));
            }
            Ok(Unicode61 { module, instance, _conn: conn })
        }
    }

    /// Calls `sink` with each token of `text` (`flags`: FTS5's reason, a
    /// document or a query), in order. A colocated token (a synonym at the
    /// position of the one before; `unicode61` emits none) is skipped.
    fn tokenize(&mut self, text: &str, flags: c_int, sink: &mut dyn FnMut(&str)) -> rusqlite::Result<()> {
        unsafe extern "C" fn each(ctx: *mut c_void, tflags: c_int, token: *const c_char, n: c_int, _: c_int, _: c_int) -> c_int {
            if tflags & ffi::FTS5_TOKEN_COLOCATED != 0 {
                return ffi::SQLITE_OK;
            }
            // SAFETY: `ctx` is the `&mut &mut dyn FnMut(&str)` passed below,
            // alive for the call; FTS5 passes `n` bytes at `token`.
            unsafe {
                let sink = &mut *ctx.cast::<&mut dyn FnMut(&str)>();
                let bytes = std::slice::from_raw_parts(token.cast::<u8>(), usize::try_from(n).unwrap_or(0));
                sink(&String::from_utf8_lossy(bytes));
            }
            ffi::SQLITE_OK
        }
        let Some(run) = self.module.xTokenize else { return Err(failure(ffi::SQLITE_ERROR, "no xTokenize")) };
        let n = c_int::try_from(text.len()).map_err(|_| failure(ffi::SQLITE_TOOBIG, "text too long"))?;
        let mut sink: &mut dyn FnMut(&str) = sink;
        // SAFETY: the instance is alive; `text` outlives the call and is
        // passed with its length; `each` receives `ctx` as given.
        let rc = unsafe { run(self.instance, (&raw mut sink).cast::<c_void>(), flags, text.as_ptr().cast::<c_char>(), n, Some(each)) };
        if rc == ffi::SQLITE_OK { Ok(()) } else { Err(failure(rc, "tokenizing failed")) }
    }
}

impl Drop for Unicode61 {
    fn drop(&mut self) {
        if let Some(delete) = self.module.xDelete {
            // SAFETY: the instance was made by this module's xCreate and is
            // deleted once; the connection (a field) is closed after this.
            unsafe { delete(self.instance) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(t: &mut Tokens, text: &str) -> Vec<String> {
        let seq = t.document(text).unwrap_or_else(|e| panic!("{e}"));
        let names: HashMap<TermId, &str> = t.ids.iter().map(|(k, v)| (*v, &**k)).collect();
        seq.iter().map(|id| names[id].to_string()).collect()
    }

    #[test]
    fn unicode61_folds_case_and_diacritics_and_splits_on_punctuation() {
        let mut t = Tokens::new().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(words(&mut t, "Café au LAIT, don't foo_bar 42x"), ["cafe", "au", "lait", "don", "t", "foo", "bar", "42x"]);
        assert_eq!(words(&mut t, "🎉 — ’"), Vec::<String>::new());
        assert_eq!(t.phrase("cafe").unwrap_or_else(|e| panic!("{e}")), Some(vec![0]));
        assert_eq!(t.phrase("Café").unwrap_or_else(|e| panic!("{e}")), Some(vec![0]));
        assert_eq!(t.phrase("foo_bar").unwrap_or_else(|e| panic!("{e}")), Some(vec![5, 6]));
        assert_eq!(t.phrase("_").unwrap_or_else(|e| panic!("{e}")), Some(vec![]));
        assert_eq!(t.phrase("unseen").unwrap_or_else(|e| panic!("{e}")), None);
    }
}
