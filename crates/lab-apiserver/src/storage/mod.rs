//! Storage: the in-memory object store (here), the stored form of an object and of an event,
//! the watchers, persistence, and the views of stored objects clients see.
//!
//! The in-memory object store: every object, the global resourceVersion counter, the retained
//! event window for resuming watches, and the write rules (finalizers, garbage collection,
//! CRD registration). One [`State`] behind one mutex; callers hold the lock for one operation.
//!
//! Objects are held as their JSON bytes ([`Stored`]), shared with the event window and the
//! watchers; [`State::get`] decodes. The window is bounded by a number of events and a number
//! of bytes; a watch from a resourceVersion older than it gets 410 Gone and relists.
//!
//! Here: create and update, reads, the window. `lifecycle`: deletion, finalizers, garbage
//! collection, CRD registration; `objects`: the map of one type's objects; `snapshot`: the
//! persistence format.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::error::{ApiError, MAX_OBJECT_BYTES};
use crate::object::{
    finalizers, meta_mut, meta_str, new_uid, now_timestamp, same_but_status, same_spec,
};
use crate::resources::{Builtin, Registry, ResourceType, TypeKey};
use crate::storage::event::{Event, EventType};
use crate::storage::stored::Stored;
use crate::storage::watchers::Watchers;

pub(crate) mod convert;
pub(crate) mod event;
mod lifecycle;
mod objects;
pub(crate) mod persist;
mod snapshot;
pub(crate) mod stored;
pub(crate) mod watchers;

use objects::Objects;

/// An object's namespace (empty for cluster-scoped objects) and name.
pub type Id<'a> = (&'a str, &'a str);

/// Default bound of the event window in bytes of encoded events.
pub const DEFAULT_WINDOW_BYTES: usize = 64 << 20;

/// Everything the server knows, guarded by one lock.
#[derive(Debug)]
pub struct State {
    /// The last resourceVersion handed out.
    pub rv: u64,
    /// Servable types.
    pub registry: Registry,
    objects: HashMap<TypeKey, Objects>,
    window: VecDeque<Arc<Event>>,
    window_cap: usize,
    window_bytes: usize,
    window_bytes_cap: usize,
    /// Highest resourceVersion no longer in the window.
    pub compacted: u64,
    /// Registered watchers.
    pub watchers: Watchers,
    /// Whether something changed since the last persistence flush.
    pub dirty: bool,
}

impl State {
    /// An empty store with the built-in kinds and the default namespaces.
    /// The event window keeps at most `window_cap` events and `window_bytes_cap` bytes of them.
    pub fn new(window_cap: usize, window_bytes_cap: usize) -> Self {
        let mut s = Self {
            rv: 0,
            registry: Registry::with_builtins(),
            objects: HashMap::new(),
            window: VecDeque::new(),
            window_cap: window_cap.max(1),
            window_bytes: 0,
            window_bytes_cap,
            compacted: 0,
            watchers: Watchers::default(),
            dirty: false,
        };
        if let Some(ns) = s.registry.get("", "v1", "namespaces") {
            for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
                let obj =
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
                let _ = s.create(&ns, "", obj);
            }
        }
        s
    }

    /// Bounds of the retained event window: events, bytes.
    pub fn window_cap(&self) -> (usize, usize) {
        (self.window_cap, self.window_bytes_cap)
    }

    /// One object, decoded.
    pub fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.get_key(&rt.key(), ns, name)
    }

    /// One object as stored.
    pub fn get_stored(&self, rt: &ResourceType, ns: &str, name: &str) -> Option<&Stored> {
        self.stored_key(&rt.key(), ns, name)
    }

    /// Objects of a type in a namespace (all namespaces when `ns` is `None`), sorted by
    /// namespace and name.
    pub fn list<'a>(
        &'a self,
        key: &str,
        ns: Option<&str>,
    ) -> impl Iterator<Item = (Id<'a>, &'a Stored)> + 'a {
        self.objects
            .get(key)
            .map(|m| m.sorted(ns))
            .unwrap_or_default()
            .into_iter()
    }

    /// Number of stored objects.
    pub fn object_count(&self) -> usize {
        self.objects.values().map(Objects::len).sum()
    }

    /// Retained events after `rv`, or `None` if some of them were already dropped.
    pub fn events_since(&self, rv: u64) -> Option<impl Iterator<Item = &Arc<Event>>> {
        (rv >= self.compacted).then(|| self.window.iter().skip_while(move |e| e.rv <= rv))
    }

    /// Creates an object whose name is already set; sets uid, timestamps and resourceVersion.
    pub fn create(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        mut obj: Value,
    ) -> Result<Arc<Value>, ApiError> {
        let key = rt.key();
        let name = meta_str(&obj, "name").to_string();
        if rt.namespaced && self.stored_key("/namespaces", "", ns).is_none() {
            return Err(ApiError::not_found("", "namespaces", ns));
        }
        if self.stored_key(&key, ns, &name).is_some() {
            return Err(ApiError::already_exists(&rt.group, &rt.plural, &name));
        }
        self.rv += 1;
        let m = meta_mut(&mut obj);
        m.insert("uid".into(), json!(new_uid()));
        m.insert("creationTimestamp".into(), json!(now_timestamp()));
        m.insert("resourceVersion".into(), json!(self.rv.to_string()));
        m.insert("generation".into(), json!(1));
        m.remove("deletionTimestamp");
        m.remove("deletionGracePeriodSeconds");
        if rt.namespaced {
            m.insert("namespace".into(), json!(ns));
        } else {
            m.remove("namespace");
        }
        if rt.status_subresource && rt.builtin.is_none() {
            obj.as_object_mut().map(|o| o.remove("status"));
        }
        match rt.builtin {
            Some(Builtin::Crd) => self.register_crd(None, &mut obj),
            Some(Builtin::Namespace) => obj["status"] = json!({"phase": "Active"}),
            _ => {}
        }
        let obj = Arc::new(obj);
        let stored = match self.commit(key.clone(), EventType::Added, &obj, None) {
            Ok(s) => s,
            Err(e) => {
                if rt.builtin == Some(Builtin::Crd) {
                    self.registry.remove_all(
                        obj["spec"]["group"].as_str().unwrap_or_default(),
                        obj["spec"]["names"]["plural"].as_str().unwrap_or_default(),
                    );
                }
                return Err(e);
            }
        };
        self.objects
            .entry(key.clone())
            .or_default()
            .insert(ns, &name, stored);
        if obj["metadata"].get("ownerReferences").is_some() {
            self.collect_if_dangling(&key, ns, &name);
        }
        Ok(obj)
    }

    /// Replaces an object (main resource or, with `status_only`, its status). `current` is the
    /// stored object if the caller already decoded it under the same lock.
    pub fn update(
        &mut self,
        rt: &ResourceType,
        (ns, name): (&str, &str),
        mut obj: Value,
        status_only: bool,
        current: Option<Arc<Value>>,
    ) -> Result<Arc<Value>, ApiError> {
        let key = rt.key();
        let old = current
            .or_else(|| self.get_key(&key, ns, name))
            .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
        let want_rv = meta_str(&obj, "resourceVersion");
        if !want_rv.is_empty() && want_rv != meta_str(&old, "resourceVersion") {
            return Err(ApiError::conflict(&rt.group, &rt.plural, name));
        }
        if status_only && rt.builtin == Some(Builtin::Node) {
            // kube-apiserver's Node status strategy keeps only the spec: labels, annotations,
            // owner references and finalizers may change through nodes/status (kubelets and
            // CNI agents annotate Nodes that way), so admission policies must guard both.
            keep_field(&mut obj, &old, "spec");
        } else if status_only {
            if same_but_status(&obj, &old) {
                // The write changed only the status: it is the new version as it is.
                if let Some(o) = obj.as_object_mut() {
                    o.entry("status").or_insert(Value::Null);
                }
            } else {
                let status = obj.get("status").cloned().unwrap_or(Value::Null);
                obj = (*old).clone();
                obj["status"] = status;
            }
        } else if rt.status_subresource {
            keep_field(&mut obj, &old, "status");
        }
        let deleting = old["metadata"].get("deletionTimestamp").cloned();
        let generation = old["metadata"]["generation"].as_i64().unwrap_or(1);
        let bump = !status_only && !same_spec(&obj, &old);
        let m = meta_mut(&mut obj);
        for f in ["uid", "creationTimestamp", "name"] {
            m.insert(f.into(), old["metadata"][f].clone());
        }
        if rt.namespaced {
            m.insert("namespace".into(), json!(ns));
        }
        m.insert(
            "generation".into(),
            json!(if bump { generation + 1 } else { generation }),
        );
        match deleting {
            Some(ts) => {
                m.insert("deletionTimestamp".into(), ts);
                m.insert("deletionGracePeriodSeconds".into(), json!(0));
            }
            None => {
                m.remove("deletionTimestamp");
                m.remove("deletionGracePeriodSeconds");
            }
        }
        m.insert(
            "resourceVersion".into(),
            old["metadata"]["resourceVersion"].clone(),
        );
        if rt.builtin == Some(Builtin::Crd) && !status_only {
            self.register_crd(Some(&old), &mut obj);
        }
        if obj == *old {
            return Ok(old);
        }
        if obj["metadata"].get("deletionTimestamp").is_some() && finalizers(&obj).is_empty() {
            return Ok(self.remove(key, ns, name, false));
        }
        let refs_changed =
            obj["metadata"].get("ownerReferences") != old["metadata"].get("ownerReferences");
        let new = self.store_modified(key.clone(), ns, name, obj, old)?;
        if refs_changed {
            self.collect_if_dangling(&key, ns, name);
        }
        Ok(new)
    }

    /// Records a change: encodes it once, then the event window, watchers, and the dirty flag.
    /// `prev` is the version replaced by a modification, stored and decoded. Returns the new
    /// version as stored, or, for an object over [`MAX_OBJECT_BYTES`], the error etcd gives
    /// (nothing is recorded and the resourceVersion the caller took is given back).
    pub(super) fn commit(
        &mut self,
        key: TypeKey,
        kind: EventType,
        object: &Arc<Value>,
        prev: Option<(Stored, Arc<Value>)>,
    ) -> Result<Stored, ApiError> {
        let (prev, prev_tree) = prev.unzip();
        let ev = Arc::new(Event::new(self.rv, key, kind, object, prev));
        if kind != EventType::Deleted && ev.object.size() > MAX_OBJECT_BYTES {
            self.rv -= 1;
            return Err(ApiError::object_too_large());
        }
        self.window_bytes += ev.object.size();
        self.window.push_back(ev.clone());
        while self.window.len() > self.window_cap
            || (self.window_bytes > self.window_bytes_cap && self.window.len() > 1)
        {
            let Some(old) = self.window.pop_front() else {
                break;
            };
            self.window_bytes -= old.object.size();
            self.compacted = old.rv;
        }
        self.watchers.dispatch(&ev, object, prev_tree.as_deref());
        self.dirty = true;
        Ok(ev.object.clone())
    }
}

/// Sets `field` of `obj` to its value in `old` (removing it when `old` has none).
fn keep_field(obj: &mut Value, old: &Value, field: &str) {
    match old.get(field) {
        Some(v) => obj[field] = v.clone(),
        None => {
            obj.as_object_mut().map(|o| o.remove(field));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(s: &mut State, name: &str, payload: usize) -> u64 {
        let cms = s.registry.get("", "v1", "configmaps").unwrap();
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"p": "x".repeat(payload)}});
        s.create(&cms, "default", cm).unwrap();
        s.rv
    }

    #[test]
    fn the_window_keeps_the_newest_events_within_both_bounds() {
        let mut by_count = State::new(3, usize::MAX);
        let first = write(&mut by_count, "a", 10);
        for n in ["b", "c", "d", "e"] {
            write(&mut by_count, n, 10);
        }
        assert!(by_count.events_since(first).is_none(), "compacted: 410");
        assert_eq!(by_count.events_since(by_count.rv - 3).unwrap().count(), 3);

        let mut by_bytes = State::new(10_000, 3_500);
        let first = write(&mut by_bytes, "a", 1000);
        for n in ["b", "c", "d", "e"] {
            write(&mut by_bytes, n, 1000);
        }
        assert!(by_bytes.events_since(first).is_none(), "compacted: 410");
        let kept = by_bytes.events_since(by_bytes.compacted).unwrap().count();
        assert!(
            (1..=3).contains(&kept),
            "{kept} events of ~1 KB within 3.5 KB"
        );
        assert_eq!(
            by_bytes.object_count(),
            4 + 5,
            "objects stay: 4 namespaces, 5 ConfigMaps"
        );
    }

    #[test]
    fn store_window_and_event_share_one_copy_of_the_bytes() {
        let mut s = State::new(10, usize::MAX);
        write(&mut s, "a", 100);
        let cms = s.registry.get("", "v1", "configmaps").unwrap();
        let stored = s.get_stored(&cms, "default", "a").unwrap().raw().clone();
        let ev = s.events_since(s.rv - 1).unwrap().next().unwrap();
        assert_eq!(ev.object.raw().as_ptr(), stored.as_ptr());
        assert_eq!(
            s.get(&cms, "default", "a").unwrap()["data"]["p"],
            "x".repeat(100)
        );
    }
}
