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
