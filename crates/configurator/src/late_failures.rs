//! Failure reports that arrive after a revision was halted. The planner fails a revision on the
//! pass that sees one failure too many and lists the failures it saw then; when a whole wave
//! reports at once (a flood of agent reports), more failures of the same revision land after
//! that pass, and the target's progress no longer covers the halted revision. [`record`] adds
//! every later failure to the revision's `failedNodes` and keeps its `failed` and `inFlight`
//! counts in step with the nodes, so no report is lost from a Failed revision's status.

use std::collections::HashSet;
use std::sync::Arc;

use netrollout_api::{
    FailedNode, NetworkConfigRevision, NodeNetworkConfigStatus, RevisionPhase as ApiRevisionPhase,
};

use crate::context::{Context, StatusPatch};
use crate::convert;
use crate::error::{Error, Result};
use crate::fleet::{FailureIndex, Fleet};
use crate::views::NodeConfigView;

/// Brings every Failed revision's failure list and counts up to date with the node reports, as
/// the `fleet` saw them at the start of the pass.
///
/// # Errors
/// The first failed write (the caller retries the pass with backoff).
pub async fn record(ctx: &Context, fleet: &Fleet) -> Result<()> {
    let ncrs = ctx.read().revisions();
    if !ncrs.iter().any(|r| is_failed(r)) {
        return Ok(());
    }
    let writes = {
        let view = fleet.view();
        decide(&ncrs, &view.failures, |name| {
            view.objects(name).and_then(|o| o.config.clone())
        })?
    };
    for w in &writes {
        tracing::info!(revision = %w.revision, "late failure reports recorded on a Failed revision");
    }
    ctx.writer().patch_statuses(&writes).await
}

fn is_failed(r: &NetworkConfigRevision) -> bool {
    r.status.as_ref().and_then(|s| s.phase) == Some(ApiRevisionPhase::Failed)
}

/// The status patches that bring the Failed revisions up to date, by revision name; none when
/// they are. Reads the failure index, never the whole fleet: per Failed
/// revision, the nodes that reported it Failed (by name) and the configs still applying it;
/// `config` gives the node config of a failure not listed yet (for its reason and time).
///
/// # Errors
/// [`Error::Serialize`] if a failed-node list cannot be serialized.
pub fn decide(
    ncrs: &[Arc<NetworkConfigRevision>],
    index: &FailureIndex,
    config: impl Fn(&str) -> Option<Arc<NodeConfigView>>,
) -> Result<Vec<StatusPatch>> {
    let i = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let mut patches = Vec::new();
    for r in ncrs.iter().filter(|r| is_failed(r)) {
        let (Some(name), Some(status)) = (r.metadata.name.as_deref(), r.status.as_ref()) else {
            continue;
        };
        let listed: HashSet<&str> = status
            .failed_nodes
            .iter()
            .map(|f| f.node.as_str())
            .collect();
        let mut late: Vec<FailedNode> = index
            .failed(name)
            .filter(|node| !listed.contains(node))
            .filter_map(|node| {
                let c = config(node)?;
                Some(failed_node(node, c.status.as_ref()?))
            })
            .collect();
        // Every failure is counted; at most MAX_LISTED are listed (the revision must stay one
        // storable object however many nodes fail it).
        let count = i(status.failed_nodes.len() + late.len());
        late.sort_by(|a, b| a.node.cmp(&b.node));
        late.truncate(MAX_LISTED.saturating_sub(status.failed_nodes.len()));
        let in_flight = i(index.unfinished(name));
        if late.is_empty() && status.failed == count && status.in_flight == in_flight {
            continue;
        }
        let mut nodes = status.failed_nodes.clone();
        nodes.extend(late);
        let nodes = serde_json::to_value(nodes).map_err(|source| Error::Serialize {
            what: "failed nodes",
            source,
        })?;
        patches.push(StatusPatch {
            revision: name.to_string(),
            status: serde_json::json!({ "failedNodes": nodes, "failed": count, "inFlight": in_flight }),
            what: "record late failures on",
        });
    }
    patches.sort_by(|a, b| a.revision.cmp(&b.revision));
    Ok(patches)
}

/// Most failed nodes a revision's `status.failedNodes` lists (the first ones; `status.failed`
/// counts them all): a revision is one object, which etcd stores only up to 1.5 MiB, and its
/// snapshot may take all but the headroom kept for metadata and status.
pub const MAX_LISTED: usize = 100;
/// Longest message of a listed failure, in bytes (the agent's text, e.g. FRR's error lines).
pub const MAX_MESSAGE: usize = 1024;

/// `failure` with its message cut to [`MAX_MESSAGE`] bytes (at a character boundary) and at
/// most 64 failing checks.
pub fn bounded(mut failure: FailedNode) -> FailedNode {
    // The API's bound on `failingChecks` (an agent reports at most as many).
    failure.failing_checks.truncate(64);
    if failure.message.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE - 3;
        while !failure.message.is_char_boundary(end) {
            end -= 1;
        }
        failure.message.truncate(end);
        failure.message.push_str("...");
    }
    failure
}

/// A failure as the planner lists it: the agent's reason word (`Failed` without one), the
/// agent's `reason: message`, when it finished.
fn failed_node(node: &str, s: &NodeNetworkConfigStatus) -> FailedNode {
    let reason = netrollout_api::reason::agent_failure(s.reason.as_deref()).to_string();
    bounded(FailedNode {
        node: node.to_string(),
        message: match (&s.reason, &s.message) {
            (Some(r), Some(m)) => format!("{r}: {m}"),
            (Some(x), None) | (None, Some(x)) => x.clone(),
            (None, None) => "the agent reported Failed without a reason".into(),
        },
        reason,
        failing_checks: Vec::new(),
        time: Some(
            s.finished_at
                .clone()
                .unwrap_or_else(|| convert::to_time(convert::now())),
        ),
    })
}

#[cfg(test)]
mod tests {
    use netrollout_api::{
        NetworkConfigRevisionStatus, NodeNetworkConfigSpec, NodePhase, RevisionPhase,
    };
    use netrollout_testkit::objects::{failed_status, node_status};

    use super::*;

    fn ncr(name: &str, status: NetworkConfigRevisionStatus) -> Arc<NetworkConfigRevision> {
        let mut r = NetworkConfigRevision::new(name, Default::default());
        r.status = Some(status);
        Arc::new(r)
    }

    fn nnc(node: &str, spec: &str, status: NodeNetworkConfigStatus) -> Arc<NodeConfigView> {
        let spec = NodeNetworkConfigSpec {
            revision: spec.into(),
            config: Default::default(),
        };
        let mut c = netrollout_api::NodeNetworkConfig::new(node, spec);
        c.status = Some(status);
        Arc::new(NodeConfigView::of(&c))
    }

    fn updates_of(
        ncrs: &[Arc<NetworkConfigRevision>],
        nncs: &[Arc<NodeConfigView>],
    ) -> Vec<(String, serde_json::Value)> {
        let index = FailureIndex::from_configs(nncs);
        decide(ncrs, &index, |name| {
            nncs.iter()
                .find(|c| c.metadata.name.as_deref() == Some(name))
                .cloned()
        })
        .unwrap()
        .into_iter()
        .map(|p| (p.revision, p.status))
        .collect()
    }

    #[test]
    fn failures_reported_after_the_halt_are_added_and_counted() {
        let mut halted = failed_status("n-0", 4);
        halted.in_flight = 3;
        let ncrs = [ncr("bad", halted)];
        let nncs = [
            // Listed at the halt, now back on the good revision: not counted twice.
            nnc(
                "n-0",
                "good",
                node_status("bad", NodePhase::Failed, Some("x")),
            ),
            // Failed after the halt, still on the bad spec and already rolled back.
            nnc(
                "n-1",
                "bad",
                node_status("bad", NodePhase::Failed, Some("late")),
            ),
            nnc("n-2", "good", node_status("bad", NodePhase::Failed, None)),
            // Still applying the bad revision.
            nnc(
                "n-3",
                "bad",
                node_status("bad", NodePhase::Provisioning, None),
            ),
        ];
        let patches = updates_of(&ncrs, &nncs);
        assert_eq!(patches.len(), 1);
        let (name, p) = &patches[0];
        assert_eq!(name, "bad");
        assert_eq!(p["failed"], 3);
        assert_eq!(p["inFlight"], 1);
        let nodes: Vec<FailedNode> = serde_json::from_value(p["failedNodes"].clone()).unwrap();
        let names: Vec<&str> = nodes.iter().map(|f| f.node.as_str()).collect();
        assert_eq!(names, ["n-0", "n-1", "n-2"]);
        assert_eq!(nodes[1].reason, "ProbeFailed");
        assert_eq!(nodes[1].message, "ProbeFailed: late");
        assert!(nodes[2].time.is_some());
    }

    #[test]
    fn a_late_failure_without_a_reason_word_is_listed_as_failed_with_the_agents_text() {
        let ncrs = [ncr("bad", failed_status("n-0", 3))];
        let mut sentence = node_status("bad", NodePhase::Failed, Some("gateway unreachable"));
        sentence.reason = Some("probe failed after apply".into());
        let mut none = node_status("bad", NodePhase::Failed, None);
        none.reason = None;
        let nncs = [nnc("n-1", "bad", sentence), nnc("n-2", "bad", none)];
        let patches = updates_of(&ncrs, &nncs);
        let nodes: Vec<FailedNode> =
            serde_json::from_value(patches[0].1["failedNodes"].clone()).unwrap();
        for f in &nodes {
            assert!(
                netrollout_api::reason::is_reason_word(&f.reason),
                "{nodes:?}"
            );
        }
        assert_eq!(
            (nodes[1].reason.as_str(), nodes[2].reason.as_str()),
            ("Failed", "Failed")
        );
        assert_eq!(
            nodes[1].message,
            "probe failed after apply: gateway unreachable"
        );
        assert_eq!(
            nodes[2].message,
            "the agent reported Failed without a reason"
        );
    }

    #[test]
    fn a_revision_lists_at_most_max_listed_failures_counts_them_all_and_then_stays_put() {
        let ncrs = [ncr("bad", failed_status("n-000", 1))];
        let long = "x".repeat(5 * MAX_MESSAGE);
        let nncs: Vec<_> = (1..=150)
            .map(|n| {
                nnc(
                    &format!("n-{n:03}"),
                    "bad",
                    node_status("bad", NodePhase::Failed, Some(&long)),
                )
            })
            .collect();
        let patches = updates_of(&ncrs, &nncs);
        let p = &patches[0].1;
        assert_eq!(p["failed"], 151);
        let nodes: Vec<FailedNode> = serde_json::from_value(p["failedNodes"].clone()).unwrap();
        assert_eq!(nodes.len(), MAX_LISTED);
        assert!(
            nodes.iter().all(|f| f.message.len() <= MAX_MESSAGE),
            "messages are cut"
        );
        // The next pass, with the list and count as written: nothing to write.
        let mut status = ncrs[0].status.clone().unwrap();
        status.failed_nodes = nodes;
        status.failed = 151;
        status.in_flight = 0;
        assert_eq!(updates_of(&[ncr("bad", status)], &nncs), Vec::new());
    }

    #[test]
    fn an_up_to_date_failed_revision_and_other_phases_are_left_alone() {
        let ncrs = [
            ncr("bad", failed_status("n-0", 2)),
            ncr(
                "good",
                NetworkConfigRevisionStatus {
                    phase: Some(RevisionPhase::Succeeded),
                    ..Default::default()
                },
            ),
        ];
        let nncs = [
            nnc("n-0", "good", node_status("bad", NodePhase::Failed, None)),
            nnc("n-1", "good", node_status("good", NodePhase::Failed, None)),
        ];
        assert_eq!(updates_of(&ncrs, &nncs), Vec::new());
    }

    /// The exact request [`record`] makes, through a real client to the request verifier: one
    /// status merge patch of the Failed revision with the late failure, then none once the
    /// answer is seen.
    #[tokio::test]
    async fn record_patches_the_failed_revision_once() {
        let ncrs = [ncr("bad", failed_status("n-0", 2))];
        let failed =
            |node, message| nnc(node, "good", node_status("bad", NodePhase::Failed, message));
        let nncs = [failed("n-0", Some("x")), failed("n-1", Some("late"))];
        let revisions: Vec<NetworkConfigRevision> = ncrs.iter().map(|r| (**r).clone()).collect();
        let configs: Vec<NodeConfigView> = nncs.iter().map(|c| (**c).clone()).collect();
        let (ctx, server) = crate::context::verifier::context(&revisions, &configs, true);
        let fleet = Fleet::new(Default::default(), Default::default());
        drop(fleet.refresh(ctx.read()));

        record(&ctx, &fleet).await.expect("record");
        let seen = server.take();
        assert_eq!(seen.len(), 1, "{seen:#?}");
        let status = seen[0].status_patch("bad");
        assert_eq!(*status, updates_of(&ncrs, &nncs)[0].1);
        assert_eq!(status["failed"], 2);

        record(&ctx, &fleet).await.expect("second record");
        assert_eq!(server.take(), Vec::new());
    }
}
