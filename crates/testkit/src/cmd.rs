//! Running tools from tests: [`run`] asserts success and returns stdout; [`Run`] keeps a
//! finished process's exit code and output for tests that check failures too.

use std::process::{Command, Output};

/// Runs `tool args…`, asserts it succeeded and returns its stdout. The panic names the command
/// and its stderr (kernel tests need root and iproute2).
pub fn run(tool: &str, args: &[&str]) -> String {
    let out = Command::new(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {tool} (is it installed?): {e}"));
    assert!(
        out.status.success(),
        "`{tool} {}` failed (kernel tests need root): {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A finished process.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Self {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Run {
    /// Asserts exit code `code` and returns stdout.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &str {
        assert_eq!(
            self.code, code,
            "unexpected exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        &self.stdout
    }

    /// Asserts success and returns stdout.
    #[track_caller]
    pub fn ok(&self, what: &str) -> &str {
        assert!(
            self.code == 0,
            "{what} failed:\nstdout: {}\nstderr: {}",
            self.stdout,
            self.stderr
        );
        &self.stdout
    }

    /// Asserts failure and returns stderr.
    #[track_caller]
    pub fn fails(&self, what: &str) -> &str {
        assert!(
            self.code != 0,
            "{what} unexpectedly succeeded:\nstdout: {}\nstderr: {}",
            self.stdout,
            self.stderr
        );
        &self.stderr
    }
}
