//! `bench rollout [NODES] [SHAPE]`: the load of the configurator benchmark's rollout on the
//! server alone. NODES NodeNetworkConfigs (the netrollout CRDs installed, as the configurator
//! creates them); each measured rollout walks them in waves of 5 % (the 10,000-node row's
//! `--update-limit 5%`), one wave per 200 ms at most (the agents' latency): the configurator's
//! merge patch of every node's spec in the wave (with its cached resourceVersion, as it sends
//! it), then the agents' two status merge patches (Provisioning, then Provisioned), each
//! wave's writes from 64 concurrent writers.
//!
//! The server runs on a runtime of its own whose threads are named `labapi`; its CPU is the
//! user+system time of those threads (`/proc/self/task/*/stat`), so the writers and watchers in
//! the same process are not counted. Rows: CPU per write with no watcher; CPU per write and per
//! delivered watch event with the rollout's watchers, the per-event figure being the CPU the
//! watchers added over the same rollout without them. SHAPE `sim`: the configurator benchmark's
//! watchers (the configurator's and the simulated agents', each on every NodeNetworkConfig);
//! `agents`: the configurator's and one per node pinned by `metadata.name`, as real agents
//! watch (for the first 8,000 nodes: the file-descriptor limit). Baseline: the CPU of decoding one stored NodeNetworkConfig into a JSON tree and
//! encoding it again, measured in the same run.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use netrollout_lab_apiserver::{Config, Identity, LabServer};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::load::row;

const URL: &str = "/apis/netrollout.io/v1alpha1/nodenetworkconfigs";
const WAVE_PERIOD: Duration = Duration::from_millis(200);
const WRITERS: usize = 64;
/// At most this many watchers pinned by name: each costs two file descriptors in this process
/// (client and server side) and the hard limit here is 20,000.
const NAMED_WATCHERS: usize = 8_000;

/// User+system CPU seconds of this process's threads whose name starts with `prefix`
/// (`None`: the calling thread).
fn threads_cpu(prefix: Option<&str>) -> f64 {
    let ticks = |stat: &str| -> u64 {
        // Fields after the parenthesised name: state is field 3, utime 14, stime 15.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
    };
    let total: u64 = match prefix {
        None => ticks(&std::fs::read_to_string("/proc/thread-self/stat").unwrap()),
        Some(p) => std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| {
                let dir = t.ok()?.path();
                let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
                comm.starts_with(p)
                    .then(|| std::fs::read_to_string(dir.join("stat")).ok())
                    .flatten()
            })
            .map(|s| ticks(&s))
            .sum(),
    };
    // USER_HZ is 100 on Linux.
    total as f64 / 100.0
}

fn server_cpu() -> f64 {
    threads_cpu(Some("labapi"))
}

/// The spec the configurator renders for a node from one RoutingTable input, at `revision`.
fn spec(revision: &str, table: u32) -> Value {
    json!({"revision": revision, "config": {"vrfs": [], "layer2s": [],
        "routingTables": [{"source": "bench", "tableId": table, "interface": format!("tb.{table}")}]}})
}

fn node_config(i: usize) -> Value {
    json!({"apiVersion": "netrollout.io/v1alpha1", "kind": "NodeNetworkConfig",
        "metadata": {"name": format!("node-{i}"),
            "labels": {"app.kubernetes.io/managed-by": "netrollout-configurator"},
            "annotations": {"netrollout.io/revision-hash": "0"}},
        "spec": spec("rev-0", 100)})
}

/// Creates the netrollout CRDs (`netrollout_api::crds`, as a cluster running netrollout has
/// them) and waits until the node-config kind is served.
async fn install_crds(client: &Client) {
    let crds: kube::Api<CustomResourceDefinition> = kube::Api::all(client.clone());
    for crd in netrollout_api::crds::all() {
        crds.create(&Default::default(), &crd).await.unwrap();
    }
    for _ in 0..500 {
        let list = http::Request::get(URL).body(Vec::new()).unwrap();
        if client.request_text(list).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the NodeNetworkConfig kind was not served within 10 s");
}

async fn send(client: &Client, req: http::Request<Vec<u8>>) -> String {
    client.request_text(req).await.unwrap()
}

fn resource_version(reply: &str) -> String {
    let at = reply.find("\"resourceVersion\":\"").unwrap() + 19;
    reply[at..at + reply[at..].find('"').unwrap()].to_string()
}

fn merge_patch(path: String, body: &Value) -> http::Request<Vec<u8>> {
    http::Request::patch(path)
        .header("content-type", "application/merge-patch+json")
        .body(serde_json::to_vec(body).unwrap())
        .unwrap()
}

/// Runs `f` for every node in `nodes`, `WRITERS` at a time.
async fn each<F, Fut>(nodes: std::ops::Range<usize>, f: F)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    futures::stream::iter(nodes)
        .for_each_concurrent(WRITERS, f)
        .await;
}

/// One rollout of revision `rev`; returns the writes it made.
async fn rollout(client: &Client, rvs: &[Arc<std::sync::Mutex<String>>], rev: usize) -> u64 {
    let n = rvs.len();
    let wave = (n / 20).max(1);
    let revision = format!("rev-{rev}");
    let mut writes = 0;
    for first in (0..n).step_by(wave) {
        let start = Instant::now();
        let nodes = first..(first + wave).min(n);
        writes += 3 * nodes.len() as u64;
        each(nodes.clone(), |i| {
            let revision = revision.clone();
            async move {
                let rv = rvs[i].lock().unwrap().clone();
                let patch = json!({"metadata": {"resourceVersion": rv,
                    "annotations": {"netrollout.io/revision-hash": rev.to_string()},
                    "labels": {"app.kubernetes.io/managed-by": "netrollout-configurator"}},
                    "spec": spec(&revision, 100 + rev as u32)});
                let reply = send(client, merge_patch(format!("{URL}/node-{i}"), &patch)).await;
                *rvs[i].lock().unwrap() = resource_version(&reply);
            }
        })
        .await;
        for phase in ["Provisioning", "Provisioned"] {
            each(nodes.clone(), |i| {
                let revision = revision.clone();
                async move {
                    let now = jiff::Timestamp::now().to_string();
                    let mut s = json!({"observedRevision": revision, "phase": phase,
                        "reason": null, "message": null});
                    if phase == "Provisioning" {
                        s["startedAt"] = now.into();
                    } else {
                        s["finishedAt"] = now.into();
                        s["lastKnownGoodRevision"] = revision.into();
                    }
                    let path = format!("{URL}/node-{i}/status");
                    let reply = send(client, merge_patch(path, &json!({"status": s}))).await;
                    *rvs[i].lock().unwrap() = resource_version(&reply);
                }
            })
            .await;
        }
        if let Some(rest) = WAVE_PERIOD.checked_sub(start.elapsed()) {
            tokio::time::sleep(rest).await;
        }
    }
    writes
}

/// A raw watch of the node configs from `rv`; counts the events it receives into `events`.
async fn watch(server: &LabServer, token: Arc<str>, name: Option<String>, rv: u64) -> Watch {
    let events = Arc::new(AtomicU64::new(0));
    let mut sock = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let sel = name
        .map(|n| format!("&fieldSelector=metadata.name%3D{n}"))
        .unwrap_or_default();
    let req = format!(
        "GET {URL}?watch=true&resourceVersion={rv}{sel} HTTP/1.0\r\nHost: bench\r\nAuthorization: Bearer {token}\r\n\r\n"
    );
    sock.write_all(req.as_bytes()).await.unwrap();
    let mut lines = BufReader::new(sock).lines();
    while let Some(l) = lines.next_line().await.unwrap() {
        if l.is_empty() {
            break;
        }
    }
    let seen = events.clone();
    let task = tokio::spawn(async move {
        while let Ok(Some(_)) = lines.next_line().await {
            seen.fetch_add(1, Ordering::Relaxed);
        }
    });
    Watch { events, task }
}

struct Watch {
    events: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

/// CPU seconds of decoding `bytes` into a JSON tree and encoding it again, per round trip.
fn json_round_trip(bytes: &[u8]) -> f64 {
    let (cpu, start) = (threads_cpu(None), Instant::now());
    let mut n = 0u64;
    while start.elapsed() < Duration::from_millis(500) || n < 1000 {
        for _ in 0..100 {
            let v: Value = serde_json::from_slice(bytes).unwrap();
            std::hint::black_box(serde_json::to_vec(&v).unwrap());
        }
        n += 100;
    }
    (threads_cpu(None) - cpu) / n as f64
}

pub async fn bench_rollout(n: usize, shape: &str) {
    assert!(
        matches!(shape, "sim" | "agents"),
        "SHAPE is sim or agents, not {shape}"
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("labapi")
        .enable_all()
        .build()
        .unwrap();
    let cfg = Config {
        watch_buffer: 1 << 16,
        ..Config::default()
    };
    let server = rt.spawn(LabServer::start(cfg)).await.unwrap().unwrap();
    let client = server.client().unwrap();
    install_crds(&client).await;
    let rvs: Vec<Arc<std::sync::Mutex<String>>> = (0..n).map(|_| Arc::default()).collect();
    each(0..n, |i| {
        let (client, rvs) = (&client, &rvs);
        async move {
            let req = http::Request::post(URL)
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&node_config(i)).unwrap())
                .unwrap();
            *rvs[i].lock().unwrap() = resource_version(&send(client, req).await);
        }
    })
    .await;
    // A warm-up rollout, then one without watchers and one with them.
    rollout(&client, &rvs, 1).await;
    let cpu = server_cpu();
    let writes = rollout(&client, &rvs, 2).await;
    let bare = server_cpu() - cpu;

    let token: Arc<str> = server.issue_token(Identity::admin()).unwrap().into();
    let rv = server.resource_version();
    let mut watches = vec![watch(&server, token.clone(), None, rv).await];
    match shape {
        "sim" => watches.push(watch(&server, token.clone(), None, rv).await),
        _ => {
            let names = futures::stream::iter(0..n.min(NAMED_WATCHERS))
                .map(|i| watch(&server, token.clone(), Some(format!("node-{i}")), rv))
                .buffer_unordered(WRITERS)
                .collect::<Vec<_>>()
                .await;
            watches.extend(names);
        }
    }
    let cpu = server_cpu();
    let watched_writes = rollout(&client, &rvs, 3).await;
    // Every event written is delivered before the count is taken: each write to the
    // configurator's watcher, and to one more (the agents' in `sim`, the node's own in
    // `agents` when it has one; a rollout writes each node three times).
    let want = watched_writes
        + match shape {
            "sim" => watched_writes,
            _ => 3 * n.min(NAMED_WATCHERS) as u64,
        };
    let deadline = Instant::now() + Duration::from_secs(60);
    let delivered = loop {
        let d: u64 = watches
            .iter()
            .map(|w| w.events.load(Ordering::Relaxed))
            .sum();
        if d >= want || Instant::now() > deadline {
            break d;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let watched = server_cpu() - cpu;
    assert_eq!(
        delivered, want,
        "every write reaches the configurator's watcher and its agent's"
    );

    let stored = send(
        &client,
        http::Request::get(format!("{URL}/node-0"))
            .body(vec![])
            .unwrap(),
    )
    .await;
    let base = json_round_trip(stored.as_bytes()) * 1e6;
    let per_write = bare / writes as f64 * 1e6;
    let label = format!("{n} node configs");
    row(
        &format!(
            "server CPU per write, rollout of {label}, no watcher (baseline: JSON decode+encode of one)"
        ),
        per_write,
        base,
        "µs",
        "halve",
    );
    let watchers = format!(
        "{} watchers ({shape}: {})",
        watches.len(),
        if shape == "sim" {
            "2 on all"
        } else {
            "1 on all + 1 by name per node (at most 8,000)"
        }
    );
    row(
        &format!("server CPU per write, rollout of {label}, {watchers}"),
        watched / watched_writes as f64 * 1e6,
        base,
        "µs",
        "halve",
    );
    row(
        &format!("server CPU per delivered watch event, {label}, {watchers}"),
        (watched - bare * watched_writes as f64 / writes as f64) / delivered as f64 * 1e6,
        base,
        "µs",
        "halve",
    );
    eprintln!(
        "bench rollout: {writes} + {watched_writes} writes, {delivered} events; server CPU {bare:.2} s bare, {watched:.2} s watched"
    );
    for w in watches {
        w.task.abort();
    }
    rt.spawn(server.shutdown()).await.unwrap().unwrap();
    rt.shutdown_background();
}
