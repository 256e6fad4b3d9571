//! Tests of the pure diff against the model kernel ([`ModelKernel`]): ops are executed on an
//! [`Observed`] state the way the kernel would, and the result must need no further ops.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::diff;
use crate::model::{
    Address, Desired, Link, LinkKind, Mac, Observed, Route, Rule, Segmentation, VXLAN_PORT, Vxlan,
};
use crate::model_kernel::ModelKernel;
use crate::op::{LinkChange, Op};

/// Executes `ops` on the model kernel; panics where the kernel would refuse.
fn simulate(s: Observed, ops: &[Op]) -> Observed {
    let managed = crate::model::for_tests::managed();
    let mut kernel = ModelKernel { state: s };
    for op in ops {
        if let Err(e) = kernel.execute(op, &managed) {
            panic!("{e}");
        }
    }
    kernel.state
}

fn vxlan(vni: u32, neigh_suppress: bool) -> LinkKind {
    let local = "192.0.2.1".parse().unwrap();
    LinkKind::Vxlan(Vxlan {
        vni,
        local,
        underlay: None,
        port: VXLAN_PORT,
        learning: false,
        neigh_suppress,
    })
}

/// A VRF laid out like the renderer does, with a leak route each way and an SBR rule.
fn add_vrf(d: &mut Desired, x: &str, table: u32) {
    let vr = format!("vr.{x}");
    d.add_link(Link::new(&vr, LinkKind::Vrf { table }));
    d.add_link(Link::new(format!("br.{x}"), LinkKind::Bridge).master(&vr));
    d.add_link(Link::new(format!("vx.{x}"), vxlan(table, false)).master(format!("br.{x}")));
    d.add_link(Link::new(
        format!("vd.{x}"),
        LinkKind::Veth {
            peer: format!("vv.{x}"),
        },
    ));
    d.add_link(
        Link::new(
            format!("vv.{x}"),
            LinkKind::Veth {
                peer: format!("vd.{x}"),
            },
        )
        .master(&vr),
    );
    d.addresses.push(Address {
        link: format!("vv.{x}"),
        addr: "169.254.0.1/31".parse().unwrap(),
    });
    d.addresses.push(Address {
        link: format!("vv.{x}"),
        addr: "fd00::1/127".parse().unwrap(),
    });
    let dst = "0.0.0.0/0".parse().unwrap();
    d.routes.push(Route {
        table,
        dst,
        gateway: "169.254.0.0".parse().ok(),
        dev: Some(format!("vv.{x}")),
        metric: 0,
    });
    d.routes.push(Route {
        table,
        dst: "::/0".parse().unwrap(),
        gateway: None,
        dev: Some(format!("vv.{x}")),
        metric: 0,
    });
    d.rules.push(Rule::from_prefix(
        2000 + table,
        "10.60.0.0/24".parse().unwrap(),
        table,
    ));
}

fn add_l2(d: &mut Desired, vlan: u32, mtu: u32, neigh_suppress: bool, vrf: Option<&str>) {
    add_l2_offload(d, vlan, mtu, neigh_suppress, vrf, Segmentation::On);
}

/// A layer-2 network whose bridge and VXLAN device want `seg`, as the agent lays it out.
fn add_l2_offload(
    d: &mut Desired,
    vlan: u32,
    mtu: u32,
    neigh_suppress: bool,
    vrf: Option<&str>,
    seg: Segmentation,
) {
    let br = format!("l2.{vlan}");
    let mut bridge = Link::new(&br, LinkKind::Bridge)
        .mtu(mtu)
        .mac(Mac([2, 0, 0, 0, 0, 1]))
        .segmentation(seg);
    bridge.master = vrf.map(|v| format!("vr.{v}"));
    d.add_link(bridge);
    d.add_link(
        Link::new(format!("lx.{vlan}"), vxlan(1000 + vlan, neigh_suppress))
            .mtu(mtu)
            .master(&br)
            .segmentation(seg),
    );
    d.addresses.push(Address {
        link: br,
        addr: format!("10.0.{vlan}.1/24").parse().unwrap(),
    });
}

fn from_scratch(d: &Desired) -> Observed {
    simulate(Observed::default(), &diff(d, &Observed::default()))
}

#[test]
fn an_empty_kernel_gets_masters_before_ports_and_addresses_routes_rules_last() {
    let mut d = Desired::default();
    add_vrf(&mut d, "a", 100);
    let ops = diff(&d, &Observed::default());
    let pos = |f: &dyn Fn(&Op) -> bool| ops.iter().position(f).unwrap();
    let created = |n: &'static str| move |o: &Op| matches!(o, Op::CreateLink(l) if l.name == n);
    assert!(pos(&created("vr.a")) < pos(&created("br.a")));
    assert!(pos(&created("br.a")) < pos(&created("vx.a")));
    assert!(
        !ops.iter().any(created("vv.a")),
        "the pair is created from vd.a"
    );
    let last_link = ops
        .iter()
        .rposition(|o| matches!(o, Op::CreateLink(_) | Op::ModifyLink(_)))
        .unwrap();
    assert!(last_link < pos(&|o| matches!(o, Op::AddAddress(_))));
    assert!(pos(&|o| matches!(o, Op::AddAddress(_))) < pos(&|o| matches!(o, Op::ReplaceRoute(_))));
    assert!(matches!(ops.last(), Some(Op::AddRule(_))));
}

#[test]
fn a_config_in_place_needs_no_ops() {
    let mut d = Desired::default();
    add_vrf(&mut d, "a", 100);
    add_l2(&mut d, 10, 1450, true, Some("a"));
    assert_eq!(diff(&d, &from_scratch(&d)), vec![]);
}

#[test]
fn offload_is_switched_off_after_creation_and_back_on_when_no_longer_off() {
    let mut off = Desired::default();
    add_l2_offload(&mut off, 10, 1500, false, None, Segmentation::Off);
    let ops = diff(&off, &Observed::default());
    let created = ops
        .iter()
        .position(|o| matches!(o, Op::CreateLink(l) if l.name == "l2.10"))
        .unwrap();
    let switched = |on: bool| Op::SetSegmentation {
        link: "l2.10".into(),
        on,
    };
    let set = ops.iter().position(|o| *o == switched(false)).unwrap();
    assert!(created < set, "{ops:#?}");
    let s = simulate(Observed::default(), &ops);
    assert_eq!(diff(&off, &s), vec![], "the no-op writes nothing");

    let mut on = Desired::default();
    add_l2_offload(&mut on, 10, 1500, false, None, Segmentation::On);
    let back = diff(&on, &s);
    assert!(back.contains(&switched(true)), "{back:#?}");
    assert_eq!(
        back.len(),
        2,
        "the bridge and the VXLAN device only: {back:#?}"
    );

    // Left to the kernel: whatever the link has stays.
    let mut untouched = Desired::default();
    add_l2_offload(
        &mut untouched,
        10,
        1500,
        false,
        None,
        Segmentation::Untouched,
    );
    assert_eq!(diff(&untouched, &s), vec![]);
    // Observed partly on: switched as a whole.
    let mut mixed = s.clone();
    mixed.links.get_mut("l2.10").unwrap().link.segmentation = Segmentation::Mixed;
    assert_eq!(diff(&off, &mixed), vec![switched(false)]);
    // Not readable (no ethtool netlink): on is the kernel's default, off is written.
    let mut unread = s;
    for l in unread.links.values_mut() {
        l.link.segmentation = Segmentation::Untouched;
    }
    assert_eq!(diff(&on, &unread), vec![]);
    assert_eq!(diff(&off, &unread).len(), 2);
}

#[test]
fn a_vrf_on_a_new_table_is_recreated_and_its_ports_reenslaved() {
    let mut d = Desired::default();
    add_vrf(&mut d, "a", 100);
    let before = from_scratch(&d);
    let mut moved = Desired::default();
    add_vrf(&mut moved, "a", 101);
    let ops = diff(&moved, &before);
    // The VRF (new table) and its VXLAN (VNI follows the table here) are recreated; the
    // bridge and the veth pair stay and are enslaved again.
    let deleted: Vec<&Op> = ops
        .iter()
        .filter(|o| matches!(o, Op::DeleteLink(_)))
        .collect();
    assert_eq!(
        deleted,
        vec![
            &Op::DeleteLink("vx.a".into()),
            &Op::DeleteLink("vr.a".into())
        ]
    );
    let reenslave = |n: &str| {
        Op::ModifyLink(LinkChange {
            name: n.into(),
            mtu: None,
            mac: None,
            master: Some(Some("vr.a".into())),
            up: false,
        })
    };
    assert!(
        ops.contains(&reenslave("br.a")) && ops.contains(&reenslave("vv.a")),
        "{ops:#?}"
    );
    assert_eq!(diff(&moved, &simulate(before, &ops)), vec![]);
}

#[test]
fn an_ipv6_route_with_metric_zero_matches_the_kernels_1024() {
    let mut d = Desired::default();
    add_vrf(&mut d, "a", 100);
    let s = from_scratch(&d);
    assert!(s.routes.iter().any(|r| r.metric == 1024));
    assert_eq!(diff(&d, &s), vec![]);
}

#[test]
fn a_veth_pair_going_away_is_deleted_once() {
    let mut d = Desired::default();
    add_vrf(&mut d, "a", 100);
    let ops = diff(&Desired::default(), &from_scratch(&d));
    let deleted: Vec<&Op> = ops
        .iter()
        .filter(|o| matches!(o, Op::DeleteLink(n) if n == "vd.a" || n == "vv.a"))
        .collect();
    assert_eq!(deleted, vec![&Op::DeleteLink("vd.a".into())]);
    // Routes, rules and addresses on deleted links go with them; only the rule needs an op.
    assert!(
        !ops.iter()
            .any(|o| matches!(o, Op::DeleteAddress(_) | Op::DeleteRoute(_))),
        "{ops:#?}"
    );
    assert!(ops.iter().any(|o| matches!(o, Op::DeleteRule(_))));
}

#[test]
fn a_route_without_a_device_accepts_the_device_the_kernel_chose() {
    let mut d = Desired::default();
    add_l2(&mut d, 10, 1500, false, None);
    d.routes.push(Route {
        table: 254,
        dst: "10.9.0.0/16".parse().unwrap(),
        gateway: "10.0.10.2".parse().ok(),
        dev: None,
        metric: 5,
    });
    let s = from_scratch(&d);
    assert_eq!(s.routes[0].dev.as_deref(), Some("eth0"));
    assert_eq!(diff(&d, &s), vec![]);
}

/// One random node: Layer2 networks (some in VRFs), VRFs with a random table shift.
fn node() -> impl Strategy<Value = Desired> {
    let l2 = (
        1u32..8,
        prop::bool::ANY,
        prop::bool::ANY,
        prop::option::of(0usize..2),
        prop::sample::select(vec![
            Segmentation::On,
            Segmentation::Off,
            Segmentation::Untouched,
        ]),
    );
    (
        prop::collection::vec(l2, 0..6),
        prop::collection::vec(0u32..2, 2),
    )
        .prop_map(|(nets, shifts)| {
            let mut d = Desired::default();
            let names = ["a", "b"];
            let mut used = BTreeMap::new();
            for (vlan, jumbo, ns, vrf, seg) in nets {
                if d.links.contains_key(&format!("l2.{vlan}")) {
                    continue;
                }
                let vrf = vrf.map(|i| names[i]);
                if let Some(v) = vrf {
                    used.insert(
                        v,
                        100 + 10 * u32::from(v == "b") + shifts[usize::from(v == "b")],
                    );
                }
                add_l2_offload(&mut d, vlan, if jumbo { 9000 } else { 1500 }, ns, vrf, seg);
            }
            for (v, table) in used {
                add_vrf(&mut d, v, table);
            }
            d
        })
}

proptest! {
    #[test]
    fn any_change_between_two_configs_converges_in_one_apply(a in node(), b in node()) {
        let managed = crate::model::for_tests::managed();
        a.validate(&managed).unwrap();
        b.validate(&managed).unwrap();
        let first = from_scratch(&a);
        prop_assert_eq!(diff(&a, &first), vec![]);
        let ops = diff(&b, &first);
        let second = simulate(first, &ops);
        prop_assert_eq!(diff(&b, &second), vec![]);
        for op in &ops {
            for name in op.writes() {
                prop_assert!(managed.owns(name), "{} touches foreign {}", op, name);
            }
        }
    }
}
