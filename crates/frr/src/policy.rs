//! Prefix lists and route maps of the VRFs' import and export policies.
//!
//! Each policy (one `VRFRouteConfiguration`) of a VRF gets, per direction, the prefix list
//! `pl_<vrf>_<import|export>_<policy seq>`: its IPv4 items as `ip prefix-list`, its IPv6 items as
//! `ipv6 prefix-list` (FRR keeps the two families apart). Item sequence numbers are the item's
//! `seq`, or its position in the list counted from 1 (as the Go operator does).
//!
//! Per VRF and direction there are two route maps, `rm_<vrf>_<dir>` (IPv4) and `rm6_<vrf>_<dir>`
//! (IPv6): one `permit <policy seq>` entry per policy that has items of that family, matching its
//! prefix list; export entries also `set community` (standard communities) and `set
//! large-community` (large ones, `a:b:c`) when the policy has communities. Every map
//! ends with `deny 65535`, so it exists (and denies) even when no policy has entries for it.

use std::fmt::Write as _;

use netrollout_api::{NodeConfig, PrefixAction, PrefixItem, VrfConfig, VrfPolicy};

use crate::is_v6;

/// Sequence of the explicit default-deny entry that ends every route map.
pub const DEFAULT_DENY_SEQ: u32 = 65535;

/// The two directions of a VRF's policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Routes of the tenant VRF that the cluster (default VRF) takes in.
    Import,
    /// Routes of the cluster that are announced into the tenant VRF.
    Export,
}

/// The two address families FRR configures separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `ip prefix-list`, `match ip address`, route maps `rm_`.
    V4,
    /// `ipv6 prefix-list`, `match ipv6 address`, route maps `rm6_`.
    V6,
}

impl Direction {
    /// `import` or `export`.
    pub fn word(self) -> &'static str {
        match self {
            Self::Import => "import",
            Self::Export => "export",
        }
    }

    fn items(self, policy: &VrfPolicy) -> &[PrefixItem] {
        match self {
            Self::Import => &policy.import,
            Self::Export => &policy.export,
        }
    }
}

impl Family {
    pub(crate) fn of(cidr: &str) -> Self {
        if is_v6(cidr) { Self::V6 } else { Self::V4 }
    }

    pub(crate) fn ip(self) -> &'static str {
        match self {
            Self::V4 => "ip",
            Self::V6 => "ipv6",
        }
    }
}

/// Name of a VRF's route map for one direction and family, e.g. `rm6_m2m_export`.
pub fn route_map_name(vrf: &str, dir: Direction, family: Family) -> String {
    let rm = match family {
        Family::V4 => "rm",
        Family::V6 => "rm6",
    };
    format!("{rm}_{vrf}_{}", dir.word())
}

/// Name of one policy's prefix list (shared by the `ip` and `ipv6` lists).
pub fn prefix_list_name(vrf: &str, dir: Direction, policy_seq: i32) -> String {
    format!("pl_{vrf}_{}_{policy_seq}", dir.word())
}

/// The sequence number of the `index`-th item of a prefix list.
pub fn item_seq(item: &PrefixItem, index: usize) -> i64 {
    item.seq.unwrap_or(index as i64 + 1)
}

/// Writes every prefix list of every VRF.
pub(crate) fn prefix_lists(out: &mut String, config: &NodeConfig) {
    let before = out.len();
    for vrf in &config.vrfs {
        for policy in &vrf.policies {
            for dir in [Direction::Import, Direction::Export] {
                let name = prefix_list_name(&vrf.name, dir, policy.seq);
                for (i, item) in dir.items(policy).iter().enumerate() {
                    prefix_list_line(out, &name, item, i);
                }
            }
        }
    }
    if out.len() > before {
        out.push_str("!\n");
    }
}

pub(crate) fn prefix_list_line(out: &mut String, name: &str, item: &PrefixItem, index: usize) {
    let action = match item.action {
        PrefixAction::Permit => "permit",
        PrefixAction::Deny => "deny",
    };
    let ip = Family::of(&item.cidr).ip();
    let seq = item_seq(item, index);
    // Writing to a String cannot fail.
    let _ = write!(
        out,
        "{ip} prefix-list {name} seq {seq} {action} {}",
        item.cidr
    );
    if let Some(ge) = item.ge {
        let _ = write!(out, " ge {ge}");
    }
    if let Some(le) = item.le {
        let _ = write!(out, " le {le}");
    }
    out.push('\n');
}

/// Writes the four route maps of every VRF.
pub(crate) fn route_maps(out: &mut String, config: &NodeConfig) {
    for vrf in &config.vrfs {
        for dir in [Direction::Import, Direction::Export] {
            for family in [Family::V4, Family::V6] {
                route_map(out, vrf, dir, family);
            }
        }
    }
}

fn route_map(out: &mut String, vrf: &VrfConfig, dir: Direction, family: Family) {
    let map = route_map_name(&vrf.name, dir, family);
    for policy in &vrf.policies {
        let has_family = dir
            .items(policy)
            .iter()
            .any(|item| Family::of(&item.cidr) == family);
        if !has_family {
            continue;
        }
        let list = prefix_list_name(&vrf.name, dir, policy.seq);
        let _ = writeln!(out, "route-map {map} permit {}", policy.seq);
        let _ = writeln!(out, " match {} address prefix-list {list}", family.ip());
        if dir == Direction::Export {
            set_communities(out, &policy.communities);
        }
        out.push_str("exit\n!\n");
    }
    let _ = writeln!(out, "route-map {map} deny {DEFAULT_DENY_SEQ}");
    out.push_str("exit\n!\n");
}

/// Writes ` set community …` for the standard communities and ` set large-community …` for the
/// large ones (`a:b:c`, RFC 8092), each in the order given; nothing for none. FRR keeps the two
/// kinds in separate attributes and refuses a large community in `set community`.
fn set_communities(out: &mut String, communities: &[String]) {
    let (large, standard): (Vec<&str>, Vec<&str>) = communities
        .iter()
        .map(String::as_str)
        .partition(|c| is_large_community(c));
    if !standard.is_empty() {
        let _ = writeln!(out, " set community {}", standard.join(" "));
    }
    if !large.is_empty() {
        let _ = writeln!(out, " set large-community {}", large.join(" "));
    }
}

/// Whether a community is a large one: three numbers `a:b:c`.
pub fn is_large_community(community: &str) -> bool {
    let parts: Vec<&str> = community.split(':').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}
