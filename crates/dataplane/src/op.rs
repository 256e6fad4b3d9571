//! Operations: one netlink write request each, produced by [`crate::diff`] in execution order.

use std::fmt;

use crate::model::{Address, Link, LinkKind, Mac, Route, Rule};

/// One change to the kernel. Each op is exactly one netlink write request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `ip rule del ...` of a rule we own that is no longer wanted.
    DeleteRule(Rule),
    /// `ip route del ...` of a route we own that is no longer wanted.
    DeleteRoute(Route),
    /// `ip addr del ADDR dev LINK`.
    DeleteAddress(Address),
    /// `ip link del NAME` (a veth end takes its peer with it).
    DeleteLink(String),
    /// `ip link add NAME [mtu M] [address MAC] [master X] up type ...` in a single request.
    CreateLink(Link),
    /// `ip link set NAME [mtu M] [address MAC] [master X | nomaster] up` in a single request.
    ModifyLink(LinkChange),
    /// `bridge link set dev NAME neigh_suppress on|off`.
    SetBridgePort {
        /// The bridge port (a VXLAN device).
        link: String,
        /// Neighbour suppression wanted.
        neigh_suppress: bool,
    },
    /// `ethtool -K NAME gso X gro X tso X` (ethtool netlink, not rtnetlink).
    SetSegmentation {
        /// The link.
        link: String,
        /// Offload wanted on (`true`) or off.
        on: bool,
    },
    /// `ip addr add ADDR dev LINK` (IPv6 with `nodad`: anycast gateways exist on every node).
    AddAddress(Address),
    /// `ip route replace ... proto 177`.
    ReplaceRoute(Route),
    /// `ip rule add ... proto 177`.
    AddRule(Rule),
}

/// In-place changes to an existing link; `None` fields stay as they are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkChange {
    /// The link to change.
    pub name: String,
    /// New MTU.
    pub mtu: Option<u32>,
    /// New hardware address.
    pub mac: Option<Mac>,
    /// New master: `Some(None)` is nomaster.
    pub master: Option<Option<String>>,
    /// Bring the link up (it is down now).
    pub up: bool,
}

/// The stage an op belongs to; the executor never runs two stages at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Stage {
    /// Removing rules, routes and addresses.
    Prune,
    /// Removing links.
    DeleteLinks,
    /// Creating and changing links.
    Links,
    /// Adding addresses.
    Addresses,
    /// Installing routes (after addresses: gateways must be reachable).
    Routes,
    /// Adding rules.
    Rules,
}

impl Op {
    /// A short verb naming the operation, as used in errors and logs.
    pub fn verb(&self) -> &'static str {
        match self {
            Op::DeleteRule(_) => "delete rule",
            Op::DeleteRoute(_) => "delete route",
            Op::DeleteAddress(_) => "delete address",
            Op::DeleteLink(_) => "delete link",
            Op::CreateLink(_) => "create link",
            Op::ModifyLink(_) => "modify link",
            Op::SetBridgePort { .. } => "set bridge port",
            Op::SetSegmentation { on: true, .. } => "turn on segmentation offload of",
            Op::SetSegmentation { on: false, .. } => "turn off segmentation offload of",
            Op::AddAddress(_) => "add address",
            Op::ReplaceRoute(_) => "replace route",
            Op::AddRule(_) => "add rule",
        }
    }

    /// The object the op acts on, for errors and logs.
    pub fn object(&self) -> String {
        match self {
            Op::DeleteRule(r) | Op::AddRule(r) => r.to_string(),
            Op::DeleteRoute(r) | Op::ReplaceRoute(r) => r.to_string(),
            Op::DeleteAddress(a) | Op::AddAddress(a) => a.to_string(),
            Op::DeleteLink(name) => name.clone(),
            Op::CreateLink(l) => format!("{} ({})", l.name, l.kind.as_str()),
            Op::ModifyLink(c) => c.name.clone(),
            Op::SetBridgePort { link, .. } | Op::SetSegmentation { link, .. } => link.clone(),
        }
    }

    pub(crate) fn stage(&self) -> Stage {
        match self {
            Op::DeleteRule(_) | Op::DeleteRoute(_) | Op::DeleteAddress(_) => Stage::Prune,
            Op::DeleteLink(_) => Stage::DeleteLinks,
            Op::CreateLink(_)
            | Op::ModifyLink(_)
            | Op::SetBridgePort { .. }
            | Op::SetSegmentation { .. } => Stage::Links,
            Op::AddAddress(_) => Stage::Addresses,
            Op::ReplaceRoute(_) => Stage::Routes,
            Op::AddRule(_) => Stage::Rules,
        }
    }

    /// Links this op changes (creates, deletes, reconfigures).
    pub(crate) fn writes(&self) -> Vec<&str> {
        match self {
            Op::DeleteLink(name) => vec![name],
            Op::CreateLink(l) => match &l.kind {
                LinkKind::Veth { peer } => vec![&l.name, peer],
                _ => vec![&l.name],
            },
            Op::ModifyLink(c) => vec![&c.name],
            Op::SetBridgePort { link, .. } | Op::SetSegmentation { link, .. } => vec![link],
            _ => Vec::new(),
        }
    }

    /// Links this op needs to exist, in their final shape, before it runs.
    pub(crate) fn reads(&self) -> Vec<&str> {
        match self {
            Op::CreateLink(l) => {
                let mut r = l.dependencies();
                r.push(&l.name);
                r
            }
            Op::ModifyLink(c) => {
                let mut r = vec![c.name.as_str()];
                r.extend(c.master.iter().flatten().map(String::as_str));
                r
            }
            Op::SetBridgePort { link, .. } | Op::SetSegmentation { link, .. } => vec![link],
            Op::DeleteAddress(a) | Op::AddAddress(a) => vec![&a.link],
            Op::DeleteRoute(r) | Op::ReplaceRoute(r) => r.dev.iter().map(String::as_str).collect(),
            Op::AddRule(r) | Op::DeleteRule(r) => r.iif.iter().map(String::as_str).collect(),
            Op::DeleteLink(name) => vec![name],
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.verb(), self.object())
    }
}
