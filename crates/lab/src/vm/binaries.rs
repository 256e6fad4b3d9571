//! The programs the VM's guest runs, where it can see them. The guest sees this machine's root
//! file system read-only, except below its own empty tmpfs (`hack/vm/lab.sh`): binaries built
//! there (a checkout cloned under `/tmp`, where many people try a project) are copied into the
//! lab's state directory, which the guest shares at the same path.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

/// Directories the guest mounts its own empty tmpfs over (`hack/vm/lab.sh`): nothing of the
/// host's below them exists in the VM.
const GUEST_TMPFS: [&str; 5] = ["/run", "/tmp", "/etc/frr", "/var/tmp", "/var/log"];

/// The guest's tmpfs that hides `path`, if one does.
fn hidden_in_guest(path: &Path) -> Option<&'static str> {
    GUEST_TMPFS.into_iter().find(|d| path.starts_with(d))
}

/// What the guest runs: the lab itself (its guest side, relays and pingers) and the agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestPrograms {
    /// `netrollout-lab`.
    pub lab: PathBuf,
    /// `netrollout-agent`.
    pub agent: PathBuf,
}

/// Where the guest finds `lab` and `bin_dir`'s agent: in place when it sees them, otherwise
/// copies in `state_dir/bin` (a hard link where the file system allows one).
pub fn for_guest(lab: &Path, bin_dir: &Path, state_dir: &Path) -> Result<GuestPrograms> {
    let agent = bin_dir.join("netrollout-agent");
    let in_place = GuestPrograms {
        lab: lab.to_path_buf(),
        agent: agent.clone(),
    };
    let Some(hidden) = hidden_in_guest(lab).or_else(|| hidden_in_guest(bin_dir)) else {
        return Ok(in_place);
    };
    let dir = state_dir.join("bin");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let copies = GuestPrograms {
        lab: dir.join("netrollout-lab"),
        agent: dir.join("netrollout-agent"),
    };
    for (from, to) in [
        (&in_place.lab, &copies.lab),
        (&in_place.agent, &copies.agent),
    ] {
        let _ = std::fs::remove_file(to);
        if std::fs::hard_link(from, to).is_err() {
            std::fs::copy(from, to).with_context(|| {
                format!(
                    "copying {} to {} (the VM mounts its own empty {hidden}, which hides it)",
                    from.display(),
                    to.display()
                )
            })?;
        }
    }
    Ok(copies)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_directory_below_a_guest_tmpfs_is_hidden() {
        assert_eq!(
            hidden_in_guest(Path::new("/tmp/checkout/target/debug")),
            Some("/tmp")
        );
        assert_eq!(
            hidden_in_guest(Path::new("/var/tmp/x/target/release")),
            Some("/var/tmp")
        );
        assert_eq!(
            hidden_in_guest(Path::new("/srv/checkout/target/debug")),
            None
        );
        // A directory that only starts with the same letters is not below it.
        assert_eq!(hidden_in_guest(Path::new("/tmpwork/target/debug")), None);
    }

    #[test]
    fn binaries_the_guest_sees_stay_and_hidden_ones_are_copied_into_the_state_directory() {
        let seen = for_guest(
            Path::new("/srv/c/target/debug/netrollout-lab"),
            Path::new("/srv/c/target/debug"),
            Path::new("/nonexistent/state"),
        )
        .unwrap();
        assert_eq!(
            seen.agent,
            Path::new("/srv/c/target/debug/netrollout-agent")
        );

        // A checkout below /tmp (the test's own scratch directory is there).
        let root = std::env::temp_dir().join(format!("nrlab-guest-bins-{}", std::process::id()));
        let (bins, state) = (root.join("target/debug"), root.join("state"));
        std::fs::create_dir_all(&bins).unwrap();
        std::fs::create_dir_all(&state).unwrap();
        std::fs::write(bins.join("netrollout-lab"), "lab").unwrap();
        std::fs::write(bins.join("netrollout-agent"), "agent").unwrap();
        assert!(hidden_in_guest(&bins).is_some(), "{}", bins.display());
        let copied = for_guest(&bins.join("netrollout-lab"), &bins, &state).unwrap();
        assert_eq!(copied.agent, state.join("bin/netrollout-agent"));
        assert_eq!(std::fs::read_to_string(&copied.lab).unwrap(), "lab");
        assert_eq!(std::fs::read_to_string(&copied.agent).unwrap(), "agent");
        // Again (a second lab in the same state directory): replaced, not refused.
        assert_eq!(
            for_guest(&bins.join("netrollout-lab"), &bins, &state).unwrap(),
            copied
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
