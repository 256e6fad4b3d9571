//! The API objects the plugin reads and writes, and finding a revision by what a person types.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use netrollout_api::{
    BGPPeering, CONTROL_CONFIGMAP, CONTROL_PAUSED_KEY, Layer2NetworkConfiguration,
    NetworkConfigRevision, NodeNetworkConfig, RevisionPhase, RoutingTable, Snapshot,
    VRFRouteConfiguration,
};

use crate::{Error, Result};

/// Field manager of every write the plugin makes.
pub const FIELD_MANAGER: &str = "kubectl-netrollout";

/// Where to connect: the kubeconfig flags kubectl plugins are expected to accept.
#[derive(Debug, Clone, Default)]
pub struct Connection {
    /// `--kubeconfig`; otherwise `KUBECONFIG`, `~/.kube/config` or in-cluster.
    pub kubeconfig: Option<PathBuf>,
    /// `--context`.
    pub context: Option<String>,
    /// `-n/--namespace` of the configurator (its control ConfigMap).
    pub namespace: String,
    /// `--domain-key`: the node label the configurator's `--domain-key` names (a node's
    /// failure domain, shown by `nodes` and `status`).
    pub domain_key: Option<String>,
}

impl Connection {
    /// Builds a client for these settings.
    ///
    /// # Errors
    /// [`Error::Kubeconfig`] when no configuration can be loaded.
    pub async fn connect(&self) -> Result<Cluster> {
        let config =
            netrollout_support::kube_config(self.kubeconfig.as_deref(), self.context.as_deref())
                .await
                .map_err(|e| Error::Kubeconfig(e.to_string()))?;
        let client =
            netrollout_support::client(config).map_err(|e| Error::Kubeconfig(e.to_string()))?;
        Ok(Cluster {
            client,
            namespace: self.namespace.clone(),
            domain_key: self.domain_key.clone(),
        })
    }
}

/// A connected cluster.
#[derive(Clone)]
pub struct Cluster {
    /// The client.
    pub client: Client,
    /// The configurator's namespace.
    pub namespace: String,
    /// The failure-domain label (`--domain-key`), if given.
    pub domain_key: Option<String>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

/// Everything `status`, `nodes` and `diff` look at, read once.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// Revisions, newest (highest `spec.sequence`) first.
    pub revisions: Vec<NetworkConfigRevision>,
    /// Node configs by node name.
    pub configs: BTreeMap<String, NodeNetworkConfig>,
    /// Nodes by name.
    pub nodes: BTreeMap<String, Node>,
    /// Whether the global pause is on.
    pub paused: bool,
    /// The failure-domain label nodes are shown with (`--domain-key`), if given.
    pub domain_key: Option<String>,
}

impl Cluster {
    /// `NetworkConfigRevision`s (cluster-scoped).
    pub fn revisions_api(&self) -> Api<NetworkConfigRevision> {
        Api::all(self.client.clone())
    }

    /// `NodeNetworkConfig`s (cluster-scoped).
    pub fn configs_api(&self) -> Api<NodeNetworkConfig> {
        Api::all(self.client.clone())
    }

    /// The control ConfigMaps' namespace API.
    pub fn configmaps_api(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Every revision, newest first.
    ///
    /// # Errors
    /// [`Error::Api`] when the list fails.
    pub async fn revisions(&self) -> Result<Vec<NetworkConfigRevision>> {
        let mut list = self
            .revisions_api()
            .list(&ListParams::default())
            .await
            .map_err(Error::api("listing NetworkConfigRevisions"))?
            .items;
        list.sort_by(|a, b| {
            b.spec
                .sequence
                .cmp(&a.spec.sequence)
                .then_with(|| name(a).cmp(name(b)))
        });
        Ok(list)
    }

    /// Reads revisions, node configs, nodes and the global pause.
    ///
    /// # Errors
    /// [`Error::Api`] when a list fails.
    pub async fn observe(&self) -> Result<Observed> {
        let revisions = self.revisions().await?;
        let configs = self
            .configs_api()
            .list(&ListParams::default())
            .await
            .map_err(Error::api("listing NodeNetworkConfigs"))?
            .items
            .into_iter()
            .map(|c| (name(&c).to_string(), c))
            .collect();
        let nodes = Api::<Node>::all(self.client.clone())
            .list(&ListParams::default())
            .await
            .map_err(Error::api("listing Nodes"))?
            .items
            .into_iter()
            .map(|n| (n.metadata.name.clone().unwrap_or_default(), n))
            .collect();
        let paused = self.paused().await?;
        Ok(Observed {
            revisions,
            configs,
            nodes,
            paused,
            domain_key: self.domain_key.clone(),
        })
    }

    /// Whether `netrollout-control` says `paused: "true"`; a missing ConfigMap means not paused.
    ///
    /// # Errors
    /// [`Error::Api`] when the read fails.
    pub async fn paused(&self) -> Result<bool> {
        let cm = self
            .configmaps_api()
            .get_opt(CONTROL_CONFIGMAP)
            .await
            .map_err(Error::api(format!(
                "reading ConfigMap {}/{CONTROL_CONFIGMAP}",
                self.namespace
            )))?;
        Ok(cm
            .and_then(|c| c.data)
            .and_then(|d| d.get(CONTROL_PAUSED_KEY).cloned())
            .is_some_and(|v| v == "true"))
    }

    /// Sets the global pause, creating the control ConfigMap when missing.
    ///
    /// # Errors
    /// [`Error::Api`] when the write fails.
    pub async fn set_paused(&self, paused: bool) -> Result<()> {
        let api = self.configmaps_api();
        let action = || format!("writing ConfigMap {}/{CONTROL_CONFIGMAP}", self.namespace);
        let value = if paused { "true" } else { "false" };
        let exists = api
            .get_opt(CONTROL_CONFIGMAP)
            .await
            .map_err(Error::api(action()))?
            .is_some();
        if exists {
            let patch = serde_json::json!({ "data": { CONTROL_PAUSED_KEY: value } });
            api.patch(
                CONTROL_CONFIGMAP,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(Error::api(action()))?;
        } else {
            let cm = ConfigMap {
                metadata: kube::api::ObjectMeta {
                    name: Some(CONTROL_CONFIGMAP.to_string()),
                    namespace: Some(self.namespace.clone()),
                    ..Default::default()
                },
                data: Some(BTreeMap::from([(
                    CONTROL_PAUSED_KEY.to_string(),
                    value.to_string(),
                )])),
                ..Default::default()
            };
            let pp = PostParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..Default::default()
            };
            api.create(&pp, &cm).await.map_err(|e| match e {
                kube::Error::Api(s) if s.is_not_found() => Error::Refused(format!(
                    "namespace {} does not exist: install netrollout (deploy/netrollout.yaml) or name the \
                     configurator's namespace with -n",
                    self.namespace
                )),
                e => Error::api(action())(e),
            })?;
        }
        Ok(())
    }

    /// The live input objects as a snapshot (objects being deleted count as gone).
    ///
    /// # Errors
    /// [`Error::Api`] when a list fails.
    pub async fn inputs(&self) -> Result<Inputs> {
        let lp = ListParams::default();
        let vrfs = Api::<VRFRouteConfiguration>::all(self.client.clone())
            .list(&lp)
            .await
            .map_err(Error::api("listing VRFRouteConfigurations"))?
            .items;
        let layer2s = Api::<Layer2NetworkConfiguration>::all(self.client.clone())
            .list(&lp)
            .await
            .map_err(Error::api("listing Layer2NetworkConfigurations"))?
            .items;
        let tables = Api::<RoutingTable>::all(self.client.clone())
            .list(&lp)
            .await
            .map_err(Error::api("listing RoutingTables"))?
            .items;
        let peerings = Api::<BGPPeering>::all(self.client.clone())
            .list(&lp)
            .await
            .map_err(Error::api("listing BGPPeerings"))?
            .items;
        Ok(Inputs {
            vrfs,
            layer2s,
            tables,
            peerings,
        })
    }
}

/// The input objects as listed.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// `VRFRouteConfiguration`s.
    pub vrfs: Vec<VRFRouteConfiguration>,
    /// `Layer2NetworkConfiguration`s.
    pub layer2s: Vec<Layer2NetworkConfiguration>,
    /// `RoutingTable`s.
    pub tables: Vec<RoutingTable>,
    /// `BGPPeering`s.
    pub peerings: Vec<BGPPeering>,
}

impl Inputs {
    /// The snapshot the configurator would build from these objects.
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = netrollout_render::from_objects(&self.vrfs, &self.layer2s, &self.tables);
        snapshot.bgp_peerings = netrollout_render::peerings(&self.peerings);
        snapshot
    }
}

/// `metadata.name`, empty when unset.
pub fn name<K: kube::Resource>(obj: &K) -> &str {
    obj.meta().name.as_deref().unwrap_or_default()
}

/// The phase of a revision, `Pending` when the configurator has not written one yet.
pub fn phase(rev: &NetworkConfigRevision) -> RevisionPhase {
    rev.status
        .as_ref()
        .and_then(|s| s.phase)
        .unwrap_or(RevisionPhase::Pending)
}

/// Finds a revision by name, by `spec.sequence` (a number), or by a unique prefix of its name
/// without `ncr-` or of its hash.
///
/// # Errors
/// [`Error::NoSuchRevision`] when nothing (or more than one revision) matches.
pub fn find<'a>(
    revisions: &'a [NetworkConfigRevision],
    wanted: &str,
) -> Result<&'a NetworkConfigRevision> {
    if let Some(r) = revisions.iter().find(|r| name(*r) == wanted) {
        return Ok(r);
    }
    if let Ok(seq) = wanted.parse::<i64>()
        && let Some(r) = revisions.iter().find(|r| r.spec.sequence == seq)
    {
        return Ok(r);
    }
    let bare = wanted
        .trim_start_matches("ncr-")
        .trim_start_matches("sha256:");
    let matches: Vec<_> = revisions
        .iter()
        .filter(|r| {
            !bare.is_empty()
                && (name(*r).trim_start_matches("ncr-").starts_with(bare)
                    || r.spec.hash.trim_start_matches("sha256:").starts_with(bare))
        })
        .collect();
    match matches.as_slice() {
        [one] => Ok(one),
        _ => Err(Error::NoSuchRevision(wanted.to_string())),
    }
}
