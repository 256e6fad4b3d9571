//! The store's persistence format: a snapshot of every object (CRDs first) and its loading.

use std::sync::Arc;

use serde_json::Value;

use super::State;
use crate::object::meta_str;
use crate::resources::{Builtin, TypeKey, from_crd};
use crate::storage::stored::{Stored, keeps_tree};

impl State {
    /// The resourceVersion and every object, CRDs first, for persistence.
    pub fn snapshot(&self) -> (u64, Vec<Stored>) {
        let mut keys: Vec<&TypeKey> = self.objects.keys().collect();
        keys.sort_by_key(|k| (!k.ends_with("/customresourcedefinitions"), &***k));
        let objects = keys
            .into_iter()
            .flat_map(|k| self.objects[k].sorted(None))
            .map(|(_, o)| o.clone())
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
            let key = rt.key();
            let stored = Stored::encode(Arc::new(o.clone()), keeps_tree(&key));
            self.objects.entry(key).or_default().insert(
                meta_str(o, "namespace"),
                meta_str(o, "name"),
                stored,
            );
        }
        self.rv = snap["resourceVersion"]
            .as_u64()
            .ok_or("no resourceVersion")?;
        self.compacted = self.rv;
        self.window.clear();
        self.window_bytes = 0;
        Ok(())
    }
}
