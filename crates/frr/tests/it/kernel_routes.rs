//! The neighbour host routes of `advertiseNeighbors` reach BGP: zebra takes a kernel route of
//! protocol 178 (the agent's neighbour task's) as a kernel route, and `redistribute kernel`
//! (which every VRF instance the renderer writes has, through the VRF's export route map)
//! puts it into BGP; deleting the route withdraws it. Real FRR of the tests' version (8.4, or
//! 10.3 with `NETROLLOUT_FRR_VERSION=10.3`) in a namespace; the host kernel has no VRFs, so
//! the default instance stands in for the VRF's (the agent's VM suite does it in a VRF).

use std::path::Path;
use std::time::{Duration, Instant};

use netrollout_frr::daemons::{Start, require_installed};
use netrollout_testkit::netns::Netns;

/// Polls `vtysh -c CMD` until its output satisfies `ok` (at most 20 s).
fn until(daemons: &netrollout_frr::daemons::Daemons, cmd: &str, ok: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = daemons.try_vtysh(cmd).unwrap_or_default();
        if ok(&out) {
            return;
        }
        assert!(Instant::now() < deadline, "{cmd}:\n{out}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_host_route_of_protocol_178_is_redistributed_into_bgp_and_withdrawn_with_it() {
    require_installed();
    let netns = Netns::new("nrfkr");
    netns.ip("link add nrk0 type veth peer name nrk1");
    netns.ip("addr add 10.61.0.1/24 dev nrk0");
    netns.ip("-6 addr add fd61::1/64 dev nrk0 nodad");
    netns.ip("link set nrk0 up");
    netns.ip("link set nrk1 up");
    let ps = netns.name.clone();
    let etc = Path::new("/etc/frr").join(&ps);
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::write(etc.join("vtysh.conf"), "").unwrap();
    let conf = etc.join("frr.conf");
    std::fs::write(
        &conf,
        "router bgp 65001\n bgp router-id 10.61.0.1\n !\n address-family ipv4 unicast\n  \
         redistribute kernel\n exit-address-family\n !\n address-family ipv6 unicast\n  \
         redistribute kernel\n exit-address-family\nexit\n",
    )
    .unwrap();
    let _ = std::process::Command::new("chown")
        .args(["-R", "frr:frr"])
        .arg(&etc)
        .status();
    let daemons = Start {
        config: Some(&conf),
        timeout: Duration::from_secs(20),
        ..Start::from_env(&ps, &ps)
    }
    .start();
    netns.ip("route add 10.61.0.5/32 dev nrk0 proto 178 scope link");
    netns.ip("-6 route add fd61::5/128 dev nrk0 proto 178");
    until(&daemons, "show bgp ipv4 unicast 10.61.0.5/32", |o| {
        o.contains("10.61.0.5/32") && o.contains("best")
    });
    until(&daemons, "show bgp ipv6 unicast fd61::5/128", |o| {
        o.contains("fd61::5/128") && o.contains("best")
    });
    netns.ip("route del 10.61.0.5/32 dev nrk0 proto 178");
    netns.ip("-6 route del fd61::5/128 dev nrk0 proto 178");
    until(&daemons, "show bgp ipv4 unicast json", |o| {
        !o.contains("10.61.0.5/32") && o.contains("routerId")
    });
    until(&daemons, "show bgp ipv6 unicast json", |o| {
        !o.contains("fd61::5/128") && o.contains("routerId")
    });
    drop(daemons);
    let _ = std::fs::remove_dir_all(etc);
}
