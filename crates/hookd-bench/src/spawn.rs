//! The spawn floor: `bash -c true` started directly by the benchmark process, the way a hook
//! runner starts a hook.
//!
//! Like the daemon's runner it resolves `bash` once, gives the child an explicit
//! environment, its own process group and piped stdin, stdout and stderr, writes the JSON
//! payload to stdin, then waits for the exit while draining both outputs. It does none of
//! the daemon's bookkeeping, so the gap between this row and the one-hook row is what the
//! daemon adds to a spawn. [`DirectSpawn::run_parallel`] is the same for several hooks at
//! once: the floor of the parallel row on this machine's cores.

use std::io::{ErrorKind, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::Context;

use crate::fixture::HOOK_COMMAND;

/// Everything needed to spawn the hook directly, prepared once.
#[derive(Debug)]
pub struct DirectSpawn {
    bash: PathBuf,
    cwd: PathBuf,
    env: Vec<(String, String)>,
    stdin: Vec<u8>,
}

impl DirectSpawn {
    /// Finds `bash` on the `PATH` of `env` and prepares the spawn.
    pub fn new(cwd: &Path, env: Vec<(String, String)>, stdin: Vec<u8>) -> anyhow::Result<Self> {
        let path_var = env
            .iter()
            .rev()
            .find(|(name, _)| name == "PATH")
            .map(|(_, value)| value.clone())
            .unwrap_or_default();
        let bash = std::env::split_paths(&path_var)
            .map(|dir| dir.join("bash"))
            .find(|candidate| candidate.is_file())
            .context("bash is not on the PATH")?;
        Ok(DirectSpawn {
            bash,
            cwd: cwd.to_path_buf(),
            env,
            stdin,
        })
    }

    /// Runs the hook once and checks that it succeeded.
    pub fn run_once(&self) -> anyhow::Result<()> {
        self.run_parallel(1)
    }

    /// Runs `count` copies of the hook at once, as a runner runs the hooks of one parallel
    /// plan: spawn every child, feed every stdin, then collect every exit.
    pub fn run_parallel(&self, count: usize) -> anyhow::Result<()> {
        let mut children = Vec::with_capacity(count);
        for _ in 0..count {
            children.push(self.spawn()?);
        }
        for child in &mut children {
            self.feed_stdin(child)?;
        }
        for child in children {
            let output = child.wait_with_output().context("cannot wait for bash")?;
            anyhow::ensure!(
                output.status.success(),
                "bash -c {HOOK_COMMAND} failed: {}",
                output.status
            );
        }
        Ok(())
    }

    fn spawn(&self) -> anyhow::Result<Child> {
        Command::new(&self.bash)
            .arg0("bash")
            .args(["-c", HOOK_COMMAND])
            .current_dir(&self.cwd)
            .env_clear()
            .envs(self.env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .context("cannot spawn bash")
    }

    /// Writes the payload and closes stdin.
    fn feed_stdin(&self, child: &mut Child) -> anyhow::Result<()> {
        if let Some(mut stdin) = child.stdin.take() {
            // A hook need not read its input; one that exits first closes the pipe.
            match stdin.write_all(&self.stdin) {
                Err(error) if error.kind() != ErrorKind::BrokenPipe => {
                    return Err(error).context("cannot write the hook's stdin");
                }
                _ => {}
            }
        }
        Ok(())
    }
}
