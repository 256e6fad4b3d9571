//! End-to-end tests: the configurator against the in-process lab API server, with simulated
//! agents that write status the way the real agent does.
//!
//! - `analysis`: analysis gates measured against a fake Prometheus: the initial delay, and an
//!   undo to a gated revision measured afresh.
//! - `rollout`: waves under the update limit, revisions reused and superseded, invalid inputs.
//! - `failure`: a failing node halts and reverts; a failed config stays blocked until retried.
//! - `fleet`: nodes joining, leaving and NotReady mid-rollout; unresponsive agents; pauses.
//! - `faults`: API errors injected by the lab server; a revision deleted while terminating.
//! - `flood`: every node of a 300-node fleet reports at once; the lease keeps being renewed
//!   and every report is counted.
//! - `guard`: the fleet guard: an untouched node regressing during a wave fails the revision
//!   and reverts the wave; `--guard=off`; a node regressed before the wave never trips it.
//! - `bake`: `--bake-time`: a committed node holds its slot, the revision says it bakes, and
//!   a regression within the bake fails it.
//! - `change_record`: people change inputs with the real kubectl; each revision records who,
//!   the client, why and the ticket; the admission policy refuses a change in another's name.
//! - `domains`: failure domains: one node per rack at a time, racks one after the other, a
//!   failure in a second rack fails the revision within the node budget.
//! - `known_good`: an undo to a Succeeded revision that fails now fails it and goes back.
//! - `preflight`: a revision needing what a node reported missing waits, says so, and rolls
//!   out once the node reports it.
//! - `schedule`: maintenance windows and freezes: a revision waits outside every window and
//!   in a freeze, says when the next window opens, and moves in one; an undo to known-good and
//!   the rollback after a failure go in a freeze.
//! - `leader`: two configurator processes, the leader killed mid-rollout.
//! - `status`: the kstatus conditions as the real kubectl waits on them, no writes when nothing
//!   changed, the prune and ignored-retry Events.

// A test crate: its helpers may panic (clippy.toml allows this only inside `#[test]` functions).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod analysis;
mod approval;
mod bake;
mod change_record;
mod domains;
mod failure;
mod faults;
mod fleet;
mod flood;
mod guard;
mod known_good;
mod lab;
mod leader;
mod preflight;
mod rollout;
mod schedule;
mod status;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

// The simulated agents live in the test kit (the configurator benchmark uses them too).
use netrollout_testkit::fake_agents as agents;

use netrollout_api::{NetworkConfigRevision, NodeNetworkConfig, RevisionPhase};

/// The known-good start of most tests: the `extra` routing table set to table 100, and the
/// revision it makes once it has Succeeded (within 20s).
async fn first_good(lab: &lab::LabApi) -> lab::R<NetworkConfigRevision> {
    lab.set_table("extra", 100).await?;
    lab.newest_in(RevisionPhase::Succeeded, Duration::from_secs(20))
        .await
}

/// The newest revision after `sequence`, once it has Succeeded (within 20s).
async fn succeeded_after(lab: &lab::LabApi, sequence: i64) -> lab::R<NetworkConfigRevision> {
    lab.newest_after(sequence, RevisionPhase::Succeeded, Duration::from_secs(20))
        .await
}

/// Nodes `n-0` .. `n-{count-1}`, Ready, no labels.
async fn nodes(lab: &lab::LabApi, count: usize) -> lab::R {
    for i in 0..count {
        lab.add_node(&format!("n-{i}"), &[], true).await?;
    }
    Ok(())
}

/// The condition `type_` of a revision, checked to describe its current generation.
fn condition<'a>(
    ncr: &'a netrollout_api::NetworkConfigRevision,
    type_: &str,
) -> &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    let status = ncr.status.as_ref().expect("the revision has a status");
    let c = status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_} condition in {:?}", status.conditions));
    assert_eq!(
        c.observed_generation, ncr.metadata.generation,
        "{type_} describes the current generation"
    );
    assert_eq!(status.observed_generation, ncr.metadata.generation);
    c
}

/// Asserts that `event` is a Warning (or Normal when `warning` is false) whose note names
/// every one of `names`.
fn assert_event(event: &k8s_openapi::api::events::v1::Event, warning: bool, names: &[&str]) {
    let want = if warning { "Warning" } else { "Normal" };
    assert_eq!(event.type_.as_deref(), Some(want), "{event:?}");
    let note = event.note.as_deref().unwrap_or_default();
    for name in names {
        assert!(note.contains(name), "the note names {name}: {note}");
    }
}

/// Waits until every listed node's config names `revision` and reports Provisioned for it.
async fn all_provisioned(
    lab: &lab::LabApi,
    nodes: &[String],
    revision: &str,
    within: Duration,
) -> lab::R {
    lab::eventually(within, || async {
        let configs = lab.configs().await?;
        Ok(nodes.iter().all(|n| {
            configs
                .iter()
                .any(|c| c.metadata.name.as_deref() == Some(n.as_str()) && provisioned(c, revision))
        }))
    })
    .await
    .map_err(|e| anyhow::anyhow!("not every node of {nodes:?} provisioned {revision}: {e}"))
}

fn provisioned(c: &NodeNetworkConfig, revision: &str) -> bool {
    c.spec.revision == revision
        && c.status.as_ref().is_some_and(|s| {
            s.observed_revision.as_deref() == Some(revision)
                && s.phase == Some(netrollout_api::NodePhase::Provisioned)
        })
}

fn names(count: usize) -> Vec<String> {
    (0..count).map(|i| format!("n-{i}")).collect()
}

/// Agents (for [`agents::Agents::start`]) that take 100 ms per config and fail every config
/// carrying one of `fails`' routing tables: always (`None`) or while its switch is on; every
/// other config succeeds.
fn failing_tables(fails: Vec<(u32, Option<Arc<AtomicBool>>)>) -> agents::Script {
    Arc::new(move |_, spec| {
        let fail = fails.iter().any(|(id, switch)| {
            has_table(spec, *id) && switch.as_ref().is_none_or(|on| on.load(Ordering::SeqCst))
        });
        let outcome = if fail {
            agents::Outcome::Fail
        } else {
            agents::Outcome::Succeed
        };
        (Duration::from_millis(100), outcome)
    })
}

/// Whether `spec` carries a routing table with `id`.
fn has_table(spec: &netrollout_api::NodeNetworkConfigSpec, id: u32) -> bool {
    spec.config.routing_tables.iter().any(|t| t.table_id == id)
}
