//! Benchmarks of the lab API server, printed as `hack/bench.sh` rows
//! (area, benchmark, measured, baseline, ratio, goal; tab-separated).
//!
//! - `bench watch [WATCHERS] [SECONDS]`: merge-patch writes from 32 concurrent
//!   kube::Client writers while WATCHERS raw HTTP watchers each follow one object (the agents'
//!   pattern: a `metadata.name` field selector) and one more follows them all. Reports the
//!   maximum writes/s (baseline: the same writers with no watcher), then p50/p99 delivery
//!   latency with the writers paced to 2,000 writes/s (baseline: one watcher, one sequential
//!   writer).
//! - `bench memory [OBJECTS]`: resident memory added by storing OBJECTS ConfigMaps (baseline:
//!   their size as JSON).
//! - `bench cel [SECONDS]`: merge-patch writes from 32 writers to a custom kind whose CRD has
//!   three `x-kubernetes-validations` rules and which a ValidatingAdmissionPolicy (two
//!   validations) checks (baseline: the same writes to ConfigMaps, same server).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use netrollout_lab_apiserver::{Config, Identity, LabServer};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const NS: &str = "bench";

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn row(bench: &str, measured: f64, baseline: f64, unit: &str, goal: &str) {
    let ratio = if baseline > 0.0 {
        measured / baseline
    } else {
        0.0
    };
    println!(
        "lab-apiserver\t{bench}\t{measured:.1} {unit}\t{baseline:.1} {unit}\t{ratio:.2}\t{goal}"
    );
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn config_map(name: &str, i: usize) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": {"app": "bench", "index": i.to_string()}},
        "data": {"t": "0", "payload": "x".repeat(64)}}),
    )
    .unwrap()
}

async fn setup(server: &LabServer, objects: usize) -> Api<ConfigMap> {
    let client = server.client().unwrap();
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": NS}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client, NS);
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = vec![];
    for _ in 0..16 {
        let (cms, next) = (cms.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                if i >= objects {
                    return;
                }
                cms.create(&PostParams::default(), &config_map(&format!("obj-{i}"), i))
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    cms
}

/// Runs `writers` writers over `objects` objects for `secs`, as fast as they can or paced to
/// `rate` writes/s in total; returns the achieved writes/s.
async fn write_load<K>(
    cms: &Api<K>,
    objects: usize,
    writers: usize,
    secs: f64,
    rate: Option<f64>,
) -> f64
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    write_load_as(
        cms,
        "obj",
        |t| json!({"data": {"t": t}}),
        objects,
        writers,
        secs,
        rate,
    )
    .await
}

/// [`write_load`] on objects `{prefix}-{i}` with the patch `patch(now)`.
async fn write_load_as<K>(
    cms: &Api<K>,
    prefix: &'static str,
    patch: fn(String) -> serde_json::Value,
    objects: usize,
    writers: usize,
    secs: f64,
    rate: Option<f64>,
) -> f64
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    let stop = Arc::new(AtomicBool::new(false));
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = vec![];
    for _ in 0..writers {
        let (cms, stop, next) = (cms.clone(), stop.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            let period = rate.map(|r| Duration::from_secs_f64(writers as f64 / r));
            let mut tick = period.map(tokio::time::interval);
            while !stop.load(Ordering::Relaxed) {
                if let Some(t) = tick.as_mut() {
                    t.tick().await;
                }
                let i = next.fetch_add(1, Ordering::Relaxed) as usize % objects;
                let patch = patch(now_nanos().to_string());
                cms.patch(
                    &format!("{prefix}-{i}"),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
                .unwrap();
                n += 1;
            }
            n
        }));
    }
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    total as f64 / start.elapsed().as_secs_f64()
}

/// A raw HTTP/1.0 watch; returns the delivery latencies (µs) of the events it saw.
async fn raw_watch(
    addr: std::net::SocketAddr,
    token: Arc<str>,
    selector: Option<String>,
    rv: u64,
    secs: u64,
    ready: Arc<AtomicU64>,
) -> Vec<(u128, u64)> {
    let mut sock = tokio::net::TcpStream::connect(addr).await.unwrap();
    let sel = selector
        .map(|s| format!("&fieldSelector={s}"))
        .unwrap_or_default();
    let req = format!(
        "GET /api/v1/namespaces/{NS}/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds={secs}{sel} HTTP/1.0\r\nHost: bench\r\nAuthorization: Bearer {token}\r\n\r\n"
    );
    sock.write_all(req.as_bytes()).await.unwrap();
    let mut lines = BufReader::new(sock).lines();
    while let Some(l) = lines.next_line().await.unwrap() {
        if l.is_empty() {
            break;
        }
    }
    ready.fetch_add(1, Ordering::SeqCst);
    let mut lat = vec![];
    while let Ok(Some(l)) = lines.next_line().await {
        let now = now_nanos();
        if let Some(pos) = l.find("\"t\":\"") {
            let rest = &l[pos + 5..];
            let sent: u128 = rest[..rest.find('"').unwrap()].parse().unwrap();
            if sent > 0 {
                lat.push((sent, ((now.saturating_sub(sent)) / 1000) as u64));
            }
        }
    }
    lat
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize] as f64 / 1000.0
}

async fn watchers(
    server: &LabServer,
    count: usize,
    selector: impl Fn(usize) -> Option<String>,
    secs: u64,
) -> (
    Vec<tokio::task::JoinHandle<Vec<(u128, u64)>>>,
    Arc<AtomicU64>,
) {
    let ready = Arc::new(AtomicU64::new(0));
    let rv = server.resource_version();
    let token: Arc<str> = server
        .issue_token(Identity::admin())
        .expect("a token for the watchers")
        .into();
    let handles = (0..count)
        .map(|i| {
            tokio::spawn(raw_watch(
                server.addr(),
                token.clone(),
                selector(i),
                rv,
                secs,
                ready.clone(),
            ))
        })
        .collect();
    while (ready.load(Ordering::SeqCst) as usize) < count {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (handles, ready)
}

/// Latencies (µs, sorted) of the events written at or after `since` (Unix nanoseconds).
async fn gather(handles: Vec<tokio::task::JoinHandle<Vec<(u128, u64)>>>, since: u128) -> Vec<u64> {
    let mut all = vec![];
    for h in handles {
        all.extend(
            h.await
                .unwrap()
                .into_iter()
                .filter(|(sent, _)| *sent >= since)
                .map(|(_, l)| l),
        );
    }
    all.sort_unstable();
    all
}

async fn bench_watch(n: usize, secs: u64) {
    let server = LabServer::start(Config {
        watch_buffer: 1 << 16,
        ..Config::default()
    })
    .await
    .unwrap();
    let cms = setup(&server, n).await;
    let base_rate = write_load(&cms, n, 32, secs as f64 / 2.0, None).await;

    // Baseline latency: one watcher, one sequential writer.
    let (h, _) = watchers(&server, 1, |_| Some("metadata.name%3Dobj-0".into()), 4).await;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(2) {
        let patch = json!({"data": {"t": now_nanos().to_string()}});
        cms.patch("obj-0", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let base_lat = gather(h, 0).await;

    // Saturation: as many writes as 32 writers manage, with every watcher open.
    let t = 2 * secs + 4;
    let (mut h, _) = watchers(&server, n, |i| Some(format!("metadata.name%3Dobj-{i}")), t).await;
    let (all, _) = watchers(&server, 1, |_| None, t).await;
    h.extend(all);
    let watching = server.watcher_count();
    let rate = write_load(&cms, n, 32, secs as f64, None).await;
    let label = format!("max writes/s, {n} watchers ({watching} open)");
    row(&label, rate, base_rate, "/s", ">= 2000/s");
    // Delivery latency at the goal's sustained rate (2,000 writes/s), same watchers.
    let paced_start = now_nanos();
    let paced = write_load(&cms, n, 32, secs as f64, Some(2000.0)).await;
    let lat = gather(h, paced_start).await;
    assert!(
        !lat.is_empty() && !base_lat.is_empty(),
        "no watch event arrived: the watchers were refused or the server delivered nothing"
    );
    let (p50, p99) = (percentile(&lat, 0.5), percentile(&lat, 0.99));
    let base = (percentile(&base_lat, 0.5), percentile(&base_lat, 0.99));
    row(
        &format!("watch delivery p50 at {paced:.0} writes/s"),
        p50,
        base.0,
        "ms",
        "-",
    );
    row(
        &format!("watch delivery p99 at {paced:.0} writes/s"),
        p99,
        base.1,
        "ms",
        "< 50 ms",
    );
    let expected = (paced * secs as f64 * 2.0) as usize;
    eprintln!(
        "bench: {} events delivered, about {expected} expected (own watcher + all-objects watcher)",
        lat.len()
    );
    server.shutdown().await.unwrap();
}

async fn bench_memory(n: usize) {
    let server = LabServer::start(Config::default()).await.unwrap();
    let before = rss_kib();
    let cms = setup(&server, n).await;
    let after = rss_kib();
    let list = cms.list(&Default::default()).await.unwrap();
    let json_bytes: usize = list
        .items
        .iter()
        .map(|o| serde_json::to_vec(o).unwrap().len())
        .sum();
    drop(list);
    let per_obj = (after.saturating_sub(before) as f64 * 1024.0) / n as f64;
    row(
        &format!(
            "resident memory per object ({n} ConfigMaps, {} MiB total)",
            after.saturating_sub(before) / 1024
        ),
        per_obj,
        json_bytes as f64 / n as f64,
        "B",
        "< 2048 B",
    );
    server.shutdown().await.unwrap();
}

fn gauge_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("bench.netrollout.io", "v1", "Gauge"),
        "gauges",
    )
}

/// A CRD with three CEL rules, a policy with two validations bound to it, and `n` objects.
async fn setup_cel(server: &LabServer, n: usize) -> Api<DynamicObject> {
    let client = server.client().unwrap();
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": "gauges.bench.netrollout.io"},
        "spec": {"group": "bench.netrollout.io", "scope": "Namespaced",
            "names": {"kind": "Gauge", "plural": "gauges", "singular": "gauge"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {
                    "type": "object",
                    "x-kubernetes-validations": [
                        {"rule": "self.level >= 0 && self.level <= 100", "message": "level is a percentage"},
                        {"rule": "self.owner.startsWith('team-')", "message": "owner is a team"},
                        {"rule": "size(self.t) < 40", "message": "t is a timestamp"},
                    ],
                    "properties": {"level": {"type": "integer"}, "owner": {"type": "string"},
                        "t": {"type": "string"}}}}}}}]}
    }))
    .unwrap();
    Api::<CustomResourceDefinition>::all(client.clone())
        .create(&PostParams::default(), &crd)
        .await
        .unwrap();
    let gvk = |kind: &str| GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind);
    let vap = ApiResource::from_gvk_with_plural(
        &gvk("ValidatingAdmissionPolicy"),
        "validatingadmissionpolicies",
    );
    let mut p = DynamicObject::new("gauges", &vap);
    p.data = json!({"spec": {"failurePolicy": "Fail",
    "matchConstraints": {"resourceRules": [{"apiGroups": ["bench.netrollout.io"],
        "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["gauges"]}]},
    "validations": [
        {"expression": "object.spec.owner != 'team-evil'", "message": "not evil"},
        {"expression": "object.metadata.name.startsWith('gauge-')", "message": "named gauge-"},
    ]}});
    Api::<DynamicObject>::all_with(client.clone(), &vap)
        .create(&PostParams::default(), &p)
        .await
        .unwrap();
    let vapb = ApiResource::from_gvk_with_plural(
        &gvk("ValidatingAdmissionPolicyBinding"),
        "validatingadmissionpolicybindings",
    );
    let mut b = DynamicObject::new("gauges", &vapb);
    b.data = json!({"spec": {"policyName": "gauges", "validationActions": ["Deny"]}});
    Api::<DynamicObject>::all_with(client.clone(), &vapb)
        .create(&PostParams::default(), &b)
        .await
        .unwrap();
    let gauges: Api<DynamicObject> = Api::namespaced_with(client, NS, &gauge_resource());
    for i in 0..n {
        let mut g = DynamicObject::new(&format!("gauge-{i}"), &gauge_resource());
        g.data = json!({"spec": {"level": 50, "owner": "team-bench", "t": "0"}});
        gauges.create(&PostParams::default(), &g).await.unwrap();
    }
    gauges
}

async fn bench_cel(secs: f64) {
    let server = LabServer::start(Config::default()).await.unwrap();
    let n = 1000;
    let cms = setup(&server, n).await;
    let gauges = setup_cel(&server, n).await;
    let refused = gauges
        .patch(
            "gauge-0",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"owner": "team-evil"}})),
        )
        .await;
    assert!(refused.is_err(), "the policy must refuse team-evil");
    let base = write_load(&cms, n, 32, secs, None).await;
    let patch = |t| json!({"spec": {"t": t}});
    let rate = write_load_as(&gauges, "gauge", patch, n, 32, secs, None).await;
    row(
        "max writes/s, CEL-validated kind (3 CRD rules + 2 policy rules)",
        rate,
        base,
        "/s",
        "report",
    );
    server.shutdown().await.unwrap();
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, d: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    match args.get(1).map(String::as_str) {
        Some("watch") => bench_watch(arg(2, 1000), arg(3, 6) as u64).await,
        Some("memory") => bench_memory(arg(2, 100_000)).await,
        Some("cel") => bench_cel(arg(2, 6) as f64).await,
        _ => eprintln!(
            "usage: bench watch [WATCHERS] [SECONDS] | bench memory [OBJECTS] | bench cel [SECONDS]"
        ),
    }
}
