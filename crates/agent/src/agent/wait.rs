//! No silent wait: every step of a transaction has a slow threshold and a deadline.
//!
//! A question of the core (render FRR, apply to the kernel or FRR, a probe round) and every
//! state-file read or write runs as a step ([`Steps::begin`]: the step in flight and its age
//! in the metrics). Past `--step-slow` the agent says what it waits for and since when: a log
//! line (repeated every 30 s while it lasts, naming the work the part has not answered, e.g.
//! `netlink apply of rev-2`), a status report (the core's [`Event::Slow`]: reason
//! `WaitingForKernel`, ...), a metric. Past the part's deadline the step is an error of that
//! step: the core gets [`Event::TimedOut`] and handles it by the transaction's rules; a
//! state-file step ends the transaction with `StateUnavailable`. The work itself goes on in
//! its [`crate::lane::Lane`], and the next step on the part waits for it.

use std::future::Future;
use std::time::{Duration, Instant};

use netrollout_api::NodePhase;

use super::effects::Run;
use super::{Agent, core_error, txn_now};
use crate::error::{Error, Result};
use crate::store::{Store, StoreError};
use crate::txn::{Core, Effect, Event, Metric, Part, Purpose, Round};

/// How often a wait is logged again while it lasts.
const SAY_AGAIN: Duration = Duration::from_secs(30);

/// When a step is slow, and when it ends as an error, by the part it waits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadlines {
    /// A step without an answer this long is reported (`--step-slow`).
    pub slow: Duration,
    /// Netlink: an apply or restore of the kernel's managed objects (`--kernel-deadline`).
    pub kernel: Duration,
    /// FRR: rendering (the base file, the daemons answering), an apply or restore
    /// (`--frr-deadline`).
    pub frr: Duration,
    /// A state-file read or write, its fsyncs included (`--disk-deadline`).
    pub disk: Duration,
    /// A probe round: `--probe-each-timeout` (the checks run at once) plus, with FRR, the FRR
    /// deadline (the routing checks read FRR), else 30 s.
    pub probes: Duration,
    /// Each API request (`--api-deadline`): not a step of the transaction, which never waits
    /// for the API server ([`crate::bounded`]).
    pub api: Duration,
}

impl Default for Deadlines {
    /// The flags' defaults (with `--probe-each-timeout 2s`, FRR on).
    fn default() -> Self {
        Self {
            slow: Duration::from_secs(5),
            kernel: Duration::from_secs(120),
            frr: Duration::from_secs(300),
            disk: Duration::from_secs(60),
            probes: Duration::from_secs(302),
            api: Duration::from_secs(10),
        }
    }
}

impl Deadlines {
    /// The deadline of a step waiting on `part`.
    pub fn of(&self, part: Part) -> Duration {
        match part {
            Part::Kernel => self.kernel,
            Part::Frr => self.frr,
            Part::Disk => self.disk,
            Part::Probes => self.probes,
        }
    }
}

impl Agent {
    /// Runs an asking effect within its part's deadline; its answer, or
    /// [`Event::TimedOut`]. Past the slow threshold the core reports the wait.
    pub(super) async fn ask(
        &self,
        core: &mut Core,
        run: &mut Run,
        effect: Effect,
        part: Part,
    ) -> Result<Event> {
        let step = step_name(&effect);
        let rev = run.rev.clone();
        let answer = self.run_effect(run, effect);
        let on_slow = || {
            for effect in core.handle(txn_now(), Event::Slow).map_err(core_error)? {
                match effect {
                    Effect::Publish(report) => self.publish(report),
                    Effect::Record(Metric::Slow(part)) => self.metrics.slow(part.as_str()),
                    other => tracing::error!(?other, "unexpected effect of a slow step"),
                }
            }
            Ok(())
        };
        match self.within(step, part, &rev, answer, on_slow).await? {
            Some(answered) => answered?.ok_or_else(|| {
                Error::Transaction(crate::txn::CoreError::Unexpected {
                    event: "no answer".into(),
                    state: step,
                })
            }),
            None => Ok(Event::TimedOut),
        }
    }

    /// Runs `f` on the state directory (in the disk lane, after what it still owes) within
    /// the disk deadline.
    pub(super) async fn on_disk<T: Send + 'static>(
        &self,
        step: &'static str,
        what: String,
        f: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T> {
        let store = self.store.clone();
        let answer = self.disk.submit(what.clone(), async move {
            tokio::task::spawn_blocking(move || f(&store)).await
        });
        let since = jiff::Timestamp::now();
        let on_slow = || {
            self.publish_disk_wait(&what, since);
            Ok(())
        };
        match self
            .within(step, Part::Disk, "", answer.get(), on_slow)
            .await?
        {
            Some(Ok(Ok(done))) => done.map_err(Error::Store),
            Some(Ok(Err(_)) | Err(_)) => Err(Error::Lost(crate::lane::Lost(Part::Disk))),
            None => Err(Error::Store(StoreError::TimedOut {
                what,
                dir: self.store.dir().to_path_buf(),
                waited: self.settings.deadlines.disk,
            })),
        }
    }

    /// Waits for `answer` as step `step` on `part`: `None` when its deadline passed first.
    /// `on_slow` runs once, at the slow threshold; the wait is logged then and every 30 s.
    async fn within<T>(
        &self,
        step: &'static str,
        part: Part,
        rev: &str,
        answer: impl Future<Output = T>,
        mut on_slow: impl FnMut() -> Result<()>,
    ) -> Result<Option<T>> {
        let deadline = self.settings.deadlines.of(part);
        let _in_flight = self.steps.begin(step, deadline);
        let since = Instant::now();
        let end = tokio::time::Instant::from_std(since + deadline);
        let mut say = since + self.settings.deadlines.slow;
        let mut said = false;
        let mut answer = std::pin::pin!(answer);
        loop {
            tokio::select! {
                biased;
                answered = &mut answer => {
                    if said {
                        tracing::info!(step = "wait", waited_for = step, part = part.as_str(),
                            revision = rev, duration_ms = ms(since), "answered after a wait");
                    }
                    return Ok(Some(answered));
                }
                () = tokio::time::sleep_until(end) => {
                    tracing::error!(step = "timed-out", waited_for = step, part = part.as_str(),
                        revision = rev, deadline_s = deadline.as_secs(),
                        owes = self.owes(part).as_deref().unwrap_or(step),
                        "no answer within the deadline: the step fails; the work goes on and \
                         the next step on {} waits for it", part.describe());
                    self.metrics.timed_out(part.as_str());
                    return Ok(None);
                }
                () = tokio::time::sleep_until(say.into()) => {
                    tracing::warn!(step = "wait", waiting_for = step, part = part.as_str(),
                        revision = rev, waited_s = since.elapsed().as_secs(),
                        deadline_s = deadline.as_secs(),
                        owes = self.owes(part).as_deref().unwrap_or(step),
                        "waiting for {}", part.describe());
                    if !said {
                        said = true;
                        on_slow()?;
                    }
                    say += SAY_AGAIN;
                }
            }
        }
    }

    /// What `part` has not answered, oldest first, and for how long.
    fn owes(&self, part: Part) -> Option<String> {
        let busy = self.steps.oldest(part)?;
        Some(format!(
            "{} (handed in {} s ago)",
            busy.what,
            busy.since.elapsed().as_secs()
        ))
    }

    /// A state-file step is slow: during an attempt, its `Provisioning` report says so.
    fn publish_disk_wait(&self, what: &str, since: jiff::Timestamp) {
        let last = self.reports.borrow().clone();
        let Some(mut report) = last.filter(|r| r.phase == Some(NodePhase::Provisioning)) else {
            return;
        };
        let since = since.round(jiff::Unit::Second).unwrap_or(since);
        report.reason = Part::Disk.waiting_reason().into();
        report.message = format!(
            "applying {}: waiting for {} since {since} ({what})",
            report.revision.as_deref().unwrap_or_default(),
            Part::Disk.describe()
        );
        self.publish(report);
    }
}

/// The step an asking effect is, as in the step lines.
fn step_name(effect: &Effect) -> &'static str {
    match effect {
        Effect::RenderFrr(_) => "render-frr",
        Effect::ApplyKernel { purpose, .. } => match purpose {
            Purpose::Apply => "apply",
            Purpose::Restore => "restored",
        },
        Effect::ApplyFrr { purpose, .. } => match purpose {
            Purpose::Apply => "apply-frr",
            Purpose::Restore => "restored-frr",
        },
        Effect::Probe(round) => match round {
            Round::Before { .. } => "probe-before",
            Round::After { .. } => "probe-after",
            Round::Restored { .. } => "probe-restored",
        },
        _ => "effect",
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}
