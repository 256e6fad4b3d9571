//! The rules of [`super::Merge`] that differ between FRR versions: the node types vtysh files
//! blocks under, their order (`enum node_type`, lib/command.h), the headers that open them and
//! the top-level lines kept once.

/// The FRR version whose vtysh rules a [`Merge`] follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(in crate::frr) enum Dialect {
    /// FRR 8.4.
    #[default]
    V8_4,
    /// FRR 10.3.
    V10_3,
}

impl Dialect {
    /// The dialect of FRR `version` (a `frr version` line's word): `None` for a version whose
    /// vtysh rules the agent does not follow (its vtysh is asked then).
    pub(in crate::frr) fn of(version: &str) -> Option<Self> {
        let is = |v: &str| version == v || version.starts_with(&format!("{v}."));
        if is("8.4") {
            Some(Dialect::V8_4)
        } else if is("10.3") {
            Some(Dialect::V10_3)
        } else {
            None
        }
    }

    /// The versions whose rules the agent follows, as they read in a message.
    pub(in crate::frr) const KNOWN: &str = "8.4 and 10.3";
}

/// vtysh's node types, as far as it files blocks under them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Node {
    Debug,
    VrfDebug,
    NorthboundDebug,
    RmapDebug,
    ResolverDebug,
    Aaa,
    Keychain,
    KeychainKey,
    Affmap,
    Ip,
    Vrf,
    Interface,
    NhGroup,
    Zebra,
    Rip,
    Ripng,
    Babel,
    Eigrp,
    Bgp,
    Ospf,
    Ospf6,
    Ldp,
    LdpL2vpn,
    Isis,
    Access,
    Prefix,
    AccessIpv6,
    AccessMac,
    PrefixIpv6,
    AsList,
    CommunityList,
    CommunityAlias,
    Rmap,
    Pbrmap,
    Forwarding,
    Protocol,
    Mpls,
    Pw,
    SegmentRouting,
    Vty,
    LinkParams,
    Rpki,
    RpkiVrf,
    Bfd,
    Openfabric,
    Pim,
    Pim6,
}

impl Node {
    /// The node's value in `enum node_type` (lib/command.h) of `dialect`: the dump's order.
    pub(super) fn order(self, dialect: Dialect) -> u8 {
        use Node::*;
        let (v8, v10) = match self {
            Debug => (5, 9),
            VrfDebug => (6, 10),
            NorthboundDebug => (7, 0),
            RmapDebug => (9, 12),
            ResolverDebug => (10, 13),
            Aaa => (11, 14),
            Keychain => (13, 16),
            KeychainKey => (14, 17),
            Affmap => (0, 18),
            Ip => (15, 19),
            Vrf => (16, 20),
            Interface => (17, 21),
            NhGroup => (18, 22),
            Zebra => (19, 23),
            Rip => (21, 24),
            Ripng => (22, 25),
            Babel => (23, 26),
            Eigrp => (24, 27),
            Bgp => (25, 28),
            Ospf => (41, 43),
            Ospf6 => (42, 44),
            Ldp => (43, 45),
            LdpL2vpn => (48, 50),
            Isis => (50, 52),
            Access => (51, 54),
            Prefix => (52, 5),
            AccessIpv6 => (53, 55),
            AccessMac => (54, 56),
            PrefixIpv6 => (55, 6),
            AsList => (56, 57),
            CommunityList => (57, 58),
            CommunityAlias => (58, 59),
            Rmap => (59, 7),
            Pbrmap => (60, 60),
            Forwarding => (63, 63),
            Protocol => (64, 64),
            Mpls => (65, 65),
            Pw => (66, 66),
            SegmentRouting => (67, 67),
            Vty => (79, 84),
            LinkParams => (81, 86),
            Rpki => (83, 88),
            RpkiVrf => (0, 100),
            Bfd => (86, 91),
            Openfabric => (89, 94),
            Pim => (0, 101),
            Pim6 => (0, 102),
        };
        match dialect {
            Dialect::V8_4 => v8,
            Dialect::V10_3 => v10,
        }
    }

    /// `NO_DELIMITER`: node types whose blocks vtysh prints without a `!` after each (one
    /// after the node's blocks).
    pub(super) fn no_delimiter(self) -> bool {
        use Node::*;
        matches!(
            self,
            Affmap
                | Access
                | Prefix
                | Ip
                | AsList
                | CommunityList
                | CommunityAlias
                | AccessIpv6
                | AccessMac
                | PrefixIpv6
                | Forwarding
                | Debug
                | Aaa
                | VrfDebug
                | NorthboundDebug
                | RmapDebug
                | ResolverDebug
                | Mpls
                | KeychainKey
        )
    }
}

/// A top-level line's node by its first words, tried in vtysh's order (the first prefix that
/// matches wins: `router ospf6` is filed under `router ospf`, as vtysh does), with the one
/// dialect that has it when not both.
pub(super) const HEADERS: [(&str, Node, Option<Dialect>); 53] = {
    use Dialect::{V8_4, V10_3};
    use Node::*;
    [
        ("interface", Interface, None),
        ("pseudowire", Pw, None),
        ("vrf", Vrf, None),
        ("nexthop-group", NhGroup, None),
        ("router-id", Zebra, None),
        ("router rip", Rip, None),
        ("router ripng", Ripng, None),
        ("router eigrp", Eigrp, None),
        ("router babel", Babel, None),
        ("router ospf", Ospf, None),
        ("router ospf6", Ospf6, None),
        ("mpls ldp", Ldp, None),
        ("l2vpn", LdpL2vpn, None),
        ("router bgp", Bgp, None),
        ("router isis", Isis, None),
        ("router openfabric", Openfabric, None),
        ("affinity-map", Affmap, Some(V10_3)),
        ("route-map", Rmap, None),
        ("no route-map", Rmap, None),
        ("pbr-map", Pbrmap, None),
        ("access-list", Access, None),
        ("ipv6 access-list", AccessIpv6, None),
        ("mac access-list", AccessMac, None),
        ("ip prefix-list", Prefix, None),
        ("ipv6 prefix-list", PrefixIpv6, None),
        ("bgp as-path access-list", AsList, None),
        ("bgp community-list", CommunityList, None),
        ("bgp extcommunity-list", CommunityList, None),
        ("bgp large-community-list", CommunityList, None),
        ("bgp community alias", CommunityAlias, None),
        ("ip route", Ip, None),
        ("ipv6 route", Ip, None),
        ("key", Keychain, None),
        ("line", Vty, None),
        ("ipv6 forwarding", Forwarding, None),
        ("ip forwarding", Forwarding, None),
        ("debug vrf", VrfDebug, None),
        ("debug northbound", NorthboundDebug, Some(V8_4)),
        ("debug route-map", RmapDebug, None),
        ("debug resolver", ResolverDebug, None),
        ("debug", Debug, None),
        ("password", Aaa, None),
        ("enable password", Aaa, None),
        ("ip protocol", Protocol, None),
        ("ipv6 protocol", Protocol, None),
        ("ip nht", Protocol, None),
        ("ipv6 nht", Protocol, None),
        ("mpls", Mpls, None),
        ("segment-routing", SegmentRouting, None),
        ("bfd", Bfd, None),
        ("rpki", Rpki, None),
        ("router pim", Pim, Some(V10_3)),
        ("router pim6", Pim6, Some(V10_3)),
    ]
};

/// Top-level lines vtysh keeps once among the top lines (FRR 8.4; 10.3 keeps every `service `
/// and `no service ` line once instead of the three cputime ones).
const UNIQUE_TOP: [&str; 12] = [
    "log",
    "hostname",
    "domainname",
    "allow-reserved-ranges",
    "frr",
    "agentx",
    "no log",
    "no ip prefix-list",
    "no ipv6 prefix-list",
    "service cputime-stats",
    "no service cputime-stats",
    "service cputime-warning",
];

pub(super) fn unique_top(dialect: Dialect, line: &str) -> bool {
    let common = &UNIQUE_TOP[..9];
    common.iter().any(|p| line.starts_with(p))
        || match dialect {
            Dialect::V8_4 => UNIQUE_TOP[9..].iter().any(|p| line.starts_with(p)),
            Dialect::V10_3 => line.starts_with("service ") || line.starts_with("no service "),
        }
}
