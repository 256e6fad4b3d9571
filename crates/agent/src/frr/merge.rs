//! Merge: the daemons' own configs (each daemon's `write terminal`) joined into the one text
//! vtysh's `show running-config` prints, by the rules of FRR 8.4's `vtysh/vtysh_config.c`
//! (`vtysh_config_parse_line`, `vtysh_config_dump`), so that reading the daemons' vty sockets
//! directly gives the diff the same view as vtysh does.
//!
//! vtysh files each top-level line under a node type chosen by its first words (`vrf` under the
//! VRF node, `router bgp` under BGP, `ip prefix-list` under the prefix node, ...); a header seen
//! again (from another daemon) is the same block; indented lines join the block opened last.
//! The dump prints the top-level lines first, then the blocks by node type in FRR's
//! `enum node_type` order, each node type's blocks in the order they were first seen. What
//! vtysh adds of its own (its `hostname` when the daemons show none or another one,
//! `service integrated-vtysh-config`, `username` lines) is not the daemons' config and is not
//! added here.

use std::collections::BTreeMap;

// FRR 8.4's `enum node_type` (lib/command.h) for the nodes vtysh files blocks under.
const DEBUG: u8 = 5;
const VRF_DEBUG: u8 = 6;
const NORTHBOUND_DEBUG: u8 = 7;
const RMAP_DEBUG: u8 = 9;
const RESOLVER_DEBUG: u8 = 10;
const AAA: u8 = 11;
const KEYCHAIN: u8 = 13;
const KEYCHAIN_KEY: u8 = 14;
const IP: u8 = 15;
const VRF: u8 = 16;
const INTERFACE: u8 = 17;
const NH_GROUP: u8 = 18;
const ZEBRA: u8 = 19;
const RIP: u8 = 21;
const RIPNG: u8 = 22;
const BABEL: u8 = 23;
const EIGRP: u8 = 24;
const BGP: u8 = 25;
const OSPF: u8 = 41;
const OSPF6: u8 = 42;
const LDP: u8 = 43;
const LDP_L2VPN: u8 = 48;
const ISIS: u8 = 50;
const ACCESS: u8 = 51;
const PREFIX: u8 = 52;
const ACCESS_IPV6: u8 = 53;
const ACCESS_MAC: u8 = 54;
const PREFIX_IPV6: u8 = 55;
const AS_LIST: u8 = 56;
const COMMUNITY_LIST: u8 = 57;
const COMMUNITY_ALIAS: u8 = 58;
const RMAP: u8 = 59;
const PBRMAP: u8 = 60;
const FORWARDING: u8 = 63;
const PROTOCOL: u8 = 64;
const MPLS: u8 = 65;
const PW: u8 = 66;
const SEGMENT_ROUTING: u8 = 67;
const VTY: u8 = 79;
const LINK_PARAMS: u8 = 81;
const RPKI: u8 = 83;
const BFD: u8 = 86;
const OPENFABRIC: u8 = 89;

/// A top-level line's node by its first words, tried in vtysh's order (the first prefix that
/// matches wins: `router ospf6` is filed under `router ospf`, as vtysh does).
const HEADERS: [(&str, u8); 50] = [
    ("interface", INTERFACE),
    ("pseudowire", PW),
    ("vrf", VRF),
    ("nexthop-group", NH_GROUP),
    ("router-id", ZEBRA),
    ("router rip", RIP),
    ("router ripng", RIPNG),
    ("router eigrp", EIGRP),
    ("router babel", BABEL),
    ("router ospf", OSPF),
    ("router ospf6", OSPF6),
    ("mpls ldp", LDP),
    ("l2vpn", LDP_L2VPN),
    ("router bgp", BGP),
    ("router isis", ISIS),
    ("router openfabric", OPENFABRIC),
    ("route-map", RMAP),
    ("no route-map", RMAP),
    ("pbr-map", PBRMAP),
    ("access-list", ACCESS),
    ("ipv6 access-list", ACCESS_IPV6),
    ("mac access-list", ACCESS_MAC),
    ("ip prefix-list", PREFIX),
    ("ipv6 prefix-list", PREFIX_IPV6),
    ("bgp as-path access-list", AS_LIST),
    ("bgp community-list", COMMUNITY_LIST),
    ("bgp extcommunity-list", COMMUNITY_LIST),
    ("bgp large-community-list", COMMUNITY_LIST),
    ("bgp community alias", COMMUNITY_ALIAS),
    ("ip route", IP),
    ("ipv6 route", IP),
    ("key", KEYCHAIN),
    ("line", VTY),
    ("ipv6 forwarding", FORWARDING),
    ("ip forwarding", FORWARDING),
    ("debug vrf", VRF_DEBUG),
    ("debug northbound", NORTHBOUND_DEBUG),
    ("debug route-map", RMAP_DEBUG),
    ("debug resolver", RESOLVER_DEBUG),
    ("debug", DEBUG),
    ("password", AAA),
    ("enable password", AAA),
    ("ip protocol", PROTOCOL),
    ("ipv6 protocol", PROTOCOL),
    ("ip nht", PROTOCOL),
    ("ipv6 nht", PROTOCOL),
    ("mpls", MPLS),
    ("segment-routing", SEGMENT_ROUTING),
    ("bfd", BFD),
    ("rpki", RPKI),
];

/// Top-level lines vtysh keeps once among the top lines.
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

/// Node types whose blocks vtysh prints without a `!` after each (one after the node's blocks).
fn no_delimiter(node: u8) -> bool {
    matches!(
        node,
        ACCESS
            | PREFIX
            | IP
            | AS_LIST
            | COMMUNITY_LIST
            | COMMUNITY_ALIAS
            | ACCESS_IPV6
            | ACCESS_MAC
            | PREFIX_IPV6
            | FORWARDING
            | DEBUG
            | AAA
            | VRF_DEBUG
            | NORTHBOUND_DEBUG
            | RMAP_DEBUG
            | RESOLVER_DEBUG
            | MPLS
            | KEYCHAIN_KEY
    )
}

/// One config block: its header, its lines, its nested blocks (a key chain's keys), its exit.
#[derive(Debug)]
struct Block {
    name: String,
    lines: Vec<String>,
    nested: Nodes,
    exit: Option<String>,
    /// The node it is in now (an interface's `link-params` moves it and back).
    node: u8,
    /// The block it is nested in (a key's key chain).
    parent: Option<usize>,
}

/// Blocks by node type (indices into [`Merge::blocks`]), each node's in the order first seen.
#[derive(Debug, Default)]
struct Nodes(BTreeMap<u8, Vec<usize>>);

/// The daemons' texts as vtysh joins them.
#[derive(Debug, Default)]
pub(super) struct Merge {
    top: Vec<String>,
    nodes: Nodes,
    blocks: Vec<Block>,
    /// The block indented lines go to: the one opened last, if any.
    open: Option<usize>,
}

impl Merge {
    /// Takes one daemon's `write terminal` text, after those of the daemons before it in
    /// vtysh's order.
    pub(super) fn add(&mut self, text: &str) {
        for line in text.split('\n') {
            self.line(line);
        }
    }

    /// The block `name` under `node` (of `parent`'s nested blocks, or the top ones), created
    /// when new.
    fn get(&mut self, parent: Option<usize>, node: u8, name: &str) -> usize {
        let nodes = match parent {
            Some(p) => &self.blocks[p].nested,
            None => &self.nodes,
        };
        if let Some(&i) = nodes
            .0
            .get(&node)
            .and_then(|ids| ids.iter().find(|&&i| self.blocks[i].name == name))
        {
            return i;
        }
        let i = self.blocks.len();
        self.blocks.push(Block {
            name: name.to_string(),
            lines: Vec::new(),
            nested: Nodes::default(),
            exit: None,
            node,
            parent,
        });
        let nodes = match parent {
            Some(p) => &mut self.blocks[p].nested,
            None => &mut self.nodes,
        };
        nodes.0.entry(node).or_default().push(i);
        i
    }

    /// vtysh's `vtysh_config_parse_line`.
    fn line(&mut self, line: &str) {
        match line.as_bytes().first() {
            None | Some(b'!' | b'#') => {}
            Some(b' ') => self.indented(line),
            Some(_) => {
                if line.starts_with("exit") {
                    if let Some(o) = self.open {
                        self.blocks[o].exit = Some(line.to_string());
                    }
                } else if let Some(&(_, node)) = HEADERS.iter().find(|(p, _)| line.starts_with(p)) {
                    self.open = Some(self.get(None, node, line));
                } else {
                    if UNIQUE_TOP.iter().any(|p| line.starts_with(p)) {
                        // vtysh's top list has no sort function: a new line goes last.
                        if !self.top.iter().any(|l| l == line) {
                            self.top.push(line.to_string());
                        }
                    } else {
                        self.top.push(line.to_string());
                    }
                    self.open = None;
                }
            }
        }
    }

    fn indented(&mut self, line: &str) {
        let Some(open) = self.open else {
            self.top.push(line.to_string());
            return;
        };
        let node = self.blocks[open].node;
        if node == KEYCHAIN && line.starts_with(" key") {
            self.open = Some(self.get(Some(open), KEYCHAIN_KEY, line));
            return;
        }
        let b = &mut self.blocks[open];
        if node == KEYCHAIN_KEY {
            if line.starts_with(" exit") {
                add_unique_end(&mut b.lines, line);
                self.open = b.parent;
            } else {
                add_unique_sorted(&mut b.lines, line);
            }
        } else if line.starts_with(" link-params") {
            b.lines.push(line.to_string());
            b.node = LINK_PARAMS;
        } else if line.starts_with(" ip multicast boundary")
            || line.starts_with(" ip igmp query-interval")
        {
            add_unique_end(&mut b.lines, line);
        } else if node == LINK_PARAMS && line.starts_with(" exit") {
            b.lines.push(line.to_string());
            b.node = INTERFACE;
        } else if line.starts_with(" vrrp") || line.starts_with(" no vrrp") {
            b.lines.push(line.to_string());
        } else if line.starts_with(" ip mroute") {
            add_unique_end(&mut b.lines, line);
        } else if matches!(node, RMAP | INTERFACE | VTY | NH_GROUP) {
            add_unique_sorted(&mut b.lines, line);
        } else {
            b.lines.push(line.to_string());
        }
    }

    /// vtysh's `vtysh_config_dump` followed by the `end` of `show running-config no-header`.
    pub(super) fn text(&self) -> String {
        let mut out = String::new();
        for l in &self.top {
            push(&mut out, l);
        }
        push(&mut out, "!");
        self.dump(&self.nodes, &mut out, false);
        push(&mut out, "end");
        out
    }

    fn dump(&self, nodes: &Nodes, out: &mut String, nested: bool) {
        for (&node, ids) in &nodes.0 {
            for &i in ids {
                let b = &self.blocks[i];
                if b.node == INTERFACE && b.lines.len() == 1 && b.lines[0] == "exit" {
                    continue;
                }
                push(out, &b.name);
                for l in &b.lines {
                    push(out, l);
                }
                self.dump(&b.nested, out, true);
                if let Some(exit) = &b.exit {
                    push(out, exit);
                }
                if !no_delimiter(node) {
                    push(out, "!");
                }
            }
            if !nested && no_delimiter(node) {
                push(out, "!");
            }
        }
    }
}

fn push(out: &mut String, line: &str) {
    out.push_str(line);
    out.push('\n');
}

/// `config_add_line_uniq` on a block's lines (a list with a sort function): once, inserted
/// before the first line that sorts after it.
fn add_unique_sorted(lines: &mut Vec<String>, line: &str) {
    if lines.iter().any(|l| l == line) {
        return;
    }
    let at = lines
        .iter()
        .position(|l| line < l.as_str())
        .unwrap_or(lines.len());
    lines.insert(at, line.to_string());
}

/// `config_add_line_uniq_end`: once, moved to the end when already there.
fn add_unique_end(lines: &mut Vec<String>, line: &str) {
    if let Some(at) = lines.iter().position(|l| l == line) {
        lines.remove(at);
    }
    lines.push(line.to_string());
}

#[cfg(test)]
mod tests;
