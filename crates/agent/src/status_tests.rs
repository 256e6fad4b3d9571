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
        generation: phase.map(|_| 4),
        preexisting_failures: None,
    }
}

fn at(secs: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_second(secs).unwrap()
}

fn other(type_: &str) -> Condition {
    Condition {
        type_: type_.into(),
        status: "True".into(),
        reason: "Reachable".into(),
        message: "every tenant answers".into(),
        last_transition_time: Time(at(7)),
        observed_generation: Some(2),
    }
}

#[test]
fn a_failed_report_patches_phase_reason_revision_and_the_condition() {
    let r = report(Some(NodePhase::Failed));
    let patch = r.status_patch(&conditions(&[], r.ready_condition(None, at(1))));
    let s = &patch["status"];
    assert_eq!(s["phase"], "Failed");
    assert_eq!(s["observedRevision"], "rev-1");
    assert_eq!(s["lastKnownGoodRevision"], "rev-0");
    assert_eq!(s["reason"], "ProbeFailed");
    assert_eq!(s["finishedAt"], Value::Null, "an old finishedAt is cleared");
    assert_eq!(s["conditions"][0]["type"], NODE_CONDITION);
    assert_eq!(s["conditions"][0]["status"], "False");
    assert_eq!(s["conditions"][0]["reason"], "ProbeFailed");
}

#[test]
fn an_agent_problem_leaves_phase_and_observed_revision_alone() {
    let r = report(None);
    let patch = r.status_patch(&conditions(&[], r.ready_condition(None, at(1))));
    let s = patch["status"].as_object().unwrap();
    assert!(!s.contains_key("phase") && !s.contains_key("observedRevision"));
    assert_eq!(s["reason"], "ProbeFailed");
}

#[test]
fn the_condition_observes_the_generation_the_report_is_about() {
    let c = report(Some(NodePhase::Failed)).ready_condition(None, at(1));
    assert_eq!(c.observed_generation, Some(4));
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["observedGeneration"], 4, "written as kstatus reads it");
    assert!(
        json.get("lastHeartbeatTime").is_none(),
        "a meta/v1 Condition has no heartbeat (the CRD would prune it)"
    );
}

#[test]
fn an_agent_problem_keeps_the_generation_last_observed() {
    let before = report(Some(NodePhase::Failed)).ready_condition(None, at(1));
    let c = report(None).ready_condition(Some(&before), at(2));
    assert_eq!(c.observed_generation, Some(4));
    assert_eq!(
        report(None)
            .ready_condition(None, at(2))
            .observed_generation,
        None
    );
}

#[test]
fn the_transition_time_stays_while_the_status_stays_and_moves_when_it_flips() {
    let mut failing = report(Some(NodePhase::Failed));
    let first = failing.ready_condition(None, at(10));
    assert_eq!(
        first.last_transition_time,
        Time(at(10)),
        "a first condition starts now"
    );
    failing.generation = Some(5);
    failing.message = "tcp 10.0.0.1:443: timed out".into();
    let same = failing.ready_condition(Some(&first), at(20));
    assert_eq!(
        same.last_transition_time,
        Time(at(10)),
        "still False: the transition time is the first one"
    );
    assert_eq!(same.observed_generation, Some(5));
    let mut ok = report(Some(NodePhase::Provisioned));
    ok.ready = true;
    let flipped = ok.ready_condition(Some(&same), at(30));
    assert_eq!(flipped.status, "True");
    assert_eq!(
        flipped.last_transition_time,
        Time(at(30)),
        "a flip moves it"
    );
    let again = ok.ready_condition(Some(&flipped), at(40));
    assert_eq!(again.last_transition_time, Time(at(30)));
}

#[test]
fn other_condition_types_are_kept_and_the_agents_own_is_replaced_in_place() {
    let old = report(Some(NodePhase::Failed)).ready_condition(None, at(1));
    let seen = [other("TenantReachable"), old, other("Zeta")];
    let mut ok = report(Some(NodePhase::Provisioned));
    ok.ready = true;
    let ours = ok.ready_condition(Some(&seen[1]), at(2));
    let list = conditions(&seen, ours.clone());
    assert_eq!(
        list,
        vec![other("TenantReachable"), ours.clone(), other("Zeta")]
    );
    let list = conditions(&[other("TenantReachable")], ours.clone());
    assert_eq!(list, vec![other("TenantReachable"), ours]);
    let patch = ok.status_patch(&list);
    assert_eq!(patch["status"]["conditions"][0]["type"], "TenantReachable");
    assert_eq!(patch["status"]["conditions"][1]["type"], NODE_CONDITION);
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
