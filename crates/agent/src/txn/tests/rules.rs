//! The contract's agent rules 2–5, 8 and 9 and the FRR rules, one test each, without root.

use std::time::Duration;

use netrollout_api::NodePhase;

use super::configs::{config, frr_text};
use super::harness::{End, Node, Probes};
use crate::reason::FailureReason;
use crate::txn::{Effect, Metric, Purpose, Round};

/// A node that committed rev-1 (two layer-2 networks).
pub(super) fn at_rev1() -> Node {
    let mut node = Node::new();
    let spec = node.spec("rev-1", &config(&[10, 20]), None);
    assert_eq!(node.see(spec), Ok(End::Done));
    assert_eq!(node.phase(), Some(NodePhase::Provisioned));
    node.effects.clear();
    node.reports.clear();
    node.metrics.clear();
    node
}

fn index(node: &Node, f: impl Fn(&Effect) -> bool) -> usize {
    node.effects.iter().position(f).expect("the effect ran")
}

#[test]
fn the_backup_and_the_journal_are_on_disk_before_the_dataplane_is_touched() {
    let mut node = Node::new();
    node.see_rev("rev-1", &[10], None);
    let lkg = index(
        &node,
        |e| matches!(e, Effect::WriteLastKnownGood(l) if l.revision.is_none()),
    );
    let journal = index(
        &node,
        |e| matches!(e, Effect::WriteJournal(j) if j.revision == "rev-1"),
    );
    let kernel = index(&node, |e| matches!(e, Effect::ApplyKernel { .. }));
    let frr = index(&node, |e| matches!(e, Effect::ApplyFrr { .. }));
    assert!(
        lkg < journal && journal < kernel && kernel < frr,
        "{:#?}",
        node.effects
    );
}

#[test]
fn provisioning_with_the_revision_is_reported_before_the_change_and_never_waited_for() {
    let mut node = at_rev1();
    node.see_rev("rev-2", &[10, 30], None);
    let first = &node.reports[0];
    assert_eq!(first.phase, Some(NodePhase::Provisioning));
    assert_eq!(first.revision.as_deref(), Some("rev-2"));
    assert_eq!(first.message, "applying rev-2 (attempt 1)");
    let report = index(&node, |e| matches!(e, Effect::Publish(_)));
    let kernel = index(&node, |e| matches!(e, Effect::ApplyKernel { .. }));
    assert!(report < kernel);
    // Publishing asks nothing back: the transaction goes on whatever the API server does.
    assert!(node.kernel_runs(&config(&[10, 30])));
}

#[test]
fn the_agent_probes_then_applies_kernel_then_frr_then_probes_again() {
    let mut node = at_rev1();
    node.see_rev("rev-2", &[10, 30], None);
    let before = index(&node, |e| matches!(e, Effect::Probe(Round::Before { .. })));
    let kernel = index(&node, |e| {
        matches!(
            e,
            Effect::ApplyKernel {
                purpose: Purpose::Apply,
                ..
            }
        )
    });
    let frr = index(&node, |e| {
        matches!(
            e,
            Effect::ApplyFrr {
                purpose: Purpose::Apply,
                ..
            }
        )
    });
    let after = index(&node, |e| matches!(e, Effect::Probe(Round::After { .. })));
    assert!(
        before < kernel && kernel < frr && frr < after,
        "{:#?}",
        node.effects
    );
}

#[test]
fn passing_probes_commit_the_revision_clear_the_journal_and_report_provisioned() {
    let mut node = at_rev1();
    node.see_rev("rev-2", &[10, 30], None);
    let disk = node.disk.state().unwrap();
    assert_eq!(disk.lkg.revision.as_deref(), Some("rev-2"));
    assert_eq!(disk.lkg.frr, Some(frr_text(&config(&[10, 30]))));
    assert_eq!(disk.journal, None);
    let last = node.last();
    assert_eq!(
        (last.phase, last.ready),
        (Some(NodePhase::Provisioned), true)
    );
    assert_eq!(last.last_known_good.as_deref(), Some("rev-2"));
    assert!(node.kernel_runs(&config(&[10, 30])));
    assert_eq!(node.frr.running, frr_text(&config(&[10, 30])));
    assert!(node.metrics.contains(&Metric::Provisioned));
}

#[test]
fn the_commit_waits_for_the_whole_probe_hold() {
    let mut node = at_rev1();
    let spec = node.spec("rev-2", &config(&[10, 30]), None);
    let t0 = node.now.instant;
    node.see(spec).unwrap();
    let held = node.now.instant - t0;
    assert!(held >= node.settings.probe_hold, "committed after {held:?}");
    assert_eq!(node.phase(), Some(NodePhase::Provisioned));
    // The hold is told once, when the probes first pass (the agent logs it).
    let holds = node
        .metrics
        .iter()
        .filter(|m| matches!(m, Metric::Holding(_)));
    assert_eq!(
        holds.collect::<Vec<_>>(),
        [&Metric::Holding(node.settings.probe_hold)]
    );
}

#[test]
fn a_probe_that_fails_after_the_change_restores_frr_then_kernel_and_reports_failed() {
    let mut node = at_rev1();
    node.probes = Probes {
        before: vec![],
        after: Box::new(|_| vec!["tcp 10.9.9.9:443"]),
    };
    node.see_rev("rev-2", &[10, 30], None);
    let frr = index(&node, |e| {
        matches!(
            e,
            Effect::ApplyFrr {
                purpose: Purpose::Restore,
                ..
            }
        )
    });
    let kernel = index(&node, |e| {
        matches!(
            e,
            Effect::ApplyKernel {
                purpose: Purpose::Restore,
                ..
            }
        )
    });
    let probe = index(&node, |e| {
        matches!(e, Effect::Probe(Round::Restored { .. }))
    });
    assert!(frr < kernel && kernel < probe, "{:#?}", node.effects);
    assert!(node.kernel_runs(&config(&[10, 20])));
    assert_eq!(node.frr.running, frr_text(&config(&[10, 20])));
    let last = node.last();
    assert_eq!(last.phase, Some(NodePhase::Failed));
    assert_eq!(last.reason, "ProbeFailed");
    assert!(
        last.message
            .starts_with("probes failed after applying rev-2: tcp 10.9.9.9:443")
            && last.message.ends_with("; restored last-known-good rev-1"),
        "{}",
        last.message
    );
    // It timed out: the probes ran for the whole probe timeout.
    assert!(node.metrics.contains(&Metric::ProbeTime {
        took: node.settings.probe_timeout,
        passed: false
    }));
    let disk = node.disk.state().unwrap();
    assert_eq!(disk.lkg.revision.as_deref(), Some("rev-1"));
    assert_eq!(disk.journal, None);
    assert_eq!(
        disk.failures.revisions["rev-2"].reason,
        FailureReason::ProbeFailed
    );
}

#[test]
fn a_probe_failing_during_the_hold_fails_the_change_at_once() {
    let mut node = at_rev1();
    node.probes = Probes {
        before: vec![],
        after: Box::new(|n| {
            if n >= 2 {
                vec!["gateway 10.0.0.254"]
            } else {
                vec![]
            }
        }),
    };
    node.see_rev("rev-2", &[10, 30], None);
    let last = node.last();
    assert_eq!(last.reason, "ProbeFailed");
    assert!(
        last.message.starts_with("probes passed after applying rev-2, then failed 2000 ms into the 3000 ms probe hold: gateway"),
        "{}",
        last.message
    );
    assert!(node.kernel_runs(&config(&[10, 20])));
}

#[test]
fn probes_that_pass_late_within_the_timeout_commit() {
    let mut node = at_rev1();
    node.probes = Probes {
        before: vec![],
        after: Box::new(|n| {
            if n < 4 {
                vec!["gateway 10.0.0.254"]
            } else {
                vec![]
            }
        }),
    };
    node.see_rev("rev-2", &[10, 30], None);
    assert_eq!(node.phase(), Some(NodePhase::Provisioned));
}

#[test]
fn a_probe_that_failed_before_the_change_is_reported_not_enforced() {
    let mut node = at_rev1();
    node.probes = Probes {
        before: vec!["tcp 10.9.9.9:443"],
        after: Box::new(|_| vec!["tcp 10.9.9.9:443"]),
    };
    node.see_rev("rev-2", &[10, 30], None);
    let last = node.last();
    assert_eq!(last.phase, Some(NodePhase::Provisioned));
    assert!(
        last.message.ends_with(
            "; 1 check not judged, as it already failed before the change: tcp 10.9.9.9:443 \
             (why: kubectl netrollout nodes -o wide)"
        ),
        "{}",
        last.message
    );
    let listed = last.preexisting_failures.as_deref().unwrap_or_default();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].name, "tcp 10.9.9.9:443");
    assert!(!listed[0].error.is_empty());
}

#[test]
fn checks_that_failed_before_the_change_are_not_run_after_it() {
    let mut node = at_rev1();
    node.probes = Probes {
        before: vec!["tcp 10.9.9.9:443", "icmp 10.9.9.8"],
        after: Box::new(|_| vec![]),
    };
    node.see_rev("rev-2", &[10, 30], None);
    let rounds: Vec<&Vec<String>> = node
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::Probe(Round::After { skip, .. }) => Some(skip),
            _ => None,
        })
        .collect();
    assert!(!rounds.is_empty(), "{:#?}", node.effects);
    for skip in rounds {
        assert_eq!(skip, &["icmp 10.9.9.8", "tcp 10.9.9.9:443"]);
    }
    assert_eq!(node.phase(), Some(NodePhase::Provisioned));
}

#[test]
fn a_change_with_every_check_passing_before_reports_no_preexisting_failures() {
    let mut node = at_rev1();
    node.see_rev("rev-2", &[10, 30], None);
    let last = node.last();
    assert_eq!(last.phase, Some(NodePhase::Provisioned));
    assert!(!last.message.contains("not judged"), "{}", last.message);
    assert_eq!(last.preexisting_failures.as_deref(), Some(&[][..]));
}

#[test]
fn a_kernel_refusal_restores_and_names_the_kernel_error() {
    let mut node = at_rev1();
    node.kernel_fails_at = Some(1);
    node.see_rev("rev-2", &[10, 30], None);
    let last = node.last();
    assert_eq!(last.reason, "ApplyFailed");
    assert!(
        last.message.starts_with("applying rev-2 failed: ") && last.message.contains("EOPNOTSUPP"),
        "{}",
        last.message
    );
    assert!(node.kernel_runs(&config(&[10, 20])));
    assert_eq!(node.frr.running, frr_text(&config(&[10, 20])));
}

#[test]
fn a_line_frr_rejects_fails_the_attempt_with_frrs_own_message_and_restores_both() {
    let mut node = at_rev1();
    node.frr.reject = Some("layer2 30".into());
    node.see_rev("rev-2", &[10, 30], None);
    let last = node.last();
    assert_eq!(last.reason, "FrrRejected");
    assert!(
        last.message.starts_with("FRR rejected the routing config of rev-2: line \"! layer2 30 vni 10030\": % Unknown command"),
        "{}",
        last.message
    );
    assert!(node.kernel_runs(&config(&[10, 20])));
    assert_eq!(node.frr.running, frr_text(&config(&[10, 20])));
}

#[test]
fn a_config_the_node_cannot_convert_or_route_fails_before_anything_is_touched() {
    let mut node = at_rev1();
    node.unroutable = true;
    node.see_rev("rev-2", &[10, 30], None);
    assert_eq!(node.last().reason, "InvalidConfig");
    assert!(!node.effects.iter().any(|e| matches!(
        e,
        Effect::ApplyKernel { .. } | Effect::ApplyFrr { .. } | Effect::WriteJournal(_)
    )));
    node.unroutable = false;
    node.settings.vtep.local = None;
    node.effects.clear();
    node.see_rev("rev-3", &[10, 30], None);
    assert_eq!(node.last().reason, "InvalidConfig");
    assert!(
        node.last().message.contains("--vtep-ip"),
        "{}",
        node.last().message
    );
    assert!(!node.applied_kernel());
}

#[test]
fn a_failed_revision_is_not_tried_again_until_a_person_sets_a_new_retry() {
    let mut node = at_rev1();
    node.probes.after = Box::new(|_| vec!["tcp 10.9.9.9:443"]);
    node.see_rev("rev-2", &[10, 30], None);
    node.probes.after = Box::new(|_| vec![]);
    node.effects.clear();
    node.see_rev("rev-2", &[10, 30], None);
    assert!(!node.applied_kernel());
    assert_eq!(node.last().phase, Some(NodePhase::Failed));
    node.see_rev("rev-2", &[10, 30], Some("1"));
    assert_eq!(node.last().phase, Some(NodePhase::Provisioned));
    assert!(node.kernel_runs(&config(&[10, 30])));
}

#[test]
fn the_same_retry_value_does_not_try_again() {
    let mut node = at_rev1();
    node.probes.after = Box::new(|_| vec!["tcp 10.9.9.9:443"]);
    node.see_rev("rev-2", &[10, 30], Some("1"));
    node.effects.clear();
    node.see_rev("rev-2", &[10, 30], Some("1"));
    assert!(!node.applied_kernel());
}

#[test]
fn only_objects_the_agent_owns_are_changed() {
    let mut node = at_rev1();
    node.probes.after = Box::new(|_| vec!["tcp 10.9.9.9:443"]);
    node.see_rev("rev-2", &[30, 40], None);
    let managed = crate::convert::managed().unwrap();
    for e in &node.effects {
        if let Effect::ApplyKernel { desired, .. } = e {
            assert!(desired.links.keys().all(|l| managed.owns(l)), "{desired:?}");
            assert!(desired.addresses.iter().all(|a| managed.owns(&a.link)));
        }
    }
}

#[test]
fn network_config_ready_follows_the_outcome_and_carries_the_generation() {
    let mut node = at_rev1();
    let mut spec = node.spec("rev-2", &config(&[10, 30]), None);
    spec.generation = Some(7);
    node.see(spec).unwrap();
    let last = node.last();
    assert_eq!((last.ready, last.generation), (true, Some(7)));
    node.probes.after = Box::new(|_| vec!["tcp 10.9.9.9:443"]);
    let mut spec = node.spec("rev-3", &config(&[10]), None);
    spec.generation = Some(8);
    node.see(spec).unwrap();
    let last = node.last();
    assert_eq!(
        (last.ready, last.generation, last.phase),
        (false, Some(8), Some(NodePhase::Failed))
    );
    assert!(
        node.reports
            .iter()
            .filter(|r| r.phase == Some(NodePhase::Provisioning))
            .all(|r| !r.ready)
    );
}

#[test]
fn an_applied_revision_is_reported_once_and_never_applied_again() {
    let mut node = at_rev1();
    let mut spec = node.spec("rev-1", &config(&[10, 20]), None);
    node.see(spec.clone()).unwrap();
    assert!(
        !node
            .effects
            .iter()
            .any(|e| matches!(e, Effect::ApplyKernel { .. } | Effect::ApplyFrr { .. }))
    );
    assert_eq!(
        node.last().message,
        "already applied: it is this node's last-known-good"
    );
    // Said already (in the status, no forced report): nothing more.
    node.reports.clear();
    spec.said.force_report = false;
    spec.said.observed_revision = Some("rev-1".into());
    spec.said.phase = Some(NodePhase::Provisioned);
    spec.said.observed_generation = Some(1);
    node.see(spec).unwrap();
    assert!(node.reports.is_empty());
    let _ = Duration::ZERO;
}
