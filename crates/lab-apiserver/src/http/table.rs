//! `meta.k8s.io/v1` Table responses (what `kubectl get` prints), built from printer columns
//! with a small JSONPath evaluator.

use serde_json::{Value, json};

use crate::resources::{Builtin, ResourceType};

/// A Table of `objs`; `columns` includes the column definitions, `full` embeds whole objects
/// instead of `PartialObjectMetadata`.
pub fn table(rt: &ResourceType, objs: &[&Value], columns: bool, full: bool) -> Value {
    // Events show their name only with `-o wide`, as kube-apiserver's printer does.
    let name_priority = i64::from(matches!(
        rt.builtin,
        Some(Builtin::CoreEvent | Builtin::Event)
    ));
    let mut defs = vec![json!({"name": "Name", "type": "string", "format": "name",
        "description": "Name of the object", "priority": name_priority})];
    for c in &rt.columns {
        let type_ = if c.type_ == "date" {
            "string"
        } else {
            c.type_.as_str()
        };
        defs.push(json!({"name": c.name, "type": type_, "format": "", "description": c.description, "priority": c.priority}));
    }
    let now = jiff::Timestamp::now();
    let rows: Vec<Value> = objs
        .iter()
        .map(|o| {
            let mut cells = vec![o["metadata"]["name"].clone()];
            for c in &rt.columns {
                if let Some(cell) = computed(rt, &c.name, o, now) {
                    cells.push(cell);
                    continue;
                }
                let found = eval(o, &c.json_path);
                let cell = match (c.type_.as_str(), found.as_slice()) {
                    (_, []) => Value::Null,
                    ("date", [v]) => v.as_str().and_then(|s| s.parse::<jiff::Timestamp>().ok()).map(|t| json!(age(now.duration_since(t).as_secs()))).unwrap_or(Value::Null),
                    (_, [v]) => (*v).clone(),
                    (_, many) => json!(many.iter().map(|v| v.as_str().map(String::from).unwrap_or_else(|| v.to_string())).collect::<Vec<_>>().join(",")),
                };
                cells.push(cell);
            }
            let object = if full {
                (*o).clone()
            } else {
                json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]})
            };
            json!({"cells": cells, "object": object})
        })
        .collect();
    let mut t =
        json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {}, "rows": rows});
    if columns {
        t["columnDefinitions"] = json!(defs);
    }
    t
}

/// Cells of built-in columns that no JSONPath expresses.
fn computed(rt: &ResourceType, column: &str, o: &Value, now: jiff::Timestamp) -> Option<Value> {
    let event = matches!(rt.builtin, Some(Builtin::CoreEvent | Builtin::Event));
    match (rt.builtin, column) {
        (Some(Builtin::Node), "Status") => Some(json!(node_status(o))),
        (_, "Last Seen") if event => {
            let paths = [
                ".series.lastObservedTime",
                ".lastTimestamp",
                ".deprecatedLastTimestamp",
                ".eventTime",
                ".metadata.creationTimestamp",
            ];
            let seen = paths.iter().find_map(|p| {
                eval(o, p)
                    .first()
                    .and_then(|v| v.as_str())
                    .and_then(|s| s.parse::<jiff::Timestamp>().ok())
            });
            Some(
                seen.map(|t| json!(age(now.duration_since(t).as_secs())))
                    .unwrap_or(Value::Null),
            )
        }
        (_, "Object") if event => {
            let r = if o.get("regarding").is_some() {
                &o["regarding"]
            } else {
                &o["involvedObject"]
            };
            let kind = r["kind"].as_str().unwrap_or_default().to_lowercase();
            Some(json!(format!(
                "{kind}/{}",
                r["name"].as_str().unwrap_or_default()
            )))
        }
        _ => None,
    }
}

/// A Node's STATUS as kubectl shows it: `Ready`, `NotReady` or `Unknown`, plus
/// `SchedulingDisabled` when cordoned.
fn node_status(node: &Value) -> String {
    let ready = eval(node, ".status.conditions[?(@.type==\"Ready\")].status");
    let mut s = match ready.first().and_then(|v| v.as_str()) {
        Some("True") => "Ready".to_string(),
        Some("False") => "NotReady".to_string(),
        _ => "Unknown".to_string(),
    };
    if node["spec"]["unschedulable"] == true {
        s.push_str(",SchedulingDisabled");
    }
    s
}

/// kubectl's short age format (`45s`, `3m12s`, `5h`, `12d`).
pub fn age(secs: i64) -> String {
    let s = secs.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86400);
    match () {
        _ if s < 120 => format!("{s}s"),
        _ if m < 10 && s % 60 != 0 => format!("{m}m{}s", s % 60),
        _ if m < 180 => format!("{m}m"),
        _ if h < 8 && m % 60 != 0 => format!("{h}h{}m", m % 60),
        _ if h < 48 => format!("{h}h"),
        _ if d < 8 && h % 24 != 0 => format!("{d}d{}h", h % 24),
        _ if d < 730 => format!("{d}d"),
        _ => format!("{}y", d / 365),
    }
}

/// Evaluates a JSONPath such as `.status.conditions[?(@.type=="Ready")].status`,
/// `.spec.items[*].name`, `.spec.list[0]` or `.metadata.labels['a.b/c']`.
pub fn eval<'a>(obj: &'a Value, path: &str) -> Vec<&'a Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut cur: Vec<&Value> = vec![obj];
    let mut rest = path.trim_start_matches('$');
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else {
                return vec![];
            };
            let inner = &r[..end];
            rest = &r[end + 1..];
            cur = if inner == "*" {
                cur.into_iter().flat_map(children).collect()
            } else if let Some(f) = inner.strip_prefix("?(@").and_then(|f| f.strip_suffix(')')) {
                let (p, want) = f.split_once("==").unwrap_or((f, ""));
                let want = want.trim().trim_matches(|c| c == '"' || c == '\'');
                cur.into_iter()
                    .flat_map(|v| v.as_array().into_iter().flatten())
                    .filter(|item| {
                        let got = eval(item, p.trim());
                        if want.is_empty() {
                            !got.is_empty()
                        } else {
                            got.iter().any(|g| {
                                g.as_str()
                                    .map(String::from)
                                    .unwrap_or_else(|| g.to_string())
                                    == want
                            })
                        }
                    })
                    .collect()
            } else if let Ok(i) = inner.parse::<usize>() {
                cur.into_iter().filter_map(|v| v.get(i)).collect()
            } else {
                let key = inner.trim_matches(|c| c == '"' || c == '\'');
                cur.into_iter().filter_map(|v| v.get(key)).collect()
            };
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let key = &r[..end];
            rest = &r[end..];
            if key.is_empty() {
                continue;
            }
            cur = if key == "*" {
                cur.into_iter().flat_map(children).collect()
            } else {
                cur.into_iter().filter_map(|v| v.get(key)).collect()
            };
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            let key = &rest[..end];
            rest = &rest[end..];
            cur = cur.into_iter().filter_map(|v| v.get(key)).collect();
        }
    }
    cur
}

fn children(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(a) => a.iter().collect(),
        Value::Object(m) => m.values().collect(),
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonpath_follows_fields_indexes_wildcards_and_filters() {
        let o = json!({"spec": {"items": [{"name": "a"}, {"name": "b"}]}, "status": {"conditions": [
            {"type": "Ready", "status": "True"}, {"type": "Other", "status": "False"}]},
            "metadata": {"labels": {"a.b/c": "x"}}});
        assert_eq!(
            eval(&o, ".spec.items[*].name"),
            vec![&json!("a"), &json!("b")]
        );
        assert_eq!(eval(&o, ".spec.items[1].name"), vec![&json!("b")]);
        assert_eq!(
            eval(&o, ".status.conditions[?(@.type==\"Ready\")].status"),
            vec![&json!("True")]
        );
        assert_eq!(eval(&o, ".metadata.labels['a.b/c']"), vec![&json!("x")]);
        assert!(eval(&o, ".spec.missing").is_empty());
    }

    #[test]
    fn nodes_show_ready_or_not_ready_like_kubectl() {
        let rt = crate::resources::builtins()
            .into_iter()
            .find(|t| t.kind == "Node")
            .unwrap();
        let ready = json!({"metadata": {"name": "n1"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        let cordoned = json!({"metadata": {"name": "n2"}, "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]}});
        let t = table(&rt, &[&ready, &cordoned], true, false);
        assert_eq!(t["rows"][0]["cells"][1], "Ready");
        assert_eq!(t["rows"][1]["cells"][1], "NotReady,SchedulingDisabled");
    }

    #[test]
    fn ages_read_like_kubectl() {
        assert_eq!(age(5), "5s");
        assert_eq!(age(200), "3m20s");
        assert_eq!(age(3600), "60m");
        assert_eq!(age(9 * 3600), "9h");
        assert_eq!(age(3 * 86400), "3d");
    }
}
