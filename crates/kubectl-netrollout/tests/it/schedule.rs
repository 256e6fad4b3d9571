//! `status` while the maintenance schedule holds a revision: the line names the freeze and
//! when the next window opens, from the typed `status.schedule`, whatever the message says.

use crate::common;

use common::{LabApi, PluginLab as _, rev_status, snapshot};
use netrollout_api::reason::{CHANGE_FREEZE, OUTSIDE_MAINTENANCE_WINDOW};
use netrollout_api::{RevisionPhase, RevisionSchedule};

async fn held(reason: &str, freeze: &str) -> String {
    let lab = LabApi::netrollout().await;
    lab.node("node-a", true).await;
    let mut status = rev_status(RevisionPhase::Pending, 1, 0, 0, 0);
    status.message = Some("a message that says nothing about windows".into());
    let opens = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(2 * 3600 + 30 * 60);
    status.schedule = Some(RevisionSchedule {
        reason: reason.into(),
        freeze: freeze.into(),
        opens_at: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(opens)),
        message: String::new(),
    });
    lab.revision("ncr-one", 1, snapshot(1500, false), status)
        .await;
    lab.plugin(&["status"]).await.stdout
}

#[tokio::test]
async fn status_says_when_the_next_maintenance_window_opens() {
    let text = held(OUTSIDE_MAINTENANCE_WINDOW, "").await;
    let line = text
        .lines()
        .find(|l| l.contains("ncr-one held outside the maintenance windows"))
        .unwrap_or_else(|| panic!("no hold line: {text}"));
    // Counted from `opensAt` (2 h 30 min ahead, a few seconds gone).
    let left = line.contains("(in 2h29m)") || line.contains("(in 2h30m)");
    assert!(line.contains("next window opens at") && left, "{line}");
}

#[tokio::test]
async fn status_names_the_freeze_that_holds_a_revision() {
    let text = held(CHANGE_FREEZE, "ops/year-end").await;
    assert!(
        text.lines()
            .any(|l| l.contains("ncr-one held by change freeze ops/year-end: next window opens at")),
        "{text}"
    );
}
