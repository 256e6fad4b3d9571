use super::*;

fn merged(texts: &[&str]) -> String {
    let mut m = Merge::default();
    for t in texts {
        m.add(t);
    }
    m.text()
}

#[test]
fn two_daemons_texts_join_as_vtysh_joins_them() {
    let zebra = "frr version 8.4.4\nfrr defaults datacenter\nhostname node\n!\n\
        vrf vr.a\n vni 5000\nexit-vrf\n!\nroute-map rm permit 10\n match ip address prefix-list p\nexit\n!\n\
        ip prefix-list p seq 5 permit 10.0.0.0/8\n!\n";
    let bgpd = "frr version 8.4.4\nfrr defaults datacenter\nhostname node\nlog syslog\n!\n\
        router bgp 65000\n bgp router-id 192.0.2.1\n !\n address-family l2vpn evpn\n  advertise-all-vni\n \
        exit-address-family\nexit\n!\nip prefix-list p seq 5 permit 10.0.0.0/8\n!\n\
        route-map rm permit 10\n set community 65000:1\n match ip address prefix-list p\nexit\n!\n";
    assert_eq!(
        merged(&[zebra, bgpd]),
        "frr version 8.4.4\nfrr defaults datacenter\nhostname node\nlog syslog\n!\n\
         vrf vr.a\n vni 5000\nexit-vrf\n!\n\
         router bgp 65000\n bgp router-id 192.0.2.1\n !\n address-family l2vpn evpn\n  advertise-all-vni\n \
         exit-address-family\nexit\n!\n\
         ip prefix-list p seq 5 permit 10.0.0.0/8\n!\n\
         route-map rm permit 10\n match ip address prefix-list p\n set community 65000:1\nexit\n!\nend\n"
    );
}

#[test]
fn a_key_chain_nests_its_keys_and_the_first_matching_prefix_files_a_header() {
    let text = "key chain k\n key 1\n  key-string s\n exit\nexit\n!\nrouter ospf6\n ospf6 router-id 1.1.1.1\nexit\n!\n";
    assert_eq!(
        merged(&[text]),
        "!\nkey chain k\n key 1\n  key-string s\n exit\nexit\n!\n\
         router ospf6\n ospf6 router-id 1.1.1.1\nexit\n!\nend\n"
    );
}

#[test]
fn lines_outside_blocks_stay_at_the_top_in_order_and_some_once() {
    assert_eq!(
        merged(&["no ip forwarding\n indented\nagentx\nagentx\nno ip forwarding\n"]),
        "no ip forwarding\n indented\nagentx\nno ip forwarding\n!\nend\n"
    );
}

/// FRR 10.3's daemons' own texts (as `do write terminal` gives them, less log comments) and
/// what its vtysh's `show running-config no-header` printed for them: mgmtd holds the route
/// maps, prefix lists and VRFs beside zebra and bgpd, and prefix lists and route maps come
/// before the VRFs.
#[test]
fn frr_10_3s_mgmtd_zebra_and_bgpd_join_as_its_vtysh_joins_them() {
    let head = "frr version 10.3\nfrr defaults datacenter\n!\nhostname vm\n!\n";
    let rm = "route-map rm_a permit 10\n match ip address prefix-list pl_a\nexit\n!\n";
    let pl = "ip prefix-list pl_a seq 5 permit 10.0.0.0/8 le 32\n";
    let mgmtd = format!("{head}{rm}!\n!\n{pl}{rm}!\nvrf vr.a\n vni 100\nexit-vrf\n!\n");
    let zebra = format!("{head}!\n{pl}!\n!\nno ipv6 forwarding\n!\n!\n");
    let bgpd = format!(
        "{head}{rm}!\nvrf vr.a\nexit-vrf\n!\nrouter bgp 65000\n bgp router-id 192.0.2.1\n!\nexit\n!\n\
         router bgp 65000 vrf vr.a\n bgp router-id 192.0.2.101\n !\n address-family ipv4 unicast\n  \
         redistribute connected route-map rm_a\n exit-address-family\n !\n address-family l2vpn evpn\n  \
         advertise ipv4 unicast\n exit-address-family\nexit\n!\n{pl}!\n"
    );
    let mut m = Merge::new(Dialect::V10_3);
    for text in [&mgmtd, &zebra, &bgpd] {
        m.add(text);
    }
    assert_eq!(
        m.text(),
        "frr version 10.3\nfrr defaults datacenter\nhostname vm\nno ipv6 forwarding\n!\n\
         ip prefix-list pl_a seq 5 permit 10.0.0.0/8 le 32\n!\n\
         route-map rm_a permit 10\n match ip address prefix-list pl_a\nexit\n!\n\
         vrf vr.a\n vni 100\nexit-vrf\n!\n\
         router bgp 65000\n bgp router-id 192.0.2.1\nexit\n!\n\
         router bgp 65000 vrf vr.a\n bgp router-id 192.0.2.101\n !\n address-family ipv4 unicast\n  \
         redistribute connected route-map rm_a\n exit-address-family\n !\n address-family l2vpn evpn\n  \
         advertise ipv4 unicast\n exit-address-family\nexit\n!\nend\n"
    );
    // The same texts by FRR 8.4's rules put the VRF first and the route map last.
    let mut m = Merge::new(Dialect::V8_4);
    for text in [&mgmtd, &zebra, &bgpd] {
        m.add(text);
    }
    let text = m.text();
    assert!(text.find("vrf vr.a").unwrap() < text.find("route-map rm_a").unwrap());
}
