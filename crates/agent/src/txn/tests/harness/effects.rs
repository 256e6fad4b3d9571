//! The model world's side of each effect: the model disk, kernel, FRR and probes answering
//! (or answering late: what a part owes lands before its next step), as the driver runs them.

use netrollout_dataplane::diff;

use super::super::configs::frr_text;
use super::{Halt, Node, outcomes};
use crate::outcome::Outcome;
use crate::state::{self, DiskStep, FAILED_FILE, JOURNAL_FILE, LKG_FILE};
use crate::txn::{Effect, Event, FrrText, Purpose, Round};

impl Node {
    /// The disk finishes what it owes (the driver's lane waits for it before the next read
    /// or write).
    pub(super) fn disk_answers(&mut self) {
        for step in std::mem::take(&mut self.late_disk) {
            self.disk.apply(&step);
        }
    }

    fn write(&mut self, steps: Vec<DiskStep>) -> Result<(), Halt> {
        self.disk_answers();
        for (i, step) in steps.iter().enumerate() {
            if i > 0 {
                let late = |f: &String| self.disk_late.is_some_and(|l| f.contains(l));
                if let DiskStep::Write { file, .. } = &steps[0]
                    && late(file)
                {
                    self.disk_late = None;
                    self.late_disk = steps[i..].to_vec();
                    return Err(Halt::Refused(format!(
                        "the state directory did not finish `write {file}` within {} s",
                        self.deadline.as_secs()
                    )));
                }
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

    pub(super) fn run(&mut self, effect: Effect) -> Result<Option<Event>, Halt> {
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
                if self.render_late {
                    return Ok(Some(Event::TimedOut));
                }
                let text = if self.unroutable {
                    Err("the managed router id equals the default VRF's".into())
                } else {
                    Ok(frr_text(&config))
                };
                return Ok(Some(Event::FrrRendered(text)));
            }
            Effect::ApplyKernel { desired, purpose } => {
                if self.kernel_never
                    && (purpose == Purpose::Restore || self.kernel_late_at.is_none())
                {
                    return Ok(Some(Event::TimedOut));
                }
                // The kernel answers what it owes first (the driver's lane waits for it).
                for op in std::mem::take(&mut self.late_kernel) {
                    let _ = self.kernel.execute(&op, &self.managed);
                }
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
                    if purpose == Purpose::Apply && self.kernel_late_at == Some(i) {
                        self.late_kernel = ops[i..].to_vec();
                        return Ok(Some(Event::TimedOut));
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
                if let Some(late) = self.late_frr.take() {
                    self.frr.file = late.clone();
                    self.frr.running = late.clone();
                    self.frr.loads.push(late);
                }
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
                if purpose == Purpose::Apply && self.frr_late {
                    self.late_frr = Some(text);
                    return Ok(Some(Event::TimedOut));
                }
                self.frr.file = text.clone();
                self.point()?;
                self.frr.running = text.clone();
                self.frr.loads.push(text);
                return Ok(Some(Event::FrrApplied));
            }
            Effect::Probe(round) => {
                let kind = match &round {
                    Round::Before { .. } => "before",
                    Round::After { .. } => "after",
                    Round::Restored { .. } => "restored",
                };
                if self.probes_late.contains(&kind) {
                    return Ok(Some(Event::TimedOut));
                }
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

    /// The agent dies: the kernel does the op it was handling of what it owed (its lock
    /// was held; the rest was still queued in the dead process), a running FRR reload
    /// finishes, the disk's unfinished steps are lost with the process.
    pub fn crash_parts(&mut self) {
        if let Some(op) = self.late_kernel.first().cloned() {
            let _ = self.kernel.execute(&op, &self.managed);
        }
        self.late_kernel.clear();
        if let Some(late) = self.late_frr.take() {
            self.frr.file = late.clone();
            self.frr.running = late;
        }
        self.late_disk.clear();
    }
}
