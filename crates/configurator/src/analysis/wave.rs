//! The analysis of one wave, spread over the configurator's passes: the first measurement
//! `initialDelaySeconds` after the pass that first found the wave finished, each check measured
//! once per turn and again one `intervalSeconds` later while it is neither passed nor failed.
//! A pass measures only what is due and returns: nothing waits inside it but a query, so the
//! fleet guard, new inputs and timeouts are handled between two measurements.

use std::future::Future;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use netrollout_api::{AnalysisCheck, AnalysisPhase, CheckResult, RevisionAnalysis};

use super::measure::{Sample, Tries};

/// One check of a revision, named `object/check`.
pub type Named<'a> = (String, &'a AnalysisCheck);

/// Where the analysis of a wave stands.
#[derive(Debug)]
pub struct Wave {
    revision: String,
    nodes: usize,
    /// No measurement before this.
    next_at: Instant,
    /// The check measured next (the ones before it passed).
    check: usize,
    tries: Tries,
    results: Vec<CheckResult>,
    /// The verdict reached, and whether it was written.
    verdict: Option<(RevisionAnalysis, bool)>,
}

impl Wave {
    /// The analysis of `revision` with `nodes` nodes on it, its wave seen finished at `now`:
    /// first measured `delay` later.
    pub fn new(revision: &str, nodes: usize, now: Instant, delay: Duration) -> Self {
        Self {
            revision: revision.to_string(),
            nodes,
            next_at: now + delay,
            check: 0,
            tries: Tries::default(),
            results: Vec::new(),
            verdict: None,
        }
    }

    /// How long until the next measurement, from `now` (`None`: due, or a verdict was reached).
    pub fn wait_left(&self, now: Instant) -> Option<Duration> {
        let left = self.next_at.saturating_duration_since(now);
        (self.verdict.is_none() && !left.is_zero()).then_some(left)
    }

    /// Measures what is due at `now` with `query`: the current check once and, each time one
    /// passes, the next at once. Returns the verdict once every check passed or one failed,
    /// until it is [`written`](Self::written); `None` while a check is to be measured again
    /// (one `intervalSeconds` after `now`) or nothing is due yet.
    pub async fn advance<Q, F>(
        &mut self,
        checks: &[Named<'_>],
        now: Instant,
        mut query: Q,
    ) -> Option<RevisionAnalysis>
    where
        Q: FnMut(String) -> F,
        F: Future<Output = Sample>,
    {
        if let Some((verdict, written)) = &self.verdict {
            return (!written).then(|| verdict.clone());
        }
        if now < self.next_at {
            return None;
        }
        while let Some((name, check)) = checks.get(self.check) {
            let sample = query(check.query.clone()).await;
            let Some(outcome) = self.tries.judge(check, sample) else {
                self.next_at = now + Duration::from_secs(u64::from(check.interval_seconds));
                return None;
            };
            self.results.push(CheckResult {
                name: name.clone(),
                verdict: if outcome.passed { "Passed" } else { "Failed" }.into(),
                value: outcome.value.map(|v| v.to_string()),
                message: outcome.message.clone(),
            });
            if !outcome.passed {
                let failed = format!("check {name} ({}) {}", check.query, outcome.message);
                return Some(self.reach(Some(failed)));
            }
            self.check += 1;
            self.tries = Tries::default();
        }
        Some(self.reach(None))
    }

    /// The verdict was written: it is not returned again.
    pub fn written(&mut self) {
        if let Some((_, written)) = &mut self.verdict {
            *written = true;
        }
    }

    fn reach(&mut self, failed: Option<String>) -> RevisionAnalysis {
        let (revision, nodes) = (&self.revision, self.nodes);
        let (phase, message) = match failed {
            Some(f) => (
                AnalysisPhase::Failed,
                format!("with {nodes} node(s) on revision {revision}: {f}"),
            ),
            None => (
                AnalysisPhase::Passed,
                format!(
                    "every check passed with {nodes} node(s) on revision {revision} ({}); the rollout goes on",
                    (self.results.iter())
                        .map(|r| format!("{} = {}", r.name, r.value.as_deref().unwrap_or("?")))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        };
        let verdict = RevisionAnalysis {
            phase,
            nodes: i32::try_from(nodes).unwrap_or(i32::MAX),
            message,
            checks: self.results.clone(),
            time: None,
            sequence: None,
        };
        self.verdict = Some((verdict.clone(), false));
        verdict
    }
}

/// The wave being analysed, if any: kept between passes, forgotten whenever no analysis is
/// due (a wave that ends with the same node count as an earlier one, after a retry, starts
/// afresh). A new leader starts afresh too: its wait is longer, never shorter.
#[derive(Debug, Default)]
pub struct Waves(Mutex<Option<Wave>>);

impl Waves {
    /// Takes the analysis of `revision` with `nodes` on it out (a new one, made by `new`, when
    /// another wave was kept); give it back with [`put`](Self::put).
    pub fn take(&self, revision: &str, nodes: usize, new: impl FnOnce() -> Wave) -> Wave {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match kept.take() {
            Some(w) if w.revision == revision && w.nodes == nodes => w,
            _ => new(),
        }
    }

    /// Keeps `wave` for the next pass.
    pub fn put(&self, wave: Wave) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(wave);
    }

    /// No analysis is due.
    pub fn forget(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    fn check(name: &str, interval: u32, failure_limit: u32) -> AnalysisCheck {
        AnalysisCheck {
            name: name.into(),
            query: format!("q_{name}"),
            success_condition: "result == 0".into(),
            interval_seconds: interval,
            inconclusive_limit: 3,
            failure_limit,
            initial_delay_seconds: 0,
        }
    }

    /// Advances `wave` at `now` with the answers in `samples` (by query), counting queries.
    fn at(
        wave: &mut Wave,
        checks: &[Named<'_>],
        now: Instant,
        samples: &RefCell<Vec<(&str, f64)>>,
        asked: &RefCell<Vec<String>>,
    ) -> Option<RevisionAnalysis> {
        futures::executor::block_on(wave.advance(checks, now, |q| {
            asked.borrow_mut().push(q.to_string());
            let mut s = samples.borrow_mut();
            let i = s
                .iter()
                .position(|(name, _)| *name == q)
                .expect("an answer");
            let (_, v) = s.remove(i);
            async move { Sample::Value(v) }
        }))
    }

    #[test]
    fn a_wave_is_measured_after_the_initial_delay_and_again_after_the_interval_never_in_between() {
        let (a, b) = (check("a", 10, 1), check("b", 5, 0));
        let checks = [("t/a".to_string(), &a), ("t/b".to_string(), &b)];
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut wave = Wave::new("r", 2, t0, s(30));
        let samples = RefCell::new(vec![("q_a", 3.0), ("q_a", 0.0), ("q_b", 0.0)]);
        let asked = RefCell::new(Vec::new());
        // Before the delay: nothing is queried.
        assert_eq!(wave.wait_left(t0 + s(10)), Some(s(20)));
        assert!(at(&mut wave, &checks, t0 + s(10), &samples, &asked).is_none());
        assert!(asked.borrow().is_empty());
        // At the delay: a fails once (failureLimit 1), measured again 10 s later, not before.
        assert!(at(&mut wave, &checks, t0 + s(30), &samples, &asked).is_none());
        assert_eq!(wave.wait_left(t0 + s(35)), Some(s(5)));
        assert!(at(&mut wave, &checks, t0 + s(35), &samples, &asked).is_none());
        assert_eq!(asked.borrow().len(), 1);
        // Then a passes and b is measured at once: every check passed.
        let v = at(&mut wave, &checks, t0 + s(40), &samples, &asked).expect("a verdict");
        assert_eq!(*asked.borrow(), ["q_a", "q_a", "q_b"]);
        assert_eq!(v.phase, AnalysisPhase::Passed);
        assert_eq!(v.nodes, 2);
        assert!(v.message.contains("(t/a = 0, t/b = 0)"), "{}", v.message);
        // The verdict is returned until written, then never again, and nothing is measured.
        assert!(at(&mut wave, &checks, t0 + s(41), &samples, &asked).is_some());
        wave.written();
        assert!(at(&mut wave, &checks, t0 + s(50), &samples, &asked).is_none());
        assert_eq!(asked.borrow().len(), 3);
    }

    #[test]
    fn the_first_failing_check_ends_the_analysis_naming_it() {
        let (a, b) = (check("a", 10, 0), check("b", 5, 0));
        let checks = [("t/a".to_string(), &a), ("t/b".to_string(), &b)];
        let t0 = Instant::now();
        let mut wave = Wave::new("r", 1, t0, Duration::ZERO);
        let samples = RefCell::new(vec![("q_a", 2.0)]);
        let asked = RefCell::new(Vec::new());
        let v = at(&mut wave, &checks, t0, &samples, &asked).expect("a verdict");
        assert_eq!(v.phase, AnalysisPhase::Failed);
        assert!(
            v.message.starts_with(
                "with 1 node(s) on revision r: check t/a (q_a) result 2 does not meet `result == 0`"
            ),
            "{}",
            v.message
        );
        assert_eq!(*asked.borrow(), ["q_a"]);
    }

    #[test]
    fn the_kept_wave_is_this_waves_only() {
        let waves = Waves::default();
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let new = |n| move || Wave::new("r", n, t0, s(30));
        waves.put(waves.take("r", 1, new(1)));
        // The same wave later: the same wait.
        let w = waves.take("r", 1, || Wave::new("r", 1, t0 + s(20), s(30)));
        assert_eq!(w.wait_left(t0 + s(20)), Some(s(10)));
        waves.put(w);
        // The next wave (more nodes) starts afresh; so does the same count once forgotten.
        let w = waves.take("r", 3, || Wave::new("r", 3, t0 + s(40), s(30)));
        assert_eq!(w.wait_left(t0 + s(40)), Some(s(30)));
        waves.put(w);
        waves.forget();
        let w = waves.take("r", 3, || Wave::new("r", 3, t0 + s(80), s(30)));
        assert_eq!(w.wait_left(t0 + s(80)), Some(s(30)));
    }
}
