//! A real FRR (zebra + bgpd of Debian's `frr` package) in a network namespace, with an FRR
//! pathspace (`-N`) of its own, for tests and benchmarks. Needs root and FRR; panics with what to
//! install otherwise. The daemons are stopped (by the pids in their pid files) on drop.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::cmd::run;

/// Where the Debian package installs the daemons.
pub const FRR_LIB: &str = "/usr/lib/frr";

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

/// zebra and bgpd running in a namespace; stopped on drop.
#[derive(Debug)]
pub struct Daemons {
    pathspace: String,
    run_dir: PathBuf,
}

impl Daemons {
    /// Starts zebra and bgpd inside `netns` with pathspace `pathspace`, reading `conf`, and waits
    /// until FRR answers `vtysh`.
    pub fn start(netns: &str, pathspace: &str, conf: &Path, log: Log) -> Self {
        require_installed();
        let run_dir = Path::new("/var/run/frr").join(pathspace);
        std::fs::create_dir_all(&run_dir).unwrap();
        run("chown", &["frr:frr", run_dir.to_str().unwrap()]);
        let daemons = Self {
            pathspace: pathspace.to_string(),
            run_dir,
        };
        for daemon in ["zebra", "bgpd"] {
            let pid = daemons.run_dir.join(format!("{daemon}.pid"));
            let log = match &log {
                Log::Syslog => "syslog".to_string(),
                Log::Files(dir) => format!("file:{}", dir.join(format!("{daemon}.log")).display()),
            };
            run(
                "ip",
                &[
                    "netns",
                    "exec",
                    netns,
                    &format!("{FRR_LIB}/{daemon}"),
                    "-d",
                    "-N",
                    pathspace,
                    "-u",
                    "frr",
                    "-g",
                    "frr",
                    "-f",
                    conf.to_str().unwrap(),
                    "-i",
                    pid.to_str().unwrap(),
                    "--log",
                    &log,
                ],
            );
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while daemons.try_vtysh("show bgp summary json").is_none() {
            assert!(
                Instant::now() < deadline,
                "FRR in pathspace {pathspace} does not answer"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        daemons
    }

    /// The pathspace (`vtysh -N`).
    pub fn pathspace(&self) -> &str {
        &self.pathspace
    }

    /// `vtysh -N PATHSPACE -c CMD`'s output, `None` when vtysh fails.
    pub fn try_vtysh(&self, cmd: &str) -> Option<String> {
        let out = Command::new("vtysh")
            .args(["-N", &self.pathspace, "-c", cmd])
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
}

impl Drop for Daemons {
    fn drop(&mut self) {
        for daemon in ["bgpd", "zebra"] {
            if let Ok(pid) = std::fs::read_to_string(self.run_dir.join(format!("{daemon}.pid"))) {
                let _ = Command::new("kill").arg(pid.trim()).status();
            }
        }
        std::thread::sleep(Duration::from_millis(200));
        let _ = std::fs::remove_dir_all(&self.run_dir);
    }
}
