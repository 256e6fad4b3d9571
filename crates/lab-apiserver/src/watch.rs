//! Watches: the streaming response that replays retained events, follows live ones (through
//! the registry in `watchers`) and sends bookmarks.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use serde_json::json;
use tokio::sync::mpsc;

use crate::convert;
use crate::error::ApiError;
use crate::event::{Event, EventType, encode_event, encode_raw};
use crate::resources::{Builtin, ResourceType};
use crate::store::State;
use crate::stored::Stored;
use crate::table;
pub use crate::watchers::Filter;
use crate::watchers::Item;

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
    let (initial, start_rv) = {
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
        st.watchers.add(p.rt.key(), filter, tx);
        (initial, st.rv)
    };
    let (out_tx, out_rx) = mpsc::channel::<Bytes>(64);
    tokio::spawn(pump(state, p, initial, start_rv, rx, out_tx));
    let body = Body::from_stream(futures::stream::unfold(out_rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::convert::Infallible>(b), rx))
    }));
    Ok(stream_response(body))
}

fn stream_response(body: Body) -> Response {
    let mut r = Response::new(body);
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

struct Encoder {
    rt: Arc<ResourceType>,
    table: bool,
    first: bool,
}

impl Encoder {
    /// The watch line for `obj` seen as `kind`: the event's own line when the client sees the
    /// object as stored, else re-encoded (another event type, apiVersion, or a Table).
    fn line(&mut self, kind: EventType, ev: Option<&Event>, obj: &Stored) -> Bytes {
        if self.table {
            let tree = obj.value();
            let t = table::table(
                &self.rt,
                &[&*convert::view(&self.rt, &tree)],
                self.first,
                false,
            );
            self.first = false;
            return encode_event(kind.as_str(), &t);
        }
        if self.rt.builtin == Some(Builtin::Event) || !obj.has_api_version(&self.rt.api_version()) {
            let tree = obj.value();
            return encode_event(kind.as_str(), &convert::view(&self.rt, &tree));
        }
        match ev {
            Some(ev) if ev.kind == kind => ev.line(),
            _ => encode_raw(kind.as_str(), obj.raw()),
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

/// `first` and the events already queued behind it (up to [`BATCH_BYTES`]), in order, as one
/// chunk of the response: a burst of changes (a wave's dispatches, its agents' reports) then
/// costs the server one write and the watcher one read instead of one of each per event. An
/// event never waits for more to come.
fn coalesce(first: Bytes, rx: &mut mpsc::Receiver<Item>, enc: &mut Encoder) -> Bytes {
    let Ok(mut item) = rx.try_recv() else {
        return first;
    };
    let mut batch = BytesMut::with_capacity(first.len() * 4);
    batch.extend_from_slice(&first);
    loop {
        batch.extend_from_slice(&enc.line(item.kind, Some(&item.event), &item.event.object));
        if batch.len() >= BATCH_BYTES {
            break;
        }
        match rx.try_recv() {
            Ok(next) => item = next,
            Err(_) => break,
        }
    }
    batch.freeze()
}

async fn pump(
    state: Arc<Mutex<State>>,
    p: WatchParams,
    initial: Vec<(EventType, Stored)>,
    start_rv: u64,
    mut rx: mpsc::Receiver<Item>,
    out: mpsc::Sender<Bytes>,
) {
    let mut enc = Encoder {
        rt: p.rt.clone(),
        table: p.table,
        first: true,
    };
    for (kind, obj) in &initial {
        if out.send(enc.line(*kind, None, obj)).await.is_err() {
            return;
        }
    }
    if p.send_initial && p.bookmarks && out.send(enc.bookmark(start_rv, true)).await.is_err() {
        return;
    }
    let deadline = tokio::time::sleep(p.timeout);
    tokio::pin!(deadline);
    let mut tick = tokio::time::interval(p.bookmark_every);
    tick.tick().await;
    loop {
        let line = tokio::select! {
            biased;
            _ = &mut deadline => return,
            _ = out.closed() => return,
            item = rx.recv() => match item {
                Some(item) => {
                    let line = enc.line(item.kind, Some(&item.event), &item.event.object);
                    coalesce(line, &mut rx, &mut enc)
                }
                None => return,
            },
            _ = tick.tick(), if p.bookmarks && !p.table => {
                let rv = match state.lock() {
                    Ok(st) if rx.is_empty() => st.rv,
                    _ => continue,
                };
                enc.bookmark(rv, false)
            }
        };
        if out.send(line).await.is_err() {
            return;
        }
    }
}
