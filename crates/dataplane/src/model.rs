//! The desired and observed state, at the level of kernel objects.
//!
//! The agent converts a rendered NodeNetworkConfig into a [`Desired`]; [`crate::Dataplane::observe`]
//! reads the kernel into an [`Observed`]. Both hold the same element types, so the diff compares
//! like with like. Only *managed* objects appear here: links whose names carry a managed prefix
//! ([`Managed`], handed in by the caller), addresses on those links, and routes and rules tagged with
//! [`RTPROT_NETROLLOUT`]. Everything else on the host is foreign and never touched.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;

/// The name prefixes of the links this crate owns; any other link is foreign. The caller hands
/// them in (the agent passes the API's naming rules), so the list is defined once, with the
/// names the renderer builds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Managed {
    prefixes: Vec<String>,
}

impl Managed {
    /// The prefixes; at least one, none empty (an empty prefix would claim every link of the
    /// host, including the uplinks).
    pub fn new<I, S>(prefixes: I) -> Result<Self, crate::Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let prefixes: Vec<String> = prefixes.into_iter().map(Into::into).collect();
        if prefixes.is_empty() || prefixes.iter().any(String::is_empty) {
            return Err(crate::Error::Invalid {
                object: format!("managed prefix list {prefixes:?}"),
                reason: "must name at least one prefix and no empty one (e.g. [\"vr.\", \"br.\"]); an empty prefix would take over every link of the host".into(),
            });
        }
        Ok(Self { prefixes })
    }

    /// Whether a link name belongs to netrollout (carries a managed prefix).
    pub fn owns(&self, name: &str) -> bool {
        self.prefixes.iter().any(|p| name.starts_with(p.as_str()))
    }

    /// The prefixes, in the order given.
    pub fn prefixes(&self) -> &[String] {
        &self.prefixes
    }
}

/// The route protocol number (`ip route ... proto 177`) and rule protocol that mark routes and
/// rules as ours. Routes and rules with any other protocol are foreign.
pub const RTPROT_NETROLLOUT: u8 = 177;

/// The kernel's limit on interface names, in bytes (`IFNAMSIZ - 1`).
pub const MAX_NAME_LEN: usize = 15;

/// The standard VXLAN UDP port (`dstport 4789`).
pub const VXLAN_PORT: u16 = 4789;

#[cfg(test)]
pub(crate) mod for_tests {
    /// The contract's prefix list, as the agent hands it in.
    pub(crate) fn managed() -> super::Managed {
        super::Managed::new(netrollout_api::MANAGED_PREFIXES).expect("the API's prefixes")
    }
}

/// A 48-bit Ethernet address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mac(pub [u8; 6]);

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

/// What a node should have. Build it with struct literals; [`Desired::validate`] checks it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Desired {
    /// Managed links by name.
    pub links: BTreeMap<String, Link>,
    /// Addresses on managed links.
    pub addresses: Vec<Address>,
    /// Routes, all tagged with [`RTPROT_NETROLLOUT`] when installed.
    pub routes: Vec<Route>,
    /// Policy routing rules, all tagged with [`RTPROT_NETROLLOUT`] when installed.
    pub rules: Vec<Rule>,
    /// Bridges whose neighbours are announced as host routes (`advertiseNeighbors`). Not
    /// written by [`crate::Dataplane::apply`]: the agent hands them to its neighbour task,
    /// which keeps the routes as neighbours come and go ([`crate::Neighbours`]).
    pub host_routes: Vec<crate::HostRoutes>,
}

impl Desired {
    /// Adds a link, keyed by its name.
    pub fn add_link(&mut self, link: Link) {
        self.links.insert(link.name.clone(), link);
    }
}

/// What the kernel has, managed objects only, plus the index of every link (foreign ones
/// included, so that underlay devices and parents can be referenced).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// Managed links by name; `mtu` and `mac` are always `Some`.
    pub links: BTreeMap<String, ObservedLink>,
    /// Addresses on managed links, except kernel-made IPv6 link-local ones.
    pub addresses: Vec<Address>,
    /// Routes carrying [`RTPROT_NETROLLOUT`], in any table.
    pub routes: Vec<Route>,
    /// Rules carrying [`RTPROT_NETROLLOUT`].
    pub rules: Vec<Rule>,
    /// Every link's interface index by name, foreign links included.
    pub ifindex: BTreeMap<String, u32>,
}

/// A managed link as observed: its configuration plus its administrative state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedLink {
    /// The configuration read back from the kernel.
    pub link: Link,
    /// Whether the link is administratively up (`IFF_UP`).
    pub up: bool,
}

/// One network device. Managed links are always brought up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// Interface name, with a managed prefix, at most [`MAX_NAME_LEN`] bytes.
    pub name: String,
    /// The device type and its type-specific settings.
    pub kind: LinkKind,
    /// MTU; `None` leaves the kernel's choice alone.
    pub mtu: Option<u32>,
    /// Hardware address; `None` leaves the kernel's choice alone.
    pub mac: Option<Mac>,
    /// The bridge or VRF this link is enslaved to (`ip link set X master M`), `None` for nomaster.
    pub master: Option<String>,
    /// Segmentation offload (GSO, GRO, TSO) through ethtool netlink; changes in place.
    pub segmentation: Segmentation,
}

/// Segmentation offload of a link: the features `ethtool -K NAME gso X gro X tso X` switches
/// (generic segmentation, generic receive and TCP segmentation offload), counting only those
/// the device lets users change.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Segmentation {
    /// Desired: left as the kernel has it. Observed: not read (the kernel has no ethtool
    /// netlink interface).
    #[default]
    Untouched,
    /// Every one wanted on (the kernel's default for the devices netrollout creates).
    On,
    /// Every one wanted off (`ethtool -K NAME gso off gro off tso off`).
    Off,
    /// Observed only: some on, some off.
    Mixed,
}

impl Segmentation {
    /// Whether a link observed with `self` needs a write to reach `desired`: never for
    /// `Untouched`; `On` is what the kernel starts with, so an unread state counts as on.
    pub fn to_reach(self, desired: Segmentation) -> Option<bool> {
        match (desired, self) {
            (Segmentation::On, Segmentation::On | Segmentation::Untouched) => None,
            (Segmentation::Off, Segmentation::Off) => None,
            (Segmentation::On, _) => Some(true),
            (Segmentation::Off, _) => Some(false),
            (Segmentation::Untouched | Segmentation::Mixed, _) => None,
        }
    }
}

impl Link {
    /// A link of the given kind with no master and kernel-chosen MTU and MAC.
    pub fn new(name: impl Into<String>, kind: LinkKind) -> Self {
        Self {
            name: name.into(),
            kind,
            mtu: None,
            mac: None,
            master: None,
            segmentation: Segmentation::Untouched,
        }
    }

    /// Sets the segmentation offload wanted (builder style).
    pub fn segmentation(mut self, segmentation: Segmentation) -> Self {
        self.segmentation = segmentation;
        self
    }

    /// Sets the master (builder style).
    pub fn master(mut self, master: impl Into<String>) -> Self {
        self.master = Some(master.into());
        self
    }

    /// Sets the MTU (builder style).
    pub fn mtu(mut self, mtu: u32) -> Self {
        self.mtu = Some(mtu);
        self
    }

    /// Sets the hardware address (builder style).
    pub fn mac(mut self, mac: Mac) -> Self {
        self.mac = Some(mac);
        self
    }

    /// Names of other links this one needs to exist first: master, parent, underlay.
    pub fn dependencies(&self) -> Vec<&str> {
        let mut deps: Vec<&str> = self.master.iter().map(String::as_str).collect();
        match &self.kind {
            LinkKind::Vxlan(v) => deps.extend(v.underlay.as_deref()),
            LinkKind::Macvlan { parent } | LinkKind::Vlan { parent, .. } => deps.push(parent),
            LinkKind::Bridge | LinkKind::Vrf { .. } | LinkKind::Veth { .. } | LinkKind::Dummy => {}
            LinkKind::Unsupported(_) => {}
        }
        deps
    }
}

/// The device type. Changing anything here recreates the device; MTU, MAC, master and the
/// VXLAN port's neighbour suppression change in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkKind {
    /// `ip link add NAME type bridge`.
    Bridge,
    /// `ip link add NAME type vxlan id VNI local IP [dev UNDERLAY] dstport PORT [no]learning`.
    Vxlan(Vxlan),
    /// `ip link add NAME type vrf table T` (needs the vrf module: VM tier).
    Vrf {
        /// The routing table the VRF is bound to.
        table: u32,
    },
    /// `ip link add NAME type veth peer name PEER`; both ends are listed in [`Desired::links`].
    Veth {
        /// The other end's name.
        peer: String,
    },
    /// `ip link add NAME link PARENT type macvlan mode bridge`.
    Macvlan {
        /// The device the macvlan sits on.
        parent: String,
    },
    /// `ip link add NAME link PARENT type vlan id ID` (needs 8021q: VM tier).
    Vlan {
        /// The device carrying the tagged frames.
        parent: String,
        /// The 802.1Q VLAN id.
        id: u16,
    },
    /// `ip link add NAME type dummy` (needs the dummy module: VM tier); used for loopbacks.
    Dummy,
    /// Observed only: a managed name on a device of another kind (named by the kernel). It is
    /// never desired, so the diff replaces it.
    Unsupported(String),
}

impl LinkKind {
    /// The kernel's name for the kind, as `ip -d link` prints it.
    pub fn as_str(&self) -> &'static str {
        match self {
            LinkKind::Bridge => "bridge",
            LinkKind::Vxlan(_) => "vxlan",
            LinkKind::Vrf { .. } => "vrf",
            LinkKind::Veth { .. } => "veth",
            LinkKind::Macvlan { .. } => "macvlan",
            LinkKind::Vlan { .. } => "vlan",
            LinkKind::Dummy => "dummy",
            LinkKind::Unsupported(_) => "unsupported",
        }
    }

    /// Whether two kinds are the same device as far as creation is concerned (everything but
    /// settings that change in place).
    pub fn same_device(&self, other: &LinkKind) -> bool {
        match (self, other) {
            (LinkKind::Vxlan(a), LinkKind::Vxlan(b)) => a.device_eq(b),
            (a, b) => a == b,
        }
    }
}

/// VXLAN settings. The VTEP source (`local`, optional `underlay` device) and the UDP port are
/// part of the model because the kernel needs them at creation time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vxlan {
    /// The VXLAN network identifier.
    pub vni: u32,
    /// The local VTEP address (`local IP`).
    pub local: IpAddr,
    /// The underlay device (`dev NAME`), often foreign (e.g. the uplink).
    pub underlay: Option<String>,
    /// The destination UDP port (`dstport`), usually [`VXLAN_PORT`].
    pub port: u16,
    /// Source-address learning in the VXLAN FDB (`[no]learning`); EVPN wants it off.
    pub learning: bool,
    /// Bridge-port neighbour suppression (`bridge link set dev NAME neigh_suppress on`); only
    /// meaningful when the VXLAN device is enslaved to a bridge. Changes in place.
    pub neigh_suppress: bool,
}

impl Vxlan {
    /// Equality of the settings fixed at creation (all but `neigh_suppress`).
    fn device_eq(&self, other: &Vxlan) -> bool {
        (
            self.vni,
            self.local,
            &self.underlay,
            self.port,
            self.learning,
        ) == (
            other.vni,
            other.local,
            &other.underlay,
            other.port,
            other.learning,
        )
    }
}

/// An address on a managed link (`ip addr add ADDR/LEN dev LINK`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Address {
    /// The link carrying the address.
    pub link: String,
    /// Address and prefix length, host bits included (e.g. `10.0.0.1/24`).
    pub addr: IpNet,
}

/// A unicast route (`ip route replace DST [via GW] [dev DEV] table T metric M proto 177`).
/// Identified by table, destination and metric.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Route {
    /// Routing table id (254 is main).
    pub table: u32,
    /// Destination prefix.
    pub dst: IpNet,
    /// Next hop, if any.
    pub gateway: Option<IpAddr>,
    /// Output device, if any (may be foreign, e.g. an uplink).
    pub dev: Option<String>,
    /// Route priority (`metric`).
    pub metric: u32,
}

impl Route {
    /// The identity of the route in the kernel: table, destination (host bits cleared), metric.
    pub fn key(&self) -> (u32, IpNet, u32) {
        (self.table, self.dst.trunc(), self.effective_metric())
    }

    /// The metric the kernel stores: IPv6 turns metric 0 into 1024 (`IP6_RT_PRIO_USER`).
    pub fn effective_metric(&self) -> u32 {
        if self.metric == 0 && self.dst.addr().is_ipv6() {
            1024
        } else {
            self.metric
        }
    }
}

/// Address family of a rule without prefixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    /// IPv4 (`ip -4 rule`).
    V4,
    /// IPv6 (`ip -6 rule`).
    V6,
}

impl Family {
    /// The family of an address.
    pub fn of(ip: &IpAddr) -> Family {
        if ip.is_ipv4() { Family::V4 } else { Family::V6 }
    }
}

/// A policy routing rule (`ip rule add pref P [from SRC] [to DST] [iif IIF] lookup T proto 177`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rule {
    /// Rule priority (`pref`).
    pub priority: u32,
    /// Address family; must match `src`/`dst` when those are set.
    pub family: Family,
    /// Source prefix (`from`).
    pub src: Option<IpNet>,
    /// Destination prefix (`to`).
    pub dst: Option<IpNet>,
    /// Input interface name (`iif`).
    pub iif: Option<String>,
    /// Table to look up.
    pub table: u32,
}

impl Rule {
    /// A source-based routing rule: `ip rule add pref P from SRC lookup T`.
    pub fn from_prefix(priority: u32, src: IpNet, table: u32) -> Self {
        let family = Family::of(&src.addr());
        Self {
            priority,
            family,
            src: Some(src),
            dst: None,
            iif: None,
            table,
        }
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} dev {}", self.addr, self.link)
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.dst)?;
        if let Some(gw) = &self.gateway {
            write!(f, " via {gw}")?;
        }
        if let Some(dev) = &self.dev {
            write!(f, " dev {dev}")?;
        }
        write!(f, " table {} metric {}", self.table, self.metric)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pref {} {:?}", self.priority, self.family)?;
        if let Some(src) = &self.src {
            write!(f, " from {src}")?;
        }
        if let Some(dst) = &self.dst {
            write!(f, " to {dst}")?;
        }
        if let Some(iif) = &self.iif {
            write!(f, " iif {iif}")?;
        }
        write!(f, " lookup {}", self.table)
    }
}
