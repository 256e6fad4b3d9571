//! EVPN type-5 between two nodes with real FRR, in Debian's stock kernel (VRFs). Built only with
//! the `vm` feature; `hack/test.d/55-frr-vm.sh` boots the VM (`hack/vm/run.sh` with
//! `VM_FRR=1`, which puts FRR into the initramfs) and runs it there.
//!
//! Two network namespaces joined by an underlay veth; each has the kernel objects the agent
//! creates for tenant VRF `t1` (VNI 5000) and runs zebra + bgpd with a base config (eBGP EVPN to
//! the other node) plus the text this crate renders. The test checks that a prefix of node 1
//! reaches node 2 as an EVPN type-5 route, lands in node 2's VRF table and, through the veth
//! route leak, in its default VRF; that an export filter change on node 1 is visible on node 2;
//! that an import filter on node 2 stops one prefix from entering its default VRF; and, with
//! node 1's config rendered from an input through render, that a VRF loopback's host route
//! reaches node 2 unless its policy's export items deny it, and that a large community set on
//! export arrives with the routes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use netrollout_api::{
    NodeConfig, PrefixAction, PrefixItem, VRFRouteConfiguration, VRFRouteConfigurationSpec,
    VrfConfig, VrfLoopback, VrfPolicy,
};
use netrollout_frr::daemons::{Daemons, Log, Start};
use netrollout_frr::{Settings, render, with_base};
use netrollout_testkit::poll;
use netrollout_testkit::prefixes::{item, permit_all};

fn sh(args: &[&str]) -> String {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One node: a namespace with FRR in the pathspace of the same name.
struct Node {
    ns: String,
    asn: u32,
    ip: String,
}

impl Node {
    fn ip(&self, args: &str) -> String {
        let mut all = vec!["ip", "-n", &self.ns];
        all.extend(args.split_whitespace());
        sh(&all)
    }

    fn vtysh(&self, command: &str) -> String {
        sh(&["vtysh", "-N", &self.ns, "-c", command])
    }

    /// Loads a config file with `vtysh -f`; any output line is an error.
    fn load(&self, text: &str) {
        let path = format!("/tmp/{}.conf", self.ns);
        std::fs::write(&path, text).unwrap();
        let out = Command::new("vtysh")
            .args(["-N", &self.ns, "-f", &path])
            .output()
            .unwrap();
        let output = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let errors: Vec<&str> = output
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.contains("vtysh.conf"))
            .collect();
        assert!(
            out.status.success() && errors.is_empty(),
            "{}: FRR rejected the config: {errors:?}\n{text}",
            self.ns
        );
    }

    /// The agent's settings: the router id of the VRF instances differs from the base's
    /// default-instance id (the underlay address), as the veth iBGP sessions need.
    fn settings(&self) -> Settings {
        let last = self.ip.rsplit('.').next().unwrap();
        Settings {
            asn: self.asn,
            router_id: format!("10.255.0.{last}").parse().unwrap(),
        }
    }

    fn base(&self, peer: &Node) -> String {
        format!(
            "hostname {ns}\n!\nbgp route-map delay-timer 1\n!\nrouter bgp {asn}\n bgp router-id {ip}\n \
             no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\n neighbor {pip} remote-as {pasn}\n \
             neighbor {pip} timers 3 9\n !\n address-family l2vpn evpn\n  neighbor {pip} activate\n  \
             advertise-all-vni\n exit-address-family\nexit\n",
            ns = self.ns,
            asn = self.asn,
            ip = self.ip,
            pip = peer.ip,
            pasn = peer.asn
        )
    }

    /// The kernel objects the agent creates for VRF `t1`, plus tenant prefixes on dummies.
    fn kernel(&self, prefixes: &[&str]) {
        self.ip("link set lo up");
        self.ip("link add vr.t1 type vrf table 5000");
        self.ip("link add br.t1 type bridge");
        self.ip("link set br.t1 master vr.t1");
        self.ip(&format!(
            "link add vx.t1 type vxlan id 5000 local {} dstport 4789 nolearning",
            self.ip
        ));
        self.ip("link set vx.t1 master br.t1");
        self.ip("link add vd.t1 type veth peer name vv.t1");
        self.ip("link set vv.t1 master vr.t1");
        for (i, prefix) in prefixes.iter().enumerate() {
            let dev = format!("lo.t{i}");
            self.ip(&format!("link add {dev} type dummy"));
            self.ip(&format!("link set {dev} master vr.t1"));
            self.ip(&format!("addr add {prefix} dev {dev}"));
            self.ip(&format!("link set {dev} up"));
        }
        for dev in ["vr.t1", "br.t1", "vx.t1", "vd.t1", "vv.t1"] {
            self.ip(&format!("link set {dev} up"));
        }
    }

    /// zebra, then bgpd once zebra shows the underlay address, as root (the VM has no `frr`
    /// user), with an empty config and logs under `/tmp/NS/`.
    fn start_frr(&self) -> Daemons {
        let logs = PathBuf::from(format!("/tmp/{}", self.ns));
        std::fs::create_dir_all(&logs).unwrap();
        std::fs::create_dir_all(format!("/etc/frr/{}", self.ns)).unwrap();
        // No PAM in the VM: vtysh lets root in without asking it.
        std::fs::write(
            format!("/etc/frr/{}/vtysh.conf", self.ns),
            "username root nopassword\n",
        )
        .unwrap();
        let daemons = Start {
            user: "root",
            log: Log::Files(logs),
            underlay: Some(&self.ip),
            timeout: Duration::from_secs(60),
            ..Start::new(&self.ns, &self.ns)
        }
        .start();
        eprintln!("vm-frr: ok: {} FRR answers", self.ns);
        daemons
    }
}

/// [`poll::until`] for this suite.
fn wait<T>(what: &str, secs: u64, check: impl FnMut() -> Option<T>) -> T {
    poll::until("vm-frr", what, secs, check)
}

fn config(import: Vec<PrefixItem>, export: Vec<PrefixItem>) -> NodeConfig {
    NodeConfig {
        vrfs: vec![VrfConfig {
            name: "t1".into(),
            table_id: 5000,
            vrf_interface: "vr.t1".into(),
            bridge_interface: Some("br.t1".into()),
            vxlan_interface: Some("vx.t1".into()),
            veth_default_interface: "vd.t1".into(),
            veth_vrf_interface: "vv.t1".into(),
            vni: Some(5000),
            route_target: Some("65000:5000".into()),
            policies: vec![VrfPolicy {
                source: "t1".into(),
                seq: 10,
                import,
                export,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Node 1's managed text rendered from a `VRFRouteConfiguration` (VRF `t1`, as the kernel
/// objects above) through render, with the addresses render gave its loopbacks `lo.a` (exported)
/// and `lo.b` (denied by the policy's first export item).
fn rendered_with_loopbacks(node: &Node) -> (String, String, String) {
    let deny = PrefixItem {
        cidr: "10.61.0.0/24".into(),
        seq: Some(1),
        le: Some(32),
        action: PrefixAction::Deny,
        ..Default::default()
    };
    let spec = VRFRouteConfigurationSpec {
        vrf: "t1".into(),
        seq: 10,
        vni: Some(5000),
        route_target: Some("65000:5000".into()),
        import: permit_all(),
        export: vec![
            deny,
            item("10.50.0.0/16", 2, Some(32), PrefixAction::Permit),
        ],
        communities: vec!["65000:1:2".into()],
        loopbacks: vec![
            VrfLoopback {
                name: "lo.a".into(),
                subnet: "10.60.0.0/24".into(),
            },
            VrfLoopback {
                name: "lo.b".into(),
                subnet: "10.61.0.0/24".into(),
            },
        ],
        ..Default::default()
    };
    let snapshot =
        netrollout_render::from_objects(&[VRFRouteConfiguration::new("t1", spec)], &[], &[]);
    let me = netrollout_render::Node {
        name: node.ns.clone(),
        labels: Default::default(),
    };
    let config = netrollout_render::render(&snapshot, &[me])
        .unwrap()
        .config(&node.ns)
        .unwrap();
    let addr = |name: &str| {
        let lo = config.vrfs[0].loopbacks.iter().find(|l| l.name == name);
        lo.unwrap().address.clone()
    };
    let (a, b) = (addr("lo.a"), addr("lo.b"));
    (render(&config, &node.settings()), a, b)
}

/// Whether `vtysh` output or a route listing mentions the prefix.
fn has(text: &str, prefix: &str) -> bool {
    text.contains(prefix)
}

#[test]
fn evpn_type5_routes_follow_export_and_import_filters_between_two_nodes() {
    let pid = std::process::id();
    let n1 = Node {
        ns: format!("nrfv1-{pid}"),
        asn: 65001,
        ip: "192.168.77.1".into(),
    };
    let n2 = Node {
        ns: format!("nrfv2-{pid}"),
        asn: 65002,
        ip: "192.168.77.2".into(),
    };
    for n in [&n1, &n2] {
        sh(&["ip", "netns", "add", &n.ns]);
    }
    sh(&[
        "ip", "link", "add", "u1", "netns", &n1.ns, "type", "veth", "peer", "name", "u2", "netns",
        &n2.ns,
    ]);
    n1.ip("addr add 192.168.77.1/24 dev u1");
    n1.ip("link set u1 up");
    n2.ip("addr add 192.168.77.2/24 dev u2");
    n2.ip("link set u2 up");
    n1.kernel(&["10.50.1.1/24", "10.50.3.1/24", "10.50.4.1/24"]);
    n2.kernel(&["10.50.2.1/24"]);
    let frr = [n1.start_frr(), n2.start_frr()];

    // 1. Both export and import everything in 10.50.0.0/16.
    let managed1 = render(&config(permit_all(), permit_all()), &n1.settings());
    let managed2 = render(&config(permit_all(), permit_all()), &n2.settings());
    n1.load(&with_base(&n1.base(&n2), &managed1));
    n2.load(&with_base(&n2.base(&n1), &managed2));

    let result = std::panic::catch_unwind(|| {
        wait(
            "node 2 learns 10.50.1.0/24 as an EVPN type-5 route",
            120,
            || {
                has(
                    &n2.vtysh("show bgp l2vpn evpn route type prefix"),
                    "10.50.1.0",
                )
                .then_some(())
            },
        );
        wait("node 2's VRF table has 10.50.1.0/24", 60, || {
            has(&n2.ip("route show vrf vr.t1"), "10.50.1.0/24").then_some(())
        });
        wait(
            "node 2's default VRF has 10.50.1.0/24 through the veth leak",
            60,
            || has(&n2.ip("route show table main"), "10.50.1.0/24").then_some(()),
        );
        wait("node 1 learns node 2's 10.50.2.0/24", 60, || {
            has(&n1.ip("route show vrf vr.t1"), "10.50.2.0/24").then_some(())
        });

        // 2. Node 1 now exports only 10.50.3.0/24 and 10.50.4.0/24: 10.50.1.0/24 is withdrawn.
        let export = vec![
            item("10.50.3.0/24", 1, None, PrefixAction::Permit),
            item("10.50.4.0/24", 2, None, PrefixAction::Permit),
        ];
        let managed1 = render(&config(permit_all(), export), &n1.settings());
        n1.load(&with_base(&n1.base(&n2), &managed1));
        wait(
            "node 2 loses 10.50.1.0/24 after node 1's export change",
            90,
            || {
                let evpn = n2.vtysh("show bgp l2vpn evpn route type prefix");
                (!has(&evpn, "10.50.1.0") && has(&evpn, "10.50.3.0")).then_some(())
            },
        );
        wait("node 2's VRF table follows", 60, || {
            let routes = n2.ip("route show vrf vr.t1");
            (!has(&routes, "10.50.1.0/24") && has(&routes, "10.50.4.0/24")).then_some(())
        });

        // 3. Node 2's import filter denies 10.50.3.0/24: it stays in the VRF, but the default
        //    VRF keeps only 10.50.4.0/24.
        let import = vec![
            item("10.50.3.0/24", 1, None, PrefixAction::Deny),
            item("10.50.0.0/16", 2, Some(32), PrefixAction::Permit),
        ];
        let managed2 = render(&config(import, permit_all()), &n2.settings());
        n2.load(&with_base(&n2.base(&n1), &managed2));
        wait(
            "node 2's default VRF drops 10.50.3.0/24 but keeps 10.50.4.0/24",
            90,
            || {
                let main = n2.ip("route show table main");
                (!has(&main, "10.50.3.0/24") && has(&main, "10.50.4.0/24")).then_some(())
            },
        );
        assert!(has(&n2.ip("route show vrf vr.t1"), "10.50.3.0/24"));

        // 4. Node 1's config from inputs through render: a large community on export, and two
        //    VRF loopbacks. lo.a's host route reaches node 2; lo.b's is denied by an export
        //    item of the same policy, so it stays on node 1.
        let (managed1, lo_a, lo_b) = rendered_with_loopbacks(&n1);
        for (dev, addr) in [("lo.a", &lo_a), ("lo.b", &lo_b)] {
            n1.ip(&format!("link add {dev} type dummy"));
            n1.ip(&format!("link set {dev} master vr.t1"));
            n1.ip(&format!("addr add {addr} dev {dev}"));
            n1.ip(&format!("link set {dev} up"));
        }
        n1.load(&with_base(&n1.base(&n2), &managed1));
        let host = |addr: &str| addr.trim_end_matches("/32").to_string();
        wait(
            "node 2 learns node 1's loopback lo.a as an EVPN type-5 route",
            90,
            || {
                has(
                    &n2.vtysh("show bgp l2vpn evpn route type prefix"),
                    &format!("[{}]", host(&lo_a)),
                )
                .then_some(())
            },
        );
        wait(
            "node 2's VRF table routes lo.a's address to node 1",
            60,
            || {
                let routes = n2.ip("route show vrf vr.t1");
                routes
                    .lines()
                    .any(|l| l.starts_with(&format!("{} ", host(&lo_a))) && l.contains("via"))
                    .then_some(())
            },
        );
        wait(
            "node 2's VRF sees the large community on node 1's routes",
            60,
            || {
                has(
                    &n2.vtysh("show bgp vrf vr.t1 ipv4 unicast 10.50.1.0/24"),
                    "Large Community: 65000:1:2",
                )
                .then_some(())
            },
        );
        // Announced together with lo.a: had the filter let it through, it would be there now.
        let evpn = n2.vtysh("show bgp l2vpn evpn route type prefix");
        assert!(
            !has(&evpn, &format!("[{}]", host(&lo_b))),
            "lo.b leaked:\n{evpn}"
        );
        assert!(
            !has(&n2.ip("route show vrf vr.t1"), &host(&lo_b)),
            "lo.b is in node 2's VRF table"
        );
        eprintln!("vm-frr: ok: node 2 has no route to lo.b ({lo_b})");
    });
    if result.is_err() {
        let extra = ["show bgp summary", "show bgp vrf vr.t1 ipv4 unicast"];
        eprintln!("{}\n{}", frr[0].dump(&extra), frr[1].dump(&extra));
    }
    // FRR stops before its namespaces go.
    drop(frr);
    for n in [&n1, &n2] {
        let _ = Command::new("ip").args(["netns", "del", &n.ns]).status();
    }
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}
