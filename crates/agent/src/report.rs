//! What the agent tells the API about its node: [`Report`], decided by the transaction core
//! ([`crate::txn`]) and written by the status writer ([`crate::status`]). Data only.

use netrollout_api::NodePhase;

/// What the agent tells the API about its node.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The revision the report is about (`status.observedRevision`); `None` leaves it alone.
    pub revision: Option<String>,
    /// The phase; `None` leaves it alone (agent-level problems such as corrupt state).
    pub phase: Option<NodePhase>,
    /// Machine-readable reason, e.g. `ProbeFailed`.
    pub reason: String,
    /// What happened, for people.
    pub message: String,
    /// When the attempt started.
    pub started_at: Option<jiff::Timestamp>,
    /// When the attempt finished.
    pub finished_at: Option<jiff::Timestamp>,
    /// The node's last-known-good revision.
    pub last_known_good: Option<String>,
    /// `NetworkConfigReady` on the Node and on the `NodeNetworkConfig`.
    pub ready: bool,
    /// The `metadata.generation` of the `NodeNetworkConfig` whose spec the report is about (the
    /// condition's `observedGeneration`); `None` keeps the one last written (agent-level
    /// problems, and crash recovery before the object is seen).
    pub generation: Option<i64>,
    /// `status.preexistingFailures`: the checks that failed before the change (not judged);
    /// `None` leaves the list alone.
    pub preexisting_failures: Option<Vec<netrollout_api::FailedCheck>>,
}
