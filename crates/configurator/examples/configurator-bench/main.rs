//! The configurator benchmark (`hack/bench.d/70-configurator.sh`): simulated nodes behind the
//! in-process lab API server, agents that take 200 ms each, the real configurator binary.
//! Three rollouts of a changed input (the first creates every node's config, the next two
//! change it). Prints hack/bench.sh rows (tab-separated): the median wall time of the three
//! against the ideal ceil(nodes / limit) × 0.2 s (with the fastest and slowest), API writes per
//! node and rollout, the configurator's and the bench process's CPU time per rollout, passes per
//! second and CPU per pass, the configurator's peak RSS, and the time from a changed input to
//! the first dispatch.
//!
//! Every node's config holds `BENCH_VRFS` VRFs and as many layer-2 networks (default 20 each;
//! see `inputs.rs` for what each holds) besides the routing table the rollouts
//! change, as a node of a real fleet holds tens of VRFs: every node-config write, watch event
//! and response then carries a config of real size. The VRFs are applied before the configurator starts, and its
//! first revision (the VRFs alone, creating every node's config) rolls out before the measured
//! rollouts, so all three measured rollouts change every node's config. `BENCH_VRFS=0` gives
//! the configs of one routing table only, and then the first measured rollout creates them.
//!
//! `BENCH_NODES` sets the node count (default 1,000), `BENCH_LIMIT` the update limit (default
//! `50`; `5%` of 10,000 is 500), `BENCH_WALL_GOAL` the wall-time goal as a ratio to the ideal
//! (default 1.1; `-` for a row shown for comparison only), `BENCH_STRATEGY` the rollout strategy
//! (`window`, the configurator's default, or `waves`; it is
//! named in the rows); `BENCH_LATENCY_MS` the simulated agents' apply time (default 200);
//! `BENCH_RSS_GOAL_MIB` the configurator's peak-RSS goal (default 250); `BENCH_TIMEOUT_S` how
//! long one rollout may take before the bench gives up (default 120; a loaded machine needs
//! more at 65,000 nodes); `BENCH_ARGS` adds configurator flags (e.g. `--debounce=1ms`) for
//! experiments.
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Stdio;
use std::str::FromStr;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use futures::StreamExt;
use kube::api::{Api, PostParams};
use netrollout_api::{
    Layer2NetworkConfiguration, NetworkConfigRevision, RevisionPhase, VRFRouteConfiguration,
};
use netrollout_testkit::apiserver::{LabApi, install_netrollout};
use netrollout_testkit::objects::{add_node, apply_table};

mod inputs;

use inputs::{layer2, vrf};

// The simulated agents are the test kit's, shared with the end-to-end tests.
use netrollout_testkit::fake_agents as agents;

/// The simulated agents' apply time unless `BENCH_LATENCY_MS` says otherwise.
const DEFAULT_LATENCY_MS: u64 = 200;
/// The configurator's peak-RSS goal unless `BENCH_RSS_GOAL_MIB` says otherwise.
const DEFAULT_RSS_GOAL_MIB: f64 = 250.0;
/// VRFs in every node's config unless `BENCH_VRFS` says otherwise.
const DEFAULT_VRFS: usize = 0;
/// Nodes created at once in the setup.
const SETUP_CONCURRENCY: usize = 32;

/// The lab API server binary's allocator: this process is the lab API server (and the
/// simulated agents). The configurator binary keeps the system allocator.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let count: usize = std::env::var("BENCH_NODES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let limit_flag = std::env::var("BENCH_LIMIT").unwrap_or_else(|_| "50".into());
    let limit = netrollout_rollout::UpdateLimit::from_str(&limit_flag)
        .map_err(|e| anyhow::anyhow!("BENCH_LIMIT={limit_flag}: {e}"))?
        .resolve(count);
    // A ratio, or `-` for a row shown for comparison only.
    let wall_goal = std::env::var("BENCH_WALL_GOAL").unwrap_or_else(|_| "1.1".into());
    let wall_goal = match wall_goal.as_str() {
        "-" => "-".to_string(),
        g => format!(
            "<= {}x",
            g.parse::<f64>().context("BENCH_WALL_GOAL: a ratio or -")?
        ),
    };
    let strategy = std::env::var("BENCH_STRATEGY").unwrap_or_else(|_| "window".into());
    let latency = Duration::from_millis(match std::env::var("BENCH_LATENCY_MS") {
        Ok(ms) => ms.parse().context("BENCH_LATENCY_MS: milliseconds")?,
        Err(_) => DEFAULT_LATENCY_MS,
    });
    let rss_goal: f64 = match std::env::var("BENCH_RSS_GOAL_MIB") {
        Ok(mib) => mib.parse().context("BENCH_RSS_GOAL_MIB: MiB")?,
        Err(_) => DEFAULT_RSS_GOAL_MIB,
    };
    let vrfs: usize = match std::env::var("BENCH_VRFS") {
        Ok(n) => n.parse().context("BENCH_VRFS: a number of VRFs")?,
        Err(_) => DEFAULT_VRFS,
    };
    let lab = LabApi::start().await;
    let kubeconfig = lab.kubeconfig();
    let client = lab.client.clone();
    setup(&client, count, vrfs).await?;
    let agents = agents::Agents::start(client.clone(), agents::healthy(latency));

    let metrics_port = free_port()?;
    let bin = binary()?;
    let log_file = match std::env::var_os("BENCH_LOG_FILE") {
        Some(path) => Some(std::fs::File::create(path)?),
        None => None,
    };
    let mut child = tokio::process::Command::new(&bin)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args([
            format!("--update-limit={limit_flag}"),
            format!("--rollout-strategy={strategy}"),
            format!("--metrics-addr=127.0.0.1:{metrics_port}"),
            "--health-addr=127.0.0.1:0".into(),
            "--log-format=json".into(),
        ])
        .args(
            std::env::var("BENCH_ARGS")
                .unwrap_or_default()
                .split_whitespace(),
        )
        .env(
            "RUST_LOG",
            std::env::var("BENCH_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdout(match &log_file {
            Some(f) => Stdio::from(f.try_clone()?),
            None => Stdio::null(),
        })
        // The configurator logs to stderr.
        .stderr(match log_file {
            Some(f) => Stdio::from(f),
            None => Stdio::inherit(),
        })
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start {}", bin.display()))?;
    let pid = child.id().context("no pid")?;
    let own = std::process::id();

    // Three rollouts of a changed input: the first creates every node's config, the next two
    // change it. Each one's wall time runs from the input being applied to its revision
    // Succeeded; the wall row gives their median (single runs on this 2-core machine move by
    // up to ~15 %), the other rows their totals per rollout. The second also measures the
    // time from the changed input to its first dispatch.
    let ncrs: Api<NetworkConfigRevision> = Api::all(client.clone());
    wait_for_lease(&client).await?;
    // With VRFs, the configurator's first revision holds them alone and creates every node's
    // config: not measured.
    let warm_up = i64::from(vrfs > 0);
    if warm_up > 0 {
        wait_succeeded(&ncrs, 1).await?;
    }
    let passes_before = metric(metrics_port, "netrollout_configurator_passes_total").await?;
    let plan_before = metric(metrics_port, "netrollout_configurator_plan_seconds_total").await?;
    let writes_before = metric(metrics_port, "netrollout_configurator_api_writes_total").await?;
    let cpu_before = cpu_seconds(pid)?;
    let own_before = cpu_seconds(own)?;
    let mut walls = vec![];
    let mut first = None;
    for (sequence, table) in [(1, 100), (2, 101), (3, 102)] {
        let started = Instant::now();
        set_table(&client, table).await?;
        if sequence == 2 {
            let revisions = usize::try_from(2 + warm_up)?;
            first = Some(first_dispatch(&agents, started, revisions).await?);
        }
        wait_succeeded(&ncrs, sequence + warm_up).await?;
        walls.push(started.elapsed().as_secs_f64());
    }
    let rollouts = walls.len() as f64;
    let writes =
        metric(metrics_port, "netrollout_configurator_api_writes_total").await? - writes_before;
    let passes =
        metric(metrics_port, "netrollout_configurator_passes_total").await? - passes_before;
    let planning =
        metric(metrics_port, "netrollout_configurator_plan_seconds_total").await? - plan_before;
    let cpu = cpu_seconds(pid)? - cpu_before;
    let own_cpu = cpu_seconds(own)? - own_before;
    let rss = peak_rss_mib(pid)?;
    let first = first.context("no second rollout")?;
    let max_in_flight = agents.max_in_flight();
    child.kill().await?;
    lab.server.shutdown().await?;

    let fleet = format!("{count} nodes, {vrfs} VRFs, {strategy}");
    let waves = count.div_ceil(limit) as f64;
    let ideal = waves * latency.as_secs_f64();
    let per_node = writes / rollouts / count as f64;
    let all_walls: f64 = walls.iter().sum();
    walls.sort_by(f64::total_cmp);
    let median = walls[walls.len() / 2];
    let (fastest, slowest) = (walls[0], walls[walls.len() - 1]);
    row(
        &format!(
            "rollout {count} nodes, limit {limit_flag}, {strategy}, {}ms agents (wall, median of 3)",
            latency.as_millis()
        ),
        &format!("{median:.2}s ({fastest:.2}-{slowest:.2}s)"),
        &format!("{ideal:.2}s ideal"),
        median / ideal,
        &wall_goal,
    );
    row(
        &format!("API writes per node and rollout ({fleet})"),
        &format!("{per_node:.2}"),
        "3 (goal)",
        per_node / 3.0,
        "<= 3",
    );
    row(
        &format!("configurator CPU time per rollout ({fleet})"),
        &format!("{:.2}s", cpu / rollouts),
        &format!("{:.2}s wall", all_walls / rollouts),
        cpu / all_walls,
        "-",
    );
    row(
        &format!("lab API server + simulated agents CPU time per rollout ({fleet})"),
        &format!("{:.2}s", own_cpu / rollouts),
        &format!("{:.2}s wall", all_walls / rollouts),
        own_cpu / all_walls,
        "-",
    );
    row(
        &format!("configurator passes per second ({fleet})"),
        &format!("{:.0}/s", passes / all_walls),
        &format!("{passes:.0} passes"),
        f64::NAN,
        "-",
    );
    row(
        &format!("configurator CPU per pass ({fleet})"),
        &format!("{:.2}ms", cpu * 1000.0 / passes.max(1.0)),
        "-",
        f64::NAN,
        "-",
    );
    row(
        &format!("configurator fleet update + planning per pass ({fleet})"),
        &format!("{:.3}ms", planning * 1000.0 / passes.max(1.0)),
        "2ms (goal)",
        planning * 1000.0 / passes.max(1.0) / 2.0,
        "<= 2ms",
    );
    row(
        &format!("configurator peak RSS ({fleet})"),
        &format!("{rss:.1}MiB"),
        &format!("{rss_goal:.0}MiB (goal)"),
        rss / rss_goal,
        &format!("< {rss_goal:.0}MiB"),
    );
    row(
        &format!("input change -> first dispatch ({fleet})"),
        &format!("{}ms", first.as_millis()),
        "200ms (goal)",
        first.as_secs_f64() / 0.2,
        "< 200ms",
    );
    row(
        &format!("max nodes in flight ({fleet})"),
        &max_in_flight.to_string(),
        &limit.to_string(),
        max_in_flight as f64 / limit as f64,
        "<= 1.0x",
    );
    Ok(())
}

fn row(bench: &str, measured: &str, baseline: &str, ratio: f64, goal: &str) {
    let ratio = if ratio.is_nan() {
        "-".to_string()
    } else {
        format!("{ratio:.2}x")
    };
    println!("configurator\t{bench}\t{measured}\t{baseline}\t{ratio}\t{goal}");
}

async fn setup(client: &kube::Client, count: usize, vrfs: usize) -> Result<()> {
    install_netrollout(client).await;
    let api: Api<VRFRouteConfiguration> = Api::all(client.clone());
    let l2s: Api<Layer2NetworkConfiguration> = Api::all(client.clone());
    for i in 0..vrfs {
        api.create(&PostParams::default(), &vrf(i)?).await?;
        l2s.create(&PostParams::default(), &layer2(i)?).await?;
    }
    futures::stream::iter(0..count)
        .map(|i| async move {
            let zone = format!("zone-{}", i % 3);
            let labels = [(netrollout_api::ZONE_LABEL, zone.as_str())];
            add_node(client, &format!("node-{i:05}"), &labels, Some(true)).await;
        })
        .buffer_unordered(SETUP_CONCURRENCY)
        .collect::<()>()
        .await;
    Ok(())
}

/// Waits until the simulated agents have seen `revisions` revisions; the time since `since`.
async fn first_dispatch(
    agents: &agents::Agents,
    since: Instant,
    revisions: usize,
) -> Result<Duration> {
    loop {
        let seen = agents.record.lock().ok().map(|r| r.first_seen.len());
        if seen == Some(revisions) {
            return Ok(since.elapsed());
        }
        if since.elapsed() > Duration::from_secs(30) {
            anyhow::bail!("revision {revisions} was never dispatched");
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

async fn set_table(client: &kube::Client, id: i64) -> Result<()> {
    apply_table(client, "bench", "bench", id).await;
    Ok(())
}

async fn wait_for_lease(client: &kube::Client) -> Result<()> {
    let api: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), netrollout_api::DEFAULT_NAMESPACE);
    for _ in 0..600 {
        let lease = api.get_opt("netrollout-configurator").await?;
        if lease
            .and_then(|l| l.spec)
            .and_then(|s| s.holder_identity)
            .is_some()
        {
            // Give the new leader a moment to sync its caches.
            tokio::time::sleep(Duration::from_millis(500)).await;
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!("the configurator never took the lease")
}

async fn wait_succeeded(api: &Api<NetworkConfigRevision>, sequence: i64) -> Result<()> {
    let limit: u64 = match std::env::var("BENCH_TIMEOUT_S") {
        Ok(s) => s.parse().context("BENCH_TIMEOUT_S: seconds")?,
        Err(_) => 120,
    };
    let deadline = Instant::now() + Duration::from_secs(limit);
    while Instant::now() < deadline {
        let done = api.list(&Default::default()).await?.items.iter().any(|r| {
            r.spec.sequence == sequence
                && r.status.as_ref().and_then(|s| s.phase) == Some(RevisionPhase::Succeeded)
        });
        if done {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    anyhow::bail!(
        "revision {sequence} did not succeed within {limit}s (BENCH_TIMEOUT_S sets the limit)"
    )
}

fn binary() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .and_then(|p| p.parent())
        .context("no target directory")?;
    Ok(dir.join("netrollout-configurator"))
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn cpu_seconds(pid: u32) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .context("bad /proc stat")?;
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 (utime, stime) are at 11 and 12 after the command name.
    let ticks: f64 =
        f.get(11).context("utime")?.parse::<f64>()? + f.get(12).context("stime")?.parse::<f64>()?;
    Ok(ticks / 100.0)
}

fn peak_rss_mib(pid: u32) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .context("no VmHWM")?;
    let kb: f64 = line
        .split_whitespace()
        .nth(1)
        .context("VmHWM value")?
        .parse()?;
    Ok(kb / 1024.0)
}

async fn metric(port: u16, name: &str) -> Result<f64> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .await?;
    let mut body = String::new();
    stream.read_to_string(&mut body).await?;
    let line = body
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .with_context(|| format!("no metric {name}"))?;
    Ok(line.rsplit(' ').next().unwrap_or("0").parse()?)
}
