//! The workloads and roles of the deploy bundle keep their security promises: the agent's
//! capabilities and host access, the configurator's hardening, least-privilege RBAC.

use crate::common;

use std::collections::BTreeSet;

use common::{bundle, repo};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::rbac::v1::ClusterRole;

fn object<T: serde::de::DeserializeOwned>(kind: &str, name: &str) -> T {
    let doc = bundle()
        .into_iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("the bundle has no {kind} {name}"));
    serde_json::from_value(doc).unwrap()
}

#[test]
fn the_agent_runs_on_the_host_network_with_only_net_admin() {
    let ds: DaemonSet = object("DaemonSet", "netrollout-agent");
    let pod = ds.spec.unwrap().template.spec.unwrap();
    assert_eq!(pod.host_network, Some(true));
    assert_eq!(
        pod.service_account_name.as_deref(),
        Some("netrollout-agent")
    );
    assert!(
        pod.tolerations
            .unwrap()
            .iter()
            .any(|t| t.operator.as_deref() == Some("Exists") && t.key.is_none()),
        "runs on every node"
    );
    let c = &pod.containers[0];
    let sc = c.security_context.clone().unwrap();
    assert_eq!(sc.privileged, Some(false));
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    let caps = sc.capabilities.unwrap();
    assert_eq!(
        caps.add.unwrap(),
        ["NET_ADMIN"],
        "NET_RAW only with ICMP probes"
    );
    assert_eq!(pod.automount_service_account_token, Some(true));
    assert_eq!(
        pod.security_context
            .as_ref()
            .and_then(|s| s.seccomp_profile.as_ref())
            .map(|p| p.type_.as_str()),
        Some("RuntimeDefault"),
        "pod-level seccomp profile"
    );
    // One metrics/health port, 9101, bound to the node's own address (host network).
    let args = c.args.clone().unwrap();
    assert!(
        args.contains(&"--metrics-addr=$(HOST_IP):9101".to_string()),
        "{args:?}"
    );
    let host_ip = c
        .env
        .as_ref()
        .unwrap()
        .iter()
        .find(|e| e.name == "HOST_IP")
        .unwrap();
    assert_eq!(
        host_ip
            .value_from
            .as_ref()
            .unwrap()
            .field_ref
            .as_ref()
            .unwrap()
            .field_path,
        "status.hostIP"
    );
    let ports: Vec<i32> = c.ports.iter().flatten().map(|p| p.container_port).collect();
    assert_eq!(ports, [9101]);
    assert_eq!(caps.drop.unwrap(), ["ALL"]);
    let node_name = c
        .env
        .as_ref()
        .unwrap()
        .iter()
        .find(|e| e.name == "NODE_NAME")
        .unwrap();
    assert_eq!(
        node_name
            .value_from
            .as_ref()
            .unwrap()
            .field_ref
            .as_ref()
            .unwrap()
            .field_path,
        "spec.nodeName"
    );
    let state = pod
        .volumes
        .unwrap()
        .into_iter()
        .find(|v| v.name == "state")
        .unwrap();
    assert_eq!(state.host_path.unwrap().path, "/var/lib/netrollout");
    assert!(
        c.args
            .as_ref()
            .unwrap()
            .contains(&"--state-dir=/var/lib/netrollout".to_string())
    );
    assert_eq!(http_path(&c.liveness_probe), Some("/healthz"));
    assert_eq!(http_path(&c.readiness_probe), Some("/readyz"));
}

#[test]
fn the_configurator_runs_two_non_root_replicas_with_probes_and_a_read_only_root() {
    let d: Deployment = object("Deployment", "netrollout-configurator");
    let spec = d.spec.unwrap();
    assert_eq!(spec.replicas, Some(2));
    let pod = spec.template.spec.unwrap();
    assert_eq!(pod.security_context.unwrap().run_as_non_root, Some(true));
    let c = &pod.containers[0];
    let sc = c.security_context.clone().unwrap();
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_eq!(sc.capabilities.unwrap().drop.unwrap(), ["ALL"]);
    assert!(
        c.resources.as_ref().unwrap().requests.is_some()
            && c.resources.as_ref().unwrap().limits.is_some()
    );
    assert_eq!(http_path(&c.liveness_probe), Some("/healthz"));
    assert_eq!(http_path(&c.readiness_probe), Some("/readyz"));
    let flags: BTreeSet<&str> = c
        .args
        .as_ref()
        .unwrap()
        .iter()
        .map(|a| a.split('=').next().unwrap())
        .collect();
    let documented = [
        "--update-limit",
        "--apply-timeout",
        "--pickup-timeout",
        "--max-failures",
        "--node-selector",
        "--lease-namespace",
        "--lease-name",
        "--metrics-addr",
        "--health-addr",
        "--log-format",
    ];
    assert_eq!(
        flags,
        documented.into_iter().collect(),
        "the configurator's flags"
    );
}

#[test]
fn the_agent_reads_node_configs_and_writes_only_statuses_events_and_its_taints() {
    let role: ClusterRole = object("ClusterRole", "netrollout-agent");
    for rule in role.rules.unwrap() {
        let resources = rule.resources.unwrap_or_default();
        for r in &resources {
            let allowed: &[&str] = match r.as_str() {
                "nodenetworkconfigs" => &["get", "list", "watch"],
                "nodenetworkconfigs/status" => &["get", "update", "patch"],
                "nodes/status" => &["get", "patch"],
                // Only to remove the startup taints the operator lists; the own-node admission
                // policy lets the agent change nothing else of its own Node (and no other Node).
                "nodes" => &["get", "patch"],
                "events" => &["create", "patch"],
                other => panic!("the agent must not be granted {other}"),
            };
            for verb in &rule.verbs {
                assert!(allowed.contains(&verb.as_str()), "agent: {verb} on {r}");
            }
        }
    }
}

#[test]
fn every_configurator_rule_is_justified_by_a_comment() {
    let text = std::fs::read_to_string(repo().join("config/rbac/configurator_role.yaml")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut rules = 0;
    for (i, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with("- apiGroups:") {
            rules += 1;
            assert!(
                lines[i - 1].trim_start().starts_with('#'),
                "rule at line {} has no comment above it",
                i + 1
            );
        }
    }
    assert!(rules >= 8, "{rules} rules");
}

#[test]
fn the_icmp_probes_component_adds_net_raw_to_the_agent_only() {
    // kustomize takes only relative paths: an overlay under the target directory refers back.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let here = dir.path().canonicalize().unwrap();
    let r = repo();
    let common = here
        .ancestors()
        .find(|a| r.starts_with(a))
        .unwrap()
        .to_path_buf();
    let up = "../".repeat(here.strip_prefix(&common).unwrap().components().count());
    let rel = |p: &str| format!("{up}{}", r.join(p).strip_prefix(&common).unwrap().display());
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [{}]\ncomponents: [{}]\n",
            rel("config/default"),
            rel("config/components/icmp-probes")
        ),
    )
    .unwrap();
    let out = std::process::Command::new("kubectl")
        .args(["kustomize", "--load-restrictor", "LoadRestrictionsNone"])
        .arg(dir.path())
        .output()
        .expect("kubectl (v1.32) must be on PATH");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs =
        serde_saphyr::from_multiple::<serde_json::Value>(&String::from_utf8(out.stdout).unwrap())
            .unwrap();
    let ds = docs
        .iter()
        .find(|d| d["kind"] == "DaemonSet" && d["metadata"]["name"] == "netrollout-agent")
        .unwrap();
    assert_eq!(
        ds["spec"]["template"]["spec"]["containers"][0]["securityContext"]["capabilities"]["add"],
        serde_json::json!(["NET_ADMIN", "NET_RAW"])
    );
}

#[test]
fn every_role_ref_exists_and_no_rule_uses_a_wildcard() {
    let docs = bundle();
    let exists = |kind: &str, name: &str, namespace: Option<&str>| {
        docs.iter().any(|d| {
            d["kind"] == kind
                && d["metadata"]["name"] == name
                && d["metadata"]["namespace"].as_str() == namespace
        })
    };
    let mut bindings = 0;
    for d in &docs {
        let kind = d["kind"].as_str().unwrap_or_default();
        if kind == "RoleBinding" || kind == "ClusterRoleBinding" {
            bindings += 1;
            let ref_kind = d["roleRef"]["kind"].as_str().unwrap();
            let ref_name = d["roleRef"]["name"].as_str().unwrap();
            let ns = (ref_kind == "Role").then(|| d["metadata"]["namespace"].as_str().unwrap());
            assert!(
                exists(ref_kind, ref_name, ns),
                "{kind} {} refers to {ref_kind} {ref_name}, which the bundle does not define",
                d["metadata"]["name"]
            );
        }
        if kind == "Role" || kind == "ClusterRole" {
            for rule in d["rules"].as_array().unwrap() {
                for field in ["apiGroups", "resources", "verbs", "resourceNames"] {
                    for v in rule[field].as_array().into_iter().flatten() {
                        assert!(
                            !v.as_str().unwrap().contains('*'),
                            "{kind} {}: {field} uses a wildcard",
                            d["metadata"]["name"]
                        );
                    }
                }
            }
        }
    }
    assert!(bindings >= 3, "{bindings} bindings");
}

#[test]
fn the_configurator_reaches_leases_and_config_maps_only_in_its_namespace_by_name() {
    let cluster: ClusterRole = object("ClusterRole", "netrollout-configurator");
    for rule in cluster.rules.unwrap() {
        for r in rule.resources.unwrap_or_default() {
            assert!(r != "leases" && r != "configmaps", "ClusterRole grants {r}");
        }
    }
    let role = bundle()
        .into_iter()
        .find(|d| d["kind"] == "Role" && d["metadata"]["name"] == "netrollout-configurator")
        .expect("the namespaced configurator Role");
    assert_eq!(role["metadata"]["namespace"], "netrollout-system");
    for rule in role["rules"].as_array().unwrap() {
        let verbs: Vec<&str> = rule["verbs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        if verbs != ["create"] {
            assert!(
                rule["resourceNames"].is_array(),
                "rule {rule} must name its objects"
            );
        }
    }
}

/// The HTTP path of a container probe (`httpGet.path`); panics when the probe is not HTTP.
fn http_path(probe: &Option<k8s_openapi::api::core::v1::Probe>) -> Option<&str> {
    probe.as_ref()?.http_get.as_ref().unwrap().path.as_deref()
}
