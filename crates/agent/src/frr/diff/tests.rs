//! The diff's tests: FRR 8.4's spelling of the running config against rendered texts.

use super::*;

const BASE: &str = "frr defaults datacenter\nhostname n1\n!\nrouter bgp 65000\n \
    bgp router-id 192.0.2.1\nexit\n!\n";

fn managed(community: &str, cidr: &str) -> String {
    format!(
        "{BASE}vrf vr.a\n vni 100\nexit-vrf\n!\n\
         ip prefix-list pl_a_export_10 seq 1 permit {cidr} le 28\n\
         route-map rm_a_export permit 10\n match ip address prefix-list pl_a_export_10\n \
         set community {community}\nexit\n!\nroute-map rm_a_export deny 65535\nexit\n!\n\
         router bgp 65000 vrf vr.a\n bgp router-id 192.0.2.101\n no bgp default ipv4-unicast\n \
         neighbor vv.a interface remote-as internal\n !\n address-family ipv4 unicast\n  \
         neighbor vv.a activate\n  neighbor vv.a route-map rm_a_export in\n \
         exit-address-family\nexit\n!\nrouter bgp 65000\n \
         neighbor vd.a interface remote-as internal\n !\n address-family ipv4 unicast\n  \
         neighbor vd.a activate\n  neighbor vd.a allowas-in origin\n exit-address-family\n\
         exit\n!\n"
    )
}

/// What FRR 8.4 shows for `managed(..)` on a node that forwards: its version, vtysh's
/// hostname, one merged default instance without its hidden `activate`.
fn running(community: &str, cidr: &str) -> String {
    format!(
        "frr version 8.4.4\nfrr defaults datacenter\nhostname n1\n\
         hostname vm\nusername root nopassword\n!\nvrf vr.a\n vni 100\nexit-vrf\n!\n\
         router bgp 65000\n bgp router-id 192.0.2.1\n \
         neighbor vd.a interface remote-as internal\n !\n address-family ipv4 unicast\n  \
         neighbor vd.a allowas-in origin\n exit-address-family\nexit\n!\n\
         router bgp 65000 vrf vr.a\n bgp router-id 192.0.2.101\n no bgp default ipv4-unicast\n \
         neighbor vv.a interface remote-as internal\n !\n address-family ipv4 unicast\n  \
         neighbor vv.a activate\n  neighbor vv.a route-map rm_a_export in\n \
         exit-address-family\nexit\n!\n\
         ip prefix-list pl_a_export_10 seq 1 permit {cidr} le 28\n!\n\
         route-map rm_a_export permit 10\n match ip address prefix-list pl_a_export_10\n \
         set community {community}\nexit\n!\nroute-map rm_a_export deny 65535\nexit\n!\nend\n"
    )
}

fn diff(new: &str, running: &str) -> Vec<String> {
    script(&Conf::parse(new), &Conf::parse(running))
}

#[test]
fn forwarding_that_the_kernel_has_off_is_turned_on_as_frr_reload_does() {
    let new = managed("65000:1", "10.0.0.0/24");
    let running = running("65000:1", "10.0.0.0/24").replace(
        "hostname n1\n",
        "hostname n1\nno ip forwarding\nno ipv6 forwarding\n",
    );
    assert_eq!(diff(&new, &running), ["ipv6 forwarding", "ip forwarding"]);
}

#[test]
fn frr_running_what_was_rendered_needs_no_script() {
    let new = managed("65000:1", "10.0.0.0/24");
    assert_eq!(
        diff(&new, &running("65000:1", "10.0.0.0/24")),
        Vec::<String>::new()
    );
}

#[test]
fn a_changed_line_is_deleted_inside_its_context_then_added() {
    let new = managed("65000:2", "10.0.1.0/24");
    let script = diff(&new, &running("65000:1", "10.0.0.0/24"));
    assert_eq!(
        script,
        [
            "route-map rm_a_export permit 10",
            " no set community 65000:1",
            "exit",
            "no ip prefix-list pl_a_export_10 seq 1 permit 10.0.0.0/24 le 28",
            "ip prefix-list pl_a_export_10 seq 1 permit 10.0.1.0/24 le 28",
            "route-map rm_a_export permit 10",
            " set community 65000:2",
            "exit",
        ]
    );
}

#[test]
fn an_ipv4_activate_is_sent_when_the_instance_has_no_default_ipv4_unicast() {
    let new = "router bgp 65000\n no bgp default ipv4-unicast\n neighbor vd.a interface remote-as internal\n \
        address-family ipv4 unicast\n  neighbor vd.a activate\n exit-address-family\nexit\n";
    let running = "router bgp 65000\n no bgp default ipv4-unicast\n neighbor vd.a interface remote-as internal\n\
        exit\n";
    assert_eq!(
        diff(new, running),
        [
            "router bgp 65000",
            " address-family ipv4 unicast",
            "  neighbor vd.a activate",
            " exit-address-family",
            "exit",
        ]
    );
}

#[test]
fn an_empty_vrf_block_frr_10_shows_for_a_kernel_vrf_is_not_deleted_and_one_with_a_vni_is() {
    let new = "router bgp 65000\n bgp router-id 192.0.2.1\nexit\n";
    // FRR 10.3 shows the routing table's VRF device, which the text has no config for.
    let running = format!("frr version 10.3\n{new}!\nvrf tb.100\nexit-vrf\n!\n");
    assert!(diff(new, &running).is_empty(), "{:?}", diff(new, &running));
    let running = format!("{running}vrf vr.old\n vni 7\nexit-vrf\n!\n");
    assert_eq!(diff(new, &running), ["no vrf vr.old"]);
}

#[test]
fn a_removed_vrf_goes_line_by_line_from_kept_contexts_deepest_first_and_whole_contexts_last_written_first()
 {
    let new = "router bgp 65000\n bgp router-id 192.0.2.1\nexit\n";
    let running = "vrf vr.a\n vni 100\nexit-vrf\n!\nip prefix-list pl_a seq 1 permit 10.0.0.0/8\n\
        route-map rm_a permit 10\n set community 65000:1\nexit\n!\n\
        router bgp 65000\n bgp router-id 192.0.2.1\n neighbor vd.a interface remote-as internal\n !\n \
        address-family l2vpn evpn\n  advertise-all-vni\n exit-address-family\nexit\n!\n\
        router bgp 65000 vrf vr.a\n bgp router-id 192.0.2.101\nexit\n";
    assert_eq!(
        diff(new, running),
        [
            "router bgp 65000",
            " address-family l2vpn evpn",
            "  no advertise-all-vni",
            " exit-address-family",
            "exit",
            "router bgp 65000",
            " no neighbor vd.a interface remote-as internal",
            "exit",
            "no router bgp 65000 vrf vr.a",
            "no route-map rm_a permit 10",
            "no ip prefix-list pl_a seq 1 permit 10.0.0.0/8",
            "no vrf vr.a",
        ]
    );
}

#[test]
fn a_no_line_frr_has_and_the_text_lacks_is_undone_by_the_line_itself() {
    let new = "router bgp 65000 vrf vr.a\n bgp router-id 192.0.2.101\nexit\n";
    let running = "router bgp 65000 vrf vr.a\n bgp router-id 192.0.2.101\n no bgp suppress-duplicates\nexit\n";
    assert_eq!(
        diff(new, running),
        [
            "router bgp 65000 vrf vr.a",
            " bgp suppress-duplicates",
            "exit"
        ]
    );
}

#[test]
fn a_new_vrf_is_sent_as_whole_contexts_each_left_explicitly() {
    let new = "vrf vr.b\n vni 200\nexit-vrf\n!\nroute-map rm_b deny 65535\nexit\n";
    assert_eq!(
        diff(new, "frr version 8.4.4\n"),
        [
            "vrf vr.b",
            " vni 200",
            "exit-vrf",
            "route-map rm_b deny 65535",
            "exit"
        ]
    );
}

#[test]
fn a_removed_neighbors_family_lines_go_before_the_neighbor_which_takes_them_with_it() {
    let new = "router bgp 65000\n bgp router-id 192.0.2.1\nexit\n";
    let running = "router bgp 65000\n bgp router-id 192.0.2.1\n neighbor vd.a interface remote-as internal\n \
        !\n address-family ipv6 unicast\n  neighbor vd.a activate\n exit-address-family\nexit\n";
    assert_eq!(
        diff(new, running),
        [
            "router bgp 65000",
            " address-family ipv6 unicast",
            "  no neighbor vd.a activate",
            " exit-address-family",
            "exit",
            "router bgp 65000",
            " no neighbor vd.a interface remote-as internal",
            "exit",
        ]
    );
}

#[test]
fn a_default_of_frrs_version_and_profile_is_no_difference_and_other_lines_still_are() {
    let new = Conf::parse(
        "router bgp 65000\n no bgp ebgp-requires-policy\n neighbor 192.0.2.2 remote-as 65100\nexit\n",
    );
    let change = [
        "router bgp 65000",
        " neighbor 192.0.2.2 remote-as 65100",
        "exit",
    ];
    for version in ["8.4.4", "10.3"] {
        let running =
            format!("frr version {version}\nfrr defaults datacenter\nrouter bgp 65000\nexit\n");
        assert_eq!(script(&new, &Conf::parse(&running)), change, "{version}");
    }
    // Not FRR's default under `traditional`, nor for an FRR that names no version: sent.
    for running in [
        "frr version 8.4.4\nfrr defaults traditional\nrouter bgp 65000\nexit\n",
        "frr defaults datacenter\nrouter bgp 65000\nexit\n",
    ] {
        let script = script(&new, &Conf::parse(running));
        assert!(
            script.contains(&" no bgp ebgp-requires-policy".to_string()),
            "{running}: {script:?}"
        );
    }
}

#[test]
fn the_files_hostname_is_sent_to_frr_8_4_and_is_vtyshs_own_on_frr_10() {
    let new = Conf::parse("hostname n1\n!\nrouter bgp 65000\nexit\n");
    let running = |v: &str| {
        Conf::parse(&format!(
            "frr version {v}\nhostname vm\nrouter bgp 65000\nexit\n"
        ))
    };
    assert_eq!(script(&new, &running("8.4.4")), ["hostname n1"]);
    assert!(script(&new, &running("10.3")).is_empty());
}

/// A default instance with a peering's peer group (listen range, timers) and a loopback peer.
fn peers(group_asn: u32, with_loopback: bool) -> String {
    let loopback = if with_loopback {
        " neighbor 10.250.7.1 remote-as 65512\n neighbor 10.250.7.1 ttl-security hops 2\n \
         neighbor 10.250.7.1 timers 3 9\n"
    } else {
        ""
    };
    format!(
        "frr defaults datacenter\nhostname n1\n!\nrouter bgp 65000\n bgp router-id 192.0.2.1\n\
         {loopback} neighbor bgpp_lb_4 peer-group\n neighbor bgpp_lb_4 remote-as {group_asn}\n \
         neighbor bgpp_lb_4 bfd\n bgp listen range 10.250.51.0/24 peer-group bgpp_lb_4\n\
         exit\n!\n"
    )
}

#[test]
fn a_removed_neighbor_goes_by_its_remote_as_alone_and_a_changed_as_is_replaced() {
    // FRR: `no neighbor X remote-as` takes all of X's lines (a `no` of another of them would
    // then fail), and on a peer group deletes the group: a changed AS is set over the old one.
    assert_eq!(
        diff(&peers(65513, false), &peers(65511, true)),
        [
            "router bgp 65000",
            " no neighbor 10.250.7.1 remote-as 65512",
            "exit",
            "router bgp 65000",
            " neighbor bgpp_lb_4 remote-as 65513",
            "exit",
        ]
    );
}

#[test]
fn a_removed_peer_group_goes_by_its_peer_group_line_after_its_listen_ranges() {
    let none = "frr defaults datacenter\nhostname n1\n!\nrouter bgp 65000\n \
        bgp router-id 192.0.2.1\nexit\n!\n";
    assert_eq!(
        diff(none, &peers(65511, false)),
        [
            "router bgp 65000",
            " no bgp listen range 10.250.51.0/24 peer-group bgpp_lb_4",
            " no neighbor bgpp_lb_4 peer-group",
            "exit"
        ]
    );
}
