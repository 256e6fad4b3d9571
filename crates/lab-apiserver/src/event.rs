//! One change of the store as retained in the event window and sent to watchers: its type, the
//! object before and after, and its encoded watch line (shared by every watcher).

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde_json::{Value, json};

use crate::resources::TypeKey;

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
    pub object: Arc<Value>,
    /// The object before the change, for modifications.
    pub prev: Option<Arc<Value>>,
    pub(crate) encoded: OnceLock<Bytes>,
}

impl Event {
    /// The newline-terminated JSON watch event, encoded once and shared by all watchers.
    pub fn line(&self) -> Bytes {
        self.encoded
            .get_or_init(|| encode_event(self.kind.as_str(), &self.object))
            .clone()
    }
}

/// Encodes one `{"type":..,"object":..}` line.
pub fn encode_event(kind: &str, object: &Value) -> Bytes {
    let mut v = serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap_or_default();
    v.push(b'\n');
    Bytes::from(v)
}
