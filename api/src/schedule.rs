//! `MaintenanceSchedule`: when the configurator may roll a revision out — weekly maintenance
//! windows in a time zone, and change freezes by date. With no object every moment is open.
//! Several objects add up: their windows together are the open times (an object with no
//! window adds none), and every freeze of every object holds. An undo to a known-good revision
//! and the rollback after a failure are never held (docs/contract.md, "Maintenance windows and
//! freezes").
//!
//! The API server checks the shape (days, `HH:MM` times, `YYYY-MM-DD` dates, a freeze that
//! ends before it starts) and names the field; the configurator checks what only a time-zone
//! database knows (the zone name, that a date exists) and, until a schedule is fixed, holds
//! every rollout and says why in the revision's status (fail closed).

use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A time of day, `HH:MM` on a 24-hour clock; `24:00` is the end of the day.
pub const TIME_OF_DAY_PATTERN: &str = r"^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$";

/// A date, `YYYY-MM-DD`.
pub const DATE_PATTERN: &str = r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$";

/// An IANA time zone name's shape (`Europe/Berlin`, `America/Argentina/Buenos_Aires`, `UTC`);
/// the configurator looks the name up.
pub const TIME_ZONE_PATTERN: &str = r"^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$";

/// When rollouts may dispatch: maintenance windows by weekday and time of day in a time zone,
/// and freeze periods by date.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[kube(
    group = "netrollout.io",
    version = "v1alpha1",
    kind = "MaintenanceSchedule",
    plural = "maintenanceschedules",
    shortname = "mschedule",
    category = "netrollout",
    printcolumn(name = "TimeZone", type_ = "string", json_path = ".spec.timeZone"),
    printcolumn(
        name = "Freezes",
        type_ = "string",
        json_path = ".spec.freezes[*].name"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceScheduleSpec {
    /// The IANA time zone the windows' times and the freezes' dates are in (default `UTC`),
    /// e.g. `Europe/Berlin`. Daylight saving time is followed: a window from 22:00 is at 22:00
    /// local time all year.
    #[serde(default = "utc")]
    #[schemars(length(min = 1, max = 64), regex(pattern = TIME_ZONE_PATTERN))]
    pub time_zone: String,
    /// Weekly windows; a rollout is dispatched only inside one of them (nodes in flight at its
    /// end finish). None: every moment outside a freeze is open.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub windows: Vec<MaintenanceWindow>,
    /// Change freezes; no rollout is dispatched inside one. A list keyed by `name`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    pub freezes: Vec<FreezePeriod>,
}

fn utc() -> String {
    "UTC".into()
}

/// A weekly window: on each of `days`, from `start` to `end` local time. An `end` at or before
/// `start` ends on the next day (`22:00`–`04:00` on Friday runs into Saturday morning).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[x_kube(validation = Rule::new("self.start != self.end").message("a window's start and end must differ (an end before start ends the next day); for a whole day write start 00:00 and end 24:00").field_path(".end"))]
#[x_kube(validation = Rule::new("self.start != '24:00'").message("a window cannot start at 24:00; write 00:00 of the next day").field_path(".start"))]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceWindow {
    /// The days the window starts on.
    #[schemars(length(min = 1, max = 7))]
    #[x_kube(validation = Rule::new("self.all(d, self.exists_one(e, e == d))").message("a day appears twice in days; list each day once"))]
    pub days: Vec<Weekday>,
    /// Local time it opens, `HH:MM` (24-hour clock).
    #[schemars(regex(pattern = TIME_OF_DAY_PATTERN))]
    pub start: String,
    /// Local time it closes, `HH:MM` or `24:00`; at or before `start`: on the next day.
    #[schemars(regex(pattern = TIME_OF_DAY_PATTERN))]
    pub end: String,
}

/// A day of the week.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Weekday {
    /// Monday.
    #[default]
    Mon,
    /// Tuesday.
    Tue,
    /// Wednesday.
    Wed,
    /// Thursday.
    Thu,
    /// Friday.
    Fri,
    /// Saturday.
    Sat,
    /// Sunday.
    Sun,
}

/// A change freeze: from the start of `start` to the end of `end` (both dates included, in the
/// schedule's time zone).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[x_kube(validation = Rule::new("self.end >= self.start").message("a freeze's end is before its start; end is the last frozen day (YYYY-MM-DD) and must not be before start").field_path(".end"))]
#[serde(rename_all = "camelCase")]
pub struct FreezePeriod {
    /// Names the freeze in status and Events (a DNS label).
    #[schemars(length(min = 1, max = 63), regex(pattern = crate::analysis::CHECK_NAME_PATTERN))]
    pub name: String,
    /// The first frozen day, `YYYY-MM-DD`.
    #[schemars(regex(pattern = DATE_PATTERN))]
    pub start: String,
    /// The last frozen day, `YYYY-MM-DD`.
    #[schemars(regex(pattern = DATE_PATTERN))]
    pub end: String,
    /// Why, for people (shown with the hold).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 256))]
    pub reason: String,
}
