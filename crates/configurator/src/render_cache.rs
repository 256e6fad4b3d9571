//! [`RenderCache`]: each revision rendered once for the current set of nodes (names and
//! labels), reused by every pass until the nodes change.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use netrollout_api::{NetworkConfigRevision, NodeConfig};
use netrollout_render::{Invalid, Node, Rendered};

use crate::error::{Error, Result};

/// Rendered revisions for one set of nodes.
#[derive(Debug, Default)]
pub struct RenderCache {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// The generation of `nodes` ([`crate::fleet::View::render_nodes`]).
    generation: u64,
    nodes: Arc<Vec<Node>>,
    /// Revision name → (hash, rendering).
    by_revision: HashMap<String, (String, Arc<Rendered>)>,
}

impl RenderCache {
    /// Sets the nodes to render for (sorted by name), at `generation`; drops every rendering if
    /// the generation changed.
    pub fn set_nodes(&self, generation: u64, nodes: Arc<Vec<Node>>) {
        if let Ok(mut inner) = self.inner.lock()
            && (inner.generation != generation || inner.nodes.len() != nodes.len())
        {
            *inner = Inner {
                generation,
                nodes,
                by_revision: HashMap::new(),
            };
        }
    }

    /// The config of `node` under `ncr`.
    ///
    /// # Errors
    /// [`Error::Render`] when the revision does not render for the current nodes, or the node
    /// is not one of them.
    pub fn config(&self, ncr: &NetworkConfigRevision, node: &str) -> Result<NodeConfig> {
        let name = ncr.metadata.name.clone().unwrap_or_default();
        let rendered = self.rendered(ncr, &name)?;
        rendered.config(node).ok_or_else(|| Error::Render {
            revision: name.clone(),
            source: netrollout_render::Error::Invalid({
                let mut invalid = Invalid::new(netrollout_render::LIMITS);
                invalid.push(
                    "Node",
                    node,
                    "metadata.name",
                    "not among the managed nodes any more; re-planning",
                );
                invalid
            }),
        })
    }

    fn rendered(&self, ncr: &NetworkConfigRevision, name: &str) -> Result<Arc<Rendered>> {
        let nodes = match self.inner.lock() {
            Ok(inner) => {
                if let Some((hash, r)) = inner.by_revision.get(name)
                    && *hash == ncr.spec.hash
                {
                    return Ok(r.clone());
                }
                inner.nodes.clone()
            }
            Err(_) => Arc::new(Vec::new()),
        };
        let rendered = Arc::new(
            netrollout_render::render(&ncr.spec.snapshot, &nodes).map_err(|source| {
                Error::Render {
                    revision: name.to_string(),
                    source,
                }
            })?,
        );
        if let Ok(mut inner) = self.inner.lock()
            && Arc::ptr_eq(&inner.nodes, &nodes)
        {
            inner
                .by_revision
                .insert(name.to_string(), (ncr.spec.hash.clone(), rendered.clone()));
        }
        Ok(rendered)
    }
}
