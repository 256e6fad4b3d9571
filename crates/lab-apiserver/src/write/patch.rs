//! Patches: JSON merge (RFC 7386), JSON patch (RFC 6902), strategic merge (merge with list
//! merge keys for the lists the built-in kinds use) and server-side apply (create or merge;
//! field ownership is not tracked, so `force` is always honoured and no apply conflicts arise).

use serde_json::Value;

use crate::error::ApiError;
use crate::object::parse_body;

/// The patch type, from the request's content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/json-patch+json`.
    Json,
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml`.
    Apply,
}

impl PatchKind {
    /// The patch type named by a content type.
    pub fn from_content_type(ct: &str) -> Option<Self> {
        let ct = ct.split(';').next().unwrap_or_default().trim();
        match ct {
            "application/json-patch+json" => Some(Self::Json),
            "application/merge-patch+json" => Some(Self::Merge),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml"
            | "application/apply-patch+json"
            | "application/apply-patch+cbor" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// Parses a patch body.
pub fn parse(kind: PatchKind, body: &[u8]) -> Result<Value, ApiError> {
    let ct = if kind == PatchKind::Apply {
        "application/yaml"
    } else {
        "application/json"
    };
    parse_body(body, ct).map_err(ApiError::bad_request)
}

/// Applies a parsed patch to `target`.
pub fn apply(kind: PatchKind, target: &mut Value, patch: &Value) -> Result<(), ApiError> {
    match kind {
        PatchKind::Merge => {
            if !patch.is_object() {
                return Err(ApiError::bad_request("a merge patch must be a JSON object"));
            }
            json_patch::merge(target, patch);
        }
        PatchKind::Json => {
            let ops: json_patch::Patch = serde_json::from_value(patch.clone())
                .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
            json_patch::patch(target, &ops).map_err(|e| {
                ApiError::new(
                    422,
                    "Invalid",
                    format!("the JSON patch could not be applied: {e}"),
                )
            })?;
        }
        PatchKind::Strategic | PatchKind::Apply => {
            if !patch.is_object() {
                return Err(ApiError::bad_request(
                    "a strategic merge or apply patch must be an object",
                ));
            }
            strategic(target, patch, "");
        }
    }
    Ok(())
}

/// The merge key of a list field, or `None` for a list that is replaced whole.
fn merge_key(field: &str) -> Option<&'static str> {
    match field {
        "conditions" | "addresses" => Some("type"),
        "ownerReferences" => Some("uid"),
        "taints" => Some("key"),
        "containers" | "initContainers" | "volumes" | "env" | "images" => Some("name"),
        _ => None,
    }
}

fn strategic(target: &mut Value, patch: &Value, field: &str) {
    let (Some(t), Some(p)) = (target.as_object_mut(), patch.as_object()) else {
        *target = strip(patch);
        return;
    };
    if p.get("$patch").and_then(Value::as_str) == Some("replace") {
        *target = strip(patch);
        return;
    }
    for (k, v) in p {
        if let Some(list) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(have)), Some(del)) = (t.get_mut(list), v.as_array()) {
                have.retain(|x| !del.contains(x));
            }
            continue;
        }
        if k.starts_with('$') {
            continue;
        }
        match (t.get_mut(k), v) {
            (_, Value::Null) => {
                t.remove(k);
            }
            (Some(Value::Array(have)), Value::Array(items))
                if merge_key(k).is_some() || (k == "finalizers" && field == "metadata") =>
            {
                merge_list(have, items, merge_key(k));
            }
            (Some(have @ Value::Object(_)), Value::Object(_)) => strategic(have, v, k),
            _ => {
                t.insert(k.clone(), strip(v));
            }
        }
    }
}

fn merge_list(have: &mut Vec<Value>, items: &[Value], key: Option<&str>) {
    for item in items {
        let Some(key) = key else {
            if !have.contains(item) {
                have.push(item.clone());
            }
            continue;
        };
        let pos = have
            .iter()
            .position(|h| h.get(key).is_some() && h.get(key) == item.get(key));
        match (pos, item.get("$patch").and_then(Value::as_str)) {
            (Some(i), Some("delete")) => {
                have.remove(i);
            }
            (None, Some("delete")) => {}
            (Some(i), _) => strategic(&mut have[i], item, ""),
            (None, _) => have.push(strip(item)),
        }
    }
}

/// The value without `$`-directives.
fn strip(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strategic_merge_merges_conditions_by_type_and_unions_finalizers() {
        let mut t = json!({"metadata": {"finalizers": ["a"]}, "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "X", "status": "True"}]}});
        let p = json!({"metadata": {"finalizers": ["b"]}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        apply(PatchKind::Strategic, &mut t, &p).unwrap();
        assert_eq!(t["metadata"]["finalizers"], json!(["a", "b"]));
        assert_eq!(
            t["status"]["conditions"],
            json!([{"type": "Ready", "status": "True"}, {"type": "X", "status": "True"}])
        );
    }

    #[test]
    fn json_patch_operations_apply_in_order() {
        let mut t = json!({"spec": {"a": 1}});
        apply(PatchKind::Json, &mut t, &json!([{"op": "replace", "path": "/spec/a", "value": 2}, {"op": "add", "path": "/spec/b", "value": 3}])).unwrap();
        assert_eq!(t, json!({"spec": {"a": 2, "b": 3}}));
        assert_eq!(
            apply(
                PatchKind::Json,
                &mut t,
                &json!([{"op": "remove", "path": "/nope"}])
            )
            .unwrap_err()
            .code,
            422
        );
    }
}
