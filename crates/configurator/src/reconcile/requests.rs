//! The exact requests of the pass's own steps, through a real client to the request verifier
//! (`context::verifier`): [`progress`] patches the target's counts and bake once (again when either
//! changes, a non-urgent change only after the interval); [`halted_rollback`] records the Warning
//! Event `RollbackHalted` once per halt; [`tell_trip`] records the Warning Event `GuardTripped`
//! naming the regressed nodes and counts the trip.

use netrollout_api::NetworkConfigRevisionStatus;
use netrollout_rollout::{Bake, Timestamp};

use super::*;
use crate::context::verifier;

fn summary() -> Summary {
    Summary {
        managed: 10,
        not_ready: 1,
        in_flight: 2,
        target: Some("ncr-a".into()),
        target_updated: 5,
        target_failed: 1,
        mode: Mode::RollingOut,
        bake: Some(Bake {
            revision: "ncr-a".into(),
            nodes: 2,
            // Not whole seconds: written rounded up.
            until: Timestamp::from_millis(1_700_000_060_500),
        }),
        ..Default::default()
    }
}

#[tokio::test]
async fn progress_patches_the_counts_and_bake_once() {
    let mut ncr = NetworkConfigRevision::new("ncr-a", Default::default());
    ncr.status = Some(NetworkConfigRevisionStatus::default());
    let (ctx, server) = verifier::context(&[ncr], &[], true);
    let memo = ProgressMemo::default();

    progress(&ctx, &memo, &summary(), 3, false)
        .await
        .expect("progress");
    let seen = server.take();
    assert_eq!(seen.len(), 1, "{seen:#?}");
    let status = seen[0].status_patch("ncr-a");
    let mut counts = status.clone();
    let bake = counts.as_object_mut().unwrap().remove("bake").unwrap();
    assert_eq!(
        counts,
        serde_json::json!({
            "total": 10, "queued": 1, "inFlight": 2, "ready": 5, "failed": 1,
            "unresponsive": 3, "skipped": 1, "progress": "5/10", "schedule": null,
        })
    );
    assert_eq!(bake["nodes"], 2);
    assert_eq!(bake["until"], "2023-11-14T22:14:21Z");
    assert!(bake["secondsLeft"].is_u64(), "{bake}");

    // The answer is laid over the cache: the same counts are not written again.
    progress(&ctx, &memo, &summary(), 3, true)
        .await
        .expect("same counts");
    assert_eq!(server.take(), Vec::new());

    // A count that changes right after a write waits for the interval unless urgent.
    let moved = Summary {
        target_updated: 6,
        ..summary()
    };
    progress(&ctx, &memo, &moved, 3, false)
        .await
        .expect("not due");
    assert_eq!(server.take(), Vec::new());
    progress(&ctx, &memo, &moved, 3, true)
        .await
        .expect("urgent");
    let seen = server.take();
    assert_eq!(seen.len(), 1, "{seen:#?}");
    assert_eq!(seen[0].status_patch("ncr-a")["progress"], "6/10");

    // The bake alone changes (one more node baking): written too.
    let baking = Summary {
        bake: moved.bake.clone().map(|b| Bake { nodes: 3, ..b }),
        ..moved
    };
    progress(&ctx, &memo, &baking, 3, true).await.expect("bake");
    let seen = server.take();
    assert_eq!(seen.len(), 1, "{seen:#?}");
    assert_eq!(seen[0].status_patch("ncr-a")["bake"]["nodes"], 3);
}

#[tokio::test]
async fn a_halted_rollback_is_told_once_per_halt() {
    let (ctx, server) = verifier::context(
        &[NetworkConfigRevision::new("ncr-a", Default::default())],
        &[],
        true,
    );
    let told = NotedMemo::default();
    let halted = Summary {
        mode: Mode::Halted,
        target_failed: 4,
        ..summary()
    };

    halted_rollback(&ctx, &told, &halted, 2).await;
    let seen = server.take();
    assert_eq!(seen.len(), 1, "{seen:#?}");
    let note = halted_note(&halted, 2).unwrap();
    assert_eq!(
        seen[0].event_said(),
        ["RollbackHalted", "Warning", "ncr-a", &note]
    );
    assert!(
        note.contains("4 node(s) failed it (more than --max-failures=2)"),
        "{note}"
    );

    halted_rollback(&ctx, &told, &halted, 2).await;
    assert_eq!(server.take(), Vec::new(), "told once");
    // Moving again, then halted again: told again.
    halted_rollback(&ctx, &told, &summary(), 2).await;
    assert_eq!(server.take(), Vec::new());
    halted_rollback(&ctx, &told, &halted, 2).await;
    assert_eq!(server.take().len(), 1);
}

#[tokio::test]
async fn a_guard_trip_is_told_by_one_warning_event_and_counted() {
    use netrollout_rollout::guard::{GuardMode, Regression};
    let ncrs = [Arc::new(NetworkConfigRevision::new(
        "ncr-a",
        Default::default(),
    ))];
    let (ctx, server) = verifier::context(&[], &[], true);
    let trip = GuardTrip {
        revision: "ncr-a".into(),
        mode: GuardMode::Halt,
        wave_start: Timestamp::from_millis(1_700_000_000_000),
        wave: vec!["node-1".into()],
        regressed: vec![Regression {
            node: "node-1".into(),
            since: Timestamp::from_millis(1_700_000_001_000),
            checks: vec!["tenant-gw".into()],
            dispatched: true,
        }],
        known_good: None,
    };

    tell_trip(&ctx, &trip, &ncrs).await;
    let seen = server.take();
    assert_eq!(seen.len(), 1, "{seen:#?}");
    let note = crate::health::trip_note(&trip);
    assert_eq!(
        seen[0].event_said(),
        [GUARD_TRIPPED, "Warning", "ncr-a", &note]
    );
    assert!(note.contains("node-1 (tenant-gw)"), "{note}");
    assert_eq!(ctx.metrics().guard_trips.get(), 1);
}
