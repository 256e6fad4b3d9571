//! What [`decide`](super::decide()) asks the I/O layer to do. Execute the actions **in order**
//! and stop at the first failed write; the next pass decides again from fresh state (every
//! action is idempotent or guarded by a resourceVersion precondition).

use super::model::InputRef;
use super::verdict::AcceptedUpdate;
use crate::time::Timestamp;

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

/// The `netrollout.io/retried` value a raise leaves, so later dispatches ask the agents for one
/// more try.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Retried {
    /// The retry annotation's own value.
    Value(String),
    /// The retry annotation was empty: the time of the retry (written as the API writes
    /// times), so each retry is a new value.
    At(Timestamp),
}

/// One step of the revision lifecycle.
#[derive(Clone, Debug, PartialEq, Eq)]
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
        /// The `netrollout.io/retried` value to leave (for a retry).
        retried: Option<Retried>,
    },
    /// The retry annotation is on a revision that is not Failed or Blocked: remove it.
    DropRetry {
        /// Revision name.
        revision: String,
    },
    /// Create the revision for the current inputs (the valid [`Candidate`](super::Candidate));
    /// its snapshot is the one the caller checked.
    Create {
        /// `ncr-<hex>`.
        name: String,
        /// `sha256:<hex>`.
        hash: String,
        /// Size of the canonical JSON in bytes.
        size: usize,
        /// `spec.sequence`, above every existing revision's.
        sequence: i64,
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
    /// condition says so.
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
