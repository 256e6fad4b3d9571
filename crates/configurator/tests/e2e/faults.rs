use std::time::Duration;

use kube::api::{Api, DeleteParams, Patch, PatchParams};
use netrollout_api::{ACCEPTED_CONDITION, NetworkConfigRevision, RevisionPhase, RoutingTable};

use crate::agents::{Agents, healthy};
use crate::lab::{ConfiguratorLab as _, LabApi, R, eventually};
use crate::{all_provisioned, first_good, names, nodes, succeeded_after};

#[tokio::test]
async fn api_errors_injected_by_the_server_are_retried_and_never_fail_a_revision() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 4).await?;
    let agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(50)));
    let faults = lab.server.faults();
    faults.set_error_rate(Some("patch"), Some("nodenetworkconfigs"), 0.3);
    faults.set_error_rate(Some("create"), Some("nodenetworkconfigs"), 0.3);
    faults.set_error_rate(Some("create"), Some("networkconfigrevisions"), 0.5);
    faults.set_error_rate(Some("patch"), Some("networkconfigrevisions"), 0.3);
    // The rates alone could, by chance, fail no request (a few per cent of runs did): the first
    // revision create fails for certain, so the error counter below has something to count.
    faults.fail_next(Some("create"), Some("networkconfigrevisions"), 1);
    let cfg = lab.configurator(&["--update-limit=2"]);
    lab.set_table("extra", 100).await?;
    let rev = lab
        .newest_in(RevisionPhase::Succeeded, Duration::from_secs(40))
        .await?;
    faults.clear();
    all_provisioned(
        &lab,
        &names(4),
        rev.metadata.name.as_deref().unwrap(),
        Duration::from_secs(10),
    )
    .await?;
    assert_eq!(rev.status.unwrap().failed, 0);
    assert!(agents.max_in_flight() <= 2, "errors never breach the limit");
    let metrics = cfg.metrics.encode();
    assert!(
        metrics.contains("netrollout_configurator_reconcile_errors_total{name=\"api\"}"),
        "{metrics}"
    );
    cfg.stop().await
}

#[tokio::test]
async fn a_revision_recreated_while_the_old_one_is_terminating_waits_and_never_adopts_it() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 2).await?;
    let _agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(50)));
    let cfg = lab.configurator(&["--update-limit=2"]);
    let old = first_good(&lab).await?;
    let name = old.metadata.name.clone().unwrap();
    lab.set_table("extra", 101).await?;
    succeeded_after(&lab, 1).await?;

    // A finalizer keeps the old revision terminating after its deletion.
    let api = Api::<NetworkConfigRevision>::all(lab.client.clone());
    let hold = serde_json::json!({ "metadata": { "finalizers": ["e2e.netrollout.io/hold"] } });
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&hold))
        .await?;
    api.delete(&name, &DeleteParams::default()).await?;
    lab.set_table("extra", 100).await?;
    let inputs = Api::<RoutingTable>::all(lab.client.clone());
    eventually(Duration::from_secs(10), || async {
        let t = inputs.get("extra").await?;
        Ok(t.status.is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == ACCEPTED_CONDITION && c.reason == "WaitingForDeletion")
        }))
    })
    .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let still = api.get(&name).await?;
    assert!(still.metadata.deletion_timestamp.is_some());
    assert_eq!(
        still.spec.sequence, old.spec.sequence,
        "a terminating revision is never adopted"
    );
    assert!(
        lab.configs().await?.iter().all(|c| c.spec.revision != name),
        "nothing dispatched from it"
    );

    // Once it is gone, the same content gets a fresh object with a new sequence.
    api.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(&serde_json::json!({ "metadata": { "finalizers": null } })),
    )
    .await?;
    eventually(Duration::from_secs(20), || async {
        Ok(lab
            .revisions()
            .await?
            .iter()
            .any(|r| r.metadata.name == old.metadata.name && r.metadata.uid != old.metadata.uid))
    })
    .await?;
    let fresh = lab
        .newest_in(RevisionPhase::Succeeded, Duration::from_secs(20))
        .await?;
    assert_eq!(fresh.metadata.name.as_deref(), Some(name.as_str()));
    assert_ne!(fresh.metadata.uid, old.metadata.uid);
    assert!(fresh.spec.sequence > 2);
    all_provisioned(&lab, &names(2), &name, Duration::from_secs(10)).await?;
    cfg.stop().await
}

#[tokio::test]
async fn a_revision_name_taken_by_different_content_is_reported_and_never_overwritten() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 1).await?;
    // The revision name the inputs will hash to, taken by an object with other content.
    let table = RoutingTable::new("extra", netrollout_api::RoutingTableSpec { table_id: 100 });
    let snapshot = netrollout_render::from_objects(&[], &[], &[table]);
    let name = netrollout_render::Revision::of(&snapshot)?.name;
    let squatter = NetworkConfigRevision::new(
        &name,
        netrollout_api::NetworkConfigRevisionSpec {
            sequence: 1,
            hash: format!("sha256:{}", "0".repeat(64)),
            paused: true,
            snapshot: netrollout_api::Snapshot::default(),
            analysis: Vec::new(),
            promotion: None,
        },
    );
    let api = Api::<NetworkConfigRevision>::all(lab.client.clone());
    api.create(&Default::default(), &squatter).await?;
    lab.set_table("extra", 100).await?;
    let cfg = lab.configurator(&[]);
    let inputs = Api::<RoutingTable>::all(lab.client.clone());
    eventually(Duration::from_secs(10), || async {
        let t = inputs.get("extra").await?;
        Ok(t.status.is_some_and(|s| {
            s.conditions.iter().any(|c| {
                c.type_ == ACCEPTED_CONDITION
                    && c.reason == "NameClash"
                    && c.message.contains("never overwritten")
            })
        }))
    })
    .await?;
    let after = api.get(&name).await?;
    assert_eq!(
        after.spec.hash, squatter.spec.hash,
        "the clashing revision is untouched"
    );
    assert_eq!(lab.revisions().await?.len(), 1);
    cfg.stop().await
}

#[tokio::test]
async fn an_input_being_deleted_counts_as_already_gone() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 1).await?;
    let _agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(20)));
    let cfg = lab.configurator(&[]);
    lab.set_table("keep", 100).await?;
    lab.set_table("going", 101).await?;
    let both = lab
        .newest_in(RevisionPhase::Succeeded, Duration::from_secs(20))
        .await?;
    assert_eq!(both.spec.snapshot.routing_tables.len(), 2);
    let inputs = Api::<RoutingTable>::all(lab.client.clone());
    let hold = serde_json::json!({ "metadata": { "finalizers": ["e2e.netrollout.io/hold"] } });
    inputs
        .patch("going", &PatchParams::default(), &Patch::Merge(&hold))
        .await?;
    inputs.delete("going", &DeleteParams::default()).await?;
    let after = succeeded_after(&lab, both.spec.sequence).await?;
    let names: Vec<&str> = after
        .spec
        .snapshot
        .routing_tables
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(names, ["keep"], "the terminating input is left out");
    assert!(
        inputs
            .get("going")
            .await?
            .metadata
            .deletion_timestamp
            .is_some()
    );
    inputs
        .patch(
            "going",
            &PatchParams::default(),
            &Patch::Merge(&serde_json::json!({ "metadata": { "finalizers": null } })),
        )
        .await?;
    cfg.stop().await
}
