//! Helper processes: this binary re-executed with a hidden subcommand.
//!
//! A [`Helper`] owns the child: it waits for the child's `ready` line (so no polling for
//! readiness), can read the child's memory use from `/proc`, and stops the child when
//! dropped, on success and on error alike. The child's stdin stays open as a lifeline: the
//! helpers stop by themselves when it closes, which also covers a benchmark that dies.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

/// How long a helper gets to stop by itself before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// How often a stopping helper is checked on.
const STOP_POLL: Duration = Duration::from_millis(10);

/// A running helper process.
#[derive(Debug)]
pub struct Helper {
    name: &'static str,
    child: Child,
    /// The write end of the child's stdin; dropping it asks the child to stop.
    lifeline: Option<ChildStdin>,
    /// Kept open so that a late write by the child never fails.
    stdout: BufReader<ChildStdout>,
    log: PathBuf,
}

/// A process's memory use, from `/proc/<pid>/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    /// Resident set size now (`VmRSS`), in KiB.
    pub rss_kib: u64,
    /// Peak resident set size so far (`VmHWM`), in KiB.
    pub peak_rss_kib: u64,
}

impl Helper {
    /// Starts this binary with `args`, an environment of exactly `env`, stderr going to
    /// `log`, and waits until it prints `ready`.
    pub fn start(
        name: &'static str,
        args: &[OsString],
        env: &[(String, String)],
        log: &Path,
    ) -> anyhow::Result<Helper> {
        let exe = std::env::current_exe().context("cannot find the benchmark's own binary")?;
        Helper::start_exe(&exe, name, args, env, log)
    }

    /// [`Helper::start`] with the helper taken from `exe`, another build of the benchmark
    /// (to measure that build's daemon, `hookd-bench stream --against`).
    pub fn start_exe(
        exe: &Path,
        name: &'static str,
        args: &[OsString],
        env: &[(String, String)],
        log: &Path,
    ) -> anyhow::Result<Helper> {
        let log_file =
            File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
        let mut child = Command::new(exe)
            .args(args)
            .env_clear()
            .envs(env.iter().map(|(name, value)| (name, value)))
            .envs(crate::placement::child_env())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .with_context(|| format!("cannot start the {name} helper"))?;
        let lifeline = child.stdin.take();
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("the {name} helper has no stdout");
        };
        let mut helper = Helper {
            name,
            child,
            lifeline,
            stdout: BufReader::new(stdout),
            log: log.to_path_buf(),
        };
        let mut line = String::new();
        let read = helper.stdout.read_line(&mut line);
        if !matches!(read, Ok(n) if n > 0 && line.trim() == "ready") {
            // Dropping the helper kills it; its log says why it did not start.
            anyhow::bail!(
                "the {name} helper did not start (said {:?}); its log:\n{}",
                line.trim(),
                helper.log_tail()
            );
        }
        Ok(helper)
    }

    /// The helper's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The helper's current and peak resident memory.
    pub fn memory(&self) -> anyhow::Result<Memory> {
        let path = format!("/proc/{}/status", self.pid());
        let status =
            std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
        Ok(Memory {
            rss_kib: status_field_kib(&status, "VmRSS")
                .with_context(|| format!("no VmRSS in {path}"))?,
            peak_rss_kib: status_field_kib(&status, "VmHWM")
                .with_context(|| format!("no VmHWM in {path}"))?,
        })
    }

    /// The CPU time (user and system, all threads, dead ones included) the helper has used.
    ///
    /// `/proc` counts it in ticks of 10 ms, so it is only meaningful over a long phase.
    pub fn cpu_time(&self) -> anyhow::Result<Duration> {
        let path = format!("/proc/{}/stat", self.pid());
        let stat = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
        let ticks = stat_cpu_ticks(&stat).with_context(|| format!("cannot parse {path}"))?;
        Ok(Duration::from_millis(ticks * 1000 / CLOCK_TICKS_PER_SECOND))
    }

    /// The CPU time the helper's live threads have used, in nanoseconds as the scheduler
    /// counts it (`/proc/<pid>/task/*/schedstat`): precise enough for short phases, but
    /// threads that have ended are no longer counted.
    pub fn thread_cpu_time(&self) -> anyhow::Result<Duration> {
        let dir = format!("/proc/{}/task", self.pid());
        let mut total = 0u64;
        for task in std::fs::read_dir(&dir).with_context(|| format!("cannot list {dir}"))? {
            let path = task?.path().join("schedstat");
            // A thread may end between the listing and the read.
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            total += schedstat_nanos(&text)
                .with_context(|| format!("cannot parse {}", path.display()))?;
        }
        Ok(Duration::from_nanos(total))
    }

    /// The last lines the helper wrote to its log, for error messages.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Asks the helper to stop and waits for it; kills it if it does not stop in time.
    pub fn stop(mut self) -> anyhow::Result<()> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> anyhow::Result<()> {
        if self.lifeline.take().is_none() {
            // Already stopped.
            return Ok(());
        }
        let deadline = Instant::now() + STOP_GRACE;
        loop {
            if let Some(status) = self.child.try_wait()? {
                anyhow::ensure!(
                    status.success(),
                    "the {} helper exited with {status}; its log:\n{}",
                    self.name,
                    self.log_tail()
                );
                return Ok(());
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                anyhow::bail!(
                    "the {} helper did not stop in time and was killed",
                    self.name
                );
            }
            std::thread::sleep(STOP_POLL);
        }
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        if self.lifeline.is_some() {
            // Reached on error paths: the measurement is over, so do not wait politely.
            self.lifeline = None;
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The unit of the CPU times in `/proc/<pid>/stat` (`USER_HZ`), which Linux fixes at 100
/// for user space whatever the kernel's own tick rate.
const CLOCK_TICKS_PER_SECOND: u64 = 100;

/// `utime + stime` from the contents of `/proc/<pid>/stat`.
///
/// The command name (field 2) is in parentheses and may contain spaces or parentheses, so
/// fields are counted from the last `)`: after it come `state` (field 3) and so on, which
/// puts `utime` (field 14) and `stime` (field 15) at positions 11 and 12.
fn stat_cpu_ticks(stat: &str) -> Option<u64> {
    let (_, after_name) = stat.rsplit_once(')')?;
    let mut fields = after_name.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

/// The time on CPU (the first field, in nanoseconds) of a `/proc/.../schedstat` line.
fn schedstat_nanos(schedstat: &str) -> Option<u64> {
    schedstat.split_whitespace().next()?.parse().ok()
}

/// The value in KiB of a `Name:   1234 kB` line of `/proc/<pid>/status`.
fn status_field_kib(status: &str, name: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(status: &str, name: &str, expected: Option<u64>) {
        assert_eq!(
            status_field_kib(status, name),
            expected,
            "{name} in {status:?}"
        );
    }

    #[test]
    fn cpu_ticks_are_read_after_the_command_name() {
        let cases = [
            (
                "42 (hookd-bench) S 1 42 42 0 -1 4194560 100 0 0 0 250 37 0 0 20 0 5 0",
                Some(287),
            ),
            (
                "42 (a b) c)) S 1 42 42 0 -1 4194560 100 0 0 0 3 4 0 0",
                Some(7),
            ),
            ("42 (short) S 1 2", None),
            ("no parentheses at all", None),
        ];
        for (stat, expected) in cases {
            assert_eq!(stat_cpu_ticks(stat), expected, "{stat:?}");
        }
    }

    #[test]
    fn schedstat_gives_nanoseconds_on_cpu() {
        let cases = [
            ("123456789 2000 17\n", Some(123_456_789)),
            ("5", Some(5)),
            ("", None),
            ("x 1 2", None),
        ];
        for (text, expected) in cases {
            assert_eq!(schedstat_nanos(text), expected, "{text:?}");
        }
    }

    #[test]
    fn status_fields_are_read_in_kib() {
        let status = "Name:\thookd-bench\nVmHWM:\t   10240 kB\nVmRSS:\t    8192 kB\n";
        let cases = [
            (status, "VmRSS", Some(8192)),
            (status, "VmHWM", Some(10240)),
            (status, "VmSwap", None),
            ("VmRSSX:\t1 kB\n", "VmRSS", None),
            ("VmRSS:\tlots kB\n", "VmRSS", None),
        ];
        for (status, name, expected) in cases {
            check(status, name, expected);
        }
    }
}
