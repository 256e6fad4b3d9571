//! A running lab: the API server on the fabric, one namespace + agent per node, and the
//! configurator(s) on the host. Dropping it kills every process; [`Cluster::shutdown`] also removes
//! the namespaces and links.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use netrollout_lab_apiserver::{Config, LabServer};
use serde_json::json;

use crate::fabric;
use crate::settings::Settings;

mod apply;
mod configurator;
mod liveness;
mod node;
mod pods;
mod speaker;

pub use node::{RACK_LABEL, STARTUP_TAINT, VM_CHECK_TIMEOUT, WATCH_INTERVAL, healthcheck, rack_of};
pub use pods::{Proc, frr_groups};

/// A running lab.
pub struct Cluster {
    /// The lab API server.
    pub server: LabServer,
    /// A client of it.
    pub client: kube::Client,
    opts: Settings,
    /// Per node its number and, in local mode, its agent (in VM mode the guest runs it).
    nodes: BTreeMap<String, (usize, Option<Proc>)>,
    configurators: BTreeMap<String, Proc>,
    next_index: usize,
    /// Whether the nodes' kernel has VRF devices (and `--without-vrfs` was not given): the
    /// inputs that need a VRF roll out.
    pub vrf: bool,
    /// Tenant traffic between the nodes' workloads.
    pub traffic: crate::traffic::Traffic,
    /// VM mode: the VM the nodes run in.
    vm: Option<crate::vm::VmHost>,
    /// `--prometheus`: the Prometheus scraping this lab.
    pub prometheus: Option<crate::prometheus::Prometheus>,
    /// `--prometheus`: each configurator replica's metrics address (kept across restarts).
    configurator_metrics: BTreeMap<String, SocketAddr>,
    /// Container mode: pods whose restarts a story caused on purpose (a liveness drill).
    pub drilled: std::collections::BTreeSet<String>,
}

/// The port of each agent's `/metrics` on its node's fabric address (the agent's default
/// `--metrics-addr`, which the lab keeps).
pub const AGENT_METRICS_PORT: u16 = 9101;
/// Namespace of the configurator's Lease and control ConfigMap.
pub const NAMESPACE: &str = netrollout_api::DEFAULT_NAMESPACE;
/// Name of the configurator's Lease.
pub const LEASE: &str = "netrollout-configurator";

impl Cluster {
    /// Checks what a lab needs before it changes anything: the binaries, root (or the
    /// capabilities), and FRR. Each failure says what is missing and how to get it.
    pub fn preflight(opts: &Settings) -> Result<()> {
        for bin in ["netrollout-agent", "netrollout-configurator"] {
            if !opts.bin_dir.join(bin).exists() {
                bail!(
                    "{bin} not found in {}; build the binaries first: cargo build --release --bins",
                    opts.bin_dir.display()
                );
            }
        }
        fabric::check_privileges()?;
        crate::frr::check_installed(opts.frr)?;
        if opts.prometheus {
            if opts.vm {
                bail!(
                    "--prometheus does not work with --vm: the agents' /metrics are inside the \
                     VM, out of reach of a Prometheus on this machine; drop one of the two flags"
                );
            }
            crate::prometheus::check_installed()?;
        }
        if opts.vm {
            crate::vm::preflight(&opts.bin_dir)?;
        }
        if opts.containers {
            if opts.vm {
                bail!(
                    "--containers does not work with --vm: the VM has no podman; drop one of \
                     the two flags"
                );
            }
            crate::pods::preflight(opts.frr)?;
        }
        Ok(())
    }

    /// Builds the fabric, starts the API server, applies the CRDs and starts nodes and
    /// configurators.
    pub async fn start(mut opts: Settings) -> Result<Self> {
        Self::preflight(&opts)?;
        // A VM lab creates nothing on this machine but its processes: what an earlier local lab
        // left here is not its to remove (and may be another lab's, running).
        let mut leftovers = Vec::new();
        if !opts.vm {
            leftovers.extend(remove_containers());
            leftovers.extend(crate::frr::teardown());
            leftovers.extend(fabric::teardown());
        }
        if !leftovers.is_empty() {
            crate::err!(
                "removed leftovers of an earlier lab: {}",
                leftovers.join(", ")
            );
        }
        // A new lab is a new cluster: agent state from an earlier lab must not leak into it.
        let _ = std::fs::remove_dir_all(opts.state_dir.join("nodes"));
        let _ = std::fs::remove_dir_all(opts.state_dir.join("pods"));
        std::fs::create_dir_all(opts.state_dir.join("logs"))
            .with_context(|| format!("creating {}", opts.state_dir.display()))?;
        if opts.containers {
            crate::pods::containers_conf(&opts.state_dir)?;
        }
        // The VM sees the state directory at the same (absolute) path.
        opts.state_dir = std::fs::canonicalize(&opts.state_dir)
            .with_context(|| format!("resolving {}", opts.state_dir.display()))?;
        // In VM mode the fabric and the route reflector are inside the VM; the API server
        // listens on the loopback, which the VM reaches at 10.0.2.2.
        let listen = if opts.vm {
            Ipv4Addr::LOCALHOST
        } else {
            fabric::create_bridge()?;
            let rr = crate::frr::start_reflector(opts.frr)
                .context("starting the route reflector's FRR")?;
            crate::pids::record_pids(&opts.state_dir, &rr)?;
            fabric::HOST_IP
        };
        let server = LabServer::start(Config {
            listen: SocketAddr::from((listen, 0)),
            kubeconfig: Some(opts.state_dir.join("kubeconfig")),
            ..Config::default()
        })
        .await
        .context("starting the lab API server")?;
        let client = server.client()?;
        let traffic = crate::traffic::Traffic::default();
        let vm = match opts.vm {
            true => Some(
                crate::vm::VmHost::boot(
                    &crate::vm::script(&opts.bin_dir)?,
                    &opts.bin_dir,
                    &opts.state_dir,
                    server.addr().port(),
                    traffic.recorder(),
                    opts.frr,
                )
                .await
                .context("booting the lab's VM")?,
            ),
            false => None,
        };
        let prometheus = match opts.prometheus {
            true => Some(
                crate::prometheus::Prometheus::start(
                    &opts.state_dir,
                    &opts.state_dir.join("logs").join("prometheus.log"),
                )
                .await?,
            ),
            false => None,
        };
        let vrf =
            !opts.without_vrfs && vm.as_ref().map_or_else(fabric::kernel_has_vrf, |vm| vm.vrf);
        let mut lab = Self {
            server,
            client,
            opts,
            nodes: BTreeMap::new(),
            configurators: BTreeMap::new(),
            next_index: 1,
            vrf,
            traffic,
            vm,
            prometheus,
            configurator_metrics: BTreeMap::new(),
            drilled: Default::default(),
        };
        lab.install().await?;
        for _ in 0..lab.opts.nodes {
            lab.add_node().await?;
        }
        for i in 0..lab.opts.configurators {
            lab.start_configurator(&format!("configurator-{i}"))?;
        }
        Ok(lab)
    }

    /// The kubeconfig users (and the lab's processes) connect with.
    pub fn kubeconfig(&self) -> PathBuf {
        self.opts.state_dir.join("kubeconfig")
    }

    /// Where a process's log goes.
    pub fn log_path(&self, name: &str) -> PathBuf {
        self.opts.state_dir.join("logs").join(format!("{name}.log"))
    }

    /// The lab's options.
    pub fn settings(&self) -> &Settings {
        &self.opts
    }

    async fn install(&self) -> Result<()> {
        let pp = PatchParams::apply("netrollout-lab").force();
        let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
            Api::all(self.client.clone());
        for crd in netrollout_api::crds::all() {
            let name = crd.metadata.name.clone().unwrap_or_default();
            crds.patch(&name, &pp, &Patch::Apply(&crd))
                .await
                .with_context(|| format!("applying CRD {name}"))?;
        }
        let ns: Api<Namespace> = Api::all(self.client.clone());
        ns.patch(
            NAMESPACE,
            &pp,
            &Patch::Apply(
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
            ),
        )
        .await
        .context("creating the configurator's namespace")?;
        crate::identities::install(&self.client).await?;
        Ok(())
    }

    /// (Re)starts tenant traffic on the default-VRF layer-2 networks among `objects`: attaches
    /// workloads on every node that carries them and starts the ping streams.
    pub async fn start_traffic(&mut self, objects: &[DynamicObject]) -> Result<()> {
        let networks = crate::traffic::networks(objects, self.vrf);
        let nodes: Vec<(String, usize)> = self
            .nodes
            .iter()
            .map(|(name, (index, _))| (name.clone(), *index))
            .collect();
        let state_dir = self.opts.state_dir.clone();
        self.traffic
            .start(&networks, &nodes, &state_dir, self.vm.as_ref())
            .await
    }

    /// Whether `node`'s bgpd has an Established EVPN session with the route reflector.
    pub async fn evpn_established(&self, node: &str) -> Result<()> {
        let netns = fabric::netns(node);
        match &self.vm {
            Some(vm) => vm.call(crate::vm::Op::Evpn { netns }).await.map(drop),
            None => crate::frr::evpn_established(&netns, self.opts.frr),
        }
    }

    /// Writes every node's FRR and VRF routes ([`crate::frr::dump`]) to
    /// `logs/frr-NODE-WHY.txt` in the state directory; returns the files written.
    pub async fn dump_frr(&self, why: &str) -> Vec<PathBuf> {
        let mut files = Vec::new();
        for node in self.node_names() {
            let netns = fabric::netns(&node);
            let text = match &self.vm {
                Some(vm) => match vm.call(crate::vm::Op::Dump { netns }).await {
                    Ok(v) => v.as_str().unwrap_or_default().to_string(),
                    Err(e) => format!("asking the guest: {e:#}"),
                },
                None => crate::frr::dump(&netns, self.opts.frr),
            };
            let file = (self.opts.state_dir.join("logs")).join(format!("frr-{node}-{why}.txt"));
            if std::fs::write(&file, text).is_ok() {
                files.push(file);
            }
        }
        files
    }

    /// Whether the nodes run inside the VM.
    pub fn in_vm(&self) -> bool {
        self.vm.is_some()
    }

    /// How long tenant traffic may take to flow after workloads attach or a node restores (EVPN
    /// routes travel through the route reflector): 30 s, with the nodes in the VM 60 s.
    pub fn converge(&self) -> std::time::Duration {
        std::time::Duration::from_secs(if self.in_vm() { 60 } else { 30 })
    }

    /// Nodes that still carry [`STARTUP_TAINT`].
    pub async fn tainted(&self) -> Result<Vec<String>> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        Ok(nodes
            .list(&Default::default())
            .await?
            .items
            .into_iter()
            .filter(|n| {
                n.spec
                    .as_ref()
                    .and_then(|s| s.taints.as_ref())
                    .is_some_and(|t| t.iter().any(|t| t.key == STARTUP_TAINT))
            })
            .filter_map(|n| n.metadata.name)
            .collect())
    }

    /// The running nodes with their numbers.
    pub fn node_indices(&self) -> Vec<(String, usize)> {
        (self.nodes.iter())
            .map(|(name, (index, _))| (name.clone(), *index))
            .collect()
    }

    /// Names of the running nodes.
    pub fn node_names(&self) -> Vec<String> {
        self.nodes.keys().cloned().collect()
    }

    /// Stops every process and removes the fabric.
    pub async fn shutdown(mut self) -> Result<()> {
        self.traffic.stop().await;
        // All at once: ending a container costs podman a few process starts.
        let configurators = std::mem::take(&mut self.configurators).into_values();
        let agents = (std::mem::take(&mut self.nodes).into_values()).filter_map(|(_, p)| p);
        futures::future::join_all(configurators.chain(agents).map(Proc::kill)).await;
        let in_vm = self.vm.is_some();
        if let Some(vm) = self.vm.take() {
            vm.shutdown().await;
        }
        if let Some(p) = self.prometheus.take() {
            p.stop().await;
        }
        match in_vm {
            true => cleanup_vm(&self.opts.state_dir),
            false => cleanup(&self.opts.state_dir),
        };
        tokio::time::timeout(Duration::from_secs(5), self.server.shutdown())
            .await
            .ok();
        Ok(())
    }
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("server", &self.server.url())
            .field("nodes", &self.nodes.keys().collect::<Vec<_>>())
            .field(
                "configurators",
                &self.configurators.keys().collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// Ends every process a lab recorded and every FRR it started, removes its namespaces, links
/// and FRR directories; returns what it did. It writes nothing to stdout or stderr, so it
/// works when those are gone (a `| tee` ended by the same Ctrl-C).
pub fn cleanup(state_dir: &Path) -> Vec<String> {
    let killed = crate::pids::kill_recorded(state_dir);
    let mut done = vec![format!("stopped {killed} process(es)")];
    done.extend(remove_containers());
    done.extend(crate::frr::teardown());
    done.extend(fabric::teardown());
    if std::fs::remove_dir_all(state_dir.join("vm")).is_ok() {
        done.push("the VM's initramfs".into());
    }
    done
}

/// [`cleanup`] of a VM lab: its recorded processes (qemu among them) and the VM's initramfs.
/// Its namespaces, links and FRR were inside the VM; the host's are another lab's.
fn cleanup_vm(state_dir: &Path) -> Vec<String> {
    let killed = crate::pids::kill_recorded(state_dir);
    let mut done = vec![format!("stopped {killed} process(es)")];
    if std::fs::remove_dir_all(state_dir.join("vm")).is_ok() {
        done.push("the VM's initramfs".into());
    }
    done
}

/// Removes the containers of a lab (container mode), if podman is installed.
fn remove_containers() -> Vec<String> {
    (crate::pods::remove_all(None).into_iter())
        .map(|c| format!("container {c}"))
        .collect()
}
