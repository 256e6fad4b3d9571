//! The kustomize bases under `config/` and the rendered bundle `deploy/netrollout.yaml`: no
//! drift, and the bundle applies to the lab API server with the real kubectl.

use crate::common;

use std::collections::BTreeSet;

use common::{bundle, bundle_text, repo};
use netrollout_testkit::apiserver::LabApi;
use netrollout_testkit::kubectl::kubectl;
use serde_json::{Value, json};

#[test]
fn the_committed_bundle_is_what_kubectl_kustomize_renders() {
    let out = std::process::Command::new("kubectl")
        .args(["kustomize", "config/default"])
        .current_dir(repo())
        .output()
        .expect("kubectl (v1.32, with kustomize built in) must be on PATH");
    assert!(
        out.status.success(),
        "kubectl kustomize failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8(out.stdout).unwrap() == bundle_text(),
        "deploy/netrollout.yaml is out of date; run `kubectl kustomize config/default > deploy/netrollout.yaml`"
    );
}

#[test]
fn the_crd_base_holds_exact_copies_of_the_generated_crds() {
    let names = |dir: &str| -> BTreeSet<String> {
        std::fs::read_dir(repo().join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "kustomization.yaml")
            .collect()
    };
    assert_eq!(
        names("config/crd"),
        names("config/crd-base"),
        "refresh with `cp config/crd/*.yaml config/crd-base/`"
    );
    for n in names("config/crd") {
        let generated = std::fs::read_to_string(repo().join("config/crd").join(&n)).unwrap();
        let copy = std::fs::read_to_string(repo().join("config/crd-base").join(&n)).unwrap();
        assert!(
            generated == copy,
            "config/crd-base/{n} differs; refresh with `cp config/crd/*.yaml config/crd-base/`"
        );
    }
}

#[tokio::test]
async fn the_bundle_applies_to_the_lab_api_server_with_kubectl() {
    let lab = LabApi::start().await;
    let (kubeconfig, cache) = (lab.kubeconfig(), lab.kubectl_cache());
    // The lab serves the kinds the project itself uses; the bundle also holds RBAC, workloads,
    // a disruption budget and an admission policy. Kinds the lab does not serve get a stand-in
    // CRD with an open schema, so that kubectl applies every document of the bundle for real.
    let served = kubectl(
        &kubeconfig,
        &cache,
        &["api-resources", "--no-headers"],
        None,
        None,
    )
    .await;
    let served: BTreeSet<(String, String)> = served
        .expect_code(0)
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols.len() >= 4).then(|| {
                (
                    cols[cols.len() - 3].to_string(),
                    cols[cols.len() - 1].to_string(),
                )
            })
        })
        .collect();
    let mut stand_ins = vec![];
    let mut seen = BTreeSet::new();
    let mut unservable = BTreeSet::new();
    for doc in bundle() {
        let (api_version, kind) = (
            doc["apiVersion"].as_str().unwrap(),
            doc["kind"].as_str().unwrap(),
        );
        if served.contains(&(api_version.to_string(), kind.to_string()))
            || kind == "CustomResourceDefinition"
        {
            continue;
        }
        if !api_version.contains('/') {
            // A CRD cannot define a core-group kind.
            unservable.insert(kind.to_string());
        } else if seen.insert((api_version.to_string(), kind.to_string())) {
            stand_ins.push(stand_in(
                api_version,
                kind,
                doc["metadata"]["namespace"].is_string(),
            ));
        }
    }
    assert!(
        unservable.iter().all(|k| k == "ServiceAccount"),
        "only ServiceAccount may be missing from the lab: {unservable:?}"
    );
    let stand_ins = stand_ins
        .iter()
        .map(|c| serde_json::to_string(c).unwrap())
        .collect::<Vec<_>>()
        .join("\n---\n");
    if !stand_ins.is_empty() {
        kubectl(
            &kubeconfig,
            &cache,
            &["apply", "-f", "-"],
            Some(&stand_ins),
            None,
        )
        .await
        .expect_code(0);
    }
    for _ in 0..50 {
        let again = kubectl(
            &kubeconfig,
            &cache,
            &["api-resources", "--no-headers"],
            None,
            None,
        )
        .await;
        if again.stdout.contains("DaemonSet") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // The bundle's own text, minus the documents of kinds the lab cannot serve at all.
    let text: String = bundle_text()
        .split_inclusive("\n---\n")
        .filter(|doc| {
            !unservable
                .iter()
                .any(|k| doc.contains(&format!("\nkind: {k}\n")))
        })
        .collect();
    let text = text.trim_end_matches("---\n");
    let first = kubectl(&kubeconfig, &cache, &["apply", "-f", "-"], Some(text), None).await;
    let out = first.expect_code(0);
    for created in [
        "namespace/netrollout-system created",
        "customresourcedefinition.apiextensions.k8s.io/networkconfigrevisions.netrollout.io created",
        "deployment.apps/netrollout-configurator created",
        "daemonset.apps/netrollout-agent created",
        "clusterrole.rbac.authorization.k8s.io/netrollout-agent created",
    ] {
        assert!(out.contains(created), "{created} missing in:\n{out}");
    }
    let skipped = bundle()
        .iter()
        .filter(|d| unservable.contains(d["kind"].as_str().unwrap()))
        .count();
    assert_eq!(
        out.lines().count() + skipped,
        bundle().len(),
        "every other document is applied: {out}"
    );
    let second = kubectl(&kubeconfig, &cache, &["apply", "-f", "-"], Some(text), None).await;
    assert!(
        second
            .expect_code(0)
            .contains("deployment.apps/netrollout-configurator unchanged"),
        "{}",
        second.stdout
    );
    let got = kubectl(
        &kubeconfig,
        &cache,
        &[
            "-n",
            "netrollout-system",
            "get",
            "daemonset",
            "netrollout-agent",
            "-o",
            "json",
        ],
        None,
        None,
    )
    .await;
    let ds: Value = serde_json::from_str(got.expect_code(0)).unwrap();
    assert_eq!(ds["spec"]["template"]["spec"]["hostNetwork"], true);
    // The CRDs from the bundle are live: netrollout kinds are servable.
    kubectl(
        &kubeconfig,
        &cache,
        &["get", "ncr,nnc,vrf,layer2,taas"],
        None,
        None,
    )
    .await
    .expect_code(0);
    lab.server.shutdown().await.unwrap();
}

/// A CRD that serves `kind` at `api_version` with an open schema.
fn stand_in(api_version: &str, kind: &str, namespaced: bool) -> Value {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let plural = format!("{}s", kind.to_lowercase()).replace("policys", "policies");
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(), "listKind": format!("{kind}List")},
            "versions": [{"name": version, "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    })
}
