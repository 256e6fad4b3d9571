//! A running lab: the API server on the fabric, one namespace + agent per node, and the
//! configurator(s) on the host. Dropping it kills every process; [`Cluster::shutdown`] also removes
//! the namespaces and links.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::ApiResource;
use netrollout_lab_apiserver::{Config, LabServer};
use serde_json::json;
use tokio::process::{Child, Command};

use crate::fabric;
use crate::settings::flag;

/// How to build a lab.
#[derive(Clone, Debug)]
pub struct Options {
    /// Nodes to start with.
    pub nodes: usize,
    /// Where kubeconfig, logs and agent state go.
    pub state_dir: PathBuf,
    /// Configurator replicas (the leader writes; the others stand by).
    pub configurators: usize,
    /// `--update-limit` of the configurator.
    pub update_limit: crate::settings::UpdateLimit,
    /// `--apply-timeout` of the configurator.
    pub apply_timeout: Duration,
    /// `--pickup-timeout` of the configurator.
    pub pickup_timeout: Duration,
    /// `--max-failures` of the configurator.
    pub max_failures: u32,
    /// `--probe-hold` of the agents.
    pub probe_hold: Duration,
    /// Directory holding the `netrollout-agent` and `netrollout-configurator` binaries.
    pub bin_dir: PathBuf,
    /// Run the nodes inside the Debian-kernel VM ([`crate::vm`]).
    pub vm: bool,
    /// Leave the inputs that need a VRF out even when the kernel has VRFs.
    pub without_vrfs: bool,
    /// Start a Prometheus scraping the configurators and agents ([`crate::prometheus`]).
    pub prometheus: bool,
}

/// A running lab.
pub struct Cluster {
    /// The lab API server.
    pub server: LabServer,
    /// A client of it.
    pub client: kube::Client,
    opts: Options,
    /// Per node its number and, in local mode, its agent (in VM mode the guest runs it).
    nodes: BTreeMap<String, (usize, Option<Child>)>,
    configurators: BTreeMap<String, Child>,
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
    pub fn preflight(opts: &Options) -> Result<()> {
        for bin in ["netrollout-agent", "netrollout-configurator"] {
            if !opts.bin_dir.join(bin).exists() {
                bail!(
                    "{bin} not found in {}; build the binaries first: cargo build --release --bins",
                    opts.bin_dir.display()
                );
            }
        }
        fabric::check_privileges()?;
        crate::frr::check_installed()?;
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
        Ok(())
    }

    /// Builds the fabric, starts the API server, applies the CRDs and starts nodes and
    /// configurators.
    pub async fn start(mut opts: Options) -> Result<Self> {
        Self::preflight(&opts)?;
        let mut leftovers = crate::frr::teardown();
        leftovers.extend(fabric::teardown());
        if !leftovers.is_empty() {
            crate::err!(
                "removed leftovers of an earlier lab: {}",
                leftovers.join(", ")
            );
        }
        // A new lab is a new cluster: agent state from an earlier lab must not leak into it.
        let _ = std::fs::remove_dir_all(opts.state_dir.join("nodes"));
        std::fs::create_dir_all(opts.state_dir.join("logs"))
            .with_context(|| format!("creating {}", opts.state_dir.display()))?;
        // The VM sees the state directory at the same (absolute) path.
        opts.state_dir = std::fs::canonicalize(&opts.state_dir)
            .with_context(|| format!("resolving {}", opts.state_dir.display()))?;
        // In VM mode the fabric and the route reflector are inside the VM; the API server
        // listens on the loopback, which the VM reaches at 10.0.2.2.
        let listen = if opts.vm {
            Ipv4Addr::LOCALHOST
        } else {
            fabric::create_bridge()?;
            let rr = crate::frr::start_reflector().context("starting the route reflector's FRR")?;
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
                    &opts.state_dir,
                    server.addr().port(),
                    traffic.recorder(),
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
    pub fn options(&self) -> &Options {
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

    /// Adds a node: namespace on the fabric, Node object (Ready), and its agent. Returns its name.
    pub async fn add_node(&mut self) -> Result<String> {
        let index = self.next_index;
        self.next_index += 1;
        let name = format!("lab-node-{index}");
        let frr_config = crate::frr::node_config(&name, fabric::node_ip(index));
        if self.vm.is_none() {
            fabric::add_node(&name, index)?;
            let ns = fabric::netns(&name);
            let pids = crate::frr::start(&ns, &ns, &frr_config)
                .with_context(|| format!("starting FRR on {name}"))?;
            crate::pids::record_pids(&self.opts.state_dir, &pids)?;
        }
        let nodes: Api<Node> = Api::all(self.client.clone());
        let zone = format!("zone-{}", (index - 1) % 2);
        let node: Node = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name,
                netrollout_api::ZONE_LABEL: zone,
            }},
            "spec": {"taints": [{"key": STARTUP_TAINT, "effect": "NoSchedule"}]},
        }))?;
        nodes
            .create(&PostParams::default(), &node)
            .await
            .with_context(|| format!("creating Node {name}"))?;
        let now = k8s_openapi::jiff::Timestamp::now().to_string();
        let status = json!({"status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "lab node", "lastHeartbeatTime": now, "lastTransitionTime": now}],
            "addresses": [{"type": "InternalIP", "address": fabric::node_ip(index).to_string()}],
        }});
        nodes
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .with_context(|| format!("marking Node {name} Ready"))?;
        let agent = self.agent(&name, index)?;
        let child = match &self.vm {
            Some(vm) => {
                vm.call(crate::vm::Op::AddNode {
                    name: name.clone(),
                    index,
                    frr_config,
                    agent,
                })
                .await
                .with_context(|| format!("starting {name} in the VM"))?;
                None
            }
            None => {
                let child = agent
                    .command()?
                    .spawn()
                    .with_context(|| format!("starting the agent of {name}"))?;
                crate::pids::record_pids(&self.opts.state_dir, child.id().as_slice())?;
                Some(child)
            }
        };
        self.nodes.insert(name.clone(), (index, child));
        if let Some(p) = &self.prometheus {
            let agents: Vec<_> = (self.nodes.iter())
                .map(|(n, (i, _))| {
                    (
                        n.clone(),
                        SocketAddr::from((fabric::node_ip(*i), AGENT_METRICS_PORT)),
                    )
                })
                .collect();
            p.set_agents(&agents)?;
        }
        Ok(name)
    }

    /// The agent of `node`: its command line in the node's namespace.
    fn agent(&self, node: &str, index: usize) -> Result<crate::vm::Spawn> {
        let state = self.opts.state_dir.join("nodes").join(node);
        std::fs::create_dir_all(&state)?;
        // The fabric address of the API server (in VM mode, the guest's relay there).
        let api = SocketAddr::from((fabric::HOST_IP, self.server.addr().port()));
        let path = |p: &Path| p.to_string_lossy().into_owned();
        let mut args: Vec<String> = vec![
            "--node-name".into(),
            node.into(),
            "--state-dir".into(),
            path(&state),
            "--vtep-ip".into(),
            fabric::node_ip(index).to_string(),
        ];
        args.extend(crate::agent_probe_args(&api, &flag(self.opts.probe_hold)));
        // The tenant probe, a health-check file: from the node's own port on the lab's tenant
        // network, every other node's workload must answer (checks that fail before a change
        // are not enforced, so the first rollout, before workloads exist, is not held up).
        // Once Provisioned with the checks passing, the agent removes the startup taint.
        let file = state.join("healthcheck.yaml");
        std::fs::write(&file, healthcheck(index, self.opts.nodes.max(index))?)
            .with_context(|| format!("writing {}", file.display()))?;
        args.extend(["--healthcheck-config".into(), path(&file)]);
        // The agent manages the node's FRR: the lab's base file (fabric session, ASN, router id)
        // plus the managed sections, applied with frr-reload.py in the node's pathspace.
        let pathspace = fabric::netns(node);
        args.extend([
            "--frr-base-config".into(),
            path(&crate::frr::base_config(&pathspace)),
            "--frr-config".into(),
            path(&crate::frr::config_dir(&pathspace).join("frr.conf")),
            "--frr-pathspace".into(),
            pathspace.clone(),
        ]);
        // The managed instances' router id must differ from the base file's (the VTEP address
        // here): each VRF peers with the default VRF over iBGP. Never routed, only an id.
        let id = fabric::node_ip(index).octets();
        args.extend(["--router-id".into(), format!("10.78.{}.{}", id[2], id[3])]);
        let kubeconfig = crate::identities::agent_kubeconfig(
            &self.server,
            &self.opts.state_dir,
            NAMESPACE,
            node,
        )?;
        Ok(crate::vm::Spawn {
            netns: pathspace,
            program: self.opts.bin_dir.join("netrollout-agent"),
            args,
            env: vec![
                ("KUBECONFIG".into(), path(&kubeconfig)),
                ("RUST_LOG".into(), "info".into()),
            ],
            log: self.log_path(node),
        })
    }

    fn spawn(&self, cmd: &mut Command, name: &str) -> Result<Child> {
        let log = std::fs::File::create(self.log_path(name))?;
        cmd.env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true);
        let child = cmd.spawn().with_context(|| format!("starting {name}"))?;
        crate::pids::record_pids(&self.opts.state_dir, child.id().as_slice())?;
        Ok(child)
    }

    /// Starts a configurator replica with the lab's rollout settings.
    pub fn start_configurator(&mut self, id: &str) -> Result<()> {
        let mut cmd = Command::new(self.opts.bin_dir.join("netrollout-configurator"));
        cmd.env("POD_NAME", id)
            .args(["--update-limit", &self.opts.update_limit.to_string()])
            .args(["--apply-timeout", &flag(self.opts.apply_timeout)])
            .args(["--pickup-timeout", &flag(self.opts.pickup_timeout)])
            .args(["--max-failures", &self.opts.max_failures.to_string()])
            .args(["--lease-namespace", NAMESPACE, "--lease-name", LEASE])
            .args(["--health-addr", "127.0.0.1:0"]);
        // With a Prometheus, each replica's metrics port is known (and kept when it restarts).
        let metrics = match &self.prometheus {
            Some(_) => match self.configurator_metrics.get(id) {
                Some(addr) => *addr,
                None => SocketAddr::from((Ipv4Addr::LOCALHOST, crate::prometheus::free_port()?)),
            },
            None => SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        };
        cmd.args(["--metrics-addr", &metrics.to_string()]);
        let kubeconfig = crate::identities::configurator_kubeconfig(
            &self.server,
            &self.opts.state_dir,
            NAMESPACE,
            id,
        )?;
        let child = self.spawn(cmd.env("KUBECONFIG", kubeconfig), id)?;
        self.configurators.insert(id.to_string(), child);
        if let Some(p) = &self.prometheus {
            self.configurator_metrics.insert(id.to_string(), metrics);
            let t: Vec<_> = (self.configurator_metrics.iter())
                .map(|(id, addr)| (id.clone(), *addr))
                .collect();
            p.set_configurators(&t)?;
        }
        Ok(())
    }

    /// The configurator replica holding the Lease, if any.
    pub async fn leader(&self) -> Result<Option<String>> {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), NAMESPACE);
        Ok(leases
            .get_opt(LEASE)
            .await?
            .and_then(|l| l.spec?.holder_identity))
    }

    /// Kills a configurator replica with SIGKILL.
    pub async fn kill_configurator(&mut self, id: &str) -> Result<()> {
        let mut child = self
            .configurators
            .remove(id)
            .with_context(|| format!("no configurator {id}"))?;
        child.kill().await.with_context(|| format!("killing {id}"))
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
            None => crate::frr::evpn_established(&netns),
        }
    }

    /// Whether the nodes run inside the VM.
    pub fn in_vm(&self) -> bool {
        self.vm.is_some()
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

    /// Names of the running nodes.
    pub fn node_names(&self) -> Vec<String> {
        self.nodes.keys().cloned().collect()
    }

    /// Applies input objects (VRF, Layer2, RoutingTable) with server-side apply. In VM mode a
    /// set of objects goes out as one revision: the rollout is paused (the control ConfigMap)
    /// while they are applied, so no node gets a revision with only some of them (a VRF's
    /// routing config without its networks), which the slow VM would spend minutes on.
    pub async fn apply(&self, objects: &[DynamicObject]) -> Result<()> {
        let pause = self.vm.is_some() && objects.len() > 1;
        if pause {
            self.set_paused(true).await?;
        }
        self.apply_each(objects).await?;
        if pause {
            tokio::time::sleep(Duration::from_millis(500)).await;
            self.set_paused(false).await?;
        }
        Ok(())
    }

    async fn set_paused(&self, paused: bool) -> Result<()> {
        let cms: Api<ConfigMap> = Api::namespaced(self.client.clone(), NAMESPACE);
        let name = netrollout_api::CONTROL_CONFIGMAP;
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "data": {netrollout_api::CONTROL_PAUSED_KEY: paused.to_string()},
        });
        cms.patch(
            name,
            &PatchParams::apply("netrollout-lab").force(),
            &Patch::Apply(&cm),
        )
        .await
        .with_context(|| format!("setting paused={paused} in ConfigMap {name}"))?;
        Ok(())
    }

    async fn apply_each(&self, objects: &[DynamicObject]) -> Result<()> {
        let pp = PatchParams::apply("netrollout-lab").force();
        for obj in objects {
            let ar = api_resource(obj)?;
            let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &ar);
            let name = obj.metadata.name.clone().unwrap_or_default();
            api.patch(&name, &pp, &Patch::Apply(obj))
                .await
                .with_context(|| format!("applying {} {name}", ar.kind))?;
        }
        Ok(())
    }

    /// Deletes input objects.
    pub async fn delete(&self, objects: &[DynamicObject]) -> Result<()> {
        for obj in objects {
            let ar = api_resource(obj)?;
            let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &ar);
            let name = obj.metadata.name.clone().unwrap_or_default();
            api.delete(&name, &Default::default())
                .await
                .with_context(|| format!("deleting {} {name}", ar.kind))?;
        }
        Ok(())
    }

    /// Stops every process and removes the fabric.
    pub async fn shutdown(mut self) -> Result<()> {
        self.traffic.stop().await;
        for (_, mut child) in std::mem::take(&mut self.configurators) {
            let _ = child.kill().await;
        }
        for (_, (_, child)) in std::mem::take(&mut self.nodes) {
            if let Some(mut child) = child {
                let _ = child.kill().await;
            }
        }
        if let Some(vm) = self.vm.take() {
            vm.shutdown().await;
        }
        if let Some(p) = self.prometheus.take() {
            p.stop().await;
        }
        cleanup(&self.opts.state_dir);
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

fn api_resource(obj: &DynamicObject) -> Result<ApiResource> {
    let types = obj
        .types
        .as_ref()
        .context("object without apiVersion/kind")?;
    let plural = match types.kind.as_str() {
        "VRFRouteConfiguration" => "vrfrouteconfigurations",
        "Layer2NetworkConfiguration" => "layer2networkconfigurations",
        "RoutingTable" => "routingtables",
        other => bail!("the lab applies only netrollout.io inputs, not {other}"),
    };
    let gvk = kube::core::GroupVersionKind::try_from(types)?;
    Ok(ApiResource::from_gvk_with_plural(&gvk, plural))
}

/// Ends every process a lab recorded and every FRR it started, removes its namespaces, links
/// and FRR directories; returns what it did. It writes nothing to stdout or stderr, so it
/// works when those are gone (a `| tee` ended by the same Ctrl-C).
pub fn cleanup(state_dir: &Path) -> Vec<String> {
    let killed = crate::pids::kill_recorded(state_dir);
    let mut done = vec![format!("stopped {killed} process(es)")];
    done.extend(crate::frr::teardown());
    done.extend(fabric::teardown());
    if std::fs::remove_dir_all(state_dir.join("vm")).is_ok() {
        done.push("the VM's initramfs".into());
    }
    done
}

/// The taint every lab Node starts with; its agent removes it once the node's network works.
pub const STARTUP_TAINT: &str = "node.netrollout.io/network-unavailable";

/// Node `index`'s health-check file: its links up, and ICMP from its port on the tenant network
/// to the workloads of nodes `1..=nodes` but itself; the startup taint to remove.
pub fn healthcheck(index: usize, nodes: usize) -> Result<String> {
    let tenant =
        crate::workload::networks(&[crate::inputs::tenant(crate::inputs::TENANT_VNI)?], false);
    let mut text = String::from("interfaces: [eth0, \"l2.*\"]\nreachability:\n");
    for net in &tenant {
        for j in (1..=nodes).filter(|j| *j != index) {
            text.push_str(&format!("  - host: {}\n    protocol: icmp\n", net.addr(j)));
        }
    }
    text.push_str(&format!("taints: [{STARTUP_TAINT}]\n"));
    Ok(text)
}
