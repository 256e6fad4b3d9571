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
//!   file does not name and `username` lines are vtysh's own (`no username ...` is no command a
//!   daemon knows). `no ip forwarding` / `no ipv6 forwarding` (FRR shows the kernel's forwarding
//!   only when it is off) are deleted, which turns forwarding on, as `frr-reload.py` does: a
//!   node that routes tenant VRFs must forward.
//! - `neighbor X activate` under `address-family ipv4 unicast` is hidden while the instance has
//!   `bgp default ipv4-unicast` (FRR's default): it counts as there when FRR has the instance
//!   without `no bgp default ipv4-unicast`.

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
        // The open contexts: (indentation of the header, header).
        let mut open: Vec<(usize, String)> = Vec::new();
        for (i, &(indent, line)) in lines.iter().enumerate() {
            while open
                .last()
                .is_some_and(|(d, _)| *d >= indent && !EXITS.contains(&line))
            {
                open.pop();
            }
            if EXITS.contains(&line) {
                if open.last().is_some_and(|(d, _)| *d == indent) || indent == 0 {
                    open.pop();
                }
                if indent == 0 {
                    open.clear();
                }
                continue;
            }
            let header = lines.get(i + 1).is_some_and(|&(next, text)| {
                next > indent || (next == indent && EXITS.contains(&text) && text != "end")
            });
            let path: Vec<String> = open.iter().map(|(_, h)| h.clone()).collect();
            if header {
                let mut key = path;
                key.push(line.to_string());
                conf.context(&key);
                conf.blocks.insert(key);
                open.push((indent, line.to_string()));
            } else if path.is_empty() {
                conf.context(&[line.to_string()]);
            } else {
                conf.context(&path).push(line.to_string());
            }
        }
        conf
    }

    fn context(&mut self, key: &[String]) -> &mut Vec<String> {
        if !self.lines.contains_key(key) {
            self.order.push(key.to_vec());
        }
        self.lines.entry(key.to_vec()).or_default()
    }

    fn has(&self, key: &[String]) -> bool {
        self.lines.contains_key(key)
    }

    fn lines_of(&self, key: &[String]) -> &[String] {
        self.lines.get(key).map_or(&[], Vec::as_slice)
    }
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
/// (see the module's doc): an IPv4 `activate` of an instance with `bgp default ipv4-unicast`.
fn hidden(running: &Conf, key: &[String], line: &str) -> bool {
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

/// A line of a context: the headers it is under and the line.
pub(super) type Line = (Vec<String>, String);

/// The `vtysh -f` script that makes `running` (FRR's running config) hold `new` (the rendered
/// text); empty when FRR already runs it.
#[allow(dead_code)] // `sync` uses `script_quiet`; this is the diff's plain shape, kept for its callers.
pub(super) fn script(new: &Conf, running: &Conf) -> Vec<String> {
    script_quiet(new, running, &HashSet::new())
}

/// The lines of `new` that `running` does not show: what [`script`] adds.
pub(super) fn missing(new: &Conf, running: &Conf, quiet: &HashSet<Line>) -> Vec<Line> {
    let mut out = Vec::new();
    for key in &new.order {
        if key.len() == 1 && foreign(&key[0]) && !key[0].starts_with("hostname ") {
            continue;
        }
        let have: HashSet<&String> = running.lines_of(key).iter().collect();
        for line in new.lines_of(key) {
            let item = (key.clone(), line.clone());
            if !have.contains(line) && !hidden(running, key, line) && !quiet.contains(&item) {
                out.push(item);
            }
        }
    }
    out
}

/// [`script`] without the lines of `quiet`: lines FRR accepted and does not show (a default of
/// the `frr defaults` profile, such as `no bgp ebgp-requires-policy` under `datacenter`), which
/// the running config cannot show either way.
pub(super) fn script_quiet(new: &Conf, running: &Conf, quiet: &HashSet<Line>) -> Vec<String> {
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
            let gone: Vec<String> = lines
                .iter()
                .filter(|l| !keep.contains(l))
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
        if key.len() == 1 && foreign(&key[0]) && !key[0].starts_with("hostname ") {
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
            .filter(|l| {
                !have.contains(l)
                    && !hidden(running, key, l)
                    && !quiet.contains(&(key.clone(), l.to_string()))
            })
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
mod tests {
    use super::*;

    const BASE: &str = "frr defaults datacenter\nhostname n1\n!\nrouter bgp 65000\n \
        bgp router-id 192.0.2.1\nexit\n!\n";

    fn managed(community: &str, cidr: &str) -> String {
        format!(
            "{BASE}vrf vr.a\n vni 100\nexit-vrf\n!\n\
             ip prefix-list pl_a_export_10 seq 1 permit {cidr} le 28\n\
             route-map rm_a_export permit 10\n match ip address prefix-list pl_a_export_10\n \
             set community {community}\nexit\n!\nroute-map rm_a_export deny 65535\nexit\n!\n\
             router bgp 65000 vrf vr.a\n bgp router-id 192.0.2.101\n no bgp default ipv4-unicast\n \
             neighbor vv.a interface remote-as internal\n !\n address-family ipv4 unicast\n  \
             neighbor vv.a activate\n  neighbor vv.a route-map rm_a_export in\n \
             exit-address-family\nexit\n!\nrouter bgp 65000\n \
             neighbor vd.a interface remote-as internal\n !\n address-family ipv4 unicast\n  \
             neighbor vd.a activate\n  neighbor vd.a allowas-in origin\n exit-address-family\n\
             exit\n!\n"
        )
    }

    /// What FRR 8.4 shows for `managed(..)` on a node that forwards: its version, vtysh's
    /// hostname, one merged default instance without its hidden `activate`.
    fn running(community: &str, cidr: &str) -> String {
        format!(
            "frr version 8.4.4\nfrr defaults datacenter\nhostname n1\n\
             hostname vm\nusername root nopassword\n!\nvrf vr.a\n vni 100\nexit-vrf\n!\n\
             router bgp 65000\n bgp router-id 192.0.2.1\n \
             neighbor vd.a interface remote-as internal\n !\n address-family ipv4 unicast\n  \
             neighbor vd.a allowas-in origin\n exit-address-family\nexit\n!\n\
             router bgp 65000 vrf vr.a\n bgp router-id 192.0.2.101\n no bgp default ipv4-unicast\n \
             neighbor vv.a interface remote-as internal\n !\n address-family ipv4 unicast\n  \
             neighbor vv.a activate\n  neighbor vv.a route-map rm_a_export in\n \
             exit-address-family\nexit\n!\n\
             ip prefix-list pl_a_export_10 seq 1 permit {cidr} le 28\n!\n\
             route-map rm_a_export permit 10\n match ip address prefix-list pl_a_export_10\n \
             set community {community}\nexit\n!\nroute-map rm_a_export deny 65535\nexit\n!\nend\n"
        )
    }

    fn diff(new: &str, running: &str) -> Vec<String> {
        script(&Conf::parse(new), &Conf::parse(running))
    }

    #[test]
    fn forwarding_that_the_kernel_has_off_is_turned_on_as_frr_reload_does() {
        let new = managed("65000:1", "10.0.0.0/24");
        let running = running("65000:1", "10.0.0.0/24").replace(
            "hostname n1\n",
            "hostname n1\nno ip forwarding\nno ipv6 forwarding\n",
        );
        assert_eq!(diff(&new, &running), ["ipv6 forwarding", "ip forwarding"]);
    }

    #[test]
    fn frr_running_what_was_rendered_needs_no_script() {
        let new = managed("65000:1", "10.0.0.0/24");
        assert_eq!(
            diff(&new, &running("65000:1", "10.0.0.0/24")),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_changed_line_is_deleted_inside_its_context_then_added() {
        let new = managed("65000:2", "10.0.1.0/24");
        let script = diff(&new, &running("65000:1", "10.0.0.0/24"));
        assert_eq!(
            script,
            [
                "route-map rm_a_export permit 10",
                " no set community 65000:1",
                "exit",
                "no ip prefix-list pl_a_export_10 seq 1 permit 10.0.0.0/24 le 28",
                "ip prefix-list pl_a_export_10 seq 1 permit 10.0.1.0/24 le 28",
                "route-map rm_a_export permit 10",
                " set community 65000:2",
                "exit",
            ]
        );
    }

    #[test]
    fn an_ipv4_activate_is_sent_when_the_instance_has_no_default_ipv4_unicast() {
        let new = "router bgp 65000\n no bgp default ipv4-unicast\n neighbor vd.a interface remote-as internal\n \
            address-family ipv4 unicast\n  neighbor vd.a activate\n exit-address-family\nexit\n";
        let running = "router bgp 65000\n no bgp default ipv4-unicast\n neighbor vd.a interface remote-as internal\n\
            exit\n";
        assert_eq!(
            diff(new, running),
            [
                "router bgp 65000",
                " address-family ipv4 unicast",
                "  neighbor vd.a activate",
                " exit-address-family",
                "exit",
            ]
        );
    }

    #[test]
    fn a_removed_vrf_goes_line_by_line_from_kept_contexts_deepest_first_and_whole_contexts_last_written_first()
     {
        let new = "router bgp 65000\n bgp router-id 192.0.2.1\nexit\n";
        let running = "vrf vr.a\n vni 100\nexit-vrf\n!\nip prefix-list pl_a seq 1 permit 10.0.0.0/8\n\
            route-map rm_a permit 10\n set community 65000:1\nexit\n!\n\
            router bgp 65000\n bgp router-id 192.0.2.1\n neighbor vd.a interface remote-as internal\n !\n \
            address-family l2vpn evpn\n  advertise-all-vni\n exit-address-family\nexit\n!\n\
            router bgp 65000 vrf vr.a\n bgp router-id 192.0.2.101\nexit\n";
        assert_eq!(
            diff(new, running),
            [
                "router bgp 65000",
                " address-family l2vpn evpn",
                "  no advertise-all-vni",
                " exit-address-family",
                "exit",
                "router bgp 65000",
                " no neighbor vd.a interface remote-as internal",
                "exit",
                "no router bgp 65000 vrf vr.a",
                "no route-map rm_a permit 10",
                "no ip prefix-list pl_a seq 1 permit 10.0.0.0/8",
                "no vrf vr.a",
            ]
        );
    }

    #[test]
    fn a_no_line_frr_has_and_the_text_lacks_is_undone_by_the_line_itself() {
        let new = "router bgp 65000 vrf vr.a\n bgp router-id 192.0.2.101\nexit\n";
        let running = "router bgp 65000 vrf vr.a\n bgp router-id 192.0.2.101\n no bgp suppress-duplicates\nexit\n";
        assert_eq!(
            diff(new, running),
            [
                "router bgp 65000 vrf vr.a",
                " bgp suppress-duplicates",
                "exit"
            ]
        );
    }

    #[test]
    fn a_new_vrf_is_sent_as_whole_contexts_each_left_explicitly() {
        let new = "vrf vr.b\n vni 200\nexit-vrf\n!\nroute-map rm_b deny 65535\nexit\n";
        assert_eq!(
            diff(new, "frr version 8.4.4\n"),
            [
                "vrf vr.b",
                " vni 200",
                "exit-vrf",
                "route-map rm_b deny 65535",
                "exit"
            ]
        );
    }

    #[test]
    fn a_removed_neighbors_family_lines_go_before_the_neighbor_which_takes_them_with_it() {
        let new = "router bgp 65000\n bgp router-id 192.0.2.1\nexit\n";
        let running = "router bgp 65000\n bgp router-id 192.0.2.1\n neighbor vd.a interface remote-as internal\n \
            !\n address-family ipv6 unicast\n  neighbor vd.a activate\n exit-address-family\nexit\n";
        assert_eq!(
            diff(new, running),
            [
                "router bgp 65000",
                " address-family ipv6 unicast",
                "  no neighbor vd.a activate",
                " exit-address-family",
                "exit",
                "router bgp 65000",
                " no neighbor vd.a interface remote-as internal",
                "exit",
            ]
        );
    }

    #[test]
    fn a_quiet_line_frr_does_not_show_is_no_difference_and_others_still_are() {
        let new = Conf::parse(
            "router bgp 65000\n no bgp ebgp-requires-policy\n neighbor 192.0.2.2 remote-as 65100\nexit\n",
        );
        let running = Conf::parse("router bgp 65000\nexit\n");
        let key = vec!["router bgp 65000".to_string()];
        assert_eq!(missing(&new, &running, &HashSet::new()).len(), 2);
        let quiet: HashSet<Line> = [(key, "no bgp ebgp-requires-policy".to_string())].into();
        assert_eq!(
            script_quiet(&new, &running, &quiet),
            [
                "router bgp 65000",
                " neighbor 192.0.2.2 remote-as 65100",
                "exit"
            ]
        );
    }
}
