//! Benchmark for `hack/bench.d/20-dataplane.sh` (needs root). Prints TAB-separated rows:
//! area, benchmark, measured, baseline, ratio, goal.
//!
//! 1. Apply 1,000 Layer2 networks (bridge + VXLAN + address each) from scratch in a fresh
//!    namespace, against the same objects created by `ip -batch` in another fresh namespace
//!    (median of `--runs`, default 3). Goal: at most 1.5x the `ip -batch` time.
//! 2. Re-apply the unchanged config. Goal: zero writes, under 50 ms.
//! 3. Change 10 of the 1,000 (gateway address and MTU). Goal: only those networks' ops.
// A benchmark binary: failing loudly is the right reaction to any setup error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Result, bail, ensure};
use netrollout_dataplane::{
    Address, Dataplane, Desired, Link, LinkKind, Mac, Managed, Op, VXLAN_PORT, Vxlan,
};

const NETWORKS: u32 = 1000;
const MAC: Mac = Mac([0x02, 0x54, 0x00, 0x00, 0x00, 0x01]);

fn gateway(n: u32, host: u32) -> String {
    format!("10.{}.{}.{host}/24", n / 256, n % 256)
}

fn desired(mtu_of: impl Fn(u32) -> u32, host_of: impl Fn(u32) -> u32) -> Desired {
    let mut d = Desired::default();
    for n in 1..=NETWORKS {
        let br = format!("l2.{n}");
        d.add_link(Link::new(&br, LinkKind::Bridge).mtu(mtu_of(n)).mac(MAC));
        let vx = Vxlan {
            vni: 100_000 + n,
            local: "192.0.2.1".parse().unwrap(),
            underlay: None,
            port: VXLAN_PORT,
            learning: false,
            neigh_suppress: false,
        };
        d.add_link(
            Link::new(format!("lx.{n}"), LinkKind::Vxlan(vx))
                .mtu(mtu_of(n))
                .master(&br),
        );
        d.addresses.push(Address {
            link: br,
            addr: gateway(n, host_of(n)).parse().unwrap(),
        });
    }
    d
}

/// The same objects as `ip -batch` commands.
fn batch() -> String {
    let mut b = String::new();
    for n in 1..=NETWORKS {
        let _ = writeln!(
            b,
            "link add name l2.{n} address {MAC} mtu 1500 up type bridge"
        );
        let _ = writeln!(
            b,
            "link add name lx.{n} mtu 1500 master l2.{n} up type vxlan id {} local 192.0.2.1 dstport {VXLAN_PORT} nolearning",
            100_000 + n
        );
        let _ = writeln!(b, "addr add {} dev l2.{n}", gateway(n, 1));
    }
    b
}

struct Ns(String);

impl Ns {
    fn new(tag: &str) -> Result<Self> {
        let name = format!("dpb-{tag}-{}", std::process::id());
        let ok = Command::new("ip")
            .args(["netns", "add", &name])
            .status()?
            .success();
        ensure!(ok, "ip netns add {name} failed (the benchmark needs root)");
        Ok(Self(name))
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// CPU time of the whole process (all threads, user and kernel): the kernel's netlink work
/// runs on our threads, so this is the wall time the re-apply would take on an idle machine.
fn cpu_time() -> Result<Duration> {
    use nix::sys::resource::{UsageWho, getrusage};
    let u = getrusage(UsageWho::RUSAGE_SELF)?;
    let us = |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000 + t.tv_usec() as u64;
    Ok(Duration::from_micros(
        us(u.user_time()) + us(u.system_time()),
    ))
}

/// The 1-minute load average, printed with timings: on a busy machine they stretch.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

fn millis(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let runs: usize = std::env::args()
        .skip_while(|a| a != "--runs")
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(3);
    let want = desired(|_| 1500, |_| 1);
    let managed = Managed::new(netrollout_api::MANAGED_PREFIXES)?;
    want.validate(&managed)?;
    let file = tempfile::NamedTempFile::new()?;
    std::fs::write(file.path(), batch())?;

    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let mut last = None;
    let mut keep = Vec::new();
    for run in 0..runs {
        // Tearing down a namespace with 2,000 links holds the kernel's locks for seconds and
        // would be billed to whoever runs next, so all namespaces live until the end.
        let ip_ns = Ns::new(&format!("ip{run}"))?;
        let dp_ns = Ns::new(&format!("dp{run}"))?;
        let dp = Dataplane::in_netns(&dp_ns.0, managed.clone())?;
        let measure_ip = || -> Result<Duration> {
            let t = Instant::now();
            let out = Command::new("ip")
                .args(["-n", &ip_ns.0, "-batch"])
                .arg(file.path())
                .output()?;
            ensure!(
                out.status.success(),
                "ip -batch failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            Ok(t.elapsed())
        };
        // Alternate who goes first, so neither always runs on a warmer kernel.
        if run % 2 == 0 {
            theirs.push(measure_ip()?);
        }
        let t = Instant::now();
        let report = dp.apply(&want).await?;
        ours.push(t.elapsed());
        ensure!(
            report.writes == 3 * NETWORKS as usize,
            "expected 3,000 writes, made {}",
            report.writes
        );
        if run % 2 == 1 {
            theirs.push(measure_ip()?);
        }
        keep.extend(last.replace((dp_ns, dp, ip_ns)));
    }
    let (ours, theirs) = (median(ours), median(theirs));
    let ratio = ours.as_secs_f64() / theirs.as_secs_f64();
    println!(
        "dataplane\tapply 1000 L2 (bridge+vxlan+addr) from scratch\t{}\tip -batch {}\t{ratio:.2}x\t<= 1.5x",
        secs(ours),
        secs(theirs)
    );

    let Some((last_ns, dp, last_ip_ns)) = last else {
        bail!("--runs must be at least 1")
    };
    let (mut times, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let (t, c) = (Instant::now(), cpu_time()?);
        let report = dp.apply(&want).await?;
        times.push(t.elapsed());
        cpu.push(cpu_time()? - c);
        ensure!(
            report.writes == 0,
            "re-apply made {} writes: {:?}",
            report.writes,
            report.ops
        );
    }
    let t = median(times);
    let cpu = median(cpu);
    println!(
        "dataplane\tre-apply unchanged 1000 L2 (observe+diff)\t{}, 0 writes (cpu {}, load avg {})\tapply from scratch {}\t{:.3}x\t0 writes, < 50 ms",
        millis(t),
        millis(cpu),
        load_average(),
        secs(ours),
        t.as_secs_f64() / ours.as_secs_f64()
    );

    let changed: Vec<u32> = (1..=10).map(|i| i * 97).collect();
    let next = desired(
        |n| if changed.contains(&n) { 1400 } else { 1500 },
        |n| if changed.contains(&n) { 254 } else { 1 },
    );
    let t = Instant::now();
    let report = dp.apply(&next).await?;
    let took = t.elapsed();
    let touched = |op: &Op| {
        changed.iter().any(|n| {
            op.object().contains(&format!("l2.{n} "))
                || op.object().ends_with(&format!("l2.{n}"))
                || op.object().ends_with(&format!("lx.{n}"))
        })
    };
    let foreign: Vec<&Op> = report.ops.iter().filter(|op| !touched(op)).collect();
    ensure!(
        foreign.is_empty(),
        "ops outside the 10 changed networks: {foreign:?}"
    );
    // Per network: MTU of bridge and VXLAN, delete and add of the gateway address.
    ensure!(
        report.writes == 40,
        "expected 40 writes, made {}: {:?}",
        report.writes,
        report.ops
    );
    println!(
        "dataplane\tchange 10 of 1000 L2 (mtu + gateway)\t{} ops, all on the 10, {}\tfull apply 3000 ops\t{:.3}x\tonly those ops",
        report.writes,
        millis(took),
        report.writes as f64 / 3000.0
    );
    // The kernel removes the namespaces' 12,000 links after `ip netns del` returns, holding
    // its netlink lock for a minute or two: wait for it, so the next benchmark is not slowed.
    drop((last_ns, dp, last_ip_ns, keep));
    let waited = netrollout_testkit::netns::wait_until_settled(Duration::from_secs(900));
    eprintln!(
        "dataplane-bench: waited {:.1} s for the kernel to finish removing its namespaces",
        waited.as_secs_f64()
    );
    Ok(())
}
