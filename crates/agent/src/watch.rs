//! Continuous health (docs/agent.md, "Continuous health"; the fleet guard of docs/contract.md
//! reads it): once the agent has recovered and between applies, it runs the checks of its
//! health-check file (interfaces up, tenant/VRF reachability) every `--watch-interval` and
//! reports transitions only: the condition `TenantReachable` on its `NodeNetworkConfig`
//! (`True`, or `False` naming the failing checks, `lastTransitionTime` = since when) and the
//! names in `status.health.failingChecks`.
//!
//! - **Coordination with applies**: [`Watcher::round`] is awaited by the agent's main loop
//!   ([`crate::run`]), the same task that runs an apply cycle, so a round never overlaps an
//!   apply (the apply's own probes judge then); a dispatch seen during a round waits for it
//!   (at most the check timeout).
//! - **Writes**: one server-side apply (field manager [`FIELD_MANAGER`]) of the condition and
//!   `status.health`, only when the verdict differs from what the object says (a status flip
//!   or another set of failing checks); a healthy node makes none. The write is a bounded step
//!   `health-write` ([`crate::bounded`]): past `--api-deadline` the next round writes again, so
//!   a dispatch seen during a round waits at most the checks' limit plus that deadline. The apply merges the
//!   condition by type, so the agent's other status writes are untouched.
//! - **Confirmation**: a failing verdict is reported only when the next round fails too
//!   ([`confirmed`]): one round whose probes time out (a loaded node, one lost echo) is noise,
//!   and the fleet guard fails a whole revision on what this reports. A passing round is
//!   reported at once.
//! - **Metrics**: `netrollout_agent_tenant_reachable` (1/0), `_health_rounds_total`,
//!   `_health_transitions_total{to="reachable"|"unreachable"}` (of the reported verdict).

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{Patch, PatchParams};
use netrollout_api::{GROUP, NodeNetworkConfig, Reachability, TENANT_REACHABLE_CONDITION, VERSION};
use serde_json::{Value, json};

use crate::bounded::Bounded;
use crate::healthcheck::HealthCheck;
use crate::metrics::HealthMetrics;

/// Field manager of the health writes (server-side apply).
pub const FIELD_MANAGER: &str = "netrollout-agent-health";
/// A verdict written but not yet seen on the object after this is written again (a write lost
/// to a concurrent status write, or a watch that fell behind).
const REWRITE_AFTER: Duration = Duration::from_secs(30);

/// The health verdict of one round, and as the object carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The failing checks, sorted (empty: reachable).
    pub failing: Vec<String>,
}

impl Verdict {
    /// Whether every check passes.
    pub fn reachable(&self) -> bool {
        self.failing.is_empty()
    }

    /// The verdict `nnc` carries (its `TenantReachable` condition and failing checks), if any.
    pub fn on(nnc: &NodeNetworkConfig) -> Option<(Verdict, Time)> {
        let (verdict, since) = nnc.status.as_ref()?.reachability()?;
        let mut failing = match verdict {
            Reachability::Reachable => Vec::new(),
            // A False condition without names is not what this agent writes: write again.
            Reachability::Unreachable(checks) if checks.is_empty() => return None,
            Reachability::Unreachable(checks) => checks,
        };
        failing.sort();
        Some((Verdict { failing }, since.clone()))
    }

    /// The server-side apply body for `node` at `generation`: the condition (its
    /// `lastTransitionTime` is `since`) and `status.health`.
    pub fn apply_body(&self, node: &str, generation: Option<i64>, since: &Time) -> Value {
        let (status, reason, message) = netrollout_api::tenant_reachable(&self.failing);
        json!({
            "apiVersion": format!("{GROUP}/{VERSION}"),
            "kind": "NodeNetworkConfig",
            "metadata": { "name": node },
            "status": {
                "health": { "failingChecks": self.failing },
                "conditions": [{
                    "type": TENANT_REACHABLE_CONDITION,
                    "status": status,
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": since,
                    "observedGeneration": generation,
                }],
            },
        })
    }
}

/// What to write after a round, if anything: the verdict with its transition time, when it
/// differs from `seen` (what the object carries). A node that stays unreachable with other
/// checks failing keeps its transition time; a flip gets `now`.
pub fn to_write(verdict: &Verdict, seen: Option<&(Verdict, Time)>, now: Time) -> Option<Time> {
    match seen {
        Some((v, _)) if v == verdict => None,
        Some((v, since)) if v.reachable() == verdict.reachable() => Some(since.clone()),
        _ => Some(now),
    }
}

/// The verdict a round reports, given the round before it (`previous`, unconfirmed): a passing
/// round at once; a failing round only when `previous` failed too (two failing rounds in a row),
/// else nothing yet. A single round of timeouts on a busy node never reaches the fleet guard;
/// a real loss shows one `--watch-interval` later.
pub fn confirmed(previous: Option<&Verdict>, verdict: &Verdict) -> Option<Verdict> {
    let confirmed = verdict.reachable() || previous.is_some_and(|p| !p.reachable());
    confirmed.then(|| verdict.clone())
}

/// Runs the rounds; owned by the agent's main loop.
pub struct Watcher {
    interval: Duration,
    checks: Option<Arc<HealthCheck>>,
    each_timeout: Duration,
    api: Api<NodeNetworkConfig>,
    node: String,
    metrics: Arc<crate::metrics::Metrics>,
    bounded: Bounded,
    next: tokio::time::Instant,
    /// The verdict of the last round (confirmed or not).
    last: Option<Verdict>,
    /// The last confirmed verdict.
    reported: Option<Verdict>,
    written: Option<(Verdict, Instant)>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("interval", &self.interval)
            .field("node", &self.node)
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}

impl Watcher {
    /// A watcher of `node` every `interval` (`0`: off) running `checks` (none: off).
    pub fn new(
        interval: Duration,
        checks: Option<Arc<HealthCheck>>,
        each_timeout: Duration,
        client: kube::Client,
        node: String,
        bounded: Bounded,
    ) -> Self {
        let checks = checks.filter(|c| !c.interfaces.is_empty() || !c.reachability.is_empty());
        Self {
            interval,
            checks,
            each_timeout,
            api: Api::all(client),
            node,
            metrics: bounded.metrics().clone(),
            bounded,
            next: tokio::time::Instant::now(),
            last: None,
            reported: None,
            written: None,
        }
    }

    /// Whether rounds run at all.
    pub fn enabled(&self) -> bool {
        !self.interval.is_zero() && self.checks.is_some()
    }

    /// Resolves when the next round is due; never when the watcher is off.
    pub async fn due(&self) {
        if self.enabled() {
            tokio::time::sleep_until(self.next).await;
        } else {
            std::future::pending::<()>().await;
        }
    }

    /// One round: run the checks, count, and write the verdict if the object (`seen`, as the
    /// agent's watch last delivered it) does not carry it yet.
    pub async fn round(&mut self, seen: Option<&NodeNetworkConfig>) {
        self.next = tokio::time::Instant::now() + self.interval;
        let Some(checks) = self.checks.clone() else {
            return;
        };
        let mut failing: Vec<String> = checks
            .run(self.each_timeout)
            .await
            .into_iter()
            .filter(|o| !o.passed())
            .map(|o| o.name)
            .collect();
        failing.sort();
        failing.dedup();
        let round = Verdict { failing };
        let Some(verdict) = confirmed(self.last.as_ref(), &round) else {
            tracing::info!(node = %self.node, failing = ?round.failing,
                "health checks failed once; reported if the next round fails too");
            self.health_metrics().unconfirmed_round();
            self.last = Some(round);
            return;
        };
        self.last = Some(round);
        let flipped = self
            .reported
            .as_ref()
            .is_some_and(|l| l.reachable() != verdict.reachable());
        self.health_metrics().round(verdict.reachable(), flipped);
        if flipped || self.reported.as_ref() != Some(&verdict) {
            tracing::info!(node = %self.node, reachable = verdict.reachable(),
                failing = ?verdict.failing, "continuous health changed");
        }
        self.reported = Some(verdict.clone());
        let Some(seen) = seen else {
            return;
        };
        let on_object = Verdict::on(seen);
        let Some(since) = to_write(&verdict, on_object.as_ref(), Time(jiff::Timestamp::now()))
        else {
            return;
        };
        if self
            .written
            .as_ref()
            .is_some_and(|(v, at)| *v == verdict && at.elapsed() < REWRITE_AFTER)
        {
            return;
        }
        let body = verdict.apply_body(&self.node, seen.metadata.generation, &since);
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let patch = Patch::Apply(&body);
        let write = self.api.patch_status(&self.node, &params, &patch);
        match self.bounded.api("health-write", write).await {
            Ok(_) => {
                tracing::info!(node = %self.node, reachable = verdict.reachable(),
                    failing = ?verdict.failing, "TenantReachable written");
                self.written = Some((verdict, Instant::now()));
            }
            Err(e) => {
                tracing::warn!(error = %e, "writing TenantReachable failed; the next round retries");
            }
        }
    }

    fn health_metrics(&self) -> &HealthMetrics {
        &self.metrics.health
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(failing: &[&str]) -> Verdict {
        Verdict {
            failing: failing.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn t(s: i64) -> Time {
        Time(jiff::Timestamp::from_second(s).unwrap())
    }

    #[test]
    fn a_failing_round_is_reported_only_when_the_round_after_it_fails_too() {
        // The first failing round after a passing one (or at start) reports nothing yet.
        assert_eq!(confirmed(Some(&v(&[])), &v(&["a"])), None);
        assert_eq!(confirmed(None, &v(&["a"])), None);
        // The second in a row reports this round's checks.
        assert_eq!(
            confirmed(Some(&v(&["a"])), &v(&["a", "b"])),
            Some(v(&["a", "b"]))
        );
        // A passing round is reported at once, whatever came before.
        assert_eq!(confirmed(Some(&v(&["a"])), &v(&[])), Some(v(&[])));
        assert_eq!(confirmed(None, &v(&[])), Some(v(&[])));
    }

    #[test]
    fn a_verdict_the_object_already_carries_is_not_written_again() {
        let now = t(100);
        assert_eq!(to_write(&v(&[]), Some(&(v(&[]), t(1))), now.clone()), None);
        assert_eq!(
            to_write(&v(&["a"]), Some(&(v(&["a"]), t(1))), now.clone()),
            None
        );
    }

    #[test]
    fn a_flip_is_written_with_the_time_of_the_round_and_other_failing_checks_keep_the_old_time() {
        let now = t(100);
        assert_eq!(to_write(&v(&["a"]), None, now.clone()), Some(now.clone()));
        assert_eq!(
            to_write(&v(&["a"]), Some(&(v(&[]), t(1))), now.clone()),
            Some(now.clone())
        );
        assert_eq!(
            to_write(&v(&[]), Some(&(v(&["a"]), t(1))), now.clone()),
            Some(now.clone())
        );
        assert_eq!(
            to_write(&v(&["a", "b"]), Some(&(v(&["a"]), t(1))), now),
            Some(t(1))
        );
    }

    #[test]
    fn the_apply_body_names_the_failing_checks_in_the_condition_and_the_health_field() {
        let body = v(&["icmp 10.0.0.1 via vr.blue", "tcp 10.0.0.2:80"]).apply_body(
            "node-a",
            Some(3),
            &t(5),
        );
        let c = &body["status"]["conditions"][0];
        assert_eq!(c["type"], TENANT_REACHABLE_CONDITION);
        assert_eq!(c["status"], "False");
        assert_eq!(c["observedGeneration"], 3);
        assert!(
            c["message"]
                .as_str()
                .unwrap()
                .contains("icmp 10.0.0.1 via vr.blue, tcp 10.0.0.2:80")
        );
        assert_eq!(
            body["status"]["health"]["failingChecks"][1],
            "tcp 10.0.0.2:80"
        );
        let ok = v(&[]).apply_body("node-a", Some(3), &t(5));
        assert_eq!(ok["status"]["conditions"][0]["status"], "True");
        assert_eq!(
            ok["status"]["health"]["failingChecks"],
            serde_json::json!([])
        );
    }
}
