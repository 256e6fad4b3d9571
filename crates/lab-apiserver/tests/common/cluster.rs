//! The bundle as a cluster: a lab API server with the RBAC roles and admission policies of
//! `deploy/netrollout.yaml` applied as they are, two nodes with node configs written by the
//! configurator, a revision, and a kubeconfig per identity (agents with the node-name claim),
//! for the security and red-team tests.

use std::path::{Path, PathBuf};

use netrollout_lab_apiserver::{Config, Identity, LabServer};
use serde_json::{Value, json};
use tempfile::TempDir;

pub const NS: &str = "netrollout-system";
pub const HASH: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

pub struct Cluster {
    pub server: LabServer,
    pub dir: TempDir,
}

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Cluster {
    /// A server with the bundle's CRDs, namespace, ServiceAccounts, RBAC and admission
    /// policies (the workloads are not served by the lab), two nodes with node configs written
    /// by the configurator, a revision, and kubeconfigs for every identity.
    pub async fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let server = LabServer::start(Config {
            kubeconfig: Some(dir.path().join("admin")),
            ..Config::default()
        })
        .await
        .unwrap();
        let c = Cluster { server, dir };
        let identities = [
            (
                "agent-a",
                Identity::service_account(NS, "netrollout-agent").on_node("node-a"),
            ),
            (
                "agent-b",
                Identity::service_account(NS, "netrollout-agent").on_node("node-b"),
            ),
            (
                "configurator",
                Identity::service_account(NS, "netrollout-configurator"),
            ),
            ("olga", Identity::user("olga", &["platform-operators"])),
        ];
        for (name, id) in identities.into_iter().chain(more_identities()) {
            c.server
                .write_kubeconfig_for(&c.dir.path().join(name), id)
                .unwrap();
        }
        c.admin(&["apply", "-f", "-"], Some(&served_bundle()))
            .await
            .ok();
        // People get the operator role through their group, as an installation binds it.
        let bindings = json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "platform-operators"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "netrollout-operator"},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "platform-operators"}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": {"name": "platform-operators", "namespace": NS},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "netrollout-operator"},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "platform-operators"}]},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "netrollout-control", "namespace": NS}, "data": {"paused": "false"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "someone-elses", "namespace": NS}, "data": {"secret": "x"}},
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}},
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a", "labels": {"zone": "a"}}},
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-b"}},
        ]});
        c.admin(&["apply", "-f", "-"], Some(&bindings.to_string()))
            .await
            .ok();
        for node in ["node-a", "node-b"] {
            c.admin(
                &[
                    "patch",
                    "node",
                    node,
                    "--subresource=status",
                    "--type=merge",
                    "-p",
                    &json!({"status": {"conditions": [ready("True")]}}).to_string(),
                ],
                None,
            )
            .await
            .ok();
        }
        let configs = json!({"apiVersion": "v1", "kind": "List", "items": [
            nnc("node-a"), nnc("node-b"),
            {"apiVersion": "netrollout.io/v1alpha1", "kind": "NetworkConfigRevision",
             "metadata": {"name": "ncr-1"},
             "spec": {"sequence": 1, "hash": HASH, "paused": false, "snapshot": {
                "vrfRouteConfigurations": [], "layer2NetworkConfigurations": [], "routingTables": []}}},
        ]});
        c.kubectl(
            "configurator",
            &["create", "-f", "-"],
            Some(&configs.to_string()),
        )
        .await
        .ok();
        c
    }

    pub fn kubeconfig(&self, who: &str) -> PathBuf {
        self.dir.path().join(who)
    }

    pub async fn kubectl(&self, who: &str, args: &[&str], stdin: Option<&str>) -> Out {
        run_kubectl(
            &self.kubeconfig(who),
            &self.dir.path().join("cache"),
            args,
            stdin,
        )
        .await
    }

    pub async fn admin(&self, args: &[&str], stdin: Option<&str>) -> Out {
        self.kubectl("admin", args, stdin).await
    }
}

impl Out {
    pub fn ok(self) -> Self {
        assert_eq!(self.code, 0, "kubectl failed: {}", self.stderr);
        self
    }

    /// Asserts a refusal whose message contains every one of `needles`.
    pub fn refused(self, needles: &[&str]) {
        assert_ne!(self.code, 0, "kubectl succeeded: {}", self.stdout);
        for n in needles {
            assert!(
                self.stderr.contains(n),
                "{n:?} not in the refusal: {}",
                self.stderr
            );
        }
    }
}

pub async fn run_kubectl(
    kubeconfig: &Path,
    cache: &Path,
    args: &[&str],
    stdin: Option<&str>,
) -> Out {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new("kubectl")
        .env("KUBECONFIG", kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl (v1.32) must be on PATH");
    let mut input = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).await.unwrap();
    }
    drop(input);
    let out = child.wait_with_output().await.unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The documents of `deploy/netrollout.yaml` whose kinds the lab serves (all but workloads).
pub fn served_bundle() -> String {
    let text = std::fs::read_to_string(repo().join("deploy/netrollout.yaml")).unwrap();
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
    let skipped = ["Deployment", "DaemonSet", "PodDisruptionBudget"];
    let items: Vec<Value> = docs
        .into_iter()
        .filter(|d| !d.is_null() && !skipped.contains(&d["kind"].as_str().unwrap_or_default()))
        .collect();
    assert!(items.len() > 15, "{} documents", items.len());
    json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()
}

pub fn ready(status: &str) -> Value {
    json!({"type": "Ready", "status": status, "reason": "KubeletReady", "message": "kubelet is ready"})
}

pub fn nnc(node: &str) -> Value {
    json!({"apiVersion": "netrollout.io/v1alpha1", "kind": "NodeNetworkConfig",
        "metadata": {"name": node},
        "spec": {"revision": "ncr-1", "config": {"vrfs": [], "layer2s": [], "routingTables": []}}})
}

pub fn status_patch(phase: &str) -> String {
    json!({"status": {"phase": phase, "observedRevision": "ncr-1"}}).to_string()
}

/// The identities beyond the bundle's own: a user no role is bound to, and ServiceAccounts
/// named like the configurator's and the agent's in another namespace (the admission policies
/// recognise those by name; RBAC binds only the ones in netrollout-system).
pub fn more_identities() -> Vec<(&'static str, Identity)> {
    vec![
        ("nobody", Identity::user("nobody", &[])),
        (
            "evil-configurator",
            Identity::service_account("evil", "netrollout-configurator"),
        ),
        (
            "evil-agent",
            Identity::service_account("evil", "netrollout-agent").on_node("node-a"),
        ),
    ]
}

/// Every identity of a [`Cluster`] by its kubeconfig name.
pub fn identity(who: &str) -> Identity {
    match who {
        "agent-a" => Identity::service_account(NS, "netrollout-agent").on_node("node-a"),
        "agent-b" => Identity::service_account(NS, "netrollout-agent").on_node("node-b"),
        "configurator" => Identity::service_account(NS, "netrollout-configurator"),
        "olga" => Identity::user("olga", &["platform-operators"]),
        "admin" => Identity::admin(),
        other => more_identities()
            .into_iter()
            .find(|(n, _)| *n == other)
            .map(|(_, id)| id)
            .unwrap_or_else(|| panic!("no identity {other}")),
    }
}

/// A patch that sets one owner reference.
pub fn owner(kind: &str, api_version: &str, name: &str, uid: &str) -> Value {
    json!({"metadata": {"ownerReferences": [
        {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}]}})
}
