//! The change record: people change inputs with the real kubectl, each authenticated by the lab
//! API server as themselves; the revision records who (the `netrollout.io/changed-by` the
//! bundle's admission policy holds to the requesting user), the client (managed fields), why and
//! the ticket, and its Event says the same. Nobody writes a change in someone else's name.

use std::path::{Path, PathBuf};
use std::time::Duration;

use netrollout_api::{ChangeKind, NetworkConfigRevision, RevisionPhase};
use netrollout_testkit::apiserver::Identity;
use netrollout_testkit::cmd::Run;
use netrollout_testkit::kubectl::kubectl;

use crate::agents::{Agents, healthy};
use crate::lab::{ConfiguratorLab as _, LabApi, R};
use crate::{assert_event, nodes, succeeded_after};

/// A RoutingTable `extra` with `table` and the change annotations.
fn table(table: i64, by: &str, reason: &str, ticket: &str) -> String {
    format!(
        "apiVersion: netrollout.io/v1alpha1\nkind: RoutingTable\nmetadata:\n  name: extra\n  annotations:\n    netrollout.io/changed-by: {by}\n    netrollout.io/change-reason: {reason}\n    netrollout.io/ticket: {ticket}\nspec:\n  tableId: {table}\n"
    )
}

/// kubectl as `user` (a person in `system:masters`, so RBAC lets every write through and only
/// admission decides).
async fn as_user(lab: &LabApi, user: &str, args: &[&str], stdin: Option<&str>) -> Run {
    let config: PathBuf = lab.dir.path().join(format!("{user}.kubeconfig"));
    if !config.exists() {
        lab.server
            .write_kubeconfig_for(&config, Identity::user(user, &["system:masters"]))
            .unwrap();
    }
    let cache = lab.dir.path().join(format!("{user}.cache"));
    kubectl(&config, &cache, args, stdin, None).await
}

/// `kubectl apply` of the RoutingTable `manifest` as `user`.
async fn apply_table(lab: &LabApi, user: &str, manifest: String) -> Run {
    as_user(lab, user, &["apply", "-f", "-"], Some(&manifest)).await
}

/// `kubectl annotate` as `user`, setting the table's `netrollout.io/changed-by` to `to`.
async fn claim(lab: &LabApi, user: &str, to: &str) -> Run {
    let annotation = format!("netrollout.io/changed-by={to}");
    let args = [
        "annotate",
        "--overwrite",
        "routingtable",
        "extra",
        &annotation,
    ];
    as_user(lab, user, &args, None).await
}

/// The Event `reason` on revision `name`, within 5 s.
async fn revision_event(
    lab: &LabApi,
    name: &str,
    reason: &str,
) -> anyhow::Result<k8s_openapi::api::events::v1::Event> {
    lab.event(
        "NetworkConfigRevision",
        name,
        reason,
        Duration::from_secs(5),
    )
    .await
}

fn changes(r: &NetworkConfigRevision) -> Vec<netrollout_api::InputChange> {
    r.status.clone().map(|s| s.changes).unwrap_or_default()
}

#[tokio::test]
async fn each_revision_records_who_changed_which_input_and_why_and_nobody_writes_for_another() -> R
{
    let lab = LabApi::netrollout().await;
    // The bundle's `netrollout-changed-by` policy and its binding (the other policies know the
    // configurator by its ServiceAccount, which this in-process configurator is not).
    let policies = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/rbac/admission_policies.yaml"),
    )?;
    let ours: Vec<&str> = (policies.split("\n---\n"))
        .filter(|d| d.contains("name: netrollout-changed-by"))
        .collect();
    assert_eq!(ours.len(), 2, "the policy and its binding");
    lab.ok_in(&["apply", "-f", "-"], Some(&ours.join("\n---\n")))
        .await;
    nodes(&lab, 2).await?;
    let _agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(50)));
    let cfg = lab.configurator(&["--update-limit=2"]);

    apply_table(&lab, "alice", table(100, "alice", "first table", "NET-1"))
        .await
        .ok("alice applies");
    let first = lab
        .newest_in(RevisionPhase::Succeeded, Duration::from_secs(20))
        .await?;
    let c = changes(&first);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(
        (
            c[0].kind.as_str(),
            c[0].name.as_str(),
            c[0].change,
            c[0].user.as_str()
        ),
        ("RoutingTable", "extra", ChangeKind::Created, "alice")
    );
    assert_eq!(
        (c[0].reason.as_str(), c[0].ticket.as_str()),
        ("first table", "NET-1")
    );
    assert!(
        c[0].manager.starts_with("kubectl"),
        "the client: {:?}",
        c[0].manager
    );
    assert!(c[0].time.is_some() && c[0].generation == Some(1), "{c:?}");
    let name = first.metadata.name.clone().unwrap();
    let event = revision_event(&lab, &name, "Created").await?;
    assert_event(
        &event,
        false,
        &[
            "RoutingTable/extra created by alice via kubectl",
            "\"first table\" [NET-1]",
        ],
    );

    // Bob cannot change it in Alice's name, nor claim an earlier change as his own.
    let refused = apply_table(&lab, "bob", table(101, "alice", "x", "NET-2")).await;
    let err = refused.fails("bob applies in alice's name");
    assert!(
        err.contains("netrollout.io/changed-by") && err.contains("set it to bob"),
        "{err}"
    );
    let err = claim(&lab, "bob", "bob").await;
    // Setting it to himself without changing the spec is his own claim: allowed by the rule
    // "a write that sets it must come from the user it names"; changing someone else's name
    // to a third is not.
    err.ok("bob names himself");
    let err = claim(&lab, "bob", "carol").await;
    assert!(err.fails("bob names carol").contains("set it to bob"));

    apply_table(&lab, "bob", table(101, "bob", "a bigger table", "NET-2"))
        .await
        .ok("bob applies");
    let second = succeeded_after(&lab, first.spec.sequence).await?;
    let c = changes(&second);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(
        (
            c[0].change,
            c[0].user.as_str(),
            c[0].reason.as_str(),
            c[0].ticket.as_str()
        ),
        (ChangeKind::Changed, "bob", "a bigger table", "NET-2")
    );
    assert_eq!(c[0].generation, Some(2));

    // Back to the first content: its revision is raised, and records this change instead.
    apply_table(&lab, "alice", table(100, "alice", "back to 100", "NET-3"))
        .await
        .ok("alice goes back");
    let raised = succeeded_after(&lab, second.spec.sequence).await?;
    assert_eq!(
        raised.metadata.name, first.metadata.name,
        "the first revision, raised"
    );
    let c = changes(&raised);
    assert_eq!(
        (
            c.len(),
            c[0].change,
            c[0].user.as_str(),
            c[0].reason.as_str()
        ),
        (1, ChangeKind::Changed, "alice", "back to 100")
    );
    let event = revision_event(&lab, &name, "SequenceRaised").await?;
    assert_event(
        &event,
        false,
        &["RoutingTable/extra changed by alice", "[NET-3]"],
    );
    cfg.stop().await
}
