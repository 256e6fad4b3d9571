//! The `tracing` span of each configurator action, named after what it does, with the names
//! of the objects it touches as fields: log lines and Events written while carrying an action
//! out sit inside it. Per-node spans (`dispatch_node`, `record_dispatch`) are at debug level,
//! the rest at info.

use netrollout_rollout::{Action, DispatchKind, RevisionPhase};
use tracing::Span;

use netrollout_rollout::lifecycle::RevisionAction;

/// The span of one planner action: `halt` (a revision fails), `set_revision_phase`,
/// `withdraw` (an unresponsive node), `record_dispatch`, `dispatch`, `join`, `revert` (a
/// rollback dispatch), `prune`.
pub fn planner(action: &Action) -> Span {
    match action {
        Action::SetRevisionPhase {
            revision,
            phase: RevisionPhase::Failed,
            failed_nodes,
            ..
        } => {
            let nodes: Vec<&str> = failed_nodes.iter().map(|f| f.node.as_str()).collect();
            tracing::info_span!("halt", revision = %revision, failed_nodes = %nodes.join(","))
        }
        Action::SetRevisionPhase {
            revision, phase, ..
        } => tracing::info_span!("set_revision_phase", revision = %revision, phase = ?phase),
        Action::MarkUnresponsive {
            node,
            revision,
            restore,
            ..
        } => tracing::info_span!(
            "withdraw",
            node = %node,
            revision = %revision,
            restore = restore.as_deref().unwrap_or("-")
        ),
        Action::RecordDispatch { node, record, .. } => {
            tracing::debug_span!("record_dispatch", node = %node, revision = %record.revision)
        }
        Action::Dispatch {
            revision,
            kind,
            nodes,
            ..
        } => {
            let names: Vec<&str> = nodes.iter().map(|n| n.node.as_str()).collect();
            let names = names.join(",");
            match kind {
                DispatchKind::Rollout => {
                    tracing::info_span!("dispatch", revision = %revision, nodes = %names)
                }
                DispatchKind::Join => {
                    tracing::info_span!("join", revision = %revision, nodes = %names)
                }
                DispatchKind::Rollback => {
                    tracing::info_span!("revert", revision = %revision, nodes = %names)
                }
            }
        }
        Action::Prune { revision, .. } => tracing::info_span!("prune", revision = %revision),
    }
}

/// The span of one node's write within a dispatch.
pub fn dispatch_node(revision: &str, node: &str) -> Span {
    tracing::debug_span!("dispatch_node", revision = %revision, node = %node)
}

/// The span of one lifecycle action, named as [`RevisionAction::name`] says.
pub fn lifecycle(action: &RevisionAction) -> Span {
    match action {
        RevisionAction::ClearFailed { revision } => {
            tracing::info_span!("clear_failed", revision = %revision)
        }
        RevisionAction::RaiseSequence {
            revision,
            from,
            to,
            reason,
            ..
        } => tracing::info_span!(
            "raise_sequence",
            revision = %revision,
            from,
            to,
            reason = reason.as_str()
        ),
        RevisionAction::DropRetry { revision } => {
            tracing::info_span!("drop_retry", revision = %revision)
        }
        RevisionAction::Create { name, sequence, .. } => {
            tracing::info_span!("create_revision", revision = %name, sequence)
        }
        RevisionAction::WaitForDeletion { revision } => {
            tracing::info_span!("wait_for_deletion", revision = %revision)
        }
        RevisionAction::ReportClash { revision, .. } => {
            tracing::info_span!("report_clash", revision = %revision)
        }
        RevisionAction::NoteIdentical { revision, .. } => {
            tracing::info_span!("note_identical", revision = %revision)
        }
        RevisionAction::SetAccepted { input, .. } => {
            tracing::info_span!("set_accepted", kind = input.kind.kind(), input = %input.name)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use netrollout_rollout::{DispatchRecord, FailureCause, NodeDispatch, NodeFailure, Timestamp};
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id};
    use tracing_subscriber::layer::{Context as LayerContext, Layer, SubscriberExt};

    use super::*;
    use netrollout_rollout::lifecycle::{
        AcceptedUpdate, InputKind, InputRef, RaiseReason, RevisionAction, Since, Verdict,
    };

    /// Every span opened, as `name{field=value,...}`.
    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<String>>>);

    struct Fields(Vec<String>);

    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0.push(format!("{}={value:?}", field.name()));
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.push(format!("{}={value}", field.name()));
        }
    }

    impl<S: tracing::Subscriber> Layer<S> for Capture {
        fn on_new_span(&self, attrs: &Attributes<'_>, _: &Id, _: LayerContext<'_, S>) {
            let mut f = Fields(Vec::new());
            attrs.record(&mut f);
            let line = format!("{}{{{}}}", attrs.metadata().name(), f.0.join(","));
            self.0.lock().unwrap().push(line);
        }
    }

    fn spans_of(make: impl FnOnce()) -> Vec<String> {
        let capture = Capture::default();
        let subscriber = tracing_subscriber::registry().with(capture.clone());
        tracing::subscriber::with_default(subscriber, make);
        capture.0.lock().unwrap().clone()
    }

    fn record(revision: &str) -> DispatchRecord {
        DispatchRecord {
            revision: revision.into(),
            at: Timestamp::from_millis(1),
            previous: None,
            picked_up_at: None,
            sequence: None,
            settled_at: None,
        }
    }

    #[test]
    fn every_planner_action_opens_a_span_named_after_it_with_the_object_names() {
        let dispatch = |kind| Action::Dispatch {
            revision: "ncr-b".into(),
            kind,
            nodes: ["n1", "n2"]
                .iter()
                .map(|n| NodeDispatch {
                    node: (*n).into(),
                    record: record("ncr-b"),
                })
                .collect(),
            reason: "r".into(),
        };
        let actions = [
            Action::SetRevisionPhase {
                revision: "ncr-a".into(),
                phase: RevisionPhase::Failed,
                reason: "r".into(),
                failed_nodes: vec![NodeFailure {
                    node: "n1".into(),
                    cause: FailureCause::Reported(Some("ProbeFailed".into())),
                    message: "ProbeFailed: x".into(),
                    at: Timestamp::from_millis(1),
                }],
            },
            Action::SetRevisionPhase {
                revision: "ncr-a".into(),
                phase: RevisionPhase::Succeeded,
                reason: "r".into(),
                failed_nodes: vec![],
            },
            Action::MarkUnresponsive {
                node: "n3".into(),
                revision: "ncr-b".into(),
                restore: Some("ncr-a".into()),
                at: Timestamp::from_millis(1),
                reason: "r".into(),
            },
            Action::RecordDispatch {
                node: "n4".into(),
                record: record("ncr-b"),
                reason: "r".into(),
            },
            dispatch(DispatchKind::Rollout),
            dispatch(DispatchKind::Join),
            dispatch(DispatchKind::Rollback),
            Action::Prune {
                revision: "ncr-old".into(),
                reason: "r".into(),
            },
        ];
        let spans = spans_of(|| {
            for a in &actions {
                drop(planner(a));
            }
            drop(dispatch_node("ncr-b", "n5"));
        });
        assert_eq!(
            spans,
            [
                "halt{revision=ncr-a,failed_nodes=n1}",
                "set_revision_phase{revision=ncr-a,phase=Succeeded}",
                "withdraw{node=n3,revision=ncr-b,restore=ncr-a}",
                "record_dispatch{node=n4,revision=ncr-b}",
                "dispatch{revision=ncr-b,nodes=n1,n2}",
                "join{revision=ncr-b,nodes=n1,n2}",
                "revert{revision=ncr-b,nodes=n1,n2}",
                "prune{revision=ncr-old}",
                "dispatch_node{revision=ncr-b,node=n5}",
            ]
        );
    }

    #[test]
    fn every_lifecycle_action_opens_a_span_named_after_it_with_the_object_names() {
        let verdict = Verdict::accepted("ncr-a");
        let actions = [
            RevisionAction::ClearFailed {
                revision: "ncr-a".into(),
            },
            RevisionAction::RaiseSequence {
                revision: "ncr-a".into(),
                from: 1,
                to: 3,
                reason: RaiseReason::Retried,
                retried: None,
            },
            RevisionAction::DropRetry {
                revision: "ncr-b".into(),
            },
            RevisionAction::Create {
                name: "ncr-c".into(),
                hash: "sha256:c".into(),
                size: 1,
                sequence: 4,
            },
            RevisionAction::WaitForDeletion {
                revision: "ncr-d".into(),
            },
            RevisionAction::ReportClash {
                revision: "ncr-e".into(),
                existing: "sha256:x".into(),
                wanted: "sha256:y".into(),
            },
            RevisionAction::NoteIdentical {
                revision: "ncr-f".into(),
                message: "m".into(),
            },
            RevisionAction::SetAccepted {
                input: InputRef {
                    kind: InputKind::Layer2,
                    name: "vlan502".into(),
                },
                update: AcceptedUpdate {
                    verdict,
                    generation: Some(1),
                    since: Since::Unchanged,
                },
            },
        ];
        let spans = spans_of(|| {
            for a in &actions {
                drop(lifecycle(a));
            }
        });
        assert_eq!(
            spans,
            [
                "clear_failed{revision=ncr-a}",
                "raise_sequence{revision=ncr-a,from=1,to=3,reason=retried by a person}",
                "drop_retry{revision=ncr-b}",
                "create_revision{revision=ncr-c,sequence=4}",
                "wait_for_deletion{revision=ncr-d}",
                "report_clash{revision=ncr-e}",
                "note_identical{revision=ncr-f}",
                "set_accepted{kind=Layer2NetworkConfiguration,input=vlan502}",
            ]
        );
        let names: Vec<String> = spans
            .iter()
            .map(|s| s.split('{').next().unwrap_or_default().to_string())
            .collect();
        let expected: Vec<&str> = actions.iter().map(RevisionAction::name).collect();
        assert_eq!(names, expected);
    }
}
