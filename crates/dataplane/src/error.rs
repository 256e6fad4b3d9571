//! The crate's error type.

use std::io;

/// What went wrong; every variant names the object concerned.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kernel refused an operation.
    #[error("{op} {object}: the kernel answered: {source}")]
    Kernel {
        /// The operation (e.g. "create link").
        op: &'static str,
        /// The object (e.g. "link l2.100 (bridge)").
        object: String,
        /// The kernel's error (an errno).
        source: io::Error,
    },
    /// Reading state from the kernel failed.
    #[error("reading {what} from the kernel failed: {source}")]
    Dump {
        /// What was being read (links, addresses, routes, rules).
        what: &'static str,
        /// The netlink or decoding error.
        source: io::Error,
    },
    /// The netlink connection could not be set up or broke down.
    #[error("netlink connection: {0}")]
    Connection(#[source] io::Error),
    /// Entering a network namespace failed.
    #[error("entering network namespace {path}: {source}")]
    Namespace {
        /// The namespace file (e.g. /run/netns/NAME).
        path: String,
        /// The system error.
        source: io::Error,
    },
    /// The desired state is inconsistent; fix the config that produced it.
    #[error("invalid config: {object} {reason}")]
    Invalid {
        /// The offending object.
        object: String,
        /// Why it cannot be applied.
        reason: String,
    },
    /// An operation needs a link the kernel does not have (e.g. a foreign underlay device).
    #[error("{op} {object}: link {link} does not exist")]
    MissingLink {
        /// The operation.
        op: &'static str,
        /// The object.
        object: String,
        /// The missing link's name.
        link: String,
    },
}

impl Error {
    /// The kernel errno, when the kernel refused an operation.
    pub fn errno(&self) -> Option<i32> {
        match self {
            Error::Kernel { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
