//! Errors of the plugin. Each says what failed, on which object, and what to do.

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No usable kubeconfig or cluster connection settings.
    #[error(
        "cannot load the cluster connection settings: {0}; pass --kubeconfig or set KUBECONFIG"
    )]
    Kubeconfig(String),
    /// An API request failed.
    #[error("{action} failed: {source}")]
    Api {
        /// What the plugin was doing, naming the object.
        action: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// The named revision does not exist.
    #[error(
        "no NetworkConfigRevision {0:?} (give a name, a sequence number or a unique hash prefix); `kubectl netrollout history` lists them"
    )]
    NoSuchRevision(String),
    /// The named node has no `NodeNetworkConfig`.
    #[error("no NodeNetworkConfig for node {0:?}; `kubectl netrollout nodes` lists them")]
    NoSuchNode(String),
    /// The command would do something unsafe or pointless; the message says why and what to do.
    #[error("{0}")]
    Refused(String),
    /// A revision's snapshot cannot be rendered for the current nodes.
    #[error("cannot render revision {revision}: {message}")]
    Render {
        /// The revision.
        revision: String,
        /// The renderer's problems.
        message: String,
    },
    /// A value given on the command line is malformed.
    #[error("invalid {what} {value:?}: {hint}")]
    Argument {
        /// Which argument.
        what: &'static str,
        /// The value given.
        value: String,
        /// The accepted forms.
        hint: &'static str,
    },
    /// A manifest cannot be read or converted.
    #[error("{source_name}: {message}")]
    Manifest {
        /// File name (or `-` for stdin) and document number.
        source_name: String,
        /// What is wrong.
        message: String,
    },
    /// Output could not be produced.
    #[error("cannot write the output: {0}")]
    Output(String),
}

impl Error {
    /// Wraps a client error with what the plugin was doing.
    pub fn api(action: impl Into<String>) -> impl FnOnce(kube::Error) -> Self {
        let action = action.into();
        move |source| Self::Api { action, source }
    }
}

/// Result of the plugin's fallible functions.
pub type Result<T, E = Error> = std::result::Result<T, E>;
