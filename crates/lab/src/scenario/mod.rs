//! Scripted stories that run against a real lab and end with a summary. Each records a timeline
//! of what the API showed and checks the promises of the contract (docs/contract.md); a broken promise fails the run.
//!
//! Layout:
//! - [`Scenario`]: what every story provides (its name, its help text, its lab settings, the
//!   story itself); [`ALL`] lists them by name for the command line and `--help`; [`run`] plays
//!   one on a started lab and adds the checks every story shares.
//! - one file per story: `happy`, `bad_config`, `node_join`, `configurator_crash`, `api_outage`,
//!   `tenant_break`, `remote_break`, `upgrade`, `canary_promote`, `peering`.
//! - `monitor`: the timeline ([`Monitor`]: a watch on node configs, polled revisions).
//! - `checks`: the [`Summary`] and the checks stories share; `steps`: apply and wait for a
//!   revision to succeed or fail; `traffic_checks`: tenant traffic and its loss report.

mod api_outage;
mod bad_config;
mod canary_promote;
mod checks;
mod configurator_crash;
mod happy;
mod monitor;
mod node_join;
mod peering;
mod pod_checks;
mod preflight;
mod remote_break;
mod steps;
mod tenant_break;
mod traffic_checks;
mod upgrade;

use anyhow::Result;
use futures::future::BoxFuture;
use kube::api::DynamicObject;

pub use checks::Summary;
pub use monitor::Monitor;
pub(crate) use steps::{new_revision, rollout};

use crate::cluster::Cluster;
use crate::inputs;
use crate::settings::Settings;

/// A scripted story.
pub trait Scenario: std::fmt::Debug + Send + Sync {
    /// Its name on the command line (`netrollout-lab scenario NAME`).
    fn name(&self) -> &'static str;

    /// The story and what it checks, as `scenario --help` prints it (one line per help line).
    fn about(&self) -> &'static str;

    /// Whether the story needs the routed tenant's VRF (`--vm`); `all` leaves such stories out
    /// (they have suites of their own).
    fn needs_vrf(&self) -> bool {
        false
    }

    /// Whether `all` runs it (stories needing a VRF or containers have suites of their own).
    fn in_all(&self) -> bool {
        !self.needs_vrf()
    }

    /// Lab settings for the story; most keep the user's.
    fn settings(&self, base: Settings) -> Settings {
        base
    }

    /// Plays the story on a started lab, recording its checks in `story.summary`.
    fn play<'a>(&'a self, story: &'a mut Story<'_>) -> BoxFuture<'a, Result<()>>;
}

/// What a story plays with.
#[derive(Debug)]
pub struct Story<'l> {
    /// The timeline.
    pub m: Monitor,
    /// The started lab.
    pub lab: &'l mut Cluster,
    /// The checks so far.
    pub summary: Summary,
    /// The inputs the lab starts from (the samples this kernel can carry).
    pub samples: Vec<DynamicObject>,
}

impl Story<'_> {
    /// The timeline, the lab, the checks and the samples, to use side by side.
    pub fn parts(&mut self) -> (&mut Monitor, &mut Cluster, &mut Summary, &[DynamicObject]) {
        (
            &mut self.m,
            &mut *self.lab,
            &mut self.summary,
            &self.samples,
        )
    }
}

/// Every scenario, in the order `--help` lists them and `all` runs those that need no VRF.
pub const ALL: [&dyn Scenario; 10] = [
    &happy::Happy,
    &bad_config::BadConfig,
    &node_join::NodeJoin,
    &configurator_crash::ConfiguratorCrash,
    &api_outage::ApiOutage,
    &tenant_break::TenantBreak,
    &remote_break::RemoteBreak,
    &upgrade::Upgrade,
    &canary_promote::CanaryPromote,
    &peering::Peering,
];

/// The scenario called `name`.
pub fn find(name: &str) -> Option<&'static dyn Scenario> {
    ALL.into_iter().find(|s| s.name() == name)
}

/// The scenario list `scenario --help` prints after the options.
pub fn help() -> String {
    let mut text = String::from("Scenarios:\n");
    for s in ALL {
        for (i, line) in s.about().lines().enumerate() {
            let name = if i == 0 { s.name() } else { "" };
            text.push_str(&format!("  {name:<20}{line}\n"));
        }
    }
    text.push_str(
        "  Every scenario checks tenant traffic (loss per node and network, full reachability at the end).\n",
    );
    text.push_str(&format!(
        "  {:<20}each of the above but those that need --vm or --containers, one lab each",
        "all"
    ));
    text
}

/// What `netrollout-lab scenario NAME` runs: one scenario or `all`.
#[derive(Clone, Copy, Debug)]
pub enum Choice {
    /// Every scenario, one lab each.
    All,
    /// One scenario.
    One(&'static dyn Scenario),
}

impl Choice {
    /// The scenarios to run.
    pub fn scenarios(self) -> Vec<&'static dyn Scenario> {
        match self {
            Choice::All => ALL.into_iter().filter(|s| s.in_all()).collect(),
            Choice::One(s) => vec![s],
        }
    }
}

impl std::str::FromStr for Choice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "all" {
            return Ok(Choice::All);
        }
        find(s).map(Choice::One).ok_or_else(|| {
            let names: Vec<&str> = ALL.iter().map(|s| s.name()).collect();
            format!(
                "unknown scenario {s:?}: choose one of {} or all",
                names.join(", ")
            )
        })
    }
}

/// Runs `scenario` on a started lab, then checks what every story promises: the nodes in flight
/// never exceeded the update limit.
pub async fn run(scenario: &dyn Scenario, lab: &mut Cluster) -> Result<Summary> {
    let started = std::time::Instant::now();
    let m = Monitor::new(lab);
    let nodes = lab.node_names().len();
    let (samples, skipped) = inputs::initial(&lab.settings().inputs(), lab.vrf, nodes)?;
    if !skipped.is_empty() {
        m.say(&format!(
            "no VRFs (no vrf module, or --without-vrfs): leaving out {} (without the vrf module, `happy` applies them at its end to show the pre-flight verdict)",
            skipped.join(", ")
        ));
    }
    let mut story = Story {
        m,
        lab,
        summary: Summary::default(),
        samples,
    };
    scenario.play(&mut story).await?;
    let Story {
        m,
        lab,
        mut summary,
        ..
    } = story;
    let (peak, at) = m.peak_in_flight();
    let limit = checks::limit(lab);
    summary.check(
        "nodes in flight never exceeded --update-limit (every stored state watched)",
        peak <= limit,
        format!("peak {peak} (limit {limit}): {}", at.join(", ")),
    );
    pod_checks::report(&mut summary, &m, lab, started.elapsed());
    Ok(summary)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::settings::UpdateLimit;

    pub(crate) fn base() -> Settings {
        Settings {
            nodes: 2,
            state_dir: PathBuf::from("state"),
            configurators: 1,
            update_limit: UpdateLimit::Count(2),
            apply_timeout: Some(Duration::from_secs(30)),
            pickup_timeout: Duration::from_secs(30),
            max_failures: 0,
            guard: crate::settings::GuardMode::Revert,
            probe_hold: Duration::from_secs(2),
            probe_holds: Default::default(),
            bin_dir: PathBuf::from("bin"),
            vm: false,
            without_vrfs: false,
            prometheus: false,
            containers: false,
            manifests: None,
            frr: Default::default(),
            configurator_flags: Vec::new(),
        }
    }

    fn names(scenarios: &[&dyn Scenario]) -> Vec<&'static str> {
        scenarios.iter().map(|s| s.name()).collect()
    }

    #[test]
    fn all_runs_every_scenario_that_needs_no_vm_once_in_the_documented_order() {
        let Ok(all) = "all".parse::<Choice>() else {
            panic!("`all` is refused");
        };
        assert_eq!(
            names(&all.scenarios()),
            [
                "happy",
                "bad-config",
                "node-join",
                "configurator-crash",
                "api-outage",
                "tenant-break",
            ]
        );
    }

    #[test]
    fn each_scenario_is_chosen_by_its_own_name() {
        for s in ALL {
            let Ok(choice) = s.name().parse::<Choice>() else {
                panic!("{} is refused", s.name());
            };
            assert_eq!(names(&choice.scenarios()), [s.name()]);
        }
    }

    #[test]
    fn an_unknown_scenario_is_refused_naming_every_choice() {
        let Err(e) = "happy-path".parse::<Choice>() else {
            panic!("an unknown name was accepted");
        };
        assert!(e.contains("\"happy-path\""), "{e}");
        for s in ALL {
            assert!(e.contains(s.name()), "{e} does not name {}", s.name());
        }
        assert!(e.ends_with("or all"), "{e}");
    }

    #[test]
    fn help_lists_every_scenario_with_its_whole_story_aligned() {
        let help = help();
        let mut lines = help.lines();
        assert_eq!(lines.next(), Some("Scenarios:"));
        for s in ALL {
            for (i, story) in s.about().lines().enumerate() {
                let name = if i == 0 { s.name() } else { "" };
                assert_eq!(lines.next(), Some(format!("  {name:<20}{story}").as_str()));
            }
        }
        assert!(lines.next().is_some_and(|l| l.contains("tenant traffic")));
        assert_eq!(
            lines.next(),
            Some(
                "  all                 each of the above but those that need --vm or --containers, one lab each"
            )
        );
        assert_eq!(lines.next(), None);
    }

    #[test]
    fn the_crash_and_join_stories_choose_their_lab_and_the_others_keep_it() {
        for s in ALL {
            let o = s.settings(base());
            let expected = match s.name() {
                "configurator-crash" => (2, 2, UpdateLimit::Count(1)),
                "node-join" => (3, 1, UpdateLimit::Count(1)),
                "remote-break" | "peering" => (2, 1, UpdateLimit::Count(1)),
                "upgrade" => (3, 1, UpdateLimit::Count(1)),
                "canary-promote" => (4, 1, UpdateLimit::Count(2)),
                _ => (2, 1, UpdateLimit::Count(2)),
            };
            assert_eq!(o.containers, s.name() == "upgrade", "{}", s.name());
            assert_eq!(
                (o.nodes, o.configurators, o.update_limit),
                expected,
                "{}",
                s.name()
            );
        }
    }
}
