//! [`Reader`]: the watch caches of every kind the configurator reads, with this replica's own
//! writes laid over them ([`Overlays`]) until the caches show them.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Node as KubeNode};
use kube::runtime::reflector::Store;
use netrollout_api::{
    BGPPeering, Layer2NetworkConfiguration, MaintenanceSchedule, NetworkConfigRevision,
    RoutingTable, VRFRouteConfiguration,
};

use kube::runtime::reflector::ObjectRef;

use crate::fleet::Source;
use crate::overlay::Overlays;
use crate::views::NodeConfigView;

/// The watch caches, as the controller's reflectors fill them.
#[derive(Clone, Debug)]
pub struct Stores {
    /// `VRFRouteConfiguration`s.
    pub vrfs: Store<VRFRouteConfiguration>,
    /// `Layer2NetworkConfiguration`s.
    pub layer2s: Store<Layer2NetworkConfiguration>,
    /// `RoutingTable`s.
    pub tables: Store<RoutingTable>,
    /// `BGPPeering`s.
    pub peerings: Store<BGPPeering>,
    /// Nodes matching `--node-selector`.
    pub nodes: Store<KubeNode>,
    /// `NodeNetworkConfig`s, as the configurator reads them ([`NodeConfigView`]).
    pub nncs: Store<NodeConfigView>,
    /// `NetworkConfigRevision`s.
    pub ncrs: Store<NetworkConfigRevision>,
    /// The control ConfigMap (global pause).
    pub control: Store<ConfigMap>,
    /// `MaintenanceSchedule`s.
    pub schedules: Store<MaintenanceSchedule>,
}

/// The input objects as the caches hold them (inputs being deleted included).
#[derive(Clone, Debug)]
pub struct Inputs {
    /// `VRFRouteConfiguration`s.
    pub vrfs: Vec<Arc<VRFRouteConfiguration>>,
    /// `Layer2NetworkConfiguration`s.
    pub layer2s: Vec<Arc<Layer2NetworkConfiguration>>,
    /// `RoutingTable`s.
    pub tables: Vec<Arc<RoutingTable>>,
    /// `BGPPeering`s.
    pub peerings: Vec<Arc<BGPPeering>>,
}

/// Read access to the caches and overlays.
#[derive(Debug)]
pub struct Reader {
    stores: Stores,
    overlays: Arc<Overlays>,
}

impl Reader {
    pub(super) fn new(stores: Stores, overlays: Arc<Overlays>) -> Self {
        Self { stores, overlays }
    }

    /// Waits until every cache holds its first full list.
    pub async fn wait_until_synced(&self) {
        let s = &self.stores;
        let _ = tokio::join!(
            s.vrfs.wait_until_ready(),
            s.layer2s.wait_until_ready(),
            s.tables.wait_until_ready(),
            s.peerings.wait_until_ready(),
            s.nodes.wait_until_ready(),
            s.nncs.wait_until_ready(),
            s.ncrs.wait_until_ready(),
            s.control.wait_until_ready(),
            s.schedules.wait_until_ready(),
        );
    }

    /// The input objects.
    pub fn inputs(&self) -> Inputs {
        Inputs {
            vrfs: self.stores.vrfs.state(),
            layer2s: self.stores.layer2s.state(),
            tables: self.stores.tables.state(),
            peerings: self.stores.peerings.state(),
        }
    }

    /// The managed Nodes.
    pub fn nodes(&self) -> Vec<Arc<KubeNode>> {
        self.stores.nodes.state()
    }

    /// Current revisions: the cache with own writes laid over it.
    pub fn revisions(&self) -> Vec<Arc<NetworkConfigRevision>> {
        self.overlays.ncrs.view(self.stores.ncrs.state())
    }

    /// The revision named `name` (the pass's target, say), as [`Reader::revisions`] has it.
    pub fn revision(&self, name: &str) -> Option<Arc<NetworkConfigRevision>> {
        (self.revisions().into_iter()).find(|r| r.metadata.name.as_deref() == Some(name))
    }

    /// Current node configs: the cache with own writes laid over it.
    pub fn node_configs(&self) -> Vec<Arc<NodeConfigView>> {
        self.overlays.nncs.view(self.stores.nncs.state())
    }

    /// The `MaintenanceSchedule`s.
    pub fn schedules(&self) -> Vec<Arc<MaintenanceSchedule>> {
        self.stores.schedules.state()
    }

    /// Whether the control ConfigMap pauses every rollout.
    pub fn globally_paused(&self) -> bool {
        self.stores.control.state().iter().any(|cm| {
            cm.metadata.name.as_deref() == Some(netrollout_api::CONTROL_CONFIGMAP)
                && cm
                    .data
                    .as_ref()
                    .and_then(|d| d.get(netrollout_api::CONTROL_PAUSED_KEY))
                    .is_some_and(|v| v.trim() == "true")
        })
    }
}

impl Source for Reader {
    fn all_nodes(&self) -> Vec<Arc<KubeNode>> {
        self.nodes()
    }

    fn all_configs(&self) -> Vec<Arc<NodeConfigView>> {
        self.node_configs()
    }

    fn node(&self, name: &str) -> Option<Arc<KubeNode>> {
        self.stores.nodes.get(&ObjectRef::new(name))
    }

    fn config(&self, name: &str) -> Option<Arc<NodeConfigView>> {
        let cached = self.stores.nncs.get(&ObjectRef::new(name));
        self.overlays.nncs.get(name, cached)
    }

    fn expired(&self) -> Vec<String> {
        self.overlays.nncs.expire()
    }
}
