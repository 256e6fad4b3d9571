//! The agent's lab: a lab API server on the host, a fresh network namespace per test wired to
//! the host by a veth pair, and the real `netrollout-agent` binary running in the namespace.
//! Needs root and iproute2; fails loudly without them. Names start with `agt`/`ag`.
//!
//! It drives the agent from outside only (its binary, flags, state directory, the API objects
//! it reads and writes): what the agent's library makes of a config (the kernel objects it would
//! hold, its journal's file name) is the agent's own tests' knowledge (its `tests/common`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::PostParams;
use netrollout_api::{
    NodeConfig, NodeNetworkConfig, NodeNetworkConfigSpec, NodeNetworkConfigStatus,
};
use netrollout_lab_apiserver::Config;

use crate::apiserver::{LabApi, install_crds};
use crate::cmd::run;
use crate::netns::{Netns, clean_stale, next_id};
use crate::objects::add_node;
pub use crate::objects::{layer2, layer2s};

/// One test's world: the kit's harness ([`LabApi`]: lab API server, client, directory; its
/// fields and builders through `Deref`), namespace, veth, state directory, agent process.
pub struct Lab {
    /// The lab API server, listening where the namespace reaches it.
    pub api: LabApi,
    /// The namespace the agent runs in (deleted on drop, after the agent is killed).
    pub netns: Netns,
    pub ns: String,
    pub host_if: String,
    /// The host's address on the veth (the API server is reached there).
    pub host_ip: String,
    /// The namespace's address on the veth (also the VTEP address).
    pub ns_ip: String,
    /// First three octets of the /30 between host and namespace, e.g. `10.211.3`.
    pub net: String,
    pub node: String,
    pub agent: Option<Child>,
    pub extra_args: Vec<String>,
    /// The agent binary [`Lab::start_agent`] runs.
    pub agent_bin: PathBuf,
}

impl std::fmt::Debug for Lab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lab")
            .field("server", &self.api.server)
            .field("ns", &self.ns)
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

impl std::ops::Deref for Lab {
    type Target = LabApi;
    fn deref(&self) -> &LabApi {
        &self.api
    }
}

impl Lab {
    /// A lab for the agent binary `agent_bin` (a test passes
    /// `env!("CARGO_BIN_EXE_netrollout-agent")`, a benchmark [`agent_bin_next_to_exe`]).
    pub async fn new(agent_bin: PathBuf) -> Self {
        let n = next_id();
        let pid = std::process::id();
        let ns = format!("agt-{pid}-{n}");
        let host_if = format!("ag{}h{n}", pid % 100_000);
        let peer = format!("ag{}n{n}", pid % 100_000);
        clean_stale("agt", "ag");
        let in_use = run("ip", &["-br", "addr"]);
        let net = (0..50)
            .map(|k| format!("10.{}.{}", 200 + (pid + k) % 50, n))
            .find(|net| !in_use.contains(&format!(" {net}.1/")))
            .expect("a free 10.2xx.n.0/30");
        let (host_ip, ns_ip) = (format!("{net}.1"), format!("{net}.2"));
        let netns = Netns::named(ns.clone());
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
        netns.ip(&format!("addr add {ns_ip}/30 dev {peer}"));
        netns.ip(&format!("link set {peer} up"));
        let api = LabApi::start_with(Config {
            listen: "0.0.0.0:0".parse().unwrap(),
            ..Config::default()
        })
        .await;
        install_crds(&api.client).await;
        let node = format!("node-{n}");
        add_node(&api.client, &node, &[], None).await;
        let lab = Self {
            api,
            netns,
            ns,
            host_if,
            host_ip,
            ns_ip,
            net,
            node,
            agent: None,
            extra_args: Vec::new(),
            agent_bin,
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

    /// Starts the agent in the namespace (appending to the log file).
    pub fn start_agent(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns])
            .arg(&self.agent_bin)
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

    /// `GET path` from the host to the agent's listener on `port` (9101: its `--metrics-addr`):
    /// the status code and the body.
    pub async fn http_get(&self, port: u16, path: &str) -> (u16, String) {
        crate::http::get((self.ns_ip.as_str(), port), path).await
    }

    /// Waits until `path` exists, checking every 5 ms (so a kill that follows lands right
    /// after the agent wrote it, whatever the machine's speed); `what` names it in the panic
    /// (with the agent log) after `timeout`.
    pub async fn wait_file(&self, path: &Path, what: &str, timeout: Duration) {
        let every = Duration::from_millis(5);
        self.poll(timeout, every, what, || path.exists()).await;
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

    /// The status of this node's NodeNetworkConfig as the API server holds it now.
    pub async fn status(&self) -> NodeNetworkConfigStatus {
        let nnc = self.nnc_api().get(&self.node).await.unwrap();
        nnc.status.expect("the agent wrote a status")
    }

    /// Creates or replaces the spec of this node's NodeNetworkConfig (a PUT, verb `update`), as
    /// the configurator does: the agent may write the status between the read and the write
    /// (a 409 Conflict on the resource version), so a conflict reads again and retries.
    pub async fn set_spec(&self, revision: &str, config: NodeConfig) {
        let api = self.nnc_api();
        let spec = NodeNetworkConfigSpec {
            revision: revision.into(),
            config,
        };
        for _ in 0..20 {
            let written = match api.get_opt(&self.node).await.unwrap() {
                Some(mut obj) => {
                    obj.spec = spec.clone();
                    api.replace(&self.node, &PostParams::default(), &obj)
                        .await
                        .map(drop)
                }
                None => {
                    let obj = NodeNetworkConfig::new(&self.node, spec.clone());
                    api.create(&PostParams::default(), &obj).await.map(drop)
                }
            };
            match written {
                Ok(()) => return,
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => panic!("setting the spec of {} to {revision}: {e}", self.node),
            }
        }
        panic!(
            "setting the spec of {} to {revision}: 20 conflicts in a row",
            self.node
        );
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

    /// `ip -n NS ARGS` output.
    pub fn ip(&self, args: &str) -> String {
        self.netns.ip(args)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Waits until the agent log has a line containing `needle`, `count` times in all.
    pub async fn wait_log(&self, needle: &str, count: usize, secs: u64) {
        let within = Duration::from_secs(secs);
        let what = format!("{needle:?} in the agent log");
        self.poll(within, Duration::from_millis(50), &what, || {
            self.log().matches(needle).count() >= count
        })
        .await;
    }

    /// Waits until one whole line of the agent log contains every one of `needles` (a step
    /// and its revision, say). Only lines ending in a newline count: the agent may be in the
    /// middle of writing the last one, and a reader can see its first half (`"step":"failed"`)
    /// without the rest (`"revision":"rev-2"`).
    pub async fn wait_log_line(&self, needles: &[&str], secs: u64) {
        let within = Duration::from_secs(secs);
        let what = format!("a line with {needles:?} in the agent log");
        self.poll(within, Duration::from_millis(50), &what, || {
            has_whole_line(&self.log(), needles)
        })
        .await;
    }

    /// Checks `done` every `every` until it holds; panics with the agent log after `within`.
    async fn poll(&self, within: Duration, every: Duration, what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + within;
        while !done() {
            assert!(
                Instant::now() < deadline,
                "timed out after {within:?} waiting for {what}; agent log:\n{}",
                self.log()
            );
            tokio::time::sleep(every).await;
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // The agent goes first; the namespace itself is deleted when `netns` drops.
        self.kill_agent();
        let _ = Command::new("ip")
            .args(["link", "del", &self.host_if])
            .stderr(Stdio::null())
            .status();
    }
}

/// Whether a whole line of `log` (one ending in a newline) contains every one of `needles`.
pub fn has_whole_line(log: &str, needles: &[&str]) -> bool {
    let whole = &log[..log.rfind('\n').map_or(0, |i| i + 1)];
    whole.lines().any(|l| needles.iter().all(|n| l.contains(n)))
}

/// The agent binary next to the running executable's directory (`target/<profile>/`), for a
/// benchmark (`target/<profile>/examples/agent-bench`), which Cargo gives no binary path.
pub fn agent_bin_next_to_exe() -> PathBuf {
    let exe = std::env::current_exe().expect("the running executable's path");
    exe.parent()
        .and_then(|p| p.parent())
        .expect("the executable lies in target/<profile>/<dir>/")
        .join("netrollout-agent")
}

#[cfg(test)]
mod tests {
    use super::has_whole_line;

    const LINE: &str = r#"{"level":"WARN","step":"failed","revision":"rev-2"}"#;

    #[test]
    fn a_line_the_agent_is_still_writing_does_not_count_until_it_ends() {
        let needles = ["\"step\":\"failed\"", "\"revision\":\"rev-2\""];
        let cut = LINE.find("\"revision").unwrap();
        assert!(!has_whole_line(
            &format!("start\n{}", &LINE[..cut]),
            &needles
        ));
        // Even once every needle is there, the line counts only when it ends.
        assert!(!has_whole_line(&format!("start\n{LINE}"), &needles));
        assert!(has_whole_line(&format!("start\n{LINE}\n"), &needles));
        assert!(!has_whole_line(
            &format!("{LINE}\n"),
            &["\"revision\":\"rev-1\""]
        ));
    }
}
