//! Prometheus metrics and the HTTP endpoints: `/metrics`, `/healthz`, `/readyz`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use crate::error::{Error, Result};

/// One label `phase`, `state`, `kind` or `reason`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Label {
    /// The value.
    pub name: String,
}

fn label(name: &str) -> Label {
    Label { name: name.into() }
}

/// Every metric the configurator exports, plus its readiness.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// `netrollout_configurator_revisions{name=<phase>}`.
    pub revisions: Family<Label, Gauge>,
    /// `netrollout_configurator_nodes{name=<state>}`: managed, not_ready, in_flight, updated, failed.
    pub nodes: Family<Label, Gauge>,
    /// `netrollout_configurator_dispatches_total{name=<kind>}`: nodes dispatched.
    pub dispatches: Family<Label, Counter>,
    /// `netrollout_configurator_failures_total`: revisions marked Failed.
    pub failures: Counter,
    /// `netrollout_configurator_guard_trips_total`: revisions the fleet guard failed.
    pub guard_trips: Counter,
    /// `netrollout_configurator_rollout_duration_seconds`: creation to Succeeded.
    pub rollout_duration: Histogram,
    /// `netrollout_configurator_reconcile_errors_total{name=<reason>}`.
    pub reconcile_errors: Family<Label, Counter>,
    /// `netrollout_configurator_api_writes_total`: create, patch and delete requests sent.
    pub api_writes: Counter,
    /// `netrollout_configurator_leader`: 1 while this replica holds the lease.
    pub leader: Gauge,
    /// `netrollout_configurator_passes_total`: reconcile passes run (as leader).
    pub passes: Counter,
    /// `netrollout_configurator_pass_seconds_total`: wall time spent in passes.
    pub pass_seconds: Counter<f64, std::sync::atomic::AtomicU64>,
    /// `netrollout_configurator_plan_seconds_total`: time spent in the part of passes that
    /// could grow with the fleet (bringing the fleet up to date and planning; no API request in
    /// it): a pass's cost against what changed.
    pub plan_seconds: Counter<f64, std::sync::atomic::AtomicU64>,
    ready: AtomicBool,
    /// The first background task that died (`/healthz` fails from then on).
    dead: std::sync::Mutex<Option<String>>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("netrollout_configurator");
        let m = Self {
            revisions: Family::default(),
            nodes: Family::default(),
            dispatches: Family::default(),
            failures: Counter::default(),
            guard_trips: Counter::default(),
            rollout_duration: Histogram::new([
                1.0, 5.0, 15.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0,
            ]),
            reconcile_errors: Family::default(),
            api_writes: Counter::default(),
            leader: Gauge::default(),
            passes: Counter::default(),
            pass_seconds: Counter::default(),
            plan_seconds: Counter::default(),
            ready: AtomicBool::new(false),
            dead: std::sync::Mutex::default(),
            registry: Registry::default(),
        };
        registry.register("revisions", "Revisions by phase", m.revisions.clone());
        registry.register("nodes", "Managed nodes by state", m.nodes.clone());
        registry.register(
            "dispatches",
            "Nodes dispatched by kind",
            m.dispatches.clone(),
        );
        registry.register("failures", "Revisions marked Failed", m.failures.clone());
        registry.register(
            "guard_trips",
            "Revisions the fleet guard failed (nodes regressed during a wave)",
            m.guard_trips.clone(),
        );
        registry.register(
            "rollout_duration_seconds",
            "Time from a revision's creation to Succeeded",
            m.rollout_duration.clone(),
        );
        registry.register(
            "reconcile_errors",
            "Failed reconcile passes by reason",
            m.reconcile_errors.clone(),
        );
        registry.register(
            "api_writes",
            "API write requests sent",
            m.api_writes.clone(),
        );
        registry.register("leader", "1 while this replica leads", m.leader.clone());
        registry.register("passes", "Reconcile passes run", m.passes.clone());
        registry.register(
            "pass_seconds",
            "Wall time spent in reconcile passes",
            m.pass_seconds.clone(),
        );
        registry.register(
            "plan_seconds",
            "Time spent bringing the fleet up to date and planning (no API request in it)",
            m.plan_seconds.clone(),
        );
        Self { registry, ..m }
    }
}

impl Metrics {
    /// Sets a gauge family from `(label, value)` pairs, zeroing labels not given.
    pub fn set_all(family: &Family<Label, Gauge>, names: &[&str], values: &[(&str, i64)]) {
        for n in names {
            let v = values.iter().find(|(k, _)| k == n).map_or(0, |(_, v)| *v);
            family.get_or_create(&label(n)).set(v);
        }
    }

    /// Counts one failed pass.
    pub fn error(&self, e: &Error) {
        self.reconcile_errors
            .get_or_create(&label(e.metric_label()))
            .inc();
    }

    /// Counts `n` nodes dispatched with `kind`.
    pub fn dispatched(&self, kind: &str, n: u64) {
        self.dispatches.get_or_create(&label(kind)).inc_by(n);
    }

    /// A background task died: `/healthz` fails from now on (the configurator is ending).
    pub fn task_died(&self, death: &str) {
        let mut dead = self
            .dead
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        dead.get_or_insert_with(|| death.to_string());
    }

    /// Marks the caches synced: `/readyz` answers 200 from now on.
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Relaxed);
    }

    /// The text exposition, in the Prometheus text format (what `/metrics` serves).
    pub fn encode(&self) -> String {
        let mut s = String::new();
        if prometheus_client::encoding::text::encode(&mut s, &self.registry).is_err() {
            s.clear();
        }
        netrollout_support::exposition::classic(&s)
    }
}

/// Binds `metrics_addr` (`/metrics`) and `health_addr` (`/healthz`, `/readyz`); returns the
/// bound addresses and the serving futures (the caller joins them).
///
/// # Errors
/// [`Error::Listen`] when an address cannot be bound.
pub async fn serve(
    metrics: Arc<Metrics>,
    metrics_addr: SocketAddr,
    health_addr: SocketAddr,
) -> Result<(
    [SocketAddr; 2],
    impl Future<Output = std::io::Result<()>>,
    impl Future<Output = std::io::Result<()>>,
)> {
    // The shared failure policy: bind before any work, a bind failure stops the configurator.
    let bind = |what: &'static str, addr: SocketAddr| async move {
        netrollout_support::bind(what, addr)
            .await
            .map_err(|e| match e {
                netrollout_support::Error::Bind { addr, source, .. } => Error::Listen {
                    addr: format!("{addr} ({what})"),
                    source,
                },
                other => Error::Listen {
                    addr: addr.to_string(),
                    source: std::io::Error::other(other),
                },
            })
    };
    let ml = bind("metrics", metrics_addr).await?;
    let hl = bind("health", health_addr).await?;
    let local = |l: &TcpListener, a| l.local_addr().unwrap_or(a);
    let addrs = [local(&ml, metrics_addr), local(&hl, health_addr)];
    let m = Router::new()
        .route("/metrics", get(metrics_text))
        .with_state(metrics.clone());
    let h = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(metrics);
    Ok(
        (addrs, async move { axum::serve(ml, m).await }, async move {
            axum::serve(hl, h).await
        }),
    )
}

async fn metrics_text(State(m): State<Arc<Metrics>>) -> impl axum::response::IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            netrollout_support::exposition::CONTENT_TYPE,
        )],
        m.encode(),
    )
}

async fn healthz(State(m): State<Arc<Metrics>>) -> (StatusCode, String) {
    let dead = m
        .dead
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match dead.as_ref() {
        None => (StatusCode::OK, "ok".into()),
        Some(death) => (StatusCode::SERVICE_UNAVAILABLE, death.clone()),
    }
}

async fn readyz(State(m): State<Arc<Metrics>>) -> (StatusCode, &'static str) {
    if m.ready.load(Ordering::Relaxed) {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced yet")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_exposition_names_each_counter_family_as_its_total_samples() {
        let m = super::Metrics::default();
        m.failures.inc();
        let text = m.encode();
        assert!(
            text.contains("# HELP netrollout_configurator_failures_total Revisions marked Failed"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE netrollout_configurator_failures_total counter"),
            "{text}"
        );
        assert!(
            text.contains("\nnetrollout_configurator_failures_total 1\n"),
            "{text}"
        );
        assert!(!text.contains("# EOF"), "{text}");
    }

    #[tokio::test]
    async fn healthz_fails_with_the_task_once_a_background_task_panics() {
        use std::sync::Arc;

        use netrollout_testkit::http::get;
        let m = Arc::new(super::Metrics::default());
        let any = "127.0.0.1:0".parse().unwrap();
        let (addrs, _, health) = super::serve(m.clone(), any, any).await.unwrap();
        tokio::spawn(health);
        assert_eq!(get(addrs[1], "/healthz").await.0, 200);
        let mut tasks = crate::controller::supervised(&m);
        tasks.spawn(
            "watch-Node",
            netrollout_support::tasks::Life::Process,
            async { panic!("a watch made to panic") },
        );
        let death = tasks.dead().await;
        assert!(
            death.starts_with("task watch-Node panicked") && death.contains("made to panic"),
            "{death}"
        );
        let (status, body) = get(addrs[1], "/healthz").await;
        assert_eq!((status, body.as_str()), (503, "task watch-Node panicked"));
    }
}
