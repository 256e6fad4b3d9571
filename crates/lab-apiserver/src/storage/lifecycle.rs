//! Deletion and its consequences: finalizers and `deletionTimestamp`, removal, namespace and
//! CRD clean-up, background garbage collection of dependents, and CRD registration.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{EventType, State};
use crate::error::ApiError;
use crate::object::{finalizers, meta_mut, meta_str, now_timestamp};
use crate::resources::{ResourceType, TypeKey, from_crd};
use crate::storage::stored::Stored;

impl State {
    /// Deletes an object: marks it while finalizers remain, else removes it and collects its
    /// dependents (unless `orphan`). `precondition` is an expected resourceVersion or uid.
    pub fn delete(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        precondition: (&str, &str),
        orphan: bool,
    ) -> Result<Arc<Value>, ApiError> {
        let key = rt.key();
        let cur = self
            .get_key(&key, ns, name)
            .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
        let (want_rv, want_uid) = precondition;
        if (!want_rv.is_empty() && want_rv != meta_str(&cur, "resourceVersion"))
            || (!want_uid.is_empty() && want_uid != meta_str(&cur, "uid"))
        {
            return Err(ApiError::conflict(&rt.group, &rt.plural, name));
        }
        self.delete_key(key, ns, name, orphan)
    }

    fn delete_key(
        &mut self,
        key: TypeKey,
        ns: &str,
        name: &str,
        orphan: bool,
    ) -> Result<Arc<Value>, ApiError> {
        let Some(cur) = self.get_key(&key, ns, name) else {
            return Ok(Arc::new(Value::Null));
        };
        if finalizers(&cur).is_empty() {
            return Ok(self.remove(key, ns, name, orphan));
        }
        if cur["metadata"].get("deletionTimestamp").is_some() {
            return Ok(cur);
        }
        let mut new = (*cur).clone();
        let m = meta_mut(&mut new);
        m.insert("deletionTimestamp".into(), json!(now_timestamp()));
        m.insert("deletionGracePeriodSeconds".into(), json!(0));
        self.store_modified(key, ns, name, new, cur)
    }

    pub(super) fn get_key(&self, key: &str, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.stored_key(key, ns, name).map(Stored::value)
    }

    /// One object as stored, by storage key, namespace and name.
    pub fn stored_key(&self, key: &str, ns: &str, name: &str) -> Option<&Stored> {
        self.objects.get(key)?.get(ns, name)
    }

    pub(super) fn store_modified(
        &mut self,
        key: TypeKey,
        ns: &str,
        name: &str,
        mut obj: Value,
        old: Arc<Value>,
    ) -> Result<Arc<Value>, ApiError> {
        self.rv += 1;
        meta_mut(&mut obj).insert("resourceVersion".into(), json!(self.rv.to_string()));
        let obj = Arc::new(obj);
        let prev = self.stored_key(&key, ns, name).cloned().map(|s| (s, old));
        let stored = self.commit(key.clone(), EventType::Modified, &obj, prev)?;
        self.objects
            .entry(key)
            .or_default()
            .insert(ns, name, stored);
        Ok(obj)
    }

    /// Removes an object now, then everything that depended on it.
    pub(super) fn remove(
        &mut self,
        key: TypeKey,
        ns: &str,
        name: &str,
        orphan: bool,
    ) -> Arc<Value> {
        let Some(old) = self.objects.get_mut(&key).and_then(|m| m.remove(ns, name)) else {
            return Arc::new(Value::Null);
        };
        self.rv += 1;
        let mut gone = (*old.value()).clone();
        meta_mut(&mut gone).insert("resourceVersion".into(), json!(self.rv.to_string()));
        let gone = Arc::new(gone);
        // A deletion stores nothing: etcd's size limit does not apply to it.
        let _ = self.commit(key.clone(), EventType::Deleted, &gone, None);
        match &*key {
            "apiextensions.k8s.io/customresourcedefinitions" => {
                let (g, p) = (
                    gone["spec"]["group"].as_str().unwrap_or_default(),
                    gone["spec"]["names"]["plural"].as_str().unwrap_or_default(),
                );
                self.registry.remove_all(g, p);
                let key: TypeKey = Arc::from(format!("{g}/{p}"));
                self.purge(&key, None);
                // The kind is gone: its watch streams end, as kube-apiserver's do.
                self.watchers.drop_type(&key);
            }
            "/namespaces" => {
                let keys: Vec<TypeKey> = self.objects.keys().cloned().collect();
                for k in keys {
                    self.purge(&k, Some(name));
                }
            }
            _ => {}
        }
        self.collect_dependents(meta_str(&gone, "uid"), orphan);
        gone
    }

    /// Deletes every object of a type (in one namespace, if given).
    fn purge(&mut self, key: &TypeKey, ns: Option<&str>) {
        let names: Vec<(String, String)> = self
            .list(key, ns)
            .map(|((ns, name), _)| (ns.to_string(), name.to_string()))
            .collect();
        for (ns, name) in names {
            // Only marking an object over the size limit can fail; it stays, as on etcd.
            let _ = self.delete_key(key.clone(), &ns, &name, false);
        }
    }

    /// Background garbage collection: drops references to a removed owner and deletes
    /// dependents left without owners.
    fn collect_dependents(&mut self, uid: &str, orphan: bool) {
        if uid.is_empty() {
            return;
        }
        let mut found = vec![];
        for (key, objs) in &self.objects {
            // Only objects whose bytes mention the uid are decoded.
            for ((ns, name), o) in objs
                .sorted(None)
                .into_iter()
                .filter(|(_, o)| o.contains(uid))
            {
                let o = o.value();
                let refs = o["metadata"]["ownerReferences"].as_array();
                if refs.is_some_and(|r| r.iter().any(|r| r["uid"] == uid)) {
                    found.push((key.clone(), ns.to_string(), name.to_string(), o.clone()));
                }
            }
        }
        for (key, ns, name, o) in found {
            let mut new = (*o).clone();
            let refs = meta_mut(&mut new)
                .get_mut("ownerReferences")
                .and_then(Value::as_array_mut);
            let left = refs.map(|r| {
                r.retain(|r| r["uid"] != uid);
                r.len()
            });
            if left == Some(0) {
                meta_mut(&mut new).remove("ownerReferences");
            }
            // Removing references only shrinks an object, and a deletion stores nothing: neither
            // meets the size limit.
            if left == Some(0) && !orphan {
                let _ = self.delete_key(key, &ns, &name, false);
            } else {
                let _ = self.store_modified(key, &ns, &name, new, o);
            }
        }
    }

    /// Background garbage collection of a dependent whose `ownerReferences` were just set or
    /// changed, as kube-controller-manager's garbage collector verifies the owners it has not
    /// seen: an owner is absent when no object of its kind and name exists (in the dependent's
    /// namespace for a namespaced kind) or the one that exists has another uid. A dependent all
    /// of whose owners are absent is deleted; one with some owners present loses the
    /// references to the absent ones. An owner of a kind the server does not serve (or a
    /// namespaced owner of a cluster-scoped dependent) cannot be verified and keeps the
    /// dependent, as in Kubernetes.
    pub(super) fn collect_if_dangling(&mut self, key: &TypeKey, ns: &str, name: &str) {
        let Some(obj) = self.get_key(key, ns, name) else {
            return;
        };
        let Some(refs) = obj["metadata"]["ownerReferences"].as_array() else {
            return;
        };
        let absent: Vec<&Value> = refs.iter().filter(|r| self.owner_absent(r, ns)).collect();
        if absent.is_empty() {
            return;
        }
        if absent.len() == refs.len() {
            tracing::debug!(key = %key, ns, name, "garbage collecting: every owner is absent");
            let _ = self.delete_key(key.clone(), ns, name, false);
            return;
        }
        let kept: Vec<Value> = refs
            .iter()
            .filter(|r| !absent.contains(r))
            .cloned()
            .collect();
        let mut new = (*obj).clone();
        meta_mut(&mut new).insert("ownerReferences".into(), Value::Array(kept));
        let _ = self.store_modified(key.clone(), ns, name, new, obj);
    }

    /// Whether the owner `r` of a dependent in namespace `ns` is verifiably absent.
    fn owner_absent(&self, r: &Value, ns: &str) -> bool {
        let (av, kind, name, uid) = (
            r["apiVersion"].as_str().unwrap_or_default(),
            r["kind"].as_str().unwrap_or_default(),
            r["name"].as_str().unwrap_or_default(),
            r["uid"].as_str().unwrap_or_default(),
        );
        let (group, version) = av.rsplit_once('/').unwrap_or(("", av));
        let Some(rt) = self
            .registry
            .all()
            .find(|t| t.group == group && t.version == version && t.kind == kind)
        else {
            return false;
        };
        let owner_ns = match (rt.namespaced, ns.is_empty()) {
            (true, true) => return false,
            (true, false) => ns,
            (false, _) => "",
        };
        match self.stored_key(&rt.key(), owner_ns, name) {
            // The uid is looked for in the owner's bytes before anything is decoded.
            Some(owner) if owner.contains(uid) => owner.value()["metadata"]["uid"] != uid,
            _ => true,
        }
    }

    /// Registers the types a CRD defines and fills in its status.
    pub(super) fn register_crd(&mut self, old: Option<&Value>, crd: &mut Value) {
        if let Some(old) = old {
            self.registry.remove_all(
                old["spec"]["group"].as_str().unwrap_or_default(),
                old["spec"]["names"]["plural"].as_str().unwrap_or_default(),
            );
        }
        for t in from_crd(crd) {
            self.registry.insert(t);
        }
        let now = now_timestamp();
        let cond = |t: &str, reason: &str| json!({"type": t, "status": "True", "reason": reason, "message": "", "lastTransitionTime": now});
        crd["status"] = json!({
            "acceptedNames": crd["spec"]["names"],
            "conditions": [cond("NamesAccepted", "NoConflicts"), cond("Established", "InitialNamesAccepted")],
            "storedVersions": crd["spec"]["versions"].as_array().into_iter().flatten()
                .filter(|v| v["storage"] == true).map(|v| v["name"].clone()).collect::<Vec<_>>(),
        });
    }
}
