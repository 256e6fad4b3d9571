//! The exact requests [`tell`] makes, through a real client to the request verifier
//! (`context::verifier`): on the target, one status merge patch of its hold and the promotion a
//! person wrote, then the Warning Event of the hold and the Event `Promoted`; on another
//! revision still holding, one patch clearing its hold; nothing on the next pass.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use netrollout_api::NetworkConfigRevisionStatus;

use super::*;
use crate::context::verifier;

fn promotion() -> Promotion {
    Promotion {
        sequence: 4,
        gates: 1,
        full: false,
        force: false,
        by: "alice".into(),
        at: Time(jiff::Timestamp::from_second(1_700_000_000).unwrap()),
    }
}

fn gate_hold() -> Hold {
    Hold {
        revision: "ncr-a".into(),
        sequence: 4,
        cause: HoldCause::Gate {
            gate: 1,
            gates: 2,
            nodes: 3,
        },
        reason: "waits at approval gate 2 of 2".into(),
    }
}

#[tokio::test]
async fn tell_patches_the_hold_and_promotion_then_records_the_events_once() {
    let mut target = NetworkConfigRevision::new("ncr-a", Default::default());
    target.spec.sequence = 4;
    target.spec.promotion = Some(promotion());
    let mut other = NetworkConfigRevision::new("ncr-b", Default::default());
    other.status = Some(NetworkConfigRevisionStatus {
        hold: Some(hold_status(&gate_hold())),
        ..Default::default()
    });
    let (ctx, server) = verifier::context(&[target, other], &[], true);
    let summary = Summary {
        target: Some("ncr-a".into()),
        hold: Some(gate_hold()),
        ..Default::default()
    };
    let told = NotedMemo::default();

    tell(&ctx, &told, &summary).await.expect("tell");
    let (b, a): (Vec<_>, Vec<_>) = server
        .take()
        .into_iter()
        .partition(|s| s.uri.contains("ncr-b"));
    assert_eq!(b.len(), 1, "{b:#?}");
    assert_eq!(
        b[0].status_patch("ncr-b"),
        &serde_json::json!({ "hold": null })
    );
    assert_eq!(a.len(), 3, "{a:#?}");
    let status = a[0].status_patch("ncr-a");
    let keys: Vec<&String> = status.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["hold", "promotions"]);
    assert_eq!(
        status["hold"],
        serde_json::json!({
            "reason": AWAITING_PROMOTION, "sequence": 4, "gate": 2, "gates": 2, "nodes": 3,
            "message": "waits at approval gate 2 of 2",
        })
    );
    assert_eq!(
        status["promotions"],
        serde_json::to_value([promotion()]).unwrap()
    );
    assert_eq!(
        a[1].event_said(),
        [
            AWAITING_PROMOTION,
            "Warning",
            "ncr-a",
            "waits at approval gate 2 of 2"
        ]
    );
    let note = promoted_note("ncr-a", &promotion());
    assert_eq!(a[2].event_said(), [PROMOTED, "Normal", "ncr-a", &note]);

    // The answers are laid over the cache: the next pass writes and tells nothing.
    tell(&ctx, &told, &summary).await.expect("second tell");
    assert_eq!(server.take(), Vec::new());
}

#[tokio::test]
async fn a_replica_that_does_not_lead_tells_nothing() {
    let mut target = NetworkConfigRevision::new("ncr-a", Default::default());
    target.spec.promotion = Some(promotion());
    let (ctx, server) = verifier::context(&[target], &[], false);
    let summary = Summary {
        target: Some("ncr-a".into()),
        hold: Some(gate_hold()),
        ..Default::default()
    };
    let err = tell(&ctx, &NotedMemo::default(), &summary)
        .await
        .expect_err("not leading");
    assert!(matches!(err, crate::error::Error::NotLeader), "{err}");
    assert_eq!(server.take(), Vec::new());
}
