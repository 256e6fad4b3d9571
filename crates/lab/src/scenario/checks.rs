//! The checks scenarios share, and the summary they are recorded in.

use std::time::{Duration, Instant};

use anyhow::Result;

use super::Monitor;
use crate::cluster::Cluster;

/// The outcome of a scenario: each check with whether it held.
#[derive(Debug, Default)]
pub struct Summary {
    /// `(check, held, detail)`.
    pub checks: Vec<(String, bool, String)>,
}

impl Summary {
    pub(crate) fn check(&mut self, what: &str, held: bool, detail: impl Into<String>) {
        self.checks.push((what.to_string(), held, detail.into()));
    }

    /// Whether every check held.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.1)
    }
}

/// The update limit resolved for the lab's current node count.
pub(super) fn limit(lab: &Cluster) -> usize {
    lab.settings().update_limit.resolve(lab.node_names().len())
}

/// Checks of a failed rollout: only the first wave got the revision, at most max-failures +
/// limit nodes failed, each restored last-known-good locally and said why.
pub(super) fn halted_and_restored(
    summary: &mut Summary,
    m: &Monitor,
    lab: &Cluster,
    given: &[String],
    good: &str,
    limit: usize,
) {
    summary.check(
        "the rollout halted: only the first wave was given the bad revision",
        !given.is_empty() && given.len() <= limit,
        format!("{} (limit {limit})", given.join(", ")),
    );
    let failures = m.failures();
    let failed = failures.len();
    let max_failures = lab.settings().max_failures as usize;
    summary.check(
        "blast radius ≤ max-failures + update limit",
        failed <= max_failures + limit,
        format!("{failed} node(s) failed, limit {limit}, max-failures {max_failures}"),
    );
    let restored = format!("restored last-known-good {good}");
    let said_why = !failures.is_empty()
        && failures
            .values()
            .all(|msgs| msgs.iter().any(|msg| msg.contains(&restored)));
    summary.check(
        "failed nodes restored last-known-good locally and said why",
        said_why,
        failures
            .iter()
            .map(|(node, msgs)| format!("{node}: {}", msgs.join(" | ")))
            .collect::<Vec<_>>()
            .join("; "),
    );
}

/// Waits (up to 20 s) until no Node carries the startup taint; checks that.
pub(super) async fn untainted(
    summary: &mut Summary,
    m: &Monitor,
    lab: &Cluster,
    what: &str,
) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut tainted = lab.tainted().await?;
    while !tainted.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
        tainted = lab.tainted().await?;
    }
    m.say(&format!(
        "startup taint {}: {}",
        crate::cluster::STARTUP_TAINT,
        if tainted.is_empty() {
            "removed from every node by its agent".to_string()
        } else {
            format!("still on {}", tainted.join(", "))
        }
    ));
    summary.check(
        what,
        tainted.is_empty(),
        format!(
            "{} by the agents (health-check file passing); still tainted: {tainted:?}",
            crate::cluster::STARTUP_TAINT
        ),
    );
    Ok(())
}

pub(super) fn all_provisioned(summary: &mut Summary, m: &Monitor, lab: &Cluster, revision: &str) {
    let done = m.now.provisioned_on(revision).len();
    let nodes = lab.node_names().len();
    summary.check(
        &format!("every node Provisioned on {revision}"),
        done == nodes,
        format!("{done}/{nodes}"),
    );
}
