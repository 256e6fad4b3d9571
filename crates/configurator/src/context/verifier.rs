//! The request verifier of the unit tests (as controller-rs's `ApiServerVerifier`): a real
//! [`kube::Client`] over a recording service instead of a connection, so a test sees the exact
//! requests a step makes — method, path, content type, body — and what the step does with the
//! server's answer. The service answers a merge patch of a revision it holds (its status or
//! the object) with that revision, the patch merged in and its resourceVersion raised; the
//! creation of a revision (kept) or a node config (answered, not kept) with the object at
//! resourceVersion 1; a list of RolloutAnalyses with none; anything else with 404.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use kube::client::Body;
use kube::runtime::reflector::store;
use kube::runtime::watcher;
use netrollout_api::NetworkConfigRevision;
use serde_json::Value;

use super::{Context, Stores};
use crate::fleet::Changes;
use crate::metrics::Metrics;
use crate::views::NodeConfigView;

/// One request as the server received it.
#[derive(Clone, Debug, PartialEq)]
pub struct Seen {
    /// `PATCH`, `GET`, ...
    pub method: String,
    /// Path and query.
    pub uri: String,
    /// The `Content-Type` header.
    pub content_type: String,
    /// The body as JSON (`null` when empty).
    pub body: Value,
}

impl Seen {
    /// The fields a merge patch of revision `name`'s status subresource sets; panics saying
    /// what differs when this is another request.
    pub fn status_patch(&self, name: &str) -> &Value {
        let path = format!("/apis/netrollout.io/v1alpha1/networkconfigrevisions/{name}/status");
        assert_eq!(self.method, "PATCH", "{self:?}");
        assert_eq!(self.uri.split('?').next(), Some(path.as_str()), "{self:?}");
        assert_eq!(
            self.content_type, "application/merge-patch+json",
            "{self:?}"
        );
        &self.body["status"]
    }
    /// The body of an Event the step recorded (`events.k8s.io/v1`); panics saying what differs
    /// when this is another request.
    pub fn event(&self) -> &Value {
        assert_eq!(self.method, "POST", "{self:?}");
        assert!(self.uri.starts_with("/apis/events.k8s.io/v1/"), "{self:?}");
        &self.body
    }

    /// What an Event the step recorded says: its reason, type (`Normal`, `Warning`), the name
    /// of the object it is about, and its note ([`Seen::event`]).
    pub fn event_said(&self) -> [&str; 4] {
        fn text(v: &Value) -> &str {
            v.as_str().unwrap_or_default()
        }
        let e = self.event();
        [
            text(&e["reason"]),
            text(&e["type"]),
            text(&e["regarding"]["name"]),
            text(&e["note"]),
        ]
    }
}

/// The recording service.
#[derive(Clone, Debug, Default)]
pub struct Verifier {
    seen: Arc<Mutex<Vec<Seen>>>,
    revisions: Arc<Mutex<BTreeMap<String, Value>>>,
}

impl Verifier {
    /// The requests so far; forgets them.
    pub fn take(&self) -> Vec<Seen> {
        self.seen
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default()
    }

    /// The revisions the server holds now, by name.
    pub fn revision(&self, name: &str) -> Option<Value> {
        self.revisions.lock().ok()?.get(name).cloned()
    }

    fn answer(&self, method: &str, uri: &str, body: &Value) -> Option<Value> {
        let path = uri.split('?').next()?;
        if method == "POST" && path == format!("{GROUP}/nodenetworkconfigs") {
            // Answered, not kept: a created node config with its first resourceVersion.
            let mut obj = body.clone();
            obj["metadata"]["resourceVersion"] = "1".into();
            return Some(obj);
        }
        if method == "GET" && path == format!("{GROUP}/rolloutanalyses") {
            return Some(serde_json::json!({
                "apiVersion": "netrollout.io/v1alpha1",
                "kind": "RolloutAnalysisList",
                "metadata": { "resourceVersion": "1" },
                "items": [],
            }));
        }
        let rest = path.strip_prefix(&format!("{GROUP}/networkconfigrevisions"))?;
        let mut revisions = self.revisions.lock().ok()?;
        if method == "POST" && rest.is_empty() {
            let mut obj = body.clone();
            obj["metadata"]["resourceVersion"] = "1".into();
            let name = obj["metadata"]["name"].as_str()?.to_string();
            revisions.insert(name, obj.clone());
            return Some(obj);
        }
        let name = rest.strip_prefix('/')?;
        let name = name.strip_suffix("/status").unwrap_or(name);
        if method != "PATCH" {
            return None;
        }
        let ncr = revisions.get_mut(name)?;
        let rv = ncr["metadata"]["resourceVersion"]
            .as_str()?
            .parse::<u64>()
            .ok()?;
        merge(ncr, body);
        ncr["metadata"]["resourceVersion"] = (rv + 1).to_string().into();
        Some(ncr.clone())
    }
}

/// The path of the `netrollout.io/v1alpha1` API.
const GROUP: &str = "/apis/netrollout.io/v1alpha1";

/// A JSON merge patch (RFC 7386), as the API server applies `application/merge-patch+json`.
fn merge(target: &mut Value, patch: &Value) {
    let Some(fields) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    let Some(obj) = target.as_object_mut() else {
        return;
    };
    for (k, v) in fields {
        if v.is_null() {
            obj.remove(k);
        } else {
            merge(obj.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

impl tower::Service<http::Request<Body>> for Verifier {
    type Response = http::Response<Body>;
    type Error = std::convert::Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let bytes = body.collect_bytes().await.unwrap_or_default();
            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let method = parts.method.to_string();
            let uri = parts
                .uri
                .path_and_query()
                .map_or("", |p| p.as_str())
                .to_string();
            let content_type = (parts.headers.get(http::header::CONTENT_TYPE))
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            let answer = this.answer(&method, &uri, &body);
            if let Ok(mut seen) = this.seen.lock() {
                seen.push(Seen {
                    method,
                    uri,
                    content_type,
                    body,
                });
            }
            let response = match answer {
                Some(obj) => http::Response::new(Body::from(obj.to_string().into_bytes())),
                None => {
                    let mut r = http::Response::new(Body::from(
                        br#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}"#.to_vec(),
                    ));
                    *r.status_mut() = http::StatusCode::NOT_FOUND;
                    r
                }
            };
            Ok(response)
        })
    }
}

/// A context whose caches hold `revisions` (resourceVersion 1) and `configs`, and whose client
/// talks to the returned verifier, which knows the revisions; `leading` is the leadership flag.
pub fn context(
    revisions: &[NetworkConfigRevision],
    configs: &[NodeConfigView],
    leading: bool,
) -> (Context, Verifier) {
    let verifier = Verifier::default();
    let (ncrs, mut cache) = store::<NetworkConfigRevision>();
    for r in revisions {
        let mut r = r.clone();
        r.metadata.resource_version = Some("1".into());
        r.status.get_or_insert_with(Default::default);
        let name = r.metadata.name.clone().unwrap_or_default();
        if let (Ok(mut known), Ok(json)) = (verifier.revisions.lock(), serde_json::to_value(&r)) {
            known.insert(name, json);
        }
        cache.apply_watcher_event(&watcher::Event::Apply(r));
    }
    let (nncs, mut cache) = store::<NodeConfigView>();
    for c in configs {
        cache.apply_watcher_event(&watcher::Event::Apply(c.clone()));
    }
    let stores = Stores {
        vrfs: store().0,
        layer2s: store().0,
        tables: store().0,
        peerings: store().0,
        nodes: store().0,
        nncs,
        ncrs,
        control: store().0,
        schedules: store().0,
    };
    let (_, leader) = tokio::sync::watch::channel(leading);
    let ctx = Context::new(
        kube::Client::new(verifier.clone(), "default"),
        stores,
        Arc::new(Changes::default()),
        Arc::new(Metrics::default()),
        leader,
        "verifier".into(),
        Duration::from_secs(5),
    );
    (ctx, verifier)
}
