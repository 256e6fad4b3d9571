//! A time limit counted in ticks of real waiting, for checks that run while the monotonic
//! clock may jump (a VM paused, a suspend the clock counts): `tokio::time::timeout` fires at
//! once when the clock leaps past its deadline, so a check waiting for an answer at that moment
//! would be reported `no answer within …` although it never had its time, and a probe hold
//! would fail a good change. [`within`] splits the limit into [`TICKS`] sleeps: a jump ends
//! one of them, never the whole limit.

use std::future::Future;
use std::time::Duration;

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
}
