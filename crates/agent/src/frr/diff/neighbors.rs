//! Deleting BGP neighbours and peer groups line by line, the way FRR takes it: a neighbour's
//! identity line (`neighbor X remote-as ...`, `neighbor X interface ...`, a group's `neighbor X
//! peer-group`) takes the neighbour with every other line about it, so after it a `no` of another
//! of its lines fails ("Specify remote-as or peer-group commands first"), and `no neighbor X
//! remote-as OLD` of a kept neighbour would delete it (a group: the whole group) when the new
//! text only changes its AS. So, within one context:
//! - a neighbour the new text no longer names loses only its identity line (`no neighbor X
//!   peer-group` for a group); a group's `bgp listen range ... peer-group X` lines go first
//!   (FRR 10.3 refuses to delete a group that has listen ranges: "delete them first");
//! - a kept neighbour's old `remote-as` is not deleted: the new `neighbor X remote-as NEW` line
//!   (added after the deletions) replaces it.

use std::collections::HashSet;

/// The neighbour (or peer group) `line` is about, when it is a `neighbor X ...` line.
fn peer(line: &str) -> Option<&str> {
    line.strip_prefix("neighbor ")?.split_whitespace().next()
}

/// Whether `line` makes `peer` exist: its `remote-as`, `interface` or `peer-group` line.
fn is_identity(line: &str, peer: &str) -> bool {
    let Some(rest) = line
        .strip_prefix("neighbor ")
        .and_then(|l| l.strip_prefix(peer))
        .and_then(|l| l.strip_prefix(' '))
    else {
        return false;
    };
    rest == "peer-group" || rest.starts_with("remote-as ") || rest.starts_with("interface")
}

/// The lines of a kept context to delete (`gone`, as FRR shows them, without their `no`), given
/// the lines the new text keeps in it, reduced as the module says: listen ranges first, then the
/// rest in their order.
pub(super) fn deletions<'a>(gone: &[&'a String], kept: &[String]) -> Vec<&'a String> {
    let named: HashSet<&str> = kept.iter().filter_map(|l| peer(l)).collect();
    let groups: HashSet<&str> = gone
        .iter()
        .filter_map(|l| {
            let p = peer(l)?;
            (l.as_str() == format!("neighbor {p} peer-group")).then_some(p)
        })
        .collect();
    let (ranges, rest): (Vec<&String>, Vec<&String>) = gone
        .iter()
        .copied()
        .partition(|l| l.starts_with("bgp listen range "));
    ranges
        .into_iter()
        .chain(rest.into_iter().filter(|line| {
            let Some(p) = peer(line) else { return true };
            if named.contains(p) {
                // Kept: every line but its old AS (replaced by the new one).
                return !(is_identity(line, p) && line.contains(" remote-as "));
            }
            // Removed: its identity line only (the group's own line, for a group).
            if groups.contains(p) {
                line.as_str() == format!("neighbor {p} peer-group")
            } else {
                is_identity(line, p)
            }
        }))
        .collect()
}
