//! `kill -9` as a node's container dies: the agent and every process it started (a running
//! `frr-reload.py`, `vtysh`) at the same moment, as when the DaemonSet pod's PID namespace ends.
//! The tree is frozen first (`SIGSTOP`), so the moment of the kill can be inspected (which step
//! the agent was in, which helper ran, what the state directory held), then killed (`SIGKILL`).
//! Also: reading the agent's log from an offset (one start of the agent), and the step a kill
//! landed in, from that log and the frozen state.

#![allow(clippy::expect_used)] // test helpers: a failed step is the test failure

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use netrollout_testkit::agent::Lab;

/// The log of one start of the agent: the agent log file from the offset it had at the start.
#[derive(Debug)]
pub struct LogTail {
    path: PathBuf,
    offset: u64,
    /// What was read so far.
    pub text: String,
}

impl LogTail {
    /// The log from its current end on (call it right before starting the agent).
    pub fn from_end(path: &Path) -> Self {
        let offset = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        Self {
            path: path.to_path_buf(),
            offset,
            text: String::new(),
        }
    }

    /// Reads what was appended since the last call.
    pub fn refresh(&mut self) -> &str {
        if let Ok(mut f) = std::fs::File::open(&self.path)
            && f.seek(SeekFrom::Start(self.offset)).is_ok()
        {
            let mut buf = Vec::new();
            if let Ok(n) = f.read_to_end(&mut buf) {
                // Only whole lines: the agent may be in the middle of writing one.
                let whole = buf.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                self.text
                    .push_str(&String::from_utf8_lossy(&buf[..whole.min(n)]));
                self.offset += whole as u64;
            }
        }
        &self.text
    }

    /// Whether a line of this start contains every one of `needles`.
    pub fn has_line(&self, needles: &[&str]) -> bool {
        self.text
            .lines()
            .any(|l| needles.iter().all(|n| l.contains(n)))
    }

    /// Polls (every 3 ms) until a line contains every one of `needles`, as long as the agent
    /// makes [`Progress`] (`idle`: how long it may show none); panics with the log when it
    /// stops.
    pub async fn wait_line_progressing(&mut self, lab: &Lab, needles: &[&str], idle: Duration) {
        let mut progress = Progress::new(idle);
        loop {
            self.refresh();
            if self.has_line(needles) {
                return;
            }
            assert!(
                progress.alive(self, lab),
                "the agent made no progress for {idle:?} while this test waited for a log line \
                 with {needles:?}; this start's log:\n{}",
                self.text
            );
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
    }

    /// Polls (every 3 ms) until a line contains every one of `needles`; panics with the log
    /// after `within`.
    pub async fn wait_line(&mut self, needles: &[&str], within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            self.refresh();
            if self.has_line(needles) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {within:?} waiting for a log line with {needles:?}; this \
                 start's log:\n{}",
                self.text
            );
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
    }
}

/// A deadline the agent's progress moves, for waits whose length is the agent's work (an FRR
/// reload took 30 s on a loaded machine while eight worlds ran theirs): a new line in its log
/// moves it `idle` on, and so does a helper of its own (`frr-reload.py`, `vtysh`) still running
/// when it is reached. Without either for `idle` the agent is stuck; after [`Progress::MAX`] in
/// all, too (a helper that never ends).
#[derive(Debug)]
pub struct Progress {
    idle: Duration,
    deadline: Instant,
    give_up: Instant,
    seen: usize,
}

impl Progress {
    /// Longest wait in all, however busy the agent looks.
    pub const MAX: Duration = Duration::from_secs(600);

    pub fn new(idle: Duration) -> Self {
        let now = Instant::now();
        Self {
            idle,
            deadline: now + idle,
            give_up: now + Self::MAX,
            seen: 0,
        }
    }

    /// Whether to keep waiting: the agent made progress within `idle` (`tail` grew) or one of
    /// its helpers runs now.
    pub fn alive(&mut self, tail: &LogTail, lab: &Lab) -> bool {
        let now = Instant::now();
        if tail.text.len() > self.seen {
            self.seen = tail.text.len();
            self.deadline = now + self.idle;
        }
        if now < self.deadline {
            return true;
        }
        if now < self.give_up && !helpers(lab).is_empty() {
            // Look again in a second: the helper may be the agent's last act.
            self.deadline = now + Duration::from_secs(1);
            return true;
        }
        false
    }
}

/// A process of the agent's tree at the moment of the kill.
#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: u32,
    /// Its command line, arguments joined by spaces.
    pub cmdline: String,
}

impl Proc {
    /// Whether it is FRR loading a change: `frr-reload.py`, or a `vtysh -f` that is not the
    /// parse check (`vtysh -m -f`, which changes nothing).
    pub fn loads_frr(&self) -> bool {
        let args: Vec<&str> = self.cmdline.split_whitespace().collect();
        let vtysh = args.first().is_some_and(|a| a.ends_with("vtysh"));
        self.cmdline.contains("frr-reload")
            || (vtysh && args.contains(&"-f") && !args.contains(&"-m"))
    }
}

/// Freezes the agent and every process it started (`SIGSTOP`, repeated until no new child
/// appears), hands them to `inspect` while frozen, then kills them all (`SIGKILL`) and reaps
/// the agent. Panics when no agent runs.
pub fn kill_tree<T>(lab: &mut Lab, inspect: impl FnOnce(&[Proc]) -> T) -> T {
    let mut child = lab.agent.take().expect("an agent to kill");
    let root = child.id();
    signal("STOP", &[root]);
    let mut frozen = vec![root];
    loop {
        let more: Vec<u32> = descendants(root)
            .into_iter()
            .filter(|p| !frozen.contains(p))
            .collect();
        if more.is_empty() {
            break;
        }
        signal("STOP", &more);
        frozen.extend(more);
    }
    let procs: Vec<Proc> = frozen[1..]
        .iter()
        .map(|&pid| Proc {
            pid,
            cmdline: cmdline(pid),
        })
        .collect();
    let seen = inspect(&procs);
    signal("KILL", &frozen);
    let _ = child.wait();
    // The helpers were reparented; wait until they are gone so the next agent finds FRR's
    // configuration lock free, as a new pod would.
    let deadline = Instant::now() + Duration::from_secs(5);
    while procs.iter().any(|p| alive(p.pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    seen
}

/// The processes the running agent started (e.g. `frr-reload.py`), with their command lines.
pub fn helpers(lab: &Lab) -> Vec<Proc> {
    let Some(agent) = &lab.agent else {
        return Vec::new();
    };
    descendants(agent.id())
        .into_iter()
        .map(|pid| Proc {
            pid,
            cmdline: cmdline(pid),
        })
        .collect()
}

/// `kill -SIG PIDS`.
fn signal(sig: &str, pids: &[u32]) {
    let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
    // A process that exited meanwhile makes kill fail for it alone; the others are signalled.
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .args(&pids)
        .stderr(std::process::Stdio::null())
        .status();
}

/// Every process whose parent chain leads to `root` (from /proc).
fn descendants(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, ppid(pid)?)))
        .collect();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}

/// The parent pid of `pid` (`/proc/PID/stat`, field 4), `None` when it is gone.
fn ppid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.split(' ').nth(1)?.parse().ok()
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

/// Whether `pid` still runs (a zombie does not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, r)| !r.starts_with('Z'))
    })
}

/// Where a kill landed, from the log of the agent's start it killed and the frozen state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Landed {
    /// Before the attempt's journal (start-up, watching, deciding).
    BeforeJournal,
    /// In the start-up recovery (restoring FRR and the kernel after an earlier kill).
    Recovery,
    /// Journal written; probing before the change or applying to the kernel.
    Kernel,
    /// Kernel applied; FRR's parser checking the new text, `frr.conf` not yet replaced.
    FrrCheck,
    /// The new `frr.conf` written, FRR not yet loading it.
    FrrWritten,
    /// FRR loading the change: the agent's diff (`vtysh -f` of the changed contexts) or
    /// `frr-reload.py` (its fallback) running.
    FrrReload,
    /// FRR loaded the new text; probing (the probe hold).
    ProbeHold,
    /// Probes passed for the whole hold; committing (backup, journal, status).
    Commit,
    /// Committed.
    AfterCommit,
}

impl Landed {
    pub const ALL: [Landed; 9] = [
        Landed::BeforeJournal,
        Landed::Recovery,
        Landed::Kernel,
        Landed::FrrCheck,
        Landed::FrrWritten,
        Landed::FrrReload,
        Landed::ProbeHold,
        Landed::Commit,
        Landed::AfterCommit,
    ];

    pub fn describe(self) -> &'static str {
        match self {
            Landed::BeforeJournal => "before the journal",
            Landed::Recovery => "recovery (restoring FRR, kernel)",
            Landed::Kernel => "kernel (probe before, netlink)",
            Landed::FrrCheck => "FRR parse check, frr.conf not written",
            Landed::FrrWritten => "frr.conf written, not yet reloaded",
            Landed::FrrReload => "FRR loading (vtysh -f, frr-reload.py)",
            Landed::ProbeHold => "probe hold",
            Landed::Commit => "commit",
            Landed::AfterCommit => "after commit",
        }
    }

    /// The step of `rev`'s attempt a kill landed in: `log` is the killed start's log, `procs`
    /// the agent's helpers at the kill, `frr_conf` the file's text then, `new_frr` the text the
    /// attempt loads.
    pub fn classify(log: &str, rev: &str, procs: &[Proc], frr_conf: &str, new_frr: &str) -> Self {
        if log.contains("journal says an apply was interrupted") && !log.contains("state recovered")
        {
            return Landed::Recovery;
        }
        let quoted = format!("\"revision\":\"{rev}\"");
        let lines: Vec<&str> = log.lines().collect();
        let Some(start) = lines
            .iter()
            .rposition(|l| l.contains("\"step\":\"journal\"") && l.contains(&quoted))
        else {
            return Landed::BeforeJournal;
        };
        let attempt = &lines[start..];
        let has = |step: &str| {
            attempt
                .iter()
                .any(|l| l.contains(&format!("\"step\":\"{step}\"")))
        };
        if has("commit") {
            Landed::AfterCommit
        } else if attempt
            .iter()
            .any(|l| l.contains("\"step\":\"probe-after\"") && l.contains("\"passed\":true"))
        {
            Landed::Commit
        } else if has("apply-frr") {
            Landed::ProbeHold
        } else if has("apply") {
            if procs.iter().any(Proc::loads_frr) {
                Landed::FrrReload
            } else if frr_conf == new_frr {
                Landed::FrrWritten
            } else {
                Landed::FrrCheck
            }
        } else {
            Landed::Kernel
        }
    }
}

/// The median and the largest of `samples` (zero when empty).
pub fn median_max(samples: &[Duration]) -> (Duration, Duration) {
    let mut s = samples.to_vec();
    s.sort();
    let median = s.get(s.len() / 2).copied().unwrap_or_default();
    (median, s.last().copied().unwrap_or_default())
}

#[test]
fn the_diffs_vtysh_f_and_frr_reload_are_frr_loading_and_the_parse_check_is_not() {
    let p = |cmdline: &str| Proc {
        pid: 1,
        cmdline: cmdline.into(),
    };
    assert!(p("/usr/bin/vtysh -N n1 -f /run/frr/n1/frr-diff.netrollout.conf").loads_frr());
    assert!(p("/usr/bin/python3 /usr/lib/frr/frr-reload.py --reload f").loads_frr());
    assert!(!p("/usr/bin/vtysh -N n1 -m -f /etc/frr/n1/frr.conf.new").loads_frr());
    assert!(!p("/usr/bin/vtysh -N n1 -c show running-config").loads_frr());
}
