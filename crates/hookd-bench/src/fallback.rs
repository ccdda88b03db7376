//! `hookd-bench fallback`: what a project install's shared wiring costs a host CLI per event
//! where hookd is installed.
//!
//! A project install writes the relay entry in the form that says nothing where
//! `hookd-relay` is not on `PATH` (`! command -v hookd-relay ... || exec hookd-relay EVENT`),
//! and keeps a guarded copy of each moved hook (`command -v hookd-relay ... || { LINE\n}`)
//! that runs the hook only there. Each sample is one process the host would start, timed
//! from just before it is spawned to just after it has been reaped, with the event's JSON on
//! its stdin, under both shells the hosts use (`/bin/sh` for Claude Code, `bash` for Gemini
//! CLI and Codex CLI):
//!
//! - **relay entry, bare** and **relay entry, shared form**: the relay for a tool no hook
//!   matches (the daemon answers at once), started by the shell; the difference is what the
//!   shared form adds to every relayed event;
//! - **guarded copy**: a copy whose `hookd-relay` is on `PATH`, so it only runs the builtin and
//!   exits: what each copy adds per event, in a process of its own (the hosts start it
//!   alongside the relay);
//! - **`<shell> -c true`**: a shell that does nothing, for scale.
//!
//! The variants are interleaved, one sample of each per round in a rotating order.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;

use crate::child::Helper;
use crate::daemon::RuntimeFlavor;
use crate::stats::{Samples, Summary, micros};

/// The shells the hosts run hooks with.
const SHELLS: [&str; 2] = ["/bin/sh", "bash"];

/// What one variant runs, for each shell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    BareRelay,
    SharedRelay,
    Copy,
    Nothing,
}

const VARIANTS: [Variant; 4] = [
    Variant::BareRelay,
    Variant::SharedRelay,
    Variant::Copy,
    Variant::Nothing,
];

impl Variant {
    fn label(self) -> &'static str {
        match self {
            Variant::BareRelay => "relay entry, bare",
            Variant::SharedRelay => "relay entry, shared form",
            Variant::Copy => "guarded copy (hookd-relay on PATH)",
            Variant::Nothing => "-c true",
        }
    }

    /// The command line the shell is given.
    fn line(self, socket: &str) -> String {
        let relay = format!("hookd-relay BeforeTool --socket {socket}");
        match self {
            Variant::BareRelay => relay,
            Variant::SharedRelay => hookd_core::dialect::shared_relay_command(&relay),
            // The copy of a hook that would start Python: never started here.
            Variant::Copy => hookd_core::dialect::fallback_command("python3 guard.py"),
            Variant::Nothing => "true".to_owned(),
        }
    }
}

/// What one run measured: per shell and variant.
#[derive(Debug, Clone)]
pub struct Report {
    rows: Vec<(&'static str, Variant, Summary)>,
    elapsed: Duration,
}

/// The directory of `hookd-relay`: `HOOKD_BENCH_RELAY`'s when set, else this binary's.
fn relay_dir() -> anyhow::Result<PathBuf> {
    let relay = match std::env::var_os("HOOKD_BENCH_RELAY") {
        Some(path) => PathBuf::from(path),
        None => crate::relay::hookctl_path()?.with_file_name("hookd-relay"),
    };
    anyhow::ensure!(
        relay.is_file() && relay.file_name().is_some_and(|name| name == "hookd-relay"),
        "{} is not a hookd-relay binary: build it first (cargo build --release -p hookctl)",
        relay.display()
    );
    relay
        .parent()
        .map(Path::to_path_buf)
        .context("hookd-relay has no directory")
}

/// Runs the benchmark with `samples` samples per shell and variant.
pub fn run(samples: usize, runtime: RuntimeFlavor) -> anyhow::Result<Report> {
    let started = Instant::now();
    let relay_dir = relay_dir()?;
    let dir = tempfile::Builder::new()
        .prefix("hookd-bench-fallback-")
        .tempdir()
        .context("cannot create a temp dir")?;
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(home.join(".gemini"))?;
    std::fs::create_dir_all(&project)?;
    let path = format!(
        "{}:{}",
        relay_dir.display(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned())
    );
    let env = vec![
        ("PATH".to_owned(), path.clone()),
        ("HOME".to_owned(), home.display().to_string()),
    ];
    let socket = dir.path().join("hookd.sock");
    let daemon_args = crate::daemon::helper_args(&socket, &home, dir.path(), runtime.as_arg());
    let daemon = Helper::start("daemon", &daemon_args, &env, &dir.path().join("daemon.log"))?;
    let socket_arg = hookd_core::command::shell_quote(&socket.display().to_string());
    let stdin = serde_json::to_vec(&json!({
        "session_id": "bench", "transcript_path": "", "cwd": project.display().to_string(),
        "hook_event_name": "BeforeTool", "timestamp": "2026-01-01T00:00:00.000Z",
        "tool_name": "bench_tool", "tool_input": {"command": "ls"}
    }))?;
    let run_one = |shell: &str, variant: Variant| -> anyhow::Result<Duration> {
        let mut command = Command::new(shell);
        command
            .arg("-c")
            .arg(variant.line(&socket_arg))
            .env_clear()
            .env("PATH", &path)
            .env("HOME", home.display().to_string())
            .current_dir(&project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let start = Instant::now();
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start {shell} for {}", variant.label()))?;
        if let Some(mut pipe) = child.stdin.take() {
            // A shell that exits before reading: a broken pipe is fine.
            let _ = pipe.write_all(&stdin);
        }
        let output = child.wait_with_output()?;
        let elapsed = start.elapsed();
        anyhow::ensure!(
            output.status.success() && output.stdout.is_empty(),
            "{shell} {} failed ({}): {}{}",
            variant.label(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        Ok(elapsed)
    };

    let cases: Vec<(&'static str, Variant)> = SHELLS
        .iter()
        .flat_map(|shell| VARIANTS.iter().map(move |variant| (*shell, *variant)))
        .collect();
    // Warm-up: page cache, the daemon's registry.
    for (shell, variant) in &cases {
        for _ in 0..3 {
            run_one(shell, *variant).with_context(|| daemon.log_tail())?;
        }
    }
    eprintln!("hookd-bench fallback: measuring {samples} samples of each variant...");
    let mut all: Vec<Samples> = vec![Samples::default(); cases.len()];
    for round in 0..samples {
        for turn in 0..cases.len() {
            let index = (round + turn) % cases.len();
            let (shell, variant) = cases[index];
            all[index].push(run_one(shell, variant)?);
        }
    }
    daemon.stop()?;
    Ok(Report {
        rows: cases
            .iter()
            .zip(&all)
            .map(|(&(shell, variant), samples)| (shell, variant, samples.summary()))
            .collect(),
        elapsed: started.elapsed(),
    })
}

/// The report as a table, with what the shared form and each copy add per event.
pub fn table(report: &Report) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "exec-to-exit of one process a host starts per event\n");
    let _ = writeln!(
        out,
        "{:<9} {:<36} {:>8} {:>10} {:>10}",
        "shell", "process", "samples", "p50 ms", "p99 ms"
    );
    for (shell, variant, summary) in &report.rows {
        let _ = writeln!(
            out,
            "{:<9} {:<36} {:>8} {:>10.2} {:>10.2}",
            shell,
            variant.label(),
            summary.count,
            micros(summary.p50) / 1000.0,
            micros(summary.p99) / 1000.0
        );
    }
    let p50 = |shell: &str, variant: Variant| {
        report
            .rows
            .iter()
            .find(|(s, v, _)| *s == shell && *v == variant)
            .map_or(0.0, |(_, _, summary)| micros(summary.p50) / 1000.0)
    };
    for shell in SHELLS {
        let _ = writeln!(
            out,
            "\n{shell}: the shared form adds {:+.2} ms to the relay entry (p50); each guarded copy \
             is one more process of {:.2} ms",
            p50(shell, Variant::SharedRelay) - p50(shell, Variant::BareRelay),
            p50(shell, Variant::Copy)
        );
    }
    let _ = writeln!(out, "run took {:.0} s", report.elapsed.as_secs_f64());
    out
}
