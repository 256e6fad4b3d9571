//! Converts a rendered [`NodeConfig`] into the dataplane's [`Desired`] kernel objects.
//!
//! What the rendered config does not say about the node itself (the VTEP source address and the
//! underlay device of VXLAN links) comes from agent flags as a [`Vtep`]. Route policies (import,
//! export, aggregates, communities, route targets) are no kernel objects: they reach FRR through
//! `netrollout-frr` and the agent's FRR step ([`crate::frr`]). `advertiseNeighbors` becomes a
//! [`HostRoutes`] target (the network's bridge and its VRF's table), which the apply does not
//! write: the agent's neighbour task keeps those routes ([`crate::neighbours`]).
//!
//! | rendered | kernel objects |
//! |---|---|
//! | layer2 `id` | bridge `l2.<id>` (MTU, anycast MAC, master = its VRF device), VXLAN `lx.<id>` enslaved to it, optional macvlan `mv.<id>` on the bridge, anycast gateway addresses on the bridge; segmentation offload (GSO, GRO, TSO) of the three off with `disableSegmentation`, on otherwise; with `advertiseNeighbors`, its neighbours as host routes in its VRF's table (the neighbour task) |
//! | VRF | VRF device `vr.<name>` (table), with a VNI: bridge `br.<name>` + VXLAN `vx.<name>`; veth pair `vd.<name>`/`vv.<name>` (`vv.` in the VRF); loopbacks as dummy devices in the VRF; one `from PREFIX lookup TABLE` rule per SBR prefix |
//! | routing table | VRF device `tb.<id>` bound to the table |

use std::net::IpAddr;

use ipnet::IpNet;
use netrollout_api::{Layer2Config, NodeConfig, VrfConfig};
use netrollout_dataplane::{
    Address, Desired, HostRoutes, Link, LinkKind, Mac, Managed, Rule, Segmentation, VXLAN_PORT,
    Vxlan,
};

/// Priority (`ip rule pref`) of the source-based routing rules of VRFs.
pub const SBR_RULE_PRIORITY: u32 = 2000;

/// The node's VXLAN tunnel endpoint: agent flags `--vtep-ip` and `--underlay-interface`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Vtep {
    /// Local VTEP address (`local IP` of every VXLAN device); needed when the config has a VXLAN.
    pub local: Option<IpAddr>,
    /// Underlay device (`dev NAME`) of every VXLAN device, if any.
    pub underlay: Option<String>,
}

/// A rendered config that cannot become kernel objects on this node.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConvertError {
    /// The config has VXLAN devices but the agent has no VTEP address.
    #[error("{link} needs a VTEP address: start the agent with --vtep-ip (env VTEP_IP)")]
    NoVtep {
        /// The VXLAN device that needs it.
        link: String,
    },
    /// A value in the rendered config does not parse.
    #[error("{object}: {field} {value:?} is not {expected}")]
    BadValue {
        /// The config object, e.g. `layer2 100`.
        object: String,
        /// The field.
        field: &'static str,
        /// The offending value.
        value: String,
        /// What was expected.
        expected: &'static str,
    },
    /// Two objects of the config (or two fields of one) name the same link: the kernel has one
    /// device per name, so one of them would silently take the other's place.
    #[error(
        "{object}: {field} {name:?} is the name {other} already gives a link; give each link its \
         own name (nothing was applied)"
    )]
    DuplicateLink {
        /// The config object, e.g. `vrf t2`.
        object: String,
        /// The field naming the link, e.g. `loopbacks[].name`.
        field: &'static str,
        /// The link name.
        name: String,
        /// The object and field that named it first, e.g. `vrf t1 loopbacks[].name`.
        other: String,
    },
    /// A layer-2 network names a VRF the node's config does not have.
    #[error("layer2 {id}: VRF {vrf:?} is not in the node's config")]
    UnknownVrf {
        /// VLAN id of the layer-2 network.
        id: u16,
        /// The VRF it names.
        vrf: String,
    },
}

/// Converts a rendered node config into the kernel objects the dataplane makes the kernel hold.
/// The link name prefixes the agent owns on its node, as the API's naming rules define them;
/// handed to the dataplane, which leaves every other link alone.
pub fn managed() -> Result<Managed, netrollout_dataplane::Error> {
    Managed::new(netrollout_api::MANAGED_PREFIXES)
}

pub fn to_desired(config: &NodeConfig, vtep: &Vtep) -> Result<Desired, ConvertError> {
    let mut links = Links::default();
    for vrf in &config.vrfs {
        add_vrf(&mut links, vrf, vtep)?;
    }
    for l2 in &config.layer2s {
        add_layer2(&mut links, l2, &config.vrfs, vtep)?;
    }
    for table in &config.routing_tables {
        let object = format!("routing table {}", table.table_id);
        let kind = LinkKind::Vrf {
            table: table.table_id,
        };
        links.add(&object, "interface", Link::new(&table.interface, kind))?;
    }
    Ok(links.desired)
}

/// The objects being built, and which object and field named each link.
#[derive(Default)]
struct Links {
    desired: Desired,
    owners: std::collections::BTreeMap<String, String>,
}

impl Links {
    /// Adds `link`, named by `object`'s `field`; a name already taken is
    /// [`ConvertError::DuplicateLink`].
    fn add(&mut self, object: &str, field: &'static str, link: Link) -> Result<(), ConvertError> {
        if let Some(other) = self.owners.get(&link.name) {
            return Err(ConvertError::DuplicateLink {
                object: object.to_string(),
                field,
                name: link.name.clone(),
                other: other.clone(),
            });
        }
        self.owners
            .insert(link.name.clone(), format!("{object} {field}"));
        self.desired.add_link(link);
        Ok(())
    }
}

/// Names of the links a config creates, for the oper-state probe.
pub fn link_names(desired: &Desired) -> Vec<String> {
    desired.links.keys().cloned().collect()
}

fn add_vrf(links: &mut Links, vrf: &VrfConfig, vtep: &Vtep) -> Result<(), ConvertError> {
    let object = format!("vrf {}", vrf.name);
    let with_mtu = |link: Link| match vrf.mtu {
        Some(mtu) => link.mtu(mtu),
        None => link,
    };
    let kind = LinkKind::Vrf {
        table: vrf.table_id,
    };
    links.add(&object, "vrfInterface", Link::new(&vrf.vrf_interface, kind))?;
    if let (Some(vni), Some(bridge), Some(vxlan)) =
        (vrf.vni, &vrf.bridge_interface, &vrf.vxlan_interface)
    {
        let link = Link::new(bridge, LinkKind::Bridge).master(&vrf.vrf_interface);
        links.add(&object, "bridgeInterface", with_mtu(link))?;
        let link = Link::new(vxlan, vxlan_kind(vni, vxlan, false, vtep)?).master(bridge);
        links.add(&object, "vxlanInterface", with_mtu(link))?;
    }
    let peer = vrf.veth_vrf_interface.clone();
    let link = Link::new(&vrf.veth_default_interface, LinkKind::Veth { peer });
    links.add(&object, "vethDefaultInterface", with_mtu(link))?;
    let peer = vrf.veth_default_interface.clone();
    let link = Link::new(&vrf.veth_vrf_interface, LinkKind::Veth { peer });
    links.add(
        &object,
        "vethVrfInterface",
        with_mtu(link.master(&vrf.vrf_interface)),
    )?;
    for lo in &vrf.loopbacks {
        let link = Link::new(&lo.name, LinkKind::Dummy).master(&vrf.vrf_interface);
        links.add(&object, "loopbacks[].name", link)?;
        links.desired.addresses.push(Address {
            link: lo.name.clone(),
            addr: parse_net(&object, "loopbacks[].address", &lo.address)?,
        });
    }
    for prefix in &vrf.sbr_prefixes {
        let net = parse_net(&object, "sbrPrefixes[]", prefix)?;
        links
            .desired
            .rules
            .push(Rule::from_prefix(SBR_RULE_PRIORITY, net, vrf.table_id));
    }
    Ok(())
}

fn add_layer2(
    links: &mut Links,
    l2: &Layer2Config,
    vrfs: &[VrfConfig],
    vtep: &Vtep,
) -> Result<(), ConvertError> {
    let object = format!("layer2 {}", l2.id);
    // Kept on (the kernel's default) unless turned off: turning the field off restores it, and
    // a change by hand is undone.
    let offload = if l2.disable_segmentation {
        Segmentation::Off
    } else {
        Segmentation::On
    };
    let mut bridge = Link::new(&l2.bridge_interface, LinkKind::Bridge)
        .mtu(l2.mtu)
        .segmentation(offload);
    if let Some(mac) = &l2.anycast_mac {
        bridge = bridge.mac(parse_mac(&object, mac)?);
    }
    if let Some(name) = &l2.vrf {
        let vrf =
            vrfs.iter()
                .find(|v| &v.name == name)
                .ok_or_else(|| ConvertError::UnknownVrf {
                    id: l2.id,
                    vrf: name.clone(),
                })?;
        bridge = bridge.master(&vrf.vrf_interface);
        // Render refuses the field on a network without a VRF (nothing would announce them).
        if l2.advertise_neighbors {
            links.desired.host_routes.push(HostRoutes {
                link: l2.bridge_interface.clone(),
                table: vrf.table_id,
            });
        }
    }
    links.add(&object, "bridgeInterface", bridge)?;
    let kind = vxlan_kind(l2.vni, &l2.vxlan_interface, l2.neigh_suppression, vtep)?;
    let vxlan = Link::new(&l2.vxlan_interface, kind)
        .mtu(l2.mtu)
        .master(&l2.bridge_interface)
        .segmentation(offload);
    links.add(&object, "vxlanInterface", vxlan)?;
    if let Some(mv) = &l2.macvlan_interface {
        let parent = l2.bridge_interface.clone();
        let link = Link::new(mv, LinkKind::Macvlan { parent }).segmentation(offload);
        links.add(&object, "macvlanInterface", link)?;
    }
    for gw in &l2.anycast_gateways {
        links.desired.addresses.push(Address {
            link: l2.bridge_interface.clone(),
            addr: parse_net(&object, "anycastGateways[]", gw)?,
        });
    }
    Ok(())
}

fn vxlan_kind(
    vni: u32,
    link: &str,
    neigh_suppress: bool,
    vtep: &Vtep,
) -> Result<LinkKind, ConvertError> {
    let local = vtep.local.ok_or_else(|| ConvertError::NoVtep {
        link: link.to_string(),
    })?;
    Ok(LinkKind::Vxlan(Vxlan {
        vni,
        local,
        underlay: vtep.underlay.clone(),
        port: VXLAN_PORT,
        learning: false,
        neigh_suppress,
    }))
}

fn parse_net(object: &str, field: &'static str, value: &str) -> Result<IpNet, ConvertError> {
    value.parse().map_err(|_| ConvertError::BadValue {
        object: object.to_string(),
        field,
        value: value.to_string(),
        expected: "an address with prefix length (e.g. 10.0.0.1/24)",
    })
}

fn parse_mac(object: &str, value: &str) -> Result<Mac, ConvertError> {
    let bad = || ConvertError::BadValue {
        object: object.to_string(),
        field: "anycastMac",
        value: value.to_string(),
        expected: "a MAC address (e.g. 02:54:00:00:00:01)",
    };
    let parts: Vec<&str> = value.split(':').collect();
    if parts.len() != 6 {
        return Err(bad());
    }
    let mut mac = [0u8; 6];
    for (byte, part) in mac.iter_mut().zip(parts) {
        if part.len() != 2 {
            return Err(bad());
        }
        *byte = u8::from_str_radix(part, 16).map_err(|_| bad())?;
    }
    Ok(Mac(mac))
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
