//! What the lab API server refuses, driven by the real kubectl: malformed bodies, unknown
//! kinds and versions, invalid names, schema violations, unknown fields, and server-side
//! apply conflicts. Every refusal is the right Status, the server stays up, nothing is stored.

use crate::common;

use common::LabApi;

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_gets_the_right_status_and_nothing_is_stored() {
    let lab = LabApi::start().await;
    common::apply_crds(&lab).await;
    let raw = |body: &str| {
        std::fs::write(lab.dir.path().join("body"), body)
            .map(|_| lab.dir.path().join("body"))
            .unwrap()
    };

    let malformed = raw(r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x""#);
    let err = lab
        .fails(&[
            "create",
            "--raw",
            "/api/v1/namespaces/default/configmaps",
            "-f",
            malformed.to_str().unwrap(),
        ])
        .await;
    assert!(
        err.contains("BadRequest") || err.contains("json parse error"),
        "{err}"
    );

    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unterminated\n";
    let err = lab.fails_in(&["apply", "-f", "-"], Some(yaml)).await;
    assert!(err.contains("yaml") || err.contains("YAML"), "{err}");

    let err = lab
        .fails(&["get", "--raw", "/apis/lab.example.com/v1/sprockets"])
        .await;
    assert!(
        err.contains("NotFound") || err.contains("could not find"),
        "{err}"
    );
    let err = lab
        .fails_in(
            &["apply", "-f", "-"],
            Some("apiVersion: lab.example.com/v1\nkind: Sprocket\nmetadata:\n  name: x\n"),
        )
        .await;
    assert!(err.contains("no matches for kind \"Sprocket\""), "{err}");

    let wrong_version = raw(
        r#"{"apiVersion": "lab.example.com/v2", "kind": "Widget", "metadata": {"name": "x"}, "spec": {"color": "red"}}"#,
    );
    let err = lab
        .fails(&[
            "create",
            "--raw",
            "/apis/lab.example.com/v1/widgets",
            "-f",
            wrong_version.to_str().unwrap(),
        ])
        .await;
    assert!(
        err.contains("does not match the expected API version"),
        "{err}"
    );

    let err = lab
        .fails_in(
            &["apply", "-f", "-"],
            Some("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n"),
        )
        .await;
    assert!(
        err.contains("is invalid") && err.contains("metadata.name"),
        "{err}"
    );

    let bad = "apiVersion: lab.example.com/v1\nkind: Widget\nmetadata:\n  name: bad\nspec:\n  color: purple\n  replicas: 0\n  label: this-label-is-too-long\n";
    let err = lab.fails_in(&["apply", "-f", "-"], Some(bad)).await;
    for want in [
        "spec.color: Unsupported value",
        "spec.replicas",
        "spec.label: Too long",
    ] {
        assert!(err.contains(want), "missing {want:?} in {err}");
    }
    let err = lab.fails_in(&["apply", "-f", "-"], Some("apiVersion: lab.example.com/v1\nkind: Widget\nmetadata:\n  name: bad\nspec:\n  replicas: 2\n")).await;
    assert!(err.contains("spec.color: Required value"), "{err}");
    let err = lab.fails_in(&["apply", "-f", "-"], Some("apiVersion: lab.example.com/v1\nkind: Widget\nmetadata:\n  name: bad\nspec:\n  color: red\n  bogus: 1\n")).await;
    assert!(err.contains(r#"unknown field "spec.bogus""#), "{err}");
    let err = lab
        .fails_in(
            &["apply", "-f", "-"],
            Some("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\ndata:\n  a: 1\n"),
        )
        .await;
    assert!(
        err.contains("BadRequest")
            || err.contains("cannot be handled")
            || err.contains("unmarshal"),
        "{err}"
    );

    assert_eq!(lab.ok(&["get", "--raw", "/healthz"]).await, "ok");
    assert!(
        lab.ok(&["get", "wg", "-o", "name"]).await.trim().is_empty(),
        "nothing was stored"
    );
    assert!(
        lab.ok(&["get", "cm", "-o", "name"]).await.trim().is_empty(),
        "nothing was stored"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn server_side_apply_reports_conflicts_until_forced() {
    let lab = LabApi::start().await;
    common::apply_crds(&lab).await;
    let w = |n: u32| {
        format!(
            "apiVersion: lab.example.com/v1\nkind: Widget\nmetadata:\n  name: ssa\nspec:\n  color: red\n  replicas: {n}\n"
        )
    };
    lab.ok_in(&["apply", "--server-side", "-f", "-"], Some(&w(3)))
        .await;
    let err = lab
        .fails_in(
            &["apply", "--server-side", "--field-manager=other", "-f", "-"],
            Some(&w(4)),
        )
        .await;
    assert!(
        err.contains(r#"conflict with "kubectl": .spec.replicas"#),
        "{err}"
    );
    lab.ok_in(
        &[
            "apply",
            "--server-side",
            "--field-manager=other",
            "--force-conflicts",
            "-f",
            "-",
        ],
        Some(&w(4)),
    )
    .await;
    assert_eq!(
        lab.ok(&["get", "widget", "ssa", "-o", "jsonpath={.spec.replicas}"])
            .await,
        "4"
    );
}

#[tokio::test]
async fn a_crd_cel_rule_refuses_an_object_and_names_the_field() {
    let lab = LabApi::start().await;
    common::apply_crds(&lab).await;
    let widget = r#"{"apiVersion": "lab.example.com/v1", "kind": "Widget", "metadata": {"name": "big"},
        "spec": {"color": "red", "replicas": 9}}"#;
    let out = lab.kubectl_in(&["apply", "-f", "-"], Some(widget)).await;
    assert!(
        !out.status.success(),
        "a red widget with 9 replicas was accepted"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"spec: Invalid value: "object": red widgets come in at most 5 replicas"#),
        "{err}"
    );
}
