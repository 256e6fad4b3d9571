//! Watches: the streaming response that replays retained events, follows live ones (through
//! the registry in `watchers`) and sends bookmarks.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use serde_json::json;
use tokio::sync::mpsc;

use crate::error::ApiError;
use crate::http::table;
use crate::resources::{Builtin, ResourceType};
use crate::storage::State;
use crate::storage::convert;
use crate::storage::event::{Event, EventType, encode_event, raw_parts};
use crate::storage::stored::Stored;
pub use crate::storage::watchers::Filter;
use crate::storage::watchers::{Budget, Item};

/// Parameters of one watch request.
#[derive(Debug, Clone)]
pub struct WatchParams {
    /// The type watched (as requested: version and columns).
    pub rt: Arc<ResourceType>,
    /// Selection.
    pub filter: Filter,
    /// Start after this resourceVersion; `None` or 0 starts with the current state.
    pub rv: Option<u64>,
    /// Send synthetic ADDED events for the current state, then an initial-events-end bookmark.
    pub send_initial: bool,
    /// `allowWatchBookmarks`.
    pub bookmarks: bool,
    /// `timeoutSeconds`.
    pub timeout: Duration,
    /// Render objects as `meta.k8s.io/v1` Tables (`kubectl get -w`).
    pub table: bool,
    /// Per-watcher buffer before a slow watcher is dropped.
    pub buffer: usize,
    /// Bookmark period.
    pub bookmark_every: Duration,
}

/// Starts a watch: registers it under the lock (so no event is missed) and returns the
/// streaming response.
pub fn start(state: Arc<Mutex<State>>, p: WatchParams) -> Result<Response, ApiError> {
    let (tx, rx) = mpsc::channel(p.buffer.max(16));
    let filter = Arc::new(p.filter.clone());
    let (initial, start_rv, budget) = {
        let mut st = state
            .lock()
            .map_err(|_| ApiError::new(500, "InternalError", "state lock poisoned"))?;
        let mut initial: Vec<(EventType, Stored)> = vec![];
        match p.rv.filter(|rv| *rv > 0 && !p.send_initial) {
            Some(rv) => match st.events_since(rv) {
                Some(evs) => {
                    for ev in evs.filter(|e| e.key == p.rt.key()) {
                        let prev = ev.prev.as_ref().map(Stored::value);
                        let view = filter.view(ev.kind, &ev.object.value(), prev.as_deref());
                        if let Some(kind) = view {
                            initial.push((kind, ev.object.clone()));
                        }
                    }
                }
                None => {
                    let err = ApiError::gone(rv, st.compacted + 1);
                    let line = encode_event("ERROR", &err.status());
                    return Ok(stream_response(Body::from(line)));
                }
            },
            None => {
                let ns = p.filter.ns.as_deref();
                let all = filter.namespace_only();
                for (_, o) in st.list(&p.rt.key(), ns) {
                    if all || filter.matches(&o.value()) {
                        initial.push((EventType::Added, o.clone()));
                    }
                }
            }
        }
        let budget = st.watchers.add(p.rt.key(), filter, tx);
        (initial, st.rv, budget)
    };
    let (out_tx, out_rx) = mpsc::channel::<Bytes>(OUT_CHUNKS);
    let outlet = Outlet {
        rx: out_rx,
        budget: budget.clone(),
    };
    tokio::spawn(async move {
        let mut rx = rx;
        let out = Out {
            tx: out_tx,
            budget: budget.clone(),
        };
        pump(state, p, initial, start_rv, &mut rx, out).await;
        // What was queued for the watcher is let go with the pump.
        rx.close();
        while let Ok(item) = rx.try_recv() {
            budget.sub(item.event.size());
        }
    });
    let body = Body::from_stream(futures::stream::unfold(outlet, |mut o| async move {
        // A dropped watcher's stream ends at once: the chunks still queued are let go, and
        // the client resumes from the last event it read.
        if o.budget.is_dropped() {
            return None;
        }
        let chunk = o.rx.recv().await?;
        o.budget.sub(chunk.len());
        Some((Ok::<_, std::convert::Infallible>(chunk), o))
    }));
    Ok(stream_response(body))
}

/// Chunks queued between a watcher's pump and its connection.
const OUT_CHUNKS: usize = 16;

/// The response side of a watch: the chunks the pump queued, accounted to its budget until
/// the connection takes them (or the stream is dropped).
struct Outlet {
    rx: mpsc::Receiver<Bytes>,
    budget: Arc<Budget>,
}

impl Drop for Outlet {
    fn drop(&mut self) {
        self.rx.close();
        while let Ok(chunk) = self.rx.try_recv() {
            self.budget.sub(chunk.len());
        }
    }
}

/// The pump's side of the response: a send counts the chunk to the budget and gives up when
/// the watch is dropped or the connection is gone.
struct Out {
    tx: mpsc::Sender<Bytes>,
    budget: Arc<Budget>,
}

impl Out {
    async fn send(&self, chunk: Bytes) -> bool {
        let n = chunk.len();
        self.budget.add(n);
        let sent = tokio::select! {
            biased;
            () = self.budget.dropped() => false,
            r = self.tx.send(chunk) => r.is_ok(),
        };
        if !sent {
            self.budget.sub(n);
        }
        sent
    }

    async fn send_all(&self, chunks: Vec<Bytes>) -> bool {
        for c in chunks {
            if !self.send(c).await {
                return false;
            }
        }
        true
    }
}

fn stream_response(body: Body) -> Response {
    let mut r = Response::new(body);
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

/// One watch line: whole, or as the three parts of [`raw_parts`] that share the object's bytes.
enum Line {
    Whole(Bytes),
    Parts([Bytes; 3]),
}

impl Line {
    fn len(&self) -> usize {
        match self {
            Self::Whole(b) => b.len(),
            Self::Parts(p) => p.iter().map(Bytes::len).sum(),
        }
    }

    fn chunks(self) -> Vec<Bytes> {
        match self {
            Self::Whole(b) => vec![b],
            Self::Parts(p) => p.into(),
        }
    }

    fn append_to(&self, batch: &mut BytesMut) {
        match self {
            Self::Whole(b) => batch.extend_from_slice(b),
            Self::Parts(p) => p.iter().for_each(|b| batch.extend_from_slice(b)),
        }
    }
}

struct Encoder {
    rt: Arc<ResourceType>,
    /// `rt`'s apiVersion, formatted once per watch rather than per event.
    api_version: String,
    table: bool,
    first: bool,
}

impl Encoder {
    /// The watch line for `obj` seen as `kind`: the event's own line when the client sees the
    /// object as stored, else re-encoded (another event type, apiVersion, or a Table).
    fn line(&mut self, kind: EventType, ev: Option<&Event>, obj: &Stored) -> Line {
        if self.table {
            let tree = obj.value();
            let t = table::table(
                &self.rt,
                &[&*convert::view(&self.rt, &tree)],
                self.first,
                false,
            );
            self.first = false;
            return Line::Whole(encode_event(kind.as_str(), &t));
        }
        if self.rt.builtin == Some(Builtin::Event) || !obj.has_api_version(&self.api_version) {
            let tree = obj.value();
            return Line::Whole(encode_event(kind.as_str(), &convert::view(&self.rt, &tree)));
        }
        match ev {
            Some(ev) if ev.kind == kind => Line::Whole(ev.line()),
            _ => Line::Parts(raw_parts(kind, obj.raw())),
        }
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        encode_event(
            "BOOKMARK",
            &json!({"kind": self.rt.kind, "apiVersion": self.rt.api_version(), "metadata": meta}),
        )
    }
}

/// Most bytes of queued events [`coalesce`] puts in one chunk.
const BATCH_BYTES: usize = 64 * 1024;

/// The line of `first` and the events already queued behind it (up to [`BATCH_BYTES`]), in
/// order, as few chunks: a burst of small changes (a wave's dispatches, its agents' reports)
/// costs the server one write and the watcher one read instead of one of each per event.
/// Small lines are copied into one batch; a big line is sent as it is (shared with the store,
/// never copied). An event never waits for others to come.
fn coalesce(
    first: Item,
    rx: &mut mpsc::Receiver<Item>,
    enc: &mut Encoder,
    budget: &Budget,
) -> Vec<Bytes> {
    let mut chunks = vec![];
    let mut batch = BytesMut::new();
    let mut total = 0;
    let mut next = Some(first);
    while let Some(item) = next.take() {
        let line = enc.line(item.kind, Some(&item.event), &item.event.object);
        total += line.len();
        if total < BATCH_BYTES
            && let Ok(item) = rx.try_recv()
        {
            budget.sub(item.event.size());
            next = Some(item);
        }
        // A lone event's line is sent as the event holds it, not copied into a batch.
        let lone = batch.is_empty() && next.is_none() && matches!(line, Line::Whole(_));
        if line.len() >= BATCH_BYTES || lone {
            if !batch.is_empty() {
                chunks.push(std::mem::take(&mut batch).freeze());
            }
            chunks.extend(line.chunks());
        } else {
            line.append_to(&mut batch);
        }
    }
    if !batch.is_empty() {
        chunks.push(batch.freeze());
    }
    chunks
}

async fn pump(
    state: Arc<Mutex<State>>,
    p: WatchParams,
    initial: Vec<(EventType, Stored)>,
    start_rv: u64,
    rx: &mut mpsc::Receiver<Item>,
    out: Out,
) {
    let mut enc = Encoder {
        rt: p.rt.clone(),
        api_version: p.rt.api_version(),
        table: p.table,
        first: true,
    };
    for (kind, obj) in &initial {
        if !out.send_all(enc.line(*kind, None, obj).chunks()).await {
            return;
        }
    }
    drop(initial);
    if p.send_initial && p.bookmarks && !out.send(enc.bookmark(start_rv, true)).await {
        return;
    }
    let deadline = tokio::time::sleep(p.timeout);
    tokio::pin!(deadline);
    let mut tick = tokio::time::interval(p.bookmark_every);
    tick.tick().await;
    loop {
        let chunks = tokio::select! {
            biased;
            _ = &mut deadline => return,
            () = out.budget.dropped() => return,
            _ = out.tx.closed() => return,
            item = rx.recv() => match item {
                Some(item) => {
                    out.budget.sub(item.event.size());
                    coalesce(item, rx, &mut enc, &out.budget)
                }
                None => return,
            },
            _ = tick.tick(), if p.bookmarks && !p.table => {
                let rv = match state.lock() {
                    Ok(st) if rx.is_empty() => st.rv,
                    _ => continue,
                };
                vec![enc.bookmark(rv, false)]
            }
        };
        if !out.send_all(chunks).await {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::watchers::Watchers;

    fn setup() -> (
        Encoder,
        Arc<Budget>,
        mpsc::Sender<Item>,
        mpsc::Receiver<Item>,
    ) {
        let st = State::new(10, usize::MAX);
        let rt = st.registry.get("", "v1", "configmaps").unwrap();
        let (tx, rx) = mpsc::channel(16);
        let budget = Watchers::default().add(rt.key(), Arc::default(), tx.clone());
        let enc = Encoder {
            api_version: rt.api_version(),
            rt,
            table: false,
            first: true,
        };
        (enc, budget, tx, rx)
    }

    fn item(rv: u64) -> Item {
        let obj = Arc::new(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{rv}"), "resourceVersion": rv.to_string()}}));
        let event = Arc::new(Event::new(
            rv,
            Arc::from("/configmaps"),
            EventType::Modified,
            &obj,
            None,
        ));
        Item {
            event,
            kind: EventType::Modified,
        }
    }

    #[test]
    fn a_lone_event_is_sent_as_its_shared_line_and_a_burst_as_one_chunk_in_order() {
        let (mut enc, budget, tx, mut rx) = setup();
        let lone = item(1);
        let chunks = coalesce(lone.clone(), &mut rx, &mut enc, &budget);
        assert_eq!(chunks.len(), 1);
        assert_eq!(
            chunks[0].as_ptr(),
            lone.event.line().as_ptr(),
            "shared, not copied"
        );

        let burst: Vec<Item> = (2..=4).map(item).collect();
        for i in &burst[1..] {
            budget.add(i.event.size());
            tx.try_send(i.clone()).unwrap();
        }
        let chunks = coalesce(burst[0].clone(), &mut rx, &mut enc, &budget);
        let want: Vec<u8> = burst.iter().flat_map(|i| i.event.line().to_vec()).collect();
        assert_eq!(
            chunks,
            vec![Bytes::from(want)],
            "one chunk, in resourceVersion order"
        );
        assert!(rx.try_recv().is_err(), "every queued event was taken");
    }
}
