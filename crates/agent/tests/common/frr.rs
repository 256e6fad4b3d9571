//! The FRR world of the agent's FRR tests: the node's FRR (zebra + bgpd 8.4) in the lab
//! namespace with its own pathspace `-N <namespace>`, an eBGP peer FRR in a second namespace
//! `<namespace>-p` over a veth pair (IPv4 unicast and L2VPN EVPN), and the agent's FRR flags.
//! Needs root and FRR (hack/install-deps.sh); fails loudly without.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use netrollout_frr::daemons::{Daemons, Log, Version};
use netrollout_testkit::cmd::run;

use super::{Lab, lab};

pub const NODE_ASN: u32 = 65000;
pub const PEER_ASN: u32 = 65100;
pub const NODE_IP: &str = "192.0.2.1";
pub const PEER_IP: &str = "192.0.2.2";
/// Router id of the managed instances: FRR refuses a VRF's iBGP session to the default VRF
/// over equal ids, so it differs from `NODE_IP` (the base file's).
pub const MANAGED_ROUTER_ID: &str = "192.0.2.101";

/// One FRR (zebra + bgpd) in a namespace, pathspace named like the namespace.
pub struct FrrNs {
    pub daemons: Daemons,
}

impl FrrNs {
    /// Starts zebra and bgpd in `ns` reading `dir/frr.conf` (written from `conf`).
    pub fn start(ns: &str, dir: &Path, conf: &str) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        chmod_755(dir);
        std::fs::write(dir.join("frr.conf"), conf).unwrap();
        let daemons = Daemons::start(ns, ns, &dir.join("frr.conf"), Log::Files(dir.to_path_buf()));
        Self { daemons }
    }

    pub fn try_vtysh(&self, cmd: &str) -> Option<String> {
        self.daemons.try_vtysh(cmd)
    }

    pub fn vtysh(&self, cmd: &str) -> String {
        self.daemons.vtysh(cmd)
    }

    pub fn running(&self) -> String {
        self.vtysh("show running-config")
    }

    pub fn wait(&self, secs: u64, what: &str, pred: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !pred(self) {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what} in FRR {}; running config:\n{}",
                self.daemons.pathspace(),
                self.try_vtysh("show running-config").unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The BGP session to `peer` is Established.
    pub fn established(&self, peer: &str) -> bool {
        self.try_vtysh(&format!("show bgp neighbors {peer} json"))
            .is_some_and(|t| t.contains("\"bgpState\":\"Established\""))
    }
}

/// The agent's flags that reach FRR of the tests' version (`NETROLLOUT_FRR_VERSION`): its
/// vtysh, `frr-reload.py` and socket directory.
pub fn frr_flags() -> Vec<String> {
    let version = Version::from_env();
    let mut flags = vec![
        "--frr-bindir".to_string(),
        version.bindir().display().to_string(),
        "--frr-reload".to_string(),
        version.reload_script().display().to_string(),
    ];
    if let Some(dir) = version.vty_socket() {
        flags.extend(["--frr-vty-socket".to_string(), dir.display().to_string()]);
    }
    flags
}

pub fn chmod_755(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The node's base config (the operator's file): ASN, router id, the eBGP session to the peer.
pub fn node_base() -> String {
    format!(
        "frr defaults datacenter\nhostname node\n!\nrouter bgp {NODE_ASN}\n bgp router-id {NODE_IP}\n \
         no bgp ebgp-requires-policy\n neighbor {PEER_IP} remote-as {PEER_ASN}\n \
         neighbor {PEER_IP} timers 1 3\n neighbor {PEER_IP} timers connect 1\n !\n \
         address-family l2vpn evpn\n  neighbor {PEER_IP} activate\n exit-address-family\nexit\n!\n"
    )
}

pub fn peer_conf() -> String {
    format!(
        "frr defaults datacenter\nhostname peer\n!\nrouter bgp {PEER_ASN}\n bgp router-id {PEER_IP}\n \
         no bgp ebgp-requires-policy\n no bgp network import-check\n \
         neighbor {NODE_IP} remote-as {NODE_ASN}\n neighbor {NODE_IP} timers 1 3\n \
         neighbor {NODE_IP} timers connect 1\n !\n address-family ipv4 unicast\n  \
         network 198.51.100.0/24\n exit-address-family\n !\n address-family l2vpn evpn\n  \
         neighbor {NODE_IP} activate\n exit-address-family\nexit\n!\n"
    )
}

/// The lab namespace with FRR (the node), a peer namespace with FRR, a veth between them, and
/// the agent flags for FRR.
pub struct World {
    pub lab: Lab,
    pub node: FrrNs,
    pub peer: FrrNs,
    pub peer_ns: String,
    pub base: PathBuf,
    pub conf: PathBuf,
}

impl World {
    pub async fn new(probe_timeout: &str) -> Self {
        let mut lab = lab().await;
        chmod_755(lab.dir.path());
        let peer_ns = format!("{}-p", lab.ns);
        run("ip", &["netns", "add", &peer_ns]);
        lab.ip("link add frn type veth peer name frp");
        lab.ip(&format!("link set frp netns {peer_ns}"));
        lab.ip(&format!("addr add {NODE_IP}/30 dev frn"));
        lab.ip("link set frn up");
        for args in [
            "link set lo up".to_string(),
            format!("addr add {PEER_IP}/30 dev frp"),
            "link set frp up".to_string(),
        ] {
            let mut a = vec!["-n", peer_ns.as_str()];
            a.extend(args.split_whitespace());
            run("ip", &a);
        }
        let dir = lab.dir.path().join("frr-node");
        let node = FrrNs::start(&lab.ns, &dir, &node_base());
        let base = dir.join("base.conf");
        std::fs::write(&base, node_base()).unwrap();
        let peer = FrrNs::start(&peer_ns, &lab.dir.path().join("frr-peer"), &peer_conf());
        node.wait(30, "the session to the peer", |f| f.established(PEER_IP));
        let conf = dir.join("frr.conf");
        lab.extra_args = vec![
            "--frr-base-config".into(),
            base.display().to_string(),
            "--frr-config".into(),
            conf.display().to_string(),
            "--frr-pathspace".into(),
            lab.ns.clone(),
            "--router-id".into(),
            MANAGED_ROUTER_ID.into(),
            "--probe-timeout".into(),
            probe_timeout.into(),
        ];
        lab.extra_args.extend(frr_flags());
        Self {
            lab,
            node,
            peer,
            peer_ns,
            base,
            conf,
        }
    }

    /// `netrollout_agent_frr_writes_total` from the agent's /metrics.
    pub fn frr_writes(&self) -> u64 {
        let text = netrollout_testkit::http::metrics(
            &format!("{}:9101", self.lab.ns_ip),
            Duration::from_secs(10),
        );
        text.lines()
            .find_map(|l| l.strip_prefix("netrollout_agent_frr_writes_total "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no frr_writes_total in:\n{text}"))
    }
}

impl Drop for World {
    fn drop(&mut self) {
        self.lab.kill_agent();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.peer_ns])
            .status();
    }
}
