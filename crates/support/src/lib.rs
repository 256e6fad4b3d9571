//! What every netrollout binary needs, done one way: the API client from a kubeconfig or the
//! pod's service account, logging to stderr, SIGTERM/Ctrl-C as a shutdown future, the metrics
//! and health HTTP server, and the grammar of every duration flag.
//!
//! Layout:
//! - [`duration`] holds [`parse_duration`], the one duration grammar (`90s`, `1m30s`, `500ms`,
//!   `1.5s`).
//! - [`logging`] holds [`LogFormat`] and [`init_logging`].
//! - [`client`](mod@client) holds [`kube_config`] and [`client()`].
//! - [`signals`] holds [`shutdown`].
//! - [`http`] holds [`bind`] and [`serve`]; a bind failure is an error the binary stops on (an
//!   address in use only after [`http::BIND_RETRY`] of trying again).
//! - [`exposition`] holds [`exposition::classic`], the `/metrics` body in the Prometheus text
//!   format (`prometheus_client` writes OpenMetrics).
//! - [`runtime`] holds [`block_on`], the runtime each binary's library runs its `main` on.
//! - [`tasks`] holds [`tasks::Tasks`], supervised background tasks: a dead one ends the binary.
//! - [`Error`] says what went wrong, naming the file or address concerned.
#![forbid(unsafe_code)]

pub mod client;
pub mod duration;
pub mod exposition;
pub mod http;
pub mod logging;
pub mod runtime;
pub mod signals;
pub mod tasks;

pub use client::{client, kube_config};
pub use duration::{DurationError, parse_duration};
pub use http::{bind, bind_within, serve};
pub use logging::{LogFormat, init_logging};
pub use runtime::{Flavor, block_on};
pub use signals::shutdown;

/// What can go wrong while a binary starts.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kubeconfig file given could not be read.
    #[error("cannot read kubeconfig {path}: {source}")]
    KubeconfigRead {
        /// The file.
        path: String,
        /// Why.
        source: kube::config::KubeconfigError,
    },
    /// The kubeconfig file was read but does not describe a usable cluster.
    #[error("invalid kubeconfig {path}: {source}")]
    KubeconfigInvalid {
        /// The file.
        path: String,
        /// Why.
        source: kube::config::KubeconfigError,
    },
    /// Neither `$KUBECONFIG`, `~/.kube/config` nor an in-cluster service account was found.
    #[error("no kubeconfig: give --kubeconfig, set $KUBECONFIG or run in a cluster ({0})")]
    NoConfig(#[source] kube::config::InferConfigError),
    /// The client could not be built from a config (e.g. a bad certificate).
    #[error("cannot build the API client: {0}")]
    Client(#[source] kube::Error),
    /// A server address could not be bound.
    #[error(
        "cannot listen on {addr} for the {what} server: {source}; choose another address with its flag"
    )]
    Bind {
        /// Which server (e.g. "metrics").
        what: &'static str,
        /// The address.
        addr: std::net::SocketAddr,
        /// The system error (e.g. address in use).
        source: std::io::Error,
    },
}

/// Result of this crate's fallible functions.
pub type Result<T, E = Error> = std::result::Result<T, E>;
