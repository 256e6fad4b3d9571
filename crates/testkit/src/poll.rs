//! Waiting from blocking test code (the VM suites, FRR): [`until`] polls a check every half
//! second until it gives a value, says so on stderr, and panics after the deadline. The async
//! counterpart for API objects is `wait::eventually` (feature `kube`).

use std::time::{Duration, Instant};

/// Polls `check` every half second until it returns `Some`; prints `{suite}: ok: {what}` then
/// and returns the value. Panics naming `what` after `secs` seconds.
pub fn until<T>(suite: &str, what: &str, secs: u64, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = check() {
            eprintln!("{suite}: ok: {what}");
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {secs} s: {what}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn until_returns_the_first_value_the_check_gives() {
        let mut calls = 0;
        let got = until("kit", "the third call", 5, || {
            calls += 1;
            (calls == 3).then_some(calls * 10)
        });
        assert_eq!((got, calls), (30, 3));
    }

    #[test]
    #[should_panic(expected = "timed out after 0 s: never")]
    fn until_panics_naming_what_it_waited_for_after_the_deadline() {
        until("kit", "never", 0, || None::<()>);
    }
}
