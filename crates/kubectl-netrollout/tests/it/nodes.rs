//! `nodes` shows each node's `NodeNetworkConfig` condition `NetworkConfigReady` and flags one
//! written for an older spec as stale, agreeing with the real
//! `kubectl wait --for=condition=NetworkConfigReady nnc/NODE` (which ignores a condition whose
//! `observedGeneration` is behind the object's generation).

use crate::common;

use common::{LabApi, PluginLab as _, node_status, rev_status, snapshot};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::PostParams;
use netrollout_api::{NODE_CONDITION, NodePhase, RevisionPhase};

fn ready(observed_generation: i64) -> Condition {
    Condition {
        type_: NODE_CONDITION.into(),
        status: "True".into(),
        reason: "Applied".into(),
        message: "applied and probed in 12 ms".into(),
        last_transition_time: Time(jiff::Timestamp::UNIX_EPOCH),
        observed_generation: Some(observed_generation),
    }
}

async fn wait_ready(lab: &LabApi) -> i32 {
    let args = [
        "wait",
        "--for=condition=NetworkConfigReady",
        "nnc/node-a",
        "--timeout=2s",
    ];
    lab.kubectl_run(&args, None).await.code
}

fn config_ready(lab_out: &str) -> String {
    let line = lab_out
        .lines()
        .find(|l| l.starts_with("node-a"))
        .unwrap_or_else(|| panic!("node-a missing:\n{lab_out}"));
    line.to_string()
}

#[tokio::test]
async fn nodes_flag_a_stale_config_condition_where_kubectl_wait_does_not_count_it() {
    let lab = LabApi::netrollout().await;
    lab.node("node-a", true).await;
    let mut status = node_status("ncr-one", NodePhase::Provisioned, None);
    status.conditions = vec![ready(1)];
    lab.config("node-a", "ncr-one", Some(status.clone())).await;

    let out = lab.plugin(&["nodes"]).await;
    let line = config_ready(out.expect_code(0));
    assert!(line.contains("True") && !line.contains("stale"), "{line}");
    assert_eq!(wait_ready(&lab).await, 0, "kubectl wait agrees: ready");

    // A new spec (generation 2) the agent has not reported on yet.
    let mut obj = lab.config_api().get("node-a").await.unwrap();
    obj.spec.revision = "ncr-two".into();
    let obj = lab
        .config_api()
        .replace("node-a", &PostParams::default(), &obj)
        .await
        .unwrap();
    assert_eq!(obj.metadata.generation, Some(2));
    let out = lab.plugin(&["nodes"]).await;
    let line = config_ready(out.expect_code(0));
    assert!(
        line.contains("True (stale: generation 2 observed 1)"),
        "the old condition is flagged: {line}"
    );
    let json: serde_json::Value =
        serde_json::from_str(lab.plugin(&["nodes", "-o", "json"]).await.expect_code(0)).unwrap();
    assert_eq!(
        json[0]["configCondition"],
        "True (stale: generation 2 observed 1)"
    );
    assert_ne!(
        wait_ready(&lab).await,
        0,
        "kubectl wait agrees: a stale condition does not count"
    );

    // The agent reports on generation 2.
    status.observed_revision = Some("ncr-two".into());
    status.conditions = vec![ready(2)];
    lab.set_config_status("node-a", status).await;
    let out = lab.plugin(&["nodes"]).await;
    let line = config_ready(out.expect_code(0));
    assert!(line.contains("True") && !line.contains("stale"), "{line}");
    assert_eq!(wait_ready(&lab).await, 0, "kubectl wait agrees: ready");
}

#[tokio::test]
async fn nodes_name_the_capabilities_each_agent_reported_missing() {
    let lab = LabApi::netrollout().await;
    for n in ["node-a", "node-b", "node-c"] {
        lab.node(n, true).await;
    }
    let caps = |missing: &[&str]| netrollout_api::NodeCapabilities {
        present: vec!["bridge".into(), "vxlan".into()],
        missing: missing.iter().map(|s| s.to_string()).collect(),
        frr_version: None,
    };
    let mut lacking = node_status("ncr-one", NodePhase::Provisioned, None);
    lacking.capabilities = Some(caps(&["dummy", "vrf"]));
    lab.config("node-a", "ncr-one", Some(lacking)).await;
    let mut capable = node_status("ncr-one", NodePhase::Provisioned, None);
    capable.capabilities = Some(caps(&[]));
    lab.config("node-b", "ncr-one", Some(capable)).await;
    // node-c's agent reported nothing yet (an older agent).
    lab.config(
        "node-c",
        "ncr-one",
        Some(node_status("ncr-one", NodePhase::Provisioned, None)),
    )
    .await;

    let out = lab.plugin(&["nodes"]).await;
    let text = out.expect_code(0);
    let header = text.lines().next().unwrap();
    assert!(
        header.contains("LACKS") || header.contains("lacks"),
        "{header}"
    );
    let line = |node: &str| {
        text.lines()
            .find(|l| l.starts_with(node))
            .unwrap_or_else(|| panic!("{node} missing:\n{text}"))
            .to_string()
    };
    assert!(line("node-a").contains(" dummy,vrf "), "{}", line("node-a"));
    assert!(line("node-b").contains(" none "), "{}", line("node-b"));
    assert!(!line("node-c").contains("none"), "{}", line("node-c"));
    let json: serde_json::Value =
        serde_json::from_str(lab.plugin(&["nodes", "-o", "json"]).await.expect_code(0)).unwrap();
    assert_eq!(
        json[0]["missingCapabilities"],
        serde_json::json!(["dummy", "vrf"])
    );
    assert_eq!(json[2]["missingCapabilities"], serde_json::Value::Null);
}

#[tokio::test]
async fn nodes_wide_shows_the_checks_an_agent_did_not_judge_and_why() {
    let lab = LabApi::netrollout().await;
    lab.node("node-a", true).await;
    let mut status = node_status("ncr-one", NodePhase::Provisioned, None);
    status.message = Some(
        "applied and probed in 812 ms; 1 check not judged, as it already failed before the \
         change: icmp 172.31.88.102 (why: kubectl netrollout nodes -o wide)"
            .into(),
    );
    status.preexisting_failures = vec![netrollout_api::FailedCheck {
        name: "icmp 172.31.88.102".into(),
        error: "no echo reply within 1s".into(),
    }];
    lab.config("node-a", "ncr-one", Some(status)).await;

    let narrow = lab.plugin(&["nodes"]).await;
    let narrow = narrow.expect_code(0);
    assert!(!narrow.contains("no echo reply"), "{narrow}");
    let wide = lab.plugin(&["nodes", "-o", "wide"]).await;
    let wide = wide.expect_code(0);
    let header = wide.lines().next().unwrap();
    assert!(header.contains("NOT-JUDGED"), "{header}");
    let line = wide.lines().find(|l| l.starts_with("node-a")).unwrap();
    assert!(
        line.contains("icmp 172.31.88.102: no echo reply within 1s"),
        "{line}"
    );
    assert!(
        line.ends_with("(why: kubectl netrollout nodes -o wide)"),
        "{line}"
    );
    let json: serde_json::Value =
        serde_json::from_str(lab.plugin(&["nodes", "-o", "json"]).await.expect_code(0)).unwrap();
    assert_eq!(
        json[0]["preexistingFailures"][0]["error"],
        "no echo reply within 1s"
    );
}

#[tokio::test]
async fn nodes_and_status_show_the_frr_version_each_agent_found() {
    let lab = LabApi::netrollout().await;
    let on = |frr: Option<&str>, phase: NodePhase| {
        let mut s = node_status("ncr-one", phase, None);
        s.capabilities = Some(netrollout_api::NodeCapabilities {
            present: vec!["bgpd".into()],
            missing: vec![],
            frr_version: frr.map(str::to_string),
        });
        s
    };
    for (node, frr, phase) in [
        ("node-a", Some("8.4.4"), NodePhase::Provisioned),
        ("node-b", Some("10.3"), NodePhase::Provisioned),
        ("node-c", Some("10.3"), NodePhase::Provisioned),
        ("node-d", None, NodePhase::Provisioned),
        ("node-e", Some("10.3"), NodePhase::Failed),
    ] {
        lab.node(node, true).await;
        lab.config(node, "ncr-one", Some(on(frr, phase))).await;
    }

    let text = lab.plugin(&["nodes"]).await.expect_code(0).to_string();
    let header = text.lines().next().unwrap().to_lowercase();
    assert!(header.contains(" frr "), "{header}");
    let column = |node: &str| {
        let at = header.find(" frr ").unwrap() + 1;
        let line = text.lines().find(|l| l.starts_with(node)).unwrap();
        line[at..].split_whitespace().next().unwrap().to_string()
    };
    assert_eq!(column("node-a"), "8.4.4", "{text}");
    assert_eq!(column("node-b"), "10.3", "{text}");
    assert_eq!(column("node-d"), "-", "{text}");
    let json: serde_json::Value =
        serde_json::from_str(lab.plugin(&["nodes", "-o", "json"]).await.expect_code(0)).unwrap();
    assert_eq!(json[1]["frrVersion"], "10.3");
    assert_eq!(json[3]["frrVersion"], serde_json::Value::Null);

    // `status` counts the Ready nodes per revision with their FRR versions, and lists the
    // others with theirs.
    lab.revision(
        "ncr-one",
        1,
        snapshot(1500, false),
        rev_status(RevisionPhase::Succeeded, 5, 4, 0, 0),
    )
    .await;
    let out = lab.plugin(&["status"]).await.stdout;
    assert!(
        out.contains("4 Ready node(s) run ncr-one (2 on FRR 10.3, 1 on FRR 8.4.4)"),
        "{out}"
    );
    let failed = out
        .lines()
        .find(|l| l.starts_with("node-e"))
        .unwrap_or_else(|| panic!("node-e is not listed:\n{out}"));
    assert!(failed.contains(" 10.3 "), "{failed}");
}

#[tokio::test]
async fn with_the_domain_key_nodes_and_status_show_each_nodes_failure_domain() {
    let lab = LabApi::netrollout().await;
    lab.add_node("node-a", &[("example.com/rack", "r1")], true)
        .await
        .unwrap();
    lab.add_node("node-b", &[], true).await.unwrap();
    let run = lab
        .plugin(&["nodes", "--domain-key", "example.com/rack"])
        .await;
    let out = run.expect_code(0);
    let header = out.lines().next().unwrap_or_default();
    assert!(
        header.starts_with("NODE") && header.contains("DOMAIN"),
        "{out}"
    );
    let row = |n: &str| {
        out.lines()
            .find(|l| l.starts_with(n))
            .unwrap_or_else(|| panic!("{n} missing:\n{out}"))
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(
        (row("node-a").as_str(), row("node-b").as_str()),
        ("r1", "(none)")
    );
    let run = lab
        .plugin(&["nodes", "-o", "json", "--domain-key", "example.com/rack"])
        .await;
    let json = run.expect_code(0);
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(v[0]["domain"], "r1", "{json}");
    // Without the key: no column, no field.
    let run = lab.plugin(&["nodes"]).await;
    let plain = run.expect_code(0);
    assert!(!plain.contains("DOMAIN"), "{plain}");
    // `status` lists the nodes that need attention (none configured yet: both) the same way.
    let status = lab
        .plugin(&["status", "--domain-key", "example.com/rack"])
        .await;
    assert!(status.stdout.contains("DOMAIN"), "{}", status.stdout);
}
