//! Shared helpers: a lab API server with the netrollout CRDs, the plugin binary and kubectl
//! bound to it, and builders for objects in the shapes the configurator and agents write.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeStatus};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use netrollout_api::{
    FailedNode, Layer2NetworkConfigurationSpec, NamedInput, NetworkConfigRevision,
    NetworkConfigRevisionSpec, NetworkConfigRevisionStatus, NodeConfig, NodeNetworkConfig,
    NodeNetworkConfigSpec, NodeNetworkConfigStatus, NodePhase, RevisionPhase, RoutingTableSpec,
    Snapshot, VRFRouteConfigurationSpec,
};
use netrollout_lab_apiserver::{Config, LabServer};
use serde_json::json;
use tempfile::TempDir;

/// A lab API server with the CRDs created, its kubeconfig and a client.
pub struct Lab {
    pub server: LabServer,
    pub dir: TempDir,
    pub client: Client,
}

impl Lab {
    /// Starts a server, creates every netrollout CRD and the configurator's namespace.
    pub async fn start() -> Lab {
        let dir = tempfile::tempdir().expect("temp dir");
        let cfg = Config {
            kubeconfig: Some(dir.path().join("kubeconfig")),
            ..Config::default()
        };
        let server = LabServer::start(cfg).await.expect("lab API server starts");
        let client = server.client().expect("client");
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        for crd in netrollout_api::crds::all() {
            crds.create(&PostParams::default(), &crd)
                .await
                .expect("create CRD");
        }
        let ns = k8s_openapi::api::core::v1::Namespace {
            metadata: kube::api::ObjectMeta {
                name: Some(netrollout_api::DEFAULT_NAMESPACE.into()),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .expect("create namespace");
        let lab = Lab {
            server,
            dir,
            client,
        };
        // The kinds become servable when their CRDs are stored; wait until they list.
        for _ in 0..100 {
            if lab.revisions().list(&ListParams::default()).await.is_ok()
                && lab.configs().list(&ListParams::default()).await.is_ok()
            {
                return lab;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("the netrollout kinds never became servable");
    }

    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    pub fn revisions(&self) -> Api<NetworkConfigRevision> {
        Api::all(self.client.clone())
    }

    pub fn configs(&self) -> Api<NodeNetworkConfig> {
        Api::all(self.client.clone())
    }

    /// Runs the plugin binary with `args` against this lab.
    pub async fn plugin(&self, args: &[&str]) -> Run {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_kubectl-netrollout"))
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .expect("plugin runs");
        Run::from(out)
    }

    /// Runs the real kubectl against this lab.
    pub async fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Run {
        kubectl(
            &self.kubeconfig(),
            &self.dir.path().join("cache"),
            args,
            stdin,
            None,
        )
        .await
    }

    /// Creates a revision with a status, as the configurator writes them.
    pub async fn revision(
        &self,
        name: &str,
        sequence: i64,
        snapshot: Snapshot,
        status: NetworkConfigRevisionStatus,
    ) {
        let hash = netrollout_render::Revision::of(&snapshot)
            .expect("hash")
            .hash;
        let rev = NetworkConfigRevision::new(
            name,
            NetworkConfigRevisionSpec {
                sequence,
                hash,
                paused: false,
                snapshot,
            },
        );
        self.revisions()
            .create(&PostParams::default(), &rev)
            .await
            .expect("create revision");
        self.revisions()
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await
            .expect("revision status");
    }

    pub async fn set_revision_status(&self, name: &str, status: NetworkConfigRevisionStatus) {
        self.revisions()
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await
            .expect("revision status");
    }

    /// Creates a Node (Ready or not) with labels.
    pub async fn node(&self, name: &str, ready: bool) {
        let node = Node {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                labels: Some(BTreeMap::from([(
                    "kubernetes.io/hostname".to_string(),
                    name.to_string(),
                )])),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<Node>::all(self.client.clone())
            .create(&PostParams::default(), &node)
            .await
            .expect("create node");
        let status = NodeStatus {
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                ..Default::default()
            }]),
            ..Default::default()
        };
        Api::<Node>::all(self.client.clone())
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await
            .expect("node status");
    }

    /// Creates a node's config naming `revision`, with the agent's status if given.
    pub async fn config(
        &self,
        node: &str,
        revision: &str,
        status: Option<NodeNetworkConfigStatus>,
    ) {
        let nnc = NodeNetworkConfig::new(
            node,
            NodeNetworkConfigSpec {
                revision: revision.into(),
                config: NodeConfig::default(),
            },
        );
        self.configs()
            .create(&PostParams::default(), &nnc)
            .await
            .expect("create node config");
        if let Some(status) = status {
            self.set_config_status(node, status).await;
        }
    }

    pub async fn set_config_status(&self, node: &str, status: NodeNetworkConfigStatus) {
        self.configs()
            .patch_status(
                node,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await
            .expect("node config status");
    }
}

/// Runs kubectl with its own cache directory; `path` replaces PATH when given.
pub async fn kubectl(
    kubeconfig: &Path,
    cache: &Path,
    args: &[&str],
    stdin: Option<&str>,
    path: Option<&str>,
) -> Run {
    use tokio::io::AsyncWriteExt;
    let mut cmd = tokio::process::Command::new("kubectl");
    cmd.env("KUBECONFIG", kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(path) = path {
        cmd.env("PATH", path);
    }
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("kubectl (v1.32) must be on PATH for these tests: {e}"));
    let mut input = child.stdin.take().expect("stdin");
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).await.expect("write stdin");
    }
    drop(input);
    Run::from(child.wait_with_output().await.expect("kubectl runs"))
}

/// A finished process.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Self {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Run {
    /// Asserts exit code `code` and returns stdout.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &str {
        assert_eq!(
            self.code, code,
            "unexpected exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        &self.stdout
    }
}

/// A revision status as the configurator writes it.
pub fn rev_status(
    phase: RevisionPhase,
    total: i32,
    ready: i32,
    in_flight: i32,
    queued: i32,
) -> NetworkConfigRevisionStatus {
    NetworkConfigRevisionStatus {
        phase: Some(phase),
        progress: Some(format!("{ready}/{total}")),
        total,
        ready,
        in_flight,
        queued,
        ..Default::default()
    }
}

/// A Failed revision status with one failed node.
pub fn failed_status(node: &str, total: i32) -> NetworkConfigRevisionStatus {
    NetworkConfigRevisionStatus {
        phase: Some(RevisionPhase::Failed),
        message: Some(format!("1 node failed (max 0): {node}")),
        total,
        failed: 1,
        failed_nodes: vec![FailedNode {
            node: node.into(),
            reason: "ProbeFailed".into(),
            message: "gateway 10.250.0.1 unreachable after apply".into(),
            time: None,
        }],
        ..Default::default()
    }
}

/// An agent status for `revision`.
pub fn node_status(
    revision: &str,
    phase: NodePhase,
    message: Option<&str>,
) -> NodeNetworkConfigStatus {
    NodeNetworkConfigStatus {
        observed_revision: Some(revision.into()),
        phase: Some(phase),
        reason: (phase == NodePhase::Failed).then(|| "ProbeFailed".to_string()),
        message: message.map(String::from),
        last_known_good_revision: Some(revision.into()).filter(|_| phase == NodePhase::Provisioned),
        ..Default::default()
    }
}

/// A snapshot with one VRF, one layer-2 network (with `mtu`) and optionally a routing table.
pub fn snapshot(mtu: i32, with_table: bool) -> Snapshot {
    let vrf = VRFRouteConfigurationSpec {
        vrf: "m2m".into(),
        seq: 10,
        vni: Some(2002026),
        ..Default::default()
    };
    let l2 = Layer2NetworkConfigurationSpec {
        id: 501,
        mtu,
        vni: 4000002,
        vrf: Some("m2m".into()),
        ..Default::default()
    };
    Snapshot {
        vrf_route_configurations: vec![NamedInput {
            name: "m2m".into(),
            spec: vrf,
        }],
        layer2_network_configurations: vec![NamedInput {
            name: "vlan501".into(),
            spec: l2,
        }],
        routing_tables: if with_table {
            vec![NamedInput {
                name: "taas-100".into(),
                spec: RoutingTableSpec { table_id: 100 },
            }]
        } else {
            vec![]
        },
    }
}
