//! A real FRR (zebra + bgpd of Debian's `frr` package) in a network namespace, with an FRR
//! pathspace (`-N`) of its own, for tests and benchmarks, on the host and in the test VM. Needs
//! root and FRR; panics with what to install otherwise. The daemons are stopped (by the pids in
//! their pid files) on drop.
//!
//! zebra starts first and bgpd only once zebra answers (and, when asked, shows the underlay
//! address), as FRR's own init does. Started together, bgpd can open a BGP session before zebra
//! has told it the interfaces (`nexthop_set failed ... intf (Unknown)` in bgpd.log), and the
//! routes of that session may stay not valid for over a minute.

//! A real FRR (zebra + bgpd of Debian's `frr` package) in a network namespace, with an FRR
//! pathspace (`-N`) of its own: the one start of the workspace, used by the lab, the tests, the
//! benchmarks and the test VM. Needs
//! root and FRR. [`Start::try_start`] says what went wrong as an [`Error`];
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

/// Where the Debian package installs the daemons.
pub const FRR_LIB: &str = "/usr/lib/frr";

/// Where each pathspace keeps its sockets and pid files.
const RUN: &str = "/var/run/frr";

/// The daemons, in start order.
const DAEMONS: [&str; 2] = ["zebra", "bgpd"];

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
    #[error(
        "{} is missing: install Debian's frr package (apt-get install frr frr-pythontools; \
         hack/install-deps.sh does it)",
        .0.display()
    )]
    Missing(PathBuf),
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

/// Checks that zebra and bgpd are in `bin_dir` and vtysh is installed; the error names the
/// missing file and what to install.
pub fn check_installed(bin_dir: &Path) -> Result<()> {
    for bin in [
        bin_dir.join("zebra"),
        bin_dir.join("bgpd"),
        PathBuf::from("/usr/bin/vtysh"),
    ] {
        if !bin.exists() {
            return Err(Error::Missing(bin));
        }
    }
    Ok(())
}

/// Panics, naming what is missing, unless zebra, bgpd and vtysh are installed.
pub fn require_installed() {
    if let Err(e) = check_installed(Path::new(FRR_LIB)) {
        panic!("{e} (the FRR tests need it)");
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
    /// The directory holding `zebra` and `bgpd` ([`FRR_LIB`]).
    pub bin_dir: &'a Path,
}

impl<'a> Start<'a> {
    /// zebra and bgpd in `netns` with pathspace `pathspace`, reading `config`, as user `frr`,
    /// logging to syslog, each answering within 10 s.
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
        }
    }

    /// [`Start::try_start`] for tests: panics with the error.
    pub fn start(self) -> Daemons {
        self.try_start().unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts zebra, waits until it is up ([`Daemons::zebra_up`]: zserv socket, `show zebra`,
    /// and [`Start::underlay`] shown), then bgpd, and waits until bgpd answers. On an error,
    /// whatever started is stopped again.
    pub fn try_start(self) -> Result<Daemons> {
        check_installed(self.bin_dir)?;
        let run_dir = Path::new(RUN).join(self.pathspace);
        let prepare = |what: String, message: String| Error::Prepare {
            pathspace: self.pathspace.to_string(),
            what,
            message,
        };
        std::fs::create_dir_all(&run_dir)
            .map_err(|e| prepare(format!("creating {}", run_dir.display()), e.to_string()))?;
        let owner = format!("{0}:{0}", self.user);
        let chown = Command::new("chown").arg(&owner).arg(&run_dir).output();
        match chown {
            Ok(out) if out.status.success() => {}
            Ok(out) => Err(prepare(
                format!("chown {owner} {}", run_dir.display()),
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ))?,
            Err(e) => Err(prepare(format!("running chown {owner}"), e.to_string()))?,
        }
        let daemons = Daemons {
            pathspace: self.pathspace.to_string(),
            run_dir,
            log: self.log.clone(),
            stop_on_drop: true,
        };
        for daemon in DAEMONS {
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
        Ok(daemons)
    }

    /// `ip netns exec NETNS DAEMON -d -N PATHSPACE -u USER -g USER -i PIDFILE [--log LOG]
    /// (-f CONFIG | -F traditional)`.
    fn spawn(&self, daemons: &Daemons, daemon: &str) -> Result<()> {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", self.netns])
            .arg(self.bin_dir.join(daemon))
            .args(["-d", "-N", self.pathspace, "-u", self.user, "-g", self.user])
            .arg("-i")
            .arg(daemons.pid_file(daemon));
        match &self.log {
            Log::Syslog => {
                cmd.args(["--log", "syslog"]);
            }
            Log::Files(dir) => {
                cmd.arg("--log").arg(format!(
                    "file:{}",
                    dir.join(format!("{daemon}.log")).display()
                ));
            }
            Log::Config => {}
        }
        match self.config {
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
            return Err(spawn_error(format!(
                "{cmd:?}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(())
    }
}

/// zebra and bgpd running in a namespace; stopped on drop.
#[derive(Debug)]
pub struct Daemons {
    pathspace: String,
    run_dir: PathBuf,
    log: Log,
    /// Cleared by [`Daemons::detach`].
    stop_on_drop: bool,
}

impl Daemons {
    /// Starts zebra and then bgpd inside `netns` with pathspace `pathspace`, reading `conf`, as
    /// user `frr`, and waits until both answer `vtysh`.
    pub fn start(netns: &str, pathspace: &str, conf: &Path, log: Log) -> Self {
        Start {
            config: Some(conf),
            log,
            ..Start::new(netns, pathspace)
        }
        .start()
    }

    /// Whether `daemon` answers: zebra is up ([`Daemons::zebra_up`]), bgpd shows its summary.
    fn ready(&self, daemon: &str, underlay: Option<&str>) -> bool {
        if daemon == "zebra" {
            self.zebra_up(underlay)
        } else {
            self.try_vtysh("show bgp summary json").is_some()
        }
    }

    /// Whether zebra is up: its zserv socket (where bgpd connects) exists, it answers
    /// `show zebra`, and, when `underlay` is given, shows that address in
    /// `show interface brief` (it has read the namespace's interfaces).
    pub fn zebra_up(&self, underlay: Option<&str>) -> bool {
        self.run_dir.join("zserv.api").exists()
            && self.try_vtysh_daemon("zebra", "show zebra").is_some()
            && underlay.is_none_or(|ip| {
                self.try_vtysh_daemon("zebra", "show interface brief")
                    .is_some_and(|out| out.contains(ip))
            })
    }

    /// The pid file of `daemon`.
    fn pid_file(&self, daemon: &str) -> PathBuf {
        self.run_dir.join(format!("{daemon}.pid"))
    }

    /// The daemons' pids (zebra, bgpd), from their pid files.
    pub fn pids(&self) -> Vec<u32> {
        DAEMONS
            .iter()
            .filter_map(|d| std::fs::read_to_string(self.pid_file(d)).ok())
            .filter_map(|text| text.trim().parse().ok())
            .collect()
    }

    /// Leaves the daemons running after this value is gone (the lab stops them itself, by
    /// their pid files); returns their pids.
    pub fn detach(mut self) -> Vec<u32> {
        self.stop_on_drop = false;
        self.pids()
    }

    /// The pathspace (`vtysh -N`).
    pub fn pathspace(&self) -> &str {
        &self.pathspace
    }

    /// `vtysh -N PATHSPACE -c CMD`'s output, `None` when vtysh fails.
    pub fn try_vtysh(&self, cmd: &str) -> Option<String> {
        self.vtysh_args(&[], cmd)
    }

    /// `vtysh -N PATHSPACE -d DAEMON -c CMD`: asks one daemon only.
    pub fn try_vtysh_daemon(&self, daemon: &str, cmd: &str) -> Option<String> {
        self.vtysh_args(&["-d", daemon], cmd)
    }

    fn vtysh_args(&self, args: &[&str], cmd: &str) -> Option<String> {
        let out = Command::new("vtysh")
            .args(["-N", &self.pathspace])
            .args(args)
            .args(["-c", cmd])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `vtysh -N PATHSPACE -c CMD`'s output; panics when vtysh fails.
    pub fn vtysh(&self, cmd: &str) -> String {
        self.try_vtysh(cmd)
            .unwrap_or_else(|| panic!("vtysh -N {} -c {cmd:?} failed", self.pathspace))
    }

    /// What to print when a test fails: [`DUMP`] (the sessions, the next hops bgpd tracks and
    /// zebra resolves — a route whose next hop zebra has not resolved stays not valid —, the
    /// received type-5 routes, zebra's interfaces, routes and VNIs), the `extra` commands, the
    /// running config and the daemons' log files. Every wait of the VM suites prints it when it
    /// times out, so a slow route names its cause.
    pub fn dump(&self, extra: &[&str]) -> String {
        let mut out = String::new();
        for cmd in DUMP.iter().chain(extra).chain(&["show running-config"]) {
            let text = self
                .try_vtysh(cmd)
                .unwrap_or_else(|| "(vtysh failed)".into());
            out.push_str(&format!("--- {} {cmd}\n{text}\n", self.pathspace));
        }
        out.push_str(&self.logs());
        out
    }

    /// The daemons' log files (nothing when they log to syslog).
    pub fn logs(&self) -> String {
        let Log::Files(dir) = &self.log else {
            return String::new();
        };
        DAEMONS
            .iter()
            .map(|d| {
                let path = dir.join(format!("{d}.log"));
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                format!("--- {}\n{text}\n", path.display())
            })
            .collect()
    }

    /// Stops bgpd and zebra (by their pid files) and waits until both are gone (at most 5 s).
    pub fn stop(&self) {
        let mut pids = Vec::new();
        for daemon in DAEMONS.iter().rev() {
            let file = self.pid_file(daemon);
            if let Ok(pid) = std::fs::read_to_string(file) {
                let pid = pid.trim().to_string();
                let _ = Command::new("kill").arg(&pid).status();
                pids.push(pid);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && pids.iter().any(|pid| alive(pid)) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Whether process `pid` still runs (a zombie no longer does: the test VM's init may not reap).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(") ")
            .next()
            .is_some_and(|rest| !rest.starts_with('Z'))
    })
}

impl Drop for Daemons {
    fn drop(&mut self) {
        if !self.stop_on_drop {
            return;
        }
        self.stop();
        let _ = std::fs::remove_dir_all(&self.run_dir);
    }
}
