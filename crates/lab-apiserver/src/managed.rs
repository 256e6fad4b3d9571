//! Field ownership for server-side apply, kept in `metadata.managedFields` (FieldsV1 format,
//! leaves only; lists are atomic). An apply without `force` that would change a field owned by
//! another manager fails with 409 Conflict, as kube-lease-manager relies on.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::object::now_timestamp;

/// Who writes, and how.
#[derive(Debug, Clone)]
pub struct Writer {
    /// `fieldManager` (or a name derived from the user agent).
    pub manager: String,
    /// Server-side apply (`Apply`) rather than `Update`.
    pub apply: bool,
    /// `force=true` on an apply.
    pub force: bool,
}

type Path = Vec<String>;

/// Leaf paths of an object that can be owned (not apiVersion, kind or system metadata).
fn leaves(v: &Value) -> BTreeSet<Path> {
    let mut out = BTreeSet::new();
    if let Some(m) = v.as_object() {
        for (k, child) in m {
            match k.as_str() {
                "apiVersion" | "kind" => {}
                "metadata" => {
                    for f in ["labels", "annotations"] {
                        walk(&child[f], &mut vec!["metadata".into(), f.into()], &mut out);
                    }
                }
                _ => walk(child, &mut vec![k.clone()], &mut out),
            }
        }
    }
    out
}

fn walk(v: &Value, path: &mut Path, out: &mut BTreeSet<Path>) {
    match v {
        Value::Null => {}
        Value::Object(m) if !m.is_empty() => {
            for (k, c) in m {
                path.push(k.clone());
                walk(c, path, out);
                path.pop();
            }
        }
        _ => {
            out.insert(path.clone());
        }
    }
}

fn at<'a>(v: &'a Value, p: &Path) -> Option<&'a Value> {
    p.iter().try_fold(v, |cur, k| cur.get(k))
}

fn to_fields(paths: &BTreeSet<Path>) -> Value {
    let mut root = Map::new();
    for p in paths {
        let mut cur = &mut root;
        for k in p {
            let next = cur.entry(format!("f:{k}")).or_insert_with(|| json!({}));
            let Value::Object(m) = next else { break };
            cur = m;
        }
    }
    Value::Object(root)
}

fn from_fields(v: &Value, path: &mut Path, out: &mut BTreeSet<Path>) {
    let Some(m) = v.as_object() else { return };
    let children: Vec<_> = m
        .iter()
        .filter_map(|(k, c)| k.strip_prefix("f:").map(|k| (k, c)))
        .collect();
    if children.is_empty() && !path.is_empty() {
        out.insert(path.clone());
    }
    for (k, c) in children {
        path.push(k.to_string());
        from_fields(c, path, out);
        path.pop();
    }
}

struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    fields: BTreeSet<Path>,
}

fn entries(obj: &Value) -> Vec<Entry> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let mut fields = BTreeSet::new();
            from_fields(&e["fieldsV1"], &mut vec![], &mut fields);
            let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            Entry {
                manager: s("manager"),
                operation: s("operation"),
                api_version: s("apiVersion"),
                fields,
            }
        })
        .collect()
}

/// Fails with 409 if an apply by `w` of `applied` would change fields another manager owns.
pub fn check_apply(w: &Writer, current: &Value, applied: &Value) -> Result<(), ApiError> {
    if !w.apply || w.force {
        return Ok(());
    }
    let mut conflicts = vec![];
    for e in entries(current).iter().filter(|e| e.manager != w.manager) {
        for p in leaves(applied).intersection(&e.fields) {
            if at(current, p).is_some() && at(current, p) != at(applied, p) {
                conflicts.push(format!("conflict with \"{}\": .{}", e.manager, p.join(".")));
            }
        }
    }
    if conflicts.is_empty() {
        return Ok(());
    }
    Err(ApiError::new(
        409,
        "Conflict",
        format!(
            "Apply failed with {} conflict(s): {}",
            conflicts.len(),
            conflicts.join(", ")
        ),
    ))
}

/// Records in `new.metadata.managedFields` what `w` now owns after writing `new` over `old`
/// (`applied` is the applied configuration for an apply).
pub fn record(
    w: &Writer,
    old: Option<&Value>,
    new: &mut Value,
    applied: Option<&Value>,
    api_version: &str,
) {
    let mut list = old.map(entries).unwrap_or_default();
    let now_leaves = leaves(new);
    let owned: BTreeSet<Path> = match (w.apply, applied) {
        (true, Some(a)) => leaves(a),
        _ => now_leaves
            .iter()
            .filter(|p| old.is_none_or(|o| at(o, p) != at(new, p)))
            .cloned()
            .collect(),
    };
    let operation = if w.apply { "Apply" } else { "Update" };
    for e in &mut list {
        if e.manager != w.manager || e.operation != operation {
            // Fields set to the value they already had become co-owned, not taken over.
            e.fields
                .retain(|p| !owned.contains(p) || old.is_some_and(|o| at(o, p) == at(new, p)));
        }
        e.fields.retain(|p| now_leaves.contains(p));
    }
    match list
        .iter_mut()
        .find(|e| e.manager == w.manager && e.operation == operation)
    {
        Some(e) if w.apply => e.fields = owned,
        Some(e) => e.fields.extend(owned),
        None => list.push(Entry {
            manager: w.manager.clone(),
            operation: operation.into(),
            api_version: api_version.into(),
            fields: owned,
        }),
    }
    list.retain(|e| !e.fields.is_empty());
    let before: Vec<Value> = old
        .and_then(|o| o["metadata"]["managedFields"].as_array().cloned())
        .unwrap_or_default();
    let time = now_timestamp();
    let out: Vec<Value> = list
        .iter()
        .map(|e| {
            let fields = to_fields(&e.fields);
            // An unchanged entry keeps its time, so a no-op write stays a no-op.
            let same = before.iter().find(|b| b["manager"] == *e.manager && b["operation"] == *e.operation && b["fieldsV1"] == fields);
            match same {
                Some(b) => b.clone(),
                None => json!({"manager": e.manager, "operation": e.operation, "apiVersion": e.api_version, "time": time, "fieldsType": "FieldsV1", "fieldsV1": fields}),
            }
        })
        .collect();
    if let Some(m) = new.get_mut("metadata").and_then(Value::as_object_mut) {
        if out.is_empty() {
            m.remove("managedFields");
        } else {
            m.insert("managedFields".into(), Value::Array(out));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(m: &str, apply: bool, force: bool) -> Writer {
        Writer {
            manager: m.into(),
            apply,
            force,
        }
    }

    #[test]
    fn an_apply_conflicts_with_another_managers_field_unless_forced() {
        let mut lease = json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 5}});
        let applied_a = lease.clone();
        record(
            &w("a", true, false),
            None,
            &mut lease,
            Some(&applied_a),
            "v1",
        );
        let b = json!({"spec": {"holderIdentity": "b"}});
        let err = check_apply(&w("b", true, false), &lease, &b).unwrap_err();
        assert_eq!((err.code, err.reason), (409, "Conflict"));
        assert!(
            err.message.contains(".spec.holderIdentity"),
            "{}",
            err.message
        );
        assert!(check_apply(&w("b", true, true), &lease, &b).is_ok());
        assert!(
            check_apply(&w("a", true, false), &lease, &b).is_ok(),
            "a manager never conflicts with itself"
        );
        let same = json!({"spec": {"holderIdentity": "a"}});
        assert!(
            check_apply(&w("b", true, false), &lease, &same).is_ok(),
            "applying the same value is no conflict"
        );
    }

    #[test]
    fn applying_the_same_value_co_owns_the_field() {
        let mut o = json!({"metadata": {"name": "l"}, "spec": {"x": 1}});
        let applied = o.clone();
        record(&w("a", true, false), None, &mut o, Some(&applied), "v1");
        let old = o.clone();
        record(
            &w("b", true, false),
            Some(&old),
            &mut o,
            Some(&json!({"spec": {"x": 1}})),
            "v1",
        );
        assert_eq!(entries(&o).len(), 2, "both managers own spec.x");
        let err = check_apply(&w("c", true, false), &o, &json!({"spec": {"x": 2}})).unwrap_err();
        assert!(
            err.message.contains("\"a\"") && err.message.contains("\"b\""),
            "{}",
            err.message
        );
    }

    #[test]
    fn an_update_takes_over_the_fields_it_changes_and_removed_fields_are_released() {
        let mut o = json!({"metadata": {"name": "l"}, "spec": {"x": 1, "y": 2}});
        let applied = o.clone();
        record(&w("a", true, false), None, &mut o, Some(&applied), "v1");
        let old = o.clone();
        o["spec"]["x"] = json!(3);
        o["spec"].as_object_mut().unwrap().remove("y");
        record(&w("b", false, false), Some(&old), &mut o, None, "v1");
        let es = entries(&o);
        assert_eq!(es.len(), 1, "a owns nothing any more");
        assert_eq!(es[0].manager, "b");
        assert!(check_apply(&w("c", true, false), &o, &json!({"spec": {"y": 5}})).is_ok());
    }
}
