//! Merge: the daemons' own configs (each daemon's `write terminal`) joined into the one text
//! vtysh's `show running-config` prints, by the rules of `vtysh/vtysh_config.c`
//! (`vtysh_config_parse_line`, `vtysh_config_dump`) of the FRR version the daemons run
//! ([`Dialect`]: FRR 8.4 or 10.3), so that reading the daemons' vty sockets directly gives the
//! diff the same view as vtysh does.
//!
//! vtysh files each top-level line under a node type chosen by its first words (`vrf` under the
//! VRF node, `router bgp` under BGP, `ip prefix-list` under the prefix node, ...); a header seen
//! again (from another daemon) is the same block; indented lines join the block opened last.
//! The dump prints the top-level lines first, then the blocks by node type in FRR's
//! `enum node_type` order, each node type's blocks in the order they were first seen. What
//! vtysh adds of its own (its `hostname` when the daemons show none or another one,
//! `service integrated-vtysh-config`, `username` lines) is not the daemons' config and is not
//! added here.
//!
//! What FRR 10.3 changed: `enum node_type` puts prefix lists and route maps first (before the
//! VRFs, where 8.4 has them after `router bgp`), mgmtd shows the route maps, prefix lists and
//! VRFs it holds beside the daemons (the same blocks, joined), `affinity-map`, `router pim` and
//! `router pim6` open blocks, `rpki` nests inside a `vrf`, a nexthop group keeps its lines in
//! order (`resilient` first), `service ...` lines are kept once, `debug northbound` is a plain
//! debug line, and an interface block without lines is left out.

use std::collections::BTreeMap;

mod rules;

pub(super) use rules::Dialect;
use rules::{HEADERS, Node, unique_top};

/// One config block: its header, its lines, its nested blocks (a key chain's keys), its exit.
#[derive(Debug)]
struct Block {
    name: String,
    lines: Vec<String>,
    nested: Nodes,
    exit: Option<String>,
    /// The node it is in now (an interface's `link-params` moves it and back).
    node: Node,
    /// The block it is nested in (a key's key chain).
    parent: Option<usize>,
}

/// Blocks by node type in the dump's order (the node type they were filed under, indices into
/// [`Merge::blocks`]), each node's in the order first seen.
#[derive(Debug, Default)]
struct Nodes(BTreeMap<u8, (Node, Vec<usize>)>);

/// The daemons' texts as vtysh joins them.
#[derive(Debug, Default)]
pub(super) struct Merge {
    dialect: Dialect,
    top: Vec<String>,
    nodes: Nodes,
    blocks: Vec<Block>,
    /// The block indented lines go to: the one opened last, if any.
    open: Option<usize>,
}

impl Merge {
    /// An empty text joined by `dialect`'s rules.
    pub(super) fn new(dialect: Dialect) -> Self {
        Self {
            dialect,
            ..Self::default()
        }
    }

    /// Takes one daemon's `write terminal` text, after those of the daemons before it in
    /// vtysh's order.
    pub(super) fn add(&mut self, text: &str) {
        for line in text.split('\n') {
            self.line(line);
        }
    }

    /// The block `name` under `node` (of `parent`'s nested blocks, or the top ones), created
    /// when new.
    fn get(&mut self, parent: Option<usize>, node: Node, name: &str) -> usize {
        let order = node.order(self.dialect);
        let nodes = match parent {
            Some(p) => &self.blocks[p].nested,
            None => &self.nodes,
        };
        if let Some(&i) = nodes
            .0
            .get(&order)
            .and_then(|(_, ids)| ids.iter().find(|&&i| self.blocks[i].name == name))
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
        nodes.0.entry(order).or_insert((node, Vec::new())).1.push(i);
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
                } else if let Some(&(_, node, _)) = HEADERS.iter().find(|(p, _, only)| {
                    only.is_none_or(|d| d == self.dialect) && line.starts_with(p)
                }) {
                    self.open = Some(self.get(None, node, line));
                } else {
                    if unique_top(self.dialect, line) {
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
        if node == Node::Keychain && line.starts_with(" key") {
            self.open = Some(self.get(Some(open), Node::KeychainKey, line));
            return;
        }
        let v10 = self.dialect == Dialect::V10_3;
        let b = &mut self.blocks[open];
        if node == Node::KeychainKey {
            if line.starts_with(" exit") {
                add_unique_end(&mut b.lines, line);
                self.open = b.parent;
            } else {
                add_unique_sorted(&mut b.lines, line);
            }
        } else if line.starts_with(" link-params") {
            b.lines.push(line.to_string());
            b.node = Node::LinkParams;
        } else if line.starts_with(" ip multicast boundary")
            || line.starts_with(" ip igmp query-interval")
        {
            add_unique_end(&mut b.lines, line);
        } else if node == Node::LinkParams && line.starts_with(" exit") {
            b.lines.push(line.to_string());
            b.node = Node::Interface;
        } else if line.starts_with(" vrrp") || line.starts_with(" no vrrp") {
            b.lines.push(line.to_string());
        } else if line.starts_with(" ip mroute") {
            add_unique_end(&mut b.lines, line);
        } else if v10 && node == Node::Vrf && line.starts_with(" rpki") {
            b.lines.push(line.to_string());
            b.node = Node::RpkiVrf;
        } else if matches!(node, Node::Rmap | Node::Interface | Node::Vty)
            || (!v10 && node == Node::NhGroup)
        {
            add_unique_sorted(&mut b.lines, line);
        } else if node == Node::RpkiVrf && line.starts_with("  exit") {
            b.lines.push(line.to_string());
            b.node = Node::Vrf;
        } else if node == Node::NhGroup && line.starts_with(" resilient") {
            b.lines.insert(0, line.to_string());
        } else if node == Node::NhGroup {
            add_unique_end(&mut b.lines, line);
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
        for (node, ids) in nodes.0.values() {
            for &i in ids {
                let b = &self.blocks[i];
                let empty = match self.dialect {
                    Dialect::V8_4 => b.lines.len() == 1 && b.lines[0] == "exit",
                    Dialect::V10_3 => b.lines.is_empty(),
                };
                if b.node == Node::Interface && empty {
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
                if !node.no_delimiter() {
                    push(out, "!");
                }
            }
            if !nested && node.no_delimiter() {
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
