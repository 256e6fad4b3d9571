//! Maintenance windows and freezes (`MaintenanceSchedule`): a new revision waits outside every
//! window and in a freeze, says why and when the next window opens (typed `status.schedule`,
//! the `Reconciling` reason, an Event), and moves once a window opens; an undo to known-good
//! and the rollback after a failure go during a freeze.

use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, Patch, PatchParams};
use netrollout_api::reason::{CHANGE_FREEZE, OUTSIDE_MAINTENANCE_WINDOW};
use netrollout_api::{
    FreezePeriod, MaintenanceSchedule, MaintenanceScheduleSpec, MaintenanceWindow,
    NetworkConfigRevision, RECONCILING_CONDITION, RevisionPhase, UNDO_ANNOTATION, Weekday,
};

use crate::agents::{self, Agents, healthy};
use crate::lab::{ConfiguratorLab as _, LabApi, R, eventually};
use crate::{all_provisioned, assert_event, condition, first_good, has_table, names, nodes};

const ALL_DAYS: [Weekday; 7] = [
    Weekday::Mon,
    Weekday::Tue,
    Weekday::Wed,
    Weekday::Thu,
    Weekday::Fri,
    Weekday::Sat,
    Weekday::Sun,
];

/// `HH:MM` in UTC, `hours` from now (whole minutes, wrapping at midnight).
fn hhmm(hours: i64) -> String {
    let t = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(hours);
    t.strftime("%H:%M").to_string()
}

/// Today `days` from now, `YYYY-MM-DD` in UTC.
fn date(days: i64) -> String {
    let t = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(24 * days);
    t.strftime("%Y-%m-%d").to_string()
}

/// Applies the schedule `name` (server-side apply, replacing its windows and freezes).
async fn schedule(
    lab: &LabApi,
    name: &str,
    windows: Vec<MaintenanceWindow>,
    freezes: Vec<FreezePeriod>,
) -> R {
    let api: Api<MaintenanceSchedule> = Api::all(lab.client.clone());
    let obj = MaintenanceSchedule::new(
        name,
        MaintenanceScheduleSpec {
            time_zone: "UTC".into(),
            windows,
            freezes,
        },
    );
    api.patch(
        name,
        &PatchParams::apply("e2e-test").force(),
        &Patch::Apply(&obj),
    )
    .await?;
    Ok(())
}

fn window(from_hours: i64, to_hours: i64) -> MaintenanceWindow {
    MaintenanceWindow {
        days: ALL_DAYS.to_vec(),
        start: hhmm(from_hours),
        end: hhmm(to_hours),
    }
}

/// A freeze from yesterday to tomorrow (UTC dates): whatever the hour, now is inside.
fn freeze_now() -> FreezePeriod {
    FreezePeriod {
        name: "release".into(),
        start: date(-1),
        end: date(1),
        reason: "e2e".into(),
    }
}

/// The newest revision, once the schedule holds it with `reason`.
async fn held(lab: &LabApi, reason: &str) -> R<NetworkConfigRevision> {
    let newest = || async {
        let mut revs = lab.revisions().await?;
        revs.sort_by_key(|r| r.spec.sequence);
        R::Ok(revs.pop())
    };
    let says = |r: &NetworkConfigRevision| {
        r.status.as_ref().is_some_and(|s| {
            s.schedule.as_ref().is_some_and(|h| h.reason == reason)
                && (s.conditions.iter())
                    .any(|c| c.type_ == RECONCILING_CONDITION && c.reason == reason)
        })
    };
    eventually(Duration::from_secs(10), || async {
        Ok(newest().await?.is_some_and(|r| says(&r)))
    })
    .await
    .map_err(|e| anyhow::anyhow!("the newest revision never said {reason}: {e}"))?;
    Ok(newest().await?.expect("a revision"))
}

/// No node config names `revision`.
async fn on_none(lab: &LabApi, revision: &str) -> R {
    let configs = lab.configs().await?;
    let on: Vec<_> = (configs.iter())
        .filter(|c| c.spec.revision == revision)
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    assert!(on.is_empty(), "nodes got held revision {revision}: {on:?}");
    Ok(())
}

#[tokio::test]
async fn outside_every_window_a_revision_waits_says_when_the_next_opens_and_moves_in_one() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 2).await?;
    let _agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(50)));
    let cfg = lab.configurator(&["--update-limit=1"]);
    first_good(&lab).await?;
    schedule(&lab, "nightly", vec![window(3, 4)], vec![]).await?;
    lab.set_table("extra", 101).await?;
    let rev = held(&lab, OUTSIDE_MAINTENANCE_WINDOW).await?;
    let name = rev.metadata.name.clone().unwrap();
    let opens = rev
        .status
        .clone()
        .unwrap()
        .schedule
        .unwrap()
        .opens_at
        .unwrap()
        .0;
    let ahead = opens.duration_since(jiff::Timestamp::now()).as_secs();
    assert!(
        (3 * 3600 - 120..=3 * 3600).contains(&ahead),
        "opens in {ahead} s"
    );
    let reconciling = condition(&rev, RECONCILING_CONDITION);
    assert!(
        reconciling.message.contains("the next window opens at"),
        "{}",
        reconciling.message
    );
    let event = lab
        .event(
            "NetworkConfigRevision",
            &name,
            OUTSIDE_MAINTENANCE_WINDOW,
            Duration::from_secs(5),
        )
        .await?;
    assert_event(&event, false, &["maintenance windows", "next window opens"]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    on_none(&lab, &name).await?;
    // A window that holds now: the rollout goes, and the hold is gone from its status.
    schedule(&lab, "nightly", vec![window(-1, 1)], vec![]).await?;
    all_provisioned(&lab, &names(2), &name, Duration::from_secs(20)).await?;
    let done = lab
        .newest_in(RevisionPhase::Succeeded, Duration::from_secs(10))
        .await?;
    assert_eq!(done.status.and_then(|s| s.schedule), None);
    cfg.stop().await
}

#[tokio::test]
async fn a_freeze_holds_a_rollout_but_an_undo_to_known_good_goes() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 2).await?;
    let _agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(50)));
    let cfg = lab.configurator(&["--update-limit=1"]);
    let good = first_good(&lab).await?;
    let good_name = good.metadata.name.clone().unwrap();
    lab.set_table("extra", 101).await?;
    let second = crate::succeeded_after(&lab, good.spec.sequence).await?;
    schedule(&lab, "change-freeze", vec![], vec![freeze_now()]).await?;
    lab.set_table("extra", 102).await?;
    let rev = held(&lab, CHANGE_FREEZE).await?;
    let held_name = rev.metadata.name.clone().unwrap();
    let hold = rev.status.clone().unwrap().schedule.unwrap();
    assert_eq!(hold.freeze, "change-freeze/release");
    let opens = hold.opens_at.expect("opens after the freeze").0;
    assert!(
        opens > jiff::Timestamp::now() + jiff::SignedDuration::from_hours(24),
        "{opens}"
    );
    on_none(&lab, &held_name).await?;
    // Undo: the inputs back to the first known-good revision; it goes in the freeze.
    lab.set_table("extra", 100).await?;
    all_provisioned(&lab, &names(2), &good_name, Duration::from_secs(20)).await?;
    let undone = (lab.revisions().await?.into_iter())
        .find(|r| r.metadata.name.as_deref() == Some(good_name.as_str()))
        .unwrap();
    let mark = undone
        .metadata
        .annotations
        .unwrap_or_default()
        .remove(UNDO_ANNOTATION);
    assert_eq!(
        mark,
        Some(undone.spec.sequence.to_string()),
        "the raise is marked an undo"
    );
    assert!(undone.spec.sequence > second.spec.sequence);
    on_none(&lab, &held_name).await?;
    cfg.stop().await
}

#[tokio::test]
async fn in_a_freeze_the_rollback_after_a_failure_goes() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 2).await?;
    // Table 666 fails after 2 s: long enough to begin a freeze while n-0 applies it.
    let script: agents::Script = Arc::new(|_, spec| {
        if has_table(spec, 666) {
            (Duration::from_secs(2), agents::Outcome::Fail)
        } else {
            (Duration::from_millis(50), agents::Outcome::Succeed)
        }
    });
    let _agents = Agents::start(lab.client.clone(), script);
    let cfg = lab.configurator(&["--update-limit=1"]);
    let good = first_good(&lab).await?;
    let good_name = good.metadata.name.clone().unwrap();
    lab.set_table("extra", 666).await?;
    eventually(Duration::from_secs(10), || async {
        let configs = lab.configs().await?;
        Ok(configs.iter().any(|c| c.spec.revision != good_name))
    })
    .await?;
    schedule(&lab, "change-freeze", vec![], vec![freeze_now()]).await?;
    let bad = lab
        .newest_in(RevisionPhase::Failed, Duration::from_secs(20))
        .await?;
    assert_eq!(bad.status.clone().unwrap().failed_nodes.len(), 1);
    all_provisioned(&lab, &names(2), &good_name, Duration::from_secs(20)).await?;
    cfg.stop().await
}

#[tokio::test]
async fn the_api_server_refuses_a_bad_schedule_naming_the_field_and_the_example_applies() {
    let lab = LabApi::netrollout().await;
    let example = include_str!("../../../../config/examples/maintenanceschedule.yaml");
    lab.ok_in(&["apply", "-f", "-"], Some(example)).await;
    let bad = |spec: &str| {
        format!(
            "apiVersion: netrollout.io/v1alpha1\nkind: MaintenanceSchedule\nmetadata: {{name: bad}}\nspec:\n{spec}"
        )
    };
    let cases = [
        (
            "  windows: [{days: [Mon], start: \"25:00\", end: \"04:00\"}]\n",
            "spec.windows[0].start",
            "",
        ),
        (
            "  windows: [{days: [Mon], start: \"22:00\", end: \"22:00\"}]\n",
            "spec.windows[0].end",
            "start and end must differ",
        ),
        (
            "  windows: [{days: [Mon, Mon], start: \"22:00\", end: \"23:00\"}]\n",
            "spec.windows[0].days",
            "a day appears twice",
        ),
        (
            "  windows: [{days: [Monday], start: \"22:00\", end: \"23:00\"}]\n",
            "spec.windows[0].days[0]",
            "",
        ),
        (
            "  freezes: [{name: x, start: \"2027-01-04\", end: \"2026-12-20\"}]\n",
            "spec.freezes[0].end",
            "end is before its start",
        ),
        (
            "  freezes: [{name: x, start: \"2027-1-4\", end: \"2027-01-05\"}]\n",
            "spec.freezes[0].start",
            "",
        ),
    ];
    for (spec, field, words) in cases {
        let err = lab.fails_in(&["apply", "-f", "-"], Some(&bad(spec))).await;
        assert!(err.contains(field) && err.contains(words), "{spec}: {err}");
    }
    let stored = lab.ok(&["get", "mschedule", "-o", "name"]).await;
    assert_eq!(
        stored.trim(),
        "maintenanceschedule.netrollout.io/weeknights"
    );
}
