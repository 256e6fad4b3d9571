//! Analysis gates end to end: the configurator in-process against the lab API server, with
//! simulated agents and a fake Prometheus that records when it is queried.
//!
//! - The first measurement of each wave waits the largest `initialDelaySeconds` of all the
//!   checks of all the `RolloutAnalysis` objects, counted from the wave's last node finishing.
//! - An undo to a gated revision (the inputs return to its content, its sequence is raised)
//!   measures it afresh: its earlier rollout's verdict does not carry it (the nodes still on it
//!   are measured before another gets it), and the verdict it ends with names its new sequence.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use kube::api::{Api, PostParams};
use netrollout_api::{
    ANALYSIS_CONDITION, AnalysisCheck, AnalysisPhase, Dispatch, NetworkConfigRevision,
    RevisionPhase, RolloutAnalysis, RolloutAnalysisSpec,
};
use netrollout_testkit::fake_prometheus::FakePrometheus;

use crate::agents::Agents;
use crate::lab::{ConfiguratorLab as _, LabApi, R, eventually};
use crate::{all_provisioned, condition, failing_tables, names, nodes};

fn check(name: &str, initial_delay_seconds: u32) -> AnalysisCheck {
    AnalysisCheck {
        name: name.into(),
        query: format!("sum(loss_{name})"),
        success_condition: "result == 0".into(),
        interval_seconds: 1,
        inconclusive_limit: 3,
        failure_limit: 0,
        initial_delay_seconds,
    }
}

/// Creates a `RolloutAnalysis` named `name` with `checks`.
async fn analysis(lab: &LabApi, name: &str, checks: Vec<AnalysisCheck>) -> R {
    let api: Api<RolloutAnalysis> = Api::all(lab.client.clone());
    api.create(
        &PostParams::default(),
        &RolloutAnalysis::new(name, RolloutAnalysisSpec { checks }),
    )
    .await?;
    Ok(())
}

/// When node `node` last reported finishing (its `finishedAt`).
async fn finished_at(lab: &LabApi, node: &str) -> R<SystemTime> {
    let configs = lab.configs().await?;
    let c = configs
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some(node))
        .ok_or_else(|| anyhow::anyhow!("no config for {node}"))?;
    let t = (c.status.as_ref().and_then(|s| s.finished_at.clone()))
        .ok_or_else(|| anyhow::anyhow!("{node} has not finished"))?;
    Ok(SystemTime::from(t.0))
}

#[tokio::test]
async fn each_wave_is_first_measured_the_largest_initial_delay_of_all_checks_after_it_finished() -> R
{
    let lab = LabApi::netrollout().await;
    nodes(&lab, 2).await?;
    // The largest delay is neither the first check's nor the first object's.
    analysis(&lab, "a-first", vec![check("x", 1)]).await?;
    analysis(&lab, "b-second", vec![check("y", 0), check("z", 3)]).await?;
    let prometheus = FakePrometheus::start(Arc::new(|_| 0.0)).await;
    let _agents = Agents::start(lab.client.clone(), failing_tables(Vec::new()));
    let url = format!("--prometheus-url={}", prometheus.url());
    let cfg = lab.configurator(&["--update-limit=1", &url]);
    lab.set_table("extra", 100).await?;
    let good = lab
        .newest_in(RevisionPhase::Succeeded, Duration::from_secs(40))
        .await?;
    // One wave per node: n-0, then n-1 (the order of nodes without config is by name).
    let waves = [
        finished_at(&lab, "n-0").await?,
        finished_at(&lab, "n-1").await?,
    ];
    let queries = prometheus.queries();
    let delay = Duration::from_secs(3);
    for (i, done) in waves.iter().enumerate() {
        let early: Vec<_> = (queries.iter())
            .filter(|q| q.at >= *done && q.at < *done + delay)
            .collect();
        assert!(
            early.is_empty(),
            "wave {i} finished at {done:?}; queried before its 3s initial delay: {early:?}"
        );
        let after = (queries.iter()).filter(|q| q.at >= *done + delay).count();
        assert!(
            after >= 3,
            "wave {i}: every check measured after the delay: {queries:?}"
        );
    }
    assert!(
        queries.iter().all(|q| q.at >= waves[0] + delay),
        "nothing is measured before the first wave: {queries:?}"
    );
    let verdict = good.status.as_ref().and_then(|s| s.analysis.clone());
    assert_eq!(
        verdict.map(|v| (v.phase, v.nodes)),
        Some((AnalysisPhase::Passed, 2))
    );
    cfg.stop().await
}

#[tokio::test]
async fn an_undo_to_a_gated_revision_measures_it_afresh_before_any_node_gets_it_again() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 2).await?;
    analysis(&lab, "tenants", vec![check("loss", 0)]).await?;
    // Only b's own check (created after a) is never answered with a number: b waits after its
    // first wave while the undo comes.
    let answer = |q: &str| if q.contains("hold") { f64::NAN } else { 0.0 };
    let prometheus = FakePrometheus::start(Arc::new(answer)).await;
    let _agents = Agents::start(lab.client.clone(), failing_tables(Vec::new()));
    let url = format!("--prometheus-url={}", prometheus.url());
    let cfg = lab.configurator(&["--update-limit=1", &url]);
    lab.set_table("extra", 100).await?;
    let a = lab
        .newest_in(RevisionPhase::Succeeded, Duration::from_secs(30))
        .await?;
    let a_name = a.metadata.name.clone().unwrap();
    let verdict = |r: &NetworkConfigRevision| {
        let v = r.status.as_ref().and_then(|s| s.analysis.clone());
        v.map(|v| (v.phase, v.nodes, v.sequence))
    };
    assert_eq!(
        verdict(&a),
        Some((AnalysisPhase::Passed, 2, Some(a.spec.sequence)))
    );
    // b's first wave (n-0) finishes; its measurement stays inconclusive.
    let mut hold = check("hold", 0);
    hold.inconclusive_limit = 100;
    analysis(&lab, "hold", vec![hold]).await?;
    lab.set_table("extra", 200).await?;
    let b = lab
        .newest_after(
            a.spec.sequence,
            RevisionPhase::Progressing,
            Duration::from_secs(10),
        )
        .await?;
    let b_name = b.metadata.name.clone().unwrap();
    all_provisioned(&lab, &names(1), &b_name, Duration::from_secs(10)).await?;

    // The undo raises a while n-1 still runs it. Its verdict "passed with 2 nodes" is its
    // earlier rollout's: n-1 is measured before n-0 gets a again, and both before it is
    // Succeeded again.
    let undo = SystemTime::now();
    lab.set_table("extra", 100).await?;
    // (The revision is Succeeded from its first rollout until the pass after the raise: wait
    // for both nodes on it, then for it to be Succeeded with a verdict of its new sequence.)
    all_provisioned(&lab, &names(2), &a_name, Duration::from_secs(20)).await?;
    let current = || async {
        let revisions = lab.revisions().await?;
        let a = revisions
            .into_iter()
            .find(|r| r.metadata.name.as_deref() == Some(&a_name));
        R::Ok(a.filter(|a| {
            let s = a.status.clone().unwrap_or_default();
            s.phase == Some(RevisionPhase::Succeeded)
                && s.analysis
                    .is_some_and(|v| v.sequence == Some(a.spec.sequence))
                && s.observed_generation == a.metadata.generation
        }))
    };
    eventually(Duration::from_secs(20), || async {
        Ok(current().await?.is_some())
    })
    .await
    .map_err(|e| anyhow::anyhow!("a never Succeeded with a verdict of its new sequence: {e}"))?;
    let again = current().await?.expect("a, Succeeded again");
    assert!(again.spec.sequence > b.spec.sequence, "a was raised");
    let configs = lab.configs().await?;
    let n0 = configs
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some("n-0"))
        .and_then(|c| Dispatch::from_annotations(c.metadata.annotations.as_ref()))
        .expect("n-0's dispatch record");
    assert_eq!(n0.revision, a_name);
    assert_eq!(
        n0.sequence,
        Some(again.spec.sequence),
        "dispatched under the raised sequence"
    );
    let dispatched = SystemTime::from(n0.at);
    let queries: Vec<_> = (prometheus.queries().into_iter())
        .filter(|q| q.query == "sum(loss_loss)")
        .collect();
    assert!(
        queries.iter().any(|q| q.at >= undo && q.at < dispatched),
        "a was measured with n-1 after the undo ({undo:?}) and before n-0 got it ({dispatched:?}): {queries:?}"
    );
    assert!(
        queries.iter().filter(|q| q.at >= dispatched).count() >= 1,
        "and again with both nodes: {queries:?}"
    );
    assert_eq!(
        verdict(&again),
        Some((AnalysisPhase::Passed, 2, Some(again.spec.sequence))),
        "the verdict names the sequence it was measured under"
    );
    let c = condition(&again, ANALYSIS_CONDITION);
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "ChecksPassed")
    );
    cfg.stop().await
}
