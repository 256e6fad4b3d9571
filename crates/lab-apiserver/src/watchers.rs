//! The registry of watchers, indexed by type and, for `metadata.name` field selectors, by
//! name, so a write wakes only the watchers it concerns; and the selection a watcher (or list)
//! makes.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;

use crate::event::{Event, EventType};
use crate::resources::TypeKey;
use crate::selector::{FieldSelector, LabelSelector};

/// What a watcher (or list) selects.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Namespace, or all.
    pub ns: Option<String>,
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
}

impl Filter {
    /// Whether an object is selected.
    pub fn matches(&self, obj: &Value) -> bool {
        self.ns
            .as_deref()
            .is_none_or(|ns| obj["metadata"]["namespace"].as_str().unwrap_or_default() == ns)
            && self.labels.matches(obj)
            && self.fields.matches(obj)
    }

    /// Whether the selection is only by namespace (no object needs decoding to apply it).
    pub fn namespace_only(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    /// The event this watcher sees for a change of `object` (`prev` before a modification),
    /// if any: an object moving into or out of the selection is seen as added or deleted.
    pub fn view(&self, kind: EventType, object: &Value, prev: Option<&Value>) -> Option<EventType> {
        let now = self.matches(object);
        match (kind, prev) {
            (EventType::Modified, Some(prev)) => match (self.matches(prev), now) {
                (true, true) => Some(EventType::Modified),
                (false, true) => Some(EventType::Added),
                (true, false) => Some(EventType::Deleted),
                (false, false) => None,
            },
            (k, _) => now.then_some(k),
        }
    }
}

/// One event as delivered to one watcher.
#[derive(Debug, Clone)]
pub struct Item {
    /// The change.
    pub event: Arc<Event>,
    /// How this watcher sees it.
    pub kind: EventType,
}

#[derive(Debug)]
struct Entry {
    filter: Arc<Filter>,
    tx: mpsc::Sender<Item>,
}

#[derive(Debug, Default)]
struct TypeWatchers {
    named: HashMap<String, Vec<Entry>>,
    rest: Vec<Entry>,
}

/// All registered watchers.
#[derive(Debug, Default)]
pub struct Watchers {
    by_type: HashMap<TypeKey, TypeWatchers>,
}

impl Watchers {
    /// Registers a watcher.
    pub fn add(&mut self, key: TypeKey, filter: Arc<Filter>, tx: mpsc::Sender<Item>) {
        let tw = self.by_type.entry(key).or_default();
        let list = match filter.fields.name() {
            Some(n) => tw.named.entry(n.to_string()).or_default(),
            None => &mut tw.rest,
        };
        list.retain(|e| !e.tx.is_closed());
        list.push(Entry { filter, tx });
    }

    /// Sends an event to every watcher that selects it; `object` and `prev` are the decoded
    /// versions the event carries. A watcher whose buffer is full is dropped (its stream ends
    /// and the client resumes from its last resourceVersion).
    pub fn dispatch(&mut self, ev: &Arc<Event>, object: &Value, prev: Option<&Value>) {
        let Some(tw) = self.by_type.get_mut(&ev.key) else {
            return;
        };
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let send = |list: &mut Vec<Entry>| {
            list.retain(|e| match e.filter.view(ev.kind, object, prev) {
                Some(kind) => {
                    e.tx.try_send(Item {
                        event: ev.clone(),
                        kind,
                    })
                    .is_ok()
                }
                None => !e.tx.is_closed(),
            })
        };
        if let Some(list) = tw.named.get_mut(name) {
            send(list);
            if list.is_empty() {
                tw.named.remove(name);
            }
        }
        send(&mut tw.rest);
    }

    /// Ends the watch streams of one type.
    pub fn drop_type(&mut self, key: &str) {
        self.by_type.remove(key);
    }

    /// Ends every watch stream.
    pub fn drop_all(&mut self) {
        self.by_type.clear();
    }

    /// Number of registered watchers.
    pub fn count(&self) -> usize {
        self.by_type
            .values()
            .map(|t| t.rest.len() + t.named.values().map(Vec::len).sum::<usize>())
            .sum()
    }
}
