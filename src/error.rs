//! The library's error type. Messages are lowercase fragments that read after
//! "failed to …"; the CLI prints the whole chain on one line.

use std::path::PathBuf;

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
    #[error("{0}")]
    Other(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

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
