use k8s_openapi::api::rbac::v1::ClusterRole;

use super::*;

fn report(phase: Option<NodePhase>) -> Report {
    Report {
        revision: phase.map(|_| "rev-1".to_string()),
        phase,
        reason: "ProbeFailed".into(),
        message: "tcp 10.0.0.1:443: refused".into(),
        started_at: Some(jiff::Timestamp::UNIX_EPOCH),
        finished_at: None,
        last_known_good: Some("rev-0".into()),
        ready: false,
    }
}

#[test]
fn a_failed_report_patches_phase_reason_revision_and_the_condition() {
    let patch = report(Some(NodePhase::Failed)).status_patch(jiff::Timestamp::UNIX_EPOCH);
    let s = &patch["status"];
    assert_eq!(s["phase"], "Failed");
    assert_eq!(s["observedRevision"], "rev-1");
    assert_eq!(s["lastKnownGoodRevision"], "rev-0");
    assert_eq!(s["reason"], "ProbeFailed");
    assert_eq!(s["finishedAt"], Value::Null, "an old finishedAt is cleared");
    assert_eq!(s["conditions"][0]["type"], NODE_CONDITION);
    assert_eq!(s["conditions"][0]["status"], "False");
}

#[test]
fn an_agent_problem_leaves_phase_and_observed_revision_alone() {
    let patch = report(None).status_patch(jiff::Timestamp::UNIX_EPOCH);
    let s = patch["status"].as_object().unwrap();
    assert!(!s.contains_key("phase") && !s.contains_key("observedRevision"));
    assert_eq!(s["reason"], "ProbeFailed");
}

/// The agent's requests; `config/rbac/agent_role.yaml` must allow each.
const REQUESTS: [(&str, &str, &str); 8] = [
    ("netrollout.io", "nodenetworkconfigs", "list"),
    ("netrollout.io", "nodenetworkconfigs", "watch"),
    ("netrollout.io", "nodenetworkconfigs/status", "patch"),
    ("", "nodes/status", "get"),
    ("", "nodes/status", "patch"),
    ("", "events", "create"),
    // Removing the startup taints (taints.rs): read the Node, patch its taints.
    ("", "nodes", "get"),
    ("", "nodes", "patch"),
];

#[test]
fn the_agent_cluster_role_allows_what_the_agent_does_and_no_writes_to_specs() {
    let text = include_str!("../../../config/rbac/agent_role.yaml");
    let role: ClusterRole = serde_saphyr::from_str(text).unwrap();
    let rules = role.rules.unwrap();
    let allows = |group: &str, resource: &str, verb: &str| {
        rules.iter().any(|r| {
            r.api_groups
                .as_ref()
                .is_some_and(|g| g.iter().any(|g| g == group))
                && r.resources
                    .as_ref()
                    .is_some_and(|rs| rs.iter().any(|x| x == resource))
                && r.verbs.iter().any(|v| v == verb)
        })
    };
    for (group, resource, verb) in REQUESTS {
        assert!(
            allows(group, resource, verb),
            "{verb} {resource} is not allowed"
        );
    }
    for verb in ["create", "update", "patch", "delete"] {
        assert!(!allows("netrollout.io", "nodenetworkconfigs", verb));
    }
    for verb in ["create", "update", "delete"] {
        assert!(!allows("", "nodes", verb));
    }
}
