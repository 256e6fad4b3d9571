//! The exact requests [`Analyst::run`] makes with no Prometheus configured, through a real
//! client to the request verifier (`context::verifier`): the `Unavailable` verdict and its
//! condition patched on the target's status, then the Warning Event; nothing on the next pass.

use netrollout_rollout::analysis::Gate;

use super::*;
use crate::context::verifier;

#[tokio::test]
async fn a_target_held_for_want_of_prometheus_is_told_once() {
    let mut ncr = NetworkConfigRevision::new("ncr-a", Default::default());
    ncr.metadata.generation = Some(2);
    let (ctx, server) = verifier::context(&[ncr], &[], true);
    let summary = Summary {
        target: Some("ncr-a".into()),
        analysis: Some(Gate {
            revision: "ncr-a".into(),
            sequence: 7,
            nodes: 3,
            due: false,
            held: true,
            reason: "no --prometheus-url: the analysis cannot run".into(),
        }),
        ..Default::default()
    };
    let analyst = Analyst::new(None);

    analyst.run(&ctx, &summary).await.expect("run");
    let seen = server.take();
    assert_eq!(seen.len(), 2, "{seen:#?}");
    let status = seen[0].status_patch("ncr-a");
    assert_eq!(status["analysis"]["phase"], "Unavailable");
    assert_eq!(status["analysis"]["sequence"], 7);
    assert_eq!(status["analysis"]["nodes"], 3);
    let conditions = status["conditions"].as_array().unwrap();
    assert_eq!(conditions.len(), 1);
    assert_eq!(conditions[0]["type"], ANALYSIS_CONDITION);
    assert_eq!(conditions[0]["status"], "False");
    assert_eq!(conditions[0]["reason"], "PrometheusNotConfigured");
    assert_eq!(conditions[0]["observedGeneration"], 2);
    let [reason, kind, about, note] = seen[1].event_said();
    assert_eq!(
        [reason, kind, about],
        ["PrometheusNotConfigured", "Warning", "ncr-a"]
    );
    assert!(note.contains("no --prometheus-url"), "{note}");

    analyst.run(&ctx, &summary).await.expect("second run");
    assert_eq!(server.take(), Vec::new());
}
