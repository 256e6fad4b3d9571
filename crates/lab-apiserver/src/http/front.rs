//! The HTTP front: authenticates every request (bearer token, 401 without one), authorizes
//! it (RBAC, 403), routes it (discovery, OpenAPI, fault control, resources), applies injected
//! faults, and renders responses.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Request, State as AxState};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, Method, header};

use crate::authz::rbac::{self, Attributes};
use crate::error::{ApiError, MAX_REQUEST_BYTES};
use crate::faults::{FaultConfig, Outage};
use crate::http::app::{App, Req, Target, bytes_response, json_response};
use crate::http::discovery;
use crate::http::verbs;

/// Where a client asks who it is (`kubectl auth whoami`).
const SELF_SUBJECT_REVIEWS: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";

/// The router's only handler.
pub async fn handle(AxState(app): AxState<Arc<App>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let body = match read_body(body).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let mut headers = parts.headers;
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    // A SelfSubjectReview's body says nothing the server reads (kubectl sends it as protobuf).
    let ignored = parts.uri.path() == SELF_SUBJECT_REVIEWS;
    let body = if !body.is_empty() && !ignored && (ct.contains("protobuf") || ct.contains("cbor")) {
        match crate::http::protobuf::decode(&body) {
            Some(v) => {
                headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                bytes::Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
            }
            None => {
                let msg = format!(
                    "the body of the request was in an unknown format - accepted media types include: \
                     application/json, application/yaml (got {ct}; protobuf only for Namespace and ConfigMap)"
                );
                return ApiError::new(415, "UnsupportedMediaType", msg).into_response();
            }
        }
    } else {
        body
    };
    let query = parts.uri.query().map(parse_query).unwrap_or_default();
    let path = parts.uri.path();
    let user = if matches!(path, "/healthz" | "/readyz" | "/livez") {
        // Health checks are open to anonymous users, as on a real API server.
        Arc::new(crate::authz::auth::Identity::user("system:anonymous", &[]))
    } else {
        let auth = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        match app.tokens.authenticate(auth) {
            Ok(u) => u,
            Err(e) => return e.into_response(),
        }
    };
    let r = Req {
        method: parts.method,
        query,
        headers,
        body,
        user,
    };
    let routed = if app.faults.serves_abandoned() {
        // In a task of its own: dropping this handler (the client hung up) does not end it.
        let path = path.to_string();
        let app = app.clone();
        tokio::spawn(async move { route(&app, &path, r).await })
            .await
            .unwrap_or_else(|e| {
                Err(ApiError::new(
                    500,
                    "InternalError",
                    format!("serving the request failed: {e}"),
                ))
            })
    } else {
        route(&app, path, r).await
    };
    match routed {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    }
}

/// The request body, read up to [`MAX_REQUEST_BYTES`] as kube-apiserver reads a write's
/// body: one byte more is 413 `RequestEntityTooLarge`, and nothing past the limit is buffered.
async fn read_body(body: axum::body::Body) -> Result<bytes::Bytes, ApiError> {
    use futures::StreamExt as _;
    let mut stream = body.into_data_stream();
    // A body in one chunk is kept as it is; more chunks are joined.
    let (mut first, mut joined, mut len) = (None::<bytes::Bytes>, bytes::BytesMut::new(), 0);
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| ApiError::bad_request(format!("cannot read request body: {e}")))?;
        len += chunk.len();
        if len > MAX_REQUEST_BYTES {
            // Discard the rest (up to a bound) before answering, so that the client, still
            // sending, is not reset and reads the 413.
            if len > DRAIN_BYTES {
                break;
            }
            (first, joined) = (None, bytes::BytesMut::new());
            continue;
        }
        match first.take() {
            None if joined.is_empty() => first = Some(chunk),
            Some(f) => {
                joined.extend_from_slice(&f);
                joined.extend_from_slice(&chunk);
            }
            None => joined.extend_from_slice(&chunk),
        }
    }
    if len > MAX_REQUEST_BYTES {
        return Err(ApiError::request_too_large());
    }
    Ok(first.unwrap_or_else(|| joined.freeze()))
}

/// How much of an oversized body is read (and dropped) before the 413 is sent.
const DRAIN_BYTES: usize = 64 << 20;

fn parse_query(q: &str) -> HashMap<String, String> {
    q.split('&')
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            Some((decode(k)?, decode(v)?))
        })
        .collect()
}

fn decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                out.push(
                    u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?, 16).ok()?,
                );
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

async fn route(app: &App, path: &str, r: Req) -> Result<Response, ApiError> {
    if let Some(rest) = path.strip_prefix("/lab/faults") {
        if !r.user.is_master() {
            return Err(ApiError::new(
                403,
                "Forbidden",
                format!(
                    "User \"{}\" cannot use the lab's fault injection: it is for the admin",
                    r.user.username
                ),
            ));
        }
        return faults(app, rest, r);
    }
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if path == SELF_SUBJECT_REVIEWS {
        return self_subject_review(&r);
    }
    let (group, version, rest): (&str, &str, &[&str]) = match segs.as_slice() {
        ["healthz" | "readyz" | "livez", ..] => {
            app.faults.before("get", "healthz", "").await?;
            return Ok(bytes_response(200, b"ok".to_vec(), "text/plain"));
        }
        ["api", "v1", rest @ ..] if !rest.is_empty() => ("", "v1", rest),
        ["apis", g, v, rest @ ..] if !rest.is_empty() => (g, v, rest),
        _ => {
            app.faults.before("get", "discovery", "").await?;
            return discover(app, &segs);
        }
    };
    let target = resolve(app, group, version, rest)?;
    let verb = verb_of(&r, &target);
    authorize(app, &r, &target, verb)?;
    // Counted until served: a test that released it knows when it was.
    let _held = app
        .faults
        .held_back(verb, &target.rt.plural, &target.rt.kind)
        .await;
    app.faults
        .before(verb, &target.rt.plural, &target.rt.kind)
        .await?;
    verbs::serve(app, target, verb, r)
}

/// `POST /apis/authentication.k8s.io/v1/selfsubjectreviews` (what `kubectl auth whoami`
/// sends): the requesting user as the server authenticated them. Every authenticated user may
/// ask, as Kubernetes' `system:basic-user` role allows.
fn self_subject_review(r: &Req) -> Result<Response, ApiError> {
    if r.method != Method::POST {
        return Err(ApiError::new(
            405,
            "MethodNotAllowed",
            "selfsubjectreviews only accepts POST (create)",
        ));
    }
    let u = &r.user;
    Ok(json_response(
        201,
        &serde_json::json!({
            "kind": "SelfSubjectReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {},
            "status": { "userInfo": {
                "username": u.username,
                "uid": u.uid,
                "groups": u.groups,
                "extra": u.extra,
            } },
        }),
    ))
}

fn resolve(app: &App, group: &str, version: &str, rest: &[&str]) -> Result<Target, ApiError> {
    let (ns, rest) = match rest {
        ["namespaces", _, "status" | "finalize"] => (None, rest),
        ["namespaces", ns, tail @ ..] if !tail.is_empty() => (Some(ns.to_string()), tail),
        _ => (None, rest),
    };
    let (plural, name, sub) = match rest {
        [p] => (*p, None, None),
        [p, n] => (*p, Some(n.to_string()), None),
        [p, n, s] => (*p, Some(n.to_string()), Some(s.to_string())),
        _ => return Err(ApiError::no_resource()),
    };
    let rt = app
        .lock()?
        .registry
        .get(group, version, plural)
        .ok_or_else(ApiError::no_resource)?;
    if (!rt.namespaced && ns.is_some()) || (rt.namespaced && ns.is_none() && name.is_some()) {
        return Err(ApiError::no_resource());
    }
    if sub
        .as_deref()
        .is_some_and(|s| s != "status" || !rt.status_subresource)
    {
        return Err(ApiError::no_resource());
    }
    Ok(Target { rt, ns, name, sub })
}

/// RBAC for a resource request. A list or watch pinned to one name by a `metadata.name=`
/// field selector is authorized for that name, as Kubernetes does (so `resourceNames` rules
/// cover a watch of one object).
fn authorize(app: &App, r: &Req, t: &Target, verb: &str) -> Result<(), ApiError> {
    if r.user.is_master() {
        return Ok(());
    }
    let selected = crate::selector::FieldSelector::parse(r.q("fieldSelector").unwrap_or_default())?;
    let name = t.name.as_deref().or_else(|| {
        matches!(verb, "list" | "watch")
            .then(|| selected.name())
            .flatten()
    });
    let a = Attributes {
        verb,
        group: &t.rt.group,
        resource: &t.rt.plural,
        sub: t.sub.as_deref(),
        ns: t.ns.as_deref(),
        name,
    };
    let st = app.lock()?;
    rbac::authorize(&st, &r.user, &a)
}

fn verb_of(r: &Req, t: &Target) -> &'static str {
    let watch = matches!(r.q("watch"), Some("true" | "1"));
    match (&r.method, t.name.is_some()) {
        (&Method::GET, _) if watch => "watch",
        (&Method::GET, true) => "get",
        (&Method::GET, false) => "list",
        (&Method::POST, _) => "create",
        (&Method::PUT, _) => "update",
        (&Method::PATCH, _) => "patch",
        (&Method::DELETE, true) => "delete",
        (&Method::DELETE, false) => "deletecollection",
        _ => "unknown",
    }
}

fn discover(app: &App, segs: &[&str]) -> Result<Response, ApiError> {
    if segs == ["openapi", "v2"] {
        // An empty OpenAPI v2 document (valid, empty protobuf): kubectl only falls back to v2
        // for kinds the server does not serve, and then reports the missing kind itself.
        return Ok(bytes_response(
            200,
            vec![],
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
        ));
    }
    let st = app.lock()?;
    let reg = &st.registry;
    let doc = match segs {
        ["version"] => Some(discovery::version()),
        ["api"] => Some(discovery::core_versions(&app.addr.to_string())),
        ["apis"] => Some(discovery::group_list(reg)),
        ["api", "v1"] => discovery::resource_list(reg, "", "v1"),
        ["apis", g] => discovery::group(reg, g),
        ["apis", g, v] => discovery::resource_list(reg, g, v),
        ["openapi", "v3"] => Some(discovery::openapi_root(reg)),
        ["openapi", "v3", rest @ ..] => discovery::openapi_doc(reg, &rest.join("/")),
        _ => None,
    };
    doc.map(|d| json_response(200, &d))
        .ok_or_else(ApiError::no_resource)
}

/// `/lab/faults`: `GET` shows, `PUT` replaces the [`FaultConfig`];
/// `POST /lab/faults/drop-watches`; `POST /lab/faults/outage?mode=fail|hang|none`.
fn faults(app: &App, rest: &str, r: Req) -> Result<Response, ApiError> {
    let f = &app.faults;
    match (&r.method, rest) {
        (&Method::GET, "" | "/") => {}
        (&Method::PUT, "" | "/") => {
            let cfg: FaultConfig = serde_json::from_slice(&r.body)
                .map_err(|e| ApiError::bad_request(format!("invalid fault configuration: {e}")))?;
            f.set(cfg);
        }
        (&Method::DELETE, "" | "/") => f.clear(),
        (&Method::POST, "/drop-watches") => f.drop_watches(),
        (&Method::POST, "/outage") => {
            let mode = match r.q("mode").unwrap_or("fail") {
                "fail" => Outage::Fail,
                "hang" => Outage::Hang,
                "none" => Outage::None,
                other => {
                    return Err(ApiError::bad_request(format!(
                        "unknown outage mode {other:?}: use fail, hang or none"
                    )));
                }
            };
            f.set_outage(mode);
        }
        _ => return Err(ApiError::no_resource()),
    }
    Ok(json_response(
        200,
        &serde_json::to_value(f.config()).unwrap_or_default(),
    ))
}
