//! Tests of remote_break.rs (beside it, as the module keeps its story under 450 lines).

use netrollout_api::reason::HEALTH_REGRESSED;
use netrollout_api::{FailedNode, NetworkConfigRevisionStatus, RevisionPhase as Phase};

use super::*;

fn regressed(node: &str, checks: &[&str]) -> FailedNode {
    FailedNode {
        node: node.into(),
        reason: HEALTH_REGRESSED.into(),
        // Never read: the checks are in their field.
        message: "a sentence for people".into(),
        failing_checks: checks.iter().map(|c| c.to_string()).collect(),
        time: None,
    }
}

fn failed(nodes: Vec<FailedNode>) -> NetworkConfigRevisionStatus {
    NetworkConfigRevisionStatus {
        phase: Some(Phase::Failed),
        failed_nodes: nodes,
        ..Default::default()
    }
}

#[test]
fn the_guard_is_credited_only_when_every_counted_node_failed_the_outside_check_alone() {
    let outside = "icmp 203.0.113.1 via vr.labr";
    let credited = |nodes| counted_only_the_outside(&failed(nodes), "lab-node-1");
    assert!(credited(vec![
        regressed("lab-node-2", &[outside]),
        regressed("lab-node-3", &[outside])
    ]));
    // A busy node's timeouts on peers the break never touched.
    assert!(!credited(vec![regressed(
        "lab-node-2",
        &["icmp 172.31.88.11", outside]
    )]));
    assert!(!credited(vec![regressed(
        "lab-node-2",
        &["icmp 172.31.88.11"]
    )]));
    assert!(!credited(vec![regressed("lab-node-1", &[outside])]));
    assert!(!credited(vec![]));
}

#[test]
fn only_the_border_holds_and_longer_than_a_remote_loss_takes_to_reach_the_guard() {
    let base = crate::scenario::tests::base();
    let opts = RemoteBreak.settings(base.clone());
    let border = inputs::border();
    let hold = opts.probe_holds[&border];
    // The run that lost the race: the route left 5.5 s after the border's FRR apply, the other
    // node's confirmed loss came 7.7 s later and was written 0.05 s after that.
    assert!(hold >= Duration::from_millis(5_500 + 7_700 + 50) + Duration::from_secs(4));
    assert!(hold >= ROUTE_MAP_DELAY + (WATCH_INTERVAL + VM_CHECK_TIMEOUT) * 2);
    assert_eq!(opts.probe_holds.len(), 1, "{:?}", opts.probe_holds);
    assert_eq!(opts.probe_hold, base.probe_hold);
    assert_eq!(opts.update_limit, UpdateLimit::Count(1));
}
