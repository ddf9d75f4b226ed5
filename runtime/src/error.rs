//! The runtime's error type.

use std::fmt;

/// An error reported by the DPS runtime: bad input (a mapping string, a graph that does not
/// validate or differs between ranks) or a failure during execution.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

/// What kind of error it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A mapping string is malformed or names a rank or host that does not exist.
    Mapping,
    /// A graph does not validate, or ranks built different graphs.
    Graph,
    /// MPI could not be initialised or behaves unexpectedly.
    Mpi,
    /// An operation failed while the graph ran.
    Failed,
    /// A program's options are inconsistent.
    Usage,
    /// A file cannot be created or written.
    Io,
    /// A parallel service is not running, refuses the client, or does not match its types.
    Service,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into() }
    }
    pub(crate) fn mapping(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Mapping, message)
    }
    pub(crate) fn graph(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Graph, message)
    }
    /// What kind of error it is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Shows the message as is, so that `main` returning this error prints it readably.
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({:?} error)", self.message, self.kind)
    }
}

impl std::error::Error for Error {}
