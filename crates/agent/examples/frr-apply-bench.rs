//! FRR apply benchmark: real FRR 8.4 (zebra + bgpd, pathspace `-N`) in a fresh network
//! namespace per size, a config of N VRFs (arguments; default 50 and 500) with
//! import/export/aggregate/community policies rendered by `netrollout-frr`. FRR starts with that
//! config as its startup file (not timed). Measured: the agent's apply (FRR's running config read
//! over the daemons' vty sockets beside the `vtysh -m -f` check, its diff, one `vtysh -f`, the
//! running config read back over the sockets) of the config with one VRF's export and community
//! changed, by a fresh agent (a text it never checked); the same by one agent going back and
//! forth between texts it checked before (their parse kept: no check); the first apply of an
//! agent that just started, when FRR already runs the text (0 FRR writes); the no-op apply of
//! the text it loaded last (0 FRR writes, no FRR call); and each step of an apply on its own
//! (wall, and the CPU of the bench, its vtysh children, zebra and bgpd). Baseline (same run,
//! same FRR): the same apply through `frr-reload.py`, as the agent did before its diff. Changes
//! are timed as the median of three, alternating the direction.
//! Needs root and FRR. Prints tab-separated rows: area, benchmark, measured, baseline, ratio, goal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use netrollout_agent::frr::{Frr, FrrSettings};
use netrollout_api::{NodeConfig, PrefixAction, PrefixItem, VrfConfig, VrfPolicy};
use netrollout_frr::daemons::{Log, Start};
use netrollout_testkit::cmd::run;

const BASE: &str = "frr defaults datacenter\nhostname bench\n!\nrouter bgp 65000\n \
    bgp router-id 192.0.2.1\nexit\n!\n";

fn config(vrfs: u32, changed: bool) -> NodeConfig {
    let item = |cidr: String| PrefixItem {
        cidr,
        seq: None,
        ge: None,
        le: Some(28),
        action: PrefixAction::Permit,
    };
    NodeConfig {
        vrfs: (0..vrfs)
            .map(|i| {
                let bump = u32::from(changed && i == 7);
                VrfConfig {
                    name: format!("t{i}"),
                    table_id: 100 + i,
                    vrf_interface: format!("vr.t{i}"),
                    veth_default_interface: format!("vd.t{i}"),
                    veth_vrf_interface: format!("vv.t{i}"),
                    policies: vec![VrfPolicy {
                        source: format!("t{i}"),
                        seq: 10,
                        // Valid addresses for any count: 128 VRFs per /16 of exports.
                        import: vec![item(format!("10.{}.{}.0/24", i / 256, i % 256))],
                        export: vec![item(format!(
                            "172.{}.{}.0/24",
                            16 + i / 128,
                            (i % 128) * 2 + bump
                        ))],
                        aggregate: vec![format!("172.{}.{}.0/23", 16 + i / 128, (i % 128) * 2)],
                        communities: vec![format!("65000:{}", 100 + i + bump)],
                    }],
                    ..Default::default()
                }
            })
            .collect(),
        ..Default::default()
    }
}

fn settings(dir: &Path, ns: &str) -> FrrSettings {
    FrrSettings {
        base_config: dir.join("base.conf"),
        config: dir.join("frr.conf"),
        pathspace: Some(ns.to_string()),
        vty_socket: None,
        asn: None,
        // Differs from the base's 192.0.2.1: VRFs peer with the default VRF over iBGP.
        router_id: Some("192.0.2.101".parse().unwrap()),
        vtep_ip: None,
        reload_script: "/usr/lib/frr/frr-reload.py".into(),
        bindir: "/usr/bin".into(),
        rundir: dir.to_path_buf(),
    }
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

/// CPU ticks so far of (this process, its waited-for children (vtysh, Python), zebra, bgpd in
/// `ns`).
fn cpu_split(ns: &str) -> [u64; 4] {
    let daemon = |d: &str| {
        std::fs::read_to_string(format!("/var/run/frr/{ns}/{d}.pid"))
            .map(|pid| ticks(pid.trim(), false))
            .unwrap_or(0)
    };
    [
        ticks("self", false),
        ticks("self", true),
        daemon("zebra"),
        daemon("bgpd"),
    ]
}

/// CPU time so far of this process, its waited-for children and FRR's zebra and bgpd in `ns`.
fn cpu(ns: &str) -> Duration {
    Duration::from_millis(cpu_split(ns).iter().sum::<u64>() * 10)
}

/// One step of an apply, run `n` times on its own: median wall time and the CPU of each part
/// per run (the bench process, its children, zebra, bgpd), printed as a row.
async fn step<F, Fut>(ns: &str, vrfs: u32, what: &str, n: u32, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let before = cpu_split(ns);
    let mut walls = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        f().await;
        walls.push(t.elapsed());
    }
    let after = cpu_split(ns);
    walls.sort();
    let per = |i: usize| (after[i] - before[i]) as f64 * 10.0 / f64::from(n);
    println!(
        "agent-frr\tstep, {vrfs} VRFs: {what} (median of {n}; CPU per run: agent {:.0} ms, vtysh/Python {:.0} ms, zebra {:.0} ms, bgpd {:.0} ms)\t{:.1} ms\t-\t-\treported",
        per(0),
        per(1),
        per(2),
        per(3),
        ms(walls[walls.len() / 2])
    );
}

/// Median wall time and CPU of `f` run three times; `f(i)` gets the round.
async fn median3<F, Fut>(ns: &str, mut f: F) -> (Duration, Duration, String)
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut walls = Vec::new();
    let mut cpus = Vec::new();
    let before = cpu_split(ns);
    for i in 0..3 {
        let (t, c) = (Instant::now(), cpu(ns));
        f(i).await;
        walls.push(t.elapsed());
        cpus.push(cpu(ns) - c);
    }
    let after = cpu_split(ns);
    walls.sort();
    cpus.sort();
    let per = |i: usize| (after[i] - before[i]) as f64 * 10.0 / 3.0;
    let split = format!(
        "agent {:.0}, vtysh/Python {:.0}, zebra {:.0}, bgpd {:.0} ms per run",
        per(0),
        per(1),
        per(2),
        per(3)
    );
    (walls[1], cpus[1], split)
}

/// How long FRR may take to load a size's config (`FRR_BENCH_LOAD_TIMEOUT`, seconds; 600).
fn load_timeout() -> Duration {
    let secs = std::env::var("FRR_BENCH_LOAD_TIMEOUT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    Duration::from_secs(secs)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn bench(vrfs: u32) {
    let ns = format!("frrbench-{}-{vrfs}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(dir.path().join("base.conf"), BASE).unwrap();
    let s = settings(dir.path(), &ns);
    let probe = Frr::new(s.clone()).unwrap();
    let full = probe
        .full(&probe.managed(&config(vrfs, false)).unwrap())
        .unwrap();
    let changed = probe
        .full(&probe.managed(&config(vrfs, true)).unwrap())
        .unwrap();
    assert_ne!(full, changed);
    run("ip", &["netns", "add", &ns]);
    run("ip", &["-n", &ns, "link", "set", "lo", "up"]);
    std::fs::write(dir.path().join("frr.conf"), &full).unwrap();
    let (t, c) = (Instant::now(), cpu(&ns));
    let conf = dir.path().join("frr.conf");
    let started = Start {
        config: Some(&conf),
        log: Log::Syslog,
        timeout: load_timeout(),
        ..Start::new(&ns, &ns)
    }
    .try_start();
    let daemons = match started {
        Ok(d) => d,
        Err(e) => {
            println!(
                "agent-frr\tFRR start with {vrfs} VRFs as its startup file\tnot loaded within {:.0} s\t-\t-\treported",
                t.elapsed().as_secs_f64()
            );
            eprintln!("{vrfs} VRFs: {e}");
            let _ = std::process::Command::new("ip")
                .args(["netns", "del", &ns])
                .status();
            return;
        }
    };
    // bgpd reads its startup file before it answers; what it does after (the VRF instances'
    // events) shows in its CPU until it is idle.
    let loaded = t.elapsed();
    let mut idle = cpu(&ns);
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = cpu(&ns);
        if now - idle < Duration::from_millis(50) {
            break;
        }
        idle = now;
    }
    println!(
        "agent-frr\tFRR start with {vrfs} VRFs as its startup file (zebra + bgpd CPU {:.1} s until idle)\t{:.1} s\t-\t-\treported",
        (idle - c).as_secs_f64(),
        loaded.as_secs_f64()
    );

    let (full, changed) = (&full, &changed);
    // One changed VRF, there and back: the agent's diff, then frr-reload.py.
    let text = |i: usize| if i.is_multiple_of(2) { changed } else { full };
    let (diff, diff_cpu, diff_split) = median3(&ns, |i| {
        let s = s.clone();
        async move {
            // A new Frr each time, as a text never checked before: its memory of the loaded text
            // would make the next one a no-op, and it keeps FRR's parse of the texts it checked.
            let frr = Frr::new(s).unwrap();
            assert_eq!(frr.apply(text(i)).await.unwrap(), 1);
        }
    })
    .await;
    let (script, script_cpu, script_split) = median3(&ns, |i| {
        let s = s.clone();
        async move {
            let frr = Frr::new(s).unwrap();
            assert_eq!(frr.apply_with_reload_script(text(i + 1)).await.unwrap(), 1);
        }
    })
    .await;
    // FRR runs `full` now. An agent that just started applies it: nothing to change.
    let (fresh, fresh_cpu, _) = median3(&ns, |_| {
        let s = s.clone();
        async move {
            let frr = Frr::new(s).unwrap();
            assert_eq!(frr.apply(full).await.unwrap(), 0);
        }
    })
    .await;
    let (fresh_script, fresh_script_cpu, _) = median3(&ns, |_| {
        let s = s.clone();
        async move {
            let frr = Frr::new(s).unwrap();
            frr.apply_with_reload_script(full).await.unwrap();
        }
    })
    .await;
    let frr = Frr::new(s.clone()).unwrap();
    frr.apply(full).await.unwrap();
    let t = Instant::now();
    let noop_writes = frr.apply(full).await.unwrap();
    let noop = t.elapsed();
    assert_eq!(noop_writes, 0);
    // One agent process applying texts it checked before (a change and its undo, a restore):
    // FRR's parse of each is kept, so only the script starts a vtysh.
    assert_eq!(frr.apply(changed).await.unwrap(), 1);
    assert_eq!(frr.apply(full).await.unwrap(), 1);
    let (kept, kept_cpu, kept_split) = median3(&ns, |i| {
        let frr = &frr;
        async move {
            assert_eq!(frr.apply(text(i)).await.unwrap(), 1);
        }
    })
    .await;
    assert_eq!(frr.apply(full).await.unwrap(), 1);
    assert_eq!(frr.vty_fallbacks(), 0, "FRR was read with vtysh");
    assert_eq!(frr.fallbacks(), 0, "an apply fell back to frr-reload.py");

    // Where an apply's time goes, step by step, each on its own (FRR runs `full`).
    let file = dir.path().join("changed.conf");
    std::fs::write(&file, changed).unwrap();
    let file = file.to_str().unwrap();
    step(
        &ns,
        vrfs,
        "vtysh start (`vtysh -c 'show version'`)",
        5,
        || async {
            frr.vtysh(&["-c", "show version"]).await.unwrap();
        },
    )
    .await;
    step(
        &ns,
        vrfs,
        "the check, FRR's parse (`vtysh -m -f`)",
        5,
        || async {
            frr.vtysh(&["-m", "-f", file]).await.unwrap();
        },
    )
    .await;
    step(
        &ns,
        vrfs,
        "running config read by vtysh (`show daemons`, `show running-config`), before",
        5,
        || async {
            frr.vtysh(&["-c", "show daemons", "-c", "show running-config no-header"])
                .await
                .unwrap();
        },
    )
    .await;
    step(
        &ns,
        vrfs,
        "running config read over the vty sockets",
        5,
        || async {
            frr.running_config().await.unwrap();
        },
    )
    .await;
    step(
        &ns,
        vrfs,
        "zebra and bgpd answering (`enable` over the vty sockets)",
        5,
        || async {
            frr.require_running().await.unwrap();
        },
    )
    .await;
    step(&ns, vrfs, "the diff of the two texts (pure)", 5, || async {
        let (a, b) = (
            netrollout_agent::frr::read_as_diff(changed),
            netrollout_agent::frr::read_as_diff(full),
        );
        assert_ne!(a, b);
    })
    .await;
    assert_eq!(frr.vty_fallbacks(), 0, "FRR was read with vtysh");
    drop(daemons);
    let _ = std::process::Command::new("ip")
        .args(["netns", "del", &ns])
        .status();

    let goal = if vrfs <= 50 { "< 200 ms" } else { "< 1 s" };
    println!(
        "agent-frr\tapply 1 changed VRF of {vrfs} (agent's diff; CPU {:.0} ms: {diff_split})\t{:.0} ms\t{:.0} ms (frr-reload.py; CPU {:.0} ms: {script_split})\t{:.2}x\t{goal}",
        ms(diff_cpu),
        ms(diff),
        ms(script),
        ms(script_cpu),
        ms(diff) / ms(script)
    );
    println!(
        "agent-frr\tfirst apply after a restart, FRR runs the text, {vrfs} VRFs (0 FRR writes; CPU {:.0} ms)\t{:.0} ms\t{:.0} ms (frr-reload.py; CPU {:.0} ms)\t{:.2}x\t0 writes",
        ms(fresh_cpu),
        ms(fresh),
        ms(fresh_script),
        ms(fresh_script_cpu),
        ms(fresh) / ms(fresh_script)
    );
    println!(
        "agent-frr\tapply 1 changed VRF of {vrfs}, texts this agent checked before (its parse kept; CPU {:.0} ms: {kept_split})\t{:.0} ms\t{:.0} ms (frr-reload.py; CPU {:.0} ms)\t{:.2}x\t{goal}",
        ms(kept_cpu),
        ms(kept),
        ms(script),
        ms(script_cpu),
        ms(kept) / ms(script)
    );
    println!(
        "agent-frr\tno-op apply of the loaded text, {vrfs} VRFs ({noop_writes} FRR writes)\t{:.3} ms\t{:.0} ms (frr-reload.py)\t{:.4}x\t0 writes",
        ms(noop),
        ms(fresh_script),
        ms(noop) / ms(fresh_script)
    );
}

#[tokio::main]
async fn main() {
    let sizes: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("arguments: VRF counts, e.g. 50 500"))
        .collect();
    for vrfs in if sizes.is_empty() {
        vec![50, 500]
    } else {
        sizes
    } {
        bench(vrfs).await;
    }
}
