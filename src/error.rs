//! The library's error type. Messages are lowercase fragments that read after
//! "failed to …"; the CLI prints the whole chain on one line.

use std::path::PathBuf;

/// Everything that can go wrong in the library. Bad input is a value of this
/// type, never a panic.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("read {path}: {source}")]
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
    #[error("store {path}: {source}")]
    Store {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("embed: {0}")]
    Embed(String),
    /// The LLM server could not be reached at all (refused, unresolvable).
    #[error(
        "connect to llm server at {url}: {message} (is the server running? `make llm-server-start` starts the local one)"
    )]
    LlmConnect { url: String, message: String },
    /// Every attempt timed out.
    #[error(
        "call llm server at {url}: no answer within {timeout_secs}s after {attempts} attempt(s)"
    )]
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
    #[error("{0}")]
    Other(String),
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
             re-record with `--llm record` (e.g. `make record`)",
            self.stage,
            self.conversation,
            self.episode,
            self.key,
            self.dir.display(),
            self.closest
        )
    }
}

impl Error {
    pub fn input(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::Input { path: path.into(), message: message.into() }
    }
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
    pub fn write(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Write { path: path.into(), source }
    }
}
