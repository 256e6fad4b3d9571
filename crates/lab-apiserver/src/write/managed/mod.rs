//! Field ownership for server-side apply, kept in `metadata.managedFields` (FieldsV1 format,
//! leaves only; lists are atomic). An apply without `force` that would change a field owned by
//! another manager fails with 409 Conflict, as kube-lease-manager relies on.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::object::now_timestamp;

mod fields;

use fields::*;

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
    let out = match (old, w.apply) {
        (Some(old), false) => record_update(&w.manager, old, new, api_version),
        _ => record_general(w, old, new, applied, api_version),
    };
    set_entries(new, out);
}

/// [`record`] by the definition: every leaf of every entry against every leaf of the object.
fn record_general(
    w: &Writer,
    old: Option<&Value>,
    new: &Value,
    applied: Option<&Value>,
    api_version: &str,
) -> Vec<Value> {
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
            let same = before.iter().find(|b| {
                b["manager"] == *e.manager
                    && b["operation"] == *e.operation
                    && b["fieldsV1"] == fields
            });
            match same {
                Some(b) => b.clone(),
                None => entry(&e.manager, &e.operation, &e.api_version, &time, fields),
            }
        })
        .collect();
    out
}

/// One `managedFields` entry.
fn entry(manager: &str, operation: &str, api_version: &str, time: &str, fields: Value) -> Value {
    json!({"manager": manager, "operation": operation, "apiVersion": api_version, "time": time, "fieldsType": "FieldsV1", "fieldsV1": fields})
}

fn set_entries(new: &mut Value, out: Vec<Value>) {
    if let Some(m) = new.get_mut("metadata").and_then(Value::as_object_mut) {
        if out.is_empty() {
            m.remove("managedFields");
        } else {
            m.insert("managedFields".into(), Value::Array(out));
        }
    }
}

/// [`record`] of an update by `manager` (not an apply), computed from what changed rather than
/// from every field of the object: the changed leaves are found by walking `old` and `new`
/// together, and an entry none of whose fields is touched is kept as it was, without being
/// decoded and encoded again. The same entries as the general path, for entries this server
/// wrote (its canonical FieldsV1).
fn record_update(manager: &str, old: &Value, new: &Value, api_version: &str) -> Vec<Value> {
    // What the writer now owns: the leaves whose value it changed.
    let mut owned: Vec<Path> = vec![];
    for (mut path, part) in ownable(new) {
        changed(at(old, &path), part, &mut path, &mut owned);
    }
    let owns = |p: &[&str]| {
        owned
            .iter()
            .any(|o| o.len() == p.len() && o.iter().zip(p).all(|(a, b)| a == b))
    };
    let mut out = vec![];
    let mut found = false;
    let mut time = None;
    for b in old["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let same_manager = b["manager"] == manager && b["operation"] == "Update";
        // The writer's own entry (the first, as the general path takes it) gains what it
        // changed; the others lose it; every entry loses the fields that are gone.
        let mine = same_manager && !found;
        found |= mine;
        let keep = |p: &[&str]| is_leaf(new, p) && (same_manager || !owns(p));
        let fields = &b["fieldsV1"];
        let untouched = fields.as_object().is_some_and(|m| !m.is_empty())
            && every_leaf(fields, &mut vec![], &keep)
            && (!mine || owned.iter().all(|p| has_leaf(fields, p)));
        if untouched {
            out.push(b.clone());
            continue;
        }
        let mut set = BTreeSet::new();
        from_fields(fields, &mut vec![], &mut set);
        set.retain(|p| keep(&p.iter().map(String::as_str).collect::<Vec<_>>()));
        if mine {
            set.extend(owned.iter().cloned());
        }
        if set.is_empty() {
            continue;
        }
        let set = to_fields(&set);
        if set == *fields {
            out.push(b.clone());
            continue;
        }
        let time = time.get_or_insert_with(now_timestamp);
        let s = |k: &str| b[k].as_str().unwrap_or_default();
        out.push(entry(
            s("manager"),
            s("operation"),
            s("apiVersion"),
            time,
            set,
        ));
    }
    if !found && !owned.is_empty() {
        let fields = to_fields(&owned.into_iter().collect());
        let time = time.get_or_insert_with(now_timestamp);
        out.push(entry(manager, "Update", api_version, time, fields));
    }
    out
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

    /// Objects with a few nested fields, labels and annotations; values that include null
    /// (absent), empty objects (leaves) and lists (atomic).
    fn object() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            Just(json!(1)),
            Just(json!(2)),
            Just(json!("a")),
            Just(json!({})),
            Just(json!([1])),
        ];
        let tree = leaf.prop_recursive(3, 16, 3, |inner| {
            proptest::collection::btree_map("[xyz]", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect()))
        });
        let strings = proptest::collection::btree_map("[pq]", "[ab]", 0..3);
        (tree.clone(), tree, strings.clone(), strings).prop_map(|(spec, status, l, a)| {
            json!({"apiVersion": "v1", "kind": "X",
                "metadata": {"name": "n", "labels": l, "annotations": a},
                "spec": spec, "status": status})
        })
    }

    /// Entry times: `kept` for one carried over from the stored object, `new` otherwise.
    fn times_marked(mut entries: Vec<Value>) -> Vec<Value> {
        for e in &mut entries {
            if e["time"] != "T0" {
                e["time"] = json!("new");
            }
        }
        entries
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(2000))]

        /// The incremental update path records what the definition records: for a chain of
        /// writes by several managers (updates and applies), every update's entries, which are
        /// renewed and which keep their time.
        #[test]
        fn an_update_records_what_the_definition_records(
            first in object(),
            writes in proptest::collection::vec((object(), 0..3usize, proptest::bool::weighted(0.2)), 1..6),
        ) {
            let managers = ["a", "b", "c"];
            let mut stored = first;
            let applied = stored.clone();
            let out = record_general(&w("a", true, false), None, &stored, Some(&applied), "v1");
            set_entries(&mut stored, out);
            for (next, m, apply) in writes {
                // Times the stored entries carry, to tell kept entries from renewed ones.
                if let Some(es) = stored["metadata"]["managedFields"].as_array_mut() {
                    for e in es {
                        e["time"] = json!("T0");
                    }
                }
                let writer = w(managers[m], apply, true);
                let general = record_general(&writer, Some(&stored), &next, apply.then_some(&next), "v1");
                if !apply {
                    let fast = record_update(managers[m], &stored, &next, "v1");
                    proptest::prop_assert_eq!(times_marked(fast), times_marked(general.clone()));
                }
                let mut next = next;
                set_entries(&mut next, general);
                stored = next;
            }
        }
    }
}
