//! Red team, requests: oversized and malformed requests get the answers kube-apiserver gives
//! (413 over 3 MiB of body, etcd's 500 for an object over 1.5 MiB, 400 for bodies that are not
//! JSON or nest too deep, 415 for an unknown content type, 431 for oversized headers and
//! paths, as Go's HTTP server answers), and the server keeps answering afterwards. The
//! `Bearer` scheme is read in any case.

use crate::common;

use common::LabApi;
use common::raw::{self, Answer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use netrollout_lab_apiserver::Identity;
use serde_json::{Value, json};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn config_map(name: &str, bytes: usize) -> ConfigMap {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": {"blob": "x".repeat(bytes)}}))
    .unwrap()
}

fn status(a: &Answer) -> Value {
    serde_json::from_str(&a.body)
        .unwrap_or_else(|e| panic!("not a Status ({e}): {}", &a.body[..a.body.len().min(300)]))
}

async fn admin_post(lab: &LabApi, token: &str, content_type: &str, body: &[u8]) -> Answer {
    raw::request(
        lab.server.addr(),
        "POST",
        CMS,
        &[
            ("Authorization", &format!("Bearer {token}")),
            ("Content-Type", content_type),
        ],
        body,
    )
    .await
}

async fn still_answers(lab: &LabApi) {
    let cms: Api<ConfigMap> = Api::namespaced(lab.server.client().unwrap(), "default");
    cms.list(&Default::default())
        .await
        .expect("the server still answers");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_over_3_mib_is_refused_with_413_as_kube_apiserver_refuses_it() {
    let lab = LabApi::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(lab.server.client().unwrap(), "default");
    let err = cms
        .create(&PostParams::default(), &config_map("huge", 3 * 1024 * 1024))
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(e) => {
            assert_eq!(e.code, 413, "{e:?}");
            assert_eq!(e.reason, "RequestEntityTooLarge");
            assert_eq!(e.message, "Request entity too large: limit is 3145728");
        }
        other => panic!("expected 413, got {other}"),
    }
    assert!(cms.get_opt("huge").await.unwrap().is_none());
    // kubectl shows it in kube-apiserver's words.
    let doc = serde_json::to_string(&config_map("huge", 3 * 1024 * 1024)).unwrap();
    let stderr = lab.fails_in(&["create", "-f", "-"], Some(&doc)).await;
    assert!(
        stderr.contains("Error from server (RequestEntityTooLarge)")
            && stderr.contains("Request entity too large: limit is 3145728"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_object_over_1_5_mib_is_refused_as_etcd_refuses_it_and_nothing_is_stored() {
    let lab = LabApi::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(lab.server.client().unwrap(), "default");
    let rv = lab.server.resource_version();
    let err = cms
        .create(&PostParams::default(), &config_map("big", 1600 * 1024))
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(e) => {
            assert_eq!(e.code, 500, "{e:?}");
            assert_eq!(e.message, "etcdserver: request is too large");
            assert_eq!(
                e.reason, "",
                "kube-apiserver passes etcd's error on without a reason"
            );
        }
        other => panic!("expected 500, got {other}"),
    }
    assert!(cms.get_opt("big").await.unwrap().is_none());
    assert_eq!(
        lab.server.resource_version(),
        rv,
        "no resourceVersion was used"
    );
    // Just under the limit is stored; growing it past the limit is refused and changes nothing.
    let ok = cms
        .create(&PostParams::default(), &config_map("big", 1500 * 1024))
        .await
        .expect("an object under 1.5 MiB is stored");
    let grow = json!({"data": {"more": "y".repeat(100 * 1024)}});
    let err = cms
        .patch("big", &PatchParams::default(), &Patch::Merge(&grow))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref e) if e.code == 500),
        "{err}"
    );
    let now = cms.get("big").await.unwrap();
    assert_eq!(now.metadata.resource_version, ok.metadata.resource_version);
    assert!(!now.data.unwrap().contains_key("more"));
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_bodies_get_400_or_415_and_the_server_keeps_answering() {
    let lab = LabApi::start().await;
    let token = lab.server.issue_token(Identity::admin()).unwrap();
    let cases: Vec<(&str, &str, Vec<u8>, u16, &str)> = vec![
        (
            "truncated JSON",
            "application/json",
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a""#.to_vec(),
            400,
            "BadRequest",
        ),
        (
            "not JSON at all",
            "application/json",
            b"\x00\xff\xfe garbage".to_vec(),
            400,
            "BadRequest",
        ),
        (
            "a list, not an object",
            "application/json",
            b"[1,2,3]".to_vec(),
            400,
            "BadRequest",
        ),
        (
            "nested a million levels deep",
            "application/json",
            {
                let mut v = vec![b'['; 1_000_000];
                v.extend(vec![b']'; 1_000_000]);
                v
            },
            400,
            "BadRequest",
        ),
        (
            "objects nested deeply",
            "application/json",
            {
                let mut v = b"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"d\"},\"data\":".to_vec();
                v.extend("{\"a\":".repeat(100_000).as_bytes());
                v.extend(b"1");
                v.extend("}".repeat(100_001).as_bytes());
                v
            },
            400,
            "BadRequest",
        ),
        (
            "XML",
            "application/xml",
            b"<configmap/>".to_vec(),
            415,
            "UnsupportedMediaType",
        ),
        (
            "protobuf that is not a ConfigMap",
            "application/vnd.kubernetes.protobuf",
            b"k8s\x00garbage".to_vec(),
            415,
            "UnsupportedMediaType",
        ),
    ];
    for (what, ct, body, code, reason) in cases {
        let a = admin_post(&lab, &token, ct, &body).await;
        assert_eq!(a.code, code, "{what}: {}", &a.body[..a.body.len().min(300)]);
        assert_eq!(status(&a)["reason"], reason, "{what}");
        still_answers(&lab).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn huge_headers_and_paths_are_refused_and_the_server_keeps_answering() {
    let lab = LabApi::start().await;
    let token = lab.server.issue_token(Identity::admin()).unwrap();
    let auth = format!("Bearer {token}");
    let big = "a".repeat(2 << 20);
    let a = raw::request(
        lab.server.addr(),
        "GET",
        CMS,
        &[("Authorization", &auth), ("X-Big", &big)],
        b"",
    )
    .await;
    assert_eq!(a.code, 431, "2 MiB header");
    still_answers(&lab).await;
    let many: Vec<(String, String)> = (0..20_000)
        .map(|i| (format!("X-H{i}"), "v".into()))
        .collect();
    let mut headers: Vec<(&str, &str)> =
        many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    headers.push(("Authorization", &auth));
    let a = raw::request(lab.server.addr(), "GET", CMS, &headers, b"").await;
    assert_eq!(a.code, 431, "20,000 headers");
    still_answers(&lab).await;
    let path = format!("{CMS}/{}", "n".repeat(1 << 20));
    let a = raw::request(
        lab.server.addr(),
        "GET",
        &path,
        &[("Authorization", &auth)],
        b"",
    )
    .await;
    assert_eq!(a.code, 431, "1 MiB path");
    still_answers(&lab).await;
    // A long name that fits the request is refused as a name.
    let long = serde_json::to_vec(&config_map(&"n".repeat(300), 1)).unwrap();
    let a = admin_post(&lab, &token, "application/json", &long).await;
    assert_eq!(a.code, 422, "{}", a.body);
    assert!(a.body.contains("metadata.name"), "{}", a.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_bearer_scheme_is_read_in_any_case_and_other_schemes_are_refused() {
    let lab = LabApi::start().await;
    let token = lab.server.issue_token(Identity::admin()).unwrap();
    for (header, code) in [
        (format!("Bearer {token}"), 200),
        (format!("bearer {token}"), 200),
        (format!("BEARER {token}"), 200),
        (format!("Basic {token}"), 401),
        (format!("Bearer{token}"), 401),
        ("Bearer nrlab.forged".to_string(), 401),
        (String::new(), 401),
    ] {
        let a = raw::request(
            lab.server.addr(),
            "GET",
            CMS,
            &[("Authorization", &header)],
            b"",
        )
        .await;
        assert_eq!(a.code, code, "{header:?}: {}", a.body);
    }
}
