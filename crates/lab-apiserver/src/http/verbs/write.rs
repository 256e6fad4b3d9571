//! The writing verbs: create, update, patch, delete and deletecollection, with admission
//! (name rules, typed or schema validation, field ownership) before anything is stored.

use axum::response::Response;
use http::header;
use serde_json::{Value, json};

use super::{Shape, name_of, ns_of, render, render_written, shape};
use crate::error::ApiError;
use crate::http::app::{App, Req, Target, json_response};
use crate::object::{invalid_name, meta_mut, meta_str, parse_body, random_suffix};
use crate::resources::{Builtin, ResourceType};
use crate::storage::convert::{to_storage, view};
use crate::write::admission::{self, Attempt};
use crate::write::builtin;
use crate::write::managed::{self, Writer};
use crate::write::patch::{self, PatchKind};
use netrollout_crdcheck::schema;

fn body_object(r: &Req) -> Result<Value, ApiError> {
    let ct = r.header(header::CONTENT_TYPE);
    // As kube-apiserver negotiates a body's serializer: no Content-Type means JSON.
    let media = ct.split(';').next().unwrap_or_default().trim();
    if !matches!(media, "" | "application/json" | "application/yaml") {
        return Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types \
                 include: application/json, application/yaml, application/vnd.kubernetes.protobuf \
                 (got {ct:?})"
            ),
        ));
    }
    let v = parse_body(&r.body, ct).map_err(ApiError::bad_request)?;
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a single object",
        ));
    }
    Ok(v)
}

/// Checks that the body's apiVersion and kind are the URL's.
fn check_type(rt: &ResourceType, obj: &Value) -> Result<(), ApiError> {
    let (av, kind) = (
        obj["apiVersion"].as_str().unwrap_or_default(),
        obj["kind"].as_str().unwrap_or_default(),
    );
    if kind.is_empty() {
        return Err(ApiError::bad_request(
            "Object 'Kind' is missing in the request body",
        ));
    }
    if av != rt.api_version() || kind != rt.kind {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({}) for kind {kind} (expected {})",
            rt.api_version(),
            rt.kind
        )));
    }
    Ok(())
}

fn check_ns(t: &Target, obj: &mut Value) -> Result<(), ApiError> {
    let body_ns = meta_str(obj, "namespace");
    if t.rt.namespaced && !body_ns.is_empty() && body_ns != ns_of(t) {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

fn writer(r: &Req, apply: bool) -> Writer {
    let ua = r
        .header(header::USER_AGENT)
        .split('/')
        .next()
        .unwrap_or_default();
    let manager = r
        .q("fieldManager")
        .filter(|m| !m.is_empty())
        .unwrap_or(if ua.is_empty() { "unknown" } else { ua });
    Writer {
        manager: manager.to_string(),
        apply,
        force: r.q("force") == Some("true"),
    }
}

fn strict(r: &Req) -> bool {
    r.q("fieldValidation") == Some("Strict")
}

/// CEL admission (CRD rules, admission policies) of a write as `r.user`.
fn cel_admit(
    st: &crate::storage::State,
    t: &Target,
    r: &Req,
    object: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    admission::admit(
        st,
        &Attempt {
            operation: if old.is_some() { "UPDATE" } else { "CREATE" },
            rt: &t.rt,
            sub: t.sub.as_deref(),
            ns: ns_of(t),
            user: &r.user,
            object,
            old,
        },
    )
}

fn dry_run(r: &Req) -> bool {
    r.q("dryRun").is_some_and(|d| !d.is_empty())
}

/// Validates an object before it is stored; drops unknown fields unless `strict`.
/// `stored_meta` is the stored version's `metadata` for a write over it: that metadata passed
/// these checks when it was stored, so outside strict mode (where the unknown fields the typed
/// metadata round trip finds are not used) a custom object's metadata is checked only where it
/// differs from it (`builtin::check_meta_changes`).
fn admit(
    rt: &ResourceType,
    obj: &mut Value,
    strict: bool,
    stored_meta: Option<&Value>,
) -> Result<(), ApiError> {
    let name = meta_str(obj, "name").to_string();
    let label = matches!(rt.builtin, Some(Builtin::Namespace));
    let invalid = |field: &str, msg: String| {
        ApiError::invalid(&rt.group, &rt.kind, &name, &[(field.to_string(), msg)])
    };
    if let Some(msg) = invalid_name(&name, label) {
        return Err(invalid(
            "metadata.name",
            format!("Invalid value: {name:?}: {msg}"),
        ));
    }
    if rt.builtin == Some(Builtin::Crd) {
        let want = format!(
            "{}.{}",
            obj["spec"]["names"]["plural"].as_str().unwrap_or_default(),
            obj["spec"]["group"].as_str().unwrap_or_default()
        );
        if name != want {
            return Err(invalid(
                "metadata.name",
                format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
            ));
        }
    }
    let decode = |e: String| {
        ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {e}",
            rt.kind, rt.version, rt.kind
        ))
    };
    let mut unknown = match rt.builtin {
        Some(b) => {
            let (typed, unknown) = builtin::check(b, obj).map_err(decode)?;
            if !strict && !unknown.is_empty() {
                *obj = typed;
            }
            unknown
        }
        None => match stored_meta.filter(|_| !strict) {
            Some(stored) => builtin::check_meta_changes(obj, stored)
                .map(|()| vec![])
                .map_err(decode)?,
            None => builtin::check_meta(obj).map_err(decode)?,
        },
    };
    if let Some(s) = &rt.schema {
        let out = schema::validate(s, obj, !strict);
        unknown.extend(out.unknown);
        if !out.invalid.is_empty() {
            return Err(ApiError::invalid(&rt.group, &rt.kind, &name, &out.invalid));
        }
    }
    if strict && !unknown.is_empty() {
        let list: Vec<String> = unknown
            .iter()
            .map(|u| format!("unknown field \"{u}\""))
            .collect();
        return Err(ApiError::bad_request(format!(
            "strict decoding error: {}",
            list.join(", ")
        )));
    }
    Ok(())
}

pub(super) fn create(app: &App, t: &Target, r: &Req) -> Result<Response, ApiError> {
    if t.name.is_some() {
        return Err(ApiError::method_not_allowed(
            "POST goes to the collection, not to an object",
        ));
    }
    let mut obj = body_object(r)?;
    check_type(&t.rt, &obj)?;
    check_ns(t, &mut obj)?;
    let generate = meta_str(&obj, "generateName").to_string();
    if meta_str(&obj, "name").is_empty() && !generate.is_empty() {
        meta_mut(&mut obj).insert(
            "name".into(),
            json!(format!("{generate}{}", random_suffix())),
        );
    }
    admit(&t.rt, &mut obj, strict(r), None)?;
    let mut obj = to_storage(&t.rt, obj);
    managed::record(&writer(r, false), None, &mut obj, None, &t.rt.api_version());
    let mut st = app.lock()?;
    cel_admit(&st, t, r, &obj, None)?;
    if dry_run(r) {
        return Ok(render(&t.rt, &obj, Shape::Plain, 201));
    }
    let created = st.create(&t.rt, ns_of(t), obj)?;
    Ok(render_written(&st, &t.rt, &created, shape(r), 201))
}

pub(super) fn update(app: &App, t: &Target, r: &Req) -> Result<Response, ApiError> {
    let name = name_of(t)?;
    let mut obj = body_object(r)?;
    check_type(&t.rt, &obj)?;
    check_ns(t, &mut obj)?;
    if meta_str(&obj, "name") != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            meta_str(&obj, "name")
        )));
    }
    admit(&t.rt, &mut obj, strict(r), None)?;
    let mut obj = to_storage(&t.rt, obj);
    let mut st = app.lock()?;
    let old = st.get(&t.rt, ns_of(t), name);
    if t.sub.is_none() {
        // A status write keeps the stored metadata (`State::update`), managedFields included.
        managed::record(
            &writer(r, false),
            old.as_deref(),
            &mut obj,
            None,
            &t.rt.api_version(),
        );
    }
    cel_admit(&st, t, r, &obj, old.as_deref())?;
    if dry_run(r) {
        return st
            .get(&t.rt, ns_of(t), name)
            .map(|_| render(&t.rt, &obj, Shape::Plain, 200))
            .ok_or_else(|| ApiError::not_found(&t.rt.group, &t.rt.plural, name));
    }
    let precondition = meta_str(&obj, "resourceVersion").to_string();
    let current = old.clone();
    let updated = st.update(&t.rt, (ns_of(t), name), obj, t.sub.is_some(), old);
    traced(
        "update",
        t,
        name,
        &precondition,
        current.as_deref(),
        &updated,
    );
    let updated = updated?;
    Ok(render_written(&st, &t.rt, &updated, shape(r), 200))
}

/// Logs a write over a stored object (target `netrollout_lab_apiserver::writes`): at debug
/// level the verb, the object, the `resourceVersion` the write was conditional on (empty:
/// none), the stored one it met and what came of it; at trace level also the status written.
/// Off unless asked for (`RUST_LOG=netrollout_lab_apiserver::writes=debug`): it tells which
/// write of a test's many changed an object, and whether its precondition held.
fn traced(
    verb: &str,
    t: &Target,
    name: &str,
    precondition: &str,
    current: Option<&Value>,
    result: &Result<std::sync::Arc<Value>, ApiError>,
) {
    let current = current.map_or("", |c| meta_str(c, "resourceVersion"));
    let plural = &t.rt.plural;
    let sub = t.sub.as_deref().unwrap_or_default();
    match result {
        Ok(o) => {
            let stored = meta_str(o, "resourceVersion");
            tracing::debug!(target: "netrollout_lab_apiserver::writes", verb, plural, name, sub,
                precondition, current, stored, "written");
            tracing::trace!(target: "netrollout_lab_apiserver::writes", verb, plural, name, sub,
                stored, status = %o["status"], "written status");
        }
        Err(e) => tracing::debug!(target: "netrollout_lab_apiserver::writes", verb, plural, name,
            sub, precondition, current, code = e.code, "refused"),
    }
}

pub(super) fn patch(app: &App, t: &Target, r: &Req) -> Result<Response, ApiError> {
    let name = name_of(t)?;
    let ct = r.header(header::CONTENT_TYPE);
    let kind = PatchKind::from_content_type(ct).ok_or_else(|| ApiError::new(415, "UnsupportedMediaType", format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {ct:?})")))?;
    let p = patch::parse(kind, &r.body)?;
    let mut st = app.lock()?;
    let Some(cur) = st.get(&t.rt, ns_of(t), name) else {
        if kind != PatchKind::Apply || t.sub.is_some() {
            return Err(ApiError::not_found(&t.rt.group, &t.rt.plural, name));
        }
        let mut obj = p;
        check_type(&t.rt, &obj)?;
        check_ns(t, &mut obj)?;
        meta_mut(&mut obj).insert("name".into(), json!(name));
        admit(&t.rt, &mut obj, strict(r), None)?;
        let mut obj = to_storage(&t.rt, obj);
        let applied = obj.clone();
        managed::record(
            &writer(r, true),
            None,
            &mut obj,
            Some(&applied),
            &t.rt.api_version(),
        );
        cel_admit(&st, t, r, &obj, None)?;
        if dry_run(r) {
            return Ok(render(&t.rt, &obj, Shape::Plain, 201));
        }
        let created = st.create(&t.rt, ns_of(t), obj)?;
        return Ok(render_written(&st, &t.rt, &created, shape(r), 201));
    };
    let w = writer(r, kind == PatchKind::Apply);
    if kind == PatchKind::Apply {
        check_type(&t.rt, &p)?;
        managed::check_apply(&w, &view(&t.rt, &cur), &p)?;
    }
    let mut obj = view(&t.rt, &cur).into_owned();
    patch::apply(kind, &mut obj, &p)?;
    obj["apiVersion"] = json!(t.rt.api_version());
    obj["kind"] = json!(t.rt.kind);
    meta_mut(&mut obj).insert("name".into(), json!(name));
    admit(&t.rt, &mut obj, strict(r), Some(&cur["metadata"]))?;
    let mut obj = to_storage(&t.rt, obj);
    if t.sub.is_none() {
        // A status write keeps the stored metadata (`State::update`), managedFields included.
        managed::record(
            &w,
            Some(&cur),
            &mut obj,
            w.apply.then_some(&p),
            &t.rt.api_version(),
        );
    }
    cel_admit(&st, t, r, &obj, Some(&cur))?;
    if dry_run(r) {
        return Ok(render(&t.rt, &obj, Shape::Plain, 200));
    }
    // (What the patch names, not what it left of the stored version.)
    let precondition = p["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let current = cur.clone();
    let updated = st.update(&t.rt, (ns_of(t), name), obj, t.sub.is_some(), Some(cur));
    let verb = match kind {
        PatchKind::Json => "patch (json)",
        PatchKind::Merge => "patch (merge)",
        PatchKind::Strategic => "patch (strategic merge)",
        PatchKind::Apply => "patch (apply)",
    };
    traced(verb, t, name, &precondition, Some(&current), &updated);
    let updated = updated?;
    Ok(render_written(&st, &t.rt, &updated, shape(r), 200))
}

struct DeleteOpts {
    rv: String,
    uid: String,
    orphan: bool,
}

fn delete_opts(r: &Req) -> Result<DeleteOpts, ApiError> {
    let body: Value = if r.body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&r.body)
            .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?
    };
    let policy = r
        .q("propagationPolicy")
        .or(body["propagationPolicy"].as_str())
        .unwrap_or_default();
    let orphan = policy == "Orphan"
        || body["orphanDependents"] == true
        || r.q("orphanDependents") == Some("true");
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    Ok(DeleteOpts {
        rv: s(&body["preconditions"]["resourceVersion"]),
        uid: s(&body["preconditions"]["uid"]),
        orphan,
    })
}

pub(super) fn delete(app: &App, t: &Target, r: &Req) -> Result<Response, ApiError> {
    let name = name_of(t)?;
    let o = delete_opts(r)?;
    let mut st = app.lock()?;
    if dry_run(r) {
        let cur = st
            .get(&t.rt, ns_of(t), name)
            .ok_or_else(|| ApiError::not_found(&t.rt.group, &t.rt.plural, name))?;
        return Ok(render(&t.rt, &cur, Shape::Plain, 200));
    }
    let obj = st.delete(&t.rt, ns_of(t), name, (&o.rv, &o.uid), o.orphan)?;
    Ok(render(&t.rt, &obj, Shape::Plain, 200))
}

pub(super) fn delete_collection(app: &App, t: &Target, r: &Req) -> Result<Response, ApiError> {
    let f = super::filter(t, r)?;
    let o = delete_opts(r)?;
    let mut st = app.lock()?;
    let names: Vec<(String, String)> = st
        .list(&t.rt.key(), t.ns.as_deref())
        .filter(|(_, o)| f.matches(&o.value()))
        .map(|((ns, name), _)| (ns.to_string(), name.to_string()))
        .collect();
    let mut items = vec![];
    if !dry_run(r) {
        for (ns, name) in names {
            items.push(st.delete(&t.rt, &ns, &name, ("", ""), o.orphan)?);
        }
    }
    let items: Vec<&Value> = items.iter().map(|o| &**o).collect();
    Ok(json_response(
        200,
        &json!({"kind": format!("{}List", t.rt.kind), "apiVersion": t.rt.api_version(), "metadata": {"resourceVersion": st.rv.to_string()}, "items": items}),
    ))
}
