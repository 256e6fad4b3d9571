//! Structural diffs: what changes between two snapshots, in the inputs and in the configs they
//! render for each node (`kubectl netrollout diff`, `undo` and `migrate` print them).
//!
//! Lists of objects are matched by their identity (`name`, `id`, `tableId`, `source` or `cidr`,
//! the first that is present and unique), not by position, so inserting a VRF does not show
//! every later VRF as changed. Paths read like `vrfs[m2m].policies[m2m].export[0].cidr`.
//!
//! The node diff lives here, beside the rendering it compares, so that its per-node work (a
//! config built and compared per node) is compiled with the renderer's optimisation.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use netrollout_api::{NodeConfig, Snapshot};
use serde::Serialize;
use serde_json::Value;

use crate::{Error, Node, Result, render};

/// Fields that identify an element of a list, in order of preference.
const KEYS: [&str; 5] = ["name", "id", "tableId", "source", "cidr"];
/// Distinct (old, new) config pairs remembered while diffing the nodes.
const MEMO: usize = 64;
/// Characters of a value a [`Change`]'s line shows.
const SHOWN: usize = 100;

/// One difference at a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Where, e.g. `layer2s[501].mtu`.
    pub path: String,
    /// The old value; absent when added.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<Value>,
    /// The new value; absent when removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<Value>,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: &Value| {
            let text = v.to_string();
            if text.chars().count() <= SHOWN {
                text
            } else {
                let mut cut: String = text.chars().take(SHOWN - 1).collect();
                cut.push('…');
                cut
            }
        };
        match (&self.old, &self.new) {
            (None, Some(n)) => write!(f, "+ {}: {}", self.path, show(n)),
            (Some(o), None) => write!(f, "- {}: {}", self.path, show(o)),
            (Some(o), Some(n)) => write!(f, "~ {}: {} -> {}", self.path, show(o), show(n)),
            (None, None) => write!(f, "  {}", self.path),
        }
    }
}

/// Every difference from `old` to `new`, in path order.
pub fn changes(old: &Value, new: &Value) -> Vec<Change> {
    let mut out = vec![];
    walk("", Some(old), Some(new), &mut out);
    out
}

fn walk(path: &str, old: Option<&Value>, new: Option<&Value>, out: &mut Vec<Change>) {
    let join = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    match (old, new) {
        (Some(a), Some(b)) if a == b => {}
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                walk(&join(k), a.get(k), b.get(k), out);
            }
        }
        // A missing list and an empty one are the same: compare element by element.
        (None | Some(Value::Null), Some(Value::Array(_))) => walk(path, Some(&EMPTY), new, out),
        (Some(Value::Array(_)), None | Some(Value::Null)) => walk(path, old, Some(&EMPTY), out),
        (Some(Value::Array(a)), Some(Value::Array(b))) => match (
            keyed(a).or_else(|| keyed_like(b, a)),
            keyed(b).or_else(|| keyed_like(a, b)),
        ) {
            (Some((ka, ma)), Some((kb, mb))) if ka == kb => {
                let ids: BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
                for id in ids {
                    walk(
                        &format!("{path}[{id}]"),
                        ma.get(id).copied(),
                        mb.get(id).copied(),
                        out,
                    );
                }
            }
            _ if a.iter().chain(b).all(|v| !v.is_object() && !v.is_array()) => {
                out.push(Change {
                    path: path.into(),
                    old: old.cloned(),
                    new: new.cloned(),
                });
            }
            _ => {
                for i in 0..a.len().max(b.len()) {
                    walk(&format!("{path}[{i}]"), a.get(i), b.get(i), out);
                }
            }
        },
        (None, None) => {}
        _ => out.push(Change {
            path: path.into(),
            old: old.filter(|v| !v.is_null()).cloned(),
            new: new.filter(|v| !v.is_null()).cloned(),
        }),
    }
}

static EMPTY: Value = Value::Array(Vec::new());

/// An empty list takes the identity field of the list it is compared with.
fn keyed_like<'a>(
    other: &[Value],
    items: &'a [Value],
) -> Option<(&'static str, BTreeMap<String, &'a Value>)> {
    if items.is_empty() {
        keyed(other).map(|(k, _)| (k, BTreeMap::new()))
    } else {
        None
    }
}

/// The identity field of a list of objects and its elements by identity, if one works.
fn keyed(items: &[Value]) -> Option<(&'static str, BTreeMap<String, &Value>)> {
    if items.is_empty() {
        return None;
    }
    KEYS.iter().find_map(|key| {
        let mut map = BTreeMap::new();
        for item in items {
            let id = match item.get(key)? {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return None,
            };
            if map.insert(id, item).is_some() {
                return None;
            }
        }
        Some((*key, map))
    })
}

/// Nodes that get the same changes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeChanges {
    /// Node names, sorted.
    pub nodes: Vec<String>,
    /// What changes on each of them.
    pub changes: Vec<Change>,
}

/// What changes from one snapshot to another.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    /// Changes of the input objects.
    pub inputs: Vec<Change>,
    /// Changes of the rendered node configs, nodes with the same changes grouped.
    pub nodes: Vec<NodeChanges>,
    /// Nodes whose config stays the same.
    pub unchanged: Vec<String>,
}

/// Which of the two snapshots of a diff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The snapshot compared from.
    Old,
    /// The snapshot compared to.
    New,
}

/// Why a diff failed: one snapshot did not render (or serialise) for the nodes.
#[derive(Debug, thiserror::Error)]
#[error("the {} snapshot: {error}", match side { Side::Old => "old", Side::New => "new" })]
pub struct DiffError {
    /// The snapshot that failed.
    pub side: Side,
    /// Why.
    pub error: Error,
}

/// Compares `old` to `new`: their inputs, and the configs they render for `nodes`.
///
/// # Errors
/// [`DiffError`] naming the snapshot that does not render for these nodes.
pub fn diff(old: &Snapshot, new: &Snapshot, nodes: &[Node]) -> Result<Diff, DiffError> {
    let at = |side| move |error| DiffError { side, error };
    let inputs = changes(
        &to_value(old).map_err(at(Side::Old))?,
        &to_value(new).map_err(at(Side::New))?,
    );
    let configs = |snapshot, side| -> Result<Vec<Option<NodeConfig>>, DiffError> {
        let rendered = render(snapshot, nodes).map_err(at(side))?;
        Ok(nodes.iter().map(|n| rendered.config(&n.name)).collect())
    };
    let (old, new) = (configs(old, Side::Old)?, configs(new, Side::New)?);
    let mut groups: BTreeMap<String, NodeChanges> = BTreeMap::new();
    let mut unchanged = vec![];
    // Nodes with the same labels get the same configs: diff each distinct pair once.
    // The memo is bounded so fleets of all-different configs stay linear.
    let mut memo: Vec<(Option<&NodeConfig>, Option<&NodeConfig>, Option<String>)> = vec![];
    for ((node, a), b) in nodes.iter().zip(&old).zip(&new) {
        let (a, b) = (a.as_ref(), b.as_ref());
        let key = match memo.iter().find(|(ma, mb, _)| *ma == a && *mb == b) {
            Some((_, _, key)) => key.clone(),
            None => {
                let c = changes(
                    &to_value(&a).map_err(at(Side::Old))?,
                    &to_value(&b).map_err(at(Side::New))?,
                );
                let key = if c.is_empty() {
                    None
                } else {
                    let key = serde_json::to_string(&c)
                        .map_err(|e| at(Side::New)(Error::Serialize(e)))?;
                    groups.entry(key.clone()).or_insert_with(|| NodeChanges {
                        nodes: vec![],
                        changes: c,
                    });
                    Some(key)
                };
                if memo.len() < MEMO {
                    memo.push((a, b, key.clone()));
                }
                key
            }
        };
        match key.and_then(|k| groups.get_mut(&k)) {
            Some(g) => g.nodes.push(node.name.clone()),
            None => unchanged.push(node.name.clone()),
        }
    }
    Ok(Diff {
        inputs,
        nodes: groups.into_values().collect(),
        unchanged,
    })
}

fn to_value<T: Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v).map_err(Error::Serialize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The changes as `diff` prints them.
    fn lines(old: &Value, new: &Value) -> Vec<String> {
        changes(old, new).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn lists_of_named_objects_are_matched_by_name_not_position() {
        let old = json!({"vrfs": [{"name": "a", "mtu": 1500}, {"name": "b", "mtu": 1500}]});
        let new = json!({"vrfs": [{"name": "0", "mtu": 9000}, {"name": "a", "mtu": 1500}, {"name": "b", "mtu": 9000}]});
        assert_eq!(
            lines(&old, &new),
            [
                "+ vrfs[0]: {\"mtu\":9000,\"name\":\"0\"}",
                "~ vrfs[b].mtu: 1500 -> 9000"
            ]
        );
    }

    #[test]
    fn scalar_lists_change_as_a_whole_and_removed_fields_show_their_old_value() {
        let old = json!({"gw": ["10.0.0.1/24"], "vni": 5});
        let new = json!({"gw": ["10.0.0.1/24", "fd00::1/64"]});
        assert_eq!(
            lines(&old, &new),
            [
                "~ gw: [\"10.0.0.1/24\"] -> [\"10.0.0.1/24\",\"fd00::1/64\"]",
                "- vni: 5"
            ]
        );
    }

    #[test]
    fn duplicate_identities_fall_back_to_positions() {
        let old = json!([{"cidr": "10.0.0.0/8", "le": 24}, {"cidr": "10.0.0.0/8", "le": 32}]);
        let new = json!([{"cidr": "10.0.0.0/8", "le": 24}, {"cidr": "10.0.0.0/8", "le": 28}]);
        assert_eq!(lines(&old, &new), ["~ [1].le: 32 -> 28"]);
    }

    #[test]
    fn a_list_that_appears_is_matched_by_identity_like_any_other() {
        let old = json!({"tables": []});
        let new = json!({"tables": [{"tableId": 100}], "vrfs": [{"name": "a"}]});
        assert_eq!(
            lines(&old, &new),
            [
                "+ tables[100]: {\"tableId\":100}",
                "+ vrfs[a]: {\"name\":\"a\"}"
            ]
        );
    }

    #[test]
    fn equal_documents_have_no_changes() {
        let v = json!({"a": [1, 2], "b": {"c": null}});
        assert!(changes(&v, &v).is_empty());
    }

    #[test]
    fn a_long_value_is_cut_to_a_hundred_characters_in_its_line() {
        let long = "x".repeat(150);
        let line = lines(&json!({"a": 1}), &json!({"a": long})).remove(0);
        let shown = line.strip_prefix("~ a: 1 -> ").unwrap_or_default();
        assert_eq!(shown.chars().count(), SHOWN);
        assert!(shown.starts_with("\"xxx") && shown.ends_with('…'), "{line}");
    }
}
