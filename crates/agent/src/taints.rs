//! Startup taints: the operator lists taints (`--remove-taints` or `taints:` in the health-check
//! file) that keep workloads off a node until its network works. Once the node's config is
//! `Provisioned` for its spec's revision and every probe passes (health-check file included), the
//! agent removes those taints from its Node, once. A later failure does not taint the node
//! again: the taints mark a node that never had a working network, not one under a rollout.
//! Each API request is a bounded step `taints` ([`crate::bounded`]): past `--api-deadline`
//! the next look (2 s later) tries again.

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use netrollout_api::{NodeNetworkConfig, NodePhase};

use crate::bounded::Bounded;
use crate::probe::Prober;

/// How often the agent looks whether the taints can go.
const INTERVAL: Duration = Duration::from_secs(2);

/// The taints of `taints` whose keys are not in `keys` (what stays on the Node).
pub fn kept(
    taints: &[k8s_openapi::api::core::v1::Taint],
    keys: &[String],
) -> Vec<k8s_openapi::api::core::v1::Taint> {
    taints
        .iter()
        .filter(|t| !keys.contains(&t.key))
        .cloned()
        .collect()
}

/// Removes the taints with `keys` from Node `node`; returns the keys it removed. The patch
/// carries the Node's resourceVersion, so a concurrent change makes it fail (and the caller
/// retries) instead of being overwritten.
pub async fn remove(
    client: &kube::Client,
    node: &str,
    keys: &[String],
    bounded: &Bounded,
) -> Result<Vec<String>, String> {
    let nodes: Api<Node> = Api::all(client.clone());
    let current = bounded.api("taints", nodes.get(node)).await?;
    let taints = current
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    let keep = kept(&taints, keys);
    if keep.len() == taints.len() {
        return Ok(Vec::new());
    }
    let removed = taints
        .iter()
        .filter(|t| keys.contains(&t.key))
        .map(|t| t.key.clone())
        .collect();
    let patch = serde_json::json!({
        "metadata": {"resourceVersion": current.metadata.resource_version},
        "spec": {"taints": keep},
    });
    let (params, patch) = (PatchParams::default(), Patch::Merge(&patch));
    bounded
        .api("taints", nodes.patch(node, &params, &patch))
        .await?;
    Ok(removed)
}

/// Waits until this node's config is Provisioned for its spec's revision and every probe
/// passes, then removes the taints; returns when done. Runs beside the agent's main loop.
pub async fn run(
    client: kube::Client,
    node: String,
    keys: Vec<String>,
    prober: Prober,
    bounded: Bounded,
) {
    let nnc: Api<NodeNetworkConfig> = Api::all(client.clone());
    loop {
        tokio::time::sleep(INTERVAL).await;
        let provisioned = match bounded.api("taints", nnc.get_opt(&node)).await {
            Ok(Some(c)) => c.status.as_ref().is_some_and(|s| {
                s.phase == Some(NodePhase::Provisioned)
                    && s.observed_revision.as_deref() == Some(c.spec.revision.as_str())
            }),
            Ok(None) => false,
            Err(e) => {
                tracing::debug!(error = %e, "reading the NodeNetworkConfig for the taints");
                false
            }
        };
        if !provisioned {
            continue;
        }
        let failing: Vec<_> = prober
            .connectivity()
            .await
            .into_iter()
            .filter(|o| !o.passed())
            .collect();
        if !failing.is_empty() {
            let names: Vec<&str> = failing.iter().map(|o| o.name.as_str()).collect();
            tracing::info!(failing = ?names, "keeping the startup taints: checks fail");
            continue;
        }
        match remove(&client, &node, &keys, &bounded).await {
            Ok(removed) => {
                tracing::info!(?removed, "network works: startup taints removed");
                return;
            }
            Err(e) => tracing::warn!(error = %e, "removing the startup taints"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Taint;

    #[test]
    fn only_the_listed_keys_go() {
        let t = |k: &str| Taint {
            key: k.into(),
            effect: "NoSchedule".into(),
            ..Taint::default()
        };
        let kept = kept(&[t("a"), t("b"), t("c")], &["b".into(), "x".into()]);
        let keys: Vec<&str> = kept.iter().map(|t| t.key.as_str()).collect();
        assert_eq!(keys, ["a", "c"]);
    }
}
