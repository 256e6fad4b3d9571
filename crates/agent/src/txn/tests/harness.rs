//! The transaction's world without root: the dataplane's model kernel, a model FRR (a running
//! config that accepts or rejects text), a model disk (what a crash leaves of unsynced writes)
//! and probes decided by the test; virtual time. [`Node::drive`] runs a transaction to its end
//! as the agent's driver does, counting every crash point on the way and stopping at the one
//! asked for.

use std::time::{Duration, Instant};

use super::configs::{config, desired, frr_text};
use netrollout_api::{NodeConfig, NodePhase};
use netrollout_dataplane::{Managed, ModelKernel, diff};

pub use super::disk::{CrashMode, ModelDisk};
use crate::convert::{self, Vtep};
use crate::outcome::Outcome;
use crate::report::Report;
use crate::state::{self, DiskStep, FAILED_FILE, JOURNAL_FILE, Journal, LKG_FILE};
use crate::txn::{
    Core, CoreError, Effect, Event, FrrText, Metric, Now, Purpose, Round, Said, Settings, Spec,
};

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
}

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
        let mut disk = self.disk.state().expect("the state on disk reads back");
        disk.stopped = self.stopped.clone();
        self.drive(Event::Spec(spec, disk))
    }

    /// Starts a new process on the state on disk (crash recovery): the last process's memory
    /// is gone.
    pub fn start(&mut self) -> Result<End, Crashed> {
        self.stopped = None;
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
            End::Stopped(_) | End::Refused(_) => core.journal().cloned(),
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
        while let Some(effect) = queue.pop_front() {
            self.point()?;
            self.effects.push(effect.clone());
            let event = match self.run(effect) {
                Ok(event) => event,
                Err(Halt::Crashed) => return Err(Crashed),
                Err(Halt::Refused(e)) => return Ok(End::Refused(e)),
            };
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

    fn write(&mut self, steps: Vec<DiskStep>) -> Result<(), Halt> {
        for (i, step) in steps.iter().enumerate() {
            if i > 0 {
                self.point()?;
            }
            let refused = |f: &String| self.refuse_writes.iter().any(|r| f.contains(r));
            if let DiskStep::Write { file, .. } = step
                && refused(file)
            {
                return Err(Halt::Refused(format!(
                    "cannot write state file {file}: No space left on device (os error 28)"
                )));
            }
            self.disk.apply(step);
        }
        Ok(())
    }

    fn run(&mut self, effect: Effect) -> Result<Option<Event>, Halt> {
        let enc = |v: Result<Vec<u8>, serde_json::Error>| v.expect("a record encodes");
        match effect {
            Effect::WriteLastKnownGood(l) => {
                self.write(state::write_steps(LKG_FILE, enc(state::encode(&l))))?
            }
            Effect::WriteJournal(j) => {
                self.write(state::write_steps(JOURNAL_FILE, enc(state::encode(&j))))?
            }
            Effect::WriteFailuresBeforeRestore(f) => {
                let steps = state::write_steps(FAILED_FILE, enc(state::encode(&f)));
                match self.write(steps) {
                    Err(Halt::Refused(_)) => {} // the driver goes on with the restore
                    other => other?,
                }
            }
            Effect::WriteFailures(f) => {
                self.write(state::write_steps(FAILED_FILE, enc(state::encode(&f))))?
            }
            Effect::ClearJournal => self.write(state::remove_steps(JOURNAL_FILE))?,
            Effect::Publish(r) => self.reports.push(r),
            Effect::Record(m) => self.metrics.push(m),
            Effect::RenderFrr(config) => {
                let text = if self.unroutable {
                    Err("the managed router id equals the default VRF's".into())
                } else {
                    Ok(frr_text(&config))
                };
                return Ok(Some(Event::FrrRendered(text)));
            }
            Effect::ApplyKernel { desired, purpose } => {
                let ops = diff(&desired, &self.kernel.state);
                if let (Purpose::Restore, true, Some(op)) =
                    (purpose, self.kernel_restore_fails, ops.first())
                {
                    let e = format!("{op}: Device or resource busy (EBUSY)");
                    return Ok(Some(Event::KernelFailed(e)));
                }
                for (i, op) in ops.iter().enumerate() {
                    if i > 0 {
                        self.point()?;
                    }
                    if purpose == Purpose::Apply && self.kernel_fails_at == Some(i) {
                        return Ok(Some(Event::KernelFailed(format!(
                            "{op}: Operation not supported (EOPNOTSUPP)"
                        ))));
                    }
                    if let Err(e) = self.kernel.execute(op, &self.managed) {
                        return Ok(Some(Event::KernelFailed(e)));
                    }
                }
                return Ok(Some(Event::KernelApplied));
            }
            Effect::ApplyFrr { text, purpose } => {
                if purpose == Purpose::Restore && self.frr_restore_fails {
                    let e = "frr-reload.py: vtysh: connection to zebra refused".into();
                    return Ok(Some(Event::FrrFailed(e)));
                }
                let text = match text {
                    FrrText::Full(t) => t,
                    FrrText::Render(c) => frr_text(&c),
                };
                let rejected = |l: &&str| {
                    self.frr
                        .reject
                        .as_ref()
                        .is_some_and(|b| l.contains(b.as_str()))
                };
                if let Some(line) = text.lines().find(rejected) {
                    let msg = format!("line {line:?}: % Unknown command");
                    return Ok(Some(Event::FrrRejected(msg)));
                }
                self.frr.file = text.clone();
                self.point()?;
                self.frr.running = text.clone();
                self.frr.loads.push(text);
                return Ok(Some(Event::FrrApplied));
            }
            Effect::Probe(round) => {
                let out = match round {
                    Round::Before { .. } => outcomes(&self.probes.before),
                    Round::After { links, skip, .. } => {
                        let n = self.after_rounds;
                        self.after_rounds += 1;
                        let mut out = outcomes(&(self.probes.after)(n));
                        out.retain(|o| !skip.contains(&o.name));
                        out.extend(links.iter().map(|l| {
                            Outcome {
                                name: format!("link {l}"),
                                error: (!self.kernel.state.links.get(l).is_some_and(|x| x.up))
                                    .then(|| "operstate is down".into()),
                            }
                        }));
                        out
                    }
                    Round::Restored { .. } => outcomes(&self.probes.before),
                };
                return Ok(Some(Event::Probed(out)));
            }
            Effect::Sleep(d) => {
                self.advance(d);
                if let Some(jump) = &mut self.on_sleep {
                    jump(self.sleeps, &mut self.now);
                }
                self.sleeps += 1;
                return Ok(Some(Event::TimerFired));
            }
        }
        Ok(None)
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
