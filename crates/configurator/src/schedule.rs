//! Maintenance windows and freezes (docs/contract.md, "Maintenance windows and freezes"): the
//! `MaintenanceSchedule` objects laid out around now as spans of time for the planner
//! ([`netrollout_rollout::Schedule`]), with the time-zone database of the system
//! (`/usr/share/zoneinfo`, through jiff). Pure: `now` is passed in.
//!
//! Windows are laid out from the day before now to eight days past the last freeze that ends
//! after now (at most 400 days ahead), so the next opening is found past any freeze. A schedule
//! the API server accepted but this configurator cannot read (a time zone it does not know, a
//! date that does not exist such as `2027-02-30`) holds every rollout with a message naming
//! the object and the field (fail closed: a wrong schedule must not open the fleet).

use std::sync::Arc;

use jiff::civil::{Date, DateTime, Weekday as JWeekday};
use jiff::tz::TimeZone;
use netrollout_api::reason::{
    CHANGE_FREEZE, MAINTENANCE_SCHEDULE_INVALID, OUTSIDE_MAINTENANCE_WINDOW,
};
use netrollout_api::{MaintenanceSchedule, RevisionSchedule, Weekday};
use netrollout_rollout::{Closed, Freeze, Schedule, ScheduleHold, Span, Summary, Timestamp};

use crate::context::Context;
use crate::convert;
use crate::memo::NotedMemo;

/// The farthest ahead windows are laid out, in days.
const HORIZON_DAYS: i64 = 400;

/// The schedule of `objects` (any order) at `now`: the default (always open) without any.
pub fn lay_out(objects: &[Arc<MaintenanceSchedule>], now: Timestamp) -> Schedule {
    let mut objects: Vec<&MaintenanceSchedule> = objects
        .iter()
        .map(Arc::as_ref)
        .filter(|o| o.metadata.deletion_timestamp.is_none())
        .collect();
    objects.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    match read(&objects, now) {
        Ok(s) => s,
        Err(why) => Schedule {
            invalid: Some(why),
            ..Schedule::default()
        },
    }
}

/// The revision's `status.schedule` for a hold (`opensAt` in whole seconds, rounded up: it
/// reads back as written).
pub fn status(hold: &ScheduleHold) -> RevisionSchedule {
    let (reason, freeze, message) = match &hold.closed {
        Closed::OutsideWindow => (OUTSIDE_MAINTENANCE_WINDOW, String::new(), String::new()),
        Closed::Frozen(f) => (CHANGE_FREEZE, f.clone(), String::new()),
        Closed::Invalid(why) => (MAINTENANCE_SCHEDULE_INVALID, String::new(), why.clone()),
    };
    RevisionSchedule {
        reason: reason.into(),
        freeze,
        message,
        opens_at: hold
            .opens_at
            .map(|t| convert::to_time(Timestamp::from_millis(t.as_millis().div_ceil(1000) * 1000))),
    }
}

/// The sentence for a hold, for the `Reconciling` condition, the Event and the log.
pub fn sentence(hold: &ScheduleHold) -> String {
    let opens = match hold.opens_at {
        Some(t) => format!("the next window opens at {}", convert::format_ts(t)),
        None => "no window opens within the next 400 days".into(),
    };
    match &hold.closed {
        Closed::OutsideWindow => format!(
            "held outside the maintenance windows (MaintenanceSchedule): {opens}; nodes already applying finish"
        ),
        Closed::Frozen(f) => {
            format!(
                "held by change freeze {f} (MaintenanceSchedule): {opens}; nodes already applying finish"
            )
        }
        Closed::Invalid(why) => format!("held: {why}"),
    }
}

/// Tells a hold once each time it starts: a log line and an Event on the target with the
/// hold's reason word, naming why and when the next window opens (a Warning for a schedule
/// that cannot be read). Its `status.schedule` and `Reconciling` condition are written with
/// the progress.
pub async fn tell(ctx: &Context, told: &NotedMemo, summary: &Summary) {
    let Some(hold) = &summary.schedule else {
        if let Some(target) = &summary.target {
            told.first_time(&format!("schedule/{target}"), "open");
        }
        return;
    };
    let note = sentence(hold);
    let key = format!("schedule/{}", hold.revision);
    let what = status(hold);
    if !told.first_time(&key, &format!("{}/{}", what.reason, what.freeze)) {
        return;
    }
    tracing::info!(revision = %hold.revision, reason = %what.reason, "{note}");
    if let Some(ncr) = ctx.read().revision(&hold.revision) {
        ctx.writer()
            .event(
                ncr.as_ref(),
                matches!(hold.closed, Closed::Invalid(_)),
                &what.reason,
                "Schedule",
                &note,
            )
            .await;
    }
}

fn read(objects: &[&MaintenanceSchedule], now: Timestamp) -> Result<Schedule, String> {
    let zones = objects
        .iter()
        .map(|o| zone(o))
        .collect::<Result<Vec<_>, _>>()?;
    let mut freezes = Vec::new();
    for (o, tz) in objects.iter().zip(&zones) {
        for (i, f) in o.spec.freezes.iter().enumerate() {
            let field = |what: &str| format!("spec.freezes[{i}].{what}");
            let start = day_start(o, tz, &f.start, &field("start"), 0)?;
            let end = day_start(o, tz, &f.end, &field("end"), 1)?;
            freezes.push(Freeze {
                name: format!("{}/{}", name(o), f.name),
                span: Span { start, end },
            });
        }
    }
    let last_freeze = (freezes.iter().map(|f| f.span.end))
        .filter(|&e| e > now)
        .max()
        .unwrap_or(now);
    let limit = now.saturating_add(std::time::Duration::from_secs(
        u64::try_from(HORIZON_DAYS).unwrap_or(0) * 86_400,
    ));
    let until = last_freeze
        .saturating_add(std::time::Duration::from_secs(8 * 86_400))
        .min(limit);
    let any_window = objects.iter().any(|o| !o.spec.windows.is_empty());
    let mut windows = Vec::new();
    for (o, tz) in objects.iter().zip(&zones) {
        for (i, w) in o.spec.windows.iter().enumerate() {
            let field = |what: &str| format!("spec.windows[{i}].{what}");
            let (sh, sm) = time_of_day(o, &w.start, &field("start"))?;
            let (eh, em) = time_of_day(o, &w.end, &field("end"))?;
            let mut day = date_of(now, tz).yesterday().map_err(|e| e.to_string())?;
            loop {
                let start = instant(tz, day.at(sh, sm, 0, 0));
                if start >= until {
                    break;
                }
                let end_day = if (eh, em) <= (sh, sm) || eh == 24 {
                    day.tomorrow().map_err(|e| e.to_string())?
                } else {
                    day
                };
                let end = instant(tz, end_day.at(eh % 24, em, 0, 0));
                if w.days.iter().any(|d| weekday(*d) == day.weekday()) && end > now {
                    windows.push(Span { start, end });
                }
                day = day.tomorrow().map_err(|e| e.to_string())?;
            }
        }
    }
    windows.sort();
    Ok(Schedule {
        windows: any_window.then_some(windows),
        freezes,
        invalid: None,
    })
}

fn name(o: &MaintenanceSchedule) -> &str {
    o.metadata.name.as_deref().unwrap_or_default()
}

fn zone(o: &MaintenanceSchedule) -> Result<TimeZone, String> {
    TimeZone::get(&o.spec.time_zone).map_err(|_| {
        format!(
            "MaintenanceSchedule {}: spec.timeZone {:?} is not a time zone this configurator knows; give an IANA name such as Europe/Berlin or UTC (every rollout is held until it is fixed)",
            name(o),
            o.spec.time_zone
        )
    })
}

/// The start of `date` plus `days` in `tz`.
fn day_start(
    o: &MaintenanceSchedule,
    tz: &TimeZone,
    date: &str,
    field: &str,
    days: i64,
) -> Result<Timestamp, String> {
    let bad = || {
        format!(
            "MaintenanceSchedule {}: {field} {date:?} is not a date; write YYYY-MM-DD, a day that exists (every rollout is held until it is fixed)",
            name(o)
        )
    };
    let d: Date = date.parse().map_err(|_| bad())?;
    let d = d
        .checked_add(jiff::Span::new().days(days))
        .map_err(|_| bad())?;
    Ok(instant(tz, d.at(0, 0, 0, 0)))
}

fn time_of_day(o: &MaintenanceSchedule, t: &str, field: &str) -> Result<(i8, i8), String> {
    let parsed = t.split_once(':').and_then(|(h, m)| {
        let (h, m) = (h.parse::<i8>().ok()?, m.parse::<i8>().ok()?);
        ((0..24).contains(&h) && (0..60).contains(&m) || (h, m) == (24, 0)).then_some((h, m))
    });
    parsed.ok_or_else(|| {
        format!(
            "MaintenanceSchedule {}: {field} {t:?} is not a time of day; write HH:MM (24-hour clock, 24:00 for the end of the day)",
            name(o)
        )
    })
}

/// The instant of a local time in `tz`; a time that a daylight-saving change skips or repeats
/// is taken as the clocks' usual reading (jiff's "compatible": later for a gap, earlier for a
/// fold).
fn instant(tz: &TimeZone, dt: DateTime) -> Timestamp {
    let ms = tz
        .to_ambiguous_zoned(dt)
        .compatible()
        .map(|z| z.timestamp().as_millisecond())
        .unwrap_or(0);
    Timestamp::from_millis(u64::try_from(ms).unwrap_or(0))
}

fn date_of(t: Timestamp, tz: &TimeZone) -> Date {
    let ms = i64::try_from(t.as_millis()).unwrap_or(i64::MAX);
    jiff::Timestamp::from_millisecond(ms)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .to_zoned(tz.clone())
        .date()
}

fn weekday(d: Weekday) -> JWeekday {
    match d {
        Weekday::Mon => JWeekday::Monday,
        Weekday::Tue => JWeekday::Tuesday,
        Weekday::Wed => JWeekday::Wednesday,
        Weekday::Thu => JWeekday::Thursday,
        Weekday::Fri => JWeekday::Friday,
        Weekday::Sat => JWeekday::Saturday,
        Weekday::Sun => JWeekday::Sunday,
    }
}

#[cfg(test)]
mod tests;
