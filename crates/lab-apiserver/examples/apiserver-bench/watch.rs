//! `bench watch`: raw HTTP watchers following one object each (and one following all) while
//! writers patch; maximum writes/s, then delivery latency at a paced rate.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kube::api::{Patch, PatchParams};
use netrollout_lab_apiserver::{Config, Identity, LabServer};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::load::*;

/// A raw HTTP/1.0 watch; returns the delivery latencies (µs) of the events it saw.
pub async fn raw_watch(
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

pub fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize] as f64 / 1000.0
}

pub async fn watchers(
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
pub async fn gather(
    handles: Vec<tokio::task::JoinHandle<Vec<(u128, u64)>>>,
    since: u128,
) -> Vec<u64> {
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

pub async fn bench_watch(n: usize, secs: u64) {
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
