//! Builders for the prefix lists of a VRF policy (`mk_*` style: one call, the fields a test
//! cares about), shared by the FRR renderer's and the agent's VM suites.

use netrollout_api::{PrefixAction, PrefixItem};

/// A prefix-list item: `cidr` at sequence `seq`, up to length `le` when given.
pub fn item(cidr: &str, seq: i64, le: Option<i32>, action: PrefixAction) -> PrefixItem {
    PrefixItem {
        cidr: cidr.into(),
        seq: Some(seq),
        le,
        action,
        ..Default::default()
    }
}

/// Every tenant prefix of the VM suites: `10.50.0.0/16 le 32`, permitted.
pub fn permit_all() -> Vec<PrefixItem> {
    vec![item("10.50.0.0/16", 1, Some(32), PrefixAction::Permit)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permit_all_lets_every_tenant_prefix_up_to_host_routes_through() {
        let all = permit_all();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].cidr, "10.50.0.0/16");
        assert_eq!((all[0].seq, all[0].le), (Some(1), Some(32)));
        assert_eq!(all[0].action, PrefixAction::Permit);
    }
}
