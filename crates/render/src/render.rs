//! Rendering a compiled snapshot for a set of nodes: which inputs each node's labels select,
//! per-node loopback addresses, the size limit, and each node's `NodeConfig` on demand.
//!
//! Nodes are grouped by which distinct selectors they match, so the work grows with nodes ×
//! distinct selectors, not nodes × inputs; a node's config is built only when asked for.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use ipnet::IpNet;
use netrollout_api::{LoopbackConfig, NodeConfig, Snapshot};

use crate::compile::{Compiled, LAYER2_KIND, PEERING_KIND, VRF_KIND, compile, loopback};
use crate::{Invalid, MAX_NODE_CONFIG_BYTES, Result};

/// A node as rendering sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
}

/// Every node's selection of inputs; [`Rendered::config`] builds a node's `NodeConfig`.
#[derive(Clone, Debug)]
pub struct Rendered {
    compiled: Compiled,
    /// Node names, sorted.
    names: Vec<String>,
    /// Per node: index into `groups`.
    group_of: Vec<usize>,
    /// Distinct selector-match vectors.
    groups: Vec<Vec<bool>>,
    /// (policy, loopback) → address per node index.
    loopbacks: HashMap<(usize, usize), Vec<Option<IpAddr>>>,
}

/// Compiles and renders in one step.
///
/// # Errors
/// [`crate::Error::Invalid`] with every problem in the inputs or in a node's rendered config.
pub fn render(snapshot: &Snapshot, nodes: &[Node]) -> Result<Rendered> {
    compile(snapshot)?.render(nodes)
}

impl Compiled {
    /// Renders this snapshot for `nodes`.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] when a node's config would break a rule that depends on which
    /// inputs select it: over [`MAX_NODE_CONFIG_BYTES`], a layer-2 network without its VRF, a
    /// loopback subnet too small for the nodes it covers.
    pub fn render(self, nodes: &[Node]) -> Result<Rendered> {
        let mut sorted: Vec<&Node> = nodes.iter().collect();
        sorted.sort_by(|a, b| a.name.cmp(&b.name));
        sorted.dedup_by(|a, b| a.name == b.name);

        let mut groups: Vec<Vec<bool>> = Vec::new();
        let mut group_ids: HashMap<Vec<bool>, usize> = HashMap::new();
        let group_of: Vec<usize> = sorted
            .iter()
            .map(|node| {
                let matches: Vec<bool> = self
                    .selectors
                    .iter()
                    .map(|s| s.matches(&node.labels))
                    .collect();
                let next = groups.len();
                *group_ids.entry(matches).or_insert_with_key(|m| {
                    groups.push(m.clone());
                    next
                })
            })
            .collect();

        let mut invalid = crate::revision::none();
        self.check_groups(&groups, &group_of, &sorted, &mut invalid);
        let loopbacks = self.allocate_loopbacks(&sorted, &groups, &group_of, &mut invalid);
        let rendered = Rendered {
            compiled: self,
            names: sorted.iter().map(|n| n.name.clone()).collect(),
            group_of,
            groups,
            loopbacks,
        };
        crate::error::checked(invalid, rendered)
    }

    /// Checks that depend only on which selectors a node matches, once per distinct group.
    fn check_groups(
        &self,
        groups: &[Vec<bool>],
        group_of: &[usize],
        nodes: &[&Node],
        invalid: &mut Invalid,
    ) {
        let example = |g: usize| {
            let count = group_of.iter().filter(|&&x| x == g).count();
            let first = group_of
                .iter()
                .position(|&x| x == g)
                .map_or("", |i| nodes[i].name.as_str());
            (count, first.to_string())
        };
        let sizes = self.item_sizes();
        for (g, matches) in groups.iter().enumerate() {
            let vrf_present: Vec<bool> = (0..self.vrfs.len())
                .map(|v| {
                    self.policies
                        .iter()
                        .any(|p| p.vrf == v && matches[p.selector])
                })
                .collect();
            for l2 in &self.layer2s {
                if let Some(v) = l2.vrf.filter(|&v| matches[l2.selector] && !vrf_present[v]) {
                    let (count, first) = example(g);
                    invalid.push(LAYER2_KIND, &l2.config.source, "spec.nodeSelector", format!(
                        "selects {count} node(s) (e.g. {first:?}) on which its VRF {:?} is not selected; make the {VRF_KIND}'s nodeSelector cover them",
                        self.vrfs[v].name
                    ));
                }
            }
            for peering in &self.peerings {
                let Some(l) = peering.layer2 else { continue };
                let l2 = &self.layer2s[l];
                if matches[peering.selector] && !matches[l2.selector] {
                    let (count, first) = example(g);
                    invalid.push(PEERING_KIND, &peering.config.source, "spec.nodeSelector", format!(
                        "selects {count} node(s) (e.g. {first:?}) on which its peeringVlan {LAYER2_KIND} {:?} is not selected; make the peering's nodeSelector select only nodes of that network",
                        l2.config.source
                    ));
                }
            }
            let size = self.group_size(matches, &vrf_present, &sizes);
            if size > MAX_NODE_CONFIG_BYTES {
                let (count, first) = example(g);
                invalid.push("NodeNetworkConfig", &first, "spec.config", format!(
                    "the rendered config of {count} node(s) (e.g. {first:?}) is about {size} bytes, over the API server's limit of {MAX_NODE_CONFIG_BYTES}; narrow the nodeSelectors so fewer networks land on each node"
                ));
            }
        }
    }

    /// JSON sizes of every item, to bound a node's config size without building it.
    fn item_sizes(&self) -> [Vec<usize>; 5] {
        let len = |v: &dyn erased::Json| v.json_len();
        // A loopback adds, per node, its `LoopbackConfig` and the export item of its host route
        // (each under 96 bytes of JSON).
        [
            self.vrfs.iter().map(|v| len(v)).collect(),
            self.policies
                .iter()
                .map(|p| len(&p.policy) + len(&p.sbr_prefixes) + 192 * p.loopbacks.len())
                .collect(),
            self.layer2s.iter().map(|l| len(&l.config)).collect(),
            self.tables.iter().map(|t| len(&t.config)).collect(),
            self.peerings.iter().map(|p| len(&p.config)).collect(),
        ]
    }

    fn group_size(&self, matches: &[bool], vrf_present: &[bool], sizes: &[Vec<usize>; 5]) -> usize {
        let vrfs: usize = vrf_present
            .iter()
            .zip(&sizes[0])
            .filter(|(p, _)| **p)
            .map(|(_, s)| s + 1)
            .sum();
        let policies: usize = self
            .policies
            .iter()
            .zip(&sizes[1])
            .filter(|(p, _)| matches[p.selector])
            .map(|(_, s)| s + 1)
            .sum();
        let l2s: usize = self
            .layer2s
            .iter()
            .zip(&sizes[2])
            .filter(|(l, _)| matches[l.selector])
            .map(|(_, s)| s + 1)
            .sum();
        let tables: usize = self
            .tables
            .iter()
            .zip(&sizes[3])
            .filter(|(t, _)| matches[t.selector])
            .map(|(_, s)| s + 1)
            .sum();
        let peerings: usize = self
            .peerings
            .iter()
            .zip(&sizes[4])
            .filter(|(p, _)| matches[p.selector])
            .map(|(_, s)| s + 1)
            .sum();
        vrfs + policies + l2s + tables + peerings + 256
    }

    /// Gives each selected node a stable address per loopback: a hash of the node name picks the
    /// slot, collisions probe forward in node-name order.
    fn allocate_loopbacks(
        &self,
        nodes: &[&Node],
        groups: &[Vec<bool>],
        group_of: &[usize],
        invalid: &mut Invalid,
    ) -> HashMap<(usize, usize), Vec<Option<IpAddr>>> {
        let mut out = HashMap::new();
        for (p, policy) in self.policies.iter().enumerate() {
            for (l, (name, subnet)) in policy.loopbacks.iter().enumerate() {
                let selected: Vec<usize> = (0..nodes.len())
                    .filter(|&n| groups[group_of[n]][policy.selector])
                    .collect();
                let hosts = usable_hosts(subnet);
                if (selected.len() as u128) > hosts {
                    invalid.push(VRF_KIND, &policy.policy.source, format!("spec.loopbacks[{l}].subnet"), format!(
                        "{subnet} has {hosts} usable addresses but loopback {name:?} is needed on {} nodes; use a larger subnet", selected.len()
                    ));
                    continue;
                }
                let mut used = std::collections::HashSet::new();
                let mut addrs = vec![None; nodes.len()];
                for n in selected {
                    let mut slot = u128::from(crate::snapshot::stable_hash(&nodes[n].name)) % hosts;
                    while !used.insert(slot) {
                        slot = (slot + 1) % hosts;
                    }
                    addrs[n] = Some(host_address(subnet, slot));
                }
                out.insert((p, l), addrs);
            }
        }
        out
    }
}

impl Rendered {
    /// Names of the rendered nodes, sorted.
    pub fn nodes(&self) -> &[String] {
        &self.names
    }

    /// The config of one node, or `None` for a node that was not rendered.
    pub fn config(&self, node: &str) -> Option<NodeConfig> {
        let n = self.names.binary_search_by(|x| x.as_str().cmp(node)).ok()?;
        let matches = &self.groups[self.group_of[n]];
        let c = &self.compiled;
        let mut config = NodeConfig::default();
        let mut current: Option<usize> = None;
        for (p, policy) in c.policies.iter().enumerate() {
            if !matches[policy.selector] {
                continue;
            }
            if current != Some(policy.vrf) {
                current = Some(policy.vrf);
                config.vrfs.push(c.vrfs[policy.vrf].clone());
            }
            let Some(vrf) = config.vrfs.last_mut() else {
                continue;
            };
            vrf.policies.push(policy.policy.clone());
            for prefix in &policy.sbr_prefixes {
                if !vrf.sbr_prefixes.contains(prefix) {
                    vrf.sbr_prefixes.push(prefix.clone());
                }
            }
            for (l, (name, _)) in policy.loopbacks.iter().enumerate() {
                if let Some(addr) = self.loopbacks.get(&(p, l)).and_then(|a| a[n]) {
                    vrf.loopbacks.push(LoopbackConfig {
                        name: name.clone(),
                        address: loopback::host_route(addr),
                    });
                    if let (Some(Some(seq)), Some(last)) =
                        (policy.loopback_seqs.get(l), vrf.policies.last_mut())
                    {
                        last.export.push(loopback::export_item(addr, *seq));
                    }
                }
            }
        }
        config.layer2s = c
            .layer2s
            .iter()
            .filter(|l| matches[l.selector])
            .map(|l| l.config.clone())
            .collect();
        config.routing_tables = c
            .tables
            .iter()
            .filter(|t| matches[t.selector])
            .map(|t| t.config.clone())
            .collect();
        config.bgp_peerings = c
            .peerings
            .iter()
            .filter(|p| matches[p.selector])
            .map(|p| p.config.clone())
            .collect();
        Some(config)
    }
}

/// Host addresses usable in a subnet (IPv4 without network and broadcast below /31).
fn usable_hosts(net: &IpNet) -> u128 {
    let bits = u32::from(net.max_prefix_len() - net.prefix_len()).min(64);
    let total = 1u128 << bits;
    match net {
        IpNet::V4(_) if bits >= 2 => total - 2,
        IpNet::V6(_) if bits >= 1 => total - 1,
        _ => total,
    }
}

fn host_address(net: &IpNet, slot: u128) -> IpAddr {
    match net {
        IpNet::V4(v4) => {
            let skip = u32::from(net.max_prefix_len() - net.prefix_len() >= 2);
            IpAddr::from(std::net::Ipv4Addr::from(
                u32::from(v4.network()) + skip + slot as u32,
            ))
        }
        IpNet::V6(v6) => IpAddr::from(std::net::Ipv6Addr::from(
            u128::from(v6.network()) + 1 + slot,
        )),
    }
}

/// Serialised length without naming the type: keeps `item_sizes` short.
mod erased {
    pub(super) trait Json {
        fn json_len(&self) -> usize;
    }
    impl<T: serde::Serialize> Json for T {
        fn json_len(&self) -> usize {
            serde_json::to_vec(self).map_or(0, |v| v.len())
        }
    }
}
