//! `kubectl netrollout promote` through the real kubectl, as a person the lab API server
//! authenticates: the promotion names that user (not the kubeconfig's entry), passes the
//! bundle's admission policy, and is refused when nothing waits for it.

use std::path::Path;

use crate::common;

use common::{LabApi, Run, rev_status, snapshot};
use netrollout_api::reason::AWAITING_PROMOTION;
use netrollout_api::{RevisionHold, RevisionPhase};
use netrollout_testkit::apiserver::Identity;

/// Runs `kubectl netrollout ARGS` with the kubeconfig `kubeconfig` (the plugin found on PATH).
pub(crate) async fn kubectl_netrollout(kubeconfig: &Path, args: &[&str]) -> Run {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_kubectl-netrollout"))
        .parent()
        .unwrap()
        .to_owned();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    let out = tokio::process::Command::new("kubectl")
        .arg("netrollout")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("PATH", path)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("kubectl (v1.32) must be on PATH for these tests");
    Run::from(out)
}

#[tokio::test]
async fn promote_releases_the_gate_as_the_authenticated_user_and_refuses_when_nothing_waits() {
    let lab = LabApi::netrollout().await;
    let policies =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/rbac/admission_policies.yaml");
    lab.kubectl_run(&["apply", "-f", policies.to_str().unwrap()], None)
        .await
        .expect_code(0);
    let mut status = rev_status(RevisionPhase::Progressing, 4, 1, 0, 3);
    status.hold = Some(RevisionHold {
        reason: AWAITING_PROMOTION.into(),
        sequence: 1,
        gate: Some(1),
        gates: Some(2),
        nodes: Some(1),
        message: "revision ncr-one is paused at approval gate 1 of 2 (--pause-after)".into(),
    });
    lab.revision("ncr-one", 1, snapshot(1500, false), status)
        .await;
    let alice = lab.dir.path().join("alice.kubeconfig");
    lab.server
        .write_kubeconfig_for(&alice, Identity::user("alice", &["system:masters"]))
        .unwrap();

    let shown = kubectl_netrollout(&alice, &["status"]).await;
    assert!(
        shown
            .stdout
            .contains("ncr-one held at approval gate 1 of 2 (AwaitingPromotion)"),
        "{}",
        shown.stdout
    );
    let run = kubectl_netrollout(&alice, &["promote", "ncr-one"]).await;
    let out = run.expect_code(0);
    assert!(
        out.contains("promoted by alice: approval gate 1 released"),
        "{out}"
    );
    let rev = lab.revision_api().get("ncr-one").await.unwrap();
    let p = rev.spec.promotion.expect("spec.promotion written");
    assert_eq!(
        (p.by.as_str(), p.sequence, p.gates, p.full, p.force),
        ("alice", 1, 1, false, false)
    );

    // Nothing holds it now: a plain promote is refused and says what would work.
    let no_hold = serde_json::json!({ "status": { "hold": null } });
    lab.revision_api()
        .patch_status(
            "ncr-one",
            &Default::default(),
            &kube::api::Patch::Merge(&no_hold),
        )
        .await
        .unwrap();
    let run = kubectl_netrollout(&alice, &["promote", "ncr-one"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("is not waiting at an approval gate") && run.stderr.contains("--full"),
        "{}",
        run.stderr
    );
    // --full ahead of the next gate keeps the gate released before.
    let run = kubectl_netrollout(&alice, &["promote", "1", "--full"]).await;
    run.expect_code(0);
    let p = lab
        .revision_api()
        .get("ncr-one")
        .await
        .unwrap()
        .spec
        .promotion
        .unwrap();
    assert_eq!((p.gates, p.full), (1, true));
}
