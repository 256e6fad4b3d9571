//! Pre-flight: a revision whose config needs what a node's agent reported missing is not
//! dispatched to any node; the revision says which node lacks what (condition `NodesCapable`
//! and a Warning Event); once the node reports it, the rollout proceeds on its own.

use std::time::Duration;

use netrollout_api::{
    NODES_CAPABLE_CONDITION, NODES_LACK_CAPABILITIES, NOT_ROLLING_OUT, NetworkConfigRevision,
    NodeCapabilities, NodeNetworkConfigStatus, RevisionPhase,
};

use crate::agents::{Agents, healthy};
use crate::lab::{Configurator, ConfiguratorLab as _, LabApi, R, eventually};
use crate::{all_provisioned, assert_event, condition, first_good, names, nodes, succeeded_after};

/// What a node's agent reports: `present` and `missing` capability words.
fn reports(present: &[&str], missing: &[&str]) -> NodeNetworkConfigStatus {
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect();
    NodeNetworkConfigStatus {
        capabilities: Some(NodeCapabilities {
            present: words(present),
            missing: words(missing),
            frr_version: None,
        }),
        ..Default::default()
    }
}

/// Waits for the newest revision, newer than `sequence`, to say `NodesCapable=False`; returns it.
async fn held_after(lab: &LabApi, sequence: i64) -> anyhow::Result<NetworkConfigRevision> {
    let held = eventually(Duration::from_secs(10), || async {
        let newest = lab.revisions().await?.pop();
        Ok(newest.is_some_and(|r| {
            r.spec.sequence > sequence
                && r.status.as_ref().is_some_and(|s| {
                    s.conditions
                        .iter()
                        .any(|c| c.type_ == NODES_CAPABLE_CONDITION && c.status == "False")
                })
        }))
    })
    .await;
    held.map_err(|e| anyhow::anyhow!("the new revision never said NodesCapable=False: {e}"))?;
    Ok(lab.revisions().await?.pop().unwrap())
}

/// Two nodes with healthy agents and a configurator (`--update-limit=2`), the first revision
/// provisioned on both, then n-1 reporting it lacks vrf; returns the agents, the configurator
/// and that first revision.
async fn two_nodes_one_lacking_vrf(
    lab: &LabApi,
) -> anyhow::Result<(Agents, Configurator, NetworkConfigRevision)> {
    nodes(lab, 2).await?;
    let agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(100)));
    let cfg = lab.configurator(&["--update-limit=2"]);
    let first = first_good(lab).await?;
    let first_name = first.metadata.name.clone().unwrap();
    all_provisioned(lab, &names(2), &first_name, Duration::from_secs(10)).await?;
    lab.set_config_status("n-1", reports(&["bridge", "vxlan"], &["vrf"]))
        .await;
    Ok((agents, cfg, first))
}

#[tokio::test]
async fn a_revision_needing_vrf_waits_for_the_node_that_lacks_it_and_rolls_out_once_it_reports_it()
-> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 3).await?;
    let agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(100)));
    let cfg = lab.configurator(&["--update-limit=3"]);
    // Nothing reported yet: the first revision (a routing table: a vrf device) rolls out.
    let first = first_good(&lab).await?;
    let first_name = first.metadata.name.clone().unwrap();
    all_provisioned(&lab, &names(3), &first_name, Duration::from_secs(10)).await?;
    lab.set_config_status("n-0", reports(&["bridge", "vrf", "vxlan"], &[]))
        .await;
    lab.set_config_status("n-1", reports(&["bridge", "vxlan"], &["dummy", "vrf"]))
        .await;
    let pickups = agents.pickups().len();

    // A second table needs vrf, which n-1 lacks: no node gets it.
    lab.set_table("extra", 200).await?;
    let newest = held_after(&lab, first.spec.sequence).await?;
    let name = newest.metadata.name.clone().unwrap();
    let c = condition(&newest, NODES_CAPABLE_CONDITION);
    assert_eq!(c.reason, NODES_LACK_CAPABILITIES);
    assert!(
        c.message.contains("is not dispatched to any node")
            && c.message
                .contains("node n-1 lacks vrf (kernel module; load it (modprobe vrf)")
            && !c.message.contains("dummy")
            && !c.message.contains("n-0"),
        "names the node and only what the revision needs: {}",
        c.message
    );
    let ev = lab
        .event(
            "NetworkConfigRevision",
            &name,
            NODES_LACK_CAPABILITIES,
            Duration::from_secs(5),
        )
        .await?;
    assert_event(&ev, true, &["n-1", "vrf"]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(agents.pickups().len(), pickups, "nothing dispatched");
    assert!(
        lab.configs()
            .await?
            .iter()
            .all(|c| c.spec.revision == first_name),
        "every node still runs {first_name}"
    );

    // n-1's agent loaded vrf: the rollout proceeds on its own.
    lab.set_config_status("n-1", reports(&["bridge", "vrf", "vxlan"], &["dummy"]))
        .await;
    let done = succeeded_after(&lab, first.spec.sequence).await?;
    assert_eq!(done.metadata.name.as_deref(), Some(name.as_str()));
    all_provisioned(&lab, &names(3), &name, Duration::from_secs(10)).await?;
    let c = eventually(Duration::from_secs(5), || async {
        let r = lab.revision_api().get(&name).await?;
        Ok(condition(&r, NODES_CAPABLE_CONDITION).status == "True")
    })
    .await;
    c.map_err(|e| anyhow::anyhow!("NodesCapable never turned True: {e}"))?;
    cfg.stop().await
}

#[tokio::test]
async fn a_held_revision_superseded_by_new_inputs_no_longer_promises_to_roll_out() -> R {
    let lab = LabApi::netrollout().await;
    let (_agents, cfg, first) = two_nodes_one_lacking_vrf(&lab).await?;
    let first_name = first.metadata.name.clone().unwrap();

    // Held: n-1 lacks vrf.
    lab.set_table("extra", 200).await?;
    let held = held_after(&lab, first.spec.sequence).await?;
    let held_name = held.metadata.name.clone().unwrap();
    let said = condition(&held, NODES_CAPABLE_CONDITION).message.clone();

    // New inputs: a newer revision (held too) supersedes it.
    lab.set_table("extra", 201).await?;
    let superseded = eventually(Duration::from_secs(10), || async {
        let r = lab.revision_api().get(&held_name).await?;
        Ok(r.status.as_ref().and_then(|s| s.phase) == Some(RevisionPhase::Superseded))
    })
    .await;
    superseded.map_err(|e| anyhow::anyhow!("{held_name} was never Superseded: {e}"))?;
    let superseded = lab.revision_api().get(&held_name).await?;
    let c = condition(&superseded, NODES_CAPABLE_CONDITION);
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("Unknown", NOT_ROLLING_OUT),
        "{c:?}"
    );
    assert!(
        c.message.contains("is Superseded and no longer rolls out")
            && c.message.ends_with(&format!("the last check said: {said}")),
        "{}",
        c.message
    );
    let newest = lab.revisions().await?.pop().unwrap();
    assert_ne!(newest.metadata.name.as_deref(), Some(held_name.as_str()));
    assert!(
        lab.configs()
            .await?
            .iter()
            .all(|c| c.spec.revision == first_name),
        "every node still runs {first_name}"
    );
    cfg.stop().await
}

#[tokio::test]
async fn inputs_back_to_a_superseded_held_revision_hold_it_again_from_the_pass_that_raised_it() -> R
{
    let lab = LabApi::netrollout().await;
    let (agents, cfg, first) = two_nodes_one_lacking_vrf(&lab).await?;
    let first_name = first.metadata.name.clone().unwrap();
    lab.set_table("extra", 200).await?;
    let held = held_after(&lab, first.spec.sequence).await?;
    let held_name = held.metadata.name.clone().unwrap();
    lab.set_table("extra", 201).await?;
    let newer = held_after(&lab, held.spec.sequence).await?;
    assert_ne!(newer.metadata.name.as_deref(), Some(held_name.as_str()));
    let pickups = agents.pickups().len();

    // The inputs return to the superseded revision's content: it is raised, the target, and
    // held like a new one (n-1 still lacks vrf): no node gets it, n-0 neither.
    lab.set_table("extra", 200).await?;
    let raised = eventually(Duration::from_secs(10), || async {
        let r = lab.revision_api().get(&held_name).await?;
        // Not `condition()`, which asserts the condition describes the current generation:
        // between the raise (a new generation) and the pass that rewrites the condition, a
        // read sees the old one, which is a reason to look again, not a failure.
        let held_now = r.status.as_ref().is_some_and(|s| {
            s.conditions.iter().any(|c| {
                c.type_ == NODES_CAPABLE_CONDITION
                    && c.status == "False"
                    && c.observed_generation == r.metadata.generation
            })
        });
        Ok(r.spec.sequence > newer.spec.sequence
            && r.status.as_ref().and_then(|s| s.phase) == Some(RevisionPhase::Progressing)
            && held_now)
    })
    .await;
    if let Err(e) = raised {
        let r = lab.revision_api().get(&held_name).await?;
        let runs: Vec<(String, String)> = lab
            .configs()
            .await?
            .into_iter()
            .map(|c| (c.metadata.name.unwrap_or_default(), c.spec.revision))
            .collect();
        anyhow::bail!(
            "{held_name} was never raised and held: {e}; it is {:?} with {:?}; nodes run {runs:?}",
            r.status.as_ref().and_then(|s| s.phase),
            r.status.as_ref().and_then(|s| s
                .conditions
                .iter()
                .find(|c| c.type_ == NODES_CAPABLE_CONDITION))
        );
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let raised = lab.revision_api().get(&held_name).await?;
    let c = condition(&raised, NODES_CAPABLE_CONDITION);
    assert_eq!(c.reason, NODES_LACK_CAPABILITIES, "{c:?}");
    assert!(
        c.message.contains("is not dispatched to any node") && c.message.contains("n-1 lacks vrf"),
        "{}",
        c.message
    );
    assert_eq!(agents.pickups().len(), pickups, "nothing dispatched");
    assert!(
        lab.configs()
            .await?
            .iter()
            .all(|c| c.spec.revision == first_name),
        "every node still runs {first_name}"
    );

    // n-1 loaded vrf: the raised revision rolls out on its own.
    lab.set_config_status("n-1", reports(&["bridge", "vrf", "vxlan"], &[]))
        .await;
    all_provisioned(&lab, &names(2), &held_name, Duration::from_secs(10)).await?;
    cfg.stop().await
}

/// A `BGPPeering` with `enableBFD` needs FRR's bfdd: a node whose agent reported bfdd missing
/// holds the revision back, naming bfdd and the fix; the same peering without BFD rolls out.
#[tokio::test]
async fn a_peering_with_bfd_waits_for_a_node_without_bfdd_and_one_without_bfd_does_not() -> R {
    use kube::api::{Api, Patch, PatchParams};
    use netrollout_api::{BGPPeering, BGPPeeringLoopback, BGPPeeringSpec};

    let lab = LabApi::netrollout().await;
    nodes(&lab, 2).await?;
    let _agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(100)));
    let cfg = lab.configurator(&["--update-limit=2"]);
    let first = first_good(&lab).await?;
    let first_name = first.metadata.name.clone().unwrap();
    all_provisioned(&lab, &names(2), &first_name, Duration::from_secs(10)).await?;
    lab.set_config_status("n-1", reports(&["bgpd"], &["bfdd"]))
        .await;
    let peering = |bfd: bool| {
        BGPPeering::new(
            "lb",
            BGPPeeringSpec {
                loopback_peer: Some(BGPPeeringLoopback {
                    ip_addresses: vec!["10.250.7.1".into()],
                }),
                remote_asn: 65100,
                enable_bfd: bfd,
                ..Default::default()
            },
        )
    };
    let api: Api<BGPPeering> = Api::all(lab.client.clone());
    let apply = PatchParams::apply("e2e-test").force();
    api.patch("lb", &apply, &Patch::Apply(&peering(true)))
        .await?;
    let held = held_after(&lab, first.spec.sequence).await?;
    let c = condition(&held, NODES_CAPABLE_CONDITION);
    assert!(
        c.message.contains(
            "node n-1 lacks bfdd (FRR daemon; enable bfdd in /etc/frr/daemons and restart FRR"
        ) && !c.message.contains("n-0"),
        "{}",
        c.message
    );

    api.patch("lb", &apply, &Patch::Apply(&peering(false)))
        .await?;
    let done = succeeded_after(&lab, held.spec.sequence).await?;
    all_provisioned(
        &lab,
        &names(2),
        done.metadata.name.as_deref().unwrap(),
        Duration::from_secs(10),
    )
    .await?;
    cfg.stop().await
}
