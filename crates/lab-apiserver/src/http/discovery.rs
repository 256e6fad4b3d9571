//! Discovery (`/version`, `/api`, `/apis`, `/api/v1`, `/apis/<group>[/<version>]`) in the legacy
//! format kubectl falls back to, and OpenAPI v3 documents with the extensions kubectl needs
//! to leave field validation to the server.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::resources::{Registry, ResourceType};

const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// `/version`.
pub fn version() -> Value {
    json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0-netrollout-lab", "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24.0", "compiler": "gc", "platform": "linux/amd64"})
}

/// `/api`.
pub fn core_versions(addr: &str) -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr}]})
}

/// Orders versions as Kubernetes does: GA before beta before alpha, higher first.
fn version_rank(v: &str) -> (u8, i64, i64) {
    let rest = v.strip_prefix('v').unwrap_or(v);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let major = digits.parse().unwrap_or(0);
    let tail = &rest[digits.len()..];
    let (level, minor) = match tail {
        "" => (3, 0),
        t if t.starts_with("beta") => (2, t[4..].parse().unwrap_or(0)),
        t if t.starts_with("alpha") => (1, t[5..].parse().unwrap_or(0)),
        _ => (0, 0),
    };
    (level, major, minor)
}

/// Groups (other than core) with their versions, preferred version first.
fn groups(reg: &Registry) -> BTreeMap<String, Vec<String>> {
    let mut g: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for t in reg.all().filter(|t| !t.group.is_empty()) {
        let vs = g.entry(t.group.clone()).or_default();
        if !vs.contains(&t.version) {
            vs.push(t.version.clone());
        }
    }
    for vs in g.values_mut() {
        vs.sort_by_key(|v| std::cmp::Reverse(version_rank(v)));
    }
    g
}

fn group_doc(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({"name": name, "versions": vs, "preferredVersion": vs.first().cloned().unwrap_or(Value::Null)})
}

/// `/apis`.
pub fn group_list(reg: &Registry) -> Value {
    let gs: Vec<Value> = groups(reg).iter().map(|(n, vs)| group_doc(n, vs)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": gs})
}

/// `/apis/<group>`, if the group exists.
pub fn group(reg: &Registry, name: &str) -> Option<Value> {
    let gs = groups(reg);
    let vs = gs.get(name)?;
    let mut d = group_doc(name, vs);
    d["kind"] = json!("APIGroup");
    d["apiVersion"] = json!("v1");
    Some(d)
}

fn types_in<'a>(
    reg: &'a Registry,
    group: &'a str,
    version: &'a str,
) -> impl Iterator<Item = &'a Arc<ResourceType>> + 'a {
    reg.all()
        .filter(move |t| t.group == group && t.version == version)
}

/// `/api/v1` or `/apis/<group>/<version>`, if served.
pub fn resource_list(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    let mut resources = vec![];
    for t in types_in(reg, group, version) {
        let mut r = json!({"name": t.plural, "singularName": t.singular, "namespaced": t.namespaced, "kind": t.kind, "verbs": VERBS});
        if !t.short_names.is_empty() {
            r["shortNames"] = json!(t.short_names);
        }
        if !t.categories.is_empty() {
            r["categories"] = json!(t.categories);
        }
        resources.push(r);
        if t.status_subresource {
            resources.push(json!({"name": format!("{}/status", t.plural), "singularName": "", "namespaced": t.namespaced, "kind": t.kind, "verbs": ["get", "patch", "update"]}));
        }
    }
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

/// `/openapi/v3`: one entry per group-version, with a hash that changes with its types.
pub fn openapi_root(reg: &Registry) -> Value {
    let mut paths = serde_json::Map::new();
    let mut gvs: BTreeMap<String, Vec<&Arc<ResourceType>>> = BTreeMap::new();
    for t in reg.all() {
        gvs.entry(t.gv_path()).or_default().push(t);
    }
    for (gv, ts) in gvs {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for t in ts {
            (
                &t.kind,
                &t.plural,
                t.namespaced,
                t.schema.as_ref().map(|s| s.to_string()),
            )
                .hash(&mut h);
        }
        paths.insert(
            gv.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{gv}?hash={:016X}", h.finish())}),
        );
    }
    json!({"paths": paths})
}

fn param(name: &str) -> Value {
    json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}})
}

fn op(t: &ResourceType, action: &str, verb: &str, write: bool) -> Value {
    let mut params = vec![param("pretty")];
    if write {
        params.extend([
            param("dryRun"),
            param("fieldManager"),
            param("fieldValidation"),
        ]);
    }
    let schema_ref = match t.schema {
        Some(_) => json!({"$ref": format!("#/components/schemas/{}", schema_name(t))}),
        None => json!({"type": "object"}),
    };
    let mut o = json!({
        "operationId": format!("{verb}{}", t.kind),
        "parameters": params,
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": schema_ref}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": t.group, "version": t.version, "kind": t.kind},
    });
    if write {
        let ct = if action == "patch" {
            "application/merge-patch+json"
        } else {
            "application/json"
        };
        o["requestBody"] = json!({"content": {ct: {"schema": schema_ref}}, "required": true});
    }
    o
}

fn schema_name(t: &ResourceType) -> String {
    let mut g: Vec<&str> = t.group.split('.').collect();
    g.reverse();
    let g = if t.group.is_empty() {
        "io.k8s.api.core".to_string()
    } else {
        g.join(".")
    };
    format!("{g}.{}.{}", t.version, t.kind)
}

/// `/openapi/v3/<gv path>`: paths for each kind's collection and objects, with
/// `x-kubernetes-action`, `x-kubernetes-group-version-kind` and the `fieldValidation` parameter.
pub fn openapi_doc(reg: &Registry, gv_path: &str) -> Option<Value> {
    let mut paths = serde_json::Map::new();
    let mut schemas = serde_json::Map::new();
    for t in reg.all().filter(|t| t.gv_path() == gv_path) {
        let base = if t.namespaced {
            format!("/{gv_path}/namespaces/{{namespace}}/{}", t.plural)
        } else {
            format!("/{gv_path}/{}", t.plural)
        };
        paths.insert(
            base.clone(),
            json!({"get": op(t, "list", "list", false), "post": op(t, "post", "create", true)}),
        );
        paths.insert(
            format!("{base}/{{name}}"),
            json!({"get": op(t, "get", "read", false), "put": op(t, "put", "replace", true), "patch": op(t, "patch", "patch", true), "delete": op(t, "delete", "delete", false)}),
        );
        if let Some(mut s) = t.schema.clone() {
            s["x-kubernetes-group-version-kind"] =
                json!([{"group": t.group, "version": t.version, "kind": t.kind}]);
            schemas.insert(schema_name(t), s);
        }
    }
    if paths.is_empty() {
        return None;
    }
    Some(
        json!({"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.33.0"}, "paths": paths, "components": {"schemas": schemas}}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_rank_ga_before_beta_before_alpha() {
        let mut v = vec!["v1alpha1", "v1", "v2beta1", "v1beta2", "v2"];
        v.sort_by_key(|v| std::cmp::Reverse(version_rank(v)));
        assert_eq!(v, vec!["v2", "v1", "v2beta1", "v1beta2", "v1alpha1"]);
    }
}
