//! The write cost of continuous health: how many API writes a healthy fleet's agents make.
//! Every agent probes its health-check file every `--watch-interval` and writes only on a
//! transition, so a healthy node should write nothing. Measured with the real agents of a
//! started lab: a watch from the current resourceVersion on the node-scoped objects the agents
//! write (their `NodeNetworkConfig` and their `Node`) counts every stored change during a
//! steady window, while the agents' own counters (`netrollout_agent_health_rounds_total` on
//! their `/metrics`) prove that they kept probing; the lab API server's global
//! resourceVersion counts every write of any object in the same window (the configurator's
//! Lease renewals among them).

use std::io::{Read as _, Write as _};
use std::time::Duration;

use anyhow::{Context as _, Result};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use netrollout_api::NodeNetworkConfig;

use crate::cluster::{AGENT_METRICS_PORT, Cluster};

/// What a steady window showed.
#[derive(Debug)]
pub struct Steady {
    /// Length of the window.
    pub window: Duration,
    /// Nodes in the lab.
    pub nodes: usize,
    /// Changes stored to the agents' objects (node configs and Nodes) in the window.
    pub node_writes: usize,
    /// Writes of any object in the window (the global resourceVersion's advance).
    pub all_writes: u64,
    /// Health rounds the agents ran in the window, all nodes together (`None` in VM mode: the
    /// agents' `/metrics` are inside the VM).
    pub rounds: Option<u64>,
}

impl Steady {
    /// Writes per node per hour, extrapolated linearly from the window (each agent writes
    /// only its own objects, so a fleet's writes grow with its nodes).
    pub fn per_node_hour(&self) -> f64 {
        self.node_writes as f64 / self.nodes.max(1) as f64 * 3600.0 / self.window.as_secs_f64()
    }

    /// The `hack/bench.sh` rows: writes per node per hour, and a 10,000-node fleet's per hour.
    pub fn rows(&self, what: &str) -> [[String; 6]; 2] {
        let per_hour = self.per_node_hour();
        let rounds = match self.rounds {
            Some(r) => format!("{r} health rounds"),
            None => "rounds every 2 s (VM: agents' metrics out of reach)".into(),
        };
        [
            [
                "guard".into(),
                format!(
                    "healthy fleet, continuous health on: API writes per node per hour ({what}, {} s steady, {} real agents)",
                    self.window.as_secs(),
                    self.nodes
                ),
                format!("{per_hour:.1}"),
                format!(
                    "{} writes to node configs and Nodes in {rounds}; {} writes of any object (lease renewals)",
                    self.node_writes, self.all_writes
                ),
                "-".into(),
                "0".into(),
            ],
            [
                "guard".into(),
                format!(
                    "healthy 10,000-node fleet, continuous health on: API writes per hour ({what}: per node x 10,000)"
                ),
                format!("{:.0}", per_hour * 10_000.0),
                format!("{per_hour:.1} per node per hour"),
                "-".into(),
                "0".into(),
            ],
        ]
    }
}

/// Watches the agents' objects for `window` on a lab whose rollout is done and whose tenant
/// traffic flows; returns what it counted.
pub async fn steady(lab: &Cluster, window: Duration) -> Result<Steady> {
    let rounds_before = match lab.in_vm() {
        true => None,
        false => Some(rounds(lab).await?),
    };
    let rv_before = lab.server.resource_version();
    let (nnc, nodes) = tokio::join!(
        writes(Api::<NodeNetworkConfig>::all(lab.client.clone()), window),
        writes(Api::<Node>::all(lab.client.clone()), window),
    );
    let all_writes = lab.server.resource_version().saturating_sub(rv_before);
    let rounds = match rounds_before {
        Some(before) => Some(rounds(lab).await?.saturating_sub(before)),
        None => None,
    };
    Ok(Steady {
        window,
        nodes: lab.node_names().len(),
        node_writes: nnc? + nodes?,
        all_writes,
        rounds,
    })
}

/// Stored changes of `api`'s objects during `window`, from a watch at the current version.
async fn writes<K>(api: Api<K>, window: Duration) -> Result<usize>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let list = api.list_metadata(&ListParams::default()).await?;
    let version = list.metadata.resource_version.unwrap_or_default();
    let wp = WatchParams::default().timeout(window.as_secs().max(1) as u32 + 5);
    let mut events = api.watch(&wp, &version).await?.boxed();
    let mut count = 0;
    let counting = async {
        while let Some(event) = events.next().await {
            if let WatchEvent::Added(_) | WatchEvent::Modified(_) | WatchEvent::Deleted(_) = event?
            {
                count += 1;
            }
        }
        Ok::<_, kube::Error>(())
    };
    // The window ends the count; an error before it is the measurement's failure.
    if let Ok(done) = tokio::time::timeout(window, counting).await {
        done?;
    }
    Ok(count)
}

/// The health rounds every agent has run so far (their `/metrics`; local mode only).
async fn rounds(lab: &Cluster) -> Result<u64> {
    let mut total = 0;
    for (name, index) in lab.node_indices() {
        let addr = std::net::SocketAddr::from((crate::fabric::node_ip(index), AGENT_METRICS_PORT));
        let text = tokio::task::spawn_blocking(move || get_metrics(addr))
            .await?
            .with_context(|| format!("reading the metrics of {name}'s agent at {addr}"))?;
        let value = text
            .lines()
            .find_map(|l| l.strip_prefix("netrollout_agent_health_rounds_total "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .with_context(|| {
                format!("{name}'s agent serves no netrollout_agent_health_rounds_total")
            })?;
        total += value as u64;
    }
    Ok(total)
}

/// `GET /metrics` over plain HTTP/1.0 (the agent's metrics listener), with 5 s time limits.
fn get_metrics(addr: std::net::SocketAddr) -> std::io::Result<String> {
    let limit = Some(Duration::from_secs(5));
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(limit)?;
    s.set_write_timeout(limit)?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: agent\r\n\r\n")?;
    let mut body = String::new();
    s.read_to_string(&mut body)?;
    Ok(body)
}
