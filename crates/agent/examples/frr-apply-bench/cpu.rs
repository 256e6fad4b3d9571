//! The CPU of an apply, split by who spent it: this process (the agent), its waited-for
//! children (vtysh, `frr-reload.py`'s Python), and FRR's zebra, bgpd and (FRR 10) mgmtd, read
//! from /proc; and the timed runs (one, the median of three, a step's median of n).

use std::time::{Duration, Instant};

use netrollout_frr::daemons::Version;

/// The FRR of one bench: its version and pathspace (where its pid files are).
#[derive(Clone, Copy)]
pub struct Frr<'a> {
    pub version: Version,
    pub pathspace: &'a str,
}

/// Ticks (user + system, 10 ms each) of `pid` from /proc; with `children`, those of its
/// waited-for children (vtysh, frr-reload.py) instead.
fn ticks(pid: &str, children: bool) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    let at = if children { 13 } else { 11 };
    fields[at].parse::<u64>().unwrap() + fields[at + 1].parse::<u64>().unwrap()
}

/// CPU ticks so far of: this process, its waited-for children, zebra, bgpd, mgmtd (0 on 8.4).
pub fn split(frr: Frr<'_>) -> [u64; 5] {
    let daemon = |d: &str| {
        std::fs::read_to_string(frr.version.run_dir(frr.pathspace).join(format!("{d}.pid")))
            .map(|pid| ticks(pid.trim(), false))
            .unwrap_or(0)
    };
    [
        ticks("self", false),
        ticks("self", true),
        daemon("zebra"),
        daemon("bgpd"),
        daemon("mgmtd"),
    ]
}

/// CPU time so far of this process, its waited-for children and FRR's daemons.
pub fn total(frr: Frr<'_>) -> Duration {
    Duration::from_millis(split(frr).iter().sum::<u64>() * 10)
}

/// The CPU between two [`split`]s per run, by part, as a row's text.
fn parts(frr: Frr<'_>, before: [u64; 5], after: [u64; 5], runs: u32) -> String {
    let per = |i: usize| (after[i] - before[i]) as f64 * 10.0 / f64::from(runs);
    let mut text = format!(
        "agent {:.0}, vtysh/Python {:.0}, zebra {:.0}, bgpd {:.0}",
        per(0),
        per(1),
        per(2),
        per(3)
    );
    if frr.version != Version::V8_4 {
        text.push_str(&format!(", mgmtd {:.0}", per(4)));
    }
    text.push_str(" ms per run");
    text
}

/// What a timed run took: wall time, CPU in all, CPU by part (text).
pub struct Took {
    pub wall: Duration,
    pub cpu: Duration,
    pub parts: String,
}

/// `f` once.
pub async fn once<Fut>(frr: Frr<'_>, f: impl FnOnce() -> Fut) -> Took
where
    Fut: std::future::Future<Output = ()>,
{
    let before = split(frr);
    let (t, c) = (Instant::now(), total(frr));
    f().await;
    Took {
        wall: t.elapsed(),
        cpu: total(frr) - c,
        parts: parts(frr, before, split(frr), 1),
    }
}

/// Median wall time and CPU of `f` run three times; `f(i)` gets the round.
pub async fn median3<F, Fut>(frr: Frr<'_>, mut f: F) -> Took
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut walls = Vec::new();
    let mut cpus = Vec::new();
    let before = split(frr);
    for i in 0..3 {
        let (t, c) = (Instant::now(), total(frr));
        f(i).await;
        walls.push(t.elapsed());
        cpus.push(total(frr) - c);
    }
    walls.sort();
    cpus.sort();
    Took {
        wall: walls[1],
        cpu: cpus[1],
        parts: parts(frr, before, split(frr), 3),
    }
}

/// One step of an apply, run `n` times on its own: median wall time and the CPU of each part
/// per run, printed as a row.
pub async fn step<F, Fut>(frr: Frr<'_>, label: &str, what: &str, n: u32, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let before = split(frr);
    let mut walls = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        f().await;
        walls.push(t.elapsed());
    }
    walls.sort();
    println!(
        "agent-frr\tstep, {label}: {what} (median of {n}; CPU: {})\t{:.1} ms\t-\t-\treported",
        parts(frr, before, split(frr), n),
        ms(walls[walls.len() / 2])
    );
}

/// Waits until FRR's daemons are idle (under 50 ms of CPU in half a second): what bgpd does
/// after a load (the VRF instances' events) shows in its CPU until then.
pub fn wait_idle(frr: Frr<'_>) {
    let mut idle = total(frr);
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = total(frr);
        if now - idle < Duration::from_millis(50) {
            return;
        }
        idle = now;
    }
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
