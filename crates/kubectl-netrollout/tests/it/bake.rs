//! `status` while a revision's nodes bake (`--bake-time`): the line counts down from the typed
//! `status.bake.until`, whatever the configurator's message says.

use crate::common;

use common::{LabApi, PluginLab as _, rev_status, snapshot};
use netrollout_api::{RevisionBake, RevisionPhase};

#[tokio::test]
async fn status_says_how_long_the_nodes_of_a_revision_still_bake() {
    let lab = LabApi::netrollout().await;
    lab.node("node-a", true).await;
    let mut status = rev_status(RevisionPhase::Progressing, 1, 1, 0, 0);
    status.message = Some("a message that says nothing about baking".into());
    let until = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(600);
    status.bake = Some(RevisionBake {
        nodes: 1,
        until: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(until),
        seconds_left: 9999,
    });
    lab.revision("ncr-one", 1, snapshot(1500, false), status)
        .await;
    let out = lab.plugin(&["status"]).await;
    let text = out.stdout.clone();
    let line = text
        .lines()
        .find(|l| l.contains("ncr-one baking, "))
        .unwrap_or_else(|| panic!("no baking line: {text}"));
    // Counted from `until` (about 600 s), not the 9999 written with it.
    let left: i64 = line
        .split("baking, ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no seconds in {line}"));
    assert!((500..=600).contains(&left), "{line}");
    assert!(line.contains("1 node(s)"), "{line}");
}
