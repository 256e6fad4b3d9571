//! FieldsV1 paths: the leaves of an object that a manager can own (every field but apiVersion
//! and kind; of the metadata only labels and annotations; lists are atomic), their encoding in
//! `managedFields`, and which leaves a write changed. Pure functions on JSON; the parent module
//! (`managed`) decides ownership and conflicts with them.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

/// A field's path from the object's root.
pub(super) type Path = Vec<String>;

/// The parts of an object whose leaves can be owned, by path: every field but apiVersion and
/// kind, and of the metadata only labels and annotations.
pub(super) fn ownable(v: &Value) -> Vec<(Path, &Value)> {
    let mut out = vec![];
    for (k, child) in v.as_object().into_iter().flatten() {
        match k.as_str() {
            "apiVersion" | "kind" => {}
            "metadata" => {
                for f in ["labels", "annotations"] {
                    out.push((vec!["metadata".into(), f.into()], &child[f]));
                }
            }
            _ => out.push((vec![k.clone()], child)),
        }
    }
    out
}

/// Leaf paths of an object that can be owned (not apiVersion, kind or system metadata).
pub(super) fn leaves(v: &Value) -> BTreeSet<Path> {
    let mut out = BTreeSet::new();
    for (mut path, part) in ownable(v) {
        walk(part, &mut path, &mut out);
    }
    out
}

pub(super) fn walk(v: &Value, path: &mut Path, out: &mut BTreeSet<Path>) {
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

pub(super) fn at<'a>(v: &'a Value, p: &Path) -> Option<&'a Value> {
    p.iter().try_fold(v, |cur, k| cur.get(k))
}

pub(super) fn to_fields(paths: &BTreeSet<Path>) -> Value {
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

pub(super) fn from_fields(v: &Value, path: &mut Path, out: &mut BTreeSet<Path>) {
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

/// The leaves of `new` (below `path`) whose value differs from `old`'s, as [`leaves`] sees
/// leaves.
pub(super) fn changed(old: Option<&Value>, new: &Value, path: &mut Path, out: &mut Vec<Path>) {
    match new {
        Value::Null => {}
        Value::Object(m) if !m.is_empty() => {
            for (k, c) in m {
                path.push(k.clone());
                changed(old.and_then(|o| o.get(k)), c, path, out);
                path.pop();
            }
        }
        _ if old == Some(new) => {}
        _ => out.push(path.clone()),
    }
}

/// Whether `p` is an ownable leaf of `v` (one [`leaves`] would list).
pub(super) fn is_leaf(v: &Value, p: &[&str]) -> bool {
    let ownable = match p {
        ["apiVersion" | "kind", ..] | [] => false,
        ["metadata", f, ..] => matches!(*f, "labels" | "annotations"),
        ["metadata"] => false,
        _ => true,
    };
    let mut cur = v;
    for k in p {
        match cur.get(k) {
            Some(c) => cur = c,
            None => return false,
        }
    }
    ownable && !cur.is_null() && cur.as_object().is_none_or(serde_json::Map::is_empty)
}

/// Whether `pred` holds for every leaf of a FieldsV1 tree (as [`from_fields`] reads it).
pub(super) fn every_leaf<'a>(
    v: &'a Value,
    path: &mut Vec<&'a str>,
    pred: &dyn Fn(&[&str]) -> bool,
) -> bool {
    let Some(m) = v.as_object() else { return true };
    let mut leaf = !path.is_empty();
    for (k, c) in m {
        let Some(k) = k.strip_prefix("f:") else {
            continue;
        };
        leaf = false;
        path.push(k);
        let ok = every_leaf(c, path, pred);
        path.pop();
        if !ok {
            return false;
        }
    }
    !leaf || pred(path)
}

/// Whether the FieldsV1 tree `v` has `p` as a leaf.
pub(super) fn has_leaf(v: &Value, p: &Path) -> bool {
    let node = p
        .iter()
        .try_fold(v, |cur, k| cur.get(format!("f:{k}").as_str()));
    node.and_then(Value::as_object)
        .is_some_and(|m| !m.keys().any(|k| k.starts_with("f:")))
}
