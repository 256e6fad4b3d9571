//! Shared test helpers: a server per test and a kubectl runner bound to it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Output;

use netrollout_lab_apiserver::{Config, LabServer};
use tempfile::TempDir;

/// The kubectl binary the tests drive (v1.32+ on PATH; CI installs it).
pub const KUBECTL: &str = "kubectl";

/// A started server with its own kubeconfig and kubectl cache directory.
pub mod objects;

pub struct Lab {
    pub server: LabServer,
    pub dir: TempDir,
}

impl Lab {
    pub async fn start() -> Lab {
        Self::start_with(Config::default()).await
    }

    pub async fn start_with(mut cfg: Config) -> Lab {
        let dir = tempfile::tempdir().expect("temp dir");
        cfg.kubeconfig = Some(dir.path().join("kubeconfig"));
        let server = LabServer::start(cfg).await.expect("server starts");
        Lab { server, dir }
    }

    pub fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name)
    }

    /// A kubectl command for this server, to spawn (for long-running `-w`).
    pub fn kubectl_cmd(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(KUBECTL);
        cmd.env("KUBECONFIG", self.dir.path().join("kubeconfig"))
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    /// Runs kubectl with `args` (and `stdin`, if any) against this server.
    pub async fn kubectl_in(&self, args: &[&str], stdin: Option<&str>) -> Output {
        use tokio::io::AsyncWriteExt;
        let mut cmd = tokio::process::Command::new(KUBECTL);
        cmd.env("KUBECONFIG", self.dir.path().join("kubeconfig"))
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| {
            panic!("kubectl must be on PATH for these tests (hack/install-deps.sh checks it): {e}")
        });
        let mut input = child.stdin.take().expect("stdin");
        if let Some(s) = stdin {
            input.write_all(s.as_bytes()).await.expect("write stdin");
        }
        drop(input);
        child.wait_with_output().await.expect("kubectl runs")
    }

    /// Runs kubectl and asserts success; returns stdout.
    pub async fn ok(&self, args: &[&str]) -> String {
        self.ok_in(args, None).await
    }

    pub async fn ok_in(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.kubectl_in(args, stdin).await;
        let (so, se) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(
            out.status.success(),
            "kubectl {args:?} failed:\nstdout: {so}\nstderr: {se}"
        );
        so.into_owned()
    }

    /// Runs kubectl and asserts failure; returns stderr.
    pub async fn fails(&self, args: &[&str]) -> String {
        self.fails_in(args, None).await
    }

    pub async fn fails_in(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.kubectl_in(args, stdin).await;
        let (so, se) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(
            !out.status.success(),
            "kubectl {args:?} unexpectedly succeeded:\nstdout: {so}\nstderr: {se}"
        );
        se.into_owned()
    }

    /// Applies the test CRDs and waits until they are established.
    pub async fn apply_crds(&self) {
        let crds = Self::fixture("crds.yaml");
        self.ok(&["apply", "-f", crds.to_str().expect("utf-8 path")])
            .await;
        self.ok(&[
            "wait",
            "--for=condition=established",
            "crd/widgets.lab.example.com",
            "crd/gadgets.lab.example.com",
            "--timeout=10s",
        ])
        .await;
    }
}
