//! Approval gates and a healthy start (docs/contract.md, "Approval gates", "A healthy start"):
//! what the planner decides is told here.
//!
//! - [`tell`]: the target's `status.hold` (typed: a reason word of `api::reason`, the gate, the
//!   sequence a promote names) written when it changes, cleared on every other revision; a
//!   Warning Event the first time a revision waits for one cause; each new `spec.promotion` a
//!   person wrote appended to `status.promotions` with an Event `Promoted` naming who.
//! - [`StartQuery`]: the blocking query of `--start-blocking-query`, measured at most every
//!   [`START_QUERY_EVERY`] and handed to the planner as [`StartCheck`].

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use netrollout_api::reason::{AWAITING_PROMOTION, FLEET_UNHEALTHY, PROMOTED, START_BLOCKED};
use netrollout_api::{NetworkConfigRevision, Promotion, RevisionHold};
use netrollout_rollout::Summary;
use netrollout_rollout::approval::{Hold, HoldCause, StartCheck};

use crate::analysis::Prometheus;
use crate::context::{Context, StatusPatch};
use crate::error::Result;
use crate::memo::NotedMemo;

/// How long a blocking query's answer is used before it is measured again.
pub const START_QUERY_EVERY: Duration = Duration::from_secs(5);

/// Promotions kept in `status.promotions` (the oldest go first).
const PROMOTIONS_KEPT: usize = 64;

/// The status field for the planner's hold.
pub fn hold_status(h: &Hold) -> RevisionHold {
    let i = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let (reason, gate) = match &h.cause {
        HoldCause::Gate { gate, gates, nodes } => (
            AWAITING_PROMOTION,
            Some((i(gate + 1), i(*gates), i(*nodes))),
        ),
        HoldCause::Unhealthy { .. } => (FLEET_UNHEALTHY, None),
        HoldCause::Blocked { .. } => (START_BLOCKED, None),
    };
    RevisionHold {
        reason: reason.into(),
        sequence: i64::try_from(h.sequence).unwrap_or(i64::MAX),
        gate: gate.map(|g| g.0),
        gates: gate.map(|g| g.1),
        nodes: gate.map(|g| g.2),
        message: h.reason.clone(),
    }
}

/// What [`tell`] writes on one revision: the patch of its `hold` and `promotions`, the hold
/// of the target (told by an Event once per cause) and the promotion it records (told by an
/// Event `Promoted`).
#[derive(Clone, Debug)]
pub struct Told {
    /// The revision as the pass read it (the Events are about it).
    pub revision: Arc<NetworkConfigRevision>,
    /// The status write.
    pub write: StatusPatch,
    /// The hold the target has after the write.
    pub hold: Option<RevisionHold>,
    /// The promotion a person wrote that the write records.
    pub promotion: Option<Promotion>,
}

/// The writes of [`tell`]: on each revision not being deleted whose `hold` differs from the
/// planner's (the target's hold, none on the others) or whose `spec.promotion` is not yet in
/// `status.promotions`.
pub fn decide(revisions: &[Arc<NetworkConfigRevision>], summary: &Summary) -> Vec<Told> {
    let want = summary.hold.as_ref().map(hold_status);
    let mut told = Vec::new();
    for ncr in revisions {
        if ncr.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = ncr.metadata.name.as_deref().unwrap_or_default();
        let status = ncr.status.clone().unwrap_or_default();
        let mine = want
            .as_ref()
            .filter(|_| summary.target.as_deref() == Some(name));
        let mut patch = serde_json::Map::new();
        if status.hold.as_ref() != mine {
            patch.insert(
                "hold".into(),
                serde_json::to_value(mine).unwrap_or_default(),
            );
        }
        let new_promotion = (ncr.spec.promotion.as_ref())
            .filter(|p| !status.promotions.contains(p))
            .cloned();
        if let Some(p) = &new_promotion {
            let mut list = status.promotions.clone();
            list.push(p.clone());
            let drop = list.len().saturating_sub(PROMOTIONS_KEPT);
            list.drain(..drop);
            patch.insert(
                "promotions".into(),
                serde_json::to_value(list).unwrap_or_default(),
            );
        }
        if patch.is_empty() {
            continue;
        }
        told.push(Told {
            revision: ncr.clone(),
            write: StatusPatch {
                revision: name.to_string(),
                status: serde_json::Value::Object(patch),
                what: "write the hold and promotions of",
            },
            hold: mine.cloned(),
            promotion: new_promotion,
        });
    }
    told
}

/// Writes the holds and records the promotions ([`decide`]; see the module documentation).
///
/// # Errors
/// The first failed write (the pass is retried with backoff).
pub async fn tell(ctx: &Context, told: &NotedMemo, summary: &Summary) -> Result<()> {
    for t in decide(&ctx.read().revisions(), summary) {
        ctx.writer().patch_status(&t.write).await?;
        let name = t.write.revision.as_str();
        let ncr = t.revision.as_ref();
        if let Some(h) = t.hold {
            let key = format!("{}/{}/{:?}", h.reason, h.sequence, h.gate);
            if told.first_time(name, &key) {
                tracing::info!(revision = name, reason = %h.reason, "{}", h.message);
                ctx.writer()
                    .event(ncr, true, &h.reason, "Hold", &h.message)
                    .await;
            }
        }
        if let Some(p) = t.promotion {
            let note = promoted_note(name, &p);
            tracing::info!(revision = name, by = %p.by, "{note}");
            ctx.writer()
                .event(ncr, false, PROMOTED, "Promote", &note)
                .await;
        }
    }
    Ok(())
}

/// The `Promoted` Event's note: who released what, and when.
pub fn promoted_note(revision: &str, p: &Promotion) -> String {
    let what = match (p.full, p.force, p.gates) {
        (true, true, _) => "every approval gate and the start checks (--full --force)".to_string(),
        (true, false, _) => "every approval gate (--full)".to_string(),
        (false, true, 0) => "the start checks (--force)".to_string(),
        (false, true, g) => format!("approval gate {g} and the start checks (--force)"),
        (false, false, g) => format!("approval gate {g}"),
    };
    format!(
        "{} promoted revision {revision} (sequence {}) at {}: released {what}",
        p.by, p.sequence, p.at.0
    )
}

/// The blocking query of `--start-blocking-query` and its last answer.
#[derive(Debug)]
pub struct StartQuery {
    prometheus: Prometheus,
    query: String,
    last: Mutex<Option<(Instant, StartCheck)>>,
}

impl StartQuery {
    /// The query `query` against `prometheus`.
    pub fn new(prometheus: Prometheus, query: String) -> Self {
        Self {
            prometheus,
            query,
            last: Mutex::new(None),
        }
    }

    /// The answer as the planner reads it: measured now if the last one is older than
    /// [`START_QUERY_EVERY`]. A query that returns any series blocks; one that cannot be run
    /// blocks too (the fleet's health is unknown).
    pub async fn check(&self) -> StartCheck {
        let fresh = |l: &Option<(Instant, StartCheck)>| {
            l.as_ref()
                .filter(|(at, _)| at.elapsed() < START_QUERY_EVERY)
                .map(|(_, c)| c.clone())
        };
        if let Some(c) = fresh(&self.last.lock().unwrap_or_else(|e| e.into_inner())) {
            return c;
        }
        let check = match self.prometheus.series(&self.query).await {
            Ok(series) if series.is_empty() => StartCheck::Clear,
            Ok(series) => StartCheck::Blocked {
                message: format!(
                    "query {:?} returns {} series ({}{})",
                    self.query,
                    series.len(),
                    series
                        .iter()
                        .take(3)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", "),
                    if series.len() > 3 { ", …" } else { "" }
                ),
            },
            Err(why) => StartCheck::Blocked {
                message: format!(
                    "query {:?} could not be run, so the fleet's health is unknown: {why}",
                    self.query
                ),
            },
        };
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((Instant::now(), check.clone()));
        check
    }
}

#[cfg(test)]
mod requests;

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    #[test]
    fn a_hold_at_a_gate_is_written_with_its_word_gate_and_sequence() {
        let h = Hold {
            revision: "ncr-a".into(),
            sequence: 4,
            cause: HoldCause::Gate {
                gate: 0,
                gates: 2,
                nodes: 1,
            },
            reason: "paused".into(),
        };
        let s = hold_status(&h);
        assert_eq!(
            (s.reason.as_str(), s.sequence, s.gate, s.gates, s.nodes),
            (AWAITING_PROMOTION, 4, Some(1), Some(2), Some(1))
        );
        let h = Hold {
            cause: HoldCause::Unhealthy {
                unhealthy: 3,
                allowed: 1,
            },
            ..h
        };
        assert_eq!(hold_status(&h).reason, FLEET_UNHEALTHY);
        assert_eq!(hold_status(&h).gate, None);
    }

    #[test]
    fn the_promoted_note_names_who_and_what() {
        let p = Promotion {
            sequence: 3,
            gates: 1,
            full: false,
            force: false,
            by: "alice".into(),
            at: Time(jiff::Timestamp::from_second(1_700_000_000).unwrap()),
        };
        let n = promoted_note("ncr-a", &p);
        assert!(
            n.starts_with("alice promoted revision ncr-a (sequence 3)")
                && n.ends_with("released approval gate 1"),
            "{n}"
        );
        let full = Promotion { full: true, ..p };
        assert!(promoted_note("ncr-a", &full).ends_with("(--full)"));
    }
}
