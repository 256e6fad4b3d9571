//! The change record in the plugin: `history` and `diff` show who changed which input and why
//! (`status.changes`), and `undo` writes the user the API server authenticated into the inputs
//! it rewrites, which the bundle's `netrollout-changed-by` policy demands (the inputs named
//! someone else before).

use std::path::Path;

use crate::common;
use crate::promote::kubectl_netrollout;
use crate::steer::create_inputs_of;

use common::{LabApi, PluginLab as _, failed_status, rev_status, snapshot};
use kube::Api;
use kube::api::{Patch, PatchParams};
use netrollout_api::{
    CHANGE_REASON_ANNOTATION, CHANGED_BY_ANNOTATION, ChangeKind, InputChange,
    Layer2NetworkConfiguration, RevisionPhase, TICKET_ANNOTATION,
};
use netrollout_testkit::apiserver::Identity;

fn change(kind: ChangeKind, user: &str, reason: &str, ticket: &str) -> InputChange {
    InputChange {
        kind: "Layer2NetworkConfiguration".into(),
        name: "vlan501".into(),
        change: kind,
        generation: Some(1),
        user: user.into(),
        manager: "kubectl-client-side-apply".into(),
        reason: reason.into(),
        ticket: ticket.into(),
        time: None,
    }
}

#[tokio::test]
async fn history_and_diff_show_the_change_record_and_undo_records_who_undid() {
    let lab = LabApi::netrollout().await;
    let (old, new) = (snapshot(1500, false), snapshot(9000, true));
    let mut one = rev_status(RevisionPhase::Succeeded, 1, 1, 0, 0);
    one.changes = vec![change(
        ChangeKind::Created,
        "alice",
        "first network",
        "NET-1",
    )];
    lab.revision("ncr-one", 1, old, one).await;
    let mut two = failed_status("node-a", 1);
    two.changes = vec![change(ChangeKind::Changed, "bob", "jumbo frames", "NET-7")];
    lab.revision("ncr-two", 2, new.clone(), two).await;

    let history = lab.plugin(&["history"]).await;
    let text = history.expect_code(0);
    let row = |rev: &str| text.lines().find(|l| l.contains(rev)).unwrap_or_default();
    assert!(
        row("ncr-two").contains("bob") && row("ncr-two").contains("jumbo frames [NET-7]"),
        "{text}"
    );
    assert!(
        row("ncr-one").contains("alice") && row("ncr-one").contains("first network [NET-1]"),
        "{text}"
    );
    let diff = lab.plugin(&["diff", "ncr-two"]).await;
    let text = diff.expect_code(0);
    assert!(
        text.contains("change record of ncr-two:\n  Layer2NetworkConfiguration/vlan501 changed by bob via kubectl-client-side-apply: \"jumbo frames\" [NET-7]"),
        "{text}"
    );

    // The inputs say bob made them; the policy then refuses alice's rewrite unless it names her.
    create_inputs_of(&lab, &new).await;
    let l2s: Api<Layer2NetworkConfiguration> = Api::all(lab.client.clone());
    let by_bob = serde_json::json!({"metadata": {"annotations": {
        CHANGED_BY_ANNOTATION: "bob", TICKET_ANNOTATION: "NET-7"}}});
    l2s.patch("vlan501", &PatchParams::default(), &Patch::Merge(&by_bob))
        .await
        .unwrap();
    let policies = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/rbac/admission_policies.yaml"),
    )
    .unwrap();
    let ours: Vec<&str> = (policies.split("\n---\n"))
        .filter(|d| d.contains("name: netrollout-changed-by"))
        .collect();
    lab.kubectl_run(&["apply", "-f", "-"], Some(&ours.join("\n---\n")))
        .await
        .expect_code(0);
    let alice = lab.dir.path().join("alice.kubeconfig");
    lab.server
        .write_kubeconfig_for(&alice, Identity::user("alice", &["system:masters"]))
        .unwrap();
    kubectl_netrollout(&alice, &["undo", "--yes"])
        .await
        .expect_code(0);
    let undone = l2s.get("vlan501").await.unwrap();
    let a = undone.metadata.annotations.unwrap_or_default();
    assert_eq!(
        a.get(CHANGED_BY_ANNOTATION).map(String::as_str),
        Some("alice")
    );
    assert_eq!(
        a.get(CHANGE_REASON_ANNOTATION).map(String::as_str),
        Some("kubectl netrollout undo to ncr-one")
    );
    assert_eq!(
        a.get(TICKET_ANNOTATION),
        None,
        "bob's ticket is not alice's undo"
    );
    assert_eq!(undone.spec.mtu, 1500);
}
