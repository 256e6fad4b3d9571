//! [`Fleet`]: the planner's view of the nodes, kept up to date from watch events instead of
//! being rebuilt from the watch caches on every pass.
//!
//! Every Node or NodeNetworkConfig event, and every own write of a node config, marks the
//! node's name in [`Changes`]. A pass ([`Fleet::refresh`]) converts only the marked nodes
//! (cache plus overlay, exactly as a rebuild would read them), so its cost follows what changed
//! since the last pass, not the fleet size. A relist of either watch marks everything, and the
//! next pass rebuilds from scratch. The nodes are kept sorted by name, so the planner's input
//! is the same whichever way it was built (the unit and property tests check that an
//! incrementally kept fleet equals a rebuild).
//!
//! Alongside the planner's nodes the fleet keeps what other parts of a pass would otherwise
//! walk the fleet for: the render nodes (names and labels, changed only when a node joins,
//! leaves or is relabelled), the failure index of `late_failures` ([`FailureIndex`]) and the
//! count of nodes marked unresponsive.
//!
//! [`Changes`] also holds the nodes the last pass waits for (its plan's
//! [`awaited`](netrollout_rollout::Summary::awaited) nodes): when the last of them reports an
//! outcome, the controller runs the next pass at once instead of after its debounce, so a
//! wave's end moves the rollout on without waiting; with the window strategy, so does the first
//! of them, whose slot is free. Only the timing of a pass depends on it, never what a pass
//! decides. The time of the last input change is kept here too: a pass never runs within the
//! debounce of one, so inputs applied together are planned together.

mod failures;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use k8s_openapi::api::core::v1::Node as KubeNode;
use netrollout_render::Node as RenderNode;
use netrollout_rollout::{Fleet as Nodes, Node};

pub use failures::FailureIndex;

use crate::convert;
use crate::views::NodeConfigView;

/// Names of the nodes whose Node or NodeNetworkConfig changed since the last pass; shared by
/// the watch tasks, the writer and the fleet. Also the nodes the last pass waits for.
#[derive(Debug, Default)]
pub struct Changes {
    inner: Mutex<Dirty>,
    /// Notified when the last awaited node reported.
    all_reported: tokio::sync::Notify,
    /// Notified when any awaited node reported (its slot is free).
    slot_freed: tokio::sync::Notify,
    /// When an input (VRFRouteConfiguration, Layer2NetworkConfiguration, RoutingTable) last
    /// changed.
    input_at: Mutex<Option<std::time::Instant>>,
}

#[derive(Debug, Default)]
struct Dirty {
    names: HashSet<String>,
    /// A relist (or the start): every node is read again.
    all: bool,
    /// The nodes in flight after the last pass that have not reported an outcome since.
    awaited: HashSet<String>,
    /// Nodes that reported since the marks were last taken: a pass's plan may still count
    /// them in flight (its view was read before), so they are not awaited again.
    reported: HashSet<String>,
}

impl Changes {
    fn lock(&self) -> MutexGuard<'_, Dirty> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The Node or node config `name` changed.
    pub fn mark(&self, name: &str) {
        let mut d = self.lock();
        if !d.all {
            d.names.insert(name.to_string());
        }
    }

    /// Anything may have changed (a watch relisted).
    pub fn mark_all(&self) {
        let mut d = self.lock();
        d.all = true;
        d.names.clear();
    }

    /// The nodes a pass leaves in flight: once each has reported an outcome
    /// ([`Changes::reported`]), [`Changes::all_reported`] is notified.
    pub fn await_reports(&self, names: &[String]) {
        let mut d = self.lock();
        let Dirty {
            awaited, reported, ..
        } = &mut *d;
        awaited.clear();
        awaited.extend(names.iter().filter(|n| !reported.contains(*n)).cloned());
        if awaited.len() < names.len() {
            // Some reported while the pass ran: their slots are free.
            self.slot_freed.notify_one();
        }
        if awaited.is_empty() && !names.is_empty() {
            // Every one of them reported while the pass ran.
            self.all_reported.notify_one();
        }
    }

    /// The config of node `name` shows an outcome (Provisioned or Failed) of its spec's
    /// revision.
    pub fn reported(&self, name: &str) {
        let mut d = self.lock();
        d.reported.insert(name.to_string());
        let awaited = d.awaited.remove(name);
        if awaited {
            self.slot_freed.notify_one();
        }
        if awaited && d.awaited.is_empty() {
            tracing::debug!(
                node = name,
                "every node the last pass left in flight has reported"
            );
            self.all_reported.notify_one();
        }
    }

    /// Completes once every node the last pass left in flight has reported (at once if that
    /// happened since the last wait).
    pub async fn all_reported(&self) {
        self.all_reported.notified().await;
    }

    /// Completes once a node the last pass left in flight has reported an outcome (at once if
    /// that happened since the last wait).
    pub async fn slot_freed(&self) {
        self.slot_freed.notified().await;
    }

    /// An input changed.
    pub fn input_changed(&self) {
        *self.input_at.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(std::time::Instant::now());
    }

    /// How long ago an input last changed (`None`: never since the start).
    pub fn since_input(&self) -> Option<std::time::Duration> {
        self.input_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map(|t| t.elapsed())
    }

    /// Takes the marks: `None` means everything.
    pub(crate) fn take(&self) -> Option<HashSet<String>> {
        let mut d = self.lock();
        // The pass reads every object after this: what reported so far shows in its view.
        d.reported.clear();
        if std::mem::take(&mut d.all) {
            d.names.clear();
            None
        } else {
            Some(std::mem::take(&mut d.names))
        }
    }
}

/// Where the fleet reads one node's objects: the watch caches with the overlays laid over.
pub trait Source {
    /// Every managed Node.
    fn all_nodes(&self) -> Vec<Arc<KubeNode>>;
    /// Every node config.
    fn all_configs(&self) -> Vec<Arc<NodeConfigView>>;
    /// The Node `name`, if managed.
    fn node(&self, name: &str) -> Option<Arc<KubeNode>>;
    /// The node config `name`.
    fn config(&self, name: &str) -> Option<Arc<NodeConfigView>>;
    /// Names whose own writes stopped being laid over the cache by age (seen differently now
    /// without any watch event).
    fn expired(&self) -> Vec<String>;
}

/// The planner's nodes and what passes need besides, as of the last [`Fleet::refresh`].
#[derive(Debug)]
pub struct Fleet {
    reading: convert::Reading,
    changes: Arc<Changes>,
    view: Mutex<View>,
}

/// The fleet as one pass sees it.
#[derive(Debug, Default, Clone)]
pub struct View {
    /// The planner's nodes with their index by state ([`netrollout_rollout::fleet`]).
    pub nodes: Nodes,
    /// The objects each planner node was read from (for the writes of a pass).
    objects: HashMap<String, Objects>,
    /// Names and labels of the Nodes not being deleted, sorted by name.
    render: Arc<Vec<RenderNode>>,
    /// Bumped each time `render` changes.
    render_generation: u64,
    /// Failure reports by revision, for `late_failures`.
    pub failures: FailureIndex,
    /// Managed nodes (not being deleted) marked unresponsive.
    unresponsive: usize,
    /// Node configs whose agent reported missing capabilities (pre-flight's input), by name:
    /// usually none, so pre-flight never walks the fleet for them.
    lacking: BTreeMap<String, Arc<NodeConfigView>>,
}

/// One node's objects as last read.
#[derive(Debug, Default, Clone)]
pub struct Objects {
    /// The Node (absent: not managed).
    pub node: Option<Arc<KubeNode>>,
    /// Its config.
    pub config: Option<Arc<NodeConfigView>>,
}

impl Fleet {
    /// An empty fleet that reads everything on its first refresh.
    pub fn new(reading: convert::Reading, changes: Arc<Changes>) -> Self {
        changes.mark_all();
        Self {
            reading,
            changes,
            view: Mutex::new(View::default()),
        }
    }

    /// The nodes the pass leaves in flight ([`Changes::await_reports`]).
    pub fn await_reports(&self, names: &[String]) {
        self.changes.await_reports(names);
    }

    /// [`Changes::all_reported`].
    pub async fn all_reported(&self) {
        self.changes.all_reported().await;
    }

    /// [`Changes::slot_freed`].
    pub async fn slot_freed(&self) {
        self.changes.slot_freed().await;
    }

    /// [`Changes::since_input`].
    pub fn since_input(&self) -> Option<std::time::Duration> {
        self.changes.since_input()
    }

    /// The view as the last [`Fleet::refresh`] left it, locked (no `.await` with the guard).
    pub fn view(&self) -> MutexGuard<'_, View> {
        self.view.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Brings the view up to date with the marked changes and returns it locked (hold it only
    /// while planning: no `.await` with the guard). Once per pass.
    pub fn refresh(&self, source: &impl Source) -> MutexGuard<'_, View> {
        for name in source.expired() {
            self.changes.mark(&name);
        }
        let mut view = self.view.lock().unwrap_or_else(PoisonError::into_inner);
        match self.changes.take() {
            None => *view = View::build(source, &self.reading, &view),
            Some(names) => {
                let mut relabelled = false;
                for name in names {
                    relabelled |= view.update(&name, source, &self.reading);
                }
                if relabelled {
                    view.rebuild_render();
                }
            }
        }
        view
    }
}

impl View {
    /// The whole view read afresh; `previous` carries the render generation and the times
    /// nodes were first seen regressed on.
    pub fn build(source: &impl Source, reading: &convert::Reading, previous: &View) -> View {
        let configs: HashMap<String, Arc<NodeConfigView>> = source
            .all_configs()
            .into_iter()
            .filter_map(|c| Some((c.metadata.name.clone()?, c)))
            .collect();
        let mut objects: HashMap<String, Objects> = configs
            .iter()
            .map(|(name, c)| {
                let o = Objects {
                    node: None,
                    config: Some(c.clone()),
                };
                (name.clone(), o)
            })
            .collect();
        for n in source.all_nodes() {
            if let Some(name) = n.metadata.name.clone() {
                objects.entry(name).or_default().node = Some(n);
            }
        }
        let nodes = Nodes::from_nodes(objects.values().filter_map(|o| {
            let node = o.node.as_deref()?;
            let before = node
                .metadata
                .name
                .as_deref()
                .and_then(|name| previous.nodes.get(name))
                .map(|n| &n.health);
            Some(convert::node(node, o.config.as_deref(), reading, before))
        }));
        let mut view = View {
            nodes,
            failures: FailureIndex::from_configs(configs.values()),
            lacking: configs
                .iter()
                .filter(|(_, c)| lacks_capabilities(c))
                .map(|(name, c)| (name.clone(), c.clone()))
                .collect(),
            objects,
            render_generation: previous.render_generation,
            ..View::default()
        };
        view.unresponsive = view
            .nodes
            .nodes()
            .filter(|n| counts_unresponsive(n))
            .count();
        view.rebuild_render();
        view
    }

    /// Reads node `name` again; true when the render nodes changed (joined, left, relabelled).
    fn update(&mut self, name: &str, source: &impl Source, reading: &convert::Reading) -> bool {
        let objects = Objects {
            node: source.node(name),
            config: source.config(name),
        };
        self.failures.set(name, objects.config.as_deref());
        match &objects.config {
            Some(c) if lacks_capabilities(c) => {
                self.lacking.insert(name.to_string(), c.clone());
            }
            _ => {
                self.lacking.remove(name);
            }
        }
        let before = self.objects.get(name).and_then(|o| o.node.clone());
        let relabelled = render_node(before.as_deref()) != render_node(objects.node.as_deref());
        let planned = objects.node.as_deref().map(|n| {
            let before = self.nodes.get(name).map(|n| &n.health);
            convert::node(n, objects.config.as_deref(), reading, before)
        });
        if objects.node.is_none() && objects.config.is_none() {
            self.objects.remove(name);
        } else {
            self.objects.insert(name.to_string(), objects);
        }
        if let Some(old) = self.nodes.get(name) {
            self.unresponsive -= usize::from(counts_unresponsive(old));
        }
        match planned {
            Some(n) => {
                self.unresponsive += usize::from(counts_unresponsive(&n));
                self.nodes.upsert(n);
            }
            None => {
                self.nodes.remove(name);
            }
        }
        relabelled
    }

    fn rebuild_render(&mut self) {
        let mut render: Vec<RenderNode> = self
            .objects
            .values()
            .filter_map(|o| render_node(o.node.as_deref()))
            .collect();
        render.sort_by(|a, b| a.name.cmp(&b.name));
        self.render = Arc::new(render);
        self.render_generation += 1;
    }

    /// The objects node `name` was planned from.
    pub fn objects(&self, name: &str) -> Option<&Objects> {
        self.objects.get(name)
    }

    /// Names and labels of the Nodes not being deleted (sorted by name) and a generation that
    /// changes whenever they do.
    pub fn render_nodes(&self) -> (u64, Arc<Vec<RenderNode>>) {
        (self.render_generation, self.render.clone())
    }

    /// Managed nodes (not being deleted) marked unresponsive.
    pub fn unresponsive(&self) -> usize {
        self.unresponsive
    }

    /// The node configs whose agent reported missing capabilities, by name (pre-flight's
    /// input).
    pub fn lacking(&self) -> impl Iterator<Item = &Arc<NodeConfigView>> {
        self.lacking.values()
    }

    /// Whether two views hold the same planner nodes, render nodes and failure index (the
    /// incremental view against a rebuild, in tests).
    #[cfg(test)]
    pub fn same_as(&self, other: &View) -> bool {
        self.nodes == other.nodes
            && self.render == other.render
            && self.failures == other.failures
            && self.unresponsive == other.unresponsive
            && self.lacking.keys().eq(other.lacking.keys())
            && self
                .lacking
                .values()
                .zip(other.lacking.values())
                .all(|(a, b)| a.status == b.status)
    }
}

/// Whether the agent of `c` reported capabilities missing (pre-flight holds such nodes).
fn lacks_capabilities(c: &NodeConfigView) -> bool {
    c.status
        .as_ref()
        .and_then(|s| s.capabilities.as_ref())
        .is_some_and(|caps| !caps.missing.is_empty())
}

fn counts_unresponsive(n: &Node) -> bool {
    !n.deleting && n.unresponsive_since.is_some()
}

/// The render view of a Node: none while it is being deleted.
fn render_node(n: Option<&KubeNode>) -> Option<RenderNode> {
    let n = n?;
    if n.metadata.deletion_timestamp.is_some() {
        return None;
    }
    Some(RenderNode {
        name: n.metadata.name.clone().unwrap_or_default(),
        labels: n.metadata.labels.clone().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests;
