//! Which FRR runs: Debian 12's FRR 8.4 installed on the host (`/usr/lib/frr`, `/usr/bin/vtysh`),
//! or Debian 13's FRR 10.3 from the root file system `hack/frr10.sh` builds and caches. FRR 10.3's
//! daemons run by `chroot` into it inside the node's network namespace (`/proc` mounted there,
//! the host directories the start names bound into it at the same paths, in the start's own
//! mount namespace: nothing stays mounted on the host); its vtysh and `frr-reload.py` run on the
//! host through the wrappers in `ROOT/netrollout/bin` (the root file system's programs with its
//! own libraries), reaching the daemons' sockets in `ROOT/run/frr/PATHSPACE` with
//! `--vty_socket ROOT/run/frr`.
//!
//! The tests pick the version with the environment variable `NETROLLOUT_FRR_VERSION` (`8.4`,
//! the default, or `10.3`: [`Version::from_env`]); `NETROLLOUT_FRR10_ROOT` names another root
//! file system than `/var/cache/netrollout/frr-10.3` (hack/frr10.sh reads it too).

use std::fmt;
use std::path::{Path, PathBuf};

/// The environment variable that picks the FRR version of the tests.
pub const VERSION_ENV: &str = "NETROLLOUT_FRR_VERSION";

/// The environment variable naming FRR 10.3's root file system.
pub const ROOT_ENV: &str = "NETROLLOUT_FRR10_ROOT";

/// FRR 10.3's root file system when [`ROOT_ENV`] is not set (hack/frr10.sh's default).
pub const DEFAULT_ROOT: &str = "/var/cache/netrollout/frr-10.3";

/// An FRR version the one FRR start starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Version {
    /// Debian 12's FRR 8.4, installed on the host (hack/install-deps.sh).
    #[default]
    V8_4,
    /// Debian 13's FRR 10.3, from its root file system (hack/frr10.sh).
    V10_3,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Version::V8_4 => "8.4",
            Version::V10_3 => "10.3",
        })
    }
}

impl std::str::FromStr for Version {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "8.4" => Ok(Version::V8_4),
            "10.3" => Ok(Version::V10_3),
            other => Err(format!(
                "FRR version {other:?} is not one the tests run: use 8.4 (Debian 12's, on the \
                 host) or 10.3 (Debian 13's, hack/frr10.sh)"
            )),
        }
    }
}

impl Version {
    /// Both versions, oldest first.
    pub const ALL: [Version; 2] = [Version::V8_4, Version::V10_3];

    /// The version named by [`VERSION_ENV`] (8.4 when unset); panics naming the variable when
    /// it names no version the tests run.
    pub fn from_env() -> Self {
        match std::env::var(VERSION_ENV) {
            Err(_) => Version::V8_4,
            Ok(v) if v.is_empty() => Version::V8_4,
            Ok(v) => v.parse().unwrap_or_else(|e| panic!("{VERSION_ENV}: {e}")),
        }
    }

    /// FRR 10.3's root file system: [`ROOT_ENV`] or [`DEFAULT_ROOT`]; `None` for 8.4 (the host).
    pub fn root(self) -> Option<PathBuf> {
        match self {
            Version::V8_4 => None,
            Version::V10_3 => Some(
                std::env::var_os(ROOT_ENV)
                    .map_or_else(|| PathBuf::from(DEFAULT_ROOT), PathBuf::from),
            ),
        }
    }

    /// The daemons the start starts, in start order: FRR 10 needs mgmtd before the others.
    pub fn daemons(self) -> &'static [&'static str] {
        match self {
            Version::V8_4 => &["zebra", "bgpd"],
            Version::V10_3 => &["mgmtd", "zebra", "bgpd"],
        }
    }

    /// The directory holding the vtysh to run from the host (the agent's `--frr-bindir`).
    pub fn bindir(self) -> PathBuf {
        match self.root() {
            None => PathBuf::from("/usr/bin"),
            Some(root) => root.join("netrollout/bin"),
        }
    }

    /// vtysh of this version, run from the host.
    pub fn vtysh(self) -> PathBuf {
        self.bindir().join("vtysh")
    }

    /// `frr-reload.py` of this version, run from the host (the agent's `--frr-reload-script`).
    pub fn reload_script(self) -> PathBuf {
        match self.root() {
            None => PathBuf::from(super::FRR_LIB).join("frr-reload.py"),
            Some(root) => root.join("netrollout/bin/frr-reload.py"),
        }
    }

    /// The socket directory to give vtysh and the agent (`--vty_socket`, `--frr-vty-socket`):
    /// `None` for FRR's default (`/var/run/frr`).
    pub fn vty_socket(self) -> Option<PathBuf> {
        self.root().map(|root| root.join("run/frr"))
    }

    /// vtysh of this version reaching the daemons of `pathspace` (`-N`, and `--vty_socket` for
    /// FRR 10.3), with no command yet.
    pub fn vtysh_cmd(self, pathspace: &str) -> std::process::Command {
        let mut cmd = std::process::Command::new(self.vtysh());
        cmd.args(["-N", pathspace]);
        if let Some(dir) = self.vty_socket() {
            cmd.arg("--vty_socket").arg(dir);
        }
        cmd
    }

    /// Where the daemons of `pathspace` keep their sockets and pid files, seen from the host.
    pub fn run_dir(self, pathspace: &str) -> PathBuf {
        self.vty_socket()
            .unwrap_or_else(|| PathBuf::from(super::RUN))
            .join(pathspace)
    }

    /// Checks that this version's daemons (in `bin_dir` for 8.4) and vtysh are there; the error
    /// names the missing file and what to run.
    pub fn check_installed(self, bin_dir: &Path, bfdd: bool) -> super::Result<()> {
        let extra: &[&str] = if bfdd { &["bfdd"] } else { &[] };
        let files: Vec<PathBuf> = match self.root() {
            None => {
                let mut files: Vec<PathBuf> = ["zebra", "bgpd"]
                    .iter()
                    .chain(extra)
                    .map(|d| bin_dir.join(d))
                    .collect();
                files.push(PathBuf::from("/usr/bin/vtysh"));
                files
            }
            Some(root) => {
                let mut files: Vec<PathBuf> = self
                    .daemons()
                    .iter()
                    .chain(extra)
                    .map(|d| root.join("usr/lib/frr").join(d))
                    .collect();
                files.push(root.join("netrollout/ready"));
                files.push(self.vtysh());
                files
            }
        };
        match files.into_iter().find(|f| !f.exists()) {
            None => Ok(()),
            Some(file) => Err(super::Error::Missing {
                file,
                install: self.install_hint(),
            }),
        }
    }

    /// What installs this version.
    pub(super) fn install_hint(self) -> &'static str {
        match self {
            Version::V8_4 => {
                "install Debian's frr package (apt-get install frr frr-pythontools; \
                 hack/install-deps.sh does it)"
            }
            Version::V10_3 => {
                "build FRR 10.3's root file system with hack/frr10.sh (hack/install-deps.sh \
                 runs it)"
            }
        }
    }
}

/// The shell script that starts one FRR 10 daemon by chroot, run by `ip netns exec` (a mount
/// namespace of its own, so the mounts end with the daemon): `$1` the root file system, `$2`
/// the pathspace, `$3` the owner of its run directory, then pairs of a host directory and where
/// the daemon sees it; after `--`, the daemon's command line inside the root file system. What
/// the daemon prints goes to `DAEMON.out` in its run directory ([`super::Daemons::logs`]).
pub(super) const CHROOT_START: &str = r#"set -e
root=$1 ps=$2 owner=$3
shift 3
mount -t proc proc "$root/proc"
while [ "$1" != -- ]; do
  mkdir -p "$root$2"
  mount --bind "$1" "$root$2"
  shift 2
done
shift
chroot "$root" install -d -o "${owner%:*}" -g "${owner#*:}" -m 755 /run/frr "/run/frr/$ps"
# FRR 10.3's daemons keep their standard output and error open once in the background, and the
# start waits for its output to end: they write to a file of the run directory instead.
exec chroot "$root" "$@" >"$root/run/frr/$ps/${1##*/}.out" 2>&1
"#;
