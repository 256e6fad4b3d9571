//! Command-line flags ([`Args`]) and how they become the planner's [`Settings`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use netrollout_rollout::approval::{PauseAfter, Unhealthy};
use netrollout_rollout::guard::GuardMode;
use netrollout_rollout::{
    DomainOrder, DomainPolicy, HistoryLimits, RolloutStrategy, Settings, UpdateLimit,
};

use crate::error::{Error, Result};

pub use netrollout_support::{LogFormat, parse_duration};

/// The configurator's flags. Every duration takes a unit: `250ms`, `2s`, `10m`, `1h`, `1m30s`,
/// `1.5s` (the grammar of every netrollout binary, [`parse_duration`]).
#[derive(Clone, Debug, clap::Parser)]
#[command(name = "netrollout-configurator", version, about)]
pub struct Args {
    /// Kubeconfig to use; when absent, `$KUBECONFIG`, `~/.kube/config` or the in-cluster config.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Nodes in flight at once across all revisions: a number (`5`) or a percentage of the
    /// managed nodes (`20%`, rounded up).
    #[arg(long, default_value = "1")]
    pub update_limit: UpdateLimit,
    /// How free slots are filled: `window` (a node is dispatched as soon as a slot frees, like a
    /// DaemonSet rolling update) or `waves` (lock-step: a wave starts only when a whole one fits,
    /// so each waits for its slowest node).
    #[arg(long, default_value = "window")]
    pub rollout_strategy: RolloutStrategy,
    /// A node that started applying and did not finish within this counts as failed.
    #[arg(long, default_value = "2m", value_parser = parse_duration)]
    pub apply_timeout: Duration,
    /// A dispatch the node's agent did not pick up within this is withdrawn (never a failure).
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub pickup_timeout: Duration,
    /// Failed nodes a revision tolerates; one more fails it and halts the rollout.
    #[arg(long, default_value_t = 0)]
    pub max_failures: usize,
    /// The fleet guard (docs/contract.md, "Fleet guard"): while a revision rolls out, nodes
    /// whose agent reports `TenantReachable=False` since the current wave started fail it.
    /// `revert` fails it and returns its nodes to the known-good revision, current wave first;
    /// `halt` fails it and moves nothing; `off` judges a rollout by the nodes it touched only.
    #[arg(long, default_value = "revert")]
    pub guard: GuardMode,
    /// Nodes that must regress during one wave to trip the guard (0 is taken as 1); raise it
    /// for a fleet whose links flap.
    #[arg(long, default_value_t = 1)]
    pub guard_threshold: usize,
    /// Failure domains: the node label that names the domain a node fails with, e.g. a rack
    /// label or `topology.kubernetes.io/zone`. With it, at most `--max-in-flight-per-domain`
    /// nodes of one domain are in flight at once (across revisions, rollbacks included); nodes
    /// without the label form one domain together.
    #[arg(long)]
    pub domain_key: Option<String>,
    /// Nodes of one failure domain in flight at once (needs `--domain-key`; default 1).
    #[arg(long)]
    pub max_in_flight_per_domain: Option<usize>,
    /// `parallel` (every domain at once, each under its cap) or `sequential` (a domain starts
    /// only once the one before has every node on the revision and none in flight; needs
    /// `--domain-key`; default parallel).
    #[arg(long)]
    pub domain_order: Option<DomainOrder>,
    /// Failure domains with a failed node that a revision tolerates; a failure in one more
    /// domain fails it, even within `--max-failures` (needs `--domain-key`; default: only
    /// `--max-failures` counts).
    #[arg(long)]
    pub max_failed_domains: Option<usize>,
    /// Bake time: a node that committed a revision keeps its slot of the update limit (with
    /// waves, its wave) until it stayed healthy this long; a regression within it fails the
    /// revision. `0s` (the default) turns it off.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub bake_time: Duration,
    /// Approval gates: a revision rolling out stops once this many nodes run it, until a
    /// person runs `kubectl netrollout promote REVISION` (`--full` releases every gate). Each
    /// gate is `canary` (the canary nodes; with none, the first node), a number of nodes (`5`)
    /// or a percentage of the managed nodes (`50%`); repeat the flag or separate gates with
    /// commas. Rollbacks are never held.
    #[arg(long, value_delimiter = ',')]
    pub pause_after: Vec<PauseAfter>,
    /// A healthy start: before its first dispatch a revision waits while more managed nodes
    /// than this (a number, or a percentage of the managed nodes, rounded down) report
    /// `TenantReachable=False`. It starts on its own once they recover, or with `kubectl
    /// netrollout promote REVISION --force`. Without it the fleet's health is not checked
    /// before a start (the fleet guard still judges the rollout).
    #[arg(long)]
    pub start_max_unhealthy: Option<Unhealthy>,
    /// A healthy start: a PromQL query (e.g. `ALERTS{alertstate="firing",severity="critical"}`)
    /// against `--prometheus-url`; while it returns any series, or cannot be run, no revision
    /// starts (`promote --force` overrides). Measured at most every 5 s.
    #[arg(long)]
    pub start_blocking_query: Option<String>,
    /// Base URL of the Prometheus server that analysis checks (`RolloutAnalysis`) are measured
    /// against, e.g. `http://prometheus.monitoring:9090`. Without it, a revision that carries
    /// checks is not rolled out (its `AnalysisPassed` condition says why).
    #[arg(long)]
    pub prometheus_url: Option<String>,
    /// Label selector of the managed nodes, e.g. `node-role.kubernetes.io/worker`.
    #[arg(long, default_value = "")]
    pub node_selector: String,
    /// Succeeded and Superseded revisions kept.
    #[arg(long, default_value_t = 10)]
    pub revision_history_limit: usize,
    /// Failed and Blocked revisions kept.
    #[arg(long, default_value_t = 20)]
    pub failed_revision_history_limit: usize,
    /// Namespace of the Lease and of the control ConfigMap.
    #[arg(long, default_value = netrollout_api::DEFAULT_NAMESPACE)]
    pub lease_namespace: String,
    /// Name of the coordination.k8s.io Lease used for leader election.
    #[arg(long, default_value = "netrollout-configurator")]
    pub lease_name: String,
    /// How long a lease stays valid after its last renewal (whole seconds, at least 2s).
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub lease_duration: Duration,
    /// Every API request is abandoned after this and retried with backoff.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub api_timeout: Duration,
    /// Where `/metrics` is served.
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub metrics_addr: SocketAddr,
    /// Where `/healthz` and `/readyz` are served.
    #[arg(long, default_value = "0.0.0.0:8081")]
    pub health_addr: SocketAddr,
    /// Log format.
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Changes arriving within this window are planned together (at most 100ms). A report that
    /// frees a slot (window strategy) or ends a wave is planned at once, unless an input changed
    /// within this window.
    #[arg(long, default_value = "10ms", value_parser = parse_duration)]
    pub debounce: Duration,
    /// Re-plan at least this often even without changes (timeouts are noticed this late).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub resync: Duration,
    /// Identity in the Lease and in Events; `$POD_NAME`, else the hostname.
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// The node this configurator runs on (updated last); usually from the downward API.
    #[arg(long, env = "NODE_NAME")]
    pub node_name: Option<String>,
}

impl Args {
    /// Checks flags that clap cannot check alone.
    ///
    /// # Errors
    /// [`Error::Flag`] naming the flag and what to give instead.
    pub fn validate(&self) -> Result<()> {
        if self.debounce > Duration::from_millis(100) {
            return Err(Error::Flag {
                flag: "--debounce",
                message: format!("{:?} is over the 100ms the design allows", self.debounce),
            });
        }
        if self.lease_duration < Duration::from_secs(2) {
            return Err(Error::Flag {
                flag: "--lease-duration",
                message: "give at least 2s".into(),
            });
        }
        if self.domain_key.is_none() {
            let without_key = [
                (
                    "--max-in-flight-per-domain",
                    self.max_in_flight_per_domain.is_some(),
                ),
                ("--domain-order", self.domain_order.is_some()),
                ("--max-failed-domains", self.max_failed_domains.is_some()),
            ];
            if let Some((flag, _)) = without_key.into_iter().find(|(_, set)| *set) {
                return Err(Error::Flag {
                    flag,
                    message: "needs --domain-key: give the node label that names a node's failure domain (e.g. a rack label)".into(),
                });
            }
        }
        if self
            .domain_key
            .as_deref()
            .is_some_and(|k| k.trim().is_empty())
        {
            return Err(Error::Flag {
                flag: "--domain-key",
                message: "is empty: give a node label such as topology.kubernetes.io/zone".into(),
            });
        }
        if self.start_blocking_query.is_some() && self.prometheus_url.is_none() {
            return Err(Error::Flag {
                flag: "--start-blocking-query",
                message:
                    "needs --prometheus-url: give the Prometheus server the query runs against"
                        .into(),
            });
        }
        if self
            .start_blocking_query
            .as_deref()
            .is_some_and(|q| q.trim().is_empty())
        {
            return Err(Error::Flag {
                flag: "--start-blocking-query",
                message: "is empty: give a PromQL query that returns series while the fleet must not start a rollout".into(),
            });
        }
        if self.max_in_flight_per_domain == Some(0) {
            return Err(Error::Flag {
                flag: "--max-in-flight-per-domain",
                message: "is zero: at least one node of a domain must be allowed to update".into(),
            });
        }
        for (flag, d) in [
            ("--apply-timeout", self.apply_timeout),
            ("--pickup-timeout", self.pickup_timeout),
            ("--api-timeout", self.api_timeout),
            ("--resync", self.resync),
        ] {
            if d.is_zero() {
                return Err(Error::Flag {
                    flag,
                    message: "must be above zero".into(),
                });
            }
        }
        Ok(())
    }

    /// The planner settings; `paused` is the global pause read from the control ConfigMap.
    pub fn settings(&self, paused: bool) -> Settings {
        Settings {
            update_limit: self.update_limit,
            strategy: self.rollout_strategy,
            apply_timeout: self.apply_timeout,
            pickup_timeout: self.pickup_timeout,
            max_failures: self.max_failures,
            paused,
            history: HistoryLimits {
                succeeded: self.revision_history_limit,
                failed: self.failed_revision_history_limit,
            },
            guard: self.guard,
            guard_threshold: self.guard_threshold,
            domains: self.domain_key.as_ref().map(|_| DomainPolicy {
                max_in_flight: self.max_in_flight_per_domain.unwrap_or(1),
                order: self.domain_order.unwrap_or_default(),
                max_failed: self.max_failed_domains,
            }),
            bake_time: self.bake_time,
            // Read from the `MaintenanceSchedule` objects each pass.
            schedule: Default::default(),
            pause_after: self.pause_after.clone(),
            start_max_unhealthy: self.start_max_unhealthy,
            start_check: Default::default(),
        }
    }

    /// The identity used in the Lease and Events: `--identity`/`$POD_NAME`, else the hostname.
    pub fn identity(&self) -> String {
        if let Some(id) = self.identity.as_ref().filter(|s| !s.is_empty()) {
            return id.clone();
        }
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "netrollout-configurator".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn duration_flags_take_the_shared_grammar() {
        let a =
            Args::try_parse_from(["x", "--apply-timeout", "1m30s", "--debounce", "50ms"]).unwrap();
        assert_eq!(a.settings(false).apply_timeout, Duration::from_secs(90));
        assert_eq!(a.debounce, Duration::from_millis(50));
        let a = Args::try_parse_from(["x", "--pickup-timeout", "1.5s"]).unwrap();
        assert_eq!(
            a.settings(false).pickup_timeout,
            Duration::from_millis(1500)
        );
        let err = Args::try_parse_from(["x", "--apply-timeout", "5"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unit is missing") && err.contains("1m30s"),
            "{err}"
        );
        assert!(Args::try_parse_from(["x", "--apply-timeout", ""]).is_err());
    }

    #[test]
    fn default_flags_match_the_documented_defaults() {
        let a = Args::try_parse_from(["netrollout-configurator"]).unwrap();
        let s = a.settings(false);
        assert_eq!(s, Settings::default());
        assert_eq!(a.lease_name, "netrollout-configurator");
        assert_eq!(a.lease_namespace, "netrollout-system");
        a.validate().unwrap();
    }

    #[test]
    fn a_percentage_limit_and_a_slow_debounce_are_told_apart() {
        let a =
            Args::try_parse_from(["x", "--update-limit", "20%", "--debounce", "200ms"]).unwrap();
        assert_eq!(a.update_limit, UpdateLimit::Percent(20));
        let err = a.validate().unwrap_err();
        assert!(err.to_string().contains("--debounce"), "{err}");
        assert!(Args::try_parse_from(["x", "--update-limit", "0"]).is_err());
        let w = Args::try_parse_from(["x", "--rollout-strategy", "window"]).unwrap();
        assert_eq!(w.settings(false).strategy, RolloutStrategy::Window);
        assert!(Args::try_parse_from(["x", "--rollout-strategy", "rolling"]).is_err());
    }

    #[test]
    fn the_domain_flags_reach_the_planner_and_need_a_domain_key() {
        let a = Args::try_parse_from(["x", "--domain-key", "example.com/rack"]).unwrap();
        a.validate().unwrap();
        assert_eq!(a.settings(false).domains, Some(DomainPolicy::default()));
        let a = Args::try_parse_from([
            "x",
            "--domain-key=example.com/rack",
            "--max-in-flight-per-domain=2",
            "--domain-order=sequential",
            "--max-failed-domains=1",
        ])
        .unwrap();
        assert_eq!(
            a.settings(false).domains,
            Some(DomainPolicy {
                max_in_flight: 2,
                order: DomainOrder::Sequential,
                max_failed: Some(1),
            })
        );
        for flag in [
            "--max-in-flight-per-domain=2",
            "--domain-order=sequential",
            "--max-failed-domains=1",
        ] {
            let err = Args::try_parse_from(["x", flag])
                .unwrap()
                .validate()
                .unwrap_err()
                .to_string();
            let name = flag.split('=').next().unwrap();
            assert!(err.contains(name) && err.contains("--domain-key"), "{err}");
        }
        let zero = Args::try_parse_from(["x", "--domain-key=r", "--max-in-flight-per-domain=0"]);
        assert!(zero.unwrap().validate().is_err());
        let err = Args::try_parse_from(["x", "--domain-key=r", "--domain-order=racks"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("sequential"), "{err}");
        assert_eq!(
            Args::try_parse_from(["x"]).unwrap().settings(false).domains,
            None
        );
    }

    #[test]
    fn the_bake_time_reaches_the_planner_and_is_off_by_default() {
        let a = Args::try_parse_from(["x"]).unwrap();
        assert_eq!(a.settings(false).bake_time, Duration::ZERO);
        let a = Args::try_parse_from(["x", "--bake-time", "5m"]).unwrap();
        assert_eq!(a.settings(false).bake_time, Duration::from_secs(300));
        assert!(Args::try_parse_from(["x", "--bake-time", "5"]).is_err());
    }

    #[test]
    fn the_approval_and_start_flags_reach_the_planner_and_bad_ones_name_the_flag() {
        let a = Args::try_parse_from(["x"]).unwrap();
        assert!(a.settings(false).pause_after.is_empty());
        assert_eq!(a.settings(false).start_max_unhealthy, None);
        let a = Args::try_parse_from([
            "x",
            "--pause-after=canary,50%",
            "--pause-after",
            "5",
            "--start-max-unhealthy=10%",
        ])
        .unwrap();
        let s = a.settings(false);
        assert_eq!(
            s.pause_after,
            [
                PauseAfter::Canary,
                PauseAfter::Percent(50),
                PauseAfter::Count(5)
            ]
        );
        assert_eq!(s.start_max_unhealthy, Some(Unhealthy::Percent(10)));
        let err = Args::try_parse_from(["x", "--pause-after=0"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("canary"), "{err}");
        let err = Args::try_parse_from(["x", "--start-blocking-query=ALERTS"])
            .unwrap()
            .validate()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--start-blocking-query") && err.contains("--prometheus-url"),
            "{err}"
        );
    }

    #[test]
    fn the_guard_flags_reach_the_planner_and_an_unknown_mode_lists_the_choices() {
        let a = Args::try_parse_from(["x"]).unwrap();
        assert_eq!(a.settings(false).guard, GuardMode::Revert);
        assert_eq!(a.settings(false).guard_threshold, 1);
        let a = Args::try_parse_from(["x", "--guard", "halt", "--guard-threshold", "3"]).unwrap();
        assert_eq!(a.settings(false).guard, GuardMode::Halt);
        assert_eq!(a.settings(false).guard_threshold, 3);
        let off = Args::try_parse_from(["x", "--guard=off"]).unwrap();
        assert_eq!(off.settings(false).guard, GuardMode::Off);
        let err = Args::try_parse_from(["x", "--guard", "pause"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("revert") && err.contains("halt"), "{err}");
    }
}
