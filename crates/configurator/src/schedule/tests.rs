use std::sync::Arc;

use kube::api::ObjectMeta;
use netrollout_api::{
    FreezePeriod, MaintenanceSchedule, MaintenanceScheduleSpec, MaintenanceWindow, Weekday,
};
use netrollout_rollout::{Closed, Timestamp};

use super::lay_out;

fn at(rfc3339: &str) -> Timestamp {
    let t: jiff::Timestamp = rfc3339.parse().unwrap();
    Timestamp::from_millis(u64::try_from(t.as_millisecond()).unwrap())
}

fn schedule(
    name: &str,
    tz: &str,
    windows: Vec<MaintenanceWindow>,
    freezes: Vec<FreezePeriod>,
) -> Arc<MaintenanceSchedule> {
    Arc::new(MaintenanceSchedule {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: MaintenanceScheduleSpec {
            time_zone: tz.into(),
            windows,
            freezes,
        },
    })
}

fn window(days: &[Weekday], start: &str, end: &str) -> MaintenanceWindow {
    MaintenanceWindow {
        days: days.to_vec(),
        start: start.into(),
        end: end.into(),
    }
}

fn freeze(name: &str, start: &str, end: &str) -> FreezePeriod {
    FreezePeriod {
        name: name.into(),
        start: start.into(),
        end: end.into(),
        reason: String::new(),
    }
}

#[test]
fn no_schedule_is_always_open_and_freezes_alone_leave_every_other_moment_open() {
    assert!(lay_out(&[], at("2026-11-30T12:00:00Z")).is_always_open());
    let s = lay_out(
        &[schedule(
            "f",
            "UTC",
            vec![],
            vec![freeze("ye", "2026-12-20", "2027-01-05")],
        )],
        at("2026-11-30T12:00:00Z"),
    );
    assert_eq!(s.windows, None);
    assert_eq!(s.closed_at(at("2026-12-19T23:59:59Z")), None);
    assert_eq!(
        s.closed_at(at("2026-12-20T00:00:00Z")),
        Some(Closed::Frozen("f/ye".into()))
    );
    // The end date is the last frozen day.
    assert_eq!(
        s.next_open(at("2026-12-25T00:00:00Z")),
        Some(at("2027-01-06T00:00:00Z"))
    );
}

#[test]
fn a_window_across_midnight_is_local_time_in_its_zone() {
    // Monday 2026-11-30; Berlin is UTC+1 in winter.
    let s = lay_out(
        &[schedule(
            "nightly",
            "Europe/Berlin",
            vec![window(&[Weekday::Mon], "22:00", "04:00")],
            vec![],
        )],
        at("2026-11-30T12:00:00Z"),
    );
    assert_eq!(
        s.closed_at(at("2026-11-30T12:00:00Z")),
        Some(Closed::OutsideWindow)
    );
    assert_eq!(
        s.next_open(at("2026-11-30T12:00:00Z")),
        Some(at("2026-11-30T21:00:00Z"))
    );
    assert_eq!(s.closed_at(at("2026-12-01T02:59:59Z")), None);
    assert_eq!(
        s.closed_at(at("2026-12-01T03:00:00Z")),
        Some(Closed::OutsideWindow)
    );
    // Next Monday's window after this one.
    assert_eq!(
        s.next_open(at("2026-12-01T03:00:00Z")),
        Some(at("2026-12-07T21:00:00Z"))
    );
}

#[test]
fn daylight_saving_time_moves_the_window_with_the_local_clock() {
    // Sunday 2026-03-29: Berlin goes from UTC+1 to UTC+2 at 02:00 local.
    let s = lay_out(
        &[schedule(
            "sun",
            "Europe/Berlin",
            vec![window(&[Weekday::Sun], "01:00", "05:00")],
            vec![],
        )],
        at("2026-03-28T12:00:00Z"),
    );
    assert_eq!(
        s.next_open(at("2026-03-28T12:00:00Z")),
        Some(at("2026-03-29T00:00:00Z"))
    );
    assert_eq!(s.closed_at(at("2026-03-29T02:59:59Z")), None);
    assert_eq!(
        s.closed_at(at("2026-03-29T03:00:00Z")),
        Some(Closed::OutsideWindow)
    );
    // A week later, summer time: 01:00 local is 23:00 UTC the day before.
    assert_eq!(
        s.next_open(at("2026-03-29T03:00:00Z")),
        Some(at("2026-04-04T23:00:00Z"))
    );
}

#[test]
fn the_next_window_after_a_long_freeze_is_found_and_a_whole_day_window_ends_at_midnight() {
    let s = lay_out(
        &[schedule(
            "ops",
            "UTC",
            vec![window(&[Weekday::Tue], "00:00", "24:00")],
            vec![freeze("ye", "2026-12-01", "2027-02-10")],
        )],
        at("2026-11-30T12:00:00Z"),
    );
    assert_eq!(
        s.closed_at(at("2026-12-01T10:00:00Z")),
        Some(Closed::Frozen("ops/ye".into()))
    );
    // 2027-02-11 is a Thursday: the next Tuesday is 2027-02-16.
    assert_eq!(
        s.next_open(at("2026-12-01T10:00:00Z")),
        Some(at("2027-02-16T00:00:00Z"))
    );
    assert_eq!(s.closed_at(at("2027-02-16T23:59:59Z")), None);
    assert_eq!(
        s.closed_at(at("2027-02-17T00:00:00Z")),
        Some(Closed::OutsideWindow)
    );
}

#[test]
fn windows_of_several_objects_add_up() {
    let s = lay_out(
        &[
            schedule(
                "a",
                "UTC",
                vec![window(&[Weekday::Mon], "10:00", "11:00")],
                vec![],
            ),
            schedule(
                "b",
                "UTC",
                vec![window(&[Weekday::Mon], "13:00", "14:00")],
                vec![],
            ),
        ],
        at("2026-11-30T11:30:00Z"),
    );
    assert_eq!(
        s.next_open(at("2026-11-30T11:30:00Z")),
        Some(at("2026-11-30T13:00:00Z"))
    );
}

#[test]
fn a_zone_or_date_the_configurator_cannot_read_holds_everything_naming_object_and_field() {
    let s = lay_out(
        &[schedule(
            "bad",
            "Mars/Olympus",
            vec![window(&[Weekday::Mon], "10:00", "11:00")],
            vec![],
        )],
        at("2026-11-30T10:30:00Z"),
    );
    let why = s.invalid.clone().unwrap();
    assert!(
        why.contains("MaintenanceSchedule bad")
            && why.contains("spec.timeZone")
            && why.contains("Mars/Olympus"),
        "{why}"
    );
    assert!(matches!(
        s.closed_at(at("2026-11-30T10:30:00Z")),
        Some(Closed::Invalid(_))
    ));
    let s = lay_out(
        &[schedule(
            "feb",
            "UTC",
            vec![],
            vec![freeze("x", "2027-02-01", "2027-02-30")],
        )],
        at("2026-11-30T10:30:00Z"),
    );
    let why = s.invalid.unwrap();
    assert!(
        why.contains("MaintenanceSchedule feb") && why.contains("spec.freezes[0].end"),
        "{why}"
    );
}
