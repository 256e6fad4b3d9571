//! Diff: the `vtysh -f` script that turns FRR's running config into the rendered one.
//!
//! Both sides are read as FRR's contexts the same way `frr-reload.py` reads them
//! ([`super::conf`]). Lines within a context are compared as a set, as `frr-reload.py` does.
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
//! - FRR 10 shows an empty `vrf NAME` block for every VRF device of the kernel, also one the
//!   text gives no FRR config (a routing table's `tb.N`), and keeps it after `no vrf NAME`
//!   while the device exists: an empty `vrf` block is never deleted ([`kernel_vrf`]).
//!
//! A BGP neighbour or peer group is deleted by its identity line alone, and a changed AS is
//! replaced, not deleted first (`neighbors`).

use std::collections::HashSet;

use super::conf::Conf;
use super::defaults::Defaults;

mod neighbors;

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

/// Whether `key` is an empty `vrf NAME` block of FRR's running config: FRR 10 shows one for
/// every VRF device of the kernel (a routing table's `tb.N`, which the text gives no FRR
/// config), and `no vrf NAME` leaves it there while the device exists (the VM lab on 10.3:
/// two rounds, then the counted fallback, on every change of the text). It is no config to
/// delete; a `vrf` block with lines (a VNI) still goes.
fn kernel_vrf(running: &Conf, key: &[String]) -> bool {
    key[0].starts_with("vrf ") && running.is_block(key) && running.lines_of(key).is_empty()
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
    if !conf.is_block(key) {
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
    for key in running.order() {
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
        } else if key.len() == 1 && !foreign(&key[0]) && !kernel_vrf(running, key) {
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
    for key in new.order() {
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

/// The lines of `new` that FRR's `running` config lacks (as [`script`] would add them), each
/// named with its context: `` `route-target import 65000:x7` in router bgp 65002 vrf vr.t1 >
/// address-family l2vpn evpn ``; a whole context FRR lacks is named by its header. At most
/// [`LACKING_SHOWN`], then how many more.
pub(super) fn lacking(new: &Conf, running: &Conf) -> Vec<String> {
    let defaults = Defaults::of(running);
    let mut out = Vec::new();
    for key in new.order() {
        if key.len() == 1 && foreign(&key[0]) {
            continue;
        }
        let place = key.join(" > ");
        if !running.has(key) {
            let lines = new.lines_of(key);
            if lines.is_empty() {
                let header = format!("`{}`", key[key.len() - 1]);
                out.push(match key.len() {
                    1 => header,
                    n => format!("{header} in {}", key[..n - 1].join(" > ")),
                });
            }
            out.extend(lines.iter().map(|l| format!("`{l}` in {place}")));
            continue;
        }
        let have: HashSet<&String> = running.lines_of(key).iter().collect();
        out.extend(
            new.lines_of(key)
                .iter()
                .filter(|l| !have.contains(l) && !hidden(running, &defaults, key, l))
                .map(|l| format!("`{l}` in {place}")),
        );
    }
    if out.len() > LACKING_SHOWN {
        let more = out.len() - LACKING_SHOWN;
        out.truncate(LACKING_SHOWN);
        out.push(format!("{more} more"));
    }
    out
}

/// How many lacking lines an error names.
const LACKING_SHOWN: usize = 5;

#[cfg(test)]
mod tests;
