//! One reconcile pass: retries, inputs → revision, observed state → planner → actions, then
//! the target revision's progress, late failures of Failed revisions and the gauges. Every
//! pass starts from the watch caches (plus this replica's own writes), never from memory, so a
//! new leader resumes from the API.

use kube::api::{Api, Patch, PatchParams};
use netrollout_api::NetworkConfigRevision;
use netrollout_render::Node as RenderNode;
use netrollout_rollout::{Plan, RevisionPhase, State, Summary};

use crate::context::Context;
use crate::convert;
use crate::error::Result;
use crate::execute::{self, World};
use crate::late_failures;
use crate::metrics::Metrics;

/// Runs one pass and returns the plan it carried out.
///
/// # Errors
/// The first failed write (the caller retries with backoff).
#[tracing::instrument(skip(ctx), level = "debug")]
pub async fn pass(ctx: &Context) -> Result<Plan> {
    let nodes = ctx.read().nodes();
    let render_nodes: Vec<RenderNode> = nodes
        .iter()
        .filter(|n| n.metadata.deletion_timestamp.is_none())
        .map(|n| RenderNode {
            name: n.metadata.name.clone().unwrap_or_default(),
            labels: n.metadata.labels.clone().unwrap_or_default(),
        })
        .collect();
    ctx.renders().set_nodes(render_nodes.clone());
    crate::revisions::sync(ctx, &render_nodes).await?;

    let ncrs = ctx.read().revisions();
    let nncs = ctx.read().node_configs();
    let state = convert::state(&nodes, &nncs, &ncrs, ctx.args().node_name.as_deref());
    let settings = ctx.args().settings(ctx.read().globally_paused());
    let plan = netrollout_rollout::plan(&state, convert::now(), &settings);
    let world = World {
        nodes: execute::index(&nodes),
        nncs: execute::index(&nncs),
        ncrs: execute::index(&ncrs),
        renders: ctx.renders(),
    };
    // The counts go first: whoever sees the phase the actions set (Succeeded) sees the counts
    // that made it so, not the last pass's (a flood of reports settles a wave in one pass).
    progress(ctx, &plan.summary, &state).await?;
    execute::run(ctx, &world, &plan.actions).await?;
    late_failures::record(ctx).await?;
    gauges(ctx.metrics(), &plan.summary, &state);
    Ok(plan)
}

/// Writes the target's counts (`ready/total` and the rest) when they changed.
async fn progress(ctx: &Context, summary: &Summary, state: &State) -> Result<()> {
    let Some(target) = summary.target.as_deref() else {
        return Ok(());
    };
    let Some(ncr) = ctx
        .read()
        .revisions()
        .into_iter()
        .find(|r| r.metadata.name.as_deref() == Some(target))
    else {
        return Ok(());
    };
    let i = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let total = summary.managed;
    let unresponsive = state
        .nodes
        .iter()
        .filter(|n| !n.deleting && n.unresponsive_since.is_some())
        .count();
    let queued = total
        .saturating_sub(summary.target_updated)
        .saturating_sub(summary.target_failed)
        .saturating_sub(summary.in_flight)
        .saturating_sub(summary.not_ready);
    let want = serde_json::json!({
        "total": i(total),
        "queued": i(queued),
        "inFlight": i(summary.in_flight),
        "ready": i(summary.target_updated),
        "failed": i(summary.target_failed),
        "unresponsive": i(unresponsive),
        "skipped": i(summary.not_ready),
        "progress": format!("{}/{}", summary.target_updated, total),
    });
    let current = ncr.status.clone().unwrap_or_default();
    let have = serde_json::json!({
        "total": current.total,
        "queued": current.queued,
        "inFlight": current.in_flight,
        "ready": current.ready,
        "failed": current.failed,
        "unresponsive": current.unresponsive,
        "skipped": current.skipped,
        "progress": current.progress.unwrap_or_default(),
    });
    if want == have {
        return Ok(());
    }
    let api: Api<NetworkConfigRevision> = ctx.writer().api();
    ctx.writer()
        .write_revision(
            || format!("patch progress of NetworkConfigRevision {target}"),
            api.patch_status(
                target,
                &PatchParams::default(),
                &Patch::Merge(&serde_json::json!({ "status": want })),
            ),
        )
        .await?;
    Ok(())
}

fn gauges(m: &Metrics, summary: &Summary, state: &State) {
    const PHASES: [(RevisionPhase, &str); 6] = [
        (RevisionPhase::Pending, "Pending"),
        (RevisionPhase::Progressing, "Progressing"),
        (RevisionPhase::Succeeded, "Succeeded"),
        (RevisionPhase::Failed, "Failed"),
        (RevisionPhase::Superseded, "Superseded"),
        (RevisionPhase::Blocked, "Blocked"),
    ];
    let counts: Vec<(&str, i64)> = PHASES
        .iter()
        .map(|(p, name)| {
            let n = state.revisions.iter().filter(|r| r.phase == *p).count();
            (*name, i64::try_from(n).unwrap_or(i64::MAX))
        })
        .collect();
    let names: Vec<&str> = PHASES.iter().map(|(_, n)| *n).collect();
    Metrics::set_all(&m.revisions, &names, &counts);
    let g = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    Metrics::set_all(
        &m.nodes,
        &["managed", "not_ready", "in_flight", "updated", "failed"],
        &[
            ("managed", g(summary.managed)),
            ("not_ready", g(summary.not_ready)),
            ("in_flight", g(summary.in_flight)),
            ("updated", g(summary.target_updated)),
            ("failed", g(summary.target_failed)),
        ],
    );
}
