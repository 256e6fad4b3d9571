//! Tests of remote_break.rs (beside it, as the module keeps its story under 450 lines).

use netrollout_api::FailedNode;

use super::*;

fn regressed(node: &str, checks: &str) -> FailedNode {
    FailedNode {
        node: node.into(),
        reason: netrollout_rollout::reason::HEALTH_REGRESSED.into(),
        // The planner's sentence (crates/rollout/src/plan/guard.rs).
        message: format!(
            "health checks {checks} failing since 3.2s after the current wave of revision ncr-2 started (not dispatched)"
        ),
        time: None,
    }
}

#[test]
fn the_guard_is_credited_only_when_every_counted_node_failed_the_outside_check_alone() {
    let outside = "icmp 203.0.113.1 via vr.labr";
    assert!(counted_only_the_outside(
        &[
            regressed("lab-node-2", outside),
            regressed("lab-node-3", outside)
        ],
        "lab-node-1"
    ));
    // A busy node's timeouts on peers the break never touched.
    let noise = format!("icmp 172.31.88.11, {outside}");
    assert!(!counted_only_the_outside(
        &[regressed("lab-node-2", &noise)],
        "lab-node-1"
    ));
    assert!(!counted_only_the_outside(
        &[regressed("lab-node-2", "icmp 172.31.88.11")],
        "lab-node-1"
    ));
    assert!(!counted_only_the_outside(
        &[regressed("lab-node-1", outside)],
        "lab-node-1"
    ));
    assert!(!counted_only_the_outside(&[], "lab-node-1"));
}
