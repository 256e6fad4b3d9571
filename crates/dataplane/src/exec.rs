//! Execution planning: which operations may run concurrently, and how kernel answers map to
//! outcomes.

use std::collections::BTreeSet;
use std::ops::Range;

use crate::error::{Error, Result};
use crate::op::Op;

/// How the kernel answered a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The change was made.
    Done,
    /// The object was already there (add) or already gone (delete): nothing left to do.
    AlreadyDone,
}

const ENOENT: i32 = 2;
const ESRCH: i32 = 3;
const ENODEV: i32 = 19;
const EEXIST: i32 = 17;
const EADDRNOTAVAIL: i32 = 99;

/// Maps the kernel's errno for `op` to an outcome: "already gone" for deletes and "already
/// there" for address and rule adds are success; everything else is an error naming the op.
pub(crate) fn outcome(op: &Op, errno: i32) -> Result<Outcome> {
    let tolerated = match op {
        Op::DeleteLink(_) | Op::DeleteAddress(_) | Op::DeleteRoute(_) | Op::DeleteRule(_) => {
            [ENOENT, ESRCH, ENODEV, EADDRNOTAVAIL].contains(&errno)
        }
        Op::AddAddress(_) | Op::AddRule(_) => errno == EEXIST,
        _ => false,
    };
    match errno {
        0 => Ok(Outcome::Done),
        _ if tolerated => Ok(Outcome::AlreadyDone),
        _ => Err(Error::Kernel {
            op: op.verb(),
            object: op.object(),
            source: std::io::Error::from_raw_os_error(errno),
        }),
    }
}

/// Splits `ops` into consecutive groups that may run concurrently: a group holds one stage
/// only, and an op that needs a link another op of the group changes starts a new group.
pub(crate) fn groups(ops: &[Op]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut written: BTreeSet<&str> = BTreeSet::new();
    for (i, op) in ops.iter().enumerate() {
        let new_stage = i > start && ops[i - 1].stage() != op.stage();
        let conflict = op
            .reads()
            .iter()
            .chain(op.writes().iter())
            .any(|n| written.contains(n));
        if new_stage || conflict {
            out.push(start..i);
            start = i;
            written.clear();
        }
        written.extend(op.writes());
    }
    if start < ops.len() {
        out.push(start..ops.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Address, Link, LinkKind};

    fn bridge(name: &str) -> Op {
        Op::CreateLink(Link::new(name, LinkKind::Bridge))
    }

    #[test]
    fn independent_creations_share_a_group() {
        let ops = vec![bridge("l2.1"), bridge("l2.2"), bridge("l2.3")];
        assert_eq!(groups(&ops), vec![0..3]);
    }

    #[test]
    fn a_port_waits_for_its_master() {
        let ops = vec![
            bridge("l2.1"),
            bridge("l2.2"),
            Op::CreateLink(Link::new("lx.1", LinkKind::Bridge).master("l2.1")),
        ];
        assert_eq!(groups(&ops), vec![0..2, 2..3]);
    }

    #[test]
    fn addresses_wait_for_all_links() {
        let addr = Address {
            link: "l2.9".into(),
            addr: "10.0.0.1/24".parse().unwrap(),
        };
        let ops = vec![
            bridge("l2.1"),
            Op::AddAddress(addr.clone()),
            Op::AddAddress(addr),
        ];
        assert_eq!(groups(&ops), vec![0..1, 1..3]);
    }

    #[test]
    fn a_missing_object_on_delete_counts_as_done() {
        assert_eq!(
            outcome(&Op::DeleteLink("br.x".into()), ENODEV).unwrap(),
            Outcome::AlreadyDone
        );
    }

    #[test]
    fn a_kernel_refusal_names_the_op_the_object_and_the_error() {
        let err = outcome(&bridge("l2.1"), EEXIST).unwrap_err().to_string();
        assert!(err.contains("create link l2.1 (bridge)"), "{err}");
        assert!(err.contains("File exists"), "{err}");
    }
}
