//! The plugin's test helpers: the test kit's lab API server with the netrollout kinds, the
//! plugin binary and kubectl bound to it, and objects in the shapes the configurator and agents
//! write (builders from the kit's `objects`).
#![allow(dead_code)]

use std::ops::Deref;

use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use netrollout_api::{
    NetworkConfigRevision, NetworkConfigRevisionStatus, NodeConfig, NodeNetworkConfig,
    NodeNetworkConfigSpec, NodeNetworkConfigStatus, Snapshot,
};
use netrollout_testkit::apiserver::LabApi;
// Each test file takes the part it needs.
#[allow(unused_imports)]
pub use netrollout_testkit::cmd::Run;
#[allow(unused_imports)]
pub use netrollout_testkit::objects::{failed_status, node_status, rev_status, snapshot};
use serde_json::json;

/// The kit's lab API server (`server`, `client`, `dir`, `kubeconfig()` through `Deref`) with
/// the netrollout CRDs and namespace.
pub struct Lab {
    api: LabApi,
}

impl Deref for Lab {
    type Target = LabApi;
    fn deref(&self) -> &LabApi {
        &self.api
    }
}

impl Lab {
    /// Starts a server, creates every netrollout CRD and the configurator's namespace.
    pub async fn start() -> Lab {
        Lab {
            api: LabApi::netrollout().await,
        }
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
        self.kubectl_run(args, stdin).await
    }

    /// Creates a revision with a status, as the configurator writes them.
    pub async fn revision(
        &self,
        name: &str,
        sequence: i64,
        snapshot: Snapshot,
        status: NetworkConfigRevisionStatus,
    ) {
        let rev = netrollout_testkit::objects::revision(name, sequence, snapshot);
        self.revisions()
            .create(&PostParams::default(), &rev)
            .await
            .expect("create revision");
        self.set_revision_status(name, status).await;
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

    /// Creates a Node (Ready or not) with its hostname label.
    pub async fn node(&self, name: &str, ready: bool) {
        let labels = [("kubernetes.io/hostname", name)];
        netrollout_testkit::objects::add_node(&self.client, name, &labels, Some(ready)).await;
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
