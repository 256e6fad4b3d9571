//! One change of the store as retained in the event window and sent to watchers: its type, the
//! object before and after, and its encoded watch line. The line is encoded once, at the
//! change; the stored object is a slice of it, so the store, the window and every watcher
//! share one allocation per object version.

use bytes::Bytes;
#[cfg(test)]
use bytes::{BufMut, BytesMut};
use serde_json::{Value, json};

use crate::resources::TypeKey;
use crate::storage::stored::Stored;

/// The type of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Object created (or entered a watcher's selection).
    Added,
    /// Object changed.
    Modified,
    /// Object removed (or left a watcher's selection).
    Deleted,
}

impl EventType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One change, as retained in the window and sent to watchers.
#[derive(Debug)]
pub struct Event {
    /// resourceVersion of the change.
    pub rv: u64,
    /// Storage key of the object's type.
    pub key: TypeKey,
    /// What happened.
    pub kind: EventType,
    /// The object after the change (before it, for deletions).
    pub object: Stored,
    /// The object before the change, for modifications.
    pub prev: Option<Stored>,
    line: Bytes,
}

impl Event {
    /// Encodes the change of `object` (its JSON tree, dropped by the caller afterwards).
    pub fn new(
        rv: u64,
        key: TypeKey,
        kind: EventType,
        object: &std::sync::Arc<Value>,
        prev: Option<Stored>,
    ) -> Self {
        let keep = crate::storage::stored::keeps_tree(&key);
        // The object is encoded straight into its line: no copy of its bytes, no second buffer.
        let head = prefix(kind.as_str());
        let mut buf = Vec::with_capacity(head.len() + 1024);
        buf.extend_from_slice(head.as_bytes());
        if serde_json::to_writer(&mut buf, &**object).is_err() {
            // A JSON value always encodes; were it not to, the object would be empty, as before.
            buf.truncate(head.len());
        }
        let end = buf.len();
        buf.extend_from_slice(b"}\n");
        let line = Bytes::from(buf);
        let stored = Stored::new(line.slice(head.len()..end), object, keep);
        Self {
            rv,
            key,
            kind,
            object: stored,
            prev,
            line,
        }
    }

    /// The newline-terminated JSON watch event, shared by all watchers.
    pub fn line(&self) -> Bytes {
        self.line.clone()
    }

    /// Bytes of the watch line (what a watcher holding this event keeps alive).
    pub fn size(&self) -> usize {
        self.line.len()
    }
}

fn prefix(kind: &str) -> String {
    format!("{{\"type\":\"{kind}\",\"object\":")
}

/// The watch line of `raw` seen as `kind`, in three parts that copy nothing: a static head,
/// the object's own (shared) bytes and a static tail.
pub fn raw_parts(kind: EventType, raw: &Bytes) -> [Bytes; 3] {
    let head: &'static [u8] = match kind {
        EventType::Added => b"{\"type\":\"ADDED\",\"object\":",
        EventType::Modified => b"{\"type\":\"MODIFIED\",\"object\":",
        EventType::Deleted => b"{\"type\":\"DELETED\",\"object\":",
    };
    [
        Bytes::from_static(head),
        raw.clone(),
        Bytes::from_static(b"}\n"),
    ]
}

/// Encodes one `{"type":..,"object":..}` line around an object's JSON bytes (what
/// [`Event::new`] builds in place and [`raw_parts`] sends in three parts).
#[cfg(test)]
pub fn encode_raw(kind: &str, raw: &[u8]) -> Bytes {
    let prefix = prefix(kind);
    let mut b = BytesMut::with_capacity(prefix.len() + raw.len() + 2);
    b.put_slice(prefix.as_bytes());
    b.put_slice(raw);
    b.put_slice(b"}\n");
    b.freeze()
}

/// Encodes one `{"type":..,"object":..}` line.
pub fn encode_event(kind: &str, object: &Value) -> Bytes {
    let mut v = serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap_or_default();
    v.push(b'\n');
    Bytes::from(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_stored_object_is_the_object_inside_the_watch_line() {
        let obj = Arc::new(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}}));
        let ev = Event::new(7, Arc::from("/configmaps"), EventType::Added, &obj, None);
        let line: Value = serde_json::from_slice(&ev.line()).unwrap();
        assert_eq!(line, json!({"type": "ADDED", "object": *obj}));
        assert_eq!(*ev.object.value(), *obj);
        assert!(ev.line().ends_with(b"\n"));
        let other: Value = serde_json::from_slice(&encode_raw("DELETED", ev.object.raw())).unwrap();
        assert_eq!(other["type"], "DELETED");
        for kind in [EventType::Added, EventType::Modified, EventType::Deleted] {
            let parts = raw_parts(kind, ev.object.raw());
            assert_eq!(
                parts[1].as_ptr(),
                ev.object.raw().as_ptr(),
                "shared, not copied"
            );
            assert_eq!(parts.concat(), encode_raw(kind.as_str(), ev.object.raw()));
        }
    }
}
