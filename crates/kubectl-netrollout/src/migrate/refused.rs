//! Kinds of the Go operator's `v1alpha1` API that users write but netrollout does not carry:
//! `migrate` refuses them, naming the object and what to do, rather than skipping them (a
//! skipped `MirrorTarget` would be a mirror that silently stops). The operator's generated kinds
//! (node configs, revisions) are skipped with a note instead: netrollout makes its own.

/// Why a user kind of the Go operator cannot migrate and what to do (the words its refusing
/// CRD uses too), or `None` when netrollout has no such kind because it generates it itself.
pub(super) fn why_not(kind: &str) -> Option<&'static str> {
    netrollout_api::refused::why_refused(kind)
}

pub use netrollout_api::refused::MIRRORING_REFUSED;

#[cfg(test)]
mod tests {
    use super::super::convert;

    #[test]
    fn mirroring_is_refused_naming_each_object_and_what_to_do() {
        let doc = |kind: &str, name: &str| {
            format!(
                "apiVersion: network.t-caas.telekom.com/v1alpha1\nkind: {kind}\nmetadata: {{name: {name}}}\nspec: {{}}\n"
            )
        };
        let text = [
            doc("MirrorTarget", "collector"),
            doc("MirrorSelector", "web"),
            doc("RoutingTable", "t").replace("spec: {}", "spec: {tableId: 7}"),
        ]
        .join("---\n");
        let err = convert("in.yaml", &text).unwrap_err().to_string();
        assert!(err.contains("2 objects cannot migrate"), "{err}");
        for (at, kind, name, why) in [
            (1, "MirrorTarget", "collector", super::MIRRORING_REFUSED),
            (2, "MirrorSelector", "web", super::MIRRORING_REFUSED),
        ] {
            let line = err
                .lines()
                .find(|l| l.contains(&format!("{kind} {name}:")))
                .unwrap_or_else(|| panic!("{kind} {name} is not named: {err}"));
            assert!(line.contains(&format!("in.yaml document {at}")), "{line}");
            assert!(line.contains(why), "{line}");
        }
        assert!(!err.contains("RoutingTable"), "{err}");
    }
}
