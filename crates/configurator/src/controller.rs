//! [`run`]: watches, leader election, the metrics and health endpoints, and the debounced
//! reconcile loop. Every replica watches; only the lease holder writes, and it stops writing
//! the moment the lease is lost.

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Node as KubeNode};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use kube_lease_manager::LeaseManagerBuilder;
use netrollout_api::NodePhase;
use netrollout_rollout::RolloutStrategy;
use netrollout_support::tasks::{Life, Tasks};
use serde::de::DeserializeOwned;
use tokio::sync::Notify;

use crate::args::Args;
use crate::context::{Context, Stores};
use crate::error::{Error, Result};
use crate::fleet::Changes;
use crate::metrics::{self, Metrics};
use crate::reconcile::Passes;
use crate::views::NodeConfigView;

/// Longest wait between retries of a failed pass.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The runtime the configurator runs on: one thread. Its work is a sequence (watch events
/// into caches, one pass at a time, the pass's writes) that one core keeps up with at 10,000
/// nodes; on the multi-threaded runtime each event and response woke another worker, and the
/// thread hand-offs cost a quarter of its CPU (docs/configurator.md). Nothing in the
/// configurator blocks its thread: the longest step, a pass, takes milliseconds, and the lease
/// is renewed between steps (the end-to-end tests run the configurator on this runtime).
pub const RUNTIME: netrollout_support::Flavor = netrollout_support::Flavor::CurrentThread;

/// The process's `main` (`main.rs` calls it with the parsed flags): logging, the client from
/// `--kubeconfig` or the service account, and [`run`] on the [`RUNTIME`] until SIGTERM or
/// Ctrl-C. The async code is compiled once, here ([`netrollout_support::runtime`]).
///
/// # Errors
/// The runtime, the kubeconfig or the client cannot be set up, or [`run`] fails.
pub fn block_on(args: Args) -> anyhow::Result<()> {
    use anyhow::Context as _;
    netrollout_support::block_on(RUNTIME, async move {
        netrollout_support::init_logging(args.log_format, "info");
        let config = netrollout_support::kube_config(args.kubeconfig.as_deref(), None).await?;
        let client = netrollout_support::client(config)?;
        let metrics = Arc::new(Metrics::default());
        run(args, client, metrics, netrollout_support::shutdown())
            .await
            .context("the configurator stopped")
    })
    .context("cannot start the tokio runtime")?
}

/// Runs the configurator until `shutdown` completes (then releases the lease) or a background
/// task ends (an error: the process should restart). `metrics` is shared with the caller.
///
/// # Errors
/// Invalid flags, a port that cannot be bound, leader-election setup, or an ended task.
pub async fn run(
    args: Args,
    client: Client,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    args.validate()?;
    let identity = args.identity();
    let mut tasks = supervised(&metrics);
    let notify = Arc::new(Notify::new());

    let (addrs, serve_metrics, serve_health) =
        metrics::serve(metrics.clone(), args.metrics_addr, args.health_addr).await?;
    tracing::info!(metrics = %addrs[0], health = %addrs[1], identity = %identity, "serving metrics and health");
    tasks.spawn("metrics-server", Life::Process, async move {
        if let Err(e) = serve_metrics.await {
            tracing::error!(error = %e, "the metrics server stopped");
        }
    });
    tasks.spawn("health-server", Life::Process, async move {
        if let Err(e) = serve_health.await {
            tracing::error!(error = %e, "the health server stopped");
        }
    });

    let changes = Arc::new(Changes::default());
    let stores = start_watches(&client, &args, &notify, &changes, &mut tasks);

    let lease = format!("{}/{}", args.lease_namespace, args.lease_name);
    let secs = args.lease_duration.as_secs().max(2);
    let manager = LeaseManagerBuilder::new(client.clone(), &args.lease_name)
        .with_namespace(&args.lease_namespace)
        .with_identity(&identity)
        .with_duration(secs)
        .with_grace((secs / 3).max(1))
        .build()
        .await
        .map_err(|source| Error::Lease {
            lease: lease.clone(),
            source,
        })?;
    let (leader_rx, lease_task) = manager.watch().await;

    let timing = Timing {
        resync: args.resync,
        debounce: args.debounce,
        window: args.rollout_strategy == RolloutStrategy::Window,
    };
    let prometheus = args
        .prometheus_url
        .as_deref()
        .map(|url| crate::analysis::Prometheus::new(url, args.api_timeout))
        .transpose()?;
    let start = match (&prometheus, &args.start_blocking_query) {
        (Some(p), Some(q)) => Some(crate::approval::StartQuery::new(p.clone(), q.clone())),
        _ => None,
    };
    let passes = Passes::new(
        args.settings(false),
        crate::convert::Reading {
            own_node: args.node_name.clone(),
            domain_key: args.domain_key.clone(),
        },
        changes.clone(),
        prometheus,
        start,
    );
    let ctx = Arc::new(Context::new(
        client,
        stores,
        changes,
        metrics.clone(),
        leader_rx.clone(),
        identity,
        args.api_timeout,
    ));
    let result = drive(
        &ctx, &passes, timing, leader_rx, &notify, &mut tasks, shutdown,
    )
    .await;
    // Dropping every receiver makes the lease task release the lease and end.
    drop(ctx);
    tasks.shutdown().await;
    match tokio::time::timeout(Duration::from_secs(5), lease_task).await {
        Ok(Ok(Ok(_))) => tracing::info!(lease = %lease, "lease released"),
        Ok(Ok(Err(e))) => tracing::warn!(lease = %lease, error = %e, "releasing the lease failed"),
        Ok(Err(e)) => tracing::warn!(lease = %lease, error = %e, "lease task panicked"),
        Err(_) => tracing::warn!(lease = %lease, "releasing the lease timed out"),
    }
    metrics.leader.set(0);
    result
}

/// The configurator's background tasks (watches, lease, HTTP servers): the first to die
/// fails `/healthz` at once and ends [`run`] with [`Error::TaskEnded`] naming it.
pub(crate) fn supervised(metrics: &Arc<Metrics>) -> Tasks {
    let metrics = metrics.clone();
    Tasks::new(Arc::new(move |death: &str| {
        tracing::error!(task_death = death, "a background task died; /healthz fails");
        metrics.task_died(death);
    }))
}

/// When the loop runs a pass (from the flags).
#[derive(Debug, Clone, Copy)]
struct Timing {
    /// `--resync`: a pass at least this often.
    resync: Duration,
    /// `--debounce`: changes within it are planned together.
    debounce: Duration,
    /// `--rollout-strategy window`: a freed slot starts a pass at once.
    window: bool,
}

async fn drive(
    ctx: &Context,
    passes: &Passes,
    timing: Timing,
    mut leader_rx: tokio::sync::watch::Receiver<bool>,
    notify: &Notify,
    tasks: &mut Tasks,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    tokio::pin!(shutdown);
    let synced = ctx.read().wait_until_synced();
    tokio::select! {
        biased;
        () = &mut shutdown => return Ok(()),
        death = tasks.dead() => return Err(Error::TaskEnded(death)),
        () = synced => {}
    }
    ctx.metrics().set_ready();
    tracing::info!("caches synced");
    let mut backoff = Duration::ZERO;
    loop {
        tokio::select! {
            biased;
            () = &mut shutdown => return Ok(()),
            death = tasks.dead() => return Err(Error::TaskEnded(death)),
            changed = leader_rx.changed() => {
                if changed.is_err() {
                    return Err(Error::TaskEnded("the lease task ended".into()));
                }
                let leading = *leader_rx.borrow_and_update();
                ctx.metrics().leader.set(i64::from(leading));
                tracing::info!(leading, "leadership changed");
            }
            () = notify.notified() => {}
            () = tokio::time::sleep(timing.resync) => {}
        }
        // Debounce: changes arriving within the window are planned together. When the last
        // node the previous pass left in flight has reported, nothing more is coming for this
        // wave: plan at once. With the window strategy, the first of them to report frees a
        // slot: plan at once too (a pass takes milliseconds, and the reports that arrive
        // meanwhile are planned by the next one).
        let debounce = timing.debounce;
        let fleet = passes.fleet();
        let settling = || fleet.since_input().is_some_and(|d| d < debounce);
        let window = timing.window;
        tokio::select! {
            biased;
            () = &mut shutdown => return Ok(()),
            () = fleet.all_reported() => {}
            () = fleet.slot_freed(), if window && !settling() => {}
            () = tokio::time::sleep(debounce) => {}
        }
        // An input that changed within the debounce gets the rest of it: inputs applied
        // together are planned together, whatever woke this pass.
        if let Some(since) = fleet.since_input().filter(|d| *d < debounce) {
            tokio::select! {
                biased;
                () = &mut shutdown => return Ok(()),
                () = tokio::time::sleep(debounce - since) => {}
            }
        }
        if !ctx.writer().is_leader() {
            continue;
        }
        let mut lost = ctx.writer().leadership();
        let started = std::time::Instant::now();
        let outcome = tokio::select! {
            biased;
            _ = lost.wait_for(|leading| !*leading) => Err(Error::NotLeader),
            r = passes.pass(ctx) => r,
        };
        ctx.metrics().passes.inc();
        ctx.metrics()
            .pass_seconds
            .inc_by(started.elapsed().as_secs_f64());
        match outcome {
            Ok(plan) => {
                backoff = Duration::ZERO;
                tracing::debug!(actions = plan.actions.len(), mode = ?plan.summary.mode,
                    duration_us = started.elapsed().as_micros() as u64, "pass done");
            }
            Err(e) => {
                ctx.metrics().error(&e);
                backoff = if e.is_conflict() {
                    Duration::from_millis(20)
                } else {
                    (backoff * 2).clamp(Duration::from_millis(100), MAX_BACKOFF)
                };
                tracing::warn!(error = %e, retry_in = ?backoff, "reconcile pass failed; re-planning from fresh state");
                tokio::select! {
                    biased;
                    () = &mut shutdown => return Ok(()),
                    () = tokio::time::sleep(backoff) => {}
                }
                notify.notify_one();
            }
        }
    }
}

fn start_watches(
    client: &Client,
    args: &Args,
    notify: &Arc<Notify>,
    changes: &Arc<Changes>,
    tasks: &mut Tasks,
) -> Stores {
    let all = watcher::Config::default();
    let mut node_cfg = watcher::Config::default();
    if !args.node_selector.trim().is_empty() {
        node_cfg = node_cfg.labels(args.node_selector.trim());
    }
    let control_cfg = watcher::Config::default().fields(&format!(
        "metadata.name={}",
        netrollout_api::CONTROL_CONFIGMAP
    ));
    let c = || client.clone();
    let w = Watch {
        notify,
        changes,
        role: Role::Other,
    };
    let input = Watch {
        role: Role::Input,
        ..w
    };
    let fleet = Watch {
        role: Role::Fleet,
        ..w
    };
    Stores {
        vrfs: input.start(Api::all(c()), all.clone(), tasks),
        layer2s: input.start(Api::all(c()), all.clone(), tasks),
        tables: input.start(Api::all(c()), all.clone(), tasks),
        peerings: input.start(Api::all(c()), all.clone(), tasks),
        nodes: fleet.start::<KubeNode>(Api::all(c()), node_cfg, tasks),
        nncs: fleet.start_with(Api::all(c()), all.clone(), tasks, reported),
        ncrs: w.start(Api::all(c()), all, tasks),
        control: w.start::<ConfigMap>(
            Api::namespaced(c(), &args.lease_namespace),
            control_cfg,
            tasks,
        ),
        schedules: w.start(Api::all(c()), watcher::Config::default(), tasks),
    }
}

/// How a watch reports: a pass is due after every event; the watches of Nodes and node configs
/// also mark the changed names for the fleet ([`Changes`]), those of the inputs the time of the
/// change.
#[derive(Clone, Copy)]
struct Watch<'a> {
    notify: &'a Arc<Notify>,
    changes: &'a Arc<Changes>,
    role: Role,
}

/// What a watched kind is to the passes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Nodes and node configs: marked by name.
    Fleet,
    /// What revisions are made from: a pass waits for the debounce after a change.
    Input,
    /// Everything else.
    Other,
}

impl Watch<'_> {
    fn start<K>(&self, api: Api<K>, cfg: watcher::Config, tasks: &mut Tasks) -> Store<K>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        self.start_with(api, cfg, tasks, |_| false)
    }

    /// [`Watch::start`]; an applied object for which `outcome` holds is also a report of its
    /// node ([`Changes::reported`]).
    fn start_with<K>(
        &self,
        api: Api<K>,
        cfg: watcher::Config,
        tasks: &mut Tasks,
        outcome: fn(&K) -> bool,
    ) -> Store<K>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        let (reader, writer) = reflector::store();
        let kind = K::kind(&()).to_string();
        let notify = self.notify.clone();
        let changes = self.changes.clone();
        let role = self.role;
        // The caches hold each object without its managedFields (field ownership for
        // server-side apply), so they are neither kept nor cloned with it; of an input only the
        // entry of the last spec write stays, without its field set: the change record's
        // client and time.
        let stream = reflector::reflector(
            writer,
            watcher(api, cfg)
                .default_backoff()
                .modify(move |obj: &mut K| {
                    let meta = obj.meta_mut();
                    meta.managed_fields = match role {
                        Role::Input => {
                            crate::revisions::record::last_spec_write(meta.managed_fields.take())
                        }
                        _ => None,
                    };
                }),
        );
        tasks.spawn(format!("watch-{kind}"), Life::Process, async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                match event {
                    Ok(event) => {
                        // The reflector has stored the event before it is seen here, so a
                        // pass that takes the mark reads the object as the event left it.
                        if role == Role::Input {
                            changes.input_changed();
                        }
                        if role == Role::Fleet {
                            mark(&changes, &event);
                            if let watcher::Event::Apply(obj) = &event
                                && outcome(obj)
                                && let Some(name) = obj.meta().name.as_deref()
                            {
                                changes.reported(name);
                            }
                        }
                        notify.notify_one();
                    }
                    Err(e) => {
                        tracing::warn!(kind = %kind, error = %e, "watch failed; retrying with backoff")
                    }
                }
            }
            tracing::error!(kind = %kind, "the watch ended");
        });
        reader
    }
}

/// Whether a node config shows an outcome (Provisioned or Failed) of its spec's revision.
fn reported(nnc: &NodeConfigView) -> bool {
    nnc.status.as_ref().is_some_and(|s| {
        s.observed_revision.as_deref() == Some(nnc.spec.revision.as_str())
            && matches!(s.phase, Some(NodePhase::Provisioned | NodePhase::Failed))
    })
}

fn mark<K: Resource>(changes: &Changes, event: &watcher::Event<K>) {
    match event {
        watcher::Event::Apply(obj) | watcher::Event::Delete(obj) => {
            if let Some(name) = obj.meta().name.as_deref() {
                changes.mark(name);
            }
        }
        // A relist replaces the whole cache when it is done: everything is read again.
        watcher::Event::InitDone => changes.mark_all(),
        watcher::Event::Init | watcher::Event::InitApply(_) => {}
    }
}

#[cfg(test)]
mod tests;
