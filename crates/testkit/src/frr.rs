//! A real FRR (zebra + bgpd of Debian's `frr` package) in a network namespace, with an FRR
//! pathspace (`-N`) of its own, for tests and benchmarks, on the host and in the test VM. Needs
//! root and FRR; panics with what to install otherwise. The daemons are stopped (by the pids in
//! their pid files) on drop.
//!
//! zebra starts first and bgpd only once zebra answers (and, when asked, shows the underlay
//! address), as FRR's own init does. Started together, bgpd can open a BGP session before zebra
//! has told it the interfaces (`nexthop_set failed ... intf (Unknown)` in bgpd.log), and the
//! routes of that session may stay not valid for over a minute.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::cmd::run;

/// Where the Debian package installs the daemons.
pub const FRR_LIB: &str = "/usr/lib/frr";

/// The daemons, in start order.
const DAEMONS: [&str; 2] = ["zebra", "bgpd"];

/// Panics, naming what is missing, unless zebra, bgpd and vtysh are installed.
pub fn require_installed() {
    for bin in [
        format!("{FRR_LIB}/zebra"),
        format!("{FRR_LIB}/bgpd"),
        "/usr/bin/vtysh".to_string(),
    ] {
        assert!(
            Path::new(&bin).exists(),
            "{bin} is missing: FRR tests need the frr package (hack/install-deps.sh)"
        );
    }
}

/// Where the daemons log.
#[derive(Debug, Clone)]
pub enum Log {
    /// To syslog.
    Syslog,
    /// To `DIR/<daemon>.log`.
    Files(PathBuf),
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
        }
    }

    /// Starts zebra, waits until it answers (and shows [`Start::underlay`]), then bgpd, and
    /// waits until bgpd answers.
    pub fn start(self) -> Daemons {
        require_installed();
        let run_dir = Path::new("/var/run/frr").join(self.pathspace);
        std::fs::create_dir_all(&run_dir).unwrap();
        let owner = format!("{0}:{0}", self.user);
        run("chown", &[&owner, run_dir.to_str().unwrap()]);
        let daemons = Daemons {
            pathspace: self.pathspace.to_string(),
            run_dir,
            log: self.log.clone(),
        };
        for daemon in DAEMONS {
            let pid = daemons.run_dir.join(format!("{daemon}.pid"));
            let log = match &self.log {
                Log::Syslog => "syslog".to_string(),
                Log::Files(dir) => format!("file:{}", dir.join(format!("{daemon}.log")).display()),
            };
            let bin = format!("{FRR_LIB}/{daemon}");
            let mut args = vec![
                "netns",
                "exec",
                self.netns,
                &bin,
                "-d",
                "-N",
                self.pathspace,
                "-u",
                self.user,
                "-g",
                self.user,
                "-i",
                pid.to_str().unwrap(),
                "--log",
                &log,
            ];
            match self.config {
                Some(conf) => args.extend(["-f", conf.to_str().unwrap()]),
                None => args.extend(["-F", "traditional"]),
            }
            run("ip", &args);
            let what = match (daemon, self.underlay) {
                ("zebra", Some(ip)) => format!("zebra showing the underlay address {ip}"),
                _ => format!("{daemon} answering"),
            };
            let deadline = Instant::now() + self.timeout;
            while !daemons.ready(daemon, self.underlay) {
                assert!(
                    Instant::now() < deadline,
                    "FRR in pathspace {}: no {what} within {:?}\n{}",
                    self.pathspace,
                    self.timeout,
                    daemons.logs()
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        daemons
    }
}

/// zebra and bgpd running in a namespace; stopped on drop.
#[derive(Debug)]
pub struct Daemons {
    pathspace: String,
    run_dir: PathBuf,
    log: Log,
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

    /// Whether `daemon` answers: zebra showing `underlay` among its interfaces' addresses
    /// when given, bgpd its summary.
    fn ready(&self, daemon: &str, underlay: Option<&str>) -> bool {
        if daemon == "zebra" {
            self.try_vtysh_daemon("zebra", "show interface brief")
                .is_some_and(|out| underlay.is_none_or(|ip| out.contains(ip)))
        } else {
            self.try_vtysh("show bgp summary json").is_some()
        }
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
            .expect("vtysh");
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `vtysh -N PATHSPACE -c CMD`'s output; panics when vtysh fails.
    pub fn vtysh(&self, cmd: &str) -> String {
        self.try_vtysh(cmd)
            .unwrap_or_else(|| panic!("vtysh -N {} -c {cmd:?} failed", self.pathspace))
    }

    /// What to print when a test fails: the sessions, the next hops bgpd tracks (a route
    /// whose next hop zebra has not resolved stays not valid), the EVPN and VRF state, the
    /// `extra` commands, the running config and the daemons' log files.
    pub fn dump(&self, extra: &[&str]) -> String {
        let mut out = String::new();
        let common = [
            "show bgp vrf all summary",
            "show bgp nexthop",
            "show bgp vrf all nexthop",
            "show evpn vni",
            "show vrf vni",
            "show ip route vrf all",
        ];
        for cmd in common.iter().chain(extra).chain(&["show running-config"]) {
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
            let file = self.run_dir.join(format!("{daemon}.pid"));
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
        self.stop();
        let _ = std::fs::remove_dir_all(&self.run_dir);
    }
}
