//! `peering` (`--vm`): BGP as a service and neighbour host routes in the routed tenant. The
//! border's routed workload runs its own FRR (zebra, bgpd, bfdd) in its namespace and announces
//! [`inputs::PEERING_PREFIX`]; a `BGPPeering` (with BFD) and `advertiseNeighbors: true` on the
//! border's routed network roll out as one revision. Checked: the node's session with the
//! workload is Established and its BFD session up, the other nodes' routed workloads reach the
//! announced prefix (the lab's traffic measure), the workload's address reaches the other
//! nodes as a /32 EVPN type-5 route; the workload's bfdd stopping takes the BFD session down
//! and the BGP session with it, and both return with it; then a wrong remote ASN fails the
//! border's `peering` probe, the border restores, and traffic to the prefix flows again.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use futures::future::BoxFuture;
use serde_json::Value;

use super::checks::{Summary, untainted};
use super::steps::{fail_and_restore, known_good_with_traffic, rollout};
use super::traffic_checks::traffic_report;
use super::{Scenario, Story};
use crate::cluster::Cluster;
use crate::inputs::{self, BORDER_INDEX, PEERING, PEERING_ADDR, ROUTED_VRF};
use crate::settings::{Settings, UpdateLimit};
use crate::traffic::{self, Kind, Network, Pair};

/// The `peering` story.
#[derive(Debug)]
pub struct Peering;

impl Scenario for Peering {
    fn name(&self) -> &'static str {
        "peering"
    }

    fn about(&self) -> &'static str {
        "(--vm: needs VRFs) the border's routed workload runs its own bgpd and bfdd and\n\
         announces a prefix; a BGPPeering (with BFD) and advertiseNeighbors on its network\n\
         roll out: the session is Established, BFD up, the other nodes' workloads reach\n\
         the prefix and get the workload's address as a /32 type-5 route; the workload's\n\
         bfdd stopping takes the session down; a wrong remote ASN then fails the border's\n\
         peering probe, the border restores and traffic to the prefix flows again"
    }

    fn needs_vrf(&self) -> bool {
        true
    }

    /// Limit 1: the border (first by name in the first zone) is the first wave alone, so the
    /// break halts there and the other nodes are never given it.
    fn settings(&self, base: Settings) -> Settings {
        Settings {
            update_limit: UpdateLimit::Count(1),
            ..base
        }
    }

    fn play<'a>(&'a self, story: &'a mut Story<'_>) -> BoxFuture<'a, Result<()>> {
        Box::pin(play(story))
    }
}

/// How long the sessions may take to come up or go down (TCG is slow).
const SESSION_WAIT: Duration = Duration::from_secs(60);

/// The workload's FRR: AS [`inputs::WORKLOAD_ASN`], one session to its gateway (the node's
/// side of the peering's listen range) with BFD and the peering's timers, announcing the
/// prefix on its loopback.
fn workload_config(net: &Network) -> String {
    let gateway = net.routed_via.map(|g| g.to_string()).unwrap_or_default();
    let me = net.addr(BORDER_INDEX);
    let (asn, node_asn, prefix) = (
        inputs::WORKLOAD_ASN,
        crate::frr::ASN,
        inputs::PEERING_PREFIX,
    );
    format!(
        "frr defaults datacenter\nhostname lab-peering-workload\nlog stdout informational\n!\n\
         router bgp {asn}\n bgp router-id {me}\n no bgp ebgp-requires-policy\n \
         neighbor {gateway} remote-as {node_asn}\n neighbor {gateway} timers 1 3\n \
         neighbor {gateway} timers connect 1\n neighbor {gateway} bfd\n !\n \
         address-family ipv4 unicast\n  network {prefix}\n exit-address-family\nexit\n!\n"
    )
}

async fn play(story: &mut Story<'_>) -> Result<()> {
    let (m, lab, summary, samples) = story.parts();
    if !lab.vrf {
        bail!(
            "peering needs the routed tenant's VRF: run it with --vm (this kernel has no vrf \
             module, or --without-vrfs was given)"
        );
    }
    known_good_with_traffic(summary, m, lab, samples).await?;
    untainted(summary, m, lab, "startup taints removed before the peering").await?;
    let border = inputs::border();
    let name = format!("lab-routed-{BORDER_INDEX}");
    let Some(net) = (lab.traffic.networks.iter())
        .find(|n| n.name == name)
        .cloned()
    else {
        bail!("the border's routed network {name} carries no workload");
    };
    let workload = net.netns(BORDER_INDEX);
    let me = net.addr(BORDER_INDEX).to_string();
    let config = workload_config(&net);
    lab.run(&argv(&[
        "ip",
        "-n",
        &workload,
        "addr",
        "add",
        &format!("{PEERING_ADDR}/24"),
        "dev",
        "lo",
    ]))
    .await?;
    lab.start_workload_frr(&workload, &config).await?;
    m.say(&format!(
        "{workload} ({me}) runs its own zebra, bgpd and bfdd (AS {}), announcing {}",
        inputs::WORKLOAD_ASN,
        inputs::PEERING_PREFIX
    ));
    let mut set = vec![inputs::peering(inputs::WORKLOAD_ASN)?];
    set.extend(inputs::neighbour_routes(lab.node_names().len())?);
    let good = rollout(
        m,
        lab,
        &set,
        "BGPPeering lab-peering and advertiseNeighbors on the border's routed network",
    )
    .await?;
    super::checks::all_provisioned(summary, m, lab, &good);
    let node_ns = crate::fabric::netns(&border);
    let up = sessions_up(lab, &node_ns, &me).await;
    summary.check(
        "the border's BGP session with the workload is Established and its BFD session up",
        up.is_ok(),
        detail(up, "show bgp vrf vr.labr summary, show bfd peers"),
    );
    neighbour_route(summary, lab, &border, &me).await;
    // The other nodes' routed workloads ping the announced prefix.
    for (node, index) in lab.node_indices() {
        let Some(from) = (lab.traffic.networks.iter())
            .find(|n| n.name == format!("lab-routed-{index}") && index != BORDER_INDEX)
            .cloned()
        else {
            continue;
        };
        let pair = Pair {
            kind: Kind::Routed,
            network: PEERING.into(),
            from: node,
            to: border.clone(),
        };
        lab.add_stream(pair, &from.netns(index), PEERING_ADDR)
            .await?;
    }
    let missing = lab.traffic.wait_reachable(lab.converge()).await;
    summary.check(
        "the other nodes' workloads reach the prefix the workload announces",
        missing.is_empty(),
        format!(
            "{PEERING_ADDR} in {}; without replies: {missing:?}",
            inputs::PEERING_PREFIX
        ),
    );
    let gateway = net.routed_via.map(|g| g.to_string()).unwrap_or_default();
    let speaker = Speaker {
        workload: &workload,
        config: &config,
        node_ns: &node_ns,
        me: &me,
        gateway: &gateway,
    };
    bfd_down(summary, m, lab, &speaker).await?;
    // A wrong remote ASN: the workload's session cannot come up again.
    m.say("the peering now expects AS 65999: the workload's session cannot come up");
    let wrong = [inputs::peering(65999)?];
    let (given, (t0, t1)) =
        fail_and_restore(summary, m, lab, &good, &wrong, "wrong-ASN peering revision").await?;
    let failures = m.failures();
    let probe = format!("peering {PEERING}");
    summary.check(
        "the border's peering probe caught it",
        failures
            .get(&border)
            .is_some_and(|f| f.iter().any(|msg| msg.contains(&probe))),
        format!("{failures:?}"),
    );
    let up = sessions_up(lab, &node_ns, &me).await;
    summary.check(
        "after the restore the session is Established and BFD up again",
        up.is_ok(),
        detail(up, "the restored peering"),
    );
    let first_wave: Vec<&str> = given.iter().map(String::as_str).collect();
    traffic_report(summary, m, lab, (t0, t1), &[PEERING], &first_wave).await;
    Ok(())
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

fn detail(result: Result<String>, what: &str) -> String {
    match result {
        Ok(seen) => format!("{what}: {seen}"),
        Err(e) => format!("{e:#}"),
    }
}

/// vtysh's JSON answer to `command` in `netns`.
async fn json(lab: &Cluster, netns: &str, command: &str) -> Result<Value> {
    let text = lab.vtysh(netns, command).await?;
    Ok(serde_json::from_str(&text)?)
}

/// The node's session with the workload at `peer` (FRR 8.4's summary) and BFD's, as text.
async fn session_state(lab: &Cluster, node_ns: &str, peer: &str) -> Result<(String, String)> {
    let vrf = format!("vr.{ROUTED_VRF}");
    let sum = json(lab, node_ns, &format!("show bgp vrf {vrf} summary json")).await?;
    let bgp = sum["ipv4Unicast"]["peers"][peer]["state"]
        .as_str()
        .unwrap_or("no session")
        .to_string();
    let bfd = json(lab, node_ns, "show bfd peers json").await?;
    let bfd = (bfd.as_array().into_iter().flatten())
        .find(|p| p["peer"] == peer)
        .and_then(|p| p["status"].as_str())
        .unwrap_or("no session")
        .to_string();
    Ok((bgp, bfd))
}

/// Waits until the node's BGP session with `peer` is Established and BFD's up.
async fn sessions_up(lab: &Cluster, node_ns: &str, peer: &str) -> Result<String> {
    let deadline = Instant::now() + SESSION_WAIT;
    loop {
        let seen = session_state(lab, node_ns, peer).await;
        if let Ok((bgp, bfd)) = &seen
            && bgp == "Established"
            && bfd == "up"
        {
            return Ok(format!("BGP {bgp}, BFD {bfd} with {peer}"));
        }
        if Instant::now() > deadline {
            let (bgp, bfd) = seen?;
            bail!("after {SESSION_WAIT:?}: BGP {bgp}, BFD {bfd} with {peer}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// `advertiseNeighbors`: the border's VRF table holds the workload's address as a neighbour
/// host route (protocol 178) and every other node has it as a /32 EVPN type-5 route.
async fn neighbour_route(summary: &mut Summary, lab: &Cluster, border: &str, addr: &str) {
    let vrf = format!("vr.{ROUTED_VRF}");
    let ns = crate::fabric::netns(border);
    let ip = argv(&[
        "ip", "-n", &ns, "route", "show", "vrf", &vrf, "proto", "178",
    ]);
    let kernel = lab.run(&ip).await.unwrap_or_else(|e| format!("{e:#}"));
    summary.check(
        "advertiseNeighbors: the border's VRF has the workload's address as a host route",
        kernel
            .lines()
            .any(|l| l.split_whitespace().next() == Some(addr)),
        format!("ip route show vrf {vrf} proto 178: {}", kernel.trim()),
    );
    let type5 = format!("[32]:[{addr}]");
    let mut missing = Vec::new();
    let deadline = Instant::now() + SESSION_WAIT;
    for node in lab.node_names().into_iter().filter(|n| n != border) {
        let ns = crate::fabric::netns(&node);
        loop {
            let text = (lab
                .vtysh(&ns, "show bgp l2vpn evpn route type prefix")
                .await)
                .unwrap_or_default();
            if text.contains(&type5) {
                break;
            }
            if Instant::now() > deadline {
                missing.push(node.clone());
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    summary.check(
        "advertiseNeighbors: the other nodes get the workload's address as a /32 type-5 route",
        missing.is_empty(),
        format!("{type5} in show bgp l2vpn evpn route type prefix; missing on {missing:?}"),
    );
}

/// The workload's bfdd dies (SIGKILL: a failure, not a shutdown that tells the peer): the
/// node's BFD session goes down and bgpd drops the BGP session with it (the workload's count of
/// dropped connections grows); bfdd started again, both return and traffic to the prefix flows.
async fn bfd_down(
    summary: &mut Summary,
    m: &super::Monitor,
    lab: &Cluster,
    speaker: &Speaker<'_>,
) -> Result<()> {
    let Speaker {
        workload,
        config,
        node_ns,
        me,
        gateway,
    } = *speaker;
    let neighbour = format!("show bgp neighbors {gateway} json");
    let dropped = |v: &Value| v[gateway]["connectionsDropped"].as_u64().unwrap_or(0);
    let before = dropped(&json(lab, workload, &neighbour).await?);
    let pid_file = crate::frr::run_dir(lab.frr_version(), workload).join("bfdd.pid");
    let pid = lab
        .run(&argv(&["cat", &pid_file.display().to_string()]))
        .await?;
    let t0 = traffic::now_ms();
    lab.run(&argv(&["kill", "-9", pid.trim()])).await?;
    m.say(&format!("killed the workload's bfdd ({})", pid.trim()));
    let deadline = Instant::now() + SESSION_WAIT;
    let (mut bfd, mut now_dropped) = (String::from("up"), before);
    while Instant::now() < deadline && (bfd == "up" || now_dropped == before) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if let Ok((_, b)) = session_state(lab, node_ns, me).await {
            bfd = b;
        }
        if let Ok(v) = json(lab, workload, &neighbour).await {
            now_dropped = dropped(&v);
        }
    }
    let took = traffic::now_ms().saturating_sub(t0);
    summary.check(
        "the workload's bfdd dying takes the border's BFD session down",
        bfd != "up",
        format!("BFD with {me}: {bfd} ({took} ms after the kill, or when both were seen)"),
    );
    summary.check(
        "bgpd follows BFD: the BGP session with the workload is dropped",
        now_dropped > before,
        format!("the workload's connectionsDropped {before} → {now_dropped}"),
    );
    lab.restart_workload_daemon(workload, config, "bfdd")
        .await?;
    m.say("started the workload's bfdd again");
    let up = sessions_up(lab, node_ns, me).await;
    summary.check(
        "bfdd back: BFD up and the session Established again",
        up.is_ok(),
        detail(up, "after bfdd's restart"),
    );
    let missing = lab.traffic.wait_reachable(lab.converge()).await;
    let t1 = traffic::now_ms();
    let loss = lab.traffic.loss(t0, t1, |p| p.network == PEERING);
    summary.check(
        "traffic to the announced prefix flows again",
        missing.is_empty(),
        format!("lost/sent to {PEERING_ADDR} from the kill until all answered: {loss}; without replies: {missing:?}"),
    );
    Ok(())
}

/// The workload's BGP speaker as the steps see it.
#[derive(Clone, Copy)]
struct Speaker<'a> {
    /// Its namespace (and FRR pathspace).
    workload: &'a str,
    /// Its FRR config.
    config: &'a str,
    /// The node's namespace.
    node_ns: &'a str,
    /// Its address, the node's peer.
    me: &'a str,
    /// The node's side (its gateway), the workload's peer.
    gateway: &'a str,
}
