//! The real kubectl (v1.32+ on PATH) against a lab API server: [`kubectl`] runs it with a given
//! kubeconfig and cache directory; [`LabApi`]'s methods bind it to that lab.

use std::path::Path;
use std::process::{Output, Stdio};

use tokio::io::AsyncWriteExt;

use crate::apiserver::LabApi;
use crate::cmd::Run;

/// The kubectl binary the tests drive (v1.32+ on PATH; hack/install-deps.sh installs it).
pub const KUBECTL: &str = "kubectl";

/// Runs kubectl with `args`, `stdin` (if any) and its own cache directory; `path` replaces PATH
/// when given (to find or hide plugins).
pub async fn kubectl_output(
    kubeconfig: &Path,
    cache: &Path,
    args: &[&str],
    stdin: Option<&str>,
    path: Option<&str>,
) -> Output {
    let mut cmd = tokio::process::Command::new(KUBECTL);
    cmd.env("KUBECONFIG", kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(path) = path {
        cmd.env("PATH", path);
    }
    let mut child = cmd.spawn().unwrap_or_else(|e| {
        panic!("kubectl (v1.32) must be on PATH for these tests (hack/install-deps.sh installs it): {e}")
    });
    let mut input = child.stdin.take().expect("stdin");
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).await.expect("write stdin");
    }
    drop(input);
    child.wait_with_output().await.expect("kubectl runs")
}

/// [`kubectl_output`] as a [`Run`].
pub async fn kubectl(
    kubeconfig: &Path,
    cache: &Path,
    args: &[&str],
    stdin: Option<&str>,
    path: Option<&str>,
) -> Run {
    Run::from(kubectl_output(kubeconfig, cache, args, stdin, path).await)
}

impl LabApi {
    /// A kubectl command for this server, to spawn (for long-running `-w`).
    pub fn kubectl_cmd(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(KUBECTL);
        cmd.env("KUBECONFIG", self.kubeconfig())
            .arg("--cache-dir")
            .arg(self.kubectl_cache())
            .args(args)
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    /// Runs kubectl with `args` (and `stdin`, if any) against this server.
    pub async fn kubectl_in(&self, args: &[&str], stdin: Option<&str>) -> Output {
        kubectl_output(&self.kubeconfig(), &self.kubectl_cache(), args, stdin, None).await
    }

    /// Runs kubectl against this server; the finished process.
    pub async fn kubectl_run(&self, args: &[&str], stdin: Option<&str>) -> Run {
        Run::from(self.kubectl_in(args, stdin).await)
    }

    /// Runs kubectl and asserts success; returns stdout.
    pub async fn ok(&self, args: &[&str]) -> String {
        self.ok_in(args, None).await
    }

    /// Runs kubectl with `stdin` and asserts success; returns stdout.
    pub async fn ok_in(&self, args: &[&str], stdin: Option<&str>) -> String {
        let run = self.kubectl_run(args, stdin).await;
        run.ok(&format!("kubectl {args:?}")).to_owned()
    }

    /// Runs kubectl and asserts failure; returns stderr.
    pub async fn fails(&self, args: &[&str]) -> String {
        self.fails_in(args, None).await
    }

    /// Runs kubectl with `stdin` and asserts failure; returns stderr.
    pub async fn fails_in(&self, args: &[&str], stdin: Option<&str>) -> String {
        let run = self.kubectl_run(args, stdin).await;
        run.fails(&format!("kubectl {args:?}")).to_owned()
    }
}
