//! [`Overlay`]: the configurator's own writes, laid over the watch caches until the caches
//! catch up, so that a pass planned right after a write never sees the state before it (which
//! would free slots that are taken and breach the update limit).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::Resource;

/// The overlays of the two kinds the configurator writes and plans from.
#[derive(Debug, Default)]
pub struct Overlays {
    /// Own `NodeNetworkConfig` writes.
    pub(crate) nncs: Overlay<crate::views::NodeConfigView>,
    /// Own `NetworkConfigRevision` writes.
    pub(crate) ncrs: Overlay<netrollout_api::NetworkConfigRevision>,
}

/// Entries older than this are dropped even if the cache never showed the write.
const MAX_AGE: Duration = Duration::from_secs(30);

/// Written objects by name, until the watch cache holds them or something newer.
#[derive(Debug)]
pub struct Overlay<K> {
    entries: Mutex<HashMap<String, Entry<K>>>,
}

#[derive(Debug)]
struct Entry<K> {
    /// The object as the write returned it; `None` after a delete.
    after: Option<Arc<K>>,
    /// resourceVersion returned by the write (or the last one seen before a delete).
    rv: Option<String>,
    at: Instant,
}

impl<K> Default for Overlay<K> {
    fn default() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Resource + Clone> Overlay<K> {
    /// Records an object as a create, update or patch returned it, and hands it back shared.
    /// Its managedFields are dropped, as the watches drop them from the cache it is laid over.
    pub fn written(&self, mut obj: K) -> Arc<K> {
        obj.meta_mut().managed_fields = None;
        let obj = Arc::new(obj);
        let Some(name) = obj.meta().name.clone() else {
            return obj;
        };
        let rv = obj.meta().resource_version.clone();
        self.insert(
            name,
            Entry {
                after: Some(obj.clone()),
                rv,
                at: Instant::now(),
            },
        );
        obj
    }

    /// Records a delete of `name`, which had resourceVersion `rv`.
    pub fn deleted(&self, name: &str, rv: Option<String>) {
        self.insert(
            name.to_string(),
            Entry {
                after: None,
                rv,
                at: Instant::now(),
            },
        );
    }

    fn insert(&self, name: String, e: Entry<K>) {
        if let Ok(mut m) = self.entries.lock() {
            m.insert(name, e);
        }
    }

    /// The object `name` as the cache holds it (`cached`) with a newer write laid over it:
    /// the same answer [`Overlay::view`] gives for that name.
    pub fn get(&self, name: &str, cached: Option<Arc<K>>) -> Option<Arc<K>> {
        let Ok(mut m) = self.entries.lock() else {
            return cached;
        };
        let Some(e) = m.get(name) else {
            return cached;
        };
        if e.at.elapsed() >= MAX_AGE {
            m.remove(name);
            return cached;
        }
        match cached {
            // Deleted by us: hidden until the cache drops it too.
            Some(_) if e.after.is_none() => None,
            Some(obj) if newer_or_same(obj.meta().resource_version.as_deref(), e.rv.as_deref()) => {
                m.remove(name);
                Some(obj)
            }
            Some(_) => e.after.clone(),
            None => {
                let after = e.after.clone();
                if after.is_none() {
                    m.remove(name);
                }
                after
            }
        }
    }

    /// Drops the entries older than the longest a write is laid over the cache and returns
    /// their names (what is seen of them may change without a watch event).
    pub fn expire(&self) -> Vec<String> {
        let Ok(mut m) = self.entries.lock() else {
            return Vec::new();
        };
        let old: Vec<String> = m
            .iter()
            .filter(|(_, e)| e.at.elapsed() >= MAX_AGE)
            .map(|(name, _)| name.clone())
            .collect();
        for name in &old {
            m.remove(name);
        }
        old
    }

    /// The cache's objects with the newer writes laid over them.
    pub fn view(&self, cached: Vec<Arc<K>>) -> Vec<Arc<K>> {
        let Ok(mut m) = self.entries.lock() else {
            return cached;
        };
        m.retain(|_, e| e.at.elapsed() < MAX_AGE);
        let mut out = Vec::with_capacity(cached.len() + m.len());
        let mut seen = std::collections::HashSet::new();
        for obj in cached {
            let name = obj.meta().name.clone().unwrap_or_default();
            match m.get(&name) {
                None => out.push(obj),
                Some(e) => {
                    seen.insert(name.clone());
                    let cache_rv = obj.meta().resource_version.as_deref();
                    if e.after.is_none() {
                        // Deleted by us: hidden until the cache drops it too.
                        continue;
                    }
                    if newer_or_same(cache_rv, e.rv.as_deref()) {
                        m.remove(&name);
                        out.push(obj);
                    } else if let Some(after) = &e.after {
                        out.push(after.clone());
                    }
                }
            }
        }
        // Written objects the cache does not hold: created by us and not seen yet, or gone.
        m.retain(|name, e| seen.contains(name) || e.after.is_some());
        for (name, e) in m.iter() {
            if !seen.contains(name)
                && let Some(after) = &e.after
            {
                out.push(after.clone());
            }
        }
        out
    }
}

/// Whether the cache's resourceVersion is at least the written one. resourceVersions are
/// compared as integers when both are (etcd revisions and the lab server's are); otherwise
/// any difference counts as newer.
fn newer_or_same(cache: Option<&str>, written: Option<&str>) -> bool {
    match (cache, written) {
        (Some(c), Some(w)) => match (c.parse::<u64>(), w.parse::<u64>()) {
            (Ok(c), Ok(w)) => c >= w,
            _ => true,
        },
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    fn cm(name: &str, rv: &str, v: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                resource_version: Some(rv.into()),
                ..ObjectMeta::default()
            },
            data: Some([("v".to_string(), v.to_string())].into()),
            ..ConfigMap::default()
        }
    }

    fn values(v: &[Arc<ConfigMap>]) -> Vec<String> {
        let mut out: Vec<String> = v
            .iter()
            .map(|c| {
                format!(
                    "{}={}",
                    c.metadata.name.as_deref().unwrap(),
                    c.data.as_ref().unwrap()["v"]
                )
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn a_write_hides_the_stale_cached_object_until_the_cache_catches_up() {
        let o = Overlay::default();
        o.written(cm("a", "7", "new"));
        assert_eq!(
            values(&o.view(vec![Arc::new(cm("a", "5", "old"))])),
            ["a=new"]
        );
        assert_eq!(
            values(&o.view(vec![Arc::new(cm("a", "9", "newer"))])),
            ["a=newer"]
        );
        // The entry is gone: an older cache view is shown as it is.
        assert_eq!(
            values(&o.view(vec![Arc::new(cm("a", "5", "old"))])),
            ["a=old"]
        );
    }

    #[test]
    fn a_written_object_is_kept_without_its_managed_fields_as_the_cache_keeps_it() {
        let o = Overlay::default();
        let mut written = cm("a", "7", "new");
        written.metadata.managed_fields = Some(vec![Default::default()]);
        assert_eq!(o.written(written).metadata.managed_fields, None);
        let view = o.view(vec![]);
        assert_eq!(values(&view), ["a=new"]);
        assert_eq!(view[0].metadata.managed_fields, None);
    }

    #[test]
    fn created_objects_show_before_the_cache_has_them_and_deleted_ones_vanish() {
        let o = Overlay::default();
        o.written(cm("new", "3", "x"));
        o.deleted("gone", Some("2".into()));
        let view = o.view(vec![Arc::new(cm("gone", "2", "y"))]);
        assert_eq!(values(&view), ["new=x"]);
        // Once the cache dropped it, the delete entry is forgotten.
        assert_eq!(values(&o.view(vec![])), ["new=x"]);
    }

    #[test]
    fn one_name_is_seen_as_the_whole_view_shows_it() {
        let cases: [(Option<&str>, Option<&str>); 5] = [
            (Some("5"), Some("7")),
            (Some("9"), Some("7")),
            (None, Some("7")),
            (Some("5"), None),
            (None, None),
        ];
        for (cached, written) in cases {
            let (by_view, by_name) = (Overlay::default(), Overlay::default());
            for o in [&by_view, &by_name] {
                match written {
                    Some(rv) => {
                        o.written(cm("a", rv, "written"));
                    }
                    None => o.deleted("a", Some("5".into())),
                }
            }
            let cached = cached.map(|rv| Arc::new(cm("a", rv, "cached")));
            let view = by_view.view(cached.clone().into_iter().collect());
            let one: Vec<Arc<ConfigMap>> = by_name.get("a", cached.clone()).into_iter().collect();
            assert_eq!(values(&view), values(&one), "{cached:?} {written:?}");
            assert!(by_name.expire().is_empty());
        }
    }
}
