//! Test harness: a lab API server on the host, a fresh network namespace per test wired to the
//! host by a veth pair, and the real `netrollout-agent` binary running in the namespace.
//! Needs root and iproute2; fails loudly without them. Names start with `agt`/`ag`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use netrollout_agent::convert::{Vtep, to_desired};
use netrollout_api::{Layer2Config, NodeConfig, NodeNetworkConfig, NodeNetworkConfigSpec};
use netrollout_dataplane::{Dataplane, diff};
use netrollout_lab_apiserver::{Config, LabServer};

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// One test's world: lab API server, namespace, veth, state directory, agent process.
pub struct Lab {
    pub server: LabServer,
    pub client: kube::Client,
    pub ns: String,
    pub host_if: String,
    /// The host's address on the veth (the API server is reached there).
    pub host_ip: String,
    /// The namespace's address on the veth (also the VTEP address).
    pub ns_ip: String,
    /// First three octets of the /30 between host and namespace, e.g. `10.211.3`.
    pub net: String,
    pub node: String,
    pub dir: tempfile::TempDir,
    pub agent: Option<Child>,
    pub extra_args: Vec<String>,
}

impl Lab {
    pub async fn new() -> Self {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        let ns = format!("agt-{pid}-{n}");
        let host_if = format!("ag{}h{n}", pid % 100_000);
        let peer = format!("ag{}n{n}", pid % 100_000);
        clean_stale();
        let in_use = run("ip", &["-br", "addr"]);
        let net = (0..50)
            .map(|k| format!("10.{}.{}", 200 + (pid + k) % 50, n))
            .find(|net| !in_use.contains(&format!(" {net}.1/")))
            .expect("a free 10.2xx.n.0/30");
        let (host_ip, ns_ip) = (format!("{net}.1"), format!("{net}.2"));
        run("ip", &["netns", "add", &ns]);
        run(
            "ip",
            &[
                "link", "add", &host_if, "type", "veth", "peer", "name", &peer,
            ],
        );
        run("ip", &["link", "set", &peer, "netns", &ns]);
        run(
            "ip",
            &["addr", "add", &format!("{host_ip}/30"), "dev", &host_if],
        );
        run("ip", &["link", "set", &host_if, "up"]);
        let ipn = |args: &str| {
            let mut a = vec!["-n", &ns];
            a.extend(args.split_whitespace());
            run("ip", &a);
        };
        ipn("link set lo up");
        ipn(&format!("addr add {ns_ip}/30 dev {peer}"));
        ipn(&format!("link set {peer} up"));
        let server = LabServer::start(Config {
            listen: "0.0.0.0:0".parse().unwrap(),
            ..Config::default()
        })
        .await
        .expect("lab API server");
        let client = server.client().unwrap();
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        for crd in netrollout_api::crds::all() {
            crds.create(&PostParams::default(), &crd).await.unwrap();
        }
        let node = format!("node-{n}");
        let nodes: Api<Node> = Api::all(client.clone());
        let obj = Node {
            metadata: ObjectMeta {
                name: Some(node.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        nodes.create(&PostParams::default(), &obj).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let lab = Self {
            server,
            client,
            ns,
            host_if,
            host_ip,
            ns_ip,
            net,
            node,
            dir,
            agent: None,
            extra_args: Vec::new(),
        };
        let kubeconfig = lab
            .server
            .kubeconfig_yaml()
            .replace(&lab.server.url(), &lab.api_url());
        std::fs::write(lab.dir.path().join("kubeconfig"), kubeconfig).unwrap();
        lab
    }

    /// The API server as the namespace reaches it.
    pub fn api_url(&self) -> String {
        format!("http://{}:{}", self.host_ip, self.server.addr().port())
    }

    /// The API server's TCP address as seen from the namespace (a TCP probe target).
    pub fn api_target(&self) -> String {
        format!("{}:{}", self.host_ip, self.server.addr().port())
    }

    pub fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("agent.log")
    }

    pub fn vtep(&self) -> Vtep {
        Vtep {
            local: Some(self.ns_ip.parse().unwrap()),
            underlay: None,
        }
    }

    /// Starts the agent in the namespace (appending to the log file).
    pub fn start_agent(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns])
            .arg(agent_bin())
            .args(["--node-name", &self.node])
            .arg("--state-dir")
            .arg(self.state_dir())
            .arg("--kubeconfig")
            .arg(self.dir.path().join("kubeconfig"))
            .args(["--vtep-ip", &self.ns_ip, "--log-format", "json"])
            .args(["--metrics-addr", &format!("{}:9101", self.ns_ip)])
            .args(&self.extra_args)
            .env("RUST_LOG", "info")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("start netrollout-agent");
        self.agent = Some(child);
    }

    /// `kill -9` of the agent.
    pub fn kill_agent(&mut self) {
        if let Some(mut child) = self.agent.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn nnc_api(&self) -> Api<NodeNetworkConfig> {
        Api::all(self.client.clone())
    }

    /// Creates or replaces the spec of this node's NodeNetworkConfig (a PUT, verb `update`).
    pub async fn set_spec(&self, revision: &str, config: NodeConfig) {
        let api = self.nnc_api();
        let spec = NodeNetworkConfigSpec {
            revision: revision.into(),
            config,
        };
        match api.get_opt(&self.node).await.unwrap() {
            Some(mut obj) => {
                obj.spec = spec;
                api.replace(&self.node, &PostParams::default(), &obj)
                    .await
                    .unwrap();
            }
            None => {
                let obj = NodeNetworkConfig::new(&self.node, spec);
                api.create(&PostParams::default(), &obj).await.unwrap();
            }
        }
    }

    /// Polls the NodeNetworkConfig until `pred` holds on it; panics with the agent log after
    /// `secs`.
    pub async fn wait_nnc(
        &self,
        secs: u64,
        what: &str,
        pred: impl Fn(&NodeNetworkConfig) -> bool,
    ) -> NodeNetworkConfig {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Ok(obj) = self.nnc_api().get(&self.node).await
                && pred(&obj)
            {
                return obj;
            }
            if Instant::now() > deadline {
                let obj = self.nnc_api().get(&self.node).await.ok();
                panic!(
                    "timed out waiting for {what}; NNC status: {:#?}\nagent log:\n{}",
                    obj.and_then(|o| o.status),
                    self.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Waits until the status is about `rev` and finished (Provisioned or Failed).
    pub async fn wait_finished(&self, rev: &str, secs: u64) -> NodeNetworkConfig {
        self.wait_nnc(secs, &format!("{rev} to finish"), |o| {
            o.status.as_ref().is_some_and(|s| {
                s.observed_revision.as_deref() == Some(rev)
                    && matches!(
                        s.phase,
                        Some(
                            netrollout_api::NodePhase::Provisioned
                                | netrollout_api::NodePhase::Failed
                        )
                    )
            })
        })
        .await
    }

    /// The Node's `NetworkConfigReady` condition as (status, reason, message).
    pub async fn node_condition(&self) -> Option<(String, String, String)> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let node = nodes.get(&self.node).await.unwrap();
        node.status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == netrollout_api::NODE_CONDITION)
            .map(|c| {
                (
                    c.status,
                    c.reason.unwrap_or_default(),
                    c.message.unwrap_or_default(),
                )
            })
    }

    /// Whether the namespace's kernel holds exactly `config`'s managed objects (nothing to do).
    pub async fn holds(&self, config: &NodeConfig) -> bool {
        let desired = to_desired(config, &self.vtep()).unwrap();
        let observed = Dataplane::in_netns(&self.ns, netrollout_agent::convert::managed().unwrap())
            .unwrap()
            .observe()
            .await
            .unwrap();
        diff(&desired, &observed).is_empty()
    }

    /// `ip -n NS ARGS` output.
    pub fn ip(&self, args: &str) -> String {
        let mut a = vec!["-n", &self.ns];
        a.extend(args.split_whitespace());
        run("ip", &a)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Waits until the agent log has a line containing `needle`, `count` times in all.
    pub async fn wait_log(&self, needle: &str, count: usize, secs: u64) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while self.log().matches(needle).count() < count {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {needle:?} in the agent log:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.kill_agent();
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
        let _ = Command::new("ip")
            .args(["link", "del", &self.host_if])
            .stderr(Stdio::null())
            .status();
    }
}

/// A config of `count` layer-2 networks with VLAN ids from `first`, each with a gateway in
/// `10.<first_octet>.<i>.1/24`.
pub fn layer2s(first: u16, count: u16) -> NodeConfig {
    NodeConfig {
        layer2s: (first..first + count)
            .map(|id| layer2(id, vec![format!("10.250.{}.1/24", id % 250)]))
            .collect(),
        ..Default::default()
    }
}

pub fn layer2(id: u16, gateways: Vec<String>) -> Layer2Config {
    Layer2Config {
        source: format!("net-{id}"),
        id,
        vni: 20_000 + u32::from(id),
        mtu: 1500,
        bridge_interface: format!("l2.{id}"),
        vxlan_interface: format!("lx.{id}"),
        anycast_gateways: gateways,
        ..Default::default()
    }
}

/// Removes namespaces and host links of earlier test processes that died without cleaning up.
fn clean_stale() {
    let dead = |pid: &str| {
        pid.parse::<u32>()
            .is_ok_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
    };
    for line in run("ip", &["netns", "list"]).lines() {
        let name = line.split_whitespace().next().unwrap_or_default();
        if let Some(pid) = name.strip_prefix("agt-").and_then(|r| r.split('-').next())
            && dead(pid)
        {
            let _ = Command::new("ip").args(["netns", "del", name]).status();
        }
    }
    for line in run("ip", &["-br", "link"]).lines() {
        let name = line.split(['@', ' ']).next().unwrap_or_default();
        if let Some(pid) = name.strip_prefix("ag").and_then(|r| r.split('h').next())
            && name.contains('h')
            && dead(pid)
        {
            let _ = Command::new("ip").args(["link", "del", name]).status();
        }
    }
}

/// The agent binary: Cargo's for tests; next to the examples directory for the benchmark.
pub fn agent_bin() -> PathBuf {
    match option_env!("CARGO_BIN_EXE_netrollout-agent") {
        Some(bin) => PathBuf::from(bin),
        None => {
            let exe = std::env::current_exe().unwrap();
            exe.parent()
                .unwrap()
                .parent()
                .unwrap()
                .join("netrollout-agent")
        }
    }
}

pub fn run(tool: &str, args: &[&str]) -> String {
    let out = Command::new(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {tool} (iproute2 is needed): {e}"));
    assert!(
        out.status.success(),
        "`{tool} {}` failed (agent tests need root): {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
