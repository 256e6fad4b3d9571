use std::time::Duration;

use netrollout_api::{ACCEPTED_CONDITION, RoutingTable};

use crate::agents::{self, Agents, healthy};
use crate::lab::{ConfiguratorLab as _, LabApi, R, eventually};
use crate::{all_provisioned, first_good, names, nodes, succeeded_after};

/// `--rollout-strategy window`: a slot freed by a quick node is filled at once, while a slow
/// node still applies; the limit holds throughout.
#[tokio::test]
async fn with_the_window_strategy_a_freed_slot_is_filled_while_a_slow_node_still_applies() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 6).await?;
    // Long enough for the five quick nodes to pass through one slot on a loaded CI machine.
    let slow = Duration::from_secs(3);
    let script: agents::Script = std::sync::Arc::new(move |node, _| {
        let took = if node == "n-0" {
            slow
        } else {
            Duration::from_millis(100)
        };
        (took, agents::Outcome::Succeed)
    });
    let agents = Agents::start(lab.client.clone(), script);
    let _cfg = lab.configurator(&[
        "--update-limit=2",
        "--rollout-strategy=window",
        "--apply-timeout=20s",
    ]);
    let rev = first_good(&lab).await?;
    let rev_name = rev.metadata.name.clone().unwrap();
    all_provisioned(&lab, &names(6), &rev_name, Duration::from_secs(5)).await?;
    assert_eq!(agents.max_in_flight(), 2, "the limit is used and holds");
    let pickups = agents.pickups();
    assert!(
        pickups[..2].iter().any(|(n, _)| n == "n-0"),
        "n-0 is among the first two: {pickups:?}"
    );
    // Lock-step waves would have held n-2..n-5 until n-0 finished.
    let configs = lab.configs().await?;
    let finished = |node: &str| {
        configs
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(node))
            .and_then(|c| c.status.as_ref())
            .and_then(|s| s.finished_at.clone())
            .map(|t| t.0)
            .unwrap_or_else(|| panic!("{node} has no finishedAt"))
    };
    let slow_done = finished("n-0");
    for n in names(6).iter().skip(1) {
        assert!(
            finished(n) < slow_done,
            "{n} finished after the slow n-0: its slot was not refilled while n-0 applied"
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_rollout_moves_in_waves_that_respect_the_update_limit() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 6).await?;
    let agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(150)));
    let cfg = lab.configurator(&["--update-limit=2", "--rollout-strategy=waves"]);
    let first = first_good(&lab).await?;
    let first_name = first.metadata.name.clone().unwrap();
    all_provisioned(&lab, &names(6), &first_name, Duration::from_secs(5)).await?;
    assert_eq!(first.spec.sequence, 1);
    // Progress is written in the same pass as the phase, right after it.
    eventually(Duration::from_secs(5), || async {
        let revs = lab.revisions().await?;
        Ok(revs[0].status.as_ref().and_then(|s| s.progress.as_deref()) == Some("6/6"))
    })
    .await?;

    // The input says which revision holds it.
    let input = kube::Api::<RoutingTable>::all(lab.client.clone())
        .get("extra")
        .await?;
    let status = input.status.unwrap();
    assert_eq!(status.revision.as_deref(), Some(first_name.as_str()));
    let accepted = status
        .conditions
        .into_iter()
        .find(|c| c.type_ == ACCEPTED_CONDITION)
        .unwrap();
    assert_eq!(accepted.status, "True");
    assert!(
        accepted.message.contains(&first_name),
        "{}",
        accepted.message
    );

    // A second change is a second revision with the next sequence.
    lab.set_table("extra", 101).await?;
    let second = succeeded_after(&lab, 1).await?;
    assert_eq!(second.spec.sequence, 2);
    let second_name = second.metadata.name.clone().unwrap();
    all_provisioned(&lab, &names(6), &second_name, Duration::from_secs(5)).await?;

    assert!(
        agents.max_in_flight() <= 2,
        "limit breached: {} in flight",
        agents.max_in_flight()
    );
    assert_eq!(
        agents.max_in_flight(),
        2,
        "waves should use the whole limit"
    );
    assert_eq!(
        agents.pickups().len(),
        12,
        "each node applied each revision once: {:?}",
        agents.pickups()
    );
    // Every decision is an Event (cluster-scoped objects' Events go to "default").
    let events =
        kube::Api::<k8s_openapi::api::events::v1::Event>::namespaced(lab.client.clone(), "default");
    let reasons: Vec<String> = events
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    for reason in ["Created", "Joined", "Dispatched", "Succeeded"] {
        assert!(
            reasons.iter().any(|r| r == reason),
            "no {reason} Event in {reasons:?}"
        );
    }
    cfg.stop().await
}

#[tokio::test]
async fn undoing_a_change_reuses_the_older_revision_with_a_raised_sequence() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 2).await?;
    let _agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(50)));
    let cfg = lab.configurator(&["--update-limit=100%"]);
    let a = first_good(&lab).await?;
    lab.set_table("extra", 101).await?;
    eventually(Duration::from_secs(20), || async {
        Ok(lab.revisions().await?.len() == 2)
    })
    .await?;
    let b = succeeded_after(&lab, 1).await?;
    lab.set_table("extra", 100).await?;
    let again = succeeded_after(&lab, b.spec.sequence).await?;
    assert_eq!(
        again.metadata.name, a.metadata.name,
        "the same content never gets two names"
    );
    assert_eq!(again.metadata.uid, a.metadata.uid, "the object is reused");
    assert!(
        again.spec.sequence > b.spec.sequence,
        "{} !> {}",
        again.spec.sequence,
        b.spec.sequence
    );
    assert_eq!(lab.revisions().await?.len(), 2);
    all_provisioned(
        &lab,
        &names(2),
        a.metadata.name.as_deref().unwrap(),
        Duration::from_secs(10),
    )
    .await?;
    cfg.stop().await
}

#[tokio::test]
async fn an_invalid_input_is_rejected_and_no_revision_is_created() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 2).await?;
    let cfg = lab.configurator(&[]);
    // Two tables claiming the same id.
    lab.set_table("one", 300).await?;
    lab.set_table("two", 300).await?;
    let api = kube::Api::<RoutingTable>::all(lab.client.clone());
    eventually(Duration::from_secs(10), || async {
        let two = api.get("two").await?;
        Ok(two.status.is_some_and(|s| {
            s.conditions.iter().any(|c| {
                c.type_ == ACCEPTED_CONDITION && c.status == "False" && c.message.contains("300")
            })
        }))
    })
    .await?;
    // A Warning Event on the input, naming it.
    let event = lab
        .event("RoutingTable", "two", "Invalid", Duration::from_secs(10))
        .await?;
    crate::assert_event(&event, true, &["RoutingTable two", "300"]);
    // Give a wrong configurator time to create something, then check that it did not.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        lab.revisions().await?.is_empty(),
        "no revision from invalid inputs"
    );
    assert!(lab.configs().await?.is_empty(), "nothing rolled out");
    cfg.stop().await
}

/// `GET path` on the configurator's listener at `port`: (status, body).
async fn http_get(port: u16, path: &str) -> (u16, String) {
    netrollout_testkit::http::get(("127.0.0.1", port), path).await
}

fn free_port() -> R<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

#[tokio::test]
async fn health_readiness_and_metrics_are_served_once_the_caches_are_synced() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 2).await?;
    let _agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(20)));
    let (m, h) = (free_port()?, free_port()?);
    let cfg = lab.configurator(&[
        &format!("--metrics-addr=127.0.0.1:{m}"),
        &format!("--health-addr=127.0.0.1:{h}"),
        "--update-limit=2",
    ]);
    first_good(&lab).await?;
    assert_eq!(http_get(h, "/healthz").await.0, 200);
    assert_eq!(http_get(h, "/readyz").await.0, 200);
    let (status, metrics) = http_get(m, "/metrics").await;
    assert_eq!(status, 200, "{metrics}");
    for line in [
        "netrollout_configurator_leader 1",
        "netrollout_configurator_dispatches_total{name=\"join\"} 2",
        "netrollout_configurator_nodes{name=\"managed\"} 2",
    ] {
        assert!(metrics.contains(line), "{line} missing in:\n{metrics}");
    }
    assert!(
        metrics.contains("netrollout_configurator_rollout_duration_seconds_count 1"),
        "{metrics}"
    );
    cfg.stop().await
}
