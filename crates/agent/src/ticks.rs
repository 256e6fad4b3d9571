//! A time limit counted in ticks of real waiting, for checks that run while the monotonic
//! clock may jump (a VM paused, a suspend the clock counts): `tokio::time::timeout` fires at
//! once when the clock leaps past its deadline, so a check waiting for an answer at that moment
//! would be reported `no answer within …` although it never had its time, and a probe hold
//! would fail a good change. [`within`] splits the limit into [`TICKS`] sleeps: a jump ends
//! one of them, never the whole limit.

use std::future::Future;
use std::time::{Duration, Instant};

/// Sleeps the limit is split into: a clock jump takes at most one of them.
pub const TICKS: u32 = 10;

/// Runs `fut` until it completes (`Some`) or `limit` has passed as [`TICKS`] successive sleeps
/// of `limit / TICKS` (`None`). Without clock jumps this is `tokio::time::timeout(limit, fut)`;
/// after a jump, the check still has at least `limit * (TICKS - 1) / TICKS` of waiting.
pub async fn within<F: Future>(limit: Duration, fut: F) -> Option<F::Output> {
    within_sleeping(limit, fut, tokio::time::sleep).await
}

/// [`within`] with its sleep given (the tests' clock jumps end one at once).
async fn within_sleeping<F, S, W>(limit: Duration, fut: F, mut sleep: S) -> Option<F::Output>
where
    F: Future,
    S: FnMut(Duration) -> W,
    W: Future<Output = ()>,
{
    let tick = limit / TICKS;
    let mut fut = std::pin::pin!(fut);
    for _ in 0..TICKS {
        tokio::select! {
            biased;
            out = &mut fut => return Some(out),
            () = sleep(tick) => {}
        }
    }
    None
}

/// [`within`] for a blocking wait (a socket read with a read timeout): the limit as [`TICKS`]
/// waits of `limit / TICKS`, each begun when the one before ended; a clock that leaps past a
/// wait's end ends that wait only.
#[derive(Debug)]
pub struct Blocking {
    tick: Duration,
    left: u32,
    end: Instant,
}

impl Blocking {
    /// `limit` from `now`.
    pub fn new(limit: Duration, now: Instant) -> Self {
        let tick = limit / TICKS;
        Self {
            tick,
            left: TICKS,
            end: now + tick,
        }
    }

    /// How long the next wait may block from `now`; `None` once all [`TICKS`] waits are spent.
    /// A wait that ended (or was leapt past) is spent and the next begins at `now`.
    pub fn wait(&mut self, now: Instant) -> Option<Duration> {
        if now >= self.end {
            self.left = self.left.saturating_sub(1);
            self.end = now + self.tick;
        }
        (self.left > 0).then(|| self.end.saturating_duration_since(now))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Instant;

    use super::*;

    const LIMIT: Duration = Duration::from_millis(400);

    /// An answer `after` from now.
    async fn answer(after: Duration) -> &'static str {
        tokio::time::sleep(after).await;
        "answered"
    }

    #[tokio::test]
    async fn a_clock_jump_while_a_check_waits_for_its_answer_does_not_time_it_out() {
        // The clock leaps (a paused VM resumes) right as the check starts waiting: the sleep
        // under way ends at once, as tokio's timers all do after a jump of the clock.
        let mut jumped = false;
        let sleep = |d: Duration| {
            let now = !std::mem::replace(&mut jumped, true);
            async move {
                if !now {
                    tokio::time::sleep(d).await;
                }
            }
        };
        let out = within_sleeping(LIMIT, answer(LIMIT / 2), sleep).await;
        assert_eq!(out, Some("answered"), "the jump timed the check out");
    }

    #[tokio::test]
    async fn a_check_that_never_answers_times_out_after_its_limit() {
        let start = Instant::now();
        let out = within(LIMIT, std::future::pending::<()>()).await;
        assert_eq!(out, None);
        assert!(start.elapsed() >= LIMIT, "{:?}", start.elapsed());
    }

    #[tokio::test]
    async fn a_check_that_answers_within_its_limit_gives_its_answer() {
        assert_eq!(within(LIMIT, answer(LIMIT / 4)).await, Some("answered"));
    }

    #[test]
    fn a_clock_leap_during_a_blocking_wait_spends_one_tick_of_the_limit() {
        let t0 = Instant::now();
        let mut limit = Blocking::new(LIMIT, t0);
        let tick = LIMIT / TICKS;
        assert_eq!(limit.wait(t0), Some(tick));
        // The clock leaps an hour (a paused VM resumes) while the read waits: one tick is spent,
        // the next wait gets a whole tick again.
        let leapt = t0 + Duration::from_secs(3600);
        assert_eq!(
            limit.wait(leapt),
            Some(tick),
            "the leap ended the whole limit"
        );
        // Without further leaps the limit ends after the other ticks of real waiting.
        let mut now = leapt;
        let mut waits = 1;
        while let Some(w) = limit.wait(now) {
            now += w;
            waits += 1;
        }
        assert_eq!(
            waits, TICKS,
            "waits of one tick each, the leapt one included"
        );
    }

    #[test]
    fn a_blocking_wait_that_gets_no_answer_ends_after_its_limit_of_real_waiting() {
        let t0 = Instant::now();
        let mut limit = Blocking::new(LIMIT, t0);
        let mut now = t0;
        while let Some(w) = limit.wait(now) {
            now += w;
        }
        assert_eq!(now - t0, LIMIT);
    }
}
