//! What [`decide`](super::decide()) asks the I/O layer to do. Execute the actions **in order**
//! and stop at the first failed write; the next pass decides again from fresh state (every
//! action is idempotent or guarded by a resourceVersion precondition).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use netrollout_api::Snapshot;

use super::model::InputRef;
use super::verdict::Verdict;

/// Why a revision's sequence is raised (the text starts the log line and the Event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RaiseReason {
    /// A person asked for a retry of a Failed or Blocked revision.
    Retried,
    /// The inputs equal this older revision again (an undo).
    InputsEqualAgain,
}

impl RaiseReason {
    /// For people.
    pub fn as_str(self) -> &'static str {
        match self {
            RaiseReason::Retried => "retried by a person",
            RaiseReason::InputsEqualAgain => "the inputs equal this revision again",
        }
    }
}

/// The `Accepted` condition and `status.revision` to write on one input.
#[derive(Clone, Debug, PartialEq)]
pub struct AcceptedUpdate {
    /// What the condition says.
    pub verdict: Verdict,
    /// The input's `metadata.generation` the condition observes.
    pub generation: Option<i64>,
    /// The input's whole `status.conditions` with `Accepted` replaced.
    pub conditions: Vec<Condition>,
}

/// One step of the revision lifecycle.
#[derive(Clone, Debug, PartialEq)]
pub enum RevisionAction {
    /// A person retried a Failed (or Blocked) revision: set its phase back to Pending and empty
    /// its failed nodes. A [`RevisionAction::RaiseSequence`] of it follows.
    ClearFailed {
        /// Revision name.
        revision: String,
    },
    /// Give an existing revision a new, higher `spec.sequence` so it is the target again, and
    /// remove the retry annotation (under the revision's resourceVersion).
    RaiseSequence {
        /// Revision name.
        revision: String,
        /// Its sequence now.
        from: i64,
        /// The new sequence, above every other revision's.
        to: i64,
        /// Why.
        reason: RaiseReason,
        /// The `netrollout.io/retried` value to leave (for a retry), so later dispatches ask
        /// the agents for one more try.
        retried: Option<String>,
    },
    /// The retry annotation is on a revision that is not Failed or Blocked: remove it.
    DropRetry {
        /// Revision name.
        revision: String,
    },
    /// Create the revision for the current inputs.
    Create {
        /// `ncr-<hex>`.
        name: String,
        /// `sha256:<hex>`.
        hash: String,
        /// Size of the canonical JSON in bytes.
        size: usize,
        /// `spec.sequence`, above every existing revision's.
        sequence: i64,
        /// `spec.snapshot`.
        snapshot: Snapshot,
    },
    /// The revision for these inputs is being deleted: it is never adopted; a new one is
    /// created once it is gone. Nothing is written but the inputs' `Accepted`.
    WaitForDeletion {
        /// Revision name.
        revision: String,
    },
    /// A revision with the inputs' name holds different content: report it (log, metrics);
    /// it is never overwritten.
    ReportClash {
        /// Revision name.
        revision: String,
        /// Hash in the existing revision.
        existing: String,
        /// Hash of the inputs.
        wanted: String,
    },
    /// The inputs equal a Failed revision: tell it (log line and Warning Event on the
    /// revision) once per replica. Its phase and message are left alone; its `InputsRefused`
    /// condition says so (`crate::conditions`).
    NoteIdentical {
        /// The Failed revision.
        revision: String,
        /// What to tell.
        message: String,
    },
    /// Write `Accepted` (and, when accepted, `status.revision`) on an input whose status does
    /// not say it yet.
    SetAccepted {
        /// The input.
        input: InputRef,
        /// What to write.
        update: AcceptedUpdate,
    },
}

impl RevisionAction {
    /// A short name for spans and logs.
    pub fn name(&self) -> &'static str {
        match self {
            RevisionAction::ClearFailed { .. } => "clear_failed",
            RevisionAction::RaiseSequence { .. } => "raise_sequence",
            RevisionAction::DropRetry { .. } => "drop_retry",
            RevisionAction::Create { .. } => "create_revision",
            RevisionAction::WaitForDeletion { .. } => "wait_for_deletion",
            RevisionAction::ReportClash { .. } => "report_clash",
            RevisionAction::NoteIdentical { .. } => "note_identical",
            RevisionAction::SetAccepted { .. } => "set_accepted",
        }
    }
}
