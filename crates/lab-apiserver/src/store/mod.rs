//! The in-memory object store: every object, the global resourceVersion counter, the retained
//! event window for resuming watches, and the write rules (finalizers, garbage collection,
//! CRD registration). One [`State`] behind one mutex; callers hold the lock for one operation.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::event::{Event, EventType};
use crate::object::{finalizers, meta_mut, meta_str, new_uid, now_timestamp, same_spec};
use crate::resources::{Builtin, Registry, ResourceType, TypeKey, from_crd};
use crate::watchers::Watchers;

mod lifecycle;

type Objects = BTreeMap<(String, String), Arc<Value>>;

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
    /// Highest resourceVersion no longer in the window.
    pub compacted: u64,
    /// Registered watchers.
    pub watchers: Watchers,
    /// Whether something changed since the last persistence flush.
    pub dirty: bool,
}

impl State {
    /// An empty store with the built-in kinds and the default namespaces.
    pub fn new(window_cap: usize) -> Self {
        let mut s = Self {
            rv: 0,
            registry: Registry::with_builtins(),
            objects: HashMap::new(),
            window: VecDeque::new(),
            window_cap: window_cap.max(1),
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

    /// Size of the retained event window.
    pub fn window_cap(&self) -> usize {
        self.window_cap
    }

    /// One object.
    pub fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.objects
            .get(&*rt.key())?
            .get(&(ns.to_string(), name.to_string()))
            .cloned()
    }

    /// Objects of a type in a namespace (all namespaces when `ns` is `None`), from `after` on.
    pub fn list<'a>(
        &'a self,
        key: &str,
        ns: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a (String, String), &'a Arc<Value>)> + 'a {
        self.objects.get(key).into_iter().flat_map(move |m| {
            let range: Box<dyn Iterator<Item = _>> = match ns {
                Some(ns) => Box::new(
                    m.range((ns.to_string(), String::new())..)
                        .take_while(move |((n, _), _)| n == ns),
                ),
                None => Box::new(m.iter()),
            };
            range
        })
    }

    /// Number of stored objects.
    pub fn object_count(&self) -> usize {
        self.objects.values().map(BTreeMap::len).sum()
    }

    /// Retained events after `rv`, or `None` if some of them were already dropped.
    pub fn events_since(&self, rv: u64) -> Option<impl Iterator<Item = &Arc<Event>>> {
        (rv >= self.compacted).then(|| self.window.iter().filter(move |e| e.rv > rv))
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
        if rt.namespaced && self.get_key("/namespaces", "", ns).is_none() {
            return Err(ApiError::not_found("", "namespaces", ns));
        }
        if self.get_key(&key, ns, &name).is_some() {
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
        self.objects
            .entry(key.clone())
            .or_default()
            .insert((ns.to_string(), name), obj.clone());
        self.commit(key, EventType::Added, obj.clone(), None);
        Ok(obj)
    }

    /// Replaces an object (main resource or, with `status_only`, its status).
    pub fn update(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        mut obj: Value,
        status_only: bool,
    ) -> Result<Arc<Value>, ApiError> {
        let key = rt.key();
        let old = self
            .get_key(&key, ns, name)
            .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
        let want_rv = meta_str(&obj, "resourceVersion");
        if !want_rv.is_empty() && want_rv != meta_str(&old, "resourceVersion") {
            return Err(ApiError::conflict(&rt.group, &rt.plural, name));
        }
        if status_only {
            let status = obj.get("status").cloned().unwrap_or(Value::Null);
            obj = (*old).clone();
            obj["status"] = status;
        } else if rt.status_subresource {
            match old.get("status") {
                Some(s) => obj["status"] = s.clone(),
                None => {
                    obj.as_object_mut().map(|o| o.remove("status"));
                }
            }
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
        Ok(self.store_modified(key, ns, name, obj, old))
    }

    /// Records a change: the event window, watchers, and the dirty flag.
    pub(super) fn commit(
        &mut self,
        key: TypeKey,
        kind: EventType,
        object: Arc<Value>,
        prev: Option<Arc<Value>>,
    ) {
        let ev = Arc::new(Event {
            rv: self.rv,
            key,
            kind,
            object,
            prev,
            encoded: OnceLock::new(),
        });
        if self.window.len() >= self.window_cap
            && let Some(old) = self.window.pop_front()
        {
            self.compacted = old.rv;
        }
        self.window.push_back(ev.clone());
        self.watchers.dispatch(&ev);
        self.dirty = true;
    }

    /// The resourceVersion and every object, CRDs first, for persistence.
    pub fn snapshot(&self) -> (u64, Vec<Arc<Value>>) {
        let mut keys: Vec<&TypeKey> = self.objects.keys().collect();
        keys.sort_by_key(|k| (!k.ends_with("/customresourcedefinitions"), &***k));
        let objects = keys
            .into_iter()
            .flat_map(|k| self.objects[k].values().cloned())
            .collect();
        (self.rv, objects)
    }

    /// Loads a [`State::snapshot`], keeping each object's metadata as it was saved.
    pub fn restore(&mut self, snap: &Value) -> Result<(), String> {
        let objs = snap["objects"].as_array().ok_or("no \"objects\" array")?;
        for o in objs {
            let (av, kind) = (
                o["apiVersion"].as_str().unwrap_or_default(),
                o["kind"].as_str().unwrap_or_default(),
            );
            let (group, version) = av.rsplit_once('/').unwrap_or(("", av));
            let rt = self
                .registry
                .all()
                .find(|t| t.group == group && t.version == version && t.kind == kind)
                .cloned();
            let rt = rt.ok_or_else(|| format!("object of unknown kind {av} {kind}"))?;
            if rt.builtin == Some(Builtin::Crd) {
                for t in from_crd(o) {
                    self.registry.insert(t);
                }
            }
            let id = (
                meta_str(o, "namespace").to_string(),
                meta_str(o, "name").to_string(),
            );
            self.objects
                .entry(rt.key())
                .or_default()
                .insert(id, Arc::new(o.clone()));
        }
        self.rv = snap["resourceVersion"]
            .as_u64()
            .ok_or("no resourceVersion")?;
        self.compacted = self.rv;
        self.window.clear();
        Ok(())
    }
}
