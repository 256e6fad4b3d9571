//! Container mode (`--containers`): each node's agent and each configurator replica as its
//! image under podman, placed from the bundle's pod templates ([`crate::pods`]), and the node
//! preparation docs/operations.md asks of an operator ("FRR on the node").

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use netrollout_frr::daemons::Version;
use netrollout_lab_apiserver::Identity;
use tokio::process::Child;

use super::{Cluster, NAMESPACE};
use crate::pods::kubelet::{Pod, Status};
use crate::pods::spec::{Overlay, Placement};
use crate::{fabric, pods};

/// A process the lab runs: a plain process, or a pod's container under podman.
#[derive(Debug)]
pub enum Proc {
    /// A child process.
    Process(Child),
    /// A container run by the lab's kubelet.
    Pod(Pod),
}

impl Proc {
    /// Ends it at once (SIGKILL); returns the pod's last status.
    pub async fn kill(self) -> Option<Status> {
        match self {
            Proc::Process(mut c) => {
                let _ = c.kill().await;
                None
            }
            Proc::Pod(p) => Some(p.kill().await),
        }
    }
}

/// The ids of the groups `frr` and `frrvty`, in that order, from `group(5)` lines.
fn frr_gids(text: &str) -> Vec<i64> {
    ["frr", "frrvty"]
        .iter()
        .filter_map(|name| {
            let line = text.lines().find(|l| l.split(':').next() == Some(name))?;
            line.split(':').nth(2)?.parse().ok()
        })
        .collect()
}

#[cfg(test)]
#[test]
fn the_frr_groups_are_read_by_name_in_frr_frrvty_order() {
    // FRR 10.3's root file system lists frrvty after frr; this machine's before it.
    let root = "root:x:0:\nfrr:x:996:\nfrrvty:x:995:frr\n";
    let host = "frrvty:x:105:frr\nfrr:x:106:\n";
    assert_eq!(frr_gids(root), vec![996, 995]);
    assert_eq!(frr_gids(host), vec![106, 105]);
    assert_eq!(frr_gids("frrvtyx:x:1:\n"), Vec::<i64>::new());
}

/// First fabric number of the configurator replicas' own namespaces (`nrlab-configurator-N`,
/// address 10.77.0.(10 + number)): their pod network.
const CONFIGURATOR_INDEX: usize = 190;

/// The groups FRR's files and vty sockets belong to on the node (`frr`, `frrvty`), which
/// docs/operations.md has an operator give the agent's pod as `supplementalGroups`: this
/// machine's for FRR 8.4, the root file system's own for FRR 10.3 (its daemons run as its
/// `frr` user, whose ids differ from this machine's).
pub fn frr_groups(version: Version) -> Result<Vec<i64>> {
    let text = match version.root() {
        None => {
            let out = std::process::Command::new("getent")
                .args(["group", "frr", "frrvty"])
                .output()
                .context("running getent")?;
            String::from_utf8_lossy(&out.stdout).into_owned()
        }
        Some(root) => {
            let file = root.join("etc/group");
            std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?
        }
    };
    let gids = frr_gids(&text);
    if gids.len() != 2 {
        bail!(
            "the groups frr and frrvty of FRR {version} do not both exist: reinstall the frr \
             package (8.4) or rebuild the root file system with hack/frr10.sh (10.3)"
        );
    }
    Ok(gids)
}

impl Cluster {
    /// The lab's containers.conf (container mode).
    pub fn containers_conf(&self) -> PathBuf {
        self.opts.state_dir.join("containers.conf")
    }

    /// Writes the service account's files a pod mounts (token, CA, namespace); returns the
    /// directory.
    fn service_account(&self, pod: &str, identity: Identity) -> Result<PathBuf> {
        let dir = self
            .opts
            .state_dir
            .join("pods")
            .join(pod)
            .join("serviceaccount");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let token = self.server.issue_token(identity)?;
        std::fs::write(dir.join("token"), token)?;
        std::fs::write(dir.join("ca.crt"), self.server.certificate_pem())?;
        std::fs::write(dir.join("namespace"), NAMESPACE)?;
        Ok(dir)
    }

    /// The API server as the pods reach it: the host's fabric address.
    fn api(&self) -> SocketAddr {
        SocketAddr::from((fabric::HOST_IP, self.server.addr().port()))
    }

    /// Starts the agent of `node` (number `index`) as the bundle's DaemonSet pod, with the
    /// lab's flags (`agent`: the process mode's command line) laid over as an overlay. The node
    /// is prepared first as docs/operations.md says: `/etc/frr` group-writable, FRR's groups
    /// given to the pod.
    pub(super) fn start_agent_pod(
        &self,
        node: &str,
        index: usize,
        agent: &crate::vm::Spawn,
        image: Option<String>,
    ) -> Result<Pod> {
        // The lab's health-check files probe with ICMP: the icmp-probes component (NET_RAW).
        let template = pods::agent_with_icmp_probes()?;
        let state = self.opts.state_dir.join("nodes").join(node);
        let pathspace = fabric::netns(node);
        prepare_frr(&crate::frr::config_dir(&pathspace))?;
        // The image of the lab's FRR version (10.3: the Debian 13 one, `-trixie`).
        let image = match image {
            Some(image) => Some(image),
            None => pods::agent_image(&template, self.opts.frr)?,
        };
        let mut overlay = Overlay {
            image: image.clone(),
            supplemental_groups: Some(frr_groups(self.opts.frr)?),
            ..Overlay::default()
        };
        // The lab's own flags: its probes, health checks and watch interval. The node's name,
        // VTEP address, state directory and FRR files come from the template itself.
        let keep = [
            "--probe-tcp",
            "--probe-each-timeout",
            "--probe-timeout",
            "--probe-hold",
            "--watch-interval",
        ];
        for pair in agent.args.windows(2) {
            if keep.contains(&pair[0].as_str()) {
                overlay.flags.push((pair[0].clone(), pair[1].clone()));
            }
        }
        overlay.flags.push((
            "--healthcheck-config".into(),
            "/var/lib/netrollout/healthcheck.yaml".into(),
        ));
        if let Some(at) = agent.args.iter().position(|a| a == "--router-id") {
            overlay
                .env
                .push(("NETROLLOUT_ROUTER_ID".into(), agent.args[at + 1].clone()));
        }
        let pod_name = format!("netrollout-agent-{node}");
        let placement = Placement {
            container: format!("{}agent-{node}", pods::CONTAINER_PREFIX),
            pod_name: pod_name.clone(),
            namespace: NAMESPACE.into(),
            node_name: node.into(),
            host_ip: fabric::node_ip(index),
            pod_ip: fabric::node_ip(index),
            netns: pathspace.clone(),
            host_paths: [
                ("/var/lib/netrollout".to_string(), state),
                ("/etc/frr".into(), crate::frr::config_dir(&pathspace)),
                (
                    "/var/run/frr".into(),
                    crate::frr::run_dir(self.opts.frr, &pathspace),
                ),
            ]
            .into(),
            pod_dir: self.opts.state_dir.join("pods").join(&pod_name),
            service_account: self.service_account(
                &pod_name,
                Identity::service_account(NAMESPACE, "netrollout-agent").on_node(node),
            )?,
            api: self.api(),
            overlay,
        };
        let run = pods::spec::run(&template, &placement)?;
        Pod::start(
            run,
            self.containers_conf(),
            self.log_path(node),
            image.is_some(),
        )
    }

    /// Starts configurator replica `id` as the bundle's Deployment pod in a network namespace
    /// of its own on the fabric (the lab has no pod network), with the lab's rollout settings
    /// (`flags`) laid over.
    pub(super) fn start_configurator_pod(
        &mut self,
        id: &str,
        flags: Vec<(String, String)>,
    ) -> Result<(Pod, SocketAddr)> {
        let template = pods::configurator()?;
        let number: usize = id
            .rsplit('-')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let index = CONFIGURATOR_INDEX + number;
        let netns_name = format!("configurator-{number}");
        let netns = fabric::netns(&netns_name);
        if !Path::new("/run/netns").join(&netns).exists() {
            fabric::add_node(&netns_name, index)?;
        }
        let ip: Ipv4Addr = fabric::node_ip(index);
        let pod_dir = self.opts.state_dir.join("pods").join(id);
        let placement = Placement {
            container: format!("{}configurator-{number}", pods::CONTAINER_PREFIX),
            pod_name: id.into(),
            namespace: NAMESPACE.into(),
            node_name: "lab-control-plane".into(),
            host_ip: fabric::HOST_IP,
            pod_ip: ip,
            netns,
            host_paths: Default::default(),
            pod_dir,
            service_account: self.service_account(
                id,
                Identity::service_account(NAMESPACE, "netrollout-configurator"),
            )?,
            api: self.api(),
            overlay: Overlay {
                flags,
                ..Overlay::default()
            },
        };
        let run = pods::spec::run(&template, &placement)?;
        let pod = Pod::start(run, self.containers_conf(), self.log_path(id), false)?;
        Ok((pod, SocketAddr::from((ip, 8080))))
    }

    /// Each pod's kubelet status by container name (agents and configurators; empty in
    /// process mode).
    pub fn pod_statuses(&self) -> Vec<(String, Option<u64>, Status)> {
        let agents = self.nodes.values().filter_map(|(_, p)| match p {
            Some(Proc::Pod(p)) => Some(p),
            _ => None,
        });
        let configurators = self.configurators.values().filter_map(|p| match p {
            Proc::Pod(p) => Some(p),
            Proc::Process(_) => None,
        });
        agents
            .chain(configurators)
            .map(|p| (p.name.clone(), p.memory_limit, p.status()))
            .collect()
    }

    /// The agent pod of `node`.
    pub fn agent_pod(&self, node: &str) -> Option<&Pod> {
        match self.nodes.get(node) {
            Some((_, Some(Proc::Pod(p)))) => Some(p),
            _ => None,
        }
    }

    /// Replaces `node`'s agent container with one of `image`, as a DaemonSet's rolling update
    /// does (the old pod stopped with its grace period, or killed at once with `kill`, as when
    /// the grace period runs out; then the new one started), and waits until the new one is
    /// ready. The new agent's output goes on in the node's log.
    pub async fn replace_agent(
        &mut self,
        node: &str,
        image: &str,
        ready: Duration,
        kill: bool,
    ) -> Result<()> {
        let (index, old) = self
            .nodes
            .remove(node)
            .with_context(|| format!("no node {node}"))?;
        match old {
            Some(Proc::Pod(p)) if kill => drop(p.kill().await),
            Some(Proc::Pod(p)) => drop(p.stop().await),
            _ => bail!("{node}'s agent runs in no container: replacing it needs --containers"),
        }
        let spawn = self.agent(node, index)?;
        let pod = self.start_agent_pod(node, index, &spawn, Some(image.to_string()))?;
        let waited = pod.wait_ready(ready).await;
        self.nodes
            .insert(node.to_string(), (index, Some(Proc::Pod(pod))));
        waited
    }
}

/// A lab node's FRR directory as a Debian node has it, then prepared as docs/operations.md
/// ("FRR on the node", step 3) tells an operator: FRR's files are `frr:frr` with mode 0640 (the
/// package's configuration mask), which root with only NET_ADMIN can neither read nor write;
/// the directory is made writable for FRR's group, which the pod gets.
fn prepare_frr(etc: &Path) -> Result<()> {
    for entry in std::fs::read_dir(etc).with_context(|| format!("reading {}", etc.display()))? {
        let path = entry?.path();
        if path.is_file() {
            chmod("0640", &path)?;
        }
    }
    chmod("g+w", etc)
}

fn chmod(mode: &str, path: &Path) -> Result<()> {
    let out = std::process::Command::new("chmod")
        .arg(mode)
        .arg(path)
        .output()
        .context("running chmod")?;
    if !out.status.success() {
        bail!(
            "chmod {mode} {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
