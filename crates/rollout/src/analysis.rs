//! Analysis gates (docs/contract.md, "Analysis gates"): a revision that carries checks against
//! Prometheus is rolled out wave by wave, and no wave is dispatched before the checks passed
//! for every node that already runs it; a failed analysis fails the revision like a failed node.
//!
//! The planner does not measure anything: the configurator runs the queries when a pass says an
//! analysis is due ([`Gate::due`]) and hands the verdict back as data ([`Analysis::verdict`]).
//! The planning step itself is `plan/analysis.rs`; this module holds its data.

/// A revision's analysis: whether it has checks, and the last verdict.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Analysis {
    /// How many checks gate the revision (0: no gate, the revision rolls out as any other).
    pub checks: usize,
    /// The last verdict the configurator reached.
    pub verdict: Verdict,
    /// The revision's sequence when that verdict was reached: the targeting it speaks for. A
    /// revision raised since (an undo, inputs returning to its content, a retry) is rolled out
    /// like a new one and measured afresh: a verdict of an earlier sequence is no verdict
    /// ([`Analysis::verdict_at`]). `None`: of no known targeting.
    pub sequence: Option<u64>,
    /// The largest `initialDelaySeconds` of the checks: the configurator measures a wave that
    /// long after it finished (said in the gate's reason; the planner keeps no clock for it).
    pub initial_delay_seconds: u32,
}

/// The last verdict of a revision's analysis.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Verdict {
    /// Not measured yet.
    #[default]
    None,
    /// Every check passed while `nodes` managed nodes ran the revision: the rollout may go on
    /// past them; once more nodes run it, they are analysed again.
    Passed {
        /// Managed nodes that ran the revision when it was measured.
        nodes: usize,
    },
    /// A check failed: the revision fails (the Event's reason is `AnalysisFailed`) and,
    /// as after any failure, its nodes return to the known-good revision.
    Failed {
        /// What failed, for people (the check, its value and its condition).
        message: String,
    },
    /// The checks cannot be measured (no Prometheus is configured): the revision is not
    /// dispatched to any node, as pre-flight holds a revision.
    Unavailable {
        /// Why, and what to do.
        message: String,
    },
}

impl Analysis {
    /// Whether the revision is gated at all.
    pub fn gated(&self) -> bool {
        self.checks > 0
    }

    /// The verdict for the revision's targeting of sequence `sequence` (its `spec.sequence`
    /// now): the last verdict if it was reached under that sequence, else none.
    pub fn verdict_at(&self, sequence: u64) -> &Verdict {
        if self.sequence == Some(sequence) {
            &self.verdict
        } else {
            &Verdict::None
        }
    }

    /// Whether the checks passed, under sequence `sequence`, with at least `nodes` nodes on the
    /// revision.
    pub fn passed_for(&self, sequence: u64, nodes: usize) -> bool {
        matches!(self.verdict_at(sequence), Verdict::Passed { nodes: n } if *n >= nodes)
    }
}

/// Where the target's analysis gate stands after a pass ([`crate::Summary::analysis`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gate {
    /// The revision rolling out.
    pub revision: String,
    /// Its sequence in this pass: the targeting a verdict measured now speaks for (the
    /// configurator writes it with the verdict, [`Analysis::sequence`]).
    pub sequence: u64,
    /// Managed nodes that run it now.
    pub nodes: usize,
    /// Its nodes have all finished (none in flight) and the checks have not passed for them:
    /// the configurator measures now and writes the verdict.
    pub due: bool,
    /// No node is dispatched this revision in this pass because of the gate (a wave in flight
    /// or awaiting its analysis, or no Prometheus).
    pub held: bool,
    /// Why it holds, for people (empty when it does not).
    pub reason: String,
}
