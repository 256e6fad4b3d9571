//! One reconcile pass: retries, inputs → revision, observed state → planner → actions, then
//! the target revision's progress, late failures of Failed revisions, the revisions'
//! conditions (when out of date), the pre-flight verdict and the gauges. Every
//! pass plans from the watch caches (plus this replica's own writes), never from memory of
//! its own, so a new leader resumes from the API; the planner's node state is kept up to date
//! from the changes the watches report ([`crate::fleet`]), so a pass costs what changed.

use std::collections::HashMap;
use std::sync::Arc;

use netrollout_api::NetworkConfigRevision;
use netrollout_api::reason::GUARD_TRIPPED;
use netrollout_rollout::guard::GuardTrip;
use netrollout_rollout::{Action, Mode, Plan, RevisionPhase, Settings, State, Summary};

use crate::context::Context;
use crate::convert;
use crate::error::Result;
use crate::execute::{self, World};
use crate::fleet::{Changes, Fleet};
use crate::late_failures;
use crate::memo::{NotedMemo, ProgressMemo};
use crate::metrics::Metrics;
use crate::render_cache::RenderCache;
use crate::revisions;
use progress::progress;

mod progress;
#[cfg(test)]
mod requests;

/// What passes keep between them, each part owned by the step that needs it: the planner's
/// settings (from the flags; the global pause is read each pass), the fleet (the planner's node
/// state, kept up to date from the changes the watches mark), the revisions rendered for the
/// current nodes, the lifecycle's memos, when the target's progress was last written, and the
/// halted rollbacks already told.
#[derive(Debug)]
pub struct Passes {
    settings: Settings,
    fleet: Fleet,
    renders: RenderCache,
    revisions: revisions::Memos,
    progress: ProgressMemo,
    halts: NotedMemo,
    preflight: NotedMemo,
    schedule_holds: NotedMemo,
    analyst: crate::analysis::Analyst,
    holds: NotedMemo,
    start: Option<crate::approval::StartQuery>,
}

impl Passes {
    /// Passes planned with `settings` (its `paused` is replaced by the global pause each pass)
    /// over the nodes whose `changes` the watches mark; `reading` names the node this replica
    /// runs on (dispatched last) and the failure-domain label; `prometheus` is where analysis
    /// checks are measured; `start` is the blocking query of a healthy start, if any.
    pub fn new(
        settings: Settings,
        reading: crate::convert::Reading,
        changes: Arc<Changes>,
        prometheus: Option<crate::analysis::Prometheus>,
        start: Option<crate::approval::StartQuery>,
    ) -> Self {
        Self {
            settings,
            fleet: Fleet::new(reading, changes),
            renders: RenderCache::default(),
            revisions: revisions::Memos::default(),
            progress: ProgressMemo::default(),
            halts: NotedMemo::default(),
            preflight: NotedMemo::default(),
            schedule_holds: NotedMemo::default(),
            analyst: crate::analysis::Analyst::new(prometheus),
            holds: NotedMemo::default(),
            start,
        }
    }

    /// The fleet, whose changes the reconcile loop waits on.
    pub fn fleet(&self) -> &Fleet {
        &self.fleet
    }

    /// Runs one pass and returns the plan it carried out. The fleet is brought up to date once,
    /// at the start: changes marked during the pass are planned by the next one.
    ///
    /// # Errors
    /// The first failed write (the caller retries with backoff).
    #[tracing::instrument(skip_all, level = "debug")]
    pub async fn pass(&self, ctx: &Context) -> Result<Plan> {
        let refreshing = std::time::Instant::now();
        let (generation, render_nodes) = self.fleet.refresh(ctx.read()).render_nodes();
        let refreshed = refreshing.elapsed();
        self.renders.set_nodes(generation, render_nodes.clone());
        let refusal = revisions::sync(ctx, &self.revisions, generation, &render_nodes).await?;

        let ncrs = ctx.read().revisions();
        let now = convert::now();
        let start_check = match &self.start {
            Some(q) => q.check().await,
            None => Default::default(),
        };
        let settings = Settings {
            paused: ctx.read().globally_paused(),
            start_check,
            schedule: crate::schedule::lay_out(&ctx.read().schedules(), now),
            ..self.settings.clone()
        };
        let planning = std::time::Instant::now();
        let (plan, nodes, nncs, unresponsive) = {
            let view = self.fleet.view();
            let mut revisions = convert::revisions(&ncrs);
            crate::preflight::fill(&mut revisions, &ncrs, view.lacking(), &self.renders);
            self.analyst.fill(&mut revisions, &ncrs);
            // The nodes come from the kept fleet, not `state.nodes`.
            let state = State {
                revisions,
                ..State::default()
            };
            let plan = netrollout_rollout::plan_with(&state, &view.nodes, now, &settings);
            let mut nodes = HashMap::new();
            let mut nncs = HashMap::new();
            for name in execute::nodes_named(&plan.actions) {
                if let Some(o) = view.objects(name) {
                    if let Some(n) = &o.node {
                        nodes.insert(name.to_string(), n.clone());
                    }
                    if let Some(c) = &o.config {
                        nncs.insert(name.to_string(), c.clone());
                    }
                }
            }
            (plan, nodes, nncs, view.unresponsive())
        };
        ctx.metrics()
            .plan_seconds
            .inc_by((refreshed + planning.elapsed()).as_secs_f64());
        let world = World {
            nodes,
            nncs,
            ncrs: execute::index(&ncrs),
            renders: &self.renders,
            globally_paused: settings.paused,
            refusal: refusal.as_ref(),
        };
        // When the plan sets a phase (Succeeded), the counts go first: whoever sees the phase
        // sees the counts that made it so, not the last pass's (a flood of reports settles a
        // wave in one pass). Otherwise the dispatches go first: a wave's agents do not wait for
        // a count.
        let urgent = plan
            .actions
            .iter()
            .any(|a| matches!(a, Action::SetRevisionPhase { .. }));
        if urgent {
            progress(ctx, &self.progress, &plan.summary, unresponsive, true).await?;
        }
        // What holds the target and the promotions people wrote are told before the pass's
        // actions: the write that ends a rollout (Succeeded) then finds them recorded, even when
        // a pass before was cut short after its dispatches.
        crate::approval::tell(ctx, &self.holds, &plan.summary).await?;
        self.fleet.await_reports(&plan.summary.awaited);
        let ran = execute::run(ctx, &world, &plan.actions).await;
        // Told even when an action of the pass failed: once the Failed phase is written no
        // later pass trips again to tell it (if that write failed, the next pass trips and
        // tells it again).
        if let Some(trip) = &plan.summary.guard {
            tell_trip(ctx, trip, &ncrs).await;
        }
        ran?;
        if !urgent {
            progress(ctx, &self.progress, &plan.summary, unresponsive, false).await?;
        }
        late_failures::record(ctx, &self.fleet).await?;
        halted_rollback(ctx, &self.halts, &plan.summary, settings.max_failures).await;
        crate::conditions::sync(ctx, refusal.as_ref()).await?;
        crate::preflight::tell(ctx, &self.preflight, &plan.summary).await?;
        crate::schedule::tell(ctx, &self.schedule_holds, &plan.summary).await;
        self.analyst.run(ctx, &plan.summary).await?;
        gauges(ctx.metrics(), &plan.summary, &ncrs);
        Ok(plan)
    }
}

/// A rollback that halts is a decision without an action (nothing more moves), so it is told
/// here: a Warning Event `RollbackHalted` on the known-good revision the first time a pass finds
/// the rollback to it halted; once it moves again (failures back within the budget) a later halt
/// is told again. (A halt without any known-good revision is told by the Failed revision's own
/// Event.)
async fn halted_rollback(ctx: &Context, told: &NotedMemo, summary: &Summary, max_failures: usize) {
    let Some(target) = summary.target.as_deref() else {
        return;
    };
    let key = format!("rollback/{target}");
    let Some(note) = halted_note(summary, max_failures) else {
        told.first_time(&key, "moving");
        return;
    };
    if !told.first_time(&key, "halted") {
        return;
    }
    tracing::warn!(
        revision = target,
        failed = summary.target_failed,
        "rollback halted"
    );
    if let Some(ncr) = ctx.read().revision(target) {
        ctx.writer()
            .event(ncr.as_ref(), true, "RollbackHalted", "Rollback", &note)
            .await;
    }
}

/// What the Event `RollbackHalted` says when the rollback to the target is halted; `None` while
/// it moves (or there is no target).
fn halted_note(summary: &Summary, max_failures: usize) -> Option<String> {
    let target = summary.target.as_deref()?;
    (summary.mode == Mode::Halted).then(|| {
        format!(
            "rollback to known-good revision {target} halted: {} node(s) failed it (more than --max-failures={max_failures}); nothing more moves until the failures are within the budget (retry the failed nodes or remove them) or a newer revision is applied",
            summary.target_failed
        )
    })
}

/// Tells a trip the pass carried out (its revision is Failed by now): a Warning Event
/// `GuardTripped` on the revision naming the regressed nodes and their checks, a log line and
/// `netrollout_configurator_guard_trips_total`.
async fn tell_trip(ctx: &Context, trip: &GuardTrip, ncrs: &[Arc<NetworkConfigRevision>]) {
    ctx.metrics().guard_trips.inc();
    let note = crate::health::trip_note(trip);
    tracing::warn!(revision = %trip.revision, mode = %trip.mode, regressed = trip.regressed.len(), wave = trip.wave.len(), "{note}");
    if let Some(ncr) = ncrs
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some(trip.revision.as_str()))
    {
        ctx.writer()
            .event(ncr.as_ref(), true, GUARD_TRIPPED, "Guard", &note)
            .await;
    }
}

fn gauges(m: &Metrics, summary: &Summary, ncrs: &[Arc<NetworkConfigRevision>]) {
    const PHASES: [(RevisionPhase, &str); 6] = [
        (RevisionPhase::Pending, "Pending"),
        (RevisionPhase::Progressing, "Progressing"),
        (RevisionPhase::Succeeded, "Succeeded"),
        (RevisionPhase::Failed, "Failed"),
        (RevisionPhase::Superseded, "Superseded"),
        (RevisionPhase::Blocked, "Blocked"),
    ];
    let phases: Vec<RevisionPhase> = ncrs
        .iter()
        .filter(|r| r.metadata.deletion_timestamp.is_none())
        .map(|r| convert::revision_phase(r))
        .collect();
    let counts: Vec<(&str, i64)> = PHASES
        .iter()
        .map(|(p, name)| {
            let n = phases.iter().filter(|q| *q == p).count();
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
