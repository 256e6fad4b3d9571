//! Interface naming: the prefixes of the interfaces netrollout creates on a node and the
//! kernel's length limit. The renderer builds every name with these functions; the agent hands
//! [`MANAGED_PREFIXES`] to the dataplane, which treats any other link as foreign.

/// The kernel's limit on interface names, in bytes (`IFNAMSIZ - 1`).
pub const MAX_IFNAME: usize = 15;

/// The VRF device of a VRF (`vr.NAME`).
pub const VRF_PREFIX: &str = "vr.";
/// The EVPN bridge of a VRF with a VNI (`br.NAME`).
pub const VRF_BRIDGE_PREFIX: &str = "br.";
/// The VXLAN device of a VRF with a VNI (`vx.NAME`).
pub const VRF_VXLAN_PREFIX: &str = "vx.";
/// The default-namespace end of a VRF's veth pair (`vd.NAME`).
pub const VETH_DEFAULT_PREFIX: &str = "vd.";
/// The VRF end of a VRF's veth pair (`vv.NAME`).
pub const VETH_VRF_PREFIX: &str = "vv.";
/// The bridge of a layer-2 network (`l2.ID`).
pub const LAYER2_BRIDGE_PREFIX: &str = "l2.";
/// The VXLAN device of a layer-2 network (`lx.ID`).
pub const LAYER2_VXLAN_PREFIX: &str = "lx.";
/// The macvlan interface of a layer-2 network that asks for one (`mv.ID`).
pub const MACVLAN_PREFIX: &str = "mv.";
/// VLAN interfaces (`vl.…`).
pub const VLAN_PREFIX: &str = "vl.";
/// The VRF device of a routing table (`tb.TABLE`).
pub const TABLE_PREFIX: &str = "tb.";
/// Loopbacks users name in a VRF; the name must carry this prefix (`lo.NAME`).
pub const LOOPBACK_PREFIX: &str = "lo.";

/// Every prefix above: a link whose name starts with one of them belongs to netrollout.
pub const MANAGED_PREFIXES: [&str; 11] = [
    VRF_PREFIX,
    VRF_BRIDGE_PREFIX,
    VRF_VXLAN_PREFIX,
    VETH_DEFAULT_PREFIX,
    VETH_VRF_PREFIX,
    LAYER2_BRIDGE_PREFIX,
    LAYER2_VXLAN_PREFIX,
    MACVLAN_PREFIX,
    VLAN_PREFIX,
    TABLE_PREFIX,
    LOOPBACK_PREFIX,
];

/// Longest VRF name whose interface names (the prefixes are three bytes) fit [`MAX_IFNAME`].
pub const MAX_VRF_NAME: usize = MAX_IFNAME - 3;

/// `prefix` followed by `suffix`: the name of one interface.
pub fn interface(prefix: &str, suffix: impl std::fmt::Display) -> String {
    format!("{prefix}{suffix}")
}

/// Whether `name` fits the kernel's limit.
pub fn fits(name: &str) -> bool {
    name.len() <= MAX_IFNAME
}

/// Characters a user-named interface (a VRF loopback) may hold after its prefix: letters, digits,
/// `.`, `_` and `-`. Linux refuses `/`, `:`, whitespace, and `.` or `..` as a whole name
/// (`dev_valid_name`) and treats `%` as a template; FRR's configuration is whitespace-separated.
/// The safe set avoids all of these.
pub const USER_IFNAME_PATTERN: &str = r"^lo\.[A-Za-z0-9._-]+$";

/// Whether `name` is a valid user-named interface: [`LOOPBACK_PREFIX`], at least one more byte,
/// only the characters of [`USER_IFNAME_PATTERN`], and within [`MAX_IFNAME`].
pub fn is_user_ifname(name: &str) -> bool {
    name.strip_prefix(LOOPBACK_PREFIX).is_some_and(|rest| {
        !rest.is_empty()
            && rest
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    }) && fits(name)
}

/// Routing table ids the kernel gives a meaning of its own, refused for every input that becomes
/// a table (a `RoutingTable`'s `tableId`, a VRF's `vni`): 0 (unspecified: the kernel reads it as
/// "no table"), 252 (`compat`: stands for "the id is in `RTA_TABLE`" in the 8-bit header
/// field), 253 (`default`), 254 (`main`) and 255 (`local`). Binding a VRF to one of them would
/// hijack or shadow the host's own routes.
pub const RESERVED_TABLES: [(u32, &str); 5] = [
    (0, "unspec"),
    (252, "compat"),
    (253, "default"),
    (254, "main"),
    (255, "local"),
];

/// The kernel's name of table `id` when it is one of [`RESERVED_TABLES`].
pub fn reserved_table(id: u32) -> Option<&'static str> {
    RESERVED_TABLES
        .iter()
        .find(|(t, _)| *t == id)
        .map(|(_, n)| *n)
}

/// Whether `name` carries one of [`MANAGED_PREFIXES`].
pub fn is_managed(name: &str) -> bool {
    MANAGED_PREFIXES.iter().any(|p| name.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_prefix_is_three_bytes_so_the_longest_vrf_name_fits() {
        for p in MANAGED_PREFIXES {
            assert_eq!(p.len(), 3, "{p}");
        }
        let longest = interface(VRF_PREFIX, "a".repeat(MAX_VRF_NAME));
        assert!(fits(&longest), "{longest}");
        assert!(!fits(&interface(VRF_PREFIX, "a".repeat(MAX_VRF_NAME + 1))));
    }

    #[test]
    fn user_interface_names_refuse_what_linux_or_frr_would_not_take() {
        for ok in ["lo.a", "lo.mirror-1_x", "lo..", "lo.abcdefghijkl"] {
            assert!(is_user_ifname(ok), "{ok}");
        }
        for bad in [
            "lo.",
            "lo",
            "eth0",
            "lo.a:b",
            "lo.a/b",
            "lo.a b",
            "lo.a\tb",
            "lo.a%d",
            "lo.\u{e0}",
            "lo.abcdefghijklm",
        ] {
            assert!(!is_user_ifname(bad), "{bad:?}");
        }
    }

    #[test]
    fn the_kernels_own_tables_are_reserved() {
        for id in [0, 252, 253, 254, 255] {
            assert!(reserved_table(id).is_some(), "{id}");
        }
        assert_eq!(reserved_table(254), Some("main"));
        assert!(reserved_table(1).is_none() && reserved_table(256).is_none());
    }

    #[test]
    fn managed_names_carry_a_prefix() {
        assert!(is_managed("l2.100"));
        assert!(is_managed(&interface(TABLE_PREFIX, 300)));
        assert!(!is_managed("eth0"));
        assert!(!is_managed("lo"));
    }
}
