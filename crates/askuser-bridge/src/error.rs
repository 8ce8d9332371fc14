//! The library's error for what a bridge or a client of it sets up: its files, its
//! settings, its address, its store. Typed, so that a caller acts on what it must (an
//! address in use, a damaged store, a refused setting) without reading the words; each
//! says what went wrong as a person acts on it, the system's own error as its source
//! (shown after it: "cannot write /x/token: Permission denied").
//!
//! The errors of the running bridge are [`crate::hub::BridgeError`] and the store's
//! [`crate::store::StoreError`]; `anyhow` is only the binary's.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or folder could not be used: "cannot {doing} {path}".
    #[error("cannot {doing} {}", path.display())]
    File {
        doing: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A setting, a flag, an address or a file's contents is not what it must be: the
    /// message names it, what was expected and what came.
    #[error("{0}")]
    Invalid(String),
    /// The address to listen on is taken by another program.
    #[error("{0}")]
    AddressInUse(String),
    /// Another bridge holds this data directory.
    #[error("{0}")]
    Locked(String),
    /// The store is damaged, truncated or half-written: refused before anything is lost
    /// (the message says how to go on).
    #[error("{0}")]
    Damaged(String),
    /// The store refused (a [`crate::store::StoreError`], boxed: the store's own
    /// modules use this one).
    #[error(transparent)]
    Store(Box<dyn std::error::Error + Send + Sync>),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// [`Error::Invalid`] saying `message`.
    pub fn invalid(message: impl Into<String>) -> Error {
        Error::Invalid(message.into())
    }
}

/// `io::Result`s as [`Error::File`]s: `.or_file("write", &path)?`.
pub(crate) trait OrFile<T> {
    fn or_file(self, doing: &'static str, path: &Path) -> Result<T>;
}

impl<T> OrFile<T> for std::io::Result<T> {
    fn or_file(self, doing: &'static str, path: &Path) -> Result<T> {
        self.map_err(|source| Error::File { doing, path: path.to_path_buf(), source })
    }
}

/// Returns an [`Error::Invalid`] with a formatted message (as `anyhow::bail!`).
macro_rules! invalid {
    ($($arg:tt)*) => {
        return Err(crate::error::Error::Invalid(format!($($arg)*)))
    };
}
pub(crate) use invalid;
