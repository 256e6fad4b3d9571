//! The netlink shell: a connection (in this or a named network namespace), observe, execute,
//! apply.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use futures::{StreamExt, TryStreamExt};
use netlink_packet_route::AddressFamily;
use netlink_packet_route::link::LinkExtentMask;
use netlink_packet_route::route::{RouteMessage, RouteProtocol};
use rtnetlink::packet_core::{NetlinkMessage, NetlinkPayload};
use rtnetlink::{Handle, IpVersion};
use tokio::sync::oneshot;

use crate::diff::diff;
use crate::error::{Error, Result};
use crate::exec::{Outcome, groups, outcome};
use crate::model::{Desired, Observed, RTPROT_NETROLLOUT};
use crate::msg::request;
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
    /// Dropping it stops the connection thread of a namespace connection.
    _stop: Option<oneshot::Sender<()>>,
}

impl Dataplane {
    /// Connects in the caller's own network namespace (the agent's case: it already runs in
    /// the node's namespace). Must be called inside a tokio runtime.
    pub fn connect() -> Result<Self> {
        let (conn, handle, _) =
            rtnetlink::new_connection_with_strict_check().map_err(Error::Connection)?;
        tokio::spawn(conn);
        Ok(Self {
            handle,
            _stop: None,
        })
    }

    /// Connects to the namespace `ip netns` calls `name` (`/run/netns/NAME`).
    pub fn in_netns(name: &str) -> Result<Self> {
        Self::in_netns_path(Path::new("/run/netns").join(name))
    }

    /// Connects to the network namespace at `path` (e.g. `/proc/PID/ns/net`). A dedicated
    /// thread enters the namespace, opens the netlink socket there and serves the connection;
    /// the rest of the process stays where it is.
    pub fn in_netns_path(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let shown = path.display().to_string();
        std::thread::Builder::new()
            .name("netrollout-netlink".into())
            .spawn(move || serve_in_netns(&path, ready_tx, stop_rx))
            .map_err(Error::Connection)?;
        let handle = ready_rx
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
            _stop: Some(stop_tx),
        })
    }

    /// Reads links, addresses, routes and rules (`ip -d link; ip addr; ip route show table
    /// all; ip rule`) and keeps the managed ones.
    pub async fn observe(&self) -> Result<Observed> {
        // One dump at a time: the kernel allows a single dump in progress per socket. The
        // socket checks strictly, so the kernel filters routes by protocol itself.
        let t = std::time::Instant::now();
        let links = self
            .handle
            .link()
            .get()
            .set_filter_mask(AddressFamily::Unspec, vec![LinkExtentMask::SkipStats])
            .execute()
            .try_collect::<Vec<_>>()
            .await;
        let t_links = t.elapsed();
        let addrs = self
            .handle
            .address()
            .get()
            .execute()
            .try_collect::<Vec<_>>()
            .await;
        let t_addrs = t.elapsed();
        let routes = self.dump_routes(AddressFamily::Inet).await;
        let r6 = self.dump_routes(AddressFamily::Inet6).await;
        let rules = self
            .handle
            .rule()
            .get(IpVersion::V4)
            .execute()
            .try_collect::<Vec<_>>()
            .await;
        let u6 = self
            .handle
            .rule()
            .get(IpVersion::V6)
            .execute()
            .try_collect::<Vec<_>>()
            .await;
        tracing::debug!(?t_links, ?t_addrs, total = ?t.elapsed(), "dumps done");
        let dump = |what: &'static str| move |source| Error::Dump { what, source };
        let links = links.map_err(dump("links"))?;
        let addrs = addrs.map_err(dump("addresses"))?;
        let mut routes = routes.map_err(dump("routes"))?;
        routes.extend(r6.map_err(dump("routes"))?);
        let mut rules = rules.map_err(dump("rules"))?;
        rules.extend(u6.map_err(dump("rules"))?);
        let observed = observed(&links, &addrs, &routes, &rules);
        tracing::debug!(total = ?t.elapsed(), "observe done");
        Ok(observed)
    }

    async fn dump_routes(
        &self,
        family: AddressFamily,
    ) -> Result<Vec<RouteMessage>, rtnetlink::Error> {
        let mut m = RouteMessage::default();
        m.header.address_family = family;
        m.header.protocol = RouteProtocol::from(RTPROT_NETROLLOUT);
        self.handle.route().get(m).execute().try_collect().await
    }

    /// Validates `desired`, observes, diffs and executes: the whole reconcile.
    pub async fn apply(&self, desired: &Desired) -> Result<Report> {
        let t = std::time::Instant::now();
        desired.validate()?;
        let validated = t.elapsed();
        let observed = self.observe().await?;
        let ops = diff(desired, &observed);
        let diffed = t.elapsed();
        let report = self.execute(&ops, &observed).await;
        tracing::debug!(?validated, ?diffed, total = ?t.elapsed(), "apply done");
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
            let results: Vec<Result<Outcome>> = futures::stream::iter(requests)
                .map(|(op, (msg, flags))| {
                    let handle = self.handle.clone();
                    async move {
                        tracing::debug!(%op, "netlink write");
                        let errno = send(handle, msg, flags).await?;
                        outcome(op, errno)
                    }
                })
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

    /// Learns the indexes of links a group created and forgets deleted ones.
    async fn refresh_index(&self, group: &[Op], index: &mut BTreeMap<String, u32>) -> Result<()> {
        let mut created = Vec::new();
        for op in group {
            match op {
                Op::CreateLink(_) => created.extend(op.writes().into_iter().map(str::to_string)),
                Op::DeleteLink(name) => {
                    index.remove(name);
                }
                _ => {}
            }
        }
        let found: Vec<_> = futures::stream::iter(created)
            .map(|name| {
                let handle = self.handle.clone();
                async move {
                    handle
                        .link()
                        .get()
                        .match_name(name)
                        .execute()
                        .try_collect::<Vec<_>>()
                        .await
                }
            })
            .buffer_unordered(CONCURRENCY)
            .try_collect()
            .await
            .map_err(|source| Error::Dump {
                what: "created links",
                source,
            })?;
        for msgs in found {
            index.extend(ifindex(&msgs));
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

fn serve_in_netns(
    path: &PathBuf,
    ready: std::sync::mpsc::Sender<std::io::Result<Handle>>,
    stop: oneshot::Receiver<()>,
) {
    let setup = || -> std::io::Result<_> {
        let ns = File::open(path)?;
        nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET)
            .map_err(std::io::Error::from)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (conn, handle, _) =
            rt.block_on(async { rtnetlink::new_connection_with_strict_check() })?;
        Ok((rt, conn, handle))
    };
    match setup() {
        Err(e) => {
            let _ = ready.send(Err(e));
        }
        Ok((rt, conn, handle)) => {
            if ready.send(Ok(handle)).is_ok() {
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
