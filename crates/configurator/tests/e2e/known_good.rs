//! A revision that succeeded before and is the target again (an undo raised its sequence) has a
//! failure budget like a new one: when it fails now it becomes Failed, and the fleet goes back
//! to the revision the undo moved away from.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use netrollout_api::RevisionPhase;
use netrollout_api::reason::is_reason_word;

use crate::agents::Agents;
use crate::lab::{ConfiguratorLab as _, LabApi, R};
use crate::{all_provisioned, failing_tables, first_good, names, nodes, succeeded_after};

#[tokio::test]
async fn an_undo_to_a_succeeded_revision_that_fails_now_fails_it_and_goes_back() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 4).await?;
    // Table 100 succeeds at first; after the undo the same content fails on every node.
    let bad = Arc::new(AtomicBool::new(false));
    let script = failing_tables(vec![(100, Some(bad.clone()))]);
    let agents = Agents::start(lab.client.clone(), script);
    let cfg = lab.configurator(&["--update-limit=2"]);
    let old = first_good(&lab).await?;
    let old_name = old.metadata.name.clone().unwrap();
    lab.set_table("extra", 200).await?;
    let cur = succeeded_after(&lab, old.spec.sequence).await?;
    let cur_name = cur.metadata.name.clone().unwrap();
    all_provisioned(&lab, &names(4), &cur_name, Duration::from_secs(10)).await?;
    let pickups_before = agents.pickups().len();

    // The undo raises the Succeeded revision; it fails now, on the first wave only.
    bad.store(true, Ordering::SeqCst);
    lab.set_table("extra", 100).await?;
    let failed = lab
        .newest_after(
            cur.spec.sequence,
            RevisionPhase::Failed,
            Duration::from_secs(20),
        )
        .await?;
    assert_eq!(failed.metadata.name.as_deref(), Some(old_name.as_str()));
    let status = failed.status.clone().unwrap_or_default();
    assert!(!status.failed_nodes.is_empty(), "{status:?}");
    // Reasons are words tools match on (the fake agents report `ProbeFailed`).
    assert!(
        status
            .failed_nodes
            .iter()
            .all(|f| is_reason_word(&f.reason) && f.reason == "ProbeFailed"),
        "{status:?}"
    );
    // Every node goes back to the revision the undo moved away from.
    all_provisioned(&lab, &names(4), &cur_name, Duration::from_secs(20)).await?;
    let again: Vec<_> = agents.pickups()[pickups_before..]
        .iter()
        .filter(|(_, r)| *r == old_name)
        .cloned()
        .collect();
    assert!(again.len() <= 2, "the blast radius is one wave: {again:?}");
    cfg.stop().await
}

/// A rollback whose known-good revision fails now halts (nothing more moves), and the halt is an
/// Event: a Warning `RollbackHalted` on the known-good revision.
#[tokio::test]
async fn a_rollback_the_known_good_revision_fails_halts_and_says_so_in_an_event() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 4).await?;
    // Table 200 always fails; table 100 succeeds at first and fails once `known_good_breaks`.
    let known_good_breaks = Arc::new(AtomicBool::new(false));
    let script = failing_tables(vec![(200, None), (100, Some(known_good_breaks.clone()))]);
    let _agents = Agents::start(lab.client.clone(), script);
    let cfg = lab.configurator(&["--update-limit=2"]);
    let good = first_good(&lab).await?;
    let good_name = good.metadata.name.clone().unwrap();
    all_provisioned(&lab, &names(4), &good_name, Duration::from_secs(10)).await?;

    known_good_breaks.store(true, Ordering::SeqCst);
    lab.set_table("extra", 200).await?;
    lab.newest_after(
        good.spec.sequence,
        RevisionPhase::Failed,
        Duration::from_secs(20),
    )
    .await?;
    let halted = lab
        .event(
            "NetworkConfigRevision",
            &good_name,
            "RollbackHalted",
            Duration::from_secs(20),
        )
        .await?;
    crate::assert_event(&halted, true, &[&good_name, "--max-failures=0"]);
    cfg.stop().await
}
