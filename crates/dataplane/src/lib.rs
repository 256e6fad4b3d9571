//! Reconciles a node's network configuration with the Linux kernel over netlink.
//!
//! The agent converts a rendered NodeNetworkConfig into a [`Desired`] state of kernel objects
//! (links with their kind data, addresses, routes, rules), then calls [`Dataplane::apply`]:
//! **observe** the kernel ([`Dataplane::observe`]) → **diff** desired against observed, a pure
//! function ([`diff`]) → ordered [`Op`]s (create before enslave, delete in reverse, change in
//! place where the kernel allows) → **execute** via rtnetlink. A config already in place makes
//! zero netlink writes ([`Report::writes`]). A failed op reports the op, the object and the
//! kernel's error ([`Error::Kernel`]).
//!
//! Only managed objects are ever touched: links whose names carry a managed prefix
//! ([`Managed`], a list the caller hands in), addresses on them, and routes and rules tagged with protocol
//! [`RTPROT_NETROLLOUT`]. Foreign links, addresses, routes and rules survive every apply.
//!
//! [`Dataplane::connect`] works in the caller's network namespace (the agent's case);
//! [`Dataplane::in_netns`] works in a named one (tests, tools) without moving the process.
//!
//! Layout:
//! - `model`: [`Desired`], [`Observed`] and their element types ([`Link`], [`Address`],
//!   [`Route`], [`Rule`]), the managed prefixes and protocol tag.
//! - `model_kernel`: [`ModelKernel`], the kernel's behaviour on ops, for tests without root.
//! - `validate`: [`Desired::validate`] and the dependency order of links.
//! - `diff`: the pure [`diff`]; its tests (`diff_tests`) run ops on a model kernel.
//! - `op`: [`Op`], one netlink write each.
//! - `msg`: netlink request messages for ops (pure).
//! - `dump`: fast dumps over a blocking socket, decoding only the attributes the model needs.
//! - `neigh`: host routes for a network's neighbours (`advertiseNeighbors`), pure: which
//!   neighbours count, the routes wanted, the plan; `neigh_kernel`: [`Neighbours`], the
//!   connection that hears neighbour notifications and keeps those routes (the agent runs it as
//!   a task of its own, outside [`Dataplane::apply`]).
//! - `ethtool`: segmentation offload (GSO, GRO, TSO) over the ethtool generic netlink family.
//! - `observe`: netlink dump messages into [`Observed`] (pure).
//! - `exec`: which ops may run concurrently; kernel answers as typed outcomes.
//! - `dataplane`: the connection ([`Dataplane`]), observe, execute, apply, [`Report`].
//! - `error`: [`Error`].
#![forbid(unsafe_code)]

mod dataplane;
mod diff;
mod dump;
mod error;
mod ethtool;
mod exchange;
mod exec;
mod model;
mod model_kernel;
mod msg;
mod neigh;
mod neigh_kernel;
mod observe;
mod op;
mod validate;

pub use dataplane::{Dataplane, Report};
pub use diff::diff;
pub use error::{Error, Result};
pub use model::{
    Address, Desired, Family, Link, LinkKind, MAX_NAME_LEN, Mac, Managed, Observed, ObservedLink,
    RTPROT_NETROLLOUT, Route, Rule, Segmentation, VXLAN_PORT, Vxlan,
};
pub use model_kernel::ModelKernel;
pub use neigh::{
    HostRoute, HostRoutes, Neighbour, Plan, RTPROT_NEIGHBOURS, host_len, is_announced, plan, wanted,
};
pub use neigh_kernel::{Neighbours, Synced};
pub use op::{LinkChange, Op};
