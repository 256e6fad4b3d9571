//! The lab API server driven by the real kubectl.

use crate::common;

use common::LabApi;

const WIDGET_V2: &str = "apiVersion: lab.example.com/v1
kind: Widget
metadata:
  name: alpha
  labels:
    tier: front
spec:
  color: red
  replicas: 5
  label: second
";

#[tokio::test(flavor = "multi_thread")]
async fn crds_apply_and_custom_objects_are_created_and_updated_from_yaml() {
    let lab = LabApi::start().await;
    common::apply_crds(&lab).await;
    let widgets = common::fixture("widgets.yaml");
    let out = lab.ok(&["apply", "-f", widgets.to_str().unwrap()]).await;
    assert!(
        out.contains("widget.lab.example.com/alpha created"),
        "{out}"
    );
    assert!(out.contains("widget.lab.example.com/beta created"), "{out}");
    let gen1 = lab
        .ok(&[
            "get",
            "widget",
            "alpha",
            "-o",
            "jsonpath={.metadata.generation}",
        ])
        .await;
    assert_eq!(gen1, "1");

    let out = lab.ok_in(&["apply", "-f", "-"], Some(WIDGET_V2)).await;
    assert!(
        out.contains("widget.lab.example.com/alpha configured"),
        "{out}"
    );
    let got = lab
        .ok(&[
            "get",
            "widget",
            "alpha",
            "-o",
            "jsonpath={.spec.replicas} {.spec.label} {.metadata.generation}",
        ])
        .await;
    assert_eq!(got, "5 second 2");

    // Re-applying the same content changes nothing, not even the generation.
    let out = lab.ok_in(&["apply", "-f", "-"], Some(WIDGET_V2)).await;
    assert!(out.contains("unchanged"), "{out}");

    let yaml = lab.ok(&["get", "widget", "beta", "-o", "yaml"]).await;
    for want in [
        "kind: Widget",
        "uid:",
        "creationTimestamp:",
        "resourceVersion:",
        "anything:",
    ] {
        assert!(yaml.contains(want), "missing {want} in\n{yaml}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn get_by_short_name_prints_the_crd_printer_columns() {
    let lab = LabApi::start().await;
    common::apply_crds(&lab).await;
    lab.ok(&[
        "apply",
        "-f",
        common::fixture("widgets.yaml").to_str().unwrap(),
    ])
    .await;
    let out = lab.ok(&["get", "wg"]).await;
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "COLOR", "REPLICAS", "PHASE", "AGE"]);
    let alpha: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(&alpha[..3], ["alpha", "red", "3"]);
    let out = lab
        .ok(&["get", "wg", "-l", "tier=front", "-o", "name"])
        .await;
    assert_eq!(out.trim(), "widget.lab.example.com/alpha");

    // `kubectl get -w` streams Table rows as objects change.
    use tokio::io::AsyncBufReadExt;
    let mut watch = lab
        .kubectl_cmd(&["get", "wg", "-w", "--output-watch-events"])
        .spawn()
        .unwrap();
    let mut rows = tokio::io::BufReader::new(watch.stdout.take().unwrap()).lines();
    assert!(
        rows.next_line()
            .await
            .unwrap()
            .unwrap()
            .starts_with("EVENT")
    );
    lab.ok(&[
        "patch",
        "wg",
        "alpha",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":5}}"#,
    ])
    .await;
    let modified = tokio::time::timeout(std::time::Duration::from_secs(15), async {
        loop {
            let row = rows.next_line().await.unwrap().unwrap();
            if row.starts_with("MODIFIED") {
                return row;
            }
        }
    });
    let row: Vec<String> = modified
        .await
        .unwrap()
        .split_whitespace()
        .map(String::from)
        .collect();
    assert_eq!(&row[..4], ["MODIFIED", "alpha", "red", "5"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn api_resources_lists_built_in_and_custom_kinds() {
    let lab = LabApi::start().await;
    common::apply_crds(&lab).await;
    let out = lab.ok(&["api-resources"]).await;
    let row = |name: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
    };
    assert_eq!(
        row("widgets").unwrap(),
        ["widgets", "wg", "lab.example.com/v1", "false", "Widget"]
    );
    assert_eq!(
        row("gadgets").unwrap(),
        ["gadgets", "gd", "lab.example.com/v1", "true", "Gadget"]
    );
    assert_eq!(
        row("leases").unwrap(),
        ["leases", "coordination.k8s.io/v1", "true", "Lease"]
    );
    for kind in [
        "nodes",
        "namespaces",
        "configmaps",
        "events",
        "customresourcedefinitions",
    ] {
        assert!(row(kind).is_some(), "{kind} missing from\n{out}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn label_annotate_describe_and_patches_change_the_object() {
    let lab = LabApi::start().await;
    common::apply_crds(&lab).await;
    lab.ok(&[
        "apply",
        "-f",
        common::fixture("widgets.yaml").to_str().unwrap(),
    ])
    .await;
    lab.ok(&["label", "widget", "beta", "team=net"]).await;
    lab.ok(&["annotate", "widget", "beta", "note=hello"]).await;
    lab.ok(&[
        "patch",
        "widget",
        "beta",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":2}}"#,
    ])
    .await;
    lab.ok(&[
        "patch",
        "widget",
        "beta",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/color","value":"green"}]"#,
    ])
    .await;
    let got = lab.ok(&["get", "widget", "beta", "-o", "jsonpath={.metadata.labels.team} {.metadata.annotations.note} {.spec.replicas} {.spec.color}"]).await;
    assert_eq!(got, "net hello 2 green");
    let described = lab.ok(&["describe", "widget", "beta"]).await;
    for want in [
        "Name:         beta",
        "team=net",
        "note: hello",
        "Color:",
        "green",
    ] {
        assert!(described.contains(want), "missing {want:?} in\n{described}");
    }
    // A patch that breaks the schema is refused and changes nothing.
    let err = lab
        .fails(&[
            "patch",
            "widget",
            "beta",
            "--type=merge",
            "-p",
            r#"{"spec":{"replicas":11}}"#,
        ])
        .await;
    assert!(
        err.contains("spec.replicas") && err.contains("less than or equal to 10"),
        "{err}"
    );
    assert_eq!(
        lab.ok(&["get", "widget", "beta", "-o", "jsonpath={.spec.replicas}"])
            .await,
        "2"
    );

    // Built-in kinds: strategic merge patch (kubectl's default) on a ConfigMap.
    lab.ok_in(
        &["apply", "-f", "-"],
        Some("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: b\n"),
    )
    .await;
    lab.ok(&["patch", "configmap", "cm", "-p", r#"{"data":{"c":"d"}}"#])
        .await;
    assert_eq!(
        lab.ok(&["get", "cm", "cm", "-o", "jsonpath={.data}"]).await,
        r#"{"a":"b","c":"d"}"#
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_waits_for_finalizers_and_wait_for_delete_returns_when_gone() {
    let lab = LabApi::start().await;
    common::apply_crds(&lab).await;
    lab.ok(&[
        "apply",
        "-f",
        common::fixture("widgets.yaml").to_str().unwrap(),
    ])
    .await;
    lab.ok(&[
        "patch",
        "widget",
        "alpha",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":["lab.example.com/hold"]}}"#,
    ])
    .await;
    lab.ok(&["delete", "widget", "alpha", "--wait=false"]).await;
    let ts = lab
        .ok(&[
            "get",
            "widget",
            "alpha",
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
        ])
        .await;
    assert!(
        !ts.is_empty(),
        "a deleted object with a finalizer keeps existing with deletionTimestamp set"
    );
    lab.fails(&["wait", "--for=delete", "widget/alpha", "--timeout=1s"])
        .await;
    lab.ok(&[
        "patch",
        "widget",
        "alpha",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ])
    .await;
    lab.ok(&["wait", "--for=delete", "widget/alpha", "--timeout=10s"])
        .await;
    let err = lab.fails(&["get", "widget", "alpha"]).await;
    assert!(
        err.contains("NotFound") || err.contains("not found"),
        "{err}"
    );
    lab.ok(&["delete", "widget", "beta"]).await;
    assert!(lab.ok(&["get", "wg", "-o", "name"]).await.trim().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_create_namespace_and_configmap_work_although_kubectl_sends_protobuf() {
    let lab = LabApi::start().await;
    lab.ok(&["create", "namespace", "team"]).await;
    lab.ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "team",
        "--from-literal=a=b",
        "--from-literal=c=d",
    ])
    .await;
    let data = lab
        .ok(&[
            "get",
            "configmap",
            "settings",
            "-n",
            "team",
            "-o",
            "jsonpath={.data}",
        ])
        .await;
    assert_eq!(data, r#"{"a":"b","c":"d"}"#);
    let err = lab.fails(&["create", "namespace", "Not_Valid"]).await;
    assert!(err.contains("metadata.name: Invalid value"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_auth_whoami_names_the_authenticated_user_not_the_kubeconfig_entry() {
    let lab = LabApi::start().await;
    // The kubeconfig's user entry is `netrollout-lab`; the server authenticates the token.
    let out = lab
        .ok(&[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ])
        .await;
    assert_eq!(out, netrollout_lab_apiserver::auth::ADMIN_USER);
    let path = lab.dir.path().join("alice.kubeconfig");
    lab.server
        .write_kubeconfig_for(
            &path,
            netrollout_lab_apiserver::Identity::user("alice", &["ops"]),
        )
        .unwrap();
    let out = netrollout_testkit::kubectl::kubectl_output(
        &path,
        &lab.kubectl_cache(),
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username} {.status.userInfo.groups}",
        ],
        None,
        None,
    )
    .await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text, r#"alice ["ops","system:authenticated"]"#, "{out:?}");
}
