//! `status`, `history` and `nodes` against a lab API server holding objects in the shapes the
//! configurator and the agents write; exit codes gate pipelines.

use crate::common;

use std::time::Duration;

use common::{LabApi, PluginLab as _, failed_status, node_status, rev_status, snapshot};
use netrollout_api::{FailedNode, NodePhase, RevisionPhase};

#[tokio::test]
async fn status_exits_zero_when_the_newest_revision_succeeded_and_three_when_it_failed() {
    let lab = LabApi::netrollout().await;
    lab.node("node-a", true).await;
    lab.revision(
        "ncr-one",
        1,
        snapshot(1500, false),
        rev_status(RevisionPhase::Succeeded, 1, 1, 0, 0),
    )
    .await;
    lab.config(
        "node-a",
        "ncr-one",
        Some(node_status("ncr-one", NodePhase::Provisioned, None)),
    )
    .await;
    let ok = lab.plugin(&["status"]).await;
    let out = ok.expect_code(0);
    assert!(
        out.contains("ncr-one") && out.contains("Succeeded") && out.contains("1/1"),
        "{out}"
    );
    assert!(out.contains("newest revision ncr-one: Succeeded"), "{out}");
    assert!(
        out.contains("1 Ready node(s) run ncr-one"),
        "finished nodes are counted: {out}"
    );
    assert!(
        !out.lines().any(|l| l.starts_with("node-a")),
        "and not listed: {out}"
    );

    lab.revision(
        "ncr-two",
        2,
        snapshot(9000, false),
        failed_status("node-a", 1),
    )
    .await;
    let failed = lab.plugin(&["status"]).await;
    let out = failed.expect_code(3);
    assert!(
        out.contains("ncr-two failed on node-a: ProbeFailed: gateway 10.250.0.1 unreachable"),
        "{out}"
    );
    let json: serde_json::Value =
        serde_json::from_str(lab.plugin(&["status", "-o", "json"]).await.expect_code(3)).unwrap();
    assert_eq!(json["outcome"], "Failed");
    assert_eq!(json["newest"], "ncr-two");
    assert_eq!(json["revisions"][0]["failedNodes"][0]["node"], "node-a");
}

#[tokio::test]
async fn status_names_the_regressed_nodes_and_their_checks_when_the_fleet_guard_failed_a_revision()
{
    let lab = LabApi::netrollout().await;
    lab.node("node-a", true).await;
    lab.node("node-b", true).await;
    let mut status = rev_status(RevisionPhase::Failed, 2, 1, 0, 0);
    status.failed = 1;
    status.message = Some("fleet guard tripped: 1 node(s) regressed during the current wave of revision ncr-two (--guard-threshold=1): node-b (checks tenant-blue-gw, outside failing since 1.2s into the wave); revision ncr-two is Failed and its nodes return to known-good revision ncr-one, the current wave (node-a) among them; retry it once the cause is found".into());
    status.failed_nodes = vec![FailedNode {
        node: "node-b".into(),
        reason: "HealthRegressed".into(),
        // The checks are read from their field, never from the sentence beside them.
        message: "reworded: node-b's checks regressed 1.2s into the wave".into(),
        failing_checks: vec!["tenant-blue-gw".into(), "outside".into()],
        time: None,
    }];
    lab.revision("ncr-two", 2, snapshot(9000, false), status)
        .await;
    let out = lab.plugin(&["status"]).await;
    let out = out.expect_code(3);
    assert!(
        out.contains("fleet guard tripped on ncr-two: regressed during its wave: node-b (tenant-blue-gw, outside)"),
        "{out}"
    );

    // A failure of the nodes' own probes is no guard trip.
    lab.revision(
        "ncr-three",
        3,
        snapshot(8999, false),
        failed_status("node-a", 2),
    )
    .await;
    let out = lab.plugin(&["status"]).await;
    let out = out.expect_code(3);
    assert!(!out.contains("fleet guard tripped on ncr-three"), "{out}");
}

#[tokio::test]
async fn status_exits_four_while_a_rollout_is_in_progress_or_there_is_no_revision() {
    let lab = LabApi::netrollout().await;
    lab.plugin(&["status"]).await.expect_code(4);
    lab.node("node-a", true).await;
    lab.revision(
        "ncr-one",
        1,
        snapshot(1500, false),
        rev_status(RevisionPhase::Progressing, 1, 0, 1, 0),
    )
    .await;
    lab.config(
        "node-a",
        "ncr-one",
        Some(node_status("ncr-one", NodePhase::Provisioning, None)),
    )
    .await;
    let out = lab.plugin(&["status"]).await;
    assert!(
        out.expect_code(4).contains("Provisioning"),
        "{}",
        out.stdout
    );
}

#[tokio::test]
async fn status_watch_follows_the_rollout_and_exits_zero_when_it_succeeds() {
    let lab = LabApi::netrollout().await;
    lab.node("node-a", true).await;
    lab.node("node-b", true).await;
    lab.revision(
        "ncr-one",
        1,
        snapshot(1500, false),
        rev_status(RevisionPhase::Progressing, 2, 0, 1, 1),
    )
    .await;
    lab.config(
        "node-a",
        "ncr-one",
        Some(node_status("ncr-one", NodePhase::Provisioning, None)),
    )
    .await;
    lab.config("node-b", "ncr-none", None).await;
    let watch = lab.plugin(&[
        "status",
        "--watch",
        "--interval",
        "100ms",
        "--timeout",
        "60s",
        "-o",
        "json",
    ]);
    let rollout = async {
        tokio::time::sleep(Duration::from_millis(400)).await;
        lab.set_config_status(
            "node-a",
            node_status("ncr-one", NodePhase::Provisioned, None),
        )
        .await;
        lab.config_api()
            .patch(
                "node-b",
                &Default::default(),
                &kube::api::Patch::Merge(serde_json::json!({"spec": {"revision": "ncr-one"}})),
            )
            .await
            .unwrap();
        lab.set_revision_status(
            "ncr-one",
            rev_status(RevisionPhase::Progressing, 2, 1, 1, 0),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(400)).await;
        lab.set_config_status(
            "node-b",
            node_status("ncr-one", NodePhase::Provisioned, None),
        )
        .await;
        lab.set_revision_status("ncr-one", rev_status(RevisionPhase::Succeeded, 2, 2, 0, 0))
            .await;
    };
    let (run, ()) = tokio::join!(watch, rollout);
    let out = run.expect_code(0);
    let reports: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(reports.len() >= 2, "one JSON line per change: {out}");
    assert_eq!(reports[0]["outcome"], "InProgress");
    assert_eq!(reports.last().unwrap()["outcome"], "Succeeded");
}

#[tokio::test]
async fn status_watch_gives_up_with_exit_four_at_the_timeout() {
    let lab = LabApi::netrollout().await;
    lab.revision(
        "ncr-one",
        1,
        snapshot(1500, false),
        rev_status(RevisionPhase::Progressing, 3, 1, 1, 1),
    )
    .await;
    let started = std::time::Instant::now();
    let run = lab
        .plugin(&[
            "status",
            "--watch",
            "--interval",
            "100ms",
            "--timeout",
            "700ms",
        ])
        .await;
    run.expect_code(4);
    assert!(run.stderr.contains("timed out after"), "{}", run.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the timeout ends the watch"
    );
}

#[tokio::test]
async fn an_old_revision_made_the_target_again_is_not_done_until_its_nodes_run_it() {
    // After `undo` the configurator raises an old Succeeded revision's sequence; its status
    // still says Succeeded from before while every node still runs the newer revision.
    let lab = LabApi::netrollout().await;
    lab.node("node-a", true).await;
    lab.revision(
        "ncr-new",
        2,
        snapshot(9000, false),
        rev_status(RevisionPhase::Superseded, 1, 1, 0, 0),
    )
    .await;
    lab.revision(
        "ncr-old",
        3,
        snapshot(1500, false),
        rev_status(RevisionPhase::Succeeded, 1, 1, 0, 0),
    )
    .await;
    lab.config(
        "node-a",
        "ncr-new",
        Some(node_status("ncr-new", NodePhase::Provisioned, None)),
    )
    .await;
    lab.plugin(&["status"]).await.expect_code(4);
    lab.config_api()
        .patch(
            "node-a",
            &Default::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {"revision": "ncr-old"}})),
        )
        .await
        .unwrap();
    lab.plugin(&["status"]).await.expect_code(4);
    lab.set_config_status(
        "node-a",
        node_status("ncr-old", NodePhase::Provisioned, None),
    )
    .await;
    lab.plugin(&["status"]).await.expect_code(0);
}

#[tokio::test]
async fn history_lists_every_revision_newest_first_as_a_table_and_as_yaml() {
    let lab = LabApi::netrollout().await;
    lab.revision(
        "ncr-one",
        1,
        snapshot(1500, false),
        rev_status(RevisionPhase::Succeeded, 2, 2, 0, 0),
    )
    .await;
    lab.revision(
        "ncr-two",
        2,
        snapshot(9000, true),
        failed_status("node-b", 2),
    )
    .await;
    let out = lab.plugin(&["history"]).await;
    let lines: Vec<&str> = out.expect_code(0).lines().collect();
    assert!(
        lines[0].starts_with("SEQ") && lines[0].contains("PHASE") && lines[0].contains("INPUTS"),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with("2 ")
            && lines[1].contains("ncr-two")
            && lines[1].contains("1 vrf, 1 layer2, 1 taas")
    );
    assert!(
        lines[2].starts_with("1 ")
            && lines[2].contains("ncr-one")
            && lines[2].contains("Succeeded")
    );
    let phase_col = lines[0].find("PHASE").unwrap();
    assert_eq!(
        &lines[1][phase_col..phase_col + 6],
        "Failed",
        "columns are aligned: {lines:?}"
    );
    let yaml = lab.plugin(&["history", "-o", "yaml"]).await;
    let rows: Vec<serde_json::Value> = serde_saphyr::from_str(yaml.expect_code(0)).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["name"], "ncr-two");
    assert_eq!(rows[1]["sequence"], 1);
}

#[tokio::test]
async fn nodes_show_each_nodes_state_and_last_error() {
    let lab = LabApi::netrollout().await;
    lab.node("node-a", true).await;
    lab.node("node-b", true).await;
    lab.node("node-c", false).await;
    lab.config(
        "node-a",
        "ncr-one",
        Some(node_status("ncr-one", NodePhase::Provisioned, None)),
    )
    .await;
    lab.config(
        "node-b",
        "ncr-one",
        Some(node_status(
            "ncr-one",
            NodePhase::Failed,
            Some("probe tcp 10.0.0.1:443 failed"),
        )),
    )
    .await;
    let out = lab.plugin(&["nodes"]).await;
    let text = out.expect_code(0);
    let line = |n: &str| {
        text.lines()
            .find(|l| l.starts_with(n))
            .unwrap_or_else(|| panic!("{n} missing:\n{text}"))
    };
    assert!(line("node-a").contains("Provisioned"));
    assert!(
        line("node-b").contains("Failed")
            && line("node-b").contains("ProbeFailed")
            && line("node-b").contains("probe tcp 10.0.0.1:443 failed")
    );
    assert!(line("node-c").contains("False") && line("node-c").contains("NoConfig"));
    let json: serde_json::Value =
        serde_json::from_str(lab.plugin(&["nodes", "-o", "json"]).await.expect_code(0)).unwrap();
    assert_eq!(json[1]["node"], "node-b");
    assert_eq!(json[1]["phase"], "Failed");
    assert_eq!(json[0]["upToDate"], true);
}

#[tokio::test]
async fn the_plugin_runs_as_kubectl_netrollout() {
    let lab = LabApi::netrollout().await;
    lab.revision(
        "ncr-one",
        1,
        snapshot(1500, false),
        rev_status(RevisionPhase::Succeeded, 0, 0, 0, 0),
    )
    .await;
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_kubectl-netrollout"))
        .parent()
        .unwrap()
        .to_owned();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    // kubectl refuses its own flags before a plugin's name, so only KUBECONFIG is set.
    let out = tokio::process::Command::new("kubectl")
        .args(["netrollout", "history"])
        .env("KUBECONFIG", lab.kubeconfig())
        .env("PATH", path)
        .output()
        .await
        .expect("kubectl (v1.32) must be on PATH for these tests");
    let run = common::Run::from(out);
    assert!(run.expect_code(0).contains("ncr-one"), "{}", run.stdout);
}

#[tokio::test]
async fn status_watch_rides_out_api_errors_and_still_reports_the_outcome() {
    let lab = LabApi::netrollout().await;
    lab.revision(
        "ncr-one",
        1,
        snapshot(1500, false),
        rev_status(RevisionPhase::Progressing, 1, 0, 1, 0),
    )
    .await;
    let watch = lab.plugin(&[
        "status",
        "--watch",
        "--interval",
        "100ms",
        "--timeout",
        "60s",
    ]);
    let outage = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        lab.server
            .faults()
            .set_error_rate(Some("list"), Some("networkconfigrevisions"), 1.0);
        tokio::time::sleep(Duration::from_millis(400)).await;
        lab.server.faults().clear();
        lab.set_revision_status("ncr-one", failed_status("node-a", 1))
            .await;
    };
    let (run, ()) = tokio::join!(watch, outage);
    run.expect_code(3);
    assert!(
        run.stderr.contains("retrying"),
        "API errors are reported: {}",
        run.stderr
    );
}

#[tokio::test]
async fn status_shows_the_pre_flight_verdict_of_a_revision_waiting_for_a_node() {
    let lab = LabApi::netrollout().await;
    lab.node("node-a", true).await;
    let verdict = "revision ncr-one is not dispatched to any node: its config needs what 1 node(s) lack: node node-a lacks vrf (kernel module; load it (modprobe vrf) or install the kernel's modules package)";
    let mut status = netrollout_api::NetworkConfigRevisionStatus::default();
    status.conditions = vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        type_: netrollout_api::NODES_CAPABLE_CONDITION.into(),
        status: "False".into(),
        reason: netrollout_api::NODES_LACK_CAPABILITIES.into(),
        message: verdict.into(),
        last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            jiff::Timestamp::UNIX_EPOCH,
        ),
        observed_generation: Some(1),
    }];
    lab.revision("ncr-one", 1, snapshot(1500, false), status)
        .await;
    let out = lab.plugin(&["status"]).await;
    let text = out.stdout.clone();
    assert!(text.contains(&format!("  pre-flight: {verdict}")), "{text}");
}
