//! Adding a lab node (namespace, FRR, Node object, agent) and its agent: the command line (probes, health-check file, FRR flags, identity) and
//! the health-check file the lab writes for it.

use std::net::SocketAddr;
use std::path::Path;

use anyhow::{Context as _, Result};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use super::{AGENT_METRICS_PORT, Cluster, NAMESPACE};
use crate::fabric;
use crate::settings::flag;

/// The label that names a lab node's rack (a failure domain: `--domain-key`); the lab's nodes
/// stand in racks of two, `rack-0` holding the first two nodes (one in each zone).
pub const RACK_LABEL: &str = "lab.netrollout.io/rack";

/// The rack of the lab node with index `index` (from 1).
fn rack(index: usize) -> String {
    format!("rack-{}", index.saturating_sub(1) / 2)
}

/// The rack of lab node `node` (`""` for a node the lab does not know).
pub fn rack_of(lab: &Cluster, node: &str) -> String {
    lab.nodes
        .get(node)
        .map(|(index, _)| rack(*index))
        .unwrap_or_default()
}

impl Cluster {
    /// Adds a node: namespace on the fabric, Node object (Ready), and its agent. Returns its name.
    pub async fn add_node(&mut self) -> Result<String> {
        let index = self.next_index;
        self.next_index += 1;
        let name = format!("lab-node-{index}");
        let frr_config = crate::frr::node_config(&name, fabric::node_ip(index));
        if self.vm.is_none() {
            fabric::add_node(&name, index)?;
            let ns = fabric::netns(&name);
            let pids = crate::frr::start(&ns, &ns, &frr_config, self.opts.frr)
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
                RACK_LABEL: rack(index),
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
            None if self.opts.containers => Some(super::Proc::Pod(
                self.start_agent_pod(&name, index, &agent, None)
                    .with_context(|| format!("starting the agent pod of {name}"))?,
            )),
            None => {
                let child = agent
                    .command()?
                    .spawn()
                    .with_context(|| format!("starting the agent of {name}"))?;
                crate::pids::record_pids(&self.opts.state_dir, child.id().as_slice())?;
                Some(super::Proc::Process(child))
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
    pub(super) fn agent(&self, node: &str, index: usize) -> Result<crate::vm::Spawn> {
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
        args.extend(crate::agent_probe_args(
            &api,
            &flag(*(self.opts.probe_holds.get(node)).unwrap_or(&self.opts.probe_hold)),
            &flag(check_timeout(self.vm.is_some())),
        ));
        // The tenant probe, a health-check file: from the node's own port on the lab's tenant
        // network, every other node's workload must answer (checks that fail before a change
        // are not enforced, so the first rollout, before workloads exist, is not held up).
        // Once Provisioned with the checks passing, the agent removes the startup taint.
        let file = state.join("healthcheck.yaml");
        std::fs::write(
            &file,
            healthcheck(
                index,
                self.opts.nodes.max(index),
                self.vrf,
                self.vm.is_some(),
            )?,
        )
        .with_context(|| format!("writing {}", file.display()))?;
        args.extend(["--healthcheck-config".into(), path(&file)]);
        // Continuous health (the fleet guard's input), so a remote break shows well within a
        // wave.
        args.extend(["--watch-interval".into(), flag(WATCH_INTERVAL)]);
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
        // FRR of the lab's version: its vtysh, frr-reload.py and (10.3) socket directory (in
        // the VM too: the guest sees this machine's files at the same paths).
        if !self.opts.containers {
            args.extend(crate::frr::agent_args(self.opts.frr));
        }
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
            program: (self.vm.as_ref()).map_or_else(
                || self.opts.bin_dir.join("netrollout-agent"),
                |vm| vm.agent.clone(),
            ),
            args,
            env: vec![
                ("KUBECONFIG".into(), path(&kubeconfig)),
                ("RUST_LOG".into(), "info".into()),
            ],
            log: self.log_path(node),
        })
    }
}

/// The taint every lab Node starts with; its agent removes it once the node's network works.
pub const STARTUP_TAINT: &str = "node.netrollout.io/network-unavailable";

/// How often each agent runs its health checks (its `--watch-interval`): a loss is reported
/// after two failing rounds, each taking up to the check timeout.
pub const WATCH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);

/// How long each health check waits for its answer with the nodes in the VM.
pub const VM_CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// How long each check waits for its answer: the agent's own (the API server through the
/// relay, the TCP probe) and the health-check file's alike. In the VM [`VM_CHECK_TIMEOUT`]: with
/// 1 s for its own, a border whose file's checks all passed once failed its apply on
/// `api-server: no answer within 1s` under load (a guest stall), and restored.
pub fn check_timeout(in_vm: bool) -> std::time::Duration {
    match in_vm {
        true => VM_CHECK_TIMEOUT,
        false => std::time::Duration::from_secs(1),
    }
}

/// Node `index`'s health-check file: its links up, and ICMP from its port on the tenant network
/// to the workloads of nodes `1..=nodes` but itself; with the routed tenant (`routed`: the
/// nodes have VRFs), ICMP from its VRF `vr.labr` to the outside and, but on the border, to the
/// other nodes' routed workloads (the border probes only the outside: its VRF's source address
/// for them may be its link to the outside, which its own change may stop exporting); the
/// startup taint to remove.
///
/// With the nodes in the VM (`slow`), each check waits 3 s for its answer instead of the
/// agent's 1 s: under TCG on a loaded machine the guest stalls for a second or two at times,
/// and every check of a round then timed out at once (on peers no change touched), which the
/// fleet guard took for a regression.
pub fn healthcheck(index: usize, nodes: usize, routed: bool, slow: bool) -> Result<String> {
    use crate::inputs::{BORDER_INDEX, OUTSIDE, ROUTED_VRF};
    let tenant =
        crate::workload::networks(&[crate::inputs::tenant(crate::inputs::TENANT_VNI)?], false);
    let mut text = String::from("interfaces: [eth0, \"l2.*\"]\nreachability:\n");
    for net in &tenant {
        for j in (1..=nodes).filter(|j| *j != index) {
            text.push_str(&format!("  - host: {}\n    protocol: icmp\n", net.addr(j)));
        }
    }
    if routed {
        let vrf = format!("vr.{ROUTED_VRF}");
        for net in crate::workload::networks(&crate::inputs::routed(nodes)?, true) {
            let target = match net.name.strip_prefix("lab-routed-") {
                _ if net.name == OUTSIDE => Some(crate::inputs::OUTSIDE_ADDR),
                Some(j) if index != BORDER_INDEX => {
                    j.parse().ok().filter(|j| *j != index).map(|j| net.addr(j))
                }
                _ => None,
            };
            if let Some(host) = target {
                text.push_str(&format!(
                    "  - host: {host}\n    protocol: icmp\n    vrf: {vrf}\n"
                ));
            }
        }
    }
    text.push_str(&format!("taints: [{STARTUP_TAINT}]\n"));
    if slow {
        text.push_str(&format!(
            "timeout: {}\n",
            crate::settings::flag(check_timeout(true))
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checks(text: &str) -> Vec<String> {
        let doc: serde_json::Value = serde_saphyr::from_str(text).unwrap();
        doc["reachability"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                format!(
                    "{}@{}",
                    c["host"].as_str().unwrap(),
                    c["vrf"].as_str().unwrap_or("-")
                )
            })
            .collect()
    }

    #[test]
    fn every_node_but_the_border_probes_the_other_routed_workloads_and_the_outside_in_its_vrf() {
        let hc = checks(&healthcheck(2, 3, true, false).unwrap());
        assert_eq!(
            hc,
            [
                "172.31.88.11@-",
                "172.31.88.13@-",
                "10.251.1.11@vr.labr",
                "10.251.3.13@vr.labr",
                "203.0.113.1@vr.labr",
            ]
        );
    }

    #[test]
    fn the_border_probes_only_the_outside_in_its_vrf() {
        let hc = checks(&healthcheck(1, 3, true, false).unwrap());
        assert_eq!(
            hc,
            ["172.31.88.12@-", "172.31.88.13@-", "203.0.113.1@vr.labr"]
        );
    }

    #[test]
    fn in_the_vm_each_check_waits_longer_for_its_answer() {
        assert!(
            !healthcheck(1, 2, false, false)
                .unwrap()
                .contains("timeout:")
        );
        let slow = healthcheck(1, 2, false, true).unwrap();
        let file: serde_json::Value = serde_saphyr::from_str(&slow).unwrap();
        assert_eq!(file["timeout"], "3000ms", "{slow}");
    }

    #[test]
    fn in_the_vm_the_agents_own_checks_wait_as_long_as_the_files() {
        let api = std::net::SocketAddr::from(([10, 77, 0, 1], 6443));
        let each = |in_vm| {
            let args = crate::agent_probe_args(&api, "8s", &flag(check_timeout(in_vm)));
            let at = args
                .iter()
                .position(|a| a == "--probe-each-timeout")
                .unwrap();
            args[at + 1].clone()
        };
        let file: serde_json::Value =
            serde_saphyr::from_str(&healthcheck(1, 2, false, true).unwrap()).unwrap();
        assert_eq!(each(true), file["timeout"].as_str().unwrap());
        assert_eq!(each(true), "3000ms");
        assert_eq!(each(false), "1000ms");
    }

    #[test]
    fn without_vrfs_only_the_bridged_tenant_is_probed() {
        let hc = checks(&healthcheck(1, 2, false, false).unwrap());
        assert_eq!(hc, ["172.31.88.12@-"]);
    }
}
