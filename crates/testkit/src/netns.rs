//! Network namespaces for kernel tests: [`Netns`] is a fresh `ip netns` namespace named
//! `PREFIX-PID-N`, deleted on drop; [`clean_stale`] removes those of test processes that died
//! without cleaning up; [`wait_until_settled`] waits until the kernel has finished removing
//! deleted namespaces (a suite that created many links calls it before it ends). Needs root
//! and iproute2; fails loudly without them.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::cmd::run;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A number unique in this process, for names of namespaces and links.
pub fn next_id() -> u32 {
    COUNTER.fetch_add(1, Ordering::SeqCst)
}

/// A fresh network namespace with `lo` up, deleted on drop.
#[derive(Debug)]
pub struct Netns {
    pub name: String,
}

impl Netns {
    /// Creates `PREFIX-PID-N` (the prefix says which tests own it, e.g. `dpt`).
    pub fn new(prefix: &str) -> Self {
        let name = format!("{prefix}-{}-{}", std::process::id(), next_id());
        Self::named(name)
    }

    /// Creates the namespace `name` (a caller-made unique name).
    pub fn named(name: String) -> Self {
        let out = Command::new("ip")
            .args(["netns", "add", &name])
            .output()
            .expect("run ip (iproute2 needed)");
        assert!(
            out.status.success(),
            "`ip netns add {name}` failed (kernel tests need root): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ns = Self { name };
        ns.ip("link set lo up");
        ns
    }

    /// Runs `ip -n NS ARGS`, asserts success, returns stdout.
    pub fn ip(&self, args: &str) -> String {
        self.tool("ip", args)
    }

    /// Runs `bridge -n NS ARGS`, asserts success, returns stdout.
    pub fn bridge(&self, args: &str) -> String {
        self.tool("bridge", args)
    }

    /// Runs `TOOL -n NS ARGS` (an iproute2 tool), asserts success, returns stdout.
    pub fn tool(&self, tool: &str, args: &str) -> String {
        let mut a = vec!["-n", &self.name];
        a.extend(args.split_whitespace());
        run(tool, &a)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// Removes namespaces named `NS_PREFIX-PID-…` and host links named `LINK_PREFIX PID h …` whose
/// process is gone (a test run killed before its drops ran).
pub fn clean_stale(ns_prefix: &str, link_prefix: &str) {
    let dead = |pid: &str| {
        pid.parse::<u32>()
            .is_ok_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
    };
    let ns_prefix = format!("{ns_prefix}-");
    for line in run("ip", &["netns", "list"]).lines() {
        let name = line.split_whitespace().next().unwrap_or_default();
        if let Some(pid) = name
            .strip_prefix(ns_prefix.as_str())
            .and_then(|r| r.split('-').next())
            && dead(pid)
        {
            let _ = Command::new("ip").args(["netns", "del", name]).status();
        }
    }
    for line in run("ip", &["-br", "link"]).lines() {
        let name = line.split(['@', ' ']).next().unwrap_or_default();
        if let Some(pid) = name
            .strip_prefix(link_prefix)
            .and_then(|r| r.split('h').next())
            && name.contains('h')
            && dead(pid)
        {
            let _ = Command::new("ip")
                .args(["link", "del", name])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// A trivial write that has not been answered after this long means the kernel holds its lock.
const HELD: Duration = Duration::from_millis(500);

/// Removes `ns` and waits until the kernel is seen holding its netlink lock for that removal:
/// a trivial write (the MTU of `lo` in a scratch namespace made beforehand) not answered within
/// 500 ms. `ip netns del` returns before the kernel starts removing the links, so a netlink
/// request made right after it may still pass; a test that needs the lock held (the agent's
/// wait on the kernel) starts its request only once this returns. The unanswered write is left
/// to finish in the background. Returns how long it waited; panics after `limit` (the removal
/// never held the lock for 500 ms: the namespace had too few links for this machine).
pub fn remove_and_wait_until_busy(ns: Netns, limit: Duration) -> Duration {
    let probe = Netns::new("busy");
    let t0 = Instant::now();
    drop(ns);
    let mut mtu = 1500;
    loop {
        assert!(
            t0.elapsed() < limit,
            "the kernel never held its netlink lock for {HELD:?} within {limit:?} of a namespace \
             removal: give the removed namespace more links"
        );
        mtu = if mtu == 1500 { 1400 } else { 1500 };
        let mut write = Command::new("ip")
            .args([
                "-n",
                &probe.name,
                "link",
                "set",
                "lo",
                "mtu",
                &mtu.to_string(),
            ])
            .stdout(Stdio::null())
            .spawn()
            .expect("run ip (iproute2 needed)");
        let sent = Instant::now();
        while sent.elapsed() < HELD {
            if write.try_wait().expect("wait for ip").is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if write.try_wait().expect("wait for ip").is_none() {
            // Held. The write and the scratch namespace end once the kernel answers.
            std::thread::spawn(move || {
                let _ = write.wait();
                drop(probe);
            });
            return t0.elapsed();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Trivial netlink writes in a row, each answered within [`FAST`], that make the kernel settled.
const SETTLED_WRITES: u32 = 5;
/// A trivial netlink write on an idle kernel takes a few milliseconds (an `ip` process start).
const FAST: Duration = Duration::from_millis(50);

/// Waits until the kernel has finished removing the network namespaces deleted before.
///
/// `ip netns del` returns at once; the kernel removes the namespace's links afterwards, in the
/// background, holding its netlink lock (RTNL) the whole time: for a namespace of 3,000 links
/// that is seconds to minutes, during which every netlink write on the machine (another
/// suite's, an agent's) waits. A suite or benchmark that created many links calls this before
/// it ends, so the next one is not slowed by its cleanup. Settled means five trivial writes in
/// a row (the MTU of `lo` in a scratch namespace, 100 ms apart), each answered within 50 ms.
/// Returns how long it waited; panics after `limit`.
pub fn wait_until_settled(limit: Duration) -> Duration {
    let t0 = Instant::now();
    // Creating the namespace waits for the lock too.
    let probe = Netns::new("settle");
    let mut fast = 0;
    let mut mtu = 1500;
    while fast < SETTLED_WRITES {
        assert!(
            t0.elapsed() < limit,
            "the kernel was still busy after {limit:?} (netlink writes slower than {FAST:?}): \
             a namespace removal holds its netlink lock"
        );
        mtu = if mtu == 1500 { 1400 } else { 1500 };
        let t = Instant::now();
        probe.ip(&format!("link set lo mtu {mtu}"));
        fast = if t.elapsed() < FAST { fast + 1 } else { 0 };
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(probe);
    t0.elapsed()
}
