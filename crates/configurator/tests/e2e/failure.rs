use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kube::api::{Api, Patch, PatchParams};
use netrollout_api::{
    ACCEPTED_CONDITION, IDENTICAL_CONTENT_REFUSED, INPUTS_REFUSED_CONDITION, NetworkConfigRevision,
    READY_CONDITION, RECONCILING_CONDITION, RETRY_ANNOTATION, RevisionPhase, RoutingTable,
    STALLED_CONDITION,
};

use crate::agents::{Agents, Outcome, Script};
use crate::lab::{ConfiguratorLab as _, LabApi, R, eventually};
use crate::{
    all_provisioned, assert_event, condition, failing_tables, first_good, has_table, names, nodes,
    succeeded_after,
};

const KIND: &str = "NetworkConfigRevision";

#[tokio::test]
async fn a_failing_node_halts_the_rollout_and_its_wave_goes_back_to_the_known_good_revision() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 5).await?;
    let agents = Agents::start(
        lab.client.clone(),
        failing_tables(vec![(666, Some(Arc::new(AtomicBool::new(true))))]),
    );
    let cfg = lab.configurator(&["--update-limit=2"]);
    let good = first_good(&lab).await?;
    let good_name = good.metadata.name.clone().unwrap();

    lab.set_table("extra", 666).await?;
    let bad = lab
        .newest_in(RevisionPhase::Failed, Duration::from_secs(20))
        .await?;
    let bad_name = bad.metadata.name.clone().unwrap();
    let status = bad.status.clone().unwrap();
    assert!(
        !status.failed_nodes.is_empty(),
        "failed nodes are listed: {status:?}"
    );
    assert!(
        status
            .failed_nodes
            .iter()
            .all(|f| f.time.is_some() && !f.message.is_empty())
    );
    // kstatus: Stalled, not Ready, written with the phase; the real kubectl waits on it.
    let stalled = condition(&bad, STALLED_CONDITION);
    assert_eq!(
        (stalled.status.as_str(), stalled.reason.as_str()),
        ("True", "Failed")
    );
    assert_eq!(condition(&bad, READY_CONDITION).status, "False");
    assert_eq!(condition(&bad, RECONCILING_CONDITION).status, "False");
    let ncr = |n: &str| format!("ncr/{n}");
    lab.ok(&[
        "wait",
        "--for=condition=Stalled",
        &ncr(&bad_name),
        "--timeout=20s",
    ])
    .await;
    lab.ok(&[
        "wait",
        "--for=condition=Ready",
        &ncr(&good_name),
        "--timeout=20s",
    ])
    .await;
    let failed_event = lab
        .event(KIND, &bad_name, "Failed", Duration::from_secs(10))
        .await?;
    assert_event(&failed_event, true, &[&bad_name]);

    // Every node ends on the known-good revision; only the first wave ever saw the bad one.
    all_provisioned(&lab, &names(5), &good_name, Duration::from_secs(20)).await?;
    let rollback = lab
        .event(KIND, &good_name, "RolledBack", Duration::from_secs(10))
        .await?;
    assert_event(&rollback, true, &[&good_name]);
    let bad_pickups: Vec<_> = agents
        .pickups()
        .into_iter()
        .filter(|(_, r)| *r == bad_name)
        .collect();
    assert!(
        bad_pickups.len() <= 2,
        "the blast radius is one wave: {bad_pickups:?}"
    );
    assert!(agents.max_in_flight() <= 2);
    cfg.stop().await
}

#[tokio::test]
async fn reapplying_a_failed_config_is_blocked_until_a_person_retries_it() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 3).await?;
    let bad = Arc::new(AtomicBool::new(true));
    let agents = Agents::start(
        lab.client.clone(),
        failing_tables(vec![(666, Some(bad.clone()))]),
    );
    let cfg = lab.configurator(&["--update-limit=1"]);
    first_good(&lab).await?;
    lab.set_table("extra", 666).await?;
    let failed = lab
        .newest_in(RevisionPhase::Failed, Duration::from_secs(20))
        .await?;
    let failed_name = failed.metadata.name.clone().unwrap();
    lab.set_table("extra", 200).await?;
    let fixed = succeeded_after(&lab, failed.spec.sequence).await?;
    let fixed_name = fixed.metadata.name.clone().unwrap();
    all_provisioned(&lab, &names(3), &fixed_name, Duration::from_secs(10)).await?;

    // The same bad content again: refused, with the reason on the input.
    bad.store(false, Ordering::SeqCst);
    lab.set_table("extra", 666).await?;
    let inputs = Api::<RoutingTable>::all(lab.client.clone());
    eventually(Duration::from_secs(10), || async {
        let t = inputs.get("extra").await?;
        Ok(t.status.is_some_and(|s| {
            s.conditions.iter().any(|c| {
                c.type_ == ACCEPTED_CONDITION
                    && c.status == "False"
                    && c.message
                        .contains(&format!("identical to failed revision {failed_name}"))
            })
        }))
    })
    .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pickups_before = agents.pickups().len();
    assert_eq!(
        lab.revisions().await?.len(),
        3,
        "no new revision for the same content"
    );
    all_provisioned(&lab, &names(3), &fixed_name, Duration::from_secs(1)).await?;
    // The failed revision's own status says the inputs are refused and names them; it still
    // says why it failed (phase, message and Stalled untouched).
    let ncr_ref = format!("ncr/{failed_name}");
    let wait_refused = [
        "wait",
        "--for=condition=InputsRefused",
        ncr_ref.as_str(),
        "--timeout=10s",
    ];
    lab.ok(&wait_refused).await;
    let ncrs = Api::<NetworkConfigRevision>::all(lab.client.clone());
    let still = ncrs.get(&failed_name).await?;
    assert_eq!(
        still.status.as_ref().and_then(|s| s.message.clone()),
        failed.status.as_ref().and_then(|s| s.message.clone()),
        "the failure reason is kept"
    );
    let refused = condition(&still, INPUTS_REFUSED_CONDITION);
    assert_eq!(refused.reason, IDENTICAL_CONTENT_REFUSED);
    for part in [
        "RoutingTable extra".to_string(),
        format!("kubectl netrollout retry {failed_name}"),
    ] {
        assert!(refused.message.contains(&part), "{}", refused.message);
    }
    assert_eq!(
        condition(&still, STALLED_CONDITION),
        condition(&failed, STALLED_CONDITION),
        "Stalled is unchanged, its transition time too"
    );
    // Other content: no longer refused; the same bad content again: refused again.
    let refused_is = |status: &'static str, reason: &'static str| {
        let ncrs = ncrs.clone();
        let name = failed_name.clone();
        async move {
            let r = ncrs.get(&name).await?;
            let c = condition(&r, INPUTS_REFUSED_CONDITION);
            Ok::<_, anyhow::Error>(c.status == status && c.reason == reason)
        }
    };
    lab.set_table("extra", 200).await?;
    eventually(Duration::from_secs(10), || {
        refused_is("False", "InputsChanged")
    })
    .await?;
    lab.set_table("extra", 666).await?;
    lab.ok(&wait_refused).await;

    // A person retries it: it becomes the newest revision and rolls out.
    let api = Api::<NetworkConfigRevision>::all(lab.client.clone());
    let patch = serde_json::json!({ "metadata": { "annotations": { RETRY_ANNOTATION: "now" } } });
    api.patch(&failed_name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let retried = succeeded_after(&lab, fixed.spec.sequence).await?;
    assert_eq!(retried.metadata.name.as_deref(), Some(failed_name.as_str()));
    assert!(retried.spec.sequence > fixed.spec.sequence);
    let annotations = retried.metadata.annotations.unwrap_or_default();
    assert!(
        !annotations.contains_key(RETRY_ANNOTATION),
        "the retry request is consumed"
    );
    all_provisioned(&lab, &names(3), &failed_name, Duration::from_secs(10)).await?;
    assert!(agents.pickups().len() > pickups_before);
    let retried = ncrs.get(&failed_name).await?;
    let cleared = condition(&retried, INPUTS_REFUSED_CONDITION);
    assert_eq!(
        (cleared.status.as_str(), cleared.reason.as_str()),
        ("False", "Retried")
    );
    assert_eq!(condition(&retried, READY_CONDITION).status, "True");
    assert_eq!(condition(&retried, STALLED_CONDITION).status, "False");
    cfg.stop().await
}

#[tokio::test]
async fn a_node_that_hangs_mid_apply_fails_the_revision_after_the_apply_timeout() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 3).await?;
    let script: Script = Arc::new(|node, spec| {
        let outcome = if node == "n-0" && has_table(spec, 200) {
            Outcome::Hang
        } else {
            Outcome::Succeed
        };
        (Duration::from_millis(50), outcome)
    });
    let _agents = Agents::start(lab.client.clone(), script);
    let cfg = lab.configurator(&["--update-limit=3", "--apply-timeout=1s"]);
    let good = first_good(&lab).await?;
    lab.set_table("extra", 200).await?;
    let failed = lab
        .newest_after(
            good.spec.sequence,
            RevisionPhase::Failed,
            Duration::from_secs(20),
        )
        .await?;
    let nodes_failed = failed.status.unwrap().failed_nodes;
    assert_eq!(nodes_failed.len(), 1, "{nodes_failed:?}");
    assert_eq!(nodes_failed[0].node, "n-0");
    assert!(
        nodes_failed[0].message.to_lowercase().contains("timeout")
            || nodes_failed[0].message.contains("did not finish"),
        "{nodes_failed:?}"
    );
    assert_eq!(nodes_failed[0].reason, "ApplyTimeout", "{nodes_failed:?}");
    cfg.stop().await
}
