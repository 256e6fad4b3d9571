//! A pod's container run as the kubelet runs it: started with `podman run` (attached, its
//! output appended to the pod's log), its readiness and liveness probes polled with their
//! periods and thresholds, restarted when the liveness probe fails `failureThreshold` times in
//! a row (stopped with the grace period first) or when it exits (restart policy `Always`: at
//! once the first time, then after 10 s, 20 s, ... up to 5 min; a container that ran 10 min
//! starts the count anew). Its cgroup's peak memory and CPU time are sampled every second.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::watch;

use super::podman;
use super::probe::HttpProbe;
use super::spec::Run;

/// What the kubelet knows of a pod.
#[derive(Clone, Debug, Default)]
pub struct Status {
    /// Whether its readiness probe passes (no probe: whether it runs).
    pub ready: bool,
    /// Whether a container of it runs now.
    pub running: bool,
    /// Each restart: when, and why.
    pub restarts: Vec<(Instant, String)>,
    /// The highest peak memory of its containers' cgroups, in bytes.
    pub peak_memory: u64,
    /// CPU time of its containers, summed.
    pub cpu: Duration,
    /// CPU time of the containers that ended (the running one's is added when sampled).
    cpu_done: Duration,
}

/// A running pod; [`Pod::stop`] or [`Pod::kill`] ends it (dropping it leaves the container to
/// `netrollout-lab down`).
#[derive(Debug)]
pub struct Pod {
    /// The container's name.
    pub name: String,
    /// The image it runs.
    pub image: String,
    /// Its memory limit.
    pub memory_limit: Option<u64>,
    status: Arc<Mutex<Status>>,
    stop: watch::Sender<Option<bool>>,
    task: tokio::task::JoinHandle<()>,
}

impl Pod {
    /// Starts the pod's container (creating its directories first) and its kubelet task; its
    /// output goes to `log`, appended (a replaced pod's log goes on) or, unless `append`, from
    /// an empty file.
    pub fn start(run: Run, conf: PathBuf, log: PathBuf, append: bool) -> Result<Self> {
        if !append {
            std::fs::write(&log, "").with_context(|| format!("creating {}", log.display()))?;
        }
        for dir in &run.create {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let status = Arc::new(Mutex::new(Status::default()));
        let (stop, stop_rx) = watch::channel(None);
        let name = run.name.clone();
        let image = run.image.clone();
        let memory_limit = run.memory_limit;
        let task = tokio::spawn(supervise(run, conf, log, status.clone(), stop_rx));
        Ok(Self {
            name,
            image,
            memory_limit,
            status,
            stop,
            task,
        })
    }

    /// What the kubelet knows now.
    pub fn status(&self) -> Status {
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits until the pod is ready (its readiness probe passed), at most `timeout`.
    pub async fn wait_ready(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        while !self.status().ready {
            if Instant::now() > deadline || self.task.is_finished() {
                bail!(
                    "pod {} not ready within {timeout:?}; its log says why",
                    self.name
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(())
    }

    /// Stops the pod as a deletion does: SIGTERM, SIGKILL after the grace period.
    pub async fn stop(self) -> Status {
        self.end(true).await
    }

    /// Kills the pod's container at once (SIGKILL).
    pub async fn kill(self) -> Status {
        self.end(false).await
    }

    async fn end(self, graceful: bool) -> Status {
        let _ = self.stop.send(Some(graceful));
        let _ = self.task.await;
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

async fn supervise(
    run: Run,
    conf: PathBuf,
    log: PathBuf,
    status: Arc<Mutex<Status>>,
    mut stop: watch::Receiver<Option<bool>>,
) {
    let set =
        |f: &dyn Fn(&mut Status)| f(&mut status.lock().unwrap_or_else(PoisonError::into_inner));
    let mut backoff = Duration::ZERO;
    loop {
        let started = Instant::now();
        let child = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|f| Ok((f.try_clone()?, f)))
            .and_then(|(out, err)| {
                podman(&conf)
                    .arg("run")
                    .args(&run.args)
                    .stdout(out)
                    .stderr(err)
                    .spawn()
            });
        let why = match child {
            Err(e) => format!("podman run failed to start: {e}"),
            Ok(mut child) => {
                set(&|s| s.running = true);
                let mut cgroup = Cgroup::default();
                let outcome = tokio::select! {
                    exit = child.wait() => Outcome::Exited(exit.map_or_else(|e| e.to_string(), |s| s.to_string())),
                    why = probes(&run, &conf, &status, &mut cgroup) => Outcome::Unhealthy(why),
                    graceful = stopped(&mut stop) => Outcome::Stop(graceful),
                };
                cgroup.sample(&conf, &run.name, &status).await;
                match &outcome {
                    Outcome::Exited(_) => {}
                    // Killed: `rm -f -t 0` kills and removes in one podman call.
                    Outcome::Stop(false) => remove(&conf, &run.name).await,
                    Outcome::Stop(true) | Outcome::Unhealthy(_) => {
                        let _ = podman(&conf)
                            .args(["stop", "-t", &run.grace.as_secs().to_string(), &run.name])
                            .stdout(Stdio::null())
                            .stderr(Stdio::null())
                            .status()
                            .await;
                    }
                }
                // podman run returns once the container is gone; if a stop did not end it
                // (podman refuses a paused container), it is removed by force, and the kubelet
                // goes on rather than hang.
                let ended = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
                if ended.is_err() {
                    remove(&conf, &run.name).await;
                    let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
                }
                set(&|s| {
                    s.running = false;
                    s.ready = false;
                    s.cpu_done = s.cpu;
                });
                match outcome {
                    Outcome::Stop(_) => {
                        remove(&conf, &run.name).await;
                        return;
                    }
                    Outcome::Exited(how) => format!("the container exited ({how})"),
                    Outcome::Unhealthy(why) => format!("liveness probe failed: {why}"),
                }
            }
        };
        let note = format!("kubelet: restarting {}: {why}\n", run.name);
        if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&log) {
            use std::io::Write as _;
            let _ = f.write_all(note.as_bytes());
        }
        set(&|s| s.restarts.push((Instant::now(), why.clone())));
        remove(&conf, &run.name).await;
        if started.elapsed() > Duration::from_secs(600) {
            backoff = Duration::ZERO;
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            _ = stopped(&mut stop) => return,
        }
        backoff = (backoff * 2).clamp(Duration::from_secs(10), Duration::from_secs(300));
    }
}

enum Outcome {
    Exited(String),
    Unhealthy(String),
    Stop(bool),
}

async fn stopped(stop: &mut watch::Receiver<Option<bool>>) -> bool {
    let graceful = match stop.wait_for(Option::is_some).await {
        Ok(v) => Some(v.unwrap_or(true)),
        Err(_) => None,
    };
    match graceful {
        Some(g) => g,
        // The pod handle is gone: keep running (down removes it).
        None => std::future::pending().await,
    }
}

async fn remove(conf: &Path, name: &str) {
    let _ = podman(conf)
        .args(["rm", "-f", "-t", "0", name])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
}

/// Polls the readiness probe (setting `ready`) and the liveness probe; returns when the
/// liveness probe failed its threshold, with the last failure. Samples the cgroup each second.
async fn probes(run: &Run, conf: &Path, status: &Mutex<Status>, cgroup: &mut Cgroup) -> String {
    let start = tokio::time::Instant::now();
    let mut live = Counter::default();
    let mut ready = Counter::default();
    let mut next_live = start
        + run
            .liveness
            .as_ref()
            .map_or(Duration::MAX / 4, |p| p.initial_delay);
    let mut next_ready = start
        + run
            .readiness
            .as_ref()
            .map_or(Duration::ZERO, |p| p.initial_delay);
    let mut next_sample = start + Duration::from_secs(1);
    loop {
        let now = tokio::time::Instant::now();
        if now >= next_sample {
            cgroup.sample(conf, &run.name, status).await;
            next_sample = now + Duration::from_secs(1);
        }
        if now >= next_ready {
            let ok = match &run.readiness {
                Some(p) => {
                    next_ready = now + p.period;
                    ready.record(get(p).await, p)
                }
                None => {
                    next_ready = now + Duration::from_secs(1);
                    Some(true)
                }
            };
            if let Some(ok) = ok {
                status.lock().unwrap_or_else(PoisonError::into_inner).ready = ok;
            }
        }
        if now >= next_live
            && let Some(p) = &run.liveness
        {
            next_live = now + p.period;
            let result = get(p).await;
            if live.record(result.clone(), p) == Some(false) {
                return format!("{p}: {}", result.err().unwrap_or_default());
            }
        }
        let wake = next_sample.min(next_ready).min(next_live);
        tokio::time::sleep_until(wake).await;
    }
}

/// Consecutive successes and failures of a probe.
#[derive(Default)]
struct Counter {
    ok: u32,
    failed: u32,
}

impl Counter {
    /// Records a result; the probe's new verdict once a threshold is reached.
    fn record(&mut self, result: Result<(), String>, p: &HttpProbe) -> Option<bool> {
        match result {
            Ok(()) => {
                self.failed = 0;
                self.ok += 1;
                (self.ok >= p.success_threshold).then_some(true)
            }
            Err(_) => {
                self.ok = 0;
                self.failed += 1;
                (self.failed >= p.failure_threshold).then_some(false)
            }
        }
    }
}

/// One HTTP GET as the kubelet's probe: a status from 200 to 399 within the timeout passes.
async fn get(p: &HttpProbe) -> Result<(), String> {
    let attempt = async {
        let mut s = tokio::net::TcpStream::connect(p.addr)
            .await
            .map_err(|e| e.to_string())?;
        let req = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: kube-probe/lab\r\nConnection: close\r\n\r\n",
            p.path, p.addr
        );
        s.write_all(req.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut head = vec![0; 64];
        let n = s.read(&mut head).await.map_err(|e| e.to_string())?;
        let line = String::from_utf8_lossy(&head[..n]);
        let code: u16 = (line.split_whitespace().nth(1))
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| format!("no HTTP status in {line:?}"))?;
        match code {
            200..=399 => Ok(()),
            _ => Err(format!("HTTP {code}")),
        }
    };
    match tokio::time::timeout(p.timeout, attempt).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer within {:?}", p.timeout)),
    }
}

/// The cgroup files of one running container, found once (podman is asked for its pid, which
/// costs a process start) and then read each second.
#[derive(Default)]
struct Cgroup {
    files: Option<(PathBuf, PathBuf, bool)>,
}

impl Cgroup {
    /// Reads the container's peak memory and CPU time into `status`.
    async fn sample(&mut self, conf: &Path, name: &str, status: &Mutex<Status>) {
        if self.files.is_none() {
            let Ok(out) = podman(conf)
                .args(["inspect", "--format", "{{.State.Pid}}", name])
                .stderr(Stdio::null())
                .output()
                .await
            else {
                return;
            };
            self.files = cgroup_files(String::from_utf8_lossy(&out.stdout).trim());
        }
        let Some((memory, cpu)) = self.files.as_ref().and_then(read_cgroup) else {
            return;
        };
        let mut s = status.lock().unwrap_or_else(PoisonError::into_inner);
        s.peak_memory = s.peak_memory.max(memory);
        s.cpu = s.cpu_done + cpu;
    }
}

/// The peak-memory and CPU files of process `pid`'s cgroup (and whether they are cgroup v2's):
/// cgroup v1's memory and cpuacct controllers, else cgroup v2's `memory.peak` and `cpu.stat`.
fn cgroup_files(pid: &str) -> Option<(PathBuf, PathBuf, bool)> {
    if pid.is_empty() || pid == "0" {
        return None;
    }
    let groups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = |controller: &str| {
        groups.lines().find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, ctrls, p) = (f.next()?, f.next()?, f.next()?);
            (ctrls.split(',').any(|c| c == controller)).then(|| p.to_string())
        })
    };
    if let (Some(m), Some(c)) = (path("memory"), path("cpuacct")) {
        return Some((
            format!("/sys/fs/cgroup/memory{m}/memory.max_usage_in_bytes").into(),
            format!("/sys/fs/cgroup/cpuacct{c}/cpuacct.usage").into(),
            false,
        ));
    }
    let p = path("")?;
    Some((
        format!("/sys/fs/cgroup{p}/memory.peak").into(),
        format!("/sys/fs/cgroup{p}/cpu.stat").into(),
        true,
    ))
}

/// Peak memory (bytes) and CPU time from a container's cgroup files.
fn read_cgroup((memory, cpu, v2): &(PathBuf, PathBuf, bool)) -> Option<(u64, Duration)> {
    let peak: u64 = std::fs::read_to_string(memory).ok()?.trim().parse().ok()?;
    let cpu = std::fs::read_to_string(cpu).ok()?;
    let cpu = match v2 {
        false => Duration::from_nanos(cpu.trim().parse().ok()?),
        true => Duration::from_micros(
            cpu.lines()
                .find_map(|l| l.strip_prefix("usage_usec "))?
                .trim()
                .parse()
                .ok()?,
        ),
    };
    Some((peak, cpu))
}
