//! Neighbour host routes (`advertiseNeighbors`) on the kernel: neighbours appear and disappear
//! on a bridge and their `/32` and `/128` routes (protocol 178) follow in a routing table,
//! driven by the kernel's neighbour notifications (the resync is an hour, so only a
//! notification can move them); EVPN's (`extern_learn`), failed and link-local neighbours are
//! left out; routes of netrollout's apply (protocol 177) and foreign ones are untouched; a
//! route removed by hand comes back; turning the target off withdraws them all. The host
//! kernel has no VRF module: a routing table stands for the VRF's (the VM suite has VRFs).

use std::time::{Duration, Instant};

use netrollout_dataplane::{HostRoutes, Neighbours};
use tokio::sync::watch;

use crate::common::TestNs;

const TABLE: u32 = 1077;

/// `ip [-6] route show table TABLE proto 178`, one destination per line, sorted.
fn host_routes(ns: &TestNs) -> Vec<String> {
    let mut out: Vec<String> = ["-4", "-6"]
        .iter()
        .flat_map(|f| {
            ns.ip(&format!("{f} route show table {TABLE} proto 178"))
                .lines()
                .map(|l| l.trim_end().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    out.sort();
    out
}

/// Waits (at most 5 s) until the host routes are `want` (`DST dev LINK scope link` lines).
async fn wait_for(ns: &TestNs, want: &[&str]) {
    let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let got = host_routes(ns);
        if got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "host routes in table {TABLE}:\n{got:#?}\nwanted:\n{want:#?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A bridge `l2.77` with a port that has carrier (the kernel keeps neighbours of links up).
fn bridge(ns: &TestNs) {
    ns.ip("link add l2.77 type bridge");
    ns.ip("link add nrt-p0 type veth peer name nrt-p1");
    ns.ip("link set nrt-p0 master l2.77");
    for dev in ["l2.77", "nrt-p0", "nrt-p1"] {
        ns.ip(&format!("link set {dev} up"));
    }
    ns.ip("addr add 10.77.0.1/24 dev l2.77");
    ns.ip("-6 addr add fd77::1/64 dev l2.77 nodad");
    // A route of netrollout's apply in the table (the kernel makes the table with the first
    // route; the task must leave this one alone).
    ns.ip(&format!(
        "-6 route add fd77:9::/64 dev l2.77 table {TABLE} proto 177"
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_routes_follow_the_bridges_neighbours_and_go_when_the_target_is_turned_off() {
    let ns = TestNs::new();
    bridge(&ns);
    // Routes the task must leave alone: netrollout's apply's and a foreign one.
    ns.ip(&format!(
        "route add 10.77.9.0/24 dev l2.77 table {TABLE} proto 177"
    ));
    ns.ip(&format!("route add 10.77.8.8/32 dev l2.77 table {TABLE}"));
    let lladdr = |i: u8| format!("lladdr 02:00:00:00:77:{i:02x}");
    ns.ip(&format!(
        "neigh add 10.77.0.5 {} dev l2.77 nud permanent",
        lladdr(5)
    ));
    ns.ip(&format!(
        "neigh add 10.77.0.6 {} dev l2.77 nud reachable",
        lladdr(6)
    ));
    ns.ip(&format!(
        "neigh add 10.77.0.7 {} dev l2.77 nud stale",
        lladdr(7)
    ));
    ns.ip(&format!(
        "-6 neigh add fd77::5 {} dev l2.77 nud permanent",
        lladdr(5)
    ));
    // Not announced: another node's (EVPN), a failed one, IPv6 link-local, another link's.
    ns.ip(&format!(
        "neigh add 10.77.0.20 {} dev l2.77 extern_learn",
        lladdr(20)
    ));
    ns.ip("neigh add 10.77.0.21 dev l2.77 nud failed");
    ns.ip(&format!(
        "-6 neigh add fe80::5 {} dev l2.77 nud permanent",
        lladdr(5)
    ));
    ns.ip(&format!(
        "neigh add 10.77.0.30 {} dev nrt-p1 nud permanent",
        lladdr(30)
    ));

    let neighbours = Neighbours::in_netns(&ns.name).expect("connect in namespace");
    let (targets, rx) = watch::channel(None);
    let keeping = tokio::spawn(async move {
        neighbours.keep(rx, Duration::from_secs(3600)).await;
    });
    // Nothing known yet: nothing written.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(host_routes(&ns).is_empty(), "{:?}", host_routes(&ns));

    targets.send_replace(Some(vec![HostRoutes {
        link: "l2.77".into(),
        table: TABLE,
    }]));
    let initial = [
        "10.77.0.5 dev l2.77 scope link",
        "10.77.0.6 dev l2.77 scope link",
        "10.77.0.7 dev l2.77 scope link",
        "fd77::5 dev l2.77 metric 1024 pref medium",
    ];
    wait_for(&ns, &initial).await;

    // A neighbour appears, another goes: only a notification can tell (resync: an hour).
    ns.ip(&format!(
        "neigh add 10.77.0.8 {} dev l2.77 nud reachable",
        lladdr(8)
    ));
    ns.ip("neigh del 10.77.0.6 dev l2.77");
    ns.ip(&format!(
        "-6 neigh add fd77::8 {} dev l2.77 nud stale",
        lladdr(8)
    ));
    let moved = [
        "10.77.0.5 dev l2.77 scope link",
        "10.77.0.7 dev l2.77 scope link",
        "10.77.0.8 dev l2.77 scope link",
        "fd77::5 dev l2.77 metric 1024 pref medium",
        "fd77::8 dev l2.77 metric 1024 pref medium",
    ];
    wait_for(&ns, &moved).await;
    // A neighbour that fails is withdrawn; EVPN's becoming local is announced.
    ns.ip("neigh change 10.77.0.7 dev l2.77 nud failed");
    ns.ip(&format!(
        "neigh replace 10.77.0.20 {} dev l2.77 nud reachable",
        lladdr(20)
    ));
    let failed = [
        "10.77.0.20 dev l2.77 scope link",
        "10.77.0.5 dev l2.77 scope link",
        "10.77.0.8 dev l2.77 scope link",
        "fd77::5 dev l2.77 metric 1024 pref medium",
        "fd77::8 dev l2.77 metric 1024 pref medium",
    ];
    wait_for(&ns, &failed).await;

    // Turned off: every route of the protocol goes; the others stay.
    targets.send_replace(Some(vec![]));
    wait_for(&ns, &[]).await;
    let table = ns.ip(&format!("route show table {TABLE}"));
    assert!(
        table.contains("10.77.9.0/24 dev l2.77 proto 177"),
        "{table}"
    );
    assert!(table.contains("10.77.8.8 dev l2.77"), "{table}");
    let table = ns.ip(&format!("-6 route show table {TABLE}"));
    assert!(table.contains("fd77:9::/64 dev l2.77 proto 177"), "{table}");
    // Off, it listens to no neighbour: a new one stays unannounced.
    ns.ip(&format!(
        "neigh add 10.77.0.9 {} dev l2.77 nud permanent",
        lladdr(9)
    ));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(host_routes(&ns).is_empty(), "{:?}", host_routes(&ns));

    drop(targets);
    tokio::time::timeout(Duration::from_secs(5), keeping)
        .await
        .expect("keep ends when the targets' sender is gone")
        .unwrap();
}

#[tokio::test]
async fn a_sync_in_place_writes_nothing_and_repairs_a_route_removed_by_hand_or_a_stray_one() {
    let ns = TestNs::new();
    bridge(&ns);
    ns.ip("neigh add 10.77.0.5 lladdr 02:00:00:00:77:05 dev l2.77 nud permanent");
    let neighbours = Neighbours::in_netns(&ns.name).expect("connect in namespace");
    let targets = [HostRoutes {
        link: "l2.77".into(),
        table: TABLE,
    }];
    let s = neighbours.sync(&targets).await.unwrap();
    assert_eq!((s.added, s.deleted, s.routes), (1, 0, 1), "{s:?}");
    let s = neighbours.sync(&targets).await.unwrap();
    assert_eq!((s.added, s.deleted, s.routes), (0, 0, 1), "in place: {s:?}");

    ns.ip(&format!("route del 10.77.0.5/32 table {TABLE} proto 178"));
    // A stray route of the protocol (another table, by hand) is the task's to remove.
    ns.ip("route add 10.77.3.0/24 dev l2.77 table 1078 proto 178");
    let s = neighbours.sync(&targets).await.unwrap();
    assert_eq!((s.added, s.deleted), (1, 1), "{s:?}");
    assert_eq!(host_routes(&ns), ["10.77.0.5 dev l2.77 scope link"]);
    assert!(ns.ip("route show table 1078").is_empty());

    // A target whose bridge does not exist (yet) is named, and nothing fails.
    let missing = [HostRoutes {
        link: "l2.78".into(),
        table: TABLE,
    }];
    let s = neighbours.sync(&missing).await.unwrap();
    assert_eq!(s.missing, ["l2.78"], "{s:?}");
    assert_eq!(s.deleted, 1, "{s:?}");
    assert!(s.failed.is_empty(), "{s:?}");
}
