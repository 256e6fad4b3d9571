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
//! - `bench rollout [NODES] [sim|agents]`: the configurator benchmark's rollout load on the
//!   server alone; server CPU per write and per delivered watch event (`rollout.rs`).
//!
//! The process runs mimalloc, the allocator of the `netrollout-lab-apiserver` binary and of the
//! lab and configurator benchmark that host the server: the rows measure the server as it ships
//! (figures before 2026-11-26 used the system allocator; docs/lab-apiserver.md says which).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use netrollout_lab_apiserver::{Config, LabServer};
use serde_json::json;

#[path = "apiserver-bench/load.rs"]
mod load;
#[path = "apiserver-bench/rollout.rs"]
mod rollout;
#[path = "apiserver-bench/watch.rs"]
mod watch;

use load::*;
use watch::bench_watch;

/// The server binary's allocator (`src/main.rs`), so the rows measure what ships.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
        Some("rollout") => {
            let shape = args.get(3).map_or("sim", String::as_str);
            rollout::bench_rollout(arg(2, 10_000), shape).await
        }
        _ => eprintln!(
            "usage: bench watch [WATCHERS] [SECONDS] | bench memory [OBJECTS] | bench cel [SECONDS] \
             | bench rollout [NODES] [sim|agents]"
        ),
    }
}
