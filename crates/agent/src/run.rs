//! The agent's main loop: recover, watch the node's own `NodeNetworkConfig`, reconcile the
//! newest one, report; until shutdown. Before it, the netlink connection is opened as a
//! bounded step ([`connect`]: the kernel may hold its netlink lock), with the status writer,
//! the watch and the capability detection already running.
//!
//! Its background tasks (the status writer, the watch, the capability report, the removal of
//! startup taints, the neighbour host routes of [`crate::neighbours`]) are supervised ([`Tasks`]): one that panics, or a status writer or watch
//! that returns, fails `/healthz` at once and ends the agent with an error naming it (a
//! non-zero exit: the kubelet restarts it), once the transaction under way is finished.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use netrollout_api::NodeNetworkConfig;
use netrollout_dataplane::Dataplane;
use tokio::sync::watch;

use crate::agent::{Agent, Settings};
use crate::bounded::Bounded;
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::probe::{ProbeConfig, Prober};
use crate::status::{Report, reporter};
use crate::store::Store;
use netrollout_support::tasks::{Life, Tasks};

/// How often the agent re-reads its state and the newest object without a watch event (picks
/// up a deleted corrupt state file, for one).
const RESYNC: Duration = Duration::from_secs(30);
/// Pause before retrying after an agent-level error.
const ERROR_RETRY: Duration = Duration::from_secs(5);
/// A continuous-health round's deadline beyond its checks' own limit.
const HEALTH_ROUND_SLACK: Duration = Duration::from_secs(10);

/// Everything [`run`] needs.
#[derive(Debug)]
pub struct Config {
    /// Node settings.
    pub settings: Settings,
    /// Probe settings.
    pub probes: ProbeConfig,
    /// The state directory.
    pub state_dir: std::path::PathBuf,
    /// FRR support (`None`: off).
    pub frr: Option<crate::frr::FrrSettings>,
    /// Startup taints to remove once the node's network works ([`crate::taints`]).
    pub remove_taints: Vec<String>,
    /// Continuous health interval ([`crate::watch`]; zero: off).
    pub watch_interval: Duration,
    /// The time limit of each watch of the node's object ([`watch_config`]).
    pub api_watch_timeout: Duration,
}

/// Runs the agent until `shutdown` resolves.
pub async fn run(
    cfg: Config,
    client: Client,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    let node = cfg.settings.node.clone();
    let store = Store::open(&cfg.state_dir)?;
    let (reports_tx, reports_rx) = watch::channel::<Option<Report>>(None);
    let nnc_api: Api<NodeNetworkConfig> = Api::all(client.clone());
    let (latest_tx, mut latest) = watch::channel::<Option<NodeNetworkConfig>>(None);
    let mut tasks = supervised(&metrics);
    let deadlines = cfg.settings.deadlines;
    let bounded = Bounded::new(metrics.clone(), deadlines.slow, deadlines.api);
    tasks.spawn(
        "status-writer",
        Life::Process,
        reporter(
            client.clone(),
            node.clone(),
            reports_rx,
            latest.clone(),
            bounded.clone(),
        ),
    );
    let watch_config = watch_config(&node, cfg.api_watch_timeout);
    tasks.spawn("watch", Life::Process, async move {
        let stream = watcher(nnc_api, watch_config)
            .backoff(watch_backoff())
            .applied_objects();
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(obj) => {
                    latest_tx.send_replace(Some(obj));
                }
                Err(e) => tracing::warn!(error = %e, "watching the NodeNetworkConfig"),
            }
        }
    });
    // Detection creates scratch devices (netlink) and, with FRR, asks vtysh.
    let detection_deadline = deadlines.kernel
        + if cfg.frr.is_some() {
            deadlines.frr
        } else {
            Duration::ZERO
        };
    tasks.spawn(
        "capabilities",
        Life::Job,
        crate::capabilities::report(
            client.clone(),
            node.clone(),
            latest.clone(),
            cfg.frr.clone(),
            bounded.clone(),
            detection_deadline,
        ),
    );
    let mut shutdown = std::pin::pin!(shutdown);
    let connecting = connect(&bounded, deadlines.kernel, &reports_tx);
    let dataplane = tokio::select! {
        () = &mut shutdown => {
            tasks.shutdown().await;
            return Ok(());
        }
        death = tasks.dead() => return Err(Error::TaskDied(death)),
        connected = connecting => connected?,
    };
    let mut health = crate::watch::Watcher::new(
        cfg.watch_interval,
        cfg.probes.healthcheck.clone(),
        cfg.probes.each_timeout,
        client.clone(),
        node.clone(),
        bounded.clone(),
    );
    // A round runs its checks at once, each within its own limit, then may write.
    let health_deadline = cfg.probes.each_timeout + deadlines.api + HEALTH_ROUND_SLACK;
    let prober = Prober::new(cfg.probes, client.clone());
    let frr = match cfg.frr {
        Some(settings) => Some(crate::frr::Frr::new(settings).map_err(Error::Frr)?),
        None => None,
    };
    if !cfg.remove_taints.is_empty() {
        tasks.spawn(
            "taints",
            Life::Job,
            crate::taints::run(
                client.clone(),
                node.clone(),
                cfg.remove_taints.clone(),
                prober.clone(),
                bounded.clone(),
            ),
        );
    }
    let agent = Agent::new(
        cfg.settings,
        store,
        dataplane,
        prober,
        frr,
        metrics.clone(),
        reports_tx,
    );

    tasks.spawn(
        "neighbours",
        Life::Process,
        crate::neighbours::run(agent.host_route_targets()),
    );

    let mut result = Ok(());
    let mut recovered = false;
    let mut force_report = true;
    let mut resync_at = tokio::time::Instant::now();
    loop {
        metrics.steps.progress();
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            death = tasks.dead() => {
                tracing::error!(task_death = %death,
                    "a task of the agent died; the agent ends so that it is restarted");
                result = Err(Error::TaskDied(death));
                break;
            }
            changed = latest.changed() => if changed.is_err() { break },
            // In this task, so never during an apply (crate::watch).
            () = health.due(), if recovered => {
                let seen = latest.borrow().clone();
                let _in_flight = metrics.steps.begin("health-round", health_deadline);
                health.round(seen.as_ref()).await;
                continue;
            }
            () = tokio::time::sleep_until(resync_at) => {}
        }
        resync_at = tokio::time::Instant::now() + RESYNC;
        if !recovered {
            match agent.recover().await {
                Ok(()) => {
                    recovered = true;
                    metrics.set_ready(true);
                    tracing::info!(node = %node, "state recovered; watching the NodeNetworkConfig");
                }
                Err(e) => {
                    report_error(&agent, &e);
                    resync_at = tokio::time::Instant::now() + ERROR_RETRY;
                    continue;
                }
            }
        }
        let Some(nnc) = latest.borrow_and_update().clone() else {
            continue;
        };
        match agent.reconcile(&nnc, force_report).await {
            Ok(()) => force_report = false,
            Err(e) => {
                report_error(&agent, &e);
                force_report = true;
                resync_at = tokio::time::Instant::now() + ERROR_RETRY;
            }
        }
    }
    tasks.shutdown().await;
    result
}

/// Opens the agent's netlink connection (`Dataplane::connect` asks the kernel for ethtool's
/// feature names: it waits while the kernel holds its netlink lock) as a bounded step
/// `connect` with the kernel deadline, off the runtime's threads. The agent can neither apply
/// nor restore without it, so past the deadline it goes on waiting (a `step=timed-out` line at
/// each deadline); once slow the status says so too: reason `WaitingForKernel`, no phase or
/// revision (no verdict on any).
async fn connect(
    bounded: &Bounded,
    deadline: Duration,
    reports: &watch::Sender<Option<Report>>,
) -> Result<Dataplane> {
    let kernel = crate::txn::Part::Kernel;
    let since = jiff::Timestamp::now();
    let mut connecting =
        tokio::task::spawn_blocking(|| crate::convert::managed().and_then(Dataplane::connect));
    let mut waits = 0;
    loop {
        let on_slow = || {
            if waits > 0 {
                return;
            }
            let since = since.round(jiff::Unit::Second).unwrap_or(since);
            reports.send_replace(Some(Report {
                generation: None,
                revision: None,
                phase: None,
                reason: kernel.waiting_reason().into(),
                message: format!(
                    "starting: waiting for {} since {since} (opening the netlink connection)",
                    kernel.describe()
                ),
                started_at: None,
                finished_at: None,
                last_known_good: None,
                ready: false,
                preexisting_failures: None,
            }));
        };
        let waited = bounded.within(
            "connect",
            kernel.as_str(),
            kernel.describe(),
            deadline,
            &mut connecting,
            on_slow,
        );
        if let Some(answer) = waited.await {
            let thread = |e: tokio::task::JoinError| {
                netrollout_dataplane::Error::Connection(std::io::Error::other(format!(
                    "the connecting thread ended: {e}"
                )))
            };
            return answer.map_err(thread).flatten().map_err(Error::Netlink);
        }
        waits += 1;
        tracing::error!(
            waits,
            "the netlink connection is not open yet: the agent goes on \
            waiting (it can neither apply nor restore without it)"
        );
    }
}

/// The agent's background tasks: the first to die fails `/healthz` at once (the main loop
/// ends the agent once the transaction under way is finished).
fn supervised(metrics: &Arc<Metrics>) -> Tasks {
    let steps = metrics.steps.clone();
    Tasks::new(Arc::new(move |death: &str| {
        tracing::error!(
            task_death = death,
            "a task of the agent died; /healthz fails"
        );
        steps.task_ended(death.to_string());
    }))
}

/// Logs an agent-level problem and reports it on the Node condition; the phase and observed
/// revision stay as they are (this is no verdict on a revision).
fn report_error(agent: &Agent, e: &Error) {
    tracing::error!(error = %e, reason = e.reason(), "the agent cannot proceed");
    agent.publish(Report {
        generation: None,
        revision: None,
        phase: None,
        reason: e.reason().into(),
        message: e.to_string(),
        started_at: None,
        finished_at: None,
        last_known_good: None,
        ready: false,
        preexisting_failures: None,
    });
}

/// The agent's watch: only its own object, each watch call limited to `timeout` (whole
/// seconds, at least 1). kube's watcher takes a watch that carries nothing (no event, no
/// bookmark) for `timeout` + 5 s for dead and opens it again from the last resourceVersion, so
/// a connection the network dropped without a word (a blackholed path, an API server or load
/// balancer that lost it) is noticed within that bound rather than when TCP gives up.
fn watch_config(node: &str, timeout: Duration) -> watcher::Config {
    let secs = u32::try_from(timeout.as_secs()).unwrap_or(u32::MAX).max(1);
    watcher::Config::default()
        .fields(&format!("metadata.name={node}"))
        .timeout(secs)
}

/// Backoff of the agent's watch after errors. It watches one small object, so it retries
/// sooner than kube's default (which grows to 30 s): after the agent's own restore brings the
/// API server back, or after an outage, a new dispatch is seen within seconds, well inside the
/// configurator's `--pickup-timeout`. Jitter spreads a fleet's reconnects.
fn watch_backoff() -> watcher::ExponentialBackoff {
    backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(500))
        .with_max_delay(Duration::from_secs(5))
        .with_factor(2.0)
        .with_jitter()
        .without_max_times()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn healthz(addr: std::net::SocketAddr) -> (u16, String) {
        netrollout_testkit::http::get(addr, "/healthz").await
    }

    #[tokio::test]
    async fn a_task_that_panics_fails_healthz_at_once_and_is_named() {
        let metrics = Arc::new(Metrics::default());
        metrics.steps.progress();
        let listener = netrollout_support::bind("health", "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let app = crate::metrics::health_app(metrics.clone());
        tokio::spawn(netrollout_support::serve(
            listener,
            app,
            std::future::pending(),
        ));
        assert_eq!(healthz(addr).await.0, 200);
        let mut tasks = supervised(&metrics);
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        tasks.spawn("status-writer", Life::Process, async move {
            let _ = wait.await;
            panic!("a status writer made to panic");
        });
        go.send(()).unwrap();
        // /healthz fails before the main loop joins the task (it may be in a transaction).
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while healthz(addr).await.0 == 200 {
            assert!(std::time::Instant::now() < deadline, "/healthz stayed 200");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            healthz(addr).await,
            (503, "task status-writer panicked".into())
        );
        let death = tasks.dead().await;
        assert!(death.contains("made to panic"), "{death}");
        let e = Error::TaskDied(death);
        assert!(e.to_string().contains("the agent ends"), "{e}");
    }

    #[test]
    fn the_watch_asks_only_for_the_nodes_object_and_is_limited_to_whole_seconds_of_at_least_one() {
        let c = watch_config("node-1", Duration::from_secs(30));
        assert_eq!(c.field_selector.as_deref(), Some("metadata.name=node-1"));
        assert_eq!(c.timeout, Some(30));
        // Zero would turn kube's dead-watch detection off: never asked for.
        assert_eq!(watch_config("n", Duration::ZERO).timeout, Some(1));
        assert_eq!(
            watch_config("n", Duration::from_millis(1500)).timeout,
            Some(1)
        );
    }
}
