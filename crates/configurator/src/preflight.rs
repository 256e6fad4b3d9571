//! Pre-flight (docs/contract.md, "Pre-flight"): before the planner runs, each revision that may
//! be dispatched gets the nodes whose config under it needs what their agent reported missing
//! ([`fill`]); after it ran, the target's verdict is told on the revision (condition
//! `NodesCapable`) and as a Warning Event ([`tell`]).
//!
//! Only nodes whose `status.capabilities.missing` is not empty are rendered for (usually none,
//! so a pass of a capable fleet renders nothing for this). A node that has not reported its
//! capabilities (an older agent, or no config yet) lacks nothing: its agent's apply still
//! restores on failure, as before pre-flight.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use netrollout_api::{
    Capability, NODES_CAPABLE_CONDITION, NODES_LACK_CAPABILITIES, NetworkConfigRevision,
    NodeCapabilities, lacks_sentence,
};
use netrollout_rollout::{Revision, RevisionPhase, Summary, Unmet};

use crate::context::{Context, StatusPatch};
use crate::convert;
use crate::error::Result;
use crate::memo::NotedMemo;
use crate::render_cache::RenderCache;
use crate::views::NodeConfigView;

/// Reason of `NodesCapable` once no targeted node lacks anything.
const ALL_NODES_CAPABLE: &str = "AllNodesCapable";

/// Fills `unmet` of every revision that may be dispatched (Pending, Progressing, Succeeded, and
/// a Superseded one raised to the newest sequence) from the capabilities the node configs of `nncs` reported missing (the fleet keeps those
/// that report any, [`crate::fleet::View::lacking`], so a capable fleet costs nothing here).
pub fn fill<'a>(
    revisions: &mut [Revision],
    ncrs: &[Arc<NetworkConfigRevision>],
    nncs: impl IntoIterator<Item = &'a Arc<NodeConfigView>>,
    renders: &RenderCache,
) {
    let lacking: Vec<(&str, &NodeCapabilities)> = nncs
        .into_iter()
        .filter_map(|c| {
            let caps = c.status.as_ref()?.capabilities.as_ref()?;
            (!caps.missing.is_empty()).then_some((c.metadata.name.as_deref()?, caps))
        })
        .collect();
    if lacking.is_empty() {
        return;
    }
    // A Superseded revision may be dispatched only as the newest one: raised (inputs back to
    // its content), it is the target and is held like a new one from the pass that raised it.
    let newest = revisions.iter().map(|r| r.sequence).max();
    for r in revisions.iter_mut().filter(|r| match r.phase {
        RevisionPhase::Pending | RevisionPhase::Progressing | RevisionPhase::Succeeded => true,
        RevisionPhase::Superseded => Some(r.sequence) == newest,
        RevisionPhase::Failed | RevisionPhase::Blocked => false,
    }) {
        let Some(ncr) = ncrs
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(r.name.as_str()))
        else {
            continue;
        };
        for (node, caps) in &lacking {
            // A node the revision does not render for is not managed: nothing to hold.
            let Ok(config) = renders.config(ncr, node) else {
                continue;
            };
            let needs = netrollout_render::needs(&config);
            let missing = caps.lacking(&needs);
            if !missing.is_empty() {
                r.unmet.push(Unmet {
                    node: (*node).to_string(),
                    missing: missing.iter().map(|c| c.as_str().to_string()).collect(),
                });
            }
        }
        r.unmet.sort_by(|a, b| a.node.cmp(&b.node));
    }
}

/// The message of `NodesCapable=False` (and of its Event) for the target's `unmet` nodes.
pub fn message(revision: &str, unmet: &[Unmet], held: bool) -> String {
    let each: Vec<String> = unmet
        .iter()
        .map(|u| {
            let caps: Vec<Capability> = u.missing.iter().filter_map(|m| m.parse().ok()).collect();
            lacks_sentence(&u.node, &caps)
        })
        .collect();
    let verdict = if held {
        format!(
            "revision {revision} is not dispatched to any node: its config needs what {} node(s) lack",
            unmet.len()
        )
    } else {
        format!(
            "{} node(s) do not get revision {revision}: its config needs what they lack",
            unmet.len()
        )
    };
    format!(
        "{verdict}: {}; it rolls out on its own once they report it (the agent checks again every minute) or the inputs change",
        each.join("; ")
    )
}

/// The `NodesCapable` condition `ncr` should carry now, when it differs from the one it
/// carries: `False` naming the unmet nodes, or `True` once none is left after a `False` or an
/// `Unknown` (the revision stopped rolling out while held, and was retried or raised since; a
/// revision no node ever lacked anything for carries none).
pub fn wanted(ncr: &NetworkConfigRevision, summary: &Summary, now: &Time) -> Option<Condition> {
    let name = ncr.metadata.name.as_deref()?;
    let current = ncr.status.as_ref().and_then(|s| {
        s.conditions
            .iter()
            .find(|c| c.type_ == NODES_CAPABLE_CONDITION)
    });
    let (status, reason, msg) = if summary.unmet.is_empty() {
        current.filter(|c| c.status != "True")?;
        (
            "True",
            ALL_NODES_CAPABLE,
            "every node the revision targets has what its config needs".to_string(),
        )
    } else {
        (
            "False",
            NODES_LACK_CAPABILITIES,
            message(name, &summary.unmet, summary.held),
        )
    };
    if current.is_some_and(|c| c.status == status && c.reason == reason && c.message == msg) {
        return None;
    }
    Some(Condition {
        type_: NODES_CAPABLE_CONDITION.into(),
        status: status.into(),
        reason: reason.into(),
        message: msg,
        last_transition_time: current
            .filter(|c| c.status == status)
            .map_or_else(|| now.clone(), |c| c.last_transition_time.clone()),
        observed_generation: ncr.metadata.generation,
    })
}

/// The write that brings `ncr`'s `NodesCapable` condition up to date (the whole condition list,
/// the other conditions kept), with that condition; `None` when it is current.
pub fn decide(
    ncr: &NetworkConfigRevision,
    summary: &Summary,
    now: &Time,
) -> Option<(StatusPatch, Condition)> {
    let condition = wanted(ncr, summary, now)?;
    let mut list: Vec<Condition> = ncr
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    list.retain(|c| c.type_ != NODES_CAPABLE_CONDITION);
    list.push(condition.clone());
    let write = StatusPatch {
        revision: ncr.metadata.name.clone()?,
        status: serde_json::json!({ "conditions": list }),
        what: "write the NodesCapable condition of",
    };
    Some((write, condition))
}

/// Writes the target's `NodesCapable` condition when it changed ([`decide`]), and records a
/// Warning Event `NodesLackCapabilities` the first time this replica sees each verdict.
///
/// # Errors
/// The condition's write failed (the pass is retried).
pub async fn tell(ctx: &Context, told: &NotedMemo, summary: &Summary) -> Result<()> {
    let Some(ncr) = (summary.target.as_deref()).and_then(|t| ctx.read().revision(t)) else {
        return Ok(());
    };
    let Some((write, condition)) = decide(&ncr, summary, &convert::to_time(convert::now())) else {
        return Ok(());
    };
    ctx.writer()
        .patch_statuses(std::slice::from_ref(&write))
        .await?;
    let target = write.revision.as_str();
    if condition.status == "False"
        && told.first_time(&format!("preflight/{target}"), &condition.message)
    {
        tracing::warn!(revision = target, unmet = ?summary.unmet, held = summary.held, "pre-flight: nodes lack capabilities");
        ctx.writer()
            .event(
                ncr.as_ref(),
                true,
                NODES_LACK_CAPABILITIES,
                "Preflight",
                &condition.message,
            )
            .await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use netrollout_api::NetworkConfigRevisionStatus;

    use super::*;

    fn ncr(conditions: Vec<Condition>) -> NetworkConfigRevision {
        let mut r = NetworkConfigRevision::new("ncr-a", Default::default());
        r.metadata.generation = Some(3);
        r.status = Some(NetworkConfigRevisionStatus {
            conditions,
            ..Default::default()
        });
        r
    }

    fn summary(unmet: &[(&str, &str)], held: bool) -> Summary {
        Summary {
            target: Some("ncr-a".into()),
            unmet: unmet
                .iter()
                .map(|(n, m)| Unmet {
                    node: n.to_string(),
                    missing: vec![m.to_string()],
                })
                .collect(),
            held,
            ..Default::default()
        }
    }

    fn t(s: i64) -> Time {
        Time(jiff::Timestamp::from_second(s).unwrap())
    }

    #[test]
    fn a_held_revision_says_it_is_dispatched_nowhere_and_names_each_node_its_capability_and_the_fix()
     {
        let c = wanted(
            &ncr(vec![]),
            &summary(&[("lab-node-2", "vrf")], true),
            &t(10),
        )
        .unwrap();
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", NODES_LACK_CAPABILITIES)
        );
        assert!(
            c.message
                .starts_with("revision ncr-a is not dispatched to any node"),
            "{}",
            c.message
        );
        assert!(
            c.message
                .contains("node lab-node-2 lacks vrf (kernel module; load it (modprobe vrf)"),
            "{}",
            c.message
        );
        assert_eq!(c.observed_generation, Some(3));
    }

    #[test]
    fn the_condition_is_written_once_and_turns_true_only_after_it_was_false() {
        let s = summary(&[("n-1", "dummy")], true);
        let first = wanted(&ncr(vec![]), &s, &t(10)).unwrap();
        assert_eq!(
            wanted(&ncr(vec![first.clone()]), &s, &t(20)),
            None,
            "unchanged: no write"
        );
        let ok = wanted(&ncr(vec![first]), &summary(&[], false), &t(30)).unwrap();
        assert_eq!(
            (ok.status.as_str(), ok.last_transition_time.clone()),
            ("True", t(30))
        );
        assert_eq!(wanted(&ncr(vec![ok]), &summary(&[], false), &t(40)), None);
        assert_eq!(
            wanted(&ncr(vec![]), &summary(&[], false), &t(40)),
            None,
            "never lacked: none"
        );
    }

    #[test]
    fn a_revision_rolling_out_again_after_it_stopped_while_held_says_true_once_nothing_lacks() {
        let mut stopped = wanted(&ncr(vec![]), &summary(&[("n-1", "vrf")], true), &t(10)).unwrap();
        stopped.status = "Unknown".into();
        stopped.reason = netrollout_api::NOT_ROLLING_OUT.into();
        let ok = wanted(&ncr(vec![stopped.clone()]), &summary(&[], false), &t(30)).unwrap();
        assert_eq!(
            (
                ok.status.as_str(),
                ok.reason.as_str(),
                ok.last_transition_time
            ),
            ("True", ALL_NODES_CAPABLE, t(30))
        );
        let held = wanted(
            &ncr(vec![stopped]),
            &summary(&[("n-1", "vrf")], true),
            &t(40),
        )
        .unwrap();
        assert_eq!(
            (held.status.as_str(), held.reason.as_str()),
            ("False", NODES_LACK_CAPABILITIES)
        );
    }

    /// The exact requests [`tell`] makes, through a real client to the request verifier: the
    /// condition list patched on the target's status, then the Warning Event; nothing on the
    /// next pass with the same verdict.
    #[tokio::test]
    async fn tell_patches_the_condition_and_records_the_event_once() {
        let (ctx, server) = crate::context::verifier::context(&[ncr(vec![])], &[], true);
        let told = NotedMemo::default();
        let summary = summary(&[("node-1", "vrf")], true);

        tell(&ctx, &told, &summary).await.expect("tell");
        let seen = server.take();
        assert_eq!(seen.len(), 2, "{seen:#?}");
        let conditions = seen[0].status_patch("ncr-a")["conditions"]
            .as_array()
            .unwrap();
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0]["type"], NODES_CAPABLE_CONDITION);
        assert_eq!(conditions[0]["status"], "False");
        let message = conditions[0]["message"].as_str().unwrap();
        assert!(message.contains("node-1"), "{message}");
        assert_eq!(
            seen[1].event_said(),
            [NODES_LACK_CAPABILITIES, "Warning", "ncr-a", message]
        );

        tell(&ctx, &told, &summary).await.expect("second tell");
        assert_eq!(server.take(), Vec::new());
    }
}
