//! The agent with real FRR and real VRFs: two nodes exchange EVPN type-5 routes for a tenant VRF,
//! every change made by the agent's own apply cycle (kernel, then FRR through the agent's own
//! diff of FRR's running config, `frr-reload.py` as its fallback; probes, commit or restore). Built
//! only with the `vm` feature; `hack/test.d/56-agent-frr-vm.sh` boots Debian's stock kernel
//! (`hack/vm/run.sh` with `VM_FRR=1 VM_PYTHON=1`: FRR 8.4, python3 and `frr-reload.py` in the
//! initramfs; with `VM_FRR=10.3` FRR 10.3's root file system instead, the daemons started by
//! chroot as on the host) and runs it there, as root, on the FRR version `NETROLLOUT_FRR_VERSION`
//! names.
//!
//! Each node is an agent lab ([`Lab`]: a namespace wired to the VM's root namespace, the
//! in-process lab API server, a Node) with zebra + bgpd + bfdd in the namespace (FRR pathspace named
//! like it) and the operator's base file (eBGP EVPN to the other node, routed through the root
//! namespace). The agent runs from this binary: [`main`] becomes the agent when
//! `NETROLLOUT_VM_AGENT` is set (a two-line wrapper script sets it), so the VM needs no second
//! binary.
//!
//! The checks: the VRF's VNI, route target, import and export filters, aggregate and community
//! show in FRR's running config; node 2 receives node 1's prefixes as EVPN type-5 routes carrying
//! the route target and the community, plus the aggregate, and installs them in its VRF and (over
//! the veth leak) its default VRF; the routing probe "every VRF with a VNI is known to FRR's EVPN"
//! passes; a new export filter on node 1 withdraws a prefix on node 2; an import filter on node 2
//! keeps a prefix out of its default VRF; a route target FRR rejects fails the attempt with FRR's
//! error, and kernel and FRR are back at the previous revision; the no-op re-apply writes nothing;
//! the type-5 routes carry the sender's router MAC; a second VRF added to the running nodes gets
//! its layer-3 VNI, router MAC and traffic right (the apply order, [`order`]);
//! `advertiseNeighbors` announces a workload's address on node 1 as a host route that node 2
//! reaches it by (`vm/neighbours.rs`); the agents' capability detection leaves bfdd running
//! (`vm/bfdd.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)] // a test may panic

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Parser;
use netrollout_agent::routing;
use netrollout_api::{LoopbackConfig, NodePhase, PrefixAction};
use netrollout_frr::daemons::{FRR_LIB, Version};
use netrollout_testkit::cmd::run;

#[path = "vm/bfdd.rs"]
mod bfdd;
#[path = "vm/config.rs"]
mod config;
#[path = "vm/echo.rs"]
mod echo;
#[path = "vm/neighbours.rs"]
mod neighbours;
#[path = "vm/node.rs"]
mod node;

use config::*;
use node::Node;

#[path = "vm/order.rs"]
mod order;
use order::new_vrf_on_running_nodes;

#[path = "common/lab_ext.rs"]
mod lab_ext;
use lab_ext::AgentLab as _;

/// Set in the agent's environment by the wrapper script: this process is the agent.
const AGENT_ROLE: &str = "NETROLLOUT_VM_AGENT";
/// The VM's host name; the base files use it too, as vtysh shows it (the namespaces share the
/// kernel's host name), so that frr-reload.py finds no `hostname` difference to apply.
const HOSTNAME: &str = "agent-vm";

fn main() {
    if let Ok(spec) = std::env::var(echo::ECHO_ROLE) {
        echo::run(&spec);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    if std::env::var_os(AGENT_ROLE).is_some() {
        let args = netrollout_agent::cli::Args::parse();
        if let Err(e) = rt.block_on(netrollout_agent::daemon::main(args)) {
            eprintln!("{e:#}");
            std::process::exit(1);
        }
        return;
    }
    let t0 = Instant::now();
    rt.block_on(agent_applies_vrf_routing_through_frr_between_two_nodes());
    eprintln!(
        "agent-frr-vm: passed in {} s",
        t0.elapsed().as_secs_f32().round()
    );
}

fn say(what: &str) {
    eprintln!("agent-frr-vm: ok: {what}");
}

/// `show running-config` without its `Building configuration...` preamble.
fn strip_header(text: &str) -> String {
    text.lines()
        .skip_while(|l| !l.starts_with("frr version"))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn agent_applies_vrf_routing_through_frr_between_two_nodes() {
    let version = Version::from_env();
    if let Err(e) = version.check_installed(Path::new(FRR_LIB), false) {
        panic!("{e}: run this test with VM_FRR=1 VM_PYTHON=1 (or VM_FRR=10.3) hack/vm/run.sh");
    }
    for bin in [version.reload_script(), version.vtysh()] {
        assert!(
            bin.exists(),
            "{} is missing: run this test with VM_FRR=1 VM_PYTHON=1 (or VM_FRR=10.3) hack/vm/run.sh",
            bin.display()
        );
    }
    if version.root().is_none() {
        assert!(
            Path::new("/usr/bin/python3").exists(),
            "python3 is missing: VM_PYTHON=1"
        );
    }
    say(&format!("FRR {version}"));
    let pid = std::process::id();
    let exe = std::env::current_exe().unwrap();
    let wrapper = PathBuf::from(format!("/tmp/nravm-agent-{pid}"));
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\n{AGENT_ROLE}=1 exec {} \"$@\"\n", exe.display()),
    )
    .unwrap();
    run("chmod", &["755", wrapper.to_str().unwrap()]);
    // The VM boots without a host name, and vtysh shows the kernel's, `(none)`, as `hostname
    // (none)` in the running config, which frr-reload.py's own parse of it then refuses.
    std::fs::write("/proc/sys/kernel/hostname", HOSTNAME).unwrap();
    // The VM's root namespace routes between the nodes' namespaces (the underlay).
    std::fs::write("/proc/sys/net/ipv4/ip_forward", "1").unwrap();

    let mut n1 = Node::new(&wrapper, 65001, "10.254.0.1").await;
    let mut n2 = Node::new(&wrapper, 65002, "10.254.0.2").await;
    for (a, b) in [(&n1, &n2), (&n2, &n1)] {
        a.lab.ip(&format!(
            "route add {}/32 via {}",
            b.lab.ns_ip, a.lab.host_ip
        ));
        a.write_base(b);
    }
    for n in [&mut n1, &mut n2] {
        n.start_frr();
        n.agent_args();
    }
    scenario(n1, n2).await;
}

/// Runs the steps; on a failure prints both nodes' FRR state and agent logs first. FRR stops
/// before the labs delete the namespaces.
async fn scenario(mut n1: Node, mut n2: Node) {
    use futures::FutureExt;
    let outcome = std::panic::AssertUnwindSafe(steps(&mut n1, &mut n2))
        .catch_unwind()
        .await;
    if outcome.is_err() {
        eprintln!("{}\n{}", n1.debug(), n2.debug());
    }
    for n in [&mut n1, &mut n2] {
        n.lab.kill_agent();
        n.daemons = None;
    }
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

async fn steps(n1: &mut Node, n2: &mut Node) {
    wait("the underlay session between the nodes", 120, || {
        (n1.established(n2) && n2.established(n1)).then_some(())
    });
    n1.lab.start_agent();
    n2.lab.start_agent();

    // 1. Both nodes export and import everything in 10.50.0.0/16.
    let c1 = config(&NODE1, permit_all(), permit_all(), ROUTE_TARGET);
    let c2 = config(&NODE2, permit_all(), permit_all(), ROUTE_TARGET);
    tokio::join!(
        n1.apply_ok("rev-1", c1.clone()),
        n2.apply_ok("rev-1", c2.clone())
    );
    say("rev-1 Provisioned on both nodes");
    bfdd::detection_leaves_bfdd_running(n1, n2).await;
    let running = n1.running();
    for line in [
        "vrf vr.t1",
        " vni 5000",
        "router bgp 65001 vrf vr.t1",
        "route-target import 65000:5000",
        "route-target export 65000:5000",
        "set community 65000:100",
        "aggregate-address 10.50.0.0/21",
        "ip prefix-list pl_t1_import_10 seq 1 permit 10.50.0.0/16 le 32",
        "ip prefix-list pl_t1_export_10 seq 1 permit 10.50.0.0/16 le 32",
    ] {
        assert!(running.contains(line), "{line:?} missing:\n{running}");
    }
    say("node 1's running config has the VNI, route target, filters, aggregate, community");
    // The base file's setting that keeps FRR 8.4 from requiring a connected next hop for the
    // multihop peer (`Node::write_base`): FRR took it, and the agent's apply kept it.
    assert!(
        running.contains(" bgp disable-ebgp-connected-route-check\n"),
        "the base file's connected-check setting is missing:\n{running}"
    );
    // The routing probe, asked of the same FRR through the agent's library: every VRF with a
    // VNI is known to FRR's EVPN.
    for (n, c) in [(&*n1, &c1), (&*n2, &c2)] {
        let frr = n.frr();
        let before = routing::state(&frr).await;
        let now = routing::state(&frr).await;
        let outcomes = routing::after(&before, &now, c);
        let evpn = outcomes
            .iter()
            .find(|o| o.name == "evpn vni 5000")
            .unwrap_or_else(|| panic!("no evpn probe in {outcomes:?}"));
        assert_eq!(evpn.error, None, "{}: {outcomes:?}", n.ps());
        assert_eq!(now.vrf_vnis.get("vr.t1"), Some(&VNI), "{now:?}");
    }
    say("the routing probe 'evpn vni 5000' passes on both nodes");

    let route = wait(
        "node 2 receives 10.50.1.0/24 as an EVPN type-5 route",
        180,
        || n2.type5("10.50.1.0/24"),
    );
    assert!(
        route.contains(&format!("RT:{ROUTE_TARGET}")) && route.contains(COMMUNITY),
        "the type-5 route lacks the route target or the community: {route}"
    );
    let rmac = n1.mac("br.t1");
    assert!(
        route.contains(&format!("Rmac:{rmac}")),
        "the type-5 route does not carry node 1's router MAC {rmac} (br.t1's): {route}"
    );
    say("the type-5 route carries RT:65000:5000, community 65000:100 and br.t1's router MAC");
    wait(
        "node 2 receives the aggregate 10.50.0.0/21",
        ROUTE_WAIT,
        || n2.type5(AGGREGATE),
    );
    wait("node 2's VRF table has 10.50.1.0/24", ROUTE_WAIT, || {
        n2.routes("vrf vr.t1")
            .contains("10.50.1.0/24")
            .then_some(())
    });
    wait(
        "node 2's default VRF has 10.50.1.0/24 (veth leak)",
        ROUTE_WAIT,
        || {
            n2.routes("table main")
                .contains("10.50.1.0/24")
                .then_some(())
        },
    );

    // 2. At once: node 1 exports only 10.50.3.0/24 and 10.50.4.0/24, and node 2's import filter
    //    denies 10.50.3.0/24 (the VRF keeps it, the default VRF does not).
    let export = vec![
        item("10.50.3.0/24", 1, None, PrefixAction::Permit),
        item("10.50.4.0/24", 2, None, PrefixAction::Permit),
    ];
    let c1 = config(&NODE1, permit_all(), export, ROUTE_TARGET);
    let import = vec![
        item("10.50.3.0/24", 1, None, PrefixAction::Deny),
        item("10.50.0.0/16", 2, Some(32), PrefixAction::Permit),
    ];
    let good = config(&NODE2, import, permit_all(), ROUTE_TARGET);
    tokio::join!(
        n1.apply_ok("rev-2", c1.clone()),
        n2.apply_ok("rev-2", good.clone())
    );
    let running = n1.running();
    assert!(
        running.contains("ip prefix-list pl_t1_export_10 seq 1 permit 10.50.3.0/24")
            && !running.contains("ip prefix-list pl_t1_export_10 seq 1 permit 10.50.0.0/16"),
        "{running}"
    );
    let running = n2.running();
    assert!(
        running.contains("ip prefix-list pl_t1_import_10 seq 1 deny 10.50.3.0/24"),
        "{running}"
    );
    wait(
        "node 2 loses 10.50.1.0/24 and the aggregate after node 1's export change",
        ROUTE_WAIT,
        || {
            (n2.type5("10.50.1.0/24").is_none()
                && n2.type5(AGGREGATE).is_none()
                && n2.type5("10.50.3.0/24").is_some())
            .then_some(())
        },
    );
    wait("node 2's VRF table follows", ROUTE_WAIT, || {
        let routes = n2.routes("vrf vr.t1");
        (!routes.contains("10.50.1.0/24")
            && routes.contains("10.50.3.0/24")
            && routes.contains("10.50.4.0/24"))
        .then_some(())
    });
    wait(
        "node 2's import filter keeps 10.50.3.0/24 out of its default VRF, 10.50.4.0/24 in",
        ROUTE_WAIT,
        || {
            let main = n2.routes("table main");
            (!main.contains("10.50.3.0/24") && main.contains("10.50.4.0/24")).then_some(())
        },
    );

    // 4. A broken change on node 2: a new loopback (kernel), a route target and a community
    //    bgpd rejects.
    let running_before = strip_header(&n2.running());
    let links_before = n2.lab.ip("-br link show");
    let mut bad = good.clone();
    // `65000:x7` is no route target; bgpd refuses it (and the malformed community) when the
    // reload sends it, after FRR's parser accepted the file.
    bad.vrfs[0].route_target = Some("65000:x7".into());
    // (A large community, `a:b:c`, is valid: the FRR renderer sets it with `set large-community`.)
    bad.vrfs[0].policies[0].communities = vec!["65000:x1".into()];
    bad.vrfs[0].loopbacks.push(LoopbackConfig {
        name: "lo.bad".into(),
        address: "10.50.9.1/24".into(),
    });
    let status = n2.apply("rev-3", bad).await;
    assert_eq!(status.phase, Some(NodePhase::Failed), "{status:?}");
    assert_eq!(status.reason.as_deref(), Some("FrrRejected"), "{status:?}");
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains("FRR rejected the routing config of rev-3")
            && message.contains("% Malformed Route Target list")
            && message.contains("% Malformed communities attribute '65000:x1'"),
        "FRR's own error line is missing: {message}"
    );
    assert_eq!(status.last_known_good_revision.as_deref(), Some("rev-2"));
    assert!(n2.lab.holds(&good).await, "the kernel is not back at rev-2");
    assert!(!n2.lab.ip("-br link show").contains("lo.bad"));
    assert_eq!(n2.lab.ip("-br link show"), links_before, "links differ");
    let running_after = strip_header(&n2.running());
    assert_eq!(running_after, running_before, "FRR is not back at rev-2");
    assert!(!running_after.contains("65000:x7") && !running_after.contains("65000:x1"));
    say(
        "a route target and community FRR rejects: Failed with FRR's error; kernel and FRR back at rev-2",
    );
    // Restored means traffic too: the failed attempt took vr.t1's imported routes out of FRR
    // and the restore put them back (FRR 8.4's zebra then kept them without their router MACs
    // in two runs: `src/frr/rmac.rs`).
    t1_traffic(n1, n2, "after rev-3's restore");
    // How often the agents found zebra without router MACs and repaired it (FRR 8.x; which
    // node and VNI it hits, if any, varies from run to run): shown, not asserted.
    eprintln!(
        "agent-frr-vm: router MAC repairs so far: node 1 {}, node 2 {}",
        n1.rmac_repairs(),
        n2.rmac_repairs()
    );

    // 5. Re-applying the restored config: the FRR text is unchanged, nothing is written.
    let writes = n2.frr_writes();
    let mtime = std::fs::metadata(&n2.conf).unwrap().modified().unwrap();
    n2.apply_ok("rev-4", good.clone()).await;
    assert_eq!(n2.frr_writes(), writes, "the no-op re-apply wrote FRR");
    assert_eq!(
        std::fs::metadata(&n2.conf).unwrap().modified().unwrap(),
        mtime,
        "frr.conf was rewritten"
    );
    assert_eq!(strip_header(&n2.running()), running_before);
    say("the no-op re-apply makes no FRR write");
    t1_traffic(n1, n2, "after rev-4");
    for (name, n) in [("node 1", &n1), ("node 2", &n2)] {
        assert_eq!(
            n.frr_vty_fallbacks(),
            0,
            "{name}: the agent read FRR with vtysh, not over the daemons' vty sockets"
        );
    }
    say("every read of FRR went over the daemons' vty sockets");

    new_vrf_on_running_nodes(n1, n2, c1, good).await;

    assert!(n1.established(n2), "the underlay session survived");
    // The other direction, checked last: in one run node 1's EVPN table still held node 2's
    // route as not valid (next hop unresolved) 60 s after rev-1, so this waits longer (that
    // run's base file lacked the connected-check setting `Node::write_base` explains).
    wait(
        "node 1's VRF table has node 2's 10.50.2.0/24",
        ROUTE_WAIT,
        || {
            n1.routes("vrf vr.t1")
                .contains("10.50.2.0/24")
                .then_some(())
        },
    );

    // 6. advertiseNeighbors: a workload on node 1 reached from node 2 over its host route.
    neighbours::steps(n1, n2).await;
}

/// Traffic in vr.t1 both ways between the prefixes each node's rev-2 policies let through
/// (node 2's 10.50.2.1 and node 1's 10.50.4.1): both nodes' routes and router MACs in use.
fn t1_traffic(n1: &Node, n2: &Node, when: &str) {
    for (name, from, src, dst) in [
        ("node 2", n2, "10.50.2.1", "10.50.4.1"),
        ("node 1", n1, "10.50.4.1", "10.50.2.1"),
    ] {
        wait(
            &format!("{when}: an echo in vr.t1 from {name}'s {src} to {dst} is answered"),
            ROUTE_WAIT,
            || echo::echo(from, "vr.t1", src, dst).then_some(()),
        );
    }
}
