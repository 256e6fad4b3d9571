//! Views of stored objects: the requested `apiVersion`, and the two Event APIs sharing one
//! storage (`events.k8s.io/v1` objects are stored as `v1` Events and converted both ways, so
//! events a kube-runtime `Recorder` writes show up in `kubectl get events` and `describe`).

use std::borrow::Cow;

use serde_json::{Map, Value, json};

use crate::resources::{Builtin, ResourceType};

/// `(events.k8s.io/v1 field, v1 field)` pairs that only change name.
const RENAMED: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// Same-name fields.
const KEPT: &[&str] = &[
    "metadata",
    "eventTime",
    "series",
    "reportingInstance",
    "action",
    "reason",
    "type",
    "related",
];

/// The object as a client of `rt` sees it.
pub fn view<'a>(rt: &ResourceType, obj: &'a Value) -> Cow<'a, Value> {
    if rt.builtin == Some(Builtin::Event) {
        return Cow::Owned(core_to_events(obj));
    }
    let av = rt.api_version();
    if obj["apiVersion"] == *av {
        Cow::Borrowed(obj)
    } else {
        let mut o = obj.clone();
        o["apiVersion"] = json!(av);
        Cow::Owned(o)
    }
}

/// The object as it is stored, from what a client of `rt` sent.
pub fn to_storage(rt: &ResourceType, obj: Value) -> Value {
    if rt.builtin == Some(Builtin::Event) {
        events_to_core(&obj)
    } else {
        obj
    }
}

/// A field path of an `events.k8s.io/v1` field selector, in stored (v1) terms.
pub fn storage_field(rt: &ResourceType, path: &str) -> String {
    if rt.builtin != Some(Builtin::Event) {
        return path.to_string();
    }
    let (head, rest) = path
        .split_once('.')
        .map(|(h, r)| (h, Some(r)))
        .unwrap_or((path, None));
    match RENAMED.iter().find(|(e, _)| *e == head) {
        Some((_, core)) => rest
            .map(|r| format!("{core}.{r}"))
            .unwrap_or_else(|| core.to_string()),
        None => path.to_string(),
    }
}

fn copy(
    from: &Value,
    to: &mut Map<String, Value>,
    pairs: impl Iterator<Item = (&'static str, &'static str)>,
) {
    for (src, dst) in pairs {
        if let Some(v) = from.get(src).filter(|v| !v.is_null()) {
            to.insert(dst.to_string(), v.clone());
        }
    }
}

fn core_to_events(core: &Value) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!("events.k8s.io/v1"));
    out.insert("kind".into(), json!("Event"));
    copy(core, &mut out, KEPT.iter().map(|k| (*k, *k)));
    copy(core, &mut out, RENAMED.iter().map(|(e, c)| (*c, *e)));
    if !out.contains_key("reportingController") {
        copy(
            &core["source"],
            &mut out,
            [("component", "reportingController")].into_iter(),
        );
    }
    if !out.contains_key("eventTime") {
        let ts = core["firstTimestamp"]
            .as_str()
            .or(core["metadata"]["creationTimestamp"].as_str())
            .unwrap_or("1970-01-01T00:00:00Z");
        out.insert("eventTime".into(), json!(ts.replace('Z', ".000000Z")));
    }
    Value::Object(out)
}

fn events_to_core(ev: &Value) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!("v1"));
    out.insert("kind".into(), json!("Event"));
    copy(ev, &mut out, KEPT.iter().map(|k| (*k, *k)));
    copy(ev, &mut out, RENAMED.iter().map(|(e, c)| (*e, *c)));
    out.entry("involvedObject").or_insert_with(|| json!({}));
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_convert_to_core_events_and_back() {
        let ev = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
            "eventTime": "2026-01-01T00:00:00.000000Z", "regarding": {"kind": "Node", "name": "n1"},
            "note": "applied", "reason": "Applied", "type": "Normal", "reportingController": "netrollout",
            "reportingInstance": "agent-n1", "action": "Apply"});
        let core = events_to_core(&ev);
        assert_eq!(core["involvedObject"]["name"], "n1");
        assert_eq!(core["message"], "applied");
        assert_eq!(core["reportingComponent"], "netrollout");
        assert_eq!(core_to_events(&core), ev);
    }
}
