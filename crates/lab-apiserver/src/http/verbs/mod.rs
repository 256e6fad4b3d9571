//! The verbs on resources: routing to them, and the reading ones (get, list, watch) with
//! their response shapes (plain, Table, PartialObjectMetadata). Writes are in `write`.

use axum::response::Response;
use http::header;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::http::app::{App, Req, Target, bytes_response, json_response};
use crate::http::table;
use crate::http::watch::{self, Filter, WatchParams};
use crate::object::meta_str;
use crate::resources::{Builtin, ResourceType};
use crate::selector::{FieldSelector, LabelSelector};
use crate::storage::State;
use crate::storage::convert::{storage_field, view};
use crate::storage::stored::Stored;

mod write;

/// How the client asked to see objects.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    Plain,
    Table { full: bool },
    Partial,
}

fn shape(r: &Req) -> Shape {
    let accept = r.header(header::ACCEPT);
    if accept.contains("as=Table") {
        Shape::Table {
            full: r.q("includeObject") == Some("Object"),
        }
    } else if accept.contains("as=PartialObjectMetadata") {
        Shape::Partial
    } else {
        Shape::Plain
    }
}

/// Serves one verb on a resource.
pub fn serve(app: &App, t: Target, verb: &str, r: Req) -> Result<Response, ApiError> {
    match verb {
        "get" => get(app, &t, &r),
        "list" => list(app, &t, &r),
        "watch" => watch(app, t, &r),
        "create" => write::create(app, &t, &r),
        "update" => write::update(app, &t, &r),
        "patch" => write::patch(app, &t, &r),
        "delete" => write::delete(app, &t, &r),
        "deletecollection" => write::delete_collection(app, &t, &r),
        _ => Err(ApiError::method_not_allowed(format!(
            "method {} is not supported on {}",
            r.method, t.rt.plural
        ))),
    }
}

fn render(rt: &ResourceType, stored: &Value, shape: Shape, code: u16) -> Response {
    let obj = &*view(rt, stored);
    match shape {
        Shape::Table { full } => json_response(code, &table::table(rt, &[obj], true, full)),
        Shape::Partial => json_response(
            code,
            &json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}),
        ),
        Shape::Plain => json_response(code, obj),
    }
}

/// Whether a client of `rt` sees `obj` exactly as stored (its bytes can be sent as they are).
fn as_stored(rt: &ResourceType, obj: &Stored) -> bool {
    rt.builtin != Some(Builtin::Event) && obj.has_api_version(&rt.api_version())
}

/// The response to a write of `obj` that `st` now holds: the stored bytes when the client sees
/// the object as stored, else rendered from the tree.
fn render_written(st: &State, rt: &ResourceType, obj: &Value, shape: Shape, code: u16) -> Response {
    let (ns, name) = (meta_str(obj, "namespace"), meta_str(obj, "name"));
    match st.get_stored(rt, ns, name) {
        Some(s) if shape == Shape::Plain && as_stored(rt, s) => {
            bytes_response(code, s.raw().clone(), "application/json")
        }
        _ => render(rt, obj, shape, code),
    }
}

fn ns_of(t: &Target) -> &str {
    t.ns.as_deref().unwrap_or_default()
}

fn name_of(t: &Target) -> Result<&str, ApiError> {
    t.name
        .as_deref()
        .ok_or_else(|| ApiError::method_not_allowed("this verb needs an object name in the URL"))
}

fn get(app: &App, t: &Target, r: &Req) -> Result<Response, ApiError> {
    let name = name_of(t)?;
    let obj = app
        .lock()?
        .get_stored(&t.rt, ns_of(t), name)
        .cloned()
        .ok_or_else(|| ApiError::not_found(&t.rt.group, &t.rt.plural, name))?;
    let shape = shape(r);
    if shape == Shape::Plain && as_stored(&t.rt, &obj) {
        return Ok(bytes_response(200, obj.raw().clone(), "application/json"));
    }
    Ok(render(&t.rt, &obj.value(), shape, 200))
}

fn filter(t: &Target, r: &Req) -> Result<Filter, ApiError> {
    Ok(Filter {
        ns: t.ns.clone(),
        labels: LabelSelector::parse(r.q("labelSelector").unwrap_or_default())?,
        fields: FieldSelector::parse(r.q("fieldSelector").unwrap_or_default())?
            .map_paths(|p| storage_field(&t.rt, p)),
    })
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

fn list(app: &App, t: &Target, r: &Req) -> Result<Response, ApiError> {
    let f = filter(t, r)?;
    let limit = r
        .q("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0)
        .unwrap_or(usize::MAX);
    let after = match r.q("continue").filter(|c| !c.is_empty()) {
        Some(c) => Some(
            unhex(c)
                .and_then(|s| {
                    s.split_once('\0')
                        .map(|(a, b)| (a.to_string(), b.to_string()))
                })
                .ok_or_else(|| ApiError::bad_request("invalid continue token"))?,
        ),
        None => None,
    };
    let (items, rv, next) = {
        let st = app.lock()?;
        let mut items = vec![];
        let mut next = None;
        let all = f.namespace_only();
        for (id, o) in st.list(&t.rt.key(), t.ns.as_deref()) {
            if after
                .as_ref()
                .is_some_and(|(ans, aname)| id <= (ans.as_str(), aname.as_str()))
                || !(all || f.matches(&o.value()))
            {
                continue;
            }
            if items.len() == limit {
                next = items
                    .last()
                    .map(|(id, _): &((String, String), _)| hex(&format!("{}\0{}", id.0, id.1)));
                break;
            }
            items.push(((id.0.to_string(), id.1.to_string()), o.clone()));
        }
        (items, st.rv, next)
    };
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if let Some(n) = next {
        meta["continue"] = json!(n);
    }
    match shape(r) {
        Shape::Table { full } => {
            let trees: Vec<_> = items.iter().map(|(_, o)| o.value()).collect();
            let objs: Vec<&Value> = trees.iter().map(|o| &**o).collect();
            let mut tbl = table::table(&t.rt, &objs, true, full);
            tbl["metadata"] = meta;
            Ok(json_response(200, &tbl))
        }
        Shape::Partial => {
            let objs: Vec<Value> = items.iter().map(|(_, o)| json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o.value()["metadata"]})).collect();
            Ok(json_response(
                200,
                &json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "items": objs}),
            ))
        }
        Shape::Plain => {
            let head = json!({"kind": format!("{}List", t.rt.kind), "apiVersion": t.rt.api_version(), "metadata": meta});
            let mut out = serde_json::to_vec(&head).unwrap_or_default();
            out.pop();
            out.extend_from_slice(b",\"items\":[");
            for (i, (_, o)) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                if as_stored(&t.rt, o) {
                    out.extend_from_slice(o.raw());
                } else {
                    let tree = o.value();
                    out.extend(serde_json::to_vec(&*view(&t.rt, &tree)).unwrap_or_default());
                }
            }
            out.extend_from_slice(b"]}");
            Ok(bytes_response(200, out, "application/json"))
        }
    }
}

fn watch(app: &App, t: Target, r: &Req) -> Result<Response, ApiError> {
    let mut filter = filter(&t, r)?;
    if let Some(name) = &t.name {
        filter.fields = FieldSelector::parse(&format!(
            "metadata.name={name},{}",
            r.q("fieldSelector").unwrap_or_default()
        ))?;
    }
    let rv = match r.q("resourceVersion").filter(|v| !v.is_empty()) {
        Some(v) => Some(
            v.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {v:?}")))?,
        ),
        None => None,
    };
    let timeout = r
        .q("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(1800);
    let p = WatchParams {
        rt: t.rt,
        filter,
        rv,
        send_initial: r.q("sendInitialEvents") == Some("true"),
        bookmarks: r.q("allowWatchBookmarks") == Some("true"),
        timeout: std::time::Duration::from_secs(timeout),
        table: matches!(shape(r), Shape::Table { .. }),
        buffer: app.watch_buffer,
        bookmark_every: app.bookmark_every,
    };
    watch::start(app.state.clone(), p)
}
