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

/// Waits (at most 5 s) until the host routes are `want` ([`v4`] and [`v6`] lines, sorted).
async fn wait_for(ns: &TestNs, want: &[String]) {
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

/// The host route of `10.77.0.HOST` on `l2.77`, as `ip route show` prints it.
fn v4(host: u8) -> String {
    format!("10.77.0.{host} dev l2.77 scope link")
}

/// The host route of `fd77::HOST` on `l2.77`, as `ip -6 route show` prints it.
fn v6(host: u8) -> String {
    format!("fd77::{host} dev l2.77 metric 1024 pref medium")
}

/// `ip [-6] neigh VERB ADDR lladdr 02:00:00:00:77:MAC REST` (`-6` for an IPv6 address).
fn neigh(ns: &TestNs, verb: &str, addr: &str, mac: u8, rest: &str) {
    let family = if addr.contains(':') { "-6 " } else { "" };
    ns.ip(&format!(
        "{family}neigh {verb} {addr} lladdr 02:00:00:00:77:{mac:02x} {rest}"
    ));
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
    for (addr, mac, rest) in [
        ("10.77.0.5", 5, "dev l2.77 nud permanent"),
        ("10.77.0.6", 6, "dev l2.77 nud reachable"),
        ("10.77.0.7", 7, "dev l2.77 nud stale"),
        ("fd77::5", 5, "dev l2.77 nud permanent"),
        // Not announced: another node's (EVPN), IPv6 link-local, another link's (and the
        // failed one below).
        ("10.77.0.20", 20, "dev l2.77 extern_learn"),
        ("fe80::5", 5, "dev l2.77 nud permanent"),
        ("10.77.0.30", 30, "dev nrt-p1 nud permanent"),
    ] {
        neigh(&ns, "add", addr, mac, rest);
    }
    ns.ip("neigh add 10.77.0.21 dev l2.77 nud failed");

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
    wait_for(&ns, &[v4(5), v4(6), v4(7), v6(5)]).await;

    // A neighbour appears, another goes: only a notification can tell (resync: an hour).
    neigh(&ns, "add", "10.77.0.8", 8, "dev l2.77 nud reachable");
    ns.ip("neigh del 10.77.0.6 dev l2.77");
    neigh(&ns, "add", "fd77::8", 8, "dev l2.77 nud stale");
    wait_for(&ns, &[v4(5), v4(7), v4(8), v6(5), v6(8)]).await;
    // A neighbour that fails is withdrawn; EVPN's becoming local is announced.
    ns.ip("neigh change 10.77.0.7 dev l2.77 nud failed");
    neigh(&ns, "replace", "10.77.0.20", 20, "dev l2.77 nud reachable");
    wait_for(&ns, &[v4(20), v4(5), v4(8), v6(5), v6(8)]).await;

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
    neigh(&ns, "add", "10.77.0.9", 9, "dev l2.77 nud permanent");
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
    neigh(&ns, "add", "10.77.0.5", 5, "dev l2.77 nud permanent");
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
    assert_eq!(host_routes(&ns), [v4(5)]);
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
