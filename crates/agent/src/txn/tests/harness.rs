//! The transaction's world without root: the dataplane's model kernel, a model FRR (a running
//! config that accepts or rejects text), a model disk (what a crash leaves of unsynced writes)
//! and probes decided by the test; virtual time. [`Node::drive`] runs a transaction to its end
//! as the agent's driver does, counting every crash point on the way and stopping at the one
//! asked for.

use std::time::{Duration, Instant};

use super::configs::{config, desired};
use netrollout_api::{NodeConfig, NodePhase};
use netrollout_dataplane::{Managed, ModelKernel, diff};

pub use super::disk::{CrashMode, ModelDisk};

mod effects;
use crate::convert::{self, Vtep};
use crate::outcome::Outcome;
use crate::report::Report;
use crate::state::{DiskStep, Journal};
use crate::txn::{Core, CoreError, Effect, Event, Metric, Now, Said, Settings, Spec};

/// The agent was killed here.
#[derive(Debug, PartialEq, Eq)]
pub struct Crashed;

/// Why an effect did not finish: the agent was killed, or a state write was refused.
enum Halt {
    Crashed,
    Refused(String),
}

impl From<Crashed> for Halt {
    fn from(_: Crashed) -> Self {
        Halt::Crashed
    }
}

/// How the transaction ended.
#[derive(Debug, PartialEq)]
pub enum End {
    /// Every effect ran.
    Done,
    /// The core stopped with an error.
    Stopped(CoreError),
    /// The state directory refused a write (full or read-only): the driver ends the
    /// transaction (the agent reports `StateUnavailable`).
    Refused(String),
    /// The transaction ran more than [`MAX_EFFECTS`] effects: a loop (a broken restore or
    /// commit order that never settles). A test fails on it at once instead of hanging.
    Runaway(String),
}

/// The most effects one transaction may run in the model world. The longest story of the
/// tests (a 10 s probe timeout in 1 s rounds, a restore, a record) runs about 60.
pub const MAX_EFFECTS: usize = 1_000;

/// FRR as the agent sees it: the running config, and `frr.conf`.
#[derive(Clone, Debug, Default)]
pub struct ModelFrr {
    /// The text FRR runs.
    pub running: String,
    /// The text of `frr.conf`.
    pub file: String,
    /// A line containing this is rejected (FRR's message names it).
    pub reject: Option<String>,
    /// Texts loaded, in order.
    pub loads: Vec<String>,
}

/// The probes a test decides: which checks fail in which round.
pub struct Probes {
    /// Checks failing before the change (reported, not enforced).
    pub before: Vec<&'static str>,
    /// Checks failing in after-round `n` (counted from 0); `None` is every check passing.
    pub after: Box<dyn Fn(u32) -> Vec<&'static str>>,
}

impl Default for Probes {
    fn default() -> Self {
        Self {
            before: Vec::new(),
            after: Box::new(|_| Vec::new()),
        }
    }
}

fn outcomes(failing: &[&'static str]) -> Vec<Outcome> {
    ["tcp 10.0.0.1:443", "gateway 10.0.0.254", "api uncached"]
        .into_iter()
        .chain(failing.iter().copied())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|name| Outcome {
            name: name.into(),
            error: failing.contains(&name).then(|| "unreachable".into()),
        })
        .collect()
}

/// A clock jump at a sleep: the sleep's number and the clocks, to move.
pub type Jump = Box<dyn FnMut(u32, &mut Now)>;

/// One node: model kernel, model FRR, model disk, the status it reported, virtual time.
pub struct Node {
    pub kernel: ModelKernel,
    pub frr: ModelFrr,
    pub disk: ModelDisk,
    pub reports: Vec<Report>,
    pub metrics: Vec<Metric>,
    pub effects: Vec<Effect>,
    pub probes: Probes,
    /// The kernel refuses this op of an apply (0-based, apply only).
    pub kernel_fails_at: Option<usize>,
    /// FRR cannot render the config (the node's router id clashes).
    pub unroutable: bool,
    /// The kernel refuses the restore's first op.
    pub kernel_restore_fails: bool,
    /// FRR cannot load the restore's text.
    pub frr_restore_fails: bool,
    /// The state directory refuses writing these files (full: a small journal may still fit
    /// where the backup does not); removals work.
    pub refuse_writes: Vec<&'static str>,
    /// The kernel stops answering every apply at this op (0-based): the step is slow, then past
    /// its deadline ([`Event::Slow`], [`Event::TimedOut`]); the kernel does that op and the
    /// rest late: before the next kernel step, which waits for them (the driver's lane), or,
    /// at a crash, the one it was handling.
    pub kernel_late_at: Option<usize>,
    /// The kernel answers nothing, restores included, while this is set (its late ops wait).
    pub kernel_never: bool,
    /// FRR does not answer applies of a text: it loads each late (before the next FRR step,
    /// or at a crash).
    pub frr_late: bool,
    /// FRR does not answer rendering (is it running?).
    pub render_late: bool,
    /// Probe rounds of these kinds get no answer by their deadline.
    pub probes_late: Vec<&'static str>,
    /// The state directory does not finish writing this file: its temporary file is written,
    /// the rest (sync, rename, directory sync) lands late, before the next disk step.
    pub disk_late: Option<&'static str>,
    /// What the parts do late.
    late_kernel: Vec<netrollout_dataplane::Op>,
    late_frr: Option<String>,
    late_disk: Vec<DiskStep>,
    /// The driver's slow threshold and deadline of every step.
    pub slow: Duration,
    pub deadline: Duration,
    /// The driver's memory: the journal of this process's last transaction when it ended
    /// with an error, not a crash (cleared by a restart).
    pub stopped: Option<Journal>,
    pub settings: Settings,
    pub now: Now,
    /// Crash points passed so far.
    pub points: u64,
    /// Crash when `points` reaches this.
    pub crash_at: Option<u64>,
    /// Called at every sleep (numbered from 0 within a transaction), after the clocks moved
    /// on by the interval: a test makes a clock jump here.
    pub on_sleep: Option<Jump>,
    after_rounds: u32,
    sleeps: u32,
    managed: Managed,
}

impl Node {
    pub fn new() -> Self {
        let settings = Settings {
            vtep: Vtep {
                local: Some("192.0.2.1".parse().expect("an address")),
                underlay: None,
            },
            probe_timeout: Duration::from_secs(10),
            probe_interval: Duration::from_secs(1),
            probe_hold: Duration::from_secs(3),
            frr: true,
        };
        Self {
            kernel: ModelKernel::default(),
            frr: ModelFrr::default(),
            disk: ModelDisk::default(),
            reports: Vec::new(),
            metrics: Vec::new(),
            effects: Vec::new(),
            probes: Probes::default(),
            kernel_fails_at: None,
            unroutable: false,
            kernel_restore_fails: false,
            frr_restore_fails: false,
            refuse_writes: Vec::new(),
            kernel_late_at: None,
            kernel_never: false,
            frr_late: false,
            render_late: false,
            probes_late: Vec::new(),
            disk_late: None,
            late_kernel: Vec::new(),
            late_frr: None,
            late_disk: Vec::new(),
            slow: Duration::from_secs(5),
            deadline: Duration::from_secs(120),
            stopped: None,
            settings,
            now: Now {
                instant: Instant::now(),
                wall: jiff::Timestamp::from_second(1_800_000_000).expect("a time"),
            },
            points: 0,
            crash_at: None,
            on_sleep: None,
            after_rounds: 0,
            sleeps: 0,
            managed: convert::managed().expect("the API's prefixes"),
        }
    }

    /// A crash point: the agent may die here.
    fn point(&mut self) -> Result<(), Crashed> {
        self.points += 1;
        if self.crash_at == Some(self.points) {
            return Err(Crashed);
        }
        Ok(())
    }

    fn advance(&mut self, d: Duration) {
        self.now.instant += d;
        self.now.wall += d;
    }

    /// The spec of `rev` with `config`, as the watch delivers it to a process that published
    /// nothing yet (`force_report` as on start), with the status the API holds.
    pub fn spec(&self, rev: &str, config: &NodeConfig, retry: Option<&str>) -> Spec {
        let last = self.reports.iter().rev().find(|r| r.phase.is_some());
        Spec {
            revision: rev.into(),
            generation: Some(1),
            config: config.clone(),
            retry: retry.map(Into::into),
            said: Said {
                published: None,
                observed_revision: last.and_then(|r| r.revision.clone()),
                phase: last.and_then(|r| r.phase),
                observed_generation: last.and_then(|r| r.generation),
                force_report: true,
            },
        }
    }

    /// Sees `spec` with the state on disk and runs the transaction.
    pub fn see(&mut self, spec: Spec) -> Result<End, Crashed> {
        self.disk_answers();
        let mut disk = self.disk.state().expect("the state on disk reads back");
        disk.stopped = self.stopped.clone();
        self.drive(Event::Spec(spec, disk))
    }

    /// Starts a new process on the state on disk (crash recovery): the last process's memory
    /// is gone.
    pub fn start(&mut self) -> Result<End, Crashed> {
        self.stopped = None;
        self.disk_answers();
        let disk = self.disk.state().expect("the state on disk reads back");
        self.drive(Event::Started(disk))
    }

    /// Runs one transaction from `first` to its end, as the driver does; an end with an
    /// error leaves the attempt's journal in the driver's memory ([`Node::stopped`]).
    pub fn drive(&mut self, first: Event) -> Result<End, Crashed> {
        let mut core = Core::new(self.settings.clone());
        let end = self.drive_core(&mut core, first)?;
        self.stopped = match end {
            End::Done => None,
            End::Stopped(_) | End::Refused(_) | End::Runaway(_) => core.journal().cloned(),
        };
        Ok(end)
    }

    fn drive_core(&mut self, core: &mut Core, first: Event) -> Result<End, Crashed> {
        self.after_rounds = 0;
        self.sleeps = 0;
        let mut queue: std::collections::VecDeque<Effect> = match core.handle(self.now, first) {
            Ok(effects) => effects.into(),
            Err(e) => return Ok(End::Stopped(e)),
        };
        let mut ran = 0;
        while let Some(effect) = queue.pop_front() {
            ran += 1;
            if ran > MAX_EFFECTS {
                let last: Vec<String> = (self.effects.iter().rev().take(3))
                    .map(|e| format!("{e:?}").chars().take(80).collect())
                    .collect();
                return Ok(End::Runaway(format!(
                    "the transaction ran {MAX_EFFECTS} effects without ending; the last: {}",
                    last.join(" / ")
                )));
            }
            self.point()?;
            self.effects.push(effect.clone());
            let mut event = match self.run(effect) {
                Ok(event) => event,
                Err(Halt::Crashed) => return Err(Crashed),
                Err(Halt::Refused(e)) => return Ok(End::Refused(e)),
            };
            if event == Some(Event::TimedOut) {
                // The driver's wait: slow (the core reports it), then the deadline.
                self.advance(self.slow);
                let said = match core.handle(self.now, Event::Slow) {
                    Ok(effects) => effects,
                    Err(e) => return Ok(End::Stopped(e)),
                };
                for effect in said {
                    assert!(effect.waits_on().is_none(), "a slow step asked {effect:?}");
                    self.effects.push(effect.clone());
                    if self.run(effect).is_err() {
                        unreachable!("reports and metrics cannot fail");
                    }
                }
                self.advance(self.deadline - self.slow);
                event = Some(Event::TimedOut);
            }
            if let Some(event) = event {
                match core.handle(self.now, event) {
                    Ok(effects) => queue.extend(effects),
                    Err(e) => return Ok(End::Stopped(e)),
                }
            }
        }
        assert!(core.is_done(), "the transaction stopped without finishing");
        Ok(End::Done)
    }

    /// The last report with a phase.
    pub fn last(&self) -> &Report {
        self.reports
            .iter()
            .rev()
            .find(|r| r.phase.is_some())
            .expect("a report")
    }

    /// Whether the kernel's managed objects are exactly `config`'s.
    pub fn kernel_runs(&self, config: &NodeConfig) -> bool {
        diff(&desired(config), &self.kernel.state).is_empty()
    }

    /// The phase of the last report.
    pub fn phase(&self) -> Option<NodePhase> {
        self.last().phase
    }

    /// Sees `rev` carrying the routing tables `ids` (and `retry`), with no crash point armed.
    pub fn see_rev(&mut self, rev: &str, ids: &[u16], retry: Option<&str>) -> End {
        let spec = self.spec(rev, &config(ids), retry);
        self.see(spec).unwrap()
    }

    /// Whether the kernel was applied since `effects` was last cleared.
    pub fn applied_kernel(&self) -> bool {
        self.effects
            .iter()
            .any(|e| matches!(e, Effect::ApplyKernel { .. }))
    }
}
