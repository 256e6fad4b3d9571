//! How the store holds an object: its JSON serialization, once, as a slice of the watch line
//! that announced it, shared by the store, the event window and every watcher. Verbs decode it
//! when they need the tree (patch, selectors, CEL, tables); reads and watches that need only
//! the bytes never decode it. The few kinds the server itself reads on every request (RBAC
//! roles and bindings, admission policies, CRDs, namespaces) also keep their decoded tree.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

/// Types whose decoded tree is kept next to the bytes: the server reads them on every request.
const KEEP_TREE: &[&str] = &[
    "rbac.authorization.k8s.io/clusterroles",
    "rbac.authorization.k8s.io/clusterrolebindings",
    "rbac.authorization.k8s.io/roles",
    "rbac.authorization.k8s.io/rolebindings",
    "admissionregistration.k8s.io/validatingadmissionpolicies",
    "admissionregistration.k8s.io/validatingadmissionpolicybindings",
    "apiextensions.k8s.io/customresourcedefinitions",
    "/namespaces",
];

/// Whether objects of the type with storage key `key` keep their decoded tree.
pub fn keeps_tree(key: &str) -> bool {
    KEEP_TREE.contains(&key)
}

/// One stored version of an object.
#[derive(Debug, Clone)]
pub struct Stored {
    raw: Bytes,
    tree: Option<Arc<Value>>,
}

impl Stored {
    /// Wraps the JSON bytes of `tree` (`raw` must be its serialization); the tree is kept only
    /// when `keep` says so.
    pub fn new(raw: Bytes, tree: &Arc<Value>, keep: bool) -> Self {
        Self {
            raw,
            tree: keep.then(|| tree.clone()),
        }
    }

    /// Serializes `tree` (for objects loaded rather than written through a watch event).
    pub fn encode(tree: Arc<Value>, keep: bool) -> Self {
        let raw = Bytes::from(serde_json::to_vec(&*tree).unwrap_or_default());
        Self::new(raw, &tree, keep)
    }

    /// The object's JSON.
    pub fn raw(&self) -> &Bytes {
        &self.raw
    }

    /// The object as a JSON tree, decoded now unless it was kept.
    pub fn value(&self) -> Arc<Value> {
        match &self.tree {
            Some(t) => t.clone(),
            // The bytes are this server's own serialization of a JSON value: they always parse.
            None => Arc::new(serde_json::from_slice(&self.raw).unwrap_or_default()),
        }
    }

    /// Whether the object's `apiVersion` is `av`, read from the bytes when they start with it
    /// (serde_json writes keys in order, so `apiVersion` comes first); decoded otherwise.
    /// Nothing is allocated unless `av` is a string JSON escapes: a watch asks this for every
    /// event it sends.
    pub fn has_api_version(&self, av: &str) -> bool {
        let Some(rest) = self.raw.strip_prefix(b"{\"apiVersion\":".as_slice()) else {
            return self.value()["apiVersion"] == *av;
        };
        let ends_value = |at: usize| matches!(rest.get(at), Some(b',' | b'}'));
        if av.bytes().any(|b| matches!(b, b'"' | b'\\') || b < 0x20) {
            let quoted = Value::from(av).to_string();
            return rest.starts_with(quoted.as_bytes()) && ends_value(quoted.len());
        }
        let n = av.len();
        rest.first() == Some(&b'"')
            && rest.get(1..=n) == Some(av.as_bytes())
            && rest.get(n + 1) == Some(&b'"')
            && ends_value(n + 2)
    }

    /// Whether the bytes contain `needle` (a cheap pre-check before decoding).
    pub fn contains(&self, needle: &str) -> bool {
        memchr::memmem::find(&self.raw, needle.as_bytes()).is_some()
    }

    /// Bytes held by this version (for sizing the event window).
    pub fn size(&self) -> usize {
        self.raw.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stored(v: Value, keep: bool) -> Stored {
        let raw = Bytes::from(serde_json::to_vec(&v).unwrap());
        Stored::new(raw, &Arc::new(v), keep)
    }

    #[test]
    fn decodes_what_it_holds_and_reads_the_api_version_from_the_bytes() {
        let v = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
        for keep in [false, true] {
            let s = stored(v.clone(), keep);
            assert_eq!(*s.value(), v);
            assert!(s.has_api_version("v1"));
            assert!(!s.has_api_version("v1beta1"));
            assert!(!s.has_api_version("v"));
            assert!(!s.has_api_version("v1\""));
            assert!(s.contains("\"name\":\"a\""));
        }
        let grouped = stored(
            json!({"apiVersion": "netrollout.io/v1alpha1", "kind": "K"}),
            false,
        );
        assert!(grouped.has_api_version("netrollout.io/v1alpha1"));
        assert!(!grouped.has_api_version("netrollout.io/v1"));
        assert!(!grouped.has_api_version("netrollout.io/v1alpha1x"));
        let escaped = stored(json!({"apiVersion": "a\"b", "kind": "K"}), false);
        assert!(escaped.has_api_version("a\"b"));
        assert!(!escaped.has_api_version("a"));
        let longer = stored(json!({"apiVersion": "v1x,y", "kind": "K"}), false);
        assert!(
            !longer.has_api_version("v1"),
            "the value ends where av does"
        );
        assert!(!longer.has_api_version("v2x,y"));
        let none = stored(json!({"kind": "K"}), false);
        assert!(!none.has_api_version("v1"));
    }

    #[test]
    fn only_the_kinds_the_server_reads_keep_their_tree() {
        assert!(keeps_tree("rbac.authorization.k8s.io/rolebindings"));
        assert!(keeps_tree("/namespaces"));
        assert!(!keeps_tree("/configmaps"));
    }
}
