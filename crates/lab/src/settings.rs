//! The lab's settings: one type, [`Settings`], parsed by clap from `up`'s, `scenario`'s and
//! `bench`'s flags, adjusted by a scenario ([`crate::scenario::Scenario::settings`]) and read by
//! the [`crate::cluster::Cluster`]. The update limit is the planner's [`UpdateLimit`] (so `"20%"`
//! is a percentage everywhere, including the lab's own wave check), the guard the planner's
//! [`GuardMode`], durations are [`Duration`]s: each is parsed once, on the command line, by the
//! parser its own crate defines, with a clear message on bad input.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use netrollout_frr::daemons::Version;
pub use netrollout_rollout::UpdateLimit;
pub use netrollout_rollout::guard::GuardMode;
use netrollout_support::parse_duration;

use crate::inputs::Source;
use crate::manifests::Manifests;

/// How to build a lab.
#[derive(Clone, Debug, clap::Args)]
pub struct Settings {
    /// Nodes (network namespaces) to start.
    #[arg(long, default_value_t = 4)]
    pub nodes: usize,
    /// Where kubeconfig, logs and agent state go (the command line's global `--state-dir`).
    #[arg(skip)]
    pub state_dir: PathBuf,
    /// Configurator replicas (the leader writes; the others stand by).
    #[arg(skip = 1_usize)]
    pub configurators: usize,
    /// Nodes updated at once: a number (`5`) or a percentage of the nodes (`20%`).
    #[arg(long, default_value = "2")]
    pub update_limit: UpdateLimit,
    /// How long a node may take to apply and probe [default: 30s, 90s with --vm (TCG is slow)].
    #[arg(long, value_parser = parse_duration)]
    pub apply_timeout: Option<Duration>,
    /// How long an agent may take to pick a dispatch up.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub pickup_timeout: Duration,
    /// Failed nodes tolerated before a revision fails.
    #[arg(long, default_value_t = 0)]
    pub max_failures: u32,
    /// The configurator's fleet guard (`--guard`): `revert` (its default), `halt` or `off`
    /// (judge a rollout by the nodes it touched only; `remote-break` then shows the rollout
    /// going on).
    #[arg(long, default_value = "revert")]
    pub guard: GuardMode,
    /// How long each agent keeps probing after its probes pass before it commits a change (the
    /// agent's `--probe-hold`); it also makes a rollout easy to follow.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub probe_hold: Duration,
    /// `--probe-hold` of single agents, by node name, in place of `probe_hold` (a scenario
    /// whose one wave must outlast a remote failure's report).
    #[arg(skip)]
    pub probe_holds: BTreeMap<String, Duration>,
    /// Directory of the netrollout-agent and netrollout-configurator binaries (default: next to
    /// this program).
    #[arg(long, default_value_os_t = beside_this_program(), hide_default_value = true)]
    pub bin_dir: PathBuf,
    /// Run the nodes inside a VM with Debian's kernel (qemu, hack/vm/lab.sh), which has VRFs:
    /// the full samples roll out. The API server and the configurators stay on this machine.
    #[arg(long)]
    pub vm: bool,
    /// Leave the samples that need a VRF out even when the nodes' kernel has VRFs.
    #[arg(long)]
    pub without_vrfs: bool,
    /// Also start a real Prometheus (Debian's `prometheus` on PATH) on a free local port: it
    /// scrapes the configurator (job="netrollout-configurator") and every agent
    /// (job="netrollout-agent", instance=<node>) each second and evaluates
    /// deploy/monitoring/rules.yaml each second. Its URL is printed; it stops with the lab. Not
    /// with --vm.
    #[arg(long)]
    pub prometheus: bool,
    /// Roll out your own manifests instead of config/samples: every *.yaml, *.yml and *.json
    /// file directly in DIR (VRFRouteConfiguration, Layer2NetworkConfiguration, RoutingTable,
    /// BGPPeering;
    /// netrollout.io/v1alpha1 or the Go operator's v1alpha1 groups, converted as `kubectl
    /// netrollout migrate` does). Checked before the lab starts; the lab's own tenant network is
    /// added for the traffic measure.
    #[arg(long, value_name = "DIR", value_parser = read_manifests)]
    pub manifests: Option<Manifests>,
    /// Run each node's agent and the configurator as their images under podman, in the shape
    /// deploy/netrollout.yaml gives their pods (security context, volumes, environment, memory
    /// limit, probes; read from the bundle). Build the images first: hack/images.sh. Not with
    /// --vm.
    #[arg(long)]
    pub containers: bool,
    /// The FRR version every node and the route reflector run: `10.3` (Debian 13's, from the
    /// root file system hack/frr10.sh builds; hack/install-deps.sh runs it), the default because
    /// it is what the field runs (FRR 10; the Go operator's agent drives 10.6) and the version
    /// to prefer for many VRFs, or `8.4` (Debian 12's, installed on this machine), which the
    /// agent still supports. The agents get the flags that reach it. With --vm the guest runs
    /// it from the same root file system; with --containers the agents run the Debian 13 agent
    /// image for 10.3 (tag `VERSION-trixie`: `DEBIAN_RELEASE=trixie hack/images.sh`), the
    /// bundle's Debian 12 one for 8.4 (`hack/images.sh`). docs/lab.md says more.
    #[arg(long, default_value = "10.3", value_name = "VERSION")]
    pub frr: Version,
    /// Configurator flags a scenario adds to the lab's own (approval gates, failure domains,
    /// a bake time: `canary-promote`).
    #[arg(skip)]
    pub configurator_flags: Vec<(String, String)>,
}

impl Settings {
    /// The configurator's `--apply-timeout`: as given, else 30 s (90 s in VM mode: TCG is slow).
    pub fn apply_timeout(&self) -> Duration {
        self.apply_timeout
            .unwrap_or(Duration::from_secs(if self.vm { 90 } else { 30 }))
    }

    /// What the lab rolls out first: the user's manifests, else the samples.
    pub fn inputs(&self) -> Source {
        match &self.manifests {
            Some(m) => Source::Manifests(m.clone()),
            None => Source::Samples,
        }
    }
}

/// The directory this program is in (where `cargo build` puts the other binaries too).
fn beside_this_program() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.to_path_buf()))
        .unwrap_or_else(|| PathBuf::from("."))
}

/// `--manifests DIR`: reads and checks the user's manifests before anything starts.
fn read_manifests(dir: &str) -> Result<Manifests, crate::manifests::Error> {
    Manifests::read(dir.as_ref())
}

/// A duration as the agent's and configurator's flags take it (`1500ms`).
pub fn flag(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[derive(clap::Parser)]
    struct Line {
        #[command(flatten)]
        settings: Settings,
    }

    fn parse(args: &[&str]) -> Result<Settings, String> {
        let line = std::iter::once("lab").chain(args.iter().copied());
        Line::try_parse_from(line)
            .map(|l| l.settings)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn durations_parse_and_round_trip_to_flags() {
        let s = parse(&["--probe-hold", "1m30s", "--pickup-timeout", "250ms"]).unwrap();
        assert_eq!(s.probe_hold, Duration::from_secs(90));
        assert_eq!(flag(s.pickup_timeout), "250ms");
        let bad = parse(&["--probe-hold", "5 parsecs"]).unwrap_err();
        assert!(bad.contains("--probe-hold"), "{bad}");
        assert!(parse(&["--apply-timeout", ""]).is_err());
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let s = parse(&[]).unwrap();
        assert_eq!((s.nodes, s.configurators, s.max_failures), (4, 1, 0));
        assert_eq!(s.update_limit, UpdateLimit::Count(2));
        assert_eq!(s.guard, GuardMode::Revert);
        assert_eq!(s.apply_timeout(), Duration::from_secs(30));
        assert_eq!(
            parse(&["--vm"]).unwrap().apply_timeout(),
            Duration::from_secs(90)
        );
        let exe = std::env::current_exe().unwrap();
        assert_eq!(Some(s.bin_dir.as_path()), exe.parent());
        assert!(matches!(s.inputs(), Source::Samples));
        assert_eq!(s.frr, Version::V10_3);
    }

    #[test]
    fn the_frr_version_is_one_the_lab_runs_or_a_clear_error() {
        assert_eq!(parse(&["--frr", "8.4"]).unwrap().frr, Version::V8_4);
        assert_eq!(parse(&["--frr", "10.3"]).unwrap().frr, Version::V10_3);
        let bad = parse(&["--frr", "9.1"]).unwrap_err();
        assert!(
            bad.contains("--frr") && bad.contains("use 8.4") && bad.contains("or 10.3"),
            "{bad}"
        );
    }

    #[test]
    fn manifests_are_read_and_checked_on_the_command_line() {
        let missing = parse(&["--manifests", "/nonexistent/netrollout"]).unwrap_err();
        let wanted = "'/nonexistent/netrollout' for '--manifests <DIR>': cannot read the directory";
        assert!(missing.contains(wanted), "{missing}");
        let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/go-operator");
        let s = parse(&["--manifests", samples]).unwrap();
        assert!(matches!(s.inputs(), Source::Manifests(m) if !m.docs.is_empty()));
    }

    #[test]
    fn a_percentage_is_a_percentage_not_unlimited() {
        let limit = parse(&["--update-limit", "20%"]).unwrap().update_limit;
        assert_eq!(limit.resolve(20), 4);
        assert_eq!(limit.to_string(), "20%");
        let zero = parse(&["--update-limit", "0"]).unwrap_err();
        assert!(zero.contains("zero"), "{zero}");
        let halt = parse(&["--guard", "halt"]).unwrap().guard;
        assert_eq!(halt, GuardMode::Halt);
        assert!(parse(&["--guard", "maybe"]).is_err());
    }
}
