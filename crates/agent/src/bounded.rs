//! Steps outside the transaction, each with a slow threshold and a deadline: the agent's API
//! writes (the status of its `NodeNetworkConfig`, its Node's condition, Events, capabilities,
//! continuous health, the startup taints) and the capability detection at start.
//!
//! They run beside the transaction, never in it: the transaction publishes its reports into a
//! channel and goes on ([`crate::status`]); the agent works without the API server. Such a
//! step is reported as a transaction's step is ([`crate::agent`]): in flight
//! (`netrollout_agent_step_in_flight_seconds{step}`), past `--step-slow` a `step=wait` log line
//! naming the step and what it waits for (again every 30 s while it lasts) and
//! `netrollout_agent_slow_steps_total{part}`, past its deadline a `step=timed-out` line and
//! `netrollout_agent_step_timeouts_total{part}` (`part` is `api` for the API server, `kernel`
//! for detection). The status cannot say that the API server is slow: the status is what waits.
//!
//! Past its deadline the step is an error of that step, handled by its owner: a write is tried
//! again (newest report first), detection is left to finish in the background
//! ([`crate::capabilities`]).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::metrics::Metrics;

/// How often a wait is logged again while it lasts.
const SAY_AGAIN: Duration = Duration::from_secs(30);

/// The metric label of the API server as a part waited on.
pub const API: &str = "api";

/// Runs bounded steps: the limits, and where they are reported.
#[derive(Clone, Debug)]
pub struct Bounded {
    metrics: Arc<Metrics>,
    /// A step without an answer this long is reported (`--step-slow`).
    pub slow: Duration,
    /// Deadline of each API request (`--api-deadline`).
    pub api: Duration,
}

impl Bounded {
    /// Steps reported to `metrics` (and its [`crate::steps::Steps`]).
    pub fn new(metrics: Arc<Metrics>, slow: Duration, api: Duration) -> Self {
        Self { metrics, slow, api }
    }

    /// The metrics the steps are reported to.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The registry of steps and of the work the parts owe.
    pub fn steps(&self) -> &Arc<crate::steps::Steps> {
        &self.metrics.steps
    }

    /// One API request as step `step`, within the API deadline: its answer, or an error that
    /// names the wait ("no answer from the API server within 10 s").
    pub async fn api<T>(
        &self,
        step: &'static str,
        request: impl Future<Output = kube::Result<T>>,
    ) -> Result<T, String> {
        self.api_answer(step, request)
            .await?
            .map_err(|e| e.to_string())
    }

    /// [`Bounded::api`] with the server's answer as it is (an error answer included, for a
    /// caller that handles some, e.g. a 409 Conflict); `Err` only when there was none in time.
    pub async fn api_answer<T>(
        &self,
        step: &'static str,
        request: impl Future<Output = kube::Result<T>>,
    ) -> Result<kube::Result<T>, String> {
        self.within(step, API, "the API server", self.api, request, || {})
            .await
            .ok_or_else(|| {
                format!(
                    "no answer from the API server within {} s",
                    self.api.as_secs_f64()
                )
            })
    }

    /// Waits for `work` as step `step` on `part` (described by `waits_on`, e.g. `the API
    /// server`) until `deadline`: `None` when the deadline passed first (`work` is dropped; a
    /// caller that must let it finish hands in a handle to it). `on_slow` runs at the slow
    /// threshold.
    pub async fn within<T>(
        &self,
        step: &'static str,
        part: &'static str,
        waits_on: &str,
        deadline: Duration,
        work: impl Future<Output = T>,
        on_slow: impl FnOnce(),
    ) -> Option<T> {
        let mut on_slow = Some(on_slow);
        let _in_flight = self.metrics.steps.begin(step, deadline);
        let since = Instant::now();
        let end = tokio::time::Instant::from_std(since + deadline);
        let mut say = since + self.slow;
        let mut said = false;
        let mut work = std::pin::pin!(work);
        loop {
            tokio::select! {
                biased;
                answered = &mut work => {
                    if said {
                        tracing::info!(step = "wait", waited_for = step, part,
                            duration_ms = since.elapsed().as_secs_f64() * 1e3,
                            "answered after a wait");
                    }
                    return Some(answered);
                }
                () = tokio::time::sleep_until(end) => {
                    tracing::error!(step = "timed-out", waited_for = step, part,
                        deadline_s = deadline.as_secs_f64(),
                        "no answer from {waits_on} within the deadline: the step fails");
                    self.metrics.timed_out(part);
                    return None;
                }
                () = tokio::time::sleep_until(say.into()) => {
                    tracing::warn!(step = "wait", waiting_for = step, part,
                        waited_s = since.elapsed().as_secs(),
                        deadline_s = deadline.as_secs_f64(), "waiting for {waits_on}");
                    if !said {
                        said = true;
                        self.metrics.slow(part);
                        if let Some(f) = on_slow.take() {
                            f();
                        }
                    }
                    say += SAY_AGAIN;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request that never answers: in flight (its age in the metrics), slow past the
    /// threshold, an error at its deadline; one that answers in time is its answer.
    #[tokio::test]
    async fn a_step_is_in_flight_reported_when_slow_and_an_error_at_its_deadline() {
        let metrics = Arc::new(Metrics::default());
        let ms = Duration::from_millis;
        let bounded = Bounded::new(metrics.clone(), ms(1000), ms(2000));
        let b = bounded.clone();
        let t0 = Instant::now();
        let never = tokio::spawn(async move {
            b.api("status", std::future::pending::<kube::Result<()>>())
                .await
        });
        tokio::time::sleep(ms(100)).await;
        let text = metrics.render();
        assert!(
            text.contains("netrollout_agent_step_in_flight_seconds{step=\"status\"}"),
            "{text}"
        );
        assert!(!text.contains("slow_steps_total{part=\"api\"}"), "{text}");
        tokio::time::sleep(ms(1400)).await;
        let text = metrics.render();
        assert!(
            text.contains("netrollout_agent_slow_steps_total{part=\"api\"} 1"),
            "{text}"
        );
        let e = never.await.unwrap().unwrap_err();
        assert!(t0.elapsed() >= ms(2000), "ended before its deadline");
        assert_eq!(e, "no answer from the API server within 2 s");
        let text = metrics.render();
        assert!(
            text.contains("netrollout_agent_step_timeouts_total{part=\"api\"} 1"),
            "{text}"
        );
        assert!(
            metrics.steps.snapshot().in_flight.is_empty(),
            "the step ended at its deadline"
        );
        let answered = bounded.api("status", async { Ok(7) }).await;
        assert_eq!(answered, Ok(7));
        assert!(
            metrics
                .render()
                .contains("step_timeouts_total{part=\"api\"} 1"),
            "no second time-out"
        );
    }
}
