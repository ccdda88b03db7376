//! `hookd-bench relay`: what a host CLI pays to hand an event to hookd through
//! `hookctl relay`, next to the hook it replaces.
//!
//! Each sample is one process, timed from just before it is spawned to just after it has been
//! reaped, with the event's JSON on its stdin, exactly as Gemini CLI or Claude Code runs a
//! command hook:
//!
//! - **relay, no hook**: `hookctl relay BeforeTool` for a tool no hook matches (the daemon
//!   answers at once), so the row is the relay's own cost: exec, connect, hello, one round
//!   trip, exit;
//! - **relay, Claude dialect**: the same for `hookctl relay PreToolUse --dialect claude`;
//! - **`hookd-relay`**: the relay's own binary, the one relay entries run (next to this
//!   benchmark's binary, or the one `HOOKD_BENCH_RELAY` names, e.g. a statically linked build);
//! - **Node one-shot hook**: `node hook.js` reading the same JSON and printing an allow, the
//!   cost of one interpreted hook the relay stands in for;
//! - **`bash -c true`**: the cheapest possible command hook, for scale.
//!
//! The variants are interleaved, one sample of each per round in a rotating order.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;

use crate::child::Helper;
use crate::daemon::RuntimeFlavor;
use crate::stats::{Samples, Summary, micros};

/// A Node hook that reads its event and allows it.
const NODE_HOOK: &str = r#"let input = "";
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const event = JSON.parse(input);
  process.stdout.write(JSON.stringify({ decision: "allow", reason: event.tool_name }) + "\n");
});
"#;

/// The variants, in table order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    Relay,
    RelayClaude,
    LeanRelay,
    Node,
    BashTrue,
}

const VARIANTS: [Variant; 5] = [
    Variant::Relay,
    Variant::RelayClaude,
    Variant::LeanRelay,
    Variant::Node,
    Variant::BashTrue,
];

impl Variant {
    fn label(self) -> &'static str {
        match self {
            Variant::Relay => "hookctl relay (gemini), no hook",
            Variant::RelayClaude => "hookctl relay --dialect claude, no hook",
            Variant::LeanRelay => "hookd-relay (gemini), no hook",
            Variant::Node => "node one-shot hook",
            Variant::BashTrue => "bash -c true",
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct Report {
    rows: Vec<(Variant, Summary)>,
    elapsed: Duration,
}

/// The `hookctl` binary next to this benchmark's own binary.
pub fn hookctl_path() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the benchmark's own binary")?;
    let dir = exe
        .parent()
        .context("the benchmark binary has no directory")?;
    let hookctl = dir.join("hookctl");
    anyhow::ensure!(
        hookctl.is_file(),
        "{} does not exist: build it first (cargo build --release -p hookctl)",
        hookctl.display()
    );
    Ok(hookctl)
}

/// `hookd-relay`: `HOOKD_BENCH_RELAY` when set, else the one next to `hookctl`.
fn lean_relay_path(hookctl: &std::path::Path) -> anyhow::Result<PathBuf> {
    let relay = match std::env::var_os("HOOKD_BENCH_RELAY") {
        Some(path) => PathBuf::from(path),
        None => hookctl.with_file_name("hookd-relay"),
    };
    anyhow::ensure!(
        relay.is_file(),
        "{} does not exist: build it first (cargo build --release -p hookctl)",
        relay.display()
    );
    Ok(relay)
}

/// Runs the relay benchmark with `samples` samples per variant.
pub fn run(samples: usize, runtime: RuntimeFlavor) -> anyhow::Result<Report> {
    let started = Instant::now();
    let hookctl = hookctl_path()?;
    let lean_relay = lean_relay_path(&hookctl)?;
    let dir = tempfile::Builder::new()
        .prefix("hookd-bench-relay-")
        .tempdir()
        .context("cannot create a temp dir")?;
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(home.join(".gemini"))?;
    std::fs::create_dir_all(project.join(".gemini"))?;
    // One hook that the benchmark's tool never matches: the registry is not empty, but the
    // event plans nothing.
    std::fs::write(
        project.join(".gemini").join("settings.json"),
        serde_json::to_vec_pretty(&json!({"hooks": {"BeforeTool": [
            {"matcher": "^never$", "hooks": [{"type": "command", "command": "true"}]}
        ]}}))?,
    )?;
    let node_hook = dir.path().join("hook.js");
    std::fs::write(&node_hook, NODE_HOOK)?;
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned());
    let env = vec![
        ("PATH".to_owned(), path.clone()),
        ("HOME".to_owned(), home.display().to_string()),
    ];
    let socket = dir.path().join("hookd.sock");
    let daemon_args = crate::daemon::helper_args(&socket, &home, dir.path(), runtime.as_arg());
    let daemon = Helper::start("daemon", &daemon_args, &env, &dir.path().join("daemon.log"))?;

    let cwd = project.display().to_string();
    let gemini_stdin = serde_json::to_vec(&json!({
        "session_id": "bench", "transcript_path": "", "cwd": cwd,
        "hook_event_name": "BeforeTool", "timestamp": "2026-01-01T00:00:00.000Z",
        "tool_name": "bench_tool", "tool_input": {"command": "ls"}
    }))?;
    let claude_stdin = serde_json::to_vec(&json!({
        "session_id": "bench", "transcript_path": "", "cwd": cwd,
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "ls"}
    }))?;
    let socket_arg = socket.display().to_string();
    let run_one = |variant: Variant| -> anyhow::Result<Duration> {
        let (mut command, stdin) = match variant {
            Variant::Relay => {
                let mut command = Command::new(&hookctl);
                command.args(["relay", "BeforeTool", "--socket", &socket_arg]);
                (command, &gemini_stdin)
            }
            Variant::RelayClaude => {
                let mut command = Command::new(&hookctl);
                command.args([
                    "relay",
                    "PreToolUse",
                    "--dialect",
                    "claude",
                    "--socket",
                    &socket_arg,
                ]);
                (command, &claude_stdin)
            }
            Variant::LeanRelay => {
                let mut command = Command::new(&lean_relay);
                command.args(["BeforeTool", "--socket", &socket_arg]);
                (command, &gemini_stdin)
            }
            Variant::Node => {
                let mut command = Command::new("node");
                command.arg(&node_hook);
                (command, &gemini_stdin)
            }
            Variant::BashTrue => {
                let mut command = Command::new("bash");
                command.args(["-c", "true"]);
                (command, &gemini_stdin)
            }
        };
        command
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
            .with_context(|| format!("cannot start {}", variant.label()))?;
        if let Some(mut pipe) = child.stdin.take() {
            // `bash -c true` may exit before reading: a broken pipe is fine.
            let _ = pipe.write_all(stdin);
        }
        let output = child.wait_with_output()?;
        let elapsed = start.elapsed();
        anyhow::ensure!(
            output.status.success(),
            "{} failed ({}): {}",
            variant.label(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        Ok(elapsed)
    };

    // Warm-up: page cache, the daemon's registry, node's compile cache.
    for variant in VARIANTS {
        for _ in 0..3 {
            run_one(variant).with_context(|| daemon.log_tail())?;
        }
    }
    eprintln!("hookd-bench relay: measuring {samples} samples of each variant...");
    let mut all: Vec<Samples> = vec![Samples::default(); VARIANTS.len()];
    for round in 0..samples {
        for turn in 0..VARIANTS.len() {
            let index = (round + turn) % VARIANTS.len();
            let elapsed = run_one(VARIANTS[index])?;
            all[index].push(elapsed);
        }
    }
    daemon.stop()?;
    Ok(Report {
        rows: VARIANTS
            .iter()
            .zip(&all)
            .map(|(&variant, samples)| (variant, samples.summary()))
            .collect(),
        elapsed: started.elapsed(),
    })
}

/// The report as a table.
pub fn table(report: &Report) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "exec-to-exit of one command hook process\n");
    let _ = writeln!(
        out,
        "{:<42} {:>8} {:>10} {:>10}",
        "process", "samples", "p50 ms", "p99 ms"
    );
    for (variant, summary) in &report.rows {
        let _ = writeln!(
            out,
            "{:<42} {:>8} {:>10.2} {:>10.2}",
            variant.label(),
            summary.count,
            micros(summary.p50) / 1000.0,
            micros(summary.p99) / 1000.0
        );
    }
    let find = |variant: Variant| {
        report
            .rows
            .iter()
            .find(|(v, _)| *v == variant)
            .map(|(_, summary)| *summary)
    };
    if let (Some(relay), Some(node)) = (find(Variant::Relay), find(Variant::Node)) {
        let _ = writeln!(
            out,
            "\nnode one-shot hook / relay, p50: {:.1}x",
            node.p50.as_secs_f64() / relay.p50.as_secs_f64().max(f64::MIN_POSITIVE)
        );
    }
    let _ = writeln!(out, "run took {:.0} s", report.elapsed.as_secs_f64());
    out
}

/// The relay's default sample count, and the quick one.
pub fn samples(quick: bool) -> usize {
    if quick { 10 } else { 300 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_have_distinct_labels() {
        let mut labels: Vec<&str> = VARIANTS.iter().map(|v| v.label()).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), VARIANTS.len());
    }
}
