//! A real FRR (zebra + bgpd; FRR 10's mgmtd first; bfdd when asked) in a network namespace, with an FRR
//! pathspace (`-N`) of its own: the one start of the workspace, used by the lab, the tests, the
//! benchmarks and the test VM, on either FRR version the project runs ([`Version`]: Debian 12's
//! 8.4 on the host, Debian 13's 10.3 by chroot into the root file system hack/frr10.sh builds).
//! Needs root and FRR. [`Start::try_start`] says what went wrong as an [`Error`];
//! [`Start::start`] panics with it (for tests). The daemons are stopped (by the pids in their pid
//! files) on drop, unless [`Daemons::detach`]ed.
//!
//! zebra starts first and bgpd only once zebra is up: its zserv socket exists and it answers
//! `show zebra` (and, when asked, shows the underlay address), as FRR's own init does. Started
//! together, bgpd can open a BGP session before zebra has told it the interfaces
//! (`nexthop_set failed ... intf (Unknown)` in bgpd.log), and the routes of that session may stay
//! not valid for over a minute.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod running;
mod version;

pub use running::Daemons;
pub use version::{DEFAULT_ROOT, ROOT_ENV, VERSION_ENV, Version};

/// Where the Debian package installs the daemons (on the host, and inside FRR 10.3's root file
/// system).
pub const FRR_LIB: &str = "/usr/lib/frr";

/// Where each pathspace keeps its sockets and pid files (FRR 8.4 on the host).
const RUN: &str = "/var/run/frr";

/// The commands of [`Daemons::dump`], in order: bgpd's sessions, the next hops it tracks (and
/// whether zebra resolved them), the EVPN type-5 routes it holds, then zebra's view: its
/// next-hop tracking, interfaces (the underlay address among them), routes and VNIs.
pub const DUMP: [&str; 11] = [
    "show bgp vrf all summary",
    "show bgp nexthop",
    "show bgp vrf all nexthop",
    "show bgp l2vpn evpn route type prefix",
    "show ip nht vrf all",
    "show interface brief",
    "show ip route vrf all",
    "show evpn vni",
    "show evpn rmac vni all",
    "show evpn next-hops vni all",
    "show vrf vni",
];

/// What can go wrong while FRR starts.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A daemon or vtysh is not installed.
    #[error("{} is missing: {install}", .file.display())]
    Missing {
        /// The missing file.
        file: PathBuf,
        /// What installs it.
        install: &'static str,
    },
    /// The pathspace's run directory could not be prepared.
    #[error("FRR in pathspace {pathspace}: {what} failed: {message}; are you root?")]
    Prepare {
        pathspace: String,
        what: String,
        message: String,
    },
    /// A daemon did not start.
    #[error("FRR in pathspace {pathspace}: starting {daemon} failed: {message}")]
    Spawn {
        pathspace: String,
        daemon: String,
        message: String,
    },
    /// A daemon started but did not answer in time.
    #[error(
        "FRR in pathspace {pathspace}: no {what} within {timeout:?}; its log says why \
         (syslog, or below)\n{logs}"
    )]
    NotReady {
        pathspace: String,
        what: String,
        timeout: Duration,
        logs: String,
    },
}

/// What [`Start::try_start`] returns.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Checks that FRR 8.4's zebra and bgpd (and bfdd with `bfdd`) are in `bin_dir` and vtysh is
/// installed; the error names the missing file and what to install.
pub fn check_installed(bin_dir: &Path, bfdd: bool) -> Result<()> {
    Version::V8_4.check_installed(bin_dir, bfdd)
}

/// Panics, naming what is missing, unless the FRR of the tests' version
/// ([`Version::from_env`]) is installed.
pub fn require_installed() {
    let version = Version::from_env();
    if let Err(e) = version.check_installed(Path::new(FRR_LIB), false) {
        panic!("{e} (the FRR tests need FRR {version})");
    }
}

/// Where the daemons log.
#[derive(Debug, Clone)]
pub enum Log {
    /// To syslog.
    Syslog,
    /// To `DIR/<daemon>.log`.
    Files(PathBuf),
    /// Where the config file says (no `--log` flag).
    Config,
}

/// How to start the daemons; [`Start::new`] gives the host defaults.
#[derive(Debug, Clone)]
pub struct Start<'a> {
    /// The network namespace they run in.
    pub netns: &'a str,
    /// The FRR pathspace (`-N`): sockets and pid files under `/var/run/frr/PATHSPACE/`.
    pub pathspace: &'a str,
    /// The config file (`-f`); `None` reads `/etc/frr/PATHSPACE/frr.conf` (`-F traditional`).
    pub config: Option<&'a Path>,
    /// The user and group they run as: `frr` on a host, `root` in the test VM (no `frr` user).
    pub user: &'a str,
    /// Where they log.
    pub log: Log,
    /// An address zebra must show in `show interface brief` before bgpd starts (the address a
    /// BGP session of the base config is sourced from).
    pub underlay: Option<&'a str>,
    /// How long each daemon may take to answer.
    pub timeout: Duration,
    /// The directory holding `zebra` and `bgpd` ([`FRR_LIB`]; FRR 8.4 only: FRR 10.3's are in
    /// its root file system).
    pub bin_dir: &'a Path,
    /// The FRR version ([`Version::V8_4`] unless set).
    pub version: Version,
    /// Start `bfdd` too, after bgpd (BFD on BGP sessions: a `BGPPeering`'s `enableBFD`).
    pub bfdd: bool,
}

impl<'a> Start<'a> {
    /// FRR 8.4's zebra and bgpd in `netns` with pathspace `pathspace`, reading `config`, as
    /// user `frr`, logging to syslog, each answering within 10 s.
    pub fn new(netns: &'a str, pathspace: &'a str) -> Self {
        Self {
            netns,
            pathspace,
            config: None,
            user: "frr",
            log: Log::Syslog,
            underlay: None,
            timeout: Duration::from_secs(10),
            bin_dir: Path::new(FRR_LIB),
            version: Version::V8_4,
            bfdd: false,
        }
    }

    /// [`Start::new`] with the tests' FRR version ([`Version::from_env`]).
    pub fn from_env(netns: &'a str, pathspace: &'a str) -> Self {
        Self {
            version: Version::from_env(),
            ..Self::new(netns, pathspace)
        }
    }

    /// [`Start::try_start`] for tests: panics with the error.
    pub fn start(self) -> Daemons {
        self.try_start().unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts mgmtd first on FRR 10 (waits until it answers), then zebra, waits until it is up
    /// ([`Daemons::zebra_up`]: zserv socket, `show zebra`, and [`Start::underlay`] shown), then
    /// bgpd, and waits until bgpd answers; on FRR 10 then sends them the config with vtysh, as
    /// FRR's own start does. On an error, whatever started is stopped again.
    pub fn try_start(self) -> Result<Daemons> {
        self.version.check_installed(self.bin_dir, self.bfdd)?;
        let run_dir = self.version.run_dir(self.pathspace);
        let prepare = |what: String, message: String| Error::Prepare {
            pathspace: self.pathspace.to_string(),
            what,
            message,
        };
        let owner = format!("{0}:{0}", self.user);
        // FRR 10.3's run directory is made by its start, inside the root file system (its
        // `frr` user is not the host's).
        if self.version.root().is_none() {
            std::fs::create_dir_all(&run_dir)
                .map_err(|e| prepare(format!("creating {}", run_dir.display()), e.to_string()))?;
            let chown = Command::new("chown").arg(&owner).arg(&run_dir).output();
            match chown {
                Ok(out) if out.status.success() => {}
                Ok(out) => Err(prepare(
                    format!("chown {owner} {}", run_dir.display()),
                    String::from_utf8_lossy(&out.stderr).trim().to_string(),
                ))?,
                Err(e) => Err(prepare(format!("running chown {owner}"), e.to_string()))?,
            }
        }
        let daemons = self.daemons(run_dir);
        for daemon in daemons.names() {
            self.spawn(&daemons, daemon)?;
            let what = match (daemon, self.underlay) {
                ("zebra", Some(ip)) => format!("zebra up and showing the underlay address {ip}"),
                ("zebra", None) => "zebra up (zserv socket, show zebra)".to_string(),
                _ => format!("{daemon} answering"),
            };
            let deadline = Instant::now() + self.timeout;
            while !daemons.ready(daemon, self.underlay) {
                if Instant::now() >= deadline {
                    return Err(Error::NotReady {
                        pathspace: self.pathspace.to_string(),
                        what,
                        timeout: self.timeout,
                        logs: daemons.logs(),
                    });
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        if self.version.root().is_some() {
            self.load_config(&daemons)?;
        }
        Ok(daemons)
    }

    fn daemons(&self, run_dir: PathBuf) -> Daemons {
        Daemons {
            pathspace: self.pathspace.to_string(),
            run_dir,
            log: self.log.clone(),
            stop_on_drop: true,
            version: self.version,
            bfdd: self.bfdd,
            binds: self.binds(),
        }
    }

    /// Starts `daemon` alone, as a supervisor restarts one that died (the others run), and
    /// waits until it answers `show version`; on FRR 10 then sends the config
    /// ([`Start::config`]) with vtysh, as FRR's own restart does (`vtysh -b`).
    pub fn start_one(&self, daemon: &str) -> Result<()> {
        let mut daemons = self.daemons(self.version.run_dir(self.pathspace));
        daemons.stop_on_drop = false;
        self.spawn(&daemons, daemon)?;
        let deadline = Instant::now() + self.timeout;
        while daemons.try_vtysh_daemon(daemon, "show version").is_none() {
            if Instant::now() >= deadline {
                return Err(Error::NotReady {
                    pathspace: self.pathspace.to_string(),
                    what: format!("{daemon} answering"),
                    timeout: self.timeout,
                    logs: daemons.logs(),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if self.version.root().is_some() {
            self.load_config(&daemons)?;
        }
        Ok(())
    }

    /// The host directories FRR 10.3's daemons write, each with where they see it in the root
    /// file system ([`Daemons::inside`]): the log directory.
    fn binds(&self) -> Vec<(PathBuf, PathBuf)> {
        match (&self.log, self.version.root()) {
            (Log::Files(dir), Some(_)) => {
                vec![(dir.clone(), Daemons::inside(self.pathspace, "log"))]
            }
            _ => Vec::new(),
        }
    }

    /// FRR 10's own start: the daemons run without a config, then vtysh sends them the
    /// integrated one (`vtysh -b` in FRR's init: mgmtd takes no config file, and the VRFs,
    /// route maps and prefix lists it holds are not read from zebra's); without
    /// [`Start::config`], `/etc/frr/PATHSPACE/frr.conf` when there is one.
    fn load_config(&self, daemons: &Daemons) -> Result<()> {
        let traditional = Path::new("/etc/frr").join(self.pathspace).join("frr.conf");
        let conf = match self.config {
            Some(conf) => conf,
            None if traditional.exists() => &traditional,
            None => return Ok(()),
        };
        let out = daemons
            .vtysh_cmd()
            .arg("-f")
            .arg(conf)
            .output()
            .map_err(|e| Error::Spawn {
                pathspace: self.pathspace.to_string(),
                daemon: "vtysh -f".into(),
                message: e.to_string(),
            })?;
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // Its notes about a missing vtysh.conf are vtysh's own, no error of the config.
        let errors: Vec<&str> = said
            .lines()
            .filter(|l| l.starts_with('%') || l.contains("line "))
            .filter(|l| !l.contains("vtysh.conf"))
            .collect();
        if out.status.success() && errors.is_empty() {
            return Ok(());
        }
        Err(Error::Spawn {
            pathspace: self.pathspace.to_string(),
            daemon: format!("vtysh -f {}", conf.display()),
            message: format!("{}: {said}", out.status),
        })
    }

    /// `path` (a file of the host directory `dir`) as FRR 10.3's daemons see it.
    fn seen(&self, dir: &str, path: &Path) -> PathBuf {
        match (self.version.root(), path.file_name()) {
            (Some(_), Some(name)) => Daemons::inside(self.pathspace, dir).join(name),
            _ => path.to_path_buf(),
        }
    }

    /// `ip netns exec NETNS DAEMON -d -N PATHSPACE -u USER -g USER -i PIDFILE [--log LOG]
    /// (-f CONFIG | -F traditional)`; FRR 10.3's daemon by chroot (`version::CHROOT_START`),
    /// its mgmtd without a config (it takes none: the other daemons send it theirs).
    fn spawn(&self, daemons: &Daemons, daemon: &str) -> Result<()> {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", self.netns]);
        let pid_file = match self.version.root() {
            None => {
                cmd.arg(self.bin_dir.join(daemon));
                daemons.pid_file(daemon)
            }
            Some(root) => {
                cmd.args(["sh", "-c", version::CHROOT_START, "sh"])
                    .arg(&root)
                    .arg(self.pathspace)
                    .arg(format!("{0}:{0}", self.user));
                for (host, inside) in &daemons.binds {
                    cmd.arg(host).arg(inside);
                }
                cmd.arg("--").arg(Path::new(FRR_LIB).join(daemon));
                Path::new("/run/frr")
                    .join(self.pathspace)
                    .join(format!("{daemon}.pid"))
            }
        };
        cmd.args(["-d", "-N", self.pathspace, "-u", self.user, "-g", self.user])
            .arg("-i")
            .arg(pid_file);
        match &self.log {
            Log::Syslog => {
                cmd.args(["--log", "syslog"]);
            }
            Log::Files(dir) => {
                let file = self.seen("log", &dir.join(format!("{daemon}.log")));
                cmd.arg("--log").arg(format!("file:{}", file.display()));
            }
            Log::Config => {}
        }
        match self.config {
            // FRR 10.3's daemons get their config from vtysh once up (`Start::load_config`).
            _ if self.version.root().is_some() => &mut cmd,
            Some(conf) => cmd.arg("-f").arg(conf),
            None => cmd.args(["-F", "traditional"]),
        };
        let spawn_error = |message: String| Error::Spawn {
            pathspace: self.pathspace.to_string(),
            daemon: daemon.to_string(),
            message,
        };
        let out = cmd
            .output()
            .map_err(|e| spawn_error(format!("running {cmd:?}: {e}")))?;
        if !out.status.success() {
            // FRR 10.3's daemons print to a file of the run directory.
            let printed = std::fs::read_to_string(daemons.run_dir.join(format!("{daemon}.out")));
            return Err(spawn_error(format!(
                "{cmd:?}: {}{}",
                String::from_utf8_lossy(&out.stderr).trim(),
                printed.unwrap_or_default().trim()
            )));
        }
        Ok(())
    }
}
