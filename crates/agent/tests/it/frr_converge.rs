//! The agent's own FRR diff against real FRR (8.4, or 10.3 with `NETROLLOUT_FRR_VERSION=10.3`;
//! one network namespace and pathspace per FRR): every construct the renderer produces (VRFs with their VNI and route
//! targets, layer-2 VNIs, prefix lists, route maps, aggregates, communities, routing tables, the
//! samples of `config/samples` and the lab's routed tenant) is applied step by step, each
//! configuration from the one before, forwards and back again (so each is also removed). After
//! each step FRR's running config equals the one a fresh FRR shows when it starts from that
//! text, and the apply never needed `frr-reload.py` (the fallback counter stays at 0), nor
//! vtysh to read FRR (it is read over the daemons' vty sockets).
//!
//! Each configuration's fresh FRR starts in its own namespace, all at once, beside the FRR the
//! steps change. Needs root and FRR (hack/install-deps.sh); fails loudly without.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::frr::{FrrNs, chmod_755};
use netrollout_agent::frr::{Frr, FrrSettings};
use netrollout_api::{
    BgpPeeringConfig, Layer2Config, NodeConfig, PrefixAction, PrefixItem, RoutingTableConfig,
    VrfConfig, VrfPolicy,
};
use netrollout_frr::daemons::Version;
use netrollout_testkit::netns::Netns;
use netrollout_testkit::objects::layer2;

/// The operator's base: the default instance with an EVPN session, as on a real node.
pub(crate) const BASE: &str = "frr defaults datacenter\nhostname node\n!\nrouter bgp 65000\n \
    bgp router-id 192.0.2.1\n no bgp ebgp-requires-policy\n neighbor 192.0.2.2 remote-as 65100\n \
    !\n address-family l2vpn evpn\n  neighbor 192.0.2.2 activate\n exit-address-family\nexit\n!\n";

fn item(cidr: &str, le: Option<i32>, action: PrefixAction) -> PrefixItem {
    PrefixItem {
        cidr: cidr.into(),
        seq: None,
        ge: None,
        le,
        action,
    }
}

fn policy(source: &str, seq: i32) -> VrfPolicy {
    VrfPolicy {
        source: source.into(),
        seq,
        import: vec![],
        export: vec![],
        aggregate: vec![],
        communities: vec![],
    }
}

fn vrf(name: &str, table: u32, vni: Option<u32>, rt: Option<&str>, p: Vec<VrfPolicy>) -> VrfConfig {
    VrfConfig {
        name: name.into(),
        table_id: table,
        vrf_interface: format!("vr.{name}"),
        veth_default_interface: format!("vd.{name}"),
        veth_vrf_interface: format!("vv.{name}"),
        vni,
        route_target: rt.map(String::from),
        policies: p,
        ..Default::default()
    }
}

/// `config/samples`: VRF m2m (two policies: v4 and v6 prefixes, an aggregate, a community, a
/// route target), routing table 100, the layer-2 networks vlan501 (in m2m) and vlan502.
pub(crate) fn samples() -> NodeConfig {
    let mut m2m = policy("m2m", 10);
    m2m.import = vec![
        item("10.102.0.0/24", Some(32), PrefixAction::Permit),
        item("fda5:25c1:193c::/64", Some(128), PrefixAction::Permit),
    ];
    m2m.export = vec![
        item("10.250.0.0/24", Some(32), PrefixAction::Permit),
        item("fd94:685b:30cf:501::/64", Some(128), PrefixAction::Permit),
    ];
    m2m.aggregate = vec!["10.250.4.0/24".into()];
    m2m.communities = vec!["65188:100".into()];
    let mut rack = policy("m2m-rack-r1", 20);
    rack.import = vec![item("10.102.0.128/25", None, PrefixAction::Deny)];
    let mut vlan501 = layer2(501, vec!["10.250.0.1/24".into()]);
    vlan501.vni = 4_000_002;
    vlan501.vrf = Some("m2m".into());
    let mut vlan502 = layer2(502, vec![]);
    vlan502.vni = 4_000_003;
    NodeConfig {
        vrfs: vec![vrf(
            "m2m",
            2026,
            Some(2_002_026),
            Some("65188:2026"),
            vec![m2m, rack],
        )],
        layer2s: vec![vlan501, vlan502],
        routing_tables: vec![RoutingTableConfig {
            source: "taas-100".into(),
            table_id: 100,
            interface: "tb.100".into(),
        }],
        bgp_peerings: vec![],
    }
}

/// BGP peerings with workloads: listen ranges on a dual-stack network in a VRF (BFD, timers, a
/// prefix limit, import and export lists of both families), a listen range in the default VRF,
/// loopback peers of both families from the default VRF.
fn peerings(base: &NodeConfig) -> NodeConfig {
    let mut config = base.clone();
    config.bgp_peerings = vec![
        BgpPeeringConfig {
            source: "calico".into(),
            neighbors: vec!["10.250.7.1".into(), "fd00:7::1".into()],
            remote_asn: 65512,
            keepalive_seconds: Some(3),
            hold_seconds: Some(9),
            import: vec![item("10.244.0.0/16", Some(32), PrefixAction::Permit)],
            ..Default::default()
        },
        BgpPeeringConfig {
            source: "ingress".into(),
            listen_ranges: vec!["10.250.51.0/24".into()],
            remote_asn: 4_200_000_001,
            ..Default::default()
        },
        BgpPeeringConfig {
            source: "metallb".into(),
            vrf: Some("m2m".into()),
            listen_ranges: vec!["10.250.0.0/24".into(), "fd94:685b:30cf:501::/64".into()],
            remote_asn: 65511,
            bfd: true,
            maximum_prefixes: Some(16),
            keepalive_seconds: Some(30),
            hold_seconds: Some(90),
            import: vec![
                item("10.250.60.0/24", Some(32), PrefixAction::Permit),
                item("fd94:60::/48", Some(128), PrefixAction::Permit),
            ],
            export: vec![item("0.0.0.0/0", None, PrefixAction::Permit)],
            ..Default::default()
        },
    ];
    config
}

/// [`peerings`] changed: the VRF peering without BFD and timers, another AS and limit, one
/// import item less; the loopback peering gone.
fn peerings_changed(base: &NodeConfig) -> NodeConfig {
    let mut config = peerings(base);
    config.bgp_peerings.remove(0);
    let metallb = &mut config.bgp_peerings[1];
    metallb.bfd = false;
    metallb.keepalive_seconds = None;
    metallb.hold_seconds = None;
    metallb.remote_asn = 65513;
    metallb.maximum_prefixes = Some(8);
    metallb.import.pop();
    config
}

/// The lab's routed tenant on its border node: VRF labr (VNI, route target, two export
/// policies), its layer-2 networks, and the lab's own tenant network.
pub(crate) fn routed_tenant() -> NodeConfig {
    let mut routed = policy("lab-routed", 10);
    routed.export = vec![item("10.251.0.0/16", Some(24), PrefixAction::Permit)];
    let mut border = policy("lab-border", 20);
    border.export = vec![item("203.0.113.0/24", None, PrefixAction::Permit)];
    let net = |id: u16, vrf: Option<&str>| Layer2Config {
        vrf: vrf.map(String::from),
        ..layer2(id, vec![])
    };
    NodeConfig {
        vrfs: vec![vrf(
            "labr",
            700,
            Some(2_000_700),
            Some("65000:700"),
            vec![routed, border],
        )],
        layer2s: vec![
            net(600, None),
            net(701, Some("labr")),
            net(790, Some("labr")),
        ],
        ..Default::default()
    }
}

/// The steps, each a change of the one before: layer-2 VNIs alone, more of them, VRFs added
/// (one with a VNI and route target), policies changed (prefix, community, aggregate, route
/// target, VNI), a routing table, a VRF removed, the samples, the routed tenant.
fn steps() -> Vec<(&'static str, NodeConfig)> {
    let l2 =
        |ids: &[u16]| -> Vec<Layer2Config> { ids.iter().map(|&i| layer2(i, vec![])).collect() };
    let mut a = policy("a", 10);
    a.import = vec![item("10.1.0.0/16", Some(24), PrefixAction::Permit)];
    a.export = vec![
        item("172.16.0.0/24", Some(28), PrefixAction::Permit),
        item("fd00:1::/64", Some(128), PrefixAction::Permit),
    ];
    a.aggregate = vec!["172.16.0.0/23".into()];
    a.communities = vec!["65000:100".into()];
    let mut b = policy("b", 10);
    b.export = vec![item("172.17.0.0/24", None, PrefixAction::Deny)];
    let two_vrfs = NodeConfig {
        vrfs: vec![
            vrf("a", 100, Some(5100), Some("65000:100"), vec![a.clone()]),
            vrf("b", 101, None, None, vec![b.clone()]),
        ],
        layer2s: l2(&[300, 301]),
        ..Default::default()
    };
    let mut a2 = a.clone();
    a2.export[0].cidr = "172.16.8.0/24".into();
    a2.communities = vec!["65000:101".into(), "65000:102".into()];
    a2.aggregate = vec!["172.16.8.0/23".into(), "fd00:1::/48".into()];
    let mut changed = two_vrfs.clone();
    changed.vrfs[0] = vrf("a", 100, Some(5101), Some("65000:200"), vec![a2.clone()]);
    changed.vrfs[1].policies.push(policy("b-extra", 20));
    let mut with_table = changed.clone();
    with_table.routing_tables = vec![RoutingTableConfig {
        source: "t".into(),
        table_id: 200,
        interface: "tb.200".into(),
    }];
    let mut one_vrf = with_table.clone();
    one_vrf.vrfs.remove(0);
    vec![
        ("empty", NodeConfig::default()),
        (
            "layer-2 VNIs",
            NodeConfig {
                layer2s: l2(&[300]),
                ..Default::default()
            },
        ),
        (
            "more layer-2 VNIs",
            NodeConfig {
                layer2s: l2(&[300, 301, 302]),
                ..Default::default()
            },
        ),
        ("two VRFs, one with a VNI", two_vrfs),
        (
            "prefixes, communities, aggregates, VNI and route target changed",
            changed,
        ),
        ("a routing table", with_table),
        ("a VRF removed", one_vrf),
        ("the samples", samples()),
        ("BGP peerings", peerings(&samples())),
        ("BGP peerings changed", peerings_changed(&samples())),
        ("the routed tenant", routed_tenant()),
    ]
}

/// A config text as FRR shows it, as a set of lines each with the headers it is under:
/// `!` and `exit*` lines, `frr version` and blank lines are no config.
fn lines(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut open: Vec<(usize, String)> = Vec::new();
    let texts: Vec<&str> = text.lines().map(str::trim_end).collect();
    for (i, raw) in texts.iter().enumerate() {
        let line = raw.trim_start();
        let indent = raw.len() - line.len();
        // The kernel's forwarding state, which FRR shows among its config.
        let forwarding = matches!(line, "no ip forwarding" | "no ipv6 forwarding");
        if line.is_empty() || line.starts_with('!') || line.starts_with("frr version") || forwarding
        {
            continue;
        }
        while open.last().is_some_and(|(d, _)| *d >= indent) {
            open.pop();
        }
        if line.starts_with("exit") || line == "end" {
            continue;
        }
        let path: Vec<&str> = open.iter().map(|(_, h)| h.as_str()).collect();
        out.insert(format!("{} > {line}", path.join(" > ")));
        let header = texts.get(i + 1).is_some_and(|next| {
            let n = next.trim_start();
            next.len() - n.len() > indent || (n.starts_with("exit") && !n.is_empty())
        });
        if header {
            open.push((indent, line.to_string()));
        }
    }
    out
}

/// The agent's FRR settings for an FRR of the tests' version (`NETROLLOUT_FRR_VERSION`) in
/// namespace (and pathspace) `ns` whose files are in `dir`.
pub(crate) fn settings(dir: &Path, ns: &str) -> FrrSettings {
    common::frr_settings::frr_settings(dir, ns, Version::from_env())
}

/// The threads of the fresh FRRs, joined on drop (also when a step's assertion fails), so each
/// stops its FRR and deletes its namespace before the test process ends.
struct Fresh(Vec<std::thread::JoinHandle<BTreeSet<String>>>);

impl Drop for Fresh {
    fn drop(&mut self) {
        for h in self.0.drain(..) {
            let _ = h.join();
        }
    }
}

#[tokio::test]
async fn every_rendered_construct_converges_through_the_diff_forwards_and_back_without_the_fallback()
 {
    netrollout_frr::daemons::require_installed();
    let dir = tempfile::tempdir().unwrap();
    chmod_755(dir.path());
    std::fs::write(dir.path().join("base.conf"), BASE).unwrap();
    let ns = Netns::new("frrconv");
    let node = FrrNs::start(&ns.name, &dir.path().join("node"), BASE);
    let s = settings(&dir.path().join("node"), &ns.name);
    std::fs::write(&s.base_config, BASE).unwrap();
    let frr = Frr::new(s).unwrap();
    let steps = steps();
    let texts: Vec<String> = steps
        .iter()
        .map(|(_, c)| frr.full(&frr.managed(c).unwrap()).unwrap())
        .collect();

    // What a fresh FRR shows for each text, each started from it in its own namespace, while
    // the steps run (read at the end).
    let mut fresh = Fresh(
        texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let (root, text) = (dir.path().to_path_buf(), text.clone());
                std::thread::spawn(move || {
                    let ns = Netns::new("frrconvo");
                    let fresh = FrrNs::start(&ns.name, &root.join(format!("fresh{i}")), &text);
                    lines(&fresh.running())
                })
            })
            .collect(),
    );

    // Forwards through every step, then back to the first.
    let order: Vec<usize> = (0..steps.len()).chain((0..steps.len() - 1).rev()).collect();
    let mut from = "the base";
    let mut last: Option<usize> = None;
    let mut shown = Vec::new();
    for i in order {
        let (name, _) = &steps[i];
        let writes = frr.apply(&texts[i]).await.unwrap_or_else(|e| {
            panic!("{from} -> {name}: {e}\n{}", node.running());
        });
        assert_eq!(
            frr.fallbacks(),
            0,
            "{from} -> {name}: the apply fell back to frr-reload.py"
        );
        assert_eq!(
            frr.vty_fallbacks(),
            0,
            "{from} -> {name}: FRR was read with vtysh, not over its vty sockets"
        );
        // The first step's text is the base FRR started with: a write only to turn forwarding
        // on (the defaults FRR hides are listed per version: no difference). Layer-2 networks
        // alone change only
        // the kernel once FRR advertises all VNIs: the same text, no write.
        if let Some(before) = last {
            let changed = texts[before] != texts[i];
            assert_eq!(writes, u32::from(changed), "{from} -> {name}: FRR writes");
        }
        shown.push((format!("{from} -> {name}"), i, lines(&node.running())));
        from = name;
        last = Some(i);
    }
    // The namespace started without forwarding: the diff turned it on, as frr-reload.py does
    // (a node that routes tenant VRFs must forward).
    for sysctl in ["net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding"] {
        let out = std::process::Command::new("ip")
            .args([
                "netns",
                "exec",
                &ns.name,
                "cat",
                &format!("/proc/sys/{sysctl}"),
            ])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "1",
            "{sysctl} in the node's namespace after the applies"
        );
    }
    let expected: Vec<BTreeSet<String>> = std::mem::take(&mut fresh.0)
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    for (step, i, running) in shown {
        let missing: Vec<_> = expected[i].difference(&running).collect();
        let extra: Vec<_> = running.difference(&expected[i]).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{step}: FRR's running config differs from a fresh FRR's of the text\n\
             missing: {missing:#?}\nextra: {extra:#?}"
        );
    }
}
