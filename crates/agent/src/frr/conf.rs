//! Conf: a config text (a rendered `frr.conf` or FRR's running config) read as FRR's contexts,
//! the way `frr-reload.py` reads it: a context is a header line and the lines indented under it
//! (`router bgp 65000 vrf vr.a`, its `address-family ipv4 unicast` as a nested context,
//! `route-map rm_a_export permit 10`, `vrf vr.a`); every other line at the top is a context of
//! its own (`ip prefix-list ...`). Contexts with the same header are one context (the base's and
//! the managed `router bgp ASN`). The diff (`super::diff`) compares two of them; the defaults
//! (`super::defaults`) read FRR's version and profile from the running one.

use std::collections::{HashMap, HashSet};

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

    /// The contexts, in the order of their first header (or top-level line).
    pub(super) fn order(&self) -> &[Vec<String>] {
        &self.order
    }

    /// Whether the context `key` was opened by a header (and is left with an exit line).
    pub(super) fn is_block(&self, key: &[String]) -> bool {
        self.blocks.contains(key)
    }

    /// Whether `key` is a context of the text.
    pub(super) fn has(&self, key: &[String]) -> bool {
        self.lines.contains_key(key)
    }

    /// The lines of the context `key` (none when it is no context of the text).
    pub(super) fn lines_of(&self, key: &[String]) -> &[String] {
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
