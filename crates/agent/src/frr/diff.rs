//! Diff: a config text read as FRR's contexts, and the `vtysh -f` script that turns FRR's
//! running config into the rendered one.
//!
//! Both sides are read the same way `frr-reload.py` reads them: a context is a header line and
//! the lines indented under it (`router bgp 65000 vrf vr.a`, its `address-family ipv4 unicast`
//! as a nested context, `route-map rm_a_export permit 10`, `vrf vr.a`); every other line at the
//! top is a context of its own (`ip prefix-list ...`). Lines within a context are compared as a
//! set, as `frr-reload.py` does. Contexts with the same header are one context (the base's and
//! the managed `router bgp ASN`).
//!
//! The script deletes first (lines within contexts, then whole contexts, the last-written first)
//! and adds after, each context entered and left explicitly, so a script is the same kind of file
//! as `frr.conf` and `vtysh -f` reads it like one.
//!
//! What FRR's running config shows differently from the text loaded, and the diff allows for:
//! - `frr version`, `frr defaults` are not configurable; `hostname` lines in FRR's config that the
//!   file does not name (and on FRR 10 every `hostname` line: vtysh keeps it for itself and
//!   sends it to no daemon) and `username` lines are vtysh's own (`no username ...` is no command a
//!   daemon knows). `no ip forwarding` / `no ipv6 forwarding` (FRR shows the kernel's forwarding
//!   only when it is off) are deleted, which turns forwarding on, as `frr-reload.py` does: a
//!   node that routes tenant VRFs must forward.
//! - `neighbor X activate` under `address-family ipv4 unicast` is hidden while the instance has
//!   `bgp default ipv4-unicast` (FRR's default): it counts as there when FRR has the instance
//!   without `no bgp default ipv4-unicast`.
//! - A line equal to a default of FRR's `frr defaults` profile is accepted and never shown: the
//!   defaults listed per FRR version ([`super::defaults`]) count as there.
//!
//! A BGP neighbour or peer group is deleted by its identity line alone, and a changed AS is
//! replaced, not deleted first (`neighbors`).

use std::collections::{HashMap, HashSet};

use super::defaults::Defaults;

mod neighbors;

/// A config text as contexts, in the order of their first header.
#[derive(Debug, Default)]
pub(super) struct Conf {
    order: Vec<Vec<String>>,
    lines: HashMap<Vec<String>, Vec<String>>,
    /// The contexts opened by a header (left with an exit line), as opposed to top-level lines.
    blocks: HashSet<Vec<String>>,
}

/// Lines that end a context at their indentation.
const EXITS: [&str; 5] = ["exit", "exit-vrf", "exit-address-family", "exit-vni", "end"];

impl Conf {
    /// Reads `text` (a rendered `frr.conf` or `show running-config`).
    pub(super) fn parse(text: &str) -> Self {
        let lines: Vec<(usize, &str)> = text
            .lines()
            .map(|l| l.trim_end())
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('!'))
            .map(|l| (l.len() - l.trim_start().len(), l.trim_start()))
            .filter(|(_, l)| !matches!(*l, "Building configuration..." | "Current configuration:"))
            .collect();
        let mut conf = Conf::default();
        // The open contexts: the indentation of each header, and the headers (the path of the
        // lines under them), kept side by side so that a line costs no copy of its path.
        let mut open: Vec<usize> = Vec::new();
        let mut path: Vec<String> = Vec::new();
        for (i, &(indent, line)) in lines.iter().enumerate() {
            while open
                .last()
                .is_some_and(|d| *d >= indent && !EXITS.contains(&line))
            {
                open.pop();
                path.pop();
            }
            if EXITS.contains(&line) {
                if open.last().is_some_and(|d| *d == indent) || indent == 0 {
                    open.pop();
                    path.pop();
                }
                if indent == 0 {
                    open.clear();
                    path.clear();
                }
                continue;
            }
            let header = lines.get(i + 1).is_some_and(|&(next, text)| {
                next > indent || (next == indent && EXITS.contains(&text) && text != "end")
            });
            if header {
                path.push(line.to_string());
                conf.open(&path);
                if !conf.blocks.contains(&path) {
                    conf.blocks.insert(path.clone());
                }
                open.push(indent);
            } else if path.is_empty() {
                conf.open(&[line.to_string()]);
            } else {
                conf.push(&path, line);
            }
        }
        conf
    }

    /// Makes `key` a context (in the order of first sight), with no lines yet.
    fn open(&mut self, key: &[String]) {
        if !self.lines.contains_key(key) {
            self.order.push(key.to_vec());
            self.lines.insert(key.to_vec(), Vec::new());
        }
    }

    /// Adds `line` to the context `key` (made one when new).
    fn push(&mut self, key: &[String], line: &str) {
        match self.lines.get_mut(key) {
            Some(lines) => lines.push(line.to_string()),
            None => {
                self.order.push(key.to_vec());
                self.lines.insert(key.to_vec(), vec![line.to_string()]);
            }
        }
    }

    fn has(&self, key: &[String]) -> bool {
        self.lines.contains_key(key)
    }

    fn lines_of(&self, key: &[String]) -> &[String] {
        self.lines.get(key).map_or(&[], Vec::as_slice)
    }

    /// The top-level lines that open no context (`frr version 10.3`, `ip prefix-list ...`).
    pub(super) fn top_lines(&self) -> impl Iterator<Item = &str> {
        self.order
            .iter()
            .filter(|key| key.len() == 1 && !self.blocks.contains(*key))
            .map(|key| key[0].as_str())
    }
}

/// A config text as the agent's diff reads it: each context in the order of its first header,
/// as `(headers, opened by a header with an exit, lines)`. Two texts that read the same give
/// every diff the same script (what the vty-socket read of FRR's running config is tested
/// against vtysh's with).
pub fn read_as_diff(text: &str) -> Vec<(Vec<String>, bool, Vec<String>)> {
    let conf = Conf::parse(text);
    conf.order
        .iter()
        .map(|key| {
            (
                key.clone(),
                conf.blocks.contains(key),
                conf.lines_of(key).to_vec(),
            )
        })
        .collect()
}

/// Top-level lines FRR shows that are no config of the file: never deleted.
fn foreign(line: &str) -> bool {
    [
        "frr version",
        "frr defaults",
        "hostname ",
        "username ",
        "service integrated-vtysh-config",
    ]
    .iter()
    .any(|p| line.starts_with(p))
        || matches!(line, "ip forwarding" | "ipv6 forwarding")
}

/// Whether `line` of the rendered context `key` is one FRR does not show although it has it
/// (see the module's doc): a listed default of FRR's version and profile, or an IPv4
/// `activate` of an instance with `bgp default ipv4-unicast`.
fn hidden(running: &Conf, defaults: &Defaults, key: &[String], line: &str) -> bool {
    if defaults.hidden(key, line) {
        return true;
    }
    let [instance, af] = key else { return false };
    af == "address-family ipv4 unicast"
        && line.starts_with("neighbor ")
        && line.ends_with(" activate")
        && running.has(std::slice::from_ref(instance))
        && !running
            .lines_of(std::slice::from_ref(instance))
            .iter()
            .any(|l| l == "no bgp default ipv4-unicast")
}

/// The line that undoes `line` inside its context: `no LINE`, or `LINE` without its `no`.
fn undo(line: &str) -> String {
    match line.strip_prefix("no ") {
        Some(rest) => rest.to_string(),
        None => format!("no {line}"),
    }
}

/// The line that leaves a context opened by `header`.
fn exit_of(header: &str) -> &'static str {
    if header.starts_with("vrf ") {
        "exit-vrf"
    } else if header.starts_with("address-family ") {
        "exit-address-family"
    } else if header.starts_with("vni ") {
        "exit-vni"
    } else {
        "exit"
    }
}

/// Appends `lines` inside the context `key` of `conf` (entered and left) to `out`; a top-level
/// line is appended as it is.
fn within(out: &mut Vec<String>, conf: &Conf, key: &[String], lines: &[String]) {
    for (depth, header) in key.iter().enumerate() {
        out.push(format!("{}{header}", " ".repeat(depth)));
    }
    for line in lines {
        out.push(format!("{}{line}", " ".repeat(key.len())));
    }
    if !conf.blocks.contains(key) {
        return;
    }
    for (depth, header) in key.iter().enumerate().rev() {
        out.push(format!("{}{}", " ".repeat(depth), exit_of(header)));
    }
}

/// The `vtysh -f` script that makes `running` (FRR's running config) hold `new` (the rendered
/// text); empty when FRR already runs it. Lines FRR does not show although it has them (see
/// [`hidden`]) are no difference.
pub(super) fn script(new: &Conf, running: &Conf) -> Vec<String> {
    let defaults = Defaults::of(running);
    let (mut drop, mut add) = (Vec::new(), Vec::new());
    // Line deletions per context, with the context's depth: the deepest go first, as a `no`
    // line of a context takes its nested lines with it (`no neighbor X interface ...` removes
    // X's `address-family` lines, whose own `no` would then fail).
    let mut deletes: Vec<(usize, Vec<String>)> = Vec::new();
    for key in &running.order {
        let lines = running.lines_of(key);
        let mut chunk = Vec::new();
        if new.has(key) {
            let keep: HashSet<&String> = new.lines_of(key).iter().collect();
            let gone: Vec<&String> = lines.iter().filter(|l| !keep.contains(l)).collect();
            let gone: Vec<String> = neighbors::deletions(&gone, new.lines_of(key))
                .into_iter()
                .map(|l| undo(l))
                .collect();
            if !gone.is_empty() {
                within(&mut chunk, running, key, &gone);
            }
        } else if key.len() == 1 && !foreign(&key[0]) {
            // A whole context (or a top-level line) FRR has and the file does not.
            drop.push(undo(&key[0]));
        } else if key.len() > 1 && new.has(&key[..key.len() - 1]) && !lines.is_empty() {
            // A nested context of a kept one: its lines go one by one.
            let gone: Vec<String> = lines.iter().map(|l| undo(l)).collect();
            within(&mut chunk, running, key, &gone);
        }
        if !chunk.is_empty() {
            deletes.push((key.len(), chunk));
        }
    }
    deletes.sort_by_key(|(depth, _)| std::cmp::Reverse(*depth));
    let mut delete: Vec<String> = deletes.into_iter().flat_map(|(_, c)| c).collect();
    for key in &new.order {
        if key.len() == 1
            && foreign(&key[0])
            && !(key[0].starts_with("hostname ") && defaults.hostname_is_config())
        {
            continue;
        }
        let lines = new.lines_of(key);
        if !running.has(key) {
            within(&mut add, new, key, lines);
            continue;
        }
        let have: HashSet<&String> = running.lines_of(key).iter().collect();
        let missing: Vec<String> = lines
            .iter()
            .filter(|l| !have.contains(l) && !hidden(running, &defaults, key, l))
            .cloned()
            .collect();
        if !missing.is_empty() {
            within(&mut add, new, key, &missing);
        }
    }
    drop.reverse();
    delete.extend(drop);
    delete.extend(add);
    delete
}

#[cfg(test)]
mod tests;
