//! The netlink shell: a connection (in this or a named network namespace), observe, execute,
//! apply.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::StreamExt;
use rtnetlink::Handle;
use rtnetlink::packet_core::{NetlinkMessage, NetlinkPayload};
use tokio::sync::oneshot;

use crate::diff::diff;
use crate::dump::DumpSocket;
use crate::error::{Error, Result};
use crate::exec::{Outcome, groups, outcome};
use crate::model::{Desired, Managed, Observed};
use crate::msg::{Request, request};
use crate::observe::{ifindex, observed};
use crate::op::Op;

/// Requests in flight at once within a group of independent operations.
const CONCURRENCY: usize = 64;

/// What an apply did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The operations executed, in order.
    pub ops: Vec<Op>,
    /// Netlink write requests sent (one per op); zero when the config was already in place.
    pub writes: usize,
    /// Writes the kernel answered with "already exists" / "already gone", which count as done.
    pub already_done: usize,
}

/// A netlink connection to one network namespace's kernel state.
#[derive(Debug)]
pub struct Dataplane {
    handle: Handle,
    /// The link name prefixes this connection owns; every other link is foreign.
    managed: Arc<Managed>,
    dumps: Arc<DumpSocket>,
    /// Dropping it stops the connection task (or thread, for a namespace connection).
    _stop: Option<oneshot::Sender<()>>,
}

impl Dataplane {
    /// Connects in the caller's own network namespace (the agent's case: it already runs in
    /// the node's namespace). Only links carrying a `managed` prefix are observed or touched.
    ///
    /// The connection is served by a thread of its own: the kernel handles a netlink write
    /// inside the `sendmsg` call that sends it, and while the kernel holds its netlink lock
    /// (removing a namespace with thousands of links can take minutes) that call blocks. On
    /// its own thread it blocks only the connection, never a thread of the caller's runtime
    /// (which keeps its timers, its deadlines and its health endpoint running).
    pub fn connect(managed: Managed) -> Result<Self> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("netrollout-netlink".into())
            .spawn(move || serve(None, ready_tx, stop_rx))
            .map_err(Error::Connection)?;
        let (handle, dumps) = ready_rx
            .recv()
            .map_err(|_| Error::Connection(std::io::Error::other("netlink thread ended")))?
            .map_err(Error::Connection)?;
        Ok(Self {
            handle,
            managed: Arc::new(managed),
            dumps: Arc::new(dumps),
            _stop: Some(stop_tx),
        })
    }

    /// Connects to the namespace `ip netns` calls `name` (`/run/netns/NAME`).
    pub fn in_netns(name: &str, managed: Managed) -> Result<Self> {
        Self::in_netns_path(Path::new("/run/netns").join(name), managed)
    }

    /// Connects to the network namespace at `path` (e.g. `/proc/PID/ns/net`). A dedicated
    /// thread enters the namespace, opens the netlink socket there and serves the connection;
    /// the rest of the process stays where it is.
    pub fn in_netns_path(path: impl AsRef<Path>, managed: Managed) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let shown = path.display().to_string();
        std::thread::Builder::new()
            .name("netrollout-netlink".into())
            .spawn(move || serve(Some(&path), ready_tx, stop_rx))
            .map_err(Error::Connection)?;
        let (handle, dumps) = ready_rx
            .recv()
            .map_err(|_| Error::Namespace {
                path: shown.clone(),
                source: std::io::Error::other("netlink thread ended"),
            })?
            .map_err(|source| Error::Namespace {
                path: shown,
                source,
            })?;
        Ok(Self {
            handle,
            managed: Arc::new(managed),
            dumps: Arc::new(dumps),
            _stop: Some(stop_tx),
        })
    }

    /// The link name prefixes this connection owns.
    pub fn managed(&self) -> &Managed {
        &self.managed
    }

    /// Reads links, addresses, routes and rules (`ip -d link; ip addr; ip route show table
    /// all; ip rule`) and keeps the managed ones.
    pub async fn observe(&self) -> Result<Observed> {
        let dumps = self.dumps.clone();
        let managed = self.managed.clone();
        let raw = tokio::task::spawn_blocking(move || dumps.all(&managed))
            .await
            .map_err(|e| Error::Connection(std::io::Error::other(e)))?
            .map_err(|(what, source)| Error::Dump { what, source })?;
        Ok(observed(
            &raw.links,
            &raw.addresses,
            &raw.routes,
            &raw.rules,
            &raw.segmentation,
            &self.managed,
        ))
    }

    /// Validates `desired`, observes, diffs and executes: the whole reconcile.
    pub async fn apply(&self, desired: &Desired) -> Result<Report> {
        let t = std::time::Instant::now();
        desired.validate(&self.managed)?;
        let validated = t.elapsed();
        let observed = self.observe().await?;
        let observed_at = t.elapsed();
        let ops = diff(desired, &observed);
        let diffed = t.elapsed();
        let report = self.execute(&ops, &observed).await;
        tracing::debug!(?validated, ?observed_at, ?diffed, total = ?t.elapsed(), "apply done");
        report
    }

    /// Executes operations in order. Independent operations run concurrently; a group never
    /// starts before the links it needs are in place. Stops at the first failure, which names
    /// the operation, the object and the kernel's error.
    pub async fn execute(&self, ops: &[Op], observed: &Observed) -> Result<Report> {
        let mut index = observed.ifindex.clone();
        let mut report = Report::default();
        for range in groups(ops) {
            let group = &ops[range];
            let started = std::time::Instant::now();
            let mut requests = Vec::with_capacity(group.len());
            for op in group {
                let req =
                    request(op, &|n| index.get(n).copied()).map_err(|link| Error::MissingLink {
                        op: op.verb(),
                        object: op.object(),
                        link,
                    })?;
                requests.push((op, req));
            }
            // The futures are made before they are streamed: a stream that maps with a
            // closure over borrowed ops is not provably `Send` for every lifetime, and the
            // agent runs an apply as a task of its own.
            let sends: Vec<_> = requests
                .into_iter()
                .map(|(op, req)| {
                    let handle = self.handle.clone();
                    let dumps = self.dumps.clone();
                    async move {
                        tracing::debug!(%op, "netlink write");
                        let errno = match req {
                            Request::Route(msg, flags) => send(handle, msg, flags).await?,
                            Request::Segmentation { ifindex, on } => {
                                set_segmentation(op, dumps, ifindex, on).await?
                            }
                        };
                        outcome(op, errno)
                    }
                })
                .collect();
            let results: Vec<Result<Outcome>> = futures::stream::iter(sends)
                .buffer_unordered(CONCURRENCY)
                .collect()
                .await;
            report.writes += results.len();
            for r in results {
                if r? == Outcome::AlreadyDone {
                    report.already_done += 1;
                }
            }
            report.ops.extend(group.iter().cloned());
            let sent = started.elapsed();
            self.refresh_index(group, &mut index).await?;
            tracing::debug!(ops = group.len(), ?sent, total = ?started.elapsed(), "group done");
        }
        Ok(report)
    }

    /// Learns the indexes of links a group created (one link dump) and forgets deleted ones.
    async fn refresh_index(&self, group: &[Op], index: &mut BTreeMap<String, u32>) -> Result<()> {
        for op in group {
            if let Op::DeleteLink(name) = op {
                index.remove(name);
            }
        }
        if group.iter().any(|op| matches!(op, Op::CreateLink(_))) {
            let dumps = self.dumps.clone();
            let links = tokio::task::spawn_blocking(move || dumps.links())
                .await
                .map_err(|e| Error::Connection(std::io::Error::other(e)))?
                .map_err(|source| Error::Dump {
                    what: "created links",
                    source,
                })?;
            *index = ifindex(&links);
        }
        Ok(())
    }
}

/// Sends one write request and waits for the acknowledgement; returns the kernel's errno (0
/// for success).
async fn send(
    mut handle: Handle,
    msg: netlink_packet_route::RouteNetlinkMessage,
    flags: u16,
) -> Result<i32> {
    let mut nl = NetlinkMessage::from(msg);
    nl.header.flags = flags;
    let mut responses = handle
        .request(nl)
        .map_err(|e| Error::Connection(std::io::Error::other(e.to_string())))?;
    let mut errno = 0;
    while let Some(m) = responses.next().await {
        if let NetlinkPayload::Error(e) = m.payload {
            errno = -e.raw_code();
        }
    }
    Ok(errno)
}

/// Switches a link's segmentation offload on the ethtool netlink socket; returns the kernel's
/// errno.
async fn set_segmentation(op: &Op, dumps: Arc<DumpSocket>, ifindex: u32, on: bool) -> Result<i32> {
    let unsupported = || Error::Kernel {
        op: op.verb(),
        object: op.object(),
        source: std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "this kernel has no ethtool netlink interface (Linux 5.6 or later with CONFIG_ETHTOOL_NETLINK)",
        ),
    };
    tokio::task::spawn_blocking(move || dumps.ethtool.as_ref().map(|e| e.set(ifindex, on)))
        .await
        .map_err(|e| Error::Connection(std::io::Error::other(e)))?
        .ok_or_else(unsupported)?
        .map_err(Error::Connection)
}

/// Serves a netlink connection on the calling thread (entering the namespace at `netns`
/// first, when given) until `stop`.
fn serve(
    netns: Option<&PathBuf>,
    ready: std::sync::mpsc::Sender<std::io::Result<(Handle, DumpSocket)>>,
    stop: oneshot::Receiver<()>,
) {
    let setup = || -> std::io::Result<_> {
        if let Some(path) = netns {
            let ns = File::open(path)?;
            nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET)
                .map_err(std::io::Error::from)?;
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (conn, handle, _) = rt.block_on(async { rtnetlink::new_connection() })?;
        Ok((rt, conn, handle, DumpSocket::open()?))
    };
    match setup() {
        Err(e) => {
            let _ = ready.send(Err(e));
        }
        Ok((rt, conn, handle, dumps)) => {
            if ready.send(Ok((handle, dumps))).is_ok() {
                rt.block_on(async {
                    tokio::select! {
                        _ = conn => {}
                        _ = stop => {}
                    }
                });
            }
        }
    }
}

mod scratch;
