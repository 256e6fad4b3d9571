//! The exact requests [`sync`] makes, through a real client to the request verifier
//! (`context::verifier`): one status merge patch per out-of-date revision, none for a revision
//! whose conditions are current or that is being deleted, none once the written conditions are
//! seen, none while not leading.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use netrollout_api::{NetworkConfigRevisionStatus, RevisionPhase};

use super::*;
use crate::context::verifier;

fn revision(name: &str, phase: RevisionPhase) -> NetworkConfigRevision {
    let mut r = NetworkConfigRevision::new(name, Default::default());
    r.metadata.generation = Some(3);
    r.status = Some(NetworkConfigRevisionStatus {
        phase: Some(phase),
        ..Default::default()
    });
    r
}

/// `r` with the conditions [`update`] would write already in place.
fn current(mut r: NetworkConfigRevision) -> NetworkConfigRevision {
    let status = r.status.clone().unwrap_or_default();
    let facts = Facts {
        phase: status.phase,
        message: None,
        pause: Pause::No,
        refused: None,
        bake: None,
        hold: None,
        schedule: None,
    };
    let now = Time(jiff::Timestamp::from_second(5).unwrap());
    let list = conditions(&[], r.metadata.generation, &facts, &now);
    let s = r.status.get_or_insert_with(Default::default);
    s.conditions = list;
    s.observed_generation = r.metadata.generation;
    assert_eq!(update(&r, false, None), None, "the fixture is current");
    r
}

fn types(status: &serde_json::Value) -> Vec<(String, String, String)> {
    status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap().to_string();
            (s("type"), s("status"), s("reason"))
        })
        .collect()
}

#[tokio::test]
async fn sync_patches_the_status_of_each_out_of_date_revision_once() {
    let mut deleting = revision("ncr-deleting", RevisionPhase::Progressing);
    deleting.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::from_second(1).unwrap()));
    let (ctx, server) = verifier::context(
        &[
            revision("ncr-new", RevisionPhase::Progressing),
            current(revision("ncr-done", RevisionPhase::Succeeded)),
            deleting,
        ],
        &[],
        true,
    );

    sync(&ctx, None).await.expect("sync");
    let seen = server.take();
    assert_eq!(seen.len(), 1, "{seen:#?}");
    let status = seen[0].status_patch("ncr-new");
    let keys: Vec<&String> = status.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["conditions", "observedGeneration"]);
    assert_eq!(status["observedGeneration"], 3);
    let want = [
        ("Ready", "False", "Progressing"),
        ("Reconciling", "True", "Progressing"),
        ("Stalled", "False", "Progressing"),
    ]
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()));
    assert_eq!(types(status), want);

    // The answer is laid over the cache: the next pass sees the conditions and writes nothing.
    sync(&ctx, None).await.expect("second sync");
    assert_eq!(server.take(), Vec::new());
}

#[tokio::test]
async fn a_replica_that_does_not_lead_sends_nothing() {
    let (ctx, server) =
        verifier::context(&[revision("ncr-new", RevisionPhase::Pending)], &[], false);
    let err = sync(&ctx, None).await.expect_err("not leading");
    assert!(matches!(err, crate::error::Error::NotLeader), "{err}");
    assert_eq!(server.take(), Vec::new());
}
