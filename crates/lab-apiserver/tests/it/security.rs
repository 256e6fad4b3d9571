//! The bundle's security promises, enforced by the lab API server as a real one enforces them:
//! the RBAC roles and admission policies of `deploy/netrollout.yaml` are applied as they are,
//! each component gets its own token (agents with the node-name claim), and the real kubectl
//! and kube client act as each identity. Every test here fails if the protection it names is
//! removed from the bundle (or the server stops enforcing it).

use crate::common;

use common::cluster::{Cluster, NS, nnc, run_kubectl};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use netrollout_lab_apiserver::Identity;
use serde_json::{Value, json};

#[tokio::test]
async fn requests_without_a_valid_token_get_401() {
    let c = Cluster::start().await;
    let anon = c.server.anonymous_client().unwrap();
    let err = Api::<Node>::all(anon)
        .list(&Default::default())
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(e) => assert_eq!(e.code, 401, "{e:?}"),
        other => panic!("expected 401, got {other}"),
    }
    let forged = c.dir.path().join("forged");
    let text = std::fs::read_to_string(c.kubeconfig("agent-a")).unwrap();
    let token = text
        .split("token: ")
        .nth(1)
        .unwrap()
        .lines()
        .next()
        .unwrap();
    std::fs::write(&forged, text.replace(token, "nrlab.forged")).unwrap();
    run_kubectl(
        &forged,
        &c.dir.path().join("cache2"),
        &["get", "nodes"],
        None,
    )
    .await
    .refused(&["You must be logged in to the server"]);
}

#[tokio::test]
async fn the_configurator_reaches_only_its_own_lease_and_control_config_map() {
    let c = Cluster::start().await;
    let k = |args: &'static [&'static str]| c.kubectl("configurator", args, None);
    k(&["get", "configmap", "netrollout-control", "-n", NS])
        .await
        .ok();
    k(&["get", "configmap", "someone-elses", "-n", NS]).await.refused(&[
        r#"configmaps "someone-elses" is forbidden: User "system:serviceaccount:netrollout-system:netrollout-configurator" cannot get resource "configmaps" in API group "" in the namespace "netrollout-system""#,
    ]);
    k(&["get", "configmaps", "-n", "kube-system"])
        .await
        .refused(&[
            r#"cannot list resource "configmaps" in API group "" in the namespace "kube-system""#,
        ]);
    k(&["create", "configmap", "x", "-n", "kube-system"])
        .await
        .refused(&["cannot create resource \"configmaps\""]);
    let lease = |ns: &str, name: &str| {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"holderIdentity": "configurator-0", "leaseDurationSeconds": 15}})
        .to_string()
    };
    let own = lease(NS, "netrollout-configurator");
    c.kubectl("configurator", &["create", "-f", "-"], Some(&own))
        .await
        .ok();
    c.kubectl(
        "configurator",
        &[
            "patch",
            "lease",
            "netrollout-configurator",
            "-n",
            NS,
            "--type=merge",
            "-p",
            r#"{"spec":{"holderIdentity":"configurator-1"}}"#,
        ],
        None,
    )
    .await
    .ok();
    // Another controller's leader lease, in its namespace or in ours: untouchable.
    c.admin(
        &["create", "-f", "-"],
        Some(&lease("kube-system", "kube-scheduler")),
    )
    .await
    .ok();
    c.admin(&["create", "-f", "-"], Some(&lease(NS, "other-controller")))
        .await
        .ok();
    for (ns, name) in [("kube-system", "kube-scheduler"), (NS, "other-controller")] {
        c.kubectl(
            "configurator",
            &["patch", "lease", name, "-n", ns, "--type=merge", "-p", r#"{"spec":{"holderIdentity":"configurator-0"}}"#],
            None,
        )
        .await
        .refused(&[&format!(
            r#"leases.coordination.k8s.io "{name}" is forbidden: User "system:serviceaccount:netrollout-system:netrollout-configurator" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "{ns}""#
        )]);
        // Not even blind, without reading first (a merge patch straight to the server).
        let client = c
            .server
            .client_for(Identity::service_account(NS, "netrollout-configurator"))
            .unwrap();
        let leases: Api<k8s_openapi::api::coordination::v1::Lease> = Api::namespaced(client, ns);
        let err = leases
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"holderIdentity": "configurator-0"}})),
            )
            .await
            .unwrap_err();
        match err {
            kube::Error::Api(e) => assert!(
                e.code == 403 && e.message.contains(r#"cannot patch resource "leases""#),
                "{e:?}"
            ),
            other => panic!("expected 403, got {other}"),
        }
    }
}

#[tokio::test]
async fn the_operator_role_cannot_change_a_node_config_spec_or_a_revision_snapshot() {
    let c = Cluster::start().await;
    let olga = |args: &'static [&'static str]| c.kubectl("olga", args, None);
    // What the role is for: retry annotations, pausing a revision.
    olga(&["annotate", "nnc", "node-a", "netrollout.io/retry=1"])
        .await
        .ok();
    olga(&[
        "patch",
        "ncr",
        "ncr-1",
        "--type=merge",
        "-p",
        r#"{"spec":{"paused":true}}"#,
    ])
    .await
    .ok();
    // What the admission policies forbid although RBAC grants patch.
    olga(&[
        "patch",
        "nnc",
        "node-a",
        "--type=merge",
        "-p",
        r#"{"spec":{"revision":"ncr-evil"}}"#,
    ])
    .await
    .refused(&[
        "netrollout-node-config-spec",
        "only the netrollout configurator writes the spec of NodeNetworkConfig node-a",
    ]);
    olga(&[
        "patch",
        "ncr",
        "ncr-1",
        "--type=merge",
        "-p",
        r#"{"spec":{"snapshot":{"routingTables":[{"name":"t","spec":{"tableId":100}}]}}}"#,
    ])
    .await
    .refused(&[
        "netrollout-revision-immutable",
        "only spec.paused, spec.sequence and spec.promotion change",
    ]);
    // A promotion only in one's own name (the record names who released a gate).
    let promotion = |by: &str| {
        json!({"spec": {"promotion": {"sequence": 1, "gates": 1, "by": by,
            "at": "2026-11-28T17:00:00Z"}}})
        .to_string()
    };
    let mallory = promotion("someone-else");
    c.kubectl("olga", &["patch", "ncr", "ncr-1", "--type=merge", "-p", &mallory], None)
        .await
        .refused(&[
            "netrollout-revision-immutable",
            "spec.promotion.by of NetworkConfigRevision ncr-1 must name the user who promotes it (olga)",
        ]);
    let own = promotion("olga");
    c.kubectl(
        "olga",
        &["patch", "ncr", "ncr-1", "--type=merge", "-p", &own],
        None,
    )
    .await
    .ok();
    // Creating a node config is the configurator's alone.
    c.kubectl(
        "olga",
        &["create", "-f", "-"],
        Some(&nnc("node-c").to_string()),
    )
    .await
    .refused(&["cannot create resource \"nodenetworkconfigs\""]);
}

#[tokio::test]
async fn bad_input_is_rejected_by_kubectl_apply_with_the_field_named() {
    let c = Cluster::start().await;
    let vrf = |spec: Value| {
        json!({"apiVersion": "netrollout.io/v1alpha1", "kind": "VRFRouteConfiguration",
            "metadata": {"name": "v1"}, "spec": spec})
        .to_string()
    };
    let base = json!({"vrf": "mir", "seq": 10, "import": [], "export": []});
    let with = |k: &str, v: Value| {
        let mut s = base.clone();
        s[k] = v;
        vrf(s)
    };
    let c = &c;
    let apply = |doc: String| async move { c.admin(&["apply", "-f", "-"], Some(&doc)).await };
    apply(with(
        "import",
        json!([{"cidr": "10.0.0.0/33", "action": "permit"}]),
    ))
    .await
    .refused(&[
        "spec.import[0].cidr",
        "must be a network with prefix length",
    ]);
    apply(with(
        "import",
        json!([{"cidr": "10.1.0.0/16", "ge": 8, "action": "permit"}]),
    ))
    .await
    .refused(&[
        "spec.import[0]",
        "ge must lie between the prefix length of cidr",
    ]);
    apply(with(
        "export",
        json!([{"cidr": "10.1.0.0/16", "le": 33, "action": "deny"}]),
    ))
    .await
    .refused(&["spec.export[0]", "le must lie between"]);
    apply(with("aggregate", json!(["10.0.0.0/8", "not-a-cidr"])))
        .await
        .refused(&["spec.aggregate", "every aggregate entry must be a network"]);
    apply(with(
        "loopbacks",
        json!([{"name": "lo.mir", "subnet": "300.0.0.0/24"}]),
    ))
    .await
    .refused(&["spec.loopbacks[0].subnet"]);
    apply(with("routeTarget", json!("my-target")))
        .await
        .refused(&["spec.routeTarget"]);
    apply(with("community", json!("lots of routes")))
        .await
        .refused(&["spec.community"]);
    // An explicit null (kubectl apply would drop it; create sends it as it is).
    let null_ge = with(
        "import",
        json!([{"cidr": "10.1.0.0/16", "ge": null, "action": "permit"}]),
    );
    c.admin(&["create", "-f", "-"], Some(&null_ge))
        .await
        .refused(&["spec.import[0].ge"]);
    let l2 = |extra: Value| {
        let mut spec = json!({"id": 100, "mtu": 1500, "vni": 1100});
        for (k, v) in extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        json!({"apiVersion": "netrollout.io/v1alpha1", "kind": "Layer2NetworkConfiguration",
            "metadata": {"name": "l2"}, "spec": spec})
        .to_string()
    };
    apply(l2(json!({"vrf": "bad vrf!"})))
        .await
        .refused(&["spec.vrf"]);
    apply(l2(json!({"vrf": ""}))).await.refused(&["spec.vrf"]);
    apply(l2(json!({"anycastGateways": ["10.0.0.1"]})))
        .await
        .refused(&["spec.anycastGateways", "address with prefix length"]);
    // And good input passes.
    apply(with(
        "import",
        json!([{"cidr": "10.1.0.0/16", "ge": 24, "le": 32, "action": "permit"}]),
    ))
    .await
    .ok();
    apply(l2(
        json!({"vrf": "mir", "anycastGateways": ["10.0.0.1/24"]}),
    ))
    .await
    .ok();
}
