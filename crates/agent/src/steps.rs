//! What the agent waits for, and whether it is stuck: the steps in flight (each with its
//! deadline), the work each part of the node still owes (the kernel, FRR, the state
//! directory: work a step handed in and gave up on at its deadline goes on, see
//! [`crate::lane`]), the main loop's progress, and the supervised tasks that ended.
//!
//! The metrics show them (`netrollout_agent_step_in_flight_seconds{step}`: the age of each
//! step in flight; `netrollout_agent_part_busy_seconds{part}`: the age of the oldest work a part
//! has not answered), and `/healthz` is their verdict ([`Steps::liveness`], pure over
//! [`Snapshot`]): the agent is stuck — the kubelet should restart it — when
//! - a step is in flight past its deadline (plus [`GRACE`]): the step should have ended as an
//!   error at its deadline, so the driver itself is blocked (a deadlock, a blocking call on the
//!   runtime);
//! - or the main loop made no progress for [`STALL`] with no step in flight: it waits for a
//!   wake-up that does not come (the loop wakes at least every 30 s to resync);
//! - or a supervised task ended ([`Steps::task_ended`]).
//!
//! A wait on a part is not a reason: a kernel that holds its netlink lock for minutes makes
//! every step on it end at its deadline, and the loop goes on (it tries again every 5 s). Such
//! a wait is reported (log, status, the metrics above), never restarted: a restarted agent
//! would wait for the same kernel.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::txn::Part;

/// How long past its deadline a step may stay in flight before the agent counts as stuck.
pub const GRACE: Duration = Duration::from_secs(30);
/// How long the main loop may make no progress, with no step in flight, before the agent
/// counts as stuck (three of its 30 s resyncs).
pub const STALL: Duration = Duration::from_secs(90);

/// A step in flight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InFlight {
    /// The step, as in the step lines (`apply`, `restore-frr`, `journal`, ...).
    pub step: &'static str,
    /// When it started.
    pub since: Instant,
    /// When it ends as an error if it has no answer.
    pub deadline: Instant,
}

/// Work a part has not answered yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Busy {
    /// The part.
    pub part: Part,
    /// What it was handed, e.g. `netlink apply of rev-2`.
    pub what: String,
    /// When it was handed in.
    pub since: Instant,
}

/// The state [`Steps::liveness`] judges.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The steps in flight.
    pub in_flight: Vec<InFlight>,
    /// The work the parts owe, oldest first.
    pub busy: Vec<Busy>,
    /// The main loop's last progress (`None`: it has not started).
    pub progress: Option<Instant>,
    /// A supervised task that ended, and how.
    pub ended: Option<String>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    in_flight: BTreeMap<u64, InFlight>,
    busy: BTreeMap<u64, Busy>,
    progress: Option<Instant>,
    ended: Option<String>,
}

/// When the agent counts as stuck ([`STALL`], [`GRACE`]; shorter in tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watchdog {
    /// The main loop without progress this long, nothing in flight: stuck.
    pub stall: Duration,
    /// A step in flight this long past its deadline: stuck.
    pub grace: Duration,
}

impl Default for Watchdog {
    fn default() -> Self {
        Self {
            stall: STALL,
            grace: GRACE,
        }
    }
}

/// The registry of steps, waits and progress, shared by the driver, the lanes, the main loop
/// and the health endpoint.
#[derive(Debug, Default)]
pub struct Steps {
    inner: Mutex<Inner>,
    watchdog: Watchdog,
}

/// Ends its step (or its part's work) when dropped.
#[derive(Debug)]
#[must_use = "the step ends when this is dropped"]
pub struct Ticket {
    steps: Arc<Steps>,
    id: u64,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut inner = self.steps.lock();
        inner.in_flight.remove(&self.id);
        inner.busy.remove(&self.id);
    }
}

impl Steps {
    /// A registry judged by `watchdog`.
    pub fn with_watchdog(watchdog: Watchdog) -> Self {
        Self {
            inner: Mutex::default(),
            watchdog,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere while holding it leaves plain data: still usable.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A step starts; it is in flight until the ticket drops.
    pub fn begin(self: &Arc<Self>, step: &'static str, deadline: Duration) -> Ticket {
        let since = Instant::now();
        let mut inner = self.lock();
        let id = inner.next;
        inner.next += 1;
        inner.in_flight.insert(
            id,
            InFlight {
                step,
                since,
                deadline: since + deadline,
            },
        );
        drop(inner);
        Ticket {
            steps: self.clone(),
            id,
        }
    }

    /// A part was handed work; it owes it until the ticket drops.
    pub fn owe(self: &Arc<Self>, part: Part, what: String) -> Ticket {
        let since = Instant::now();
        let mut inner = self.lock();
        let id = inner.next;
        inner.next += 1;
        inner.busy.insert(id, Busy { part, what, since });
        drop(inner);
        Ticket {
            steps: self.clone(),
            id,
        }
    }

    /// The main loop made progress (an iteration, an event of a transaction).
    pub fn progress(&self) {
        self.lock().progress = Some(Instant::now());
    }

    /// A supervised task ended (`how`: returned, panicked, with its name); the agent is no
    /// longer live.
    pub fn task_ended(&self, how: String) {
        self.lock().ended.get_or_insert(how);
    }

    /// The oldest work `part` has not answered.
    pub fn oldest(&self, part: Part) -> Option<Busy> {
        self.lock().busy.values().find(|b| b.part == part).cloned()
    }

    /// A copy of the state.
    pub fn snapshot(&self) -> Snapshot {
        let inner = self.lock();
        Snapshot {
            in_flight: inner.in_flight.values().cloned().collect(),
            busy: inner.busy.values().cloned().collect(),
            progress: inner.progress,
            ended: inner.ended.clone(),
        }
    }

    /// Whether the agent is live at `now`: `Err` says why not.
    pub fn liveness(&self, now: Instant) -> Result<(), String> {
        liveness(&self.snapshot(), now, self.watchdog)
    }
}

/// The verdict over a snapshot (see the module's documentation).
pub fn liveness(s: &Snapshot, now: Instant, w: Watchdog) -> Result<(), String> {
    if let Some(how) = &s.ended {
        return Err(how.clone());
    }
    if let Some(late) = s
        .in_flight
        .iter()
        .find(|f| now.saturating_duration_since(f.deadline) > w.grace)
    {
        return Err(format!(
            "step {} has been in flight for {} s, {} s past its deadline: the agent is stuck",
            late.step,
            now.saturating_duration_since(late.since).as_secs(),
            now.saturating_duration_since(late.deadline).as_secs()
        ));
    }
    match s.progress {
        Some(at) if s.in_flight.is_empty() && now.saturating_duration_since(at) > w.stall => {
            Err(format!(
                "the main loop made no progress for {} s and no step is in flight: the agent \
                 is stuck",
                now.saturating_duration_since(at).as_secs()
            ))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Watchdog = Watchdog {
        stall: STALL,
        grace: GRACE,
    };

    fn at(t0: Instant, secs: u64) -> Instant {
        t0 + Duration::from_secs(secs)
    }

    #[test]
    fn a_main_loop_without_progress_and_nothing_in_flight_is_stuck() {
        let t0 = Instant::now();
        let s = Snapshot {
            progress: Some(t0),
            ..Snapshot::default()
        };
        assert_eq!(liveness(&s, at(t0, 60), W), Ok(()));
        let e = liveness(&s, at(t0, 91), W).unwrap_err();
        assert!(e.contains("no progress for 91 s"), "{e}");
        // Not started yet (readiness says so, not liveness).
        assert_eq!(liveness(&Snapshot::default(), at(t0, 1000), W), Ok(()));
    }

    #[test]
    fn a_step_within_its_deadline_is_a_wait_and_past_it_a_stuck_agent() {
        let t0 = Instant::now();
        let s = Snapshot {
            progress: Some(t0),
            in_flight: vec![InFlight {
                step: "apply",
                since: t0,
                deadline: at(t0, 120),
            }],
            ..Snapshot::default()
        };
        // No progress for far longer than STALL: a step in flight within its deadline
        // explains it.
        assert_eq!(liveness(&s, at(t0, 149), W), Ok(()));
        let e = liveness(&s, at(t0, 151), W).unwrap_err();
        assert!(e.contains("step apply") && e.contains("31 s past"), "{e}");
    }

    #[test]
    fn a_part_that_owes_work_for_minutes_is_reported_not_a_reason_to_restart() {
        let t0 = Instant::now();
        let s = Snapshot {
            progress: Some(at(t0, 595)),
            busy: vec![Busy {
                part: Part::Kernel,
                what: "netlink apply of rev-1".into(),
                since: t0,
            }],
            ..Snapshot::default()
        };
        assert_eq!(liveness(&s, at(t0, 600), W), Ok(()));
    }

    #[test]
    fn an_ended_task_fails_liveness_and_names_it() {
        let steps = Arc::new(Steps::default());
        steps.progress();
        assert_eq!(steps.liveness(Instant::now()), Ok(()));
        steps.task_ended("task reporter panicked: boom".into());
        steps.task_ended("task watch returned".into());
        assert_eq!(
            steps.liveness(Instant::now()),
            Err("task reporter panicked: boom".into())
        );
    }

    #[test]
    fn tickets_end_their_step_and_work_when_dropped() {
        let steps = Arc::new(Steps::default());
        let a = steps.begin("apply", Duration::from_secs(1));
        let b = steps.owe(Part::Kernel, "netlink apply of rev-1".into());
        let c = steps.owe(Part::Kernel, "netlink restore of rev-1".into());
        assert_eq!(steps.snapshot().in_flight.len(), 1);
        assert_eq!(
            steps.oldest(Part::Kernel).map(|b| b.what),
            Some("netlink apply of rev-1".into())
        );
        drop((a, b));
        let s = steps.snapshot();
        assert!(s.in_flight.is_empty());
        assert_eq!(s.busy.len(), 1);
        drop(c);
        assert_eq!(steps.oldest(Part::Kernel), None);
    }

    /// The watchdog on real tasks and the real endpoint (its limits shortened): a main loop
    /// whose steps end at their deadlines while a part does not answer stays live; a main
    /// loop in a deadlock, and a step that overran its deadline, fail `/healthz`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn healthz_tells_a_stuck_main_loop_from_one_waiting_on_a_part() {
        let watchdog = Watchdog {
            stall: Duration::from_millis(400),
            grace: Duration::from_millis(400),
        };
        let healthz = |steps: &Arc<Steps>| steps.liveness(Instant::now());
        // Waiting: the part never answers; each step ends at its 100 ms deadline and the
        // loop tries again, as the agent's loop does.
        let steps = Arc::new(Steps::with_watchdog(watchdog));
        let lane = crate::lane::Lane::new(Part::Kernel, steps.clone());
        let (_never, blocked) = tokio::sync::oneshot::channel::<()>();
        drop(lane.submit("netlink apply of rev-1".into(), async move {
            let _ = blocked.await;
        }));
        let s = steps.clone();
        let waiting = tokio::spawn(async move {
            loop {
                s.progress();
                let _step = s.begin("restored", Duration::from_millis(100));
                let answer = lane.submit("netlink restore of rev-1".into(), async {});
                let _ = tokio::time::timeout(Duration::from_millis(100), answer.get()).await;
            }
        });
        for _ in 0..15 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert_eq!(healthz(&steps), Ok(()));
        }
        assert!(
            steps.oldest(Part::Kernel).is_some(),
            "the kernel still owes it"
        );
        waiting.abort();
        // Stuck: the loop awaits a lock it holds itself (a deadlock), nothing in flight.
        let steps = Arc::new(Steps::with_watchdog(watchdog));
        let s = steps.clone();
        let stuck = tokio::spawn(async move {
            let lock = tokio::sync::Mutex::new(());
            s.progress();
            let _held = lock.lock().await;
            let _again = lock.lock().await;
        });
        tokio::time::sleep(Duration::from_millis(600)).await;
        let e = healthz(&steps).unwrap_err();
        assert!(e.contains("no progress"), "{e}");
        stuck.abort();
        // Stuck: a step whose deadline did not end it (a call that blocks its thread).
        let steps = Arc::new(Steps::with_watchdog(watchdog));
        let s = steps.clone();
        let blocking = tokio::task::spawn_blocking(move || {
            s.progress();
            let _step = s.begin("journal", Duration::from_millis(100));
            std::thread::sleep(Duration::from_millis(800));
        });
        tokio::time::sleep(Duration::from_millis(650)).await;
        let e = healthz(&steps).unwrap_err();
        assert!(
            e.contains("step journal") && e.contains("past its deadline"),
            "{e}"
        );
        blocking.await.unwrap();
    }
}
