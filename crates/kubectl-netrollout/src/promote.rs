//! `promote`: a person lets a held revision go on (docs/contract.md, "Approval gates", "A
//! healthy start").
//!
//! It writes the revision's `spec.promotion` (the configurator records each one in
//! `status.promotions` and an Event): which gates are released under which sequence, and who
//! promoted. Who is the user the API server authenticated, asked with a `SelfSubjectReview`
//! (what `kubectl auth whoami` does), not the kubeconfig's user name (a local alias); the
//! bundle's admission policy refuses a promotion in someone else's name. The write carries the
//! revision's `resourceVersion`: if the configurator raised it meanwhile, nothing is written.

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use kube::api::{Api, Patch, PatchParams, PostParams};
use netrollout_api::reason::AWAITING_PROMOTION;
use netrollout_api::{NetworkConfigRevision, Promotion, RevisionPhase};
use serde_json::json;

use crate::cluster::{Cluster, find, name, phase};
use crate::{Error, Result};

/// What a promote releases.
#[derive(Debug, Clone, Copy, Default)]
pub struct Release {
    /// Every approval gate (`--full`).
    pub full: bool,
    /// The start checks (`--force`).
    pub force: bool,
}

/// The user the API server authenticates this client as.
///
/// # Errors
/// [`Error::Api`] when the server does not answer a `SelfSubjectReview` (Kubernetes before
/// 1.28 has none).
pub async fn whoami(cluster: &Cluster) -> Result<String> {
    let api: Api<SelfSubjectReview> = Api::all(cluster.client.clone());
    let review = api
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .map_err(Error::api(
            "asking the API server who you are (SelfSubjectReview, Kubernetes 1.28+)".to_string(),
        ))?;
    review
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .filter(|u| !u.is_empty())
        .ok_or_else(|| {
            Error::Refused(
                "the API server did not say who you are (an empty SelfSubjectReview); promote needs an authenticated user".into(),
            )
        })
}

/// The promotion to write on `rev` for `release` by `by` at `at`, or why not.
///
/// # Errors
/// [`Error::Refused`] when the revision does not roll out, or a plain promote finds it waiting
/// at no gate.
pub fn promotion(
    rev: &NetworkConfigRevision,
    release: Release,
    by: &str,
    at: jiff::Timestamp,
) -> Result<Promotion> {
    let rev_name = name(rev);
    let ph = phase(rev);
    let status = rev.status.clone().unwrap_or_default();
    let rolling = matches!(ph, RevisionPhase::Pending | RevisionPhase::Progressing);
    if !rolling {
        return Err(Error::Refused(format!(
            "revision {rev_name} is {ph:?}: only a revision rolling out (Pending or Progressing) can be promoted"
        )));
    }
    let sequence = rev.spec.sequence;
    let hold = status.hold.filter(|h| h.sequence == sequence);
    let gate = hold
        .as_ref()
        .filter(|h| h.reason == AWAITING_PROMOTION)
        .and_then(|h| h.gate);
    if gate.is_none() && !release.full && !release.force {
        let now = match &hold {
            Some(h) => format!("it waits to start ({}): {}", h.reason, h.message),
            None => "nothing holds it".into(),
        };
        return Err(Error::Refused(format!(
            "revision {rev_name} is not waiting at an approval gate ({now}); `--full` releases every gate ahead, `--force` starts it past the start checks"
        )));
    }
    let before = rev
        .spec
        .promotion
        .clone()
        .filter(|p| p.sequence == sequence);
    let gates_before = before.as_ref().map_or(0, |p| p.gates);
    Ok(Promotion {
        sequence,
        gates: gates_before.max(gate.unwrap_or(0)),
        full: release.full || before.as_ref().is_some_and(|p| p.full),
        force: release.force || before.as_ref().is_some_and(|p| p.force),
        by: by.to_string(),
        at: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at),
    })
}

/// Promotes `wanted` as the authenticated user. Returns what it did.
///
/// # Errors
/// [`Error::NoSuchRevision`], [`Error::Refused`] (see [`promotion`]) or [`Error::Api`] (a
/// conflict when the revision changed meanwhile: run it again).
pub async fn promote(cluster: &Cluster, wanted: &str, release: Release) -> Result<String> {
    let revisions = cluster.revisions().await?;
    let rev = find(&revisions, wanted)?;
    let rev_name = name(rev).to_string();
    let by = whoami(cluster).await?;
    let p = promotion(rev, release, &by, jiff::Timestamp::now())?;
    let patch = json!({
        "metadata": { "resourceVersion": rev.metadata.resource_version },
        "spec": { "promotion": p },
    });
    cluster
        .revisions_api()
        .patch(&rev_name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(Error::api(format!(
            "promoting NetworkConfigRevision {rev_name} (if it changed meanwhile, run promote again)"
        )))?;
    let what = match (p.full, p.force) {
        (true, true) => "every approval gate and the start checks".to_string(),
        (true, false) => "every approval gate".to_string(),
        (false, true) if p.gates == 0 => "the start checks".to_string(),
        (false, true) => format!("approval gate {} and the start checks", p.gates),
        (false, false) => format!("approval gate {}", p.gates),
    };
    Ok(format!(
        "revision {rev_name} (sequence {}) promoted by {by}: {what} released; follow it with `kubectl netrollout status --watch`\n",
        p.sequence
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use netrollout_api::{NetworkConfigRevisionStatus, RevisionHold};

    fn rev(phase: RevisionPhase, hold: Option<RevisionHold>) -> NetworkConfigRevision {
        let mut r = NetworkConfigRevision::new("ncr-a", Default::default());
        r.spec.sequence = 3;
        r.status = Some(NetworkConfigRevisionStatus {
            phase: Some(phase),
            hold,
            ..Default::default()
        });
        r
    }

    fn at_gate(gate: i32, sequence: i64) -> Option<RevisionHold> {
        Some(RevisionHold {
            reason: AWAITING_PROMOTION.into(),
            sequence,
            gate: Some(gate),
            gates: Some(2),
            nodes: Some(1),
            message: "paused".into(),
        })
    }

    const NOW: jiff::Timestamp = jiff::Timestamp::UNIX_EPOCH;

    #[test]
    fn a_promote_releases_the_gate_the_revision_waits_at_and_names_who() {
        let r = rev(RevisionPhase::Progressing, at_gate(2, 3));
        let p = promotion(&r, Release::default(), "alice", NOW).unwrap();
        assert_eq!((p.sequence, p.gates, p.full, p.force), (3, 2, false, false));
        assert_eq!(p.by, "alice");
    }

    #[test]
    fn a_plain_promote_with_no_gate_reached_is_refused_and_says_what_would_do() {
        let e = promotion(
            &rev(RevisionPhase::Progressing, None),
            Release::default(),
            "a",
            NOW,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("not waiting at an approval gate") && e.contains("--full"),
            "{e}"
        );
        // A hold of an earlier sequence is no hold.
        let stale = rev(RevisionPhase::Progressing, at_gate(1, 2));
        assert!(promotion(&stale, Release::default(), "a", NOW).is_err());
        let full = Release {
            full: true,
            force: false,
        };
        assert!(promotion(&stale, full, "a", NOW).unwrap().full);
    }

    #[test]
    fn a_revision_that_does_not_roll_out_is_not_promoted() {
        let r = rev(RevisionPhase::Succeeded, at_gate(1, 3));
        let e = promotion(&r, Release::default(), "a", NOW).unwrap_err();
        assert!(e.to_string().contains("Succeeded"), "{e}");
    }

    #[test]
    fn earlier_promotions_of_the_same_sequence_are_kept_and_of_another_dropped() {
        let mut r = rev(RevisionPhase::Progressing, at_gate(1, 3));
        let old = |sequence| Promotion {
            sequence,
            gates: 0,
            full: false,
            force: true,
            by: "bob".into(),
            at: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(NOW),
        };
        r.spec.promotion = Some(old(3));
        assert!(promotion(&r, Release::default(), "a", NOW).unwrap().force);
        r.spec.promotion = Some(old(2));
        assert!(!promotion(&r, Release::default(), "a", NOW).unwrap().force);
    }
}
