//! Command-line flags (with the environment variables Kubernetes manifests set).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
pub use netrollout_support::{LogFormat, parse_duration};

use crate::agent::{Deadlines, Settings};
use crate::convert::Vtep;
use crate::frr::FrrSettings;
use crate::probe::ProbeConfig;
use crate::run::Config;

/// The netrollout node agent: applies this node's NodeNetworkConfig via netlink, probes,
/// commits or restores the last-known-good config, and reports the outcome.
#[derive(Clone, Debug, Parser)]
#[command(name = "netrollout-agent", version)]
pub struct Args {
    /// This node's name; the agent watches the NodeNetworkConfig of that name only.
    #[arg(long, env = "NODE_NAME")]
    pub node_name: String,
    /// Directory for the last-known-good config, the journal and failed revisions (a hostPath).
    #[arg(
        long,
        env = "NETROLLOUT_STATE_DIR",
        default_value = "/var/lib/netrollout"
    )]
    pub state_dir: PathBuf,
    /// Kubeconfig file; in-cluster config (or $KUBECONFIG) when absent.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Local VTEP address of VXLAN devices; in a DaemonSet, set VTEP_IP from `status.hostIP`.
    #[arg(long, env = "VTEP_IP")]
    pub vtep_ip: Option<IpAddr>,
    /// Underlay device of VXLAN devices (e.g. the uplink); none binds them to no device.
    #[arg(long, env = "UNDERLAY_INTERFACE")]
    pub underlay_interface: Option<String>,
    /// TCP probe target `host:port`; repeat or separate by commas.
    #[arg(long, value_delimiter = ',')]
    pub probe_tcp: Vec<String>,
    /// ICMP probe target address; repeat or separate by commas.
    #[arg(long, value_delimiter = ',')]
    pub probe_icmp: Vec<IpAddr>,
    /// Ping the IPv4 default gateway as a probe.
    #[arg(long)]
    pub probe_gateway: bool,
    /// Make an uncached request to the API server as a probe (`--probe-api-server=false` to skip).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub probe_api_server: bool,
    /// Health-check file (the Go operator's net-healthcheck-config.yaml format: interface name
    /// patterns, TCP/ICMP reachability optionally bound to a VRF device, taints); its checks
    /// join the probes. See docs/agent.md.
    #[arg(long, env = "HEALTHCHECK_CONFIG")]
    pub healthcheck_config: Option<std::path::PathBuf>,
    /// Taint keys to remove from this Node once its config is Provisioned and every check
    /// passes (added to the file's `taints`); repeat or separate by commas.
    #[arg(long, value_delimiter = ',')]
    pub remove_taints: Vec<String>,
    /// Time limit of each single probe, e.g. `2s`, `500ms`.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub probe_each_timeout: Duration,
    /// How long probes may keep failing after a change before the agent restores.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub probe_timeout: Duration,
    /// Pause between probe rounds after a change.
    #[arg(long, default_value = "200ms", value_parser = parse_duration)]
    pub probe_interval: Duration,
    /// After probes pass, keep probing this long before committing the change; a failure in
    /// that time restores last-known-good (catches breaks that show only after a moment, such
    /// as a routing protocol withdrawing a route). `0s` commits at the first pass.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub probe_hold: Duration,
    /// A step of an apply (a netlink apply, an FRR reload, a state-file write, a probe round)
    /// without an answer after this is reported: a log line naming what the agent waits for
    /// and since when, the status reason `WaitingForKernel`/`WaitingForFrr`/..., the metrics
    /// `netrollout_agent_step_in_flight_seconds` and `netrollout_agent_part_busy_seconds`.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub step_slow: Duration,
    /// Deadline of a netlink apply or restore: past it the step is an error (an apply fails
    /// with ApplyFailed and last-known-good is restored once the kernel answers; a restore
    /// ends with RestoreFailed and is tried again). A kernel removing a namespace with
    /// thousands of links holds its netlink lock for seconds to minutes.
    #[arg(long, default_value = "2m", value_parser = parse_duration)]
    pub kernel_deadline: Duration,
    /// Deadline of an FRR step (the daemons answering, the apply or restore, the routing
    /// checks of a probe round), as --kernel-deadline.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub frr_deadline: Duration,
    /// Deadline of a state-file read or write (fsyncs included): past it the agent stops
    /// with StateUnavailable and tries again every 5 s, once the disk finished the step.
    #[arg(long, default_value = "1m", value_parser = parse_duration)]
    pub disk_deadline: Duration,
    /// Deadline of each API request (a status, condition, Event, capabilities or health
    /// write, a read for the startup taints): past it the write failed and is tried again. The
    /// transaction never waits for the API server; a slow request is logged and counted
    /// (`netrollout_agent_slow_steps_total{part="api"}`) past --step-slow.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub api_deadline: Duration,
    /// Continuous health: once its config is committed (and at start, once recovered), the
    /// agent runs the checks of --healthcheck-config this often between applies and reports
    /// transitions only, as the `TenantReachable` condition of its NodeNetworkConfig (the
    /// configurator's fleet guard reads it). `0s` turns it off; without a health-check file
    /// there is nothing to watch.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub watch_interval: Duration,
    /// Each watch of the node's NodeNetworkConfig asks the API server to end it after this
    /// (`timeoutSeconds`; the watch then resumes from where it was, without a re-list), and a
    /// watch that carries nothing for this plus 5 s is taken for dead and opened again. So a
    /// connection the network silently dropped is noticed within that time, not after TCP
    /// gives up (minutes). Whole seconds, at least 1 s.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub api_watch_timeout: Duration,
    /// Address of `/metrics`, `/healthz` and `/readyz`.
    #[arg(long, default_value = "0.0.0.0:9101")]
    pub metrics_addr: SocketAddr,
    /// Address of a separate listener for `/healthz` and `/readyz` only (e.g. for kubelet
    /// probes on another port). They are always served on `--metrics-addr` too.
    #[arg(long)]
    pub health_addr: Option<SocketAddr>,
    /// Log format.
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// The node operator's FRR base config (underlay sessions, ASN, router id). Turns FRR
    /// support on: the agent writes this file plus its managed sections to --frr-config and
    /// applies it with frr-reload.py. Without it the agent does not touch FRR.
    #[arg(long, env = "NETROLLOUT_FRR_BASE_CONFIG")]
    pub frr_base_config: Option<PathBuf>,
    /// The frr.conf FRR reads; the agent owns it (base + managed sections).
    #[arg(
        long,
        env = "NETROLLOUT_FRR_CONFIG",
        default_value = "/etc/frr/frr.conf"
    )]
    pub frr_config: PathBuf,
    /// FRR pathspace (FRR started with `-N NAME`; vtysh -N NAME), for labs and tests.
    #[arg(long, env = "NETROLLOUT_FRR_PATHSPACE")]
    pub frr_pathspace: Option<String>,
    /// vtysh's socket directory when not FRR's default (/var/run/frr).
    #[arg(long, env = "NETROLLOUT_FRR_VTY_SOCKET")]
    pub frr_vty_socket: Option<PathBuf>,
    /// FRR's frr-reload.py.
    #[arg(long, default_value = "/usr/lib/frr/frr-reload.py")]
    pub frr_reload: PathBuf,
    /// Directory holding vtysh.
    #[arg(long, default_value = "/usr/bin")]
    pub frr_bindir: PathBuf,
    /// BGP ASN of the managed sections; default: the `router bgp <asn>` of the base config.
    #[arg(long, env = "NETROLLOUT_ASN")]
    pub asn: Option<u32>,
    /// BGP router id of the managed `router bgp` instances (VRFs, routing tables). It must differ
    /// from the `bgp router-id` of the base config's default instance (each VRF peers with the
    /// default VRF over iBGP); default: --vtep-ip when it is IPv4 and differs. See docs/frr.md.
    #[arg(long, env = "NETROLLOUT_ROUTER_ID")]
    pub router_id: Option<std::net::Ipv4Addr>,
}

impl Args {
    /// The run configuration these flags describe.
    pub fn config(&self) -> Config {
        Config {
            settings: Settings {
                node: self.node_name.clone(),
                vtep: Vtep {
                    local: self.vtep_ip,
                    underlay: self.underlay_interface.clone(),
                },
                probe_timeout: self.probe_timeout,
                probe_interval: self.probe_interval,
                probe_hold: self.probe_hold,
                deadlines: Deadlines {
                    slow: self.step_slow,
                    kernel: self.kernel_deadline,
                    frr: self.frr_deadline,
                    disk: self.disk_deadline,
                    api: self.api_deadline,
                    // The checks run at once, each within --probe-each-timeout; the routing
                    // checks read FRR.
                    probes: self.probe_each_timeout
                        + if self.frr_base_config.is_some() {
                            self.frr_deadline
                        } else {
                            Duration::from_secs(30)
                        },
                },
            },
            probes: ProbeConfig {
                tcp: self.probe_tcp.clone(),
                icmp: self.probe_icmp.clone(),
                gateway: self.probe_gateway,
                api_server: self.probe_api_server,
                each_timeout: self.probe_each_timeout,
                healthcheck: None,
            },
            state_dir: self.state_dir.clone(),
            frr: self.frr_base_config.as_ref().map(|base| FrrSettings {
                base_config: base.clone(),
                config: self.frr_config.clone(),
                pathspace: self.frr_pathspace.clone(),
                vty_socket: self.frr_vty_socket.clone(),
                asn: self.asn,
                router_id: self.router_id,
                vtep_ip: self.vtep_ip,
                reload_script: self.frr_reload.clone(),
                bindir: self.frr_bindir.clone(),
                rundir: self.state_dir.clone(),
            }),
            remove_taints: self.remove_taints.clone(),
            watch_interval: self.watch_interval,
            api_watch_timeout: self.api_watch_timeout,
        }
    }
}

impl Args {
    /// [`Args::config`] with the health-check file loaded: its checks join the probes, its
    /// taints the taints to remove.
    pub fn config_with_healthcheck(&self) -> Result<Config, crate::healthcheck::HealthCheckError> {
        let mut cfg = self.config();
        if let Some(path) = &self.healthcheck_config {
            let hc = crate::healthcheck::HealthCheck::load(path)?;
            cfg.remove_taints.extend(hc.taints.iter().cloned());
            cfg.probes.healthcheck = Some(std::sync::Arc::new(hc));
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_flags_take_the_shared_grammar() {
        let base = [
            "netrollout-agent",
            "--node-name",
            "n1",
            "--vtep-ip",
            "192.0.2.1",
        ];
        let with = |flag: &str, value: &str| {
            Args::try_parse_from(base.iter().copied().chain([flag, value]))
        };
        let args = with("--probe-timeout", "1m30s").unwrap();
        assert_eq!(
            args.config().settings.probe_timeout,
            Duration::from_secs(90)
        );
        let args = with("--probe-interval", "1.5s").unwrap();
        assert_eq!(
            args.config().settings.probe_interval,
            Duration::from_millis(1500)
        );
        let err = with("--probe-timeout", "3").unwrap_err().to_string();
        assert!(
            err.contains("unit is missing") && err.contains("e.g. 90s"),
            "{err}"
        );
        assert!(with("--probe-hold", "soon").is_err());
    }

    #[test]
    fn flags_become_settings_with_documented_defaults() {
        let args = Args::parse_from([
            "netrollout-agent",
            "--node-name",
            "n1",
            "--vtep-ip",
            "192.0.2.1",
            "--probe-tcp",
            "10.0.0.1:443,10.0.0.2:80",
        ]);
        let cfg = args.config();
        assert_eq!(cfg.settings.node, "n1");
        assert_eq!(cfg.probes.tcp.len(), 2);
        assert!(cfg.probes.api_server);
        assert_eq!(cfg.settings.probe_timeout, Duration::from_secs(30));
        assert_eq!(cfg.state_dir, PathBuf::from("/var/lib/netrollout"));
        assert_eq!(cfg.frr, None, "FRR support is off without a base config");
        let args = Args::parse_from([
            "netrollout-agent",
            "--node-name",
            "n1",
            "--frr-base-config",
            "/etc/frr/base.conf",
            "--frr-pathspace",
            "lab1",
        ]);
        let frr = args.config().frr.expect("FRR support on");
        assert_eq!(frr.config, PathBuf::from("/etc/frr/frr.conf"));
        assert_eq!(frr.pathspace.as_deref(), Some("lab1"));
        assert_eq!(frr.asn, None);
        assert_eq!(frr.vtep_ip, None);
        let args = Args::parse_from([
            "netrollout-agent",
            "--node-name",
            "n1",
            "--vtep-ip",
            "192.0.2.1",
            "--frr-base-config",
            "/etc/frr/base.conf",
            "--router-id",
            "192.0.2.9",
        ]);
        let frr = args.config().frr.expect("FRR support on");
        assert_eq!(frr.vtep_ip, Some("192.0.2.1".parse().unwrap()));
        assert_eq!(frr.router_id, Some("192.0.2.9".parse().unwrap()));
    }
}
