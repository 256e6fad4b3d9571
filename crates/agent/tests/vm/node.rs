//! One node of the VM suite: the agent lab, FRR in its namespace, the files the agent's flags
//! name; starting FRR and the agent, reading FRR's state, the failure dump.

use std::path::{Path, PathBuf};
use std::time::Duration;

use netrollout_agent::frr::{Frr, FrrSettings};
use netrollout_api::{NodeConfig, NodeNetworkConfigStatus, NodePhase};
use netrollout_frr::daemons::{Daemons, Log, Start, Version};
use netrollout_testkit::agent::Lab;
use netrollout_testkit::cmd::run;
use serde_json::Value;

use super::{HOSTNAME, say};
use crate::config::find_key;
use crate::lab_ext::AgentLab as _;

/// One node: the agent lab, FRR in its namespace, the files the agent's flags name.
pub struct Node {
    /// zebra + bgpd + bfdd once started; declared before `lab`, so FRR stops before the namespace goes.
    pub daemons: Option<Daemons>,
    pub lab: Lab,
    pub asn: u32,
    /// The base file's default-VRF router id (the managed instances use the VTEP address).
    pub router_id: String,
    pub dir: PathBuf,
    pub base: PathBuf,
    pub conf: PathBuf,
}

impl Node {
    pub async fn new(wrapper: &Path, asn: u32, router_id: &str) -> Self {
        let lab = Lab::new(wrapper.to_path_buf()).await;
        lab.ip("link set lo up");
        // A node routes (FRR shows `no ip forwarding` otherwise, a difference to the base file).
        run(
            "ip",
            &[
                "netns",
                "exec",
                &lab.ns,
                "sh",
                "-c",
                "echo 1 >/proc/sys/net/ipv4/ip_forward && \
                 echo 1 >/proc/sys/net/ipv6/conf/all/forwarding",
            ],
        );
        let dir = lab.dir.path().join("frr");
        let ps = lab.ns.clone();
        // No PAM in the VM: vtysh lets root in without asking it (FRR reads vtysh.conf from the
        // pathspace directory under the config directory the agent passes, and under /etc/frr).
        for d in [dir.join(&ps), Path::new("/etc/frr").join(&ps)] {
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("vtysh.conf"), "username root nopassword\n").unwrap();
        }
        Self {
            daemons: None,
            base: dir.join("base.conf"),
            conf: dir.join("frr.conf"),
            dir,
            lab,
            asn,
            router_id: router_id.into(),
        }
    }

    pub fn ps(&self) -> &str {
        &self.lab.ns
    }

    /// The operator's base file: eBGP EVPN to the other node's VTEP address, two hops away
    /// (through the VM's root namespace).
    ///
    /// `bgp disable-ebgp-connected-route-check`: when both sides connect at once, FRR 8.4
    /// registers the accepted connection's peer with next-hop tracking as a single-hop eBGP
    /// peer (TTL 1) and marks the peer's address "Must be Connected" for every path through it
    /// (FRRouting/frr#12025). The VTEP address is the EVPN routes' next hop and is not on a
    /// connected network, so a run that hit the collision never made node 1's routes valid on
    /// node 2 ("node 2's VRF table has 10.50.1.0/24" timed out). With the check off no peer
    /// marks it, and the multihop session's routes resolve as they should.
    pub fn write_base(&self, peer: &Node) {
        let base = format!(
            "frr defaults datacenter\nhostname {HOSTNAME}\n!\nbgp route-map delay-timer 1\n!\n\
             router bgp {asn}\n bgp router-id {rid}\n no bgp ebgp-requires-policy\n \
             no bgp default ipv4-unicast\n bgp disable-ebgp-connected-route-check\n neighbor {pip} remote-as {pasn}\n \
             neighbor {pip} ebgp-multihop 3\n neighbor {pip} update-source {ip}\n \
             neighbor {pip} timers 3 9\n neighbor {pip} timers connect 1\n !\n \
             address-family l2vpn evpn\n  neighbor {pip} activate\n exit-address-family\nexit\n!\n",
            asn = self.asn,
            rid = self.router_id,
            pip = peer.lab.ns_ip,
            pasn = peer.asn,
            ip = self.lab.ns_ip,
        );
        std::fs::write(&self.base, &base).unwrap();
        std::fs::write(&self.conf, &base).unwrap();
    }

    /// zebra + bgpd in the namespace, as root (the VM has no `frr` user), reading the base
    /// file; bgpd starts once zebra shows the underlay address, and both answer within 60 s.
    pub fn start_frr(&mut self) {
        let daemons = Start {
            config: Some(&self.conf),
            user: "root",
            log: Log::Files(self.dir.clone()),
            underlay: Some(&self.lab.ns_ip),
            timeout: Duration::from_secs(60),
            // As the lab's nodes: the agent's capability detection must leave it running.
            bfdd: true,
            ..Start::from_env(&self.lab.ns, &self.lab.ns)
        }
        .start();
        say(&format!("{} FRR answers", self.ps()));
        self.daemons = Some(daemons);
    }

    pub fn daemons(&self) -> &Daemons {
        self.daemons.as_ref().expect("FRR is started")
    }

    pub fn try_vtysh(&self, cmd: &str) -> Option<String> {
        self.daemons().try_vtysh(cmd)
    }

    pub fn vtysh(&self, cmd: &str) -> String {
        self.daemons().vtysh(cmd)
    }

    pub fn running(&self) -> String {
        self.vtysh("show running-config")
    }

    pub fn established(&self, peer: &Node) -> bool {
        self.try_vtysh(&format!("show bgp neighbors {} json", peer.lab.ns_ip))
            .is_some_and(|t| t.contains("\"bgpState\":\"Established\""))
    }

    /// The agent's FRR flags; the managed router id is the VTEP address (`--vtep-ip`, which
    /// differs from the base file's router id).
    pub fn agent_args(&mut self) {
        self.lab.extra_args = [
            "--frr-base-config",
            self.base.to_str().unwrap(),
            "--frr-config",
            self.conf.to_str().unwrap(),
            "--frr-pathspace",
            &self.lab.ns,
            "--probe-timeout",
            "60s",
        ]
        .map(String::from)
        .to_vec();
        // FRR of the run's version (`NETROLLOUT_FRR_VERSION`): its vtysh, frr-reload.py, sockets.
        let version = Version::from_env();
        self.lab.extra_args.extend([
            "--frr-bindir".to_string(),
            version.bindir().display().to_string(),
            "--frr-reload".to_string(),
            version.reload_script().display().to_string(),
        ]);
        if let Some(dir) = version.vty_socket() {
            self.lab
                .extra_args
                .extend(["--frr-vty-socket".to_string(), dir.display().to_string()]);
        }
    }

    /// Sets the spec and waits for the agent to finish with it.
    pub async fn apply(&self, rev: &str, config: NodeConfig) -> NodeNetworkConfigStatus {
        self.lab.set_spec(rev, config).await;
        let status = self.lab.wait_finished(rev, 240).await.status.unwrap();
        eprintln!(
            "agent-frr-vm: {} {rev}: {:?} {:?} {}",
            self.ps(),
            status.phase,
            status.reason,
            status.message.as_deref().unwrap_or("")
        );
        status
    }

    pub async fn apply_ok(&self, rev: &str, config: NodeConfig) {
        let status = self.apply(rev, config.clone()).await;
        assert_eq!(
            status.phase,
            Some(NodePhase::Provisioned),
            "{} {rev}: {status:?}\nagent log:\n{}",
            self.ps(),
            self.lab.log()
        );
        assert!(self.lab.holds(&config).await, "{rev}: kernel");
    }

    /// `netrollout_agent_frr_writes_total` from the agent's /metrics.
    pub fn frr_writes(&self) -> u64 {
        self.counter("netrollout_agent_frr_writes_total")
    }

    /// `netrollout_agent_frr_vty_fallbacks_total`: reads of FRR done with vtysh because the
    /// daemons' vty sockets could not be used.
    pub fn frr_vty_fallbacks(&self) -> u64 {
        self.counter("netrollout_agent_frr_vty_fallbacks_total")
    }

    /// `netrollout_agent_frr_router_mac_repairs_total`: layer-3 VNIs the agent registered
    /// again because FRR 8.x's zebra lost their routes' router MACs.
    pub fn rmac_repairs(&self) -> u64 {
        self.counter("netrollout_agent_frr_router_mac_repairs_total")
    }

    /// A counter from the agent's /metrics.
    fn counter(&self, name: &str) -> u64 {
        let text = netrollout_testkit::http::metrics(
            &format!("{}:9101", self.lab.ns_ip),
            Duration::from_secs(20),
        );
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
    }

    /// The agent library's view of this FRR, for the routing probes.
    pub fn frr(&self) -> Frr {
        Frr::new(FrrSettings {
            base_config: self.base.clone(),
            config: self.conf.clone(),
            pathspace: Some(self.lab.ns.clone()),
            vty_socket: Version::from_env().vty_socket(),
            asn: None,
            router_id: None,
            vtep_ip: Some(self.lab.ns_ip.parse().unwrap()),
            reload_script: Version::from_env().reload_script(),
            bindir: Version::from_env().bindir(),
            rundir: self.dir.clone(),
        })
        .unwrap()
    }

    /// `show bgp l2vpn evpn route detail type prefix json` (detail: with the communities): the
    /// type-5 route for `prefix` (`10.50.1.0/24`), as JSON text, when there is one.
    pub fn type5(&self, prefix: &str) -> Option<String> {
        let (addr, len) = prefix.split_once('/').unwrap();
        let key = format!("[{len}]:[{addr}]");
        let json: Value =
            serde_json::from_str(&self.vtysh("show bgp l2vpn evpn route detail type prefix json"))
                .unwrap_or_default();
        find_key(&json, &|k| k.starts_with("[5]:") && k.ends_with(&key)).map(|v| v.to_string())
    }

    /// The MAC address of `link` in this node's namespace (`ip -br link show LINK`).
    pub fn mac(&self, link: &str) -> String {
        let line = self.lab.ip(&format!("-br link show {link}"));
        line.split_whitespace()
            .nth(2)
            .unwrap_or_else(|| panic!("no MAC in {line:?}"))
            .to_string()
    }

    /// zebra's view of VNI `vni` (`show evpn vni VNI json`).
    pub fn evpn_vni(&self, vni: u32) -> Value {
        serde_json::from_str(&self.vtysh(&format!("show evpn vni {vni} json"))).unwrap_or_default()
    }

    /// zebra's layer-3 VNI of `vrf` (`show vrf vni json`: VNI, state, router MAC).
    pub fn vrf_vni(&self, vrf: &str) -> Option<Value> {
        let json: Value =
            serde_json::from_str(&self.vtysh("show vrf vni json")).unwrap_or_default();
        json["vrfs"]
            .as_array()?
            .iter()
            .find(|v| v["vrf"] == vrf)
            .cloned()
    }

    /// One ICMP echo from this node's VRF `vrf` (the socket bound to its device: the source is
    /// its loopback) to `addr`; whether it was answered.
    pub fn ping(&self, vrf: &str, addr: &str) -> bool {
        std::process::Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.lab.ns,
                "ping",
                "-c",
                "1",
                "-W",
                "2",
                "-I",
                vrf,
                addr,
            ])
            .output()
            .is_ok_and(|o| o.status.success())
    }

    pub fn routes(&self, table: &str) -> String {
        self.lab.ip(&format!("route show {table}"))
    }

    pub fn debug(&self) -> String {
        let mut out = self.daemons.as_ref().map_or_else(String::new, |d| {
            d.dump(&[
                "show bgp vrf vr.t1 ipv4 unicast",
                "show bgp vrf vr.t1 ipv4 unicast 10.50.1.0/24",
                "show vrf vni",
                "show evpn vni",
                "show bgp l2vpn evpn route type prefix",
                "show bgp vrf vr.t2 ipv4 unicast",
            ])
        });
        // What forwarding in a tenant VRF needs beside the routes: the remote router MACs as
        // neighbours of the VRFs' bridges and the remote VTEPs in the VXLAN devices' tables.
        for (program, what) in [("ip", "neigh"), ("bridge", "fdb")] {
            let text = std::process::Command::new(program)
                .args(["-n", &self.lab.ns, what, "show"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_else(|e| format!("running it: {e}"));
            out.push_str(&format!(
                "--- {} {program} {what} show\n{text}\n",
                self.ps()
            ));
        }
        let conf = std::fs::read_to_string(&self.conf).unwrap_or_default();
        out.push_str(&format!("--- {}\n{conf}\n", self.conf.display()));
        out.push_str(&format!("--- agent log\n{}\n", self.lab.log()));
        out
    }
}
