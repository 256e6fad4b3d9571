//! Agent benchmark for `hack/bench.sh`: from a spec change in the API to `Provisioned`, for a
//! config of 100 layer-2 networks in a network namespace, split into apply, probe and status
//! time (from the agent's own step log lines). Baseline, measured in the same run: `ip -batch`
//! creating the same links and addresses in a fresh namespace (the kernel work alone).
//! Needs root. Prints tab-separated rows: area, benchmark, measured, baseline, ratio, goal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use netrollout_api::{NodeConfig, NodePhase};
use netrollout_testkit::agent::{Lab, agent_bin_next_to_exe, layer2s};
use netrollout_testkit::cmd::run;

const NETWORKS: u16 = 100;
const ROUNDS: usize = 5;

#[tokio::main]
async fn main() {
    let mut lab = Lab::new(agent_bin_next_to_exe()).await;
    lab.extra_args = vec!["--probe-tcp".into(), lab.api_target()];
    lab.set_spec("rev-0", NodeConfig::default()).await;
    lab.start_agent();
    lab.wait_finished("rev-0", 60).await;

    let mut rounds = Vec::new();
    for round in 0..ROUNDS {
        let up = format!("rev-up-{round}");
        let started = Instant::now();
        lab.set_spec(&up, layer2s(1000, NETWORKS)).await;
        let nnc = lab.wait_finished(&up, 60).await;
        let e2e = started.elapsed();
        let phase = nnc.status.and_then(|s| s.phase);
        assert_eq!(phase, Some(NodePhase::Provisioned), "{}", lab.log());
        // The status line of the commit lands just after the object shows it.
        tokio::time::sleep(Duration::from_millis(100)).await;
        rounds.push((e2e, steps(&lab.log(), &up)));
        let down = format!("rev-down-{round}");
        lab.set_spec(&down, NodeConfig::default()).await;
        lab.wait_finished(&down, 60).await;
    }
    let baseline = ip_batch(&lab);

    let median = |f: &dyn Fn(&(Duration, Steps)) -> f64| {
        let mut v: Vec<f64> = rounds.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let base = baseline.as_secs_f64() * 1e3;
    let row = |name: &str, ms: f64, goal: &str| {
        println!(
            "agent\t{name}\t{ms:.1} ms\t{base:.1} ms (ip -batch)\t{:.2}x\t{goal}",
            ms / base
        );
    };
    row(
        "spec change → Provisioned, 100 layer2",
        median(&|r| r.0.as_secs_f64() * 1e3),
        "< 1 s",
    );
    row(
        "  apply (netlink)",
        median(&|r| r.1.apply),
        "< 3x ip -batch",
    );
    row(
        "  probe (before + after)",
        median(&|r| r.1.probe),
        "< 100 ms",
    );
    row("  status write", median(&|r| r.1.status), "< 50 ms");
    drop(lab);
    let waited = netrollout_testkit::netns::wait_until_settled(Duration::from_secs(900));
    eprintln!(
        "agent-bench: waited {:.1} s for the kernel to finish removing its namespaces",
        waited.as_secs_f64()
    );
}

/// Step durations of one revision, in ms, from the agent's JSON log.
#[derive(Debug, Default)]
struct Steps {
    apply: f64,
    probe: f64,
    status: f64,
}

fn steps(log: &str, rev: &str) -> Steps {
    let mut s = Steps::default();
    for line in log.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v["revision"] != rev {
            continue;
        }
        let ms = v["duration_ms"].as_f64().unwrap_or_default();
        match v["step"].as_str() {
            Some("apply") => s.apply += ms,
            Some("probe-before" | "probe-after") => s.probe += ms,
            Some("status") if v["reason"] == "Applied" => s.status += ms,
            _ => {}
        }
    }
    s
}

/// `ip -batch` of the same bridges, VXLAN ports and gateway addresses in a fresh namespace.
fn ip_batch(lab: &Lab) -> Duration {
    let ns = format!("{}-base", lab.ns);
    run("ip", &["netns", "add", &ns]);
    let mut batch = String::new();
    for id in 1000..1000 + NETWORKS {
        let vni = 20_000 + u32::from(id);
        batch.push_str(&format!(
            "link add l2.{id} mtu 1500 type bridge\n\
             link add lx.{id} mtu 1500 master l2.{id} type vxlan id {vni} local {} dstport 4789 nolearning\n\
             addr add 10.250.{}.1/24 dev l2.{id}\n\
             link set l2.{id} up\nlink set lx.{id} up\n",
            lab.ns_ip,
            id % 250
        ));
    }
    let file = lab.dir.path().join("batch");
    std::fs::write(&file, batch).unwrap();
    let started = Instant::now();
    run("ip", &["-n", &ns, "-batch", file.to_str().unwrap()]);
    let took = started.elapsed();
    run("ip", &["netns", "del", &ns]);
    took
}
