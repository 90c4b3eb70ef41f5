//! A temporary home for one end-to-end test: the binary runs with its home, state and config
//! directories and its working directory (`project/`) inside a temporary directory, so it
//! never sees the real user's files. Shared by the hook, install and status tests.

// Each test file uses the part it needs.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The sandbox; removed when dropped.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        for d in ["home/.claude", "state", "config", "project"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        Sandbox { dir }
    }

    pub fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    /// The hook's default state database in this sandbox.
    pub fn db(&self) -> PathBuf {
        self.path("state/loopguard/state.sqlite3")
    }

    pub fn project(&self) -> PathBuf {
        self.path("project")
    }

    /// The binary with the sandbox's environment, run in `project/`, with its directory first
    /// on `PATH` (as for a user who installed it: `hook install --project` finds it there).
    pub fn command(&self, args: &[&str]) -> Command {
        let exe = std::path::Path::new(env!("CARGO_BIN_EXE_loopguard"));
        let rest = std::env::var_os("PATH").unwrap_or_default();
        let path = std::env::join_paths(
            exe.parent()
                .map(std::path::Path::to_path_buf)
                .into_iter()
                .chain(std::env::split_paths(&rest)),
        )
        .unwrap_or(rest);
        let mut c = Command::new(exe);
        c.args(args)
            .env("PATH", path)
            .env("HOME", self.path("home"))
            .env("XDG_STATE_HOME", self.path("state"))
            .env("XDG_CONFIG_HOME", self.path("config"))
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("LOOPGUARD_LOG")
            .current_dir(self.project());
        c
    }

    /// Runs the binary with `stdin` as its standard input.
    pub fn run(&self, args: &[&str], stdin: &[u8]) -> Output {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn loopguard");
        let _ = child.stdin.take().unwrap().write_all(stdin);
        child.wait_with_output().unwrap()
    }

    /// Runs the binary and asserts it succeeded: its stdout and stderr.
    pub fn ok(&self, args: &[&str]) -> (String, String) {
        let out = self.run(args, b"");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(out.status.success(), "{args:?}: {stdout}{stderr}");
        (stdout, stderr)
    }
}
