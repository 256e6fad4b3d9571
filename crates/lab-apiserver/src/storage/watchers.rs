//! The registry of watchers, indexed by type and, for `metadata.name` field selectors, by
//! name, so a write wakes only the watchers it concerns; and the selection a watcher (or list)
//! makes.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::Value;
use tokio::sync::{Notify, mpsc};

use crate::resources::TypeKey;
use crate::selector::{FieldSelector, LabelSelector};
use crate::storage::event::{Event, EventType};

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

/// Default bound of the bytes one watcher may hold (events queued for it, chunks its
/// connection has not taken yet) before its stream is ended.
pub const DEFAULT_WATCH_BYTES: usize = 16 << 20;

/// What one watcher holds: bytes of the events queued for it and of the response chunks its
/// connection has not taken yet (both are mostly shared with the store and the event window,
/// so this is what the watcher keeps alive, not what it copied). A watcher over its bound is
/// dropped: its stream ends at once, what it held is let go, and the client resumes (kube
/// clients re-watch from their last resourceVersion, and re-list after 410), as a real API
/// server ends the watch of a client that does not keep up.
#[derive(Debug)]
pub struct Budget {
    held: AtomicUsize,
    total: Arc<AtomicUsize>,
    dropped: AtomicBool,
    wake: Notify,
}

impl Budget {
    fn new(total: Arc<AtomicUsize>) -> Self {
        Self {
            held: AtomicUsize::new(0),
            total,
            dropped: AtomicBool::new(false),
            wake: Notify::new(),
        }
    }

    /// Counts `n` more bytes held.
    pub fn add(&self, n: usize) {
        self.held.fetch_add(n, Ordering::Relaxed);
        self.total.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts `n` bytes let go.
    pub fn sub(&self, n: usize) {
        self.held.fetch_sub(n, Ordering::Relaxed);
        self.total.fetch_sub(n, Ordering::Relaxed);
    }

    fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Ends the watch: its pump and response stream stop as soon as they look.
    pub fn drop_watch(&self) {
        self.dropped.store(true, Ordering::Release);
        self.wake.notify_one();
    }

    /// Whether the watch was dropped.
    pub fn is_dropped(&self) -> bool {
        self.dropped.load(Ordering::Acquire)
    }

    /// Resolves once the watch is dropped.
    pub async fn dropped(&self) {
        if !self.is_dropped() {
            self.wake.notified().await;
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
    budget: Arc<Budget>,
}

#[derive(Debug, Default)]
struct TypeWatchers {
    named: HashMap<String, Vec<Entry>>,
    rest: Vec<Entry>,
}

impl TypeWatchers {
    fn drop_each(self) {
        for e in self.named.into_values().flatten().chain(self.rest) {
            e.budget.drop_watch();
        }
    }
}

/// All registered watchers.
#[derive(Debug)]
pub struct Watchers {
    by_type: HashMap<TypeKey, TypeWatchers>,
    max_bytes: usize,
    held: Arc<AtomicUsize>,
}

impl Default for Watchers {
    fn default() -> Self {
        Self {
            by_type: HashMap::new(),
            max_bytes: DEFAULT_WATCH_BYTES,
            held: Arc::default(),
        }
    }
}

impl Watchers {
    /// Sets the bytes one watcher may hold before it is dropped.
    pub fn set_max_bytes(&mut self, max: usize) {
        self.max_bytes = max;
    }

    /// Registers a watcher; returns the budget its pump and stream account to.
    pub fn add(
        &mut self,
        key: TypeKey,
        filter: Arc<Filter>,
        tx: mpsc::Sender<Item>,
    ) -> Arc<Budget> {
        let budget = Arc::new(Budget::new(self.held.clone()));
        let tw = self.by_type.entry(key).or_default();
        let list = match filter.fields.name() {
            Some(n) => tw.named.entry(n.to_string()).or_default(),
            None => &mut tw.rest,
        };
        list.retain(|e| !e.tx.is_closed());
        list.push(Entry {
            filter,
            tx,
            budget: budget.clone(),
        });
        budget
    }

    /// Sends an event to every watcher that selects it; `object` and `prev` are the decoded
    /// versions the event carries. A watcher whose queue is full, or that would hold more
    /// than its bound of bytes, is dropped (its stream ends and the client resumes from its
    /// last resourceVersion).
    pub fn dispatch(&mut self, ev: &Arc<Event>, object: &Value, prev: Option<&Value>) {
        let Some(tw) = self.by_type.get_mut(&ev.key) else {
            return;
        };
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let (size, max) = (ev.size(), self.max_bytes);
        let send = |list: &mut Vec<Entry>| {
            list.retain(|e| match e.filter.view(ev.kind, object, prev) {
                Some(kind) => {
                    let item = Item {
                        event: ev.clone(),
                        kind,
                    };
                    let kept = e.budget.held() + size <= max && {
                        e.budget.add(size);
                        e.tx.try_send(item).is_ok() || {
                            e.budget.sub(size);
                            false
                        }
                    };
                    if !kept {
                        tracing::debug!(
                            held = e.budget.held(),
                            "a watcher that does not keep up is dropped"
                        );
                        e.budget.drop_watch();
                    }
                    kept
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
        if let Some(tw) = self.by_type.remove(key) {
            tw.drop_each();
        }
    }

    /// Ends every watch stream.
    pub fn drop_all(&mut self) {
        for (_, tw) in self.by_type.drain() {
            tw.drop_each();
        }
    }

    /// Bytes all watchers hold (see [`Budget`]).
    pub fn held_bytes(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Number of registered watchers.
    pub fn count(&self) -> usize {
        self.by_type
            .values()
            .map(|t| t.rest.len() + t.named.values().map(Vec::len).sum::<usize>())
            .sum()
    }
}
