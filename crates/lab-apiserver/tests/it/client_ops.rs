//! The lab API server's operational side, driven by real clients: leader election with
//! kube-lease-manager, fault injection (in process and over HTTP), persistence across a
//! restart, the binary with its kubeconfig, events from a Recorder seen by kubectl, and
//! namespace and CRD deletion.

use crate::common;

use std::time::Duration;

use common::LabApi;
use common::objects::*;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use netrollout_lab_apiserver::{Config, FaultConfig, Outage};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn leader_election_with_kube_lease_manager_moves_to_the_other_client() {
    use kube_lease_manager::LeaseManagerBuilder;
    let lab = LabApi::start().await;
    let build = |id: &str| {
        LeaseManagerBuilder::new(lab.server.client().unwrap(), "lab-leader")
            .with_namespace("default")
            .with_identity(id)
            .with_duration(2)
            .with_grace(1)
            .build()
    };
    let (a, b) = (build("a").await.unwrap(), build("b").await.unwrap());
    let (mut a_rx, a_task) = a.watch().await;
    let (mut b_rx, b_task) = b.watch().await;
    let leaders = |a: bool, b: bool| usize::from(a) + usize::from(b);
    tokio::time::timeout(Duration::from_secs(20), async {
        while leaders(*a_rx.borrow_and_update(), *b_rx.borrow_and_update()) != 1 {
            tokio::select! { _ = a_rx.changed() => {}, _ = b_rx.changed() => {} }
        }
    })
    .await
    .expect("exactly one leader is elected");
    let (mut leader_rx, leader_task, mut other_rx, other_task) = if *a_rx.borrow() {
        (a_rx, a_task, b_rx, b_task)
    } else {
        (b_rx, b_task, a_rx, a_task)
    };
    assert!(!*other_rx.borrow());
    // The leader steps down (its channel closes, the manager releases the lease).
    drop(leader_rx.borrow_and_update());
    drop(leader_rx);
    let _ = tokio::time::timeout(Duration::from_secs(10), leader_task).await;
    tokio::time::timeout(Duration::from_secs(20), async {
        while !*other_rx.borrow_and_update() {
            other_rx.changed().await.unwrap();
        }
    })
    .await
    .expect("the other client takes over");
    drop(other_rx);
    let _ = tokio::time::timeout(Duration::from_secs(10), other_task).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn faults_inject_errors_latency_and_outages_in_process_and_over_http() {
    let lab = LabApi::start().await;
    let client = lab.server.client().unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    lab.server
        .faults()
        .set_error_rate(Some("create"), Some("ConfigMap"), 1.0);
    let err = cms
        .create(&PostParams::default(), &config_map("x"))
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Api(e) if e.code == 500));
    assert!(
        cms.list(&Default::default()).await.is_ok(),
        "other verbs are unaffected"
    );
    lab.server.faults().clear();

    // A counted rule fails exactly that many requests, then none.
    lab.server
        .faults()
        .fail_next(Some("create"), Some("configmaps"), 2);
    for _ in 0..2 {
        let err = cms
            .create(&PostParams::default(), &config_map("counted"))
            .await
            .unwrap_err();
        assert!(matches!(err, kube::Error::Api(e) if e.code == 500));
    }
    cms.create(&PostParams::default(), &config_map("counted"))
        .await
        .expect("the third create is served: the rule is spent");
    assert_eq!(lab.server.faults().config().errors[0].count, Some(0));
    lab.server.faults().clear();

    lab.server.faults().set_latency(Duration::from_millis(300));
    let t = std::time::Instant::now();
    cms.list(&Default::default()).await.unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "latency is added"
    );
    lab.server.faults().clear();

    // Over HTTP, as a separate process would: a failing outage, then its end.
    let put = |cfg: FaultConfig| {
        http::Request::put("/lab/faults")
            .body(serde_json::to_vec(&cfg).unwrap())
            .unwrap()
    };
    client
        .request_text(put(FaultConfig {
            outage: Outage::Fail,
            ..Default::default()
        }))
        .await
        .unwrap();
    let err = cms.get_opt("x").await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(e) if e.code == 500 && e.message.contains("outage")));
    client
        .request_text(
            http::Request::post("/lab/faults/outage?mode=none")
                .body(vec![])
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(cms.get_opt("x").await.unwrap().is_none());

    // A hanging outage holds requests until it ends.
    lab.server.faults().set_outage(Outage::Hang);
    let pending = tokio::spawn({
        let cms = cms.clone();
        async move {
            cms.create(&PostParams::default(), &config_map("late"))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!pending.is_finished(), "requests hang during the outage");
    lab.server.faults().set_outage(Outage::None);
    pending.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn objects_survive_a_restart_when_persisted_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        data: Some(dir.path().join("data.json")),
        ..Config::default()
    };
    let lab = LabApi::start_with(cfg.clone()).await;
    let client = lab.server.client().unwrap();
    install_crds(&client).await;
    let widgets: Api<DynamicObject> = Api::all_with(client.clone(), &widgets_resource());
    let created = widgets
        .create(&PostParams::default(), &widget("kept", 3))
        .await
        .unwrap();
    let rv = lab.server.resource_version();
    lab.server.shutdown().await.unwrap();

    let lab = LabApi::start_with(cfg).await;
    assert_eq!(lab.server.resource_version(), rv);
    let widgets: Api<DynamicObject> =
        Api::all_with(lab.server.client().unwrap(), &widgets_resource());
    let kept = widgets.get("kept").await.unwrap();
    assert_eq!(kept.metadata.uid, created.metadata.uid);
    assert_eq!(kept.data["spec"]["replicas"], 3);
    let next = widgets
        .create(&PostParams::default(), &widget("next", 1))
        .await
        .unwrap();
    assert!(
        next.metadata
            .resource_version
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > rv,
        "resourceVersions keep increasing"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_binary_prints_its_address_and_writes_a_kubeconfig_kubectl_accepts() {
    use tokio::io::AsyncBufReadExt;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_netrollout-lab-apiserver"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--data",
            dir.path().join("data.json").to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let url = lines.next_line().await.unwrap().unwrap();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let kubectl = |args: Vec<&str>| {
        std::process::Command::new(common::KUBECTL)
            .env("KUBECONFIG", &kubeconfig)
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .args(args)
            .output()
            .unwrap()
    };
    let out = kubectl(vec!["get", "namespaces", "-o", "name"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("namespace/default"));
    child.start_kill().unwrap();
    child.wait().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn events_a_recorder_publishes_show_up_in_kubectl_get_events_and_describe() {
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let lab = LabApi::start().await;
    let client = lab.server.client().unwrap();
    install_crds(&client).await;
    let widgets: Api<DynamicObject> = Api::all_with(client.clone(), &widgets_resource());
    let w = widgets
        .create(&PostParams::default(), &widget("noisy", 1))
        .await
        .unwrap();
    let reference =
        serde_json::from_value(json!({"apiVersion": "lab.example.com/v1", "kind": "Widget",
        "name": "noisy", "uid": w.metadata.uid.unwrap()}))
        .unwrap();
    let reporter = Reporter {
        controller: "lab-test".into(),
        instance: Some("lab-test-0".into()),
    };
    let event = Event {
        type_: EventType::Warning,
        reason: "Polished".into(),
        note: Some("polished to a shine".into()),
        action: "Polish".into(),
        secondary: None,
    };
    Recorder::new(client, reporter)
        .publish(&event, &reference)
        .await
        .unwrap();
    let listed = lab
        .ok(&[
            "get",
            "events",
            "-o",
            "jsonpath={.items[*].reason} {.items[*].message}",
        ])
        .await;
    assert_eq!(listed, "Polished polished to a shine");
    let table = lab.ok(&["get", "events"]).await;
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    );
    assert!(
        table.contains("Warning") && table.contains("widget/noisy"),
        "{table}"
    );
    let described = lab.ok(&["describe", "widget", "noisy"]).await;
    assert!(
        described.contains("Polished") && described.contains("polished to a shine"),
        "{described}"
    );
    let via_events_api = lab
        .ok(&[
            "get",
            "events.v1.events.k8s.io",
            "-o",
            "jsonpath={.items[*].note}",
        ])
        .await;
    assert_eq!(via_events_api, "polished to a shine");
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_a_namespace_or_a_crd_deletes_what_it_contains() {
    use k8s_openapi::api::core::v1::Namespace;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let lab = LabApi::start().await;
    let client = lab.server.client().unwrap();
    install_crds(&client).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "doomed"}})).unwrap(),
        )
        .await
        .unwrap();
    let in_ns: Api<ConfigMap> = Api::namespaced(client.clone(), "doomed");
    in_ns
        .create(&PostParams::default(), &config_map("inside"))
        .await
        .unwrap();
    namespaces
        .delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        Api::<ConfigMap>::all(client.clone())
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let err = in_ns
        .create(&PostParams::default(), &config_map("late"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(e) if e.code == 404),
        "no objects in a namespace that does not exist"
    );

    let widgets: Api<DynamicObject> = Api::all_with(client.clone(), &widgets_resource());
    widgets
        .create(&PostParams::default(), &widget("w", 1))
        .await
        .unwrap();
    let mut stream = widgets
        .watch(&Default::default(), "0")
        .await
        .unwrap()
        .boxed();
    Api::<CustomResourceDefinition>::all(client.clone())
        .delete("widgets.lab.example.com", &DeleteParams::default())
        .await
        .unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while stream.next().await.is_some() {}
    });
    assert!(ended.await.is_ok(), "watches of a deleted kind end");
    let err = widgets.list(&Default::default()).await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(e) if e.code == 404),
        "the kind is no longer served"
    );
    install_widget_crd(&client).await;
    assert!(
        widgets
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "its objects went with it"
    );
}
