//! The exact requests [`sync`] makes for the lifecycle's actions, through a real client to the
//! request verifier (`context::verifier`), in order: a retried Failed revision is cleared to
//! Pending (a status patch), raised above the others (a patch of its sequence and annotations
//! under its resourceVersion), its change record written and the raise recorded; inputs that
//! no revision holds get a new one (the RolloutAnalyses listed to copy in); a retry annotation
//! on a revision that did not fail is removed and the Event says it was ignored; nothing on
//! the next pass.

use netrollout_api::{
    NetworkConfigRevision, NetworkConfigRevisionStatus, RETRIED_ANNOTATION, RevisionPhase,
    UNDO_ANNOTATION,
};

use super::*;
use crate::context::verifier;

fn revision(
    name: &str,
    sequence: i64,
    phase: RevisionPhase,
    retry: Option<&str>,
) -> NetworkConfigRevision {
    let mut r = NetworkConfigRevision::new(name, Default::default());
    r.spec.sequence = sequence;
    r.spec.hash = format!("sha256:{name}");
    r.metadata.generation = Some(1);
    r.metadata.annotations = retry.map(|v| [(RETRY_ANNOTATION.to_string(), v.to_string())].into());
    r.status = Some(NetworkConfigRevisionStatus {
        phase: Some(phase),
        ..Default::default()
    });
    r
}

#[tokio::test]
async fn a_retry_clears_raises_and_records_the_revision_and_new_inputs_get_a_new_one() {
    let (ctx, server) = verifier::context(
        &[
            revision("ncr-failed", 1, RevisionPhase::Failed, Some("again")),
            revision("ncr-good", 2, RevisionPhase::Succeeded, None),
        ],
        &[],
        true,
    );
    let memos = Memos::default();

    sync(&ctx, &memos, 1, &[]).await.expect("sync");
    let seen = server.take();
    let path = |s: &verifier::Seen| format!("{} {}", s.method, s.uri.split('?').next().unwrap());
    let ncrs = "/apis/netrollout.io/v1alpha1/networkconfigrevisions";
    let events = "/apis/events.k8s.io/v1/namespaces/default/events";
    let created = seen[5].body["metadata"]["name"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        seen.iter().map(path).collect::<Vec<_>>(),
        [
            format!("PATCH {ncrs}/ncr-failed/status"),
            format!("PATCH {ncrs}/ncr-failed"),
            format!("PATCH {ncrs}/ncr-failed/status"),
            format!("POST {events}"),
            "GET /apis/netrollout.io/v1alpha1/rolloutanalyses".to_string(),
            format!("POST {ncrs}"),
            format!("PATCH {ncrs}/{created}/status"),
            format!("POST {events}"),
        ],
        "{seen:#?}"
    );

    // The retry: cleared to Pending (the failures and the analysis gone, the conditions with
    // the phase), then raised above every other sequence under the cleared revision's
    // resourceVersion, the retry annotation turned into `retried`, then its change record.
    let cleared = seen[0].status_patch("ncr-failed");
    let retried = "retried by a person: rolled out again as the newest revision";
    assert_eq!(
        (
            &cleared["phase"],
            &cleared["message"],
            &cleared["failedNodes"],
            &cleared["analysis"]
        ),
        (
            &"Pending".into(),
            &retried.into(),
            &serde_json::json!([]),
            &serde_json::Value::Null
        )
    );
    assert_eq!(cleared["observedGeneration"], 1);
    assert_eq!(cleared["conditions"][0]["type"], "Ready");
    assert_eq!(cleared["conditions"][0]["reason"], "Pending");
    assert_eq!(seen[1].content_type, "application/merge-patch+json");
    assert_eq!(
        seen[1].body,
        serde_json::json!({
            "metadata": {
                "resourceVersion": "2",
                "annotations": {
                    RETRY_ANNOTATION: null,
                    RETRIED_ANNOTATION: "again",
                    UNDO_ANNOTATION: null,
                },
            },
            "spec": { "sequence": 3 },
        })
    );
    assert_eq!(
        seen[2].status_patch("ncr-failed"),
        &serde_json::json!({ "changes": [] })
    );
    assert_eq!(
        seen[3].event_said(),
        [
            "SequenceRaised",
            "Normal",
            "ncr-failed",
            "retried by a person: sequence raised from 1 to 3, which makes it the target again"
        ]
    );

    // The current inputs (none) differ from every revision: a new one above the raised one,
    // with the RolloutAnalyses copied in (none), its change record and its Event.
    let new = &seen[5].body;
    assert_eq!(new["spec"]["sequence"], 4);
    assert_eq!(
        new["metadata"]["labels"][netrollout_api::MANAGED_BY_LABEL],
        "netrollout-configurator"
    );
    assert!(created.starts_with("ncr-"), "{created}");
    assert_eq!(
        seen[6].status_patch(created),
        &serde_json::json!({ "changes": [] })
    );
    assert_eq!(seen[7].event()["reason"], "Created");

    // What the server holds now: the retried revision Pending at sequence 3, no retry left.
    let failed = server.revision("ncr-failed").unwrap();
    assert_eq!(failed["spec"]["sequence"], 3);
    assert_eq!(failed["status"]["phase"], "Pending");
    assert_eq!(
        failed["metadata"]["annotations"],
        serde_json::json!({ RETRIED_ANNOTATION: "again" })
    );

    // The answers are laid over the cache: the next pass writes nothing.
    sync(&ctx, &memos, 1, &[]).await.expect("second sync");
    assert_eq!(server.take(), Vec::new());
}

#[tokio::test]
async fn a_retry_of_a_revision_that_did_not_fail_is_removed_and_said() {
    let (ctx, server) = verifier::context(
        &[revision("ncr-good", 2, RevisionPhase::Succeeded, Some(""))],
        &[],
        true,
    );
    let memos = Memos::default();

    sync(&ctx, &memos, 1, &[]).await.expect("sync");
    let seen = server.take();
    // Then the new revision of the current inputs (none), as above.
    assert_eq!(seen.len(), 6, "{seen:#?}");
    assert_eq!(
        (seen[0].method.as_str(), seen[0].uri.split('?').next()),
        (
            "PATCH",
            Some("/apis/netrollout.io/v1alpha1/networkconfigrevisions/ncr-good")
        )
    );
    assert_eq!(seen[0].content_type, "application/merge-patch+json");
    assert_eq!(
        seen[0].body,
        serde_json::json!({ "metadata": { "annotations": { RETRY_ANNOTATION: null } } })
    );
    assert_eq!(
        seen[1].event_said(),
        [
            "RetryIgnored",
            "Normal",
            "ncr-good",
            "retry of revision ncr-good ignored: only a Failed or Blocked revision is retried; \
             the annotation was removed"
        ]
    );
    let good = server.revision("ncr-good").unwrap();
    assert_eq!(good["metadata"]["annotations"], serde_json::json!({}));
    assert_eq!(good["spec"]["sequence"], 2);

    sync(&ctx, &memos, 1, &[]).await.expect("second sync");
    assert_eq!(server.take(), Vec::new());
}
