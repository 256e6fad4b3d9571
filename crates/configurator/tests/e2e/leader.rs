use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, Patch, PatchParams};
use netrollout_api::{DEFAULT_NAMESPACE, RevisionPhase};
use tokio::process::{Child, Command};

use crate::agents::{Agents, healthy};
use crate::lab::{ConfiguratorLab as _, LabApi, R, eventually};
use crate::{all_provisioned, names, nodes};

fn spawn(lab: &LabApi, identity: &str) -> R<Child> {
    let child = Command::new(env!("CARGO_BIN_EXE_netrollout-configurator"))
        .arg("--kubeconfig")
        .arg(lab.kubeconfig())
        .args([
            "--identity",
            identity,
            "--update-limit=2",
            "--apply-timeout=5s",
            "--pickup-timeout=5s",
            "--api-timeout=2s",
            "--lease-duration=2s",
            "--metrics-addr=127.0.0.1:0",
            "--health-addr=127.0.0.1:0",
            "--resync=200ms",
            "--debounce=10ms",
        ])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    Ok(child)
}

async fn holder(lab: &LabApi) -> R<Option<String>> {
    let api = Api::<Lease>::namespaced(lab.client.clone(), DEFAULT_NAMESPACE);
    Ok(api
        .get_opt("netrollout-configurator")
        .await?
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity))
}

#[tokio::test]
async fn two_configurators_hand_over_when_the_leader_is_killed_without_double_dispatch() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 10).await?;
    let agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(400)));
    let mut procs: HashMap<String, Child> = HashMap::new();
    for id in ["cfg-a", "cfg-b"] {
        procs.insert(id.to_string(), spawn(&lab, id)?);
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let leader = loop {
        if let Some(h) = holder(&lab).await?.filter(|h| procs.contains_key(h)) {
            break h;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "no configurator took the lease"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    lab.set_table("extra", 100).await?;
    // Kill the leader mid-rollout, after the first waves went out.
    eventually(Duration::from_secs(20), || async {
        Ok(agents.pickups().len() >= 3)
    })
    .await?;
    let mut killed = procs.remove(&leader).unwrap();
    killed.kill().await?;

    let rev = lab
        .newest_in(RevisionPhase::Succeeded, Duration::from_secs(40))
        .await?;
    let name = rev.metadata.name.clone().unwrap();
    all_provisioned(&lab, &names(10), &name, Duration::from_secs(5)).await?;
    let survivor = holder(&lab).await?;
    assert!(
        survivor.is_some() && survivor.as_deref() != Some(leader.as_str()),
        "the other replica took over: {survivor:?}"
    );
    assert!(
        agents.max_in_flight() <= 2,
        "limit breached across the handover: {}",
        agents.max_in_flight()
    );
    let mut per_node: HashMap<String, usize> = HashMap::new();
    for (node, _) in agents.pickups().into_iter().filter(|(_, r)| *r == name) {
        *per_node.entry(node).or_default() += 1;
    }
    assert!(
        per_node.values().all(|n| *n == 1),
        "a node got the revision twice: {per_node:?}"
    );
    assert_eq!(per_node.len(), 10);
    for (_, mut p) in procs {
        p.kill().await?;
    }
    Ok(())
}

#[tokio::test]
async fn a_replica_that_loses_the_lease_stops_writing_until_it_leads_again() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 2).await?;
    let _agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(20)));
    let cfg = lab.configurator(&["--update-limit=2"]);
    eventually(Duration::from_secs(10), || async {
        Ok(cfg.metrics.leader.get() == 1)
    })
    .await?;

    // Someone else takes the lease (as a replica would after this one missed its renewals).
    let leases = Api::<Lease>::namespaced(lab.client.clone(), DEFAULT_NAMESPACE);
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string();
    let steal = serde_json::json!({ "spec": {
        "holderIdentity": "intruder", "renewTime": now, "acquireTime": now, "leaseDurationSeconds": 60,
    }});
    leases
        .patch(
            "netrollout-configurator",
            &PatchParams::default(),
            &Patch::Merge(&steal),
        )
        .await?;
    eventually(Duration::from_secs(10), || async {
        Ok(cfg.metrics.leader.get() == 0)
    })
    .await?;
    let writes = cfg.metrics.api_writes.get();
    lab.set_table("extra", 100).await?;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(
        lab.revisions().await?.is_empty(),
        "a replica without the lease wrote a revision"
    );
    assert_eq!(
        cfg.metrics.api_writes.get(),
        writes,
        "no write request of any kind"
    );

    // The intruder goes away: the replica takes the lease again and resumes from the API.
    let release = serde_json::json!({ "spec": { "holderIdentity": null } });
    leases
        .patch(
            "netrollout-configurator",
            &PatchParams::default(),
            &Patch::Merge(&release),
        )
        .await?;
    let rev = lab
        .newest_in(RevisionPhase::Succeeded, Duration::from_secs(20))
        .await?;
    all_provisioned(
        &lab,
        &names(2),
        rev.metadata.name.as_deref().unwrap(),
        Duration::from_secs(5),
    )
    .await?;
    cfg.stop().await
}
