//! The lab API server per test: [`LabApi`] starts one with its kubeconfig in a temporary
//! directory and a client; [`install_crds`] and [`install_netrollout`] give it the netrollout
//! kinds (and the configurator's namespace), servable when they return.

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use netrollout_api::{NetworkConfigRevision, NodeNetworkConfig, RoutingTable};
/// Who a kubeconfig or client of the lab API server acts as (`LabServer::write_kubeconfig_for`).
pub use netrollout_lab_apiserver::Identity;
use netrollout_lab_apiserver::{Config, LabServer};
use tempfile::TempDir;

/// A started lab API server, a client for it and a temporary directory holding its kubeconfig
/// (`kubeconfig`), kubectl's cache (`cache`) and whatever else the test writes.
pub struct LabApi {
    pub server: LabServer,
    pub client: Client,
    pub dir: TempDir,
}

impl std::fmt::Debug for LabApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LabApi")
            .field("server", &self.server)
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl LabApi {
    /// A server with the default settings and nothing installed.
    pub async fn start() -> LabApi {
        Self::start_with(Config::default()).await
    }

    /// A server with `cfg` (its kubeconfig is written into the lab's directory).
    pub async fn start_with(mut cfg: Config) -> LabApi {
        let dir = tempfile::tempdir().expect("temp dir");
        cfg.kubeconfig = Some(dir.path().join("kubeconfig"));
        let server = LabServer::start(cfg).await.expect("lab API server starts");
        let client = server.client().expect("a client for the lab API server");
        LabApi {
            server,
            client,
            dir,
        }
    }

    /// A server with every netrollout CRD and the configurator's namespace, the kinds servable.
    pub async fn netrollout() -> LabApi {
        let lab = Self::start().await;
        install_netrollout(&lab.client).await;
        lab
    }

    /// The kubeconfig file for this server.
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    /// kubectl's cache directory for this server.
    pub fn kubectl_cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }
}

/// Creates every netrollout CRD.
pub async fn install_crds(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in netrollout_api::crds::all() {
        crds.create(&PostParams::default(), &crd)
            .await
            .expect("create a netrollout CRD");
    }
}

/// Creates every netrollout CRD and the configurator's namespace, and waits until the kinds are
/// served (they are once their CRDs are stored and discovery shows them).
pub async fn install_netrollout(client: &Client) {
    install_crds(client).await;
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(netrollout_api::DEFAULT_NAMESPACE.into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("create the configurator's namespace");
    let revisions: Api<NetworkConfigRevision> = Api::all(client.clone());
    let configs: Api<NodeNetworkConfig> = Api::all(client.clone());
    let tables: Api<RoutingTable> = Api::all(client.clone());
    let lp = ListParams::default();
    for _ in 0..500 {
        if revisions.list(&lp).await.is_ok()
            && configs.list(&lp).await.is_ok()
            && tables.list(&lp).await.is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the netrollout kinds never became servable within 10 s");
}
