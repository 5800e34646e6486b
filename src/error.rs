//! The library's error type. Messages are lowercase fragments that read after
//! "failed to …"; the CLI prints the whole chain on one line.

use std::path::PathBuf;

/// The CLI's exit codes (documented in the README).
pub mod exit_code {
    /// Success.
    pub const OK: u8 = 0;
    /// A gate failed, or `fixtures check` found problems.
    pub const FAILED: u8 = 1;
    /// An error: bad input, bad config, an unreadable file, an output
    /// directory another memform process holds, a symbolic link planted
    /// where memform writes, or a `--keep-going` run that skipped a
    /// conversation (the README lists every case).
    pub const ERROR: u8 = 2;
}

/// Everything that can go wrong in the library. Bad input is a value of this
/// type, never a panic.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("read {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A dataset or config file whose content is wrong: names the file and
    /// the field or line.
    #[error("{path}: {message}")]
    Input { path: PathBuf, message: String },
    #[error("unknown dataset format in {path}: {message}")]
    UnknownFormat { path: PathBuf, message: String },
    #[error("config: {0}")]
    Config(String),
    #[error("store {path}")]
    Store {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("embed: {0}")]
    Embed(String),
    /// The files of a local embedding model are missing or unreadable.
    #[error("load embedding model from {path}: {message}")]
    EmbedModel { path: PathBuf, message: String },
    /// An HTTP embeddings server failed: unreachable, timed out after the
    /// retries, an error status, or a body that is not the expected JSON.
    #[error("call embedding server at {url}: {message}")]
    EmbedHttp { url: String, message: String },
    /// Replay found no recorded vector for a text.
    #[error("{0}")]
    EmbeddingMissing(Box<MissingEmbedding>),
    /// A recorded embedding cache that cannot be used as it is.
    #[error("embedding cache {path}: {message}")]
    EmbedCache { path: PathBuf, message: String },
    /// The LLM server could not be reached at all (refused, unresolvable).
    #[error("connect to llm server at {url}: {message} (is the server running? `make llm-server-start` starts the local one)")]
    LlmConnect { url: String, message: String },
    /// Every attempt timed out.
    #[error("call llm server at {url}: no answer within {timeout_secs}s after {attempts} attempt(s)")]
    LlmTimeout { url: String, timeout_secs: f64, attempts: u32 },
    /// The server answered with an error status (4xx at once, 5xx after the retries).
    #[error("call llm server at {url}: http status {status} after {attempts} attempt(s): {body}")]
    LlmStatus { url: String, status: u16, attempts: u32, body: String },
    /// The server answered 2xx with a body that is not the expected JSON.
    #[error("read llm answer from {url}: {message}")]
    LlmBody { url: String, message: String },
    /// Replay found no recorded answer for a request.
    #[error("{0}")]
    FixtureMiss(Box<FixtureMiss>),
    /// A fixture file that cannot be used as it is.
    #[error("fixture {path}: {message}")]
    Fixture { path: PathBuf, message: String },
    /// Another memform process holds the lock of an output directory.
    #[error("{path} is in use by another memform process ({holder}); wait for it to finish or choose another --out")]
    Busy { path: PathBuf, holder: String },
    #[error("{0}")]
    Other(String),
}

/// What a replay miss of the embedding cache names.
#[derive(Debug)]
pub struct MissingEmbedding {
    /// Where the text comes from (conversation and episode).
    pub origin: String,
    /// The first missing text (normalised, cut to 80 characters).
    pub preview: String,
    pub key: String,
    /// Texts of the call without a recorded vector.
    pub missing: usize,
    /// Texts in the call.
    pub texts: usize,
    /// The cache directory searched.
    pub dir: PathBuf,
    /// The command line that records the missing vectors.
    pub command: String,
}

impl std::fmt::Display for MissingEmbedding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "replay embedding of {}: no recorded vector {} for text {:?} ({} of {} texts missing) in {}; record them with `{}`",
            self.origin,
            self.key,
            self.preview,
            self.missing,
            self.texts,
            self.dir.display(),
            self.command
        )
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a replay miss knows: where the call came from, the key it wanted,
/// and the closest recorded request of the same stage with what differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureMiss {
    pub stage: String,
    pub conversation: String,
    pub episode: String,
    pub key: String,
    pub dir: PathBuf,
    pub closest: String,
}

impl std::fmt::Display for FixtureMiss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "replay {} call for conversation {}, episode {}: no fixture {}.json in {}; {}; \
             re-record with `--llm record`{}",
            self.stage,
            self.conversation,
            self.episode,
            self.key,
            self.dir.display(),
            self.closest,
            make_record_hint(&self.dir)
        )
    }
}

/// The make target that records the fixtures in `dir`, as a hint: LoCoMo's
/// (`locomo-fixtures/…`) and the bundled scenarios' have one, a user's
/// dataset none.
pub fn make_record_hint(dir: &std::path::Path) -> &'static str {
    let has = |name: &str| dir.components().any(|c| c.as_os_str() == name);
    if has("locomo-fixtures") {
        " (e.g. `make record-locomo`)"
    } else if has("scenarios") && has("datasets") {
        " (e.g. `make record`)"
    } else {
        ""
    }
}

impl Error {
    /// An input error; control characters in `message` (a quoted value
    /// may hold a newline) are escaped, so it stays one line.
    pub fn input(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::Input { path: path.into(), message: one_line(&message.into()) }
    }
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
    pub fn write(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Write { path: path.into(), source }
    }
}

/// `text` with its control characters escaped (`\n` for a newline…), so it
/// prints on one line.
pub fn one_line(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}

/// An error and all its sources on one line, joined by ": ".
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// An input file that starts with a UTF-8 byte-order mark is refused by
/// name (JSON and TOML readers would report a bare "expected value at
/// line 1 column 1").
pub fn reject_bom(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Err(Error::input(
            path,
            "line 1 column 1: starts with a UTF-8 byte-order mark (bytes EF BB BF); save the file as UTF-8 without it",
        ));
    }
    Ok(())
}
