//! What every benchmark of `apiserver-bench` uses: the server set up with ConfigMaps, writers
//! at full speed or paced, resident memory, and the printed row.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, Patch, PatchParams, PostParams};
use netrollout_lab_apiserver::LabServer;
use serde_json::json;

pub const NS: &str = "bench";

pub fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

pub fn row(bench: &str, measured: f64, baseline: f64, unit: &str, goal: &str) {
    let ratio = if baseline > 0.0 {
        measured / baseline
    } else {
        0.0
    };
    println!(
        "lab-apiserver\t{bench}\t{measured:.1} {unit}\t{baseline:.1} {unit}\t{ratio:.2}\t{goal}"
    );
}

pub fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

pub fn config_map(name: &str, i: usize) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": {"app": "bench", "index": i.to_string()}},
        "data": {"t": "0", "payload": "x".repeat(64)}}),
    )
    .unwrap()
}

pub async fn setup(server: &LabServer, objects: usize) -> Api<ConfigMap> {
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
pub async fn write_load<K>(
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
pub async fn write_load_as<K>(
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
